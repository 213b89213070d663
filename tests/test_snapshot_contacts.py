"""The snapshot's contact problem: its Jacobian gives the contact points' relative velocities, and
its solution satisfies the discrete momentum balance ``M (v − v*) = Jᵀ γ``."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.constraints.dispatch import JOINT_FRICTION, JOINT_LIMIT, PD_DRIVE
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


def snapshot_of_box_on_welded_pedestal():
    """A box dropped on one of two touching pedestals, each welded to the world: the pedestals' contacts are in
    Newton's buffer but in no world's problem (neither side moves)."""
    b = newton.ModelBuilder()
    b.add_ground_plane()
    for x in (0.0, 0.599):
        at = wp.transform((x, 0.0, 0.2), wp.quat_identity())
        pedestal = b.add_link(mass=10.0, inertia=wp.mat33(np.eye(3, dtype=np.float32)), xform=at)
        b.add_shape_box(pedestal, hx=0.3, hy=0.3, hz=0.2)
        b.add_articulation([b.add_joint_fixed(-1, pedestal, parent_xform=at)])
    box = b.add_body(xform=wp.transform((0.05, 0.0, 0.49), wp.quat_rpy(0.1, 0.0, 0.2)))
    b.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1)
    run = Run(b.finalize(), qd0=[0.3, 0.0, -0.5, 0.2, 0.0, 0.4])
    run.pipeline.collide(run.s0, run.contacts)
    return run, run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)


@pytest.mark.parametrize(
    ("scene", "immovable"), [(snapshot_of_moving_stack, False), (snapshot_of_box_on_welded_pedestal, True)]
)
def test_contact_jacobian_gives_relative_point_velocities(scene, immovable):
    """Row k of J gives the relative velocity of buffer contact ``contact_index[k]``'s bodies at its point, in
    its frame; every buffer contact with a moving side is there, once."""
    run, snap = scene()
    model, state, contacts = run.model, run.s0, run.contacts
    J, frames, points, index = (
        snap.contact_jacobian[0],
        snap.contact_frame[0],
        snap.contact_point[0],
        snap.contact_index[0],
    )
    n = contacts.rigid_contact_count.numpy()[0]
    shape_body = model.shape_body.numpy()
    body0 = shape_body[contacts.rigid_contact_shape0.numpy()[:n]]
    body1 = shape_body[contacts.rigid_contact_shape1.numpy()[:n]]
    moving = {
        int(model.joint_child.numpy()[j])
        for j in np.nonzero(model.joint_type.numpy() != int(newton.JointType.FIXED))[0]
    }
    assert sorted(index) == [c for c in range(n) if body0[c] in moving or body1[c] in moving]
    assert len(points) >= 2 and (len(points) < n) == immovable
    v_c = J @ state.joint_qd.numpy().astype(np.float64)
    for k, c in enumerate(index):
        rel = point_velocity(state, model, body1[c], points[k]) - point_velocity(state, model, body0[c], points[k])
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


def hinged_chain_then_free_body(closed):
    """Three links hinged about y from the world (a parallelogram four-bar with the closure), optionally
    pinned back to the world by a loop-closing hinge, then a free body: with the closure, its dof (3)
    lies between the chain's (0-2) and the free body's (4-9)."""
    b = newton.ModelBuilder()
    inertia = wp.mat33(1e-3, 0, 0, 0, 2e-3, 0, 0, 0, 3e-3)
    links = [b.add_link(mass=1.0, com=wp.vec3(0.15, 0, 0), inertia=inertia) for _ in range(3)]
    y, offsets = (0.0, 1.0, 0.0), [(0.0, 0.0, 1.0), (0.3, 0.0, 0.0), (0.5, 0.0, 0.0)]
    parents = [-1, links[0], links[1]]
    b.add_articulation([b.add_joint_revolute(p, c, axis=y, parent_xform=wp.transform(o, wp.quat_identity()))
                        for p, c, o in zip(parents, links, offsets, strict=True)])  # fmt: skip
    if closed:
        pin, tip = wp.transform((0.5, 0.0, 1.0), wp.quat_identity()), wp.transform((0.3, 0.0, 0.0), wp.quat_identity())
        b.add_joint_revolute(-1, links[2], axis=y, parent_xform=pin, child_xform=tip, label="closure")
    b.add_body(xform=wp.transform((0.0, 2.0, 1.0), wp.quat_identity()), mass=2.0, inertia=inertia)
    model = b.finalize()
    state = model.state()
    q, qd = state.joint_q.numpy(), state.joint_qd.numpy()
    q[:3] = [0.6, -0.6, 0.6 + np.pi]
    qd[:3] = [0.5, -0.5, 0.5]
    qd[-6:] = [0.1, -0.2, 0.3, 1.0, -2.0, 3.0]  # the free body's [v, ω]
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    return model, state


def test_snapshot_leaves_out_the_dofs_of_a_loop_closing_joint():
    """The closure's dof between tree dofs is no row: the snapshot names the public dofs of its rows,
    and its dynamics equal those of the linkage without the closure."""
    snaps = []
    for closed in (False, True):
        model, state = hinged_chain_then_free_body(closed)
        snaps.append(newton_sap.SolverSAP(model).snapshot(state, dt=0.01))
    unpinned, pinned = snaps
    assert unpinned.dofs[0].tolist() == list(range(9))
    assert pinned.dofs[0].tolist() == [0, 1, 2, *range(4, 10)]
    for name in ("mass_matrix", "bias", "tau", "v_star"):
        a, b = getattr(unpinned, name)[0], getattr(pinned, name)[0]
        assert np.allclose(a, b, rtol=1e-5, atol=1e-6), name


def test_stats_after_a_snapshot_with_contacts_describe_its_solve():
    """A step drops contacts (buffer of 2); a snapshot without contacts keeps its stats, one with a large
    enough ``Contacts`` replaces them by its own solve's (nothing dropped)."""
    run = Run(box_on_ground(boxes=2), rigid_contact_max=2)
    with pytest.warns(RuntimeWarning, match="contact buffer full"):
        run.step(0.01)
    stepped = run.solver.stats
    assert stepped.contact_buffer_full
    run.solver.snapshot(run.s0, dt=0.01)
    kept = run.solver.stats
    assert kept.contacts_dropped == stepped.contacts_dropped
    assert np.array_equal(kept.iterations, stepped.iterations) and np.array_equal(kept.residual, stepped.residual)
    pipeline = newton.CollisionPipeline(run.model, rigid_contact_max=64)
    contacts = pipeline.contacts()
    pipeline.collide(run.s0, contacts)
    snap = run.solver.snapshot(run.s0, dt=0.01, contacts=contacts)
    stats = run.solver.stats
    assert not stats.contact_buffer_full and stats.contacts_dropped == 0
    assert stats.num_contacts[0] == len(snap.contact_distance[0]) > 2 and stats.converged.all()


def test_snapshot_solves_a_problem_without_contacts_on_request():
    """``solve=True`` gathers the SAP problem of a step without contacts (a chain's drives, limits and joint
    friction): its solution is the velocity the step writes; without it the snapshot holds no problem."""
    from test_convergence_report import swinging_chain

    model = swinging_chain()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([0.48, 0.0, 0.0], np.float32))  # the first hinge reaches its limit in the step
    s0.joint_qd.assign(np.array([3.0, -2.0, 1.0], np.float32))
    assert solver.snapshot(s0, dt=0.01).velocity == []
    snap = solver.snapshot(s0, dt=0.01, solve=True)
    assert set(snap.constraint_kind[0].tolist()) == {int(PD_DRIVE), int(JOINT_LIMIT), int(JOINT_FRICTION)}
    solver.step(s0, s1, None, None, 0.01)
    assert np.allclose(snap.velocity[0], s1.joint_qd.numpy(), rtol=0.0, atol=1e-6)
