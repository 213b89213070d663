"""PD drives and joint limits in whole systems: closed forms and reference gravity torques."""

import warnings

import newton
import newton.examples
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.diagnostics import mechanical_energy

import references as refs

G, MASS, ARM = 9.81, 2.0, 0.5
I_COM = 0.01


def pendulum(kp=0.0, kd=0.0, effort=1e6, upper=None):
    """A link on a revolute joint about +y at the origin, COM ARM metres out along +x: horizontal at
    q = 0, gravity turns it toward q = π/2 (hanging)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    link = b.add_link(mass=MASS, com=wp.vec3(ARM, 0.0, 0.0), inertia=wp.mat33(I_COM, 0, 0, 0, I_COM, 0, 0, 0, I_COM))
    mode = newton.JointTargetMode.POSITION if kp > 0 or kd > 0 else newton.JointTargetMode.NONE
    joint = b.add_joint_revolute(
        -1, link, axis=(0.0, 1.0, 0.0), target_ke=kp, target_kd=kd, effort_limit=effort, actuator_mode=mode,
        limit_lower=-10.0 if upper is not None else None, limit_upper=upper,
    )  # fmt: skip
    b.add_articulation([joint])
    return b.finalize()


def simulate(model, steps, dt, q0=0.0, target=0.0, **options):
    solver = newton_sap.SolverSAP(model, **options)
    control = model.control()
    control.joint_target_q.assign(np.array([target], np.float32))
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([q0], np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(steps):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
    return solver, s0, control


def test_saturated_drive_delivers_exactly_its_effort_limit():
    """A drive pulling far up (target −1 rad, Kp = 1e4) saturates at e = ½ m g l: from rest at
    q = 0 the net torque is m g l − e."""
    effort = 0.5 * MASS * G * ARM
    dt = 1e-3
    _, state, _ = simulate(pendulum(kp=1e4, kd=10.0, effort=effort), 1, dt, target=-1.0)
    expected = dt * (MASS * G * ARM - effort) / (I_COM + MASS * ARM**2)
    assert abs(state.joint_qd.numpy()[0] - expected) < 1e-4 * expected


def test_pd_hold_balances_gravity():
    """Steady state: Kp (q_d − q) = b(q) (the gravity torque) to 1e-4."""
    kp, target = 200.0, 0.3
    solver, state, control = simulate(pendulum(kp=kp, kd=20.0), 400, 0.01, q0=target, target=target)
    assert abs(state.joint_qd.numpy()[0]) < 1e-6
    q = state.joint_q.numpy()[0]
    bias = solver.snapshot(state, control).bias[0][0]
    assert abs(kp * (target - q) - bias) < 1e-4 * abs(bias)
    assert abs(bias - MASS * G * ARM * np.cos(q) * -1.0) < 1e-4 * abs(bias)  # b = −m g l cos q


def test_drive_switched_on_after_the_build():
    """A drive set on the model after the solver was built acts from the next notified step as if it had
    been there from the start; notify_model_changed warns that the steps' constraints changed (graphs
    captured before solve none), and again when the last drive goes."""

    def switch(model, kp, kd):
        mode = newton.JointTargetMode.POSITION if kp > 0.0 else newton.JointTargetMode.NONE
        model.joint_target_mode.assign(np.array([int(mode)], np.int32))
        model.joint_target_ke.assign(np.array([kp], np.float32))
        model.joint_target_kd.assign(np.array([kd], np.float32))

    model = pendulum()
    solver, state, control = simulate(model, 5, 0.01, target=-0.5)  # falls freely: no constraint rows
    assert solver.stats.num_constraints.sum() == 0
    switch(model, 200.0, 20.0)
    with pytest.warns(UserWarning, match="now has drives"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_FORCE_PROPERTIES)
    reference = newton_sap.SolverSAP(pendulum(kp=200.0, kd=20.0))
    out, expected = model.state(), model.state()
    solver.step(state, out, control, None, 0.01)
    reference.step(state, expected, control, None, 0.01)
    np.testing.assert_array_equal(out.joint_qd.numpy(), expected.joint_qd.numpy())
    assert out.joint_qd.numpy()[0] < state.joint_qd.numpy()[0]  # the drive pulls toward the target −0.5 rad
    switch(model, 0.0, 0.0)
    with pytest.warns(UserWarning, match="no longer has drives"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_PROPERTIES)
    solver.step(state, out, control, None, 0.01)
    assert solver.stats.num_constraints.sum() == 0


def test_very_stiff_drive_is_stable_at_large_steps():
    """Kp = 1e6 at Δt = 0.01 (ω Δt ≈ 20: explicit PD diverges); the implicit drive settles."""
    _, state, _ = simulate(pendulum(kp=1e6, kd=1e3), 200, 0.01, q0=0.5, target=0.0)
    q, v = state.joint_q.numpy()[0], state.joint_qd.numpy()[0]
    assert np.isfinite(q) and abs(q) < 1e-3 and abs(v) < 1e-3


def test_pendulum_rests_on_its_limit_without_gaining_energy():
    model = pendulum(upper=0.8)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    e0 = mechanical_energy(model, s0)[0]
    solver.step(s0, s1, None, None, 0.01)
    assert solver.stats.num_constraints[0] == 0  # at rest, 0.8 rad away: the limit is out of reach
    s0, s1 = s1, s0
    energies = []
    for _ in range(300):
        solver.step(s0, s1, None, None, 0.01)
        s0, s1 = s1, s0
        energies.append(mechanical_energy(model, s0)[0])
    assert abs(s0.joint_q.numpy()[0] - 0.8) < 1e-3
    assert max(energies) <= e0 + 1e-6


def test_limit_does_not_brake_before_the_joint_reaches_it():
    """A free rotor (no gravity) turning at −1 rad/s toward its lower limit at −0.5005 rad, with Newton's limit
    gains (ke 1e3, kd 1e2: τ_d = 0.1 s): it turns freely, ``q = −t`` (as Featherstone and MuJoCo give), until the
    step that crosses the limit (t = 0.501 s), then stops there. With the violated side's bias
    ``−g0 / (Δt + τ_d)`` also before the limit, the step before was braked to −0.72 rad/s."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.0, com=wp.vec3(0.5, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 0.01))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0), limit_lower=-0.5005, limit_upper=0.5,
                                             limit_ke=1e3, limit_kd=1e2)])  # fmt: skip
    model = b.finalize()
    solver = newton_sap.SolverSAP(model, joint_limit_stiffness=None)
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.array([-1.0], np.float32))
    dt, trajectory = 1e-3, []
    for _ in range(700):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
        trajectory.append((s0.joint_q.numpy()[0], s0.joint_qd.numpy()[0]))
    q, qd = np.array(trajectory).T
    free = slice(0, 500)  # t ≤ 0.5 s: the limit not yet reached
    np.testing.assert_allclose(q[free], -dt * np.arange(1, 501), atol=1e-5)
    np.testing.assert_allclose(qd[free], -1.0, atol=1e-6)
    assert -0.51 < q.min() < -0.5005 and abs(qd[-1]) < 0.05  # stopped by the (compliant) limit


