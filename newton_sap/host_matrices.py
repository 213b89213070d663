"""The mass matrix on the host (NumPy, float64), assembled from the solver's sparse lower-triangle tree rows (row i
of an internal dof holds its entries with the dofs of its chain: ``rows[dof_row_start[i] + depth(i) − depth(j)]`` for
each ancestor j, i itself included): whole worlds for snapshots, and the diagonal of each tree block's inverse."""

from __future__ import annotations

import numpy as np

from .topology import Topology


def world_matrices(topo: Topology, rows: np.ndarray) -> list[np.ndarray]:
    """Per world, the dense internal matrix assembled from the sparse lower-triangle rows."""
    out = []
    for w in range(topo.world_count):
        s, e = int(topo.world_dof_start[w]), int(topo.world_dof_start[w + 1])
        M = np.zeros((e - s, e - s))
        for i in range(s, e):
            j, rs, di = i, topo.dof_row_start[i], topo.dof_depth[i]
            while j >= 0:
                M[i - s, j - s] = M[j - s, i - s] = rows[rs + di - topo.dof_depth[j]]
                j = topo.dof_parent[j]
        out.append(M)
    return out


def tree_inverse_diagonal(topo: Topology, rows: np.ndarray, trees: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M⁻¹)_ii`` per internal dof of the trees ``trees`` (0 elsewhere), each tree block inverted on its own (M is
    block-diagonal by tree), trees of one size in one batch; and the trees whose block is singular (their dofs stay
    0). Vectorized over the trees of a size: a loop over local dofs and chain depths, not over dofs."""
    diagonal = np.zeros(topo.dof_count)
    singular = []
    trees = np.unique(np.asarray(trees, np.int64))
    sizes = topo.tree_dof_count[trees]
    for n in np.unique(sizes):
        batch = trees[sizes == n]
        start = topo.tree_dof_start[batch].astype(np.int64)
        M = np.zeros((len(batch), n, n))
        slot = np.arange(len(batch))
        for local in range(n):
            i = start + local
            j = i.copy()
            on = np.ones(len(batch), bool)
            while on.any():
                value = rows[topo.dof_row_start[i[on]] + topo.dof_depth[i[on]] - topo.dof_depth[j[on]]]
                M[slot[on], local, j[on] - start[on]] = value
                M[slot[on], j[on] - start[on], local] = value
                j[on] = topo.dof_parent[j[on]]
                on &= j >= 0
        try:
            inverses = np.linalg.inv(M)
        except np.linalg.LinAlgError:  # some block is singular: one at a time, to find which
            inverses = np.zeros_like(M)
            for b in range(len(batch)):
                try:
                    inverses[b] = np.linalg.inv(M[b])
                except np.linalg.LinAlgError:
                    singular.append(int(batch[b]))
        dofs = start[:, None] + np.arange(n)
        diagonal[dofs] = np.diagonal(inverses, axis1=1, axis2=2)
    return diagonal, np.asarray(singular, np.int64)
