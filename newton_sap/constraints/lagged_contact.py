"""Point contact with friction bounded by the elastic normal impulse at the step's start ("lagged", the
``contact_approximation="lagged"`` option; Drake's Lagged approximation, Castro et al. 2023, on SAP's linear
compliant normal law).

SAP's cone couples the normal impulse to the slip: at a sliding contact the R-norm projection's optimality
conditions give ``v_n = v̂_n − R_n γ_n + μ (‖v_t‖ − μ R_t γ_n)`` (Anitescu's relaxation), so a box slid at 2 m/s with
μ = 0.5 leaves the ground at about 0.8 m/s and hops centimetres. Here the two parts are separate convex costs:

* normal, SAP's compliant unilateral law: ``γ_n = max(0, y_n)``, ``y_n = (v̂_n − v_n) / R_n``, ``G_nn = 1/R_n``
  where ``y_n > 0`` and within round-off of it (``friction_cone.KINK_ROUND_OFF``), ``ℓ_n = ½ R_n γ_n²``;
* friction, the projection of ``y_t = −s / R_t`` (slip ``s = v_t − v̂_t``) onto the disk ``‖γ_t‖ ≤ F``, with
  ``F = μ n0`` fixed for the step (:func:`lagged_normal_impulse`): ``γ_t = y_t``, ``G_t = I / R_t`` and
  ``ℓ_t = ½ R_t ‖y_t‖²`` inside (stiction, the same linear branch as SAP's); ``γ_t = F ŷ_t``,
  ``G_t = F / (R_t ‖y_t‖) (I − ŷ_t ŷ_tᵀ)`` and ``ℓ_t = F ‖s‖ − ½ R_t F²`` outside (sliding: Coulomb's force
  against the slip, flat along it). ``F = 0``: no friction.

The cost is convex and C¹, so the Newton iterations and the exact line search are unchanged. What it gives up:
the friction bound follows the penetration at the step's start, not the step's own normal impulse, so an impact
slides frictionlessly in the step in which it starts to penetrate and with less than Coulomb's friction while its
penetration builds up; a contact that lifts off keeps its friction one step.
Units as in ``friction_cone.py``: velocities [m/s], impulses [N·s], R [kg⁻¹], G [kg], ℓ [J].
"""

import warp as wp

from .friction_cone import within_kink_band


@wp.func
def lagged_normal_impulse(phi0: float, dt: float, last_dt: float, dissipation_time: float, last_R_n: float):
    """``n0 = Δt k x0`` [N·s]: the elastic part of the contact's normal impulse at the step's start, penetration
    ``x0 = −φ0`` [m] (0 without penetration), over this step's Δt [s], with the stiffness that left it: the one
    behind the normal compliance ``last_R_n = 1 / (Δt_l k (Δt_l + τ_d))`` [kg⁻¹] of the last step, taken with
    ``last_dt`` = Δt_l [s] (near-rigid cap included): ``n0 = Δt x0 / (Δt_l (Δt_l + τ_d) R_n,l)``. At rest it is the
    impulse that holds the contact, ``m g Δt`` for a body on the ground, also when Δt changes: under the near-rigid
    cap, which does not depend on Δt, the resting penetration ``m g Δt_l (Δt_l + τ_d) R_n`` scales with the last
    step's Δt (this step's stiffness took 2.4 and 0.375 times the bound after a halved and a doubled Δt, and a box
    held on a 20° incline with μ = 0.5 slid 2 mm in the 4 steps after Δt went from 0.01 to 0.02 s).
    Drake's Lagged takes ``Δt f_e0 (1 − d v_n0)₊`` with a Hunt–Crossley dissipation d,
    whose damping grows with the penetration; SAP's Kelvin–Voigt damping ``k τ_d ẋ0`` does not, so it is left out:
    at a resting contact's 0.05 mm and τ_d = 0.02 s it would cancel the spring at 2.5 mm/s of separation (a box
    sticking on an incline slid once nudged so) and, in an approach at 0.5 m/s, give 34 times the step's impulse (a
    box landing while sliding tripped and hopped 2.8 cm)."""
    if phi0 >= 0.0:
        return float(0.0)
    return -phi0 * dt / (last_dt * (last_dt + dissipation_time) * last_R_n)


@wp.func
def lagged_contact_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, friction_limit: float):
    """Impulse γ [N·s], Hessian ``G = −∂γ/∂v_c`` [kg] and cost ℓ [J] of one lagged contact with friction bound
    ``friction_limit`` = F = μ n0 [N·s] (see module)."""
    gamma = wp.vec3(0.0)
    G = wp.mat33(0.0)
    cost = float(0.0)
    y_n = (v_hat[2] - v_c[2]) / R[2]
    if y_n > 0.0:
        gamma[2] = y_n
        cost = 0.5 * R[2] * y_n * y_n
    if within_kink_band(v_c[2] - v_hat[2], wp.abs(v_c[2]) + wp.abs(v_hat[2])):  # pressed, or separated by round-off
        G[2, 2] = 1.0 / R[2]
    if friction_limit > 0.0:
        y_t = wp.vec2(v_hat[0] - v_c[0], v_hat[1] - v_c[1]) / R[0]
        y_r = wp.length(y_t)
        if y_r <= friction_limit:  # stiction
            gamma[0] = y_t[0]
            gamma[1] = y_t[1]
            G[0, 0] = 1.0 / R[0]
            G[1, 1] = 1.0 / R[0]
            cost += 0.5 * R[0] * y_r * y_r
        else:  # sliding
            t = y_t / y_r
            gamma[0] = friction_limit * t[0]
            gamma[1] = friction_limit * t[1]
            scale = friction_limit / (R[0] * y_r)
            for a in range(2):
                for b in range(2):
                    G[a, b] = -scale * t[a] * t[b]
                G[a, a] += scale
            cost += friction_limit * R[0] * y_r - 0.5 * R[0] * friction_limit * friction_limit
    return gamma, G, cost


@wp.func
def lagged_contact_predicts_stiction(v_c: wp.vec3, dv_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, friction_limit: float):
    """1 if the contact slides at ``v_c`` and the Newton step ``Δv_c`` [m/s] ends its slip inside the stiction
    disk or reverses it: the step passes through stiction (as ``friction_cone_predicts_stiction``)."""
    if friction_limit <= 0.0:
        return 0
    s0 = wp.vec2(v_c[0] - v_hat[0], v_c[1] - v_hat[1])
    if wp.length(s0) <= friction_limit * R[0]:
        return 0  # sticks already
    s1 = s0 + wp.vec2(dv_c[0], dv_c[1])
    if wp.length(s1) <= friction_limit * R[0] or wp.dot(s0, s1) < 0.0:
        return 1
    return 0


@wp.func
def lagged_contact_stiction_branch(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, friction_limit: float):
    """The stiction model of a lagged contact at ``v_c``: its friction by the linear branch, ``γ_t = −s / R_t``,
    ``G_t = I / R_t``; its normal as it is (the friction does not depend on it)."""
    gamma, G, _cost = lagged_contact_impulse(v_c, v_hat, R, friction_limit)
    for a in range(2):
        gamma[a] = (v_hat[a] - v_c[a]) / R[0]
        for b in range(2):
            G[a, b] = 0.0
        G[a, a] = 1.0 / R[0]
    return gamma, G
