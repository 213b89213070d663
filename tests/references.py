"""Independent reference values of M(q) and b(q, v) for real robots, in Newton's public coordinates.

The references answer one question: for a Newton model of a real robot and a state ``(joint_q, joint_qd)``
in Newton's layout, what are the joint-space mass matrix ``M`` and the bias force ``b`` such that

    M(q) @ qdd + b(q, qd) = tau,

where ``qd`` is :attr:`newton.State.joint_qd`, ``qdd`` its time derivative and ``tau`` the dual generalized
force (:attr:`newton.Control.joint_f`)?  ``b`` holds gravity, Coriolis, centrifugal and gyroscopic terms,
plus the velocity-product terms created by the change of coordinates below.  ``M`` includes
:attr:`newton.Model.joint_armature` on its diagonal (added in Newton's coordinates) and no joint damping.

Sources (``reference_mass_and_bias(..., source=...)``):

* ``"pinocchio"``: CRBA / RNEA of Pinocchio on the same URDF (URDF robots only), float64.
* ``"mujoco"``: ``mj_fullM`` / ``qfrc_bias`` of MuJoCo on the same URDF or MJCF, float64.
* ``"newton"``: :func:`newton.eval_mass_matrix` and :func:`newton.eval_inverse_dynamics_passive`
  (gravity + Coriolis forces) on the Newton model itself, float32.  Not independent: use it to check
  models whose kinematics Newton's importer changes (see below).

Coordinate maps, with ``P`` the matrix such that ``qd_public = P(q) @ qd_ref``, so that
``M_public = P^-T M_ref P^-1`` and ``b_public = P^-T ID_ref(q, qd_ref, qdd_ref0)`` where ``qdd_ref0`` is the
reference acceleration for which ``qdd_public = 0``:

* REVOLUTE / PRISMATIC (URDF ``revolute``/``continuous``/``prismatic``, MJCF ``hinge``/``slide``): identity.
  Newton stores MJCF hinge/slide positions relative to ``ref`` (MuJoCo ``qpos0``), so
  ``qpos = joint_q + qpos0``.  Pinocchio's URDF ``continuous`` joints use ``(cos, sin)`` positions.
* FREE (root only): Newton's ``joint_qd = [v_com, w]`` is the linear velocity of the child body's centre of mass
  and its angular velocity, both in the joint's parent-anchor frame ``F`` (rotation ``R_F`` of ``joint_X_p``;
  world-aligned for every model here).  With ``R`` the body rotation, ``c`` the body COM in body coordinates
  (:attr:`newton.Model.body_com` of the child, i.e. of the base link alone: fixed children are not collapsed):

  - Pinocchio free-flyer ``v = [v_o, w_b]`` (origin velocity and angular velocity in the body frame):
    ``v_com = R_F^T R (v_o + w_b x c)``, ``w = R_F^T R w_b``; ``qdd_public = 0`` needs
    ``a_ref = [-w_b x (v_o + w_b x c), 0]``.
  - MuJoCo free joint ``qvel = [v_o_world, w_b]``: ``v_com = R_F^T (v_o_world + R (w_b x c))``,
    ``w = R_F^T R w_b``; ``qdd_public = 0`` needs ``qacc = [-w x (w x R c), 0]`` (``w`` in world).

  Newton's gravity/Coriolis outputs for a FREE joint are world-frame wrenches; the ``"newton"`` source rotates
  them into ``F`` (a no-op when ``R_F = I``).
* BALL (MuJoCo only; exercised by ``nv_humanoid_ball``): Newton's ``joint_qd`` is the relative angular
  velocity in ``F``, MuJoCo's ``qvel`` the same velocity in the child body frame: ``P = R_j R_cj^T`` (``R_j``
  the joint quaternion, ``R_cj`` the rotation of ``joint_X_c``), MuJoCo ``qpos = body_quat^-1 R_pj R_j R_cj^T``.
  No velocity-product term: with ``R = R_j R_cj^T``, ``d/dt (R w_c) = R dw_c/dt + w_F x (R w_c) = R dw_c/dt``.
* D6 (several MJCF hinges/slides merged into one Newton joint): Newton orders the DOFs linear first, then
  angular, each in MJCF order; its rotation is the intrinsic product about transported axes, which equals
  MuJoCo's sequential hinges (``R = R(a0, q0) R(a1, q1) R(a2, q2)``), so the map is a permutation.  This holds
  only when (a) the merged angular axes are mutually orthogonal and (b) all merged joints share one ``pos``.
  Newton builds D6 frames assuming orthogonal axes (``q_off`` from ``(a0, a1, a0 x a1)``) and keeps only the
  first joint's ``pos``, so other models get different kinematics; the MuJoCo reference raises ``ValueError``
  for such models, which must be compared against ``source="newton"`` instead.  ``nv_humanoid`` is not such a
  model: all of its merged hinge pairs/triples (abdomen, hips, ankles, shoulders, e.g. ``2 1 1`` / ``0 -1 1``)
  are orthogonal and share one ``pos``.

Joints are matched between Newton and the reference by name: Newton's ``joint_label`` tail (after the last
``/``) against Pinocchio ``model.names`` / MuJoCo joint names (a merged D6 label is the ``_``-joined names of the
MuJoCo joints of its child body); the root FREE joint is matched through its child body's name.

Robots (:data:`ROBOTS`): fixed-base arms ``ur5`` (6 DOF) and ``panda`` (9, prismatic fingers); floating
quadrupeds ``solo12`` and ``go2`` (18); floating humanoids ``talos`` (50) and ``g1`` (49), all from
example-robot-data URDFs; Newton's MJCFs ``nv_ant`` (14), ``nv_humanoid`` (27, merged-hinge D6 joints) and
``nv_humanoid_ball`` (27, BALL hips).

All models are loaded offline.  URDFs are stripped of ``<visual>``/``<collision>`` elements before loading
(Newton needs ``trimesh`` for meshes; dynamics only use ``<inertial>``), and MJCFs of the sections that carry
no dynamics of the tree (sensors, actuators, tendons, equalities, contacts, keyframes).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import site
import sysconfig
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import newton
import newton.examples
import numpy as np
import warp as wp

GRAVITY = 9.81
"""Magnitude of gravity [m/s^2], along -z in every model and reference."""


@functools.cache
def _erd_dir() -> str:
    """Return the ``robots`` directory of the installed ``example-robot-data`` (cmeel) package."""
    for base in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        path = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


def _newton_assets_dir() -> str:
    return os.path.join(os.path.dirname(newton.examples.__file__), "assets")


@dataclass(frozen=True)
class RobotSpec:
    """Where a robot comes from and which references apply to it.

    Attributes:
        file: Path of the URDF/MJCF file, relative to example-robot-data's ``robots`` directory (URDF) or to
            Newton's ``examples/assets`` directory (MJCF).
        kind: ``"urdf"`` or ``"mjcf"``.
        floating: Default base: True for a floating base (FREE root joint), False for a fixed base.
        sources: References that describe the Newton model exactly (``"newton"`` always applies).
        hinges_to_ball: MJCF only: every body with three hinges becomes one BALL joint at the first hinge's
            ``pos`` (Newton's ``convert_3d_hinge_to_ball_joints``; the MuJoCo reference is edited the same way).
    """

    file: str
    kind: str
    floating: bool
    sources: tuple[str, ...]
    hinges_to_ball: bool = False

    def path(self) -> str:
        """Absolute path of the robot's file."""
        return os.path.join(_erd_dir() if self.kind == "urdf" else _newton_assets_dir(), self.file)


_URDF = ("pinocchio", "mujoco", "newton")
_MJCF = ("mujoco", "newton")

SPECS: dict[str, RobotSpec] = {
    "ur5": RobotSpec("ur_description/urdf/ur5_robot.urdf", "urdf", False, _URDF),
    "panda": RobotSpec("panda_description/urdf/panda.urdf", "urdf", False, _URDF),
    "solo12": RobotSpec("solo_description/robots/solo12.urdf", "urdf", True, _URDF),
    "go2": RobotSpec("go2_description/urdf/go2.urdf", "urdf", True, _URDF),
    "talos": RobotSpec("talos_data/robots/talos_full_v2.urdf", "urdf", True, _URDF),
    "g1": RobotSpec("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", "urdf", True, _URDF),
    "nv_ant": RobotSpec("nv_ant.xml", "mjcf", True, _MJCF),
    "nv_humanoid": RobotSpec("nv_humanoid.xml", "mjcf", True, _MJCF),
    "nv_humanoid_ball": RobotSpec("nv_humanoid.xml", "mjcf", True, _MJCF, hinges_to_ball=True),
}
"""Robot name -> :class:`RobotSpec`."""

ROBOTS: list[str] = list(SPECS)
"""Names of the robots for which references are available (all load offline)."""

_STRIPPED_MJCF_SECTIONS = ("sensor", "actuator", "tendon", "equality", "contact", "keyframe")


# ----------------------------------------------------------------------------------------------------------------
# File preparation


@functools.cache
def _stripped_file(name: str) -> str:
    """Return the path of a dynamics-only copy of the robot's file (cached in a temporary directory)."""
    spec = SPECS[name]
    src = spec.path()
    tree = ET.parse(src)
    root = tree.getroot()
    if spec.kind == "urdf":
        for link in root.iter("link"):
            for tag in ("visual", "collision"):
                for e in link.findall(tag):
                    link.remove(e)
    else:
        for tag in _STRIPPED_MJCF_SECTIONS:
            for e in root.findall(tag):
                root.remove(e)
    out_dir = tempfile.mkdtemp(prefix=f"newton_sap_ref_{name}_")
    atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
    path = os.path.join(out_dir, os.path.basename(src))
    tree.write(path)
    return path


# ----------------------------------------------------------------------------------------------------------------
# Newton model


def build_newton_model(name: str, floating: bool | None = None, worlds: int = 1, device=None):
    """Build a Newton model of robot ``name``, replicated into ``worlds`` worlds.

    Import options keep the file's kinematics and inertias: inertial definitions are used, fixed joints are not
    collapsed, self-collisions are off, z is up and gravity is ``(0, 0, -9.81)`` m/s^2; MJCF ``<option>`` is not
    parsed and armature is taken from the file (URDF: 0).  Inertia validation is skipped: by default Newton
    adds ~1e-6 kg m^2 to bodies with mass but no rotational inertia (talos's wrist tool and camera frames),
    which the references would not see.

    Args:
        name: One of :data:`ROBOTS`.
        floating: FREE root joint (True) or root welded to the world (False); None uses the robot's default.
        worlds: Number of identical worlds.
        device: Warp device of the model (default device if None).

    Returns:
        The finalized :class:`newton.Model`.
    """
    spec = SPECS[name]
    if floating is None:
        floating = spec.floating
    robot = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    common = {
        "floating": floating,
        "enable_self_collisions": False,
        "collapse_fixed_joints": False,
        "ignore_inertial_definitions": False,
    }
    if spec.kind == "urdf":
        robot.add_urdf(_stripped_file(name), **common)
    else:
        robot.add_mjcf(
            _stripped_file(name),
            parse_mujoco_options=False,
            convert_3d_hinge_to_ball_joints=spec.hinges_to_ball,
            **common,
        )
    scene = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -GRAVITY))
    scene.replicate(robot, worlds)
    return scene.finalize(device=device, skip_validation_inertia=True)


