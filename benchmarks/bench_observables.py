"""Cost of Newton's solver observables on SAP steps: the same scene stepped with and without them.

Two ``SolverSAP`` instances step one ``bench_contact.py`` scene: one plain, one passed a container that requests
every observable it supports (``CONTACT_F``, ``BODY_QDD``, ``BODY_PARENT_F``; ``newton_sap/observables.py``).
Each warms up for ``--warmup`` simulated seconds, captures two steps (collision included) in a Warp graph, then
the timed blocks alternate: ``--block-steps`` replayed steps of one, the same of the other, ``--blocks`` times.
Each block lies between two ``wp.synchronize_device()`` calls. Reported: the median ms/step of each and their
ratio (> 1: the observables cost that fraction of a step).

Usage::

    python benchmarks/bench_observables.py [--scenes ant humanoid boxes] [--worlds 64 1024] [--blocks 5]
        [--block-steps 20] [--dt 0.01] [--device cpu]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING

import newton  # noqa: E402
from bench_contact import SCENES, build_model  # noqa: E402
from common import cpu_name  # noqa: E402

import newton_sap  # noqa: E402


def captured_steps(model, dt: float, warmup: float, observed: bool):
    """A graph of two steps of ``model`` (collision and SAP, states ping-pong) after ``warmup`` [s] launched, with
    every supported observable requested if ``observed``."""
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    observables = solver.observables(solver.supported_observables, contacts=contacts) if observed else None
    states, control = (model.state(), model.state()), model.control()
    newton.eval_fk(model, states[0].joint_q, states[0].joint_qd, states[0])

    def two_steps():
        for a, b in (states, states[::-1]):
            pipeline.collide(a, contacts)
            solver.step(a, b, control, contacts, dt, observables=observables)

    for _ in range(max(1, round(warmup / dt / 2))):
        two_steps()
    with wp.ScopedCapture(device=model.device) as capture:
        two_steps()
    return capture.graph


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", nargs="+", choices=list(SCENES), default=["ant", "humanoid", "boxes"])
    parser.add_argument("--worlds", nargs="+", type=int, default=[64, 1024])
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--block-steps", type=int, default=20, help="steps per timed block (rounded up to even)")
    parser.add_argument("--dt", type=float, default=0.01)
    parser.add_argument("--warmup", type=float, default=0.25, help="launched simulated seconds before capturing")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    wp.init()
    print(f"device {args.device} ({cpu_name() if args.device == 'cpu' else wp.get_device(args.device).name}), "
          f"newton {newton.__version__}, warp {wp.__version__}, python {platform.python_version()}")  # fmt: skip
    print("| scene | worlds | plain ms/step | with observables ms/step | ratio |\n|---|---:|---:|---:|---:|")
    for scene in args.scenes:
        for worlds in args.worlds:
            model = build_model(scene, worlds, args.device)
            graphs = {observed: captured_steps(model, args.dt, args.warmup, observed) for observed in (False, True)}
            times = {observed: [] for observed in graphs}
            pairs = max(1, (args.block_steps + 1) // 2)
            for _ in range(args.blocks):
                for observed, graph in graphs.items():
                    wp.synchronize_device(args.device)
                    start = time.perf_counter()
                    for _ in range(pairs):
                        wp.capture_launch(graph)
                    wp.synchronize_device(args.device)
                    times[observed].append((time.perf_counter() - start) / (2 * pairs) * 1e3)
            plain, observed = (float(np.median(times[k])) for k in (False, True))
            print(f"| {scene} | {worlds} | {plain:.3f} | {observed:.3f} | {observed / plain:.3f} |")


if __name__ == "__main__":
    main()
