"""Step time and behaviour with contact of :class:`newton_sap.SolverSAP` next to Newton's ``SolverFeatherstone``
and ``SolverMuJoCo`` (mujoco_warp backend).

Scenes (one scene builder, ``ModelBuilder.replicate``-d to each world count; a ground plane is then added to
the replicated builder once, so it is a single static shape shared by all worlds):

* ``ant``: Newton's ``nv_ant.xml`` (floating, 14 dofs), torso at the file's 0.75 m, dropping onto the ground.
* ``humanoid``: Newton's ``nv_humanoid.xml`` (floating, 27 dofs, no self collisions), root at 1.4 m (feet
  just above the ground); it lands and, unactuated, collapses.
* ``boxes``: a stack of 5 cubes (0.1 m half extent, 1 kg, mu 0.5, free bodies, 30 dofs) resting on each
  other on the ground, faces touching.
* ``spheres``: 50 spheres (radius 0.05 m, free bodies, 300 dofs in one world) dropped into a bin made of
  four static box walls on the ground.
* ``snake`` (not in the default run): a snake of 66 boxes on vertical hinges (one tree of 71 dofs, FREE root, above
  ``dense_max_dofs`` = 64), in a gentle S lying 1 cm above the ground; it drops and rests on about 390 contacts.
* ``allegro`` (not in the default run): the right Allegro hand (16 revolute dofs on a fixed base, links of 10-65 g),
  palm up under PD holding a shallow cup, catches a free 5 cm, 100 g cube dropped 2 cm onto its fingers (22 dofs);
  ``newton_sap.examples.scenes.allegro_builder``, whose drive gains every solver reads from the model.

Every solver steps the same model from the same initial state, with the same ``dt`` and default options
(Featherstone: its defaults; MuJoCo: ``use_mujoco_cpu=False`` and the scene's ``nconmax``/``njmax``;
SAP: its defaults, contact stiffness 1e6 N/m).  SAP and Featherstone each get their own
``CollisionPipeline`` (run before every step); MuJoCo runs its own collision detection
(``use_mujoco_contacts=True``, Newton's examples' default) and is stepped with ``contacts=None``.
The models keep the shape materials Newton gives them (default ``ke = 2.5e3`` N/m, ``kd = 100``), which
Featherstone and MuJoCo use; SAP overrides stiffness and dissipation with its own options.

Each scene runs in a child process (the stable-dt sweep runs first, in the main process).  Per
(scene, worlds, solver), a ``try``/``except`` records any exception in the table and carries on; a job that
takes its process down (a native abort, which Python cannot catch) is recorded with the end of its stderr
and the scene's remaining jobs go on in a fresh process:

1. Warm-up: ``--warmup`` seconds of simulated time from the initial state (kernel compilation, and the
   bodies reach the ground, so the timed steps have contacts).
2. Timing: N more steps, each between two ``wp.synchronize_device()`` calls (the time spent reading
   SAP's per-step ``stats`` is excluded); ms/step, env-steps/s = worlds * N / seconds, and simulated
   seconds per wall-clock second (sim-s/s = env-steps/s * dt, which compares rows of different dt).
   By default N = ``--steps`` / sqrt(worlds) (at least 5), and per-scene factors below.
3. Sanity, on the final state: NaN, largest ``|joint_qd|``, the scene's height measure (root body height
   of the robots, top box height of the stack, mean sphere height of the pile; the mean over worlds),
   and the largest penetration, computed from a fresh ``CollisionPipeline`` run on that state with the
   signed distance SAP uses (``n . (p1 - p0) - (r0 + r1)``).  A run whose final state is non-finite or has
   ``|joint_qd| > 100`` is marked "exploded" and repeated at ``--fallback-dt`` with the same number of steps
   (an extra row), so each solver also has a row at a time step it can take.

With ``--graph`` every solver's step (collision included) is captured once per state parity and time step
into a Warp graph (CUDA graph, or Warp's CPU graph replayed in C++) and the timed steps replay it, as
Newton's examples do on GPUs; this removes the per-launch Python overhead. A solver whose step cannot be
captured gets an error row.

First (before the scenes), the largest stable time step on ``--sweep-scene`` (default the ant, in
``--sweep-worlds`` = 1 world, same drop): for each dt in ``--sweep-dts``, ``--sweep-seconds`` (2) s of simulated
time; stable = finite, max ``|joint_qd|`` < 10 over the last half of the run and the final height measure in
the scene's sane range (ant torso [0.1, 1.0] m, mean sphere height of the pile [0.045, 0.15] m). Only the sweep
runs with ``--scenes`` left empty.

Usage::

    python benchmarks/bench_contact.py [--scenes ant humanoid boxes spheres snake allegro] [--worlds 1 64 1024]
        [--solvers SAP Featherstone MuJoCo] [--dt 0.01] [--steps 200] [--warmup 0.5] [--fallback-dt 0.002]
        [--sweep-dts 0.002 0.005 0.01 0.02 0.04] [--sweep-scene ant] [--sweep-worlds 1] [--sweep-seconds 2]
        [--no-sweep] [--graph] [--device cpu]
        [--sap KEY=VALUE ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
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
from dataclasses import dataclass, field

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING

import newton  # noqa: E402
import newton.examples  # noqa: E402
from common import cpu_name, error_text, run_jobs_in_children  # noqa: E402

import newton_sap  # noqa: E402
from newton_sap.diagnostics import max_penetration  # noqa: E402
from newton_sap.examples.scenes import allegro_builder, snake_builder  # noqa: E402
from newton_sap.graphs import StepGraphs  # noqa: E402

GRAVITY = 9.81
"""Magnitude of gravity [m/s^2], along -z."""

EXPLODED_QD = 100.0
"""A timed run whose final ``max |joint_qd|`` exceeds this [rad/s or m/s] is marked exploded."""

SWEEP_MAX_QD = 10.0
"""Stable-dt sweep: largest ``|joint_qd|`` [rad/s or m/s] of a stable run over the last half of its time."""


# ----------------------------------------------------------------------------------------------------------------
# Scenes


def _add_ant(b: newton.ModelBuilder) -> None:
    b.add_mjcf(newton.examples.get_asset("nv_ant.xml"), floating=True, enable_self_collisions=False)


def _add_humanoid(b: newton.ModelBuilder) -> None:
    b.add_mjcf(
        newton.examples.get_asset("nv_humanoid.xml"),
        xform=wp.transform((0.0, 0.0, 1.4), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
    )


def _add_boxes(b: newton.ModelBuilder, count: int = 5, half: float = 0.1, mass: float = 1.0) -> None:
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.5, density=mass / (2.0 * half) ** 3)
    for k in range(count):
        body = b.add_body(xform=wp.transform((0.0, 0.0, half * (2 * k + 1)), wp.quat_identity()))
        b.add_shape_box(body, hx=half, hy=half, hz=half, cfg=cfg)


def _add_spheres(b: newton.ModelBuilder, count: int = 50, radius: float = 0.05) -> None:
    """Four static walls (inner half width 0.3 m, 0.4 m high) and ``count`` spheres on a 5 x 5 grid of
    layers 0.12 m apart, the lowest at 0.15 m, with a fixed +-1 cm horizontal jitter so the pile is not a lattice."""
    inner, thick, height = 0.3, 0.02, 0.4
    wall = newton.ModelBuilder.ShapeConfig(mu=0.5)
    for axis in (0, 1):
        for side in (-1.0, 1.0):
            pos = [0.0, 0.0, 0.5 * height]
            pos[axis] = side * (inner + thick)
            hx, hy = (thick, inner + 2 * thick) if axis == 0 else (inner + 2 * thick, thick)
            b.add_shape_box(-1, xform=wp.transform(pos, wp.quat_identity()), hx=hx, hy=hy, hz=0.5 * height, cfg=wall)
    rng = np.random.default_rng(0)
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.5)
    for k in range(count):
        layer, i, j = k // 25, (k // 5) % 5, k % 5
        x, y = 0.12 * (i - 2), 0.12 * (j - 2)
        dx, dy = rng.uniform(-0.01, 0.01, 2)
        body = b.add_body(xform=wp.transform((x + dx, y + dy, 0.15 + 0.12 * layer), wp.quat_identity()))
        b.add_shape_sphere(body, radius=radius, cfg=cfg)


def _add_snake(b: newton.ModelBuilder) -> None:
    b.add_builder(snake_builder())


def _add_allegro(b: newton.ModelBuilder) -> None:
    b.add_builder(allegro_builder())


@dataclass(frozen=True)
class Scene:
    """A benchmark scene: how to build one world, and what to measure on it."""

    add: Callable[[newton.ModelBuilder], None]
    height_label: str
    """What :meth:`height` measures (table column text)."""
    height_bodies: str
    """``"root"``: body 0 of each world; ``"last"``: last body of each world; ``"all"``: every body."""
    steps_factor: float = 1.0
    """Multiplies the default number of timed steps (heavy scenes take fewer)."""
    mujoco: dict = field(default_factory=dict)
    """Extra ``SolverMuJoCo`` arguments (contact and constraint capacities per world)."""
    sweep_height: tuple[float, float] = (0.0, float("inf"))
    """Stable-dt sweep: sane range [m] of the final height measure."""

    def height(self, model: newton.Model, body_q: np.ndarray) -> float:
        """Mean over worlds of the scene's height measure [m] (body origin z)."""
        per_world = model.body_count // model.world_count
        z = body_q[:, 2].reshape(model.world_count, per_world)
        if self.height_bodies == "root":
            return float(np.mean(z[:, 0]))
        if self.height_bodies == "last":
            return float(np.mean(z[:, -1]))
        return float(np.mean(z))


