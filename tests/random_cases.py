"""Random multi-world scenes from a seed, for checks against the float64 SAP solve (``sap_reference``).

A case holds 1-4 worlds (in 15 % of the cases 1-2 larger ones of 4-7 trees) of random articulated trees (every joint
type; roots also DISTANCE), a sphere, box or capsule on the bodies, a ground plane per world placed from the lowest
shape (in the detection gap, touching or penetrating), random drives, limits near the current q (some violated),
joint friction, damping and stiffness, random targets and initial velocities. The *harsh* profile has mass ratios
up to 1e3, speeds up to 8 m/s, larger and more shapes, deeper starts, stiffer drives and Δt up to 0.04 s.

``build_case(seed, harsh)`` is deterministic in its arguments (for one version of Newton and Warp). These cases come
from a differential fuzz of the solver against the float64 solve; tests keep the seeds whose findings were fixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import newton
import numpy as np
import warp as wp

from random_trees import add_random_tree, random_quat, uniform_mass

ROOT_TYPES = ("free", "free", "distance", "revolute", "ball", "d6", "prismatic", "fixed")
"""Root joint types drawn (FREE twice as often; ``random_trees.ROOT_TYPES`` plus PRISMATIC)."""
JointType = newton.JointType
TargetMode = newton.JointTargetMode


@dataclass
class WorldSpec:
    """One world's trees: body counts, root joint types, chains or random branching, shapes on all or some."""

    seed: int
    n_trees: int
    sizes: list
    roots: list
    chain: list
    shapes: str  # "all" | "some"


@dataclass
class CaseSpec:
    """A case: Δt [s], initial speed scale [m/s or rad/s], worlds and their ground heights above the lowest shape
    point [m] (negative: a gap), and the seeds of the joint parameters and the initial state."""

    seed: int
    harsh: bool
    dt: float
    speed: float
    worlds: list = field(default_factory=list)
    ground_pen: list = field(default_factory=list)
    joint_seed: int = 0
    state_seed: int = 0


def case_spec(seed: int, harsh: bool) -> CaseSpec:
    rng = np.random.default_rng([seed, 1])
    big = rng.random() < 0.15  # worlds above 64 dofs: the default path's block Cholesky
    n_worlds = int(rng.integers(1, 3)) if big else int(rng.integers(1, 5))
    dt = float(rng.choice([0.005, 0.01, 0.02, 0.04] if harsh else [0.002, 0.005, 0.01, 0.01, 0.02]))
    speed = float(rng.choice([2.0, 4.0, 8.0] if harsh else [0.3, 1.0, 2.0, 4.0]))
    spec = CaseSpec(seed=seed, harsh=harsh, dt=dt, speed=speed)
    for _ in range(n_worlds):
        n_trees = int(rng.integers(4, 8)) if big else int(rng.integers(1, 4))
        spec.worlds.append(
            WorldSpec(
                seed=int(rng.integers(2**31)),
                n_trees=n_trees,
                sizes=[int(rng.integers(4, 10)) if big else int(rng.integers(1, 6)) for _ in range(n_trees)],
                roots=[str(rng.choice(ROOT_TYPES)) for _ in range(n_trees)],
                chain=[bool(rng.random() < 0.4) for _ in range(n_trees)],
                shapes="all" if rng.random() < 0.7 else "some",
            )
        )
        r = rng.random()  # ground: a gap below the lowest point (in the detection gap), touching, or penetrating
        deep = 0.6 if harsh else 0.9
        spec.ground_pen.append(
            float(
                rng.uniform(-0.08, 0.0) if r < 0.25 else rng.uniform(0.0, 0.02) if r < deep else rng.uniform(0.02, 0.06)
            )
        )
    spec.joint_seed = int(rng.integers(2**31))
    spec.state_seed = int(rng.integers(2**31))
    return spec


def harsh_mass(rng: np.random.Generator) -> float:
    """A link mass [kg] log-uniform in [0.03, 30] (the harsh profile's mass ratios up to 1e3)."""
    return float(10 ** rng.uniform(-1.5, 1.5))


def add_tree(builder: newton.ModelBuilder, rng, n_bodies: int, chain: bool, root_type: str, origin, harsh: bool):
    """A random tree of ``n_bodies`` links (a chain, or each link on a random earlier one) whose root joint sits at
    ``origin`` [m] (``random_trees.add_random_tree``); the body indices."""
    joints = add_random_tree(
        builder, rng, n_bodies, chain=chain, root_type=root_type, sample_mass=harsh_mass if harsh else uniform_mass,
        com_extent=0.1, frame_extents=(0.25, 0.15), origin=origin,
    )  # fmt: skip
    return [builder.joint_child[j] for j in joints]