@pytest.mark.parametrize("dt", [0.01, 0.002, 0.0005])
def test_a_joint_reset_past_its_limit_returns_at_a_speed_bounded_whatever_dt(dt):
    """A rotor (no gravity) reset at rest 0.05 rad past its upper limit (a reset with noise, a model that starts
    outside a range) is pushed back within one step at ``−0.05 / (Δt + τ_d)``: with the default τ_d = 0.02 s at
    1.7-2.4 rad/s for Δt 0.01-0.0005, at most 0.05 / τ_d (MuJoCo's own soft limit, default ``solref``: 0.9-1.25
    rad/s); with Drake's τ_d = Δt (``joint_limit_dissipation_time = -1``) at ``0.05 / (2 Δt)``, 50 rad/s at Δt = 0.5
    ms, which flung it across its range onto the other limit."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.0, com=wp.vec3(0.25, 0.0, 0.0), inertia=wp.mat33(np.diag([1e-3, 0.02, 0.02])))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0.0, 1.0, 0.0), limit_lower=-0.5, limit_upper=0.5)])
    model = b.finalize()
    for tau_d, time in ((None, dt + 0.02), (-1.0, 2.0 * dt)):
        options = {} if tau_d is None else {"joint_limit_dissipation_time": tau_d}
        _, state, _ = simulate(model, 1, dt, q0=0.55, **options)
        assert state.joint_qd.numpy()[0] == pytest.approx(-0.05 / time, rel=1e-3)


def test_drive_into_a_limit_outside_its_window_stops_there():
    """A stiff drive (Kp 1e4, target 1 rad) turns a link at rest (no gravity) toward its upper limit 0.05 rad away.
    SAP.md §5's window ``2 Δt max(|v0|, |v*|)`` is 0 (v* has no drive in it), so the limit's row is left out; the
    solution crosses the limit, the check at the solution adds the row and solves the step again: the link stops
    at the limit in the first step, as far into it as when it starts there (0.0509 rad both; without the check it
    went on to 0.74 rad)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.0, com=wp.vec3(0.5, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 0.01))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0.0, 1.0, 0.0), target_ke=1e4, target_kd=10.0,
                                             actuator_mode=newton.JointTargetMode.POSITION, limit_lower=-1.0,
                                             limit_upper=0.05)])  # fmt: skip
    model = b.finalize()
    q1 = {}
    for q0 in (0.0, 0.05):
        solver, state, _ = simulate(model, 1, 0.01, q0=q0, target=1.0)
        q1[q0] = state.joint_q.numpy()[0]
        assert solver.stats.converged.all() and solver.stats.num_constraints[0] == 2  # drive and upper limit
    assert 0.05 < q1[0.0] < 0.052
    assert abs(q1[0.0] - q1[0.05]) < 1e-4


