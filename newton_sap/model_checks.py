"""Checks of the model values a step reads, each naming the offending body, joint (and dof), shape or world in a
``ModelError`` (or a warning, for settings the solver ignores).

``SolverSAP`` runs them all at build and ``notify_model_changed`` those its flags name, so bad input fails before
a step turns it into NaN or, worse, into a converged wrong answer: a D6 joint with two equal angular axes has a
singular mass matrix, whose null space drifts with no signal at all. What only shows at run time (a NaN written
into a state, a model array changed without notifying) flags its world in ``stats.failed``.
"""

from __future__ import annotations

import warnings

import newton
import numpy as np

from .diagnostics import quat_to_matrix
from .joint_constraints import NO_LIMIT, newton_drive_dofs
from .kinematic_bodies import check_kinematic_bodies
from .options import SapOptions
from .topology import (
    JOINT_BALL,
    JOINT_D6,
    JOINT_DISTANCE,
    JOINT_FREE,
    JOINT_PRISMATIC,
    JOINT_REVOLUTE,
    ModelError,
    Topology,
    ball_tree_dofs,
    entity_label,
    entity_list,
    model_labels,
    scalar_tree_dofs,
)

UNIT_TOLERANCE = 1e-3
"""Largest ``|‖x‖ − 1|`` of a joint axis or of a joint frame's quaternion (Newton's builder normalizes both)."""

AXES_MIN_SINGULAR_VALUE = 1e-3
"""Smallest singular value of a D6 joint's linear (or angular) unit axes: below it two of them are (nearly) parallel,
the joint moves with fewer freedoms than it has dofs and its mass matrix is singular."""

INERTIA_MIN_RELATIVE_EIGENVALUE = 1e-7
"""A leaf body's rotational inertia about its joint, over the joint's angular axes, is singular below this
fraction of the body's own inertia about the joint (a point mass on a ball joint; a rod without inertia about
its own axis); relative, so small links (a 1 g, 5 mm finger tip) pass."""


TURN_OVER_MOVE_WARNING = 1.0e3
"""A dynamic body that an impulse at a point of its collision shapes turns more than this many times as much as it
moves it, ``max_k m r⊥k² / I_k`` over its principal axes k (``r⊥k`` the farthest reach of its shapes' bounding
boxes from the axis through its COM), is named in a warning: the near-rigid rule softens its contacts by about that
factor (a 2 kg, 0.2 m box with Newton's inertia floor of 1e-6 kg·m²: 4e4, and it sank 16 cm through the ground).
Solid shapes give 3-5, the bundled robots up to 98 (the Allegro hand's palm, its URDF inertia against a box
collider)."""


def first_problem(problems) -> tuple[int, str] | None:
    """The lowest index that any of ``problems`` flags, and its first problem's description: ``problems`` are
    ``(mask, describe)`` pairs over the same entities, ``describe(index)`` a message; None when none is flagged."""
    bad = np.logical_or.reduce([mask for mask, _ in problems])
    if not bad.any():
        return None
    index = int(np.argmax(bad))
    return index, next(describe(index) for mask, describe in problems if mask[index])


