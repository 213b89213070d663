"""Shared pytest set-up: Warp without banner and module-load lines; ``--gpu-paths``."""

import pytest
import warp as wp

wp.config.log_level = wp.LOG_WARNING


def pytest_addoption(parser):
    parser.addoption(
        "--gpu-paths",
        action="store_true",
        help="run on the CPU through the code paths CUDA devices take: their option defaults (no block "
        "Cholesky, CG parallel over dofs) and the level-by-level tree LDLᵀ instead of the CPU's tree solves",
    )


@pytest.fixture
def gpu_paths(request) -> bool:
    """Whether this run takes the CUDA code paths (``--gpu-paths``) or runs on a CUDA device."""
    return request.config.getoption("--gpu-paths") or wp.get_device().is_cuda


@pytest.fixture(autouse=True)
def _force_gpu_paths(request, monkeypatch):
    """With ``--gpu-paths``: SolverSAP resolves its defaults as on CUDA and factors as on CUDA."""
    if not request.config.getoption("--gpu-paths"):
        return
    from newton_sap import factorization, options

    monkeypatch.setattr(factorization, "TREE_LDLT_ON_CPU", False)
    monkeypatch.setattr(factorization, "TREE_THREADS_ON_CPU", False)
    monkeypatch.setattr(options.SapOptions, "for_device", lambda self, device: self.with_defaults(cuda=True))
