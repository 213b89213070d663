"""A float64 NumPy SAP solve of one world's problem from a solver snapshot (SAP.md §3, §5, §6), as an independent
reference for the float32 solver: every constraint of the step (contacts, drives, limits, joint friction,
equalities, lagged contacts) with its impulse and Hessian written out here from the closed forms, Newton's method
with a bisection line search on the exact slope, run to a relative residual of 1e-12. A (the mass matrix with the
step's implicit joint damping and stiffness), v* and the constraints' J, R, v̂ and parameters are the snapshot's (what
the solver built), so this checks the solve, not the modelling."""

from __future__ import annotations

import numpy as np

from newton_sap.constraints.dispatch import (
    BILATERAL,
    CONTACT,
    CONTACT_LAGGED,
    JOINT_FRICTION,
    JOINT_LIMIT,
    PD_DRIVE,
)

from contact_scenes import friction_cone_impulse

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


def lagged_contact_impulse(v_c, v_hat, R, bound):
    """``(γ, G)`` of a lagged contact: the unilateral normal ``max(0, y_n)``, and the friction ``y_t`` projected onto
    the disk of radius ``bound`` = μ n0 [N·s] (``constraints/lagged_contact.py``)."""
    y = (v_hat - v_c) / R
    gamma, d_gamma = np.zeros(3), np.zeros((3, 3))  # ∂γ/∂y
    if y[2] > 0.0:
        gamma[2], d_gamma[2, 2] = y[2], 1.0
    y_r = np.linalg.norm(y[:2])
    if bound > 0.0 and y_r <= bound:
        gamma[:2], d_gamma[:2, :2] = y[:2], np.eye(2)
    elif bound > 0.0:
        t = y[:2] / y_r
        gamma[:2], d_gamma[:2, :2] = bound * t, bound / y_r * (np.eye(2) - np.outer(t, t))
    return gamma, d_gamma / R[None, :]


def constraint_impulse(kind, v_c, v_hat, R, parameter):
    """``(γ, G)`` [N·s, kg] of one constraint of ``kind`` (``constraints.dispatch``) at ``v_c`` [m/s or rad/s]:
    ``γ = P(y)``, ``y = R⁻¹ (v̂ − v_c)``, ``G = −∂γ/∂v_c``. One-row types use row 0."""
    if kind == CONTACT:
        return friction_cone_impulse(v_c, v_hat, R, parameter), friction_cone_hessian(v_c, v_hat, R, parameter)
    if kind == CONTACT_LAGGED:
        return lagged_contact_impulse(v_c, v_hat, R, parameter)
    if kind == BILATERAL:
        return (v_hat - v_c) / R, np.diag(1.0 / R)
    y = (v_hat[0] - v_c[0]) / R[0]
    if kind in (PD_DRIVE, JOINT_FRICTION):  # a linear force saturating at the impulse limit
        inside = abs(y) <= parameter
        y_projected = y if inside else np.sign(y) * parameter
    elif kind == JOINT_LIMIT:  # unilateral
        inside = y > 0.0
        y_projected = max(y, 0.0)
    else:
        raise ValueError(f"constraint type {kind} has no reference")
    gamma, G = np.zeros(3), np.zeros((3, 3))
    gamma[0], G[0, 0] = y_projected, (1.0 / R[0] if inside else 0.0)
    return gamma, G


class WorldProblem:
    """One world's SAP problem of a snapshot in float64: ``½ (v − v*)ᵀ A (v − v*) + Σ_i ℓ_i(J_i v)``, its impulses,
    gradient and scaled optimality norms (``D = diag(A)^-½``)."""

    def __init__(self, snap, world: int):
        self.A, self.v_star, self.J = snap.problem_matrix[world], snap.v_star[world], snap.constraint_jacobian[world]
        self.kind, self.R = snap.constraint_kind[world], snap.constraint_compliance[world]
        self.v_hat, self.parameter = snap.constraint_bias_velocity[world], snap.constraint_parameter[world]
        self.D = 1.0 / np.sqrt(np.diag(self.A))

    def impulses(self, v):
        """γ (m, 3) and the block-diagonal G (3m × 3m) at ``v``."""
        m = len(self.kind)
        v_c = (self.J @ v).reshape(-1, 3)
        gamma, G = np.zeros((m, 3)), np.zeros((3 * m, 3 * m))
        for i in range(m):
            gamma[i], G[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = constraint_impulse(
                self.kind[i], v_c[i], self.v_hat[i], self.R[i], self.parameter[i]
            )
        return gamma, G

    def gradient(self, v):
        """``∇ℓ(v) = A (v − v*) − Jᵀγ`` and ``Jᵀγ``."""
        jt_gamma = self.J.T @ self.impulses(v)[0].ravel()
        return self.A @ (v - self.v_star) - jt_gamma, jt_gamma

    def scaled_norms(self, v, grad, jt_gamma):
        """``‖D∇ℓ‖`` and the scale ``max(‖D A v‖, ‖D Jᵀγ‖)`` of the optimality test, from ``gradient(v)``."""
        D = self.D
        return np.linalg.norm(D * grad), max(np.linalg.norm(D * (self.A @ v)), np.linalg.norm(D * jt_gamma))

    def relative_residual(self, v) -> float:
        """``‖D∇ℓ‖ / max(‖D A v‖, ‖D Jᵀγ‖)`` at ``v`` (its scale floored at float32's smallest normal)."""
        residual, scale = self.scaled_norms(v, *self.gradient(v))
        return float(residual / max(scale, np.finfo(np.float32).tiny))


def solve_sap_problem(snap, world: int, v_start=None, rel_tolerance=1e-12, max_iterations=100) -> np.ndarray:
    """The minimizer [m/s, rad/s] of ``½ (v − v*)ᵀ A (v − v*) + Σ_i ℓ_i(J_i v)`` over the step's constraints in
    ``world`` of ``snap``, from ``v_start`` (default v*), to ``‖D∇ℓ‖ ≤ rel_tolerance max(‖D A v‖, ‖D Jᵀγ‖)``,
    ``D = diag(A)^-½``."""
    problem = WorldProblem(snap, world)
    v = np.array(problem.v_star if v_start is None else v_start, np.float64)
    for _ in range(max_iterations):
        grad, jt_gamma = problem.gradient(v)
        residual, scale = problem.scaled_norms(v, grad, jt_gamma)
        if residual <= rel_tolerance * scale:
            break
        dv = -np.linalg.solve(problem.A + problem.J.T @ problem.impulses(v)[1] @ problem.J, grad)
        lo, hi = 0.0, 1.5  # the convex cost's slope along dv rises from negative: bisect for its root
        if problem.gradient(v + hi * dv)[0] @ dv <= 0.0:
            lo = hi
        for _ in range(60):
            if hi - lo <= 1e-15:
                break
            mid = 0.5 * (lo + hi)
            if problem.gradient(v + mid * dv)[0] @ dv < 0.0:
                lo = mid
            else:
                hi = mid
        v = v + 0.5 * (lo + hi) * dv
    return v
