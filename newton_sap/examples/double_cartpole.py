"""Default scene: a double pendulum on a cart (Newton's bundled ``cartpole.urdf``), many worlds.

Every world starts from slightly different pole angles; the motion is chaotic, so the worlds spread
apart while each conserves its energy up to the integrator's O(Δt) error. No contacts: the scene
shows the articulated dynamics alone (the other scenes of ``scenes.py`` add contact, drives and limits)."""

from __future__ import annotations

import newton
import newton.examples
import numpy as np


def build(worlds: int) -> newton.ModelBuilder:
    """``worlds`` copies of the double cartpole (3 dofs each: cart slider, two pole hinges)."""
    robot = newton.ModelBuilder()
    robot.add_urdf(newton.examples.get_asset("cartpole.urdf"), floating=False, enable_self_collisions=False)
    scene = newton.ModelBuilder()
    scene.replicate(robot, worlds)
    return scene


def initial_state(model: newton.Model, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Poles tilted by about 0.9 rad and −0.3 rad [rad], spread by ±1 mrad across worlds; at rest."""
    worlds = max(model.world_count, 1)
    q = np.zeros((worlds, 3), np.float32)
    q[:, 1] = 0.9 + rng.uniform(-1e-3, 1e-3, worlds)
    q[:, 2] = -0.3 + rng.uniform(-1e-3, 1e-3, worlds)
    return q.ravel(), np.zeros(worlds * 3, np.float32)


def model(worlds: int) -> newton.Model:
    """The finalized scene with :func:`initial_state` (seed 0) as its ``joint_q``/``joint_qd``."""
    m = build(worlds).finalize()
    q, qd = initial_state(m, np.random.default_rng(0))
    m.joint_q.assign(q)
    m.joint_qd.assign(qd)
    return m
