"""PD tracking of a moving joint-space target with :class:`newton_sap.SolverSAP`, Newton's ``SolverMuJoCo``
(mujoco_warp backend) and ``SolverFeatherstone``: step time, tracking error and convergence.

Scenes (one robot builder, ``ModelBuilder.replicate``-d to each world count):

* ``panda``: example-robot-data's Panda URDF (``<visual>``/``<collision>`` stripped), fixed base, the two
  finger joints turned into fixed joints (no mimic coupling), so 7 driven dofs; gravity on, no contacts
  (``contacts=None``, no collision pipeline).  Gains are libfranka's joint-impedance example gains,
  Kp = (600, 600, 600, 600, 250, 150, 50) N·m/rad, Kd = (50, 50, 50, 50, 30, 25, 15) N·m·s/rad; the URDF's
  joint damping (0.003) and effort limits (87 / 12 N·m) are kept; armature 0.1 kg·m² on every joint
  (MuJoCo Menagerie's Panda value: rotor inertia; the URDF has none, and with armature 0 Featherstone's
  explicit PD diverges on the light last joint even at dt = 0.001 s).  Target
  ``q_d(t) = q0 + 0.3 sin(2π · 0.5 t + φ)`` per joint about the pose
  ``q0 = (0, -0.785, 0, -2.356, 0, 1.571, 0.785)``.
* ``quadruped``: Newton's bundled ``quadruped.urdf`` (floating, 12 driven leg dofs, cylinder feet,
  ``ignore_inertial_definitions=True``), armature 0.01, mu 1.0, Kp = 2000, Kd = 10 on the legs (the free
  root joint is not driven), torso dropped from z = 0.7 m onto a ground plane (added once after
  ``replicate``, shared by all worlds) in the stance ``q0 = (0.2, 0.4, -0.6, -0.2, -0.4, 0.6, -0.2, 0.4,
  -0.6, 0.2, -0.4, 0.6)``.  Target ``q_d(t) = q0 + 0.1 sin(2π · 1 t + φ)`` per leg joint; contacts on.

Phases: ``φ = 2π (k / n + w / W)`` for driven dof k of n in world w of W, so joints and worlds differ.  The
drives are Newton's: ``model.joint_target_mode = POSITION``, ``joint_target_ke`` / ``joint_target_kd``, set
on the model before the solvers are built, and ``Control.joint_target_q`` is written before every step with
``q_d`` at the step's end time.  SAP treats the drives implicitly (as SAP constraints, with its effort
limits), MuJoCo as position actuators (``gainprm``/``biasprm``, ``forcerange`` = effort limit) that it
builds at construction, Featherstone as explicit PD joint forces (it ignores ``joint_target_mode`` and effort
limits).

Solvers, each with its own states, control and (SAP, Featherstone) ``CollisionPipeline`` run before every
step of the quadruped: ``SAP`` (defaults), ``MuJoCo`` (``use_mujoco_cpu=False``, its own collision
detection, stepped with ``contacts=None``; other options default) and ``Featherstone`` (defaults).  Every
solver starts from the same initial state (``q_d(0)``, zero velocity) with the same ``dt``.

Each scene runs in a child process; per (scene, worlds, solver), an exception is recorded in the table,
and a job that takes its process down (a native abort) is recorded with the end of its stderr, the
scene's remaining jobs going on in a fresh process.  Per job:

1. Warm-up: ``--warmup`` seconds of simulated time (kernel compilation, the start transient; the quadruped
   lands and settles).
2. Timed window: N steps, each (target update, collision, step) between two ``wp.synchronize_device()``
   calls; reading back ``joint_q`` for the error and SAP's ``stats`` is excluded.  N = ``--window`` / dt
   at 1 world, divided by worlds^(1/4) (64 and 1024 worlds time a 2.8× and 5.7× shorter window).  Tracking error
   ``q - q_d`` over the driven dofs of all worlds, after every timed step: RMS and max |.|.
3. Sanity, on the final state: NaN, max |joint_qd|, and for the quadruped the torso height (root body z,
   mean and min over worlds) and uprightness (min over worlds of the torso z axis' z component; fallen if
   < 0.7).  A job whose final state is non-finite, has max |joint_qd| > 100 or (quadruped) a fallen world
   is rerun at ``--fallback-dt`` over the same simulated warm-up and window (an extra row), up to
   ``--fallback-max-worlds`` worlds (a rerun at 1024 worlds would take most of the time budget).

Usage::

    python benchmarks/bench_pd.py [--scenes panda quadruped] [--worlds 1 64 1024]
        [--solvers SAP MuJoCo Featherstone] [--dt 0.005] [--window 2.0] [--warmup 0.5]
        [--fallback-dt 0.001] [--fallback-max-worlds 64] [--device cpu] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import pickle
import platform
import shlex
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING

import newton  # noqa: E402
import newton.examples  # noqa: E402
from common import cpu_name, dynamics_only_urdf, error_text, example_robot_data, run_jobs_in_children  # noqa: E402

import newton_sap  # noqa: E402

GRAVITY = 9.81
"""Magnitude of gravity [m/s^2], along -z."""

EXPLODED_QD = 100.0
"""A job whose final ``max |joint_qd|`` exceeds this [rad/s or m/s] is marked exploded."""

UPRIGHT_MIN = 0.7
"""The quadruped has fallen in a world whose torso z axis has a world z component below this (45° tilt)."""


PANDA_ARMATURE = 0.1
"""Armature [kg·m^2] of every Panda joint (MuJoCo Menagerie's ``panda.xml`` value; the URDF has none)."""

# ----------------------------------------------------------------------------------------------------------------
# Scenes


def _add_panda(b: newton.ModelBuilder, tmp_dir: str) -> None:
    urdf = dynamics_only_urdf(
        example_robot_data("panda_description/urdf/panda.urdf"),
        tmp_dir,
        fixed_joints=("panda_finger_joint1", "panda_finger_joint2"),
    )
    b.default_joint_cfg.armature = PANDA_ARMATURE
    b.add_urdf(urdf, floating=False, enable_self_collisions=False)


def _add_quadruped(b: newton.ModelBuilder, tmp_dir: str) -> None:
    b.default_joint_cfg.armature = 0.01
    b.default_shape_cfg.mu = 1.0
    b.add_urdf(
        newton.examples.get_asset("quadruped.urdf"),
        xform=wp.transform((0.0, 0.0, 0.7), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
        ignore_inertial_definitions=True,
    )


@dataclass(frozen=True)
class Scene:
    """A PD tracking scene: one robot, its drive gains and its target trajectory."""

    add: Callable[[newton.ModelBuilder, str], None]
    """Adds one robot to a builder (second argument: a scratch directory)."""
    q0: tuple[float, ...]
    """Nominal pose of the driven dofs (the last ``len(q0)`` coordinates of a world), also the start pose."""
    ke: tuple[float, ...]
    """Drive stiffness per driven dof [N·m/rad]."""
    kd: tuple[float, ...]
    """Drive damping per driven dof [N·m·s/rad]."""
    amplitude: float
    """Target amplitude [rad]."""
    frequency: float
    """Target frequency [Hz]."""
    ground: bool
    """Add a ground plane and run collision detection (contacts on)."""


SCENES: dict[str, Scene] = {
    "panda": Scene(
        _add_panda,
        q0=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
        ke=(600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0),
        kd=(50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0),
        amplitude=0.3,
        frequency=0.5,
        ground=False,
    ),
    "quadruped": Scene(
        _add_quadruped,
        q0=(0.2, 0.4, -0.6, -0.2, -0.4, 0.6, -0.2, 0.4, -0.6, 0.2, -0.4, 0.6),
        ke=(2000.0,) * 12,
        kd=(10.0,) * 12,
        amplitude=0.1,
        frequency=1.0,
        ground=True,
    ),
}
"""Scene name -> scene."""


@dataclass
class Trajectory:
    """Target trajectory ``q_d(t) = base + amplitude sin(2π f t + phase)`` over all coordinates of a model
    (amplitude 0 on the coordinates that are not driven), and the indices of the driven coordinates."""

    base: wp.array
    amplitude: wp.array
    phase: wp.array
    frequency: float
    driven: np.ndarray


@wp.kernel
def _target_kernel(
    t: float,
    frequency: float,
    base: wp.array[float],
    amplitude: wp.array[float],
    phase: wp.array[float],
    target: wp.array[float],
):
    i = wp.tid()
    target[i] = base[i] + amplitude[i] * wp.sin(2.0 * wp.pi * frequency * t + phase[i])


def set_targets(traj: Trajectory, t: float, control: newton.Control) -> None:
    """Write ``q_d(t)`` into ``control.joint_target_q``."""
    wp.launch(
        _target_kernel,
        dim=traj.base.shape[0],
        inputs=[t, traj.frequency, traj.base, traj.amplitude, traj.phase],
        outputs=[control.joint_target_q],
        device=traj.base.device,
    )


def build(scene: str, worlds: int, device, tmp_dir: str) -> tuple[newton.Model, Trajectory]:
    """Finalize ``worlds`` copies of ``scene`` (plus the shared ground plane if it has one), z up, gravity
    along -z, with the drives configured and the start pose ``q_d(0)`` as ``model.joint_q``."""
    sc = SCENES[scene]
    single = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    sc.add(single, tmp_dir)
    n = len(sc.q0)
    if single.joint_dof_count < n or single.joint_coord_count - single.joint_dof_count not in (0, 1):
        raise ValueError(f"{scene}: {single.joint_coord_count} coordinates, {single.joint_dof_count} dofs")
    builder = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    builder.default_shape_cfg.mu = single.default_shape_cfg.mu
    builder.replicate(single, worlds)
    if sc.ground:
        builder.add_ground_plane()
    model = builder.finalize(device=device)

    # drives on the last n dofs of each world (they are the last n coordinates too: scalar joints)
    dofs, coords = single.joint_dof_count, single.joint_coord_count
    mode = np.full((worlds, dofs), int(newton.JointTargetMode.NONE), np.int32)
    mode[:, -n:] = int(newton.JointTargetMode.POSITION)
    ke, kd = np.zeros((worlds, dofs), np.float32), np.zeros((worlds, dofs), np.float32)
    ke[:, -n:], kd[:, -n:] = sc.ke, sc.kd
    model.joint_target_mode.assign(mode.ravel())
    model.joint_target_ke.assign(ke.ravel())
    model.joint_target_kd.assign(kd.ravel())

    q = model.joint_q.numpy().reshape(worlds, coords)
    q[:, -n:] = sc.q0
    amplitude, phase = np.zeros((worlds, coords)), np.zeros((worlds, coords))
    amplitude[:, -n:] = sc.amplitude
    phase[:, -n:] = 2.0 * np.pi * (np.arange(n)[None, :] / n + np.arange(worlds)[:, None] / worlds)
    traj = Trajectory(
        base=wp.array(q.ravel(), dtype=float, device=device),
        amplitude=wp.array(amplitude.ravel(), dtype=float, device=device),
        phase=wp.array(phase.ravel(), dtype=float, device=device),
        frequency=sc.frequency,
        driven=np.nonzero(amplitude.ravel())[0],
    )
    q[:, -n:] += sc.amplitude * np.sin(phase[:, -n:])  # start on the target
    model.joint_q.assign(q.ravel())
    return model, traj


# ----------------------------------------------------------------------------------------------------------------
# Solvers


SOLVERS = ("SAP", "MuJoCo", "Featherstone")


def make_solver(name: str, model: newton.Model) -> tuple[newton.solvers.SolverBase, bool]:
    """Solver ``name`` on ``model`` with the benchmark's options, and whether it needs Newton's contacts."""
    if name == "SAP":
        return newton_sap.SolverSAP(model), True
    if name == "Featherstone":
        return newton.solvers.SolverFeatherstone(model), True
    if name == "MuJoCo":
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="MuJoCo dependency version mismatch")
            return newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=False), False
    raise ValueError(f"unknown solver {name!r}")