def check_inertial_properties(model: newton.Model, topo: Topology, actuator_armature: np.ndarray) -> None:
    """Check the values the mass matrix is built from, naming the offending body or joint; ``actuator_armature``
    [kg·m² or kg] per Newton dof is what MuJoCo actuators add to ``joint_armature`` (finite, >= 0:
    ``mujoco_actuation.check_actuator_values``).

    Raises:
        ModelError: a body with a negative or non-finite mass, a non-finite COM, a non-symmetric, non-finite or
            indefinite inertia, or the KINEMATIC flag off a tree root (``kinematic_bodies``); a dof with a
            negative or non-finite armature, or without armature that is not a kinematic body's and that moves
            no mass (a linear dof whose subtree has no mass; an angular one whose subtree has neither mass nor
            rotational inertia): its mass-matrix diagonal would be zero; a joint whose child is a leaf and turns
            about axes along which that body has no rotational inertia about the joint (a point mass on a ball
            joint, a rod without inertia about its own axis on a hinge along it): a singular mass matrix.
    """
    nb = model.body_count
    if nb == 0:
        return
    mass = model.body_mass.numpy().astype(np.float64)
    inertia = model.body_inertia.numpy().astype(np.float64)
    com = model.body_com.numpy().astype(np.float64)
    kinematic = np.zeros(nb, bool)
    kinematic[check_kinematic_bodies(model, topo)] = True
    # vectorized over the bodies (domain randomization notifies them often); the first offending body is named
    finite = np.isfinite(inertia).all(axis=(1, 2))
    scale = np.maximum(1.0, np.abs(np.where(finite[:, None, None], inertia, 0.0)).max(axis=(1, 2)))
    asymmetric = ~finite | (np.abs(inertia - inertia.transpose(0, 2, 1)).max(axis=(1, 2)) > 1e-6 * scale)
    lowest = np.linalg.eigvalsh(np.where(asymmetric[:, None, None], 0.0, inertia)).min(axis=1)
    problems = (
        (~np.isfinite(mass) | (mass < 0.0), lambda b: f"has invalid mass {mass[b]} [kg]"),
        (~np.isfinite(com).all(axis=1), lambda b: f"has a non-finite COM {com[b].tolist()} [m]"),
        (asymmetric, lambda b: "has a non-symmetric or non-finite inertia"),
        (lowest < -1e-7 * scale, lambda b: "has an inertia that is not positive semidefinite"),
    )
    if found := first_problem(problems):
        b, message = found
        raise ModelError(f"{entity_label(model_labels(model, 'body'), b, 'body')} {message}")
    if topo.dof_count == 0:
        return
    # a dof moves its child's subtree: sums over the subtrees, deepest bodies first (body_levels)
    subtree_mass = mass.copy()
    subtree_inertia = np.trace(inertia, axis1=1, axis2=2)
    for level in topo.body_levels[::-1]:
        np.add.at(subtree_mass, topo.body_parent[level], subtree_mass[level])
        np.add.at(subtree_inertia, topo.body_parent[level], subtree_inertia[level])
    b, armature = topo.dof_body, model.joint_armature.numpy()[topo.dof_public]
    j = topo.dof_joint
    linear = topo.dof_public - model.joint_qd_start.numpy()[j] < model.joint_dof_dim.numpy()[j, 0]
    no_armature = (armature <= 0.0) & (actuator_armature[topo.dof_public] <= 0.0)
    massless = (subtree_mass[b] <= 0.0) & (linear | (subtree_inertia[b] <= 0.0)) & no_armature & ~kinematic[b]
    problems = (  # over the internal dofs
        (~(np.isfinite(armature) & (armature >= 0.0)),
         lambda i: f"has armature {armature[i]}; it must be finite and >= 0"),
        (massless, lambda i: "moves only massless bodies and has no armature: its mass-matrix diagonal is zero"),
    )  # fmt: skip
    if found := first_problem(problems):
        i, message = found
        raise ModelError(f"{entity_label(model_labels(model, 'joint'), int(topo.dof_joint[i]), 'joint')} {message}")
    joints, block, scale = _leaf_rotational_blocks(model, topo, mass, inertia, com, kinematic, actuator_armature)
    eigenvalues = np.linalg.eigvalsh(block)
    singular = eigenvalues[:, 0] <= INERTIA_MIN_RELATIVE_EIGENVALUE * np.maximum(eigenvalues[:, -1], scale)
    if singular.any():
        j = int(joints[np.argmax(singular)])
        body = entity_label(model_labels(model, "body"), int(model.joint_child.numpy()[j]), "body")
        raise ModelError(
            f"{entity_label(model_labels(model, 'joint'), j, 'joint')} turns {body} "
            "about an axis along which it has no rotational inertia about the joint (a point mass, or a rod about "
            "its own axis): its mass matrix is singular; give the body inertia or the joint armature"
        )


