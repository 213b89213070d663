"""The runnable scenes: each is a small function building a Newton model (copy them as examples).

A :class:`Scene` bundles the model builder with what a run needs: whether contacts are collided,
the default time step and duration, and an optional controller setting PD targets each step.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import newton
import newton.examples
import numpy as np
import warp as wp

from . import double_cartpole

QUADRUPED_STANCE = [0.2, 0.4, -0.6, -0.2, -0.4, 0.6, -0.2, 0.4, -0.6, 0.2, -0.4, 0.6]

PANDA_URDF = os.path.join(os.path.dirname(__file__), "assets", "panda.urdf")
"""example-robot-data's Panda URDF without its meshes (see the file's header)."""

ALLEGRO_URDF = os.path.join(os.path.dirname(__file__), "assets", "allegro_right_hand.urdf")
"""example-robot-data's right Allegro hand URDF without its meshes (see the file's header)."""


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
        traced_body: Label (after its last ``/``) of the body of world 0 whose position the run plots; None:
            body 0.
        traced_axis: The plotted coordinate of that body's origin (0: x, 1: y, 2: z).
    """

    description: str
    build: Callable[[int], newton.Model]
    contacts: bool = True
    dt: float = 0.01
    seconds: float = 2.0
    targets: Callable[[newton.Model, float], np.ndarray] | None = None
    traced_body: str | None = None
    traced_axis: int = 2


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
    """Twenty spheres (r = 5 cm) dropped into a bin of four static walls: five layers, 12 cm apart, of 2 × 2
    spheres 13 cm apart, jittered by up to 1 cm so the pile is not a lattice (none touch at the start)."""
    robot = newton.ModelBuilder()
    for x, y, hx, hy in ((0.25, 0, 0.02, 0.25), (-0.25, 0, 0.02, 0.25), (0, 0.25, 0.25, 0.02), (0, -0.25, 0.25, 0.02)):
        robot.add_shape_box(-1, xform=wp.transform((x, y, 0.25), wp.quat_identity()), hx=hx, hy=hy, hz=0.25)
    rng = np.random.default_rng(0)
    for k in range(20):
        layer, i, j = k // 4, (k // 2) % 2, k % 2
        dx, dy = rng.uniform(-0.01, 0.01, 2)
        p = (0.13 * (i - 0.5) + dx, 0.13 * (j - 0.5) + dy, 0.06 + 0.12 * layer)
        robot.add_shape_sphere(robot.add_body(xform=wp.transform(p, wp.quat_identity())), radius=0.05)
    return _replicate(robot, worlds)


def snake_builder(links: int = 66, half: float = 0.06, gap: float = 0.005, height: float = 0.04) -> newton.ModelBuilder:
    """A snake of ``links`` boxes of 12 × 6 × 6 cm (0.43 kg, μ 0.6) joined end to end by hinges about z under a FREE
    root: one tree of ``links + 5`` dofs (71 by default: above ``dense_max_dofs``), in an S (hinge k at
    0.25 sin(2πk/22) rad: a heading swinging about ±50°, no two links overlapping), its root ``height`` [m] up (by
    default 1 cm above the ground). Not a runnable scene: at rest it is beyond float32's conditioning (cond(H) ≈ 4e11;
    the README's options section), which ``benchmarks/bench_contact.py --scenes snake`` and the tests measure."""
    robot = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.6)
    joints, parent = [], None
    for k in range(links):
        link = robot.add_link()
        robot.add_shape_box(link, hx=half, hy=0.03, hz=0.03, cfg=cfg)
        if parent is None:
            joints.append(robot.add_joint_free(link, parent_xform=wp.transform((0.0, 0.0, height), wp.quat_identity())))
        else:
            joints.append(robot.add_joint_revolute(
                parent, link, axis=(0.0, 0.0, 1.0), parent_xform=wp.transform((half + gap, 0, 0), wp.quat_identity()),
                child_xform=wp.transform((-half - gap, 0, 0), wp.quat_identity()),
            ))  # fmt: skip
            robot.joint_q[robot.joint_q_start[joints[-1]]] = 0.25 * np.sin(2.0 * np.pi * k / 22.0)
        parent = link
    robot.add_articulation(joints)
    return robot