def test_limit_reached_through_the_mass_matrix_coupling_holds():
    """Two links on parallel hinges at rest (no gravity); a torque of 50 N·m on the outer joint swings the inner
    one back, through A's coupling, toward its lower limit 0.01 rad away. The window sees the inner joint's own
    torque only (none), so the limit is left out, then joined by the check at the solution: the inner joint never
    passes it (it went to −0.127 rad in the first step of 0.01 s)."""
    inertia = wp.mat33(np.eye(3) * 0.01)
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    inner = b.add_link(mass=1.0, com=wp.vec3(0.25, 0.0, 0.0), inertia=inertia)
    outer = b.add_link(mass=1.0, com=wp.vec3(0.25, 0.0, 0.0), inertia=inertia)
    joints = [
        b.add_joint_revolute(-1, inner, axis=(0.0, 0.0, 1.0), limit_lower=-0.01, limit_upper=1.0),
        b.add_joint_revolute(inner, outer, axis=(0.0, 0.0, 1.0), parent_xform=wp.transform((0.5, 0.0, 0.0),
                                                                                           wp.quat_identity())),
    ]  # fmt: skip
    b.add_articulation(joints)
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    control = model.control()
    control.joint_f.assign(np.array([0.0, 50.0], np.float32))
    s0, s1 = model.state(), model.state()
    inner_q = []
    for _ in range(5):
        solver.step(s0, s1, control, None, 0.01)
        s0, s1 = s1, s0
        inner_q.append(s0.joint_q.numpy()[0])
        assert solver.stats.converged.all()
    assert min(inner_q) > -0.0101
    assert abs(inner_q[-1] + 0.01) < 1e-4  # held at the limit


