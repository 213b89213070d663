"""Kinematic bodies (Newton's ``BodyFlags.KINEMATIC``): roots whose motion the user prescribes step by step.

Checked against Newton's own cross-solver contract (its canonical kinematic-link tests, run with SolverSAP), a
pendulum on a prescribed turntable (the rotating-frame equation, integrated to round-off), a load welded to a
prescribed carrier (rigid motion), a box carried by a prescribed belt (static friction) or not (no friction),
and the bookkeeping: immovable pairs, mimics led by a prescribed joint, switching in captured graphs (a flag
off the root is refused: ``test_bad_input``).
"""

import unittest

import newton
import numpy as np
import pytest
import warp as wp
from newton.tests import test_kinematic_links as newton_kinematic_links

import newton_sap

from contact_scenes import G, copy_state
from same_run import assert_same_run

KINEMATIC = int(newton.BodyFlags.KINEMATIC)
DYNAMIC = int(newton.BodyFlags.DYNAMIC)


@pytest.mark.parametrize(
    "case",
    [
        "free_base_prescribed_motion",
        "revolute_root_pendulum_prescribed_motion",
        "fixed_root_static_force_immune",
        "runtime_toggle",
    ],
)
def test_newtons_kinematic_link_contract(case):
    """Newton's canonical kinematic-link checks (``newton/tests/test_kinematic_links.py``, which every Newton
    solver passes): prescribed free and revolute roots move as written, whatever wrench acts on them, and push
    a dynamic probe; a fixed kinematic root stays put; a body switched to dynamic and back moves only while
    dynamic."""
    check = getattr(newton_kinematic_links, f"test_kinematic_{case}")
    check(unittest.TestCase(), wp.get_device(), newton_sap.SolverSAP)


def turntable(spin_offset=0.3, arm=0.2, mass=0.5, inertia=2e-3, mimic=None):
    """A kinematic turntable (REVOLUTE about z at the origin) carrying a pendulum: a REVOLUTE joint about z at
    ``spin_offset`` [m] on the table's x axis, its body's COM ``arm`` [m] further out. Gravity along z does no
    work on either. The table's joint has a PD drive toward 0 and limits at ±0.1 rad, which a prescribed joint
    ignores. ``mimic``: ``"pendulum follows"`` (its joint mimics the table's, ``φ = −θ``) or ``"table follows"``
    (``θ = −φ``)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    table = b.add_link(mass=2.0, inertia=wp.mat33(np.eye(3) * 0.1), is_kinematic=True, label="turntable")
    bob = b.add_link(mass=mass, com=(arm, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * inertia), label="pendulum")
    b.add_shape_sphere(bob, xform=wp.transform((arm, 0.0, 0.0), wp.quat_identity()), radius=0.02,
                       cfg=newton.ModelBuilder.ShapeConfig(density=0.0))  # fmt: skip
    j_table = b.add_joint_revolute(  # a drive and limits that would stop it, were they not ignored (prescribed)
        -1, table, axis=newton.Axis.Z, target_ke=1e3, target_kd=10.0, limit_lower=-0.1, limit_upper=0.1, label="table"
    )
    j_bob = b.add_joint_revolute(
        table, bob, axis=newton.Axis.Z, parent_xform=wp.transform((spin_offset, 0.0, 0.0), wp.quat_identity())
    )
    b.add_articulation([j_table, j_bob])
    model = b.finalize()
    if mimic == "pendulum follows":
        model.joint_mimic_joint.assign(np.array([-1, j_table], np.int32))
        model.joint_mimic_coeffs.assign(np.array([[0.0, 1.0], [0.0, -1.0]], np.float32))
    elif mimic == "table follows":
        model.joint_mimic_joint.assign(np.array([j_bob, -1], np.int32))
        model.joint_mimic_coeffs.assign(np.array([[0.0, -1.0], [0.0, 1.0]], np.float32))
    return model


def rotating_frame_pendulum(phi0, spin, spin_offset, arm, mass, inertia, t_end, dt=1e-5):
    """``φ(t_end)`` of the pendulum on a table turning at constant ``spin`` [rad/s] (Lagrange, rotating frame):
    ``(m l² + I) φ̈ = −m a l Ω² sin φ``, by RK4 at ``dt``."""
    k = mass * spin_offset * arm * spin**2 / (mass * arm**2 + inertia)

    def f(y):
        return np.array([y[1], -k * np.sin(y[0])])

    y = np.array([phi0, 0.0])
    for _ in range(round(t_end / dt)):
        a = f(y)
        b = f(y + 0.5 * dt * a)
        c = f(y + 0.5 * dt * b)
        d = f(y + dt * c)
        y = y + dt / 6.0 * (a + 2.0 * b + 2.0 * c + d)
    return y


def prescribe(state, q_start, qd_start, q, qd):
    """Write a kinematic root's coordinates and velocities (lists) into ``state``, as a user does each step."""
    joint_q, joint_qd = state.joint_q.numpy(), state.joint_qd.numpy()
    joint_q[q_start : q_start + len(q)] = q
    joint_qd[qd_start : qd_start + len(qd)] = qd
    state.joint_q.assign(joint_q)
    state.joint_qd.assign(joint_qd)