def _mjcf_robot(asset: str, height: float) -> newton.ModelBuilder:
    """Newton's bundled MJCF ``asset`` as a floating robot with its root at ``height`` [m], no self-collisions."""
    robot = newton.ModelBuilder()
    robot.add_mjcf(
        newton.examples.get_asset(asset),
        xform=wp.transform((0.0, 0.0, height), wp.quat_identity()),
        floating=True,
        enable_self_collisions=False,
    )
    return robot


def ant_drop(worlds: int) -> newton.Model:
    """Newton's MJCF ant (unactuated) dropped onto the ground; its joint limits hold it up. The importer starts every
    hinge at 0, outside the ankles' ranges (30-100°), from where the limits would swing the legs through their range
    onto the far limit: the hinges start clamped into their ranges (as MuJoCo's ant lands, torso at 0.37 m)."""
    robot = _mjcf_robot("nv_ant.xml", 0.8)
    for j, kind in enumerate(robot.joint_type):
        if kind == newton.JointType.REVOLUTE:
            coord, dof = robot.joint_q_start[j], robot.joint_qd_start[j]
            lower, upper = robot.joint_limit_lower[dof], robot.joint_limit_upper[dof]
            robot.joint_q[coord] = min(max(robot.joint_q[coord], lower), upper)
    return _replicate(robot, worlds)


def humanoid_drop(worlds: int) -> newton.Model:
    """Newton's MJCF humanoid (unactuated) dropped onto the ground; it falls and comes to rest."""
    return _replicate(_mjcf_robot("nv_humanoid.xml", 1.4), worlds)


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


# Colliders of the Panda's links (its URDF's collision meshes need trimesh): capsules (segment end points and
# radius [m], in the link frame) and a box for the hand, fitted to the bounding boxes of those meshes. The fingers
# keep their URDF box colliders. The base (link0, bolted to the ground) is drawn but does not collide.
_PANDA_CAPSULES = {
    "panda_link1": ((0.0, 0.0, -0.137), (0.0, 0.0, 0.0), 0.055),
    "panda_link2": ((0.0, 0.0, 0.0), (0.0, -0.139, 0.0), 0.055),
    "panda_link3": ((0.0, 0.0, -0.066), (0.083, 0.0, 0.0), 0.055),
    "panda_link4": ((0.0, 0.0, 0.0), (-0.083, 0.069, 0.0), 0.055),
    "panda_link5": ((0.0, 0.0, -0.21), (0.0, 0.0, 0.0), 0.055),
    "panda_link6": ((0.0, 0.0, 0.0), (0.088, 0.0, 0.0), 0.05),
    "panda_link7": ((0.0, 0.0, 0.055), (0.0, 0.0, 0.085), 0.045),
}
_PANDA_HAND_BOX = ((0.0, -0.002, 0.02), (0.032, 0.102, 0.046))  # centre, half extents [m] in the hand frame
_PANDA_BASE_CYLINDER = ((-0.04, 0.0, 0.07), 0.09, 0.07)  # centre, radius, half height [m] in the link0 frame

# Arm keyframes: time [s] and joint 1-7 targets [rad] putting the hand's tool-centre point, pointing down with the
# fingers along y, at (x, 0, z) [m]: above (0.42, 0.20), lowered (0.42, 0.038), pushed (0.62, 0.038), lifted
# (0.60, 0.12) (damped least squares on the model's FK). Without gravity compensation the PD sags by ~4 mm: the
# fingertips (1.85 cm tall) push the cube's face between 2.4 and 4.3 cm, the fingers' wider screw mounts pass above.
_PANDA_KEYFRAMES = (
    (0.0, (0.0, -0.1712, 0.0, -2.6371, 0.0, 2.4659, 0.7854)),
    (0.6, (0.0, 0.3112, 0.0, -2.6316, 0.0, 2.9429, 0.7854)),
    (2.0, (0.0, 0.6630, 0.0, -1.9235, 0.0, 2.5865, 0.7854)),
    (2.5, (0.0, 0.4462, 0.0, -2.0330, 0.0, 2.4792, 0.7854)),
)
PANDA_FINGER_OPENING = 0.01
"""Target of each finger joint [m]: the fingertips 2 cm apart, pushing side by side."""
PANDA_CONTACT_GAP = 0.01
"""Contact detection gap [m] of every shape (Newton's default 0.1 m makes ~4x more, mostly far, contacts)."""
PANDA_CUBE_START = (0.55, 0.0, 0.025)
"""Initial centre of the pushed 5 cm cube [m] (the hand pushes it along +x)."""


