"""The main job: the default scene runs and its summary is physically sane."""

import newton
import numpy as np
import pytest

from newton_sap.__main__ import main, parse_args, run_demo
from newton_sap.diagnostics import mechanical_energy


def test_demo_summary_is_sane():
    summary = run_demo(worlds=8, seconds=0.5, dt=1e-3)
    assert summary["failed_worlds"] == 0 and summary["converged_fraction"] == 1.0
    assert summary["energy_drift_max"] < 1e-2
    assert summary["env_steps_per_s"] > 0.0


def test_cli_prints_summary(capsys):
    assert main(["--worlds", "2", "--seconds", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "env-steps/s" in out and "energy drift" in out


def test_cli_refuses_bad_numbers():
    for bad in (["--worlds", "0"], ["--dt", "-1e-3"], ["--seconds", "0"]):
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