@pytest.mark.parametrize("momentum_mode", [False, True])
def test_pendulum_on_a_prescribed_turntable(momentum_mode):
    """The table turns at Ω whatever the pendulum does (prescribed): relative to it, the pendulum swings in the
    centrifugal field, ``(m l² + I) φ̈ = −m a l Ω² sin φ``. Semi-implicit Euler at Δt = 1 ms against RK4 over
    2 s (about 1.3 swings). A table that yields to the pendulum's reaction within a step (its row of the mass
    matrix coupled) swings the pendulum otherwise. Within a step the table keeps its velocity in the free motion
    and in the SAP solve (the snapshot's ``v_star`` and ``velocity``; the body twists at the solution read it),
    though the pendulum's reaction, its joint's drive and its limits would turn it."""
    spin, phi0, dt, t_end = 3.0, 0.5, 1e-3, 2.0
    model = turntable()
    solver = newton_sap.SolverSAP(model, momentum_mode=momentum_mode)
    s0, s1 = model.state(), model.state()
    prescribe(s0, 0, 0, [0.0, phi0], [spin, 0.0])
    for n in range(round(t_end / dt)):
        prescribe(s0, 0, 0, [spin * n * dt], [spin])
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    contacts = newton.CollisionPipeline(model).contacts()  # none: the snapshot then solves the step's SAP problem
    snapshot = solver.snapshot(s0, None, dt, contacts)
    assert snapshot.v_star[0][0] == spin and snapshot.velocity[0][0] == spin
    q, qd = s0.joint_q.numpy(), s0.joint_qd.numpy()
    assert q[0] == pytest.approx(spin * (round(t_end / dt) - 1) * dt, abs=1e-6)  # passed through unchanged
    assert qd[0] == spin
    phi, phi_dot = rotating_frame_pendulum(phi0, spin, 0.3, 0.2, 0.5, 2e-3, t_end)
    assert q[1] == pytest.approx(phi, abs=2e-3)  # [rad]; the swing's amplitude is 0.5
    assert qd[1] == pytest.approx(phi_dot, abs=2e-2)  # [rad/s]; its peak is about 1.9


@pytest.mark.parametrize("mimic", ["pendulum follows", "table follows"])
def test_mimic_coupled_to_a_prescribed_joint(mimic):
    """A pendulum whose joint is coupled to the turntable's (``φ = −θ``: the pendulum mimics the table, or the table
    mimics the pendulum) keeps its world orientation while the table turns: the prescribed side's velocity is
    given, not solved for, and the coupling moves the other side (as MuJoCo moves the leader of a prescribed
    follower; with the table following, the pendulum swung free before). After the step from t to t + Δt the
    pendulum is at −θ(t + Δt), where the user puts the table next."""
    spin, dt, steps = 3.0, 1e-3, 500
    model = turntable(mimic=mimic)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    for n in range(steps):
        prescribe(s0, 0, 0, [spin * n * dt], [spin])
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    q, qd = s0.joint_q.numpy(), s0.joint_qd.numpy()
    assert q[1] == pytest.approx(-spin * steps * dt, abs=1e-4)  # [rad], 1.5 rad turned
    assert qd[1] == pytest.approx(-spin, abs=1e-3)


