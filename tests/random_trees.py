"""Random articulated trees for property tests: every joint type newton-sap supports, fixed joints,
branching, non-identity joint frames, COM offsets and armature."""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

MOVING_TYPES = ("revolute", "prismatic", "ball", "d6", "free", "fixed")
ROOT_TYPES = ("free", "distance", "revolute", "ball", "d6", "fixed")


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 2] = -q[:, 2]
    return q


def random_quat(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_transform(rng: np.random.Generator, scale: float = 0.4) -> wp.transform:
    return wp.transform(wp.vec3(*rng.uniform(-scale, scale, 3)), wp.quat(*random_quat(rng)))


def random_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    """Rotational inertia of a random box of mass ``mass`` (triangle inequality holds)."""
    dims = rng.uniform(0.05, 0.6, 3)
    principal = (
        mass / 12.0 * np.array([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[1] ** 2])
    )
    R = random_rotation(rng)
    return R @ np.diag(principal) @ R.T


def _unrotated(X: wp.transform) -> wp.transform:
    """Free-joint parent frames keep world axes: Newton's FREE ``joint_f`` (and its reference bias) is
    world-framed while ``joint_qd`` is parent-framed; they coincide only for an unrotated parent frame."""
    return wp.transform(wp.transform_get_translation(X), wp.quat_identity())


def _d6_axes(rng: np.random.Generator):
    n_lin = int(rng.integers(0, 4))
    n_ang = int(rng.integers(0 if n_lin else 1, 4))
    Rl, Ra = random_rotation(rng), random_rotation(rng)
    cfg = newton.ModelBuilder.JointDofConfig
    lin = [cfg(axis=wp.vec3(*Rl[:, k]), armature=float(rng.uniform(0, 0.05))) for k in range(n_lin)]
    ang = [cfg(axis=wp.vec3(*Ra[:, k]), armature=float(rng.uniform(0, 0.05))) for k in range(n_ang)]
    return lin, ang


def uniform_mass(rng: np.random.Generator) -> float:
    """A link mass [kg] uniform in [0.2, 2]."""
    return float(rng.uniform(0.2, 2.0))


def add_random_tree(
    builder: newton.ModelBuilder,
    rng: np.random.Generator,
    n_bodies: int,
    *,
    chain: bool = False,
    root_type: str | None = None,
    types: tuple[str, ...] = MOVING_TYPES,
    sample_mass=uniform_mass,
    com_extent: float = 0.2,
    frame_extents: tuple[float, float] = (0.4, 0.4),
    origin=None,
) -> list[int]:
    """Add one random tree of ``n_bodies`` bodies as one articulation; returns its joint ids.

    ``chain=True`` makes a serial chain (depth ``n_bodies``); otherwise each body picks a random
    earlier parent (branching). Each link's mass comes from ``sample_mass(rng)``, its COM within ``com_extent`` [m]
    of its origin, the joint frames from ``random_transform`` with ``frame_extents`` (parent, child) [m]; ``origin``
    [m] shifts the root joint's parent frame."""
    root_type = root_type or str(rng.choice(ROOT_TYPES))
    bodies, joints = [], []
    for k in range(n_bodies):
        mass = sample_mass(rng)
        body = builder.add_link(
            mass=mass,
            com=wp.vec3(*rng.uniform(-com_extent, com_extent, 3)),
            inertia=wp.mat33(*random_inertia(rng, mass).ravel()),
        )
        if k == 0:
            parent, jtype = -1, root_type
        else:
            parent = bodies[-1] if chain else bodies[int(rng.integers(0, len(bodies)))]
            jtype = str(rng.choice(types))
        X_p, X_c = random_transform(rng, frame_extents[0]), random_transform(rng, frame_extents[1])
        if k == 0 and origin is not None:
            p = np.array(wp.transform_get_translation(X_p)) + origin
            X_p = wp.transform(wp.vec3(*p), wp.transform_get_rotation(X_p))
        axis = wp.vec3(*random_rotation(rng)[:, 0])
        arm = float(rng.uniform(0.0, 0.05))
        bodies.append(body)
        joints.append(add_joint(builder, rng, jtype, parent, body, X_p, X_c, axis, arm))
    builder.add_articulation(joints)
    return joints


def add_joint(builder: newton.ModelBuilder, rng, jtype: str, parent: int, body: int, X_p, X_c, axis, armature: float):
    """A joint of type ``jtype`` (one of ``MOVING_TYPES`` or ``"distance"``) from ``parent`` to ``body`` with frames
    ``X_p``, ``X_c``, ``axis`` (REVOLUTE, PRISMATIC) and ``armature``; FREE and DISTANCE joints take ``X_p`` without
    its rotation, D6 joints random axes (from ``rng``). The joint id."""
    frames = dict(parent_xform=X_p, child_xform=X_c)
    if jtype == "revolute":
        return builder.add_joint_revolute(parent, body, axis=axis, armature=armature, **frames)
    if jtype == "prismatic":
        return builder.add_joint_prismatic(parent, body, axis=axis, armature=armature, **frames)
    if jtype == "ball":
        return builder.add_joint_ball(parent, body, armature=armature, **frames)
    if jtype == "fixed":
        return builder.add_joint_fixed(parent, body, **frames)
    if jtype == "free":
        return builder.add_joint_free(body, parent=parent, parent_xform=_unrotated(X_p), child_xform=X_c)
    if jtype == "distance":  # no distance range (negative bounds): stepped as FREE, without the range's warning
        frames = dict(parent_xform=_unrotated(X_p), child_xform=X_c)
        return builder.add_joint_distance(parent, body, min_distance=-1.0, max_distance=-1.0, **frames)
    if jtype == "d6":
        linear, angular = _d6_axes(rng)
        return builder.add_joint_d6(parent, body, linear_axes=linear, angular_axes=angular, **frames)
    raise ValueError(jtype)


def random_state(model: newton.Model, rng: np.random.Generator, speed: float = 1.5):
    """Random ``(joint_q, joint_qd)`` in Newton's layout: unit quaternions, moderate angles/speeds."""
    q = model.joint_q.numpy().copy()
    qd = rng.uniform(-speed, speed, model.joint_dof_count).astype(np.float32)
    jtype = model.joint_type.numpy()
    q_start = model.joint_q_start.numpy()
    for j, t in enumerate(jtype):
        s, e = q_start[j], q_start[j + 1]
        if t == newton.JointType.BALL:
            q[s : s + 4] = random_quat(rng)
        elif t in (newton.JointType.FREE, newton.JointType.DISTANCE):
            q[s : s + 3] = rng.uniform(-1, 1, 3)
            q[s + 3 : s + 7] = random_quat(rng)
        else:
            q[s:e] = rng.uniform(-1.2, 1.2, e - s)
    return q.astype(np.float32), qd


def set_state(model: newton.Model, state: newton.State, q: np.ndarray, qd: np.ndarray) -> None:
    """Write joint coordinates and velocities and make the body arrays consistent (Newton FK)."""
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