class Stepper:
    """A solver with its own states, control and (when the scene has contacts and the solver uses Newton's)
    collision pipeline, driven along a target trajectory."""

    def __init__(self, name: str, model: newton.Model, traj: Trajectory, contacts_on: bool):
        self.model, self.traj = model, traj
        self.solver, needs_contacts = make_solver(name, model)
        self.pipeline = newton.CollisionPipeline(model) if contacts_on and needs_contacts else None
        self.contacts = self.pipeline.contacts() if self.pipeline is not None else None
        self.states = [model.state(), model.state()]
        self.control = model.control()
        self.current = 0
        self.t = 0.0

    def reset(self) -> None:
        """Restart at t = 0 from the model's ``joint_q`` (``q_d(0)``) at rest, bodies from FK."""
        self.current, self.t = 0, 0.0
        s = self.states[0]
        wp.copy(s.joint_q, self.model.joint_q)
        s.joint_qd.zero_()
        newton.eval_fk(self.model, s.joint_q, s.joint_qd, s)

    def step(self, dt: float) -> None:
        """Set the targets to ``q_d(t + dt)``, collide (if this solver uses Newton's contacts) and take one
        step of ``dt`` [s]."""
        self.t += dt
        set_targets(self.traj, self.t, self.control)
        src, dst = self.states[self.current], self.states[1 - self.current]
        if self.pipeline is not None:
            self.pipeline.collide(src, self.contacts)
        self.solver.step(src, dst, self.control, self.contacts, dt)
        self.current = 1 - self.current

    @property
    def state(self) -> newton.State:
        """The latest state."""
        return self.states[self.current]


