"""Tree-block sparse Cholesky of the Newton systems ``H Δv = −∇ℓ`` of worlds too large for a dense factor.

``H = A + Jᵀ G J`` of a world is block-sparse by tree: A is block-diagonal (one block per tree) and a
constraint row between two trees (a contact between two objects, a weld) couples only their two blocks.
As in Drake's SAP, the blocks are the supernodes of a sparse Cholesky: the trees are ordered by minimum
degree on the graph of coupled pairs (fill included), and ``H = L Lᵀ`` is factored block by block,
skipping the blocks that stay zero. A 50-sphere pile (50 trees of 6 dofs, about 90 touching pairs)
factors with about 170 off-diagonal blocks, some 0.3 Mflop against 9 for a dense 300×300 Cholesky, and
gives the exact Newton direction that conjugate gradients approach in tens of iterations.

One thread per world (``world_block_cholesky``) runs the whole solve each Newton iteration: the graph of
the rows with curvature, the ordering, the assembly of the pattern's blocks, the factorization and the
two triangular solves (a stiction-model direction, solved right after the Newton direction with the same
rows curved, keeps that solve's graph, ordering and placement). L's blocks are packed in the world's pool
column by column in elimination order (``_place_blocks``), so each solve sweeps one compact range of its
``n × n`` allotment (enough for any pattern); measured 5 % faster than the blocks at their dense positions
(pile, 64 and 1024 worlds). One thread's factorization is bound by the latency of its running sums, so the
loops keep three independent sums in flight (3×3 Schur tiles; three rows, or entries of ``x``, per pass in
the off-diagonal blocks and the substitutions), each summed in the order of a plain loop: a 64-world pile's
solves took 7.5 instead of 9.5 ms per launch on the CPU, with the same bits. The assembly adds a row's ``Jᵀ G J``
in 3×3 tiles of its entries too (``GJ`` of three entries times three entries' ``J``, each loaded once per tile
instead of once per entry pair): 5 % off a 64-world pile's solves. The tree graph is a bitset row
per tree (``⌈T/32⌉`` words), so clearing it, the degrees and a tree's remaining neighbours take a word at a
time: graph and ordering 1.5 → 0.7 ms per launch on that pile, again with the same bits.
"""

from __future__ import annotations

import warp as wp

from .jacobian import second_walk

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def _pattern_words(T: int):
    """32-bit words per row of a world's tree-pair pattern (a bitset row per tree)."""
    return (T + 31) // 32


@wp.func
def _pattern_bit(b: int):
    """Bit of tree b in its word of a pattern row."""
    return wp.uint32(1) << wp.uint32(b % 32)


