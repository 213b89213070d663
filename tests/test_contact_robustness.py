"""Contact bad input and failure handling: named materials, full buffers, non-convergence, NaN worlds; random
throws that must converge and never gain energy."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap import ModelError
from newton_sap.examples.scenes import quadruped_pd

from contact_scenes import G, Run, box_on_ground, with_material


def boxes_on_shared_ground(worlds: int) -> newton.ModelBuilder:
    """``worlds`` worlds of one resting 1 kg, 0.2 m box (μ 0.5) on a ground plane that they share."""
    robot = newton.ModelBuilder()
    with_material(robot, 0.5)
    body = robot.add_body(xform=wp.transform((0.0, 0.0, 0.1), wp.quat_identity()))
    robot.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    scene = newton.ModelBuilder()
    scene.replicate(robot, worlds)
    with_material(scene, 0.5)
    scene.add_ground_plane()
    return scene


@pytest.mark.parametrize("mu", [-0.1, np.inf, np.nan])
def test_bad_friction_names_the_shape(mu):
    model = box_on_ground()
    values = model.shape_material_mu.numpy()
    values[1] = mu
    model.shape_material_mu.assign(values)
    with pytest.raises(ModelError, match="shape 1.*friction"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize("ke", [0.0, -1.0, np.inf])
def test_bad_material_stiffness_names_the_shape_when_materials_are_used(ke):
    """Only finite positive stiffnesses are materials (an infinite one would also make its τ = kd/ke zero)."""
    model = box_on_ground()
    values = model.shape_material_ke.numpy()
    values[0] = ke
    model.shape_material_ke.assign(values)
    newton_sap.SolverSAP(model)  # the solver's own stiffness is used: fine
    with pytest.raises(ModelError, match="shape 0.*stiffness"):
        newton_sap.SolverSAP(model, contact_stiffness=None)


@pytest.mark.parametrize(
    "bad",
    [{"contact_stiffness": 0.0}, {"contact_stiffness": np.inf}, {"contact_dissipation_time": np.nan},
     {"friction_regularization": np.inf}, {"rel_tolerance": np.nan}, {"line_search": "golden"},
     {"max_iterations": 0}, {"pcg_threads": "block"}, {"rel_tolerance": "1e-6"}, {"contact_stiffness": True},
     {"momentum_mode": "yes"}, {"stiction_prediction": 1}, {"park_distant_contacts": 1}, {"abs_tolerance": -1.0},
     {"near_rigid_time_step": 0.0}, {"near_rigid_time_step": -0.01}],
)  # fmt: skip
def test_bad_options_are_refused(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        newton_sap.SolverSAP(box_on_ground(), **bad)


def test_a_misspelt_option_is_named_with_its_closest_option():
    with pytest.raises(
        TypeError, match="unknown SolverSAP option 'contact_stifness' \\(did you mean 'contact_stiffness'"
    ):
        newton_sap.SolverSAP(box_on_ground(), contact_stifness=1e5)


def test_full_contact_buffer_is_reported():
    run = Run(box_on_ground(boxes=2), rigid_contact_max=2)
    with pytest.warns(RuntimeWarning, match="contact buffer full"):
        run.step(0.01)
    assert run.solver.stats.contact_buffer_full


def test_non_convergence_is_flagged_or_raised():
    run = Run(box_on_ground(boxes=3), qd0=[1.0, 0, 0, 0, 0, 3.0] * 3, max_iterations=1)
    run.step(0.01, 5)
    stats = run.solver.stats
    assert not stats.converged.all() and (stats.residual > 0).all()
    strict = Run(box_on_ground(boxes=3), qd0=[1.0, 0, 0, 0, 0, 3.0] * 3, max_iterations=1, raise_on_nonconvergence=True)
    with pytest.raises(RuntimeError, match="did not converge"):
        strict.step(0.01, 5)


@pytest.mark.parametrize(
    "options",
    [{}, {"dense_world_max_dofs": 0}, {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 0}],
    ids=["dense", "block Cholesky", "PCG"],
)
@pytest.mark.parametrize("coordinate", [2, 3], ids=["height", "quaternion"])
def test_nan_world_with_contacts_does_not_spread(options, coordinate):
    """A NaN in world 1's first box (its height, or its quaternion, which the kinematics would normalize to
    the identity) flags that world at every step; the others end as without it."""
    robot = newton.ModelBuilder()
    with_material(robot, 0.5)
    for k in range(2):
        body = robot.add_body(xform=wp.transform((0.0, 0.0, 0.1 * (2 * k + 1)), wp.quat_identity()))
        robot.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    scene = newton.ModelBuilder()
    scene.replicate(robot, 3)
    with_material(scene, 0.5)
    scene.add_ground_plane()  # shared by the three worlds
    model = scene.finalize()
    qd0 = np.tile([0.3, 0, 0, 0, 0, 0.5], 6).astype(np.float32)
    clean = Run(model, qd0=qd0, **options)
    clean.step(0.01, 3)
    broken = Run(model, qd0=qd0, **options)
    q = broken.s0.joint_q.numpy()
    q[14 + coordinate] = np.nan  # world 1's first box
    broken.s0.joint_q.assign(q)
    broken.step(0.01)
    assert broken.solver.stats.failed.tolist() == [False, True, False]
    broken.step(0.01, 2)
    assert broken.solver.stats.converged.tolist() == [True, False, True]
    keep = np.ones(len(q), bool)
    keep[14:28] = False
    assert np.allclose(broken.q[keep], clean.q[keep], atol=1e-6)


def test_nan_model_value_written_without_notifying_flags_its_world():
    """A NaN written into world 1's model (its gravity) without ``notify_model_changed``, which would refuse it:
    the world's Newton iterations stop at its finite warm start with a NaN residual, so no velocity shows it; the
    residual flags the world failed (it was only "not converged"). The other worlds step as without it."""
    scene = boxes_on_shared_ground(3)
    qd0 = np.tile([0.3, 0, 0, 0, 0, 0.5], 3).astype(np.float32)
    clean = Run(scene.finalize(), qd0=qd0)
    clean.step(0.01, 3)
    model = scene.finalize()
    broken = Run(model, qd0=qd0)
    gravity = model.gravity.numpy()
    gravity[1, 2] = np.nan
    model.gravity.assign(gravity)
    broken.step(0.01, 3)
    assert broken.solver.stats.failed.tolist() == [False, True, False]
    keep = np.ones(21, bool)
    keep[7:14] = False
    np.testing.assert_array_equal(broken.q[keep], clean.q[keep])


@pytest.mark.parametrize("field", ["normal", "point0", "margin1", "friction"])
def test_nan_contact_data_flags_its_world(field):
    """A NaN in world 1's contacts (Newton's normal, a body-frame point, a margin or a per-contact friction scale,
    written after the collision) flags that world: every test of the cone's projection fails on a NaN, so its rows
    would give no impulse and the box fall through the ground with the world reported converged (a NaN friction
    scale would count as unset). The other worlds step as without it."""

    def run(poison):
        model = boxes_on_shared_ground(3).finalize()
        qd0 = np.tile([0.3, 0, 0, 0, 0, 0], 3).astype(np.float32)
        run = Run(model, qd0=qd0, per_contact=(0.0, 0.0, 0.0))  # per-contact arrays, zeros: the pair's values
        shape_body = model.shape_body.numpy()
        contact_world = np.where(shape_body >= 0, model.body_world.numpy()[shape_body], -1)  # the ground: -1
        for _ in range(3):
            run.pipeline.collide(run.s0, run.contacts)
            if poison:
                values = getattr(run.contacts, f"rigid_contact_{field}").numpy()
                count = run.contacts.rigid_contact_count.numpy()[0]
                shape0 = run.contacts.rigid_contact_shape0.numpy()[:count]
                shape1 = run.contacts.rigid_contact_shape1.numpy()[:count]
                in_world_1 = np.maximum(contact_world[shape0], contact_world[shape1]) == 1
                assert in_world_1.any()
                values[:count][in_world_1] = np.nan
                getattr(run.contacts, f"rigid_contact_{field}").assign(values)
            run.solver.step(run.s0, run.s1, None, run.contacts, 0.01)
            run.s0, run.s1 = run.s1, run.s0
        return run.solver.stats, run.q.reshape(3, -1)

    clean_stats, clean_q = run(poison=False)
    stats, q = run(poison=True)
    assert not clean_stats.failed.any()
    assert stats.failed.tolist() == [False, True, False] and stats.converged.tolist() == [True, False, True]
    assert stats.num_contacts[1] == clean_stats.num_contacts[1]
    np.testing.assert_array_equal(q[[0, 2]], clean_q[[0, 2]])


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_friction_material_flags_its_world(value):
    """A NaN or infinite friction coefficient written into world 1's box material without ``notify_model_changed``
    (which would refuse it) flags that world: the pair's μ would be 0 (NaN fails ``μ > 0``) or twice the ground's
    (the series limit), finite either way, and the box would slide on as if on ice. The other worlds step as
    without it."""

    def run(poison):
        model = boxes_on_shared_ground(3).finalize()
        run = Run(model, qd0=np.tile([0.3, 0, 0, 0, 0, 0], 3).astype(np.float32))
        if poison:
            mu = model.shape_material_mu.numpy()
            mu[np.nonzero(model.shape_body.numpy() == 1)[0]] = value  # world 1's box
            model.shape_material_mu.assign(mu)
        run.step(0.01, 3)
        return run.solver.stats, run.q.reshape(3, -1)

    clean_stats, clean_q = run(poison=False)
    stats, q = run(poison=True)
    assert not clean_stats.failed.any()
    assert stats.failed.tolist() == [False, True, False]
    np.testing.assert_array_equal(q[[0, 2]], clean_q[[0, 2]])


def test_huge_finite_materials_combine_without_overflow():
    """The pair's series stiffness and friction stay finite for every finite material: 1e20 N/m on both shapes
    (whose product overflows float32) rests as the same pair's 5e19 N/m given as the solver's stiffness."""
    runs = []
    for stiffness in (None, 5e19):
        model = box_on_ground()
        model.shape_material_ke.fill_(1e20)
        model.shape_material_mu.fill_(2e19)  # the pair's μ: 2e19 (whose 2 μA μB overflows too)
        run = Run(model, contact_stiffness=stiffness, near_rigid_threshold=0.0)
        run.step(0.01, 3)
        assert not run.solver.stats.failed.any() and run.solver.stats.converged.all()
        runs.append(run.q)
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("field", ["joint_target_q", "joint_target_qd", "joint_act", "joint_f", "body_f"])
def test_nan_control_input_flags_its_world(field):
    """A NaN action (a drive target, feed-forward or force of world 1 of two quadrupeds under PD) flags that
    world: a drive would clamp its NaN impulse to the effort limit, a NaN force stop only the world's Newton
    iterations, neither reaching a velocity. World 0 steps as without it."""

    def run(poison):
        model = quadruped_pd(2)
        solver = newton_sap.SolverSAP(model)
        pipeline = newton.CollisionPipeline(model)
        contacts, control = pipeline.contacts(), model.control()
        control.joint_act = wp.zeros(model.joint_dof_count, dtype=float)
        s0, s1 = model.state(), model.state()
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        for k in range(4):
            if poison and k == 3:  # the last step
                holder = s0 if field == "body_f" else control
                values = getattr(holder, field).numpy()
                values.reshape(2, -1)[1, -1] = np.nan  # world 1's last entry (a knee; the last body)
                getattr(holder, field).assign(values)
            pipeline.collide(s0, contacts)
            solver.step(s0, s1, control, contacts, 0.01)
            s0, s1 = s1, s0
        return solver.stats, s0.joint_qd.numpy().reshape(2, -1)

    clean_stats, clean_qd = run(poison=False)
    stats, qd = run(poison=True)
    assert not clean_stats.failed.any()
    assert stats.failed.tolist() == [False, True] and stats.converged.tolist()[1] is False
    np.testing.assert_array_equal(qd[0], clean_qd[0])


def random_drop(seed: int) -> newton.ModelBuilder:
    """One to five boxes, spheres and capsules of random size (2–30 cm), density (10–10⁴ kg/m³), friction
    (0–1.2) and orientation, stacked loosely above the ground at random (world index ``seed``)."""
    rng = np.random.default_rng(seed)
    b = newton.ModelBuilder()
    for i in range(int(rng.integers(1, 6))):
        size = float(rng.uniform(0.02, 0.3))
        cfg = newton.ModelBuilder.ShapeConfig(mu=float(rng.uniform(0.0, 1.2)), density=float(10 ** rng.uniform(1, 4)))
        xform = wp.transform(
            (float(rng.uniform(-0.3, 0.3)), float(rng.uniform(-0.3, 0.3)), 0.35 + 0.7 * i),
            wp.quat_rpy(*[float(x) for x in rng.uniform(-np.pi, np.pi, 3)]),
        )
        body = b.add_body(xform=xform)
        kind = rng.integers(0, 3)
        if kind == 0:
            hy, hz = size * rng.uniform(0.3, 1.5, 2)
            b.add_shape_box(body, hx=size, hy=float(hy), hz=float(hz), cfg=cfg)
        elif kind == 1:
            b.add_shape_sphere(body, radius=size, cfg=cfg)
        else:
            b.add_shape_capsule(body, radius=0.5 * size, half_height=size, cfg=cfg)
    return b


def world_energies(model, state) -> np.ndarray:
    """Kinetic plus gravitational energy [J] of each world's bodies (``body_qd``: COM velocity and ω, world)."""
    m, I, com = model.body_mass.numpy(), model.body_inertia.numpy(), model.body_com.numpy()
    bq, bqd, world = state.body_q.numpy(), state.body_qd.numpy(), model.body_world.numpy()
    E = np.zeros(model.world_count)
    for i in range(len(m)):
        R = np.array(wp.quat_to_matrix(wp.quat(*bq[i, 3:7]))).reshape(3, 3)
        v, w = bqd[i, :3], bqd[i, 3:]
        E[world[i]] += 0.5 * m[i] * v @ v + 0.5 * w @ (R @ I[i] @ R.T) @ w + m[i] * G * (bq[i, :3] + R @ com[i])[2]
    return E


