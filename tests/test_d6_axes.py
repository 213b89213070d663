"""D6 joints whose axes are not orthogonal follow Newton's joint-coordinate convention: the same
``body_q`` and ``body_qd`` as ``newton.eval_fk`` for the same ``joint_q`` and ``joint_qd``, the same
``M(q)`` and ``b(q, q̇)`` as Newton's dynamics functions, and the same short motion as
SolverFeatherstone. Two angular axes use Newton's frame built from the pair (not Gram-Schmidt), three
use the axes as given."""

import newton
import numpy as np
import pytest
import warp as wp
from test_random_trees import newton_reference, rel_err

import newton_sap

from random_trees import random_inertia, random_transform, set_state

Cfg = newton.ModelBuilder.JointDofConfig


def skew_axes(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` random unit vectors, pairwise neither orthogonal nor parallel (|cos| in [0.25, 0.85])
    and, for three, not close to coplanar (|det| > 0.25)."""
    while True:
        axes = rng.normal(size=(count, 3))
        axes /= np.linalg.norm(axes, axis=1, keepdims=True)
        cos = np.abs(axes @ axes.T)[np.triu_indices(count, 1)]
        if np.all((cos > 0.25) & (cos < 0.85)) and (count < 3 or abs(np.linalg.det(axes)) > 0.25):
            return axes


def d6_chain(seed: int, n_ang: int, n_bodies: int = 2):
    """A chain of D6 joints, each with ``n_ang`` skew angular axes and 0-3 skew linear axes, random
    joint frames, COM offsets and inertias; random ``joint_q`` [m, rad] and ``joint_qd`` [m/s, rad/s]."""
    rng = np.random.default_rng(seed)
    builder = newton.ModelBuilder()
    parent, joints = -1, []
    for _ in range(n_bodies):
        mass = float(rng.uniform(0.5, 2.0))
        body = builder.add_link(
            mass=mass,
            com=wp.vec3(*rng.uniform(-0.3, 0.3, 3)),
            inertia=wp.mat33(*random_inertia(rng, mass).flatten()),
        )
        n_lin = int(rng.integers(0, 4))
        lin = [Cfg(axis=wp.vec3(*a)) for a in skew_axes(rng, n_lin)] if n_lin else []
        ang = [Cfg(axis=wp.vec3(*a)) for a in skew_axes(rng, n_ang)]
        joints.append(
            builder.add_joint_d6(
                parent,
                body,
                linear_axes=lin,
                angular_axes=ang,
                parent_xform=random_transform(rng),
                child_xform=random_transform(rng),
            )
        )
        parent = body
    builder.add_articulation(joints)
    model = builder.finalize()
    state = model.state()
    q = rng.uniform(-1.2, 1.2, model.joint_coord_count).astype(np.float32)
    qd = rng.uniform(-1.5, 1.5, model.joint_dof_count).astype(np.float32)
    set_state(model, state, q, qd)
    return model, state


CASES = [(n_ang, seed) for n_ang in (2, 3) for seed in range(4)]


@pytest.mark.parametrize(("n_ang", "seed"), CASES)
def test_body_state_equals_newton_fk(n_ang, seed):
    """The step writes ``body_q``, ``body_qd`` from its own FK of the output ``joint_q``, ``joint_qd``;
    Newton's FK of those coordinates gives the same poses [m] and COM twists [m/s, rad/s]."""
    model, s0 = d6_chain(seed, n_ang)
    s1, fk = model.state(), model.state()
    newton_sap.SolverSAP(model).step(s0, s1, None, None, 1e-3)
    newton.eval_fk(model, s1.joint_q, s1.joint_qd, fk)
    assert np.abs(fk.body_q.numpy() - s1.body_q.numpy()).max() < 1e-5
    assert np.abs(fk.body_qd.numpy() - s1.body_qd.numpy()).max() < 1e-5


@pytest.mark.parametrize(("n_ang", "seed"), CASES)
def test_mass_matrix_and_bias_match_newton(n_ang, seed):
    """``M(q)`` (built from S) and ``b(q, q̇)`` (built from S and Ṡ) equal Newton's."""
    model, state = d6_chain(seed, n_ang)
    snap = newton_sap.SolverSAP(model).snapshot(state)
    M_ref, b_ref = newton_reference(model, state)
    assert rel_err(snap.mass_matrix[0], M_ref) < 1e-5
    assert np.abs(snap.bias[0] - b_ref).max() < 1e-5 * max(np.abs(b_ref).max(), 1.0)


@pytest.mark.parametrize("n_ang", [2, 3])
def test_short_run_agrees_with_featherstone(n_ang):
    """A skew-axis D6 double pendulum under gravity, 0.1 s at Δt = 1 ms: the same body states."""
    model, s0 = d6_chain(7, n_ang)
    sap, fs = newton_sap.SolverSAP(model), newton.solvers.SolverFeatherstone(model)
    a0, a1, b0, b1 = model.state(), model.state(), model.state(), model.state()
    for s in (a0, b0):
        s.assign(s0)
    for _ in range(100):
        sap.step(a0, a1, None, None, 1e-3)
        fs.step(b0, b1, None, None, 1e-3)
        a0, a1, b0, b1 = a1, a0, b1, b0
    qd_scale = max(np.abs(b0.body_qd.numpy()).max(), 1.0)
    assert np.abs(a0.body_q.numpy() - b0.body_q.numpy()).max() < 1e-4
    assert np.abs(a0.body_qd.numpy() - b0.body_qd.numpy()).max() < 1e-3 * qd_scale
