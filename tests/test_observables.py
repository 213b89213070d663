"""Newton's solver observables from ``SolverSAP``: ``CONTACT_F`` (each contact's wrench on body 0), ``BODY_QDD``
(each body's mean acceleration over the step) and ``BODY_PARENT_F`` (the wrench through each body's tree joint),
checked against statics, free fall, Newton's own forward kinematics, Newton's contact sensor and MuJoCo."""

import warnings

import newton
import numpy as np
import pytest
import warp as wp
from newton.sensors import SensorContact

import newton_sap
from newton_sap import diagnostics

from contact_scenes import G, Run, sphere_on_ground

DT = 0.01
HALF, MASS = 0.1, 1.0
CENTER = (0.7, -0.4)  # the stack stands away from the world origin: a moment about the wrong point shows
KINDS = newton.solvers.SolverBase.ObservableKind


def stack(lift=0.0, boxes=2):
    """``boxes`` 1 kg cubes stacked on a ground plane at ``CENTER``, ``lift`` [m] above it."""
    b = newton.ModelBuilder()
    b.add_ground_plane()
    density = MASS / (8.0 * HALF**3)
    for k in range(boxes):
        xform = wp.transform((*CENTER, lift + HALF * (2 * k + 1)), wp.quat_identity())
        body = b.add_body(xform=xform, label=f"box{k}")
        b.add_shape_box(body, hx=HALF, hy=HALF, hz=HALF, cfg=newton.ModelBuilder.ShapeConfig(density=density))
    return b.finalize()


def swinging_chain(welded_base=False):
    """Three links on hinges with skewed axes, COMs off the axes, asymmetric inertias (no damping, no armature);
    with ``welded_base``, hung from a 2 kg base welded to the world 2 m up (a static body outside the trees, which
    receives the chain's wrench) above a ground plane."""
    b = newton.ModelBuilder()
    inertia = wp.mat33(1e-2, 0, 0, 0, 2e-2, 0, 0, 0, 3e-2)
    parent, joints = -1, []
    if welded_base:
        b.add_ground_plane()
        parent = b.add_link(mass=2.0, com=wp.vec3(0.0, 0.0, 0.1), inertia=inertia)
        joints.append(b.add_joint_fixed(-1, parent, parent_xform=wp.transform((0.0, 0.0, 2.0), wp.quat_identity())))
    for k in range(3):
        link = b.add_link(mass=1.0, com=wp.vec3(0.2, 0.05, 0.0), inertia=inertia)
        xform = wp.transform((0.4 if k else 0.0, 0.0, 0.0), wp.quat_identity())
        joints.append(b.add_joint_revolute(parent, link, parent_xform=xform, axis=(0.0, 1.0, 0.3 * k)))
        parent = link
    b.add_articulation(joints)
    return b.finalize()


def com(model, body_q):
    """World COM of each body at poses ``body_q`` (NumPy, Newton's layout) [m], shape (bodies, 3)."""
    return np.array([wp.transform_point(wp.transform(*np.split(x, [3])), wp.vec3(c))
                     for x, c in zip(body_q, model.body_com.numpy(), strict=True)])  # fmt: skip


def wrench_on_bodies(run):
    """Sum of the step's contact wrenches on each body, about its COM at the step's start: ``(forces,
    torques)`` [N, N·m], each shape (bodies, 3), from ``contact_f`` read as Newton documents it (on body 0,
    about body 0's COM or, for a static shape 0, the world origin)."""
    count = int(run.contacts.rigid_contact_count.numpy()[0])
    wrench = run.observables.contact_f.numpy()[:count]
    shape_body = run.model.shape_body.numpy()
    body0 = shape_body[run.contacts.rigid_contact_shape0.numpy()[:count]]
    body1 = shape_body[run.contacts.rigid_contact_shape1.numpy()[:count]]
    com_start = com(run.model, run.start_body_q)
    forces, torques = np.zeros_like(com_start), np.zeros_like(com_start)
    for f0, t0, b0, b1 in zip(wrench[:, :3], wrench[:, 3:], body0, body1, strict=True):
        o0 = com_start[b0] if b0 >= 0 else np.zeros(3)
        if b0 >= 0:
            forces[b0] += f0
            torques[b0] += t0
        if b1 >= 0:  # on body 1: −f0 at the contact point p, where p × f0 = t0 + o0 × f0
            forces[b1] -= f0
            torques[b1] += -t0 + np.cross(com_start[b1] - o0, f0)
    return forces, torques


