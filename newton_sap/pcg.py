"""Block-preconditioned conjugate gradients for the Newton systems ``H Δv = −∇ℓ`` of the largest worlds
(above ``block_cholesky_max_dofs``).

``H = A + Jᵀ G J`` is applied matrix-free (sparse A rows plus the contact Jacobians). The
preconditioner is block-diagonal by tree, ``P_t = A_t + (Jᵀ G J)_tt``: a dense tile Cholesky per tree
size for trees of at most ``dense_max_dofs`` dofs, the tree LDLᵀ of ``factorization.py`` for larger trees
(one thread per tree factors it, ``factor_trees``) without the entries that couple two branches of the tree
(self-contacts; ``sap.hessian_assembly``). A world whose contacts only touch one chain of one tree each
(robots on the ground, objects on static geometry) has ``P = H`` and converges in one iteration, unless float32
left a large tree's block indefinite and its factorization took a scaled diagonal (a resting 71-dof snake: about 30
iterations); contacts between trees or branches are what CG iterates on.

One thread per world runs the whole CG loop (``world_pcg``): a single launch per Newton iteration,
where a launch per CG operation would be dominated by launch overhead (hundreds of CG iterations on a
contact-coupled pile). The tree blocks are factored beforehand by tile kernels (``tree_factor_kernel``).
That layout suits the CPU; on GPUs ``pcg_parallel.py`` runs the same iterations over all dofs, trees and
rows (option ``pcg_threads``).
"""

from __future__ import annotations

import functools

import warp as wp

from .factorization import dense_cholesky_solve, pivots_positive, solve_factored_tree
from .jacobian import row_product
from .line_search import INEXACT_STALL

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

CG_LOOSEST_TOLERANCE = 1.0e-1
"""Largest forcing term η (far from the solution); see :data:`CG_TIGHTEST_TOLERANCE`."""
CG_TIGHTEST_TOLERANCE = 1.0e-4
"""Smallest forcing term η. CG stops at ``‖r‖ ≤ η ‖∇ℓ‖``: an inexact Newton direction (the line search
keeps descent). η follows the world's relative Newton residual ``‖D∇ℓ‖ / max(‖DAv‖, ‖DJᵀγ‖)``
(Eisenstat–Walker style), clamped to [1e-4, 1e-1]: loose far from the solution, where a precise direction
is wasted, and tight near it, which keeps Newton's fast local convergence. Measured on a 50-sphere pile
(20 steps after 0.2 s): 25 CG iterations per Newton iteration and 29 Newton iterations per step, against
128 and 24 with a fixed η = 1e-4 (4.4× less CG work in all)."""

CG_MODEL_LOOSEST_TOLERANCE = 1.0e-2
"""Largest forcing term of the stiction-model directions (``stiction_prediction.py``). Their right-hand side
is dominated by the large stiction impulses of the predicted rows, so a stop relative to it leaves a larger
error in the other rows than Newton's own solves do: with 1e-1 the model directions barely descended; with
1e-2 a 50-sphere pile (16 worlds) needs 7.3 Newton and 82 CG iterations per step against 6.5 and 122 with
1e-4."""


@wp.func
def forcing_term(norms: wp.vec3, stalled: int, loosest_tolerance: float):
    """CG's forcing term η of a world with the squared scaled gradient norms ``norms`` (``sap.gradient``): its
    relative Newton residual ``‖D∇ℓ‖ / max(‖DAv‖, ‖DJᵀγ‖)`` clamped to ``[CG_TIGHTEST_TOLERANCE,
    loosest_tolerance]``, or the tightest after its last loose direction stalled (``stalled`` is its
    ``world_cost_stalled``, ``line_search.INEXACT_STALL``)."""
    if stalled == INEXACT_STALL:
        return CG_TIGHTEST_TOLERANCE
    relative_residual = wp.sqrt(norms[0] / wp.max(wp.max(norms[1], norms[2]), 1.0e-30))
    return wp.clamp(relative_residual, CG_TIGHTEST_TOLERANCE, loosest_tolerance)


@wp.kernel
def precond_diag_init(
    # model
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    A_rows: wp.array(dtype=float),
    # outputs
    pdiag_out: wp.array(dtype=float),
):
    """Jacobi part of the preconditioner starts from ``diag(A)``."""
    i = wp.tid()
    pdiag_out[i] = A_rows[dof_row_start[i]]


