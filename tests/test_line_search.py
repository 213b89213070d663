"""The exact line search finds the minimum of the SAP cost along its direction (SAP.md §6).

After a single Newton iteration (``max_iterations=1``) from the warm start ``v0``, the solved ``v1`` must
minimize ``ℓ(v) = ½ (v − v*)ᵀ M (v − v*) + Σ ℓ_c(J_c v)`` on the line through ``v0`` and ``v1``: the slope
``dℓ/ds`` at ``v0 + s (v1 − v0)`` vanishes at s = 1. The slope is evaluated here in float64 from the
snapshot's M, v*, J, R, v̂, μ and an independent NumPy projection onto the friction cone (SAP.md §3). The rows
that ``line_rows`` finds without impulse along a whole segment are moved along it, not re-evaluated: their
``v_c`` must stay ``J v``."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.constraints.dispatch import CONTACT

from contact_scenes import Run, box_on_ground, contact_impulses, friction_cone_impulse, sphere_bin


def cost_slope(snap, v, d):
    """``dℓ/ds`` along ``v + s d`` at s = 0 (world 0, v* mode)."""
    d_c = (snap.contact_jacobian[0] @ d).reshape(-1, 3)
    return (v - snap.v_star[0]) @ snap.mass_matrix[0] @ d - np.sum(contact_impulses(snap, v) * d_c)


def cost(snap, v):
    """``ℓ(v) = ½ (v − v*)ᵀ M (v − v*) + Σ ½ γᵀ R γ`` [J] (world 0, v* mode)."""
    e = v - snap.v_star[0]
    return 0.5 * e @ snap.mass_matrix[0] @ e + 0.5 * np.sum(contact_impulses(snap, v) ** 2 * snap.contact_compliance[0])


# landing, sliding and spinning boxes whose first exact step length is not Newton's α = 1 (0.72, 1.0013, 1.0039)
STEPS_NOT_AT_ALPHA_ONE = [
    [-0.7, -0.1, 0.8, 4.5, -3.8, 4.5],
    [1.3, 0.8, 0.3, -0.9, 4.4, 5.9],
    [-1.3, 0.4, 0.4, 2.1, -3.6, -2.0],
]


@pytest.mark.parametrize("qd0", STEPS_NOT_AT_ALPHA_ONE)
def test_exact_line_search_stops_at_the_minimum_along_its_direction(qd0):
    run = Run(box_on_ground(mu=0.5), qd0=qd0, max_iterations=1, stiction_prediction=False)
    run.s0.joint_q.assign(run.s0.joint_q.numpy() - np.array([0, 0, 0.003, 0, 0, 0, 0], np.float32))  # overlap
    run.pipeline.collide(run.s0, run.contacts)
    snap = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)
    assert run.solver.stats.iterations[0] == 1 and len(snap.contact_friction[0]) == 4
    assert abs(run.solver._sap.world_alpha.numpy()[0] - 1.0) > 1e-3  # a step a fixed α = 1 would miss
    v0 = run.s0.joint_qd.numpy().astype(np.float64)
    d = snap.velocity[0] - v0
    slope_start = cost_slope(snap, v0, d)
    slope_end = cost_slope(snap, snap.velocity[0], d)
    assert slope_start < 0.0  # a descent direction
    assert abs(slope_end) < 1e-5 * abs(slope_start)


def box_step(qd0):
    run = Run(box_on_ground(mu=0.5), qd0=qd0, max_iterations=1, stiction_prediction=False, line_search="backtracking")
    run.s0.joint_q.assign(run.s0.joint_q.numpy() - np.array([0, 0, 0.003, 0, 0, 0, 0], np.float32))  # overlap
    return run


def landing_pile_step():
    """Four spheres landing in a bin, one Newton iteration per step, at the seventh step. Every
    contact takes part in the line search (no parked contacts: with one iteration per step, unconverged, the
    trajectory would depend on which contacts are parked)."""
    run = Run(sphere_bin(4), max_iterations=1, stiction_prediction=False, line_search="backtracking",
              park_distant_contacts=False)  # fmt: skip
    run.step(0.01, 6)
    return run


@pytest.mark.parametrize("prepare", [*(lambda q=q: box_step(q) for q in STEPS_NOT_AT_ALPHA_ONE), landing_pile_step])
def test_backtracking_lands_on_the_minimum_next_to_its_lowest_trial(prepare):
    """``line_search="backtracking"``: the step is at least as low as every trial of ``1/ρ, 1, ρ, ρ², …`` (ρ = 0.8),
    by the independent float64 cost, and has Armijo's ``ℓ(v0 + α Δv) ≤ ℓ(v0) + c α dℓ/dα(0)`` (c = 1e-4). Armijo
    accepts the first trial, α = 1.25, in every case here: taking it, as the first accepted trial, shrank the error
    only fourfold per Newton iteration near the optimum. The lowest trial and a neighbour bracket the minimum along
    the line, so the step is the minimum between the two: ``dℓ/dα = 0`` there."""
    run = prepare()
    run.pipeline.collide(run.s0, run.contacts)
    snap = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)
    assert run.solver.stats.iterations[0] == 1
    alpha = float(run.solver._sap.world_alpha.numpy()[0])
    trials = 1.25 * 0.8 ** np.arange(20)
    v0 = run.s0.joint_qd.numpy().astype(np.float64)
    direction = (snap.velocity[0] - v0) / alpha  # Δv
    costs = np.array([cost(snap, v0 + t * direction) for t in trials])
    k = int(np.argmin(costs))
    assert k > 0 and trials[k + 1] <= alpha <= trials[k - 1]  # about the lowest trial, not the first
    slope = cost_slope(snap, v0, direction)
    assert costs[0] <= cost(snap, v0) + 1e-4 * trials[0] * slope  # Armijo accepts the first trial
    step_cost = cost(snap, snap.velocity[0])
    assert step_cost <= costs[k] + 1e-7 * abs(costs[k])  # (float32's root of the slope)
    assert step_cost <= cost(snap, v0) + 1e-4 * alpha * slope
    assert abs(cost_slope(snap, snap.velocity[0], direction)) < 1e-4 * abs(slope)


def test_backtracking_converges_as_fast_as_the_exact_search_at_limits():
    """A three-link pendulum thrown against its joint limits (±0.3 rad, near-rigid): where a limit row turns on
    along the Newton direction the cost's curvature jumps, Armijo rejects the trials down to the kink, and the
    next iterate, from a Hessian that sees the row, lands near the optimum. Taking the first trial Armijo accepted,
    α = 1.25, overshot from there (back over the kink or fourfold error shrink only): backtracking took 7.1 Newton
    iterations per step against the exact search's 0.44 and ended 10 of 200 steps at ``max_iterations`` (a
    random driven tree of a helper review, session 27, alternated α = 1.25 and 2e-4 so). Going on to the lowest
    trial of the sequence, and from there to the minimum its neighbour brackets, it needs the exact search's
    iterations and converges to its velocities."""
    b = newton.ModelBuilder()
    parent, joints = -1, []
    for i in range(3):
        link = b.add_link(mass=1.0, com=wp.vec3(0.2, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 0.01))
        joints.append(
            b.add_joint_revolute(
                parent,
                link,
                axis=(0, 1, 0),
                limit_lower=-0.3,
                limit_upper=0.3,
                parent_xform=wp.transform((0.4 * (i > 0), 0.0, 0.0), wp.quat_identity()),
            )
        )
        parent = link
    b.add_articulation(joints)
    model = b.finalize()
    exact, backtracking = newton_sap.SolverSAP(model), newton_sap.SolverSAP(model, line_search="backtracking")
    s0, s_exact, s_bt = model.state(), model.state(), model.state()
    s0.joint_qd.assign(np.random.default_rng(0).uniform(-3.0, 3.0, 3).astype(np.float32))
    iterations = np.zeros(2)
    for _ in range(200):  # both from the exact trajectory's states
        exact.step(s0, s_exact, None, None, 0.01)
        backtracking.step(s0, s_bt, None, None, 0.01)
        assert exact.stats.converged[0] and backtracking.stats.converged[0]
        iterations += exact.stats.iterations[0], backtracking.stats.iterations[0]
        v = s_exact.joint_qd.numpy()
        assert np.abs(s_bt.joint_qd.numpy() - v).max() <= 1e-5 * max(np.abs(v).max(), 1.0)
        s0, s_exact = s_exact, s0
    assert iterations[1] <= 1.1 * iterations[0]


def step_length_on_a_line(
    s0, s1, limit_rows, line_search_kind, model_step=False, plain_newton=0, model_G=None, lagged_rows=()
):
    """α of ``line_search.line_search`` on the line of one world (one tree, one dof of unit mass, ``v = 1``)
    ``ℓ(α) = α s0 + ½ α² s1 + Σ ℓ_c(v_c + α Δv_c)`` over joint-limit rows ``(v_c, Δv_c, v̂, R)`` (``ℓ_c = ½ R y₊²``,
    ``y = (v̂ − v_c) / R``) and lagged contacts ``(v_c, Δv_c, v̂, R, F)`` (3-vectors, friction bound F [N·s]), its
    stall flag and its ``world_plain_newton`` after the search (before it ``plain_newton``; ``model_step``: the
    direction is a descending stiction-model one). ``model_G``: the rows' Hessians (3×3) in the direction's model
    (default: at α = 0). Impulses, Hessians and costs from ``sap_reference``."""
    from sap_reference import constraint_impulse

    from newton_sap.constraints.dispatch import CONTACT_LAGGED, JOINT_LIMIT
    from newton_sap.line_search import ALPHA_MAX, line_search

    def cpu(values, dtype):
        return wp.array(values, dtype=dtype, device="cpu")

    rows = [(int(JOINT_LIMIT), np.array([vc, 0.0, 0.0]), np.array([dvc, 0.0, 0.0]), np.array([v_hat, 0.0, 0.0]),
             np.array([R, 1.0, 1.0]), 0.0) for vc, dvc, v_hat, R in limit_rows]  # fmt: skip
    rows += [(int(CONTACT_LAGGED), *(np.asarray(x, float) for x in row[:4]), row[4]) for row in lagged_rows]

    def impulse(row, alpha):
        kind, vc, dvc, v_hat, R, parameter = row
        return constraint_impulse(kind, vc + alpha * dvc, v_hat, R, parameter)

    def cost(row):  # ℓ_c at α = 0: ½ γᵀ R γ but for a sliding friction's F ‖s‖ − ½ R_t F²
        kind, vc, _dvc, v_hat, R, bound = row
        gamma = impulse(row, 0.0)[0]
        y_t = (v_hat[:2] - vc[:2]) / R[:2]
        if kind == int(CONTACT_LAGGED) and np.linalg.norm(y_t) > bound:
            return 0.5 * R[2] * gamma[2] ** 2 + bound * np.linalg.norm(vc[:2] - v_hat[:2]) - 0.5 * R[0] * bound**2
        return 0.5 * gamma @ (R * gamma)

    m = len(rows)
    slopes = [sum(-row[2] @ impulse(row, alpha)[0] for row in rows) for alpha in (0.0, ALPHA_MAX)]
    alpha, stalled, plain_newton = cpu([0.0], float), cpu([0], wp.int32), cpu([plain_newton], wp.int32)
    row_arrays = [cpu([row[k] for row in rows], wp.vec3) for k in (1, 2, 3, 4)]  # v_c, Δv_c, v̂, R
    if model_G is None:
        model_G = [impulse(row, 0.0)[1] for row in rows]
    wp.launch(line_search, dim=1, device="cpu",
              inputs=[cpu([0, 1], wp.int32), cpu([0, 1], wp.int32), cpu([0], wp.int32), cpu([1], wp.int32),
                      int(line_search_kind == "exact"), cpu([1], wp.int32), cpu([int(model_step)], wp.int32),
                      cpu([-1.0 if model_step else 0.0], float), cpu([0.0], float), cpu([(s0, s1, 0.0)], wp.vec3),
                      cpu([slopes], wp.vec2),
                      cpu([0], wp.int32), cpu([m], wp.int32), cpu(np.arange(m), wp.int32),
                      cpu([row[0] for row in rows], wp.int32), *row_arrays, cpu([row[5] for row in rows], float),
                      cpu(np.reshape(model_G, (m, 3, 3)), wp.mat33), cpu([1.0], float), cpu([1.0], float)],
              outputs=[cpu([0.0], float), cpu([1.0], float), cpu([0.0], float), cpu([sum(map(cost, rows))], float),
                       cpu([wp.vec3()], wp.vec3), stalled, alpha, plain_newton])  # fmt: skip
    return float(alpha.numpy()[0]), int(stalled.numpy()[0]), int(plain_newton.numpy()[0])


@pytest.mark.parametrize("minimum", [1e-5, 1e-6, 1e-7])
def test_backtracking_below_its_shortest_trial_takes_the_minimum(minimum):
    """A line whose minimum lies below the shortest trial, 1.25 · 0.8³⁹ = 2.1e-4: no trial has Armijo's decrease.
    Taking the last trial rose above ℓ(0) and moved ``v``, so that the next Newton step came back: a two-cycle to
    ``max_iterations`` on random driven trees (helper review, session 28). The root of the slope between 0 and
    that trial is the minimum; a step that moves no velocity beyond round-off is flagged ``NOT_MOVED``, as by the
    exact search."""
    from newton_sap.line_search import NOT_MOVED, STEP_ROUND_OFF

    alpha, stalled, _ = step_length_on_a_line(-minimum, 1.0, [], "backtracking")
    assert alpha == pytest.approx(minimum, rel=1e-4)
    assert (stalled == NOT_MOVED) == (minimum <= STEP_ROUND_OFF)
    assert (alpha, stalled) == pytest.approx(step_length_on_a_line(-minimum, 1.0, [], "exact")[:2], rel=1e-4)


def test_backtracking_lands_on_the_minimum_between_the_trials_around_a_kink():
    """The quadratic part's minimum at α = 1.2, a stiff limit row (R = 0.05) turning on at α = 1.24: the trial
    1.25 past the minimum costs 0.0023 above it, 1.0 short of it 0.020. Choosing by the slopes (0.25 against
    0.20) took 1.0 (helper review, session 28), by the costs 1.25; the two bracket the minimum, where the step
    lands (``slope_root``), below the kink."""
    alpha, _, _ = step_length_on_a_line(-1.2, 1.0, [(1.24, -1.0, 0.0, 0.05)], "backtracking")
    assert alpha == pytest.approx(1.2, rel=1e-5)


def test_backtracking_below_its_shortest_trial_lands_on_a_kink():
    """The quadratic part's minimum at α = 1e-4, a stiff limit row (R = 1e-3) turning on at α = 5e-5, below the
    shortest trial (2.1e-4): no trial has Armijo's decrease and the minimum lies at the kink, 5.005e-5. The slope
    interpolated linearly between 0 and the shortest trial put the step at 1.3e-7, where the next Newton direction
    was the same (a lagged fuzzed world, 100 iterations); the root of the slope is the exact search's step."""
    rows = [(5e-5, -1.0, 0.0, 1e-3)]
    alpha, _, _ = step_length_on_a_line(-1e-4, 1.0, rows, "backtracking")
    assert alpha == pytest.approx(5.005e-5, rel=1e-4)
    assert alpha == pytest.approx(step_length_on_a_line(-1e-4, 1.0, rows, "exact")[0], rel=1e-5)


