"""M(q) and b(q, v) of random trees against Newton's own dynamics functions (test references only),
and the two factorization paths against each other."""

import newton
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import newton_sap

from random_trees import add_random_tree, random_state, set_state

RTOL = 2e-5  # float32 kernels, relative to the largest entry
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
# FREE/DISTANCE joints below the root are left out here: Newton's reference mixes frames there
# (its free-joint bias is world-framed, its mass matrix parent-framed).
TYPES = ("revolute", "prismatic", "ball", "d6", "fixed")


def newton_reference(model, state):
    """Newton's M (armature included) and b = C q̇ + g for a one-articulation model, float64."""
    import warp as wp

    n = model.joint_dof_count
    H = newton.eval_mass_matrix(model, state).numpy()[0][:n, :n].astype(np.float64)
    g = wp.zeros(n, dtype=float)
    c = wp.zeros(n, dtype=float)
    newton.eval_inverse_dynamics_passive(model, state, gravity_force=g, coriolis_force=c)
    return H, (g.numpy() + c.numpy()).astype(np.float64)


def build(seed, n_bodies, chain, root_type=None):
    rng = np.random.default_rng(seed)
    builder = newton.ModelBuilder()
    add_random_tree(builder, rng, n_bodies, chain=chain, root_type=root_type, types=TYPES)
    model = builder.finalize()
    state = model.state()
    set_state(model, state, *random_state(model, rng))
    return model, state


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-6)


@SETTINGS
@given(
    seed=st.integers(0, 2**31),
    n_bodies=st.integers(1, 8),
    chain=st.booleans(),
    root=st.sampled_from(("free", "distance", "revolute", "ball", "d6", "prismatic")),
)
def test_mass_matrix_and_bias_match_newton(seed, n_bodies, chain, root):
    model, state = build(seed, n_bodies, chain, root)
    if model.joint_dof_count == 0:
        return
    snap = newton_sap.SolverSAP(model).snapshot(state)
    M_ref, b_ref = newton_reference(model, state)
    M = snap.mass_matrix[0]
    assert np.allclose(M, M.T, atol=0)
    assert np.linalg.eigvalsh(M).min() > 0.0
    assert rel_err(M, M_ref) < RTOL
    assert np.abs(snap.bias[0] - b_ref).max() < RTOL * max(np.abs(b_ref).max(), 1.0) * 10


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31))
def test_depth_20_chain(seed):
    model, state = build(seed, 20, chain=True, root_type="free")
    snap = newton_sap.SolverSAP(model).snapshot(state)
    M_ref, b_ref = newton_reference(model, state)
    assert np.linalg.eigvalsh(snap.mass_matrix[0]).min() > 0.0
    assert rel_err(snap.mass_matrix[0], M_ref) < 5 * RTOL
    assert np.abs(snap.bias[0] - b_ref).max() < 5e-4 * max(np.abs(b_ref).max(), 1.0)


@SETTINGS
@given(seed=st.integers(0, 2**31), n_bodies=st.integers(2, 12), chain=st.booleans())
def test_dense_and_sparse_paths_agree(seed, n_bodies, chain):
    model, state = build(seed, n_bodies, chain, root_type="free")
    dt = 1e-3
    dense = newton_sap.SolverSAP(model).snapshot(state, dt=dt).v_star[0]
    sparse = newton_sap.SolverSAP(model, dense_max_dofs=0).snapshot(state, dt=dt).v_star[0]
    assert np.abs(dense - sparse).max() < 1e-4 * max(np.abs(dense).max(), 1.0)


def test_one_model_mixes_dense_and_sparse_trees():
    rng = np.random.default_rng(7)
    builder = newton.ModelBuilder()
    add_random_tree(builder, rng, 3, chain=True, root_type="free", types=("revolute",))  # 8 dofs
    add_random_tree(builder, rng, 6, chain=True, root_type="free", types=("ball",))  # 21 dofs
    model = builder.finalize()
    state = model.state()
    set_state(model, state, *random_state(model, rng))
    solver = newton_sap.SolverSAP(model, dense_max_dofs=10)
    assert solver.topology.tree_is_dense.tolist() == [True, False]
    mixed = solver.snapshot(state, dt=1e-3).v_star[0]
    dense = newton_sap.SolverSAP(model).snapshot(state, dt=1e-3).v_star[0]
    assert np.abs(mixed - dense).max() < 1e-4 * np.abs(dense).max()


@pytest.mark.parametrize("root", ["free", "revolute"])
def test_step_without_constraints_is_free_motion(root):
    """Without constraints the step's velocity is v* exactly (public convention)."""
    model, state = build(3, 5, False, root)
    out = model.state()
    solver = newton_sap.SolverSAP(model)
    v_star = solver.snapshot(state, dt=2e-3).v_star[0]
    solver.step(state, out, None, None, 2e-3)
    if root == "revolute":
        assert np.allclose(out.joint_qd.numpy(), v_star, atol=1e-6)
    assert solver.stats.converged.all() and (solver.stats.iterations == 0).all()


def test_notify_model_changed_picks_up_new_masses():
    model, state = build(9, 4, False, "free")
    solver = newton_sap.SolverSAP(model)
    mass = model.body_mass.numpy()
    model.body_mass.assign(mass * 2.0)
    model.body_inertia.assign(model.body_inertia.numpy() * 2.0)
    solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES)
    M_ref, _ = newton_reference(model, state)
    assert rel_err(solver.snapshot(state).mass_matrix[0], M_ref) < RTOL