# ----------------------------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Sanity:
    """Physical check of a final state; ``height``/``min_height``/``upright`` only for floating robots."""

    finite: bool
    max_qd: float
    height: float | None = None
    min_height: float | None = None
    upright: float | None = None

    @property
    def failed(self) -> bool:
        """Non-finite, exploded or (floating robot) fallen in some world."""
        fallen = self.upright is not None and not self.upright >= UPRIGHT_MIN
        return not self.finite or self.max_qd > EXPLODED_QD or fallen

    def text(self) -> str:
        if not self.finite:
            return "NaN"
        verdict = "exploded" if self.max_qd > EXPLODED_QD else "fallen" if self.failed else "ok"
        out = f"{verdict}: max qd {self.max_qd:.2g}"
        if self.height is not None:
            out += f", torso z {self.height:.3f} (min {self.min_height:.3f}), min up {self.upright:.3f}"
        return out


def sanity(model: newton.Model, state: newton.State) -> Sanity:
    """Sanity of ``state``; the torso is the first body of each world when the root joint is FREE."""
    qd, body_q = state.joint_qd.numpy(), state.body_q.numpy()
    if not (np.all(np.isfinite(qd)) and np.all(np.isfinite(body_q))):
        return Sanity(False, math.inf)
    result = Sanity(True, float(np.max(np.abs(qd))))
    if int(model.joint_type.numpy()[0]) == int(newton.JointType.FREE):
        root = body_q.reshape(model.world_count, -1, 7)[:, 0]
        x, y = root[:, 3], root[:, 4]  # quaternion (x, y, z, w)
        up_z = 1.0 - 2.0 * (x * x + y * y)  # z component of the torso's z axis
        result.height, result.min_height = float(np.mean(root[:, 2])), float(np.min(root[:, 2]))
        result.upright = float(np.min(up_z))
    return result