def test_backtracking_goes_on_from_its_armijo_trial_to_the_minimum_past_it():
    """The quadratic part's minimum at α = 1.1, a stiff limit row (R = 1e-3) turning on at 1.15: the trial 1.25
    lies past the kink without Armijo's decrease, 1.0 has it, short of the minimum. Taking 1.0 left the step short
    of the kink every iteration, and the next Newton direction, blind to the row, was the same again (realistic
    fuzzed worlds crept so to ``max_iterations``); the two trials bracket the minimum, the step."""
    rows = [(1.15, -1.0, 0.0, 1e-3)]
    alpha, _, _ = step_length_on_a_line(-1.1, 1.0, rows, "backtracking")
    assert alpha == pytest.approx(1.1, rel=1e-5)
    assert alpha == pytest.approx(step_length_on_a_line(-1.1, 1.0, rows, "exact")[0], rel=1e-5)


@pytest.mark.parametrize("line_search_kind", ["exact", "backtracking"])
def test_a_step_cut_to_round_off_where_a_row_turns_on_is_no_stall(line_search_kind):
    """A hard limit (R = 1e-7) at its kink, without curvature in the direction's Hessian, which pushes into it: the
    minimum along the line lies at α = 1e-7, a step that moves no velocity beyond round-off. The step takes the row
    onto its stiff side, so the next Newton direction, with its curvature, differs: no stall (flagged ``NOT_MOVED``,
    such a world ended not converged 4-8 % off the float64 solve, harsh fuzz case 100101). The same for a sliding
    lagged contact at its normal kink (its friction block has curvature either way). Where the direction's Hessian
    had that curvature, the next direction would be the same: ``NOT_MOVED``; so too where a round-off step takes an
    active limit off (at the float32 floor a row on its kink can go off and on by round-off: counted, both would keep
    a world from ever stalling)."""
    from newton_sap.line_search import NOT_MOVED

    rows = [(0.0, -1.0, 0.0, 1e-7)]  # v_c = v̂ = 0: the row turns on for every α > 0
    alpha, stalled, _ = step_length_on_a_line(-1.0, 1.0, rows, line_search_kind, model_G=[np.zeros((3, 3))])
    assert alpha == pytest.approx(1.0 / (1.0 + 1e7), rel=1e-4) and stalled == 0
    stiff = [np.diag([1e7, 0.0, 0.0])]
    assert step_length_on_a_line(-1.0, 1.0, rows, line_search_kind, model_G=stiff)[1] == NOT_MOVED
    lagged = [((1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 0.0, 0.0), (1e-3, 1e-3, 1e-7), 1.0)]  # sliding, F = 1 N·s
    alpha, stalled, _ = step_length_on_a_line(-1.0, 1.0, [], line_search_kind, lagged_rows=lagged)
    assert alpha == pytest.approx(1.0 / (1.0 + 1e7), rel=1e-4) and stalled == 0
    going_off = [(-1e-9, 1.0, 0.0, 1.0)]  # active by 1e-9 at α = 0, off past α = 1e-9
    alpha, stalled, _ = step_length_on_a_line(-1e-8, 1.0, going_off, line_search_kind)
    assert alpha == pytest.approx(1e-8, rel=1e-3) and stalled == NOT_MOVED


