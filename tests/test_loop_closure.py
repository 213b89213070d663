"""Loop-closing joints as bilateral constraints: a four-bar linkage stays closed while it swings."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.diagnostics import quat_to_matrix

A, B = 0.3, 0.5  # crank/rocker and coupler/ground lengths [m]


TILT = wp.quat_rpy(0.3, 0.2, 0.1)  # a linkage not aligned with the world axes


def pin_point(tilt):
    """World position [m] of the ground pin at (B, 0, 0) from the crank's pivot at (0, 0, 1)."""
    return np.array([0.0, 0.0, 1.0]) + np.array(wp.quat_rotate(tilt, wp.vec3(B, 0.0, 0.0)))


def four_bar(closure="revolute", theta=0.6, tilt=None):
    """Parallelogram four-bar: crank, coupler and rocker on revolute joints about y; the rocker's end
    is pinned back to the ground by a loop-closing joint outside the articulation. ``tilt`` turns the
    whole linkage (its plane and hinge axes) about the crank's pivot."""
    tilt = wp.quat_identity() if tilt is None else tilt
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    inertia = wp.mat33(1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3)
    crank = b.add_link(mass=1.0, com=wp.vec3(A / 2, 0, 0), inertia=inertia)
    coupler = b.add_link(mass=1.0, com=wp.vec3(B / 2, 0, 0), inertia=inertia)
    rocker = b.add_link(mass=1.0, com=wp.vec3(A / 2, 0, 0), inertia=inertia)
    y = (0.0, 1.0, 0.0)
    ground = wp.transform((0.0, 0.0, 1.0), tilt)
    joints = [
        b.add_joint_revolute(-1, crank, axis=y, parent_xform=ground),
        b.add_joint_revolute(crank, coupler, axis=y, parent_xform=wp.transform((A, 0, 0), wp.quat_identity())),
        b.add_joint_revolute(coupler, rocker, axis=y, parent_xform=wp.transform((B, 0, 0), wp.quat_identity())),
    ]
    b.add_articulation(joints)
    pin = wp.transform(wp.vec3(*pin_point(tilt)), tilt)
    tip = wp.transform((A, 0.0, 0.0), wp.quat_identity())
    if closure == "revolute":
        b.add_joint_revolute(-1, rocker, axis=y, parent_xform=pin, child_xform=tip, label="closure")
    else:
        b.add_joint_ball(-1, rocker, parent_xform=pin, child_xform=tip, label="closure")
    model = b.finalize()
    q = model.joint_q.numpy()
    q[:3] = [theta, -theta, theta + np.pi]
    model.joint_q.assign(q)
    return model


def closure_error(state, tilt):
    X = state.body_q.numpy()[2]
    tip = X[:3] + quat_to_matrix(X[3:]) @ np.array([A, 0.0, 0.0])
    return np.linalg.norm(tip - pin_point(tilt))


@pytest.mark.parametrize("closure, tilt", [("revolute", None), ("ball", None), ("revolute", TILT)])
def test_four_bar_stays_closed_for_ten_seconds(closure, tilt):
    """Also tilted: then the hinge rows a planar linkage satisfies by construction have Jacobian entries
    of round-off size, and must stay inactive rather than be enforced through them."""
    model = four_bar(closure, tilt=tilt)
    tilt = wp.quat_identity() if tilt is None else tilt
    solver = newton_sap.SolverSAP(model)
    assert len(solver.topology.loop_joints) == 1
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    assert closure_error(s0, tilt) < 1e-6
    worst, swing = 0.0, []
    for _ in range(1000):
        solver.step(s0, s1, None, None, 0.01)
        s0, s1 = s1, s0
        worst = max(worst, closure_error(s0, tilt))
        swing.append(s0.joint_q.numpy()[0])
    assert solver.stats.converged.all()
    assert worst < 1e-4, worst
    assert np.ptp(swing) > 0.5  # it really moved: the crank swings through the bottom
    # the coupler stays parallel to the ground link (parallelogram)
    assert abs(s0.joint_q.numpy()[0] + s0.joint_q.numpy()[1]) < 1e-3