@dataclass
class Row:
    """One (scene, worlds, solver, dt) measurement, or the error that stopped it."""

    scene: str
    worlds: int
    solver: str
    dt: float
    steps: int = 0
    seconds: float = math.nan
    rms_error: float = math.nan
    max_error: float = math.nan
    iterations: np.ndarray | None = None
    """SAP: Newton iterations, shape (steps, worlds)."""
    converged: np.ndarray | None = None
    """SAP: per-step, per-world convergence flags."""
    sanity: Sanity | None = None
    error: str = ""

    @property
    def ms_per_step(self) -> float:
        return 1e3 * self.seconds / self.steps if self.steps else math.nan

    @property
    def env_steps_per_s(self) -> float:
        return self.worlds * self.steps / self.seconds if self.steps else math.nan


def timed_run(stepper: Stepper, row: Row, warmup: float) -> None:
    """Reset, warm up for ``warmup`` simulated seconds, take ``row.steps`` timed steps and fill ``row``."""
    device = stepper.model.device
    stepper.reset()
    for _ in range(round(warmup / row.dt)):
        stepper.step(row.dt)
    is_sap = isinstance(stepper.solver, newton_sap.SolverSAP)
    driven = stepper.traj.driven
    iterations, converged = [], []
    sum_sq, max_abs, elapsed = 0.0, 0.0, 0.0
    for _ in range(row.steps):
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        stepper.step(row.dt)
        wp.synchronize_device(device)
        elapsed += time.perf_counter() - t0
        err = (stepper.state.joint_q.numpy()[driven] - stepper.control.joint_target_q.numpy()[driven]).astype(
            np.float64
        )
        sum_sq += float(np.sum(err * err))
        max_abs = float(np.maximum(max_abs, np.max(np.abs(err))))  # NaN propagates
        if is_sap:
            stats = stepper.solver.stats
            iterations.append(stats.iterations)
            converged.append(stats.converged)
    row.seconds = elapsed
    row.rms_error = math.sqrt(sum_sq / (row.steps * len(driven)))
    row.max_error = max_abs
    if is_sap:
        row.iterations, row.converged = np.array(iterations), np.array(converged)
    row.sanity = sanity(stepper.model, stepper.state)


