"""The lagged contact (``contact_approximation="lagged"``): its impulse and Hessian are derivatives of its cost in
every region, and whole scenes meet the closed forms of SAP.md §8 without SAP's gliding."""

import numpy as np
import pytest
import warp as wp

from newton_sap.constraints.lagged_contact import lagged_contact_impulse, lagged_friction_bound

from contact_scenes import G, Run, box_on_ground, incline_gravity, sphere_on_ground
from cost_derivatives import assert_derivatives_of_cost

R = np.array([1e-3, 1e-3, 0.0253])  # SAP.md §3's known-answer compliances [kg⁻¹] (near-rigid R_n)
V_HAT = np.array([0.0, 0.0, 0.0833])  # [m/s]
LAGGED = {"contact_approximation": "lagged"}


@wp.kernel
def _evaluate(
    v_c: wp.array(dtype=wp.vec3),
    v_hat: wp.array(dtype=wp.vec3),
    R: wp.array(dtype=wp.vec3),
    bound: wp.array(dtype=float),
    gamma_out: wp.array(dtype=wp.vec3),
    G_out: wp.array(dtype=wp.mat33),
    cost_out: wp.array(dtype=float),
):
    i = wp.tid()
    g, G, c = lagged_contact_impulse(v_c[i], v_hat[i], R[i], bound[i])
    gamma_out[i] = g
    G_out[i] = G
    cost_out[i] = c


def evaluate(v_c, bound):
    n = len(v_c)
    out = wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.mat33), wp.zeros(n, dtype=float)
    arrays = [wp.array(np.asarray(x, np.float32), dtype=wp.vec3) for x in (v_c, [V_HAT] * n, [R] * n)]
    wp.launch(_evaluate, dim=n, inputs=[*arrays, wp.array(np.full(n, bound, np.float32))], outputs=list(out))
    return [o.numpy().astype(np.float64) for o in out]


@wp.kernel
def _bound(mu: float, v_n0: float, out: wp.array(dtype=float)):
    out[0] = lagged_friction_bound(mu, v_n0, 0.0833, 0.0253)


def test_bound_is_mu_times_the_start_normal_impulse():
    """``b = μ max(0, (v̂_n − v_n0) / R_n)``: at rest the compliant law's impulse, more when approaching, none
    when the start velocity already separates faster than v̂_n."""
    for mu, v_n0, expected in ((0.5, 0.0, 0.5 * 0.0833 / 0.0253), (0.5, -0.2, 0.5 * 0.2833 / 0.0253), (0.5, 0.1, 0.0)):
        out = wp.zeros(1, dtype=float)
        wp.launch(_bound, dim=1, inputs=[mu, v_n0], outputs=[out])
        np.testing.assert_allclose(out.numpy()[0], expected, rtol=1e-5)


def in_region(region, v, bound):
    """Whether contact velocity ``v`` lies well inside ``region`` (so finite differences stay in it)."""
    y = (V_HAT - v) / R
    y_r = np.linalg.norm(y[:2])
    normal_margin, slip_margin = 0.05 * abs(y[2]) + 0.1, 0.05 * bound + 0.1
    pressing, separated = y[2] > normal_margin, y[2] < -normal_margin
    sticking, sliding = y_r < bound - slip_margin, y_r > bound + slip_margin and y_r > 10.0
    return {
        "stiction": pressing and sticking,
        "sliding": pressing and sliding,
        "separated, sticking": separated and sticking,
        "separated, sliding": separated and sliding,
    }[region]


@pytest.mark.parametrize("region", ["stiction", "sliding", "separated, sticking", "separated, sliding"])
def test_impulse_and_hessian_are_derivatives_of_the_cost(region):
    """γ = −∂ℓ/∂v_c and G = −∂γ/∂v_c by central differences (float32 kernels, step 1e-4 m/s) in each
    combination of the normal (pressing or not) and the friction (sticking or sliding) parts; G symmetric PSD;
    the friction impulse within its bound, the normal one non-negative."""
    rng = np.random.default_rng(
        sorted(["stiction", "sliding", "separated, sticking", "separated, sliding"]).index(region)
    )
    done = 0
    while done < 20:
        bound = rng.uniform(0.5, 5.0)
        v = rng.uniform(-0.3, 0.3, 3) * (0.005 if "sticking" in region or region == "stiction" else 1.0)
        v[2] = rng.uniform(-0.3, 0.3)
        if not in_region(region, v, bound):
            continue
        gamma, _ = assert_derivatives_of_cost(
            lambda probes, bound=bound: evaluate(probes, bound), v, context=(region, v, bound)
        )
        assert np.linalg.norm(gamma[:2]) <= bound * (1 + 1e-6) and gamma[2] >= 0.0
        done += 1