def test_contact_wrenches_hold_each_box_of_a_resting_stack():
    """A two-box stack at rest away from the origin: on each box the contact forces sum to its weight and their
    moments about its COM to zero, with the ground as a static body 0 (moments about the origin) and the lower
    box as body 0 of the contacts between the boxes. The linear part is minus ``rigid_contact_force`` (on
    shape 1); the rows past the count and the soft rows are zero."""
    run = Run(stack(), observe={KINDS.CONTACT_F})
    run.step(DT, 30)
    forces, torques = wrench_on_bodies(run)
    np.testing.assert_allclose(forces, [[0.0, 0.0, MASS * G]] * 2, atol=2e-2 * MASS * G)
    np.testing.assert_allclose(torques, 0.0, atol=1e-3 * MASS * G * HALF)
    count = int(run.contacts.rigid_contact_count.numpy()[0])
    wrench = run.observables.contact_f.numpy()
    np.testing.assert_array_equal(wrench[:count, :3], -run.contacts.rigid_contact_force.numpy()[:count])
    assert count > 8 and not wrench[count:].any()


def test_contact_wrenches_are_the_momentum_change_of_a_sliding_sphere():
    """A sphere (r = 0.1 m, 1 kg, μ = 0.5) set sliding at 2 m/s without spin: the contact force on it slides on
    the cone, ``f_x = −μ f_z``, and, acting at its lowest point, its moment about the COM is ``(0, −r f_x, 0)``,
    which spins it up towards rolling (a moment about a wrong point, or of the wrong sign, misses it). Both are
    the step's momentum change, read from ``BODY_QDD``: ``m a = f + m g`` and ``I α = τ`` (a sphere: no
    gyroscopic term). (The normal force is not the weight here: SAP's cone couples the normal to the slip, see
    the README's known artefacts.)"""
    radius, mu = 0.1, 0.5
    run = Run(
        sphere_on_ground(radius=radius, mass=MASS, height=radius, mu=mu), observe={KINDS.CONTACT_F, KINDS.BODY_QDD}
    )
    run.step(DT, 5)  # resting on the ground
    run.s0.joint_qd.assign(np.array([2.0, 0, 0, 0, 0, 0], np.float32))
    run.step(DT)
    forces, torques = wrench_on_bodies(run)
    f = forces[0]
    assert f[2] > MASS * G and abs(f[1]) < 1e-6 * f[2]
    np.testing.assert_allclose(f[0], -mu * f[2], rtol=1e-4)
    np.testing.assert_allclose(torques[0], [0.0, -radius * f[0], 0.0], rtol=2e-3, atol=1e-6 * radius * f[2])
    qdd = run.observables.body_qdd.numpy()[0]
    inertia = run.model.body_inertia.numpy()[0]
    np.testing.assert_allclose(MASS * qdd[:3], f + [0.0, 0.0, -MASS * G], rtol=1e-3, atol=1e-3 * f[2])
    np.testing.assert_allclose(inertia @ qdd[3:], torques[0], rtol=1e-3, atol=1e-3 * radius * f[2])


def test_newtons_contact_sensor_reads_the_observable_and_the_legacy_buffer():
    """Newton's ``SensorContact`` on each box of a resting stack: the total force on each is its weight, read
    from ``CONTACT_F`` and from the deprecated ``contacts.force`` (allocated because the sensor requests it),
    which the step fills with the same wrenches."""
    model = stack()
    with pytest.warns(DeprecationWarning, match="request_contact_attributes"):  # the legacy buffer, on purpose
        sensor = SensorContact(model, sensing_bodies=["box0", "box1"], request_contact_attributes=True)
    run = Run(model, observe=sensor.solver_observable_kinds)
    assert run.contacts.force is not None
    run.step(DT, 30)
    expected = [[0.0, 0.0, MASS * G]] * 2
    sensor.update(run.s0, run.contacts, observables=run.observables)
    np.testing.assert_allclose(sensor.total_force.numpy(), expected, atol=2e-2 * MASS * G)
    legacy = run.contacts.force.numpy()
    np.testing.assert_array_equal(legacy, run.observables.contact_f.numpy()[: legacy.shape[0]])
    sensor.update(run.s0, run.contacts)
    np.testing.assert_allclose(sensor.total_force.numpy(), expected, atol=2e-2 * MASS * G)


