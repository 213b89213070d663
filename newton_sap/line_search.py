"""The line search of a Newton iteration (SAP.md §6): the step length α along the direction ``Δv``, one
thread per world, and the stopping tests that come with it (the cost criterion, float32 stagnation).

Along ``v + α Δv`` the objective is ``ℓ(α) = ℓ_A(0) + α s0 + ½ α² s1 + Σ_c ℓ_c(v_c + α Δv_c)``: the
quadratic part needs two dot products per world (``line_dots``); per row, ``Δv_c = J Δv`` and the slopes
at both ends of ``[0, α_max]`` come from a pass over the rows in slot order (``line_rows``), which also
lists each world's rows that can carry an impulse on the segment; the constraint part is re-evaluated per
trial over that list only (``line_search``, one thread per world). The slot-order pass streams through the
row buffers, where a per-world loop would jump between the interleaved contacts of its world.
"""

import warp as wp

from .constraints.dispatch import constraint_impulse, thread_slots
from .jacobian import row_product
from .stiction_prediction import PLAIN_NEWTON_ONCE

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

ALPHA_MAX = 1.5
"""Largest line-search step (SAP.md §6)."""
LINE_SEARCH_MAX_ITERATIONS = 40
LINE_SEARCH_REL_TOLERANCE = 1.0e-8
"""The root of the slope (:func:`slope_root`, both line searches) stops at ``|dℓ/dα| < tol · |dℓ/dα(0)|``..."""
LINE_SEARCH_ALPHA_TOLERANCE = 1.0e-6
"""... or once its update of α is below this fraction of α: float32 resolves ``dℓ/dα`` only to round-off of
its terms, which mostly lies far above the first test, and α to about 1e-7."""
ARMIJO_C = 1.0e-4
BACKTRACKING_RHO = 0.8
"""Backtracking line search (SAP.md §6): Armijo constant c and shrink factor ρ; the first trial is α = 1/ρ
(``line_search`` goes on from the first trial Armijo accepts to the minimum along the line where two trials bracket
it)."""
COST_ABS_TOLERANCE = 1.0e-30
COST_REL_TOLERANCE = 1.0e-7
"""Cost criterion of SAP.md §6 (after a step with α > 0.5): ``|Δℓ| < ε_ac + ε_rc (|ℓ_k+1| + |ℓ_k|) / 2``; it marks
the world ``COST_FLAT``, which ``check_convergence`` stops only at the float32 floor of its residual."""
PRECISE_FORCING = 1.0e-3
"""CG directions solved to a relative residual η ≤ this count as precise Newton directions in the
stagnation tests below (dense worlds: η = 0); a looser CG stop can make the cost change little while
Newton's method is still far from the float32 floor."""
MODEL_STEP_MIN_ALPHA = 0.05
"""A stiction-model step shorter than this makes its world's next Newton step a plain one (``PLAIN_NEWTON_ONCE``):
the prediction did not pay. Measured while such a step still turned the predictions off for the rest of the time
step, on nine 1-world 50-sphere piles (300-500 steps each: landing, settling, rest): 0.05 took fewer Newton
iterations than 0.1 on all nine (2.2 % in all), and on a landing humanoid over 300 steps (671 -> 651, the worst
step 11 -> 6); 0.02 and 0.03 did as 0.05; 0 (predicting regardless) stalled at the iteration limit in two of the
piles, repeating a model step that the line search cut to α = 0. Off for the rest of the time step (until session
33), the predictions left plain Newton to crawl where many sliding contacts were still to land (one per iteration,
at α of 0.002-0.3): on nine seeded 1-world piles over 400 steps the worst step of each took 9-21 Newton iterations
(SAP's cone) and 14-26 (``contact_approximation="lagged"``), now 9-14 and 11-15; all iterations -0.7 % and -2.0 %.
With the one-step policy 0.02 and 0.1 are within 0.3 % of 0.05 there, 0.2 is 2 % behind (SAP's cone)."""
COST_ROUND_OFF = 1.0e-6
"""Flat cost in float32: when the slope of the cost along the Newton direction, ``|dℓ/dα(0)|``, is below this
fraction of the cost, a full Newton step changes the cost by round-off only (``COST_FLAT``). The velocities may
still be off by about the square root of that (the cost is quadratic in their error): ``check_convergence`` stops
the world only once its residual no longer falls fast either (stiff tangential compliances amplify velocity
round-off, so ‖D∇ℓ‖ can stall above ε_r·scale)."""
COST_FLAT = 1
"""``world_cost_stalled`` value of a world whose cost no longer changes in float32 (the cost criterion,
``COST_ROUND_OFF``). The cost is quadratic in the velocity error, so a relative cost change ε leaves a velocity
error of about √ε: ``check_convergence`` stops such a world only once its residual stops falling fast."""
NO_DESCENT = 2
"""``world_cost_stalled`` value of a world whose direction does not descend (α = 0): round-off at the optimum,
or a broken direction; ``check_convergence`` tells them apart by the residual."""
NOT_MOVED = 3
"""``world_cost_stalled`` value of a world whose step left every velocity as it was (``STEP_ROUND_OFF``): the
next direction would be the same. Not where the step crossed a row's kink onto its stiff side
(:func:`curvature_gained`): a row without curvature in the direction's Hessian that turns stiff within round-off of
the start (a hard limit at its kink) cuts the step to round-off, and the next Newton direction, with the row's
curvature, differs (harsh fuzz case 100101: ended not converged 4-8 % off with backtracking, now converged within
3e-6)."""
INEXACT_STALL = 4
"""``world_cost_stalled`` value that ``check_convergence`` gives a world whose CG direction, not solved to
``pcg.CG_TIGHTEST_TOLERANCE``, did not descend or did not move while some tree is not yet near its own optimum
(``sap.TREE_FLOOR``): such a stall says nothing about the float32 floor, so the world goes on and its next direction
is solved to that tolerance (``pcg.forcing_term``). A loose CG direction can point into a stiff constraint that a
Newton direction would slide along: a world with a hard joint limit stopped so *converged*, 2-4 % off the float64
solve, on both CG paths; one solved to 7.7e-4 stopped after a step cut to α = 2.3e-3 (now 4e-6 off, converged).
Stalls with every tree near its optimum stop as before (a folded 71-dof snake under the GPU's defaults: 36 Newton
iterations over 10 steps; 43 when every loose stall went on). A tight solve that stops short of its tolerance (CG's
iteration cap) records what it reached, so such a world may repeat the mark, up to ``max_iterations``."""
NO_DESCENT_RELATIVE_RESIDUAL = 0.1
"""A world stalled without descent or without a move (``check_convergence``) whose ‖D∇ℓ‖ exceeds this fraction of
``max(‖D A v‖, ‖D Jᵀγ‖)`` ends not converged, unless it is round-off of impulses that cancel
(``sap.IMPULSE_ROUND_OFF``). A flat cost this far out is no float32 floor and the world goes on: the exact line search
descends along its slopes where the cost's float32 sum no longer resolves the change (a snake of 20 boxes folded onto
itself, 525 deep contacts, stopped so after 5 Newton iterations 18 % off the float64 solve, converges in 9; until
session 35 such a world ended not converged).
Measured: the float32 floors leave up to about 1e-2 (stall exits over the test and benchmark scenes: medians
1e-5 to 3e-4, largest 8e-3 on the landing pile; round-off exits without descent up to 6.5e-3 with
backtracking), a wrong direction (an H assembled wrongly) about 1; a friction regularization σ = 1e-9 left a
thrown box with a flat cost at 0.2-0.7 and its impulses 23-68 % off."""
STEP_ROUND_OFF = 1.0e-6
"""Stagnation in float32, scale-free: a step ``α Δv`` that changes no velocity by more than this fraction of its
tree's largest (about 8 float32 ulps; in momentum units ``√A_ii |v_i|``, :func:`step_moves`) leaves ``v``, and so
the next direction, as it was, or changes it by round-off. The cost tests above cannot see this when the optimal
cost is about 0 (``v`` near ``v_ref`` while stiff rows amplify the round-off of ``v``). Judged per velocity, a
component at 1e-17 m/s beside the 3e-6 m/s of a body held by a rigid weld changed by its own size every
iteration: the step counted as moved and the world ran every step to ``max_iterations`` (helper review, session
28)."""