def check_joint_geometry(model: newton.Model) -> None:
    """Joint frames and axes, of tree and loop-closing joints: ``joint_X_p`` and ``joint_X_c`` finite with unit
    quaternions; the axes of REVOLUTE, PRISMATIC and D6 dofs finite unit vectors; a D6 joint's linear axes, and its
    angular axes, independent (:data:`AXES_MIN_SINGULAR_VALUE`).

    Raises:
        ModelError: naming the first offending joint.
    """
    nj = model.joint_count
    if nj == 0:
        return
    jtype, dim = model.joint_type.numpy(), model.joint_dof_dim.numpy()
    qd_start = model.joint_qd_start.numpy()
    axis = model.joint_axis.numpy().astype(np.float64)
    dof_joint = np.repeat(np.arange(nj), dim.sum(axis=1))
    uses_axis = np.isin(jtype[dof_joint], (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_D6))
    bad_axis = np.zeros(nj, bool)
    np.logical_or.at(bad_axis, dof_joint, uses_axis & ~(np.abs(np.linalg.norm(axis, axis=1) - 1.0) <= UNIT_TOLERANCE))
    parallel = np.zeros(nj, bool)
    for group in range(2):  # a D6 joint's linear axes, then its angular axes: their Gram matrix, unused rows unit
        joints = np.nonzero((jtype == JOINT_D6) & (dim[:, group] >= 2) & ~bad_axis)[0]
        if len(joints) == 0:
            continue
        axes = np.zeros((len(joints), 3, 3))
        first = qd_start[joints] + group * dim[joints, 0]
        for k in range(3):
            used = dim[joints, group] > k
            axes[used, k] = axis[first[used] + k]
        gram = axes @ axes.transpose(0, 2, 1) + np.eye(3) * (dim[joints, group][:, None] <= np.arange(3))[:, :, None]
        parallel[joints] |= np.linalg.eigvalsh(gram).min(axis=1) < AXES_MIN_SINGULAR_VALUE**2

    def bad_frame(X):
        finite = np.isfinite(X).all(axis=1)
        norm = np.linalg.norm(np.where(finite[:, None], X, 0.0)[:, 3:7], axis=1)
        return ~finite | ~(np.abs(norm - 1.0) <= UNIT_TOLERANCE)

    X_p, X_c = model.joint_X_p.numpy().astype(np.float64), model.joint_X_c.numpy().astype(np.float64)
    problems = (
        (bad_frame(X_p), lambda j: f"has joint_X_p {X_p[j]}: a finite position and a unit quaternion are needed"),
        (bad_frame(X_c), lambda j: f"has joint_X_c {X_c[j]}: a finite position and a unit quaternion are needed"),
        (bad_axis, lambda j: f"has axes {axis[qd_start[j] : qd_start[j] + dim[j].sum()].tolist()}: they must be "
                             "finite unit vectors"),
        (parallel, lambda j: "has (nearly) parallel axes: it moves with fewer freedoms than its dofs, and its "
                             "mass matrix is singular"),
    )  # fmt: skip
    if found := first_problem(problems):
        j, message = found
        raise ModelError(f"{entity_label(model_labels(model, 'joint'), j, 'joint')} {message}")


def check_gravity(model: newton.Model) -> None:
    """Each world's gravity [m/s²] must be finite, the global world's (-1, ``model.gravity``'s last entry in a model
    with explicit worlds) too.

    Raises:
        ModelError: naming the first world with a non-finite gravity.
    """
    gravity = np.atleast_2d(model.gravity.numpy())
    bad = np.nonzero(~np.isfinite(gravity).all(axis=1))[0]
    if len(bad):
        world = int(bad[0]) if bad[0] < model.world_count else -1  # a last entry past the worlds: the global one
        raise ModelError(f"world {world} has gravity {gravity[bad[0]].tolist()} [m/s^2]; it must be finite")