def test_weld_closure_holds_a_free_body_in_place():
    """A free body also welded to the world by a FIXED loop joint stays put under gravity."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    place = wp.transform((0.3, -0.2, 1.0), wp.quat_rpy(0.3, -0.2, 0.5))
    inertia = wp.mat33(0.02, 0, 0, 0, 0.03, 0, 0, 0, 0.04)
    body = b.add_link(mass=2.0, com=wp.vec3(0.2, 0.1, 0.0), inertia=inertia, xform=place)
    b.add_articulation([b.add_joint_free(body, parent_xform=place)])
    b.add_joint_fixed(-1, body, parent_xform=place, label="weld")
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    start = s0.body_q.numpy()[0].copy()
    for _ in range(200):
        solver.step(s0, s1, None, None, 0.01)
        s0, s1 = s1, s0
    end = s0.body_q.numpy()[0]
    assert np.abs(end[:3] - start[:3]).max() < 1e-4
    assert np.abs(quat_to_matrix(end[3:]) - quat_to_matrix(start[3:])).max() < 1e-4


@pytest.mark.parametrize("momentum_mode", [False, True], ids=["v*", "momentum"])
def test_weld_closure_pulls_a_body_on_without_gravity_and_converges_at_rest(momentum_mode):
    """A free body started 3 cm and 0.6 rad off a FIXED loop joint to the world (rotated frames, COM off the
    origin), without gravity: the weld pulls it on, and at rest its velocities, about 3e-6 m/s, are float32's floor
    (the position updates no longer register). A velocity component at 1e-17 beside them changed by its own size
    every Newton iteration, the step counted as moved, and from step 29 on most steps ran to ``max_iterations``, not
    converged (helper review, session 28): steps now move only by more than round-off of the tree's largest
    velocity (``line_search.STEP_ROUND_OFF``)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    parent_frame = wp.transform((0.1, -0.2, 1.0), wp.quat_rpy(0.4, -0.7, 1.1))
    child_frame = wp.transform((0.15, 0.05, -0.1), wp.quat_rpy(-0.3, 0.2, 0.9))
    welded = wp.transform_multiply(parent_frame, wp.transform_inverse(child_frame))
    offset = wp.transform((0.03, -0.04, 0.01), wp.quat_from_axis_angle(wp.normalize(wp.vec3(1.0, 2.0, 3.0)), 0.6))
    inertia = wp.mat33(0.02, 0, 0, 0, 0.03, 0, 0, 0, 0.025)
    body = b.add_link(
        mass=1.2, com=wp.vec3(0.2, 0.1, -0.05), inertia=inertia, xform=wp.transform_multiply(welded, offset)
    )
    b.add_articulation([b.add_joint_free(body)])
    b.add_joint_fixed(-1, body, parent_xform=parent_frame, child_xform=child_frame)
    model = b.finalize()
    solver = newton_sap.SolverSAP(model, momentum_mode=momentum_mode)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(100):
        solver.step(s0, s1, None, None, 0.01)
        assert solver.stats.converged[0] and solver.stats.iterations[0] <= 3
        s0, s1 = s1, s0
    end = s0.body_q.numpy()[0]
    assert np.abs(end[:3] - np.array(welded.p)).max() < 1e-6
    assert np.abs(quat_to_matrix(end[3:]) - quat_to_matrix(np.array(welded.q))).max() < 1e-6


def test_ball_closure_at_the_com_of_a_spinning_body_holds_it_still():
    """A free body spinning at 13 rad/s, its origin 0.3 m from its COM, pinned at the COM by a BALL loop joint
    (no gravity): it spins in place (the COM within 1e-4 m of the pin, the spin kept), though its origin circles
    the pin at 3.9 m/s. The loop rows take the velocity the position update gives the body beyond ``J v``
    (``jacobian.offset_velocity``); without it they pulled the COM off the pin by about Δt ω² r = 0.5 m/s."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    pin = np.array([0.3, -0.2, 1.0])
    com = np.array([0.0, 0.0, 0.3])  # in the body frame: the origin 0.3 m below the COM
    body = b.add_link(mass=1.0, com=wp.vec3(*com), inertia=wp.mat33(0.02, 0, 0, 0, 0.03, 0, 0, 0, 0.04),
                      xform=wp.transform(tuple(pin - com), wp.quat_identity()))  # fmt: skip
    b.add_articulation([b.add_joint_free(body)])
    b.add_joint_ball(-1, body, parent_xform=wp.transform(tuple(pin), wp.quat_identity()),
                     child_xform=wp.transform(tuple(com), wp.quat_identity()), label="pin")  # fmt: skip
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([*(pin - com), 0.0, 0.0, 0.0, 1.0], np.float32))
    s0.joint_qd.assign(np.array([0.0, 0.0, 0.0, 0.0, 13.0, 0.0], np.float32))  # [v_com, ω]
    drift = 0.0
    for _ in range(100):
        solver.step(s0, s1, None, None, 0.01)
        s0, s1 = s1, s0
        pose = s0.body_q.numpy()[0]
        drift = max(drift, np.linalg.norm(pose[:3] + quat_to_matrix(pose[3:]) @ com - pin))
    assert drift < 1e-4
    assert abs(s0.joint_qd.numpy()[4] - 13.0) < 1e-3


MJCF_CONNECT = """
<mujoco>
  <worldbody>
    <body name="ball" pos="0.3 0 1"><freejoint name="free"/><geom type="sphere" size="0.05"/></body>
  </worldbody>
  <equality><connect body1="ball" body2="world" anchor="0 0 0" active="{active}"/></equality>
