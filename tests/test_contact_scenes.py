"""Whole contact scenes against closed forms (SAP.md §8), through Newton's collision pipeline."""

import newton
import newton.examples
import numpy as np
import pytest
import warp as wp

from newton_sap.diagnostics import quat_to_matrix

from contact_scenes import (
    G,
    Run,
    box_on_ground,
    box_stack_builder,
    cylinder_with_offset_origin,
    incline_gravity,
    sphere_on_ground,
)


def test_resting_sphere_penetrates_by_mg_over_k():
    """β = 0 (purely compliant): the static penetration is m g / k (within 1 %)."""
    k = 1e4
    model = sphere_on_ground(radius=0.1, mass=2.0)
    run = Run(model, contact_stiffness=k, contact_dissipation_time=0.02, near_rigid_threshold=0.0)
    run.step(0.01, 300)
    penetration = 0.1 - run.q[2]
    assert abs(penetration - 2.0 * G / k) < 0.01 * 2.0 * G / k
    assert np.all(run.converged)


APPROXIMATIONS = ["sap", "lagged"]


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_sliding_box_stops_at_the_coulomb_distance(approximation):
    """A box resting on the ground pushed to 2 m/s, μ = 0.5: it stops after v0²/(2 μ g) (within 3 %). It first
    settles into its resting penetration: the lagged friction's bound is the elastic normal impulse there, which a
    box touching the ground without penetration builds up over its first steps (it then slides 10.7 % too far)."""
    run = Run(box_on_ground(mu=0.5), contact_approximation=approximation)
    run.step(5e-3, 40)
    run.set_qd([2.0, 0, 0, 0, 0, 0])
    x0 = run.q[0]
    run.step(5e-3, 160)
    expected = 2.0**2 / (2 * 0.5 * G)
    assert abs(run.qd[0]) < 1e-3
    assert abs((run.q[0] - x0) - expected) < 0.03 * expected
    assert np.all(run.converged)


def test_sliding_box_leaves_the_ground_at_mu_times_its_slip():
    """SAP's artefact (README, known artefacts): its cone couples the normal to the slip, so a box slid at
    2 m/s with μ = 0.5 leaves the ground at ``v_n ≈ μ |v_t|`` (|v_t| its slip at the step's end), not at rest.
    The KKT conditions of the R-norm projection give ``v_n = v̂_n − R_n γ_n + μ (|v_t| − R_t |γ_t|)``:
    μ |v_t| minus a few percent."""
    run = Run(box_on_ground(mu=0.5), qd0=[2.0, 0, 0, 0, 0, 0])
    run.step(0.01)
    slip, lift = run.qd[0], run.qd[2]
    assert 0.93 * 0.5 * slip < lift <= 0.5 * slip


def test_lagged_friction_slides_the_box_without_lifting_it():
    """``contact_approximation="lagged"``: the same slide keeps the box on the ground: it never rises (SAP's hops
    3.4 cm), moving up at under 1 mm/s, and only settles into its resting penetration (0.05 mm)."""
    run = Run(box_on_ground(mu=0.5), qd0=[2.0, 0, 0, 0, 0, 0], contact_approximation="lagged")
    z0, heights, lifts = run.q[2], [], []
    for _ in range(50):
        run.step(0.01)
        heights.append(run.q[2] - z0)
        lifts.append(run.qd[2])
    assert max(heights) < 1e-6 and max(lifts) < 1e-3 and min(heights) > -1e-4
    assert run.qd[0] < 0.05  # and stopped (after 0.41 s)