def test_random_drops_converge_and_never_gain_energy():
    """Six worlds of random bodies thrown onto the ground at Δt = 0.02 s (random speeds up to 2 m/s and
    2 rad/s; masses from grams to tonnes): every world converges at every step, and its kinetic plus
    potential energy never rises by more than that of lifting the world's weight 2 cm in one step (the
    spring-back of an impact's compliant overlap: at most 5 mm measured; contact bias velocities three times
    too large give 3 to 8 cm) nor above its start; at the end most of it is dissipated."""
    scene = newton.ModelBuilder()
    for seed in range(6):
        scene.add_world(random_drop(seed))
    scene.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=0.8))
    model = scene.finalize()
    weight = G * np.bincount(model.body_world.numpy(), weights=model.body_mass.numpy())
    qd0 = np.random.default_rng(42).uniform(-2.0, 2.0, model.joint_dof_count).astype(np.float32)
    run = Run(model, qd0=qd0)
    E0 = E = world_energies(model, run.s0)
    for _ in range(75):
        run.step(0.02)
        assert np.all(run.converged[-1])
        E, E_before = world_energies(model, run.s0), E
        assert np.all(np.isfinite(E)) and np.all(E - E_before <= 0.02 * weight) and np.all(E <= E0), (E, E_before)
    assert np.all(E < 0.9 * E0)


