"""A dexterous hand: the right Allegro hand of example-robot-data (16 revolute dofs, links of 10-65 g with principal
inertias down to 6.5e-7 kg·m²) under PD, with a free 100 g cube (``examples.scenes.allegro_builder``). Light links
against a heavier object and stiff contacts make ill-conditioned Newton systems, the case float32 solves find
hardest."""

import numpy as np
import pytest
from sap_reference import solve_sap_problem

from newton_sap.constraints.dispatch import CONTACT
from newton_sap.examples.scenes import ALLEGRO_PALM_TOP, SCENES, allegro_cube

from contact_scenes import Run

CUBE_HALF = 0.025


def test_the_hand_catches_the_cube_and_keeps_it():
    """The scene: the cube lands on the curled fingers, the finger wave lifts it and it slides onto the palm, where it
    comes to rest flat on the palm's face; it never leaves the hand or sinks into it, every step converges and the
    fingers keep tracking the wave."""
    scene = SCENES["allegro_cube"]
    model = scene.build(2)
    run = Run(model, control=model.control())
    cube = [k for k, label in enumerate(model.body_label) if label.endswith("cube")]
    assert len(cube) == 2
    lowest = np.inf
    for k in range(int(round(scene.seconds / scene.dt))):
        run.control.joint_target_q.assign(scene.targets(model, k * scene.dt))
        run.step(scene.dt)
        assert run.converged[-1].all(), f"step {k}"
        pose = run.s0.body_q.numpy()[cube]
        assert np.all(np.abs(pose[:, 1]) < 0.05) and np.all(pose[:, 2] < 0.4), f"step {k}: the cube left the hand"
        lowest = min(lowest, float(pose[:, 2].min()))
    assert lowest > ALLEGRO_PALM_TOP + CUBE_HALF - 1e-3  # never more than 1 mm into the palm
    pose = run.s0.body_q.numpy()[cube]
    assert np.allclose(pose[:, 2], ALLEGRO_PALM_TOP + CUBE_HALF, atol=5e-4)  # resting on the palm's face
    x, y, z, w = pose[:, 3:].T
    up = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=1)  # axes' z components
    assert np.all(np.abs(up).max(axis=1) > 0.9999)  # flat: a face on the palm (the cube may have tumbled)
    qd = run.qd.reshape(2, -1)
    assert np.abs(qd[:, 16:]).max() < 1e-2  # the cube at rest [m/s, rad/s]
    q = run.q.reshape(2, -1)[:, :16]
    assert np.abs(q - scene.targets(model, scene.seconds).reshape(2, -1)[:, :16]).max() < 0.1  # [rad]


@pytest.mark.parametrize("armature", [1e-3, 0.0], ids=["armature", "urdf-inertias-alone"])
def test_random_finger_targets_solve_to_the_float64_optimum(armature):
    """Random joint targets within the limits, new every 0.1 s (a policy at its first updates), knock the cube about.
    Every SAP problem of a snapshot every 10 steps (drives, limits and the contacts of the cube with the hand and the
    ground), solved in float32 on the default path, converges to the float64 solve of the same problem within 1e-4 of
    its largest velocity; also without armature, where the distal finger joints see about 2e-5 kg·m²."""
    worlds, dt = 4, 0.01
    model = allegro_cube(worlds, armature)
    run = Run(model, control=model.control())
    lower = model.joint_limit_lower.numpy().reshape(worlds, -1)[:, :16]
    upper = model.joint_limit_upper.numpy().reshape(worlds, -1)[:, :16]
    targets = model.joint_q.numpy().reshape(worlds, -1).copy()
    rng = np.random.default_rng(0)
    with_contacts = 0
    for k in range(40):
        if k % 10 == 0:
            targets[:, :16] = lower + (upper - lower) * rng.random((worlds, 16))
            run.control.joint_target_q.assign(targets.ravel().astype(np.float32))
        if k % 10 == 9:
            run.pipeline.collide(run.s0, run.contacts)
            snap = run.solver.snapshot(run.s0, control=run.control, dt=dt, contacts=run.contacts)
            for w in range(worlds):
                with_contacts += int(np.any(snap.constraint_kind[w] == CONTACT))
                assert bool(run.solver.stats.converged[w]), f"step {k}, world {w}"
                v_ref = solve_sap_problem(snap, w, max_iterations=200)
                error = np.abs(snap.velocity[w] - v_ref).max() / np.abs(v_ref).max()
                assert error < 1e-4, f"step {k}, world {w}: {error:.1e}"
        run.step(dt)
    assert with_contacts >= 12  # most of the 16 problems have contacts
