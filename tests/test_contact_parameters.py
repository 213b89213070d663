"""Each contact parameter reaches the contact model: closed forms in which it appears (SAP.md §3-§4).

Materials (``contact_stiffness=None``): stiffness in series, dissipation times added, friction by the
harmonic mean. Options: ``contact_dissipation_time`` and β = 0 in one step's normal impulse, the near-rigid
cap ``β² w / (4π²)`` with the Delassus estimate of a sphere, σ in the stiction creep, the tolerances in the
Newton iterations. And a contact in the detection gap exerts nothing until the step closes it.
"""

import newton
import numpy as np
import pytest
import warp as wp

from contact_scenes import G, Run, box_on_ground, box_stack_builder, incline_gravity, sphere_bin, sphere_on_ground

RADIUS = 0.1
MASS = 1.0


def sphere_and_ground(sphere_cfg, ground_cfg, height, gravity=(0.0, 0.0, -G)):
    """A solid sphere of ``RADIUS`` and ``MASS`` (free joint) at ``height`` above a ground plane."""
    b = newton.ModelBuilder(gravity=gravity)
    b.add_ground_plane(cfg=ground_cfg)
    body = b.add_body(xform=wp.transform((0.0, 0.0, height), wp.quat_identity()))
    sphere_cfg.density = MASS / (4.0 / 3.0 * np.pi * RADIUS**3)
    b.add_shape_sphere(body, radius=RADIUS, cfg=sphere_cfg)
    return b.finalize()


def test_material_stiffness_acts_in_series():
    """``contact_stiffness=None``: ke = 1e4 on the sphere, 3e4 on the ground, β = 0: the resting
    penetration is m g / k with k = 1 / (1/1e4 + 1/3e4) = 7500 N/m (within 1 %; the parallel sum would
    give 4e4, the larger one 3e4)."""
    cfg = newton.ModelBuilder.ShapeConfig
    model = sphere_and_ground(cfg(ke=1e4, kd=1e2, mu=0.5), cfg(ke=3e4, kd=3e2, mu=0.5), height=RADIUS)
    run = Run(model, contact_stiffness=None, contact_dissipation_time=None, near_rigid_threshold=0.0)
    run.step(0.01, 300)
    expected = MASS * G / 7500.0
    assert abs((RADIUS - run.q[2]) - expected) < 0.01 * expected
    assert np.all(run.converged)


def test_material_friction_is_the_harmonic_mean():
    """μ = 0.3 on the box, 0.9 on the ground: the pair's μ = 2·0.3·0.9/1.2 = 0.45, and a box sliding at
    2 m/s stops after v0² / (2 μ g) (within 3 %; the larger μ would halve the distance)."""
    b = newton.ModelBuilder()
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=0.9))
    half = 0.1
    body = b.add_body(xform=wp.transform((0.0, 0.0, half), wp.quat_identity()))
    b.add_shape_box(body, hx=half, hy=half, hz=half, cfg=newton.ModelBuilder.ShapeConfig(mu=0.3, density=125.0))
    run = Run(b.finalize(), qd0=[2.0, 0, 0, 0, 0, 0])
    x0 = run.q[0]
    run.step(5e-3, 160)
    expected = 2.0**2 / (2 * 0.45 * G)
    assert abs(run.qd[0]) < 1e-3
    assert abs((run.q[0] - x0) - expected) < 0.03 * expected


@pytest.mark.parametrize("dissipation_time", [0.005, 0.05])
def test_one_step_normal_impulse_follows_the_linear_law(dissipation_time):
    """β = 0, a sphere 1 mm into the ground moving down at 0.2 m/s: one step's impulse is
    ``γ_n = Δt k (−φ0 − (Δt + τ_d) v1)`` with ``v1 = v0 − g Δt + γ_n / m``, so
    ``v1 = (m (v0 − g Δt) − Δt k φ0) / (m + Δt k (Δt + τ_d))`` (to 1e-4 relative)."""
    dt, k, phi0, v0 = 0.01, 1e4, -1e-3, -0.2
    cfg = newton.ModelBuilder.ShapeConfig
    model = sphere_and_ground(cfg(mu=0.5), cfg(mu=0.5), height=RADIUS + phi0)
    run = Run(model, qd0=[0, 0, v0, 0, 0, 0], contact_stiffness=k, contact_dissipation_time=dissipation_time,
              near_rigid_threshold=0.0)  # fmt: skip
    run.step(dt)
    expected = (MASS * (v0 - G * dt) - dt * k * phi0) / (MASS + dt * k * (dt + dissipation_time))
    assert run.qd[2] == pytest.approx(expected, rel=1e-4)


