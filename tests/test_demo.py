"""The main job: every scene runs and its summary is physically sane; the command line."""

import json

import newton
import numpy as np
import pytest
import warp as wp

from newton_sap import SolverSAP, runner, viewers
from newton_sap.__main__ import main, parse_args
from newton_sap.diagnostics import mechanical_energy
from newton_sap.examples.scenes import PANDA_CUBE_START, SCENES
from newton_sap.runner import run_scene


@pytest.mark.parametrize("scene", list(SCENES))
def test_every_scene_runs_and_is_sane(scene):
    summary = run_scene(scene, worlds=2, steps=20, seconds=None, dt=None)
    assert summary["finite"] and summary["steps"] == 20
    assert summary["converged_fraction"] == 1.0
    if summary["max_penetration_m"] is not None:
        assert summary["max_penetration_m"] < 5e-3
    if summary["energy_drift_max"] is not None:
        assert summary["energy_drift_max"] < 1e-2


@pytest.mark.parametrize("solver", ["sap", "featherstone"])
def test_graph_replay_gives_the_launched_run(solver):
    """Runs replay captured graphs by default; the same run launched kernel by kernel ends in the same state."""
    finals = {}
    for graph in (True, False):
        summary = run_scene("quadruped", 2, 12, None, None, solver, graph=graph)
        assert summary["graph"] == ("yes" if graph else "no (--no-graph)")
        finals[graph] = summary
    for key in ("newton_iterations_mean", "contacts_per_world_mean", "max_penetration_m"):
        np.testing.assert_equal(finals[True][key], finals[False][key])  # NaN where Featherstone blows up


def test_failed_capture_falls_back_to_launches(monkeypatch):
    """A capture failing inside the SAP step (as on CUDA < 12.4, which has no conditional graph nodes) leaves
    a run identical to one launched kernel by kernel."""
    capture_while = wp.capture_while

    def no_conditional_nodes(condition, *args, **kwargs):
        if condition.device.is_capturing:
            raise RuntimeError("no conditional graph nodes")
        return capture_while(condition, *args, **kwargs)

    monkeypatch.setattr(wp, "capture_while", no_conditional_nodes)
    fallback = run_scene("box_stack", 1, 8, None, None)
    launched = run_scene("box_stack", 1, 8, None, None, graph=False)
    assert fallback["graph"] == "no (RuntimeError: no conditional graph nodes)"
    for key in ("steps", "finite", "newton_iterations_mean", "contacts_per_world_mean", "max_penetration_m"):
        assert fallback[key] == launched[key]


def test_an_error_in_the_first_step_is_raised_once(monkeypatch):
    """An error of the step itself (here the first, launched one) is not taken for a failed capture: it is raised
    as it is, without running the step again kernel by kernel."""
    calls = []

    def failing_step(self, *args, **kwargs):
        calls.append(1)
        raise ValueError("the step's own error")

    monkeypatch.setattr(SolverSAP, "step", failing_step)
    with pytest.raises(ValueError, match="the step's own error") as error:
        run_scene("box_stack", 1, 3, None, None)
    assert len(calls) == 1 and error.value.__context__ is None


