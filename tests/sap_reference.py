"""A float64 NumPy SAP solve of one world's contact problem from a solver snapshot (SAP.md §3, §6), as an
independent reference for the float32 solver: the same regularized cones (``friction_cone_impulse``), their
Hessians written out here, Newton's method with a bisection line search on the exact slope, run to a relative
residual of 1e-12. Contacts only (worlds without joint-space rows), A = the snapshot's mass matrix."""

from __future__ import annotations

import numpy as np

from contact_scenes import friction_cone_impulse, require_sap_contacts

SOFT_NORM = 1.0e-7  # ε of the tangential soft norm ``y_r = sqrt(|y_t|² + ε²)``, as the solver's


def friction_cone_hessian(v_c, v_hat, R, mu):
    """``G = −∂γ/∂v_c`` (3×3) of one contact: ``(∂γ/∂y) R⁻¹`` with ``y = R⁻¹ (v̂ − v_c)``, per region."""
    y = (v_hat - v_c) / R
    y_t, y_n = y[:2], y[2]
    y_r = np.sqrt(y_t @ y_t + SOFT_NORM**2)
    mu_hat = mu * R[0] / R[2]
    if y_r <= mu * y_n:
        return np.diag(1.0 / R)  # stiction: γ = y
    if y_n <= -mu_hat * y_r:
        return np.zeros((3, 3))  # separation
    f = 1.0 / (1.0 + mu * mu_hat)
    gamma_n = f * (y_n + mu_hat * y_r)
    t = y_t / y_r
    tt = np.outer(t, t)
    d_gamma = np.zeros((3, 3))  # ∂γ/∂y
    d_gamma[:2, :2] = mu * (mu_hat * f * tt + gamma_n * (np.eye(2) - tt) / y_r)
    d_gamma[:2, 2] = mu * f * t
    d_gamma[2, :2] = mu_hat * f * t
    d_gamma[2, 2] = f
    return d_gamma / R[None, :]


def solve_contact_problem(snap, world: int, v_start=None, rel_tolerance=1e-12, max_iterations=100) -> np.ndarray:
    """The minimizer [m/s, rad/s] of ``½ (v − v*)ᵀ A (v − v*) + Σ_c ½ γ_cᵀ R_c γ_c`` for ``world`` of ``snap``,
    from ``v_start`` (default v*), to ``‖D∇ℓ‖ ≤ rel_tolerance max(‖D A v‖, ‖D Jᵀγ‖)``, ``D = diag(A)^-½``."""
    require_sap_contacts(snap, world)
    A, v_star, J = snap.mass_matrix[world], snap.v_star[world], snap.contact_jacobian[world]
    R, v_hat, mu = snap.contact_compliance[world], snap.contact_bias_velocity[world], snap.contact_friction[world]
    D = 1.0 / np.sqrt(np.diag(A))

    def gradient(v):
        v_c = (J @ v).reshape(-1, 3)
        gamma = np.array([friction_cone_impulse(v_c[k], v_hat[k], R[k], mu[k]) for k in range(len(mu))])
        jt_gamma = J.T @ gamma.ravel()
        return A @ (v - v_star) - jt_gamma, jt_gamma, v_c

    v = np.array(v_star if v_start is None else v_start, np.float64)
    for _ in range(max_iterations):
        grad, jt_gamma, v_c = gradient(v)
        if np.linalg.norm(D * grad) <= rel_tolerance * max(np.linalg.norm(D * (A @ v)), np.linalg.norm(D * jt_gamma)):
            break
        G = np.zeros((3 * len(mu), 3 * len(mu)))
        for k in range(len(mu)):
            G[3 * k : 3 * k + 3, 3 * k : 3 * k + 3] = friction_cone_hessian(v_c[k], v_hat[k], R[k], mu[k])
        dv = -np.linalg.solve(A + J.T @ G @ J, grad)
        lo, hi = 0.0, 1.5  # the convex cost's slope along dv rises from negative: bisect for its root
        if gradient(v + hi * dv)[0] @ dv <= 0.0:
            lo = hi
        for _ in range(60):
            if hi - lo <= 1e-15:
                break
            mid = 0.5 * (lo + hi)
            if gradient(v + mid * dv)[0] @ dv < 0.0:
                lo = mid
            else:
                hi = mid
        v = v + 0.5 * (lo + hi) * dv
    return v
