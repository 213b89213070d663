"""Many worlds in one model: each world's result equals the same system simulated alone, and a
broken world is flagged without touching the others."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap import factorization

from contact_scenes import G, Run, one_model, sphere_bin, worlds_of_different_kinds
from random_trees import add_random_tree, random_state
from same_run import assert_same_run

TYPES = ("revolute", "prismatic", "ball", "d6", "fixed")


def robot(seed, n_bodies, root):
    builder = newton.ModelBuilder()
    add_random_tree(builder, np.random.default_rng(seed), n_bodies, root_type=root, types=TYPES)
    return builder


def run(model, q, qd, steps=10, dt=2e-3, perturb=None):
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(q)
    s0.joint_qd.assign(qd)
    if perturb:
        perturb(s0)
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    return s0, solver


def solo_state(builder, seed):
    model = builder.finalize()
    q, qd = random_state(model, np.random.default_rng(seed))
    return model, q, qd


def test_heterogeneous_worlds_equal_each_robot_alone():
    robots = [robot(1, 4, "free"), robot(2, 6, "revolute"), robot(3, 3, "ball")]
    solos = [solo_state(r, 10 + k) for k, r in enumerate(robots)]
    scene = newton.ModelBuilder()
    for r in robots:
        scene.add_world(r)
    model = scene.finalize()
    q = np.concatenate([s[1] for s in solos])
    qd = np.concatenate([s[2] for s in solos])
    together, solver = run(model, q, qd)
    assert solver.topology.world_count == 3 and solver.stats.converged.all()
    q_all, qd_all = together.joint_q.numpy(), together.joint_qd.numpy()
    qs, ds = 0, 0
    for m, q0, qd0 in solos:
        alone, _ = run(m, q0, qd0)
        nq, nd = m.joint_coord_count, m.joint_dof_count
        assert np.allclose(q_all[qs : qs + nq], alone.joint_q.numpy(), atol=1e-6)
        assert np.allclose(qd_all[ds : ds + nd], alone.joint_qd.numpy(), atol=1e-5)
        qs, ds = qs + nq, ds + nd


def test_64_replicated_worlds_equal_one():
    single, q, qd = solo_state(robot(5, 5, "free"), 7)
    scene = newton.ModelBuilder()
    scene.replicate(robot(5, 5, "free"), 64)
    model = scene.finalize()
    together, _ = run(model, np.tile(q, 64), np.tile(qd, 64))
    alone, _ = run(single, q, qd)
    assert np.allclose(together.joint_q.numpy().reshape(64, -1), alone.joint_q.numpy()[None], atol=1e-6)
    assert np.allclose(together.joint_qd.numpy().reshape(64, -1), alone.joint_qd.numpy()[None], atol=1e-5)


def four_free_robots():
    """One random FREE-rooted tree alone, a random state of four copies, and the model of the four (four worlds)."""
    single, q, qd = solo_state(robot(6, 4, "free"), 8)
    scene = newton.ModelBuilder()
    scene.replicate(robot(6, 4, "free"), 4)
    return single, np.tile(q, 4), np.tile(qd, 4), scene.finalize()


def test_nan_in_one_world_is_flagged_and_isolated():
    single, q, qd, model = four_free_robots()
    nd = single.joint_dof_count

    def poison(state):
        v = state.joint_qd.numpy()
        v[2 * nd + 1] = np.nan
        state.joint_qd.assign(v)

    clean, _ = run(model, q, qd, steps=3)
    broken, solver = run(model, q, qd, steps=3, perturb=poison)
    assert solver.stats.failed.tolist() == [False, False, True, False]
    assert solver.stats.converged.tolist() == [True, True, False, True]
    keep = np.ones(4 * nd, bool)
    keep[2 * nd : 3 * nd] = False
    assert_same_run(broken.joint_qd.numpy()[keep], clean.joint_qd.numpy()[keep])
    wp.synchronize()


@pytest.mark.parametrize("gpu_paths", [False, True], ids=["cpu paths", "gpu paths"])
def test_contact_worlds_of_different_kinds_equal_each_alone(monkeypatch, gpu_paths):
    """One model, four contact worlds in different regimes (``worlds_of_different_kinds``: a stack that comes
    to rest, then converged at the first check with v* never formed; a sliding box, whose iterations read
    v*; a sphere bin solved by the block Cholesky; a box in free fall without constraints, v = v*). Each
    world ends where the same scene ends alone, the sliding box at Coulomb's speed and the falling box where
    semi-implicit Euler puts it. ``gpu paths``: the GPUs' free motion (dense tile Cholesky per tree, masked
    by world) and level-by-level tree LDLᵀ, run on the CPU."""
    monkeypatch.setattr(factorization, "TREE_LDLT_ON_CPU", not gpu_paths)
    monkeypatch.setattr(factorization, "TREE_THREADS_ON_CPU", not gpu_paths)
    worlds = worlds_of_different_kinds()
    steps, dt = 40, 0.01
    alone = []
    for builder, qd0 in worlds:
        run_alone = Run(builder.finalize(), qd0=qd0)
        run_alone.step(dt, steps)
        alone.append(run_alone)
    model, qd0 = one_model(worlds)
    together = Run(model, qd0=qd0)
    together.step(dt, steps)
    late = np.array(together.iterations[-10:])  # [step, world]: the stack at rest, the others moving
    assert late[:, 0].max() == 0 and late[:, 1].min() > 0 and late[:, 2].min() > 0
    stats = together.solver.stats
    assert np.array(together.converged).all()
    assert stats.num_contacts[3] == 0 and min(stats.num_contacts[:3]) > 0
    t = steps * dt
    sliding_vx = together.qd[18]  # the second world's box: 3 m/s, decelerated by μ g (μ = 0.5) once the
    # normal force has built up from the touching start (within the first two steps)
    assert 3.0 - 0.5 * G * t <= sliding_vx <= 3.0 - 0.5 * G * (t - 2 * dt)
    falling_z = together.q[-7 + 2]  # the last world's box: free fall from 1.1 m
    assert abs(falling_z - (1.1 - G * dt**2 * steps * (steps + 1) / 2)) < 1e-4
    qs = ds = 0
    for run_alone in alone:
        nq, nd = run_alone.model.joint_coord_count, run_alone.model.joint_dof_count
        assert np.allclose(together.q[qs : qs + nq], run_alone.q, atol=1e-4)
        assert np.allclose(together.qd[ds : ds + nd], run_alone.qd, atol=1e-3)
        qs, ds = qs + nq, ds + nd


def test_a_global_moving_body_falls_with_newtons_global_gravity():
    """In a model with one explicit world, a moving body of the global world (-1) shares world 0's problem but
    falls with Newton's global gravity, the last entry of ``Model.gravity`` (as in Featherstone and MuJoCo);
    the world's own body with world 0's."""
    inertia = wp.mat33(np.eye(3) * 1e-2)
    b = newton.ModelBuilder()
    b.begin_world()
    b.add_body(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()), mass=1.0, inertia=inertia)
    b.end_world()
    b.add_body(xform=wp.transform((2.0, 0.0, 1.0), wp.quat_identity()), mass=1.0, inertia=inertia)
    model = b.finalize()
    model.set_gravity((0.0, 0.0, -1.0), world=-1)
    state, _ = run(model, model.joint_q.numpy(), model.joint_qd.numpy(), steps=10, dt=0.01)
    np.testing.assert_allclose(state.body_qd.numpy()[:, 2], [-0.1 * G, -0.1], rtol=1e-5)


def driven_arms(worlds):
    """``worlds`` copies of a 2-link arm on position drives (100 N·m/rad, 5 N·m·s/rad, Newton's effort limit) with
    limits at ±0.5 rad."""
    arm = newton.ModelBuilder()
    inertia = wp.mat33(np.eye(3) * 1e-2)
    upper = arm.add_link(mass=1.0, com=wp.vec3(0.2, 0.0, 0.0), inertia=inertia)
    lower = arm.add_link(mass=0.5, com=wp.vec3(0.2, 0.0, 0.0), inertia=inertia)
    drive = {"target_ke": 100.0, "target_kd": 5.0, "actuator_mode": newton.JointTargetMode.POSITION,
             "limit_lower": -0.5, "limit_upper": 0.5}  # fmt: skip
    arm.add_articulation([
        arm.add_joint_revolute(-1, upper, axis=(0, 1, 0), **drive),
        arm.add_joint_revolute(upper, lower, axis=(0, 1, 0), parent_xform=wp.transform((0.4, 0, 0), wp.quat_identity()),
                               **drive),
    ])  # fmt: skip
    scene = newton.ModelBuilder()
    scene.replicate(arm, worlds)
    return scene.finalize()


def step_arms(model, steps, poison=None, **options):
    solver = newton_sap.SolverSAP(model, **options)
    control = model.control()
    control.joint_target_q.assign(np.tile([0.5, -0.5], model.world_count).astype(np.float32))
    if poison:
        poison(control)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(s0, s1, control, None, 0.01)
        s0, s1 = s1, s0
    return s0, solver


def test_a_world_with_a_nan_drive_target_is_left_out_of_the_solve():
    """A NaN position target never reaches a velocity (the drive's impulse is clamped to its effort limit): the
    world is flagged before the solve and takes no Newton iteration (before, it iterated on a clamped, finite
    problem: here 2-5 iterations per step, in a review's scene with box stacks beside the arms up to
    ``max_iterations``, holding every world's loop that long); the other worlds step as without it."""

    def poison(control):
        target = control.joint_target_q.numpy()
        target[2 * 2 + 1] = np.nan
        control.joint_target_q.assign(target)

    model = driven_arms(4)
    clean, _ = step_arms(model, 5)
    broken, solver = step_arms(model, 5, poison)
    stats = solver.stats
    assert stats.failed.tolist() == [False, False, True, False]
    assert stats.converged.tolist() == [True, True, False, True]
    assert stats.iterations[2] == 0 and stats.iterations.max() < 10
    keep = np.arange(8) // 2 != 2
    assert_same_run(broken.joint_qd.numpy()[keep], clean.joint_qd.numpy()[keep])
    with pytest.raises(RuntimeError, match=r"worlds \[2\] failed \(a non-finite input"):
        step_arms(model, 1, poison, raise_on_nonconvergence=True)


@pytest.mark.parametrize("scale", [0.0, 2e19])
def test_a_zero_or_overflowing_quaternion_flags_its_world(scale):
    """A FREE joint's quaternion of zeros is no rotation: the world is flagged instead of stepping the identity. One of
    finite entries whose squared norm overflows float32 (2e19) was stepped, to NaN positions, with the world reported
    converged (a helper review): flagged in that step too."""
    single, q, qd, model = four_free_robots()
    nq = single.joint_coord_count

    def scale_quaternion(state):
        coords = state.joint_q.numpy()
        coords[2 * nq + 3 : 2 * nq + 7] = (0.0, 0.0, 0.0, scale)
        state.joint_q.assign(coords)

    _, solver = run(model, q, qd, steps=1, perturb=scale_quaternion)
    assert solver.stats.failed.tolist() == [False, False, True, False]


def test_stats_count_the_steps_each_world_failed_or_did_not_converge():
    """``stats`` describe the last step; ``steps_failed`` and ``steps_not_converged`` count every step, so a failure
    in a graph of several steps, or between two readings, shows: a zero quaternion fails world 2's first step, whose
    output (the identity) steps on; a landing sphere bin held to two Newton iterations counts the steps it did not
    converge in."""
    single, q, qd, model = four_free_robots()
    nq = single.joint_coord_count

    def zero_quaternion(state):
        coords = state.joint_q.numpy()
        coords[2 * nq + 3 : 2 * nq + 7] = 0.0
        state.joint_q.assign(coords)

    _, solver = run(model, q, qd, steps=2, perturb=zero_quaternion)
    stats = solver.stats
    assert not stats.failed.any() and stats.steps_failed.tolist() == [0, 0, 1, 0]
    assert not stats.steps_not_converged.any()
    pile = Run(sphere_bin(8), max_iterations=2)
    pile.step(0.01, 40)
    not_converged = np.sum(~np.array(pile.converged), axis=0)
    assert 0 < not_converged[0] < 40 and pile.solver.stats.steps_not_converged.tolist() == not_converged.tolist()
    assert not pile.solver.stats.steps_failed.any()


@pytest.mark.parametrize("name", ["joint_target_ke", "joint_target_kd", "joint_effort_limit", "joint_limit_upper",
                                  "joint_friction"])  # fmt: skip
def test_a_nan_joint_value_written_without_notifying_flags_its_world(name):
    """A NaN gain, effort limit, limit or friction of world 2's dof written after the solver's construction, without
    the ``notify_model_changed`` that refuses it: the row built from it flags the world (before, a NaN gain pushed
    with the full effort limit, through the joint's limit, and a NaN limit or friction dropped its row, each with the
    world reported converged). The other worlds step as without it; ±inf limits (none) flag nothing."""
    model = driven_arms(4)
    clean, _ = step_arms(model, 3)
    unlimited = driven_arms(4)
    for bound, sign in (("joint_limit_lower", -1.0), ("joint_limit_upper", 1.0)):
        getattr(unlimited, bound).fill_(sign * np.inf)
    _, solver = step_arms(unlimited, 3)
    assert not solver.stats.failed.any()

    def poison(control):
        values = getattr(model, name).numpy()
        values[2 * 2 + 1] = np.nan
        getattr(model, name).assign(values)

    broken, solver = step_arms(model, 3, poison)
    assert solver.stats.failed.tolist() == [False, False, True, False]
    keep = np.arange(8) // 2 != 2
    assert_same_run(broken.joint_qd.numpy()[keep], clean.joint_qd.numpy()[keep])


def test_a_failed_world_is_not_solved_in_a_retry():
    """A failed world (a zero quaternion on a ball in the air) takes no Newton iteration even where a parked
    contact of its box, pushed down hard, would close its 5 cm gap at ``v*``: the check of parked rows skips it, so
    no retry reopens it. The healthy world's box is solved with its contact."""
    b = newton.ModelBuilder()
    box = b.add_body(xform=wp.transform((0.0, 0.0, 0.15), wp.quat_identity()))
    b.add_shape_box(box, hx=0.1, hy=0.1, hz=0.1)
    ball = b.add_body(xform=wp.transform((3.0, 0.0, 5.0), wp.quat_identity()))
    b.add_shape_sphere(ball, radius=0.1)
    b.add_ground_plane()
    scene = newton.ModelBuilder()
    scene.replicate(b, 2)
    model = scene.finalize()
    solver = newton_sap.SolverSAP(model, park_distant_contacts=True)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1, control = model.state(), model.state(), model.control()
    push = control.joint_f.numpy()
    push[[2, 14]] = -2.0e4  # [N] on each box: v* closes its gap within the step
    control.joint_f.assign(push)
    q = s0.joint_q.numpy()
    q[14 + 7 + 3 : 14 + 7 + 7] = 0.0  # world 1's ball
    s0.joint_q.assign(q)
    pipeline.collide(s0, contacts)
    solver.step(s0, s1, control, contacts, 0.01)
    stats = solver.stats
    assert stats.failed.tolist() == [False, True]
    assert stats.iterations[1] == 0 and stats.iterations[0] > 0


@pytest.mark.parametrize("push", [np.nan, 1e37], ids=["nan-input", "overflowing-solve"])
def test_the_contacts_of_a_failed_world_exert_nothing(push):
    """Boxes of 1 and 50 kg resting in two worlds; then the heavy one's ``joint_f`` is NaN (its world is left out of
    the solve) or a finite 1e37 N that overflows its solve: its bodies take no impulse, and its contacts report no
    force (the overflowing solve's had reported its unfinished iterate, 131 N each) and a snapshot no impulse (their
    rows held the last step's impulses); the light box's contacts carry its weight."""
    scene = newton.ModelBuilder()
    for mass in (1.0, 50.0):
        b = newton.ModelBuilder()
        body = b.add_body(xform=wp.transform((0.0, 0.0, 0.1), wp.quat_identity()))
        b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1, cfg=newton.ModelBuilder.ShapeConfig(density=mass / 0.008))
        scene.add_world(b)
    scene.add_ground_plane()
    model = scene.finalize()
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1, control = model.state(), model.state(), model.control()
    for step in range(6):
        if step == 5:
            f = control.joint_f.numpy()
            f[6 + 2] = push
            control.joint_f.assign(f)
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, 0.01)
        s0, s1 = s1, s0
    assert solver.stats.failed.tolist() == [False, True]
    n = contacts.rigid_contact_count.numpy()[0]
    shape_world = model.shape_world.numpy()
    pair_world = np.maximum(shape_world[contacts.rigid_contact_shape0.numpy()[:n]],
                            shape_world[contacts.rigid_contact_shape1.numpy()[:n]])  # fmt: skip
    force = contacts.rigid_contact_force.numpy()[:n]
    assert np.all(force[pair_world == 1] == 0.0)
    np.testing.assert_allclose(force[pair_world == 0, 2].sum(), G, rtol=1e-2)  # the light box's weight [N], settling
    pipeline.collide(s0, contacts)
    snap = solver.snapshot(s0, control, 0.01, contacts=contacts)
    assert solver.stats.failed.tolist() == [False, True]
    assert np.all(snap.contact_impulse[1] == 0.0) and np.all(snap.constraint_impulse[1] == 0.0)
    assert snap.contact_impulse[0][:, 2].sum() > 0.0