def panda_push(worlds: int) -> newton.Model:
    """A Franka Panda bolted to the ground pushes a 5 cm, 250 g cube (μ 0.5) 10 cm along x with its fingertips.

    The arm is example-robot-data's URDF (:data:`PANDA_URDF`) with primitive colliders (``_PANDA_CAPSULES``),
    armature 0.1 kg·m² per joint (MuJoCo Menagerie's value), self-collisions off, every joint under PD tracking
    :func:`_panda_targets`: Kp 8000 / 1000 N·m/rad and Kd 250 / 50 N·m·s/rad on joints 1-4 / 5-7, Kp 1000 N/m and
    Kd 20 N·s/m on the fingers; the URDF's effort limits (87 / 12 N·m, 100 N) cap the drives.
    """
    robot = newton.ModelBuilder()
    robot.rigid_gap = PANDA_CONTACT_GAP
    robot.default_joint_cfg.armature = 0.1
    robot.default_shape_cfg.mu = 0.5
    robot.add_urdf(PANDA_URDF, floating=False, enable_self_collisions=False)
    link = {label.rsplit("/", 1)[-1]: k for k, label in enumerate(robot.body_label)}
    arm_shapes = list(range(robot.shape_count))  # the fingers' boxes
    cfg = robot.default_shape_cfg.copy()
    cfg.density = 0.0  # the URDF's inertias stay as they are
    for name, (p0, p1, radius) in _PANDA_CAPSULES.items():
        p0, p1 = np.asarray(p0), np.asarray(p1)
        length = float(np.linalg.norm(p1 - p0))
        rotation = wp.quat_between_vectors(wp.vec3(0.0, 0.0, 1.0), wp.vec3(*((p1 - p0) / length)))
        xform = wp.transform(wp.vec3(*(0.5 * (p0 + p1))), rotation)
        arm_shapes.append(robot.add_shape_capsule(link[name], xform=xform, radius=radius, half_height=0.5 * length,
                                                  cfg=cfg))  # fmt: skip
    centre, (hx, hy, hz) = _PANDA_HAND_BOX
    xform = wp.transform(centre, wp.quat_identity())
    arm_shapes.append(robot.add_shape_box(link["panda_hand"], xform=xform, hx=hx, hy=hy, hz=hz, cfg=cfg))
    for a, i in enumerate(arm_shapes):  # no self-collisions
        for j in arm_shapes[a + 1 :]:
            robot.add_shape_collision_filter_pair(i, j)
    visual = cfg.copy()
    visual.has_shape_collision = visual.has_particle_collision = False
    centre, radius, half_height = _PANDA_BASE_CYLINDER
    xform = wp.transform(centre, wp.quat_identity())
    robot.add_shape_cylinder(link["panda_link0"], xform=xform, radius=radius, half_height=half_height, cfg=visual)
    cube = robot.add_body(xform=wp.transform(PANDA_CUBE_START, wp.quat_identity()), label="cube")
    robot.add_shape_box(cube, hx=0.025, hy=0.025, hz=0.025, cfg=newton.ModelBuilder.ShapeConfig(mu=0.5, density=2000.0))
    robot.joint_q[:9] = [*_PANDA_KEYFRAMES[0][1], PANDA_FINGER_OPENING, PANDA_FINGER_OPENING]
    scene = newton.ModelBuilder()
    scene.rigid_gap = PANDA_CONTACT_GAP
    scene.default_shape_cfg.mu = 0.5
    scene.replicate(robot, worlds)
    scene.add_ground_plane()
    model = scene.finalize()
    worlds = max(model.world_count, 1)
    driven = np.r_[np.ones(9, bool), np.zeros(6, bool)]  # per world: 7 arm joints, 2 fingers; the cube's free joint
    mode = np.where(driven, int(newton.JointTargetMode.POSITION), int(newton.JointTargetMode.NONE))
    model.joint_target_mode.assign(np.tile(mode, worlds).astype(np.int32))
    ke = np.r_[np.full(4, 8000.0), np.full(3, 1000.0), 1000.0, 1000.0, np.zeros(6)]
    kd = np.r_[np.full(4, 250.0), np.full(3, 50.0), 20.0, 20.0, np.zeros(6)]
    model.joint_target_ke.assign(np.tile(ke, worlds).astype(np.float32))
    model.joint_target_kd.assign(np.tile(kd, worlds).astype(np.float32))
    return model


