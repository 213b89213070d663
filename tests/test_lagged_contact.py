"""The lagged contact (``contact_approximation="lagged"``) against closed forms and finite differences of its
cost; its whole scenes run in ``test_contact_scenes.py`` beside SAP's."""

import numpy as np
import pytest
import warp as wp
from sap_reference import lagged_contact_impulse

from newton_sap.constraints.dispatch import (
    CONTACT_LAGGED,
    constraint_predicts_stiction,
    stiction_branch_impulse,
)
from newton_sap.constraints.lagged_contact import lagged_normal_impulse

from contact_scenes import G, Run, box_on_ground, evaluate_rows, incline_gravity

R = np.array([1e-3, 1e-3, 0.0253])  # [kg⁻¹] R_t, R_t, R_n
V_HAT = np.array([0.01, -0.02, 0.0833])  # [m/s] a tangential part as a kinematic or conveyor surface gives


def evaluate(v_c, limit):
    n = len(v_c)
    return evaluate_rows(CONTACT_LAGGED, v_c, [V_HAT] * n, [R] * n, limit)


def random_cases(region, n, rng):
    """``n`` velocities [m/s] with friction bounds, their unprojected impulse ``y = R⁻¹ (v̂ − v)`` well inside one
    region of the friction (stiction ``‖y_t‖ < 0.9 F``, sliding ``‖y_t‖ > 1.1 F``, or no bound F) and of the normal
    (pressed ``y_n > 0.2``, open ``y_n < −0.2``), so that central differences stay in it."""
    friction, normal = region.split("-")
    cases = []
    for _ in range(n):
        limit = 0.0 if friction == "none" else rng.uniform(0.5, 5.0)
        ratio = {"stiction": rng.uniform(0.0, 0.9), "sliding": rng.uniform(1.1, 50.0), "none": rng.uniform(0.0, 50.0)}
        angle = rng.uniform(0.0, 2.0 * np.pi)
        y_t = ratio[friction] * max(limit, 1.0) * np.array([np.cos(angle), np.sin(angle)])
        y_n = rng.uniform(0.2, 50.0) * (1.0 if normal == "pressed" else -1.0)
        cases.append((V_HAT - R * np.array([*y_t, y_n]), limit))
    return cases


REGIONS = ["stiction-pressed", "stiction-open", "sliding-pressed", "sliding-open", "none-pressed", "none-open"]


@pytest.mark.parametrize("region", REGIONS)
def test_impulse_and_hessian_are_derivatives_of_the_cost(region):
    """γ = −∂ℓ/∂v_c and G = −∂γ/∂v_c by central differences, γ against the float64 projection, G symmetric PSD;
    friction acts whether the normal is pressed or open (its bound is the start's), and none without a bound."""
    rng = np.random.default_rng(REGIONS.index(region))
    h = 1e-5
    for v, limit in random_cases(region, 20, rng):
        probes = [v]
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            probes += [v + e, v - e]
        gamma, Gs, cost = evaluate(probes, [limit] * 7)
        fd_gamma = np.array([-(cost[1 + 2 * k] - cost[2 + 2 * k]) / (2 * h) for k in range(3)])
        fd_G = np.stack([-(gamma[1 + 2 * k] - gamma[2 + 2 * k]) / (2 * h) for k in range(3)], axis=1)
        scale_g = max(np.abs(gamma[0]).max(), 1.0)
        scale_G = max(np.abs(Gs[0]).max(), 1.0)
        np.testing.assert_allclose(
            gamma[0], lagged_contact_impulse(v, V_HAT, R, limit)[0], rtol=1e-5, atol=1e-5 * scale_g
        )
        assert np.abs(fd_gamma - gamma[0]).max() < 2e-2 * scale_g, (region, v, limit)
        assert np.abs(fd_G - Gs[0]).max() < 2e-2 * scale_G, (region, v, limit)
        assert np.allclose(Gs[0], Gs[0].T, atol=1e-5 * scale_G)
        assert np.linalg.eigvalsh(Gs[0]).min() > -1e-5 * scale_G
        if region.startswith("none"):
            assert gamma[0][0] == 0.0 and gamma[0][1] == 0.0
        if region.endswith("open"):
            assert gamma[0][2] == 0.0


