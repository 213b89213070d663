"""The SAP problem of one step and Newton's method on it (SAP.md §1, §6), per world.

Unknown: the next generalized velocity ``v`` (internal convention). Objective, with ``A``, the
constraint Jacobians and parameters frozen at ``q0``:

    v* mode:        ℓ(v) = ½ (v − v*)ᵀ A (v − v*)                    + Σ_c ℓ_c(J_c v)
    momentum mode:  ℓ(v) = ½ (v − v0)ᵀ A (v − v0) − Δt τᵀ (v − v0)    + Σ_c ℓ_c(J_c v)

Both are ``ℓ_A(v) = ½ (v − v_ref)ᵀ A (v − v_ref) − m Δt τᵀ (v − v_ref)`` with ``v_ref = v*, m = 0`` or
``v_ref = v0, m = 1``: same minimizer, gradient ``∇ℓ = A (v − v_ref) − m Δt τ − Jᵀγ`` and Hessian
``H = A + Jᵀ G J``.

Each Newton iteration (all worlds at once; a converged world stops):

1. ``constraint_eval``: ``v_c = J v`` (``v_c + α Δv_c`` for rows without impulse along the last line-search
   segment), ``γ, G, ℓ_c``; accumulate ``Jᵀγ``.
2. ``gradient`` and ``check_convergence``: ``‖D ∇ℓ‖ ≤ ε_a + ε_r max(‖D A v‖, ‖D Jᵀγ‖)`` with
   ``D = diag(A)^-½``, in the world and in each of its trees, or the float32 floor: the last line search found
   no descent or no move, or a flat cost while the residual no longer falls fourfold (``FLOOR_PROGRESS``) and
   every tree is near its own optimum (``TREE_FLOOR``) or the worst has stopped converging (``FLOOR_PATIENCE``).
3. ``hessian_assembly`` (worlds still iterating): ``H = A + Jᵀ G J``; ``Δv = −H⁻¹ ∇ℓ`` by a dense tile
   Cholesky per world size, by the tree-block sparse Cholesky in larger worlds (``block_cholesky.py``,
   up to ``block_cholesky_max_dofs``), or by block-preconditioned CG above (``pcg.py``, or ``pcg_parallel.py``
   with ``pcg_threads="dof"``, the default on GPUs). On the CPU, a
   world whose constraints each act along one chain of one tree (a robot on static ground: no
   self-collision, no contact between trees; ``flag_coupling_constraints``) has an H with A's sparsity
   and is solved by the tree LDLᵀ of ``factorization.py`` instead of the dense or block Cholesky.
   Where sliding contacts would pass through stiction along ``Δv``, a second direction from their
   stiction branch replaces it when it descends (``stiction_prediction.py``; the block-Cholesky worlds
   solve it within their own launch, ``world_predicted = 2``).
4. ``line_search`` (``line_search.py``): exact (root of ``dℓ/dα`` on [0, α_max] by safeguarded Newton) or
   backtracking (Armijo), then ``v += α Δv``.

Distant contacts (``park_distant_contacts``): contacts in the detection gap whose bodies are far from closing
it in this step (``contact_is_distant`` at ``v0``) are *parked*: counted in ``num_contacts`` but left out of
the row lists that the iterations sweep, and without Jacobian entries (their velocities come from the body
twists, ``jacobian.body_chain_twists``). They take the last contact slots and the other contacts the first
(``contact_rows``), so the per-row passes stream through contiguous rows (a landing 1024-world pile: about 110
of 700 contacts per world in the iterations; 20 % less time per step than with the rows scattered among the
parked ones, as they were in the buffer's order). After the loop, ``check_parked_contacts`` evaluates them at the
solution, unless no world's ``v`` left ``v0`` (a scene at rest: no launch); a world where one would carry an
impulse has that row completed and joined to its lists and is solved again from its ``v`` (``_retry``, a
``wp.capture_while`` of its own), so the answer is that of the full problem. A row joins at most once, so the
retries end. The lists are sorted by scans into buffers allocated with the solver (``scan.py``): nothing is
allocated inside the retry's conditional graph node. Joint limit sides outside their window (SAP.md §5) are
left out the same way, checked at the solution (``joint_constraints.check_left_out_limits``) and joined by a
retry when the step crosses them: the window cannot see what drives, contacts or coupled dofs do to a joint.

The first check runs at the warm start ``v = v0``. In v* mode the free motion ``v*`` is formed only after
it, in the worlds that read it (``select_free_motion_worlds``: those still iterating, whose ``v_ref`` it is,
and those without constraints, whose answer it is); a world at rest never forms it.

The first check and the free motion run under ``wp.capture_if`` and the iterations under
``wp.capture_while`` on device flags ("some world still iterates", "some world reads v*"); the iteration
count lives on the device. So a step can be captured in a graph (CUDA graphs with conditional nodes, or
Warp's CPU graphs) and replays without host synchronization; launched without a capture, Warp reads each
flag on the host once per check.
"""

from __future__ import annotations

import functools

import numpy as np
import warp as wp

from .block_cholesky import tree_blocks_in_chunks, vec8f, world_block_cholesky
from .constraints.dispatch import constraint_impulse, slots_per_thread, thread_slots
from .constraints.friction_cone import contact_separates
from .contact_constraints import (
    FRONT,
    PARKED,
    ROWS_BUILD,
    ROWS_COMPLETE_PARKED,
    ROWS_COMPLETE_UNPARKED,
    UNPARKED,
    contact_rows,
    contact_velocity_from_twists,
    first_parked_slot,
    record_step_dt,
)
from .factorization import (
    factor_trees,
    refactor_broken_dense_worlds,
    refactor_broken_tree_blocks,
    resolve_broken_trees,
    solve_tree_systems,
    sparse_matvec,
    uses_tree_ldlt,
)
from .jacobian import body_chain_twists, on_one_chain, row_product, second_walk
from .joint_constraints import SLOTS_PER_DOF, check_left_out_limits, joint_constraint_rows
from .line_search import (
    COST_FLAT,
    INEXACT_STALL,
    NO_DESCENT,
    NO_DESCENT_RELATIVE_RESIDUAL,
    NOT_MOVED,
    line_dots,
    line_rows,
    line_search,
)
from .loop_constraints import loop_rows
from .mujoco_equalities import equality_rows, loop_joint_rows
from .mujoco_options import contact_dimensions
from .observables import contact_forces
from .pcg import (
    CG_LOOSEST_TOLERANCE,
    CG_MODEL_LOOSEST_TOLERANCE,
    CG_TIGHTEST_TOLERANCE,
    precond_diag_init,
    tree_factor_kernel,
    world_pcg,
)
from .pcg_parallel import ParallelConjugateGradients
from .scan import chunk_sums_size, exclusive_scan
from .stiction_prediction import (
    PLAIN_NEWTON_NEAR_OPTIMUM,
    PREDICTION_MAX_RELATIVE_RESIDUAL,
    adopt_model_direction,
    model_direction_slope,
    predict_stiction,
)
from .topology import bucket_views

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

# Where ``constraint_eval`` takes the rows' velocities ``v_c`` from
VC_FROM_V = wp.constant(0)  # ``J v`` afresh (the first check of a retry)
VC_AFTER_LINE_SEARCH = wp.constant(1)  # afresh, but rows dead along the line search's segment move along it
VC_AT_START = wp.constant(2)  # the warm start ``v = v0``: ``J v0`` as every row builder leaves it in ``c_vc``


@wp.kernel
def scatter_world_dense(
    # model
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    world_dof_start: wp.array(dtype=wp.int32),
    world_dense_offset: wp.array(dtype=wp.int32),
    # inputs
    world_tree_local: wp.array(dtype=wp.int32),
    A_rows: wp.array(dtype=float),
    # outputs
    A_world_out: wp.array(dtype=float),
):
    """Copy row i of the sparse A into its world's dense n×n block (both triangles), in the dense worlds
    that factor H densely this step (not those solved by the tree LDLᵀ, ``world_tree_local``); entries
    between different trees, or branches, stay zero."""
    i = wp.tid()
    w = dof_world[i]
    off = world_dense_offset[w]
    if off < 0 or world_tree_local[w] == 1:
        return  # no dense block (a larger world), or not factored densely
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    rs = dof_row_start[i]
    di = dof_depth[i]
    j = i
    while j >= 0:
        a = A_rows[rs + di - dof_depth[j]]
        A_world_out[off + (i - s) * n + (j - s)] = a
        A_world_out[off + (j - s) * n + (i - s)] = a
        j = dof_parent[j]


@wp.kernel
def reset_world_hessians(
    # model
    dof_world: wp.array(dtype=wp.int32),
    world_dof_start: wp.array(dtype=wp.int32),
    world_dense_offset: wp.array(dtype=wp.int32),
    # inputs
    active: wp.array(dtype=wp.int32),
    world_tree_local: wp.array(dtype=wp.int32),
    A_world: wp.array(dtype=float),
    # outputs
    H_out: wp.array(dtype=float),
):
    """``H = A`` on row i of its world's dense block, in the worlds flagged in ``active`` that factor H
    densely this step (the Hessian assembly then adds ``Jᵀ G J``)."""
    i = wp.tid()
    w = dof_world[i]
    off = world_dense_offset[w]
    if off < 0 or active[w] == 0 or world_tree_local[w] == 1:
        return
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    row = off + (i - s) * n
    for j in range(n):
        H_out[row + j] = A_world[row + j]


@wp.func
def start_statistics(
    w: int,
    world_failed: wp.array(dtype=wp.int32),
    world_iterations_out: wp.array(dtype=wp.int32),
    world_residual_out: wp.array(dtype=float),
    world_converged_out: wp.array(dtype=wp.int32),
    world_cg_iterations_out: wp.array(dtype=wp.int32),
):
    """World w's statistics before any Newton iteration: none done, residual 0, converged; a world that failed on
    its inputs (``world_failed``) not converged, with a NaN residual."""
    world_iterations_out[w] = 0
    world_cg_iterations_out[w] = 0
    world_residual_out[w] = 0.0
    world_converged_out[w] = 1
    if world_failed[w] != 0:
        world_residual_out[w] = wp.nan
        world_converged_out[w] = 0


@wp.kernel
def init_worlds(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    # inputs
    momentum_mode: int,
    world_constraint_count: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    world_failed: wp.array(dtype=wp.int32),
    # outputs
    c_gamma_out: wp.array(dtype=wp.vec3),
    c_G_out: wp.array(dtype=wp.mat33),
    world_active_out: wp.array(dtype=wp.int32),
    world_iterations_out: wp.array(dtype=wp.int32),
    world_residual_out: wp.array(dtype=float),
    world_converged_out: wp.array(dtype=wp.int32),
    world_cost_stalled_out: wp.array(dtype=wp.int32),
    world_cg_iterations_out: wp.array(dtype=wp.int32),
    world_plain_newton_out: wp.array(dtype=wp.int32),
    any_active_out: wp.array(dtype=wp.int32),
    world_norms_out: wp.array(dtype=wp.vec3),
    world_cost_out: wp.array(dtype=float),
    iteration_count_out: wp.array(dtype=wp.int32),
    any_free_motion_out: wp.array(dtype=wp.int32),
    world_iteration_offset_out: wp.array(dtype=wp.int32),
    world_retry_out: wp.array(dtype=wp.int32),
    any_retry_out: wp.array(dtype=wp.int32),
):
    """A world needs Newton iterations if it has dofs and constraints (v* mode) or dofs (momentum
    mode); otherwise its answer is ``v*`` with 0 iterations. A world with a non-finite input (``world_failed``)
    takes none either, not even in a retry, and ends not converged with a NaN residual (at ``v0``, or ``v*``
    without constraints in v* mode) and its rows with no impulse (they hold an earlier step's): a NaN that
    the constraints clamp away would otherwise keep it iterating to ``max_iterations``, and with it the loop
    of every world. ``any_active_out[0]`` (zeroed before)
    becomes 1 if some world iterates. Also starts the step's sums at zero (the warm start's norms and
    cost; thread 0: the iteration count and the free-motion and retry flags) and the parked contacts'
    bookkeeping (no retry yet): memsets would be graph nodes."""
    w = wp.tid()
    if w == 0:
        iteration_count_out[0] = 0
        any_free_motion_out[0] = 0
        any_retry_out[0] = 0
    world_iteration_offset_out[w] = 0
    world_retry_out[w] = 0
    world_norms_out[w] = wp.vec3(0.0)
    world_cost_out[w] = 0.0
    n = world_dof_start[w + 1] - world_dof_start[w]
    active = int(0)
    if n > 0 and (world_constraint_count[w] > 0 or momentum_mode == 1) and world_failed[w] == 0:
        active = 1
    world_active_out[w] = active
    if active == 1:
        any_active_out[0] = 1
    start_statistics(w, world_failed, world_iterations_out, world_residual_out, world_converged_out,
                     world_cg_iterations_out)  # fmt: skip
    if world_failed[w] != 0:  # (its NaN residual: the left-out rows' checks skip it, no retry)
        for k in range(world_constraint_start[w], world_constraint_start[w] + world_constraint_count[w]):
            c_gamma_out[world_constraints[k]] = wp.vec3(0.0)
            c_G_out[world_constraints[k]] = wp.mat33(0.0)
    world_cost_stalled_out[w] = 0
    world_plain_newton_out[w] = 0


@wp.kernel
def idle_worlds(
    # inputs
    world_failed: wp.array(dtype=wp.int32),
    # outputs
    world_iterations_out: wp.array(dtype=wp.int32),
    world_residual_out: wp.array(dtype=float),
    world_converged_out: wp.array(dtype=wp.int32),
    world_contact_count_out: wp.array(dtype=wp.int32),
    world_constraint_count_out: wp.array(dtype=wp.int32),
    world_parked_count_out: wp.array(dtype=wp.int32),
    world_cg_iterations_out: wp.array(dtype=wp.int32),
    contact_overflow_out: wp.array(dtype=wp.int32),
):
    """Per world, the statistics of a step without a SAP problem: no iterations, contacts or constraints, converged
    at ``v*`` (a failed world, ``world_failed``, not, with a NaN residual as in :func:`init_worlds`); thread 0 also
    clears the step's ``[buffer full, contacts dropped]`` (no contacts: none dropped; a memset would be a graph
    node of its own)."""
    w = wp.tid()
    if w == 0:
        contact_overflow_out[0] = 0
        contact_overflow_out[1] = 0
    start_statistics(w, world_failed, world_iterations_out, world_residual_out, world_converged_out,
                     world_cg_iterations_out)  # fmt: skip
    world_contact_count_out[w] = 0
    world_constraint_count_out[w] = 0
    world_parked_count_out[w] = 0