def _leaf_rotational_blocks(model: newton.Model, topo: Topology, mass, inertia, com, kinematic, actuator_armature):
    """The tree joints whose child is a leaf (no child bodies), dynamic, with angular dofs; per joint the
    mass-matrix block over its angular dofs at q = 0 (``Aᵀ I_M A`` plus armature, the joint's and its actuators',
    padded to 3×3 with diagonal
    entries ``scale``) and ``scale``, the body's own inertia about the joint, ``trace I_M`` plus the armature
    (1 where both are 0): ``I_M = I_c + m (|d|² 1 − d dᵀ)`` the body's inertia about the joint frame M's origin
    (``d`` the COM from it, body frame), ``A`` the axes in the body frame (M's for BALL, FREE, DISTANCE)."""
    jtype, dim = model.joint_type.numpy(), model.joint_dof_dim.numpy()
    child = model.joint_child.numpy()
    has_child = np.zeros(model.body_count, bool)
    has_child[topo.body_parent[topo.body_parent >= 0]] = True
    joints = np.nonzero((topo.joint_in_tree == 1) & (dim[:, 1] > 0) & ~has_child[child] & ~kinematic[child])[0]
    b = child[joints]
    X_c = model.joint_X_c.numpy().astype(np.float64)[joints]
    R_c = quat_to_matrix(X_c[:, 3:7])  # M's axes in the body frame (columns)
    d = com[b] - X_c[:, :3]
    parallel_axis = np.einsum("ni,ni->n", d, d)[:, None, None] * np.eye(3) - d[:, :, None] * d[:, None, :]
    I_M = inertia[b] + mass[b, None, None] * parallel_axis
    qd_start = model.joint_qd_start.numpy()
    axis = model.joint_axis.numpy().astype(np.float64)
    armature = model.joint_armature.numpy().astype(np.float64) + actuator_armature
    axes = np.zeros((len(joints), 3, 3))  # columns: the angular axes in M
    arm = np.zeros((len(joints), 3))
    free_axes = np.isin(jtype[joints], (JOINT_BALL, JOINT_FREE, JOINT_DISTANCE))
    for k in range(3):
        used = dim[joints, 1] > k
        dof = qd_start[joints] + dim[joints, 0] + k
        axes[used & free_axes, k, k] = 1.0
        scalar = used & ~free_axes
        axes[scalar, :, k] = axis[dof[scalar]]
        arm[used, k] = armature[dof[used]]
    A = R_c @ axes
    block = A.transpose(0, 2, 1) @ I_M @ A
    block += np.eye(3) * arm[:, None, :]
    scale = np.trace(I_M, axis1=1, axis2=2) + arm.sum(axis=1)
    scale = np.where(scale > 0.0, scale, 1.0)
    unused = dim[joints, 1][:, None] <= np.arange(3)
    block += np.eye(3) * (unused * scale[:, None])[:, None, :]
    return joints, block, scale


