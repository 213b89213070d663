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
