"""Large worlds: block-preconditioned CG gives the same steps as the dense Cholesky of H."""

import numpy as np
import pytest

from contact_scenes import Run, box_on_ground


@pytest.mark.parametrize("dense_max_dofs", [64, 0])  # dense tree blocks, or Jacobi for every tree
def test_pcg_matches_dense_newton_systems(dense_max_dofs):
    """A 5-box stack (boxes coupled through contacts) stepped with dense H solves and with PCG."""
    qd0 = [0.3, 0, 0, 0, 0, 0.5] * 5
    dense = Run(box_on_ground(boxes=5, mu=0.5), qd0=qd0)
    pcg = Run(box_on_ground(boxes=5, mu=0.5), qd0=qd0, dense_world_max_dofs=0, dense_max_dofs=dense_max_dofs)
    dense.step(0.01, 30)
    pcg.step(0.01, 30)
    assert pcg.solver.topology.world_uses_pcg.all()
    assert np.all(pcg.converged)
    # both stop at the float32 precision floor of the same problem (CG with a looser tolerance, 1e-5)
    assert np.abs(dense.q - pcg.q).max() < 1e-4
    assert np.abs(dense.qd - pcg.qd).max() < 1e-3