</mujoco>
"""


@pytest.mark.parametrize("active", [True, False])
def test_mjcf_connect_holds_only_while_enabled(active):
    """Newton's MJCF importer makes an equality <connect> a BALL loop joint with ``joint_enabled`` = active, and
    keeps the MuJoCo row (``model.mujoco.equality_constraint_enabled`` = active): enabled it holds the ball at its
    anchor, disabled the ball falls as semi-implicit Euler puts it (z_n = z_0 − g Δt² n(n+1)/2). Switching only one
    flag on warns (the two disagree) and leaves the ball falling; with both on it is pulled back."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_mjcf(MJCF_CONNECT.format(active=str(active).lower()))
    model = b.finalize()
    assert model.joint_enabled.numpy().tolist() == [True, active]
    assert model.mujoco.equality_constraint_enabled.numpy().tolist() == [active]
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    dt, steps = 0.01, 30

    def fall(steps):
        nonlocal s0, s1
        for _ in range(steps):
            solver.step(s0, s1, None, None, dt)
            s0, s1 = s1, s0
        return s0.body_q.numpy()[0, 2]

    expected = 1.0 if active else 1.0 - 9.81 * dt**2 * steps * (steps + 1) / 2
    assert abs(fall(steps) - expected) < 1e-4
    if not active:
        model.joint_enabled.assign(np.array([True, True]))
        with pytest.warns(UserWarning, match=r"loop joint 1 \('.*'\) made from MuJoCo equality rows .* disagree"):
            solver.notify_model_changed(newton.ModelFlags.JOINT_PROPERTIES)
        assert fall(10) < expected - 0.05  # still falling
        model.mujoco.equality_constraint_enabled.assign(np.array([True]))
    for _ in range(30):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    assert abs(s0.body_q.numpy()[0, 2] - 1.0) < 1e-3


@pytest.mark.parametrize("flag", ["row", "joint"])
def test_mjcf_connect_is_released_by_either_enabled_flag(flag):
    """An active MJCF <connect> switched off through its MuJoCo row (``model.mujoco.equality_constraint_enabled``,
    as ``ModelFlags.CONSTRAINT_PROPERTIES`` documents and SolverMuJoCo reads; before, SolverSAP still held the ball)
    or through its loop joint's ``joint_enabled``: the ball falls freely from the next step."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_mjcf(MJCF_CONNECT.format(active="true"))
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    if flag == "row":
        model.mujoco.equality_constraint_enabled.assign(np.array([False]))
        notify = newton.ModelFlags.CONSTRAINT_PROPERTIES
    else:
        model.joint_enabled.assign(np.array([True, False]))
        notify = newton.ModelFlags.JOINT_PROPERTIES
    with pytest.warns(UserWarning, match="now the two disagree"):
        solver.notify_model_changed(notify)
    dt, steps = 0.01, 30
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    assert abs(s0.body_q.numpy()[0, 2] - (1.0 - 9.81 * dt**2 * steps * (steps + 1) / 2)) < 1e-4


def test_mujoco_only_equality_rows_are_named_in_a_warning():
    """A MuJoCo equality row that Newton keeps for SolverMuJoCo alone (``newton.solvers.mujoco.add_equality_connect``,
    no loop joint) is not applied by SolverSAP: the model says so, naming it (before: silence, and the body fell)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    body = b.add_body(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()), mass=1.0)
    newton.solvers.mujoco.add_equality_connect(b, body, -1, anchor=wp.vec3(0.0, 0.0, 0.0), label="hook")
    model = b.finalize()
    with pytest.warns(UserWarning, match=r"applied only by SolverMuJoCo, not by SolverSAP: row 0 \('hook'\)"):
        newton_sap.SolverSAP(model)


def test_soft_mjcf_equalities_are_named_in_a_warning():
    """A converted MJCF equality with its own ``solref``/``solimp`` (a spring in MuJoCo: the ball sags 0.15 m) is
    held near-rigid by SolverSAP: the model says so, naming the row (before: silence); default rows are not named."""
    mjcf = MJCF_CONNECT.replace('active="{active}"', 'active="true" solref="0.5 0.3"').replace(
        "</equality>", '<connect body1="ball" body2="world" anchor="0 0 0.1"/></equality>'
    )
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_mjcf(mjcf)
    with pytest.warns(UserWarning, match=r"the solref/solimp of MuJoCo equality row 0 \(model.mujoco"):
        newton_sap.SolverSAP(b.finalize())