def test_lagged_friction_lands_a_sliding_box_without_a_hop():
    """A box 5 mm above the ground, moving at 2 m/s across it and falling at 1 m/s, lands and slides on with the
    lagged contact: it rises at most 1 mm (the normal law's rebound; SAP's cone lifts it 7 mm), and its friction
    never takes more than μ of the normal impulses over the landing (0.33 of them in 8 steps: the bound grows with
    the penetration, so the first step slides frictionlessly)."""
    mu, dt = 0.5, 0.01
    run = Run(box_stack_builder(lift=0.005, mu=mu).finalize(), qd0=[2.0, 0, -1.0, 0, 0, 0],
              contact_approximation="lagged")  # fmt: skip
    rest, heights, normal, tangential = 0.1, [], 0.0, 0.0
    for _ in range(8):
        qd0 = run.qd.copy()
        run.step(dt)
        heights.append(run.q[2])
        normal += run.qd[2] - qd0[2] + G * dt  # the ground's impulses on the 1 kg box [N·s]
        tangential += run.qd[0] - qd0[0]
    assert max(heights[2:]) < rest + 1e-3
    assert 0.0 < -tangential <= mu * normal
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_box_sticking_on_an_incline_stays_when_nudged_off_it(approximation):
    """A box sticking on a 20° incline (μ = 0.5), nudged off it at 3 mm/s, still sticks: it creeps less than
    0.02 mm in the next 0.2 s (SAP's cone and the lagged contact: 0.005 mm). A lagged friction bound with the
    Kelvin–Voigt damping of the start state in it vanished at such a separating speed, and the box slid 0.6 mm."""
    run = Run(box_on_ground(mu=0.5, gravity=incline_gravity(20.0)), contact_approximation=approximation)
    run.step(0.01, 100)
    qd = run.qd.copy()
    qd[2] += 3e-3
    run.set_qd(qd)
    x0 = run.q[0]
    run.step(0.01, 21)
    assert abs(run.q[0] - x0) < 2e-5
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_box_sticks_on_a_20_degree_incline_with_mu_half(approximation):
    """tan 20° = 0.36 < μ = 0.5: the box sticks; regularized friction creeps by less than 10 σ Δt g."""
    dt = 0.01
    run = Run(box_on_ground(mu=0.5, gravity=incline_gravity(20.0)), contact_approximation=approximation)
    run.step(dt, 100)
    x0 = run.q[0]
    run.step(dt, 100)
    creep = abs(run.q[0] - x0) / 1.0  # [m/s] over the last second
    assert creep < 10 * 1e-3 * dt * G
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_box_slides_on_a_30_degree_incline_with_mu_0_3(approximation):
    """tan 30° > μ = 0.3: it slides with a = g (sin θ − μ cos θ) (within 2 %)."""
    dt = 0.005
    run = Run(box_on_ground(mu=0.3, gravity=incline_gravity(30.0)), contact_approximation=approximation)
    run.step(dt, 40)
    v1 = run.qd[0]
    run.step(dt, 100)
    accel = (run.qd[0] - v1) / (100 * dt)
    expected = G * (np.sin(np.radians(30)) - 0.3 * np.cos(np.radians(30)))
    assert abs(accel - expected) < 0.02 * expected
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_sphere_thrown_without_spin_ends_rolling_at_five_sevenths(approximation):
    """A solid sphere sliding at v0 without spin rolls at 5/7 v0 after 2 v0 / (7 μ g) (within 1 %)."""
    v0, mu, radius = 2.0, 0.3, 0.1
    run = Run(sphere_on_ground(radius=radius, mass=1.0, height=radius, mu=mu), qd0=[v0, 0, 0, 0, 0, 0],
              contact_approximation=approximation)  # fmt: skip
    run.step(5e-3, int(2 * 2 * v0 / (7 * mu * G) / 5e-3))
    assert abs(run.qd[0] - 5.0 / 7.0 * v0) < 0.01 * 5.0 / 7.0 * v0
    assert abs(run.qd[4] * radius - run.qd[0]) < 0.01 * v0  # rolling: ω_y r = v_x
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_sphere_landing_across_the_ground_rolls_at_five_sevenths(approximation):
    """A solid sphere without spin, 2 cm above the ground and falling at 3 m/s while moving at v0 across it,
    lands within one step of 0.01 s. Its angular momentum about the touching point is kept through the landing's
    impulses, so it rolls at 5/7 v0 after (within 0.2 %) if friction acts at the sphere's surface: at the midpoint
    of the 2 cm gap the lever is 1 cm longer and it rolled 2.5 % too fast."""
    v0, radius = 2.0, 0.1
    run = Run(sphere_on_ground(radius=radius, height=radius + 0.02, mu=0.5), qd0=[v0, 0, -3.0, 0, 0, 0],
              contact_approximation=approximation)  # fmt: skip
    run.step(0.01, 30)
    assert abs(run.qd[0] - 5.0 / 7.0 * v0) < 2e-3 * 5.0 / 7.0 * v0
    assert abs(run.qd[4] * radius - run.qd[0]) < 2e-3 * v0
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("offset", [(0.3, 0.0, 0.0), (0.0, 0.0, 0.3)])
def test_cylinder_with_its_origin_off_its_com_rolls_at_two_thirds_g_sin_theta(offset, approximation):
    """A cylinder rolls down a 20° incline at a = g sin θ / (1 + I/(m r²)) = ⅔ g sin θ wherever its body origin
    lies (within 0.5 % at Δt = 0.01; the origin 0.3 m off the COM across the axis gave 13 % and 5 % too much while
    the contact rows left out the position update's ``Δt ω × (ω × r)``: jacobian.offset_velocity)."""
    dt, radius = 0.01, 0.1
    run = Run(cylinder_with_offset_origin(offset, mu=0.6, gravity=incline_gravity(20.0), radius=radius),
              contact_approximation=approximation)  # fmt: skip
    speeds = [run.step(dt).joint_qd.numpy()[[0, 4]] for _ in range(60)]
    t = dt * np.arange(1, 61)
    accel = np.polyfit(t[10:], [v[0] for v in speeds[10:]], 1)[0]
    expected = G * np.sin(np.radians(20.0)) / 1.5
    assert abs(accel - expected) < 5e-3 * expected
    assert abs(speeds[-1][1] * radius - speeds[-1][0]) < 1e-3 * speeds[-1][0]  # rolling: ω_y r = v_x
    assert np.all(run.converged)


