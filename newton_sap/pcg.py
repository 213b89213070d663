"""Block-preconditioned conjugate gradients for the Newton systems ``H Δv = −∇ℓ`` of large worlds.

``H = A + Jᵀ G J`` is applied matrix-free (sparse A rows plus the contact Jacobians). The
preconditioner is block-diagonal by tree, ``P_t = A_t + (Jᵀ G J)_tt``: a dense tile Cholesky per tree
size for trees of at most ``dense_max_dofs`` dofs, its diagonal (Jacobi) for larger trees. A world
whose contacts only touch one tree each (robots on the ground, objects on static geometry) has
``P = H`` and converges in one iteration; contacts between trees are what CG iterates on.

All worlds iterate together; per-world scalars live in arrays, a converged world stops.
"""

from __future__ import annotations

import functools

import warp as wp

CG_REL_TOLERANCE = 1.0e-5
"""Stop when ``‖r‖ ≤ tol · ‖∇ℓ‖`` (an inexact Newton direction; the line search keeps descent)."""


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
    place, for trees of active PCG worlds."""

    @wp.kernel(module="unique")
    def tree_factor(
        # model
        bucket_trees: wp.array(dtype=wp.int32),
        tree_world: wp.array(dtype=wp.int32),
        world_uses_pcg: wp.array(dtype=wp.int32),
        # inputs
        world_active: wp.array(dtype=wp.int32),
        # outputs (factored in place)
        P_blocks: wp.array3d(dtype=float),
    ):
        t = wp.tid()
        w = tree_world[bucket_trees[t]]
        if world_uses_pcg[w] == 0 or world_active[w] == 0:
            return
        L = wp.tile_cholesky(wp.tile_load(P_blocks[t], shape=(n, n)))
        wp.tile_store(P_blocks[t], L)

    return tree_factor


@functools.cache
def tree_precondition_kernel(n: int):
    """Tile kernel for the trees of ``n`` dofs (a dense-tree bucket): ``z_t = P_t⁻¹ r_t`` with the
    stored L, for trees of CG-active worlds (``cg_active`` is 0 outside PCG worlds)."""

    @wp.kernel(module="unique")
    def tree_precondition(
        # model
        bucket_trees: wp.array(dtype=wp.int32),
        tree_world: wp.array(dtype=wp.int32),
        tree_dof_start: wp.array(dtype=wp.int32),
        # inputs
        cg_active: wp.array(dtype=wp.int32),
        P_blocks: wp.array3d(dtype=float),
        r: wp.array(dtype=float),
        # outputs
        z_out: wp.array(dtype=float),
    ):
        t = wp.tid()
        tree = bucket_trees[t]
        if cg_active[tree_world[tree]] == 0:
            return
        start = tree_dof_start[tree]
        L = wp.tile_load(P_blocks[t], shape=(n, n))
        z = wp.tile_cholesky_solve(L, wp.tile_load(r, shape=n, offset=start))
        wp.tile_store(z_out, z, offset=start)

    return tree_precondition


@wp.kernel
def cg_start(
    # model
    dof_world: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    world_uses_pcg: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    grad: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    # outputs
    cg_active_out: wp.array(dtype=wp.int32),
    x_out: wp.array(dtype=float),
    r_out: wp.array(dtype=float),
    z_out: wp.array(dtype=float),
    world_b2_out: wp.array(dtype=float),
):
    """``x = 0``, ``r = −∇ℓ``, Jacobi part of ``z = P⁻¹ r``; ``‖r‖²`` per world."""
    i = wp.tid()
    w = dof_world[i]
    if world_uses_pcg[w] == 0 or world_active[w] == 0:
        return
    cg_active_out[w] = 1
    r = -grad[i]
    x_out[i] = 0.0
    r_out[i] = r
    if dof_dense_offset[i] < 0:
        z_out[i] = r / pdiag[i]
    wp.atomic_add(world_b2_out, w, r * r)


@wp.kernel
def cg_dot(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    # outputs
    world_dot_out: wp.array(dtype=float),
):
    """``aᵀb`` per CG-active world (accumulated)."""
    i = wp.tid()
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    wp.atomic_add(world_dot_out, w, a[i] * b[i])


@wp.kernel
def contact_matvec(
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    p: wp.array(dtype=float),
    # outputs (accumulated)
    Hp: wp.array(dtype=float),
):
    """``Hp += Jᵀ G J p`` for every contact of a CG-active world."""
    c = wp.tid()
    w = c_world[c]
    if w < 0:
        return
    if cg_active[w] == 0:
        return
    Jp = wp.vec3(0.0)
    for e in range(c_nnz[c]):
        Jp += c_J[c, e] * p[c_dof[c, e]]
    u = c_G[c] * Jp
    for e in range(c_nnz[c]):
        wp.atomic_add(Hp, c_dof[c, e], wp.dot(c_J[c, e], u))


@wp.kernel
def cg_step(
    # model
    dof_world: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    world_rz: wp.array(dtype=float),
    world_pHp: wp.array(dtype=float),
    p: wp.array(dtype=float),
    Hp: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    # outputs (x, r updated)
    x: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z_out: wp.array(dtype=float),
    world_r2_out: wp.array(dtype=float),
):
    """``α = rᵀz / pᵀHp``, ``x += α p``, ``r −= α Hp``, Jacobi part of ``z = P⁻¹ r``, ``‖r‖²``."""
    i = wp.tid()
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    alpha = world_rz[w] / world_pHp[w]
    x[i] = x[i] + alpha * p[i]
    ri = r[i] - alpha * Hp[i]
    r[i] = ri
    if dof_dense_offset[i] < 0:
        z_out[i] = ri / pdiag[i]
    wp.atomic_add(world_r2_out, w, ri * ri)


@wp.kernel
def cg_world_update(
    # inputs
    iteration: int,
    max_iterations: int,
    world_b2: wp.array(dtype=float),
    # outputs (read and updated)
    cg_active: wp.array(dtype=wp.int32),
    world_rz: wp.array(dtype=float),
    world_rz_new: wp.array(dtype=float),
    world_pHp: wp.array(dtype=float),
    world_r2: wp.array(dtype=float),
    world_beta_out: wp.array(dtype=float),
):
    """``β = r_newᵀz_new / rᵀz``; stop a world at ``‖r‖ ≤ tol ‖∇ℓ‖`` or after ``max_iterations``;
    reset the per-iteration sums."""
    w = wp.tid()
    if cg_active[w] == 0:
        return
    world_beta_out[w] = world_rz_new[w] / world_rz[w]
    world_rz[w] = world_rz_new[w]
    if world_r2[w] <= CG_REL_TOLERANCE * CG_REL_TOLERANCE * world_b2[w] or iteration >= max_iterations:
        cg_active[w] = 0
    world_rz_new[w] = 0.0
    world_pHp[w] = 0.0
    world_r2[w] = 0.0


@wp.kernel
def cg_direction(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    world_beta: wp.array(dtype=float),
    z: wp.array(dtype=float),
    # outputs (updated)
    p: wp.array(dtype=float),
):
    """``p = z + β p``."""
    i = wp.tid()
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    p[i] = z[i] + world_beta[w] * p[i]
