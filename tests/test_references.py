"""Self-checks of the reference harness in ``tests/references.py``.

For every robot and three random states, the float64 references (Pinocchio, MuJoCo) must agree with each other
to round-off and with Newton's own float32 ``eval_mass_matrix`` / ``eval_inverse_dynamics_passive``.
"""

from __future__ import annotations

import newton
import numpy as np
import pytest

import references as refs

pytest.importorskip("pinocchio")
pytest.importorskip("mujoco")

N_STATES = 3
TOL_M_NEWTON = 1e-5  # relative to max |M|, Newton is float32
TOL_B_NEWTON = 1e-5  # relative to max |b|
TOL_REF = 1e-8  # Pinocchio vs MuJoCo (float64), relative


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


@pytest.fixture(scope="module", params=refs.ROBOTS)
def robot(request):
    name = request.param
    return name, refs.build_newton_model(name, device="cpu")


def test_references_agree(robot):
    name, model = robot
    sources = refs.SPECS[name].sources
    rng = np.random.default_rng(1234)
    for _ in range(N_STATES):
        q, qd = refs.random_state(model, rng)
        out = {s: refs.reference_mass_and_bias(name, model, q, qd, source=s) for s in sources}
        M_n, b_n = out["newton"]
        for s in sources:
            M, b = out[s]
            assert M.shape == (model.joint_dof_count,) * 2 and b.shape == (model.joint_dof_count,)
            assert np.all(np.isfinite(M)) and np.all(np.isfinite(b))
            np.testing.assert_allclose(M, M.T, atol=1e-12 * np.abs(M).max())
            assert np.linalg.eigvalsh(M).min() > 0.0, f"{name}/{s}: M not positive definite"
            assert _rel(M, M_n) < TOL_M_NEWTON, f"{name}: M {s} vs newton {_rel(M, M_n):.2e}"
            assert _rel(b, b_n) < TOL_B_NEWTON, f"{name}: b {s} vs newton {_rel(b, b_n):.2e}"
        if "pinocchio" in out and "mujoco" in out:
            (M_p, b_p), (M_m, b_m) = out["pinocchio"], out["mujoco"]
            assert _rel(M_p, M_m) < TOL_REF, f"{name}: M pinocchio vs mujoco {_rel(M_p, M_m):.2e}"
            assert _rel(b_p, b_m) < TOL_REF, f"{name}: b pinocchio vs mujoco {_rel(b_p, b_m):.2e}"


def test_inventory():
    """At least 6 robots, fixed and floating bases, a humanoid, merged MJCF hinges (D6) and BALL joints."""
    JT = newton.JointType
    assert len(refs.ROBOTS) >= 6
    types, dofs = {}, {}
    for name in refs.ROBOTS:
        model = refs.build_newton_model(name, device="cpu")
        types[name] = set(model.joint_type.numpy().tolist())
        dofs[name] = model.joint_dof_count
    assert any(JT.FREE in t for t in types.values()) and any(JT.FREE not in t for t in types.values())
    assert max(dofs.values()) > 32
    assert JT.D6 in types["nv_humanoid"] and JT.BALL in types["nv_humanoid_ball"]


def test_mjcf_armature_matches_mujoco():
    """Newton's MJCF armature equals MuJoCo's for every 1-DOF joint, matched by name."""
    import mujoco

    for name in ("nv_ant", "nv_humanoid"):
        model = refs.build_newton_model(name, device="cpu")
        m = mujoco.MjModel.from_xml_path(refs._stripped_file(name))
        arm = model.joint_armature.numpy()
        qd_start = model.joint_qd_start.numpy()
        checked = 0
        for j, t in enumerate(model.joint_type.numpy()):
            if t == newton.JointType.REVOLUTE:
                k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, model.joint_label[j].rsplit("/", 1)[-1])
                assert k >= 0
                assert arm[qd_start[j]] == pytest.approx(m.dof_armature[m.jnt_dofadr[k]], rel=1e-6)
                checked += 1
        assert checked > 0


def test_fixed_override_and_worlds():
    """``floating=False`` and multi-world models: references use world 0 and still agree."""
    rng = np.random.default_rng(7)
    for name in ("go2", "nv_ant"):
        model = refs.build_newton_model(name, floating=False, worlds=2, device="cpu")
        assert newton.JointType.FREE not in set(model.joint_type.numpy().tolist())
        q, qd = refs.random_state(model, rng)
        n = model.joint_dof_count // 2
        M_n, b_n = refs.reference_mass_and_bias(name, model, q, qd, source="newton")
        M_m, b_m = refs.reference_mass_and_bias(name, model, q, qd, source="mujoco")
        assert M_n.shape == (n, n)
        assert _rel(M_m, M_n) < TOL_M_NEWTON and _rel(b_m, b_n) < TOL_B_NEWTON


def test_free_joint_bias_analytic():
    """Base-COM convention: with the legs locked, the free joint's linear bias is the total external force.

    Holding ``v_com_base`` and ``w`` constant, the total momentum ``m (v_com_base + w x r)``, with ``r`` from the
    base COM to the robot COM, changes at ``m w x (w x r)``; adding the weight gives ``b[:3]``.
    """
    name = "solo12"
    model = refs.build_newton_model(name, device="cpu")
    q, qd = refs.random_state(model, np.random.default_rng(3))
    qd[6:] = 0.0
    state = model.state()
    state.joint_q.assign(q.astype(np.float32))
    state.joint_qd.assign(qd.astype(np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    body_q = state.body_q.numpy().astype(np.float64)
    com = np.array([X[:3] + refs._quat_to_mat(X[3:]) @ c for X, c in zip(body_q, model.body_com.numpy(), strict=True)])
    mass = model.body_mass.numpy().astype(np.float64)
    m_tot = mass.sum()
    r = (mass @ com) / m_tot - com[model.joint_child.numpy()[0]]
    w = qd[3:6]
    expected = m_tot * np.cross(w, np.cross(w, r)) + m_tot * refs.GRAVITY * np.array([0.0, 0.0, 1.0])
    for source in ("pinocchio", "mujoco"):
        _, b = refs.reference_mass_and_bias(name, model, q, qd, source=source)
        np.testing.assert_allclose(b[:3], expected, rtol=0, atol=1e-5 * np.abs(expected).max())