def test_body_welded_to_a_prescribed_carrier_is_carried():
    """A free body welded to a kinematic carrier by a loop-closing FIXED joint follows the carrier's prescribed
    screw motion (1 m/s along x, 2 rad/s about z) under gravity: the weld's rows see the carrier's velocity in
    their bias. After the step from t to t + Δt the body is where the carrier puts it at t + Δt."""
    u, spin, dt, steps = 1.0, 2.0, 0.01, 100
    offset = wp.transform((0.3, 0.1, 0.0), wp.quat_rpy(0.2, 0.0, 0.3))
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    carrier = b.add_body(is_kinematic=True, label="carrier")
    body = b.add_body(xform=offset, mass=2.0, inertia=wp.mat33(np.diag([0.02, 0.03, 0.04])), label="load")
    b.add_joint_fixed(carrier, body, parent_xform=offset, label="weld")
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()

    def carrier_pose(t):
        return wp.transform((u * t, 0.0, 0.0), wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), spin * t))

    for n in range(steps):
        prescribe(s0, 0, 0, list(carrier_pose(n * dt)), [u, 0.0, 0.0, 0.0, 0.0, spin])
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    expected = carrier_pose(steps * dt) * offset
    pose = s0.body_q.numpy()[1]
    np.testing.assert_allclose(pose[:3], np.array(wp.transform_get_translation(expected)), atol=1e-3)  # [m]
    assert abs(np.dot(pose[3:], np.array(wp.transform_get_rotation(expected)))) > 1.0 - 1e-6
    r = np.array(wp.transform_get_translation(expected)) - np.array([u * steps * dt, 0.0, 0.0])
    np.testing.assert_allclose(s0.body_qd.numpy()[1][:3], [u - spin * r[1], spin * r[0], 0.0], atol=1e-2)  # [m/s]


def car_with_pendulum(free_root, radius=2.0, height=1.0, arm=0.3):
    """A kinematic "car" carrying a pendulum (REVOLUTE about the car's y axis, bob ``arm`` [m] below). The car's
    root joint is FREE, or (``free_root`` False) REVOLUTE about z at a point ``radius`` [m] off the car, so that
    turning it about that axis drives the car round a circle."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    car = b.add_link(mass=5.0, inertia=wp.mat33(np.eye(3) * 0.5), is_kinematic=True, label="car")
    if free_root:
        root = b.add_joint_free(car)
    else:
        at_centre = wp.transform((-radius, 0.0, -height), wp.quat_identity())
        root = b.add_joint_revolute(-1, car, axis=newton.Axis.Z, child_xform=at_centre)
    bob = b.add_link(mass=1.0, com=(0.0, 0.0, -arm), inertia=wp.mat33(np.eye(3) * 1e-3), label="bob")
    b.add_articulation([root, b.add_joint_revolute(car, bob, axis=newton.Axis.Y)])
    return b.finalize()


def test_pendulum_in_a_car_driving_a_circle():
    """A kinematic FREE root keeps its twist within a step (a screw motion, as Newton's Featherstone solver
    holds it), so a pendulum in a car that drives a circle (R = 2 m, Ω = 2 rad/s, yawing with it) swings out
    as when the same motion is prescribed by a REVOLUTE root at the circle's centre (the turntable above): to
    1e-4 rad over a second. With the car's origin moving straight within each step it would not swing."""
    radius, spin, height, dt = 2.0, 2.0, 1.0, 1e-3
    swings = []
    for free_root in (True, False):
        model = car_with_pendulum(free_root, radius, height)
        solver = newton_sap.SolverSAP(model)
        s0, s1 = model.state(), model.state()
        phi = []
        for n in range(1000):
            th = spin * n * dt
            if free_root:
                pose = [radius * np.cos(th), radius * np.sin(th), height, 0.0, 0.0, np.sin(th / 2), np.cos(th / 2)]
                prescribe(s0, 0, 0, pose, [-spin * radius * np.sin(th), spin * radius * np.cos(th), 0, 0, 0, spin])
            else:
                prescribe(s0, 0, 0, [th], [spin])
            solver.step(s0, s1, None, None, dt)
            s0, s1 = s1, s0
            phi.append(s0.joint_q.numpy()[-1])
        swings.append(np.array(phi))
    assert swings[1].min() < -1.4  # [rad]: it swings out past the tilt atan(Ω² R / g) = 0.68 rad and back
    np.testing.assert_allclose(swings[0], swings[1], atol=1e-4)


