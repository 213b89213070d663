"""The kernels users run on CUDA compile for a Hopper GPU (sm_90, PTX through NVRTC) from the same code
the CPU tests run: a codegen check that needs no GPU (no device is available to CI)."""

import pytest
import warp as wp

from newton_sap import (
    block_cholesky,
    contact_constraints,
    dynamics,
    factorization,
    integration,
    jacobian,
    joint_constraints,
    kinematics,
    line_search,
    loop_constraints,
    observables,
    pcg,
    pcg_parallel,
    sap,
    scan,
    solver_sap,
    stiction_prediction,
)

MODULES = [kinematics, dynamics, factorization, integration, sap, line_search, stiction_prediction, block_cholesky,
           pcg, pcg_parallel, solver_sap, contact_constraints, joint_constraints, loop_constraints, jacobian,
           scan, observables]  # fmt: skip


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_module_compiles_for_cuda(module):
    assert wp.compile_aot_module(module, arch=90, use_ptx=True)


@pytest.mark.parametrize("n", [6, 27, 64])
def test_tile_kernels_compile_for_cuda(n):
    for kernel in (
        factorization.dense_free_motion_kernel(n),
        sap.newton_direction_kernel(n),
        pcg.tree_factor_kernel(n),
    ):
        assert wp.compile_aot_module(kernel.module, arch=90, use_ptx=True)