def test_cylinder_spinning_about_a_com_off_its_origin_rests_on_the_ground():
    """A cylinder spinning at 13 rad/s about its axis on a frictionless ground, its body origin 0.3 m below its
    COM, stays put: the contact sees the COM still (it launched it at 0.49 m/s in one step, and bounced it by
    2 cm, while the rows left out the position update's offset)."""
    radius = 0.1
    run = Run(cylinder_with_offset_origin((0.0, 0.0, -0.3), mu=0.0, radius=radius), qd0=[0, 0, 0, 0, 13.0, 0])
    heights, climbs = [], []
    for _ in range(100):
        state = run.step(0.01)
        pose = state.body_q.numpy()[0]
        heights.append(pose[2] + quat_to_matrix(pose[3:])[2] @ np.array([0.0, 0.0, -0.3]))  # the COM's z
        climbs.append(state.joint_qd.numpy()[2])
    assert np.ptp(heights) < 1e-3 and max(np.abs(climbs)) < 0.01
    assert abs(run.qd[4] - 13.0) < 1e-3


def spinning_cylinder_on_a_box(park: bool, gap: float):
    """The cylinder of :func:`cylinder_with_offset_origin` (origin 0.3 m below its COM, spinning at 13 rad/s about
    its axis, frictionless) ``gap`` [m] above a free 1 kg box on the ground: a contact between two dynamic bodies,
    the cylinder on body 0's side (Newton's pipeline orders the pair so), the box's ground contacts beside it."""
    b = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.0, density=0.0)
    b.add_ground_plane(cfg=cfg)
    half, radius = 0.1, 0.1
    box = b.add_link(xform=wp.transform((0.0, 0.0, half), wp.quat_identity()), mass=1.0,
                     inertia=wp.mat33(np.eye(3) * (2.0 / 3.0) * half**2))  # fmt: skip
    b.add_shape_box(box, hx=half, hy=half, hz=half, cfg=cfg)
    offset = np.array([0.0, 0.0, -0.3])
    axial, across = 0.5 * radius**2, (3 * radius**2 + 4 * 0.15**2) / 12
    top = np.array([0.0, 0.0, 2 * half + radius + gap])
    cylinder = b.add_link(xform=wp.transform(tuple(top - offset), wp.quat_identity()), mass=1.0, com=tuple(offset),
                          inertia=wp.mat33(np.diag([across, axial, across])))  # fmt: skip
    along_y = wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), float(np.pi / 2))
    b.add_shape_cylinder(cylinder, xform=wp.transform(tuple(offset), along_y), radius=radius, half_height=0.15, cfg=cfg)
    b.add_articulation([b.add_joint_free(box)])
    b.add_articulation([b.add_joint_free(cylinder)])
    return Run(b.finalize(), qd0=[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13.0, 0], park_distant_contacts=park)


def test_cylinder_spinning_off_its_origin_rests_on_a_free_box():
    """Two dynamic bodies: the offsets of both sides enter the contact (``Δt (u_1 − u_0)``): the spinning
    cylinder and the box under it stay put (within 1 mm, 0.01 m/s)."""
    run = spinning_cylinder_on_a_box(park=True, gap=0.0)
    climbs = []
    for _ in range(60):
        qd = run.step(0.01).joint_qd.numpy()
        climbs.append(max(abs(qd[2]), abs(qd[8])))
    assert max(climbs) < 0.01 and abs(run.q[2] - 0.1) < 1e-3


def test_parked_contacts_see_the_offsets_of_a_spinning_body():
    """The cylinder 3 mm above the box: its contact starts in the detection gap and is parked for two steps, then
    acts. Parked contacts are judged from the body twists, which carry the position update's offsets (0.5 m/s
    here) as the rows do: the steps match those without parking to 1e-5."""
    runs = {}
    for park in (True, False):
        run = spinning_cylinder_on_a_box(park, gap=0.003)
        run.step(0.01, 30)
        runs[park] = run.q.copy()
    np.testing.assert_allclose(runs[True], runs[False], atol=1e-5)