def _panda_targets(model: newton.Model, t: float) -> np.ndarray:
    """Arm joint targets through :data:`_PANDA_KEYFRAMES` (smoothstep between them, then held); fingers fixed."""
    times = [k[0] for k in _PANDA_KEYFRAMES]
    k = int(np.searchsorted(times, t, side="right")) - 1
    if k + 1 < len(times):
        s = (t - times[k]) / (times[k + 1] - times[k])
        s = s * s * (3.0 - 2.0 * s)
        arm = (1.0 - s) * np.asarray(_PANDA_KEYFRAMES[k][1]) + s * np.asarray(_PANDA_KEYFRAMES[k + 1][1])
    else:
        arm = np.asarray(_PANDA_KEYFRAMES[-1][1])
    q = model.joint_q.numpy().copy()
    per_world = q.reshape(max(model.world_count, 1), -1)
    per_world[:, :7] = arm
    per_world[:, 7:9] = PANDA_FINGER_OPENING
    return per_world.ravel().astype(np.float32)


ALLEGRO_HEIGHT = 0.3
"""Height [m] of the Allegro hand's base frame, at the palm's finger end (the palm reaches 9.5 cm along +x to the
wrist); the palm faces up, the fingers point along -x."""
ALLEGRO_POSE = (0.0, 0.3, 0.3, 0.3) * 3 + (1.2, 0.3, 0.3, 0.3)
"""Joint targets [rad] of the Allegro hand at rest: index, middle and ring fingers (abduction, three flexions), then
the thumb, curled 0.3 rad at each flexion into a shallow cup."""
ALLEGRO_CUBE_START = (-0.05, 0.0, ALLEGRO_HEIGHT + 0.07)
"""Initial centre of the 5 cm cube [m], about 2 cm above the curled fingers."""
ALLEGRO_PALM_TOP = ALLEGRO_HEIGHT + 0.0111
"""Height [m] of the palm's top face (its URDF box spans -0.0297 to 0.0111 m along the base frame's x)."""


def allegro_builder(armature: float = 1e-3) -> newton.ModelBuilder:
    """One world: the right Allegro hand (:data:`ALLEGRO_URDF`, 16 revolute dofs on a fixed base, links of 10-65 g
    with principal inertias down to 6.5e-7 kg·m², box and sphere colliders) palm up, under PD toward
    :data:`ALLEGRO_POSE` (Kp 3 N·m/rad, Kd 0.1 N·m·s/rad, ``armature`` [kg·m²] on every joint (the URDF has none),
    the URDF's 15 N·m effort limits), and a free 5 cm, 100 g cube (μ 1 on every shape) at
    :data:`ALLEGRO_CUBE_START`. The URDF's joint friction (5-12 N·m) and damping (3-10 N·m·s/rad), tuned for Gazebo,
    would hold the fingers still against these drives: both are set to zero. Newton balances four links' inertias
    that violate the triangle inequality (a warning at ``finalize``)."""
    hand = newton.ModelBuilder()
    hand.rigid_gap = 0.005
    hand.default_joint_cfg.armature = armature
    hand.default_shape_cfg.mu = 1.0
    palm_up = wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), -0.5 * np.pi)  # the palm's normal, base x, to +z
    hand.add_urdf(ALLEGRO_URDF, xform=wp.transform((0.0, 0.0, ALLEGRO_HEIGHT), palm_up), floating=False,
                  enable_self_collisions=False)  # fmt: skip
    coords, dofs = hand.joint_coord_count, hand.joint_dof_count  # equal: revolute and fixed joints
    hand.joint_q[:coords] = ALLEGRO_POSE
    hand.joint_target_q[:coords] = ALLEGRO_POSE
    hand.joint_target_mode[:dofs] = [int(newton.JointTargetMode.POSITION)] * dofs
    hand.joint_target_ke[:dofs] = [3.0] * dofs
    hand.joint_target_kd[:dofs] = [0.1] * dofs
    hand.joint_friction[:dofs] = [0.0] * dofs
    hand.joint_damping[:dofs] = [0.0] * dofs
    cube = hand.add_body(xform=wp.transform(ALLEGRO_CUBE_START, wp.quat_identity()), label="cube")
    hand.add_shape_box(cube, hx=0.025, hy=0.025, hz=0.025, cfg=newton.ModelBuilder.ShapeConfig(mu=1.0, density=800.0))
    return hand


