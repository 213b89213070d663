"""Newton iterations per step and converged fraction over the contact test scenes (SAP.md §6 expects a
handful of iterations on contact-rich steps and every world converged at the default tolerance)."""

import newton
import newton.examples
import numpy as np
import warp as wp

from contact_scenes import Run, box_on_ground, sphere_on_ground

SCENES = {
    "resting sphere": (lambda: sphere_on_ground(), None, 100),
    "sliding box": (lambda: box_on_ground(), [2.0, 0, 0, 0, 0, 0], 100),
    "5-box stack": (lambda: box_on_ground(boxes=5), None, 100),
    "spinning 3-box stack": (lambda: box_on_ground(boxes=3), [0.5, 0, 0, 0, 0, 2.0] * 3, 100),
}


def humanoid():
    robot = newton.ModelBuilder()
    robot.add_mjcf(
        newton.examples.get_asset("nv_humanoid.xml"),
        xform=wp.transform((0.0, 0.0, 1.5), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
    )
    robot.add_ground_plane()
    return robot.finalize()


def test_iterations_and_convergence_over_the_scenes(capsys):
    rows = []
    scenes = dict(SCENES, **{"dropped humanoid": (humanoid, None, 150)})
    for name, (build, qd0, steps) in scenes.items():
        run = Run(build(), qd0=qd0)
        run.step(0.01, steps)
        iterations = np.concatenate(run.iterations)
        converged = np.concatenate(run.converged)
        rows.append((name, iterations.mean(), iterations.max(), converged.mean()))
    with capsys.disabled():
        print("\nscene | Newton iterations/step mean | max | converged fraction")
        for name, mean, top, frac in rows:
            print(f"{name} | {mean:.2f} | {top} | {frac:.3f}")
    for name, mean, top, frac in rows:
        assert frac == 1.0, name
        assert mean < 8.0 and top < 40, name


def test_a_direction_without_descent_far_from_optimal_is_not_converged():
    """``check_convergence`` on four worlds after a line search: optimal, stalled by the cost criterion, no
    descent at round-off level (‖D∇ℓ‖ = 1e-5 of the scale) and no descent far from optimal (a broken
    direction, ‖D∇ℓ‖ = 0.5 of the scale). Only the last ends not converged; all four stop."""
    from newton_sap.line_search import NO_DESCENT
    from newton_sap.sap import check_convergence

    scale = 10.0
    residuals = [1e-7, 1e-3, 1e-4, 5.0]  # ‖D∇ℓ‖ against the threshold 1e-6 · 10 = 1e-5
    norms = wp.array([wp.vec3(r * r, scale * scale, 1.0) for r in residuals], dtype=wp.vec3, device="cpu")
    stalled = wp.array([0, 1, NO_DESCENT, NO_DESCENT], dtype=wp.int32, device="cpu")
    active, converged = wp.ones(4, dtype=wp.int32, device="cpu"), wp.ones(4, dtype=wp.int32, device="cpu")
    iterations, residual = wp.zeros(4, dtype=wp.int32, device="cpu"), wp.zeros(4, dtype=float, device="cpu")
    any_active = wp.zeros(1, dtype=wp.int32, device="cpu")
    count = wp.array([3], dtype=wp.int32, device="cpu")
    offset = wp.array([0, 0, 0, 0], dtype=wp.int32, device="cpu")  # no iterations before this loop (no retry)
    next_sums = [wp.full(4, value, dtype=dtype, device="cpu")  # the next Newton step's sums, zeroed by the check
                 for value, dtype in ((1, wp.int32), (1.0, float), (wp.vec3(1.0), wp.vec3), (1, wp.int32),
                                      (wp.vec2(1.0), wp.vec2))]  # fmt: skip
    plain_newton = wp.zeros(4, dtype=wp.int32, device="cpu")
    wp.launch(check_convergence, dim=4, inputs=[count, 100, 0.0, 1e-6, norms, stalled, offset],
              outputs=[active, iterations, residual, converged, any_active, plain_newton, *next_sums],
              device="cpu")  # fmt: skip
    assert active.numpy().tolist() == [0, 0, 0, 0] and any_active.numpy()[0] == 0
    assert converged.numpy().tolist() == [1, 1, 1, 0]
    assert np.allclose(residual.numpy(), residuals) and iterations.numpy().tolist() == [3] * 4
    assert not any(np.any(array.numpy()) for array in next_sums)


def test_worlds_near_optimality_stop_predicting_stiction():
    """A world that goes on within ``PREDICTION_MAX_RELATIVE_RESIDUAL`` of optimality takes plain Newton steps
    (``world_plain_newton``), one farther out keeps its predictions; a flag already set stays set."""
    from newton_sap.sap import check_convergence
    from newton_sap.stiction_prediction import PREDICTION_MAX_RELATIVE_RESIDUAL

    scale, theta = 10.0, float(PREDICTION_MAX_RELATIVE_RESIDUAL)
    residuals = [0.5 * theta * scale, 2.0 * theta * scale, 0.5 * scale]
    norms = wp.array([wp.vec3(r * r, 1.0, scale * scale) for r in residuals], dtype=wp.vec3, device="cpu")
    plain_newton = wp.array([0, 0, 1], dtype=wp.int32, device="cpu")
    active = wp.ones(3, dtype=wp.int32, device="cpu")
    any_active = wp.zeros(1, dtype=wp.int32, device="cpu")
    wp.launch(check_convergence, dim=3,
              inputs=[wp.array([1], dtype=wp.int32, device="cpu"), 100, 0.0, 1e-6, norms,
                      wp.zeros(3, dtype=wp.int32, device="cpu"), wp.zeros(3, dtype=wp.int32, device="cpu")],
              outputs=[active, wp.zeros(3, dtype=wp.int32, device="cpu"), wp.zeros(3, dtype=float, device="cpu"),
                       wp.ones(3, dtype=wp.int32, device="cpu"), any_active, plain_newton,
                       *(wp.zeros(3, dtype=dtype, device="cpu") for dtype in (wp.int32, float, wp.vec3, wp.int32,
                                                                               wp.vec2))],
              device="cpu")  # fmt: skip
    assert active.numpy().tolist() == [1, 1, 1] and any_active.numpy()[0] == 1
    assert plain_newton.numpy().tolist() == [1, 0, 1]


def test_backtracking_converges_on_the_dropped_humanoid():
    """Armijo backtracking on a landing humanoid: where no trial decreases the cost enough along a descent
    direction, the last (shortest) trial is taken and Newton's method goes on; every step converges."""
    run = Run(humanoid(), line_search="backtracking")
    run.step(0.01, 100)
    assert np.concatenate(run.converged).all()