def run_job(scene: str, worlds: int, name: str, model: newton.Model, traj: Trajectory, args) -> list[Row]:
    """One solver on one (scene, worlds) model: a row at ``args.dt``, and one at ``args.fallback_dt`` (same
    simulated window) if the first failed its sanity check and ``worlds <= args.fallback_max_worlds``; an
    exception is recorded in the last row."""
    steps = max(5, round(args.window / args.dt / worlds**0.25))
    rows = [Row(scene, worlds, name, args.dt, steps=steps)]
    try:
        stepper = Stepper(name, model, traj, SCENES[scene].ground)
        timed_run(stepper, rows[0], args.warmup)
        if rows[0].sanity.failed and worlds <= args.fallback_max_worlds:
            rows.append(Row(scene, worlds, name, args.fallback_dt, steps=round(steps * args.dt / args.fallback_dt)))
            timed_run(stepper, rows[1], args.warmup)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        rows[-1].error = error_text(exc)
        rows[-1].steps = 0
    for r in rows:
        print(
            f"{scene:>9} x{worlds:<5} {name:<12} dt {r.dt:<6} "
            + (r.error or f"{r.ms_per_step:9.3f} ms/step  err rms {r.rms_error:.2e} max {r.max_error:.2e}  "
               f"{r.sanity.text()}"),
            flush=True,
        )  # fmt: skip
    return rows


def worker(job_dir: str) -> None:
    """Child process: run the jobs of ``job_dir/jobs.pkl`` in order, writing each job's rows to
    ``job_dir/<index>.pkl`` as soon as it is done (the parent finds where a crash happened from them)."""
    with open(os.path.join(job_dir, "jobs.pkl"), "rb") as f:
        jobs, args = pickle.load(f)
    device = wp.get_device(args.device)
    models: dict[tuple[str, int], tuple] = {}
    for index, (scene, worlds, name) in enumerate(jobs):
        if (scene, worlds) not in models:
            models.clear()  # one model at a time
            try:
                models[(scene, worlds)] = build(scene, worlds, device, job_dir)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                models[(scene, worlds)] = (None, error_text(exc))
        model, traj = models[(scene, worlds)]
        if model is None:
            rows = [Row(scene, worlds, name, args.dt, error=f"model build failed: {traj}")]
        else:
            rows = run_job(scene, worlds, name, model, traj, args)
        with open(os.path.join(job_dir, f"{index}.pkl"), "wb") as f:
            pickle.dump(rows, f)