def test_per_contact_properties_replace_the_pairs():
    """Contacts with Newton's per-contact properties (its pipeline fills them for hydroelastic shapes; here set
    by hand): stiffness 5e3 N/m replaces the solver's 1e6, so a sphere rests m g / k deep (β = 0, within 1 %);
    damping d makes τ_d = d / k in one step's normal impulse (the linear law above, to 1e-4); a friction scale
    0.6 turns the pair's μ = 0.5 into 0.3, and a box slid at 2 m/s stops after v0² / (2 μ g) (within 3 %)."""
    cfg = newton.ModelBuilder.ShapeConfig
    k = 5e3
    resting = Run(sphere_and_ground(cfg(mu=0.5), cfg(mu=0.5), height=RADIUS), per_contact=(k, 0.0, 0.0),
                  near_rigid_threshold=0.0)  # fmt: skip
    resting.step(0.01, 300)
    assert abs((RADIUS - resting.q[2]) - MASS * G / k) < 0.01 * MASS * G / k
    dt, tau, phi0, v0 = 0.01, 0.05, -1e-3, -0.2
    impact = Run(sphere_and_ground(cfg(mu=0.5), cfg(mu=0.5), height=RADIUS + phi0), qd0=[0, 0, v0, 0, 0, 0],
                 per_contact=(k, tau * k, 0.0), near_rigid_threshold=0.0)  # fmt: skip
    impact.step(dt)
    assert impact.qd[2] == pytest.approx(
        (MASS * (v0 - G * dt) - dt * k * phi0) / (MASS + dt * k * (dt + tau)), rel=1e-4
    )
    sliding = Run(box_on_ground(mu=0.5), qd0=[2.0, 0, 0, 0, 0, 0], per_contact=(0.0, 0.0, 0.6))
    x0 = sliding.q[0]
    sliding.step(5e-3, 180)
    expected = 2.0**2 / (2 * 0.3 * G)
    assert abs(sliding.qd[0]) < 1e-3
    assert abs((sliding.q[0] - x0) - expected) < 0.03 * expected


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_near_rigid_threshold_caps_the_normal_compliance(beta):
    """k = 1e9 N/m, far stiffer than the step resolves: ``R_n = β² w / (4π²)`` with the Delassus estimate
    of a sphere's contact ``w = ‖J A⁻¹ Jᵀ‖_F / 3`` (``J A⁻¹ Jᵀ = diag(1/m + r²/I, 1/m + r²/I, 1/m)``,
    I = 2/5 m r²). At rest ``γ_n = m g Δt = v̂_n / R_n`` with ``v̂_n = −φ0 / (Δt + τ_d)``, so the
    penetration is ``m g Δt (Δt + τ_d) R_n`` (within 1 %)."""
    dt, tau = 0.01, 0.02
    model = sphere_on_ground(radius=RADIUS, mass=MASS, height=RADIUS)
    run = Run(model, contact_stiffness=1e9, contact_dissipation_time=tau, near_rigid_threshold=beta)
    run.step(dt, 200)
    tangential = 1.0 / MASS + RADIUS**2 / (0.4 * MASS * RADIUS**2)
    w = np.sqrt(2.0 * tangential**2 + (1.0 / MASS) ** 2) / 3.0
    expected = MASS * G * dt * (dt + tau) * beta**2 * w / (4.0 * np.pi**2)
    assert abs((RADIUS - run.q[2]) - expected) < 0.01 * expected


@pytest.mark.parametrize("dt", [0.005, 0.01])
def test_near_rigid_time_step_gives_one_resting_penetration(dt):
    """With ``near_rigid_time_step`` Δt_r the near-rigid cap acts as a stiffness ``k_r = 4π² / (β² w Δt_r (Δt_r +
    τ_d))`` at every Δt ≤ Δt_r: the resting sphere of the test above sinks by ``m g / k_r`` (within 1 %) at both steps,
    where without it the penetration follows Δt (``m g Δt (Δt + τ_d) β² w / 4π²``: 3× apart at these two)."""
    reference, tau = 0.02, 0.02
    model = sphere_on_ground(radius=RADIUS, mass=MASS, height=RADIUS)
    run = Run(model, contact_stiffness=1e9, contact_dissipation_time=tau, near_rigid_time_step=reference)
    run.step(dt, round(2.0 / dt))
    tangential = 1.0 / MASS + RADIUS**2 / (0.4 * MASS * RADIUS**2)
    w = np.sqrt(2.0 * tangential**2 + (1.0 / MASS) ** 2) / 3.0
    expected = MASS * G * reference * (reference + tau) * w / (4.0 * np.pi**2)
    assert abs((RADIUS - run.q[2]) - expected) < 0.01 * expected


