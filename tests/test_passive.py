"""Implicit joint damping and stiffness: one rotor about a vertical axis (gravity exerts no torque)
follows the backward-Euler map of ``I q̈ = −k (q − q_rest) − d q̇`` exactly."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap

INERTIA = 0.5  # [kg·m²] about the joint axis


def rotor(damping: float, stiffness: float, rest: float):
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, inertia=wp.mat33(0.2, 0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0, INERTIA))
    joint = b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0), damping=damping, stiffness=stiffness, rest_q=rest)
    b.add_articulation([joint])
    return b.finalize()


def simulate(model, q0, v0, dt, steps):
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([q0], np.float32))
    s0.joint_qd.assign(np.array([v0], np.float32))
    out = []
    for _ in range(steps):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
        out.append((float(s0.joint_q.numpy()[0]), float(s0.joint_qd.numpy()[0])))
    return np.array(out)


def backward_euler(k, d, rest, q0, v0, dt, steps):
    """Closed-form backward-Euler map ``z1 = (1 − Δt J)⁻¹ (z0 + Δt c)`` of ``ż = J z + c``."""
    J = np.array([[0.0, 1.0], [-k / INERTIA, -d / INERTIA]])
    c = np.array([0.0, k * rest / INERTIA])
    step = np.linalg.inv(np.eye(2) - dt * J)
    z, out = np.array([q0, v0]), []
    for _ in range(steps):
        z = step @ (z + dt * c)
        out.append(z.copy())
    return np.array(out)


@pytest.mark.parametrize("damping,stiffness", [(2.0, 0.0), (0.5, 40.0), (0.0, 1e5)])
def test_rotor_follows_the_backward_euler_map(damping, stiffness):
    dt, steps = 1e-2, 200
    sim = simulate(rotor(damping, stiffness, 0.3), -0.2, 3.0, dt, steps)
    ref = backward_euler(stiffness, damping, 0.3, -0.2, 3.0, dt, steps)
    assert np.abs(sim - ref).max() < 1e-4 * max(np.abs(ref).max(), 1.0)


def test_pure_damping_decays_at_the_implicit_euler_rate():
    dt, steps, d = 1e-3, 500, 2.0
    sim = simulate(rotor(d, 0.0, 0.0), 0.0, 1.5, dt, steps)
    assert np.allclose(sim[:, 1], 1.5 * (INERTIA / (INERTIA + dt * d)) ** np.arange(1, steps + 1), rtol=1e-5)


def test_very_stiff_spring_is_stable_at_large_steps():
    """k = 1e5 with dt = 0.01 (ω·Δt ≈ 4.5): explicit springs diverge, the implicit one settles."""
    sim = simulate(rotor(0.0, 1e5, 0.3), -0.2, 3.0, 1e-2, 300)
    assert np.isfinite(sim).all() and abs(sim[-1, 0] - 0.3) < 1e-3


def test_snapshot_problem_matrix_holds_the_implicit_damping_and_stiffness():
    """The snapshot's ``problem_matrix`` is the step's ``A = I + Δt d + Δt² k`` about the axis (the SAP problem's
    matrix), its ``mass_matrix`` the inertia I alone."""
    dt, damping, stiffness = 0.01, 3.0, 40.0
    model = rotor(damping, stiffness, 0.0)
    snap = newton_sap.SolverSAP(model).snapshot(model.state(), dt=dt)
    assert snap.mass_matrix[0][0, 0] == pytest.approx(INERTIA, rel=1e-6)
    assert snap.problem_matrix[0][0, 0] == pytest.approx(INERTIA + dt * damping + dt**2 * stiffness, rel=1e-6)