SCENES: dict[str, Scene] = {
    "ant": Scene(_add_ant, "torso z", "root", sweep_height=(0.1, 1.0)),  # its torso sphere has radius 0.25
    "humanoid": Scene(_add_humanoid, "torso z", "root", steps_factor=0.5, sweep_height=(0.05, 1.6)),
    "boxes": Scene(
        _add_boxes, "top box z (rest 0.9)", "last", mujoco={"nconmax": 64, "njmax": 256}, sweep_height=(0.85, 0.95)
    ),  # fmt: skip
    "spheres": Scene(
        _add_spheres,
        "mean sphere z",
        "all",
        steps_factor=0.25,
        mujoco={"nconmax": 2000, "njmax": 8000},
        sweep_height=(0.045, 0.15),
    ),  # fmt: skip  # radius 0.05: resting, at most a few mm into contact
    "snake": Scene(
        _add_snake, "mean link z (rest 0.03)", "all", mujoco={"nconmax": 400, "njmax": 2400}, sweep_height=(0.02, 0.05)
    ),  # fmt: skip
    "allegro": Scene(
        _add_allegro,
        "cube z (in the hand 0.33-0.36)",
        "last",
        mujoco={"nconmax": 64, "njmax": 384},
        sweep_height=(0.33, 0.36),
    ),
}
"""Scene name -> scene, in the default run order (the sphere pile last of issue 3's scenes, then the snake and the
hand)."""
DEFAULT_SCENES = ("ant", "humanoid", "boxes", "spheres")
"""Issue 3's scenes, run by default."""