@pytest.mark.parametrize("kp", [500.0, 1e6])
def test_arm_pd_hold_balances_reference_gravity(kp):
    """Panda (9 dofs) under PD at a pose: Kp (q_d − q) equals Pinocchio's gravity torque g(q)."""
    model = refs.build_newton_model("panda", device="cpu")
    n = model.joint_dof_count
    model.joint_target_ke.assign(np.full(n, kp, np.float32))
    model.joint_target_kd.assign(np.full(n, 2.0 * np.sqrt(kp), np.float32))
    model.joint_target_mode.assign(np.full(n, int(newton.JointTargetMode.POSITION), np.int32))
    target = model.joint_q.numpy().copy()
    target[:9] = [0.3, -0.4, 0.2, -1.8, 0.1, 1.5, 0.6, 0.02, 0.02]  # fingers mid-range, off their limits
    solver = newton_sap.SolverSAP(model)
    control = model.control()
    control.joint_target_q.assign(target)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(target)
    for _ in range(600):
        solver.step(s0, s1, control, None, 0.01)
        s0, s1 = s1, s0
    q = s0.joint_q.numpy().astype(np.float64)
    assert np.abs(s0.joint_qd.numpy()).max() < 1e-5
    if kp > 1e4:
        # near-rigid: the gains are scaled down to keep H well conditioned, and float32 positions
        # resolve 1e-7 rad (1e6 × 1e-7 = 0.1 N·m): check stability and tracking only
        assert np.abs(target - q).max() < 1e-3
        return
    _, gravity = refs.reference_mass_and_bias("panda", model, q, np.zeros(n), source="pinocchio")
    arm = slice(0, 7)  # the fingers also carry the mimic coupling's force
    assert np.abs(kp * (target - q) - gravity)[arm].max() < 1e-4 * max(np.abs(gravity).max(), 1.0)


