"""Stiction prediction (``sap.py``): the friction-cone predicate against hand-made cases, and whole steps
that reach the same solutions as plain Newton directions in fewer iterations."""

import numpy as np
import pytest
import warp as wp

from newton_sap.constraints.friction_cone import friction_cone_predicts_stiction

from contact_scenes import Run, copy_state, evaluate_rows, sphere_bin

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


@pytest.mark.parametrize("approximation", ["sap", "lagged"])
def test_flagged_worlds_predict_nothing(approximation):
    """``predict_stiction`` over one sliding contact per world (three dofs, J = I) whose Newton step reverses its
    slip: the world without a ``world_plain_newton`` flag models it by its stiction branch (``G̃ = R⁻¹``,
    ``∇ℓ_model = ∇ℓ − (γ̃ − γ)``, here with the normal pressed as well), the worlds flagged ``PLAIN_NEWTON_ONCE``
    (after a short model step) and ``PLAIN_NEWTON_NEAR_OPTIMUM`` keep its Newton model and their gradient."""
    from newton_sap.constraints.dispatch import CONTACT, CONTACT_LAGGED
    from newton_sap.stiction_prediction import PLAIN_NEWTON_NEAR_OPTIMUM, PLAIN_NEWTON_ONCE, predict_stiction

    kind = int(CONTACT) if approximation == "sap" else int(CONTACT_LAGGED)
    parameter = 0.5 if approximation == "sap" else 1.0  # μ, or the lagged bound μ n0 [N·s]
    v_c, dv_c = (0.1, 0.0, -0.1), (-0.2, 0.0, 0.0)
    gamma, G, _cost = (x[0] for x in evaluate_rows(kind, [v_c], [V_HAT], [R], [parameter]))
    assert np.linalg.norm(gamma[:2]) > 0.0 and np.abs(G - np.diag(1.0 / np.array(R))).max() > 1.0  # sliding

    def rows(value, dtype):
        return wp.array([value] * 3, dtype=dtype)

    flags = [0, int(PLAIN_NEWTON_ONCE), int(PLAIN_NEWTON_NEAR_OPTIMUM)]
    dofs = np.arange(9, dtype=np.int32).reshape(3, 3)
    J = np.tile(np.eye(3, dtype=np.float32), (3, 1, 1))  # entry e of a row: the column of its e-th dof
    G_model, grad_model = wp.zeros(3, dtype=wp.mat33), wp.zeros(9, dtype=float)
    predicted, any_predicted = wp.zeros(3, dtype=wp.int32), wp.zeros(1, dtype=wp.int32)
    wp.launch(predict_stiction, dim=1,
              inputs=[wp.array([-1, -1, -1], dtype=wp.int32), 1024, wp.array([3], dtype=wp.int32),
                      wp.array([0, 1, 2], dtype=wp.int32), rows(1, wp.int32), rows(0, wp.int32),
                      wp.array(flags, dtype=wp.int32), wp.array([0, 1, 2], dtype=wp.int32), rows(kind, wp.int32),
                      rows(v_c, wp.vec3), rows(gamma, wp.vec3), rows(G, wp.mat33), rows(V_HAT, wp.vec3),
                      rows(R, wp.vec3), rows(parameter, float), rows(3, wp.int32), wp.array(dofs, dtype=wp.int32),
                      wp.array(J, dtype=wp.vec3), wp.array(np.tile(dv_c, 3), dtype=float)],
              outputs=[G_model, grad_model, predicted, any_predicted])  # fmt: skip
    assert predicted.numpy().tolist() == [1, 0, 0] and any_predicted.numpy()[0] == 1
    gamma_model = (np.array(V_HAT) - np.array(v_c)) / np.array(R)
    np.testing.assert_allclose(G_model.numpy()[0], np.diag(1.0 / np.array(R)), rtol=1e-6)
    np.testing.assert_allclose(grad_model.numpy()[:3], -(gamma_model - gamma), rtol=1e-5, atol=1e-5)
    for w in (1, 2):
        np.testing.assert_array_equal(G_model.numpy()[w], G)
        assert not grad_model.numpy()[3 * w : 3 * w + 3].any()


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