def build_model(scene: str, worlds: int, device) -> newton.Model:
    """Finalize ``worlds`` copies of ``scene`` plus one shared ground plane, z up, gravity along -z."""
    single = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    SCENES[scene].add(single)
    builder = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    builder.replicate(single, worlds)
    builder.add_ground_plane()
    return builder.finalize(device=device)


# ----------------------------------------------------------------------------------------------------------------
# Solvers


def make_solver(
    name: str, model: newton.Model, scene: str, sap_options: dict | None = None
) -> tuple[newton.solvers.SolverBase, bool]:
    """Solver ``name`` on ``model`` with the benchmark's options (``sap_options``: keyword options of
    ``SolverSAP``), and whether it needs Newton's contacts."""
    if name == "SAP":
        return newton_sap.SolverSAP(model, **(sap_options or {})), True
    if name == "Featherstone":
        return newton.solvers.SolverFeatherstone(model), True
    if name == "MuJoCo":
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="MuJoCo dependency version mismatch")
            solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=False, **SCENES[scene].mujoco)
        return solver, False
    raise ValueError(f"unknown solver {name!r}")


SOLVERS = ("SAP", "Featherstone", "MuJoCo")


def sap_options(pairs: list[str], flag: str = "--sap") -> dict:
    """``KEY=VALUE`` pairs (of the command-line option ``flag``) as ``SolverSAP`` keyword options (values parsed as
    Python literals)."""
    options = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{flag} expects KEY=VALUE, got {item!r}")
        options[key] = ast.literal_eval(value)
    return options