def test_body_accelerations_in_free_fall_and_at_rest():
    """``BODY_QDD``: ``(0, 0, −g, 0, 0, 0)`` for a stack falling from 1 m (no contact acts), zero at rest."""
    run = Run(stack(lift=1.0), observe={KINDS.BODY_QDD})
    run.step(DT, 3)
    np.testing.assert_allclose(run.observables.body_qdd.numpy(), [[0, 0, -G, 0, 0, 0]] * 2, atol=1e-3)
    run = Run(stack(), observe={KINDS.BODY_QDD})
    run.step(DT, 30)
    np.testing.assert_allclose(run.observables.body_qdd.numpy(), 0.0, atol=2e-2)


@pytest.mark.parametrize("stale_body_qd", [False, True])
def test_body_accelerations_are_the_mean_over_the_step(stale_body_qd):
    """A swinging three-link chain (COMs off the hinge axes) without contacts: ``BODY_QDD`` is
    ``(body_qd_out − body_qd_in) / Δt``, ``body_qd_in`` from Newton's ``eval_fk`` at the input's joint
    coordinates, both when the step recomputes its kinematics and when it reuses the last output's; with
    ``stale_body_qd`` the input's ``body_qd`` is left from before its ``joint_qd`` changed (the step does not
    read it)."""
    model = swinging_chain()
    solver = newton_sap.SolverSAP(model)
    observables = solver.observables({KINDS.BODY_QDD})
    s0, s1, reference = model.state(), model.state(), model.state()
    s0.joint_qd.assign(np.array([1.0, -2.0, 3.0], np.float32))
    if not stale_body_qd:
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(2):  # the first step computes its kinematics, the second reuses those of its input
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, reference)
        solver.step(s0, s1, None, None, DT, observables=observables)
        expected = (s1.body_qd.numpy() - reference.body_qd.numpy()) / DT
        assert np.abs(expected).max() > 5.0  # gravity and the links' coupling accelerate every body
        np.testing.assert_allclose(observables.body_qdd.numpy(), expected, rtol=1e-4, atol=1e-2)
        s0, s1 = s1, s0


def test_observables_replay_from_a_graph():
    """Two steps with the observables captured in a graph (collision included) and replayed give exactly the
    wrenches and accelerations of the same steps launched, for a sliding and spinning two-box stack."""

    def two_steps(run):
        for a, b in ((run.s0, run.s1), (run.s1, run.s0)):
            run.pipeline.collide(a, run.contacts)
            run.solver.step(a, b, None, run.contacts, DT, observables=run.observables)

    kinds = {KINDS.CONTACT_F, KINDS.BODY_QDD, KINDS.BODY_PARENT_F}
    for build, qd0, smallest in (
        (stack, [0.3, 0.0, 0.0, 0.0, 0.0, 0.5] * 2, (1.0, 1.0, 1e-6)),  # free boxes: a residual parent wrench
        (lambda: swinging_chain(welded_base=True), [2.0, -3.0, 4.0], (0.0, 1.0, 1.0)),  # hinge reactions
    ):
        launched, captured = (Run(build(), observe=kinds) for _ in range(2))
        for run in (launched, captured):
            run.s0.joint_qd.assign(np.array(qd0, np.float32))
            two_steps(run)  # launched first: the first step sizes the solver's buffers
        with wp.ScopedCapture(device=captured.model.device) as capture:
            two_steps(captured)
        for _ in range(3):
            two_steps(launched)
            wp.capture_launch(capture.graph)
            for name, least in zip(("contact_f", "body_qdd", "body_parent_f"), smallest, strict=True):
                replayed, stepped = (getattr(run.observables, name).numpy() for run in (captured, launched))
                assert np.abs(stepped).max() >= least, name
                np.testing.assert_array_equal(replayed, stepped, err_msg=name)


def test_parent_wrenches_match_mujoco_on_a_swinging_chain():
    """``BODY_PARENT_F`` against MuJoCo's (``SolverMuJoCo`` on MuJoCo's CPU build: ``cfrc_int`` after the
    constraint solve, moved to each COM) from the same state of the swinging chain. Without damping or
    armature the first step's dof accelerations are the forward dynamics at ``(q0, v0)`` in both solvers (SAP's
    velocity products taken at v0, as MuJoCo takes them), so the wrenches, the links' Newton–Euler balances with
    those accelerations, agree to round-off."""
    model = swinging_chain()
    wrenches = []
    for solver in (
        newton_sap.SolverSAP(model, coriolis="explicit"),
        newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True),
    ):
        observables = solver.observables({KINDS.BODY_PARENT_F})
        state = model.state()
        state.joint_qd.assign(np.array([1.0, -2.0, 3.0], np.float32))
        newton.eval_fk(model, state.joint_q, state.joint_qd, state)
        solver.step(state, model.state(), None, None, DT, observables=observables)
        wrenches.append(observables.body_parent_f.numpy())
    ours, mujoco = wrenches
    assert np.abs(mujoco).max() > 1.0
    np.testing.assert_allclose(ours, mujoco, rtol=1e-4, atol=1e-4 * np.abs(mujoco).max())


