"""The runnable scenes: each is a small function building a Newton model (copy them as examples).

A :class:`Scene` bundles the model builder with what a run needs: whether contacts are collided,
the default time step and duration, and an optional controller setting PD targets each step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import newton
import newton.examples
import numpy as np
import warp as wp

from . import double_cartpole

QUADRUPED_STANCE = [0.2, 0.4, -0.6, -0.2, -0.4, 0.6, -0.2, 0.4, -0.6, 0.2, -0.4, 0.6]


@dataclass(frozen=True)
class Scene:
    """A scene: ``build(worlds) -> newton.Model`` plus run defaults.

    Attributes:
        description: One line for ``newton-sap list``.
        build: Builds the model with ``worlds`` copies (initial state in ``model.joint_q``).
        contacts: Whether the run collides shapes (Newton's CollisionPipeline) every step.
        dt: Default time step [s].
        seconds: Default simulated duration [s].
        targets: Optional ``(model, t) -> joint_target_q`` for PD-driven scenes.
    """

    description: str
    build: Callable[[int], newton.Model]
    contacts: bool = True
    dt: float = 0.01
    seconds: float = 2.0
    targets: Callable[[newton.Model, float], np.ndarray] | None = None


def _replicate(robot: newton.ModelBuilder, worlds: int, ground: bool = True) -> newton.Model:
    scene = newton.ModelBuilder()
    scene.replicate(robot, worlds)
    if ground:
        scene.add_ground_plane()
    return scene.finalize()


def box_stack(worlds: int) -> newton.Model:
    """Five 0.2 m cubes (1 kg, μ 0.5) stacked on the ground."""
    robot = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.5, density=125.0)
    for k in range(5):
        body = robot.add_body(xform=wp.transform((0.0, 0.0, 0.1 + 0.2 * k), wp.quat_identity()))
        robot.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1, cfg=cfg)
    return _replicate(robot, worlds)


def sphere_pile(worlds: int) -> newton.Model:
    """Twenty spheres (r = 5 cm) dropped into a bin of four static walls."""
    robot = newton.ModelBuilder()
    for x, y, hx, hy in ((0.25, 0, 0.02, 0.25), (-0.25, 0, 0.02, 0.25), (0, 0.25, 0.25, 0.02), (0, -0.25, 0.25, 0.02)):
        robot.add_shape_box(-1, xform=wp.transform((x, y, 0.25), wp.quat_identity()), hx=hx, hy=hy, hz=0.25)
    rng = np.random.default_rng(0)
    for k in range(20):
        p = (rng.uniform(-0.15, 0.15), rng.uniform(-0.15, 0.15), 0.06 + 0.11 * k / 3)
        robot.add_shape_sphere(robot.add_body(xform=wp.transform(p, wp.quat_identity())), radius=0.05)
    return _replicate(robot, worlds)


def _mjcf_robot(asset: str, height: float, worlds: int) -> newton.Model:
    robot = newton.ModelBuilder()
    robot.add_mjcf(
        newton.examples.get_asset(asset),
        xform=wp.transform((0.0, 0.0, height), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
    )
    return _replicate(robot, worlds)


def ant_drop(worlds: int) -> newton.Model:
    """Newton's MJCF ant (unactuated) dropped onto the ground; its joint limits hold it up."""
    return _mjcf_robot("nv_ant.xml", 0.8, worlds)


def humanoid_drop(worlds: int) -> newton.Model:
    """Newton's MJCF humanoid (unactuated) dropped onto the ground; it falls and comes to rest."""
    return _mjcf_robot("nv_humanoid.xml", 1.4, worlds)


def quadruped_pd(worlds: int) -> newton.Model:
    """Newton's bundled quadruped (URDF) standing under PD (Kp 2000, Kd 10) on the ground."""
    robot = newton.ModelBuilder()
    robot.default_joint_cfg.armature = 0.01
    robot.default_shape_cfg.mu = 1.0
    robot.add_urdf(
        newton.examples.get_asset("quadruped.urdf"),
        xform=wp.transform((0.0, 0.0, 0.7), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
        ignore_inertial_definitions=True,
    )
    robot.joint_q[-12:] = QUADRUPED_STANCE
    model = _replicate(robot, worlds)
    n = model.joint_dof_count
    mode = model.joint_target_mode.numpy()
    mode[:] = int(newton.JointTargetMode.POSITION)
    free = model.joint_qd_start.numpy()[:-1][model.joint_type.numpy() == int(newton.JointType.FREE)]
    for start in free:
        mode[start : start + 6] = int(newton.JointTargetMode.NONE)
    model.joint_target_mode.assign(mode)
    model.joint_target_ke.assign(np.full(n, 2000.0, np.float32))
    model.joint_target_kd.assign(np.full(n, 10.0, np.float32))
    return model


def _quadruped_targets(model: newton.Model, t: float) -> np.ndarray:
    """The stance, the knees swaying ±0.1 rad at 1 Hz."""
    q = model.joint_q.numpy().copy()
    worlds = max(model.world_count, 1)
    per_world = q.reshape(worlds, -1)
    per_world[:, -12:] = np.asarray(QUADRUPED_STANCE) + 0.1 * np.sin(2 * np.pi * t) * np.tile([0, 0, 1], 4)
    return per_world.ravel().astype(np.float32)


SCENES: dict[str, Scene] = {
    "double_cartpole": Scene(
        "double pendulum on a cart, chaotic, no contacts (energy drift is the check)",
        double_cartpole.model,
        contacts=False,
        dt=1e-3,
        seconds=3.0,
    ),
    "box_stack": Scene("five cubes stacked on the ground", box_stack),
    "sphere_pile": Scene("twenty spheres dropped into a bin", sphere_pile, seconds=1.5),
    "ant": Scene("MuJoCo ant dropped onto the ground (unactuated)", ant_drop),
    "humanoid": Scene("MuJoCo humanoid dropped onto the ground (unactuated)", humanoid_drop, seconds=3.0),
    "quadruped": Scene(
        "quadruped standing under PD, knees swaying", quadruped_pd, dt=5e-3, seconds=3.0, targets=_quadruped_targets
    ),
}
"""Every scene ``newton-sap run`` knows, by name."""