class Stepper:
    """A solver with its own states, control and (when it needs them) collision pipeline and contacts;
    with ``graph``, each step replays a captured graph (one per state parity and dt)."""

    def __init__(self, name: str, model: newton.Model, scene: str, graph: bool = False, sap_options=None):
        self.name, self.model = name, model
        self.graphs = StepGraphs(model.device, graph)  # keyed by state parity and dt
        self.solver, needs_contacts = make_solver(name, model, scene, sap_options)
        self.pipeline = newton.CollisionPipeline(model) if needs_contacts else None
        self.contacts = self.pipeline.contacts() if needs_contacts else None
        self.states = [model.state(), model.state()]
        self.control = model.control()
        self.current = 0

    def reset(self) -> None:
        """Restart from the model's initial state (``joint_q``, zero velocity, bodies from FK)."""
        self.current = 0
        s = self.states[0]
        wp.copy(s.joint_q, self.model.joint_q)
        s.joint_qd.zero_()
        newton.eval_fk(self.model, s.joint_q, s.joint_qd, s)

    def step(self, dt: float) -> None:
        """Collide (if this solver uses Newton's contacts) and take one step of ``dt`` [s]."""
        src, dst = self.states[self.current], self.states[1 - self.current]
        self.graphs((self.current, dt), lambda: self._launch(src, dst, dt))
        self.current = 1 - self.current

    def _launch(self, src: newton.State, dst: newton.State, dt: float) -> None:
        if self.pipeline is not None:
            self.pipeline.collide(src, self.contacts)
        self.solver.step(src, dst, self.control, self.contacts, dt)

    @property
    def state(self) -> newton.State:
        """The latest state."""
        return self.states[self.current]


# ----------------------------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Sanity:
    """Physical check of a final state."""

    finite: bool
    max_qd: float
    height: float
    penetration: float

    @property
    def exploded(self) -> bool:
        return not self.finite or self.max_qd > EXPLODED_QD

    def text(self) -> str:
        if not self.finite:
            return "NaN"
        verdict = "exploded" if self.exploded else "ok"
        return f"{verdict}: h {self.height:.3f}, pen {1e3 * self.penetration:.1f} mm, max qd {self.max_qd:.2g}"


def sanity(scene: str, model: newton.Model, state: newton.State, probe) -> Sanity:
    """Sanity of ``state``; ``probe`` is a (pipeline, contacts) pair used only for the penetration."""
    qd, body_q = state.joint_qd.numpy(), state.body_q.numpy()
    finite = bool(np.all(np.isfinite(qd)) and np.all(np.isfinite(body_q)))
    if not finite:
        return Sanity(False, math.inf, math.nan, math.nan)
    pipeline, contacts = probe
    pipeline.collide(state, contacts)
    return Sanity(
        finite=True,
        max_qd=float(np.max(np.abs(qd))),
        height=SCENES[scene].height(model, body_q),
        penetration=max_penetration(model, state, contacts),
    )


@dataclass
class Row:
    """One (scene, worlds, solver, dt) measurement, or the error that stopped it."""

    scene: str
    worlds: int
    dofs: int
    solver: str
    dt: float
    steps: int = 0
    seconds: float = math.nan
    iterations: np.ndarray | None = None
    """SAP: Newton iterations, shape (steps, worlds)."""
    converged: np.ndarray | None = None
    """SAP: per-step, per-world convergence flags."""
    cg_iterations: np.ndarray | None = None
    """SAP: CG iterations (PCG worlds; 0 elsewhere), shape (steps, worlds)."""
    sanity: Sanity | None = None
    error: str = ""

    @property
    def ms_per_step(self) -> float:
        return 1e3 * self.seconds / self.steps if self.steps else math.nan

    @property
    def env_steps_per_s(self) -> float:
        return self.worlds * self.steps / self.seconds if self.steps else math.nan


