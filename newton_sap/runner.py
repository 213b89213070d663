"""Run a scene with SolverSAP or one of Newton's solvers and summarize it (the ``newton-sap run`` job)."""

from __future__ import annotations

import math
import time

import newton
import numpy as np
import warp as wp

from .diagnostics import max_penetration, mechanical_energy
from .examples.scenes import SCENES, Scene
from .graphs import StepGraphs
from .plot import plot_run
from .solver_sap import SolverSAP
from .viewers import make_viewer

SOLVERS = ("sap", "featherstone", "mujoco")
RECORDING_FPS = 30


def make_solver(name: str, model: newton.Model):
    """The solver ``name`` (one of :data:`SOLVERS`) for ``model``; MuJoCo collides on its own."""
    if name == "sap":
        return SolverSAP(model)
    if name == "featherstone":
        return newton.solvers.SolverFeatherstone(model)
    if name == "mujoco":  # buffers for every contact of the scenes (the defaults drop rows of the box stack)
        shapes_per_world = max(model.shape_count // max(model.world_count, 1), 1)
        nconmax = 16 * shapes_per_world
        try:
            return newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=False, nconmax=nconmax, njmax=4 * nconmax)
        except ImportError as e:
            raise RuntimeError("--solver mujoco needs mujoco-warp: pip install 'newton-sap[bench]'") from e
    raise ValueError(f"unknown solver {name!r}; valid: {', '.join(SOLVERS)}")


