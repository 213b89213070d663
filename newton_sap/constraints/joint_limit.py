"""One side of a joint limit on one dof (SAP.md §5): unilateral, ``γ = max(0, y)``.

The constraint function is ``g = q − q_lower`` (row ``v_c = v``) or ``g = q_upper − q`` (row
``v_c = −v``), linearized ``g ≈ g0 + Δt v_c``, with stiffness k and dissipation time τ_d:
``R = max(β² w / (4π²), 1 / (Δt k (Δt + τ_d)))``, ``v̂ = −g0 / (Δt + τ_d)`` at or past the limit and ``−g0 / Δt``
before it (``friction_cone.unilateral_bias_velocity``: no braking before the step reaches the limit);
``y = R⁻¹ (v̂ − v_c)``:

* active ``y > 0``: ``γ = y``, ``G = R⁻¹``, ``ℓ = ½ R γ²``;
* inactive: ``γ = 0``, ``G = 0``, ``ℓ = 0``; within round-off of the kink ``G = R⁻¹``
  (``friction_cone.KINK_ROUND_OFF``).
"""

import warp as wp

from .friction_cone import within_kink_band


@wp.func
def joint_limit_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, unused: float):
    """Impulse γ [N·s], Hessian G and cost ℓ [J] of one limit side (row 0)."""
    y = (v_hat[0] - v_c[0]) / R[0]
    gamma = wp.vec3(0.0)
    G = wp.mat33(0.0)
    cost = float(0.0)
    if y > 0.0:
        gamma[0] = y
        cost = 0.5 * R[0] * y * y
    if within_kink_band(v_c[0] - v_hat[0], wp.abs(v_c[0]) + wp.abs(v_hat[0])):  # active, or inactive by round-off
        G[0, 0] = 1.0 / R[0]
    return gamma, G, cost