@functools.cache
def tree_factor_kernel(n: int):
    """Tile kernel for the trees of ``n`` dofs (a dense-tree bucket): ``P_t = L Lᵀ`` with L stored in
    place, for trees of active PCG worlds. Where a pivot is not positive (float32 breakdown) the block is left as it
    is and its tree flagged in ``tree_block_broken_out`` for ``factorization.refactor_broken_tree_blocks``."""

    @wp.kernel(module="unique", module_options={"enable_backward": False})
    def tree_factor(
        # model
        bucket_trees: wp.array(dtype=wp.int32),
        tree_world: wp.array(dtype=wp.int32),
        world_uses_pcg: wp.array(dtype=wp.int32),
        # inputs
        world_active: wp.array(dtype=wp.int32),
        # outputs (factored in place)
        P_blocks: wp.array3d(dtype=float),
        tree_block_broken_out: wp.array(dtype=wp.int32),
    ):
        t = wp.tid()
        w = tree_world[bucket_trees[t]]
        if world_uses_pcg[w] == 0 or world_active[w] == 0:
            return
        L = wp.tile_cholesky(wp.tile_load(P_blocks[t], shape=(n, n)))
        factored = int(1)  # every pivot positive (as in sap.newton_direction_kernel: on CUDA no NaN need follow)
        for i in range(n):
            pivot = wp.tile_extract(L, i, i)
            if not (pivot > 0.0 and wp.isfinite(pivot)):
                factored = 0
        if factored == 1:
            wp.tile_store(P_blocks[t], L)
        else:
            tree_block_broken_out[bucket_trees[t]] = 1  # every thread of the block writes the same value

    return tree_factor


@wp.func
def precondition_tree(
    s: int,
    m: int,
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    P: wp.array(dtype=float),
    P_factor: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
):
    """``z = P_t⁻¹ r`` over one tree's dofs [s, s + m). A tree with a dense block (``dof_dense_offset[s] ≥ 0``):
    forward and back substitution with its stored Cholesky factor L (row-major, lower triangle, at that offset).
    A larger tree: its tree LDLᵀ in ``P_factor`` (A's layout, :func:`~newton_sap.factorization.solve_factored_tree`).
    Jacobi (``pdiag``: P_t's diagonal for a larger tree, A's for a dense block) where the factorization broke down
    in float32 (a pivot not positive: L's diagonal, or D, NaN or negative from there on). A 19-dof tree with stiff
    self-contacts (cond(A) 1e5) turned its world NaN, flagged failed, where the dense and block-Cholesky solves
    converge (helper review, session 28)."""
    block = dof_dense_offset[s]
    factored = int(1)
    if block >= 0:
        for a in range(m):
            pivot = P[block + a * m + a]
            if not (pivot > 0.0 and wp.isfinite(pivot)):
                factored = 0
    else:
        factored = pivots_positive(s, m, dof_row_start, P_factor)
    if factored == 0:
        for a in range(m):
            z[s + a] = r[s + a] / pdiag[s + a]
        return
    if block < 0:
        solve_factored_tree(s, m, dof_parent, dof_depth, dof_row_start, P_factor, r, z)
        return
    dense_cholesky_solve(block, m, s, P, r, z)


@wp.func
def apply_preconditioner(
    s: int,
    n: int,
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    P: wp.array(dtype=float),
    P_factor: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
):
    """``z = P⁻¹ r`` over a world's dofs [s, s + n), tree by tree (:func:`precondition_tree`)."""
    i = s
    while i < s + n:
        m = tree_dof_count[dof_tree[i]]
        precondition_tree(i, m, dof_dense_offset, dof_parent, dof_depth, dof_row_start, P, P_factor, pdiag, r, z)
        i += m


@wp.func
def apply_hessian(
    s: int,
    n: int,
    begin: int,
    end: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    A_rows: wp.array(dtype=float),
    curved_rows: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    p: wp.array(dtype=float),
    Hp: wp.array(dtype=float),
):
    """``Hp = (A + Jᵀ G J) p`` over a world's dofs, sequentially (no atomics); the constraint part runs
    over ``curved_rows[begin:end]``, the world's rows with ``G ≠ 0`` (the others add nothing)."""
    for i in range(s, s + n):
        Hp[i] = A_rows[dof_row_start[i]] * p[i]
    for i in range(s, s + n):
        rs = dof_row_start[i]
        di = dof_depth[i]
        j = dof_parent[i]
        while j >= 0:
            a = A_rows[rs + di - dof_depth[j]]
            Hp[i] = Hp[i] + a * p[j]
            Hp[j] = Hp[j] + a * p[i]
            j = dof_parent[j]
    for k in range(begin, end):
        c = curved_rows[k]
        u = c_G[c] * row_product(c, c_nnz, c_dof, c_J, p)
        for e in range(c_nnz[c]):
            d = c_dof[c, e]
            Hp[d] = Hp[d] + wp.dot(c_J[c, e], u)