@wp.kernel
def begin_velocities(
    # inputs
    v0: wp.array(dtype=float),
    # outputs
    v_out: wp.array(dtype=float),
    jtg_out: wp.array(dtype=wp.vec2),
    Av0_out: wp.array(dtype=float),
    Adv_out: wp.array(dtype=float),
):
    """Per dof, the Newton loop's start: the warm start ``v = v0``, and ``Jᵀγ``, ``A v0`` and the first ``A Δv``
    at zero for their sums (one kernel instead of a copy and three memsets, each a node of the step's graph;
    ``line_search`` zeroes ``A Δv`` again after each use in an iterating world; in the others it gathers the
    later iterations' products unread, until ``begin_retry_products`` zeroes it for a retry)."""
    i = wp.tid()
    v_out[i] = v0[i]
    jtg_out[i] = wp.vec2(0.0)
    Av0_out[i] = 0.0
    Adv_out[i] = 0.0


@wp.kernel
def reset_constraint_counts(
    # inputs
    reset_contacts: int,
    # outputs
    world_contact_count_out: wp.array(dtype=wp.int32),
    world_parked_count_out: wp.array(dtype=wp.int32),
    world_constraint_count_out: wp.array(dtype=wp.int32),
    world_fill_out: wp.array(dtype=wp.int32),
    used_count_out: wp.array(dtype=wp.int32),
    contact_slot_fill_out: wp.array(dtype=wp.int32),
):
    """Per world, the step's constraint counts at zero before the rows are built (``reset_contacts = 1``: the
    contacts too, and the contact slots taken), counted and sorted (thread 0: the used slots); one kernel
    instead of six memsets."""
    w = wp.tid()
    if w == 0:
        used_count_out[0] = 0
        if reset_contacts == 1:
            contact_slot_fill_out[0] = 0
            contact_slot_fill_out[1] = 0
    if reset_contacts == 1:
        world_contact_count_out[w] = 0
        world_parked_count_out[w] = 0
    world_constraint_count_out[w] = 0
    world_fill_out[w] = 0


@wp.kernel
def any_world_flagged(
    # inputs
    world_flag: wp.array(dtype=wp.int32),
    # outputs (zeroed before)
    any_out: wp.array(dtype=wp.int32),
):
    """``any_out[0] = 1`` if some world's flag is set."""
    if world_flag[wp.tid()] == 1:
        any_out[0] = 1


@wp.kernel
def select_free_motion_worlds(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    # inputs
    world_constraint_count: wp.array(dtype=wp.int32),
    world_active: wp.array(dtype=wp.int32),
    # outputs
    worlds_out: wp.array(dtype=wp.int32),
    any_out: wp.array(dtype=wp.int32),
):
    """v* mode, after the first check: the worlds that read ``v*``, those still iterating (``v_ref = v*``)
    and those without constraints (``v = v*``). ``any_out[0]`` (zeroed before) becomes 1 if there are any."""
    w = wp.tid()
    selected = int(0)
    if world_dof_start[w + 1] > world_dof_start[w] and (world_active[w] == 1 or world_constraint_count[w] == 0):
        selected = 1
        any_out[0] = 1
    worlds_out[w] = selected


@wp.kernel
def adopt_free_motion(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    world_constraint_count: wp.array(dtype=wp.int32),
    v_star: wp.array(dtype=float),
    # outputs
    v_out: wp.array(dtype=float),
):
    """``v = v*`` in the worlds without constraints (v* mode: their answer)."""
    i = wp.tid()
    if world_constraint_count[dof_world[i]] == 0:
        v_out[i] = v_star[i]


@wp.kernel
def count_constraints(
    # inputs
    slots_per_thread: int,
    contact_slot_count: int,
    contact_slot_fill: wp.array(dtype=wp.int32),
    c_parked: wp.array(dtype=wp.int32),
    # outputs (c_world read and updated)
    c_world: wp.array(dtype=wp.int32),
    world_constraint_count_out: wp.array(dtype=wp.int32),
    slot_used_out: wp.array(dtype=wp.int32),
):
    """Constraints per world in the Newton iterations (contacts, drives, limits: every slot in use but the
    parked contacts); flags those slots. The contact slots between the step's front and back parts
    (``contact_rows``) are marked unused, ``c_world = -1``: a row of an earlier step may linger there. A thread
    takes a run of slots (:func:`thread_slots`)."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, c_world.shape[0])
    gap_begin = contact_slot_fill[FRONT]
    gap_end = first_parked_slot(contact_slot_count, contact_slot_fill)
    for c in range(begin, end):
        slot_used_out[c] = 0
        if c >= gap_begin and c < gap_end:
            c_world[c] = -1
            continue
        w = c_world[c]
        if w >= 0 and c_parked[c] == 0:
            wp.atomic_add(world_constraint_count_out, w, 1)
            slot_used_out[c] = 1


@wp.kernel
def sort_constraints_by_world(
    # inputs
    slots_per_thread: int,
    c_world: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    slot_used: wp.array(dtype=wp.int32),
    slot_rank: wp.array(dtype=wp.int32),
    # outputs
    world_fill: wp.array(dtype=wp.int32),
    world_constraints_out: wp.array(dtype=wp.int32),
    used_slots_out: wp.array(dtype=wp.int32),
    used_count_out: wp.array(dtype=wp.int32),
):
    """Two lists of the used constraint slots: bucketed by world (``world_constraint_start`` is the
    exclusive scan of the per-world counts; for per-world loops) and in slot order (``slot_rank`` is the
    exclusive scan of ``slot_used``; for the per-row kernels), with its length. A thread takes a run of
    slots."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, c_world.shape[0])
    for c in range(begin, end):
        if c == slot_used.shape[0] - 1:
            used_count_out[0] = slot_rank[c] + slot_used[c]
        if slot_used[c] == 0:
            continue
        w = c_world[c]
        used_slots_out[slot_rank[c]] = c
        k = wp.atomic_add(world_fill, w, 1)
        world_constraints_out[world_constraint_start[w] + k] = c