def validate_joint_drives_and_limits(model: newton.Model, topo, options: SapOptions) -> bool:
    """Check drive gains, effort limits, friction and spring rest positions (``joint_rest_q``) of the
    scalar-coordinate and BALL tree dofs, limit ranges and limit gains (those of Newton's model, read when
    ``joint_limit_stiffness`` is None) of the scalar-coordinate ones, and every dof's joint damping and stiffness
    (finite, >= 0; NaN refused), naming the joint and dof; warn about the settings the solver ignores: drives,
    friction and stiffness on the other dofs, limits on any but the scalar-coordinate ones.
    Return whether the model has any drive, finite limit or joint friction (then every step solves SAP)."""
    if model.joint_dof_count == 0:
        return False
    ke, kd = model.joint_target_ke.numpy(), model.joint_target_kd.numpy()
    effort = model.joint_effort_limit.numpy()
    lower, upper = model.joint_limit_lower.numpy(), model.joint_limit_upper.numpy()
    limit_ke, limit_kd = model.joint_limit_ke.numpy(), model.joint_limit_kd.numpy()
    friction = model.joint_friction.numpy()
    driven = newton_drive_dofs(model)
    limited = (lower > -NO_LIMIT) | (upper < NO_LIMIT)
    scalar = scalar_tree_dofs(model, topo)
    ball = ball_tree_dofs(model, topo)
    acting = scalar | ball  # where drives, joint friction and joint stiffness act
    dof_joint = np.repeat(np.arange(model.joint_count), model.joint_dof_dim.numpy().sum(axis=1))
    distance = model.joint_type.numpy()[dof_joint] == JOINT_DISTANCE
    damping, stiffness = model.joint_damping.numpy(), model.joint_stiffness.numpy()
    rest = np.zeros(model.joint_dof_count)  # joint_rest_q of the scalar dofs' coordinates (springs' rest positions)
    rest_q = model.joint_rest_q.numpy()
    scalar_internal, ball_internal = topo.dof_coord >= 0, topo.dof_ball_quat >= 0
    rest[topo.dof_public[scalar_internal]] = rest_q[topo.dof_coord[scalar_internal]]
    ball_rest = np.zeros((model.joint_dof_count, 4))  # a BALL dof's joint's rest quaternion (x, y, z, w)
    ball_rest[topo.dof_public[ball_internal]] = rest_q[topo.dof_ball_quat[ball_internal][:, None] + np.arange(4)]
    ball_rest_bad = ~np.isfinite(ball_rest).all(axis=1) | ~(np.abs(ball_rest).max(axis=1) > 0.0)
    ignored = (~acting & (driven | (friction > 0.0) | (stiffness > 0.0))) | (~scalar & limited & ~distance)
    warn_ignored_joint_settings(model, np.unique(dof_joint[ignored]))
    first_dof = np.arange(model.joint_dof_count) == model.joint_qd_start.numpy()[dof_joint]
    distance_range = distance & first_dof & ((lower >= 0.0) | (upper >= 0.0))  # Newton's: no bound where negative
    warn_unenforced_distance_ranges(model, np.unique(dof_joint[distance_range]))
    warn_unused_drive_gains(model, np.unique(dof_joint[acting & ~driven & ((ke > 0.0) | (kd > 0.0))]))

    def finite_at_least_zero(x):
        return np.isfinite(x) & (x >= 0.0)  # False for NaN

    limit_gains = scalar & limited & (options.joint_limit_stiffness is None)
    problems = (  # over the public dofs, vectorized (NaN fails every check); the first offending dof is named
        (acting & ~(finite_at_least_zero(ke) & finite_at_least_zero(kd)),
         lambda p: f"has negative or non-finite drive gains (ke = {ke[p]}, kd = {kd[p]})"),
        (driven & acting & ~(effort > 0.0), lambda p: f"has a drive with effort limit {effort[p]}; it must be > 0"),
        (scalar & (np.isnan(lower) | np.isnan(upper)), lambda p: f"has a NaN limit ({lower[p]}, {upper[p]})"),
        (scalar & (lower > upper), lambda p: f"has lower limit {lower[p]} above upper limit {upper[p]}"),
        (scalar & (np.isposinf(lower) | np.isneginf(upper)),
         lambda p: f"has limits ({lower[p]}, {upper[p]}) that no position satisfies"),
        (limit_gains & ~(np.isfinite(limit_ke) & (limit_ke > 0.0)),
         lambda p: f"has a limit with joint_limit_ke = {limit_ke[p]}; it must be finite and > 0"),
        (limit_gains & ~finite_at_least_zero(limit_kd),
         lambda p: f"has a limit with joint_limit_kd = {limit_kd[p]}; it must be finite and >= 0"),
        (acting & ~finite_at_least_zero(friction),
         lambda p: f"has joint friction {friction[p]}; it must be finite and >= 0"),
        (~finite_at_least_zero(damping), lambda p: f"has joint_damping {damping[p]}; it must be finite and >= 0"),
        (~finite_at_least_zero(stiffness), lambda p: f"has joint_stiffness {stiffness[p]}; it must be finite and >= 0"),
        (~np.isfinite(rest), lambda p: f"has joint_rest_q {rest[p]}; it must be finite"),
        (ball & (stiffness > 0.0) & ball_rest_bad,
         lambda p: f"has joint stiffness toward the joint_rest_q quaternion {ball_rest[p]}; it must be finite and "
         "non-zero"),
    )  # fmt: skip
    if found := first_problem(problems):
        p, message = found
        j = int(dof_joint[p])
        raise ModelError(f"{entity_label(model_labels(model, 'joint'), j, 'joint')} dof {p} {message}")
    return bool(((acting & (driven | (friction > 0.0))) | (scalar & limited)).any())