def allegro_cube(worlds: int, armature: float = 1e-3) -> newton.Model:
    """:func:`allegro_builder` in ``worlds`` worlds above a ground plane (the cube lands there if it is dropped)."""
    return _replicate(allegro_builder(armature), worlds)


def _allegro_targets(model: newton.Model, t: float) -> np.ndarray:
    """The rest pose, the index, middle and ring fingers flexing by up to 0.4 rad at each joint in a wave (period 1 s,
    each finger 0.15 s behind the one before), the thumb still."""
    pose = np.asarray(ALLEGRO_POSE)
    for finger in range(3):
        pose[4 * finger + 1 : 4 * finger + 4] += 0.4 * np.sin(np.pi * (t - 0.15 * finger)) ** 2
    q = model.joint_q.numpy().copy()
    per_world = q.reshape(max(model.world_count, 1), -1)
    per_world[:, :16] = pose
    return per_world.ravel().astype(np.float32)


GRIPPER_CUBE_MASS = 0.2
"""Mass [kg] of the gripper scene's cube."""
GRIPPER_CUBE_HALF = 0.025
"""Half size [m] of the gripper scene's cube (a 5 cm cube)."""
GRIPPER_MU = 0.5
"""Friction coefficient of every shape of the gripper scene."""
GRIPPER_PAD_HALF = (0.01, 0.02, 0.04)
"""Half sizes [m] of the gripper scene's finger pads (x: toward the cube)."""
GRIPPER_PAD_Z = 0.05
"""Height [m] of the finger pads' centres at the start."""
GRIPPER_OPENING = 0.003
"""Gap [m] between each finger pad and the cube's face at the start."""
GRIPPER_LIFT = (0.3, 1.3, 0.2)
"""The palm's lift: from time 0.3 s to 1.3 s [s] it rises by 0.2 m (smoothstep: at most 1.2 m/s²)."""


def gripper_threshold(gravity: float = 9.81) -> float:
    """The squeeze [N] at which the gripper scene's fingers just hold its cube on friction: ``m g / (2 μ)``."""
    return GRIPPER_CUBE_MASS * gravity / (2.0 * GRIPPER_MU)


