"""Point contact with regularized Coulomb friction (SAP.md §3).

Contact frame: tangents t1, t2 and the normal n last; ``v_c = (v_t1, v_t2, v_n)`` [m/s] is the
velocity of body B's contact point relative to body A's, ``v_n > 0`` separating; φ0 < 0 [m] is
penetration. The impulse ``γ`` [N·s] on B is the projection of the unprojected impulse
``y = R⁻¹ (v̂ − v_c)`` onto the friction cone ``‖γ_t‖ ≤ μ γ_n`` in the norm of ``R``:

* stiction ``y_r ≤ μ y_n``: ``γ = y``, ``G = R⁻¹``;
* sliding ``−μ̂ y_r < y_n < y_r / μ``: ``γ_n = (y_n + μ̂ y_r) / (1 + μ μ̂)``, ``γ_t = μ γ_n t̂``;
* separation ``y_n ≤ −μ̂ y_r``: ``γ = 0``, ``G = 0`` (within round-off of sliding, ``KINK_ROUND_OFF``: the
  sliding G at ``γ_n = 0``);

with ``y_r = sqrt(‖y_t‖² + ε²)`` (soft norm), ``t̂ = y_t / y_r`` and ``μ̂ = μ R_t / R_n``. The cost is
``ℓ = ½ γᵀ R γ`` [J]; continuous across the regions.

Newton's model of a sliding contact is flat along the slip (the friction impulse is saturated), so a
Newton step can drive the slip through zero and reverse it, far beyond the thin stiction region
(width ``~ μ γ_n R_t``) where the exact line search then stops. :func:`friction_cone_predicts_stiction`
detects that case so the solver can model the contact by its stiction branch instead (``sap.py``).
"""

import warp as wp

SOFT_NORM_EPS = 1.0e-7
"""ε of the soft tangential norm [N·s]: keeps t̂ and G finite at zero slip."""

KINK_ROUND_OFF = 4.0 * 1.1920929e-07
"""Width of the band around a constraint's kink, relative to the velocities that meet there [-]: four float32
epsilons. A kink here is where the impulse leaves its linear branch and the row's Hessian G drops to zero: a limit
or contact that separates (SAP's cone from sliding, a lagged contact's normal), a drive or joint friction that
saturates. (At a contact's stiction kink only the curvature along the slip drops; the stiction prediction models
that one, ``stiction_prediction.py``.) The exact line search stops just past a kink when the stiff branch blocks
the step, so the next iterate lies within round-off of it, and float32 can put it on the flat side. Its Newton
direction then ignores the stiff branch, the line search stops again after a step of round-off, and the world ends
*converged* at the float32 floor far from the optimum: a world with a hard joint limit (``R = 1.3e-5``) 3 ulps past
its kink stopped so 4.8 % off the float64 solve (relative residual 4e-2). Inside the band G is the stiff branch's
(with it that world converged in 15 iterations, within 3e-7) and γ and ℓ are left as they are: at a kink either
branch's G is an element of the generalized Hessian, which Newton's method may take. The band is relative to
``|v_c| + |v̂|``, not to the round-off of the sum ``v_c = J v``, which is larger where its terms cancel; a world that
stalls so past the band is reported not converged (``sap.CUT_STEP_ALPHA``)."""

TWO_PI_SQ = 39.47841760435743  # (2π)²
CONTACT_DELASSUS_FLOOR = 1.0e-12
"""Smallest Delassus estimate w [kg⁻¹] a contact's compliances use (a body of 1e12 kg): a contact whose
Jacobian vanishes (a point on the axis of the only joint that moves it) keeps a finite ``R_t = σ w``."""


@wp.func
def contact_compliance(
    stiffness: float, dissipation_time: float, dt: float, beta: float, sigma: float, w: float, reference_dt: float
):
    """Diagonal compliance ``R = (R_t, R_t, R_n)`` [kg⁻¹] of a contact.

    ``R_n = max(β² w / (4π²), 1 / (Δt k (Δt + τ_d)))``: the compliant value from the stiffness k
    [N/m] and dissipation time τ_d [s], capped (near-rigid regime) so that the contact's natural period
    is no shorter than about β·Δt; ``w`` [kg⁻¹] is the Delassus diagonal estimate (at least
    ``CONTACT_DELASSUS_FLOOR``). ``R_t = σ w``.

    With a reference step ``reference_dt`` = Δt_r > 0 [s], k is first capped at the stiffness the cap leaves at
    Δt_r, ``k_r = 4π² / (β² w Δt_r (Δt_r + τ_d))``: the contact then has that one stiffness (and resting
    penetration) at every Δt ≤ Δt_r, whose ``R_n`` stays above the cap; a longer step takes its own cap."""
    w_used = wp.max(w, CONTACT_DELASSUS_FLOOR)
    k = stiffness
    if reference_dt > 0.0 and beta > 0.0:
        k = wp.min(k, TWO_PI_SQ / (beta * beta * w_used * reference_dt * (reference_dt + dissipation_time)))
    r_n = wp.max(beta * beta * w_used / TWO_PI_SQ, 1.0 / (dt * k * (dt + dissipation_time)))
    r_t = sigma * w_used
    return wp.vec3(r_t, r_t, r_n)


