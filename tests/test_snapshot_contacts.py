"""The snapshot's contact problem: its Jacobian gives the contact points' relative velocities, and
its solution satisfies the discrete momentum balance ``M (v − v*) = Jᵀ γ``."""

import newton
import numpy as np

from newton_sap.diagnostics import quat_to_matrix

from contact_scenes import Run, box_on_ground


def point_velocity(state, model, body, point):
    """Velocity [m/s] of the material point of ``body`` at world ``point`` (zero for the world)."""
    if body < 0:
        return np.zeros(3)
    X, V = state.body_q.numpy()[body], state.body_qd.numpy()[body]
    c = X[:3] + quat_to_matrix(X[3:]) @ model.body_com.numpy()[body]
    return V[:3] + np.cross(V[3:], point - c)


def snapshot_of_moving_stack():
    run = Run(box_on_ground(boxes=3, mu=0.5), qd0=[0.4, -0.2, 0.0, 0.3, -0.5, 1.0] * 3)
    run.step(0.01, 3)
    run.pipeline.collide(run.s0, run.contacts)
    return run, run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)


def test_contact_jacobian_gives_relative_point_velocities():
    run, snap = snapshot_of_moving_stack()
    model, state, contacts = run.model, run.s0, run.contacts
    J, frames, points = snap.contact_jacobian[0], snap.contact_frame[0], snap.contact_point[0]
    n = contacts.rigid_contact_count.numpy()[0]
    shape_body = model.shape_body.numpy()
    s0, s1 = contacts.rigid_contact_shape0.numpy()[:n], contacts.rigid_contact_shape1.numpy()[:n]
    assert len(points) == n > 4
    v_c = J @ state.joint_qd.numpy().astype(np.float64)
    for k in range(n):
        rel = point_velocity(state, model, shape_body[s1[k]], points[k]) - point_velocity(
            state, model, shape_body[s0[k]], points[k]
        )
        assert np.allclose(v_c[3 * k : 3 * k + 3], frames[k].T @ rel, atol=1e-5)


def test_solution_satisfies_momentum_balance():
    _, snap = snapshot_of_moving_stack()
    M, J = snap.mass_matrix[0], snap.contact_jacobian[0]
    lhs = M @ (snap.velocity[0] - snap.v_star[0])
    rhs = J.T @ snap.contact_impulse[0].ravel()
    # float32 floor: stiction impulses γ_t = −v_t / R_t amplify velocity round-off by 1 / (σ w)
    assert np.abs(lhs - rhs).max() < 1e-3 * max(np.abs(rhs).max(), 1e-3)
    gamma = snap.contact_impulse[0]
    assert (gamma[:, 2] >= 0).all()  # compressive
    assert (np.linalg.norm(gamma[:, :2], axis=1) <= snap.contact_friction[0] * gamma[:, 2] * (1 + 1e-5) + 1e-9).all()


def test_snapshot_without_contacts_has_no_contact_data():
    model = box_on_ground()
    state = model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    snap = Run(model).solver.snapshot(state)
    assert snap.contact_jacobian == [] and len(snap.mass_matrix) == 1


def test_snapshot_holds_every_constraint_of_the_step():
    """A dropped ant (joint limits and contacts): momentum balance over all constraints, contacts apart."""
    import newton.examples
    import warp as wp

    robot = newton.ModelBuilder()
    robot.add_mjcf(newton.examples.get_asset("nv_ant.xml"), xform=wp.transform((0, 0, 0.8), wp.quat_identity()),
                   floating=True, enable_self_collisions=False)  # fmt: skip
    robot.add_ground_plane()
    run = Run(robot.finalize())
    run.step(0.01, 60)
    run.pipeline.collide(run.s0, run.contacts)
    snap = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)
    kinds = snap.constraint_kind[0]
    assert (kinds == 0).sum() == len(snap.contact_distance[0]) > 0 and (kinds != 0).any()
    A = snap.mass_matrix[0] + np.diag(0.01 * run.model.joint_damping.numpy())
    lhs = A @ (snap.velocity[0] - snap.v_star[0])
    rhs = snap.constraint_jacobian[0].T @ snap.constraint_impulse[0].ravel()
    assert np.abs(lhs - rhs).max() < 1e-3 * max(np.abs(rhs).max(), 1e-3)