def test_random_drops_thrown_fast_stay_finite_and_never_gain_energy():
    """Twelve worlds of random bodies thrown at up to 8 m/s and 8 rad/s at Δt = 0.01 s for 2 s (helper review): a
    28 g capsule rolling off the ground at 170 rad/s, then in flight, took the explicit gyroscopic torque ``ω × I ω``
    from 5 to 1e12 rad/s and to NaN, another world to 1e29 times its energy. With the torque integrated over the
    step every world converges at every step and ends below its starting energy at every step."""
    scene = newton.ModelBuilder()
    for seed in range(8, 20):
        scene.add_world(random_drop(seed))
    scene.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=0.8))
    model = scene.finalize()
    run = Run(model, qd0=np.random.default_rng(8).uniform(-8.0, 8.0, model.joint_dof_count).astype(np.float32))
    E0 = world_energies(model, run.s0)
    for _ in range(200):
        run.step(0.01)
        assert np.all(run.converged[-1])
        E = world_energies(model, run.s0)
        assert np.all(np.isfinite(E)) and np.all(E <= E0), E / E0


def light_chain(links: int, box: bool = False) -> newton.ModelBuilder:
    """A planar chain of ``links`` links of 0.1 kg and 5 cm (a 2 cm sphere each) on hinges about y, lying on the
    ground from the origin along x; with ``box``, a 10 cm cube of 1 kg dropped onto it 0.5 m out."""
    b = newton.ModelBuilder()
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=0.5))
    parent, joints = -1, []
    for k in range(links):
        link = b.add_link(mass=0.1, inertia=wp.mat33(np.eye(3) * 1e-4))
        b.add_shape_sphere(link, xform=wp.transform((0.025, 0.0, 0.0), wp.quat_identity()), radius=0.02)
        joint_frame = wp.transform((0.05 if k else 0.0, 0.0, 0.0 if k else 0.0195), wp.quat_identity())
        joints.append(b.add_joint_revolute(parent, link, axis=(0.0, 1.0, 0.0), parent_xform=joint_frame))
        parent = link
    b.add_articulation(joints)
    if box:
        cube = b.add_body(xform=wp.transform((0.5, 0.0, 0.09), wp.quat_identity()))
        b.add_shape_box(cube, hx=0.05, hy=0.05, hz=0.05)
    return b