@pytest.mark.parametrize("line_search_kind", ["exact", "backtracking"])
def test_a_short_stiction_model_step_makes_only_the_next_step_plain(line_search_kind):
    """A stiction-model step that the line search cuts below ``MODEL_STEP_MIN_ALPHA`` (here α = 0.01) flags
    ``PLAIN_NEWTON_ONCE``; the plain step after it clears the flag, so the predictions resume (off for the rest of
    the time step, plain Newton crawled where many sliding contacts were still to land: nine 1-world landing
    piles' worst steps 14-26 Newton iterations under the lagged contact, now 11-15). A long model step leaves the
    flag alone, and so does any step the near-optimum flag (``check_convergence``'s, for the rest of the step)."""
    from newton_sap.line_search import MODEL_STEP_MIN_ALPHA
    from newton_sap.stiction_prediction import PLAIN_NEWTON_NEAR_OPTIMUM, PLAIN_NEWTON_ONCE

    short, long = -0.2 * MODEL_STEP_MIN_ALPHA, -1.0  # ℓ(α) = α s0 + ½ α²: the minimum at α = −s0
    once, near = int(PLAIN_NEWTON_ONCE), int(PLAIN_NEWTON_NEAR_OPTIMUM)
    alpha, _, flag = step_length_on_a_line(short, 1.0, [], line_search_kind, model_step=True)
    assert alpha < MODEL_STEP_MIN_ALPHA and flag == once
    assert step_length_on_a_line(long, 1.0, [], line_search_kind, model_step=True)[2] == 0
    assert step_length_on_a_line(short, 1.0, [], line_search_kind, plain_newton=once)[2] == 0
    assert step_length_on_a_line(short, 1.0, [], line_search_kind, plain_newton=near)[2] == near