def test_disabled_mujoco_option_flags_are_named_in_a_warning():
    """``<flag equality="disable" limit="disable"/>``: SolverMuJoCo leaves the connect (the ball falls) and the
    limits out, SolverSAP reads no MuJoCo option: the model says which flags are off (before: silence)."""
    mjcf = MJCF_CONNECT.format(active="true").replace(
        "<worldbody>", '<option><flag equality="disable" limit="disable"/></option><worldbody>'
    )
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_mjcf(mjcf)
    with pytest.warns(UserWarning, match=r'<flag equality="disable" limit="disable"/>'):
        newton_sap.SolverSAP(b.finalize())


def test_disabled_tree_joint_is_named_in_a_warning():
    """A tree joint is the body's coordinates in reduced coordinates: joint_enabled = False cannot detach it."""
    model = four_bar()
    enabled = model.joint_enabled.numpy()
    enabled[1] = False
    model.joint_enabled.assign(enabled)
    with pytest.warns(
        UserWarning, match=r"joint_enabled = False acts only on loop-closing joints; the tree joints joint 1"
    ):
        newton_sap.SolverSAP(model)


def test_revolute_closure_orientation_rows_use_their_two_row_delassus_estimate():
    """A body on a BALL joint (and one welded to it), closed by a REVOLUTE loop joint about the same point: only the two
    orientation rows normal to the hinge act, with ``R = β² w / (4π²)`` (β = 0.1) and the Delassus estimate
    of SAP.md §4 over the rows in use, ``w = ‖Σ_k J_k J_kᵀ / A_kk‖_F / 2`` (from the snapshot's J and A)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    link = b.add_link(mass=1.0, com=wp.vec3(0.2, 0.05, 0.0), inertia=wp.mat33(0.01, 0, 0, 0, 0.02, 0, 0, 0, 0.03))
    pivot = wp.transform((0.0, 0.0, 1.0), wp.quat_identity())
    tip = b.add_link(mass=0.5, com=wp.vec3(0.1, 0.0, 0.0), inertia=wp.mat33(0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.01))
    b.add_articulation([b.add_joint_ball(-1, link, parent_xform=pivot), b.add_joint_fixed(link, tip)])
    b.add_joint_revolute(-1, tip, axis=(0.0, 1.0, 0.0), parent_xform=pivot, label="closure")
    b.add_ground_plane()  # a shape, for the (empty) contacts that make the snapshot hold the constraints
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    state = model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    snap = solver.snapshot(state, dt=0.01, contacts=contacts)
    J = snap.constraint_jacobian[0]
    active = [r for r in range(0, J.shape[0], 3) if np.abs(J[r : r + 3]).max() > 1e-6]
    assert len(active) == 1  # the point rows are kept by the ball joint: no dof moves them
    rows = J[active[0] : active[0] + 2]
    W = (rows / np.diag(snap.mass_matrix[0])) @ rows.T
    expected = 0.01 * np.linalg.norm(W) / 2.0 / (4.0 * np.pi**2)
    sap = solver._sap
    used = sap.used_slots.numpy()[: sap.used_count.numpy()[0]]
    R = sap.c_R.numpy()[used]
    tilt = R[(R[:, 2] == 1.0) & (R[:, 0] != 1.0)]
    assert len(tilt) == 1
    assert tilt[0, :2] == pytest.approx([expected, expected], rel=1e-5)


def tumbling_four_bar(closure):
    """A planar four-bar on a free base, no gravity: links 1 and 2 hinge (about y) on the base at x = ±0.2 m, link 3
    on link 1's end; link 3's end is closed onto link 2's end by a ``closure`` ("revolute" about y, or "ball") loop
    joint, in a closing pose found by Newton's method; the base tumbles with a fixed random twist."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))

    def inertia(a, b_, c):
        return wp.mat33(a, 0, 0, 0, b_, 0, 0, 0, c)

    base = b.add_link(mass=2.0, com=wp.vec3(0.05, 0.02, 0.0), inertia=inertia(0.02, 0.03, 0.04))
    link1 = b.add_link(mass=0.5, com=wp.vec3(0.15, 0, 0), inertia=inertia(0.002, 0.003, 0.004))
    link2 = b.add_link(mass=0.5, com=wp.vec3(0.15, 0, 0), inertia=inertia(0.002, 0.003, 0.004))
    link3 = b.add_link(mass=0.4, com=wp.vec3(0.1, 0, 0), inertia=inertia(0.002, 0.002, 0.003))
    y = (0.0, 1.0, 0.0)

    def at(x):
        return wp.transform((x, 0.0, 0.0), wp.quat_identity())

    b.add_articulation([
        b.add_joint_free(base),
        b.add_joint_revolute(base, link1, axis=y, parent_xform=at(0.2)),
        b.add_joint_revolute(base, link2, axis=y, parent_xform=at(-0.2)),
        b.add_joint_revolute(link1, link3, axis=y, parent_xform=at(0.3)),
    ])  # fmt: skip
    if closure == "revolute":
        b.add_joint_revolute(link2, link3, axis=y, parent_xform=at(0.45), child_xform=at(0.2))
    else:
        b.add_joint_ball(link2, link3, parent_xform=at(0.45), child_xform=at(0.2))
    model = b.finalize()

    def gap(a):  # link 3's end less link 2's end in the base's xz plane, hinge angles a (about y)
        def arm(angle, length):
            return length * np.array([np.cos(angle), -np.sin(angle)])

        return np.array([0.4, 0.0]) + arm(a[0], 0.3) + arm(a[0] + a[2], 0.2) - arm(a[1], 0.45)

    a = np.array([1.2, 2.0, 1.5])
    for _ in range(30):
        jac = np.stack([(gap(a + e) - gap(a - e)) / 2e-6 for e in (np.array([0, 1e-6, 0]), np.array([0, 0, 1e-6]))], 1)
        a[1:] -= np.linalg.solve(jac, gap(a))
    q = model.joint_q.numpy()
    q[2], q[7:10] = 1.0, a
    model.joint_q.assign(q)
    qd = np.zeros(model.joint_dof_count, np.float32)
    qd[:6] = np.random.default_rng(0).normal(size=6) * [0.3, 0.3, 0.3, 1.0, 1.0, 1.0]
    return model, qd