def test_contacts_between_bodies_welded_together_join_no_problem():
    """A box with a sphere welded to it two FIXED joints away (not its child: Newton's pipeline reports their overlap)
    in each of two worlds: the two sides move as one, so the contact's Jacobian has no entries. Such a row reached the
    block Cholesky's tree graph with the entries of an earlier row in its slot, another world's dofs: an
    out-of-bounds write, a segfault in a fuzzing review's 77-dof worlds. It is now left out (as a contact between two
    static sides): no contact in the problem, and the body falls freely."""
    single = newton.ModelBuilder()
    box = single.add_link(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()))
    single.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1)
    middle = single.add_link(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()))
    single.add_shape_sphere(middle, xform=wp.transform((0.0, 0.0, 0.3), wp.quat_identity()), radius=0.02)
    ball = single.add_link(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()))
    single.add_shape_sphere(ball, xform=wp.transform((0.12, 0.0, 0.0), wp.quat_identity()), radius=0.05)
    single.add_articulation([single.add_joint_free(box), single.add_joint_fixed(box, middle),
                             single.add_joint_fixed(middle, ball)])  # fmt: skip
    scene = newton.ModelBuilder()
    scene.replicate(single, 2)
    scene.add_ground_plane()
    run = Run(scene.finalize(), dense_world_max_dofs=0)  # the block Cholesky's worlds
    run.pipeline.collide(run.s0, run.contacts)
    count = run.contacts.rigid_contact_count.numpy()[0]
    shape_body = run.model.shape_body.numpy()
    pairs = {
        tuple(sorted(shape_body[[a, b]]))
        for a, b in zip(
            run.contacts.rigid_contact_shape0.numpy()[:count],
            run.contacts.rigid_contact_shape1.numpy()[:count],
            strict=True,
        )
    }
    assert pairs == {(0, 2), (3, 5)}  # the box and the ball welded to it, in each world
    run.step(0.01, 5)
    assert run.solver.stats.num_contacts.tolist() == [0, 0] and run.solver.stats.converged.all()
    np.testing.assert_allclose(run.qd.reshape(2, 6)[:, 2], -G * 0.05, rtol=1e-5)


