"""Contact-free step time of :class:`newton_sap.SolverSAP` next to Newton's ``SolverFeatherstone``.

For each robot and world count, one Newton model is built (``ModelBuilder.replicate``) and stepped by both
solvers in the same process, on the same device, with the same ``dt``, gravity and initial state, and
``contacts=None`` (no collision pipeline runs; both solvers ignore contacts here).  Robots:

* ``ant``: Newton's ``nv_ant.xml`` (floating, 14 dofs), torso at the file's 0.75 m above z = 0.
* ``humanoid``: Newton's ``nv_humanoid.xml`` (floating, 27 dofs), root placed 1.4 m above z = 0 (no ground).
* ``arm``: example-robot-data's Panda URDF with the two finger joints fixed (fixed base, 7 dofs).

The initial state is the model's ``joint_q`` with every limited dof moved 10 % of its range inside its
limits, and a random ``joint_qd`` (uniform in ±0.5, fixed seed), so that Coriolis and gyroscopic terms act.
Featherstone runs with ``angular_damping=0`` (its default 0.05 damps body angular velocities, which SAP does
not do); all its other options are defaults. SolverSAP runs with its defaults but ``--coriolis``: with
``explicit`` both solvers take the velocity products at the step's v0 and, without passive joint forces,
their trajectories agree to float32 round-off; with the default ``midpoint`` SAP takes them at the midpoint
velocities, a difference of second order per step.

Per (robot, worlds):

1. Sanity check and warm-up: both solvers take 20 steps from the initial state (this also compiles the
   kernels); the largest ``|joint_q|`` and ``|joint_qd|`` differences over all worlds are reported, for the
   model as is and with its joint damping and joint stiffness set to zero for the comparison (the model's
   passive joint forces, which the solvers may treat differently; restored before timing).
2. Kernel launches of one step, counted by wrapping ``wp.launch`` / ``wp.launch_tiled``.
3. Timing: ``--repeats`` times, each solver in turn restarts from the initial state and takes ``N`` steps
   between two ``wp.synchronize_device()``; the median time is reported as ms/step and
   env-steps/s = worlds * N / seconds.  By default ``N = round(2000 / sqrt(worlds))`` (2000, 250, 62 steps for
   1, 64, 1024 worlds), which keeps the default run at about 5 minutes on a 2-core CPU.  With ``--graph``
   each step replays a Warp graph captured once per state parity (CUDA graph, or Warp's CPU graph replayed in
   C++), as Newton's examples do on GPUs, for both solvers.

Usage::

    python benchmarks/bench_free_motion.py [--robots ant humanoid arm] [--worlds 1 64 1024] [--steps N]
        [--dt 0.002] [--repeats 5] [--graph] [--device cpu] [--coriolis midpoint|explicit] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING

import newton  # noqa: E402
from common import cpu_name, dynamics_only_urdf, example_robot_data, newton_asset  # noqa: E402

import newton_sap  # noqa: E402
from newton_sap.graphs import StepGraphs  # noqa: E402

GRAVITY = 9.81
"""Magnitude of gravity [m/s^2], along -z."""

SANITY_STEPS = 20
"""Steps of the solver comparison that also serves as warm-up."""


# ----------------------------------------------------------------------------------------------------------------
# Robots


def _add_ant(builder: newton.ModelBuilder, tmp_dir: str) -> None:
    builder.add_mjcf(newton_asset("nv_ant.xml"), floating=True, enable_self_collisions=False)


def _add_humanoid(builder: newton.ModelBuilder, tmp_dir: str) -> None:
    builder.add_mjcf(
        newton_asset("nv_humanoid.xml"),
        xform=wp.transform((0.0, 0.0, 1.4), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
    )


def _add_arm(builder: newton.ModelBuilder, tmp_dir: str) -> None:
    urdf = dynamics_only_urdf(
        example_robot_data("panda_description/urdf/panda.urdf"),
        tmp_dir,
        fixed_joints=("panda_finger_joint1", "panda_finger_joint2"),
    )
    builder.add_urdf(urdf, floating=False, enable_self_collisions=False)


ROBOTS: dict[str, Callable[[newton.ModelBuilder, str], None]] = {
    "ant": _add_ant,
    "humanoid": _add_humanoid,
    "arm": _add_arm,
}
"""Robot name -> function adding one copy of the robot to a builder (second argument: a scratch directory)."""


def build_model(robot: str, worlds: int, device, tmp_dir: str) -> newton.Model:
    """Finalize a model holding ``worlds`` copies of ``robot``, z up, gravity ``-9.81`` m/s^2 along z."""
    single = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    ROBOTS[robot](single, tmp_dir)
    scene = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    scene.replicate(single, worlds)
    return scene.finalize(device=device)


def initial_state(model: newton.Model, seed: int = 0) -> newton.State:
    """State with limited dofs 10 % of their range inside their limits and random ``joint_qd`` in ±0.5."""
    state = model.state()
    q = state.joint_q.numpy()
    q_start, qd_start = model.joint_q_start.numpy(), model.joint_qd_start.numpy()
    lower, upper = model.joint_limit_lower.numpy(), model.joint_limit_upper.numpy()
    for j in range(model.joint_count):
        qs, qe, ds, de = q_start[j], q_start[j + 1], qd_start[j], qd_start[j + 1]
        if qe - qs != de - ds:  # FREE, BALL, DISTANCE: quaternion coordinates, unlimited
            continue
        lo, hi = lower[ds:de], upper[ds:de]
        limited = (hi - lo) < 1e6
        margin = 0.1 * (hi - lo)
        q[qs:qe] = np.where(limited, np.clip(q[qs:qe], lo + margin, hi - margin), q[qs:qe])
    rng = np.random.default_rng(seed)
    qd = rng.uniform(-0.5, 0.5, model.joint_dof_count).astype(np.float32)
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    return state


# ----------------------------------------------------------------------------------------------------------------
# Measurements


@contextlib.contextmanager
def count_launches():
    """Count ``wp.launch`` and ``wp.launch_tiled`` calls made inside the block; yields a one-element list."""
    count = [0]
    originals = wp.launch, wp.launch_tiled

    def wrap(fn):
        def counted(*args, **kwargs):
            count[0] += 1
            return fn(*args, **kwargs)

        return counted

    wp.launch, wp.launch_tiled = wrap(originals[0]), wrap(originals[1])
    try:
        yield count
    finally:
        wp.launch, wp.launch_tiled = originals


class Stepper:
    """A solver with its own pair of states, restartable from a shared initial state; with ``graph`` each step
    replays a captured Warp graph (one per state parity and dt)."""

    def __init__(self, solver: newton.solvers.SolverBase, model: newton.Model, init: newton.State, graph=False):
        self.solver, self.model, self.init = solver, model, init
        self.graphs = StepGraphs(model.device, graph)  # keyed by state parity and dt
        self.states = [model.state(), model.state()]
        self.control = model.control()
        self.current = 0

    def reset(self) -> None:
        """Copy the initial joint and body state into the current state."""
        self.current = 0
        s = self.states[0]
        for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
            wp.copy(getattr(s, name), getattr(self.init, name))

    def run(self, steps: int, dt: float) -> None:
        """Take ``steps`` steps of ``dt`` [s] without contacts (no synchronization)."""
        for _ in range(steps):
            src, dst = self.states[self.current], self.states[1 - self.current]
            self.graphs((self.current, dt), lambda: self.solver.step(src, dst, self.control, None, dt))  # noqa: B023
            self.current = 1 - self.current

    @property
    def state(self) -> newton.State:
        """The latest state."""
        return self.states[self.current]


@dataclass
class Result:
    """Measurements of one (robot, worlds) pair; times are medians over the repeats."""

    robot: str
    dofs: int
    worlds: int
    steps: int
    seconds: dict[str, float]
    launches: dict[str, int]
    diff: tuple[float, float]
    diff_no_passive: tuple[float, float]

    def ms_per_step(self, solver: str) -> float:
        return 1e3 * self.seconds[solver] / self.steps

    def env_steps_per_s(self, solver: str) -> float:
        return self.worlds * self.steps / self.seconds[solver]


def _steps_for(worlds: int, steps: int | None) -> int:
    """Timed steps per repeat: ``steps`` if given, else ``round(2000 / sqrt(worlds))`` (at least 10)."""
    if steps is not None:
        return steps
    return max(10, round(2000 / np.sqrt(worlds)))


@contextlib.contextmanager
def without_passive_joint_forces(model: newton.Model):
    """Zero ``joint_damping`` and ``joint_stiffness`` of ``model`` inside the block, then restore them."""
    saved = [(a, wp.clone(a)) for a in (model.joint_damping, model.joint_stiffness)]
    for a, _ in saved:
        a.zero_()
    try:
        yield
    finally:
        for a, copy in saved:
            wp.copy(a, copy)


def compare(steppers: dict[str, Stepper], dt: float) -> tuple[float, float]:
    """Largest ``|joint_q|`` and ``|joint_qd|`` differences between the two solvers after
    :data:`SANITY_STEPS` steps from the initial state."""
    for s in steppers.values():
        s.reset()
        s.run(SANITY_STEPS, dt)
    a, b = (s.state for s in steppers.values())
    return (
        float(np.max(np.abs(a.joint_q.numpy() - b.joint_q.numpy()))),
        float(np.max(np.abs(a.joint_qd.numpy() - b.joint_qd.numpy()))),
    )


def bench(robot: str, worlds: int, args, tmp_dir: str) -> Result:
    """Sanity-check, count launches and time both solvers on one model (see the module docstring)."""
    device = wp.get_device(args.device)
    model = build_model(robot, worlds, device, tmp_dir)
    init = initial_state(model)
    steppers = {
        "SAP": Stepper(newton_sap.SolverSAP(model, coriolis=args.coriolis), model, init, args.graph),
        "Featherstone": Stepper(newton.solvers.SolverFeatherstone(model, angular_damping=0.0), model, init, args.graph),
    }
    diff = compare(steppers, args.dt)
    with without_passive_joint_forces(model):
        diff_no_passive = compare(steppers, args.dt)

    launches = {}
    for name, s in steppers.items():
        graph, s.graphs.enabled = s.graphs.enabled, False  # count the launches a step issues (a graph replays them)
        with count_launches() as count:
            s.run(1, args.dt)
        s.graphs.enabled = graph
        launches[name] = count[0]

    steps = _steps_for(worlds, args.steps)
    times: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(args.repeats):
        for name, s in steppers.items():
            s.reset()
            wp.synchronize_device(device)
            t0 = time.perf_counter()
            s.run(steps, args.dt)
            wp.synchronize_device(device)
            times[name].append(time.perf_counter() - t0)
    return Result(
        robot=robot,
        dofs=model.joint_dof_count // worlds,
        worlds=worlds,
        steps=steps,
        seconds={name: statistics.median(t) for name, t in times.items()},
        launches=launches,
        diff=diff,
        diff_no_passive=diff_no_passive,
    )


# ----------------------------------------------------------------------------------------------------------------
# Report


def markdown(results: list[Result], args, elapsed: float) -> str:
    """The run's settings and a Markdown table of ``results``."""
    device = wp.get_device(args.device)
    header = [
        f"- date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- command: `{' '.join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])}`",
        f"- device: {device.alias} ({device.name if device.is_cuda else cpu_name()}, {os.cpu_count()} logical CPUs)",
        f"- newton {newton.__version__}, warp {wp.config.version}, python {platform.python_version()}",
        f"- dt = {args.dt} s, gravity {GRAVITY} m/s^2, contacts=None, median of {args.repeats} repeats, "
        f"total run time {elapsed:.0f} s",
        f"- steps: {'replayed Warp graphs (--graph)' if args.graph else 'launched kernel by kernel'}",
        f"- SolverSAP(coriolis={args.coriolis!r}); FS = Featherstone (angular_damping=0); dq / dqd: largest "
        f"joint_q / joint_qd difference between the solvers after {SANITY_STEPS} steps, over all worlds",
        "",
    ]
    cols = [
        "robot", "dofs", "worlds", "steps", "SAP ms/step", "FS ms/step", "SAP env-steps/s", "FS env-steps/s",
        "SAP/FS", "SAP launches/step", "FS launches/step", "max dq / dqd (as is)",
        "max dq / dqd (no damping, stiffness)",
    ]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" if i > 0 else "---" for i in range(len(cols))) + "|"]
    for r in results:
        ratio = r.env_steps_per_s("SAP") / r.env_steps_per_s("Featherstone")
        row = [
            r.robot, str(r.dofs), str(r.worlds), str(r.steps),
            f"{r.ms_per_step('SAP'):.3f}", f"{r.ms_per_step('Featherstone'):.3f}",
            f"{r.env_steps_per_s('SAP'):,.0f}", f"{r.env_steps_per_s('Featherstone'):,.0f}",
            f"{ratio:.2f}x", str(r.launches["SAP"]), str(r.launches["Featherstone"]),
            f"{r.diff[0]:.1e} / {r.diff[1]:.1e}", f"{r.diff_no_passive[0]:.1e} / {r.diff_no_passive[1]:.1e}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(header + lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", choices=list(ROBOTS), default=list(ROBOTS))
    parser.add_argument("--worlds", nargs="+", type=int, default=[1, 64, 1024])
    parser.add_argument("--steps", type=int, default=None, help="timed steps per repeat (default 2000/sqrt(worlds))")
    parser.add_argument("--dt", type=float, default=2e-3, help="time step [s] (default 2e-3)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per solver; the median is kept")
    parser.add_argument("--graph", action="store_true", help="time steps replayed from captured Warp graphs")
    parser.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    parser.add_argument(
        "--coriolis",
        choices=["midpoint", "explicit"],
        default="midpoint",
        help="SolverSAP's coriolis option: 'explicit' takes the velocity products at v0 as Featherstone does",
    )
    parser.add_argument("--out", default=None, help="also write the Markdown report to this file")
    args = parser.parse_args(argv)

    wp.init()
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_free_motion_") as tmp_dir:
        for robot in args.robots:
            for worlds in args.worlds:
                r = bench(robot, worlds, args, tmp_dir)
                print(
                    f"{robot:>8} x{worlds:<5} SAP {r.ms_per_step('SAP'):9.3f} ms/step, "
                    f"Featherstone {r.ms_per_step('Featherstone'):9.3f} ms/step",
                    flush=True,
                )
                results.append(r)
    report = markdown(results, args, time.perf_counter() - start)
    print()
    print(report, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
