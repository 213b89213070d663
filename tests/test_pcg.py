"""Large worlds: block-preconditioned CG gives the same steps as the dense Cholesky of H."""

import numpy as np
import pytest

from contact_scenes import Run, box_on_ground


# dense tree blocks, or Jacobi for every tree: a Jacobi-preconditioned solve stops at the float32 cost
# floor (the stall criterion of sap.py) with a 10-100x larger residual than the dense one, hence its
# looser per-step agreement
@pytest.mark.parametrize(("dense_max_dofs", "tolerance"), [(64, 1e-4), (0, 5e-3)])
def test_pcg_matches_dense_newton_systems(dense_max_dofs, tolerance):
    """A 5-box stack (boxes coupled through contacts) stepped with dense H solves and with PCG."""
    qd0 = [0.3, 0, 0, 0, 0, 0.5] * 5
    dense = Run(box_on_ground(boxes=5, mu=0.5), qd0=qd0)
    pcg = Run(
        box_on_ground(boxes=5, mu=0.5), qd0=qd0, dense_world_max_dofs=0, block_cholesky_max_dofs=0,
        dense_max_dofs=dense_max_dofs,
    )  # fmt: skip
    worst = 0.0
    for _ in range(30):
        # both step from the same state (a sliding, spinning stack would amplify round-off over steps)
        for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
            getattr(pcg.s0, name).assign(getattr(dense.s0, name))
        dense.step(0.01)
        pcg.step(0.01)
        scale = np.abs(dense.qd).max()
        worst = max(worst, np.abs(dense.qd - pcg.qd).max() / scale)
    assert pcg.solver.topology.world_uses_pcg.all()
    assert np.all(pcg.converged)
    assert np.all(np.concatenate(pcg.cg_iterations) > 0)
    assert worst < tolerance  # relative to the largest joint velocity
