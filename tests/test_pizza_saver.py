"""Drake's "pizza saver" known answers (SAP.md §7) as a Newton scene: a 3 kg body on three contact
points at radius 1.5 m, free in x, y, z and rotation about z (a D6 joint), g = 10 m/s²."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap

M, RADIUS, IZ, GRAV, DT, SPHERE = 3.0, 1.5, 6.75, 10.0, 0.01, 0.01


def pizza_saver(mu: float):
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -GRAV))
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu, density=0.0)
    b.add_ground_plane(cfg=cfg)
    body = b.add_link(mass=M, inertia=wp.mat33(IZ, 0.0, 0.0, 0.0, IZ, 0.0, 0.0, 0.0, IZ))
    axes = newton.ModelBuilder.JointDofConfig
    joint = b.add_joint_d6(
        -1,
        body,
        linear_axes=[axes(axis=newton.Axis.X), axes(axis=newton.Axis.Y), axes(axis=newton.Axis.Z)],
        angular_axes=[axes(axis=newton.Axis.Z)],
        parent_xform=wp.transform((0.0, 0.0, SPHERE), wp.quat_identity()),
    )
    b.add_articulation([joint])
    for k in range(3):
        angle = 2.0 * np.pi * k / 3.0
        b.add_shape_sphere(
            body,
            xform=wp.transform((RADIUS * np.cos(angle), RADIUS * np.sin(angle), 0.0), wp.quat_identity()),
            radius=SPHERE,
            cfg=cfg,
        )
    return b.finalize()


def run(mu, steps, joint_f=(0.0, 0.0, 0.0, 0.0), qd0=(0.0, 0.0, 0.0, 0.0), **options):
    model = pizza_saver(mu)
    solver = newton_sap.SolverSAP(model, **options)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    control = model.control()
    control.joint_f.assign(np.asarray(joint_f, np.float32))
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.asarray(qd0, np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(steps):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, DT)
        s0, s1 = s1, s0
    assert solver.stats.converged.all() and solver.stats.num_contacts[0] == 3
    n = contacts.rigid_contact_count.numpy()[0]
    impulses = np.abs(contacts.rigid_contact_force.numpy()[:n]) * DT  # per contact, world frame
    return s0, impulses


def test_resting_contacts_carry_a_third_of_the_weight_each():
    """μ = 1, β = 0: thrown sliding and spinning, the body stops and each contact carries (0, 0, Δt m g / 3)."""
    state, impulses = run(1.0, 150, qd0=(1.0, 2.0, 0.0, 4.0), contact_stiffness=1e4, contact_dissipation_time=DT,
                          near_rigid_threshold=0.0)  # fmt: skip
    assert np.allclose(impulses[:, 2], DT * M * GRAV / 3.0, rtol=1e-3)
    assert np.abs(state.joint_qd.numpy()).max() < 1e-3


def test_static_penetration():
    state, _ = run(1.0, 200, contact_stiffness=1e4, contact_dissipation_time=DT, near_rigid_threshold=0.0)
    assert abs(state.joint_q.numpy()[2] - (-M * GRAV / (3 * 1e4))) < 1e-5  # z = −m g / (3 k) = −1 mm


def test_stiction_under_an_applied_moment():
    """μ = 2/3, M_z = 20 < μ m g R = 30: each ‖γ_t‖ = Δt M_z / (3R), slip at most σ μ Δt g."""
    state, impulses = run(2.0 / 3.0, 40, joint_f=(0.0, 0.0, 0.0, 20.0), contact_stiffness=1e4,
                          contact_dissipation_time=2 * DT, near_rigid_threshold=1.0)  # fmt: skip
    tangential = np.linalg.norm(impulses[:, :2], axis=1)
    assert np.allclose(tangential, DT * 20.0 / (3 * RADIUS), rtol=1e-3)
    assert np.allclose(impulses[:, 2], DT * M * GRAV / 3.0, rtol=1e-3)
    slip = abs(state.joint_qd.numpy()[3]) * RADIUS
    assert slip <= 1e-3 * (2.0 / 3.0) * DT * GRAV * 1.05


def test_frictionless_push():
    """μ = 0, f_x = 1 N for 30 steps: v_x = 30 Δt f_x / m = 0.1 m/s."""
    state, impulses = run(0.0, 30, joint_f=(1.0, 0.0, 0.0, 0.0), contact_stiffness=1e4, contact_dissipation_time=DT)
    assert abs(state.joint_qd.numpy()[0] - 0.1) < 1e-4
    assert np.abs(impulses[:, :2]).max() < 1e-9


def test_sliding_under_a_large_moment():
    """M_z = 40 > μ m g R = 30: the body spins up and every contact sits on the cone boundary."""
    state, impulses = run(2.0 / 3.0, 40, joint_f=(0.0, 0.0, 0.0, 40.0), contact_stiffness=1e4,
                          contact_dissipation_time=2 * DT)  # fmt: skip
    spin = state.joint_qd.numpy()[3]
    expected = 40 * DT * (40.0 - 30.0) / IZ  # (M_z − μ m g R) t / I_z
    assert spin > 0.5 * expected
    tangential = np.linalg.norm(impulses[:, :2], axis=1)
    assert np.allclose(tangential, 2.0 / 3.0 * impulses[:, 2], rtol=1e-3)


@pytest.mark.parametrize("momentum_mode", [False, True])
def test_modes_agree_on_the_stiction_case(momentum_mode):
    state, impulses = run(2.0 / 3.0, 10, joint_f=(0.0, 0.0, 0.0, 20.0), momentum_mode=momentum_mode,
                          contact_stiffness=1e4, contact_dissipation_time=2 * DT)  # fmt: skip
    assert np.allclose(np.linalg.norm(impulses[:, :2], axis=1), DT * 20.0 / (3 * RADIUS), rtol=1e-3)