def test_box_on_a_mesh_conveyor_accelerates_at_mu_g_to_the_belt_speed():
    """A static mesh whose surface moves at 1 m/s along x (Newton's ``enable_surface_velocity``; the pipeline writes
    ``rigid_contact_surface_velocity``) carries a box resting on it: the box slips, accelerating at μ g (within 2 %)
    once it slides on the belt (the sudden 1 m/s slip first lifts it, SAP's gliding artefact: README), then rides at
    the belt's speed (within 1e-3) on the belt; the surface velocity's normal part (0.3 m/s here) is ignored, as
    Newton's solvers do. Before SAP read it, the box stayed put."""
    mu, half = 0.5, 0.1
    vertices = np.array([[-3.0, -3.0, 0.0], [3.0, -3.0, 0.0], [3.0, 3.0, 0.0], [-3.0, 3.0, 0.0]], np.float32)
    belt = newton.Mesh(vertices, np.array([0, 1, 2, 0, 2, 3], np.int32), compute_inertia=False,
                       enable_surface_velocity=True)  # fmt: skip
    b = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu)
    b.add_shape_mesh(body=-1, mesh=belt, cfg=cfg)
    box = b.add_link(xform=wp.transform((0.0, 0.0, half), wp.quat_identity()), mass=1.0,
                     inertia=wp.mat33(np.eye(3) * (2.0 / 3.0) * half**2))  # fmt: skip
    b.add_shape_box(box, hx=half, hy=half, hz=half, cfg=newton.ModelBuilder.ShapeConfig(mu=mu, density=0.0))
    b.add_articulation([b.add_joint_free(box)])
    model = b.finalize()
    belt.mesh.velocities.fill_(wp.vec3(1.0, 0.0, 0.3))
    dt = 0.005
    run = Run(model)
    speeds = np.array([run.step(dt).joint_qd.numpy()[:3].copy() for _ in range(80)])
    sliding = (speeds[:, 0] > 0.5) & (speeds[:, 0] < 0.95)
    accel = np.polyfit(dt * np.nonzero(sliding)[0], speeds[sliding, 0], 1)[0]
    assert abs(accel - mu * G) < 0.02 * mu * G
    assert abs(speeds[-1, 0] - 1.0) < 1e-3 and abs(speeds[-1, 2]) < 1e-3 and abs(run.q[2] - half) < 1e-3
    assert np.all(run.converged)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_stack_of_five_boxes_stands_for_ten_seconds(approximation):
    dt = 0.01
    run = Run(box_on_ground(boxes=5, mu=0.5), contact_approximation=approximation)
    run.step(dt, 50)
    settled = run.q.reshape(5, 7)[:, :3].copy()
    run.step(dt, 1000)
    drift = np.abs(run.q.reshape(5, 7)[:, :3] - settled).max()
    assert drift < 1e-3, drift
    assert np.all(run.converged)
    assert np.mean(run.iterations) < 10


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_dropped_humanoid_comes_to_rest(approximation):
    robot = newton.ModelBuilder()
    robot.add_mjcf(
        newton.examples.get_asset("nv_humanoid.xml"),
        xform=wp.transform((0.0, 0.0, 1.5), wp.quat_identity()),  # the file's root sits at z = 0
        floating=True,
        enable_self_collisions=False,
    )
    robot.add_ground_plane()
    model = robot.finalize()
    run = Run(model, contact_approximation=approximation)
    run.step(0.01, 300)  # its joint limits hold it up a while: it lands after about 2 s
    assert np.all(np.isfinite(run.q)) and np.all(run.converged)
    assert np.abs(run.qd).max() < 0.5
    assert 0.0 < run.q[2] < 0.5  # lying on the ground, not sunk, not launched
    run.pipeline.collide(run.s0, run.contacts)
    distances = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts).contact_distance[0]
    assert distances.min() > -3e-3  # the default contact stiffness keeps penetration to millimetres


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("line_search", ["exact", "backtracking"])
def test_momentum_mode_gives_the_same_answer(line_search, approximation):
    runs = [
        Run(box_on_ground(boxes=3, mu=0.5), qd0=[0.5, 0, 0, 0, 0, 1.0] * 3, momentum_mode=m, line_search=line_search,
            contact_approximation=approximation)
        for m in (False, True)
    ]  # fmt: skip
    for run in runs:
        run.step(0.01, 30)
    assert np.abs(runs[0].q - runs[1].q).max() < 1e-4
    assert np.abs(runs[0].qd - runs[1].qd).max() < 1e-3