def bench_scene(scene: str, args) -> list[Row]:
    """All (worlds, solver) jobs of ``scene``, in child processes: a job that takes its process down is
    recorded with the end of its stderr, and the remaining jobs go on in a fresh process."""
    jobs = [(scene, worlds, name) for worlds in args.worlds for name in args.solvers]

    def crashed(job, reason):
        _, worlds, name = job
        return [Row(scene, worlds, name, args.dt, error=reason)]

    return run_jobs_in_children(__file__, jobs, args, crashed)


# ----------------------------------------------------------------------------------------------------------------
# Report


def _sap_columns(row: Row) -> list[str]:
    """Mean / max Newton iterations per step and the converged fraction (SAP rows only)."""
    if row.iterations is None:
        return ["", "", ""]
    return [f"{row.iterations.mean():.2f}", str(int(row.iterations.max())), f"{row.converged.mean():.3f}"]


def markdown(rows: list[Row], args, elapsed: float) -> str:
    """The run's settings and a Markdown table of ``rows``."""
    device = wp.get_device(args.device)
    header = [
        f"- date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- command: `{' '.join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])}`",
        f"- device: {device.alias} ({device.name if device.is_cuda else cpu_name()}, {os.cpu_count()} logical CPUs)",
        f"- newton {newton.__version__}, warp {wp.config.version}, python {platform.python_version()}, "
        f"newton_sap from {os.path.dirname(newton_sap.__file__)}",
        f"- dt = {args.dt} s (rows marked otherwise: rerun at --fallback-dt after a failed sanity check), warm-up "
        f"{args.warmup} s simulated, timed window {args.window} s / worlds^(1/4), reruns up to "
        f"{args.fallback_max_worlds} worlds, total run time {elapsed:.0f} s",
        "",
    ]
    cols = [
        "scene", "worlds", "solver", "dt [s]", "steps", "ms/step", "env-steps/s", "vs SAP (env-steps/s)",
        "RMS err [rad]", "max err [rad]", "SAP iters mean", "SAP iters max", "SAP converged", "final state",
    ]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * 10 + ["---"]) + "|"]
    sap_rate = {(r.scene, r.worlds): r.env_steps_per_s for r in rows if r.solver == "SAP" and r.dt == args.dt}
    for r in rows:
        if r.error:
            lines.append(f"| {r.scene} | {r.worlds} | {r.solver} | {r.dt} | | | | | | | | | | error: {r.error} |")
            continue
        base = sap_rate.get((r.scene, r.worlds))
        ratio = f"{r.env_steps_per_s / base:.2f}x" if base and not math.isnan(base) else "n/a"
        cells = [
            r.scene, str(r.worlds), r.solver, str(r.dt), str(r.steps), f"{r.ms_per_step:.2f}",
            f"{r.env_steps_per_s:,.0f}", ratio, f"{r.rms_error:.2e}", f"{r.max_error:.2e}", *_sap_columns(r),
            r.sanity.text(),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(header + lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", nargs="+", choices=list(SCENES), default=list(SCENES))
    parser.add_argument("--worlds", nargs="+", type=int, default=[1, 64, 1024])
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    parser.add_argument("--dt", type=float, default=0.005, help="time step [s] (default 0.005)")
    parser.add_argument(
        "--window", type=float, default=2.0, help="timed simulated seconds at 1 world; divided by worlds^(1/4)"
    )
    parser.add_argument("--warmup", type=float, default=0.5, help="untimed simulated seconds first (default 0.5)")
    parser.add_argument("--fallback-dt", type=float, default=0.001, help="time step [s] of reruns after failures")
    parser.add_argument("--fallback-max-worlds", type=int, default=64, help="no reruns above this world count")
    parser.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    parser.add_argument("--out", default=None, help="also write the Markdown report to this file")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    wp.init()
    if args.worker:
        worker(args.worker)
        return
    start = time.perf_counter()
    rows: list[Row] = []
    for scene in args.scenes:
        rows += bench_scene(scene, args)
    report = markdown(rows, args, time.perf_counter() - start)
    print()
    print(report, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
