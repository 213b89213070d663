"""Command line: ``python -m newton_sap`` (or ``newton-sap``) runs the default scene headless and
prints a summary.

    newton-sap demo [--worlds N] [--seconds T] [--dt DT] [--device cpu|cuda:0]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING  # before Warp initializes: no banner, no module-load lines

import newton  # noqa: E402

from .diagnostics import mechanical_energy  # noqa: E402
from .examples import double_cartpole  # noqa: E402
from .solver_sap import SolverSAP  # noqa: E402


def _positive(kind):
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="newton-sap", description="SAP time stepping for Newton models.")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="run the default scene (double cartpole, many worlds) and print a summary")
    demo.add_argument("--worlds", type=_positive(int), default=256, help="number of worlds (default 256)")
    demo.add_argument("--seconds", type=_positive(float), default=3.0, help="simulated time [s] (default 3)")
    demo.add_argument("--dt", type=_positive(float), default=1e-3, help="time step [s] (default 1e-3)")
    demo.add_argument("--device", default=None, help="Warp device, e.g. cpu or cuda:0 (default: Warp's default)")
    argv = list(argv or [])
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["demo", *argv]  # the demo is the default command
    return parser.parse_args(argv)


def run_demo(worlds: int, seconds: float, dt: float, device=None) -> dict:
    """Simulate the default scene and return its summary figures."""
    model = double_cartpole.build(worlds).finalize(device=device)
    solver = SolverSAP(model)
    s0, s1 = model.state(), model.state()
    q, qd = double_cartpole.initial_state(model, np.random.default_rng(0))
    s0.joint_q.assign(q)
    s0.joint_qd.assign(qd)
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    e0 = mechanical_energy(model, s0)
    steps = max(int(round(seconds / dt)), 1)
    solver.step(s0, s1, None, None, dt)  # first step compiles the kernels; not timed
    s0, s1 = s1, s0
    wp.synchronize_device(model.device)
    start = time.perf_counter()
    for _ in range(steps - 1):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    wp.synchronize_device(model.device)
    elapsed = time.perf_counter() - start
    e1 = mechanical_energy(model, s0)
    stats = solver.stats
    angles = s0.joint_q.numpy().reshape(worlds, 3)[:, 1:]
    scale = np.maximum(np.abs(e0), 1e-9)
    return {
        "worlds": worlds,
        "steps": steps,
        "dt": dt,
        "device": str(model.device),
        "env_steps_per_s": worlds * (steps - 1) / max(elapsed, 1e-12),
        "ms_per_step": 1e3 * elapsed / max(steps - 1, 1),
        "energy_drift_max": float(np.max(np.abs(e1 - e0) / scale)),
        "converged_fraction": float(stats.converged.mean()),
        "failed_worlds": int(stats.failed.sum()),
        "pole_angle_spread": float(np.ptp(angles[:, 0])),
    }


def format_summary(summary: dict) -> str:
    rows = [
        ("worlds", f"{summary['worlds']}"),
        ("steps × dt", f"{summary['steps']} × {summary['dt']:g} s on {summary['device']}"),
        ("env-steps/s", f"{summary['env_steps_per_s']:,.0f} ({summary['ms_per_step']:.3f} ms/step)"),
        ("max relative energy drift", f"{summary['energy_drift_max']:.2e}"),
        ("converged fraction", f"{summary['converged_fraction']:.3f}"),
        ("failed worlds", f"{summary['failed_worlds']}"),
        ("pole-1 angle spread (chaos)", f"{summary['pole_angle_spread']:.3f} rad"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    summary = run_demo(args.worlds, args.seconds, args.dt, args.device)
    print("newton-sap demo: double cartpole, SolverSAP")
    print(format_summary(summary))
    return 0 if summary["failed_worlds"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