@dataclass
class _NewtonJoints:
    """NumPy copy of the joint data of world 0 of a Newton model."""

    joints: np.ndarray  # joint indices of world 0, shape (J,)
    dof0: int  # first DOF of world 0
    ndof: int  # DOF count of world 0
    coord0: int  # first coordinate of world 0
    ncoord: int  # coordinate count of world 0
    jtype: np.ndarray
    parent: np.ndarray
    child: np.ndarray
    q_start: np.ndarray
    qd_start: np.ndarray
    dof_dim: np.ndarray
    X_p: np.ndarray  # (joint_count, 7) [p, quat xyzw]
    X_c: np.ndarray
    axis: np.ndarray  # (dof_count, 3)
    body_com: np.ndarray  # (body_count, 3)
    armature: np.ndarray  # (dof_count,)
    label: list
    body_label: list


def _newton_joints(model) -> _NewtonJoints:
    """Gather the joint data of world 0 (or of the global world -1 for a model built without worlds)."""
    jw = model.joint_world.numpy()
    joints = np.flatnonzero(jw == (0 if np.any(jw == 0) else -1))  # -1: model built without worlds
    if joints.size == 0 or np.any(np.diff(joints) != 1):
        raise ValueError("world 0 must hold a contiguous, non-empty range of joints")
    q_start = model.joint_q_start.numpy()
    qd_start = model.joint_qd_start.numpy()
    j0, j1 = joints[0], joints[-1] + 1
    return _NewtonJoints(
        joints=joints,
        dof0=int(qd_start[j0]),
        ndof=int(qd_start[j1] - qd_start[j0]),
        coord0=int(q_start[j0]),
        ncoord=int(q_start[j1] - q_start[j0]),
        jtype=model.joint_type.numpy(),
        parent=model.joint_parent.numpy(),
        child=model.joint_child.numpy(),
        q_start=q_start,
        qd_start=qd_start,
        dof_dim=model.joint_dof_dim.numpy(),
        X_p=model.joint_X_p.numpy().astype(np.float64),
        X_c=model.joint_X_c.numpy().astype(np.float64),
        axis=model.joint_axis.numpy().astype(np.float64),
        body_com=model.body_com.numpy().astype(np.float64),
        armature=model.joint_armature.numpy().astype(np.float64),
        label=list(model.joint_label),
        body_label=list(model.body_label),
    )


