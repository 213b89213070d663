"""Drives, joint friction and joint stiffness on BALL joints (``joint_constraints``, ``dynamics.mass_matrix_rows``)
against closed forms and MuJoCo: one body with an isotropic inertia about the joint's point, no gravity, so that the
joint's mass matrix is ``I·1`` and no gyroscopic torque couples the axes."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.spatial import rotation_log_rate

INERTIA = 0.1  # [kg·m²] about the joint's point, every axis
DT = 0.01


def ball_body(mode, ke=0.0, kd=0.0, effort=1.0e6, friction=0.0, frame=None):
    """A body on a BALL joint to the world, its COM at the joint's point, the joint's parent frame F rotated by
    ``frame`` (a quaternion, x y z w)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.0, inertia=wp.mat33(np.eye(3, dtype=np.float32) * INERTIA))
    X_p = wp.transform((0.2, -0.1, 0.5), wp.quat(*frame) if frame is not None else wp.quat_identity())
    b.add_articulation([b.add_joint_ball(-1, link, parent_xform=X_p, actuator_mode=mode, label="shoulder")])
    model = b.finalize()
    for name, value in (("joint_target_ke", ke), ("joint_target_kd", kd), ("joint_effort_limit", effort),
                        ("joint_friction", friction)):  # fmt: skip
        getattr(model, name).fill_(value)
    return model


def quat_axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.array([*(np.sin(angle / 2) * axis), np.cos(angle / 2)])