@wp.kernel
def flag_coupling_constraints(
    # model
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    # outputs (world_tree_local: set beforehand, cleared here)
    world_tree_local_out: wp.array(dtype=wp.int32),
):
    """Clears ``world_tree_local`` for the world of a constraint whose dofs do not all lie on one chain of
    one tree (a contact between two trees or two branches, a loop closure, a mimic coupling of two
    branches): its ``Jᵀ G J`` couples dofs that are not ancestor and descendant, outside A's sparsity.

    A constraint's entries are at most two chain walks (each dof followed by its parent, see
    ``jacobian.py``; joint rows have one or two single dofs, a BALL drive's its joint's three as one walk): it is
    chain-local when it has one walk, or when the start of the second lies on the chain of the first's start, or
    the reverse."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        nnz = c_nnz[c]
        second = second_walk(c, nnz, c_dof, dof_parent)
        if second == nnz:
            continue
        if not on_one_chain(c_dof[c, 0], c_dof[c, second], dof_parent, dof_depth):
            world_tree_local_out[c_world[c]] = 0


@wp.kernel
def constraint_eval(
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    world_active: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    v: wp.array(dtype=float),
    vc_source: int,
    c_segment_dead: wp.array(dtype=wp.int32),
    c_dvc: wp.array(dtype=wp.vec3),
    world_alpha: wp.array(dtype=float),
    # outputs (c_vc read and updated)
    c_vc: wp.array(dtype=wp.vec3),
    c_gamma_out: wp.array(dtype=wp.vec3),
    c_G_out: wp.array(dtype=wp.mat33),
    jtg_out: wp.array(dtype=wp.vec2),
    world_cost_out: wp.array(dtype=float),
):
    """Per constraint of an active world: ``v_c = J v``; ``γ, G, ℓ_c``; accumulates ``Jᵀγ`` and the
    world's constraint cost. A thread takes a run of the used slots (:func:`thread_slots`).
    ``vc_source`` (``VC_*``): at the warm start ``v_c = J v0`` is read, not formed (the row builders sum it
    while their entries are at hand). After a line search ``v`` is ``v + α Δv``, and a row without impulse on
    that whole segment (``c_segment_dead``, from ``line_rows``) only moves along it, ``v_c += α Δv_c``
    (``J v`` but for round-off), and keeps ``γ = 0`` and ``ℓ_c = 0``. Its G is zero once it moved: a contact or a
    limit has ``G = 0`` wherever ``γ = 0`` but in the round-off band of its kink (``friction_cone.KINK_ROUND_OFF``),
    which a step that keeps it without impulse is taken to leave; a row with a linear branch (drive, bilateral) has
    no impulse at both ends only where ``Δv_c = 0`` (it keeps the G of the segment's start) or where it can carry
    none (a zero effort limit, ``G = 0``). Evaluating the dead rows with curvature in full instead (a helper
    review's proposal) let a fuzzed world with lagged contacts (harsh case 100090, world 3) stop 13 % off the float64
    solve, reported converged; this keeps it within 2e-6. Far more contacts
    lie in the collision gap than touch (a pile: about 700 of 750 rows per world), so this skips most of
    the kernel's products and impulses."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        w = c_world[c]
        if world_active[w] == 0:
            continue
        if vc_source == VC_AFTER_LINE_SEARCH and c_segment_dead[c] == 1:
            step = world_alpha[w] * c_dvc[c]
            c_vc[c] = c_vc[c] + step
            if wp.dot(step, step) > 0.0:
                c_G_out[c] = wp.mat33(0.0)  # moved without impulse: off its kink's band (see above)
            continue  # γ, ℓ_c (and an unmoved row's G) as at the segment's start
        nnz = c_nnz[c]
        vc = c_vc[c]
        if vc_source != VC_AT_START:
            vc = row_product(c, c_nnz, c_dof, c_J, v)
        gamma, G, cost = constraint_impulse(c_kind[c], vc, c_vhat[c], c_R[c], c_param[c])
        c_vc[c] = vc
        c_gamma_out[c] = gamma
        c_G_out[c] = G
        if cost == 0.0 and wp.dot(gamma, gamma) == 0.0:
            continue  # no impulse, no cost (a separated contact, an inactive limit): nothing to accumulate
        wp.atomic_add(world_cost_out, w, cost)
        for e in range(nnz):
            term = wp.dot(c_J[c, e], gamma)
            wp.atomic_add(jtg_out, c_dof[c, e], wp.vec2(term, wp.abs(term)))


@wp.kernel
def hessian_assembly(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_dense_offset: wp.array(dtype=wp.int32),
    world_uses_pcg: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_local: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    world_active: wp.array(dtype=wp.int32),
    world_tree_local: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    # outputs (accumulated)
    H_out: wp.array(dtype=float),
    H_rows_out: wp.array(dtype=float),
    P_out: wp.array(dtype=float),
    P_rows_out: wp.array(dtype=float),
    P_shift_out: wp.array(dtype=float),
    pdiag_out: wp.array(dtype=float),
):
    """``Jᵀ G J`` of each constraint of a world that still iterates: into the sparse rows of H (A's layout:
    the deeper dof's row, at the ancestor's column) in worlds flagged ``world_tree_local``, into the
    world's dense Hessian in the other dense worlds, or, for PCG worlds, into the block preconditioner:
    the intra-tree part into dense tree blocks, and for trees too large for a dense block into their rows
    ``P_rows`` (A's layout, for the tree LDLᵀ) and the Jacobi diagonal; the block-Cholesky worlds assemble
    their own H (``block_cholesky.py``). Only the lower triangles (row ≥ column) are accumulated:
    ``wp.tile_cholesky`` (fill mode "lower") reads nothing else, so the upper triangles keep A's entries.

    A large tree's pair of dofs on two branches (a self-contact) lies outside A's sparsity: its entry x is
    dropped, and |x| added to both dofs' ``P_shift``, the diagonal that ``factorization.factor_trees`` adds where
    the rows without it are not positive definite (dropping can make them indefinite; with the shift
    ``P_t ⪰ A_t + (Jᵀ G J)_tt ≻ 0``: the dropped ``x (e_i e_jᵀ + e_j e_iᵀ)`` is dominated by
    ``|x| (e_i e_iᵀ + e_j e_jᵀ)``). A thread takes a run of the used slots."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        w = c_world[c]
        if world_active[w] == 0:
            continue
        if world_tree_local[w] == 0 and world_dense_offset[w] < 0 and world_uses_pcg[w] == 0:
            continue  # a block-Cholesky world (it assembles its own H): its rows' G is not read
        G = c_G[c]
        if wp.ddot(G, G) == 0.0:
            continue  # no curvature (separated contact, inactive limit, saturated drive): nothing to add
        nnz = c_nnz[c]
        if nnz == 0:
            continue  # a contact whose Jacobian vanishes: nothing to add (its c_dof holds an earlier row's entries)
        if (world_tree_local[w] == 1 and nnz == dof_depth[c_dof[c, 0]] + 1
                and second_walk(c, nnz, c_dof, dof_parent) == nnz):  # fmt: skip
            # one chain walk from a dof to its root (a contact with static geometry): entry f ≥ e is the
            # (f − e)-th ancestor of entry e, at offset f − e of e's row of H (A's layout); a row of as
            # many dofs that is not one walk (a mimic coupling of a dof and its descendant) is not
            for e in range(nnz):
                row = dof_row_start[c_dof[c, e]] - e
                GJe = G * c_J[c, e]
                for f in range(e, nnz):
                    wp.atomic_add(H_rows_out, row + f, wp.dot(c_J[c, f], GJe))
            continue
        if world_tree_local[w] == 1:
            # dofs on one chain: entry pairs (row e, column f) with f an ancestor of e or the same dof go
            # to the deeper dof's row of H (A's layout)
            for e in range(nnz):
                de = c_dof[c, e]
                row = dof_row_start[de] + dof_depth[de]
                depth_e = dof_depth[de]
                GJe = G * c_J[c, e]
                for f in range(nnz):
                    depth_f = dof_depth[c_dof[c, f]]
                    if depth_f <= depth_e:
                        wp.atomic_add(H_rows_out, row - depth_f, wp.dot(c_J[c, f], GJe))
            continue
        off = world_dense_offset[w]
        s = world_dof_start[w]
        n = world_dof_start[w + 1] - s
        second = nnz  # where the row's second chain walk starts (PCG worlds: entries of one walk share a chain)
        if off < 0:
            second = second_walk(c, nnz, c_dof, dof_parent)
        for e in range(nnz):
            de = c_dof[c, e]
            GJe = G * c_J[c, e]
            for f in range(nnz):
                df = c_dof[c, f]
                if df < de:
                    continue  # lower triangle only: the Cholesky factorizations read no other
                value = wp.dot(c_J[c, f], GJe)
                if off >= 0:
                    wp.atomic_add(H_out, off + (df - s) * n + (de - s), value)
                elif dof_tree[df] == dof_tree[de]:
                    block = dof_dense_offset[de]
                    if block >= 0:
                        nt = tree_dof_count[dof_tree[de]]
                        wp.atomic_add(P_out, block + dof_local[df] * nt + dof_local[de], value)
                    elif df == de:
                        wp.atomic_add(pdiag_out, de, value)
                        wp.atomic_add(P_rows_out, dof_row_start[de], value)
                    else:
                        chain = (e < second) == (f < second)  # one walk: one chain; else walk up to see
                        if not chain:
                            chain = on_one_chain(df, de, dof_parent, dof_depth)
                        if chain:  # de is df's ancestor (the smaller index)
                            wp.atomic_add(P_rows_out, dof_row_start[df] + dof_depth[df] - dof_depth[de], value)
                        else:
                            wp.atomic_add(P_shift_out, de, wp.abs(value))
                            wp.atomic_add(P_shift_out, df, wp.abs(value))


@wp.func
def gradient_and_momentum(
    i: int,
    momentum_mode: int,
    dt: float,
    Ae: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
):
    """``∇ℓ_i`` and ``(A v)_i`` of dof i (see :func:`gradient`)."""
    Av = Ae[i] + Av0[i]
    g = Ae[i] - jtg[i][0]
    if momentum_mode == 1:
        g -= dt * tau[i]
    else:
        Av += dt * tau[i]
    return g, Av


@wp.func
def norm_terms(d2: float, g: float, Av: float, jtg_i: float):
    """Dof i's share ``(d² g², d² (A v)², d² (Jᵀγ)²)`` of the squared scaled norms, ``d² = 1/A_ii``."""
    return wp.vec3(d2 * g * g, d2 * Av * Av, d2 * jtg_i * jtg_i)


@wp.kernel
def gradient(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    momentum_mode: int,
    dt: float,
    warm_start: int,
    world_active: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
    # outputs (Ae is read, or written when warm_start = 1; any_active lowered at the warm start)
    Ae: wp.array(dtype=float),
    grad_out: wp.array(dtype=float),
    grad_model_out: wp.array(dtype=float),
    world_norms_out: wp.array(dtype=wp.vec3),
    any_active_out: wp.array(dtype=wp.int32),
):
    """``∇ℓ_i = (A (v − v_ref))_i − m Δt τ_i − (Jᵀγ)_i``; accumulates the squared scaled norms
    ``(‖D∇ℓ‖², ‖D A v‖², ‖D Jᵀγ‖²)`` of the world, ``D = diag(A)^-½`` (``A_inv_diag``: 0 for a kinematic body's
    dofs, which are not unknowns of the problem). ``Ae = A (v − v_ref)`` needs no
    product: at the warm start ``v = v0`` (``warm_start = 1``) it is ``−Δt τ`` in v* mode
    (``v* = v0 + Δt A⁻¹ τ``) and 0 in momentum mode (``v_ref = v0``), written here; after that the line search
    adds ``α A Δv``. Likewise ``A v = Ae + A v_ref`` with ``A v_ref = A v0 + (1 − m) Δt τ`` from ``Av0``.
    At the warm start thread 0 lowers ``any_active`` for the check that follows (later checks find it
    lowered by ``line_dots``). ``grad_model`` starts as a copy of ``∇ℓ`` (``predict_stiction`` subtracts
    its rows' changes from it; the block-Cholesky worlds form theirs in their own solve)."""
    i = wp.tid()
    if warm_start == 1 and i == 0:
        any_active_out[0] = 0
    w = dof_world[i]
    if world_active[w] == 0:
        return
    if warm_start == 1:
        if momentum_mode == 1:
            Ae[i] = 0.0
        else:
            Ae[i] = -dt * tau[i]
    g, Av = gradient_and_momentum(i, momentum_mode, dt, Ae, Av0, tau, jtg)
    grad_out[i] = g
    grad_model_out[i] = g
    wp.atomic_add(world_norms_out, w, norm_terms(A_inv_diag[i], g, Av, jtg[i][0]))


FLOOR_PROGRESS = 0.25
"""A world whose cost no longer changes (``COST_FLAT``) stops once its residual ‖D∇ℓ‖ falls by less than this
factor in an iteration: Newton's method still converging drops it much faster, at the float32 floor it hovers.
Stopping at the flat cost alone left the velocities of thrown 1 kg and 0.1 kg boxes 2e-4 m/s off the float64
answer (relative residual 5e-5; 5e-6 m/s two iterations later), and 1e-2 m/s beside a 1000 kg box."""


TREE_FLOOR = 1.0e-3
"""The float32-floor stop (``COST_FLAT``, ``FLOOR_PROGRESS``) also needs every tree of the world within this
fraction of its own scale: ``‖D∇ℓ‖_t ≤ TREE_FLOOR · max(‖D A v‖_t, ‖D Jᵀγ‖_t)``. The cost and the world's norms are
sums over its trees, dominated by the heaviest: 1 g boxes thrown onto 1000 kg ones were stopped with their own
velocities 0.08-0.44 m/s off (the world's relative residual 1e-4, the boxes' own 0.1-0.3) and reported converged.
Until session 34 it was 1e-2, and a flat cost across a kink, whose residual hovers for a few iterations before it
falls again, passed for the floor: a kinematic paddle pushing three boxes stopped at a relative residual 1.1e-3,
1.5e-3 rad/s off the float64 answer (five more iterations: 2e-7), a landing 50-sphere pile at 1.3e-3-1.9e-3, 7e-5
to 9e-5 m/s off (about 5e-7 in its other steps), helper review. At 1e-3, 8 landing piles over 150 steps take 6.08 ->
6.13 Newton iterations per step (lagged contact 5.92 -> 6.03), 8 ants 1.033 -> 1.040, humanoids and box stacks
as before, all converged, their largest relative residuals 1.1e-4 (pile; 1.9e-3 before), 9e-5 (lagged; 2.1e-3),
1.9e-4 (ant; 3.9e-3). 1e-4 costs 20 % more iterations on the pile (up to 68 in a step).
Both line searches: backtracking that took its first trial α = 1/ρ wherever Armijo accepted it converged only
linearly near the optimum, so that the check held landing piles to ``max_iterations`` in 3.5 % of their world-steps;
since it lands on the minimum between the trials that bracket it, it converges as the exact search does."""


FLOOR_PATIENCE = 10
"""Checks in a row with a flat cost, a residual not falling fast and the worst tree's excess over ``TREE_FLOOR`` not
falling by ``FLOOR_PROGRESS`` after which a world stops at its float32 floor although that tree is not within
``TREE_FLOOR`` (:func:`floor_reached`). A light tree coupled by stiff rows to trees 100-1000 times faster has its own
floor there: the round-off of their velocities, through the rows' Hessians, in its impulses. Realistic fuzzed worlds
of 101 and 128 dofs (velocities up to 1e3 m/s, a free body at 2e-3 of its own scale) reached their floor in 11-20
Newton iterations and iterated on it to ``max_iterations``; the joint limits and parked contacts that their answers
crossed were joined only then, with no iterations left, and they ended not converged 50-72 % off the float64 solve.
A light tree still converging drops its excess 4-fold within a few iterations (Newton's method), and a residual
hovers across a kink for a few iterations only. Those worlds stopped at excesses of 1.1-4.8 and world relative
residuals of 1e-5 to 2e-4."""


FLOOR_MAX_EXCESS = 10.0
"""A world stopped by ``FLOOR_PATIENCE`` is converged only if its worst tree's excess over ``TREE_FLOOR`` is at most
this: that tree within 1e-2 of its own scale, the most that float32 floors were measured to leave
(``NO_DESCENT_RELATIVE_RESIDUAL``). Farther out it stops not converged: a flat cost there is no float32 floor (the
1 g boxes on 1000 kg ones that ``TREE_FLOOR`` keeps going were 0.1-0.3 off their own scale), and the stop leaves the
rest of ``max_iterations`` to a retry that joins rows."""


CUT_STEP_ALPHA = 0.05
"""A world whose last step moved nothing (``NOT_MOVED``) stops at the float32 floor, but converged only if that step was
not cut below this α or every tree is within ``TREE_FLOOR`` of its own optimum. A step of α ≥ 0.05 that moves nothing
is Newton's own verdict that the world is at its optimum within round-off: its direction is within
``STEP_ROUND_OFF/α`` = 2e-5 of each tree's velocity scale (a landing humanoid: α = 1.0 at a relative residual 1.2e-3,
its trees' floor; at round-off the exact line search's α is itself round-off: a 200 g cube sliding down between two
64 g gripper pads, 6e-7 off the float64 solve, stopped at α = 0.49 and 0.22 with its worst tree 1.4 and 1.2 times its
``TREE_FLOOR`` off and was reported not converged while this was 0.5). A step the line search cut far below is a
direction that float32 could not solve: the direct solve of a 71-dof world of cond(D H D) = 2.6e5 came out 8 times
its size off Newton's, the line search took α = 3.4e-5, and the world stopped 2.6e-3 of its velocity scale off the
float64 solve, reported converged; now it is reported not converged (also the other cut steps measured: α 3.2e-5 and
2.3e-3, 5.6e-4 and 2e-5 off)."""

IMPULSE_ROUND_OFF = 1.0e-6
"""float32 resolves ``∇ℓ = A (v − v_ref) − Jᵀγ`` only to the round-off of its terms, and impulses that oppose each
other cancel in ``Jᵀγ`` but not in its round-off (a stiff drive holding a link on its limit, a body squeezed
between two): a stalled world, or a tree in the floor check, whose ``‖D∇ℓ‖`` is within this fraction of
``‖D Σ_c |J_cᵀγ_c|‖`` (the impulses' sizes per dof) is at the float32 floor, whatever its relative residual. A hinge
driven at 1e4 N·m/rad against its limit, at rest: ``‖D∇ℓ‖`` 2e-5, 3e-8 of its 620 √kg·m/s of impulses but 0.6 of
``max(‖D A v‖, ‖D Jᵀγ‖)``, ended a quarter of its steps not converged (helper review, session 28)."""


@wp.func
def impulse_size(
    t_begin: int,
    t_end: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
):
    """``‖D Σ_c |J_cᵀγ_c|‖`` over the dofs of trees ``[t_begin, t_end)`` (see :data:`IMPULSE_ROUND_OFF`)."""
    size = float(0.0)
    for t in range(t_begin, t_end):
        for i in range(tree_dof_start[t], tree_dof_start[t] + tree_dof_count[t]):
            size += A_inv_diag[i] * jtg[i][1] * jtg[i][1]
    return wp.sqrt(size)


@wp.func
def tree_excess(
    t: int,
    abs_tolerance: float,
    rel_tolerance: float,
    round_off: float,
    momentum_mode: int,
    dt: float,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
):
    """Tree t's ``‖D∇ℓ‖_t`` (its dofs' share of :func:`gradient`'s norms) over what the test allows it,
    ``max(ε_a + ε_r max(‖D A v‖_t, ‖D Jᵀγ‖_t), round_off · ‖D Σ_c |J_cᵀγ_c|‖_t)`` (:data:`IMPULSE_ROUND_OFF`):
    at most 1 where the tree passes (0 for a zero residual, infinite for a positive one that nothing allows). The
    impulses' sizes are summed only where the first allowance does not hold (a tree within it passes either way)."""
    norms = wp.vec3(0.0)
    for i in range(tree_dof_start[t], tree_dof_start[t] + tree_dof_count[t]):
        g, Av = gradient_and_momentum(i, momentum_mode, dt, Ae, Av0, tau, jtg)
        norms += norm_terms(A_inv_diag[i], g, Av, jtg[i][0])
    residual = wp.sqrt(norms[0])
    allowed = abs_tolerance + rel_tolerance * wp.sqrt(wp.max(norms[1], norms[2]))
    if round_off > 0.0 and residual > allowed:
        allowed = wp.max(allowed, round_off * impulse_size(t, t + 1, tree_dof_start, tree_dof_count, A_inv_diag, jtg))
    if residual == 0.0:
        return float(0.0)
    if allowed == 0.0:
        return wp.inf
    return residual / allowed


@wp.func
def worst_tree_excess(
    w: int,
    abs_tolerance: float,
    rel_tolerance: float,
    round_off: float,
    momentum_mode: int,
    dt: float,
    world_tree_start: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
):
    """The largest :func:`tree_excess` over the trees of world w: at most 1 where every tree passes the test."""
    worst = float(0.0)
    for t in range(world_tree_start[w], world_tree_start[w + 1]):
        worst = wp.max(worst, tree_excess(t, abs_tolerance, rel_tolerance, round_off, momentum_mode, dt,
                                          tree_dof_start, tree_dof_count, A_inv_diag, Ae, Av0, tau, jtg))  # fmt: skip
    return worst


@wp.func
def floor_reached(
    w: int,
    momentum_mode: int,
    dt: float,
    world_tree_start: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
    world_floor_checks: wp.array(dtype=wp.int32),
    world_floor_excess: wp.array(dtype=float),
    world_converged: wp.array(dtype=wp.int32),
):
    """At a check with a flat cost and a residual not falling fast: whether world w stops at its float32 floor. Yes
    where every tree is within ``TREE_FLOOR`` of its own optimum (:func:`worst_tree_excess` at most 1), or where the
    worst tree's excess over that has not fallen by ``FLOOR_PROGRESS`` in ``FLOOR_PATIENCE`` such checks in a row:
    that tree is at its own floor, set by the round-off of the faster trees it touches (see
    :data:`FLOOR_PATIENCE`); converged only if that excess is at most ``FLOOR_MAX_EXCESS``, else marked not
    converged in ``world_converged`` (a flat cost that far out is no float32 floor; a retry that joins rows starts
    it again). ``world_floor_checks`` counts the checks since the excess last fell so (0: no streak yet;
    ``check_convergence`` ends a streak at a check that is not flat and slow, and the first check of a step or a
    retry is not), ``world_floor_excess`` holds the excess at its start."""
    excess = worst_tree_excess(w, 0.0, TREE_FLOOR, IMPULSE_ROUND_OFF, momentum_mode, dt, world_tree_start,
                               tree_dof_start, tree_dof_count, A_inv_diag, Ae, Av0, tau, jtg)  # fmt: skip
    if excess <= 1.0:
        return True
    checks = world_floor_checks[w]
    if checks == 0 or excess < FLOOR_PROGRESS * world_floor_excess[w]:
        world_floor_excess[w] = excess  # a streak starts, or the worst tree is still converging
        checks = 0
    world_floor_checks[w] = checks + 1
    if checks + 1 <= FLOOR_PATIENCE:
        return False
    if not excess <= FLOOR_MAX_EXCESS:  # (an infinite or NaN excess too)
        world_converged[w] = 0
    return True


@wp.kernel
def check_convergence(
    # model
    world_tree_start: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    # inputs
    momentum_mode: int,
    dt: float,
    A_inv_diag: wp.array(dtype=float),
    Ae: wp.array(dtype=float),
    Av0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    jtg: wp.array(dtype=wp.vec2),
    iteration_count: wp.array(dtype=wp.int32),
    max_iterations: int,
    abs_tolerance: float,
    rel_tolerance: float,
    world_norms: wp.array(dtype=wp.vec3),
    world_forcing: wp.array(dtype=float),
    world_alpha: wp.array(dtype=float),
    world_iteration_offset: wp.array(dtype=wp.int32),
    # outputs (read and updated)
    world_cost_stalled: wp.array(dtype=wp.int32),
    world_floor_checks: wp.array(dtype=wp.int32),
    world_floor_excess: wp.array(dtype=float),
    world_active: wp.array(dtype=wp.int32),
    world_iterations: wp.array(dtype=wp.int32),
    world_residual: wp.array(dtype=float),
    world_converged: wp.array(dtype=wp.int32),
    any_active_out: wp.array(dtype=wp.int32),
    world_plain_newton_out: wp.array(dtype=wp.int32),
    # outputs (zeroed here: the sums of the next Newton step)
    world_predicted_out: wp.array(dtype=wp.int32),
    world_slope_out: wp.array(dtype=float),
    world_line_out: wp.array(dtype=wp.vec3),
    world_live_count_out: wp.array(dtype=wp.int32),
    world_row_slopes_out: wp.array(dtype=wp.vec2),
):
    """Stop a world at optimality (the world's criterion and, where it holds, every tree's at its own scale,
    ``worst_tree_excess``: the world's norms are dominated by its heaviest or fastest trees), when Newton's method
    stalled at the float32 floor (``line_search``: no descent, no move, or a flat cost while the residual no longer
    falls fast, ``FLOOR_PROGRESS``, and every tree is near its own optimum, ``TREE_FLOOR``, or the worst one has
    stopped converging too, ``FLOOR_PATIENCE``: :func:`floor_reached`), or after
    ``max_iterations`` (not converged). A world without descent or without a move while its residual is above
    ``NO_DESCENT_RELATIVE_RESIDUAL`` of ``max(‖D A v‖, ‖D Jᵀγ‖)`` stops not converged; one with a flat cost that far
    out goes on (no float32 floor) until its worst tree stops converging, and then stops not converged
    (``FLOOR_MAX_EXCESS``). So does a world whose CG direction, not solved to ``CG_TIGHTEST_TOLERANCE``,
    found no descent or no move while some tree is not within ``TREE_FLOOR`` of its optimum: it is marked
    ``INEXACT_STALL`` and solves its next direction to that tolerance. A world whose step was cut below
    ``CUT_STEP_ALPHA`` and moved nothing stops not converged unless every tree is within ``TREE_FLOOR``. NaN residuals
    never pass, so a broken world ends not converged.
    ``iteration_count[0]`` is the number of Newton iterations done in this loop, ``world_iteration_offset`` those of
    the world's earlier loops in the step (a retry, see the module doc); ``any_active_out[0]`` (zeroed before)
    becomes 1 if some world goes on; a world that goes on within ``PREDICTION_MAX_RELATIVE_RESIDUAL`` of optimality
    takes plain Newton steps from here on (``world_plain_newton``). The per-world sums of the next Newton step start
    at zero here (a memset each would be one more node per iteration in a GPU graph); this relies on
    ``world_active`` changing only here and in ``init_worlds``, so that every world of a Newton step had its sums
    zeroed."""
    w = wp.tid()
    if world_active[w] == 0:
        return
    previous = world_residual[w]  # the last check's (0 before the step's first)
    world_predicted_out[w] = 0
    world_slope_out[w] = 0.0
    world_line_out[w] = wp.vec3(0.0)
    world_live_count_out[w] = 0
    world_row_slopes_out[w] = wp.vec2(0.0)
    iteration = iteration_count[0] + world_iteration_offset[w]
    norms = world_norms[w]
    residual = wp.sqrt(norms[0])
    scale = wp.max(wp.sqrt(norms[1]), wp.sqrt(norms[2]))
    world_residual[w] = residual
    world_iterations[w] = iteration
    stalled = world_cost_stalled[w]
    no_move = stalled == NO_DESCENT or stalled == NOT_MOVED  # the next direction is the same
    flat_and_slow = stalled == COST_FLAT and residual > FLOOR_PROGRESS * previous
    if not flat_and_slow:
        world_floor_checks[w] = 0  # a new streak of flat-cost checks starts at the next one
    if not wp.isfinite(residual):
        world_active[w] = 0
        world_converged[w] = 0
    elif residual <= abs_tolerance + rel_tolerance * scale and worst_tree_excess(
        w, abs_tolerance, rel_tolerance, 0.0, momentum_mode, dt, world_tree_start, tree_dof_start, tree_dof_count,
        A_inv_diag, Ae, Av0, tau, jtg,
    ) <= 1.0:  # fmt: skip
        world_active[w] = 0
    elif (
        no_move
        and world_forcing[w] > CG_TIGHTEST_TOLERANCE
        and iteration < max_iterations
        and worst_tree_excess(
            w, 0.0, TREE_FLOOR, IMPULSE_ROUND_OFF, momentum_mode, dt, world_tree_start, tree_dof_start,
            tree_dof_count, A_inv_diag, Ae, Av0, tau, jtg,
        ) > 1.0
    ):  # fmt: skip
        world_cost_stalled[w] = INEXACT_STALL  # a loose direction stalled short of the floor: a precise one next
    elif (
        no_move
        and residual > NO_DESCENT_RELATIVE_RESIDUAL * scale
        and residual
        > (
            IMPULSE_ROUND_OFF
            * impulse_size(
                world_tree_start[w], world_tree_start[w + 1], tree_dof_start, tree_dof_count, A_inv_diag, jtg
            )
        )
    ):
        world_active[w] = 0  # stalled far from optimal: a broken direction or problem, not round-off
        world_converged[w] = 0
    elif no_move:
        world_active[w] = 0  # no descent or no move at round-off: the float32 floor
        if (
            stalled == NOT_MOVED
            and world_alpha[w] < CUT_STEP_ALPHA
            and worst_tree_excess(
                w, 0.0, TREE_FLOOR, IMPULSE_ROUND_OFF, momentum_mode, dt, world_tree_start, tree_dof_start,
                tree_dof_count, A_inv_diag, Ae, Av0, tau, jtg,
            ) > 1.0
        ):  # fmt: skip
            world_converged[w] = 0  # a step cut to round-off short of some tree's floor: a direction float32 lost
    elif flat_and_slow and floor_reached(
        w, momentum_mode, dt, world_tree_start, tree_dof_start, tree_dof_count, A_inv_diag, Ae, Av0, tau, jtg,
        world_floor_checks, world_floor_excess, world_converged,
    ):  # fmt: skip
        world_active[w] = 0  # a flat cost and no fast progress either: the float32 floor
    elif iteration >= max_iterations:
        world_active[w] = 0
        world_converged[w] = 0
    if world_active[w] == 1:
        any_active_out[0] = 1
        if residual <= PREDICTION_MAX_RELATIVE_RESIDUAL * scale:
            world_plain_newton_out[w] = PLAIN_NEWTON_NEAR_OPTIMUM


@functools.cache
def newton_direction_kernel(n: int):
    """Tile kernel for worlds of ``n`` dofs: ``Δv = −H⁻¹ ∇ℓ`` by a dense Cholesky of H (worlds not solved by
    the tree LDLᵀ). Where the factorization breaks down in float32 (H too ill-conditioned: a pivot not positive,
    the direction not finite), the Jacobi direction ``−∇ℓ_i / H_ii``, which descends as well, and the world is
    flagged in ``world_dense_broken_out`` for ``factorization.refactor_broken_dense_worlds``, which replaces it by
    the solve of H with a scaled diagonal where one holds (a planar chain of 32 light links on the ground failed
    every step on NaN directions on the GPU's path, then converged in about half of them by Jacobi's). The pivots
    are checked on L's diagonal, not only through the direction: on CUDA Warp's Cholesky
    runs in cuSolverDx, which reports a failed factorization by a status Warp does not return, and a LAPACK-style
    factorization stops at the failing column with that pivot (not positive) on the diagonal and the columns after it
    untouched, so its solve can be finite (a behaviour read from the documentation, not seen: no GPU in this
    repository's checks)."""

    @wp.kernel(module="unique", module_options={"enable_backward": False})
    def newton_direction(
        # model
        bucket_worlds: wp.array(dtype=wp.int32),
        bucket_dof_start: wp.array(dtype=wp.int32),
        # inputs
        world_active: wp.array(dtype=wp.int32),
        world_tree_local: wp.array(dtype=wp.int32),
        H_blocks: wp.array3d(dtype=float),
        grad: wp.array(dtype=float),
        # outputs
        dv_out: wp.array(dtype=float),
        world_dense_broken_out: wp.array(dtype=wp.int32),
    ):
        t = wp.tid()
        w = bucket_worlds[t]
        if world_active[w] == 0 or world_tree_local[w] == 1:
            return
        start = bucket_dof_start[t]
        H = wp.tile_load(H_blocks[t], shape=(n, n))
        L = wp.tile_cholesky(H)
        factored = int(1)  # every pivot positive: on CUDA a failed factorization need not leave NaN behind
        for i in range(n):
            pivot = wp.tile_extract(L, i, i)
            if not (pivot > 0.0 and wp.isfinite(pivot)):
                factored = 0
        g = wp.tile_load(grad, shape=n, offset=start)
        dv = wp.tile_cholesky_solve(L, g)
        if factored == 1 and wp.isfinite(wp.tile_extract(wp.tile_sum(dv), 0)):
            wp.tile_store(dv_out, -dv, offset=start)
        else:
            for i in range(n):  # every thread of the block writes the same values
                dv_out[start + i] = -grad[start + i] / H_blocks[t, i, i]
            world_dense_broken_out[w] = 1  # refactor_broken_dense_worlds tries a scaled diagonal next

    return newton_direction


@wp.kernel
def check_parked_contacts(
    # model
    shape_body: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    # inputs
    slots_per_thread: int,
    slot_count: int,
    momentum_mode: int,
    contact_slot_fill: wp.array(dtype=wp.int32),
    c_contact: wp.array(dtype=wp.int32),
    contact_shape0: wp.array(dtype=wp.int32),
    contact_shape1: wp.array(dtype=wp.int32),
    tree_ref: wp.array(dtype=wp.vec3),
    body_twist: wp.array(dtype=wp.spatial_vector),
    world_iterations: wp.array(dtype=wp.int32),
    world_constraint_count: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_frame: wp.array(dtype=wp.mat33),
    c_point: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    world_residual: wp.array(dtype=float),
    # outputs (c_parked and world_parked_count read and updated; world_retry and any_retry zeroed before)
    c_parked: wp.array(dtype=wp.int32),
    c_vc_out: wp.array(dtype=wp.vec3),
    world_parked_count: wp.array(dtype=wp.int32),
    world_retry_out: wp.array(dtype=wp.int32),
    any_retry_out: wp.array(dtype=wp.int32),
):
    """Per parked contact of the first ``slot_count`` slots, at the solved ``v``: ``v_c`` from the body twists
    at ``v`` (``body_chain_twists``). A contact that still separates (``contact_separates``: no impulse for any
    compliance) keeps ``γ = 0``, ``G = 0`` as the answer's; otherwise it is marked ``UNPARKED`` (its row is
    completed and joins the Newton iterations, ``contact_rows``) and its world is flagged for a retry. A world
    with a non-finite residual (broken, flagged in the stats) is not retried. Skipped: the worlds whose ``v``
    has not moved since their parked rows were found separating, those that took no Newton iteration but
    adopted no ``v*`` (``v = v0``, as at parking; or as at the previous check, in a retry that converged at
    once). The parked contacts hold the last slots (``contact_rows``); a thread takes a run of slots."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, slot_count)
    for c in range(wp.max(begin, first_parked_slot(slot_count, contact_slot_fill)), end):
        if c_parked[c] != PARKED:
            continue
        w = c_world[c]
        if world_iterations[w] == 0 and (momentum_mode == 1 or world_constraint_count[w] > 0):
            continue
        i = c_contact[c]
        vc = contact_velocity_from_twists(shape_body[contact_shape0[i]], shape_body[contact_shape1[i]], c_point[c],
                                          c_frame[c], body_tree, tree_ref, body_twist)  # fmt: skip
        c_vc_out[c] = vc
        if wp.isfinite(world_residual[w]) and contact_separates(vc, c_vhat[c], c_param[c]) == 0:
            c_parked[c] = UNPARKED
            wp.atomic_sub(world_parked_count, w, 1)
            world_retry_out[w] = 1
            any_retry_out[0] = 1


@wp.kernel
def reopen_worlds(
    # inputs
    world_iterations: wp.array(dtype=wp.int32),
    # outputs (world_retry read and cleared)
    world_retry: wp.array(dtype=wp.int32),
    world_active_out: wp.array(dtype=wp.int32),
    world_converged_out: wp.array(dtype=wp.int32),
    world_cost_stalled_out: wp.array(dtype=wp.int32),
    world_plain_newton_out: wp.array(dtype=wp.int32),
    world_iteration_offset_out: wp.array(dtype=wp.int32),
    world_norms_out: wp.array(dtype=wp.vec3),
    world_cost_out: wp.array(dtype=float),
    iteration_count_out: wp.array(dtype=wp.int32),
    any_active_out: wp.array(dtype=wp.int32),
    any_retry_out: wp.array(dtype=wp.int32),
):
    """Start of a retry (see the module doc): the flagged worlds iterate again from their ``v``, their
    iterations so far kept as an offset; their sums start at zero. Thread 0 restarts the loop's count and
    lowers the flags that the check and ``check_parked_contacts`` raise."""
    w = wp.tid()
    if w == 0:
        iteration_count_out[0] = 0
        any_active_out[0] = 0
        any_retry_out[0] = 0
    if world_retry[w] == 0:
        return
    world_retry[w] = 0
    world_active_out[w] = 1
    world_converged_out[w] = 1
    world_cost_stalled_out[w] = 0
    world_plain_newton_out[w] = 0
    world_iteration_offset_out[w] = world_iterations[w]
    world_norms_out[w] = wp.vec3(0.0)
    world_cost_out[w] = 0.0


@wp.kernel
def begin_retry_products(
    # inputs
    v: wp.array(dtype=float),
    v0: wp.array(dtype=float),
    # outputs
    e_out: wp.array(dtype=float),
    Av0_out: wp.array(dtype=float),
    Adv_out: wp.array(dtype=float),
):
    """Per dof, before a retry's two products: ``e = v − v0``, and ``A v0`` and ``A Δv`` (which receives ``A e``)
    at zero. ``A Δv`` is not zero everywhere: the product of each Newton iteration runs over every dof, and only
    the worlds still iterating zero it after their line search."""
    i = wp.tid()
    e_out[i] = v[i] - v0[i]
    Av0_out[i] = 0.0
    Adv_out[i] = 0.0


@wp.kernel
def resume_velocities(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    momentum_mode: int,
    dt: float,
    world_active: wp.array(dtype=wp.int32),
    tau: wp.array(dtype=float),
    # outputs (Adv holds A (v − v0), read and zeroed)
    Adv: wp.array(dtype=float),
    Ae_out: wp.array(dtype=float),
    jtg_out: wp.array(dtype=wp.vec2),
):
    """In the worlds of a retry: ``A (v − v_ref) = A (v − v0) − (1 − m) Δt τ`` (``A v* = A v0 + Δt τ``) and
    ``Jᵀγ`` at zero for the evaluation that follows; ``A Δv`` back at zero everywhere."""
    i = wp.tid()
    if world_active[dof_world[i]] == 1:
        Ae = Adv[i]
        if momentum_mode == 0:
            Ae -= dt * tau[i]
        Ae_out[i] = Ae
        jtg_out[i] = wp.vec2(0.0)
    Adv[i] = 0.0


class SapSolver:
    """Buffers and the iteration loop of the per-world SAP solve for one model.

    Contact buffers are sized by the ``Contacts`` container seen (one set per capacity, kept:
    ``_allocate_constraints``). The Newton loop is a ``wp.capture_while`` on a device flag (see the module doc); CG in
    PCG worlds runs inside one kernel."""

    def __init__(self, topology, device_topology, device, options, public_dof_count: int):
        self.topo = topology
        self.T = device_topology
        self.device = device
        self.options = options
        nw = topology.world_count
        ndof = max(topology.dof_count, 1)

        def zeros(n, dtype=float):
            return wp.zeros(n, dtype=dtype, device=device)

        dof_names = ("v", "grad", "dv", "Ae", "Av0", "Adv", "grad_model", "dv_model", "pdiag")
        for name in (*dof_names, "cg_r", "cg_z", "cg_p", "cg_Hp"):
            setattr(self, name, zeros(ndof))
        self.jtg = zeros(ndof, wp.vec2)  # per dof: Jᵀγ, and Σ_c |J_cᵀγ_c| (the size of its terms, for the scale)
        self.A_inv_diag = None  # the dynamics' 1/A_ii, given by each setup_constraints
        self.body_free_centripetal = None  # given by each setup_constraints (jacobian.offset_velocity)
        self.dt = 0.0  # the step's, given by each setup_constraints
        self.last_dt = zeros(1)  # the last step's Δt [s] (record_step_dt; 0 before the first): lagged contacts
        self.uses_dense_worlds = topology.world_dense_size > 0  # some world has a dense n×n block of H
        self.A_world = zeros(max(topology.world_dense_size, 1))
        self.H = zeros(max(topology.world_dense_size, 1))
        self.world_dense_broken = zeros(topology.world_count, wp.int32)  # dense Cholesky broke: retried
        self.dense_diagonal = zeros(max(topology.dof_count, 1))  # H's or P's diagonal while it is refactored
        self.tree_block_broken = zeros(max(topology.tree_count, 1), wp.int32)  # PCG's dense block broke: retried
        self.H_views = bucket_views(self.H, topology.world_buckets, topology.world_bucket_offset)
        # tree LDLᵀ of H in worlds whose constraints each act along one chain (see the module doc)
        self.tree_ldlt = uses_tree_ldlt(device) and topology.dof_count > 0
        nnz = max(topology.sparse_nnz, 1)
        self.H_rows, self.ldlt_factor = zeros(nnz), zeros(nnz)
        self.ldlt_y, self.ldlt_x = zeros(ndof), zeros(ndof)
        tree_local = (1 - topology.world_uses_pcg) * int(self.tree_ldlt) if topology.world_count else np.zeros(0)
        self.world_tree_local_default = wp.array(tree_local, dtype=wp.int32, device=device)
        self.world_tree_local = zeros(nw, wp.int32)
        self.bucket_dof_start = {
            n: wp.array(topology.world_dof_start[worlds], dtype=wp.int32, device=device)
            for n, worlds in topology.world_buckets.items()
        }
        self.uses_pcg = bool(topology.world_uses_pcg.any()) if topology.world_count else False
        parallel = self.uses_pcg and options.pcg_threads == "dof"
        self.parallel_cg = (
            ParallelConjugateGradients(topology, device_topology, device, self.cg_r, self.cg_z, self.cg_p, self.cg_Hp)
            if parallel
            else None
        )
        # CG iterations per direction: as many as the largest world's dofs (exact arithmetic would be done by then)
        self.cg_max_iterations = max(int(np.diff(topology.world_dof_start).max()), 1) if topology.world_count else 1
        # tree-block sparse Cholesky (block_cholesky.py): factor storage and per-world scratch
        self.uses_block_cholesky = topology.world_block_size > 0
        # the CPU solves the worlds one after another in one pool (block_cholesky.world_block_cholesky)
        self.block_shared_pool = device.is_cpu
        self.block_pool = zeros(max(self._block_pool_half() * (1 + int(options.stiction_prediction)), 1), vec8f)
        self.block_inv_diag = zeros(ndof)
        self.block_A = zeros(max(topology.tree_A_size, 1), vec8f)  # A's tree blocks, chunked once per step
        self.block_pattern = zeros(max(topology.world_pair_size, 1), wp.uint32)  # bitset rows: T·⌈T/32⌉ ≤ T² words
        self.block_last_graph = zeros(max(topology.world_pair_size, 1), wp.uint32)  # the last ordered graph
        self.block_later = zeros(max(topology.world_pair_size, 1), wp.int32)
        self.block_index = zeros(max(topology.world_pair_size, 1), wp.int32)
        for name in ("tree_degree", "tree_rank", "tree_order", "tree_later_count"):
            setattr(self, name, zeros(max(topology.tree_count, 1), wp.int32))
        self.world_pool_used = zeros(nw, wp.int32)
        # block preconditioner: dense tree blocks in the layout of the free-motion tree blocks; the trees of PCG
        # worlds too large for one by their tree LDLᵀ: P_t's rows (A's layout), their factor and diagonal shift
        self.P = zeros(max(topology.dense_size, 1))
        self.P_views = bucket_views(self.P, topology.dense_buckets, topology.dense_bucket_offset)
        sparse_trees = np.zeros(0, np.int32)
        if self.uses_pcg:
            in_pcg_world = topology.world_uses_pcg[topology.tree_world[topology.sparse_trees]] == 1
            sparse_trees = topology.sparse_trees[in_pcg_world]
        self.pcg_sparse_trees = wp.array(sparse_trees, dtype=wp.int32, device=device) if len(sparse_trees) else None
        self.P_rows, self.P_factor = (zeros(nnz if self.pcg_sparse_trees is not None else 1) for _ in range(2))
        self.P_shift = zeros(ndof if self.pcg_sparse_trees is not None else 1)
        int_names = ("world_active", "world_iterations", "world_converged", "world_cost_stalled", "world_cg_iterations")
        for name in (*int_names, "world_predicted", "world_plain_newton", "world_floor_checks"):
            setattr(self, name, zeros(nw, wp.int32))
        # world_forcing: CG's forcing term η of the last Newton direction (0 in dense worlds: exact directions; the
        # relative residual CG reached when it stopped short of η);
        # world_model_forcing: the same of the stiction-model directions (not needed after the solve)
        # world_floor_checks, world_floor_excess: the float32-floor streak of check_convergence (floor_reached)
        for name in ("world_residual", "world_cost", "world_alpha", "world_slope", "world_forcing",
                     "world_model_forcing", "world_floor_excess"):  # fmt: skip
            setattr(self, name, zeros(nw))
        self.world_norms = zeros(nw, wp.vec3)
        self.any_active = zeros(1, wp.int32)  # some world still iterates (the loop's device condition)
        self.any_predicted = zeros(1, wp.int32)  # some world has a stiction-model direction to solve
        self.any_free_motion = zeros(1, wp.int32)  # some world reads v* (v* mode)
        self.any_tree_local = zeros(1, wp.int32)  # some world is flagged in world_tree_local (the tree LDLᵀ's)
        self.free_motion_worlds = zeros(nw, wp.int32)  # the worlds that read v* (a mask)
        self.world_retry = zeros(nw, wp.int32)  # a parked contact would act: solve the world again
        self.world_iteration_offset = zeros(nw, wp.int32)  # Newton iterations before this retry
        self.any_retry = zeros(1, wp.int32)  # some world is flagged in world_retry (the retry loop's condition)
        self.parking = False  # this step has parked contacts to check (setup_constraints)
        self.joint_rows = False  # this step has joint-space rows, limit sides left out among them (setup_constraints)
        self.contact_slots = 0  # contact slots of this step (setup_constraints)
        self.iteration_count = zeros(1, wp.int32)  # Newton iterations done in this step
        self.world_line = zeros(nw, wp.vec3)
        self.world_row_slopes = zeros(nw, wp.vec2)  # line search: constraint slopes at α = 0 and α_max
        self.world_live_count = zeros(nw, wp.int32)  # line search: rows with an impulse on [0, α_max]
        self.world_contact_count = zeros(nw, wp.int32)
        self.world_parked_count = zeros(nw, wp.int32)  # parked contacts (left out of the Newton iterations)
        self.world_constraint_count = zeros(nw, wp.int32)
        self.world_constraint_start = zeros(nw, wp.int32)
        self.world_chunk_sums = zeros(chunk_sums_size(nw), wp.int32)  # scratch of the worlds' scan
        self.body_twist = zeros(max(topology.body_count, 1), wp.spatial_vector)  # parked contacts' velocities
        self.world_fill = zeros(nw, wp.int32)
        self.used_count = zeros(1, wp.int32)  # used constraint slots in all worlds
        self.contact_slot_fill = zeros(2, wp.int32)  # contact slots taken from the front and from the back
        self.slots_per_thread = slots_per_thread(device)
        self.zero_dof = zeros(ndof)  # zeros over the dofs (a default joint_act; the tree solves' base)
        self.no_contact_properties = zeros(0)  # Contacts without per-contact stiffness, damping and friction
        self.no_surface_velocity = zeros(0, wp.vec3)  # Contacts without mesh surface velocities
        self.model_constraints = False
        self.dof_mimic_leader = wp.full(max(topology.dof_count, 1), -1, dtype=wp.int32, device=device)
        self.dof_mimic_coeffs = zeros(max(topology.dof_count, 1), wp.vec2)
        # MuJoCo servos' drives (Kp, Kd, q_target, v_target) per Newton dof (index in joint_qd), zero where none
        # (mujoco_actuation.mujoco_drives)
        self.dof_servo_drive = zeros(max(public_dof_count, 1), wp.vec4)
        self.dof_dampratio_kd = zeros(max(public_dof_count, 1))  # imported POSITION drives' damping where kd = 0
        # servos' and imported drives' target bounds, -τ_mid and effort half width; w < 0: none (mujoco_drives)
        self.dof_drive_ranges = wp.full(max(public_dof_count, 1), wp.vec4(0.0, 0.0, 0.0, -1.0), device=device)
        self.loop_equality_row = None  # per loop joint, its MuJoCo equality row or -1 (read_equality_rows)
        self.equality_enabled = None  # the rows' enabled flags, read every step
        self.capacity = -1
        self._constraint_buffers: dict[int, dict[str, wp.array]] = {}  # per capacity, kept (_allocate_constraints)
        self._allocate_constraints(0)

    def read_contact_dimensions(self, model) -> None:
        """Each shape's MuJoCo contact dimension and priority (``mujoco_options.contact_dimensions``), into arrays
        allocated on the first call and assigned in place after (``notify_model_changed`` allocates nothing)."""
        condim, priority = contact_dimensions(model)
        if getattr(self, "shape_condim", None) is None:
            self.shape_condim = wp.array(condim, dtype=wp.int32, device=self.device)
            self.shape_priority = wp.array(priority, dtype=wp.int32, device=self.device)
        else:
            self.shape_condim.assign(condim)
            self.shape_priority.assign(priority)

    def read_equality_rows(self, model) -> None:
        """The MuJoCo equality row each loop joint was made from (``mujoco_equalities``), and the rows' enabled
        flags (``model.mujoco.equality_constraint_enabled``, read on the device every step)."""
        row = loop_joint_rows(model, self.topo.loop_joints)
        self.loop_equality_row = wp.array(row if len(row) else [-1], dtype=wp.int32, device=self.device)
        rows = equality_rows(model)
        self.equality_enabled = (
            rows.equality_constraint_enabled if rows is not None else wp.ones(1, dtype=wp.bool, device=self.device)
        )

    def _allocate_constraints(self, capacity: int) -> None:
        """Per-slot constraint buffers for ``capacity`` slots; replaced all at once, after every allocation
        succeeded. Allocate (take one step) before capturing a graph: arrays allocated inside a CUDA capture
        exist only once the graph is launched. The buffers of every capacity used are kept and taken again: a
        graph captured with one ``Contacts`` (or none) still owns live buffers after steps or snapshots with
        another (a CUDA graph holds no reference to its arrays), and alternating contact buffers allocates
        nothing."""
        if capacity == self.capacity:
            return
        if capacity not in self._constraint_buffers:
            self._constraint_buffers[capacity] = self._new_constraint_buffers(capacity)
        for name, array in self._constraint_buffers[capacity].items():
            setattr(self, name, array)
        self.capacity = capacity
        self.slot_threads = -(-max(capacity, 1) // self.slots_per_thread)  # launch size of the per-row kernels

    def _new_constraint_buffers(self, capacity: int) -> dict[str, wp.array]:
        """The per-slot constraint buffers for ``capacity`` slots (at least one), by name."""
        n = max(capacity, 1)
        entries = max(2 * self.topo.max_chain, 1)

        def zeros(shape, dtype=float):
            return wp.zeros(shape, dtype=dtype, device=self.device)

        return {
            "c_world": wp.full(n, -1, dtype=wp.int32, device=self.device),
            "c_kind": zeros(n, wp.int32),
            "c_frame": zeros(n, wp.mat33),
            "c_R": zeros(n, wp.vec3),
            "c_vhat": zeros(n, wp.vec3),
            "c_param": zeros(n),
            "c_phi": zeros(n),
            "c_point": zeros(n, wp.vec3),
            "c_nnz": zeros(n, wp.int32),
            "c_dof": zeros((n, entries), wp.int32),
            "c_J": zeros((n, entries), wp.vec3),
            "c_vc": zeros(n, wp.vec3),
            "c_dvc": zeros(n, wp.vec3),
            "c_parked": zeros(n, wp.int32),  # a distant contact, left out of the Newton iterations
            "c_contact": zeros(n, wp.int32),  # a contact slot's contact in Newton's buffer (contact_rows)
            # a contact's slot (-1: none; the entries past the step's contact count are stale)
            "contact_slot": wp.full(n, -1, dtype=wp.int32, device=self.device),
            "c_segment_dead": zeros(n, wp.int32),  # no impulse on the last line-search segment (line_rows)
            "live_rows": zeros(n, wp.int32),  # per world (from its constraint start): rows live in the line search
            "c_gamma": zeros(n, wp.vec3),
            "c_G": zeros(n, wp.mat33),
            "c_G_model": zeros(n, wp.mat33),
            "world_constraints": zeros(n, wp.int32),
            "slot_used": zeros(n, wp.int32),
            "slot_rank": zeros(n, wp.int32),
            "slot_chunk_sums": zeros(chunk_sums_size(n), wp.int32),  # scratch of the slots' scan
            "used_slots": zeros(n, wp.int32),
            "curved_rows": zeros(n, wp.int32),
        }

    def setup_constraints(
        self,
        model,
        state,
        control,
        contacts,
        body_q,
        tree_ref,
        dof_S_tree,
        A_inv_diag,
        body_free_centripetal,
        v0,
        tau,
        dt: float,
        world_failed,
    ) -> None:
        """Constraint rows of this step: the contacts of ``contacts`` (may be None) in the first slots,
        then the joint-space rows (drives, limits, friction, mimic) when the model has any, then the
        loop closures. ``tree_ref``, ``dof_S_tree``, ``A_inv_diag`` (1/A_ii, 0 for kinematic bodies' dofs; the
        solve's optimality norms read it too) and ``body_free_centripetal`` (for the velocity the position update
        gives each body beyond ``J v``, ``jacobian.offset_velocity``) come from the dynamics. A world with a
        contact whose data are not finite is marked in ``world_failed`` (per world, int32), which ``solve`` then
        leaves out."""
        o, T, dev = self.options, self.T, self.device
        self.A_inv_diag = A_inv_diag
        self.body_free_centripetal = body_free_centripetal
        self.dt = dt
        n_contacts = contacts.rigid_contact_max if contacts is not None and self.topo.dof_count else 0
        n_joint = SLOTS_PER_DOF * self.topo.dof_count if self.model_constraints else 0  # drives, limits, ...
        n_loop = 2 * len(self.topo.loop_joints)
        self._allocate_constraints(n_contacts + n_joint + n_loop)
        self.parking = bool(n_contacts) and o.park_distant_contacts
        self.contact_slots = n_contacts
        self._reset_counts(reset_contacts=True)
        if n_contacts:
            stiffness = o.contact_stiffness if o.contact_stiffness is not None else -1.0
            dissipation = o.contact_dissipation_time if o.contact_dissipation_time is not None else -1.0
            if self.parking:
                self._body_twists(dof_S_tree, v0)
            self._contact_row_args = {
                "dim": -(-n_contacts // self.slots_per_thread),
                "options": [self.slots_per_thread, n_contacts, stiffness, dissipation, o.near_rigid_threshold,
                            o.near_rigid_time_step or -1.0, o.friction_regularization, dt, int(self.parking),
                            int(o.contact_approximation == "lagged")],
                "inputs": [
                    model.shape_body, model.shape_material_ke, model.shape_material_kd, model.shape_material_mu,
                    self.shape_condim, self.shape_priority, T.body_tree, T.body_world, T.body_last_dof,
                    model.body_flags, T.dof_parent, T.dof_tree, T.dof_body, model.gravity, model.body_world,
                ],
                "state": [
                    self.last_dt,
                    contacts.rigid_contact_count, contacts.rigid_contact_shape0, contacts.rigid_contact_shape1,
                    contacts.rigid_contact_point0, contacts.rigid_contact_point1, contacts.rigid_contact_normal,
                    contacts.rigid_contact_margin0, contacts.rigid_contact_margin1,
                    *self._per_contact_properties(contacts), body_q, tree_ref, dof_S_tree, A_inv_diag,
                    body_free_centripetal, v0, self.body_twist,
                ],
                "world_failed": world_failed,
            }  # fmt: skip
            self._parked_check_args = {
                "shape_body": model.shape_body, "body_tree": T.body_tree, "shape0": contacts.rigid_contact_shape0,
                "shape1": contacts.rigid_contact_shape1, "tree_ref": tree_ref, "dof_S_tree": dof_S_tree,
            }  # fmt: skip
            self._contact_rows(ROWS_BUILD)
        self.joint_rows = bool(n_joint)
        if n_joint:
            limit_k = o.joint_limit_stiffness if o.joint_limit_stiffness is not None else -1.0
            joint_act = control.joint_act if control.joint_act is not None else self.zero_dof
            self._limit_check_inputs = [
                T.dof_public, T.dof_coord, T.dof_world, T.dof_body, model.body_flags, model.joint_limit_lower,
                model.joint_limit_upper, model.joint_limit_ke, model.joint_limit_kd, limit_k,
                o.joint_limit_dissipation_time, n_contacts, dt, int(o.momentum_mode), state.joint_q, A_inv_diag,
            ]  # fmt: skip
            wp.launch(
                joint_constraint_rows,
                dim=self.topo.dof_count,
                inputs=[
                    T.dof_public, T.dof_coord, T.dof_ball_quat, T.dof_ball_axis, T.dof_world, T.dof_body,
                    model.body_flags, model.joint_target_mode,
                    model.joint_target_ke, model.joint_target_kd, model.joint_effort_limit, model.joint_limit_lower,
                    model.joint_limit_upper, model.joint_limit_ke, model.joint_limit_kd, model.joint_friction,
                    self.dof_mimic_leader, self.dof_mimic_coeffs, limit_k, o.joint_limit_dissipation_time,
                    o.friction_regularization, n_contacts, dt, state.joint_q, control.joint_target_q,
                    control.joint_target_qd, joint_act, self.dof_servo_drive, self.dof_dampratio_kd,
                    self.dof_drive_ranges, v0, tau, A_inv_diag,
                ],
                outputs=[self.c_world, self.c_kind, self.c_R, self.c_vhat, self.c_param, self.c_nnz, self.c_dof,
                         self.c_J, self.c_vc, world_failed],
                device=dev,
            )  # fmt: skip
        if n_loop:
            wp.launch(
                loop_rows,
                dim=len(self.topo.loop_joints),
                inputs=[
                    T.loop_joints, self.loop_equality_row, self.equality_enabled, model.joint_type,
                    model.joint_enabled, model.joint_parent, model.joint_child,
                    model.joint_X_p, model.joint_X_c, model.joint_axis, model.joint_qd_start, T.body_world,
                    T.body_last_dof, T.dof_parent, T.dof_tree, T.dof_body, model.body_flags, n_contacts + n_joint, dt,
                    body_q, tree_ref, dof_S_tree, A_inv_diag, body_free_centripetal, v0,
                ],
                outputs=[self.c_world, self.c_kind, self.c_R, self.c_vhat, self.c_param, self.c_nnz, self.c_dof,
                         self.c_J, self.c_vc],
                device=dev,
            )  # fmt: skip
        if n_contacts + n_joint + n_loop == 0:
            self.c_world.fill_(-1)
        self._sort_constraints()

    def _per_contact_properties(self, contacts) -> list:
        """``contacts``' per-contact stiffness, damping, friction scale and surface velocity (``contact_rows``),
        empty arrays where Newton did not allocate them."""
        arrays = [getattr(contacts, f"rigid_contact_{name}", None) for name in ("stiffness", "damping", "friction")]
        if any(a is None for a in arrays):
            arrays = [self.no_contact_properties] * 3
        surface_velocity = getattr(contacts, "rigid_contact_surface_velocity", None)
        return [*arrays, self.no_surface_velocity if surface_velocity is None else surface_velocity]

    def record_step_dt(self, dt: float) -> None:
        """Keep the Δt [s] of the step just taken on the device (``last_dt``): the lagged contacts' friction bounds
        of the next step take the stiffness that left their penetration from it."""
        wp.launch(record_step_dt, dim=1, inputs=[dt], outputs=[self.last_dt], device=self.device)

    def _contact_rows(self, mode: int) -> None:
        """``contact_rows`` over this step's contact slots in ``mode`` (``ROWS_*``), with the inputs that
        ``setup_constraints`` gathered."""
        a = self._contact_row_args
        wp.launch(
            contact_rows,
            dim=a["dim"],
            inputs=[*a["inputs"], mode, *a["options"], *a["state"]],
            outputs=[
                self.contact_slot, self.contact_slot_fill, self.c_contact, self.c_world, self.c_kind, self.c_frame,
                self.c_R, self.c_vhat, self.c_param, self.c_phi,
                self.c_point, self.c_nnz, self.c_dof, self.c_J, self.c_parked, self.c_vc, self.c_gamma, self.c_G,
                self.world_contact_count, self.world_parked_count, a["world_failed"],
            ],
            device=self.device,
        )  # fmt: skip

    def _body_twists(self, dof_S_tree, v) -> None:
        """``body_twist``: every body's twist at the dof velocities ``v`` as the position update moves it
        (``body_chain_twists``)."""
        T = self.T
        wp.launch(body_chain_twists, dim=self.topo.body_count,
                  inputs=[T.body_last_dof, T.dof_parent, self.dt, dof_S_tree, self.body_free_centripetal, v],
                  outputs=[self.body_twist], device=self.device)  # fmt: skip

    def complete_parked_rows(self) -> None:
        """Jacobian entries and compliances of the contacts parked at the end of the step, which the
        iterations never needed (a snapshot reports every contact's); they stay parked."""
        if self.parking:
            self._contact_rows(ROWS_COMPLETE_PARKED)

    def _reset_counts(self, reset_contacts: bool) -> None:
        """The constraint counts at zero before the lists are built (``reset_contacts``: the contact counts too,
        before the rows are)."""
        wp.launch(reset_constraint_counts, dim=self.topo.world_count, inputs=[int(reset_contacts)],
                  outputs=[self.world_contact_count, self.world_parked_count, self.world_constraint_count,
                           self.world_fill, self.used_count, self.contact_slot_fill],
                  device=self.device)  # fmt: skip

    def _sort_constraints(self) -> None:
        """The lists of the constraints in the Newton iterations (the used slots but the parked contacts), by
        world and in slot order, from zeroed counts (``reset_constraint_counts``)."""
        dev = self.device
        wp.launch(count_constraints, dim=self.slot_threads,
                  inputs=[self.slots_per_thread, self.contact_slots, self.contact_slot_fill, self.c_parked],
                  outputs=[self.c_world, self.world_constraint_count, self.slot_used], device=dev)  # fmt: skip
        exclusive_scan(self.world_constraint_count, self.world_constraint_start, self.world_chunk_sums)
        exclusive_scan(self.slot_used, self.slot_rank, self.slot_chunk_sums)
        wp.launch(
            sort_constraints_by_world,
            dim=self.slot_threads,
            inputs=[self.slots_per_thread, self.c_world, self.world_constraint_start, self.slot_used, self.slot_rank],
            outputs=[self.world_fill, self.world_constraints, self.used_slots, self.used_count],
            device=dev,
        )

    def _matvec(self, A_rows, x, y) -> None:
        """``y += A x`` (sparse rows) into a ``y`` its caller has zeroed: ``A v0`` and ``A Δv`` start at zero in
        ``begin_velocities``, ``line_search`` zeroes ``A Δv`` again after each use (in the worlds still
        iterating), ``begin_retry_products`` both before a retry."""
        T = self.T
        wp.launch(
            sparse_matvec, dim=self.topo.dof_count, inputs=[T.dof_parent, T.dof_depth, T.dof_row_start, A_rows, x],
            outputs=[y], device=self.device,
        )  # fmt: skip

    def skip(self, world_failed, contact_overflow) -> None:
        """The per-world statistics of a step that solves no SAP problem, and no contacts dropped in
        ``contact_overflow`` (:func:`idle_worlds`)."""
        wp.launch(
            idle_worlds,
            dim=self.topo.world_count,
            inputs=[world_failed],
            outputs=[self.world_iterations, self.world_residual, self.world_converged, self.world_contact_count,
                     self.world_constraint_count, self.world_parked_count, self.world_cg_iterations, contact_overflow],
            device=self.device,
        )  # fmt: skip

    def solve(self, A_rows, tree_blocks, v0, v_star, tau, dt: float, free_motion, world_failed) -> wp.array:
        """Newton's method on every world but those flagged in ``world_failed`` (a non-finite input: they end at
        the warm start, not converged); returns the solved internal velocities ``v``.

        ``tree_blocks`` holds the dense A blocks of the trees (free-motion layout); PCG worlds build
        their preconditioner from it. ``free_motion(worlds)`` writes ``v_star`` in the worlds flagged in the
        device mask ``worlds`` (v* mode; momentum mode never forms v*). It runs after the first check, only
        where v* is read: a world at rest, whose warm start ``v0`` already meets the criteria, never needs it
        (``gradient`` takes ``A (v0 − v*) = −Δt τ``). No host synchronization: see the module doc."""
        o, T, topo, dev = self.options, self.T, self.topo, self.device
        momentum = int(o.momentum_mode)
        v_ref = v0 if momentum else v_star
        nw, ndof = topo.world_count, topo.dof_count
        self.any_active.zero_()
        wp.launch(
            init_worlds,
            dim=nw,
            inputs=[T.world_dof_start, momentum, self.world_constraint_count, self.world_constraint_start,
                    self.world_constraints, world_failed],
            outputs=[self.c_gamma, self.c_G, self.world_active, self.world_iterations, self.world_residual,
                     self.world_converged, self.world_cost_stalled, self.world_cg_iterations, self.world_plain_newton,
                     self.any_active, self.world_norms, self.world_cost, self.iteration_count, self.any_free_motion,
                     self.world_iteration_offset, self.world_retry, self.any_retry],
            device=dev,
        )  # fmt: skip
        if ndof == 0:
            return self.v
        wp.launch(begin_velocities, dim=ndof, inputs=[v0], outputs=[self.v, self.jtg, self.Av0, self.Adv],
                  device=dev)  # fmt: skip
        args = {"A_rows": A_rows, "tree_blocks": tree_blocks, "v_ref": v_ref, "tau": tau, "dt": dt}
        wp.capture_if(self.any_active, self._evaluate, warm_start=True, **args)
        if not momentum:
            wp.launch(
                select_free_motion_worlds,
                dim=nw,
                inputs=[T.world_dof_start, self.world_constraint_count, self.world_active],
                outputs=[self.free_motion_worlds, self.any_free_motion],
                device=dev,
            )
            wp.capture_if(self.any_free_motion, self._free_motion, free_motion=free_motion, v_star=v_star)
        wp.capture_if(self.any_active, self._prepare_directions, A_rows=A_rows)
        wp.capture_while(self.any_active, self._newton_iteration, **args)
        if self.parking or self.joint_rows:
            # only where v moved from v0, at which the contacts were parked and inside every limit window: a world
            # that iterated (momentum mode: counted by the loop) or read v* (v* mode: select_free_motion_worlds
            # flags both kinds)
            moved = self.iteration_count if momentum else self.any_free_motion
            wp.capture_if(moved, self._check_left_out_rows)
            wp.capture_while(self.any_retry, self._retry, A_rows=A_rows, tree_blocks=tree_blocks, v0=v0, v_star=v_star,
                             tau=tau, dt=dt)  # fmt: skip
        return self.v

    def _check_left_out_rows(self) -> None:
        """The rows left out of the iterations, at the solved ``v``: the parked contacts and the limit sides
        beyond their windows; each is the answer's (no impulse) or joins, its world flagged for a retry."""
        if self.parking:
            self._check_parked_contacts()
        if self.joint_rows:
            wp.launch(
                check_left_out_limits,
                dim=self.topo.dof_count,
                inputs=[*self._limit_check_inputs, self.v, self.world_iterations, self.world_constraint_count,
                        self.world_residual],
                outputs=[self.c_world, self.c_kind, self.c_R, self.c_vhat, self.c_param, self.c_nnz, self.c_dof,
                         self.c_J, self.c_vc, self.world_retry, self.any_retry],
                device=self.device,
            )  # fmt: skip

    def _check_parked_contacts(self) -> None:
        """The parked contacts at the solved ``v``: the answer's (no impulse) or flagged for a retry."""
        a = self._parked_check_args
        self._body_twists(a["dof_S_tree"], self.v)
        wp.launch(
            check_parked_contacts,
            dim=-(-self.contact_slots // self.slots_per_thread),
            inputs=[a["shape_body"], a["body_tree"], self.slots_per_thread, self.contact_slots,
                    int(self.options.momentum_mode), self.contact_slot_fill, self.c_contact, a["shape0"], a["shape1"],
                    a["tree_ref"], self.body_twist,
                    self.world_iterations, self.world_constraint_count, self.c_world, self.c_frame, self.c_point,
                    self.c_vhat, self.c_param, self.world_residual],
            outputs=[self.c_parked, self.c_vc, self.world_parked_count, self.world_retry, self.any_retry],
            device=self.device,
        )  # fmt: skip

    def _retry(self, A_rows, tree_blocks, v0, v_star, tau, dt: float) -> None:
        """The worlds where a parked contact or a left-out limit side would act, solved again with it from
        their ``v``: a contact's row completed (``ROWS_COMPLETE_UNPARKED``; the check wrote the limit's), the row
        lists rebuilt, ``A (v − v_ref)`` from two products, a full evaluation, the Newton loop, and the check of
        the rows still left out (see the module doc). In v* mode every such world has formed ``v*``: the check
        skips the worlds that stopped at the warm start, and the others took Newton iterations or adopted ``v*``
        (``select_free_motion_worlds``)."""
        o, T, topo, dev = self.options, self.T, self.topo, self.device
        momentum = int(o.momentum_mode)
        nw, ndof = topo.world_count, topo.dof_count
        if self.parking:
            self._contact_rows(ROWS_COMPLETE_UNPARKED)
        self._reset_counts(reset_contacts=False)
        self._sort_constraints()
        wp.launch(
            reopen_worlds,
            dim=nw,
            inputs=[self.world_iterations],
            outputs=[self.world_retry, self.world_active, self.world_converged, self.world_cost_stalled,
                     self.world_plain_newton, self.world_iteration_offset, self.world_norms, self.world_cost,
                     self.iteration_count, self.any_active, self.any_retry],
            device=dev,
        )  # fmt: skip
        wp.launch(begin_retry_products, dim=ndof, inputs=[self.v, v0], outputs=[self.dv, self.Av0, self.Adv],
                  device=dev)  # fmt: skip
        self._matvec(A_rows, v0, self.Av0)
        self._matvec(A_rows, self.dv, self.Adv)
        wp.launch(resume_velocities, dim=ndof, inputs=[T.dof_world, momentum, dt, self.world_active, tau],
                  outputs=[self.Adv, self.Ae, self.jtg], device=dev)  # fmt: skip
        args = {"A_rows": A_rows, "tree_blocks": tree_blocks, "v_ref": v0 if momentum else v_star, "tau": tau, "dt": dt}
        self._evaluate(**args, resume=True)
        wp.capture_if(self.any_active, self._prepare_directions, A_rows=A_rows)
        wp.capture_while(self.any_active, self._newton_iteration, **args)
        self._check_left_out_rows()

    def _free_motion(self, free_motion, v_star) -> None:
        """``v*`` in the worlds that read it (``select_free_motion_worlds``); it is the answer of those
        without constraints."""
        free_motion(self.free_motion_worlds)
        wp.launch(
            adopt_free_motion,
            dim=self.topo.dof_count,
            inputs=[self.T.dof_world, self.world_constraint_count, v_star],
            outputs=[self.v],
            device=self.device,
        )

    def _prepare_directions(self, A_rows) -> None:
        """What the Newton directions of this step need, once some world iterates (a resting scene stops at
        the first check without it): A in the dense world blocks and in the block-Cholesky worlds' chunked tree
        blocks, the worlds whose constraints each act along one chain (the CPU's tree LDLᵀ of H), and the
        stiction predictions' flag at zero."""
        T, dev = self.T, self.device
        self.any_predicted.zero_()  # for the first stiction prediction; later ones: zeroed by line_dots
        if self.tree_ldlt:
            wp.copy(self.world_tree_local, self.world_tree_local_default)
            wp.launch(
                flag_coupling_constraints,
                dim=self.slot_threads,
                inputs=[T.dof_parent, T.dof_depth, self.slots_per_thread, self.used_count, self.used_slots,
                        self.c_world, self.c_nnz, self.c_dof],
                outputs=[self.world_tree_local],
                device=dev,
            )  # fmt: skip
            self.any_tree_local.zero_()
            wp.launch(any_world_flagged, dim=self.topo.world_count, inputs=[self.world_tree_local],
                      outputs=[self.any_tree_local], device=dev)  # fmt: skip
        if self.uses_dense_worlds:
            wp.launch(
                scatter_world_dense,
                dim=self.topo.dof_count,
                inputs=[T.dof_parent, T.dof_depth, T.dof_row_start, T.dof_world, T.world_dof_start,
                        T.world_dense_offset, self.world_tree_local, A_rows],
                outputs=[self.A_world],
                device=dev,
            )  # fmt: skip
        if self.uses_block_cholesky:
            wp.launch(
                tree_blocks_in_chunks,
                dim=self.topo.tree_count,
                inputs=[T.tree_dof_start, T.tree_dof_count, T.tree_A_offset, T.dof_parent, T.dof_depth,
                        T.dof_row_start, A_rows],
                outputs=[self.block_A],
                device=dev,
            )  # fmt: skip

    def _newton_iteration(self, A_rows, tree_blocks, v_ref, tau, dt: float) -> None:
        """One Newton iteration of the worlds still iterating: the step, then the stopping criteria at the
        new ``v`` (which lower the loop's flag when every world has stopped)."""
        self._newton_step(A_rows, tree_blocks, v_ref, tau, dt)
        self._evaluate(A_rows, tree_blocks, v_ref, tau, dt)

    def _evaluate(
        self, A_rows, tree_blocks, v_ref, tau, dt: float, warm_start: bool = False, resume: bool = False
    ) -> None:
        """Constraints, gradient and stopping criteria at ``v`` in the worlds still iterating;
        ``any_active`` says whether any goes on (``tree_blocks`` and ``v_ref`` are unused: one signature for
        both). ``warm_start``: ``v = v0`` in every iterating world (the first check), where ``A v0`` is
        formed once for the step and ``A (v − v_ref)`` needs no product; later ``A (v − v_ref)`` is the
        line search's update (see :func:`gradient`). The sums start at zero: at the warm start ``Jᵀγ`` and
        ``A v0`` from ``begin_velocities``, the norms and the cost from ``init_worlds``; later from
        ``line_dots`` and ``line_search``. ``resume``: the first check of a retry (``_retry``), every row
        evaluated afresh at ``v``, its sums zeroed by ``reopen_worlds`` and ``resume_velocities``."""
        o, T, topo, dev = self.options, self.T, self.topo, self.device
        momentum = int(o.momentum_mode)
        ndof = topo.dof_count
        vc_source = VC_AT_START if warm_start else (VC_FROM_V if resume else VC_AFTER_LINE_SEARCH)
        wp.launch(
            constraint_eval,
            dim=self.slot_threads,
            inputs=[self.slots_per_thread, self.used_count, self.used_slots, self.world_active,
                    self.c_world, self.c_kind, self.c_R, self.c_vhat, self.c_param, self.c_nnz, self.c_dof, self.c_J,
                    self.v, vc_source, self.c_segment_dead, self.c_dvc, self.world_alpha],
            outputs=[self.c_vc, self.c_gamma, self.c_G, self.jtg, self.world_cost],
            device=dev,
        )  # fmt: skip
        if warm_start:
            self._matvec(A_rows, self.v, self.Av0)
        wp.launch(
            gradient,
            dim=ndof,
            inputs=[T.dof_world, momentum, dt, int(warm_start), self.world_active, self.A_inv_diag, self.Av0, tau,
                    self.jtg],
            outputs=[self.Ae, self.grad, self.grad_model, self.world_norms, self.any_active],
            device=dev,
        )  # fmt: skip
        wp.launch(
            check_convergence,
            dim=topo.world_count,
            inputs=[T.world_tree_start, T.tree_dof_start, T.tree_dof_count, momentum, dt,
                    self.A_inv_diag,
                    self.Ae, self.Av0, tau, self.jtg, self.iteration_count, o.max_iterations, o.abs_tolerance,
                    o.rel_tolerance, self.world_norms, self.world_forcing, self.world_alpha,
                    self.world_iteration_offset],
            outputs=[self.world_cost_stalled, self.world_floor_checks, self.world_floor_excess, self.world_active,
                     self.world_iterations, self.world_residual, self.world_converged, self.any_active,
                     self.world_plain_newton, self.world_predicted,
                     self.world_slope, self.world_line, self.world_live_count, self.world_row_slopes],
            device=dev,
        )  # fmt: skip

    def _newton_step(self, A_rows, tree_blocks, v_ref, tau, dt: float) -> None:
        """The direction ``Δv`` (Newton's, or the stiction model's where predicted) and the line search, in
        the worlds still iterating."""
        o, T, topo, dev = self.options, self.T, self.topo, self.device
        momentum = int(o.momentum_mode)
        ndof = topo.dof_count
        self._solve_direction(A_rows, tree_blocks, self.world_active, self.c_G, self.grad, self.dv,
                              CG_LOOSEST_TOLERANCE, self.world_forcing)  # fmt: skip
        if o.stiction_prediction:
            self._predict_stiction(A_rows, tree_blocks)
        self._matvec(A_rows, self.dv, self.Adv)
        wp.launch(
            line_dots,
            dim=ndof,
            inputs=[T.dof_world, momentum, dt, self.world_active, self.v, v_ref, tau, self.Ae, self.dv, self.Adv],
            outputs=[self.world_line, self.jtg, self.iteration_count, self.any_active, self.any_predicted],
            device=dev,
        )  # fmt: skip
        wp.launch(
            line_rows,
            dim=self.slot_threads,
            inputs=[self.slots_per_thread, self.used_count, self.used_slots, self.world_active,
                    self.world_constraint_start, self.c_world, self.c_kind, self.c_nnz, self.c_dof, self.c_J,
                    self.c_vc, self.c_gamma, self.c_vhat, self.c_R, self.c_param, self.dv],
            outputs=[self.c_dvc, self.c_segment_dead, self.live_rows, self.world_live_count, self.world_row_slopes],
            device=dev,
        )  # fmt: skip
        wp.launch(
            line_search,
            dim=topo.world_count,
            inputs=[T.world_dof_start, T.world_tree_start, T.tree_dof_start, T.tree_dof_count,
                    int(o.line_search == "exact"), self.world_active, self.world_predicted,
                    self.world_slope, self.world_forcing, self.world_line, self.world_row_slopes,
                    self.world_constraint_start, self.world_live_count, self.live_rows, self.c_kind, self.c_vc,
                    self.c_dvc, self.c_vhat, self.c_R, self.c_param, self.c_G, self.A_inv_diag, self.dv],
            outputs=[self.Adv, self.v, self.Ae, self.world_cost, self.world_norms, self.world_cost_stalled,
                     self.world_alpha, self.world_plain_newton],
            device=dev,
        )  # fmt: skip

    def _predict_stiction(self, A_rows, tree_blocks) -> None:
        """Flag the rows that the direction ``Δv`` takes through stiction (``predict_stiction``) and, in their
        worlds, solve for the stiction model's direction; the block-Cholesky worlds did both in their Newton
        solve's launch (``world_block_cholesky``)."""
        self._outside_block_cholesky(self._predict_stiction_rows)
        wp.capture_if(self.any_predicted, self._stiction_model_direction, A_rows=A_rows, tree_blocks=tree_blocks)

    def _predict_stiction_rows(self) -> None:
        """``predict_stiction`` over the used rows (those of block-Cholesky worlds are skipped there)."""
        wp.launch(
            predict_stiction,
            dim=self.slot_threads,
            inputs=[self.T.world_block_offset, self.slots_per_thread, self.used_count, self.used_slots,
                    self.world_active, self.world_tree_local, self.world_plain_newton, self.c_world, self.c_kind,
                    self.c_vc, self.c_gamma, self.c_G, self.c_vhat, self.c_R, self.c_param, self.c_nnz, self.c_dof,
                    self.c_J, self.dv],
            outputs=[self.c_G_model, self.grad_model, self.world_predicted, self.any_predicted],
            device=self.device,
        )  # fmt: skip

    def _stiction_model_direction(self, A_rows, tree_blocks) -> None:
        """In the worlds with predicted stiction: ``Δṽ = −H̃⁻¹ ∇ℓ_model`` from the stiction model
        (``predict_stiction``), adopted as ``Δv`` where it descends."""
        T, dev = self.T, self.device
        self._solve_direction(A_rows, tree_blocks, self.world_predicted, self.c_G_model, self.grad_model,
                              self.dv_model, CG_MODEL_LOOSEST_TOLERANCE, self.world_model_forcing,
                              model=True)  # fmt: skip
        wp.launch(
            model_direction_slope,
            dim=self.topo.dof_count,
            inputs=[T.dof_world, self.world_predicted, self.dv_model, self.grad],
            outputs=[self.world_slope],
            device=dev,
        )
        wp.launch(
            adopt_model_direction,
            dim=self.topo.dof_count,
            inputs=[T.dof_world, self.world_predicted, self.world_slope, self.dv_model],
            outputs=[self.dv],
            device=dev,
        )

    def _solve_direction(
        self, A_rows, tree_blocks, active, G, grad, dv, loosest_tolerance: float, forcing, model=False
    ) -> None:
        """``dv = −(A + Jᵀ G J)⁻¹ grad`` in the worlds flagged in ``active``: a dense tile Cholesky per world
        size or the tree LDLᵀ (worlds flagged ``world_tree_local``), the block Cholesky, PCG for the large
        worlds (preconditioner blocks from ``tree_blocks``, the dense A blocks of the trees; CG's forcing
        terms, at most ``loosest_tolerance``, go into ``forcing``). ``model``: the stiction model's direction,
        which the block-Cholesky worlds solved with their Newton direction (``world_block_cholesky``)."""
        T, topo, dev = self.T, self.topo, self.device
        ndof = topo.dof_count
        if self.uses_dense_worlds:
            wp.launch(
                reset_world_hessians,
                dim=ndof,
                inputs=[T.dof_world, T.world_dof_start, T.world_dense_offset, active, self.world_tree_local,
                        self.A_world],
                outputs=[self.H],
                device=dev,
            )  # fmt: skip
        if self.tree_ldlt:  # H's rows start as A's where some world takes the tree LDLᵀ (hessian_assembly adds Jᵀ G J)
            wp.capture_if(self.any_tree_local, wp.copy, dest=self.H_rows, src=A_rows)
        if self.uses_pcg:
            wp.copy(self.P, tree_blocks)
            if self.pcg_sparse_trees is not None:
                wp.copy(self.P_rows, A_rows)
                self.P_shift.zero_()
            wp.launch(precond_diag_init, dim=ndof, inputs=[T.dof_row_start, A_rows], outputs=[self.pdiag],
                      device=dev)  # fmt: skip
        self._outside_block_cholesky(self._hessian_assembly, active=active, G=G)
        for n, view in self.H_views.items():
            wp.launch_tiled(
                newton_direction_kernel(n),
                dim=view.shape[0],
                inputs=[T.world_buckets[n], self.bucket_dof_start[n], active, self.world_tree_local, view, grad],
                outputs=[dv, self.world_dense_broken],
                block_dim=64 if dev.is_cpu else 128,
                device=dev,
            )
        if self.H_views:
            wp.launch(refactor_broken_dense_worlds, dim=topo.world_count,
                      inputs=[T.world_dof_start, T.world_dense_offset, grad],
                      outputs=[self.world_dense_broken, self.H, self.dense_diagonal, dv], device=dev)  # fmt: skip
        if self.tree_ldlt:
            wp.capture_if(self.any_tree_local, self._tree_local_directions, active=active, grad=grad, dv=dv)
        if self.uses_block_cholesky and not model:  # their model directions come with their Newton directions
            wp.launch(
                world_block_cholesky,
                dim=1 if self.block_shared_pool else topo.world_count,
                inputs=[T.world_dof_start, T.world_tree_start, T.world_block_offset, T.world_pair_offset,
                        T.tree_dof_start, T.tree_dof_count, T.tree_chunk_start, T.dof_tree, T.dof_parent,
                        T.tree_A_offset, int(self.block_shared_pool), self._block_pool_half(),
                        int(self.options.stiction_prediction), active,
                        self.world_tree_local, self.world_plain_newton, self.world_constraint_start,
                        self.world_constraint_count, self.world_constraints, self.c_kind, self.c_vc, self.c_gamma, G,
                        self.c_vhat, self.c_R, self.c_param, self.c_nnz, self.c_dof, self.c_J, self.block_A, grad],
                outputs=[self.block_pattern, self.block_later, self.block_index, self.tree_degree, self.tree_rank,
                         self.tree_order, self.tree_later_count, self.world_pool_used, self.block_last_graph,
                         self.block_pool, self.block_inv_diag, dv, self.c_G_model, self.world_predicted,
                         self.world_slope],
                device=dev,
            )  # fmt: skip
        if self.uses_pcg:
            self._conjugate_gradients(A_rows, active, G, grad, dv, loosest_tolerance, forcing)

    def _tree_local_directions(self, active, grad, dv) -> None:
        """``dv = −H⁻¹ grad`` by the tree LDLᵀ of H's rows in the worlds flagged in both ``active`` and
        ``world_tree_local`` (``solve_tree_systems``); a tree whose factor has a pivot that is not positive (H
        indefinite in float32) is factored again with a scaled diagonal and solved anew (``resolve_broken_trees``).
        A 66-link snake resting on the ground (71 dofs, cond(H) ≈ 4e11) had negative pivots, and its directions from
        them stopped steps 1e-3 m/s off the float64 solve, some not converged."""
        T = self.T
        solve_tree_systems(
            T.tree_ids, T.dof_levels, T, active, self.world_tree_local, self.H_rows, grad, -1.0, self.zero_dof,
            self.ldlt_factor, self.ldlt_y, self.ldlt_x, dv, self.device,
        )  # fmt: skip
        wp.launch(
            resolve_broken_trees, dim=self.topo.tree_count,
            inputs=[T.tree_ids, T.tree_dof_start, T.tree_dof_count, T.tree_world, T.dof_parent, T.dof_depth,
                    T.dof_row_start, active, self.world_tree_local, self.H_rows, grad, -1.0, self.zero_dof,
                    self.zero_dof],
            outputs=[self.ldlt_factor, self.ldlt_y, self.ldlt_x, dv], device=self.device,
        )  # fmt: skip

    def _outside_block_cholesky(self, work, **kwargs) -> None:
        """``work(**kwargs)``, a pass over the rows for the worlds that the block Cholesky does not solve (it
        assembles H and predicts stiction itself): always where some world is dense or PCG, else only in the steps
        where some world takes the tree LDLᵀ (``any_tree_local``), else never."""
        if self.uses_dense_worlds or self.uses_pcg:
            work(**kwargs)
        elif self.tree_ldlt:
            wp.capture_if(self.any_tree_local, work, **kwargs)

    def _block_pool_half(self) -> int:
        """Chunks of the block Cholesky's factor pool: one world's on the CPU (``block_shared_pool``), every world's
        elsewhere. With stiction prediction the pool holds as much again after it, each world's H kept at the same
        place plus this many chunks (``world_block_cholesky``'s ``keep``)."""
        topo = self.topo
        return topo.world_block_max if self.block_shared_pool else topo.world_block_size

    def _hessian_assembly(self, active, G) -> None:
        """``Jᵀ G J`` of the worlds flagged in ``active`` into the dense, tree-LDLᵀ and PCG worlds' Hessians
        (``hessian_assembly``; the block-Cholesky worlds assemble their own)."""
        T = self.T
        wp.launch(
            hessian_assembly,
            dim=self.slot_threads,
            inputs=[T.world_dof_start, T.world_dense_offset, T.world_uses_pcg, T.dof_tree, T.dof_dense_offset,
                    T.dof_local, T.tree_dof_count, T.dof_parent, T.dof_depth, T.dof_row_start, self.slots_per_thread,
                    self.used_count, self.used_slots, active, self.world_tree_local, self.c_world, G, self.c_nnz,
                    self.c_dof, self.c_J],
            outputs=[self.H, self.H_rows, self.P, self.P_rows, self.P_shift, self.pdiag],
            device=self.device,
        )  # fmt: skip

    def _conjugate_gradients(self, A_rows, active, G, grad, dv, loosest_tolerance: float, forcing) -> None:
        """Block-preconditioned CG on the PCG worlds flagged in ``active`` (see ``pcg.py``); the solution goes
        into ``dv``."""
        T, topo, dev = self.T, self.topo, self.device
        for n, view in self.P_views.items():
            wp.launch_tiled(
                tree_factor_kernel(n), dim=view.shape[0],
                inputs=[T.dense_buckets[n], T.tree_world, T.world_uses_pcg, active],
                outputs=[view, self.tree_block_broken], block_dim=64 if dev.is_cpu else 128, device=dev,
            )  # fmt: skip
        if self.P_views:
            wp.launch(refactor_broken_tree_blocks, dim=topo.tree_count,
                      inputs=[T.tree_dof_start, T.tree_dof_count, T.dof_dense_offset],
                      outputs=[self.tree_block_broken, self.P, self.dense_diagonal], device=dev)  # fmt: skip
        if self.pcg_sparse_trees is not None:  # the larger trees' LDLᵀ (z: scratch, set by the preconditioner later)
            wp.launch(
                factor_trees, dim=self.pcg_sparse_trees.shape[0],
                inputs=[self.pcg_sparse_trees, T.tree_dof_start, T.tree_dof_count, T.tree_world, T.dof_parent,
                        T.dof_depth, T.dof_row_start, active, T.world_uses_pcg, self.P_rows, self.P_shift],
                outputs=[self.P_factor, self.cg_z], device=dev,
            )  # fmt: skip
        max_iterations = self.cg_max_iterations
        if self.parallel_cg is not None:
            rows = (self.slots_per_thread, self.slot_threads, self.used_count, self.used_slots, self.c_world, G,
                    self.c_nnz, self.c_dof, self.c_J, self.curved_rows)  # fmt: skip
            self.parallel_cg.solve(max_iterations, loosest_tolerance, active, self.world_norms,
                                   self.world_cost_stalled, rows, A_rows,
                                   (self.P, self.P_factor, self.pdiag), grad, dv, self.world_cg_iterations,
                                   forcing)  # fmt: skip
            return
        wp.launch(
            world_pcg,
            dim=topo.world_count,
            inputs=[
                T.world_dof_start, T.world_uses_pcg, T.dof_parent, T.dof_depth, T.dof_row_start, T.dof_dense_offset,
                T.dof_tree, T.tree_dof_count, max_iterations,
                loosest_tolerance, active, self.world_norms, self.world_cost_stalled, self.world_constraint_start,
                self.world_constraint_count,
                self.world_constraints, G, self.c_nnz, self.c_dof, self.c_J, A_rows, self.P, self.P_factor, self.pdiag,
                grad,
            ],
            outputs=[self.curved_rows, self.cg_r, self.cg_z, self.cg_p, self.cg_Hp, dv, self.world_cg_iterations,
                     forcing],
            device=dev,
        )  # fmt: skip

    def write_contact_forces(
        self, model, contacts, body_q, tree_ref, world_failed, dt: float, wrench=None, body_wrench=None
    ):
        """The step's per-contact forces into ``contacts.rigid_contact_force`` (zero in the worlds flagged in
        ``world_failed``) and, given ``wrench`` (a
        contact-indexed ``spatial_vector`` array), the wrenches on body 0 into its rigid rows; given
        ``body_wrench`` (per body), each contact's wrench on each of its bodies subtracted from it, about the
        tree points ``tree_ref``. ``body_q``: the step's start poses. Conventions and units: ``observables.py``."""
        force = getattr(contacts, "rigid_contact_force", None) if contacts is not None else None
        if force is None and wrench is None and body_wrench is None:
            return
        if self.contact_slots <= 0:  # no contact rows (a model without dofs): no contact acts
            for array in (force, wrench):
                if array is not None:
                    array.zero_()
            return
        wp.launch(
            contact_forces,
            dim=-(-self.contact_slots // self.slots_per_thread),
            inputs=[model.shape_body, model.body_com, self.slots_per_thread, self.contact_slots, dt,
                    contacts.rigid_contact_count, contacts.rigid_contact_shape0, contacts.rigid_contact_shape1,
                    self.contact_slot, body_q, self.T.body_tree, tree_ref, world_failed, self.c_world, self.c_frame,
                    self.c_gamma, self.c_point],
            outputs=[force, wrench, body_wrench],
            device=self.device,
        )  # fmt: skip