@wp.func
def constraint_slope(
    alpha: float,
    begin: int,
    end: int,
    live_rows: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_dvc: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
):
    """Constraint part of ``ℓ(α)``, ``dℓ/dα`` and ``d²ℓ/dα²`` along ``v_c + α Δv_c`` for α in [0, α_max], over
    the rows ``live_rows[begin:end]`` (the others have no impulse on the segment)."""
    cost = float(0.0)
    slope = float(0.0)
    curvature = float(0.0)
    for k in range(begin, end):
        c = live_rows[k]
        dvc = c_dvc[c]
        gamma, G, lc = constraint_impulse(c_kind[c], c_vc[c] + alpha * dvc, c_vhat[c], c_R[c], c_param[c])
        cost += lc
        slope -= wp.dot(dvc, gamma)
        curvature += wp.dot(dvc, G * dvc)
    return cost, slope, curvature


@wp.func
def curvature_gained(
    alpha: float,
    begin: int,
    end: int,
    live_rows: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_dvc: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_G: wp.array(dtype=wp.mat33),
):
    """Whether a row among ``live_rows[begin:end]`` has curvature at ``v_c + α Δv_c`` along a component where the
    direction's Hessian ``c_G`` had none: a diagonal entry of G that is zero in ``c_G`` and positive there (G is
    positive semidefinite, so a zero diagonal entry is a zero row). The step crossed that row's kink onto its stiff
    side (a limit or contact turning on, a lagged contact's normal beside its friction), so the next Newton
    direction, with that curvature, differs even if no velocity moved measurably. A row turning off is not counted:
    at the float32 floor a row on its kink can turn off and on by round-off, and a step back to the stiff side
    is counted once, after which the direction has its curvature."""
    for k in range(begin, end):
        c = live_rows[k]
        _gamma, G, _cost = constraint_impulse(c_kind[c], c_vc[c] + alpha * c_dvc[c], c_vhat[c], c_R[c], c_param[c])
        G_model = c_G[c]
        for i in range(3):
            if G[i, i] > 0.0 and G_model[i, i] == 0.0:
                return True
    return False


