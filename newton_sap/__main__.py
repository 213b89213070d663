"""Command line: ``newton-sap`` (or ``python -m newton_sap``).

    newton-sap demo [--worlds N] [--seconds T] [--dt DT] [--device D] [--out DIR] [--viewer V] [--no-graph]
    newton-sap list
    newton-sap run SCENE [--worlds N] [--seconds T | --steps K] [--dt DT]
                   [--solver sap|featherstone|mujoco] [--device D] [--out DIR] [--viewer V] [--no-graph]

``demo`` (the default command) runs the default scene; ``run`` any scene of ``list``. Each
prints a summary table and writes ``summary.json`` and ``plot.png`` (a trajectory and the solver
statistics over time) into ``--out`` (default ``./newton-sap-out``), plus what ``--viewer`` asks for:
``recording.json`` (``file``, the default: Newton's file viewer format), ``recording.usd`` (``usd``),
``recording.rrd`` (``rerun``), a live window (``gl``) or nothing (``none``). Steps replay a captured
Warp graph (collision and solver) unless ``--no-graph``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys

INTERRUPTED_BEFORE_THE_RUN = "newton-sap: interrupted before the run started"


def _interrupt_during_imports(signum, frame):
    """Python's Ctrl-C (a ``KeyboardInterrupt``), noted: inside an extension's initialization (NumPy's, in its first
    50 ms) the interrupt reaches the import as an ``ImportError`` instead."""
    global _INTERRUPTED
    _INTERRUPTED = True
    raise KeyboardInterrupt


_INTERRUPTED = False
signal.signal(signal.SIGINT, _interrupt_during_imports)
try:  # Warp and Newton take seconds to import: a Ctrl-C then ends with one line too
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING  # before Warp initializes: no banner, no module-load lines

    from .examples.scenes import SCENES
    from .options import FLOAT32_MAX, FLOAT32_TINY
    from .runner import SOLVERS, format_summary, run_scene
    from .viewers import RECORDING_FILES, VIEWERS, module_available, viewer_unavailable
except (KeyboardInterrupt, ImportError):
    if not _INTERRUPTED:
        raise
    print(INTERRUPTED_BEFORE_THE_RUN, file=sys.stderr)
    sys.exit(130)
finally:
    signal.signal(signal.SIGINT, signal.default_int_handler)

DEFAULT_SCENE = "double_cartpole"
DEFAULT_WORLDS = 256


def _positive(kind):
    """An argparse type: ``kind(text)``, finite and > 0."""

    def parse(text):
        value = kind(text)
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value: '2.5'"
    return parse


def _time_step(text):
    """An argparse type: a time step [s], positive and within float32's normal range (the solver's kernels take it
    in float32)."""
    value = _positive(float)(text)
    if not FLOAT32_TINY <= value <= FLOAT32_MAX:
        raise argparse.ArgumentTypeError(
            f"must be within float32's normal range [{FLOAT32_TINY:.3g}, {FLOAT32_MAX:.3g}], got {text}"
        )
    return value


_time_step.__name__ = "float"


def _unwritable(path: str) -> str | None:
    """Why the folder ``path`` cannot take the outputs (it is created if missing), or None."""
    if os.path.exists(path) and not os.path.isdir(path):
        return f"cannot write to {path!r}: not a directory"
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".newton-sap-write-test")
        with open(probe, "w") as f:
            f.write("")
        os.remove(probe)
    except OSError as e:
        return f"cannot write to {path!r}: {e.strerror}"
    return None


def _add_run_options(parser, worlds_default):
    parser.add_argument("--worlds", type=_positive(int), default=worlds_default, help="number of worlds")
    parser.add_argument("--seconds", type=_positive(float), default=None, help="simulated time [s]")
    parser.add_argument("--dt", type=_time_step, default=None, help="time step [s] (scene default)")
    parser.add_argument("--device", default=None, help="Warp device, e.g. cpu or cuda:0")
    parser.add_argument("--out", default="newton-sap-out", help="output folder (created if missing)")
    parser.add_argument(
        "--viewer", choices=VIEWERS, default="file", help="recording in --out (file, usd, rerun) or live window (gl)"
    )
    parser.add_argument(
        "--no-graph", dest="graph", action="store_false", help="launch kernels one by one instead of replaying a graph"
    )


def parse_args(argv):
    """Parse ``argv`` (without the program name); a bad value exits with one line naming it, before any
    work (argparse's usage error)."""
    parser = argparse.ArgumentParser(prog="newton-sap", description="SAP time stepping for Newton models.")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help=f"run the default scene ({DEFAULT_SCENE}) and print a summary")
    _add_run_options(demo, DEFAULT_WORLDS)
    sub.add_parser("list", help="list the scenes")
    run = sub.add_parser("run", help="run a scene")
    run.add_argument("scene", help="scene name (see `newton-sap list`)")
    _add_run_options(run, 1)
    run.add_argument("--steps", type=_positive(int), default=None, help="number of steps (instead of --seconds)")
    run.add_argument("--solver", default="sap", help=f"one of {', '.join(SOLVERS)}")
    argv = list(argv or [])
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["demo", *argv]  # the demo is the default command
    args = parser.parse_args(argv)
    error = {"demo": demo.error, "run": run.error}.get(args.command, parser.error)  # with the subcommand's usage
    if args.command == "run":
        if args.scene not in SCENES:
            error(f"unknown scene {args.scene!r}; valid: {', '.join(SCENES)}")
        if args.solver not in SOLVERS:
            error(f"unknown solver {args.solver!r}; valid: {', '.join(SOLVERS)}")
        if args.steps is not None and args.seconds is not None:
            error("give --steps or --seconds, not both")
        if args.solver == "mujoco" and not module_available("mujoco_warp"):
            error("--solver mujoco needs mujoco-warp: pip install 'newton-sap[bench]'")
    if args.command in ("demo", "run") and (why := viewer_unavailable(args.viewer)):
        error(why)
    if args.command in ("demo", "run") and args.device is not None:
        try:
            wp.get_device(args.device)
        except (ValueError, RuntimeError):
            available = ", ".join(device.alias for device in wp.get_devices())
            error(f"device {args.device!r} is not available here; available: {available}")
    if args.command in ("demo", "run") and (why := _unwritable(args.out)):  # last: only a valid command creates it
        error(why)
    return args


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() and (done == total or done % max(total // 50, 1) == 0):
        bar = "#" * (30 * done // total)
        print(f"\r[{bar:<30}] {done}/{total} steps", end="\n" if done == total else "", file=sys.stderr)


def main(argv=None) -> int:
    """The ``newton-sap`` command (``argv`` defaults to ``sys.argv[1:]``); returns the exit status: 0, 1 when
    the run ended non-finite, 130 when Ctrl-C came before the first step (later it ends the run early)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(INTERRUPTED_BEFORE_THE_RUN, file=sys.stderr)
        return 130


def _main(argv) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "list":
        width = max(len(name) for name in SCENES)
        for name, scene in SCENES.items():
            print(f"{name.ljust(width)}  {scene.description}")
        return 0
    scene = DEFAULT_SCENE if args.command == "demo" else args.scene
    solver = "sap" if args.command == "demo" else args.solver
    steps = getattr(args, "steps", None)
    plot = os.path.join(args.out, "plot.png")
    recording = RECORDING_FILES.get(args.viewer)
    if args.viewer == "gl":
        print("newton-sap: the window stays open after the run; close it to finish", file=sys.stderr)
    summary = run_scene(scene, args.worlds, steps, args.seconds, args.dt, solver, args.device, _progress, plot,
                        recording and os.path.join(args.out, recording), args.viewer, args.graph)  # fmt: skip
    print(f"newton-sap {args.command}: {scene}, {solver}")
    print(format_summary(summary))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"wrote {args.out}/summary.json, plot.png" + (f" and {recording}" if recording else ""))
    return 0 if summary["finite"] else 1


if __name__ == "__main__":
    sys.exit(main())
