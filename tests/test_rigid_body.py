"""Torque-free rigid-body motion: closed-form conservation laws and the intermediate-axis flip."""

import newton
import numpy as np
import warp as wp

import newton_sap
from newton_sap.diagnostics import quat_to_matrix


def free_body(inertia, com=(0.0, 0.0, 0.0), mass=2.0, worlds=1):
    body = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = body.add_link(mass=mass, com=wp.vec3(*com), inertia=wp.mat33(*np.diag(inertia).ravel()))
    body.add_articulation([body.add_joint_free(link)])
    if worlds == 1:
        return body.finalize()
    scene = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    scene.replicate(body, worlds)
    return scene.finalize()


def simulate(model, qd0, dt, steps, record=lambda s: None):
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.asarray(qd0, np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    out = [record(s0)]
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
        out.append(record(s0))
    return s0, out


def rotation(body_q):
    return quat_to_matrix(body_q[3:])


def test_torque_free_body_conserves_angular_momentum():
    model = free_body([0.3, 0.5, 0.7])
    I_body = model.body_inertia.numpy()[0]

    def momentum(state):
        R = rotation(state.body_q.numpy()[0])
        w = state.body_qd.numpy()[0][3:]
        return R @ I_body @ R.T @ w

    _, L = simulate(model, [0, 0, 0, 1.0, 2.0, 3.0], dt=1e-3, steps=2000, record=momentum)
    L = np.array(L)
    drift = np.linalg.norm(L - L[0], axis=1).max() / np.linalg.norm(L[0])
    assert drift < 2e-3, drift


def test_intermediate_axis_flips_and_major_axis_does_not():
    """Dzhanibekov effect: spin about the intermediate principal axis is unstable (the body flips),
    spin about the major axis is stable."""
    model = free_body([1.0, 2.0, 3.0])

    def axis(k):
        return lambda state: rotation(state.body_q.numpy()[0])[:, k]

    _, y_axis = simulate(model, [0, 0, 0, 0.01, 6.0, 0.01], dt=2e-3, steps=2500, record=axis(1))
    assert min(float(a @ y_axis[0]) for a in y_axis) < -0.95
    _, z_axis = simulate(model, [0, 0, 0, 0.01, 0.01, 6.0], dt=2e-3, steps=2500, record=axis(2))
    assert min(float(a @ z_axis[0]) for a in z_axis) > 0.99


def test_spin_about_offset_com_keeps_com_still():
    """The public free-joint velocity is the COM's: a body spinning with zero COM velocity keeps its
    COM in place while its origin circles around it."""
    com = np.array([0.3, -0.1, 0.05])
    model = free_body([0.3, 0.3, 0.3], com=com)

    def points(state):
        X = state.body_q.numpy()[0]
        return X[:3] + rotation(X) @ com, X[:3].copy()

    _, traj = simulate(model, [0, 0, 0, 0.0, 0.0, 5.0], dt=1e-3, steps=1000, record=points)
    coms = np.array([c for c, _ in traj])
    origins = np.array([o for _, o in traj])
    assert np.abs(coms - coms[0]).max() < 1e-4  # float32 round-off; origin-velocity Euler drifts 4e-3
    assert np.abs(origins - origins[0]).max() > 0.2  # the origin did move


def test_tumbling_body_with_an_offset_com_keeps_its_linear_momentum():
    """A torque-free body tumbling at 5.4 rad/s about a COM 0.6 m from its joint frame (rotated child frame,
    general inertia), 4000 steps of 1 ms: its public (COM) velocity stays at zero to float32 round-off. The step's
    start converts it to the origin's with FK's float32 ``r`` and the position update converts back: with ``r``
    evaluated a second way there, the two roundings differed by 1e-7 |r| in a direction that turns slowly, and
    ``ω × δr`` added up step after step to 8e-4 m/s (Featherstone: about 6e-6 on such a body)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    inertia = np.array([[0.31, 0.04, -0.02], [0.04, 0.22, 0.05], [-0.02, 0.05, 0.17]])
    link = b.add_link(mass=1.3, com=wp.vec3(0.5, -0.3, 0.2), inertia=wp.mat33(*inertia.ravel()))
    child_frame = wp.transform((0.05, -0.1, 0.07), wp.quat_rpy(0.4, -0.7, 1.1))
    b.add_articulation([b.add_joint_free(link, parent_xform=wp.transform((0.1, 0.2, 0.3), wp.quat_identity()),
                                         child_xform=child_frame)])  # fmt: skip
    final, _ = simulate(b.finalize(), [0, 0, 0, 3.0, -2.0, 4.0], dt=1e-3, steps=4000)
    assert np.linalg.norm(final.joint_qd.numpy()[:3]) < 1e-4


def test_free_body_at_rest_far_from_the_origin_stays_exactly_put():
    """A body at rest 1.3 km from the origin on a FREE joint with a rotated parent frame and an offset, rotated
    child frame: 1000 steps leave its coordinates bit for bit as they were. FK's COM offset formed from world
    positions rounded differently from the position update's ``q r_M``, and the difference moved it every step
    (0.18 m over 2000 steps of a helper's variant; 3.8e-3 m at 100 m)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.3, com=wp.vec3(0.5, -0.3, 0.2), inertia=wp.mat33(*np.diag([0.31, 0.22, 0.17]).ravel()))
    b.add_articulation(
        [
            b.add_joint_free(
                link,
                parent_xform=wp.transform((0, 0, 0), wp.quat_rpy(0.3, 0.2, -0.5)),
                child_xform=wp.transform((0.05, -0.1, 0.07), wp.quat_rpy(0.4, -0.7, 1.1)),
            )
        ]
    )
    model = b.finalize()  # fmt: skip
    q0 = model.joint_q.numpy()
    q0[:3] = (1000.0, -700.0, 300.0)
    q0[3:] = np.array(wp.quat_rpy(0.2, 0.9, -0.4))
    model.joint_q.assign(q0)
    final, _ = simulate(model, np.zeros(6), dt=0.01, steps=1000)
    assert np.array_equal(final.joint_q.numpy()[:3], q0[:3]) and not final.joint_qd.numpy().any()


def test_free_body_at_rest_with_a_non_unit_quaternion_stays_put():
    """``joint_q`` with a quaternion of norm 1.1 (unnormalized input) and a COM 0.3 m off the body origin:
    FK reads the normalized rotation, so must the position update; the body at rest stays where it is
    and the output quaternion is unit."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    body = b.add_link(mass=1.0, com=wp.vec3(0.3, 0.0, 0.0), inertia=wp.mat33(*np.diag([0.02, 0.03, 0.04]).ravel()))
    b.add_articulation([b.add_joint_free(body)])
    model = b.finalize(device="cpu")
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.1], np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    newton_sap.SolverSAP(model).step(s0, s1, None, None, 1e-3)
    q = s1.joint_q.numpy()
    assert np.allclose(q[:3], [0.1, 0.2, 0.3], atol=1e-6)
    assert np.allclose(q[3:], [0.0, 0.0, 0.0, 1.0], atol=1e-6)