def rotor(friction):
    """A disc (I = 0.5 kg·m²) on a vertical revolute axis: gravity exerts no torque."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    link = b.add_link(mass=1.0, inertia=wp.mat33(0.2, 0, 0, 0, 0.3, 0, 0, 0, 0.5))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0), friction=friction)])
    return b.finalize()


def test_joint_friction_decelerates_at_the_coulomb_rate_then_holds():
    f_c, v0, dt, inertia = 0.25, 1.0, 0.01, 0.5
    model = rotor(f_c)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.array([v0], np.float32))

    def run(steps, control=None):
        nonlocal s0, s1
        for _ in range(steps):
            solver.step(s0, s1, control, None, dt)
            s0, s1 = s1, s0
        return s0.joint_qd.numpy()[0]

    assert abs(run(100) - (v0 - f_c * 1.0 / inertia)) < 1e-3  # 1 s of Coulomb deceleration
    assert abs(run(150)) < 1e-4  # stopped after I v0 / f_c = 2 s, and stays
    control = model.control()
    control.joint_f.assign(np.array([0.8 * f_c], np.float32))  # below the friction force: it sticks
    # regularized stiction creeps at v = σ w τ Δt (w = 1/I): 4e-6 rad/s here
    assert abs(run(200, control)) < 1e-3 * (1.0 / inertia) * 0.8 * f_c * dt * 1.5


def test_mimic_fingers_follow_their_leader():
    """Panda fingers: finger 2 mimics finger 1 (q2 = offset + multiplier q1); finger 1 is driven to a
    moving target, finger 2 has no drive of its own."""
    model = refs.build_newton_model("panda", device="cpu")
    n = model.joint_dof_count
    leader, follower = 7, 8
    mimic = model.joint_mimic_joint.numpy()
    assert mimic[model.joint_count - 1] >= 0  # the URDF's mimic joint
    mode = np.full(n, int(newton.JointTargetMode.POSITION), np.int32)
    mode[follower] = int(newton.JointTargetMode.NONE)
    model.joint_target_mode.assign(mode)
    model.joint_target_ke.assign(np.full(n, 400.0, np.float32))
    model.joint_target_kd.assign(np.full(n, 40.0, np.float32))
    offset, multiplier = model.joint_mimic_coeffs.numpy()[model.joint_count - 1]
    solver = newton_sap.SolverSAP(model)
    control = model.control()
    s0, s1 = model.state(), model.state()
    target = model.joint_q.numpy().copy()
    worst = 0.0
    for k in range(300):
        target[leader] = 0.02 + 0.015 * np.sin(0.05 * k)
        control.joint_target_q.assign(target)
        solver.step(s0, s1, control, None, 0.01)
        s0, s1 = s1, s0
        q = s0.joint_q.numpy()
        worst = max(worst, abs(q[follower] - (offset + multiplier * q[leader])))
    assert worst < 1e-4


def test_mimic_across_worlds_is_refused():
    model = refs.build_newton_model("panda", device="cpu", worlds=2)
    mimic = model.joint_mimic_joint.numpy()
    followers = np.nonzero(mimic >= 0)[0]
    mimic[followers[1]] = mimic[followers[0]]  # world 1's finger now mimics world 0's
    model.joint_mimic_joint.assign(mimic)
    with pytest.raises(newton_sap.ModelError, match="another world"):
        newton_sap.SolverSAP(model)


def hinge_pair(mimic):
    """Two links on hinges (ja at the world, jc at link a), a third hinge closing a loop from link c to the
    world, and the mimic coupling ``mimic(builder, ja, jc, loop)`` adds."""
    b = newton.ModelBuilder()
    inertia = wp.mat33(np.eye(3) * 0.01)
    a = b.add_link(mass=1.0, inertia=inertia, com=wp.vec3(0.2, 0, 0), label="a")
    c = b.add_link(mass=1.0, inertia=inertia, com=wp.vec3(0.2, 0, 0), label="c")
    ja = b.add_joint_revolute(-1, a, axis=(0, 1, 0), label="ja")
    jc = b.add_joint_revolute(a, c, axis=(0, 1, 0), parent_xform=wp.transform((0.4, 0, 0), wp.quat_identity()),
                              label="jc")  # fmt: skip
    b.add_articulation([ja, jc])
    loop = b.add_joint_revolute(-1, c, axis=(0, 1, 0), parent_xform=wp.transform((0.8, 0, 0), wp.quat_identity()),
                                label="loop")  # fmt: skip
    mimic(b, ja, jc, loop)
    return b.finalize()


@pytest.mark.parametrize(
    ("mimic", "message"),
    [
        (lambda b, ja, jc, loop: b.set_joint_mimic(loop, ja, coeffs=(0.0, 1.0)), "loop.*loop-closing joint"),
        (lambda b, ja, jc, loop: b.set_joint_mimic(jc, loop, coeffs=(0.0, 1.0)), "jc.*loop-closing joint"),
        (lambda b, ja, jc, loop: b.add_constraint_mimic(jc, jc, 0.1, 1.0), "jc.*mimics itself"),
        (lambda b, ja, jc, loop: b.add_constraint_mimic(jc, ja, float("nan"), 1.0), "jc.*non-finite coefficients"),
    ],
    ids=["loop follows", "loop leads", "itself", "NaN offset"],
)
def test_impossible_mimic_couplings_are_refused(mimic, message):
    """A loop-closing joint has no coordinate to couple (a bare KeyError before); a joint cannot follow itself;
    NaN coefficients (Newton's deprecated mimic constraints take them) froze the world before."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # add_constraint_mimic
        model = hinge_pair(mimic)
    with pytest.raises(newton_sap.ModelError, match=message):
        newton_sap.SolverSAP(model)


MJCF_COUPLED = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" contype="0" conaffinity="0"/></body>
    <body name="b" pos="0 0.5 1"><joint name="jb" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.04" contype="0" conaffinity="0"/></body>
  </worldbody>
  {equality}
</mujoco>
"""
JOINT_EQUALITY = '<equality><joint joint1="jb" joint2="ja" polycoef="0.1 -0.5 0 0 0" active="{active}"/></equality>'


def coupled_pendulums(active: bool | None) -> newton.Model:
    """Two different pendulums, horizontal (ja = 0) and at jb = 0.1; MJCF couples jb = 0.1 − 0.5 ja (Newton
    imports it as a mimic constraint), ``active`` or not; ``None``: no equality."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    equality = "" if active is None else JOINT_EQUALITY.format(active=str(active).lower())
    b.add_mjcf(MJCF_COUPLED.format(equality=equality))
    model = b.finalize()
    model.joint_q.assign(np.array([0.0, 0.1], np.float32))
    return model


def swing(model, solver, steps=60, dt=0.005):
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    trajectory = []
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
        trajectory.append(s0.joint_q.numpy().copy())
    return np.array(trajectory)


def test_mjcf_joint_equality_couples_as_a_joint_mimic():
    """Newton's MJCF importer brings an <equality><joint> as a mimic constraint (``constraint_mimic_*``), not
    as ``joint_mimic_joint``: stepped, it is the same coupling, bit for bit, as the mimic set per joint (the
    mimic tests above check that against references). Inactive, it couples nothing until enabled and notified: its
    mimic constraint and its MuJoCo row (``model.mujoco.equality_constraint_enabled``) both; one alone warns."""
    imported = coupled_pendulums(active=True)
    assert imported.constraint_mimic_count == 1 and (imported.joint_mimic_joint.numpy() < 0).all()
    per_joint = coupled_pendulums(active=None)  # the same model without its mimic constraint; the mimic per joint
    per_joint.joint_mimic_joint.assign(np.array([-1, 0], np.int32))
    per_joint.joint_mimic_coeffs.assign(np.array([[0.0, 1.0], [0.1, -0.5]], np.float32))
    q = swing(imported, newton_sap.SolverSAP(imported))
    np.testing.assert_array_equal(q, swing(per_joint, newton_sap.SolverSAP(per_joint)))
    assert np.abs(q[:, 1] - (0.1 - 0.5 * q[:, 0])).max() < 1e-4 and np.abs(q[:, 0]).max() > 0.1
    inactive = coupled_pendulums(active=False)
    solver = newton_sap.SolverSAP(inactive)
    q = swing(inactive, solver, steps=10)
    assert abs(q[-1, 1] - (0.1 - 0.5 * q[-1, 0])) > 1e-2  # each swings on its own
    inactive.constraint_mimic_enabled.assign(np.array([True]))
    with pytest.warns(UserWarning, match=r"mimic constraint 0 made from MuJoCo equality rows .* disagree"):
        solver.notify_model_changed(newton.ModelFlags.CONSTRAINT_PROPERTIES)
    q = swing(inactive, solver, steps=10)
    assert abs(q[-1, 1] - (0.1 - 0.5 * q[-1, 0])) > 1e-2  # still apart
    inactive.mujoco.equality_constraint_enabled.assign(np.array([True]))
    with pytest.warns(UserWarning, match="now has drives, joint limits, joint friction or mimic couplings"):
        solver.notify_model_changed(newton.ModelFlags.CONSTRAINT_PROPERTIES)
    q = swing(inactive, solver)
    assert np.abs(q[:, 1] - (0.1 - 0.5 * q[:, 0])).max() < 1e-4


def test_mjcf_joint_equality_is_released_through_its_mujoco_row():
    """An active MJCF <equality><joint> switched off through its MuJoCo row (``model.mujoco.
    equality_constraint_enabled``, as SolverMuJoCo reads it; before, SolverSAP kept the coupling): each pendulum
    swings on its own after ``notify_model_changed(CONSTRAINT_PROPERTIES)``."""
    model = coupled_pendulums(active=True)
    solver = newton_sap.SolverSAP(model)
    model.mujoco.equality_constraint_enabled.assign(np.array([False]))
    with pytest.warns(UserWarning, match="now the two disagree"):
        solver.notify_model_changed(newton.ModelFlags.CONSTRAINT_PROPERTIES)
    q = swing(model, solver, steps=10)
    assert abs(q[-1, 1] - (0.1 - 0.5 * q[-1, 0])) > 1e-2


@pytest.mark.parametrize("active", [True, False])
def test_a_mimic_constraint_row_takes_precedence_over_its_followers_joint_mimic(active):
    """A follower with both a per-joint mimic (jb = −ja) and a ``constraint_mimic_*`` row (jb = 0.1 − 0.5 ja):
    the row decides, enabled or not, as in Newton's SolverMuJoCo. Enabled, its coupling holds (both at once raised
    "mimics two joints" before); disabled, the follower swings free (the per-joint mimic held it before)."""
    model = coupled_pendulums(active=active)
    model.joint_mimic_joint.assign(np.array([-1, 0], np.int32))
    model.joint_mimic_coeffs.assign(np.array([[0.0, 1.0], [0.0, -1.0]], np.float32))
    q = swing(model, newton_sap.SolverSAP(model))
    late = q[30:]  # after the first steps, which close the couplings' initial gaps
    row, per_joint = np.abs(late[:, 1] - (0.1 - 0.5 * late[:, 0])).max(), np.abs(late[:, 1] + late[:, 0]).max()
    assert np.abs(q[:, 0]).max() > 0.1
    if active:
        assert row < 1e-4 and per_joint > 0.05
    else:
        assert row > 1e-2 and per_joint > 1e-2


def test_quadruped_stands_under_pd_for_ten_seconds():
    """Newton's bundled quadruped (offline URDF, cylinder feet) on the ground under PD at Δt = 5e-3
    (the ``quadruped`` example scene, holding its stance)."""
    from newton_sap.diagnostics import quat_to_matrix
    from newton_sap.examples.scenes import quadruped_pd

    model = quadruped_pd(1)
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    control = model.control()
    target = model.joint_q.numpy().copy()
    control.joint_target_q.assign(target)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(2000):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, 5e-3)
        s0, s1 = s1, s0
        assert solver.stats.converged.all()
    q = s0.joint_q.numpy()
    up = quat_to_matrix(q[3:7])[:, 2]
    assert 0.2 < q[2] < 0.8 and up[2] > 0.95  # standing, upright
    assert np.abs(q[7:] - target[7:]).max() < 0.1  # the legs hold the stance
    assert np.abs(s0.joint_qd.numpy()).max() < 0.05  # at rest