def test_cli_run_writes_its_summary(tmp_path, capsys):
    assert main(["run", "box_stack", "--worlds", "2", "--steps", "5", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["scene"] == "box_stack" and summary["steps"] == 5
    assert "env_steps_per_s" in capsys.readouterr().out


def test_cli_demo_is_the_default_command_and_writes_every_output(tmp_path, capsys):
    assert main(["--worlds", "2", "--seconds", "0.05", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "double_cartpole" in out and "energy_drift_max" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["finite"] and summary["energy_drift_max"] < 1e-2
    png = (tmp_path / "plot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    recording = json.loads((tmp_path / "recording.json").read_text())
    assert recording  # Newton's file-viewer format: the model and the recorded states


def test_plot_has_the_expected_axes(tmp_path):
    import matplotlib.image

    from newton_sap.plot import plot_run

    series = {"time": [0.0, 0.1], "value": [1.0, 0.9], "value_label": "height [m]", "iterations_mean": [2, 1],
              "iterations_max": [3, 1], "contacts": [4, 4]}  # fmt: skip
    path = tmp_path / "plot.png"
    plot_run(series, "test", str(path))
    image = matplotlib.image.imread(path)
    assert image.shape[0] == 800 and image.shape[1] == 800  # 8 × 8 in at 100 dpi, three stacked axes


def test_cli_lists_the_scenes(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SCENES)


@pytest.mark.parametrize(
    "bad",
    [["--worlds", "0"], ["--dt", "-1e-3"], ["--seconds", "0"], ["--dt", "inf"], ["--seconds", "inf"],
     ["--dt", "nan"], ["--dt", "1e-50"], ["--dt", "1e39"],
     ["run", "nope"], ["run", "ant", "--solver", "x"], ["run", "ant", "--out", "/proc/forbidden"],
     ["--device", "bogus"], ["run", "ant", "--device", "cuda:99"]],
)  # fmt: skip
def test_cli_refuses_bad_input_before_any_work(bad, capsys):
    with pytest.raises(SystemExit):
        parse_args(bad)
    err = capsys.readouterr().err
    assert "error:" in err  # argparse's one-line message, no traceback
    command = "run" if bad[0] == "run" else "demo"  # the demo is the default command
    assert f"usage: newton-sap {command} " in err and f"newton-sap {command}: error:" in err  # the subcommand's usage


def test_energy_diagnostic_closed_form():
    """One free body at COM height h moving with (v, ω): E = ½ m |v|² + ½ ωᵀ I ω + m g h per world."""
    builder = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    body = builder.add_link(mass=2.0, com=(0.1, 0.0, 0.2), inertia=((0.3, 0, 0), (0, 0.4, 0), (0, 0, 0.5)))
    builder.add_articulation([builder.add_joint_free(body)])
    scene = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    scene.replicate(builder, 2)
    model = scene.finalize()
    state = model.state()
    q = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0] * 2, np.float32)  # origin at 1 m, no rotation
    qd = np.array([1.0, 2.0, 0.0, 0.0, 0.0, 3.0] * 2, np.float32)
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    expected = 0.5 * 2.0 * 5.0 + 0.5 * 0.5 * 9.0 + 2.0 * 9.81 * 1.2
    assert np.allclose(mechanical_energy(model, state), [expected, expected], rtol=1e-5)


def test_ctrl_c_keeps_the_partial_summary(tmp_path):
    """An interrupt (Ctrl-C) during a run stops it and still returns, plots and records the steps done."""

    def interrupt_at_third_step(done, total):
        if done == 3:
            raise KeyboardInterrupt

    plot, recording = tmp_path / "plot.png", tmp_path / "recording.json"
    summary = run_scene("box_stack", 1, 10, None, None, progress=interrupt_at_third_step, plot=str(plot),
                        recording=str(recording))  # fmt: skip
    assert summary["interrupted"] and summary["steps"] == 3 and summary["steps_requested"] == 10
    assert plot.exists() and recording.exists()


def test_ctrl_c_between_a_steps_records_keeps_the_plot_consistent(tmp_path, monkeypatch):
    """An interrupt inside a step's bookkeeping (here the energy of its end, computed after the step) leaves
    every plotted series at the same length: the plot is written."""
    calls = []

    def energy_then_interrupt(model, state):
        calls.append(1)
        if len(calls) == 4:  # the initial energy, then the third step's
            raise KeyboardInterrupt
        return mechanical_energy(model, state)

    monkeypatch.setattr(runner, "mechanical_energy", energy_then_interrupt)
    plot = tmp_path / "plot.png"
    summary = run_scene("double_cartpole", 1, 10, None, None, plot=str(plot))
    assert summary["interrupted"] and summary["steps"] == 3
    assert plot.exists()


def test_penetration_is_the_deepest_of_the_run(monkeypatch):
    """max_penetration_m is the deepest of the recorded frames and the final state, not the final state's."""
    depths = iter([0.002, 0.001, 0.0005, 0.0])
    monkeypatch.setattr(runner, "max_penetration", lambda model, state, contacts: next(depths, 0.0))
    summary = run_scene("box_stack", 1, 60, None, 0.02, graph=False)  # frames every 2 steps at Δt 0.02
    assert summary["max_penetration_m"] == 0.002


class FrameTimes:
    """A stand-in viewer that keeps the times of the frames logged and the height of the box stack's top box."""

    def __init__(self):
        self.times, self.heights, self.now = [], [], None

    def set_model(self, model):
        pass

    def begin_frame(self, t):
        self.now = t

    def log_state(self, state):
        self.times.append(self.now)
        self.heights.append(float(state.body_q.numpy()[-1, 2]))

    def end_frame(self):
        pass

    def close(self):
        pass


def test_frames_are_the_states_at_their_times(monkeypatch):
    """Frames every 1/30 s of simulated time (3 steps at Δt 0.01) from the first state, each the state at its time
    (a frame logged the state one step after its time before: t = 0.01 held the state at 0.02). The last state, off
    that grid, is not a frame: USD floors times to its time codes, so it would overwrite the frame before."""
    frames = FrameTimes()
    monkeypatch.setattr(runner, "make_viewer", lambda kind, recording, fps: frames)
    run_scene("box_stack", 1, 13, None, None, recording="unused", graph=False)
    np.testing.assert_allclose(frames.times, [0.0, 0.03, 0.06, 0.09, 0.12])
    model = SCENES["box_stack"].build(1)
    solver = SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    heights = [float(s0.body_q.numpy()[-1, 2])]
    for k in range(13):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, model.control(), contacts, 0.01)
        s0, s1 = s1, s0
        if (k + 1) % 3 == 0:
            heights.append(float(s0.body_q.numpy()[-1, 2]))
    assert frames.heights == heights


def test_energy_drift_is_the_largest_of_the_run(monkeypatch):
    """``energy_drift_max`` is the largest relative change of a world's energy over the steps, not the last step's:
    energies 1.0 (start), 1.05, 0.99, 1.0 give 0.05."""
    energies = iter([1.0, 1.05, 0.99, 1.0])
    monkeypatch.setattr(runner, "mechanical_energy", lambda model, state: np.array([next(energies)]))
    summary = run_scene("double_cartpole", 1, 3, None, None, graph=False)
    assert summary["energy_drift_max"] == pytest.approx(0.05)


def test_penetration_of_a_broken_state_is_nan():
    """Newton's collision finds no contacts of NaN bodies: their penetration is NaN, not 0."""
    from newton_sap.diagnostics import max_penetration

    model = SCENES["box_stack"].build(1)
    state = model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    assert max_penetration(model, state, contacts) >= 0.0
    body_q = state.body_q.numpy()
    body_q[0, 2] = np.nan
    state.body_q.assign(body_q)
    pipeline.collide(state, contacts)
    assert np.isnan(max_penetration(model, state, contacts))


def test_featherstone_runs_report_newtons_contacts():
    """Contacts per world for Featherstone come from Newton's collision pipeline (SAP's stats before: n/a)."""
    summary = run_scene("box_stack", 2, 5, None, 0.002, "featherstone", graph=False)
    assert summary["contacts_per_world_mean"] > 0 and summary["max_penetration_m"] is not None


def test_a_run_too_short_to_capture_says_no_graph_ran():
    assert run_scene("box_stack", 1, 1, None, None)["graph"].startswith("no (the run ended before the first capture")


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--worlds", "2.5"], "invalid int value: '2.5'"), (["run", "ant", "--solver", "mujoco"], "needs mujoco-warp")],
)
def test_cli_names_what_is_wrong(argv, message, monkeypatch, capsys):
    monkeypatch.setattr("newton_sap.__main__.module_available", lambda name: name != "mujoco_warp")
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert message in capsys.readouterr().err


def test_cli_out_is_created_only_for_a_valid_command(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(SystemExit):
        parse_args(["run", "ant", "--out", str(afile)])
    assert "not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["run", "nope", "--out", str(tmp_path / "new")])
    assert not (tmp_path / "new").exists()


def test_ctrl_c_before_the_run_exits_130(monkeypatch, capsys, tmp_path):
    def interrupted_build(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("newton_sap.__main__.run_scene", interrupted_build)
    assert main(["run", "ant", "--out", str(tmp_path)]) == 130
    assert "interrupted before the run started" in capsys.readouterr().err


def test_panda_pushes_the_cube_along_the_ground():
    """The Panda's fingertips push the 5 cm cube about 10 cm along +x, then the hand lifts: the cube slid, did not
    turn, tip over or fly, rests flat on the ground; the arm tracks its targets; every world converges."""
    scene = SCENES["panda_push"]
    model = scene.build(2)
    solver = SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    control = model.control()
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    cube = [k for k, label in enumerate(model.body_label) if label.endswith("cube")]
    assert len(cube) == 2
    highest = 0.0
    for k in range(int(round(scene.seconds / scene.dt))):
        control.joint_target_q.assign(scene.targets(model, k * scene.dt))
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, scene.dt)
        s0, s1 = s1, s0
        assert solver.stats.converged.all(), f"step {k}"
        highest = max(highest, float(s0.body_q.numpy()[cube, 2].max()))
    pose = s0.body_q.numpy()[cube]
    moved = pose[:, :3] - np.asarray(PANDA_CUBE_START)
    assert np.all(moved[:, 0] > 0.08) and np.all(np.abs(moved[:, 1]) < 5e-3)  # pushed ~10 cm along +x
    assert highest < 0.03  # centre at most 5 mm above its resting height while sliding: not launched, not tipped
    assert np.allclose(pose[:, 2], 0.025, atol=1e-3) and np.all(np.abs(pose[:, 6]) > 0.999)  # resting flat
    assert np.abs(s0.joint_qd.numpy()).max() < 0.05  # everything at rest
    q = s0.joint_q.numpy().reshape(2, -1)[:, :9]
    assert np.abs(q - scene.targets(model, scene.seconds).reshape(2, -1)[:, :9]).max() < 0.02  # [rad, m]


def test_cli_records_usd(tmp_path):
    """``--viewer usd`` writes ``recording.usd``: one time sample per recorded frame on every body's pose."""
    from pxr import Usd

    assert main(["run", "box_stack", "--steps", "10", "--viewer", "usd", "--out", str(tmp_path)]) == 0
    stage = Usd.Stage.Open(str(tmp_path / "recording.usd"))
    poses = [p.GetAttribute("xformOp:translate") for p in stage.Traverse()]
    poses = [a for a in poses if a and a.GetNumTimeSamples() > 0]
    assert [a.GetNumTimeSamples() for a in poses] == [4] * 6  # frames after steps 1, 4, 7, 10 (30 per second)
    heights = sorted(a.Get(0)[2] for a in poses)
    assert heights == pytest.approx([0.0, 0.1, 0.3, 0.5, 0.7, 0.9], abs=1e-3)  # the ground and the five cubes
    assert sorted(a.Get(3)[2] for a in poses) != heights  # the cubes settle: the samples differ over time


@pytest.mark.parametrize(
    "viewer, message",
    [("usd", "--viewer usd needs usd-core: pip install usd-core"),
     ("rerun", "--viewer rerun needs rerun-sdk: pip install rerun-sdk"),
     ("gl", "--viewer gl needs pyglet: pip install 'pyglet<3'")],
)  # fmt: skip
def test_cli_refuses_a_viewer_whose_package_is_missing(viewer, message, monkeypatch, capsys):
    """The refusal is one line, before any work, whether or not the package is installed here."""
    missing = {"usd": "pxr", "rerun": "rerun", "gl": "pyglet"}[viewer]
    monkeypatch.setattr(viewers, "module_available", lambda name: name != missing)
    monkeypatch.setattr("newton_sap.__main__.run_scene", lambda *a, **k: pytest.fail("the run started"))
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "box_stack", "--viewer", viewer])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"newton-sap run: error: {message}"  # with the run usage