def joint_list(model: newton.Model, joints: np.ndarray) -> str:
    """``joints`` by index and label for a message, the first five and how many more."""
    return entity_list(model_labels(model, "joint"), joints, "joint")


def warn_ignored_joint_settings(model: newton.Model, joints: np.ndarray) -> None:
    """One warning naming ``joints``: BALL joints with limits, FREE, DISTANCE or loop-closing joints with drives,
    limits, friction or stiffness, which the solver does not apply."""
    _warn_naming_joints(
        model, joints, "drives, joint friction and joint stiffness act only on REVOLUTE, PRISMATIC, D6 and BALL tree "
        "joints, limits only on REVOLUTE, PRISMATIC and D6 ones; ignored on {}"
    )  # fmt: skip


def warn_unenforced_distance_ranges(model: newton.Model, joints: np.ndarray) -> None:
    """One warning naming the DISTANCE ``joints`` with a distance range (a bound >= 0 in the limits of their first
    dof; ``add_joint_distance``'s default ``max_distance`` is 1 m), which the solver does not enforce."""
    _warn_naming_joints(
        model, joints, "DISTANCE joints are stepped as FREE joints: the distance range [min_distance, max_distance] "
        "is not enforced on {}"
    )  # fmt: skip


def warn_unused_drive_gains(model: newton.Model, joints: np.ndarray) -> None:
    """One warning naming ``joints``, whose dofs have drive gains that their ``joint_target_mode`` does not use
    (NONE or EFFORT: none; VELOCITY: only kd. Newton's builder infers NONE from zero gains, so gains written after
    ``finalize`` need the mode too): no drive acts, as in Newton's SolverMuJoCo (Featherstone applies the gains
    whatever the mode)."""
    _warn_naming_joints(
        model, joints, "joint_target_ke/kd are set on dofs whose joint_target_mode uses none of them (NONE or "
        "EFFORT; VELOCITY uses kd only), so no drive acts on {}; set joint_target_mode (e.g. "
        "JointTargetMode.POSITION) to drive them"
    )  # fmt: skip


def _warn_naming_joints(model: newton.Model, joints: np.ndarray, text: str) -> None:
    """``text`` with ``{}`` replaced by :func:`joint_list` of ``joints``, as a warning at the caller of
    :func:`validate_joint_drives_and_limits`'s caller (``SolverSAP(...)`` or ``notify_model_changed``); none if
    ``joints`` is empty."""
    if len(joints) == 0:
        return
    warnings.warn(text.format(joint_list(model, joints)), UserWarning, stacklevel=6)


def warn_disabled_tree_joints(model: newton.Model, topo) -> None:
    """One warning naming the tree joints whose ``joint_enabled`` is False: in reduced coordinates a tree
    joint is the body's coordinates, so it stays; only loop-closing joints can be switched off."""
    if model.joint_count == 0:
        return
    disabled = np.nonzero(~model.joint_enabled.numpy().astype(bool) & (topo.joint_in_tree == 1))[0]
    if len(disabled) == 0:
        return
    warnings.warn(
        f"joint_enabled = False acts only on loop-closing joints; the tree joints {joint_list(model, disabled)} stay",
        UserWarning,
        stacklevel=4,  # the SolverSAP(...) or notify_model_changed call
    )


