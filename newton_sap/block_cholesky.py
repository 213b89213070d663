"""Tree-block sparse Cholesky of the Newton systems ``H Δv = −∇ℓ`` of worlds too large for a dense factor.

``H = A + Jᵀ G J`` of a world is block-sparse by tree: A is block-diagonal (one block per tree) and a
constraint row between two trees (a contact between two objects, a weld) couples only their two blocks.
As in Drake's SAP, the blocks are the supernodes of a sparse Cholesky: the trees are ordered by minimum
degree on the graph of coupled pairs (fill included), and ``H = Uᵀ U`` is factored block by block,
skipping the blocks that stay zero. A 50-sphere pile (50 trees of 6 dofs, about 90 touching pairs)
factors with about 170 off-diagonal blocks, some 0.3 Mflop against 9 for a dense 300×300 Cholesky, and
gives the exact Newton direction that conjugate gradients approach in tens of iterations.

One thread per world (``world_block_cholesky``; on the CPU one thread for all worlds in turn) runs the
whole solve each Newton iteration: the graph of the rows with curvature, the ordering (kept while the
graph stays the world's last ordered one), the assembly of the pattern's blocks (A's tree blocks come
chunked once per step, ``tree_blocks_in_chunks``, and are copied), the factorization and the two triangular
solves; then, with stiction prediction, the stiction model's rows and, where some row is predicted, the model's
direction from the H kept before the factorization plus ``Jᵀ (G̃ − G) J`` of the predicted rows (same order).
The tree graph is a bitset row per tree (``⌈T/32⌉`` words), so clearing it, the degrees and a tree's remaining
neighbours take a word at a time.

The arithmetic works on chunks, 8-float vectors (``vec8f``): every row of a block of U is stored as the
chunks of its columns' tree (a 6-dof body's row is one chunk, its last two lanes zero), U's blocks are
packed block row by block row in elimination order (``_place_blocks``), and the right-hand side is
chunked by tree as well. U's rows (the upper factor, not L's columns) make the factorization and the
forward substitution row updates ``row −= s · row'``, one vector multiply-add per chunk where a scalar loop
runs a multiply-add per entry; the Schur updates are sums of 8×8 outer products of chunks; the assembly adds
each entry's ``(J_eᵀ G) J`` to its row as three chunk multiply-adds, J's components gathered per chunk in
registers. Measured on the 64-world landing pile (its launches of one step relaunched on frozen inputs):
4.60 → 2.85 ms per Newton solve against the scalar entry-by-entry version of session 18 (factorization
1.9 → 0.9 ms, assembly with zeroing 1.8 → 1.0), and 78 → 61 ms per replayed step.
"""

from __future__ import annotations

import warp as wp

from .factorization import BREAKDOWN_FIRST_SHIFT, BREAKDOWN_SHIFT_GROWTH, BREAKDOWN_SHIFTS
from .jacobian import second_walk
from .stiction_prediction import stiction_model_row, world_predicts

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

# a chunk: eight consecutive entries of a row of U (or of the right-hand side), the unit of the arithmetic
vec8f = wp.types.vector(length=8, dtype=wp.float32)
mat88f = wp.types.matrix(shape=(8, 8), dtype=wp.float32)  # a Schur tile: 8 rows × a chunk


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
def _chunks(n: int):
    """8-float chunks of a row of n entries (the last one zero-padded)."""
    return (n + 7) // 8


@wp.func
def _lanes_from(first: int):
    """Chunk mask: 1 in the lanes ≥ ``first``, 0 in those before."""
    mask = vec8f()
    for lane in range(8):
        if lane >= first:
            mask[lane] = 1.0
    return mask


@wp.func
def _lane(lane: int):
    """Chunk with 1 in ``lane`` and 0 elsewhere (built lane by lane, so it stays in registers: writing one lane
    of a chunk in place would store and reload it)."""
    one = vec8f()
    for q in range(8):
        if q == lane:
            one[q] = 1.0
    return one


@wp.func
def _sum8(v: vec8f):
    """Sum of a chunk's lanes as a tree of adds (three dependent adds, not seven)."""
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))


