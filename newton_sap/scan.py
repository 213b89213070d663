"""Exclusive prefix sums of int32 arrays into buffers allocated once: no allocation per call.

``wp.utils.array_scan`` allocates its scratch on CUDA devices at each call, which a CUDA graph forbids inside
a conditional node (the parked contacts' retry re-sorts the constraint lists inside one, ``sap.py``). Here a
scan is three launches over preallocated chunk sums (``SCAN_CHUNK`` entries per chunk, one tile each):

1. ``scan_chunks``: per chunk c, ``out[c·B + i] = Σ_{j<i} x[c·B + j]`` and ``chunk_sums[c] = Σ_j x[c·B + j]``;
2. ``scan_chunk_sums``: one block turns ``chunk_sums`` into its own exclusive prefix sums, a chunk of sums
   at a time with a running carry;
3. ``add_chunk_offsets``: ``out[k] += chunk_sums[k / B]``.

The sums are exact (int32), so the result is that of any other exclusive scan.
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

SCAN_CHUNK = 256  # entries per chunk (one tile)
SCAN_BLOCK_DIM = 64  # threads per tile block on CUDA (the CPU runs one)


@wp.kernel
def scan_chunks(values: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32),
                chunk_sums: wp.array(dtype=wp.int32)):  # fmt: skip
    """Per chunk (one block): its exclusive prefix sums into ``out`` and its total into ``chunk_sums``
    (entries past the array read as zero and are not stored)."""
    chunk = wp.tid()
    x = wp.tile_load(values, shape=SCAN_CHUNK, offset=chunk * SCAN_CHUNK)
    wp.tile_store(out, wp.tile_scan_exclusive(x), offset=chunk * SCAN_CHUNK)
    wp.tile_store(chunk_sums, wp.tile_sum(x), offset=chunk)


@wp.kernel
def scan_chunk_sums(chunk_count: int, chunk_sums: wp.array(dtype=wp.int32)):
    """One block: ``chunk_sums[0:chunk_count]`` replaced by its exclusive prefix sums, ``SCAN_CHUNK`` sums
    at a time, each chunk of sums offset by the total of those before it."""
    carry = int(0)
    for start in range(0, chunk_count, SCAN_CHUNK):
        x = wp.tile_load(chunk_sums, shape=SCAN_CHUNK, offset=start)
        before = wp.tile_scan_exclusive(x) + wp.tile_full(SCAN_CHUNK, value=carry, dtype=wp.int32)
        wp.tile_store(chunk_sums, before, offset=start)
        carry += wp.tile_extract(wp.tile_sum(x), 0)


@wp.kernel
def add_chunk_offsets(chunk_sums: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    """``out[k] += chunk_sums[k / SCAN_CHUNK]``: the chunks' prefix sums made global."""
    k = wp.tid()
    out[k] = out[k] + chunk_sums[k // SCAN_CHUNK]


def chunk_sums_size(n: int) -> int:
    """Entries of the chunk-sum buffer that :func:`exclusive_scan` needs for ``n`` values."""
    return max(-(-n // SCAN_CHUNK), 1)


def exclusive_scan(values: wp.array, out: wp.array, chunk_sums: wp.array) -> None:
    """``out[k] = Σ_{j<k} values[j]`` (int32 arrays of one length n) with ``chunk_sums`` as scratch (at least
    :func:`chunk_sums_size` (n) entries): three launches, no allocation."""
    n = values.shape[0]
    if n == 0:
        return
    chunks = -(-n // SCAN_CHUNK)
    if chunk_sums.shape[0] < chunks:
        raise ValueError(f"exclusive_scan: chunk_sums holds {chunk_sums.shape[0]} sums, {chunks} needed")
    device = values.device
    block_dim = 1 if device.is_cpu else SCAN_BLOCK_DIM
    wp.launch_tiled(scan_chunks, dim=chunks, inputs=[values], outputs=[out, chunk_sums], block_dim=block_dim,
                    device=device)  # fmt: skip
    wp.launch_tiled(scan_chunk_sums, dim=1, inputs=[chunks], outputs=[chunk_sums], block_dim=block_dim,
                    device=device)  # fmt: skip
    wp.launch(add_chunk_offsets, dim=n, inputs=[chunk_sums], outputs=[out], device=device)
