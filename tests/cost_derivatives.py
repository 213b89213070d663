"""Finite-difference checks of a constraint's contract: γ = −∂ℓ/∂v_c and G = −∂γ/∂v_c, G symmetric PSD."""

import numpy as np


def assert_derivatives_of_cost(evaluate, v, h=1e-4, context=None):
    """Central differences (step ``h`` [m/s]) of ``evaluate(velocities) -> (γ, G, ℓ)`` (arrays over the given
    contact velocities, float32 kernels) at ``v``: γ and G within 2 % of their scale; returns (γ, G) at v."""
    probes = [v]
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        probes += [v + e, v - e]
    gamma, G, cost = evaluate(probes)
    fd_gamma = np.array([-(cost[1 + 2 * k] - cost[2 + 2 * k]) / (2 * h) for k in range(3)])
    fd_G = np.stack([-(gamma[1 + 2 * k] - gamma[2 + 2 * k]) / (2 * h) for k in range(3)], axis=1)
    scale_g, scale_G = max(np.abs(gamma[0]).max(), 1.0), max(np.abs(G[0]).max(), 1.0)
    assert np.abs(fd_gamma - gamma[0]).max() < 2e-2 * scale_g, context
    assert np.abs(fd_G - G[0]).max() < 2e-2 * scale_G, context
    assert np.allclose(G[0], G[0].T, atol=1e-3 * scale_G), context  # symmetric
    assert np.linalg.eigvalsh(0.5 * (G[0] + G[0].T)).min() > -1e-3 * scale_G, context  # PSD
    return gamma[0], G[0]