def gripper_builder(squeeze: float, lifting: bool = True) -> newton.ModelBuilder:
    """One world: a parallel gripper around a free 5 cm, 200 g cube (μ 0.5 on every shape) whose bottom face lies at
    z = 0. Two finger pads (2 × 4 × 8 cm, 64 g, centred at z = 5 cm) slide along x on prismatic joints of a palm
    (at z = 12 cm), 3 mm from the cube's faces, under position drives (Kp 2000 N/m, Kd 20 N·s/m) aimed 2 cm past
    those faces and saturated at their effort limit ``squeeze`` [N]: each presses the cube with that force, and
    friction alone carries it, up to ``2 μ squeeze`` (:func:`gripper_threshold`). ``lifting``: the palm rides a
    prismatic joint along z under a position drive (Kp 1e4 N/m, Kd 130 N·s/m, target 0 at the start,
    :func:`_gripper_targets`); else it is welded to the world and the cube starts 4 cm higher, its top face flush
    with the pads' (nothing under it: with a squeeze below the threshold it slides down the pads at
    ``g − 2 μ squeeze / m``, its bottom face past their lower edge after 3 cm, until it leaves them after 8 cm)."""
    cube_half, pad = GRIPPER_CUBE_HALF, GRIPPER_PAD_HALF
    hand = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=GRIPPER_MU, density=1000.0)
    palm_at = wp.transform((0.0, 0.0, 0.12), wp.quat_identity())
    palm = hand.add_link(xform=palm_at, label="palm")
    hand.add_shape_box(palm, hx=0.06, hy=0.03, hz=0.01, cfg=cfg)
    if lifting:
        joints = [hand.add_joint_prismatic(-1, palm, parent_xform=palm_at, axis=(0.0, 0.0, 1.0), target_ke=1.0e4,
                                           target_kd=130.0, actuator_mode=newton.JointTargetMode.POSITION,
                                           label="lift")]  # fmt: skip
    else:
        joints = [hand.add_joint_fixed(-1, palm, parent_xform=palm_at)]
    for side in (1.0, -1.0):
        x = side * (cube_half + pad[0] + GRIPPER_OPENING)
        finger = hand.add_link(
            xform=wp.transform((x, 0.0, GRIPPER_PAD_Z), wp.quat_identity()), label=f"finger_{side:+.0f}"
        )
        hand.add_shape_box(finger, hx=pad[0], hy=pad[1], hz=pad[2], cfg=cfg)
        joints.append(hand.add_joint_prismatic(
            palm, finger, parent_xform=wp.transform((x, 0.0, GRIPPER_PAD_Z - 0.12), wp.quat_identity()),
            axis=(-side, 0.0, 0.0), target_ke=2000.0, target_kd=20.0, effort_limit=squeeze, limit_lower=-0.02,
            limit_upper=0.05, actuator_mode=newton.JointTargetMode.POSITION, label=f"finger_{side:+.0f}",
        ))  # fmt: skip
        hand.joint_target_q[-1] = GRIPPER_OPENING + 0.02  # [m] along the axis, toward the cube
    hand.add_articulation(joints)
    cube_z = cube_half if lifting else GRIPPER_PAD_Z + pad[2] - cube_half
    cube = hand.add_body(xform=wp.transform((0.0, 0.0, cube_z), wp.quat_identity()), label="cube")
    density = GRIPPER_CUBE_MASS / (2.0 * cube_half) ** 3
    hand.add_shape_box(cube, hx=cube_half, hy=cube_half, hz=cube_half,
                       cfg=newton.ModelBuilder.ShapeConfig(mu=GRIPPER_MU, density=density))  # fmt: skip
    return hand


def gripper_lift(worlds: int) -> newton.Model:
    """:func:`gripper_builder` squeezing at 1.5 times :func:`gripper_threshold` (enough for the lift's 1.2 m/s²),
    the cube resting on a ground plane."""
    return _replicate(gripper_builder(1.5 * gripper_threshold()), worlds)


def _gripper_targets(model: newton.Model, t: float) -> np.ndarray:
    """The palm's height along :data:`GRIPPER_LIFT` (smoothstep), the fingers' targets as built."""
    start, end, height = GRIPPER_LIFT
    s = np.clip((t - start) / (end - start), 0.0, 1.0)
    targets = model.joint_target_q.numpy().copy()
    per_world = targets.reshape(max(model.world_count, 1), -1)
    per_world[:, 0] = height * s * s * (3.0 - 2.0 * s)
    return per_world.ravel()


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
    "panda_push": Scene(
        "Franka Panda under PD pushes a cube 10 cm across the ground",
        panda_push,
        dt=5e-3,
        seconds=3.0,
        targets=_panda_targets,
        traced_body="cube",
        traced_axis=0,
    ),
    "allegro_cube": Scene(
        "Allegro hand, palm up, catches a cube and waves its fingers under it",
        allegro_cube,
        seconds=3.0,
        targets=_allegro_targets,
        traced_body="cube",
    ),
    "gripper_lift": Scene(
        "parallel gripper squeezes a 200 g cube at 1.5x its friction threshold and lifts it 20 cm",
        gripper_lift,
        seconds=2.5,
        targets=_gripper_targets,
        traced_body="cube",
    ),
}
"""Every scene ``newton-sap run`` knows, by name."""