def test_a_fast_kinematic_body_does_not_loosen_other_solves():
    """A kinematic body's dofs are not unknowns of the problem, so its speed is not in the optimality test's
    scale: a three-box stack steps bit for bit the same beside a sphere spinning in place at 0 or 1e4 rad/s."""

    def stack_beside_a_spinning_sphere(spin):
        b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
        b.add_ground_plane()
        for k in range(3):
            body = b.add_body(xform=wp.transform((0.01 * k, 0.0, 0.05 * (2 * k + 1)), wp.quat_identity()))
            b.add_shape_box(body, hx=0.05, hy=0.05, hz=0.05, cfg=newton.ModelBuilder.ShapeConfig(density=50.0))
        sphere = b.add_link(mass=1.0, inertia=wp.mat33(np.eye(3) * 0.1), is_kinematic=True)
        b.add_shape_sphere(sphere, radius=0.1)
        at = wp.transform((10.0, 0.0, 1.0), wp.quat_identity())
        b.add_articulation([b.add_joint_revolute(-1, sphere, axis=newton.Axis.Z, parent_xform=at)])
        model = b.finalize()
        solver = newton_sap.SolverSAP(model)
        pipeline = newton.CollisionPipeline(model)
        contacts = pipeline.contacts()
        s0, s1 = model.state(), model.state()
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)  # the sphere to its joint's place, 10 m away
        for _ in range(100):
            prescribe(s0, 21, 18, [0.0], [spin])
            pipeline.collide(s0, contacts)
            solver.step(s0, s1, None, contacts, 2e-3)
            s0, s1 = s1, s0
        return s0.joint_q.numpy()[:21], s0.joint_qd.numpy()[:18]

    resting, spinning = stack_beside_a_spinning_sphere(0.0), stack_beside_a_spinning_sphere(1e4)
    for a, b, name in zip(resting, spinning, ("joint_q", "joint_qd"), strict=True):
        assert_same_run(a, b, name)


def conveyor(mu=0.5):
    """A 1 kg cube (0.1 m half extent) resting on a kinematic FREE platform (a 2 m × 2 m × 0.1 m slab, top at
    z = 0), friction μ on both shapes; no ground."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu)
    platform = b.add_body(xform=wp.transform((0.0, 0.0, -0.05), wp.quat_identity()), is_kinematic=True, label="belt")
    b.add_shape_box(platform, hx=1.0, hy=1.0, hz=0.05, cfg=cfg)
    box = b.add_body(xform=wp.transform((0.0, 0.0, 0.1), wp.quat_identity()), label="box")
    b.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1, cfg=newton.ModelBuilder.ShapeConfig(mu=mu, density=125.0))
    return b.finalize()


def run_belt(mu, belt_speed, steps, dt=0.005, **options):
    """The cube on the :func:`conveyor` belt driven at ``belt_speed(t)`` [m/s] along x (its pose and velocity
    written before each step): the cube's public velocity after each step, the solver and the final state."""
    model = conveyor(mu)
    solver = newton_sap.SolverSAP(model, **options)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    x, box_qd = 0.0, []
    for n in range(steps):
        u = belt_speed(n * dt)
        prescribe(s0, 0, 0, [x, 0.0, -0.05, 0.0, 0.0, 0.0, 1.0], [u, 0.0, 0.0, 0.0, 0.0, 0.0])
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0, body_flag_filter=newton.BodyFlags.KINEMATIC)
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, None, contacts, dt)
        s0, s1 = s1, s0
        box_qd.append(s0.joint_qd.numpy()[6:12].copy())
        x += u * dt
    return np.array(box_qd), solver, s0


@pytest.mark.parametrize("momentum_mode", [False, True])
def test_box_carried_by_a_prescribed_belt(momentum_mode):
    """A belt that accelerates at a = 2 m/s² (below μ g = 4.9 m/s²) for 0.5 s, then runs at 1 m/s, carries the
    box resting on it by static friction: ``v = a t``, then 1 m/s, without a hop; the box's weight does not
    push the belt down (its pose is the one written)."""
    dt, a = 0.005, 2.0
    box_qd, solver, state = run_belt(0.5, lambda t: min(a * t, 1.0), 150, dt, momentum_mode=momentum_mode)
    times = dt * np.arange(1, 151)
    belt = np.minimum(a * (times - dt), 1.0)  # the belt's speed during each step
    assert np.abs(box_qd[:, 0] - belt).max() < 0.01 * belt.max()
    assert np.abs(box_qd[:, 1:]).max() < 5e-3  # [m/s, rad/s]: settling on the compliant contact, a slight rock
    assert state.body_q.numpy()[1, 2] == pytest.approx(0.1, abs=1e-3)  # no hop (it would be cm high: README)
    assert state.body_q.numpy()[0, 2] == pytest.approx(-0.05, abs=1e-7)
    assert solver.stats.converged.all()