@wp.kernel
def world_pcg(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_uses_pcg: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    # inputs
    max_iterations: int,
    loosest_tolerance: float,
    world_active: wp.array(dtype=wp.int32),
    world_norms: wp.array(dtype=wp.vec3),
    world_cost_stalled: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    world_constraint_count: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    A_rows: wp.array(dtype=float),
    P: wp.array(dtype=float),
    P_factor: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    grad: wp.array(dtype=float),
    # outputs (curved_rows, r, z, p, Hp: scratch; CG iterations accumulated per world)
    curved_rows: wp.array(dtype=wp.int32),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
    p: wp.array(dtype=float),
    Hp: wp.array(dtype=float),
    dv_out: wp.array(dtype=float),
    world_cg_iterations: wp.array(dtype=wp.int32),
    world_forcing_out: wp.array(dtype=float),
):
    """One thread per active PCG world: preconditioned CG on ``H Δv = −∇ℓ`` until
    ``‖r‖ ≤ η ‖∇ℓ‖`` or ``max_iterations``, with η in ``[CG_TIGHTEST_TOLERANCE, loosest_tolerance]``
    recorded in ``world_forcing_out`` (the relative residual reached instead, if CG stopped short of it: the
    line search's float32 stall tests take only precise directions); the whole loop in one launch.
    η is :func:`forcing_term` of ``world_norms`` (the squared scaled norms of ``sap.gradient``). The world's
    rows with curvature (``G ≠ 0``) are listed once in ``curved_rows`` (its slots ``[begin, end)``) for the
    Hessian products: in a pile most rows are separated contacts inside the detection gap."""
    w = wp.tid()
    if world_uses_pcg[w] == 0 or world_active[w] == 0:
        return
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    begin = world_constraint_start[w]
    curved_end = begin
    for k in range(begin, begin + world_constraint_count[w]):
        c = world_constraints[k]
        G = c_G[c]
        if wp.ddot(G, G) != 0.0:
            curved_rows[curved_end] = c
            curved_end += 1
    eta = forcing_term(world_norms[w], world_cost_stalled[w], loosest_tolerance)
    world_forcing_out[w] = eta
    b2 = float(0.0)
    for i in range(s, s + n):
        dv_out[i] = 0.0
        r[i] = -grad[i]
        b2 += r[i] * r[i]
    apply_preconditioner(s, n, dof_dense_offset, dof_tree, tree_dof_count, dof_parent, dof_depth, dof_row_start, P,
                         P_factor, pdiag, r, z)  # fmt: skip
    rz = float(0.0)
    for i in range(s, s + n):
        p[i] = z[i]
        rz += r[i] * z[i]
    iterations = int(0)
    r2 = b2
    for _k in range(max_iterations):
        apply_hessian(s, n, begin, curved_end, dof_parent, dof_depth, dof_row_start, A_rows, curved_rows, c_G,
                      c_nnz, c_dof, c_J, p, Hp)  # fmt: skip
        pHp = float(0.0)
        for i in range(s, s + n):
            pHp += p[i] * Hp[i]
        if not pHp > 0.0:  # H not positive along p in float32 (or NaN): stop with what was reached
            break
        iterations += 1
        alpha = rz / pHp
        r2 = float(0.0)
        for i in range(s, s + n):
            dv_out[i] = dv_out[i] + alpha * p[i]
            r[i] = r[i] - alpha * Hp[i]
            r2 += r[i] * r[i]
        if r2 <= eta * eta * b2:
            break
        apply_preconditioner(s, n, dof_dense_offset, dof_tree, tree_dof_count, dof_parent, dof_depth, dof_row_start, P,
                             P_factor, pdiag, r, z)  # fmt: skip
        rz_new = float(0.0)
        for i in range(s, s + n):
            rz_new += r[i] * z[i]
        beta = rz_new / rz
        rz = rz_new
        for i in range(s, s + n):
            p[i] = z[i] + beta * p[i]
    world_cg_iterations[w] = world_cg_iterations[w] + iterations
    if r2 > eta * eta * b2:  # stopped short of η (max_iterations, or pᵀHp ≤ 0): record what it reached
        world_forcing_out[w] = wp.sqrt(r2 / b2)
