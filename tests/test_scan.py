"""``newton_sap.scan.exclusive_scan`` against NumPy: sizes at and around the chunk and chunk-of-sums edges."""

import numpy as np
import pytest
import warp as wp

from newton_sap.scan import SCAN_CHUNK, chunk_sums_size, exclusive_scan


@pytest.mark.parametrize(
    "n", [1, 2, SCAN_CHUNK - 1, SCAN_CHUNK, SCAN_CHUNK + 1, 3 * SCAN_CHUNK, SCAN_CHUNK**2, SCAN_CHUNK**2 + 5]
)
def test_exclusive_scan_matches_numpy(n):
    """Random counts 0..4; beyond ``SCAN_CHUNK²`` values the chunk sums themselves span several chunks."""
    values = np.random.default_rng(n).integers(0, 5, n).astype(np.int32)
    out = wp.full(n, -7, dtype=wp.int32)
    exclusive_scan(wp.array(values, dtype=wp.int32), out, wp.zeros(chunk_sums_size(n), dtype=wp.int32))
    np.testing.assert_array_equal(out.numpy(), np.concatenate([[0], np.cumsum(values)[:-1]]))


def test_exclusive_scan_refuses_short_scratch():
    values = wp.zeros(2 * SCAN_CHUNK + 1, dtype=wp.int32)
    with pytest.raises(ValueError, match="3 needed"):
        exclusive_scan(values, wp.zeros_like(values), wp.zeros(2, dtype=wp.int32))
