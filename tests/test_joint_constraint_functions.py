"""PD drive and joint-limit constraint functions: finite differences of the cost in every region."""

import numpy as np
import pytest

from newton_sap.constraints.dispatch import BILATERAL, JOINT_FRICTION, JOINT_LIMIT, PD_DRIVE

from contact_scenes import evaluate_rows


def evaluate(kind, v, v_hat, R, parameter):
    """γ, G and ℓ of one-row constraints of ``kind`` at the velocities ``v`` (row 0 of ``evaluate_rows``)."""
    n = len(v)
    gamma, G, cost = evaluate_rows(kind, [(x, 0.0, 0.0) for x in v], [(v_hat, 0.0, 0.0)] * n, [(R, 1.0, 1.0)] * n,
                                   [parameter] * n)  # fmt: skip
    return gamma[:, 0], G[:, 0, 0], cost


# (kind, v̂, R, parameter, velocities inside one region)
CASES = {
    "drive inside the effort limit": (PD_DRIVE, 0.3, 0.05, 10.0, np.linspace(-0.1, 0.7, 9)),
    "drive saturated high": (PD_DRIVE, 0.3, 0.05, 1.0, np.linspace(-2.0, 0.1, 9)),
    "drive saturated low": (PD_DRIVE, 0.3, 0.05, 1.0, np.linspace(0.5, 2.0, 9)),
    "limit active": (JOINT_LIMIT, 0.2, 0.01, 0.0, np.linspace(-1.0, 0.15, 9)),
    "limit inactive": (JOINT_LIMIT, 0.2, 0.01, 0.0, np.linspace(0.25, 1.0, 9)),
    "friction sticking": (JOINT_FRICTION, 0.0, 0.01, 1.0, np.linspace(-0.009, 0.009, 9)),
    "friction slipping": (JOINT_FRICTION, 0.0, 0.01, 1.0, np.linspace(0.02, 1.0, 9)),
    "bilateral": (BILATERAL, 0.2, 0.01, 0.0, np.linspace(-1.0, 1.0, 9)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_impulse_and_hessian_are_derivatives_of_the_cost(case):
    kind, v_hat, R, parameter, velocities = CASES[case]
    h = 1e-3
    gamma, G, cost = evaluate(kind, velocities, v_hat, R, parameter)
    _, _, cost_p = evaluate(kind, velocities + h, v_hat, R, parameter)
    _, _, cost_m = evaluate(kind, velocities - h, v_hat, R, parameter)
    gamma_p, _, _ = evaluate(kind, velocities + h, v_hat, R, parameter)
    gamma_m, _, _ = evaluate(kind, velocities - h, v_hat, R, parameter)
    scale = max(np.abs(gamma).max(), 1.0)
    assert np.allclose(-(cost_p - cost_m) / (2 * h), gamma, atol=1e-3 * scale)
    assert np.allclose(-(gamma_p - gamma_m) / (2 * h), G, atol=1e-3 * max(np.abs(G).max(), 1.0))
    if "saturated" in case or "slipping" in case:
        assert np.allclose(np.abs(gamma), parameter) and np.all(G == 0.0)
    if "inactive" in case:
        assert np.all(gamma == 0.0) and np.all(cost == 0.0)


def test_drive_cost_is_continuous_at_the_effort_limit():
    v_hat, R, limit = 0.3, 0.05, 1.0
    edge = v_hat - R * limit  # y = (v̂ − v) / R = limit
    _, _, cost = evaluate(PD_DRIVE, [edge - 1e-6, edge + 1e-6], v_hat, R, limit)
    assert abs(cost[0] - cost[1]) < 1e-5
