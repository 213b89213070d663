"""Point contact with lagged friction: Coulomb friction bounded by the normal impulse predicted at the step's
start, the "lagged" convex approximation of Drake's SAP family (Castro et al., 2023), as an option
(``contact_approximation="lagged"``).

The SAP cone (``friction_cone.py``) projects ``y = R⁻¹ (v̂ − v_c)`` onto ``‖γ_t‖ ≤ μ γ_n`` in the R-norm, which
couples the normal to the slip: at a sliding contact the optimum separates at ``v_n ≈ v̂_n + μ ‖v_t‖`` (a box
slid at 2 m/s with μ = 0.5 leaves the ground at 0.77 m/s and hops 3 cm). Here the two parts are separate
convex costs, with the same R and v̂ (same frame and units as ``friction_cone.py``):

* normal, SAP's compliant unilateral constraint: ``γ_n = max(0, y_n)``, ``G_nn = 1/R_n`` where ``y_n > 0``,
  ``ℓ_n = ½ R_n γ_n²``;
* friction, regularized Coulomb with a fixed bound ``b = μ γ̃_n`` [N·s], where ``γ̃_n = max(0, (v̂_n − v_n0) /
  R_n)`` is the normal impulse the contact's own compliant law gives at the step's start velocity ``v_n0``
  (:func:`lagged_friction_bound`): with ``y_t = −v_t / R_t``, ``y_r = sqrt(‖y_t‖² + ε²)`` and ``t̂ = y_t / y_r``,
  stiction ``y_r ≤ b``: ``γ_t = y_t``, ``G_tt = 1/R_t``, ``ℓ_t = ½ R_t ‖y_t‖²``;
  sliding: ``γ_t = b t̂``, ``G_tt = b (1 − t̂ t̂ᵀ) / (R_t y_r)``, ``ℓ_t = R_t (b y_r − ½ b²)``.

The friction is exact Coulomb at the lagged normal impulse: a sliding box decelerates at μg and stays on the
ground. What is lagged: a contact that starts pressing within the step (an impact, a body set down) has no
friction in that step, and a contact whose load changes within the step keeps the start's bound (for a
resting contact the start's impulse is the step's: the bound is exact at rest).
"""

import warp as wp

from .friction_cone import SOFT_NORM_EPS


@wp.func
def lagged_friction_bound(mu: float, v_n0: float, v_hat_n: float, R_n: float):
    """``b = μ max(0, (v̂_n − v_n0) / R_n)`` [N·s]: μ times the normal impulse of the contact's compliant law
    at its start velocity ``v_n0`` [m/s] (bias ``v̂_n`` [m/s], normal compliance ``R_n`` [kg⁻¹])."""
    return mu * wp.max(0.0, (v_hat_n - v_n0) / R_n)


@wp.func
def lagged_contact_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, bound: float):
    """Impulse γ [N·s], Hessian ``G = −∂γ/∂v_c`` [kg] and cost ℓ [J] of one contact with friction bound
    ``bound`` [N·s] (see module)."""
    R_inv = wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2])
    y = wp.cw_mul(v_hat - v_c, R_inv)
    y_t = wp.vec2(y[0], y[1])
    y_r = wp.sqrt(wp.dot(y_t, y_t) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    gamma = wp.vec3(0.0)
    G = wp.mat33(0.0)
    cost = float(0.0)
    if y[2] > 0.0:
        gamma[2] = y[2]
        G[2, 2] = R_inv[2]
        cost = 0.5 * R[2] * y[2] * y[2]
    if bound > 0.0:
        if y_r <= bound:  # stiction
            gamma[0] = y_t[0]
            gamma[1] = y_t[1]
            G[0, 0] = R_inv[0]
            G[1, 1] = R_inv[1]
            cost += 0.5 * R[0] * wp.dot(y_t, y_t)
        else:  # sliding: the bound along t̂, curvature across it only
            t = y_t / y_r
            scale = bound / (y_r * R[0])
            gamma[0] = bound * t[0]
            gamma[1] = bound * t[1]
            for a in range(2):
                for c in range(2):
                    G[a, c] = -scale * t[a] * t[c]
                G[a, a] = G[a, a] + scale
            cost += R[0] * (bound * y_r - 0.5 * bound * bound)
    return gamma, G, cost


@wp.func
def lagged_contact_predicts_stiction(v_c: wp.vec3, dv_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, bound: float):
    """1 if the contact slides at ``v_c`` and the Newton step ``Δv_c`` [m/s] ends inside its stiction disk or
    reverses its friction direction, pressing (``y_n > 0``) at the step's end, where the linear branch
    ``γ = R⁻¹ (v̂ − v_c)`` is then the contact's impulse; 0 otherwise (sticking, frictionless, sliding on)."""
    if bound <= 0.0:
        return 0
    y0_t = wp.vec2(v_hat[0] - v_c[0], v_hat[1] - v_c[1]) / R[0]
    r0 = wp.sqrt(wp.dot(y0_t, y0_t) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    if r0 <= bound:
        return 0  # sticks already
    y1 = wp.cw_mul(v_hat - v_c - dv_c, wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2]))
    if y1[2] <= 0.0:
        return 0
    y1_t = wp.vec2(y1[0], y1[1])
    r1 = wp.sqrt(wp.dot(y1_t, y1_t) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    if r1 <= bound or wp.dot(y0_t, y1_t) < 0.0:
        return 1
    return 0