@wp.func
def _pattern_has(pattern: wp.array(dtype=wp.uint32), row: int, b: int):
    """True if the pattern row at ``row`` has tree b."""
    return (pattern[row + b // 32] & _pattern_bit(b)) != wp.uint32(0)


@wp.func
def _pattern_add(pattern: wp.array(dtype=wp.uint32), row: int, b: int):
    """Adds tree b to the pattern row at ``row``."""
    pattern[row + b // 32] = pattern[row + b // 32] | _pattern_bit(b)


@wp.func
def _mark_rows_graph(
    t0: int,
    T: int,
    pairs: int,
    begin: int,
    end: int,
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    pattern: wp.array(dtype=wp.uint32),
):
    """The world's tree graph as bitset rows, tree a's at ``pattern[pairs + a·W : … + W]``
    (W = :func:`_pattern_words`): b is in a's row if a row with curvature (``G ≠ 0``) couples trees a and b,
    and a is in its own."""
    W = _pattern_words(T)
    for k in range(T * W):
        pattern[pairs + k] = wp.uint32(0)
    for a in range(T):
        _pattern_add(pattern, pairs + a * W, a)
    for k in range(begin, end):
        c = world_constraints[k]
        G = c_G[c]
        nnz = c_nnz[c]
        if wp.ddot(G, G) == 0.0:
            continue
        second = second_walk(c, nnz, c_dof, dof_parent)
        if second < nnz:
            a = dof_tree[c_dof[c, 0]] - t0
            b = dof_tree[c_dof[c, second]] - t0
            _pattern_add(pattern, pairs + a * W, b)
            _pattern_add(pattern, pairs + b * W, a)


@wp.func
def _minimum_degree_order(
    t0: int,
    T: int,
    pairs: int,
    pattern: wp.array(dtype=wp.uint32),
    tree_degree: wp.array(dtype=wp.int32),
    tree_rank: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
):
    """Greedy minimum-degree elimination of the world's tree graph (``_mark_rows_graph``; ties to the lowest
    tree): ``tree_order[t0 + r]`` is the tree eliminated r-th and ``tree_rank`` its inverse (world-local tree
    indices). Eliminating a tree joins its remaining neighbours pairwise (fill, added to ``pattern``) and
    leaves their rows; those neighbours, in increasing order, are the trees of its off-diagonal blocks of L,
    listed in ``later[pairs + k·T : ... + later_count[t0 + k]]``."""
    W = _pattern_words(T)
    for a in range(T):
        tree_rank[t0 + a] = -1
        degree = int(0)
        for q in range(W):
            degree += wp.bit_count(pattern[pairs + a * W + q])
        tree_degree[t0 + a] = degree - 1
    for r in range(T):
        best = int(-1)
        for a in range(T):
            if tree_rank[t0 + a] < 0:
                if best < 0 or tree_degree[t0 + a] < tree_degree[t0 + best]:
                    best = a
        tree_rank[t0 + best] = r
        tree_order[t0 + r] = best
        row = pairs + best * T
        count = int(0)
        for q in range(W):  # the remaining neighbours: the row's bits but ``best``'s own (eliminated ones left it)
            bits = pattern[pairs + best * W + q]
            while bits != wp.uint32(0):
                low = bits & (~bits + wp.uint32(1))
                bits = bits ^ low
                i = q * 32 + wp.bit_count(low - wp.uint32(1))
                if i != best:
                    later[row + count] = i
                    count += 1
        later_count[t0 + best] = count
        for m in range(count):
            i = later[row + m]
            row_i = pairs + i * W
            pattern[row_i + best // 32] = pattern[row_i + best // 32] & ~_pattern_bit(best)
            tree_degree[t0 + i] = tree_degree[t0 + i] - 1  # loses ``best``
            for m2 in range(m + 1, count):
                j = later[row + m2]
                if not _pattern_has(pattern, row_i, j):
                    _pattern_add(pattern, row_i, j)
                    _pattern_add(pattern, pairs + j * W, i)
                    tree_degree[t0 + i] = tree_degree[t0 + i] + 1
                    tree_degree[t0 + j] = tree_degree[t0 + j] + 1


@wp.func
def _place_blocks(
    t0: int,
    T: int,
    pairs: int,
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
):
    """Offsets of L's blocks in the world's pool, ``block_index[pairs + i·T + k]`` for the rows of tree i and
    the columns of tree k (i = k: the diagonal block; else i is eliminated after k), each row-major with
    k's dof count as row length: column by column in elimination order, the diagonal block first, so the
    factorization and the substitutions sweep the pool forwards (backwards). Returns the floats used."""
    cursor = int(0)
    for r in range(T):
        k = tree_order[t0 + r]
        nk = tree_dof_count[t0 + k]
        block_index[pairs + k * T + k] = cursor
        cursor += nk * nk
        for m in range(later_count[t0 + k]):
            i = later[pairs + k * T + m]
            block_index[pairs + i * T + k] = cursor
            cursor += tree_dof_count[t0 + i] * nk
    return cursor


@wp.func
def _entry_chunk(c: int, e0: int, end: int, c_dof: wp.array2d(dtype=wp.int32), c_J: wp.array2d(dtype=wp.vec3)):
    """Entries ``e0 … e0 + 2`` of row c that come before ``end`` (e0 does): their dofs (-1 past ``end``) and
    their 3-vectors as the rows of a 3×3 matrix (zero past ``end``)."""
    d = wp.vec3i(c_dof[c, e0], -1, -1)
    J0 = c_J[c, e0]
    J1 = wp.vec3(0.0)
    J2 = wp.vec3(0.0)
    if e0 + 1 < end:
        d[1] = c_dof[c, e0 + 1]
        J1 = c_J[c, e0 + 1]
    if e0 + 2 < end:
        d[2] = c_dof[c, e0 + 2]
        J2 = c_J[c, e0 + 2]
    return d, wp.matrix_from_rows(J0, J1, J2)


@wp.func
def _add_tile(L: wp.array(dtype=float), base: int, row_length: int, de: wp.vec3i, df: wp.vec3i, tile: wp.mat33,
              lower: bool):  # fmt: skip
    """``L[base + de_i · row_length + df_j] += tile_ij`` for the dofs that exist (≥ 0); ``lower``: only where
    ``df_j ≤ de_i`` (a diagonal block's lower triangle)."""
    for i in range(3):
        if de[i] >= 0:
            row = base + de[i] * row_length
            for j in range(3):
                if df[j] >= 0 and (not lower or df[j] <= de[i]):
                    L[row + df[j]] = L[row + df[j]] + tile[i, j]


@wp.func
def _assemble(
    s: int,
    n: int,
    size: int,
    t0: int,
    T: int,
    pairs: int,
    off: int,
    begin: int,
    end: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    A_rows: wp.array(dtype=float),
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    tree_rank: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    L: wp.array(dtype=float),
):
    """The blocks of H in L's layout (``_place_blocks``; diagonal blocks lower triangle): the pool's first
    ``size`` floats zeroed, then A's entries, then ``Jᵀ G J`` of the rows with curvature."""
    for q in range(size):
        L[off + q] = 0.0
    for i in range(s, s + n):  # A: row i holds i's ancestors j (same tree, j < i)
        t = dof_tree[i]
        first = tree_dof_start[t]
        row = off + block_index[pairs + (t - t0) * T + (t - t0)] + (i - first) * tree_dof_count[t] - first
        rs = dof_row_start[i]
        di = dof_depth[i]
        j = i
        while j >= 0:
            L[row + j] = A_rows[rs + di - dof_depth[j]]
            j = dof_parent[j]
    for k in range(begin, end):
        c = world_constraints[k]
        G = c_G[c]
        if wp.ddot(G, G) == 0.0:
            continue
        nnz = c_nnz[c]
        second = second_walk(c, nnz, c_dof, dof_parent)
        tree_first = dof_tree[c_dof[c, 0]]
        if second == nnz or dof_tree[c_dof[c, second]] == tree_first:
            # one tree (one walk, or two branches): the lower triangle of its diagonal block
            first = tree_dof_start[tree_first]
            n_own = tree_dof_count[tree_first]
            diag = off + block_index[pairs + (tree_first - t0) * T + (tree_first - t0)] - first * n_own - first
            for e0 in range(0, nnz, 3):
                de, JE = _entry_chunk(c, e0, nnz, c_dof, c_J)
                GJE = JE * G
                f_begin = int(0)  # two branches: any pair may be in the lower triangle
                if second == nnz:
                    f_begin = e0  # one walk: the lower triangle is the entries from e on
                for f0 in range(f_begin, nnz, 3):
                    df, JF = _entry_chunk(c, f0, nnz, c_dof, c_J)
                    _add_tile(L, diag, n_own, de, df, GJE * wp.transpose(JF), True)
            continue
        # two trees: per walk, its own entries from e on (e's ancestors: the diagonal block's lower triangle),
        # and the whole other walk into the off-diagonal block when the walk's tree is eliminated later
        for side in range(2):
            walk_begin = 0
            walk_end = second
            other_begin = second
            other_end = nnz
            if side == 1:
                walk_begin = second
                walk_end = nnz
                other_begin = 0
                other_end = second
            own = dof_tree[c_dof[c, walk_begin]]
            other = dof_tree[c_dof[c, other_begin]]
            first = tree_dof_start[own]
            n_own = tree_dof_count[own]
            diag = off + block_index[pairs + (own - t0) * T + (own - t0)] - first * n_own - first
            later_own = tree_rank[own] > tree_rank[other]
            coupled = int(0)
            n_other = int(0)
            if later_own:
                n_other = tree_dof_count[other]
                coupled = (off + block_index[pairs + (own - t0) * T + (other - t0)] - first * n_other
                           - tree_dof_start[other])  # fmt: skip
            for e0 in range(walk_begin, walk_end, 3):
                de, JE = _entry_chunk(c, e0, walk_end, c_dof, c_J)
                GJE = JE * G
                for f0 in range(e0, walk_end, 3):
                    df, JF = _entry_chunk(c, f0, walk_end, c_dof, c_J)
                    _add_tile(L, diag, n_own, de, df, GJE * wp.transpose(JF), True)
                if later_own:
                    for f0 in range(other_begin, other_end, 3):
                        df, JF = _entry_chunk(c, f0, other_end, c_dof, c_J)
                        _add_tile(L, coupled, n_other, de, df, GJE * wp.transpose(JF), False)


@wp.func
def _schur_tile_row(
    L: wp.array(dtype=float), row: int, a: int, b0: int, b1: int, b2: int, lower: bool, s0: float, s1: float, s2: float
):
    """``L[row + b] −= s`` for the distinct columns b0 < b1 < b2 of one row of a Schur tile (clamped duplicates
    skipped); ``lower``: a diagonal block, whose columns past the row ``a`` are not stored."""
    if not lower or b0 <= a:
        L[row + b0] = L[row + b0] - s0
    if b1 > b0 and (not lower or b1 <= a):
        L[row + b1] = L[row + b1] - s1
    if b2 > b1 and (not lower or b2 <= a):
        L[row + b2] = L[row + b2] - s2


@wp.func
def _factor(
    t0: int,
    T: int,
    pairs: int,
    off: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_rank: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    L: wp.array(dtype=float),
    inv_diag: wp.array(dtype=float),
):
    """Right-looking block Cholesky in the elimination order: per tree k, ``L_kk = chol(H_kk)``,
    ``L_ik = H_ik L_kk⁻ᵀ`` for its later neighbours i, and ``H_ij −= L_ik L_jkᵀ`` for each pair of them.
    ``inv_diag`` [dof] keeps the reciprocals of L's diagonal (multiplications replace the divisions of the
    substitutions, which would chain their latencies). A non-positive pivot (H not positive definite:
    broken input) leaves NaN, which the line search flags."""
    for r in range(T):
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        D = off + block_index[pairs + k * T + k]
        for j in range(nk):  # dense Cholesky of the diagonal block
            d = L[D + j * nk + j]
            for p in range(j):
                d -= L[D + j * nk + p] * L[D + j * nk + p]
            d = wp.sqrt(d)
            L[D + j * nk + j] = d
            inv_d = 1.0 / d
            inv_diag[xk + j] = inv_d
            for i in range(j + 1, nk):
                acc = L[D + i * nk + j]
                for p in range(j):
                    acc -= L[D + i * nk + p] * L[D + j * nk + p]
                L[D + i * nk + j] = acc * inv_d
        row_k = pairs + k * T
        count = later_count[t0 + k]
        for m in range(count):  # L_ik = H_ik L_kk⁻ᵀ, row by row
            i = later[row_k + m]
            B = off + block_index[pairs + i * T + k]
            ni = tree_dof_count[t0 + i]
            for a in range(0, ni, 3):  # three rows at a time: independent sums share the loads of L_kk
                a1 = wp.min(a + 1, ni - 1)
                a2 = wp.min(a + 2, ni - 1)
                for j in range(nk):
                    s0 = L[B + a * nk + j]
                    s1 = L[B + a1 * nk + j]
                    s2 = L[B + a2 * nk + j]
                    for p in range(j):
                        d = L[D + j * nk + p]
                        s0 -= L[B + a * nk + p] * d
                        s1 -= L[B + a1 * nk + p] * d
                        s2 -= L[B + a2 * nk + p] * d
                    inv = inv_diag[xk + j]
                    L[B + a * nk + j] = s0 * inv
                    if a1 > a:
                        L[B + a1 * nk + j] = s1 * inv
                    if a2 > a1:
                        L[B + a2 * nk + j] = s2 * inv
        for m in range(count):  # Schur complement on the stored part of each neighbour pair
            i = later[row_k + m]
            Bi = off + block_index[pairs + i * T + k]
            for m2 in range(count):
                j = later[row_k + m2]
                if tree_rank[t0 + j] > tree_rank[t0 + i]:
                    continue
                Bj = off + block_index[pairs + j * T + k]
                target = off + block_index[pairs + i * T + j]  # rows of i, columns of j
                nj = tree_dof_count[t0 + j]
                na = tree_dof_count[t0 + i]
                for a in range(0, na, 3):  # 3×3 tiles: nine independent sums share six loads per p
                    a1 = wp.min(a + 1, na - 1)
                    a2 = wp.min(a + 2, na - 1)
                    nb = nj
                    if i == j:
                        nb = a2 + 1  # the diagonal block: lower triangle only
                    for b in range(0, nb, 3):
                        b1 = wp.min(b + 1, nb - 1)
                        b2 = wp.min(b + 2, nb - 1)
                        s00 = float(0.0)
                        s01 = float(0.0)
                        s02 = float(0.0)
                        s10 = float(0.0)
                        s11 = float(0.0)
                        s12 = float(0.0)
                        s20 = float(0.0)
                        s21 = float(0.0)
                        s22 = float(0.0)
                        for p in range(nk):
                            x0 = L[Bi + a * nk + p]
                            x1 = L[Bi + a1 * nk + p]
                            x2 = L[Bi + a2 * nk + p]
                            y0 = L[Bj + b * nk + p]
                            y1 = L[Bj + b1 * nk + p]
                            y2 = L[Bj + b2 * nk + p]
                            s00 += x0 * y0
                            s01 += x0 * y1
                            s02 += x0 * y2
                            s10 += x1 * y0
                            s11 += x1 * y1
                            s12 += x1 * y2
                            s20 += x2 * y0
                            s21 += x2 * y1
                            s22 += x2 * y2
                        _schur_tile_row(L, target + a * nj, a, b, b1, b2, i == j, s00, s01, s02)
                        if a1 > a:
                            _schur_tile_row(L, target + a1 * nj, a1, b, b1, b2, i == j, s10, s11, s12)
                        if a2 > a1:
                            _schur_tile_row(L, target + a2 * nj, a2, b, b1, b2, i == j, s20, s21, s22)


@wp.func
def _solve(
    t0: int,
    T: int,
    pairs: int,
    off: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    L: wp.array(dtype=float),
    inv_diag: wp.array(dtype=float),
    x: wp.array(dtype=float),
):
    """``x ← (L Lᵀ)⁻¹ x`` over the world's dofs: forward substitution in the elimination order (each solved
    block updates its later neighbours), then backward (each block gathers from its later neighbours)."""
    for r in range(T):
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        D = off + block_index[pairs + k * T + k]
        for j in range(nk):
            acc = x[xk + j]
            for p in range(j):
                acc -= L[D + j * nk + p] * x[xk + p]
            x[xk + j] = acc * inv_diag[xk + j]
        for m in range(later_count[t0 + k]):
            i = later[pairs + k * T + m]
            xi = tree_dof_start[t0 + i]
            B = off + block_index[pairs + i * T + k]
            ni = tree_dof_count[t0 + i]
            for a in range(0, ni, 3):  # three rows at a time: independent sums share the loads of x_k
                a1 = wp.min(a + 1, ni - 1)
                a2 = wp.min(a + 2, ni - 1)
                s0 = float(0.0)
                s1 = float(0.0)
                s2 = float(0.0)
                for p in range(nk):
                    xp = x[xk + p]
                    s0 += L[B + a * nk + p] * xp
                    s1 += L[B + a1 * nk + p] * xp
                    s2 += L[B + a2 * nk + p] * xp
                x[xi + a] = x[xi + a] - s0
                if a1 > a:
                    x[xi + a1] = x[xi + a1] - s1
                if a2 > a1:
                    x[xi + a2] = x[xi + a2] - s2
    for r2 in range(T):
        r = T - 1 - r2
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        D = off + block_index[pairs + k * T + k]
        count = later_count[t0 + k]
        for p in range(0, nk, 3):  # x_k −= Σ_i L_ikᵀ x_i, three entries of x_k at a time, stored once
            p1 = wp.min(p + 1, nk - 1)
            p2 = wp.min(p + 2, nk - 1)
            s0 = x[xk + p]
            s1 = x[xk + p1]
            s2 = x[xk + p2]
            for m in range(count):
                i = later[pairs + k * T + m]
                xi = tree_dof_start[t0 + i]
                B = off + block_index[pairs + i * T + k]
                for a in range(tree_dof_count[t0 + i]):
                    xa = x[xi + a]
                    s0 -= L[B + a * nk + p] * xa
                    s1 -= L[B + a * nk + p1] * xa
                    s2 -= L[B + a * nk + p2] * xa
            x[xk + p] = s0
            if p1 > p:
                x[xk + p1] = s1
            if p2 > p1:
                x[xk + p2] = s2
        for j2 in range(nk):
            j = nk - 1 - j2
            acc = x[xk + j]
            for p in range(j + 1, nk):
                acc -= L[D + p * nk + j] * x[xk + p]
            x[xk + j] = acc * inv_diag[xk + j]


@wp.kernel
def world_block_cholesky(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_tree_start: wp.array(dtype=wp.int32),
    world_block_offset: wp.array(dtype=wp.int32),
    world_pair_offset: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    reuse_order: int,
    world_active: wp.array(dtype=wp.int32),
    world_tree_local: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    world_constraint_count: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    A_rows: wp.array(dtype=float),
    grad: wp.array(dtype=float),
    # outputs (pattern, later, block_index, tree_degree, tree_rank, tree_order, tree_later_count, L, inv_diag:
    # scratch)
    pattern: wp.array(dtype=wp.uint32),
    later: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    tree_degree: wp.array(dtype=wp.int32),
    tree_rank: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    tree_later_count: wp.array(dtype=wp.int32),
    world_pool_used: wp.array(dtype=wp.int32),
    L: wp.array(dtype=float),
    inv_diag: wp.array(dtype=float),
    dv_out: wp.array(dtype=float),
):
    """One thread per active block-Cholesky world (not solved by the tree LDLᵀ this step):
    ``Δv = −H⁻¹ ∇ℓ`` with ``H = A + Jᵀ G J`` factored by tree blocks in minimum-degree order.
    ``reuse_order = 1``: the rows with curvature are those of this world's last solve (the stiction model's
    direction, whose G differs only on rows that have curvature either way), so the graph, the order and
    the block placement of that solve (``world_pool_used``: the floats its blocks take) are kept."""
    w = wp.tid()
    off = world_block_offset[w]
    if off < 0 or world_active[w] == 0 or world_tree_local[w] == 1:
        return
    s = world_dof_start[w]
    n = world_dof_start[w + 1] - s
    t0 = world_tree_start[w]
    T = world_tree_start[w + 1] - t0
    pairs = world_pair_offset[w]
    begin = world_constraint_start[w]
    end = begin + world_constraint_count[w]
    size = world_pool_used[w]
    if reuse_order == 0:
        _mark_rows_graph(t0, T, pairs, begin, end, world_constraints, c_G, c_nnz, c_dof, dof_tree, dof_parent,
                         pattern)  # fmt: skip
        _minimum_degree_order(t0, T, pairs, pattern, tree_degree, tree_rank, tree_order, later, tree_later_count)
        size = _place_blocks(t0, T, pairs, tree_dof_count, tree_order, later, tree_later_count, block_index)
        world_pool_used[w] = size
    _assemble(s, n, size, t0, T, pairs, off, begin, end, tree_dof_start, tree_dof_count, dof_tree, dof_parent,
              dof_depth, dof_row_start, A_rows, world_constraints, c_G, c_nnz, c_dof, c_J, tree_rank, block_index,
              L)  # fmt: skip
    _factor(t0, T, pairs, off, tree_dof_start, tree_dof_count, tree_rank, tree_order, later, tree_later_count,
            block_index, L, inv_diag)  # fmt: skip
    for i in range(s, s + n):
        dv_out[i] = -grad[i]
    _solve(t0, T, pairs, off, tree_dof_start, tree_dof_count, tree_order, later, tree_later_count, block_index, L,
           inv_diag, dv_out)  # fmt: skip
