"""Comparing two runs of the same steps that must agree: bit for bit on the CPU, to round-off on CUDA.

Warp's CPU device runs the threads of a launch one after another, so the same steps give the same bits. On
CUDA, float atomic adds (per-world sums, ``Jᵀγ`` scattered to dofs) land in whatever order the threads reach
them, and Newton's collision pipeline hands out contact slots by atomic counters: two runs of the same step
may differ in their last bits, which a contact-rich trajectory amplifies over its steps, and a Newton loop
may stop one iteration earlier or later. The tests that compare runs bit for bit on the CPU compare them
through these helpers, so that on a GPU they check what holds there.
"""

import numpy as np
import warp as wp

CUDA_RTOL = 1.0e-3
CUDA_ATOL = 1.0e-4
"""Tolerance of a float comparison on CUDA: states [m, rad, m/s, rad/s] of trajectories of up to about 20
steps, whose last bits differ from the first step on."""


def bitwise() -> bool:
    """Whether runs on the default device repeat bit for bit (the CPU) or only to round-off (CUDA)."""
    return not wp.get_device().is_cuda


def assert_same_run(actual, expected, what: str = "") -> None:
    """Arrays of two runs: equal (CPU); on CUDA floats equal to ``CUDA_RTOL``/``CUDA_ATOL``, integers and
    flags exactly."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if bitwise() or actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=CUDA_RTOL, atol=CUDA_ATOL, err_msg=what)


def assert_same_iterations(actual, expected, what: str = "") -> None:
    """Newton iteration counts of two runs: equal (CPU); on CUDA within one of each other."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if bitwise():
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        assert np.abs(actual.astype(np.int64) - expected).max(initial=0) <= 1, what