def _tail(label: str) -> str:
    """Last ``/``-separated segment of a Newton label (the URDF/MJCF name)."""
    return label.rsplit("/", 1)[-1]


# ----------------------------------------------------------------------------------------------------------------
# Small rotation helpers (quaternions are xyzw as in Newton unless noted)


def _quat_to_mat(q: np.ndarray) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _mat_to_quat_wxyz(R: np.ndarray) -> np.ndarray:
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R).reshape(9))
    return q


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _free_pose(nj: _NewtonJoints, j: int, joint_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World pose ``(p, R)`` of the child body of root FREE joint ``j``: ``X_p X_j X_c^-1``."""
    qs = nj.q_start[j]
    p_j, R_j = joint_q[qs : qs + 3].astype(np.float64), _quat_to_mat(joint_q[qs + 3 : qs + 7])
    R_p, R_c = _quat_to_mat(nj.X_p[j, 3:]), _quat_to_mat(nj.X_c[j, 3:])
    R = R_p @ R_j @ R_c.T
    p = nj.X_p[j, :3] + R_p @ (p_j - R_j @ R_c.T @ nj.X_c[j, :3])
    return p, R


def _check_orthogonal_d6(name: str, nj: _NewtonJoints) -> None:
    """Raise if a D6 joint's angular axes are not mutually orthogonal (Newton then changes the kinematics)."""
    for j in nj.joints:
        if nj.jtype[j] != newton.JointType.D6:
            continue
        n_lin, n_ang = nj.dof_dim[j]
        a0 = nj.qd_start[j] + n_lin
        axes = nj.axis[a0 : a0 + n_ang] / np.linalg.norm(nj.axis[a0 : a0 + n_ang], axis=1, keepdims=True)
        if not np.allclose(axes @ axes.T, np.eye(n_ang), atol=1e-6):
            raise ValueError(
                f"{name}: D6 joint {nj.label[j]!r} has non-orthogonal axes, which Newton "
                "orthonormalizes; compare against source='newton' instead"
            )


# ----------------------------------------------------------------------------------------------------------------
# Random states


def random_state(model, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw a random state in Newton's layout for every world of ``model``.

    Positions: FREE roots at a random position in ``[-1, 1]^3`` m with a random unit quaternion; BALL joints a
    random unit quaternion; 1-DOF and D6 coordinates uniform inside the joint limits intersected with
    ``[-pi, pi]`` rad (``[-1.2, 1.2]`` rad for D6 angles, away from gimbal lock) or ``[-0.3, 0.3]`` m.
    Velocities: standard normal per DOF [m/s or rad/s].

    Returns:
        ``joint_q`` of shape ``(joint_coord_count,)`` and ``joint_qd`` of shape ``(joint_dof_count,)``, float64.
    """
    JT = newton.JointType
    jtype = model.joint_type.numpy()
    q_start = model.joint_q_start.numpy()
    qd_start = model.joint_qd_start.numpy()
    dof_dim = model.joint_dof_dim.numpy()
    lower = model.joint_limit_lower.numpy().astype(np.float64)
    upper = model.joint_limit_upper.numpy().astype(np.float64)
    q = model.joint_q.numpy().astype(np.float64)
    qd = rng.standard_normal(model.joint_dof_count)

    def _unit_quat():
        v = rng.standard_normal(4)
        return v / np.linalg.norm(v)

    def _uniform(dof, bound):
        lo, hi = max(lower[dof], -bound), min(upper[dof], bound)
        return rng.uniform(lo, hi) if lo < hi else 0.5 * (lower[dof] + upper[dof])

    for j in range(model.joint_count):
        qs, ds, t = q_start[j], qd_start[j], jtype[j]
        if t == JT.FREE:
            q[qs : qs + 3] = rng.uniform(-1.0, 1.0, 3)
            q[qs + 3 : qs + 7] = _unit_quat()
        elif t == JT.BALL:
            q[qs : qs + 4] = _unit_quat()
        elif t == JT.REVOLUTE:
            q[qs] = _uniform(ds, np.pi)
        elif t == JT.PRISMATIC:
            q[qs] = _uniform(ds, 0.3)
        elif t == JT.D6:
            n_lin, n_ang = dof_dim[j]
            for k in range(n_lin):
                q[qs + k] = _uniform(ds + k, 0.3)
            for k in range(n_lin, n_lin + n_ang):
                q[qs + k] = _uniform(ds + k, 1.2)
        elif t != JT.FIXED:
            raise NotImplementedError(f"joint type {t} of joint {model.joint_label[j]}")
    return q, qd


# ----------------------------------------------------------------------------------------------------------------
# References


def reference_mass_and_bias(
    name: str, model, joint_q: np.ndarray, joint_qd: np.ndarray, source: str = "pinocchio"
) -> tuple[np.ndarray, np.ndarray]:
    """Mass matrix and bias force of world 0 of ``model`` in Newton's public coordinates.

    Args:
        name: Robot name (key of :data:`SPECS`), used to load the reference model.
        model: Newton model from :func:`build_newton_model` (any number of worlds; world 0 is used).
        joint_q: Newton joint positions, shape ``(model.joint_coord_count,)`` (or world 0's slice).
        joint_qd: Newton joint velocities, shape ``(model.joint_dof_count,)`` (or world 0's slice).
        source: ``"pinocchio"``, ``"mujoco"`` or ``"newton"``.

    Returns:
        ``M`` of shape ``(n, n)`` [kg, kg m, kg m^2] and ``b`` of shape ``(n,)`` [N, N m], float64, with ``n`` the
        DOF count of world 0, such that ``M @ qdd + b = joint_f`` (world-0 slices, ``qdd = d joint_qd / dt``).
    """
    nj = _newton_joints(model)
    joint_q = np.asarray(joint_q, dtype=np.float64)
    joint_qd = np.asarray(joint_qd, dtype=np.float64)
    if joint_q.shape[0] == nj.ncoord and joint_q.shape[0] != model.joint_coord_count:
        joint_q = np.concatenate([np.zeros(nj.coord0), joint_q])
    if joint_qd.shape[0] == nj.ndof and joint_qd.shape[0] != model.joint_dof_count:
        joint_qd = np.concatenate([np.zeros(nj.dof0), joint_qd])
    if source == "newton":
        return _newton_reference(model, nj, joint_q, joint_qd)
    if source == "pinocchio":
        M, b = _pinocchio_reference(name, model, nj, joint_q, joint_qd)
    elif source == "mujoco":
        M, b = _mujoco_reference(name, model, nj, joint_q, joint_qd)
    else:
        raise ValueError(f"unknown source {source!r}")
    M = M + np.diag(nj.armature[nj.dof0 : nj.dof0 + nj.ndof])
    return M, b


def _finish(P: np.ndarray, M_ref: np.ndarray, b_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``P^-T M_ref P^-1`` (symmetrized) and ``P^-T b_ref``."""
    Pinv = np.linalg.inv(P)
    M = Pinv.T @ M_ref @ Pinv
    return 0.5 * (M + M.T), Pinv.T @ b_ref


def _is_root_free(nj: _NewtonJoints, j: int) -> bool:
    """Whether joint ``j`` is a FREE joint (which must then be a root joint)."""
    if nj.jtype[j] != newton.JointType.FREE:
        return False
    if nj.parent[j] != -1:
        raise NotImplementedError("FREE joints are supported only at the root")
    return True


# --- Newton ------------------------------------------------------------------------------------------------------


def _newton_reference(model, nj: _NewtonJoints, joint_q, joint_qd):
    """``(M, b)`` of world 0 from Newton's own float32 functions, FREE rows rotated into the joint frame ``F``."""
    state = model.state()
    state.joint_q.assign(joint_q.astype(np.float32))
    state.joint_qd.assign(joint_qd.astype(np.float32))
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    H = newton.eval_mass_matrix(model, state).numpy()
    grav = wp.zeros(model.joint_dof_count, dtype=float, device=model.device)
    cor = wp.zeros(model.joint_dof_count, dtype=float, device=model.device)
    newton.eval_inverse_dynamics_passive(model, state, gravity_force=grav, coriolis_force=cor)
    aw = model.articulation_world.numpy()
    art = np.flatnonzero(aw == (0 if np.any(aw == 0) else -1))
    if art.size != 1:
        raise NotImplementedError("world 0 must hold exactly one articulation")
    n = nj.ndof
    M = H[art[0], :n, :n].astype(np.float64)
    b = (grav.numpy() + cor.numpy()).astype(np.float64)[nj.dof0 : nj.dof0 + n]
    for j in nj.joints:
        if _is_root_free(nj, j):
            R_F = _quat_to_mat(nj.X_p[j, 3:])
            d = nj.qd_start[j] - nj.dof0
            b[d : d + 3] = R_F.T @ b[d : d + 3]
            b[d + 3 : d + 6] = R_F.T @ b[d + 3 : d + 6]
    return 0.5 * (M + M.T), b


# --- Pinocchio ----------------------------------------------------------------------------------------------------


@functools.cache
def _pin_model(name: str, floating: bool):
    """Pinocchio model of the stripped URDF (free-flyer root if ``floating``), gravity -z, zero armature."""
    import pinocchio as pin

    if SPECS[name].kind != "urdf":
        raise ValueError(f"source 'pinocchio' supports URDF robots only, not {name!r}")
    with open(_stripped_file(name)) as f:
        xml = f.read()
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(xml)
    pm.gravity.linear = np.array([0.0, 0.0, -GRAVITY])
    pm.armature[:] = 0.0  # Newton's armature is added in public coordinates
    return pm


def _pinocchio_reference(name, model, nj: _NewtonJoints, joint_q, joint_qd):
    """``(M, b)`` of world 0 from Pinocchio's CRBA/RNEA, mapped to Newton's coordinates, without armature."""
    import pinocchio as pin

    JT = newton.JointType
    free = [j for j in nj.joints if _is_root_free(nj, j)]
    pm = _pin_model(name, bool(free))
    data = pm.createData()
    if pm.nv != nj.ndof:
        raise ValueError(f"{name}: Pinocchio has {pm.nv} DOFs, Newton {nj.ndof}")
    q = pin.neutral(pm)
    P = np.zeros((pm.nv, pm.nv))
    free_dofs = None
    for j in nj.joints:
        t, qs, ds = nj.jtype[j], nj.q_start[j], nj.qd_start[j] - nj.dof0
        if t == JT.FIXED:
            continue
        if t == JT.FREE:
            jid = 1  # Pinocchio's root free-flyer
            root_link = next(f.name for f in pm.frames if f.type == pin.FrameType.BODY and f.parentJoint == 1)
            if root_link != _tail(nj.body_label[nj.child[j]]):
                raise ValueError(f"{name}: root link {root_link!r} != Newton {nj.body_label[nj.child[j]]!r}")
            p, R = _free_pose(nj, j, joint_q)
            iq, iv = pm.joints[jid].idx_q, pm.joints[jid].idx_v
            q[iq : iq + 3] = p
            q[iq + 3 : iq + 7] = pin.Quaternion(R).coeffs()  # xyzw
            R_F = _quat_to_mat(nj.X_p[j, 3:])
            c = nj.body_com[nj.child[j]]
            P[ds : ds + 3, iv : iv + 3] = R_F.T @ R
            P[ds : ds + 3, iv + 3 : iv + 6] = -R_F.T @ R @ _skew(c)
            P[ds + 3 : ds + 6, iv + 3 : iv + 6] = R_F.T @ R
            free_dofs = (iv, c)
        elif t in (JT.REVOLUTE, JT.PRISMATIC):
            jname = _tail(nj.label[j])
            if not pm.existJointName(jname):
                raise ValueError(f"{name}: joint {jname!r} not in Pinocchio model")
            jm = pm.joints[pm.getJointId(jname)]
            if jm.nq == 1:
                q[jm.idx_q] = joint_q[qs]
            else:  # continuous joint: (cos, sin)
                q[jm.idx_q : jm.idx_q + 2] = np.cos(joint_q[qs]), np.sin(joint_q[qs])
            P[ds, jm.idx_v] = 1.0
        else:
            raise NotImplementedError(f"{name}: joint type {t} has no Pinocchio map")
    v = np.linalg.solve(P, joint_qd[nj.dof0 : nj.dof0 + nj.ndof])
    a = np.zeros(pm.nv)
    if free_dofs is not None:
        iv, c = free_dofs
        w = v[iv + 3 : iv + 6]
        a[iv : iv + 3] = -np.cross(w, v[iv : iv + 3] + np.cross(w, c))
    M_ref = pin.crba(pm, data, q)
    M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
    b_ref = pin.rnea(pm, data, q, v, a)
    return _finish(P, M_ref, np.array(b_ref))


# --- MuJoCo -------------------------------------------------------------------------------------------------------


@functools.cache
def _mj_model(name: str, floating: bool):
    """MuJoCo model of the stripped file with the requested root, gravity -z, zero armature."""
    import mujoco

    spec_r = SPECS[name]
    path = _stripped_file(name)
    if spec_r.kind == "urdf":
        with open(path) as f:
            spec = mujoco.MjSpec.from_string(f.read())
    else:
        spec = mujoco.MjSpec.from_file(path)
    root = spec.worldbody.first_body()
    free = [jt for jt in root.joints if jt.type == mujoco.mjtJoint.mjJNT_FREE]
    if floating and not free:
        root.add_freejoint(name="root_joint")
    elif not floating:
        for jt in free:
            spec.delete(jt)
    if spec_r.hinges_to_ball:
        for body in spec.bodies:
            hinges = [jt for jt in body.joints if jt.type == mujoco.mjtJoint.mjJNT_HINGE]
            if len(hinges) == 3 and len(body.joints) == 3:
                ball_name, pos = "_".join(jt.name for jt in hinges), np.array(hinges[0].pos)
                for jt in hinges:
                    spec.delete(jt)
                body.add_joint(name=ball_name, type=mujoco.mjtJoint.mjJNT_BALL, pos=pos)
    spec.option.gravity = [0.0, 0.0, -GRAVITY]
    m = spec.compile()
    m.dof_armature[:] = 0.0  # Newton's armature is added in public coordinates
    return m


def _mujoco_reference(name, model, nj: _NewtonJoints, joint_q, joint_qd):
    """``(M, b)`` of world 0 from MuJoCo's ``mj_fullM``/``qfrc_bias``, mapped to Newton's coordinates, no armature."""
    import mujoco

    JT = newton.JointType
    free = [j for j in nj.joints if _is_root_free(nj, j)]
    _check_orthogonal_d6(name, nj)
    m = _mj_model(name, bool(free))
    d = mujoco.MjData(m)
    if m.nv != nj.ndof:
        raise ValueError(f"{name}: MuJoCo has {m.nv} DOFs, Newton {nj.ndof}")
    qpos = m.qpos0.copy()
    P = np.zeros((m.nv, m.nv))
    free_dofs = None
    for j in nj.joints:
        t, qs, ds = nj.jtype[j], nj.q_start[j], nj.qd_start[j] - nj.dof0
        if t == JT.FIXED:
            continue
        bname = _tail(nj.body_label[nj.child[j]])
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, bname)
        if bid < 0:
            raise ValueError(f"{name}: body {bname!r} not in MuJoCo model")
        jids = list(range(m.body_jntadr[bid], m.body_jntadr[bid] + m.body_jntnum[bid]))
        jtypes = [mujoco.mjtJoint(m.jnt_type[k]) for k in jids]
        if t == JT.FREE:
            if jtypes != [mujoco.mjtJoint.mjJNT_FREE]:
                raise ValueError(f"{name}: body {bname!r} has no MuJoCo free joint")
            k = jids[0]
            qa, va = m.jnt_qposadr[k], m.jnt_dofadr[k]
            p, R = _free_pose(nj, j, joint_q)
            qpos[qa : qa + 3] = p
            qpos[qa + 3 : qa + 7] = _mat_to_quat_wxyz(R)
            R_F = _quat_to_mat(nj.X_p[j, 3:])
            c = nj.body_com[nj.child[j]]
            P[ds : ds + 3, va : va + 3] = R_F.T
            P[ds : ds + 3, va + 3 : va + 6] = -R_F.T @ R @ _skew(c)
            P[ds + 3 : ds + 6, va + 3 : va + 6] = R_F.T @ R
            free_dofs = (va, R, c)
            continue
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, k) for k in jids]
        if "_".join(names) != _tail(nj.label[j]):
            raise ValueError(f"{name}: Newton joint {nj.label[j]!r} != MuJoCo joints {names} of body {bname!r}")
        if t == JT.BALL:
            if jtypes != [mujoco.mjtJoint.mjJNT_BALL]:
                raise ValueError(f"{name}: {nj.label[j]!r} is not a MuJoCo ball joint")
            k = jids[0]
            qa, va = m.jnt_qposadr[k], m.jnt_dofadr[k]
            R_j = _quat_to_mat(joint_q[qs : qs + 4])
            R_pj, R_cj = _quat_to_mat(nj.X_p[j, 3:]), _quat_to_mat(nj.X_c[j, 3:])
            w, x, y, z = m.body_quat[bid]
            R_body = _quat_to_mat(np.array([x, y, z, w]))
            qpos[qa : qa + 4] = _mat_to_quat_wxyz(R_body.T @ R_pj @ R_j @ R_cj.T)
            P[ds : ds + 3, va : va + 3] = R_j @ R_cj.T
            continue
        if t not in (JT.REVOLUTE, JT.PRISMATIC, JT.D6):
            raise NotImplementedError(f"{name}: joint type {t} has no MuJoCo map")
        # Newton's order: slides first, then hinges, each in MJCF order.
        slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
        if any(tt not in (slide, hinge) for tt in jtypes):
            raise NotImplementedError(f"{name}: body {bname!r} mixes hinge/slide with other joint types")
        if np.ptp(m.jnt_pos[jids], axis=0).max() > 0.0:
            raise ValueError(f"{name}: joints {names} of body {bname!r} have different pos; Newton keeps the first")
        order = [k for k, tt in zip(jids, jtypes, strict=True) if tt == slide]
        order += [k for k, tt in zip(jids, jtypes, strict=True) if tt == hinge]
        for i, k in enumerate(order):
            qpos[m.jnt_qposadr[k]] = joint_q[qs + i] + m.qpos0[m.jnt_qposadr[k]]
            P[ds + i, m.jnt_dofadr[k]] = 1.0
    qvel = np.linalg.solve(P, joint_qd[nj.dof0 : nj.dof0 + nj.ndof])
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    M_ref = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M_ref)
    a = np.zeros(m.nv)
    if free_dofs is not None:
        va, R, c = free_dofs
        w = R @ qvel[va + 3 : va + 6]
        a[va : va + 3] = -np.cross(w, np.cross(w, R @ c))
    return _finish(P, M_ref, M_ref @ a + d.qfrc_bias)