def test_cli_refuses_the_live_viewer_without_a_display(monkeypatch, capsys):
    monkeypatch.setattr(viewers, "module_available", lambda name: True)
    monkeypatch.setattr(viewers.sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(SystemExit):
        parse_args(["--viewer", "gl"])
    assert "--viewer gl needs a display" in capsys.readouterr().err
    monkeypatch.setenv("DISPLAY", ":0")
    assert parse_args(["--viewer", "gl"]).viewer == "gl"


class _Window:
    """Stands in for Newton's ViewerGL: paused for the first ``paused`` frames, closed after ``frames``."""

    def __init__(self, paused, frames):
        self.paused, self.frames, self.shown, self.closed = paused, frames, [], False

    def set_model(self, model):
        pass

    def is_running(self):
        return len(self.shown) < self.frames

    def is_paused(self):
        return len(self.shown) < self.paused

    def begin_frame(self, t):
        self.shown.append(t)

    def log_state(self, state):
        pass

    def end_frame(self):
        pass

    def close(self):
        self.closed = True


def test_live_viewer_pauses_and_closing_it_stops_the_run(monkeypatch):
    """While paused the window shows the current state without stepping; closing it stops the run, which keeps its
    partial summary."""
    window = _Window(paused=2, frames=6)
    monkeypatch.setattr(runner, "make_viewer", lambda kind, recording, fps: window)
    summary = run_scene("box_stack", 1, 30, None, None, viewer="gl")
    # the start and a paused frame at t = 0, then one frame every 3 steps (dt 0.01 s, 30 per second): steps 3, 6, 9, 12
    assert window.shown == pytest.approx([0.0, 0.0, 0.03, 0.06, 0.09, 0.12])
    assert summary["interrupted"] and summary["steps"] == 12 and window.closed  # closed after step 12


def test_live_viewer_stays_open_after_the_run(monkeypatch):
    window = _Window(paused=0, frames=8)
    monkeypatch.setattr(runner, "make_viewer", lambda kind, recording, fps: window)
    summary = run_scene("box_stack", 1, 6, None, None, viewer="gl")
    assert not summary["interrupted"] and summary["steps"] == 6
    assert window.shown == pytest.approx([0.0, 0.03, 0.06] + [0.06] * 5) and window.closed  # the start, then 30 fps


def test_ctrl_c_while_warp_and_newton_load_exits_130_with_one_line(tmp_path):
    """A Ctrl-C in the seconds ``python -m newton_sap`` spends importing Warp and Newton ends with the one-line
    message and status 130 (a KeyboardInterrupt traceback from Warp's code generation before: the package imported
    them eagerly, before the command line's handler), also when it lands in NumPy's initialization, the first thing
    Warp imports, where it reaches the import as an ImportError (a review: 1 of 8 such signals gave a traceback)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "newton_sap", "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # inside the guarded imports (about 2.6 s on this machine): once NumPy's core library is mapped (Linux), which
    # Warp imports first; a signal in the interpreter's own start-up, before the package runs (its first 30-50 ms),
    # ends with Python's traceback
    maps, deadline = f"/proc/{process.pid}/maps", time.monotonic() + 60.0
    while os.path.exists(maps) and time.monotonic() < deadline and process.poll() is None:
        try:
            with open(maps) as f:
                if "_multiarray_umath" in f.read():
                    break
        except OSError:  # the process ended in between
            break
        time.sleep(0.005)
    else:
        time.sleep(0.3)  # no /proc: a moment into the imports (the package itself imports nothing heavy)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "interrupted before the run started" in err and "Traceback" not in err
