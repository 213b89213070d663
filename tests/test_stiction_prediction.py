"""Stiction prediction (``sap.py``): the friction-cone predicate against hand-made cases, and whole steps
that reach the same solutions as plain Newton directions in fewer iterations."""

import numpy as np
import pytest
import warp as wp

from newton_sap.constraints.friction_cone import friction_cone_predicts_stiction

from contact_scenes import Run, copy_state, sphere_bin

# SAP.md §3 known-answer contact: R = (σw, σw, β²w/4π²), v̂_n = −φ0/(Δt + τ_d); (0.1, 0, −0.1) slides
R = (1.0e-3, 1.0e-3, 0.025330296)
V_HAT = (0.0, 0.0, 0.083333333)


@wp.kernel
def _predict(
    v_c: wp.array(dtype=wp.vec3),
    dv_c: wp.array(dtype=wp.vec3),
    mu: wp.array(dtype=float),
    R: wp.vec3,
    v_hat: wp.vec3,
    out: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    out[i] = friction_cone_predicts_stiction(v_c[i], dv_c[i], v_hat, R, mu[i])


@pytest.mark.parametrize(
    ("v_c", "dv_c", "mu", "expected"),
    [
        ((0.1, 0.0, -0.1), (-0.2, 0.0, 0.0), 0.5, 1),  # sliding; the step reverses the slip
        ((0.1, 0.0, -0.1), (-0.0999, 0.0, 0.0), 0.5, 1),  # sliding; the step ends inside the cone
        ((0.1, -0.2, -0.1), (-0.1, 0.5, 0.0), 0.5, 1),  # slip direction turned by more than 90°
        ((0.1, 0.0, -0.1), (0.05, 0.0, 0.0), 0.5, 0),  # slides on, faster
        ((0.1, 0.0, -0.1), (-0.05, 0.0, 0.0), 0.5, 0),  # slides on, slower
        ((0.1, 0.0, -0.1), (-0.2, 0.0, 0.5), 0.5, 0),  # reversed, but separating at the end of the step
        ((1.0e-4, 0.0, -0.1), (-0.2, 0.0, 0.0), 0.5, 0),  # sticks already
        ((-0.1, 0.1, 0.2), (0.2, -0.2, -0.3), 0.5, 0),  # separated
        ((0.1, 0.0, -0.1), (-0.2, 0.0, 0.0), 0.0, 0),  # frictionless
    ],
)
def test_friction_cone_predicts_stiction(v_c, dv_c, mu, expected):
    out = wp.zeros(1, dtype=wp.int32)
    arrays = [wp.array([x], dtype=wp.vec3) for x in (v_c, dv_c)]
    wp.launch(_predict, dim=1, inputs=[*arrays, wp.array([mu], dtype=float), wp.vec3(R), wp.vec3(V_HAT)],
              outputs=[out])  # fmt: skip
    assert out.numpy()[0] == expected


SOLVES = {  # the direction solves of a 60-dof world, and the options that select them
    "dense": {},
    "pcg": {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 0},
    "block Cholesky": {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 512},  # predicts within its own launch
}


@pytest.mark.parametrize("approximation", ["sap", "lagged"])
@pytest.mark.parametrize("solve", SOLVES)
def test_prediction_keeps_solutions_and_saves_iterations(solve, approximation):
    """A landing pile stepped with and without the prediction, both from the same state every step:
    the same velocities to the float32 floor, every step converged, and fewer Newton iterations; for SAP's cone and
    for the lagged contact (whose stiction branch is its friction's, ``dispatch.stiction_branch_impulse``)."""
    options = {**SOLVES[solve], "contact_approximation": approximation}
    predicted = Run(sphere_bin(10), **options)
    plain = Run(sphere_bin(10), stiction_prediction=False, **options)
    topology = predicted.solver.topology
    assert topology.world_uses_pcg.all() == (solve == "pcg")
    assert (topology.world_block_offset >= 0).all() == (solve == "block Cholesky")
    worst = 0.0
    for _ in range(40):
        copy_state(predicted.s0, plain.s0)
        predicted.step(0.01)
        plain.step(0.01)
        worst = max(worst, np.abs(predicted.qd - plain.qd).max() / np.abs(plain.qd).max())
    assert np.all(np.concatenate(predicted.converged)) and np.all(np.concatenate(plain.converged))
    assert worst < 1e-3
    with_prediction, without = np.sum(predicted.iterations), np.sum(plain.iterations)
    assert with_prediction < 0.7 * without, (with_prediction, without)


def test_block_worlds_on_the_tree_ldlt_predict_too(gpu_paths):
    """Eleven spheres sliding slowly apart on the ground (a world of block-Cholesky size whose contacts each touch
    one tree, so on the CPU the tree LDLᵀ solves it; on the GPUs' paths the block Cholesky): friction stops them
    within a step, which the prediction catches on this path as well (``predict_stiction`` runs where some world
    takes the tree LDLᵀ); the same velocities as plain Newton directions in fewer iterations."""
    import newton

    b = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.5)
    b.add_ground_plane(cfg=cfg)
    for k in range(11):
        body = b.add_body(xform=wp.transform((0.2 * k, 0.0, 0.05), wp.quat_identity()))
        b.add_shape_sphere(body, radius=0.05, cfg=cfg)
    model = b.finalize()
    qd0 = np.zeros((11, 6), np.float32)
    qd0[:, :2] = np.random.default_rng(3).uniform(-0.04, 0.04, (11, 2))  # below μ g Δt = 0.05 m/s: they stop
    options = {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 512}
    predicted = Run(model, qd0=qd0.ravel(), **options)
    plain = Run(model, qd0=qd0.ravel(), stiction_prediction=False, **options)
    sap = predicted.solver._sap
    worst = 0.0
    for _ in range(5):
        copy_state(predicted.s0, plain.s0)
        predicted.step(0.01)
        plain.step(0.01)
        assert sap.tree_ldlt == (not gpu_paths) and sap.any_tree_local.numpy()[0] == int(not gpu_paths)
        worst = max(worst, np.abs(predicted.qd - plain.qd).max() / max(np.abs(plain.qd).max(), 1e-3))
    assert worst < 1e-4
    with_prediction, without = np.sum(predicted.iterations), np.sum(plain.iterations)
    assert with_prediction < 0.7 * without, (with_prediction, without)
