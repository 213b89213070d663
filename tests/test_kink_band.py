"""The round-off band at the constraints' kinks (``friction_cone.KINK_ROUND_OFF``): a row within a few float32 ulps
of the point where its impulse leaves the linear branch (a limit or contact that separates, a drive or joint friction
that saturates) takes the stiff branch's Hessian G, with its impulse γ and cost ℓ unchanged; a row beyond the band has
the flat branch's G = 0. Float32 rows evaluated on the device (``contact_scenes.evaluate_rows``)."""

import numpy as np
import pytest

from newton_sap.constraints.dispatch import CONTACT, CONTACT_LAGGED, JOINT_FRICTION, JOINT_LIMIT, PD_DRIVE
from newton_sap.constraints.friction_cone import KINK_ROUND_OFF

from contact_scenes import evaluate_rows


def ulps_beyond(edge: float, direction: float, ulps: int) -> np.float32:
    """The float32 ``ulps`` steps from ``edge`` towards ``direction``."""
    x = np.float32(edge)
    for _ in range(ulps):
        x = np.nextafter(x, np.float32(direction * np.inf))
    return x


def one_row(kind, v, v_hat, R, parameter):
    """γ, G and ℓ of a one-row constraint (row 0) at the velocities ``v``."""
    n = len(v)
    gamma, G, cost = evaluate_rows(kind, [(x, 0.0, 0.0) for x in v], [(v_hat, 0.0, 0.0)] * n, [(R, 1.0, 1.0)] * n,
                                   [parameter] * n)  # fmt: skip
    return gamma[:, 0], G[:, 0, 0], cost


def test_a_limit_inactive_by_round_off_has_the_active_curvature():
    """``v̂ = 0.3``, ``R = 1e-5`` (a hard limit): at the kink and up to four ulps beyond it the row is inactive
    (γ = ℓ = 0) with G = 1/R; 1e-4 beyond, G = 0; on the active side G = 1/R as always."""
    v_hat, R = 0.3, 1.0e-5
    inside = [ulps_beyond(v_hat, -1.0, 2)]
    band = [ulps_beyond(v_hat, 1.0, k) for k in (0, 1, 2, 4)]
    beyond = [v_hat * (1.0 + 1e-4), 1.0]
    gamma, G, cost = one_row(JOINT_LIMIT, inside + band + beyond, v_hat, R, 0.0)
    assert gamma[0] > 0.0 and G[0] == pytest.approx(1.0 / R, rel=1e-6)
    assert np.all(gamma[1:] == 0.0) and np.all(cost[1:] == 0.0)
    assert np.allclose(G[1:5], 1.0 / R, rtol=1e-6)
    assert np.all(G[5:] == 0.0)


@pytest.mark.parametrize("kind", [PD_DRIVE, JOINT_FRICTION])
def test_a_saturated_impulse_by_round_off_has_the_linear_curvature(kind):
    """A drive (``v̂ = 0.3``) and joint friction (``v̂ = 0``) with ``R = 0.05`` and impulse limit 1: saturated
    within four ulps of ``v̂ − R·limit`` the impulse is the limit and G = 1/R; farther, G = 0. A zero limit has no
    linear branch: G = 0 even at ``v = v̂``."""
    v_hat = 0.3 if kind == PD_DRIVE else 0.0
    R, limit = 0.05, 1.0
    edge = np.float32(v_hat) - np.float32(R) * np.float32(limit)
    band = [ulps_beyond(edge, -1.0, k) for k in (1, 2, 3)]
    beyond = [edge - 1e-4, edge - 1.0]
    gamma, G, _ = one_row(kind, band + beyond, v_hat, R, limit)
    assert np.allclose(gamma, limit, rtol=1e-6)
    assert np.allclose(G[:3], 1.0 / R, rtol=1e-6) and np.all(G[3:] == 0.0)
    gamma, G, cost = one_row(kind, [v_hat, v_hat + 0.1], v_hat, R, 0.0)
    assert np.all(gamma == 0.0) and np.all(G == 0.0) and np.all(cost == 0.0)


def sliding_contact_velocity(v_hat_n, mu, slip, outside):
    """``v_c`` of a contact with ``v̂ = (0, 0, v̂_n)`` slipping at ``slip`` along t1 whose separation margin
    ``u_n − μ‖u_t‖`` (``u = v_c − v̂``) is ``outside`` [m/s] (> 0: separated)."""
    return np.array([slip, 0.0, v_hat_n + mu * slip + outside])


def test_a_contact_separated_by_round_off_has_the_sliding_curvature():
    """μ = 0.5, ``R = (1e-4, 1e-4, 1e-3)``, slip 0.4 m/s: a contact separated by a margin within the band carries
    no impulse and the sliding Hessian at ``γ_n = 0`` (the limit of the sliding region's G at its boundary, from a
    margin of −1e-6 m/s inside); past the band, G = 0."""
    mu, R, v_hat_n, slip = 0.5, np.array([1e-4, 1e-4, 1e-3]), -0.2, 0.4
    magnitude = abs(v_hat_n) + abs(v_hat_n + mu * slip) + mu * slip
    margins = [-1e-6, 0.0, 0.5 * KINK_ROUND_OFF * magnitude, 10 * KINK_ROUND_OFF * magnitude, 1e-3]
    v_c = [sliding_contact_velocity(v_hat_n, mu, slip, m) for m in margins]
    gamma, G, cost = evaluate_rows(CONTACT, v_c, [(0.0, 0.0, v_hat_n)] * len(v_c), [R] * len(v_c), [mu] * len(v_c))
    assert gamma[0, 2] > 0.0
    assert np.all(gamma[1:] == 0.0) and np.all(cost[1:] == 0.0)
    for k in (1, 2):
        assert np.allclose(G[k], G[0], rtol=1e-2, atol=1e-2 * np.abs(G[0]).max()), k
    assert np.abs(G[0]).max() > 0.0
    assert np.all(G[3:] == 0.0)


@pytest.mark.parametrize("kind", [CONTACT, CONTACT_LAGGED])
def test_a_frictionless_contact_separated_by_round_off_has_the_normal_curvature(kind):
    """μ = 0 (a lagged contact: no friction bound), ``R_n = 1e-3``: at ``v_n = v̂_n`` and a few ulps above it, γ = 0
    and ``G_nn = 1/R_n``; 1e-4 above, 0."""
    v_hat_n, R = -0.2, np.array([1e-4, 1e-4, 1e-3])
    normals = [v_hat_n, ulps_beyond(v_hat_n, 1.0, 2), v_hat_n + 1e-4]
    v_c = [(0.1, 0.0, v_n) for v_n in normals]
    gamma, G, _ = evaluate_rows(kind, v_c, [(0.0, 0.0, v_hat_n)] * 3, [R] * 3, [0.0] * 3)
    assert np.all(gamma == 0.0)
    assert np.allclose(G[:2, 2, 2], 1.0 / R[2], rtol=1e-6) and G[2, 2, 2] == 0.0
    assert np.all(G[:, :2, :] == 0.0) and np.all(G[:, :, :2] == 0.0)
