"""Contact rows within one tree and rows whose Jacobian vanishes: the Delassus estimate (SAP.md §4) counts
only the dofs that move the two contact points relative to each other, and stays positive."""

import newton
import numpy as np
import warp as wp

import newton_sap

SIGMA = 1.0e-3  # the solver's default friction regularization: R_t = σ w
INERTIA = wp.mat33(1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3)


def contact_problem(builder):
    """The snapshot's contact problem of the model's first state (Δt = 0.01 s) and its contact count."""
    model = builder.finalize(device="cpu")
    solver = newton_sap.SolverSAP(model, friction_regularization=SIGMA)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    state = model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    pipeline.collide(state, contacts)
    return solver.snapshot(state, dt=0.01, contacts=contacts), int(contacts.rigid_contact_count.numpy()[0])


def test_self_contact_delassus_estimate_leaves_out_the_shared_dofs():
    """Two sibling links hinged on a sliding base touch each other: the base's prismatic dof moves both
    contact points alike. ``w = ‖J diag(M)⁻¹ Jᵀ‖_F / 3`` from the snapshot's dense J (where the shared
    dof's column is zero) must equal ``R_t / σ``; counting the shared dof on both chains made it 0.56
    instead of 0.43 kg⁻¹ here (a softer, creepier contact)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    base = b.add_link(mass=2.0, inertia=INERTIA)
    joints = [b.add_joint_prismatic(-1, base, axis=(1.0, 0.0, 0.0))]
    for side in (-1.0, 1.0):
        link = b.add_link(mass=0.5, inertia=INERTIA, com=wp.vec3(0.0, 0.1, 0.0))
        b.add_shape_sphere(link, xform=wp.transform((0.0, 0.1, 0.0), wp.quat_identity()), radius=0.06)
        hinge = wp.transform((0.055 * side, 0.0, 0.0), wp.quat_identity())
        joints.append(b.add_joint_revolute(base, link, axis=(0.0, 0.0, 1.0), parent_xform=hinge))
    b.add_articulation(joints)
    snap, count = contact_problem(b)
    assert count == 1
    J, M, R = snap.contact_jacobian[0], snap.mass_matrix[0], snap.contact_compliance[0]
    assert np.abs(J[:, 0]).max() < 1e-7  # the base's dof does not move the points relative to each other
    W = J @ np.diag(1.0 / np.diag(M)) @ J.T
    w = np.linalg.norm(W) / 3.0
    assert abs(R[0, 0] / SIGMA - w) < 1e-5 * w
    assert abs(R[0, 1] / SIGMA - w) < 1e-5 * w


def test_contact_on_the_axis_of_its_only_joint_gets_finite_compliance():
    """A disc spinning about the vertical axis through its ground contact point: the contact's Jacobian is
    zero (no dof moves that point), so its Delassus estimate would be 0 and ``R_t = σ w`` too; the floor
    keeps R positive and finite, and the step leaves the spin as it was (no impulse can act)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    disc = b.add_link(mass=1.0, inertia=INERTIA)
    b.add_shape_sphere(disc, xform=wp.transform((0.0, 0.0, 0.0), wp.quat_identity()), radius=0.1)
    lifted = wp.transform((0.0, 0.0, 0.099), wp.quat_identity())  # 1 mm into the ground
    spin = b.add_joint_revolute(-1, disc, axis=(0.0, 0.0, 1.0), parent_xform=lifted)
    b.add_articulation([spin])
    b.add_ground_plane()
    snap, count = contact_problem(b)
    assert count >= 1
    R = snap.contact_compliance[0]
    assert np.all(np.isfinite(R)) and np.all(R > 0.0)
    assert np.abs(snap.contact_jacobian[0]).max() < 1e-7
    model = b.finalize(device="cpu")
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.array([3.0], np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    pipeline.collide(s0, contacts)
    solver.step(s0, s1, model.control(), contacts, 0.01)
    assert solver.stats.converged.all()
    assert abs(s1.joint_qd.numpy()[0] - 3.0) < 1e-5
    forces = contacts.rigid_contact_force.numpy()[: contacts.rigid_contact_count.numpy()[0]]
    assert np.all(np.isfinite(forces)) and np.all(forces[:, 2] >= 0.0)  # the ground holds the disc up