def run_scene(scene_name: str, worlds: int, steps: int | None, seconds: float | None, dt: float | None,
              solver_name: str = "sap", device=None, progress=None, plot: str | None = None,
              recording: str | None = None, viewer: str = "file", graph: bool = True) -> dict:  # fmt: skip
    """Simulate ``scene_name`` and return its summary (see README).

    ``progress(k, steps)`` is called every step when given; ``plot`` is a PNG path for
    :func:`~newton_sap.plot.plot_run`. ``viewer`` names the Newton viewer fed 30 frames per simulated second
    (:data:`~newton_sap.viewers.VIEWERS`): a recording backend (``file``: Newton's file viewer, ``usd``,
    ``rerun``) writes the file ``recording`` (nothing when None); ``gl`` shows the run live, in real time, in a
    window (closing it stops the run; it stays open after the last step until closed). With ``graph`` each step
    (collision included) after the first replays a Warp graph captured on first use (one per state parity), as
    Newton's examples do on GPUs; where capture fails the run launches kernel by kernel and the summary says
    why. Ctrl-C stops early and still returns (and plots, records) the steps done. ``max_penetration_m`` is the
    deepest penetration of the frames (every ``1/30`` s of simulated time from the first state) and of the last
    state, by Newton's collision pipeline also where MuJoCo collides on its own; ``contacts_per_world_mean``:
    SAP's contacts in its problems, Featherstone's Newton's contacts per world, none for MuJoCo;
    ``energy_drift_max``: the largest relative change of a world's mechanical energy over the run's steps
    (conservative scenes)."""
    scene: Scene = SCENES[scene_name]
    dt = dt or scene.dt
    steps = steps or max(int(round((seconds or scene.seconds) / dt)), 1)
    with wp.ScopedDevice(device):
        model = scene.build(worlds)
    solver = make_solver(solver_name, model)
    use_pipeline = scene.contacts and solver_name != "mujoco"
    pipeline = newton.CollisionPipeline(model) if use_pipeline else None
    contacts = pipeline.contacts() if pipeline else None
    probe = pipeline or (newton.CollisionPipeline(model) if scene.contacts else None)  # penetration of the frames
    probe_contacts = contacts if pipeline else (probe.contacts() if probe else None)
    control = model.control()
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    e0 = mechanical_energy(model, s0)
    iterations, converged, num_contacts = [], [], []
    failed_worlds, buffer_full_steps, dropped_max = None, None, None
    conservative = not scene.contacts and scene.targets is None
    labels = [label.rsplit("/", 1)[-1] for label in model.body_label]
    body = 0 if scene.traced_body is None else labels.index(scene.traced_body)
    body_name = f"body {body}" if scene.traced_body is None else scene.traced_body
    axis = ("x", "y", "height")[scene.traced_axis]
    series = {
        "time": [],
        "value": [],
        "value_label": "energy of world 0 [J]" if conservative else f"{axis} of {body_name} of world 0 [m]",
        "iterations_mean": [],
        "iterations_max": [],
        "contacts": [],
    }
    frame_every = max(int(round(1.0 / (RECORDING_FPS * dt))), 1)
    frame_period = frame_every * dt  # [s] of simulated time between two frames
    recorder = make_viewer(viewer, recording, 1.0 / frame_period)
    live = viewer == "gl"
    if recorder:
        recorder.set_model(model)
    shown_at = time.perf_counter()

    def show(t):  # one frame; a live window shows it no sooner than ``frame_period`` after the previous one
        nonlocal shown_at
        if live:
            time.sleep(max(frame_period - (time.perf_counter() - shown_at), 0.0))
            shown_at = time.perf_counter()
        recorder.begin_frame(t)
        recorder.log_state(s0)
        recorder.end_frame()

    def measure():  # the deepest penetration of s0 so far (recorded frames)
        nonlocal penetration
        if probe:
            probe.collide(s0, probe_contacts)
            penetration = _deeper(penetration, max_penetration(model, s0, probe_contacts))

    def advance(state_in, state_out):
        if pipeline:
            pipeline.collide(state_in, contacts)
        solver.step(state_in, state_out, control, contacts, dt)

    step_graphs, graph_note = StepGraphs(model.device, graph), "yes" if graph else "no (--no-graph)"
    interrupted, done, elapsed, timed, penetration, energy_drift = False, 0, 0.0, 0, None, None
    try:
        measure()
        if recorder:
            show(0.0)
        for k in range(steps):
            while live and recorder.is_running() and recorder.is_paused():
                show(done * dt)
            if live and not recorder.is_running():  # the window was closed
                interrupted = True
                break
            if scene.targets is not None:
                control.joint_target_q.assign(scene.targets(model, k * dt))
            start = time.perf_counter()
            key = id(s0)  # the graph of a step is keyed by the state it reads (the states alternate)
            captures = step_graphs.captures(key)
            try:
                capturing = step_graphs(key, lambda: advance(s0, s1))  # noqa: B023 - called at once
            except Exception as exc:  # noqa: BLE001 - e.g. CUDA < 12.4 (no conditional nodes): launch instead
                if not captures:  # launched (the first step) or replayed: the step's own error, not a capture's
                    raise
                step_graphs.enabled, graph_note, capturing = False, f"no ({type(exc).__name__}: {exc})", True
                advance(s0, s1)
            wp.synchronize_device(model.device)
            if k > 0 and not capturing:  # the first step compiles kernels; captures are not timed
                elapsed += time.perf_counter() - start
                timed += 1
            s0, s1 = s1, s0
            done = k + 1
            record = {"time": done * dt}
            if conservative:
                energy = mechanical_energy(model, s0)
                record["value"] = float(energy[0])
                drift = float(np.max(np.abs(energy - e0) / np.maximum(np.abs(e0), 1e-9)))
                energy_drift = drift if energy_drift is None or not drift <= energy_drift else energy_drift
            else:
                record["value"] = float(s0.body_q.numpy()[body][scene.traced_axis])
            if isinstance(solver, SolverSAP):
                stats = solver.stats
                iterations.append(stats.iterations)
                converged.append(stats.converged)
                num_contacts.append(stats.num_contacts)
                record["iterations_mean"] = float(stats.iterations.mean())
                record["iterations_max"] = int(stats.iterations.max())
                record["contacts"] = float(stats.num_contacts.mean())
                failed_worlds = int(np.count_nonzero(stats.steps_failed))  # in any step so far
                buffer_full_steps = (buffer_full_steps or 0) + int(stats.contact_buffer_full)
                dropped_max = max(dropped_max or 0, int(stats.contacts_dropped))
            elif pipeline:
                num_contacts.append(int(contacts.rigid_contact_count.numpy()[0]) / worlds)
                record["contacts"] = num_contacts[-1]
            for key, value in record.items():
                series[key].append(value)
            if done % frame_every == 0 or done == steps:
                measure()
                if recorder and done % frame_every == 0:  # on the frame grid (USD floors times to its time codes)
                    show(done * dt)
            if progress:
                progress(done, steps)
        while live and not interrupted and recorder.is_running():
            show(done * dt)
    except KeyboardInterrupt:
        interrupted = True
    _align(series)  # an interrupt may have come between the appends of a step
    if step_graphs.enabled and not step_graphs.graphs:
        graph_note = "no (the run ended before the first capture, on the second step)"
    if recorder:
        recorder.close()
    if plot:
        plot_run(series, f"{scene_name}: {solver_name}, {worlds} world{'s' if worlds != 1 else ''}, dt {dt:g} s", plot)
    q = s0.joint_q.numpy()
    if interrupted:
        measure()  # the last state (an interrupt may have come before its frame)
    return {
        "scene": scene_name,
        "solver": solver_name,
        "worlds": worlds,
        "steps": done,
        "steps_requested": steps,
        "interrupted": interrupted,
        "dt": dt,
        "device": str(model.device),
        "graph": graph_note,
        "env_steps_per_s": worlds * timed / elapsed if elapsed > 0 else None,
        "ms_per_step": 1e3 * elapsed / timed if timed else None,
        "newton_iterations_mean": float(np.mean(iterations)) if iterations else None,
        "newton_iterations_max": int(np.max(iterations)) if iterations else None,
        "converged_fraction": float(np.mean(converged)) if converged else None,
        "contacts_per_world_mean": float(np.mean(num_contacts)) if num_contacts else None,
        "contact_buffer_full_steps": buffer_full_steps,
        "contacts_dropped_max": dropped_max,
        "failed_worlds": failed_worlds,
        "max_penetration_m": penetration,
        "energy_drift_max": energy_drift,
        "max_speed_final": float(np.abs(s0.joint_qd.numpy()).max(initial=0.0)),
        "finite": bool(np.all(np.isfinite(q)) and np.all(np.isfinite(s0.joint_qd.numpy()))),
    }


def _deeper(a: float | None, b: float) -> float:
    """The deeper of two penetrations [m]; NaN (a broken state) wins."""
    return b if a is None or math.isnan(b) or b > a else a


def _align(series: dict) -> None:
    """Cut the per-step lists of ``series`` to the steps that every one of them holds."""
    lists = [key for key, value in series.items() if isinstance(value, list) and value]
    n = min((len(series[key]) for key in lists), default=0)
    for key in lists:
        del series[key][n:]


def format_summary(summary: dict) -> str:
    """The summary as an aligned two-column table."""

    def fmt(value):
        if value is None:
            return "n/a"
        if isinstance(value, float):
            return f"{value:,.0f}" if abs(value) >= 1000 else (f"{value:.3g}" if not math.isnan(value) else "nan")
        return str(value)

    width = max(len(k) for k in summary)
    return "\n".join(f"{k.ljust(width)}  {fmt(v)}" for k, v in summary.items())