@wp.func
def within_kink_band(outside: float, magnitude: float):
    """Whether a row that lies ``outside`` [m/s or rad/s] beyond its kink on the flat side (≤ 0: on the stiff side)
    is within round-off of it, relative to the ``magnitude`` of the velocities compared (see
    :data:`KINK_ROUND_OFF`); such a row takes its stiff branch's Hessian. Where both velocities are zero (a limit or
    contact touching at rest) the band is empty and the row at its kink keeps the flat branch's G = 0: a stiff G
    there changed the iterations of a drive holding a link on its limit, whose backtracking steps then stopped 6e-4
    off the exact search's, reported converged (``test_line_search``)."""
    return outside < KINK_ROUND_OFF * magnitude


@wp.func
def unilateral_bias_velocity(g0: float, dt: float, dissipation_time: float):
    """Bias velocity ``v̂`` [m/s or rad/s] of a compliant unilateral constraint ``g ≥ 0`` (a contact's normal, a
    joint limit's side) at ``g0``, linearized ``g = g0 + Δt v_c``.

    Violated (g0 ≤ 0): ``v̂ = −g0 / (Δt + τ_d)`` (SAP.md §3): the impulse is ``Δt (−k g − k τ_d v_c)₊``. Open
    (g0 > 0): ``v̂ = −g0 / Δt``: the impulse starts only once the step closes the linearized gap (``g < 0``);
    with τ_d there the dissipation term would brake an approaching body while it is still ``τ_d |v_c|`` away,
    so that it settled onto the surface (or the limit) exponentially instead of reaching it. Continuous at
    g0 = 0."""
    time = dt + dissipation_time
    if g0 > 0.0:
        time = dt
    return -g0 / time


@wp.func
def contact_bias_velocity(phi0: float, dt: float, dissipation_time: float):
    """Bias velocity ``v̂ = (0, 0, v̂_n)`` [m/s] of a contact with signed distance φ0 [m]
    (:func:`unilateral_bias_velocity` of its normal; the tangents' is 0)."""
    return wp.vec3(0.0, 0.0, unilateral_bias_velocity(phi0, dt, dissipation_time))