def step(model, steps, q0=None, qd0=None, q_target=None, qd_target=None):
    """``joint_q``, ``joint_qd`` after ``steps`` steps of Δt from ``q0``, ``qd0`` with those drive targets."""
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    if q0 is not None:
        s0.joint_q.assign(np.asarray(q0, np.float32))
    if qd0 is not None:
        s0.joint_qd.assign(np.asarray(qd0, np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    control = model.control()
    if q_target is not None:
        control.joint_target_q.assign(np.asarray(q_target, np.float32))
    if qd_target is not None:
        control.joint_target_qd.assign(np.asarray(qd_target, np.float32))
    for _ in range(steps):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    assert np.all(solver.stats.converged)
    return s0.joint_q.numpy().astype(np.float64), s0.joint_qd.numpy().astype(np.float64)


def quat_product(a, b):
    """Hamilton product of quaternions (x, y, z, w), float64."""
    va, vb = np.asarray(a[:3]), np.asarray(b[:3])
    return np.array([*(a[3] * vb + b[3] * va + np.cross(va, vb)), a[3] * b[3] - va @ vb])


def quat_exp(v):
    """The unit quaternion of rotation vector ``v`` [rad]."""
    angle = np.linalg.norm(v)
    return quat_axis_angle(v, angle) if angle > 0.0 else np.array([0.0, 0.0, 0.0, 1.0])


def quat_log(q):
    """The rotation vector [rad] of unit quaternion ``q`` (shortest rotation)."""
    q = -q if q[3] < 0.0 else q
    s = np.linalg.norm(q[:3])
    return q[:3] * (2.0 * np.arctan2(s, q[3]) / s) if s > 0.0 else 2.0 * q[:3]


def log_rate(e):
    """``J_l⁻¹(e)``, the rate of the rotation vector e per angular velocity in the outer frame (Barfoot's closed
    form), float64: ``ė = J_l⁻¹(e) ω``."""
    theta = np.linalg.norm(e)
    E = np.array([[0.0, -e[2], e[1]], [e[2], 0.0, -e[0]], [-e[1], e[0], 0.0]])
    c = 1.0 / theta**2 - (1.0 + np.cos(theta)) / (2.0 * theta * np.sin(theta))
    return np.eye(3) - 0.5 * E + c * E @ E


@wp.kernel
def rotation_log_rates(e: wp.array(dtype=wp.vec3), rates: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    rates[i] = rotation_log_rate(e[i])


@pytest.mark.parametrize("angle", [1e-3, 0.05, 0.5, 2.0, 3.1])
def test_rotation_log_rate_is_the_derivative_of_the_log(angle):
    """``spatial.rotation_log_rate(e)``: central differences of ``log(exp(h ω) exp(e))`` in float64 over ω along
    the three axes, at rotations from 1e-3 rad (its series) to 3.1 rad, agree to 1e-5 of its size."""
    e = angle * np.array([0.3, -0.8, 0.52]) / np.linalg.norm([0.3, -0.8, 0.52])
    out = wp.zeros(1, dtype=wp.mat33)
    wp.launch(rotation_log_rates, dim=1, inputs=[wp.array([e], dtype=wp.vec3)], outputs=[out])
    h = 1e-6
    expected = np.stack(
        [
            (
                quat_log(quat_product(quat_exp(h * omega), quat_exp(e)))
                - quat_log(quat_product(quat_exp(-h * omega), quat_exp(e)))
            )
            / (2.0 * h)
            for omega in np.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(out.numpy()[0], expected, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("target_sign", [1.0, -1.0])
def test_one_step_of_a_position_velocity_drive_is_the_implicit_pd_law(target_sign):
    """From ``q0`` 0.3 rad about an oblique axis off the target ``q_d`` (both turned), turning at ω0 not along that
    axis, with target velocity ω_d: each axis k of F is a PD on its error ``e_k`` (``e = log(q q_d⁻¹)``), whose rate
    is ``ė = J ω``, ``J = J_l⁻¹(e0)`` frozen over the step, so ``I ω1 = I ω0 + Jᵀγ``,
    ``γ = −Δt (Kp (e0 + Δt J ω1) + Kd (J ω1 − ω_d))``; the target given as ``−q_d`` (the same rotation) gives the same
    step."""
    kp, kd = 40.0, 1.5
    model = ball_body(newton.JointTargetMode.POSITION_VELOCITY, ke=kp, kd=kd, frame=quat_axis_angle([1, 2, 3], 0.7))
    q_d = quat_axis_angle([0.0, 1.0, 0.0], 0.5)
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    turn = quat_axis_angle(axis, 0.3)
    q0 = np.array(wp.mul(wp.quat(*turn), wp.quat(*q_d)))  # q0 q_d⁻¹ = turn: e0 = 0.3 axis
    w0, w_d = np.array([0.3, -0.2, 0.4]), np.array([-0.5, 0.1, 0.2])
    _q, w1 = step(model, 1, q0=q0, qd0=w0, q_target=target_sign * q_d, qd_target=w_d)
    e0 = 0.3 * axis
    J = log_rate(e0)
    lhs = INERTIA * np.eye(3) + DT * (DT * kp + kd) * J.T @ J
    expected = np.linalg.solve(lhs, INERTIA * w0 - DT * J.T @ (kp * e0 - kd * w_d))
    np.testing.assert_allclose(w1, expected, rtol=1e-4, atol=1e-6)


def test_a_position_drives_feed_forward_acts_on_its_error_coordinate():
    """A POSITION drive (a negligible Kp) with feed-forward ``joint_act`` u = 1 N·m on axis x, the joint 2 rad about
    y from its target, from rest: the feed-forward is a force on ``e_x`` like the drive's impulse, so the step's
    torque is ``J_l⁻¹(e0)_xᵀ u``, (0.64, 0, −1.0) N·m: ``I ω1 = Δt J_xᵀ u``. A velocity drive's feed-forward on x is
    a torque about x."""
    e0 = np.array([0.0, 2.0, 0.0])
    for mode, kp, torque in ((newton.JointTargetMode.POSITION, 1e-9, log_rate(e0)[0]),
                             (newton.JointTargetMode.VELOCITY, 0.0, np.array([1.0, 0.0, 0.0]))):  # fmt: skip
        model = ball_body(mode, ke=kp, kd=0.0 if kp > 0.0 else 1e-9)
        solver = newton_sap.SolverSAP(model)
        s0, s1 = model.state(), model.state()
        s0.joint_q.assign(quat_exp(e0).astype(np.float32))
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        control = model.control()
        control.joint_target_q.assign(np.array([0.0, 0.0, 0.0, 1.0], np.float32))
        control.joint_act.assign(np.array([1.0, 0.0, 0.0], np.float32))
        solver.step(s0, s1, control, None, DT)
        np.testing.assert_allclose(s1.joint_qd.numpy(), DT * torque / INERTIA, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("holder", ["drive", "spring"])
def test_a_stiff_drive_on_one_axis_holds_it_and_adds_no_energy(holder):
    """A body (COM off the joint, anisotropic inertia) on a BALL joint whose drive (Kp 1e6, no damping) or passive
    spring (``joint_stiffness`` 1e6) holds axis x of F stiffly and leaves y and z free, turned 2 rad about y and
    spinning about y and z, no gravity: over 600 steps of Δt = 0.01 it holds ``e_x`` within 1e-4 rad and the kinetic
    energy never rises above its first step's. With ``ė ≈ ω`` (the error's rate to first order in e, until session
    41) ``e_x`` drifted by ½Δt (e × ω)_x a step, up to 0.13 rad, and the drive's corrections pumped the energy to 6.6
    times its start (the spring's alike): random trees with stiff BALL drives exploded to 1e11 rad/s within 20
    steps."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    inertia = np.diag([0.01, 0.02, 0.03])
    link = b.add_link(mass=1.0, inertia=wp.mat33(*inertia.ravel()))
    X_p = wp.transform((0.3, 0.2, 0.1), wp.quat(*quat_axis_angle([0, 0, 1], 0.7)))
    X_c = wp.transform((0.0, 0.0, 0.2), wp.quat_identity())
    b.add_articulation([b.add_joint_ball(-1, link, parent_xform=X_p, child_xform=X_c)])
    model = b.finalize()
    stiffness = np.array([1e6, 0.0, 0.0], np.float32)
    if holder == "drive":
        model.joint_target_mode.fill_(int(newton.JointTargetMode.POSITION))
        model.joint_target_ke.assign(stiffness)
    else:
        model.joint_stiffness.assign(stiffness)
        model.joint_rest_q.assign(np.array([0.0, 0.0, 0.0, 1.0], np.float32))
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(quat_axis_angle([0, 1, 0], 2.0).astype(np.float32))
    s0.joint_qd.assign(np.array([0.0, 3.0, 5.0], np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    control = model.control()
    control.joint_target_q.assign(np.array([0.0, 0.0, 0.0, 1.0], np.float32))
    energies, errors = [], []
    for _ in range(600):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        assert np.all(solver.stats.converged)
        pose, twist = s0.body_q.numpy()[0].astype(np.float64), s0.body_qd.numpy()[0].astype(np.float64)
        R = np.array(wp.quat_to_matrix(wp.quat(*pose[3:]))).reshape(3, 3)
        v, omega = twist[:3], twist[3:]  # the COM's velocity, the angular velocity (world)
        energies.append(0.5 * v @ v + 0.5 * omega @ R @ inertia @ R.T @ omega)
        errors.append(quat_log(s0.joint_q.numpy().astype(np.float64))[0])
    assert np.abs(errors).max() < 1e-4
    assert max(energies) <= energies[0] * (1.0 + 1e-4)


def test_position_drive_turns_the_joint_to_its_target_rotation():
    """A POSITION drive (damping ratio about 1) settles the joint at its target, 2 rad about an oblique axis away,
    to 1e-4 rad in 3 s."""
    q_d = quat_axis_angle([1.0, 1.0, 0.0], 2.0)
    model = ball_body(newton.JointTargetMode.POSITION, ke=10.0, kd=2.0, frame=quat_axis_angle([0, 0, 1], 1.0))
    q, w = step(model, 300, q_target=q_d)
    assert 2.0 * np.arccos(min(1.0, abs(np.dot(q, q_d)))) < 1e-4
    assert np.abs(w).max() < 1e-3


def test_velocity_drive_and_its_effort_limit():
    """VELOCITY mode from rest: ``ω1 = Δt Kd ω_d / (I + Δt Kd)``; with a saturating Kd the effort limit e gives
    ``ω1 = Δt e / I`` along ω_d."""
    kd, w_d = 3.0, np.array([0.0, 1.2, 1.6])
    _q, w1 = step(ball_body(newton.JointTargetMode.VELOCITY, kd=kd), 1, qd_target=w_d)
    np.testing.assert_allclose(w1, DT * kd * w_d / (INERTIA + DT * kd), rtol=1e-5)
    effort = 0.5  # [N·m] per axis
    _q, w1 = step(ball_body(newton.JointTargetMode.VELOCITY, kd=1e4, effort=effort), 1, qd_target=w_d)
    np.testing.assert_allclose(w1, [0.0, DT * effort / INERTIA, DT * effort / INERTIA], rtol=1e-4, atol=1e-7)


def test_joint_friction_brakes_each_axis_at_its_friction_torque():
    """Dry friction f_c per axis: a body turning at ω0 about F's y axis slows at ``f_c / I`` and stops at
    ``I ω0 / f_c`` = 0.5 s."""
    friction, w0 = 0.2, 1.0
    _q, w = step(ball_body(newton.JointTargetMode.NONE, friction=friction), 30, qd0=[0.0, w0, 0.0])
    np.testing.assert_allclose(w, [0.0, w0 - friction / INERTIA * 30 * DT, 0.0], atol=1e-5)
    _q, w = step(ball_body(newton.JointTargetMode.NONE, friction=friction), 60, qd0=[0.0, w0, 0.0])
    assert np.abs(w).max() < 1e-4


def test_position_drive_matches_mujocos_ball_actuators():
    """MuJoCo (``implicitfast``, one ``<position>`` per axis on a ball joint, Δt = 2 ms) turning the body from rest
    to 0.3 rad about an oblique fixed axis: the angular velocities agree to 1 % of their peak over 0.6 s (MuJoCo's
    error ``log q − log q_d`` is this solver's ``log(q q_d⁻¹)`` for rotations about one axis) and the rotations at the
    end to 1e-3 rad."""
    import mujoco

    kp, kv, dt, steps = 10.0, 2.0, 2e-3, 300
    axis, angle = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0), 0.3
    gears = ["1 0 0", "0 1 0", "0 0 1"]
    xml = f"""<mujoco><option timestep="{dt}" gravity="0 0 0" integrator="implicitfast"/>
        <worldbody><body><joint name="ball" type="ball"/>
        <inertial pos="0 0 0" mass="1" diaginertia="{INERTIA} {INERTIA} {INERTIA}"/></body></worldbody>
        <actuator>{"".join(f'<position joint="ball" gear="{g} 0 0 0" kp="{kp}" kv="{kv}"/>' for g in gears)}
        </actuator></mujoco>"""
    mj_model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(mj_model)
    data.ctrl[:] = angle * axis
    reference = []
    for _ in range(steps):
        mujoco.mj_step(mj_model, data)
        reference.append(data.qvel.copy())
    model = ball_body(newton.JointTargetMode.POSITION, ke=kp, kd=kv)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    control = model.control()
    control.joint_target_q.assign(quat_axis_angle(axis, angle).astype(np.float32))
    velocities = []
    for _ in range(steps):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
        velocities.append(s0.joint_qd.numpy().astype(np.float64))
    reference = np.array(reference)
    assert np.abs(np.array(velocities) - reference).max() < 0.01 * np.abs(reference).max()
    q_mj = np.array([*data.qpos[1:], data.qpos[0]])  # MuJoCo's w x y z
    assert 2.0 * np.arccos(min(1.0, abs(np.dot(s0.joint_q.numpy(), q_mj)))) < 1e-3


def test_a_zeroed_target_quaternion_counts_as_the_identity():
    """Targets zeroed in bulk (``joint_target_q.zero_()``) drive a BALL joint toward the identity rotation, as Newton's
    SolverMuJoCo takes them: the step of the implicit PD law with ``e0 = log(q0)``."""
    kp = 40.0
    model = ball_body(newton.JointTargetMode.POSITION, ke=kp)
    axis = np.array([0.0, 0.6, 0.8])
    _q, w1 = step(model, 1, q0=quat_axis_angle(axis, 0.4), q_target=np.zeros(4))
    np.testing.assert_allclose(w1, -DT * kp * 0.4 * axis / (INERTIA + DT * DT * kp), rtol=1e-4, atol=1e-7)


def test_joint_stiffness_pulls_toward_the_rest_rotation_implicitly():
    """Passive stiffness k and damping d on a BALL joint, ``joint_rest_q`` a turned rotation, the parent frame turned,
    ω0 not along the error: ``I ω1 = I ω0 − Δt (Jᵀ k (e0 + Δt J ω1) + d ω1)`` with ``e0 = log(q0 q_rest⁻¹)`` and its
    rate ``J = J_l⁻¹(e0)``, in every axis of F (``Jᵀ e0 = e0``: the torque at rest is MuJoCo's ``−k e0``)."""
    k, d = 30.0, 0.4
    model = ball_body(newton.JointTargetMode.NONE, frame=quat_axis_angle([3, -1, 2], 0.9))
    model.joint_stiffness.fill_(k)
    model.joint_damping.fill_(d)
    q_rest = quat_axis_angle([1.0, 0.0, 1.0], -0.6)
    model.joint_rest_q.assign(q_rest.astype(np.float32))
    axis = np.array([2.0, 1.0, -2.0]) / 3.0
    q0 = np.array(wp.mul(wp.quat(*quat_axis_angle(axis, 0.5)), wp.quat(*q_rest)))
    w0 = np.array([0.2, -0.6, 0.3])
    _q, w1 = step(model, 1, q0=q0, qd0=w0)
    J = log_rate(0.5 * axis)
    lhs = (INERTIA + DT * d) * np.eye(3) + DT * DT * k * J.T @ J
    expected = np.linalg.solve(lhs, INERTIA * w0 - DT * k * 0.5 * axis)
    np.testing.assert_allclose(w1, expected, rtol=1e-4, atol=1e-6)


def test_anisotropic_stiffness_fills_the_joints_block_of_A():
    """Stiffness K = diag(30, 5, 80) on a BALL joint (a COM off the joint, a full inertia, turned parent and child
    frames, a rest rotation 1.9 rad from q0, turning at ω0): against the same model without stiffness the step's A
    gains ``Δt² JᵀKJ`` (off-diagonal entries included) and τ loses ``Jᵀ K (e0 + Δt J ω0)``, ``J = J_l⁻¹(e0)``
    (velocity products at v0, ``coriolis="explicit"``, so that τ differs by the spring alone)."""
    stiffness, rest = np.array([30.0, 5.0, 80.0]), quat_axis_angle([1, 2, -1], 0.7)
    q0 = quat_product(quat_axis_angle([0.3, -0.8, 0.52], 1.9), rest)
    w0 = np.array([0.2, -0.6, 0.3])

    def snapshot(k):
        b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        inertia = np.array([[0.03, 0.003, -0.001], [0.003, 0.045, 0.002], [-0.001, 0.002, 0.035]])
        link = b.add_link(mass=1.3, com=wp.vec3(0.05, -0.02, 0.1), inertia=wp.mat33(*inertia.ravel()))
        X_p = wp.transform((0.2, -0.1, 0.5), wp.quat(*quat_axis_angle([3, -1, 2], 0.9)))
        X_c = wp.transform((0.01, 0.0, 0.15), wp.quat(*quat_axis_angle([1, 1, 0], 0.3)))
        b.add_articulation([b.add_joint_ball(-1, link, parent_xform=X_p, child_xform=X_c)])
        model = b.finalize()
        model.joint_stiffness.assign(np.asarray(k, np.float32))
        model.joint_rest_q.assign(rest.astype(np.float32))
        state = model.state()
        state.joint_q.assign(q0.astype(np.float32))
        state.joint_qd.assign(w0.astype(np.float32))
        newton.eval_fk(model, state.joint_q, state.joint_qd, state)
        return newton_sap.SolverSAP(model, coriolis="explicit").snapshot(state, control=model.control(), dt=DT)

    spring, plain = snapshot(stiffness), snapshot(np.zeros(3))
    e0 = quat_log(quat_product(q0, rest * np.array([-1.0, -1.0, -1.0, 1.0])))
    J = log_rate(e0)
    block = DT * DT * J.T @ np.diag(stiffness) @ J
    np.testing.assert_allclose(
        spring.problem_matrix[0] - plain.problem_matrix[0], block, atol=1e-5 * np.abs(block).max()
    )
    expected = -J.T @ (stiffness * (e0 + DT * J @ w0))
    np.testing.assert_allclose(spring.tau[0] - plain.tau[0], expected, atol=1e-5 * np.abs(expected).max())


def test_stiffness_accelerates_as_in_solvermujoco():
    """The spring's torque against Newton's SolverMuJoCo (MuJoCo's ball stiffness toward the rest pose it converts
    from ``joint_rest_q``): one 0.1 ms step from rest at a rotation 0.9 rad from the identity, with turned parent and
    child frames, a non-identity rest rotation, an anisotropic inertia and a COM off the joint; the accelerations
    agree to 1e-4 (both frames' conventions and the rest pose's)."""

    def model():
        b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        link = b.add_link(mass=1.0, inertia=wp.mat33(*np.diag([0.1, 0.15, 0.2]).ravel()), com=wp.vec3(0.1, -0.05, 0.2))
        X_p = wp.transform((0.2, -0.1, 0.5), wp.quat(*quat_axis_angle([1, 2, 3], 0.7)))
        X_c = wp.transform((0.05, 0.1, -0.2), wp.quat(*quat_axis_angle([-1, 0.5, 2], 1.1)))
        b.add_articulation([b.add_joint_ball(-1, link, parent_xform=X_p, child_xform=X_c)])
        m = b.finalize()
        m.joint_stiffness.fill_(20.0)
        m.joint_rest_q.assign(quat_axis_angle([1.0, 0.0, 1.0], -0.6).astype(np.float32))
        return m

    def acceleration(solver_class, **options):
        m = model()
        solver = solver_class(m, **options)
        s0, s1 = m.state(), m.state()
        s0.joint_q.assign(quat_axis_angle([0.3, 1.0, -0.2], 0.9).astype(np.float32))
        newton.eval_fk(m, s0.joint_q, s0.joint_qd, s0)
        solver.step(s0, s1, m.control(), None, 1e-4)
        return s1.joint_qd.numpy().astype(np.float64) / 1e-4

    ours, reference = acceleration(newton_sap.SolverSAP), acceleration(newton.solvers.SolverMuJoCo, use_mujoco_cpu=True)
    assert np.linalg.norm(ours - reference) < 1e-4 * np.linalg.norm(reference)


def test_a_stiff_ball_joint_needs_a_rest_rotation():
    """A zero ``joint_rest_q`` quaternion under stiffness is refused, naming the joint (SolverMuJoCo's spring does
    nothing there)."""
    model = ball_body(newton.JointTargetMode.NONE)
    model.joint_stiffness.fill_(5.0)
    model.joint_rest_q.zero_()
    with pytest.raises(newton_sap.ModelError, match=r"joint 0 \('shoulder'\) dof 0 has joint stiffness toward"):
        newton_sap.SolverSAP(model)


def test_dampratio_of_a_ball_made_of_hinges_stays_on_its_dofs():
    """Newton's importer makes three MJCF hinges one BALL (``convert_3d_hinge_to_ball_joints``) and points each
    hinge's actuator at its own dof: three ``<position dampratio>`` damp the three dofs as SolverMuJoCo resolves them,
    and one on the last hinge damps that dof alone, not the next joint's (its expansion to three dofs ran past the
    ball)."""
    hinges = "".join(
        f'<joint name="h{a}" type="hinge" axis="{v}"/>' for a, v in zip("xyz", ("1 0 0", "0 1 0", "0 0 1"), strict=True)
    )

    def imported(actuated):
        xml = f"""<mujoco><option gravity="0 0 0"/><worldbody><body pos="0 0 1">{hinges}
            <geom type="box" size="0.1 0.2 0.3" pos="0 0 -0.3"/><body pos="0 0 -0.6">
            <joint name="e" type="hinge" axis="1 0 0"/><geom type="sphere" size="0.05" pos="0 0 -0.1"/></body></body>
            </worldbody><actuator>{"".join(f'<position joint="h{a}" kp="10" dampratio="1"/>' for a in actuated)}
            <position joint="e" kp="10"/></actuator></mujoco>"""
        b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        b.add_mjcf(xml, convert_3d_hinge_to_ball_joints=True)
        return b.finalize()

    all_three = imported("xyz")
    reference = imported("xyz")
    newton.solvers.SolverMuJoCo(reference, use_mujoco_cpu=True)
    kd = newton_sap.SolverSAP(all_three)._sap.dof_dampratio_kd.numpy()
    np.testing.assert_allclose(kd, reference.joint_target_kd.numpy(), rtol=1e-5)
    kd = newton_sap.SolverSAP(imported("z"))._sap.dof_dampratio_kd.numpy()
    assert kd[2] > 0.0 and kd[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]


def test_bad_ball_drive_gains_name_the_joint():
    model = ball_body(newton.JointTargetMode.POSITION, ke=10.0)
    ke = model.joint_target_ke.numpy()
    ke[1] = -1.0
    model.joint_target_ke.assign(ke)
    with pytest.raises(newton_sap.ModelError, match=r"joint 0 \('shoulder'\) dof 1 has negative or non-finite"):
        newton_sap.SolverSAP(model)
