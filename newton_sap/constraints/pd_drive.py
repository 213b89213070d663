"""Implicit PD drive with an effort limit on one dof (SAP.md §5).

With ``q = q0 + Δt v`` the drive force ``y = −Kp (q − q_d) − Kd (v − v_d) + u_ff`` [N or N·m] is
evaluated at the new velocity: ``y = −(v − v̂) / (Δt R)`` with ``c = Δt Kp + Kd``, ``R = 1 / (Δt c)``
and ``v̂ = (Kp (q_d − q0) + Kd v_d + u_ff) / c``. The impulse is ``γ = clamp(Δt y, ±Δt e)`` (effort
limit e), so in the template's terms ``γ = clamp(R⁻¹ (v̂ − v_c), ±Δt e)`` with ``v_c = v``:

* inside the limit: ``γ = R⁻¹ (v̂ − v_c)``, ``G = R⁻¹ = Δt c``, ``ℓ = ½ R γ²``;
* saturated: ``γ = ±Δt e``, ``G = 0``, ``ℓ = Δt e |v_c − v̂| − ½ R (Δt e)²`` (continuous, C¹); within
  round-off of the limit ``G = R⁻¹`` (``friction_cone.KINK_ROUND_OFF``).

Near-rigid gains: if ``R < β² w / (4π²)`` (β = 0.1) both gains are scaled by the same factor so that
R equals that bound (Kd/Kp kept); very stiff drives then stay well conditioned at large Δt.
"""

import warp as wp

from .friction_cone import TWO_PI_SQ, within_kink_band

NEAR_RIGID_BETA = 0.1


@wp.func
def pd_drive_parameters(
    kp: float, kd: float, q0: float, q_target: float, v_target: float, u_ff: float, dt: float, w: float
):
    """``(R, v̂)`` [kg⁻¹ or (kg·m²)⁻¹; m/s or rad/s] of a drive with gains Kp [N/m], Kd [N·s/m] (or rotational),
    targets, feed-forward u_ff, for a dof with Delassus estimate w; near-rigid rescaling applied."""
    c = dt * kp + kd
    R = 1.0 / (dt * c)
    R_min = NEAR_RIGID_BETA * NEAR_RIGID_BETA * w / TWO_PI_SQ
    scale = float(1.0)
    if R < R_min:
        scale = R / R_min
        R = R_min
    v_hat = (scale * (kp * (q_target - q0) + kd * v_target) + u_ff) / (scale * c)
    return R, v_hat


@wp.func
def pd_drive_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, impulse_limit: float):
    """Impulse γ [N·s], Hessian G and cost ℓ [J] of a drive (row 0; ``impulse_limit = Δt e``)."""
    y = (v_hat[0] - v_c[0]) / R[0]
    gamma = wp.vec3(0.0)
    G = wp.mat33(0.0)
    cost = float(0.0)
    if wp.abs(y) <= impulse_limit:
        gamma[0] = y
        cost = 0.5 * R[0] * y * y
    else:
        gamma[0] = wp.sign(y) * impulse_limit
        cost = impulse_limit * R[0] * wp.abs(y) - 0.5 * R[0] * impulse_limit * impulse_limit
    saturated_by = wp.abs(v_hat[0] - v_c[0]) - impulse_limit * R[0]  # [m/s or rad/s] beyond the limit
    if impulse_limit > 0.0 and within_kink_band(saturated_by, wp.abs(v_c[0]) + wp.abs(v_hat[0])):
        # linear, or saturated by round-off (a zero limit leaves no linear branch)
        G[0, 0] = 1.0 / R[0]
    return gamma, G, cost