def test_parent_wrenches_of_passive_hinges_have_no_torque_about_their_axes():
    """With the velocity products at the midpoint velocities (the default), the wrench through each hinge of the
    swinging chain, turning fast, still has no moment about the hinge's axis (no joint torque acts): the RNE
    composites the wrenches start from carry the products the step took."""
    model = swinging_chain()
    solver = newton_sap.SolverSAP(model)
    observables = solver.observables({KINDS.BODY_PARENT_F})
    state = model.state()
    state.joint_qd.assign(np.array([6.0, -12.0, 18.0], np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    solver.step(state, model.state(), None, None, DT, observables=observables)
    wrench = observables.body_parent_f.numpy().astype(np.float64)
    X = state.body_q.numpy().astype(np.float64)
    centres = com(model, state.body_q.numpy())
    axes = diagnostics.quat_to_matrix(X[:, 3:]) @ model.joint_axis.numpy().astype(np.float64)[:, :, None]
    about_axes = np.einsum("bi,bi->b", axes[:, :, 0], wrench[:, 3:] + np.cross(centres - X[:, :3], wrench[:, :3]))
    assert np.abs(about_axes).max() < 1e-4 * np.abs(wrench).max(), (about_axes, np.abs(wrench).max())


def test_deprecated_state_fields_are_filled_as_the_observables():
    """``State.body_parent_f`` and ``State.body_qdd`` (deprecated, still filled by Newton's other solvers when
    ``Model.request_state_attributes`` allocates them) get what the observables give, bit for bit, with or
    without a container."""
    model = swinging_chain()
    model.request_state_attributes("body_parent_f", "body_qdd")
    results = []
    for requested in (True, False):
        solver = newton_sap.SolverSAP(model)
        observables = solver.observables({KINDS.BODY_PARENT_F, KINDS.BODY_QDD}) if requested else None
        state, state_out = model.state(), model.state()
        state.joint_qd.assign(np.array([1.0, -2.0, 3.0], np.float32))
        newton.eval_fk(model, state.joint_q, state.joint_qd, state)
        solver.step(state, state_out, None, None, DT, observables=observables)
        results.append((state_out.body_parent_f.numpy(), state_out.body_qdd.numpy()))
        if requested:
            np.testing.assert_array_equal(results[0][0], observables.body_parent_f.numpy())
            np.testing.assert_array_equal(results[0][1], observables.body_qdd.numpy())
    assert np.abs(results[0][0]).max() > 1.0 and np.abs(results[0][1]).max() > 1.0
    for with_container, alone in zip(*results, strict=True):
        np.testing.assert_array_equal(with_container, alone)


def test_parent_wrench_of_a_hinged_rod_resting_on_its_tip():
    """A rod hinged at one end (0.05 m above the ground) rests on a sphere at its other end: by moments about
    the hinge the ground carries ``N = m g x_c / L`` and the hinge the rest, ``f = (0, 0, m g − N)`` acting at
    the hinge, whose moment about the COM is ``(p_hinge − c) × f``. A wrench that leaves out the contact, or
    takes a moment about another point, misses it."""
    radius, length = 0.05, 0.6
    b = newton.ModelBuilder()
    b.add_ground_plane()
    link = b.add_link()
    b.add_shape_box(link, xform=wp.transform((length / 2, 0, 0), wp.quat_identity()), hx=length / 2, hy=0.02, hz=0.02)
    b.add_shape_sphere(link, xform=wp.transform((length, 0, 0), wp.quat_identity()), radius=radius)
    hinge = (0.0, 0.0, radius)
    b.add_articulation([b.add_joint_revolute(-1, link, parent_xform=wp.transform(hinge, wp.quat_identity()),
                                             axis=(0, 1, 0))])  # fmt: skip
    model = b.finalize()
    run = Run(model, observe={KINDS.BODY_PARENT_F})
    run.step(DT, 50)
    mass, centre = float(model.body_mass.numpy()[0]), com(model, run.s0.body_q.numpy())[0]
    force = np.array([0.0, 0.0, mass * G * (1.0 - centre[0] / length)])
    moment = np.cross(np.array(hinge) - centre, force)
    parent_f = run.observables.body_parent_f.numpy()[0]
    np.testing.assert_allclose(parent_f[:3], force, atol=2e-3 * mass * G)
    np.testing.assert_allclose(parent_f[3:], moment, atol=2e-3 * mass * G * length)


def test_free_bodies_receive_no_parent_wrench():
    """A FREE joint transmits nothing: for the boxes of a resting stack, held by contacts alone, the balance of
    gravity, contacts and inertia that ``BODY_PARENT_F`` reports is zero (it would be the weight if the
    contacts were left out)."""
    run = Run(stack(), observe={KINDS.BODY_PARENT_F})
    run.step(DT, 30)
    np.testing.assert_allclose(run.observables.body_parent_f.numpy(), 0.0, atol=2e-2 * MASS * G * HALF)


def test_parent_wrench_is_not_offered_with_loop_joints():
    """Loop-closing joints act on bodies outside the tree joints' balance: such a model does not offer
    ``BODY_PARENT_F`` (Newton refuses the request), the other observables stay; a deprecated
    ``State.body_parent_f`` requested from the model is named in a warning and filled with NaN by every step, never
    left with earlier values (it kept them before: a helper review)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    inertia = wp.mat33(1e-2, 0, 0, 0, 1e-2, 0, 0, 0, 1e-2)
    first = b.add_link(mass=1.0, inertia=inertia)
    second = b.add_link(mass=1.0, xform=wp.transform((0.5, 0.0, 0.0), wp.quat_identity()), inertia=inertia)
    tree = [b.add_joint_revolute(-1, first, axis=(0, 0, 1)),
            b.add_joint_revolute(first, second, parent_xform=wp.transform((0.5, 0, 0), wp.quat_identity()),
                                 axis=(0, 0, 1))]  # fmt: skip
    b.add_articulation(tree)
    b.add_joint_ball(-1, second, parent_xform=wp.transform((0.5, 0, 0), wp.quat_identity()))  # closes a loop
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    assert solver.supported_observables == {KINDS.CONTACT_F, KINDS.BODY_QDD}
    with pytest.raises(ValueError, match="does not support"):
        solver.observables({KINDS.BODY_PARENT_F})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Newton's: request observables instead
        model.request_state_attributes(KINDS.BODY_PARENT_F)
    with pytest.warns(UserWarning, match="body_parent_f"):
        solver = newton_sap.SolverSAP(model)
    state, out = model.state(), model.state()
    out.body_parent_f.fill_(123.0)
    solver.step(state, out, None, None, DT)
    assert np.isnan(out.body_parent_f.numpy()).all()


def test_parent_wrenches_of_welded_bodies_match_mujoco():
    """Bodies welded to the world (FIXED joints: the solver's static bodies, outside its trees) receive what
    holds them and all that hangs on them: a pedestal welded to the world carries a table welded to it (pushed
    by ``body_f``) and a swinging arm; the table carries another. Against MuJoCo's, from the same state."""
    inertia = wp.mat33(1e-2, 0, 0, 0, 2e-2, 0, 0, 0, 3e-2)
    b = newton.ModelBuilder()
    pedestal = b.add_link(mass=3.0, com=wp.vec3(0.05, 0, 0.1), inertia=inertia)
    table = b.add_link(mass=2.0, com=wp.vec3(0.1, 0.0, 0.0), inertia=inertia)
    arm = b.add_link(mass=1.0, com=wp.vec3(0.2, 0.05, 0), inertia=inertia)
    other_arm = b.add_link(mass=0.5, com=wp.vec3(0.0, 0.1, -0.1), inertia=inertia)
    at = lambda *p: wp.transform(p, wp.quat_identity())  # noqa: E731
    joints = [
        b.add_joint_fixed(-1, pedestal, parent_xform=at(0.3, -0.2, 0.0)),
        b.add_joint_fixed(pedestal, table, parent_xform=at(0.0, 0.0, 0.5)),
        b.add_joint_revolute(table, arm, parent_xform=at(0.2, 0.0, 0.1), axis=(0.0, 1.0, 0.3)),
        b.add_joint_revolute(pedestal, other_arm, parent_xform=at(0.0, 0.1, 0.2), axis=(1.0, 0.0, 0.0)),
    ]
    b.add_articulation(joints)
    model = b.finalize()
    wrenches = []
    for solver in (newton_sap.SolverSAP(model), newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True)):
        observables = solver.observables({KINDS.BODY_PARENT_F})
        state = model.state()
        state.joint_qd.assign(np.array([1.5, -2.0], np.float32))
        newton.eval_fk(model, state.joint_q, state.joint_qd, state)
        body_f = np.zeros((4, 6), np.float32)
        body_f[table] = [1.0, 2.0, 3.0, 0.1, -0.2, 0.3]
        state.body_f.assign(body_f)
        solver.step(state, model.state(), None, None, DT, observables=observables)
        wrenches.append(observables.body_parent_f.numpy())
    ours, mujoco = wrenches
    assert mujoco[pedestal, 2] > 6.5 * G * 0.5  # the pedestal holds everything (less the arms' fall)
    np.testing.assert_allclose(ours, mujoco, rtol=1e-4, atol=1e-4 * np.abs(mujoco).max())


def test_welded_table_carries_a_box_resting_on_it():
    """A box resting off-centre on a table welded to the world: the table's parent wrench is both weights,
    with the moment about its COM that the box's weight has there (contacts on a static body count)."""
    b = newton.ModelBuilder()
    table = b.add_link(mass=4.0, inertia=wp.mat33(1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0))
    b.add_shape_box(table, hx=0.5, hy=0.5, hz=0.05)
    b.add_articulation([b.add_joint_fixed(-1, table, parent_xform=wp.transform((0, 0, 0.5), wp.quat_identity()))])
    box = b.add_body(xform=wp.transform((0.2, -0.1, 0.55 + HALF), wp.quat_identity()))
    b.add_shape_box(box, hx=HALF, hy=HALF, hz=HALF, cfg=newton.ModelBuilder.ShapeConfig(density=MASS / (8 * HALF**3)))
    model = b.finalize()
    run = Run(model, observe={KINDS.BODY_PARENT_F})
    run.step(DT, 30)
    centres = com(model, run.s0.body_q.numpy())
    masses = model.body_mass.numpy()
    force = np.array([0.0, 0.0, (masses[table] + masses[box]) * G])
    moment = np.cross(centres[box] - centres[table], [0.0, 0.0, masses[box] * G])
    parent_f = run.observables.body_parent_f.numpy()[table]
    np.testing.assert_allclose(parent_f[:3], force, atol=2e-3 * force[2])
    np.testing.assert_allclose(parent_f[3:], moment, atol=2e-3 * force[2] * 0.2)


def test_global_welded_body_weighs_by_the_global_gravity():
    """Newton's ``Model.gravity`` holds each explicit world's gravity, then the global world's (-1): a 5 kg post
    welded to the world in the global world (gravity 20 m/s²) is held by 100 N, pendulums hanging at rest in
    worlds of 9.81 and 3 m/s² by 2 kg times theirs (the post was charged world 0's gravity, 49.05 N)."""

    def pendulum(g):
        b = newton.ModelBuilder(gravity=(0.0, 0.0, -g))
        link = b.add_link(mass=2.0, com=wp.vec3(0.0, 0.0, -0.5), inertia=wp.mat33(np.eye(3) * 0.01))
        b.add_articulation(
            [
                b.add_joint_revolute(
                    -1, link, axis=(0.0, 1.0, 0.0), parent_xform=wp.transform((0.0, 0.0, 2.0), wp.quat_identity())
                )
            ]
        )
        return b  # fmt: skip

    scene = newton.ModelBuilder(gravity=(0.0, 0.0, -20.0))
    post = scene.add_link(mass=5.0, inertia=wp.mat33(np.eye(3) * 0.1))
    at = wp.transform((3.0, 0.0, 0.0), wp.quat_identity())
    scene.add_articulation([scene.add_joint_fixed(-1, post, parent_xform=at)])
    scene.add_world(pendulum(9.81))
    scene.add_world(pendulum(3.0))
    model = scene.finalize()
    assert model.body_world.numpy()[post] == -1
    run = Run(model, observe={KINDS.BODY_PARENT_F})
    run.step(DT)
    parent_f = run.observables.body_parent_f.numpy()
    np.testing.assert_allclose(parent_f[:, :3], [[0, 0, 100.0], [0, 0, 19.62], [0, 0, 6.0]], atol=1e-3)
