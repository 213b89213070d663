"""M(q) and b(q, v) of real robots against Pinocchio and MuJoCo (float64 references), and a tree of
more than 64 dofs through the sparse LDLᵀ path."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap

import references as refs

pytest.importorskip("pinocchio")
pytest.importorskip("mujoco")

RTOL = 1e-5  # relative to the largest entry; our kernels run in float32
N_STATES = 3


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


@pytest.mark.parametrize("name", refs.ROBOTS)
def test_mass_matrix_and_bias_match_references(name):
    model = refs.build_newton_model(name, device="cpu")
    solver = newton_sap.SolverSAP(model)
    state = model.state()
    rng = np.random.default_rng(42)
    independent = [s for s in refs.SPECS[name].sources if s != "newton"]
    assert independent, name
    for _ in range(N_STATES):
        q, qd = refs.random_state(model, rng)
        state.joint_q.assign(q)
        state.joint_qd.assign(qd)
        snap = solver.snapshot(state)
        for source in independent:
            M_ref, b_ref = refs.reference_mass_and_bias(name, model, q, qd, source=source)
            assert rel_err(snap.mass_matrix[0], M_ref) < RTOL, (name, source, rel_err(snap.mass_matrix[0], M_ref))
            assert rel_err(snap.bias[0], b_ref) < RTOL, (name, source, rel_err(snap.bias[0], b_ref))


def multi_arm_robot(arms: int = 7):
    """A floating base carrying ``arms`` Panda arms (9 dofs each): one tree of 6 + 9·arms dofs."""
    builder = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    base = builder.add_link(mass=20.0, inertia=wp.mat33(*np.diag([1.0, 1.2, 1.5]).ravel()), label="base")
    builder.add_articulation([builder.add_joint_free(base)])
    panda = refs._stripped_file("panda")
    for k in range(arms):
        angle = 2.0 * np.pi * k / arms
        xform = wp.transform((0.3 * np.cos(angle), 0.3 * np.sin(angle), 0.1), wp.quat_rpy(0.0, 0.0, angle))
        builder.add_urdf(panda, xform=xform, parent_body=base, enable_self_collisions=False)
    return builder.finalize(device="cpu", skip_validation_inertia=True)


def test_tree_above_64_dofs_uses_sparse_ldlt_and_matches():
    model = multi_arm_robot()
    solver = newton_sap.SolverSAP(model)
    assert solver.topology.tree_count == 1 and solver.topology.tree_dof_count[0] > 64
    assert not solver.topology.tree_is_dense[0]
    rng = np.random.default_rng(3)
    state = model.state()
    q = model.joint_q.numpy()
    q[7:] += rng.uniform(-0.5, 0.5, len(q) - 7).astype(np.float32)
    state.joint_q.assign(q)
    state.joint_qd.assign(rng.uniform(-1.0, 1.0, model.joint_dof_count).astype(np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)

    snap = solver.snapshot(state, dt=1e-3)
    n = model.joint_dof_count
    M_ref = newton.eval_mass_matrix(model, state).numpy()[0][:n, :n].astype(np.float64)
    g, c = wp.zeros(n, dtype=float), wp.zeros(n, dtype=float)
    newton.eval_inverse_dynamics_passive(model, state, gravity_force=g, coriolis_force=c)
    b_ref = (g.numpy() + c.numpy()).astype(np.float64)
    assert rel_err(snap.mass_matrix[0], M_ref) < 2 * RTOL
    assert rel_err(snap.bias[0], b_ref) < 2 * RTOL

    # the sparse LDLᵀ solve equals a float64 dense solve of the same system, A = M + Δt D + Δt² K
    dt = 1e-3
    A = snap.mass_matrix[0] + np.diag(dt * model.joint_damping.numpy() + dt * dt * model.joint_stiffness.numpy())
    v0 = state.joint_qd.numpy().astype(np.float64)
    v_star_ref = v0 + dt * np.linalg.solve(A, snap.tau[0])
    assert np.abs(snap.v_star[0] - v_star_ref).max() < 1e-4 * max(np.abs(v_star_ref).max(), 1.0)