@wp.func
def _entry(U: wp.array(dtype=vec8f), row: int, col: int):
    """Entry ``col`` of the chunked row that starts at chunk ``row``."""
    return U[row + col // 8][col % 8]


@wp.func
def _add_entry(U: wp.array(dtype=vec8f), row: int, col: int, value: float):
    """Adds ``value`` to entry ``col`` of the chunked row that starts at chunk ``row``."""
    U[row + col // 8] = U[row + col // 8] + value * _lane(col % 8)


@wp.func
def _row_trees(c: int, nnz: int, c_dof: wp.array2d(dtype=wp.int32), dof_tree: wp.array(dtype=wp.int32)):
    """The trees of row c (``nnz ≥ 1`` entries; a row without any keeps the entries of an earlier one): its first
    entry's, and its last entry's where that differs (else -1). A row's entries are at most two chain walks, each
    in one tree."""
    first = dof_tree[c_dof[c, 0]]
    last = dof_tree[c_dof[c, nnz - 1]]
    if last == first:
        last = -1
    return first, last


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
        if wp.ddot(G, G) == 0.0 or c_nnz[c] == 0:
            continue  # no curvature, or no entries (a contact whose Jacobian vanishes): no coupling
        ta, tb = _row_trees(c, c_nnz[c], c_dof, dof_tree)
        if tb >= 0:
            _pattern_add(pattern, pairs + (ta - t0) * W, tb - t0)
            _pattern_add(pattern, pairs + (tb - t0) * W, ta - t0)


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
    """Offsets (in chunks) of U's blocks after the world's factor base, ``block_index[pairs + i·T + k]`` for the
    rows of tree k and the columns of tree i (i = k: the diagonal block; else i is eliminated after k), each
    row ``_chunks(n_i)`` chunks long: block row by block row in elimination order, the diagonal block first,
    so the factorization and the forward substitution sweep the pool forwards. Returns the chunks used."""
    cursor = int(0)
    for r in range(T):
        k = tree_order[t0 + r]
        nk = tree_dof_count[t0 + k]
        block_index[pairs + k * T + k] = cursor
        cursor += nk * _chunks(nk)
        for m in range(later_count[t0 + k]):
            i = later[pairs + k * T + m]
            block_index[pairs + i * T + k] = cursor
            cursor += nk * _chunks(tree_dof_count[t0 + i])
    return cursor


@wp.func
def _start_blocks(
    size: int,
    t0: int,
    T: int,
    pairs: int,
    base: int,
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    tree_A_offset: wp.array(dtype=wp.int32),
    A_chunks: wp.array(dtype=vec8f),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
):
    """The blocks of A in U's layout (``_place_blocks``): per block row, its diagonal block copied from A's
    (``tree_blocks_in_chunks``, the upper triangle; the factorization reads no other) and its coupling blocks
    zeroed, for :func:`_add_rows` to add ``Jᵀ G J``."""
    zero = vec8f()
    for r in range(T):  # block rows in elimination order: A's diagonal block, then the coupling blocks
        k = tree_order[t0 + r]
        nk = tree_dof_count[t0 + k]
        D = base + block_index[pairs + k * T + k]
        diag_size = nk * _chunks(nk)
        A0 = tree_A_offset[t0 + k]
        for q in range(diag_size):
            U[D + q] = A_chunks[A0 + q]
        row_end = base + size
        if r + 1 < T:
            k_next = tree_order[t0 + r + 1]
            row_end = base + block_index[pairs + k_next * T + k_next]
        for q in range(D + diag_size, row_end):
            U[q] = zero


@wp.func
def _add_rows(
    t0: int,
    T: int,
    pairs: int,
    base: int,
    begin: int,
    end: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_G_base: wp.array(dtype=wp.mat33),
    difference: int,
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    tree_rank: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
):
    """``Jᵀ G J`` of the world's rows (``difference = 1``: ``Jᵀ (G − G_base) J``, the rows where they differ) added
    to the blocks of H in U's layout (coupling blocks in the rows of the tree eliminated first). Per row and column
    chunk of each of its trees, J's x, y and z over that chunk are gathered in registers, and each entry e adds
    ``(J_eᵀ G) J`` to that chunk of its dof's row (in its tree's diagonal block, or in the coupling block where its
    tree comes first): three chunk multiply-adds."""
    for k in range(begin, end):
        c = world_constraints[k]
        G = c_G[c]
        if difference == 1:
            G = G - c_G_base[c]
        if wp.ddot(G, G) == 0.0:
            continue
        nnz = c_nnz[c]
        second = second_walk(c, nnz, c_dof, dof_parent)
        if second < nnz and dof_tree[c_dof[c, second]] == dof_tree[c_dof[c, 0]]:
            second = nnz  # two branches of one tree: one range of entries
        for side in range(2):  # the columns of the first walk's tree, then of the second's
            own_begin = int(0)
            own_end = second
            other_begin = second
            other_end = nnz
            if side == 1:
                own_begin = second
                own_end = nnz
                other_begin = 0
                other_end = second
            if own_begin == own_end:
                continue
            own = dof_tree[c_dof[c, own_begin]]
            own_first = tree_dof_start[own]
            P = _chunks(tree_dof_count[own])
            diag = base + block_index[pairs + (own - t0) * T + (own - t0)]
            coupled = int(-1)  # the coupling block where the other tree comes first: its rows take these columns
            other_first = int(0)
            if other_begin < other_end:
                other = dof_tree[c_dof[c, other_begin]]
                if tree_rank[other] < tree_rank[own]:
                    coupled = base + block_index[pairs + (own - t0) * T + (other - t0)]
                    other_first = tree_dof_start[other]
            for q in range(P):  # column chunk q of own: J's x, y, z over it, then each entry's row
                jx = vec8f()
                jy = vec8f()
                jz = vec8f()
                for e in range(own_begin, own_end):
                    col = c_dof[c, e] - own_first - 8 * q
                    if col >= 0 and col < 8:
                        one = _lane(col)
                        Je = c_J[c, e]
                        jx += Je[0] * one
                        jy += Je[1] * one
                        jz += Je[2] * one
                for e in range(own_begin, own_end):
                    col = c_dof[c, e] - own_first  # its row in the diagonal block: no chunk left of the diagonal's
                    if q >= col // 8:
                        row = diag + col * P + q
                        g = wp.transpose(G) * c_J[c, e]  # (J_eᵀ G)ᵀ
                        U[row] = U[row] + g[0] * jx + g[1] * jy + g[2] * jz
                if coupled >= 0:
                    for e in range(other_begin, other_end):
                        row = coupled + (c_dof[c, e] - other_first) * P + q
                        g = wp.transpose(G) * c_J[c, e]
                        U[row] = U[row] + g[0] * jx + g[1] * jy + g[2] * jz


@wp.func
def _factor(
    t0: int,
    T: int,
    pairs: int,
    base: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_rank: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
    inv_diag: wp.array(dtype=float),
):
    """Block Cholesky ``H = Uᵀ U`` in the elimination order, a chunk of a row at a time: per tree k,
    ``U_kk = chol(H_kk)ᵀ`` (row p: ``(H_kk[p, :] − Σ_{q<p} U_kk[q, p] U_kk[q, :]) / U_kk[p, p]``, the lanes left
    of p in its chunk zeroed), ``U_ki = U_kk⁻ᵀ H_ki`` for its later neighbours i, and ``H_ij −= U_kiᵀ U_kj`` on
    the rows of the earlier of each pair of them (8×8 tiles: sums of outer products of chunks).
    ``inv_diag`` [dof] keeps ``1 / U[p, p]``; the chunks left of the diagonal's are not read again. Returns 1 where
    a pivot was not positive (H not positive definite in float32; U then holds NaN), else 0."""
    broken = int(0)
    for r in range(T):
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        Pk = _chunks(nk)
        D = base + block_index[pairs + k * T + k]
        row_k = pairs + k * T
        count = later_count[t0 + k]
        for p in range(nk):  # row p of U_kk, then of every U_ki = U_kk⁻ᵀ H_ki (independent sums, side by side)
            cp = p // 8
            lp = p % 8
            row = D + p * Pk
            acc = U[row + cp]
            for q in range(p):
                above = U[D + q * Pk + cp]
                acc = acc - above[lp] * above
            if not acc[lp] > 0.0:
                broken = 1
            inv = 1.0 / wp.sqrt(acc[lp])
            inv_diag[xk + p] = inv
            U[row + cp] = wp.cw_mul(acc, _lanes_from(lp)) * inv
            for cc in range(cp + 1, Pk):
                acc = U[row + cc]
                for q in range(p):
                    acc = acc - _entry(U, D + q * Pk, p) * U[D + q * Pk + cc]
                U[row + cc] = acc * inv
            for m in range(count):
                i = later[row_k + m]
                Pi = _chunks(tree_dof_count[t0 + i])
                B = base + block_index[pairs + i * T + k]
                for cc in range(Pi):
                    acc = U[B + p * Pi + cc]
                    for q in range(p):
                        acc = acc - _entry(U, D + q * Pk, p) * U[B + q * Pi + cc]
                    U[B + p * Pi + cc] = acc * inv
        for m in range(count):  # Schur complement: rows of i, columns of j, i not after j
            i = later[row_k + m]
            ni = tree_dof_count[t0 + i]
            Pi = _chunks(ni)
            Bi = base + block_index[pairs + i * T + k]
            for m2 in range(count):
                j = later[row_k + m2]
                if tree_rank[t0 + j] < tree_rank[t0 + i]:
                    continue
                Pj = _chunks(tree_dof_count[t0 + j])
                Bj = base + block_index[pairs + j * T + k]
                target = base + block_index[pairs + j * T + i]  # j = i: i's diagonal block
                for ac in range(Pi):  # 8 rows of i × a chunk of j's columns: Σ_p of outer products
                    c_first = int(0)
                    if i == j:
                        c_first = ac  # the diagonal block: its upper part
                    for cc in range(c_first, Pj):
                        S = mat88f()
                        for p in range(nk):
                            S += wp.outer(U[Bi + p * Pi + ac], U[Bj + p * Pj + cc])
                        for lane in range(8):  # constant bounds: unrolled, S indexed by constants only
                            if 8 * ac + lane < ni:
                                row = target + (8 * ac + lane) * Pj + cc
                                U[row] = U[row] - S[lane]
    return broken


@wp.func
def _scale_diagonal(
    t0: int,
    T: int,
    pairs: int,
    base: int,
    tree_dof_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
    shift: float,
):
    """``H_ii ← (1 + shift) H_ii`` on the diagonal of the assembled H in U's blocks."""
    for k in range(T):
        nk = tree_dof_count[t0 + k]
        Pk = _chunks(nk)
        D = base + block_index[pairs + k * T + k]
        for p in range(nk):
            _add_entry(U, D + p * Pk, p, shift * _entry(U, D + p * Pk, p))


@wp.func
def _assemble_and_factor(
    model: int,
    keep_copy: int,
    size: int,
    keep: int,
    t0: int,
    T: int,
    pairs: int,
    base: int,
    begin: int,
    end: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    tree_A_offset: wp.array(dtype=wp.int32),
    A_chunks: wp.array(dtype=vec8f),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_G_model: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    tree_rank: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
    inv_diag: wp.array(dtype=float),
):
    """U's blocks set to ``H = A + Jᵀ G J`` (``model = 0``; with ``keep_copy``, H also kept ``keep`` chunks on, for
    the stiction model) or to the stiction model's ``H̃ = H + Jᵀ (G̃ − G) J`` of the predicted rows from that copy
    (``model = 1``), and factored (:func:`_factor`). Where the float32 factorization breaks down, H is assembled
    again with its diagonal scaled by ``1 + δ`` (δ = ``BREAKDOWN_FIRST_SHIFT``, growing by ``BREAKDOWN_SHIFT_GROWTH``,
    up to ``BREAKDOWN_SHIFTS`` times) and factored anew: the direction of a positive definite matrix, so still a
    descent direction, and Newton's in all but the directions float32 cannot resolve. A long light chain touching
    another body (24 links of 0.1 kg and 5 cm under a box, cond(D H D) ≈ 6e7 in float64) broke the factorization, and
    its NaN direction failed the world in every step. Where every shift fails (NaN in H) U keeps NaN, and the world
    fails."""
    broken = int(1)
    shift = float(0.0)
    for attempt in range(BREAKDOWN_SHIFTS + 1):
        if broken == 1:
            if model == 0:
                _start_blocks(size, t0, T, pairs, base, tree_dof_count, tree_order, tree_A_offset, A_chunks,
                              block_index, U)  # fmt: skip
                _add_rows(t0, T, pairs, base, begin, end, tree_dof_start, tree_dof_count, dof_tree, dof_parent,
                          world_constraints, c_G, c_G, 0, c_nnz, c_dof, c_J, tree_rank, block_index, U)  # fmt: skip
                if keep_copy == 1:
                    for q in range(size):
                        U[base + keep + q] = U[base + q]
            else:
                for q in range(size):
                    U[base + q] = U[base + keep + q]
                _add_rows(t0, T, pairs, base, begin, end, tree_dof_start, tree_dof_count, dof_tree, dof_parent,
                          world_constraints, c_G_model, c_G, 1, c_nnz, c_dof, c_J, tree_rank, block_index,
                          U)  # fmt: skip
            if attempt > 0:
                _scale_diagonal(t0, T, pairs, base, tree_dof_count, block_index, U, shift)
            broken = _factor(t0, T, pairs, base, tree_dof_start, tree_dof_count, tree_rank, tree_order, later,
                             later_count, block_index, U, inv_diag)  # fmt: skip
            if attempt == 0:
                shift = BREAKDOWN_FIRST_SHIFT
            else:
                shift = shift * BREAKDOWN_SHIFT_GROWTH


@wp.func
def _solve(
    t0: int,
    T: int,
    pairs: int,
    base: int,
    X: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_chunk_start: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    later: wp.array(dtype=wp.int32),
    later_count: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
    inv_diag: wp.array(dtype=float),
):
    """``x ← (Uᵀ U)⁻¹ x`` on the world's right-hand side in chunks (tree t's at ``X + tree_chunk_start[t]``):
    forward ``Uᵀ y = x`` in the elimination order (each solved block updates its later neighbours' chunks),
    then backward ``U x = y`` (each block gathers its later neighbours' dot products). A tree's chunk being
    solved stays in a register; its lanes are read and set through one-hot chunks (``_lane``)."""
    for r in range(T):
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        Pk = _chunks(nk)
        D = base + block_index[pairs + k * T + k]
        Xk = X + tree_chunk_start[t0 + k]
        for cc in range(Pk):  # chunk cc −= Σ_p y_p U_kk[p, cc], solving its own lanes on the way
            xc = U[Xk + cc]
            for p in range(wp.min(nk, 8 * cc + 8)):
                row = U[D + p * Pk + cc]  # zero left of p
                if p < 8 * cc:
                    xc = xc - _entry(U, Xk, p) * row
                else:
                    one = _lane(p - 8 * cc)
                    y = xc[p - 8 * cc] * inv_diag[xk + p]
                    xc = xc - y * row
                    xc = xc - wp.cw_mul(xc, one) + y * one
            U[Xk + cc] = xc
        for m in range(later_count[t0 + k]):
            i = later[pairs + k * T + m]
            Pi = _chunks(tree_dof_count[t0 + i])
            B = base + block_index[pairs + i * T + k]
            Xi = X + tree_chunk_start[t0 + i]
            for cc in range(Pi):
                acc = U[Xi + cc]
                for p in range(nk):
                    acc = acc - _entry(U, Xk, p) * U[B + p * Pi + cc]
                U[Xi + cc] = acc
    for r2 in range(T):
        r = T - 1 - r2
        k = tree_order[t0 + r]
        xk = tree_dof_start[t0 + k]
        nk = tree_dof_count[t0 + k]
        Pk = _chunks(nk)
        D = base + block_index[pairs + k * T + k]
        Xk = X + tree_chunk_start[t0 + k]
        count = later_count[t0 + k]
        for cc2 in range(Pk):
            cc = Pk - 1 - cc2
            lanes = wp.min(8, nk - 8 * cc)
            S = mat88f()  # row p's products with the later trees' x, summed lane-wise (lane p − 8cc)
            for m in range(count):
                i = later[pairs + k * T + m]
                Pi = _chunks(tree_dof_count[t0 + i])
                B = base + block_index[pairs + i * T + k]
                Xi = X + tree_chunk_start[t0 + i]
                for c2 in range(Pi):
                    x = U[Xi + c2]
                    for lane in range(8):
                        if lane < lanes:
                            S[lane] = S[lane] + wp.cw_mul(U[B + (8 * cc + lane) * Pi + c2], x)
            gathered = vec8f()
            for lane in range(8):
                gathered[lane] = _sum8(S[lane])
            xc = U[Xk + cc] - gathered  # y_k −= Σ_i U_ki x_i
            for lane2 in range(lanes):  # U_kk x_k = y_k from the chunk's last row up
                lane = lanes - 1 - lane2
                p = 8 * cc + lane
                s = _sum8(wp.cw_mul(wp.cw_mul(U[D + p * Pk + cc], _lanes_from(lane + 1)), xc))
                for c2 in range(cc + 1, Pk):
                    s += _sum8(wp.cw_mul(U[D + p * Pk + c2], U[Xk + c2]))
                one = _lane(lane)
                xc = xc - wp.cw_mul(xc, one) + ((xc[lane] - s) * inv_diag[xk + p]) * one
            U[Xk + cc] = xc


@wp.func
def _load_rhs(
    X: int,
    t0: int,
    T: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_chunk_start: wp.array(dtype=wp.int32),
    grad: wp.array(dtype=float),
    U: wp.array(dtype=vec8f),
):
    """The right-hand side ``−∇ℓ`` of the world's trees in chunks (tree t's at ``X + tree_chunk_start[t]``), each
    chunk built in a register."""
    for t in range(t0, t0 + T):
        first = tree_dof_start[t]
        nt = tree_dof_count[t]
        for cc in range(_chunks(nt)):
            chunk = vec8f()
            for lane in range(wp.min(8, nt - 8 * cc)):
                chunk -= grad[first + 8 * cc + lane] * _lane(lane)
            U[X + tree_chunk_start[t] + cc] = chunk


@wp.func
def _store_solution(
    X: int,
    t0: int,
    T: int,
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_chunk_start: wp.array(dtype=wp.int32),
    U: wp.array(dtype=vec8f),
    dv_out: wp.array(dtype=float),
):
    """The solved chunks of the world's trees into ``dv_out``."""
    for t in range(t0, t0 + T):
        first = tree_dof_start[t]
        nt = tree_dof_count[t]
        for cc in range(_chunks(nt)):
            chunk = U[X + tree_chunk_start[t] + cc]
            for lane in range(wp.min(8, nt - 8 * cc)):
                dv_out[first + 8 * cc + lane] = chunk[lane]


@wp.kernel
def tree_blocks_in_chunks(
    # model
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_A_offset: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    A_rows: wp.array(dtype=float),
    # outputs
    A_chunks: wp.array(dtype=vec8f),
):
    """Per tree of a block-Cholesky world (``tree_A_offset`` ≥ 0): its block of A in U's chunked row layout,
    ``A_chunks[tree_A_offset + p·P : … + P]`` for its dof p (P = its chunks per row), the upper triangle: the
    entry (j, i) of each dof i and ancestor j (A's rows hold each dof's ancestors), zeros elsewhere. Once per
    step (A is the step's), so that each Newton solve copies the tree's diagonal block instead of gathering it."""
    t = wp.tid()
    off = tree_A_offset[t]
    if off < 0:
        return
    first = tree_dof_start[t]
    n = tree_dof_count[t]
    P = _chunks(n)
    zero = vec8f()
    for q in range(n * P):
        A_chunks[off + q] = zero
    for i in range(first, first + n):
        rs = dof_row_start[i]
        di = dof_depth[i]
        j = i
        while j >= 0:
            _add_entry(A_chunks, off + (j - first) * P, i - first, A_rows[rs + di - dof_depth[j]])
            j = dof_parent[j]


@wp.kernel
def world_block_cholesky(
    # model
    world_dof_start: wp.array(dtype=wp.int32),
    world_tree_start: wp.array(dtype=wp.int32),
    world_block_offset: wp.array(dtype=wp.int32),
    world_pair_offset: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    tree_chunk_start: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    tree_A_offset: wp.array(dtype=wp.int32),
    # inputs
    shared_pool: int,
    keep: int,
    predict: int,
    world_active: wp.array(dtype=wp.int32),
    world_tree_local: wp.array(dtype=wp.int32),
    world_plain_newton: wp.array(dtype=wp.int32),
    world_constraint_start: wp.array(dtype=wp.int32),
    world_constraint_count: wp.array(dtype=wp.int32),
    world_constraints: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_gamma: wp.array(dtype=wp.vec3),
    c_G: wp.array(dtype=wp.mat33),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    A_chunks: wp.array(dtype=vec8f),
    grad: wp.array(dtype=float),
    # outputs (scratch; the order's arrays, world_pool_used and last_graph are kept for the next launch)
    pattern: wp.array(dtype=wp.uint32),
    later: wp.array(dtype=wp.int32),
    block_index: wp.array(dtype=wp.int32),
    tree_degree: wp.array(dtype=wp.int32),
    tree_rank: wp.array(dtype=wp.int32),
    tree_order: wp.array(dtype=wp.int32),
    tree_later_count: wp.array(dtype=wp.int32),
    world_pool_used: wp.array(dtype=wp.int32),
    last_graph: wp.array(dtype=wp.uint32),
    U: wp.array(dtype=vec8f),
    inv_diag: wp.array(dtype=float),
    dv_out: wp.array(dtype=float),
    c_G_model_out: wp.array(dtype=wp.mat33),
    world_predicted_out: wp.array(dtype=wp.int32),
    world_slope_out: wp.array(dtype=float),
):
    """``Δv = −H⁻¹ ∇ℓ`` of each active block-Cholesky world not solved by the tree LDLᵀ this step, with
    ``H = A + Jᵀ G J = Uᵀ U`` factored by tree blocks in minimum-degree order, in the world's pool from chunk
    X: the right-hand side in chunks, then U's blocks. The order and the block placement (``world_pool_used``:
    the chunks its blocks take) are those of the world's last ordered solve where its tree graph (kept in
    ``last_graph``) is the same, and are computed otherwise.

    ``predict = 1`` (stiction prediction on): right after its Newton direction, in the same pool, each world not
    flagged in ``world_plain_newton`` models the rows that ``Δv`` takes through stiction by their linear branch
    (``stiction_prediction.stiction_model_row``: ``c_G_model`` for every row of the world) and, where some row is,
    solves for the model's direction ``Δṽ = −H̃⁻¹ ∇ℓ_model`` with the same order (G̃ has curvature on the same rows)
    and takes it as ``Δv`` where it descends, ``Δṽᵀ∇ℓ < 0`` (``world_predicted = 2``, ``world_slope``). H is kept
    before its factorization ``keep`` chunks after the blocks (the pool has room for both), so ``H̃`` is that copy
    plus ``Jᵀ (G̃ − G) J`` of the predicted rows alone; the row data is still in cache from the Newton solve.

    ``shared_pool = 0``: one thread per world (launched with the world count), each in its own pool
    (``world_block_offset``). ``shared_pool = 1`` (the CPU, launched with one thread, whose launches run their
    threads one after another anyway): the thread solves every world in turn in one pool, from chunk 0, as a
    world's factor is not needed after its solve. The CPU's pool is then one world's (and its kept H): 0.5 MB
    instead of 482 MB for 1024 50-sphere piles (the step time is unchanged)."""
    worlds = world_dof_start.shape[0] - 1
    step = worlds  # a thread per world: world tid alone
    if shared_pool == 1:
        if wp.tid() > 0:
            return  # one pool: one thread
        step = 1  # every world in turn
    for w in range(wp.tid(), worlds, step):
        X = int(0)
        if shared_pool == 0:
            X = world_block_offset[w]
        if world_block_offset[w] < 0 or world_active[w] == 0 or world_tree_local[w] == 1:
            continue
        t0 = world_tree_start[w]
        T = world_tree_start[w + 1] - t0
        pairs = world_pair_offset[w]
        begin = world_constraint_start[w]
        end = begin + world_constraint_count[w]
        base = X + tree_chunk_start[t0 + T - 1] + _chunks(tree_dof_count[t0 + T - 1])
        size = world_pool_used[w]
        _mark_rows_graph(t0, T, pairs, begin, end, world_constraints, c_G, c_nnz, c_dof, dof_tree, pattern)
        W = _pattern_words(T)
        same = size > 0
        for q in range(T * W):  # the graph of the last ordered solve: keep its order and placement
            if pattern[pairs + q] != last_graph[pairs + q]:
                same = False
                last_graph[pairs + q] = pattern[pairs + q]
        if not same:
            _minimum_degree_order(t0, T, pairs, pattern, tree_degree, tree_rank, tree_order, later, tree_later_count)
            size = _place_blocks(t0, T, pairs, tree_dof_count, tree_order, later, tree_later_count, block_index)
            world_pool_used[w] = size
        keep_copy = int(0)  # H kept beside the blocks (``keep`` chunks on) for the stiction model's
        if predict == 1 and world_predicts(world_plain_newton[w]):
            keep_copy = 1
        _assemble_and_factor(0, keep_copy, size, keep, t0, T, pairs, base, begin, end, tree_dof_start, tree_dof_count,
                             tree_order, tree_A_offset, A_chunks, dof_tree, dof_parent, world_constraints, c_G,
                             c_G_model_out, c_nnz, c_dof, c_J, tree_rank, later, tree_later_count, block_index, U,
                             inv_diag)  # fmt: skip
        _load_rhs(X, t0, T, tree_dof_start, tree_dof_count, tree_chunk_start, grad, U)
        _solve(t0, T, pairs, base, X, tree_dof_start, tree_dof_count, tree_chunk_start, tree_order, later,
               tree_later_count, block_index, U, inv_diag)  # fmt: skip
        _store_solution(X, t0, T, tree_dof_start, tree_dof_count, tree_chunk_start, U, dv_out)
        if keep_copy == 0:
            continue
        # the stiction model along Δv (stiction_prediction.py): its right-hand side −∇ℓ + Jᵀ(γ̃ − γ) and G̃
        _load_rhs(X, t0, T, tree_dof_start, tree_dof_count, tree_chunk_start, grad, U)
        predicted = int(0)
        for k in range(begin, end):
            c = world_constraints[k]
            row_predicted, G_model, change = stiction_model_row(
                c, c_kind, c_vc, c_gamma, c_G, c_vhat, c_R, c_param, c_nnz, c_dof, c_J, dv_out
            )
            c_G_model_out[c] = G_model
            if row_predicted == 1:
                predicted = 1
                for e in range(c_nnz[c]):
                    d = c_dof[c, e]
                    t = dof_tree[d]
                    _add_entry(U, X + tree_chunk_start[t], d - tree_dof_start[t], wp.dot(c_J[c, e], change))
        if predicted == 0:
            continue
        # Δṽ = −H̃⁻¹ ∇ℓ_model, H̃ = H + Jᵀ (G̃ − G) J on the predicted rows, in the same order and placement (G̃ has
        # curvature on the same rows), adopted where it descends
        _assemble_and_factor(1, 0, size, keep, t0, T, pairs, base, begin, end, tree_dof_start, tree_dof_count,
                             tree_order, tree_A_offset, A_chunks, dof_tree, dof_parent, world_constraints, c_G,
                             c_G_model_out, c_nnz, c_dof, c_J, tree_rank, later, tree_later_count, block_index, U,
                             inv_diag)  # fmt: skip
        _solve(t0, T, pairs, base, X, tree_dof_start, tree_dof_count, tree_chunk_start, tree_order, later,
               tree_later_count, block_index, U, inv_diag)  # fmt: skip
        slope = float(0.0)
        for t in range(t0, t0 + T):
            first = tree_dof_start[t]
            nt = tree_dof_count[t]
            for cc in range(_chunks(nt)):
                chunk = U[X + tree_chunk_start[t] + cc]
                for lane in range(wp.min(8, nt - 8 * cc)):
                    slope += chunk[lane] * grad[first + 8 * cc + lane]
        world_predicted_out[w] = 2
        world_slope_out[w] = slope
        if slope < 0.0:
            _store_solution(X, t0, T, tree_dof_start, tree_dof_count, tree_chunk_start, U, dv_out)