@pytest.mark.parametrize("dt", [0.005, 0.01])
def test_sliding_box_stays_on_the_ground_and_stops_at_the_coulomb_distance(dt):
    """2 m/s, μ = 0.5: with the lagged friction the box does not leave the ground (SAP's cone lifts it at
    ``μ |v_t|``, ``test_contact_scenes``), and stops after ``v0²/(2 μ g)`` within 3 %. It starts touching:
    no normal impulse at the start, hence no friction in the first step."""
    run = Run(box_on_ground(mu=0.5), qd0=[2.0, 0, 0, 0, 0, 0], **LAGGED)
    x0, lift = run.q[0], 0.0
    for _ in range(int(0.8 / dt)):
        run.step(dt)
        lift = max(lift, run.q[2] - 0.1)
    expected = 2.0**2 / (2 * 0.5 * G)
    assert lift < 1e-4
    assert abs(run.qd[0]) < 1e-3
    assert abs((run.q[0] - x0) - expected) < 0.03 * expected
    assert np.all(run.converged)


def test_sliding_box_decelerates_at_mu_g_once_settled():
    """On a settled box the bound is the resting normal impulse: set sliding, it decelerates at μ g (1 %)."""
    dt = 0.01
    run = Run(box_on_ground(mu=0.5), **LAGGED)
    run.step(dt, 30)
    q = run.s0.joint_qd.numpy()
    q[0] = 2.0
    run.s0.joint_qd.assign(q)
    run.step(dt, 2)
    v1 = run.qd[0]
    run.step(dt, 20)
    np.testing.assert_allclose((v1 - run.qd[0]) / (20 * dt), 0.5 * G, rtol=1e-2)


def test_sphere_thrown_without_spin_ends_rolling_at_five_sevenths():
    """A solid sphere sliding at v0 without spin rolls at 5/7 v0 after 2 v0 / (7 μ g) (within 1 %)."""
    v0, mu, radius = 2.0, 0.3, 0.1
    run = Run(sphere_on_ground(radius=radius, mass=1.0, height=radius, mu=mu), qd0=[v0, 0, 0, 0, 0, 0], **LAGGED)
    run.step(5e-3, int(2 * 2 * v0 / (7 * mu * G) / 5e-3))
    assert abs(run.qd[0] - 5.0 / 7.0 * v0) < 0.01 * 5.0 / 7.0 * v0
    assert abs(run.qd[4] * radius - run.qd[0]) < 0.01 * v0
    assert abs(run.q[2] - radius) < 1e-3  # on the ground throughout
    assert np.all(run.converged)


def test_box_sticks_on_20_and_slides_on_30_degrees():
    """tan 20° < μ = 0.5: the box sticks (creep below 10 σ Δt g); tan 30° > μ = 0.3: it slides with
    ``a = g (sin θ − μ cos θ)`` (within 2 %)."""
    dt = 0.01
    run = Run(box_on_ground(mu=0.5, gravity=incline_gravity(20.0)), **LAGGED)
    run.step(dt, 100)
    x0 = run.q[0]
    run.step(dt, 100)
    assert abs(run.q[0] - x0) < 10 * 1e-3 * dt * G
    dt = 0.005
    run = Run(box_on_ground(mu=0.3, gravity=incline_gravity(30.0)), **LAGGED)
    run.step(dt, 40)
    v1 = run.qd[0]
    run.step(dt, 100)
    expected = G * (np.sin(np.radians(30)) - 0.3 * np.cos(np.radians(30)))
    assert abs((run.qd[0] - v1) / (100 * dt) - expected) < 0.02 * expected
    assert np.all(run.converged)


def test_cost_is_continuous_at_the_friction_bound():
    """The friction cost's two branches meet at ``‖y_t‖ = b`` (the line searches compare costs across it)."""
    bound = 2.0
    slips = [bound * R[0] * (1.0 + s) for s in (-1e-4, 1e-4)]  # ‖v_t‖ = R_t ‖y_t‖ just inside, just outside
    _, _, cost = evaluate([[slip, 0.0, 0.0] for slip in slips], bound)
    np.testing.assert_allclose(cost[0], cost[1], rtol=1e-3)