@wp.kernel
def _normal_impulse(
    phi0: wp.array(dtype=float),
    dt: float,
    last_dt: float,
    tau: float,
    last_R_n: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    i = wp.tid()
    out[i] = lagged_normal_impulse(phi0[i], dt, last_dt, tau, last_R_n[i])


@pytest.mark.parametrize("last_dt", [0.01, 0.005, 0.02])
def test_friction_bound_is_the_elastic_impulse_at_the_start_penetration(last_dt):
    """``n0 = Δt k x0`` [N·s] with the stiffness k behind the last step's R_n (Δt_l = ``last_dt``): the compliant
    ``R_n = 1 / (Δt_l k (Δt_l + τ_d))`` and a near-rigid one (its k smaller than the contact's); 0 without
    penetration."""
    dt, tau = 0.01, 0.02
    k = np.array([3e5, 3e5, 3e5, 3e5, 2e3, 2e3])
    R_n = 1.0 / (last_dt * k * (last_dt + tau))
    phi0 = np.array([-2e-3, -1e-5, 1e-3, 0.0, -2e-3, -4e-2])
    out = wp.zeros(len(phi0), dtype=float)
    wp.launch(_normal_impulse, dim=len(phi0), inputs=[wp.array(phi0, dtype=float), dt, last_dt, tau,
                                                      wp.array(R_n, dtype=float)], outputs=[out])  # fmt: skip
    expected = dt * k * np.maximum(-phi0, 0.0)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-12)


def test_cost_is_continuous_and_convex_across_the_regions():
    """ℓ has no jump at the stiction disk's edge or where the normal opens (a constant left out of one branch
    passes the finite differences), and is convex along random segments that cross the regions."""
    limit = 2.0
    edge = limit * R[0]  # the slip at the disk's edge [m/s]
    tangent = np.array([0.6, 0.8])
    probes = []
    for side in (1.0 - 1e-4, 1.0 + 1e-4):  # the disk's edge, normal pressed
        probes.append(np.array([*(V_HAT[:2] - side * edge * tangent), V_HAT[2] - 0.01]))
    for dn in (-1e-7, 1e-7):  # the normal's edge, sliding
        probes.append(np.array([*(V_HAT[:2] - 0.1 * tangent), V_HAT[2] + dn]))
    _gamma, _G, cost = evaluate(probes, [limit] * 4)
    assert abs(cost[1] - cost[0]) < 1e-3 * cost[0] and abs(cost[3] - cost[2]) < 1e-3 * cost[2]
    rng = np.random.default_rng(5)
    a = V_HAT + rng.normal(0.0, [3 * edge, 3 * edge, 0.01], (400, 3))
    b = V_HAT + rng.normal(0.0, [3 * edge, 3 * edge, 0.01], (400, 3))
    _g, _G, c = evaluate(np.concatenate([a, b, 0.5 * (a + b)]), [limit] * 1200)
    ends = 0.5 * (c[:400] + c[400:800])
    assert np.all(c[800:] <= ends + 1e-6 * np.maximum(ends, 1e-9))


@wp.kernel
def _prediction(
    v_c: wp.array(dtype=wp.vec3),
    dv_c: wp.array(dtype=wp.vec3),
    v_hat: wp.vec3,
    R: wp.vec3,
    limit: float,
    predicted: wp.array(dtype=int),
    gamma_out: wp.array(dtype=wp.vec3),
    G_out: wp.array(dtype=wp.mat33),
):
    i = wp.tid()
    predicted[i] = constraint_predicts_stiction(CONTACT_LAGGED, v_c[i], dv_c[i], v_hat, R, limit)
    g, G = stiction_branch_impulse(CONTACT_LAGGED, v_c[i], v_hat, R, limit)
    gamma_out[i] = g
    G_out[i] = G