def warn_body_velocities_without_joint_velocities(model: newton.Model, topo) -> None:
    """One warning naming the bodies whose ``model.body_qd`` is non-zero while every ``joint_qd`` of their tree is
    zero: a step reads the joint coordinates, not ``body_q``/``body_qd`` (as Newton's Featherstone and MuJoCo
    solvers), so a velocity set on the body alone (``builder.body_qd[b] = ...``, as for maximal-coordinate solvers)
    would be dropped without a sign."""
    if topo.dof_count == 0:
        return
    joint_qd = model.joint_qd.numpy()
    tree_moves = np.zeros(topo.tree_count, bool)
    np.logical_or.at(tree_moves, topo.dof_tree, joint_qd[topo.dof_public] != 0.0)
    body_moves = np.any(model.body_qd.numpy() != 0.0, axis=1)
    in_tree = topo.body_tree >= 0
    bodies = np.nonzero(body_moves & in_tree & ~tree_moves[np.where(in_tree, topo.body_tree, 0)])[0]
    if len(bodies) == 0:
        return
    names, verb = entity_list(model_labels(model, "body"), bodies, "body"), "has" if len(bodies) == 1 else "have"
    warnings.warn(
        f"{names} {verb} a velocity in model.body_qd but none in their joints' joint_qd; SolverSAP steps the joint "
        "coordinates and ignores it: set the velocity on the joint (a FREE joint's joint_qd is [v_com, ω]) or run "
        "newton.eval_ik(model, state, state.joint_q, state.joint_qd) on the state first",
        UserWarning,
        stacklevel=3,  # the SolverSAP(...) call
    )


def warn_rotationally_light_bodies(model: newton.Model, stacklevel: int) -> None:
    """One warning naming the dynamic bodies above :data:`TURN_OVER_MOVE_WARNING` (mass and inertia about the COM,
    ``body_com``, against the corners of their colliding shapes' local bounding boxes, ``shape_collision_aabb_*``;
    kinematic bodies, massless ones and inertias with a non-positive principal moment left out, which other checks
    judge). ``stacklevel`` points at the ``SolverSAP(...)`` or ``notify_model_changed`` call."""
    lower, upper = model.shape_collision_aabb_lower, model.shape_collision_aabb_upper
    if model.body_count == 0 or model.shape_count == 0 or lower is None or upper is None:
        return
    mass, com = model.body_mass.numpy().astype(np.float64), model.body_com.numpy().astype(np.float64)
    inertia = model.body_inertia.numpy().astype(np.float64)
    finite = np.isfinite(inertia).all(axis=(1, 2)) & np.isfinite(com).all(axis=1) & np.isfinite(mass)
    inertia[~finite], com[~finite] = np.eye(3), 0.0  # judged by check_inertial_properties, not here
    moments, axes = np.linalg.eigh(inertia)  # (B, 3), (B, 3, 3) columns
    shape_body = model.shape_body.numpy()
    colliding = (model.shape_flags.numpy() & int(newton.ShapeFlags.COLLIDE_SHAPES)) != 0
    lo, hi = lower.numpy().astype(np.float64), upper.numpy().astype(np.float64)
    shapes = np.nonzero((shape_body >= 0) & colliding & np.isfinite(lo).all(axis=1) & np.isfinite(hi).all(axis=1))[0]
    if len(shapes) == 0:
        return
    bits = (np.arange(8)[:, None] >> np.arange(3)) & 1  # the 8 corners of a box, (8, 3)
    corners = np.where(bits[None], hi[shapes, None], lo[shapes, None])  # (S, 8, 3) in the shapes' frames
    X = model.shape_transform.numpy().astype(np.float64)[shapes]
    R = quat_to_matrix(X[:, 3:])  # (S, 3, 3)
    body = shape_body[shapes]
    p = np.einsum("sij,scj->sci", R, corners) + (X[:, :3] - com[body])[:, None]  # about the COM, body frame
    along = np.einsum("sci,sik->sck", p, axes[body])  # components along the principal axes
    reach = np.zeros((model.body_count, 3))
    np.maximum.at(reach, body, ((p * p).sum(axis=2)[:, :, None] - along * along).max(axis=1))
    dynamic = finite & (mass > 0.0) & ((model.body_flags.numpy() & int(newton.BodyFlags.KINEMATIC)) == 0)
    valid = dynamic & (moments > 0.0).all(axis=1)
    ratio = np.where(valid, (mass[:, None] * reach / np.where(moments > 0.0, moments, 1.0)).max(axis=1), 0.0)
    bodies = np.nonzero(ratio > TURN_OVER_MOVE_WARNING)[0]
    if len(bodies) == 0:
        return
    worst = int(bodies[np.argmax(ratio[bodies])])
    it = "it" if len(bodies) == 1 else "them"
    warnings.warn(
        f"{entity_list(model_labels(model, 'body'), bodies, 'body')}: an impulse at the far points of the collision "
        f"shapes turns {it} up to {ratio[worst]:.3g} times as much as it moves {it} (body {worst}: {mass[worst]:.3g} "
        f"kg, principal inertias {np.array2string(moments[worst], precision=3)} kg·m²), and the near-rigid contact "
        f"rule softens the contacts by about as much, so {it} may sink into what {it} touches: give {it} the inertia "
        "of the shapes (set the body's inertia, or the shapes' density rather than the body's mass)",
        UserWarning,
        stacklevel=stacklevel,
    )