def test_stiction_creep_is_proportional_to_sigma():
    """A box sticking on a 20° incline (μ = 0.5) creeps at ``v_t = R_t γ_t`` with ``R_t = σ w``: ten times
    σ, ten times the creep (within 5 %)."""
    creep = []
    for sigma in (1e-3, 1e-2):
        run = Run(box_on_ground(mu=0.5, gravity=incline_gravity(20.0)), friction_regularization=sigma)
        run.step(0.01, 100)
        x0 = run.q[0]
        run.step(0.01, 100)
        creep.append((run.q[0] - x0) / (100 * 0.01))  # [m/s]
    assert creep[0] > 0.0
    assert creep[1] / creep[0] == pytest.approx(10.0, rel=0.05)


def test_gap_contact_exerts_nothing_until_the_step_closes_it():
    """No gravity; a sphere 3 cm above the ground (inside Newton's detection gap) moving down at 1 m/s
    flies freely (velocity exactly −1 m/s) for the three steps of 0.01 s that bring it to the surface,
    with a dissipation time of 0.05 s that would brake it 5 cm early under ``v̂_n = −φ0 / (Δt + τ_d)``; the
    next step stops it within a millimetre of penetration."""
    cfg = newton.ModelBuilder.ShapeConfig
    model = sphere_and_ground(cfg(mu=0.5), cfg(mu=0.5), height=RADIUS + 0.03, gravity=(0.0, 0.0, 0.0))
    run = Run(model, qd0=[0, 0, -1.0, 0, 0, 0], contact_dissipation_time=0.05)
    for k in range(3):
        run.step(0.01)
        assert run.solver.stats.num_contacts[0] == 1
        assert run.qd[2] == pytest.approx(-1.0, abs=1e-6)
        assert run.q[2] == pytest.approx(RADIUS + 0.03 - 0.01 * (k + 1), abs=1e-6)
    run.step(0.01)
    assert abs(run.qd[2]) < 0.1
    assert run.q[2] > RADIUS - 1e-3


def test_tolerances_set_the_newton_iterations():
    """A landing pile: a relative tolerance of 1e-2 stops earlier than the default 1e-6; an absolute
    tolerance above every residual stops at the warm start (0 iterations)."""
    iterations = {}
    for name, options in (("default", {}), ("loose", {"rel_tolerance": 1e-2}), ("abs", {"abs_tolerance": 1e6})):
        run = Run(sphere_bin(8), **options)
        run.step(0.01, 30)
        iterations[name] = np.sum(run.iterations)
    assert iterations["loose"] < iterations["default"]
    assert iterations["abs"] == 0


def test_momentum_mode_iterates_where_the_v_star_mode_adopts_free_motion():
    """A falling box (no constraint): the v* mode adopts ``v = v*`` (0 Newton iterations), the momentum mode,
    which never forms v*, takes one exact Newton step of its quadratic cost; both give ``v = −g Δt`` per step."""
    for momentum, expected in ((False, 0), (True, 1)):
        run = Run(box_stack_builder(lift=1.0).finalize(), momentum_mode=momentum)
        run.step(0.01, 3)
        assert [int(i[0]) for i in run.iterations] == [expected] * 3
        assert run.qd[2] == pytest.approx(-3 * 0.01 * G, rel=1e-5)


def test_shape_margin_offsets_the_contact_surface():
    """Newton's shape ``margin`` extends a shape's contact surface outward (its other solvers rest shapes
    ``margin_0 + margin_1`` apart): a sphere with a 1 cm margin rests 1 cm higher, less m g / k (β = 0)."""
    k = 1e4
    cfg = newton.ModelBuilder.ShapeConfig
    model = sphere_and_ground(cfg(mu=0.5, margin=0.01), cfg(mu=0.5), height=RADIUS + 0.01)
    run = Run(model, contact_stiffness=k, near_rigid_threshold=0.0)
    run.step(0.01, 300)
    expected = RADIUS + 0.01 - MASS * G / k
    assert abs(run.q[2] - expected) < 0.01 * MASS * G / k
