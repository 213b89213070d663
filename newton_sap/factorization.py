"""Per-tree solves of ``A x = τ`` for the free motion ``v* = v0 + Δt A⁻¹ τ`` (seed §6), and
products with the sparse A.

* Dense path (trees of at most ``dense_max_dofs`` dofs, on GPUs): one tile kernel per distinct tree
  size n, made by a cached factory; each tile block loads its tree's n×n block, factors it (Cholesky
  ``A = L Lᵀ``) and solves.
* Sparse path (larger trees, and every tree on the CPU: :data:`TREE_LDLT_ON_CPU`): the tree-structured
  ``A = Lᵀ D L`` factorization (no fill-in: row i only couples dof i with its chain ancestors). On GPUs
  it runs level by level from the deepest dofs, one thread per dof, with atomics where siblings update a
  shared ancestor; on the CPU one thread per tree walks its dofs in the same dependency order
  (:data:`TREE_THREADS_ON_CPU`). The backward half of the solve (``Lᵀ y = τ``) rides along with the
  factorization; the forward half (``L x = D⁻¹ y``) runs root first. The same kernels solve the SAP
  Newton systems ``H = A + Jᵀ G J`` of worlds whose constraints each act along one chain (``sap.py``):
  such an H has A's sparsity. PCG preconditions trees too large for a dense block by their LDLᵀ
  (``factor_trees`` once per direction, ``solve_factored_tree`` per CG iteration, one thread per tree).
"""

import functools

import warp as wp

from .finite import all_finite, nonfinite_part

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

TREE_LDLT_ON_CPU = True
"""Factor every tree by the sparse tree LDLᵀ on the CPU, however small (dense tree blocks are still
assembled there, for the PCG preconditioner). Warp's tile Cholesky runs at about 1 GFLOP/s on one CPU
core, and the tree LDLᵀ needs fewer operations (``Σ_k depth_k²`` against ``n³/3``): free motion of 1024
worlds took 2.5 instead of 6.6 ms (humanoid, 27 dofs), 0.94 instead of 2.0 ms (ant) and 0.85 instead of
1.5 ms (5 free boxes), kernel launches included. GPUs keep the tiles (not yet measured there)."""


TREE_THREADS_ON_CPU = True
"""On the CPU the tree LDLᵀ runs one thread per tree (:func:`tree_solve`: one launch per solve), on GPUs level by
level (parallel over the dofs of a depth: two launches per depth, 30 per solve for a humanoid). Launched one
by one, those launches cost about 20 µs each on the CPU: a 1-world quadruped step took 7.7 ms with levels
against 2.4 ms before the tree LDLᵀ."""


BREAKDOWN_SHIFTS = wp.constant(4)
"""Refactorizations with a scaled diagonal where a float32 factorization of a Hessian breaks down (a pivot not
positive: ``block_cholesky._assemble_and_factor``, :func:`factor_trees`)."""
BREAKDOWN_FIRST_SHIFT = wp.constant(1.0e-5)
"""The first relative diagonal shift δ of a refactorization, ``H_ii ← (1 + δ) H_ii``: some 100 times float32's
round-off of the assembled entries."""
BREAKDOWN_SHIFT_GROWTH = wp.constant(100.0)
"""Factor by which δ grows from one refactorization to the next (1e-5, 1e-3, 0.1, 10)."""


def uses_tree_ldlt(device) -> bool:
    """Whether trees of at most ``dense_max_dofs`` dofs factor by the tree LDLᵀ on ``device``."""
    return TREE_LDLT_ON_CPU and wp.get_device(device).is_cpu


