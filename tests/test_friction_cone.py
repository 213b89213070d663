"""The friction-cone constraint against SAP.md's known answers and finite differences of its cost."""

import numpy as np
import pytest
import warp as wp

from newton_sap.constraints.dispatch import CONTACT
from newton_sap.constraints.friction_cone import contact_bias_velocity, contact_compliance, contact_separates

from contact_scenes import evaluate_rows

# SAP.md §3 known-answer parameters
MU, K, TAU_D, BETA, SIGMA, DT, W, PHI0 = 0.5, 3e5, 0.02, 1.0, 1e-3, 0.01, 1.0, -2.5e-3


@wp.kernel
def _parameters(R_out: wp.array(dtype=wp.vec3), v_hat_out: wp.array(dtype=wp.vec3)):
    R_out[0] = contact_compliance(K, TAU_D, DT, BETA, SIGMA, W, -1.0)
    v_hat_out[0] = contact_bias_velocity(PHI0, DT, TAU_D)


def evaluate(v_c, v_hat, R, mu):
    return evaluate_rows(CONTACT, v_c, v_hat, R, mu)


def known_parameters():
    R, v_hat = wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=wp.vec3)
    wp.launch(_parameters, dim=1, outputs=[R, v_hat])
    return R.numpy()[0], v_hat.numpy()[0]


def test_parameters_match_known_values():
    R, v_hat = known_parameters()
    assert np.allclose(R, [1e-3, 1e-3, 0.025330], rtol=1e-4)  # the near-rigid clamp is active on R_n
    assert np.allclose(v_hat, [0.0, 0.0, 0.083333], rtol=1e-4)


@pytest.mark.parametrize(
    "v_c,expected",
    [
        ((1e-4, 0.0, -0.1), (-0.1, 0.0, 7.23771)),
        ((0.1, 0.0, -0.1), (-4.560802, 0.0, 9.121604)),
        ((0.1, -0.2, -0.1), (-2.579899, 5.159798, 11.537659)),
        ((0.1, 0.0, 0.1), (-0.651543, 0.0, 1.303086)),
        ((-0.1, 0.1, 0.2), (0.0, 0.0, 0.0)),
    ],
)
def test_projection_known_answers(v_c, expected):
    R, v_hat = known_parameters()
    gamma, _, _ = evaluate([v_c], [v_hat], [R], [MU])
    assert np.allclose(gamma[0], expected, rtol=1e-5, atol=1e-6)


def random_cases(region, n, rng):
    """Contact velocities that land well inside one region (so finite differences stay in it)."""
    R = np.array([1e-3, 1e-3, 0.0253])
    v_hat = np.array([0.0, 0.0, 0.0833])
    cases = []
    while len(cases) < n:
        reach = 0.015 if region == "stiction" else 0.3  # stiction needs slip below about μ y_n R_t
        v = rng.uniform([-reach] * 3, [reach] * 3)
        mu = rng.uniform(0.1, 1.0)
        y = (v_hat - v) / R
        y_r = np.linalg.norm(y[:2])
        mu_hat = mu * R[0] / R[2]
        margin = 0.05 * (abs(y[2]) + y_r)
        if region == "stiction" and y_r < mu * y[2] - margin:
            cases.append((v, mu))
        elif region == "sliding" and -mu_hat * y_r + margin < y[2] < y_r / mu - margin and y_r > 10.0:
            cases.append((v, mu))
        elif region == "separation" and y[2] < -mu_hat * y_r - margin:
            cases.append((v, mu))
        elif region == "frictionless" and y[2] > margin:
            cases.append((v, 0.0))
    return cases, R, v_hat


@pytest.mark.parametrize("region", ["stiction", "sliding", "separation", "frictionless"])
def test_impulse_and_hessian_are_derivatives_of_the_cost(region):
    """γ = −∂ℓ/∂v_c and G = −∂γ/∂v_c by central differences (float32 kernels, relative step 1e-3)."""
    rng = np.random.default_rng({"stiction": 1, "sliding": 2, "separation": 3, "frictionless": 4}[region])
    cases, R, v_hat = random_cases(region, 20, rng)
    h = 1e-4
    for v, mu in cases:
        probes = [v]
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            probes += [v + e, v - e]
        gamma, G, cost = evaluate(probes, [v_hat] * 7, [R] * 7, [mu] * 7)
        fd_gamma = np.array([-(cost[1 + 2 * k] - cost[2 + 2 * k]) / (2 * h) for k in range(3)])
        fd_G = np.stack([-(gamma[1 + 2 * k] - gamma[2 + 2 * k]) / (2 * h) for k in range(3)], axis=1)
        scale_g = max(np.abs(gamma[0]).max(), 1.0)
        scale_G = max(np.abs(G[0]).max(), 1.0)
        assert np.abs(fd_gamma - gamma[0]).max() < 2e-2 * scale_g, (region, v, mu)
        assert np.abs(fd_G - G[0]).max() < 2e-2 * scale_G, (region, v, mu)
        assert np.allclose(G[0], G[0].T, atol=1e-3 * scale_G)  # symmetric
        assert np.linalg.eigvalsh(0.5 * (G[0] + G[0].T)).min() > -1e-3 * scale_G  # PSD


@wp.kernel
def _separates(
    v_c: wp.array(dtype=wp.vec3), v_hat: wp.array(dtype=wp.vec3), mu: wp.array(dtype=float), out: wp.array(dtype=int)
):
    i = wp.tid()
    out[i] = contact_separates(v_c[i], v_hat[i], mu[i])


def test_separation_needs_no_compliance():
    """``contact_separates`` (no impulse whatever R, used for parked contacts, which have no R) agrees with the
    projection's separation region for random velocities, compliances (R_t ≠ R_n) and μ (some 0), away from
    a round-off band at the region's boundary."""
    rng = np.random.default_rng(11)
    n = 4000
    v_c = rng.normal(0.0, 1.0, (n, 3))
    v_hat = np.zeros((n, 3))
    v_hat[:, 2] = rng.normal(0.0, 0.5, n)
    R_t = 10.0 ** rng.uniform(-7, -2, n)
    R = np.stack([R_t, R_t, 10.0 ** rng.uniform(-7, -2, n)], axis=1)
    mu = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.1, 1.5, n))
    gamma, _G, cost = evaluate(v_c, v_hat, R, mu)
    no_impulse = np.all(gamma == 0.0, axis=1) & (cost == 0.0)
    out = wp.zeros(n, dtype=int)
    wp.launch(_separates, dim=n, inputs=[wp.array(v_c.astype(np.float32), dtype=wp.vec3),
                                         wp.array(v_hat.astype(np.float32), dtype=wp.vec3),
                                         wp.array(mu.astype(np.float32))], outputs=[out])  # fmt: skip
    margin = v_c[:, 2] - v_hat[:, 2] - mu * np.linalg.norm(v_c[:, :2], axis=1)
    clear = np.abs(margin) > 1e-5
    assert 0.2 < no_impulse.mean() < 0.8 and clear.mean() > 0.99
    np.testing.assert_array_equal(out.numpy()[clear] == 1, no_impulse[clear])