@pytest.mark.parametrize("links", [32, 48])
def test_a_dense_cholesky_broken_in_float32_refactors_with_a_scaled_diagonal(monkeypatch, links):
    """The GPU's solve of small worlds (a dense tile Cholesky of H per world), taken on the CPU: a planar chain of
    light links lying on the ground (one tree, cond(D H D) ≈ 3e8 at 32 links) breaks the float32 factorization,
    whose NaN direction failed the world in every step; the Jacobi direction then taken instead stopped up to 2.4 m/s
    off the float64 solve of the step (32 links: 19 of 20 steps converged; 48: 13 of 20, median 2.2 m/s off). H is
    now factored again with its diagonal scaled by 1 + δ (``refactor_broken_dense_worlds``): every step converges,
    within 3e-4 m/s of the float64 solve."""
    from sap_reference import solve_sap_problem

    from newton_sap import factorization

    monkeypatch.setattr(factorization, "TREE_LDLT_ON_CPU", False)
    run = Run(light_chain(links).finalize(), dense_world_max_dofs=64)
    for _ in range(20):
        run.pipeline.collide(run.s0, run.contacts)
        snap = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)
        assert run.solver.stats.converged[0]
        reference = solve_sap_problem(snap, 0, v_start=snap.velocity[0])  # (the minimizer is unique)
        assert np.abs(snap.velocity[0] - reference).max() < 1e-3
        run.step(0.01)
    assert all(converged[0] for converged in run.converged) and np.isfinite(run.s0.joint_qd.numpy()).all()


@pytest.mark.parametrize("links", [24, 64])
def test_a_block_cholesky_broken_in_float32_refactors_with_a_scaled_diagonal(links):
    """A box dropped onto a long light chain lying on the ground, solved by the block Cholesky (the chain and the box
    couple two trees; 64 links take it by default, 24 with ``dense_world_max_dofs=0``): the float32 factorization of
    H (cond(D H D) ≈ 6e7 in float64 at 24 links) broke down in the third step, and the world failed in every step
    after with NaN velocities. Refactored with its diagonal scaled by ``1 + δ`` where it breaks down, every step
    converges (24 links: 4.6 Newton iterations per step; 64: 17, 90 %, the others stopped at ``max_iterations``
    near the float32 floor) and the box rests on the chain."""
    run = Run(light_chain(links, box=True).finalize(), dense_world_max_dofs=0 if links < 64 else 64)
    for _ in range(30):
        run.step(0.01)
        assert not run.solver.stats.failed[0]
    assert np.isfinite(run.qd).all()
    assert np.mean(run.converged) >= (1.0 if links < 64 else 0.8)
    assert run.q[links + 2] == pytest.approx(0.09, abs=2e-3)  # the cube's height: on the chain's 2 cm spheres
