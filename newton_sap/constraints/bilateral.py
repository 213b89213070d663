"""Bilateral (equality) constraint rows, e.g. a mimic coupling ``q_a − ρ q_b − Δq = 0`` (SAP.md §5).

Rigid (k = ∞) under the near-rigid rule: ``R = β² w / (4π²)`` with β = 0.1 and the dissipation time
reset to Δt, so ``v̂ = −g0 / (2Δt)``. No projection: ``γ = y = R⁻¹ (v̂ − v_c)``, ``G = R⁻¹``,
``ℓ = ½ Σ R γ²`` over the rows in use (row 0 for a one-row constraint; unused rows have R = 1 and
zero Jacobian entries, so they contribute nothing).
"""

import warp as wp

from .friction_cone import TWO_PI_SQ

NEAR_RIGID_BETA = 0.1


@wp.func
def bilateral_parameters(g0: float, w: float, dt: float):
    """``(R, v̂)`` of a rigid equality with current violation g0 and Delassus estimate w."""
    return NEAR_RIGID_BETA * NEAR_RIGID_BETA * w / TWO_PI_SQ, -g0 / (2.0 * dt)


@wp.func
def bilateral_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, unused: float):
    """Impulse γ [N·s], Hessian G and cost ℓ [J] of a bilateral constraint."""
    gamma = wp.cw_div(v_hat - v_c, R)
    G = wp.diag(wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2]))
    cost = 0.5 * (R[0] * gamma[0] * gamma[0] + R[1] * gamma[1] * gamma[1] + R[2] * gamma[2] * gamma[2])
    return gamma, G, cost