@wp.func
def secant_root(lo: float, slope_lo: float, hi: float, slope_hi: float):
    """The root of the line through ``(lo, slope_lo)`` and ``(hi, slope_hi)``, ``slope_lo < 0 < slope_hi``: inside
    ``[lo, hi]`` up to round-off (:func:`slope_root`, started there, keeps to its bracket)."""
    return lo + (hi - lo) * slope_lo / (slope_lo - slope_hi)


@wp.func
def slope_root(
    lo: float,
    hi: float,
    alpha: float,
    s0: float,
    s1: float,
    slope0: float,
    begin: int,
    end: int,
    live_rows: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_dvc: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
):
    """The root of ``dℓ/dα = s0 + α s1 + (constraint slope)`` in ``[lo, hi]``, where it rises through zero
    (``dℓ/dα(lo) < 0 < dℓ/dα(hi)``; the exact search takes ``[0, α_max]``), from ``alpha`` inside: Newton's method
    on the slope kept inside the shrinking bracket (bisection where a step would leave it), to
    ``|dℓ/dα| ≤ LINE_SEARCH_REL_TOLERANCE |slope0|`` or an update below ``LINE_SEARCH_ALPHA_TOLERANCE`` of α."""
    for _it in range(LINE_SEARCH_MAX_ITERATIONS):
        lc, dc, hc = constraint_slope(alpha, begin, end, live_rows, c_kind, c_vc, c_dvc, c_vhat, c_R, c_param)
        f = s0 + alpha * s1 + dc
        if wp.abs(f) <= LINE_SEARCH_REL_TOLERANCE * wp.abs(slope0):
            break
        if f < 0.0:
            lo = alpha
        else:
            hi = alpha
        df = s1 + hc
        next_alpha = alpha - f / df
        if df <= 0.0 or next_alpha <= lo or next_alpha >= hi:
            next_alpha = 0.5 * (lo + hi)
        converged = wp.abs(next_alpha - alpha) <= LINE_SEARCH_ALPHA_TOLERANCE * alpha
        alpha = next_alpha
        if converged:
            break
    return alpha


