"""The main job: every scene runs and its summary is physically sane; the command line."""

import json

import newton
import numpy as np
import pytest

from newton_sap import SolverSAP
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
    [["--worlds", "0"], ["--dt", "-1e-3"], ["--seconds", "0"], ["run", "nope"], ["run", "ant", "--solver", "x"],
     ["run", "ant", "--out", "/proc/forbidden"]],
)  # fmt: skip
def test_cli_refuses_bad_input_before_any_work(bad):
    with pytest.raises(SystemExit):
        parse_args(bad)


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