def test_rows_without_impulse_along_a_segment_follow_it_exactly():
    """``constraint_eval`` moves a row that had no impulse along the whole line-search segment by
    ``v_c += α Δv_c`` instead of forming ``J v``: after Newton steps with such rows (a landing sphere pile,
    most contacts in the detection gap), every row's ``v_c`` is ``J v`` at the solved ``v`` to round-off, and a
    contact row so moved has no impulse there by an independent projection."""
    run = Run(sphere_bin(12))
    sap = run.solver._sap
    moved_any = False
    for _ in range(30):
        run.step(0.01)
        if run.solver.stats.iterations[0] < 2:
            continue
        used = sap.used_slots.numpy()[: sap.used_count.numpy()[0]]
        dead = sap.c_segment_dead.numpy()[used] == 1
        moved_any |= bool(dead.any())
        v = sap.v.numpy().astype(np.float64)
        nnz, dof, J = sap.c_nnz.numpy()[used], sap.c_dof.numpy()[used], sap.c_J.numpy()[used].astype(np.float64)
        Jv = np.array([J[k, : nnz[k]].T @ v[dof[k, : nnz[k]]] for k in range(len(used))])
        vc = sap.c_vc.numpy()[used]
        scale = np.abs(J).sum(axis=1).max(axis=1) * np.abs(v).max()  # bound of |J v| per row
        assert np.all(np.abs(vc - Jv).max(axis=1) <= 1e-5 * scale + 1e-7)
        R, v_hat, mu = sap.c_R.numpy()[used], sap.c_vhat.numpy()[used], sap.c_param.numpy()[used]
        for k in np.flatnonzero(dead & (sap.c_kind.numpy()[used] == CONTACT)):
            assert not np.any(sap.c_gamma.numpy()[used[k]])
            assert np.allclose(friction_cone_impulse(Jv[k], v_hat[k], R[k], mu[k]), 0.0, atol=1e-9)
    assert moved_any