def kinetic_energy(model, state):
    """Σ ½ m v_com² + ½ ωᵀ I_world ω [J] (Newton's body_qd: COM velocity and ω in world axes)."""
    X, V = state.body_q.numpy(), state.body_qd.numpy()
    energy = 0.0
    for mass, inertia, x, v in zip(model.body_mass.numpy(), model.body_inertia.numpy(), X, V, strict=True):
        R = quat_to_matrix(x[3:])
        energy += 0.5 * mass * v[:3] @ v[:3] + 0.5 * v[3:] @ R @ inertia @ R.T @ v[3:]
    return energy


def test_hinge_closure_of_a_tumbling_planar_linkage_moves_as_a_ball_closure():
    """A planar linkage satisfies a hinge closure's two tilt rows by construction: their Jacobian entries are round-off
    of the chain's motions, and enforcing them turns round-off violations into large impulses. The hinge-closed
    four-bar on a tumbling base must move exactly as the ball-closed one and keep its kinetic energy (no gravity, no
    friction). With an absolute cut of the rows' Delassus estimate (1e-12 kg⁻¹) the rows switched on after 233 steps
    and the linkage gained 4× its energy in 2 s."""
    hinges, energies = {}, {}
    for closure in ("revolute", "ball"):
        model, qd = tumbling_four_bar(closure)
        solver = newton_sap.SolverSAP(model)
        s0, s1 = model.state(), model.state()
        s0.joint_qd.assign(qd)
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        start = kinetic_energy(model, s0)
        trajectory = []
        for _ in range(400):
            solver.step(s0, s1, None, None, 0.005)
            s0, s1 = s1, s0
            trajectory.append(s0.joint_q.numpy()[7:10].copy())
        assert solver.stats.converged.all()
        hinges[closure], energies[closure] = np.array(trajectory), kinetic_energy(model, s0) / start
    assert np.abs(hinges["revolute"] - hinges["ball"]).max() < 1e-4
    assert energies["revolute"] == pytest.approx(1.0, abs=1e-2)
    assert np.ptp(hinges["revolute"][:, 0]) > 0.01  # the linkage really moves relative to its base


def test_a_nan_velocity_of_a_loop_joint_flags_its_world():
    """A loop-closing joint's ``joint_qd`` is not a coordinate of the system and passes through the step: a NaN
    there reaches no velocity but the output state, so the inputs' check flags the world."""
    model = four_bar()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    qd = s0.joint_qd.numpy()
    qd[3] = np.nan  # the closure's dof
    s0.joint_qd.assign(qd)
    solver.step(s0, s1, None, None, 0.01)
    assert solver.stats.failed.tolist() == [True]