@wp.func
def step_moves(
    w: int,
    alpha: float,
    world_tree_start: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    v: wp.array(dtype=float),
    dv: wp.array(dtype=float),
):
    """Whether the step ``α Δv`` changes some velocity of world w by more than ``STEP_ROUND_OFF`` of its tree's
    largest, both in momentum units ``|v_i| / √(1/A_ii)`` (kinematic dofs, ``1/A_ii = 0``, are no unknowns)."""
    for t in range(world_tree_start[w], world_tree_start[w + 1]):
        first = tree_dof_start[t]
        last = first + tree_dof_count[t]
        largest = float(0.0)
        for i in range(first, last):
            if A_inv_diag[i] > 0.0:
                largest = wp.max(largest, wp.abs(v[i]) / wp.sqrt(A_inv_diag[i]))
        for i in range(first, last):
            if A_inv_diag[i] > 0.0:
                if wp.abs(alpha * dv[i]) / wp.sqrt(A_inv_diag[i]) > STEP_ROUND_OFF * largest:
                    return True
    return False


@wp.kernel
def line_rows(
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    world_active: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    c_vc: wp.array(dtype=wp.vec3),
    c_gamma: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    dv: wp.array(dtype=float),
    # outputs (world_live_count and world_row_slopes zeroed before)
    c_dvc_out: wp.array(dtype=wp.vec3),
    c_segment_dead_out: wp.array(dtype=wp.int32),
    live_rows_out: wp.array(dtype=wp.int32),
    world_live_count_out: wp.array(dtype=wp.int32),
    world_row_slopes_out: wp.array(dtype=wp.vec2),
):
    """Per row of an active world (a thread takes a run of the used slots): ``Δv_c = J Δv``; the world's
    constraint slopes ``−Σ Δv_cᵀ γ`` at α = 0 (``γ`` from the last evaluation) and at α_max; and the row
    listed among its world's live rows, ``live_rows[world start + k]``, unless its impulse is zero at both
    ends. Such a row has zero impulse on the whole segment: the set ``{γ = 0}`` of a projection onto a
    convex set is the normal cone at 0 (convex) and ``v_c(α)`` is affine (separated contacts, limits out of
    reach); ``c_segment_dead`` says so for the next ``constraint_eval``."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        w = c_world[c]
        if world_active[w] == 0:
            continue
        dvc = row_product(c, c_nnz, c_dof, c_J, dv)
        c_dvc_out[c] = dvc
        g0 = c_gamma[c]
        g1, _G1, _l1 = constraint_impulse(c_kind[c], c_vc[c] + ALPHA_MAX * dvc, c_vhat[c], c_R[c], c_param[c])
        dead = wp.dot(g0, g0) == 0.0 and wp.dot(g1, g1) == 0.0
        c_segment_dead_out[c] = int(dead)
        if not dead:  # a dead row adds nothing to the slopes
            wp.atomic_add(world_row_slopes_out, w, wp.vec2(-wp.dot(dvc, g0), -wp.dot(dvc, g1)))
            live_rows_out[world_constraint_start[w] + wp.atomic_add(world_live_count_out, w, 1)] = c


@wp.kernel
def line_dots(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    momentum_mode: int,
    dt: float,
    world_active: wp.array(dtype=wp.int32),
    v: wp.array(dtype=float),
    v_ref: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    dv: wp.array(dtype=float),
    Adv: wp.array(dtype=float),
    # outputs
    world_line_out: wp.array(dtype=wp.vec3),
    jtg_out: wp.array(dtype=wp.vec2),
    iteration_count: wp.array(dtype=wp.int32),
    any_active_out: wp.array(dtype=wp.int32),
    any_predicted_out: wp.array(dtype=wp.int32),
):
    """Per world along ``v + α Δv``: ``s0 = Δvᵀ ∇ℓ_A(v)``, ``s1 = Δvᵀ A Δv`` and ``ℓ_A(v)`` with
    ``e = v − v_ref``: ``ℓ_A = ½ eᵀ A e − m Δt τᵀ e``. Zeroes ``Jᵀγ`` (read by this iteration's gradient,
    accumulated again by the next ``constraint_eval``). Thread 0 also counts the Newton iteration and lowers
    the flags that this iteration's check and the next stiction prediction raise (``any_predicted`` was
    read before this kernel, ``any_active`` is read after the check): the loop's bookkeeping without a
    launch of its own."""
    i = wp.tid()
    if i == 0:
        iteration_count[0] = iteration_count[0] + 1
        any_active_out[0] = 0
        any_predicted_out[0] = 0
    w = dof_world[i]
    if world_active[w] == 0:
        return
    jtg_out[i] = wp.vec2(0.0)
    e = v[i] - v_ref[i]
    s0 = dv[i] * Ae[i]
    lA = 0.5 * e * Ae[i]
    if momentum_mode == 1:
        s0 -= dt * tau[i] * dv[i]
        lA -= dt * tau[i] * e
    wp.atomic_add(world_line_out, w, wp.vec3(s0, dv[i] * Adv[i], lA))


@wp.kernel
def line_search(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_tree_start: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    # inputs
    exact: int,
    world_active: wp.array(dtype=wp.int32),
    world_predicted: wp.array(dtype=wp.int32),
    world_slope: wp.array(dtype=float),
    world_forcing: wp.array(dtype=float),
    world_line: wp.array(dtype=wp.vec3),
    world_row_slopes: wp.array(dtype=wp.vec2),
    world_constraint_start: wp.array(dtype=wp.int32),
    world_live_count: wp.array(dtype=wp.int32),
    live_rows: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_dvc: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_G: wp.array(dtype=wp.mat33),
    A_inv_diag: wp.array(dtype=float),
    dv: wp.array(dtype=float),
    # outputs (v and Ae are read and updated; Adv is read and zeroed for the next product; world_cost is read,
    # world_cost and world_norms are zeroed for the next check's sums; world_plain_newton is read: a short
    # stiction-model step sets PLAIN_NEWTON_ONCE, the plain step after it clears it)
    Adv: wp.array(dtype=float),
    v: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    world_cost: wp.array(dtype=float),
    world_norms_out: wp.array(dtype=wp.vec3),
    world_cost_stalled_out: wp.array(dtype=wp.int32),
    world_alpha_out: wp.array(dtype=float),
    world_plain_newton_out: wp.array(dtype=wp.int32),
):
    """One thread per active world: step length α along Δv, then ``v += α Δv`` and ``A (v − v_ref) += α A Δv``.

    Along the line ``ℓ_A(α) = ℓ_A(0) + α s0 + ½ α² s1`` (from :func:`line_dots`); only the constraint
    terms need re-evaluation per trial. Exact: the root of ``dℓ/dα`` on [0, α_max] (α_max if
    ``dℓ/dα(α_max) ≤ 0``) by Newton's method kept inside a shrinking bracket (bisection fallback).
    Backtracking: the trials ``1/ρ, 1, ρ, ρ², …`` (``LINE_SEARCH_MAX_ITERATIONS`` of them) down to the first with
    Armijo's ``ℓ(α) ≤ ℓ(0) + c α dℓ/dα(0)`` (none: the shortest); if that one lies past the minimum along the line
    (``dℓ/dα > 0``), shorter ones while they still do (ℓ convex: each is lower). Where the trial so chosen and a
    trial on the other side of the minimum bracket it (short of it: the shortest longer trial past it; past it: the
    next shorter trial, or α = 0), the step is the root of dℓ/dα between the two (:func:`slope_root`), lower than
    both; otherwise the minimum lies at or beyond the trial, which is the step. Trials alone landed short of a
    stiff row (a hard joint limit, a contact closing) turning on just past the minimum: the next Newton direction,
    blind to the row, was the same again, and realistic fuzzed worlds of 88 and 106 dofs crept so to
    ``max_iterations`` at a relative residual of 1 (now 18 and 27 Newton iterations, as the exact search). A lagged
    world whose minimum lay below the shortest trial took the root of the slope interpolated linearly from there,
    far off, every iteration (4 iterations now, 100 before); before that, the shortest trial itself had risen above
    ℓ(0) and cycled with the next Newton step to ``max_iterations``. Taking the first trial with Armijo's decrease,
    α = 1/ρ near the optimum, shrank the error only fourfold per Newton iteration (the quadratic convergence of
    Newton's method lost) and, past a kink where a stiff row turns on, overshot into the kink again: 2.5× the exact
    search's Newton iterations on landing piles, a two-cycle to ``max_iterations`` on a driven tree. A direction
    that does not descend gets α = 0. Armijo's test is also passed by ``dℓ/dα(α) ≤ c dℓ/dα(0)``, which implies it
    for a convex ℓ (``ℓ(α) ≤ ℓ(0) + α dℓ/dα(α)``) and which float32 resolves where the cost's change is round-off:
    the cost test alone then rejected every trial of a stiff drive holding a link on its limit and took the last,
    shortest one. Also records whether Newton's method stalled: the cost criterion of SAP.md §6, the float32 floors
    (``COST_ROUND_OFF``, ``STEP_ROUND_OFF``) or no descent (α = 0). The trials run over the world's live rows and
    the slopes at the ends come from :func:`line_rows`."""
    w = wp.tid()
    if world_active[w] == 0:
        return
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    line = world_line[w]
    s0 = line[0]
    s1 = line[1]
    lA0 = line[2]
    begin = world_constraint_start[w]
    end = begin + world_live_count[w]
    lc0 = world_cost[w]  # constraint cost, impulses (c_gamma) at α = 0: from constraint_eval at this v
    row_slopes = world_row_slopes[w]
    dc0 = row_slopes[0]  # constraint slope at α = 0 and at α_max
    dc_max = row_slopes[1]

    cost0 = lA0 + lc0
    slope0 = s0 + dc0
    alpha = float(0.0)
    if slope0 < 0.0:  # a descent direction (round-off can spoil it at the optimum)
        if exact == 1:
            if s0 + ALPHA_MAX * s1 + dc_max <= 0.0:
                alpha = float(ALPHA_MAX)
            else:
                alpha = slope_root(0.0, ALPHA_MAX, 1.0, s0, s1, slope0, begin, end, live_rows, c_kind, c_vc, c_dvc,
                                   c_vhat, c_R, c_param)  # fmt: skip
        else:
            trial = 1.0 / BACKTRACKING_RHO
            past = int(0)  # 1 once an accepted trial lies past the minimum along the line (dℓ/dα > 0)
            rising = float(0.0)  # the shortest trial so far past the minimum, and its dℓ/dα; 0: none
            rising_slope = float(0.0)
            falling = float(0.0)  # the first trial short of the minimum after accepted ones past it; 0: α = 0
            falling_slope = float(slope0)
            alpha_slope = float(0.0)  # dℓ/dα at the chosen trial
            for _it in range(LINE_SEARCH_MAX_ITERATIONS):
                lc, dc, hc = constraint_slope(trial, begin, end, live_rows, c_kind, c_vc, c_dvc, c_vhat, c_R, c_param)
                slope = s0 + trial * s1 + dc
                cost = lA0 + trial * s0 + 0.5 * trial * trial * s1 + lc
                armijo = slope <= ARMIJO_C * slope0  # Armijo's decrease, certified by the slope (see above)
                if not armijo:
                    armijo = cost <= cost0 + ARMIJO_C * trial * slope0
                if past == 1:  # shorter trials after an accepted one past the minimum
                    if slope < 0.0:
                        falling = trial
                        falling_slope = slope
                        break
                    alpha = trial  # still past it: ℓ rises on [trial, alpha], so trial is lower
                    alpha_slope = slope
                    if slope == 0.0:
                        break
                elif armijo:
                    alpha = trial
                    alpha_slope = slope
                    if slope <= 0.0:
                        break  # the minimum lies at or beyond
                    past = 1
                elif _it == LINE_SEARCH_MAX_ITERATIONS - 1:
                    alpha = trial  # no sufficient decrease in any trial: from the shortest
                    alpha_slope = slope
                if slope > 0.0:
                    rising = trial
                    rising_slope = slope
                trial *= BACKTRACKING_RHO
            # the minimum between the chosen trial and its neighbour on the other side of it, lower than both
            lo = float(0.0)
            hi = float(0.0)
            if alpha_slope < 0.0 and rising > alpha:
                lo = alpha
                hi = rising
                alpha = secant_root(lo, alpha_slope, hi, rising_slope)
            elif alpha_slope > 0.0:
                lo = falling
                hi = alpha
                alpha = secant_root(lo, falling_slope, hi, alpha_slope)
            if hi > 0.0:
                alpha = slope_root(lo, hi, alpha, s0, s1, slope0, begin, end, live_rows, c_kind, c_vc, c_dvc, c_vhat,
                                   c_R, c_param)  # fmt: skip
    lc1, dc1, hc1 = constraint_slope(alpha, begin, end, live_rows, c_kind, c_vc, c_dvc, c_vhat, c_R, c_param)
    cost1 = lA0 + alpha * s0 + 0.5 * alpha * alpha * s1 + lc1
    moved = step_moves(w, alpha, world_tree_start, tree_dof_start, tree_dof_count, A_inv_diag, v, dv)
    for i in range(n):
        v[s + i] = v[s + i] + alpha * dv[s + i]
        Ae[s + i] = Ae[s + i] + alpha * Adv[s + i]  # A (v − v_ref) follows v
        Adv[s + i] = 0.0  # the next A Δv accumulates from zero (no memset node)
    stalled = int(0)
    change = wp.abs(cost1 - cost0)
    scale = 0.5 * (wp.abs(cost1) + wp.abs(cost0))
    model_step = world_predicted[w] != 0 and world_slope[w] < 0.0  # (either kind of prediction)
    if not model_step and world_plain_newton_out[w] == PLAIN_NEWTON_ONCE:
        world_plain_newton_out[w] = 0  # the plain step after a short model step: predictions again
    if model_step:
        if alpha < MODEL_STEP_MIN_ALPHA:
            world_plain_newton_out[w] = PLAIN_NEWTON_ONCE
    elif alpha == 0.0:
        stalled = int(NO_DESCENT)
    elif not moved:
        if not curvature_gained(alpha, begin, end, live_rows, c_kind, c_vc, c_dvc, c_vhat, c_R, c_param, c_G):
            stalled = int(NOT_MOVED)
    elif world_forcing[w] <= PRECISE_FORCING:  # a precise Newton direction
        if -slope0 <= COST_ROUND_OFF * scale:
            stalled = int(COST_FLAT)  # even a full Newton step changes the cost by round-off only
        elif alpha > 0.5 and change < COST_ABS_TOLERANCE + COST_REL_TOLERANCE * scale:
            stalled = int(COST_FLAT)
    world_cost_stalled_out[w] = stalled
    world_cost[w] = 0.0
    world_norms_out[w] = wp.vec3(0.0)
    world_alpha_out[w] = alpha