def test_backtracking_reports_converged_only_near_the_exact_answer():
    """A stiff drive (1e5 N·m/rad) pulls a link against its near-rigid limit: the cost is large and its changes
    near the optimum are float32 round-off. Backtracking certifies Armijo's decrease by the slope there (the cost
    test rejected every trial): steps it reports converged are within 2e-4 of the exact search's velocities
    (before: 1 iteration, 1.6 % off, reported converged)."""
    b = newton.ModelBuilder()
    upper = b.add_link(mass=1.0, com=wp.vec3(0.3, 0.0, 0.0), inertia=wp.mat33(np.diag([0.01, 0.02, 0.03])))
    lower = b.add_link(mass=0.5, com=wp.vec3(0.2, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 0.01))
    b.add_articulation([
        b.add_joint_revolute(-1, upper, axis=(0, 1, 0)),
        b.add_joint_revolute(upper, lower, axis=(0, 1, 0), parent_xform=wp.transform((0.5, 0, 0), wp.quat_identity()),
                             target_ke=1e5, effort_limit=1e6, actuator_mode=newton.JointTargetMode.POSITION,
                             limit_lower=-0.5, limit_upper=0.2),
    ])  # fmt: skip
    model = b.finalize()
    exact, backtracking = newton_sap.SolverSAP(model), newton_sap.SolverSAP(model, line_search="backtracking")
    control = model.control()
    control.joint_target_q.assign(np.array([0.0, 1.0], np.float32))
    s0, s_exact, s_bt = model.state(), model.state(), model.state()
    s0.joint_q.assign(np.array([0.0, 0.2], np.float32))
    converged = 0
    for _ in range(60):  # both from the exact trajectory's states
        exact.step(s0, s_exact, control, None, 0.01)
        backtracking.step(s0, s_bt, control, None, 0.01)
        assert exact.stats.converged[0]
        if backtracking.stats.converged[0]:
            converged += 1
            v = s_exact.joint_qd.numpy()
            assert np.abs(s_bt.joint_qd.numpy() - v).max() <= 2e-4 * np.abs(v).max()
        s0, s_exact = s_exact, s0
    assert converged == 60