def timed_run(stepper: Stepper, row: Row, warmup_steps: int, scene: str, probe) -> None:
    """Reset, warm up, take ``row.steps`` timed steps and fill ``row`` (see the module docstring)."""
    device = stepper.model.device
    stepper.reset()
    for _ in range(max(warmup_steps, 3 if stepper.graphs.enabled else 0)):  # graph: one launched step, two captures
        stepper.step(row.dt)
    is_sap = isinstance(stepper.solver, newton_sap.SolverSAP)
    iterations, converged, cg_iterations = [], [], []
    elapsed = 0.0
    for _ in range(row.steps):
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        stepper.step(row.dt)
        wp.synchronize_device(device)
        elapsed += time.perf_counter() - t0
        if is_sap:
            stats = stepper.solver.stats
            iterations.append(stats.iterations)
            converged.append(stats.converged)
            cg_iterations.append(stats.cg_iterations)
    row.seconds = elapsed
    if is_sap:
        row.iterations, row.converged = np.array(iterations), np.array(converged)
        row.cg_iterations = np.array(cg_iterations)
    row.sanity = sanity(scene, stepper.model, stepper.state, probe)


def run_job(scene: str, worlds: int, name: str, model: newton.Model, probe, args) -> list[Row]:
    """One solver on one (scene, worlds) model: a row at ``args.dt``, and one at ``args.fallback_dt`` if the
    first exploded; an exception is recorded in the last row."""
    dofs = model.joint_dof_count // worlds
    steps = max(5, round(args.steps * SCENES[scene].steps_factor / math.sqrt(worlds)))
    rows = [Row(scene, worlds, dofs, name, args.dt, steps=steps)]
    try:
        stepper = Stepper(name, model, scene, graph=args.graph, sap_options=sap_options(args.sap))
        timed_run(stepper, rows[0], round(args.warmup / args.dt), scene, probe)
        if rows[0].sanity.exploded:
            rows.append(Row(scene, worlds, dofs, name, args.fallback_dt, steps=steps))
            timed_run(stepper, rows[1], round(args.warmup / args.fallback_dt), scene, probe)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        rows[-1].error = error_text(exc)
        rows[-1].steps = 0
    last = rows[-1]
    print(
        f"{scene:>9} x{worlds:<5} {name:<12} dt {last.dt:<6} "
        + (last.error or f"{last.ms_per_step:9.3f} ms/step  {last.sanity.text()}"),
        flush=True,
    )
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
            try:
                model = build_model(scene, worlds, device)
                probe_pipeline = newton.CollisionPipeline(model)
                models[(scene, worlds)] = (model, (probe_pipeline, probe_pipeline.contacts()))
            except Exception as exc:  # noqa: BLE001 - reported in the table
                models[(scene, worlds)] = (None, error_text(exc))
        model, probe = models[(scene, worlds)]
        if model is None:
            rows = [Row(scene, worlds, 0, name, args.dt, error=f"model build failed: {probe}")]
        else:
            rows = run_job(scene, worlds, name, model, probe, args)
        with open(os.path.join(job_dir, f"{index}.pkl"), "wb") as f:
            pickle.dump(rows, f)


def bench_scene(scene: str, args) -> list[Row]:
    """All (worlds, solver) jobs of ``scene``, in child processes: a job that takes its process down (a
    native abort cannot be caught in Python) is recorded with the end of its stderr, and the remaining jobs
    go on in a fresh process."""
    jobs = [(scene, worlds, name) for worlds in args.worlds for name in args.solvers]

    def crashed(job, reason):
        _, worlds, name = job
        return [Row(scene, worlds, 0, name, args.dt, error=reason)]

    return run_jobs_in_children(__file__, jobs, args, crashed)