@functools.cache
def dense_free_motion_kernel(n: int):
    """Tile kernel for trees of exactly ``n`` dofs: ``v*[tree] = v0[tree] + Δt · chol_solve(A, τ)`` in the
    worlds flagged in ``worlds``. Where A's float32 Cholesky breaks down (a pivot not positive or not finite; on CUDA
    a failed factorization need not leave NaN behind) the tree's v* is NaN, which fails its world
    (``SolverSAP._flag_failed_results``), as the CPU's scalar tile Cholesky does, instead of a finite wrong v*."""

    @wp.kernel(module="unique", module_options={"enable_backward": False})
    def dense_free_motion(
        # model
        bucket_tree_dof_start: wp.array(dtype=wp.int32),
        dof_world: wp.array(dtype=wp.int32),
        # inputs
        dt: float,
        worlds: wp.array(dtype=wp.int32),
        dense_blocks: wp.array3d(dtype=float),
        tau_in: wp.array(dtype=float),
        v0_in: wp.array(dtype=float),
        # outputs
        v_star_out: wp.array(dtype=float),
    ):
        t = wp.tid()
        start = bucket_tree_dof_start[t]
        if worlds[dof_world[start]] == 0:
            return
        A = wp.tile_load(dense_blocks[t], shape=(n, n))
        L = wp.tile_cholesky(A)
        factored = int(1)
        for i in range(n):
            pivot = wp.tile_extract(L, i, i)
            if not (pivot > 0.0 and wp.isfinite(pivot)):
                factored = 0
        tau = wp.tile_load(tau_in, shape=n, offset=start)
        x = wp.tile_cholesky_solve(L, tau)
        v0 = wp.tile_load(v0_in, shape=n, offset=start)
        if factored == 1:
            wp.tile_store(v_star_out, v0 + dt * x, offset=start)
        else:
            for i in range(n):  # every thread of the block writes the same values
                v_star_out[start + i] = wp.nan

    return dense_free_motion