@wp.func
def friction_cone_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, mu: float):
    """Impulse γ [N·s], Hessian ``G = −∂γ/∂v_c`` [kg] and cost ℓ [J] of one contact (see module)."""
    R_inv = wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2])
    y = wp.cw_mul(v_hat - v_c, R_inv)
    y_t = wp.vec2(y[0], y[1])
    y_n = y[2]
    y_r = wp.sqrt(wp.dot(y_t, y_t) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    gamma = wp.vec3(0.0)
    G = wp.mat33(0.0)
    if mu <= 0.0:
        if y_n > 0.0:  # frictionless: only the normal impulse, γ_n = y_n
            gamma = wp.vec3(0.0, 0.0, y_n)
        if within_kink_band(v_c[2] - v_hat[2], wp.abs(v_c[2]) + wp.abs(v_hat[2])):
            G[2, 2] = R_inv[2]
    elif y_r <= mu * y_n:  # stiction
        gamma = y
        G = wp.diag(R_inv)
    else:
        mu_hat = mu * R[0] * R_inv[2]
        # sliding (y_n > −μ̂ y_r, i.e. ``outside`` < 0 [m/s]), or separated by no more than round-off
        outside = -R[2] * (y_n + mu_hat * y_r)
        sliding_branch = outside < 0.0
        if not sliding_branch:  # the velocities that meet at the kink, for its band
            magnitude = wp.abs(v_c[2]) + wp.abs(v_hat[2])
            magnitude += mu * (wp.length(wp.vec2(v_c[0], v_c[1])) + wp.length(wp.vec2(v_hat[0], v_hat[1])))
            sliding_branch = within_kink_band(outside, magnitude)
        if sliding_branch:
            f = 1.0 / (1.0 + mu * mu_hat)
            t = y_t / y_r
            g_n = f * wp.max(y_n + mu_hat * y_r, 0.0)
            g_t = mu * g_n * t
            gamma = wp.vec3(g_t[0], g_t[1], g_n)
            # dP/dy, then G = dP/dy · diag(R⁻¹)
            P = wp.outer(t, t)
            P_perp = wp.identity(n=2, dtype=float) - P
            dgt_dyt = mu * (g_n / y_r * P_perp + mu_hat * f * P)
            dgt_dyn = mu * f * t
            dgn_dyt = mu_hat * f * t
            for a in range(2):
                for b in range(2):
                    G[a, b] = dgt_dyt[a, b] * R_inv[b]
                G[a, 2] = dgt_dyn[a] * R_inv[2]
                G[2, a] = dgn_dyt[a] * R_inv[a]
            G[2, 2] = f * R_inv[2]
    cost = 0.5 * (R[0] * gamma[0] * gamma[0] + R[1] * gamma[1] * gamma[1] + R[2] * gamma[2] * gamma[2])
    return gamma, G, cost


@wp.func
def separation_margin(v_c: wp.vec3, v_hat: wp.vec3, mu: float):
    """``u_n − μ ‖u_t‖`` [m/s] with ``u = v_c − v̂`` of a contact at velocity ``v_c``: ≥ 0 inside the separation
    region (no impulse, :func:`contact_separates`), and how far inside. ``v̂_t = 0`` unless the contact has a
    velocity that is no unknown (a kinematic body's, a FREE joint's position-update offset, a mesh's surface
    velocity: ``contact_constraints``), which v̂ then holds."""
    u = v_c - v_hat
    return u[2] - mu * wp.sqrt(u[0] * u[0] + u[1] * u[1])


@wp.func
def contact_separates(v_c: wp.vec3, v_hat: wp.vec3, mu: float):
    """1 if a contact at velocity ``v_c`` [m/s] has no impulse whatever its compliance R: ``v_n − v̂_n ≥ μ ‖v_t‖``
    (μ = 0: ``v_n ≥ v̂_n``), the separation region ``y_n ≤ −μ̂ y_r`` with R factored out. The soft norm's
    ``ε R_t`` inside ``‖v_t‖`` (about 1e-10 m/s for a 1 kg body) is below the float32 resolution of these
    velocities and left out."""
    if separation_margin(v_c, v_hat, mu) >= 0.0:
        return 1
    return 0


PARK_GAP_FRACTION = 0.5
PARK_GRAVITY_STEPS = 2.0
"""A contact in the detection gap is *distant* (left out of the Newton iterations, checked at the solution)
when, at the step's start velocity, its separation margin ``v_n − v̂_n − μ ‖v_t‖`` (``−v̂_n = φ0 / Δt`` is the
approach speed that closes the gap in one step) exceeds both this fraction of ``φ0 / Δt`` and the speed
gravity adds in this many steps, ``|g| Δt``: its bodies would have to approach more than twice as fast as
they do, and by more than twice what gravity adds, before it acts. A positive margin means no impulse
(:func:`contact_separates`), so the test needs neither the Jacobian's Delassus estimate nor R."""


@wp.func
def contact_is_distant(phi0: float, v_c: wp.vec3, v_hat: wp.vec3, mu: float, dt: float, gravity_speed: float):
    """1 if a contact with signed distance φ0 [m], velocity ``v_c`` [m/s] at the step's start, ``v̂`` and μ is
    distant (see :data:`PARK_GAP_FRACTION`); ``gravity_speed = |g| Δt`` [m/s]."""
    if phi0 <= 0.0:
        return 0
    if separation_margin(v_c, v_hat, mu) <= wp.max(PARK_GAP_FRACTION * phi0 / dt, PARK_GRAVITY_STEPS * gravity_speed):
        return 0
    return 1


@wp.func
def friction_cone_predicts_stiction(v_c: wp.vec3, dv_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, mu: float):
    """1 if the contact slides at ``v_c`` and the Newton step ``Δv_c`` [m/s] ends inside its stiction cone
    or reverses its tangential impulse direction (with a compressive ``y_n > 0``): the step passes through
    stiction. 0 otherwise (sticking or separated at ``v_c``, frictionless, or sliding on)."""
    if mu <= 0.0:
        return 0
    R_inv = wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2])
    y0 = wp.cw_mul(v_hat - v_c, R_inv)
    t0 = wp.vec2(y0[0], y0[1])
    r0 = wp.sqrt(wp.dot(t0, t0) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    if r0 <= mu * y0[2]:
        return 0  # sticks already
    if y0[2] <= -mu * R[0] * R_inv[2] * r0:
        return 0  # separated
    y1 = wp.cw_mul(v_hat - v_c - dv_c, R_inv)
    t1 = wp.vec2(y1[0], y1[1])
    r1 = wp.sqrt(wp.dot(t1, t1) + SOFT_NORM_EPS * SOFT_NORM_EPS)
    if r1 <= mu * y1[2]:
        return 1
    if y1[2] > 0.0 and wp.dot(t0, t1) < 0.0:
        return 1
    return 0