def stable_dt_sweep(args) -> dict[str, dict[float, str]]:
    """Per solver and dt: ``"stable"`` or why not, for ``--sweep-seconds`` of ``--sweep-scene`` from its initial
    state in ``--sweep-worlds`` worlds: finite throughout, ``|joint_qd|`` below :data:`SWEEP_MAX_QD` over the
    last half of the run (a scene that keeps jittering fails, not only one that is fast at the end), and the
    final height measure in the scene's ``sweep_height``."""
    device = wp.get_device(args.device)
    scene = SCENES[args.sweep_scene]
    model = build_model(args.sweep_scene, args.sweep_worlds, device)
    result: dict[str, dict[float, str]] = {}
    for name in args.solvers:
        result[name] = {}
        try:
            stepper = Stepper(name, model, args.sweep_scene, sap_options=sap_options(args.sap))
        except Exception as exc:  # noqa: BLE001 - reported in the table
            result[name] = {dt: error_text(exc) for dt in args.sweep_dts}
            continue
        for dt in args.sweep_dts:
            try:
                stepper.reset()
                steps = round(args.sweep_seconds / dt)
                max_qd = 0.0
                for k in range(steps):
                    stepper.step(dt)
                    if 2 * k >= steps:
                        max_qd = max(max_qd, float(np.max(np.abs(stepper.state.joint_qd.numpy()))))
                z = scene.height(model, stepper.state.body_q.numpy())
                if not (math.isfinite(max_qd) and math.isfinite(z)):
                    verdict = "NaN"
                elif max_qd >= SWEEP_MAX_QD:
                    verdict = f"max qd {max_qd:.3g}"
                elif not scene.sweep_height[0] <= z <= scene.sweep_height[1]:
                    verdict = f"{scene.height_label} {z:.3g}"
                else:
                    verdict = f"stable (z {z:.3f}, max qd {max_qd:.1e})"
            except Exception as exc:  # noqa: BLE001 - reported in the table
                verdict = error_text(exc)
            result[name][dt] = verdict
            print(f"stable-dt sweep: {name:<12} dt {dt:<6} {verdict}", flush=True)
    return result


# ----------------------------------------------------------------------------------------------------------------
# Report


def _sap_columns(row: Row) -> list[str]:
    """Mean / max Newton iterations per step, the converged fraction and CG iterations per step (SAP rows only)."""
    if row.iterations is None:
        return ["", "", "", ""]
    return [f"{row.iterations.mean():.2f}", str(int(row.iterations.max())), f"{row.converged.mean():.3f}",
            f"{row.cg_iterations.mean():.1f}"]  # fmt: skip


