"""Interleaved step timing of solvers on one scene of ``bench_contact.py``: the ratio of a close race.

``bench_contact.py`` times each solver in its own run of steps, one after the other, so a drift of the shared
machine between the runs moves their ratio by a few percent (2-core CPU). Here every solver is warmed up
first, then the timed blocks alternate: ``--block-steps`` steps of the first solver, the same of the second,
..., ``--blocks`` times over. Each block lies between two ``wp.synchronize_device()`` calls and replays the
steps (collision included) from captured Warp graphs, as ``bench_contact.py --graph`` does. Reported per
solver: the median and the fastest block [ms/step]; and per solver, its env-steps/s over the first solver's
in the same round of blocks, as the median over the rounds (their range in parentheses). That ratio is per
step: with different dt it is not a ratio of simulated seconds per second (multiply by the dt ratio).

Each solver steps at its own dt (``--dt NAME=DT``; default ``--default-dt``, 0.01 s): Featherstone explodes
on the box stack at 0.01 and is timed at its stable 0.002, as in ``bench_contact.py``'s fallback rows. The
final state of every solver is checked (finite, ``|joint_qd|`` under 100) and printed with the scene's height
and penetration, so an exploded run is not timed as a fast one.

Usage::

    python benchmarks/bench_interleaved.py --scene boxes --worlds 1024 --solvers SAP Featherstone \\
        --dt Featherstone=0.002 [--blocks 10] [--block-steps 10] [--warmup 0.5] [--device cpu] \\
        [--sap-variant KEY=VALUE ...]

``--sap-variant`` adds SolverSAP with those keyword options (Python literals) as one more solver, named ``SAP
variant``, at SAP's dt: two configurations of SAP raced on one model (e.g. ``contact_approximation='lagged'``
against the default, ``--solvers SAP``).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING

import newton  # noqa: E402
from bench_contact import SCENES, SOLVERS, Stepper, build_model, sanity, sap_options  # noqa: E402
from common import cpu_name  # noqa: E402

import newton_sap  # noqa: E402

VARIANT = "SAP variant"
"""Name of the solver that ``--sap-variant`` adds."""


def parse_dts(pairs: list[str], solvers: list[str], default: float) -> dict[str, float]:
    """``NAME=DT`` pairs into a dt [s] per solver (``default`` for the others)."""
    dts = dict.fromkeys(solvers, default)
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in dts or not value:
            raise SystemExit(f"--dt expects NAME=DT with NAME one of {solvers}, got {pair!r}")
        dts[name] = float(value)
    return dts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", choices=list(SCENES), default="boxes")
    parser.add_argument("--worlds", type=int, default=1024)
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=["SAP", "Featherstone"])
    parser.add_argument("--dt", nargs="*", default=[], help="NAME=DT [s] per solver")
    parser.add_argument("--default-dt", type=float, default=0.01, help="dt [s] of the other solvers (0.01)")
    parser.add_argument("--blocks", type=int, default=10, help="rounds of timed blocks (default 10)")
    parser.add_argument("--block-steps", type=int, default=10, help="steps per timed block (default 10)")
    parser.add_argument("--warmup", type=float, default=0.5, help="untimed simulated seconds first (default 0.5)")
    parser.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    parser.add_argument(
        "--sap-variant", nargs="+", default=[], metavar="KEY=VALUE", help="also SolverSAP with these options"
    )
    args = parser.parse_args(argv)
    dts = parse_dts(args.dt, args.solvers, args.default_dt)
    variant = sap_options(args.sap_variant, "--sap-variant")
    if args.sap_variant:
        dts[VARIANT] = dts.get("SAP", args.default_dt)

    wp.init()
    device = wp.get_device(args.device)
    model = build_model(args.scene, args.worlds, device)
    steppers = {name: Stepper(name, model, args.scene, graph=True) for name in args.solvers}
    if args.sap_variant:
        steppers[VARIANT] = Stepper("SAP", model, args.scene, graph=True, sap_options=variant)
    for name, stepper in steppers.items():
        stepper.reset()
        for _ in range(max(3, round(args.warmup / dts[name]))):  # one launched step, two captures, warm-up
            stepper.step(dts[name])
    seconds = {name: [] for name in steppers}
    iterations = {name: [] for name in steppers}  # SolverSAP's: Newton iterations of each block's last step
    for _ in range(args.blocks):
        for name, stepper in steppers.items():
            wp.synchronize_device(device)
            t0 = time.perf_counter()
            for _ in range(args.block_steps):
                stepper.step(dts[name])
            wp.synchronize_device(device)
            seconds[name].append(time.perf_counter() - t0)
            if isinstance(stepper.solver, newton_sap.SolverSAP):
                iterations[name].append(np.mean(stepper.solver.stats.iterations))

    probe_pipeline = newton.CollisionPipeline(model)
    probe = (probe_pipeline, probe_pipeline.contacts())
    first = args.solvers[0]
    print(f"# `{shlex.join(['python', *sys.argv])}`")
    print(f"# {cpu_name()}, {platform.python_version()}, warp {wp.config.version}, device {device}")
    print(f"# {args.scene}, {args.worlds} worlds, {args.blocks} rounds of {args.block_steps} steps per solver")
    if args.sap_variant:
        print(f"# {VARIANT}: SolverSAP with {variant}")
    print()
    print(
        f"| solver | dt [s] | median ms/step | fastest ms/step | env-steps/s over {first}'s | Newton iterations "
        "(blocks' last steps) | final state |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, stepper in steppers.items():
        per_step = 1e3 * np.array(seconds[name]) / args.block_steps
        ratio = np.array(seconds[first]) / np.array(seconds[name])
        state = sanity(args.scene, model, stepper.state, probe)
        print(
            f"| {name} | {dts[name]} | {np.median(per_step):.2f} | {per_step.min():.2f} | "
            f"{np.median(ratio):.3f}x ({ratio.min():.3f}–{ratio.max():.3f}) | "
            f"{f'{np.mean(iterations[name]):.2f}' if iterations[name] else ''} | {state.text()} |"
        )


if __name__ == "__main__":
    main()