def mimic_gripper() -> tuple[newton.Model, np.ndarray]:
    """A two-finger gripper: finger 2 mimics finger 1 (same opening, mirrored axis), finger 1 is driven (Kp 200,
    Kd 20, effort 20 N) toward the returned targets, closed beyond the surfaces of a 6 cm box standing on the
    ground between them (at 0.04 m of travel)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    cfg = newton.ModelBuilder.ShapeConfig(mu=1.0)
    fingers = []
    for _ in range(2):
        link = b.add_link(mass=0.1, inertia=wp.mat33(1e-4, 0, 0, 0, 1e-4, 0, 0, 0, 1e-4))
        b.add_shape_box(link, hx=0.01, hy=0.01, hz=0.03, cfg=cfg)
        fingers.append(link)
    j1 = b.add_joint_prismatic(
        -1, fingers[0], axis=(0.0, -1.0, 0.0), parent_xform=wp.transform((0.0, 0.08, 0.04), wp.quat_identity()),
        target_ke=200.0, target_kd=20.0, effort_limit=20.0, actuator_mode=newton.JointTargetMode.POSITION,
    )  # fmt: skip
    j2 = b.add_joint_prismatic(-1, fingers[1], axis=(0.0, 1.0, 0.0),
                               parent_xform=wp.transform((0.0, -0.08, 0.04), wp.quat_identity()))  # fmt: skip
    b.add_articulation([j1, j2])
    b.set_joint_mimic(j2, j1, coeffs=(0.0, 1.0))
    box = b.add_body(xform=wp.transform((0.0, 0.0, 0.03), wp.quat_identity()))
    b.add_shape_box(box, hx=0.03, hy=0.03, hz=0.03, cfg=cfg)
    b.add_ground_plane(cfg=cfg)
    model = b.finalize()
    assert model.joint_mimic_joint.numpy()[j2] == j1
    target = model.joint_q.numpy().copy()
    target[0] = 0.07  # closes beyond the box surface: squeezes it
    return model, target


def test_mimic_fingers_keep_their_coupling_while_grasping():
    """The gripper closes onto the box: while the fingers squeeze it, q2 = q1 to 1e-4."""
    model, target = mimic_gripper()
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    control = model.control()
    control.joint_target_q.assign(target)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    worst = 0.0
    for _ in range(200):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, 0.005)
        s0, s1 = s1, s0
        q = s0.joint_q.numpy()
        worst = max(worst, abs(q[1] - q[0]))
    assert solver.stats.converged.all()
    assert abs(q[0] - 0.04) < 2e-3  # in contact with the box faces (0.08 − 0.01 − 0.03)
    assert solver.stats.num_contacts[0] >= 2  # both fingers touch the box
    assert worst < 1e-4


def test_mimic_of_a_descendant_on_one_chain(monkeypatch):
    """A three-link arm whose middle joint mimics its own child (q1 = 0.5 q2): the coupling row spans two
    dofs of one chain without being a walk to the root, so the CPU tree solve must place it at its
    dofs' entries of H. Started on the coupling, the arm swings under gravity for 2 s: every step meets the
    tolerance, the coupling holds, and the tree solve's velocities equal those of the dense Cholesky of
    the same H (assembled by another kernel)."""
    import newton_sap.factorization as factorization

    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    inertia = wp.mat33(1e-2, 0, 0, 0, 1e-2, 0, 0, 0, 1e-2)
    joints, parent = [], -1
    for k, axis in enumerate([(0.0, 1.0, 0.0), (0.0, 0.7, 0.7), (0.0, 1.0, 0.0)]):
        link = b.add_link(mass=1.0, inertia=inertia, com=wp.vec3(0.3, 0.0, 0.0))
        offset = wp.transform((0.6 if k else 0.0, 0.0, 0.0 if k else 1.0), wp.quat_identity())
        joints.append(b.add_joint_revolute(parent, link, axis=axis, parent_xform=offset))
        parent = link
    b.add_articulation(joints)
    b.set_joint_mimic(joints[1], joints[2], coeffs=(0.0, 0.5))
    model = b.finalize(device="cpu")

    def swing(tree_solve):
        monkeypatch.setattr(factorization, "TREE_LDLT_ON_CPU", tree_solve)
        solver = newton_sap.SolverSAP(model)
        s0, s1 = model.state(), model.state()
        s0.joint_q.assign(np.array([0.3, -0.25, -0.5], np.float32))
        s0.joint_qd.assign(np.array([0.5, 1.0, 2.0], np.float32))
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        control = model.control()
        worst, velocities = 0.0, []
        for _ in range(200):
            solver.step(s0, s1, control, None, 0.01)
            s0, s1 = s1, s0
            assert solver.stats.converged.all() and solver.stats.residual.max() < 1e-3
            q = s0.joint_q.numpy()
            worst = max(worst, abs(q[1] - 0.5 * q[2]))
            velocities.append(s0.joint_qd.numpy())
        assert worst < 1e-4
        return np.array(velocities)

    tree, dense = swing(True), swing(False)
    assert np.abs(tree - dense).max() < 1e-3 * np.abs(dense).max()