def markdown(rows: list[Row], sweep: dict[str, dict[float, str]] | None, args, elapsed: float) -> str:
    """The run's settings and Markdown tables of ``rows`` and ``sweep``."""
    device = wp.get_device(args.device)
    header = [
        f"- date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- command: `{' '.join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0])] + sys.argv[1:])}`",
        f"- device: {device.alias} ({device.name if device.is_cuda else cpu_name()}, {os.cpu_count()} logical CPUs)",
        f"- newton {newton.__version__}, warp {wp.config.version}, python {platform.python_version()}, "
        f"newton_sap from {os.path.dirname(newton_sap.__file__)}",
        f"- dt = {args.dt} s (rows marked otherwise: rerun at --fallback-dt after an explosion), warm-up "
        f"{args.warmup} s of simulated time, gravity {GRAVITY} m/s^2, total run time {elapsed:.0f} s",
        f"- steps: {'replayed Warp graphs (--graph)' if args.graph else 'launched kernel by kernel'}",
        f"- SolverSAP options: {sap_options(args.sap) or 'defaults'}",
        "",
    ]
    cols = [
        "scene", "dofs/world", "worlds", "solver", "dt [s]", "steps", "ms/step", "env-steps/s",
        "vs SAP (env-steps/s)", "sim-s/s", "SAP iters mean", "SAP iters max", "SAP converged", "SAP CG iters mean",
        "final state",
    ]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(["---"] + ["---:"] * 13 + ["---"]) + "|"]
    sap_rate = {(r.scene, r.worlds, r.dt): r.env_steps_per_s for r in rows if r.solver == "SAP" and not r.error}
    for r in rows:
        if r.error:
            empty = " |" * 9
            lines.append(f"| {r.scene} | {r.dofs or ''} | {r.worlds} | {r.solver} | {r.dt} |{empty} error: {r.error} |")
            continue
        base = sap_rate.get((r.scene, r.worlds, args.dt))
        ratio = f"{r.env_steps_per_s / base:.2f}x" if base else "n/a"
        cells = [
            r.scene, str(r.dofs), str(r.worlds), r.solver, str(r.dt), str(r.steps), f"{r.ms_per_step:.2f}",
            f"{r.env_steps_per_s:,.0f}", ratio, f"{r.env_steps_per_s * r.dt:,.1f}", *_sap_columns(r), r.sanity.text(),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    out = header + lines
    if sweep:
        dts = args.sweep_dts
        out += [
            "",
            f"Stable dt on the {args.sweep_scene} ({args.sweep_worlds} world(s), {args.sweep_seconds} s simulated; "
            f"stable: finite, max |joint_qd| over the last half < {SWEEP_MAX_QD}, final "
            f"{SCENES[args.sweep_scene].height_label} in {list(SCENES[args.sweep_scene].sweep_height)} m):",
            "",
            "| solver | " + " | ".join(f"dt {dt}" for dt in dts) + " | largest stable dt |",
            "|---|" + "---|" * len(dts) + "---:|",
        ]
        for name, verdicts in sweep.items():
            stable = [dt for dt in dts if verdicts[dt].startswith("stable")]
            largest = str(max(stable)) if stable else "none"
            out.append(f"| {name} | " + " | ".join(verdicts[dt] for dt in dts) + f" | {largest} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenes", nargs="*", choices=list(SCENES), default=list(DEFAULT_SCENES), help="none: the sweep only"
    )
    parser.add_argument("--worlds", nargs="+", type=int, default=[1, 64, 1024])
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    parser.add_argument("--dt", type=float, default=0.01, help="time step [s] (default 0.01)")
    parser.add_argument(
        "--steps", type=int, default=200, help="timed steps at 1 world; divided by sqrt(worlds) (default 200)"
    )
    parser.add_argument("--warmup", type=float, default=0.5, help="untimed simulated seconds first (default 0.5)")
    parser.add_argument("--fallback-dt", type=float, default=0.002, help="time step [s] of reruns after explosions")
    parser.add_argument("--sweep-dts", nargs="+", type=float, default=[0.002, 0.005, 0.01, 0.02, 0.04])
    parser.add_argument("--no-sweep", action="store_true", help="skip the stable-dt sweep")
    parser.add_argument("--sweep-scene", choices=list(SCENES), default="ant", help="scene of the stable-dt sweep")
    parser.add_argument("--sweep-worlds", type=int, default=1, help="worlds of the stable-dt sweep (default 1)")
    parser.add_argument("--sweep-seconds", type=float, default=2.0, help="simulated time [s] per sweep run")
    parser.add_argument("--graph", action="store_true", help="time steps replayed from captured Warp graphs")
    parser.add_argument("--device", default="cpu", help="Warp device (default cpu)")
    parser.add_argument(
        "--sap", nargs="*", default=[], metavar="KEY=VALUE",
        help="SolverSAP options, values as Python literals (e.g. pcg_threads='world' block_cholesky_max_dofs=512)",
    )  # fmt: skip
    parser.add_argument("--out", default=None, help="also write the Markdown report to this file")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sap_options(args.sap)  # a malformed --sap stops here, before any work

    wp.init()
    if args.worker:
        worker(args.worker)
        return
    start = time.perf_counter()
    sweep = None if args.no_sweep else stable_dt_sweep(args)
    rows: list[Row] = []
    for scene in args.scenes:
        rows += bench_scene(scene, args)
    report = markdown(rows, sweep, args, time.perf_counter() - start)
    print()
    print(report, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