def add_shapes(builder: newton.ModelBuilder, rng, bodies, which: str, harsh: bool) -> None:
    """A random sphere, box or capsule (harsh: one or two, larger) on each body, or on about 60 % of them."""
    big = 1.5 if harsh else 1.0
    for body in bodies:
        if which == "some" and rng.random() < 0.4:
            continue
        for _ in range(int(rng.integers(1, 3)) if harsh else 1):
            cfg = newton.ModelBuilder.ShapeConfig(density=0.0, mu=float(rng.uniform(0.1, 2.0 if harsh else 1.2)))
            X = wp.transform(wp.vec3(*rng.uniform(-0.08, 0.08, 3)), wp.quat(*random_quat(rng)))
            kind = rng.integers(0, 3)
            if kind == 0:
                builder.add_shape_sphere(body, xform=X, radius=float(rng.uniform(0.04, 0.14 * big)), cfg=cfg)
            elif kind == 1:
                h = rng.uniform(0.03, 0.12 * big, 3)
                builder.add_shape_box(body, xform=X, hx=float(h[0]), hy=float(h[1]), hz=float(h[2]), cfg=cfg)
            else:
                radius, half_height = float(rng.uniform(0.03, 0.08)), float(rng.uniform(0.03, 0.12))
                builder.add_shape_capsule(body, xform=X, radius=radius, half_height=half_height, cfg=cfg)


def build_world(spec: WorldSpec, harsh: bool, ground_height: float | None) -> newton.ModelBuilder:
    rng = np.random.default_rng(spec.seed)
    builder = newton.ModelBuilder()
    for t in range(spec.n_trees):
        origin = np.array([0.35 * t, 0.1 * rng.uniform(-1, 1), 0.0])
        bodies = add_tree(builder, rng, spec.sizes[t], spec.chain[t], spec.roots[t], origin, harsh)
        add_shapes(builder, rng, bodies, spec.shapes, harsh)
    if ground_height is not None:
        mu = float(rng.uniform(0.2, 1.0))
        builder.add_ground_plane(height=float(ground_height), cfg=newton.ModelBuilder.ShapeConfig(mu=mu))
    return builder


def build_model(spec: CaseSpec, ground_heights) -> newton.Model:
    scene = newton.ModelBuilder()
    for w, world in enumerate(spec.worlds):
        scene.add_world(build_world(world, spec.harsh, None if ground_heights is None else ground_heights[w]))
    return scene.finalize(device="cpu")


def random_q_qd(model: newton.Model, rng, speed: float):
    """Random coordinates (BALL and FREE orientations uniform, FREE positions within 15 cm, others in ±1) and
    velocities in ±speed."""
    q = model.joint_q.numpy().copy()
    qd = rng.uniform(-speed, speed, model.joint_dof_count).astype(np.float32)
    q_start = model.joint_q_start.numpy()
    for j, joint_type in enumerate(model.joint_type.numpy()):
        s, e = q_start[j], q_start[j + 1]
        if joint_type == JointType.BALL:
            q[s : s + 4] = random_quat(rng)
        elif joint_type in (JointType.FREE, JointType.DISTANCE):
            q[s : s + 3] = q[s : s + 3] + rng.uniform(-0.15, 0.15, 3)
            q[s + 3 : s + 7] = random_quat(rng)
        else:
            q[s:e] = rng.uniform(-1.0, 1.0, e - s)
    return q.astype(np.float32), qd


def quat_matrix(q) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def lowest_points(model: newton.Model, state: newton.State) -> np.ndarray:
    """Per world, the lowest z [m] of its spheres, boxes and capsules (inf for a world without shapes)."""
    body_q = state.body_q.numpy().astype(np.float64)
    shape_body, shape_type, shape_scale = model.shape_body.numpy(), model.shape_type.numpy(), model.shape_scale.numpy()
    shape_X = model.shape_transform.numpy().astype(np.float64)
    shape_world = model.shape_world.numpy()
    low = np.full(model.world_count, np.inf)
    for s in range(model.shape_count):
        if shape_body[s] < 0:
            continue
        R_body = quat_matrix(body_q[shape_body[s], 3:])
        R_shape = R_body @ quat_matrix(shape_X[s, 3:])
        center = body_q[shape_body[s], :3] + R_body @ shape_X[s, :3]
        if shape_type[s] == newton.GeoType.SPHERE:
            z = center[2] - shape_scale[s][0]
        elif shape_type[s] == newton.GeoType.BOX:
            z = center[2] - np.abs(R_shape[2, :]) @ shape_scale[s][:3]
        elif shape_type[s] == newton.GeoType.CAPSULE:
            z = center[2] - shape_scale[s][0] - abs(R_shape[2, 2]) * shape_scale[s][1]
        else:
            continue
        low[shape_world[s]] = min(low[shape_world[s]], z)
    return low