def test_frictionless_belt_runs_under_the_box():
    """Without friction a belt at 1 m/s drags nothing: the box stays at rest on it."""
    box_qd, _, _ = run_belt(0.0, lambda t: 1.0, 40)
    assert np.abs(box_qd[:, [0, 1, 3, 4, 5]]).max() < 1e-5  # [m/s, rad/s]
    assert np.abs(box_qd[:, 2]).max() < 1e-3  # settling on the compliant contact


def test_pairs_moved_by_kinematic_bodies_alone_are_skipped():
    """A kinematic belt sunk 2 cm into the ground touches it (Newton's pipeline keeps static-kinematic pairs by
    default): those contacts join no problem. The box resting on the belt keeps its contacts."""
    builder = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    builder.add_ground_plane(height=-0.08)
    platform = builder.add_body(xform=wp.transform((0.0, 0.0, -0.05), wp.quat_identity()), is_kinematic=True)
    builder.add_shape_box(platform, hx=1.0, hy=1.0, hz=0.05)
    box = builder.add_body(xform=wp.transform((0.0, 0.0, 0.1), wp.quat_identity()))
    builder.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1)
    model = builder.finalize()
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    state, out = model.state(), model.state()
    pipeline.collide(state, contacts)
    shape0, shape1 = (a.numpy()[: contacts.rigid_contact_count.numpy()[0]] for a in
                      (contacts.rigid_contact_shape0, contacts.rigid_contact_shape1))  # fmt: skip
    ground_belt = int(((np.minimum(shape0, shape1) == 0) & (np.maximum(shape0, shape1) == 1)).sum())
    assert ground_belt > 0 and len(shape0) > ground_belt  # also the box's, on the belt and in the ground's gap
    solver = newton_sap.SolverSAP(model)
    solver.step(state, out, None, contacts, 0.01)
    assert solver.stats.num_contacts[0] == len(shape0) - ground_belt


def test_switching_kinematic_reaches_a_captured_graph():
    """``body_flags`` is read on the device: a graph captured while a pushed body is kinematic replays it held,
    and after the switch to dynamic (notified) replays what a solver built for a dynamic body steps."""

    def pushed_body(flag):
        b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        body = b.add_body(is_kinematic=flag == KINEMATIC)
        b.add_shape_sphere(body, radius=0.1)
        return b.finalize()

    model = pushed_body(KINEMATIC)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    for state in (s0, s1):
        state.body_f.assign(np.array([[5.0, 0.0, 0.0, 0.0, 0.0, 1.0]], np.float32))

    def two_steps(solver, a, b):
        solver.step(a, b, None, None, 0.01)
        solver.step(b, a, None, None, 0.01)

    two_steps(solver, s0, s1)
    with wp.ScopedCapture(device=model.device) as capture:
        two_steps(solver, s0, s1)
    wp.capture_launch(capture.graph)
    assert np.abs(s0.joint_q.numpy() - model.joint_q.numpy()).max() == 0.0  # held
    model.body_flags.assign(np.array([DYNAMIC], np.int32))
    solver.notify_model_changed(newton.ModelFlags.BODY_PROPERTIES)
    reference_model = pushed_body(DYNAMIC)
    reference = newton_sap.SolverSAP(reference_model)
    r0, r1 = reference_model.state(), reference_model.state()
    copy_state(s0, r0)
    for state in (r0, r1):
        state.body_f.assign(s0.body_f)
    for _ in range(2):
        wp.capture_launch(capture.graph)
        two_steps(reference, r0, r1)
    for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
        assert_same_run(getattr(s0, name).numpy(), getattr(r0, name).numpy(), name)
    assert s0.joint_qd.numpy()[0] == pytest.approx(5.0 * 0.04 / reference_model.body_mass.numpy()[0], rel=1e-5)