@wp.func
def eliminate_dof(
    k: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """Eliminate dof k (all its descendants are done): for each chain ancestor i,
    ``L_ki = H_ki / D_k``, ``H_ij −= L_ki H_kj`` for j on i's chain, and ``y_i −= L_ki y_k``
    (``Lᵀ y = b``). ``D_k = H_kk`` stays on the diagonal, ``L_ki`` replaces ``H_ki``."""
    dk = dof_depth[k]
    rk = dof_row_start[k]
    Dk = factor[rk]
    yk = y[k]
    i = dof_parent[k]
    while i >= 0:
        di = dof_depth[i]
        ri = dof_row_start[i]
        a = factor[rk + dk - di] / Dk
        j = i
        while j >= 0:
            dj = dof_depth[j]
            wp.atomic_sub(factor, ri + di - dj, a * factor[rk + dk - dj])
            j = dof_parent[j]
        wp.atomic_sub(y, i, a * yk)
        factor[rk + dk - di] = a
        i = dof_parent[i]


@wp.func
def reduce_dof(
    k: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """:func:`eliminate_dof`'s right-hand-side half with ``factor`` already factored: ``y_i −= L_ki y_k`` for each
    chain ancestor i of k (the same operations, so the same bits)."""
    dk = dof_depth[k]
    rk = dof_row_start[k]
    yk = y[k]
    i = dof_parent[k]
    while i >= 0:
        wp.atomic_sub(y, i, factor[rk + dk - dof_depth[i]] * yk)
        i = dof_parent[i]


@wp.func
def substitute_dof(
    k: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    scale: float,
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
    base: wp.array(dtype=float),
    x: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """Dof k after its chain ancestors: ``x_k = y_k / D_k − Σ_{i ∈ chain(k)} L_ki x_i`` and
    ``out_k = base_k + scale · x_k`` (free motion: ``v* = v0 + Δt x``)."""
    dk = dof_depth[k]
    rk = dof_row_start[k]
    xk = y[k] / factor[rk]
    i = dof_parent[k]
    while i >= 0:
        xk -= factor[rk + dk - dof_depth[i]] * x[i]
        i = dof_parent[i]
    x[k] = xk
    out[k] = base[k] + scale * xk


@wp.func
def solve_factored_tree(
    s: int,
    n: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    factor: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
):
    """``z = M⁻¹ r`` over one tree's dofs [s, s + n), in one thread, ``factor`` holding the tree's ``Lᵀ D L`` (the
    rows after :func:`eliminate_dof` of every dof): ``z = r``, :func:`reduce_dof` from the last dof to the first
    (``Lᵀ y = r``), then ``z_k = y_k / D_k − Σ_{i ∈ chain(k)} L_ki z_i`` from the first, in place."""
    for a in range(n):
        z[s + a] = r[s + a]
    for a in range(n):
        reduce_dof(s + n - 1 - a, dof_parent, dof_depth, dof_row_start, factor, z)
    for a in range(n):
        k = s + a
        dk = dof_depth[k]
        rk = dof_row_start[k]
        zk = z[k] / factor[rk]
        i = dof_parent[k]
        while i >= 0:
            zk -= factor[rk + dk - dof_depth[i]] * z[i]
            i = dof_parent[i]
        z[k] = zk


@wp.func
def pivots_positive(s: int, n: int, dof_row_start: wp.array(dtype=wp.int32), factor: wp.array(dtype=float)):
    """Whether every pivot D of a tree's factor (dofs [s, s + n)) is positive and finite."""
    positive = int(1)
    for a in range(n):
        pivot = factor[dof_row_start[s + a]]
        if not (pivot > 0.0 and wp.isfinite(pivot)):
            positive = 0
    return positive


@wp.func
def factor_tree_rows(
    s: int,
    n: int,
    first_attempt: int,
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    rows: wp.array(dtype=float),
    diagonal_shift: wp.array(dtype=float),
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """``M = Lᵀ D L`` of one tree (dofs [s, s + n)) into ``factor``, M given by its rows ``rows`` (A's layout;
    :func:`eliminate_dof` from the last dof to the first, its right-hand-side half on the scratch ``y``). Attempt 0
    factors M as it is; each later one, where a pivot D was not positive, ``M_ii ← (1 + δ) M_ii + diagonal_shift_i``
    (δ from :data:`BREAKDOWN_FIRST_SHIFT`, growing by :data:`BREAKDOWN_SHIFT_GROWTH`, up to :data:`BREAKDOWN_SHIFTS`
    times), starting at ``first_attempt``. A pivot that is still not positive is left for the solve's user to
    detect."""
    broken = int(1)
    delta = float(0.0)
    shifted = float(0.0)
    if first_attempt > 0:
        delta = BREAKDOWN_FIRST_SHIFT
        shifted = 1.0
    for attempt in range(BREAKDOWN_SHIFTS + 1):
        if broken == 1 and attempt >= first_attempt:
            for a in range(n):
                k = s + a
                rk = dof_row_start[k]
                for e in range(dof_depth[k] + 1):
                    factor[rk + e] = rows[rk + e]
                factor[rk] = (1.0 + delta) * factor[rk] + shifted * diagonal_shift[k]
            for a in range(n):
                eliminate_dof(s + n - 1 - a, dof_parent, dof_depth, dof_row_start, factor, y)
            broken = 1 - pivots_positive(s, n, dof_row_start, factor)
            if delta == 0.0:
                delta = BREAKDOWN_FIRST_SHIFT
                shifted = 1.0
            else:
                delta = delta * BREAKDOWN_SHIFT_GROWTH


@wp.func
def dense_cholesky_in_place(off: int, n: int, M: wp.array(dtype=float)):
    """``M = L Lᵀ`` of the dense n × n block at ``off`` (row-major), L over M's lower triangle, which alone is read;
    whether every pivot was positive (else L is left partial)."""
    for j in range(n):
        pivot = M[off + j * n + j]
        for k in range(j):
            pivot -= M[off + j * n + k] * M[off + j * n + k]
        if not (pivot > 0.0 and wp.isfinite(pivot)):
            return int(0)
        ljj = wp.sqrt(pivot)
        M[off + j * n + j] = ljj
        for i in range(j + 1, n):
            value = M[off + i * n + j]
            for k in range(j):
                value -= M[off + i * n + k] * M[off + j * n + k]
            M[off + i * n + j] = value / ljj
    return int(1)


@wp.func
def dense_cholesky_solve(
    off: int, n: int, s: int, L: wp.array(dtype=float), r: wp.array(dtype=float), z: wp.array(dtype=float)
):
    """``z = (L Lᵀ)⁻¹ r`` over dofs [s, s + n), L the lower triangle of the dense n × n block at ``off``
    (row-major): forward substitution ``L y = r`` into z, then ``Lᵀ z = y`` in place."""
    for a in range(n):
        acc = r[s + a]
        for b in range(a):
            acc -= L[off + a * n + b] * z[s + b]
        z[s + a] = acc / L[off + a * n + a]
    for a2 in range(n):
        a = n - 1 - a2
        acc = z[s + a]
        for b in range(a + 1, n):
            acc -= L[off + b * n + a] * z[s + b]
        z[s + a] = acc / L[off + a * n + a]


@wp.func
def refactor_dense_block(off: int, n: int, s: int, M: wp.array(dtype=float), diagonal: wp.array(dtype=float)):
    """``M + δ diag(M) = L Lᵀ`` of the dense n × n block at ``off`` (row-major; its lower triangle, whose float32
    Cholesky broke down), δ as :func:`factor_tree_rows`' retries, the first that holds; L in M's lower triangle.
    M's lower triangle is kept in its upper one (which the factorizations do not read) and its diagonal in
    ``diagonal[s:s + n]``. Whether a δ held."""
    for r in range(n):
        diagonal[s + r] = M[off + r * n + r]
        for c in range(r):
            M[off + c * n + r] = M[off + r * n + c]
    delta = BREAKDOWN_FIRST_SHIFT
    for _attempt in range(BREAKDOWN_SHIFTS):
        for r in range(n):
            M[off + r * n + r] = (1.0 + delta) * diagonal[s + r]
            for c in range(r):
                M[off + r * n + c] = M[off + c * n + r]
        if dense_cholesky_in_place(off, n, M) == 1:
            return int(1)
        delta = delta * BREAKDOWN_SHIFT_GROWTH
    return int(0)


@wp.kernel
def refactor_broken_dense_worlds(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_dense_offset: wp.array(dtype=wp.int32),
    # inputs
    grad: wp.array(dtype=float),
    # outputs (world_dense_broken reset; H's upper triangle and diagonal scratch overwritten; dv replaced)
    world_dense_broken: wp.array(dtype=wp.int32),
    H: wp.array(dtype=float),
    diagonal: wp.array(dtype=float),
    dv: wp.array(dtype=float),
):
    """After the dense tile solves (``sap.newton_direction_kernel``): one thread per world whose Cholesky of H broke
    down in float32 (a pivot not positive; flagged in ``world_dense_broken``, which it took the Jacobi direction
    for) factors H again with a scaled diagonal (:func:`refactor_dense_block`) and solves ``dv = −H̃⁻¹ grad``;
    where no δ holds, the Jacobi direction stays."""
    w = wp.tid()
    if world_dense_broken[w] == 0:
        return
    world_dense_broken[w] = 0
    off = world_dense_offset[w]
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    if refactor_dense_block(off, n, s, H, diagonal) == 0:
        return
    dense_cholesky_solve(off, n, s, H, grad, dv)
    finite = float(0.0)
    for r in range(n):
        dv[s + r] = -dv[s + r]
        finite += nonfinite_part(dv[s + r])
    if not all_finite(finite):
        for r in range(n):  # overflow: the Jacobi direction again
            dv[s + r] = -grad[s + r] / diagonal[s + r]


@wp.kernel
def refactor_broken_tree_blocks(
    # model
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    # outputs (tree_block_broken reset; the block factored in place, its upper triangle and diagonal scratch
    # overwritten)
    tree_block_broken: wp.array(dtype=wp.int32),
    P: wp.array(dtype=float),
    diagonal: wp.array(dtype=float),
):
    """After the tile factorizations of PCG's dense tree blocks (``pcg.tree_factor_kernel``): one thread per tree
    whose block's Cholesky broke down in float32 (flagged in ``tree_block_broken``, the block left as it was)
    factors it again with a scaled diagonal (:func:`refactor_dense_block`); where no δ holds, a negative first pivot
    makes ``pcg.precondition_tree`` take the Jacobi preconditioner."""
    t = wp.tid()
    if tree_block_broken[t] == 0:
        return
    tree_block_broken[t] = 0
    s = tree_dof_start[t]
    off = dof_dense_offset[s]
    if refactor_dense_block(off, tree_dof_count[t], s, P, diagonal) == 0:
        P[off] = -1.0


@wp.kernel
def factor_trees(
    # model
    trees: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_world: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    world_selected: wp.array(dtype=wp.int32),
    rows: wp.array(dtype=float),
    diagonal_shift: wp.array(dtype=float),
    # outputs (factor: the listed trees' rows factored; y: scratch over the dofs)
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """One thread per listed tree of the worlds flagged in both masks: :func:`factor_tree_rows` from attempt 0, for
    :func:`solve_factored_tree` (PCG's preconditioner of large trees, whose ``diagonal_shift`` holds the couplings it
    dropped). A 66-link snake resting on the ground (71 dofs, cond(A) ≈ 5e7) gave a ``Jᵀ G J`` whose float32 sums had
    eigenvalues down to −10 against A's smallest, 1.4e-4."""
    t = trees[wp.tid()]
    w = tree_world[t]
    if world_active[w] == 0 or world_selected[w] == 0:
        return
    factor_tree_rows(tree_dof_start[t], tree_dof_count[t], 0, dof_parent, dof_depth, dof_row_start, rows,
                     diagonal_shift, factor, y)  # fmt: skip


@wp.kernel
def resolve_broken_trees(
    # model
    trees: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_world: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    world_selected: wp.array(dtype=wp.int32),
    rows: wp.array(dtype=float),
    rhs: wp.array(dtype=float),
    scale: float,
    base: wp.array(dtype=float),
    no_shift: wp.array(dtype=float),
    # outputs (factor, x: those of the solve before, redone in place; y: scratch)
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
    x: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """After :func:`solve_tree_systems`: one thread per listed tree of the worlds flagged in both masks whose factor
    has a pivot that is not positive (M indefinite in float32) factors M again with a scaled diagonal
    (:func:`factor_tree_rows` from attempt 1) and solves anew, ``out = base + scale · M̃⁻¹ rhs``; where no attempt
    holds, by M's diagonal (Jacobi), as the dense path does. Trees whose factor held cost a scan of their pivots."""
    t = trees[wp.tid()]
    w = tree_world[t]
    if world_active[w] == 0 or world_selected[w] == 0:
        return
    s = tree_dof_start[t]
    n = tree_dof_count[t]
    if pivots_positive(s, n, dof_row_start, factor) == 1:
        return
    factor_tree_rows(s, n, 1, dof_parent, dof_depth, dof_row_start, rows, no_shift, factor, y)
    if pivots_positive(s, n, dof_row_start, factor) == 1:
        solve_factored_tree(s, n, dof_parent, dof_depth, dof_row_start, factor, rhs, x)
    else:  # still broken: M's diagonal (Jacobi), as the dense path
        for a in range(n):
            x[s + a] = rhs[s + a] / rows[dof_row_start[s + a]]
    for a in range(n):
        out[s + a] = base[s + a] + scale * x[s + a]


@wp.kernel
def sparse_factor_level(
    # model
    level_dofs: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    world_selected: wp.array(dtype=wp.int32),
    factored: int,
    # outputs (factored in place)
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """:func:`eliminate_dof` (``factored = 1``: :func:`reduce_dof`) for the dofs of one depth (deepest level
    first), one thread each, in the worlds flagged in both ``world_active`` and ``world_selected``."""
    k = level_dofs[wp.tid()]
    w = dof_world[k]
    if world_active[w] == 0 or world_selected[w] == 0:
        return
    if factored == 1:
        reduce_dof(k, dof_parent, dof_depth, dof_row_start, factor, y)
    else:
        eliminate_dof(k, dof_parent, dof_depth, dof_row_start, factor, y)


@wp.kernel
def sparse_solve_level(
    # model
    level_dofs: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    world_selected: wp.array(dtype=wp.int32),
    scale: float,
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
    base: wp.array(dtype=float),
    # outputs
    x: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """:func:`substitute_dof` for the dofs of one depth (root level first), one thread each, in the worlds
    flagged in both masks."""
    k = level_dofs[wp.tid()]
    w = dof_world[k]
    if world_active[w] == 0 or world_selected[w] == 0:
        return
    substitute_dof(k, dof_parent, dof_depth, dof_row_start, scale, factor, y, base, x, out)


@wp.kernel
def tree_solve(
    # model
    trees: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_world: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    world_active: wp.array(dtype=wp.int32),
    world_selected: wp.array(dtype=wp.int32),
    factored: int,
    scale: float,
    base: wp.array(dtype=float),
    # outputs (factor and y: factored and reduced in place)
    factor: wp.array(dtype=float),
    y: wp.array(dtype=float),
    x: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """One thread per tree (the CPU's form, one launch for the whole solve): :func:`eliminate_dof` (``factored =
    1``: :func:`reduce_dof`) from the tree's last dof to its first, then :func:`substitute_dof` from the first (a
    dof's ancestors have smaller indices, ``topology.py``), for the listed trees of the worlds flagged in both
    masks."""
    t = trees[wp.tid()]
    w = tree_world[t]
    if world_active[w] == 0 or world_selected[w] == 0:
        return
    s = tree_dof_start[t]
    n = tree_dof_count[t]
    for i in range(n):
        if factored == 1:
            reduce_dof(s + n - 1 - i, dof_parent, dof_depth, dof_row_start, factor, y)
        else:
            eliminate_dof(s + n - 1 - i, dof_parent, dof_depth, dof_row_start, factor, y)
    for i in range(n):
        substitute_dof(s + i, dof_parent, dof_depth, dof_row_start, scale, factor, y, base, x, out)


@wp.kernel
def sparse_matvec(
    # model
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    A_rows: wp.array(dtype=float),
    x: wp.array(dtype=float),
    # outputs (zeroed by the caller, accumulated)
    y: wp.array(dtype=float),
):
    """``y = A x`` from the sparse lower-triangle rows, one thread per dof i: the diagonal,
    ``y_i += A_ij x_j`` and (symmetric part) ``y_j += A_ij x_i`` for j on i's chain."""
    i = wp.tid()
    rs = dof_row_start[i]
    di = dof_depth[i]
    yi = A_rows[rs] * x[i]
    j = dof_parent[i]
    while j >= 0:
        a = A_rows[rs + di - dof_depth[j]]
        yi += a * x[j]
        wp.atomic_add(y, j, a * x[i])
        j = dof_parent[j]
    wp.atomic_add(y, i, yi)


def solve_tree_systems(
    trees, levels, T, world_active, world_selected, rows, rhs, scale, base, factor, y, x, out, device, factored=False
) -> None:
    """``out = base + scale · M⁻¹ rhs`` per tree, for the trees ``trees`` (whose dofs ``levels`` lists by
    depth) in the worlds flagged in both ``world_active`` and ``world_selected``, M given by its sparse
    lower rows ``rows`` (A's layout); ``factor``, ``y`` and ``x`` are scratch of the sizes of ``rows`` and
    ``rhs``. ``factored=True``: ``factor`` already holds these trees' factors of M from an earlier call (rows
    unchanged since), only the right-hand side is reduced. On the CPU one thread per tree (:func:`tree_solve`, one
    launch: the CPU runs the threads one after the other anyway), on GPUs level by level
    (:data:`TREE_THREADS_ON_CPU`)."""
    if not factored:
        wp.copy(factor, rows)
    wp.copy(y, rhs)
    if TREE_THREADS_ON_CPU and wp.get_device(device).is_cpu:
        wp.launch(
            tree_solve,
            dim=trees.shape[0],
            inputs=[trees, T.tree_dof_start, T.tree_dof_count, T.tree_world, T.dof_parent, T.dof_depth, T.dof_row_start,
                    world_active, world_selected, int(factored), scale, base],
            outputs=[factor, y, x, out],
            device=device,
        )  # fmt: skip
        return
    for level in reversed(levels):
        wp.launch(
            sparse_factor_level,
            dim=level.shape[0],
            inputs=[level, T.dof_parent, T.dof_depth, T.dof_row_start, T.dof_world, world_active, world_selected,
                    int(factored)],
            outputs=[factor, y],
            device=device,
        )  # fmt: skip
    for level in levels:
        wp.launch(
            sparse_solve_level,
            dim=level.shape[0],
            inputs=[level, T.dof_parent, T.dof_depth, T.dof_row_start, T.dof_world, world_active, world_selected,
                    scale, factor, y, base],
            outputs=[x, out],
            device=device,
        )  # fmt: skip