def validate_shapes(model: newton.Model, options: SapOptions) -> None:
    """Shape materials the contact model reads must be physical, and the geometry Newton's collision pipeline reads
    finite (a NaN transform, scale, margin or gap gives no contacts: the body falls through what it should rest on);
    the error names the shape."""
    if model.shape_count == 0:
        return
    frame = model.shape_transform.numpy()
    scale = model.shape_scale.numpy()
    margin = model.shape_margin.numpy()
    gap = model.shape_gap.numpy()
    ke = model.shape_material_ke.numpy()
    kd = model.shape_material_kd.numpy()
    mu = model.shape_material_mu.numpy()
    uses_ke = options.contact_stiffness is None or options.contact_dissipation_time is None
    uses_kd = options.contact_dissipation_time is None
    problems = (  # vectorized over the shapes; the first offending shape is named
        (~(np.isfinite(mu) & (mu >= 0.0)), lambda s: f"has friction coefficient {mu[s]}; it must be finite and >= 0"),
        (uses_ke & ~(np.isfinite(ke) & (ke > 0.0)),
         lambda s: f"has contact stiffness shape_material_ke = {ke[s]} [N/m]; it must be finite and > 0"),
        (uses_kd & ~(np.isfinite(kd) & (kd >= 0.0)),
         lambda s: f"has contact damping shape_material_kd = {kd[s]}; it must be finite and >= 0"),
        (~(np.isfinite(frame).all(axis=1) & (np.sum(frame[:, 3:] ** 2, axis=1) > 0.0)),
         lambda s: f"has shape_transform {frame[s].tolist()}; it must be finite with a nonzero quaternion"),
        (~np.isfinite(scale).all(axis=1), lambda s: f"has shape_scale {scale[s].tolist()}; it must be finite"),
        (~(np.isfinite(margin) & (margin >= 0.0)),
         lambda s: f"has shape_margin {margin[s]} [m]; it must be finite and >= 0"),
        (~(np.isfinite(gap) & (gap >= 0.0)), lambda s: f"has shape_gap {gap[s]} [m]; it must be finite and >= 0"),
    )  # fmt: skip
    if found := first_problem(problems):
        s, message = found
        raise ModelError(f"{entity_label(model_labels(model, 'shape'), s, 'shape')} {message}")