def randomize_joints(model: newton.Model, control: newton.Control, q: np.ndarray, rng, harsh: bool) -> None:
    """Drives, limits, friction, damping and stiffness on the dofs that take them (Newton's model arrays); the
    control's targets and feed-forward."""
    n = model.joint_dof_count
    joint_type, qd_start, q_start = model.joint_type.numpy(), model.joint_qd_start.numpy(), model.joint_q_start.numpy()
    mode = np.zeros(n, np.int32)
    ke, kd = np.zeros(n, np.float32), np.zeros(n, np.float32)
    effort = model.joint_effort_limit.numpy().copy()
    lower, upper = model.joint_limit_lower.numpy().copy(), model.joint_limit_upper.numpy().copy()
    friction, damping, stiffness = (np.zeros(n, np.float32) for _ in range(3))
    target_q, target_qd, act = q.copy(), np.zeros(n, np.float32), np.zeros(n, np.float32)
    profile = rng.random()  # how much of it a case has
    p_drive, p_limit, p_friction, p_damping = (0.0, 0.0, 0.0, 0.0) if profile < 0.1 else rng.uniform(0, 0.7, 4)
    for j, t in enumerate(joint_type):
        d0, d1, c0 = qd_start[j], qd_start[j + 1], q_start[j]
        if t in (JointType.FREE, JointType.DISTANCE, JointType.FIXED) or d1 == d0:
            continue
        for d in range(d0, d1):
            if rng.random() < p_drive:
                m = rng.choice([TargetMode.POSITION, TargetMode.VELOCITY, TargetMode.POSITION_VELOCITY])
                mode[d] = int(m)
                if m != TargetMode.VELOCITY:
                    soft = rng.random() < (0.6 if harsh else 0.9)
                    ke[d] = 10 ** rng.uniform(0, 4.5) if soft else 10 ** rng.uniform(5, 7)
                kd[d] = 10 ** rng.uniform(-1, 2.5) if (m != TargetMode.POSITION or rng.random() < 0.7) else 0.0
                if m == TargetMode.VELOCITY and kd[d] == 0:
                    kd[d] = 1.0
                target_qd[d] = rng.uniform(-2, 2)
                if rng.random() < 0.4:
                    effort[d] = rng.uniform(0.2, 20.0)
                if rng.random() < 0.3:
                    act[d] = rng.uniform(-2, 2)
            if rng.random() < p_friction:
                friction[d] = 10 ** rng.uniform(-2, 0.5)
            if rng.random() < p_damping:
                damping[d] = 10 ** rng.uniform(-2, 1)
            if rng.random() < 0.5 * p_damping:
                stiffness[d] = 10 ** rng.uniform(-1, 2)
            if t != JointType.BALL and rng.random() < p_limit:
                qi = q[c0 + (d - d0)] if t in (JointType.REVOLUTE, JointType.PRISMATIC, JointType.D6) else 0.0
                r = rng.random()
                if r < 0.3:
                    lower[d], upper[d] = qi - rng.uniform(-0.03, 0.1), qi + rng.uniform(0.0, 0.3)
                elif r < 0.6:
                    lower[d], upper[d] = qi - rng.uniform(0.0, 0.3), qi + rng.uniform(-0.03, 0.1)
                else:
                    lower[d], upper[d] = qi - rng.uniform(0.0, 0.08), qi + rng.uniform(0.0, 0.08)
                if lower[d] > upper[d]:
                    lower[d], upper[d] = upper[d], lower[d]
        if t == JointType.BALL:
            target_q[c0 : c0 + 4] = random_quat(rng) if rng.random() < 0.5 else q[c0 : c0 + 4]
        else:
            for k in range(d1 - d0):
                target_q[c0 + k] = q[c0 + k] + rng.uniform(-0.5, 0.5)
    model.joint_target_mode.assign(mode)
    model.joint_target_ke.assign(ke)
    model.joint_target_kd.assign(kd)
    model.joint_effort_limit.assign(effort.astype(np.float32))
    model.joint_limit_lower.assign(lower.astype(np.float32))
    model.joint_limit_upper.assign(upper.astype(np.float32))
    model.joint_friction.assign(friction)
    model.joint_damping.assign(damping)
    model.joint_stiffness.assign(stiffness)
    control.joint_target_q.assign(target_q.astype(np.float32))
    control.joint_target_qd.assign(target_qd)
    control.joint_act.assign(act)


def build_case(seed: int, harsh: bool = False):
    """``(model, state, control, spec)`` of case ``seed`` (CPU): the ground of each world placed from its lowest
    shape point at the random initial state, which ``state`` holds (body poses by forward kinematics)."""
    spec = case_spec(seed, harsh)
    probe = build_model(spec, None)
    q, qd = random_q_qd(probe, np.random.default_rng(spec.state_seed), spec.speed)
    state = probe.state()
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(probe, state.joint_q, state.joint_qd, state)
    low = lowest_points(probe, state)
    low = np.where(np.isfinite(low), low, 0.0)
    model = build_model(spec, [float(low[w] + spec.ground_pen[w]) for w in range(len(spec.worlds))])
    state = model.state()
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    control = model.control()
    randomize_joints(model, control, q, np.random.default_rng(spec.joint_seed), harsh)
    return model, state, control, spec
