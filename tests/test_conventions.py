"""Newton's public convention at the solver boundary: conversions, consistency of every output
array, and agreement with Newton's own FK and SolverFeatherstone."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.conventions import (
    free_com_velocity_after_step,
    free_joint_velocity_map,
    free_velocity_public_to_internal,
)
from newton_sap.diagnostics import quat_to_matrix

from random_trees import add_random_tree, random_state, set_state

TYPES = ("revolute", "prismatic", "ball", "d6", "fixed")


@wp.kernel
def _round_trip(
    v_pub: wp.array(dtype=wp.vec3),
    w: wp.array(dtype=wp.vec3),
    r: wp.array(dtype=wp.vec3),
    v_m_out: wp.array(dtype=wp.vec3),
    v_pub_out: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    v_m = free_velocity_public_to_internal(v_pub[i], w[i], r[i])
    v_m_out[i] = v_m
    v_pub_out[i] = free_com_velocity_after_step(v_m, w[i], w[i], r[i], 0.0)


def test_free_joint_velocity_round_trip_and_matrix_form():
    rng = np.random.default_rng(0)
    v, w, r = (rng.normal(size=(50, 3)).astype(np.float32) for _ in range(3))
    v_m, back = wp.zeros(50, dtype=wp.vec3), wp.zeros(50, dtype=wp.vec3)
    wp.launch(
        _round_trip,
        dim=50,
        inputs=[wp.array(v, dtype=wp.vec3), wp.array(w, dtype=wp.vec3), wp.array(r, dtype=wp.vec3)],
        outputs=[v_m, back],
    )
    assert np.allclose(back.numpy(), v, atol=1e-5)
    for k in range(50):
        T = free_joint_velocity_map(r[k].astype(np.float64))
        public = T @ np.concatenate([w[k], v_m.numpy()[k]])  # internal order [ω, v_M]
        assert np.allclose(public, np.concatenate([v[k], w[k]]), atol=1e-5)


def random_model(seed, n_bodies=5, root="free"):
    rng = np.random.default_rng(seed)
    builder = newton.ModelBuilder()
    add_random_tree(builder, rng, n_bodies, root_type=root, types=TYPES)
    model = builder.finalize()
    state = model.state()
    set_state(model, state, *random_state(model, rng))
    return model, state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_output_body_arrays_equal_newton_fk_of_output_joints(seed):
    model, s0 = random_model(seed)
    s1 = model.state()
    newton_sap.SolverSAP(model).step(s0, s1, None, None, 2e-3)
    fk = model.state()
    newton.eval_fk(model, s1.joint_q, s1.joint_qd, fk)
    assert np.abs(fk.body_q.numpy() - s1.body_q.numpy()).max() < 1e-5
    assert np.abs(fk.body_qd.numpy() - s1.body_qd.numpy()).max() < 1e-4


def _log_so3(R):
    angle = np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return w * (0.5 if angle < 1e-8 else angle / (2.0 * np.sin(angle)))


@pytest.mark.parametrize("seed", [4, 5])
def test_body_qd_of_every_body_is_com_velocity_and_world_omega(seed):
    """Finite differences of COM positions and orientations over a short step reproduce body_qd of
    every body, articulated children included (origin velocities would miss by ω × r)."""
    model, s0 = random_model(seed, n_bodies=6)
    s1 = model.state()
    dt = 1e-4
    newton_sap.SolverSAP(model).step(s0, s1, None, None, dt)
    com = model.body_com.numpy()
    for b, (X0, X1, V) in enumerate(zip(s0.body_q.numpy(), s1.body_q.numpy(), s1.body_qd.numpy(), strict=True)):
        R0, R1 = quat_to_matrix(X0[3:]), quat_to_matrix(X1[3:])
        c0, c1 = X0[:3] + R0 @ com[b], X1[:3] + R1 @ com[b]
        scale = max(np.abs(V).max(), 1.0)
        assert np.abs((c1 - c0) / dt - V[:3]).max() < 5e-3 * scale, b
        assert np.abs(_log_so3(R1 @ R0.T) / dt - V[3:]).max() < 5e-3 * scale, b


@pytest.mark.parametrize("root", ["free", "revolute"])
def test_short_run_agrees_with_featherstone(root):
    model, s0 = random_model(11, n_bodies=4, root=root)
    sap, fs = newton_sap.SolverSAP(model), newton.solvers.SolverFeatherstone(model)
    a0, a1, b0, b1 = model.state(), model.state(), model.state(), model.state()
    for s in (a0, b0):
        s.assign(s0)
    dt = 1e-3
    for _ in range(50):
        sap.step(a0, a1, None, None, dt)
        fs.step(b0, b1, None, None, dt)
        a0, a1, b0, b1 = a1, a0, b1, b0
    assert np.abs(a0.body_q.numpy() - b0.body_q.numpy()).max() < 2e-3
    assert np.abs(a0.body_qd.numpy() - b0.body_qd.numpy()).max() < 2e-2 * max(np.abs(b0.body_qd.numpy()).max(), 1.0)
