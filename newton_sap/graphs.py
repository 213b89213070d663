"""Replaying simulation steps from captured Warp graphs (CUDA graphs, or Warp's CPU graphs replayed in C++)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import warp as wp


class StepGraphs:
    """A step function launched on its first call, then replayed from a graph captured once per key.

    The first call launches kernel by kernel: it compiles kernels and lets solvers size their buffers,
    which must exist before a capture (arrays allocated inside a CUDA capture exist only once the graph
    runs). Each later call with a new key (e.g. the pair of states a step reads and writes) captures the
    step, which does not run it, then every call replays the key's graph. A graph freezes the arrays and
    the Python values the step passed to its kernels: give calls that differ in them different keys.

    Args:
        device: The Warp device the step runs on.
        enabled: False launches every call kernel by kernel.
    """

    def __init__(self, device, enabled: bool = True):
        self.device = wp.get_device(device)
        self.enabled = enabled
        self.graphs: dict[Hashable, wp.Graph] = {}
        self.calls = 0

    def captures(self, key: Hashable) -> bool:
        """Whether a call with ``key`` now would capture its graph (rather than launch or replay)."""
        return self.enabled and self.calls > 0 and key not in self.graphs

    def __call__(self, key: Hashable, step: Callable[[], None]) -> bool:
        """Run ``step`` once (launched, or replayed from ``key``'s graph); True when this call captured
        that graph first. An exception from the capture propagates, and nothing ran."""
        first = self.calls == 0
        self.calls += 1
        if first or not self.enabled:
            step()
            return False
        captured = key not in self.graphs
        if captured:
            with wp.ScopedCapture(device=self.device) as capture:
                step()
            self.graphs[key] = capture.graph
        wp.capture_launch(self.graphs[key])
        return captured