def test_stiction_prediction_and_its_model():
    """A sliding contact (slip 0.1 m/s, stiction below 2 mm/s) is predicted to stick when the step ends its slip
    inside the disk or reverses it, not when it slides on or already sticks; its model takes the friction's linear
    branch ``γ_t = −s / R_t``, ``G_t = I / R_t`` and keeps the normal as it is."""
    limit = 2.0  # [N·s]: the disk's slip radius is limit R_t = 2 mm/s
    v_t = V_HAT[:2]
    v_c = np.array([[*(v_t + [0.1, 0.0]), 0.0]] * 4 + [[*(v_t + [1e-3, 0.0]), 0.0]])
    dv_c = np.array([[-0.1, 0.0, 0.0], [-0.2, 0.0, 0.0], [-0.05, 0.0, 0.0], [0.0, 0.3, 0.0], [-0.2, 0.0, 0.0]])
    n = len(v_c)
    predicted, gamma, Gs = wp.zeros(n, dtype=int), wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.mat33)
    inputs = [wp.array(v_c, dtype=wp.vec3), wp.array(dv_c, dtype=wp.vec3), wp.vec3(*V_HAT), wp.vec3(*R), limit]
    wp.launch(_prediction, dim=n, inputs=inputs, outputs=[predicted, gamma, Gs])
    assert predicted.numpy().tolist() == [1, 1, 0, 0, 0]
    exact, _G, _cost = evaluate(v_c, [limit] * n)
    np.testing.assert_allclose(gamma.numpy()[:, :2], (V_HAT[:2] - v_c[:, :2]) / R[0], rtol=1e-5)
    np.testing.assert_allclose(gamma.numpy()[:, 2], exact[:, 2], rtol=1e-6)
    np.testing.assert_allclose(Gs.numpy()[0], np.diag([1 / R[0], 1 / R[0], 1 / R[2]]), rtol=1e-6)


@pytest.mark.parametrize("momentum_mode", [False, True])
def test_resting_box_friction_bound_is_mu_m_g_dt(momentum_mode):
    """A 2 kg box resting on the ground: its contacts' friction bounds (the snapshot's ``contact_friction``) sum to
    ``μ m g Δt``, the normal impulse that holds it (within 1 %), and its step leaves it at rest."""
    mu, mass, dt = 0.4, 2.0, 0.01
    run = Run(box_on_ground(mu=mu, mass=mass), contact_approximation="lagged", momentum_mode=momentum_mode)
    run.step(dt, 100)
    run.pipeline.collide(run.s0, run.contacts)
    snap = run.solver.snapshot(run.s0, dt=dt, contacts=run.contacts)
    bound = snap.contact_friction[0].sum()
    assert abs(bound - mu * mass * G * dt) < 0.01 * mu * mass * G * dt
    assert abs(snap.contact_impulse[0][:, 2].sum() - mass * G * dt) < 0.01 * mass * G * dt
    assert np.abs(run.qd).max() < 1e-4


@pytest.mark.parametrize("new_dt", [0.005, 0.02])
def test_friction_bound_after_a_change_of_dt(new_dt):
    """A 2 kg box rested at Δt = 0.01 (near-rigid contacts, whose compliance does not depend on Δt, so the resting
    penetration scales with Δt (Δt + τ_d)), then a step at ``new_dt``: the bounds sum to ``μ m g Δt`` of the new step
    within 1 % (from the last step's stiffness, ``SolverSAP`` keeps its Δt; with this step's they were 2.4 and 0.375
    times that)."""
    mu, mass = 0.4, 2.0
    run = Run(box_on_ground(mu=mu, mass=mass), contact_approximation="lagged")
    run.step(0.01, 100)
    run.pipeline.collide(run.s0, run.contacts)
    R_n_last = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts).contact_compliance[0][:, 2]
    snap = run.solver.snapshot(run.s0, dt=new_dt, contacts=run.contacts)
    np.testing.assert_allclose(snap.contact_compliance[0][:, 2], R_n_last, rtol=1e-6)  # capped: the same R_n
    bound = snap.contact_friction[0].sum()
    assert abs(bound - mu * mass * G * new_dt) < 0.01 * mu * mass * G * new_dt


def test_box_on_an_incline_holds_when_dt_doubles():
    """A box sticking on a 20° incline (μ = 0.5, the grip needs 0.73 of the bound) stepped at Δt = 0.01, then 5 steps
    at 0.02: it creeps 0.12 mm (SAP's cone 0.03 mm); with the bound from this step's stiffness (0.375 of m g Δt μ) it
    slid 2.1 mm."""
    run = Run(box_on_ground(mu=0.5, gravity=incline_gravity(20.0)), contact_approximation="lagged")
    run.step(0.01, 100)
    x0 = run.q[0]
    run.step(0.02, 5)
    assert abs(run.q[0] - x0) < 3e-4
