"""MuJoCo actuation that Newton's MJCF importer keeps for SolverMuJoCo: the motors and servos SolverSAP applies, and
warnings naming the rest.

Newton's MJCF importer (which registers SolverMuJoCo's custom attributes itself) turns a ``<position>``/``<velocity>``
actuator on a joint into Newton's joint drive (``joint_target_ke/kd``, ``joint_target_mode``), which SolverSAP
applies, and keeps the rest in ``model.mujoco``: actuators driven by ``control.mujoco.ctrl`` (``<motor>``,
``<general>``, and ``<position>``/``<velocity>`` through a ``jointinparent`` transmission or imported with
``add_mjcf(..., ctrl_direct=True)``; ``ctrl_source`` CTRL_DIRECT), the force and control ranges and ``dampratio`` of
the drives (a drive with a ``dampratio`` comes with ``joint_target_kd = 0``; SolverSAP resolves it, see below), and
gravity compensation (``gravcomp``, which the dynamics applies: ``dynamics.body_inertia_and_bias``).

SolverSAP applies, read from ``control.mujoco.ctrl`` at every step (0 where the control has none, as MuJoCo's
``ctrl`` starts), the ctrl-driven actuators on one hinge or slide dof with a fixed gain g, no activation dynamics and
a bias that is none or affine, ``b0 + b1 L + b2 L̇`` with the actuator length ``L = gear (q + ref)`` [m or rad]
(MuJoCo's ``qpos``; Newton's coordinate q leaves the joint's ``ref`` out):

* motors (:func:`motor_rows`; no bias, or ``b1 = b2 = 0``): ``τ = gear · clamp(g u + b0, forcerange)`` with
  ``u = clamp(ctrl, ctrlrange)``, an explicit generalized force like ``joint_f``, summed per dof and clamped to
  ``±joint_effort_limit``;
* servos (:func:`servo_rows`; ``b1 ≤ 0``, ``b2 ≤ 0``, not both 0: MJCF ``<position>``, ``<velocity>`` and affine
  ``<general>`` servos; a position servo's ``b2 > 0`` is its ``dampratio``, resolved as below):
  ``τ = gear · clamp(g u + b0 + b1 L + b2 L̇, forcerange)``, which is an implicit PD drive on the dof
  (``constraints/pd_drive.py``) with ``Kp = −b1 gear²``, ``Kd = −b2 gear²``, its set-point as the target position
  (``Kp > 0``) or velocity, and the effort range ``gear · forcerange``: the SAP problem evaluates it at the step's
  new velocity and position (MuJoCo's ``implicitfast`` integrator only the velocity term), so stiff servos stay
  stable at large Δt. An asymmetric range ``[τ_lo, τ_hi]`` is its midpoint, an explicit force, plus a drive clamped
  to the half width. MuJoCo clamps the sum of a joint's actuator forces to ``±joint_effort_limit`` (the joint's
  ``actuatorfrcrange``), each first by its own range: so does SolverSAP (the servo's or drive's range is narrowed by
  the motors' force, :func:`effort_range`).

``dampratio`` (Newton's importer keeps it unresolved, ``b2 > 0``, as MuJoCo's compiler does before resolving it) is
resolved as MuJoCo does: the damping ``2 ζ sqrt(kp m)`` with the reflected inertia ``m = 1 / (gear² (M⁻¹)_ii)`` of the
dof at the reference configuration (MuJoCo's ``qpos0``: hinges and slides at their ``ref``, balls at identity, free
joints where the model puts them; ``SolverSAP._reference_inverse_inertia`` computes it with the solver's own CRBA,
per tree): for a position servo, and for Newton's joint drive in POSITION mode imported from a ``<position
dampratio>`` while its ``joint_target_kd`` is 0, with ``kp = joint_target_ke`` and no gear (the importer's drive is in
joint space; SolverMuJoCo writes the same value into ``joint_target_kd``; SolverSAP keeps it apart and leaves the
model as it is, so a drive whose ``joint_target_kd`` is set back to 0 takes it again). It is resolved again after
``notify_model_changed`` with actuator, inertial or joint dof properties (SolverMuJoCo resolves a drive's once, at
construction). A kinematic root counts as fixed (SolverMuJoCo's value is the free body's).

MuJoCo's actuator-level ``armature`` and linear ``damping`` (MJCF ``armature``, ``damping``) act on every actuator on
a hinge or slide dof of a tree joint, whatever drives it, as MuJoCo adds them through the gear g: ``g² armature`` on the
dof's mass-matrix diagonal and ``g² damping`` as implicit joint damping (:func:`actuator_armature_and_damping`; g = 1
for Newton's imported joint drives, in joint space). Polynomial damping and these terms through other transmissions
are named in warnings.

Newton's joint drive imported from a ``<position>`` (POSITION mode) or ``<velocity>`` (VELOCITY mode) takes that
actuator's ranges (:func:`drive_sources`): its target bounded by the ``ctrlrange`` (MuJoCo's ctrl is the target plus
the joint's ``ref`` for a position), its force by the ``forcerange`` within the joint's effort limit left by the
motors, as SolverMuJoCo's actuators are.

The other ctrl-driven actuators (also those on dofs outside the trees, of loop-closing joints), a servo on a dof that
has Newton's joint drive or an earlier servo, and the ranges of drives in POSITION_VELOCITY mode or on BALL joints are
named in warnings.
"""

from __future__ import annotations

import warnings

import newton
import numpy as np
import warp as wp

from .joint_constraints import newton_drive_dofs
from .topology import ModelError, Topology, entity_list, model_labels, name_list, scalar_tree_dofs

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

CTRL_JOINT_TARGET, CTRL_DIRECT = 0, 1
"""``model.mujoco.ctrl_source`` of an actuator that is Newton's joint drive (imported ``<position>``/``<velocity>``)
and of one driven by ``control.mujoco.ctrl`` (Newton's ``CtrlSource``)."""
TRN_JOINT, TRN_JOINT_IN_PARENT = 0, 1
"""``model.mujoco.actuator_trntype`` of an actuator on a joint dof (``actuator_trnid[k, 0]``; Newton's ``TrnType``):
``joint`` and ``jointinparent``, which differ only on BALL and FREE joints."""
LIMITED, AUTO = wp.constant(1), wp.constant(2)
"""``actuator_ctrllimited``/``actuator_forcelimited``: on, or on where a range is given (MuJoCo's ``auto``)."""
DYN_NONE, GAIN_FIXED = 0, 0
"""``actuator_dyntype`` and ``actuator_gaintype`` of the actuators SolverSAP applies: no activation state, a constant
gain ``gainprm[0]``."""
BIAS_NONE, BIAS_AFFINE = wp.constant(0), wp.constant(1)
"""``actuator_biastype``: no bias, or ``biasprm[0] + biasprm[1] L + biasprm[2] L̇`` (MuJoCo's ``affine``)."""

vec6 = wp.types.vector(length=6, dtype=wp.float32)
vec10 = wp.types.vector(length=10, dtype=wp.float32)


def range_applies(flag: np.ndarray, has_range: np.ndarray) -> np.ndarray:
    """Per entry, whether MuJoCo applies a range (its ``limited`` flag on, or ``auto`` with a range given): an
    actuator's control or force range, a tendon's length range."""
    return (flag == LIMITED) | ((flag == AUTO) & has_range.astype(bool))


def _verb(rows) -> str:
    """ "is" for one entry, "are" for more."""
    return "is" if len(rows) == 1 else "are"


def _actuator_names(model: newton.Model, rows: np.ndarray) -> str:
    """``rows`` of the MuJoCo actuators as ``actuator k (joint 'label')`` (the joint of its dof, for a joint
    transmission), the first five and how many more."""
    mj = model.mujoco
    dof = mj.actuator_trnid.numpy()[:, 0]
    on_joint = np.isin(mj.actuator_trntype.numpy(), (TRN_JOINT, TRN_JOINT_IN_PARENT))
    qd_start = model.joint_qd_start.numpy()
    labels = model_labels(model, "joint")
    names = []
    for k in rows[:5]:
        joint = int(np.searchsorted(qd_start, dof[k], side="right")) - 1
        known = on_joint[k] and 0 <= dof[k] < model.joint_dof_count and joint < len(labels)
        names.append(f"actuator {int(k)} (joint '{labels[joint]}')" if known else f"actuator {int(k)}")
    return name_list(names, len(rows))


def warn_mujoco_actuation(model: newton.Model, topo: Topology, stacklevel: int) -> None:
    """Warnings naming the MuJoCo actuators driven by ``control.mujoco.ctrl`` that SolverSAP does not apply (neither
    motors nor servos, :func:`motor_rows` and :func:`servo_rows`), the servos it leaves out for a Newton joint drive
    or an earlier servo on their dof, the drives whose MuJoCo force or control range or ``dampratio`` is not
    applied and the joints whose gravity compensation MuJoCo routes through their actuators; none for a model
    without Newton's MuJoCo attributes. ``stacklevel`` points at the ``SolverSAP(...)`` or ``notify_model_changed``
    call."""
    mj = getattr(model, "mujoco", None)
    if mj is None:
        return
    count = _actuator_count(model)
    if count:
        direct = mj.ctrl_source.numpy()[:count] == CTRL_DIRECT
        servo_form = _servo_form(model, topo, count)
        ignored = direct & ~servo_form
        ignored[motor_rows(model, topo)] = False
        rows = np.nonzero(ignored)[0]
        if len(rows):
            warnings.warn(
                f"{_actuator_names(model, rows)} {_verb(rows)} driven by control.mujoco.ctrl, which only SolverMuJoCo "
                "applies to such actuators; SolverSAP applies the MuJoCo motors and servos alone (a fixed gain, no "
                "bias or an affine one b0 + b1 L + b2 L' with b1 <= 0 and b2 <= 0, or a dampratio b2 > 0 on a position "
                "servo (gain = -b1), no activation dynamics, on a hinge or slide dof of a tree joint) and ignores "
                "these (their actuator armature and linear damping on a hinge or slide still act): drive their joints "
                "by control.joint_f or Newton's joint targets",
                UserWarning,
                stacklevel=stacklevel,
            )
        rows = np.setdiff1d(np.nonzero(servo_form)[0], servo_rows(model, topo))
        if len(rows):
            warnings.warn(
                f"{_actuator_names(model, rows)} {'is a MuJoCo servo' if len(rows) == 1 else 'are MuJoCo servos'} "
                "on a dof that has Newton's joint drive (joint_target_ke/kd) or an earlier servo, which SolverSAP "
                "applies in its place (one implicit drive per dof)",
                UserWarning,
                stacklevel=stacklevel,
            )
        ranged = _ranged(model, count) & ~direct
        sources = drive_sources(model, topo)
        ranged[sources[sources >= 0]] = False
        rows = np.nonzero(ranged)[0]
        if len(rows):
            warnings.warn(
                f"the force or control ranges of {_actuator_names(model, rows)}, joint drives imported from MJCF, are "
                "not applied by SolverSAP: their drive is in POSITION_VELOCITY mode (SolverMuJoCo clamps its position "
                "and velocity parts apart), in a mode of another kind, on a BALL joint or does not act, or a later "
                "actuator on the dof takes their place (in SolverMuJoCo too); SolverSAP takes such a drive's targets "
                "as given",
                UserWarning,
                stacklevel=stacklevel,
            )
        rows = np.nonzero(_unapplied_passive_terms(model, topo, count))[0]
        if len(rows):
            warnings.warn(
                f"the actuator damping or armature of {_actuator_names(model, rows)} {_verb(rows)} not applied by "
                'SolverSAP (MuJoCo applies them): polynomial damping (MJCF damping="d0 d1 d2"; its linear '
                "term d0 is applied), or damping or armature on a dof that is not a hinge or slide of a tree joint, "
                "or through a tendon, site or body transmission; add them to the joint's joint_damping and "
                "joint_armature where they are linear",
                UserWarning,
                stacklevel=stacklevel,
            )
        rows = _unresolved_drive_dampratio(model, count)
        if len(rows):
            warnings.warn(
                f"the dampratio of {_actuator_names(model, rows)}, joint drives imported from MJCF, is not applied: "
                "their drive is not in POSITION mode (joint_target_mode; SolverMuJoCo leaves it out there too); set "
                "joint_target_kd instead",
                UserWarning,
                stacklevel=stacklevel,
            )

    routed = getattr(mj, "jnt_actgravcomp", None)  # per dof (Newton's JOINT_DOF frequency)
    if routed is not None and model.joint_dof_count:
        dofs = np.nonzero(routed.numpy()[: model.joint_dof_count])[0]
        joints = np.unique(np.searchsorted(model.joint_qd_start.numpy(), dofs, side="right") - 1)
        if len(joints):
            names = entity_list(model_labels(model, "joint"), joints, "joint")
            warnings.warn(
                f"gravity compensation of {names} is routed through "
                "its actuators in MuJoCo (MJCF actuatorgravcomp: clamped by the joint's actuator force range, and left "
                "out without actuators); SolverSAP applies it as a force at the bodies' COMs",
                UserWarning,
                stacklevel=stacklevel,
            )


def _clamps_ctrl(model: newton.Model) -> bool:
    """MuJoCo's ``clampctrl`` flag (``model.mujoco.flag_clampctrl``; on where the model has none)."""
    clampctrl = getattr(model.mujoco, "flag_clampctrl", None)
    return clampctrl is None or bool(clampctrl.numpy().all())


def check_actuator_values(model: newton.Model) -> None:
    """Refuse (:class:`ModelError`, naming the actuator) a MuJoCo actuator's control or force range that MuJoCo
    clamps by (:func:`range_applies`; a control range only under its ``clampctrl`` flag) with a NaN bound or its lower
    bound not below its upper, as MuJoCo's compiler refuses it: a clamp would drop a NaN and pin the value to the
    other bound, a silently wrong force; and a negative or non-finite actuator armature or linear damping (MuJoCo
    compiles them, but they make the mass matrix or the step's damping indefinite). Also on actuators SolverSAP does
    not apply (the model is invalid)."""
    count = _actuator_count(model)
    if not count:
        return
    mj = model.mujoco
    kinds = ("ctrl", "force") if _clamps_ctrl(model) else ("force",)
    for kind in kinds:
        bounds = getattr(mj, f"actuator_{kind}range").numpy()[:count]
        flag, given = getattr(mj, f"actuator_{kind}limited").numpy(), getattr(mj, f"actuator_has_{kind}range").numpy()
        bad = range_applies(flag[:count], given[:count]) & ~(bounds[:, 0] < bounds[:, 1])  # NaN fails the comparison
        if bad.any():
            k = int(np.nonzero(bad)[0][0])
            raise ModelError(
                f"{_actuator_names(model, np.array([k]))} has {kind}range {bounds[k].tolist()}, by which MuJoCo "
                "clamps; its bounds must be numbers with lower < upper"
            )
    for name in ("armature", "damping"):
        values = _actuator_values(model, f"actuator_{name}", count)
        bad = ~(np.isfinite(values) & (values >= 0.0))
        if bad.any():
            k = int(np.nonzero(bad)[0][0])
            raise ModelError(
                f"{_actuator_names(model, np.array([k]))} has {name} {values[k]}; it must be finite and >= 0"
            )


def _actuator_values(model: newton.Model, name: str, count: int) -> np.ndarray:
    """``model.mujoco.<name>`` of the first ``count`` actuators (zeros where the model has no such attribute)."""
    values = getattr(model.mujoco, name, None)
    return np.zeros(count) if values is None else values.numpy()[:count].astype(np.float64)


def actuator_armature_and_damping(model: newton.Model, topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Per Newton dof, the armature [kg·m² or kg] and linear damping [N·m·s/rad or N·s/m] that MuJoCo actuators add
    to the joint's: MuJoCo adds an actuator's ``armature`` a to the mass matrix and its damping ``d0`` (MJCF
    ``damping``, ``actuator_damping``) to the passive forces through the actuator's moment, on a hinge or slide dof
    its gear g: ``g² a`` on the dof's diagonal and ``−g² d0 q̇`` (implicit in MuJoCo's Euler and implicit
    integrators, as ``joint_damping`` is here). Over the actuators on a hinge or slide dof of a tree joint
    (:func:`_on_scalar_dof`), whatever drives them; an actuator imported as Newton's joint drive (CTRL_JOINT_TARGET)
    acts in joint space, g = 1, as its stiffness does and as SolverMuJoCo's actuator for it. Zeros for a model
    without Newton's MuJoCo attributes. The rest (polynomial terms, other transmissions) are named by
    :func:`warn_mujoco_actuation`."""
    armature, damping = np.zeros(model.joint_dof_count), np.zeros(model.joint_dof_count)
    count = _actuator_count(model)
    if count:
        on_dof, dof = _on_scalar_dof(model, topo, count)
        mj = model.mujoco
        gear = np.where(mj.ctrl_source.numpy()[:count] == CTRL_DIRECT, mj.actuator_gear.numpy()[:count, 0], 1.0)
        gear_squared = np.where(on_dof, gear.astype(np.float64) ** 2, 0.0)
        np.add.at(armature, dof, gear_squared * _actuator_values(model, "actuator_armature", count))
        np.add.at(damping, dof, gear_squared * _actuator_values(model, "actuator_damping", count))
    return armature, damping


def _on_scalar_dof(model: newton.Model, topo: Topology, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per actuator, whether it acts on one scalar dof of a tree joint (a ``joint`` or ``jointinparent`` transmission
    on a hinge or slide of a REVOLUTE, PRISMATIC or D6 joint, :func:`topology.scalar_tree_dofs`), and that dof (0
    where not)."""
    mj = model.mujoco
    dof = mj.actuator_trnid.numpy()[:count, 0]
    on_joint = np.isin(mj.actuator_trntype.numpy()[:count], (TRN_JOINT, TRN_JOINT_IN_PARENT))
    on_dof = on_joint & (dof >= 0) & (dof < model.joint_dof_count)
    dof = np.where(on_dof, dof, 0)
    return on_dof & scalar_tree_dofs(model, topo)[dof], dof


def _ranged(model: newton.Model, count: int) -> np.ndarray:
    """Per actuator, whether MuJoCo clamps its force or its control by a range."""
    mj = model.mujoco
    ranged = range_applies(mj.actuator_forcelimited.numpy(), mj.actuator_has_forcerange.numpy())
    ranged |= range_applies(mj.actuator_ctrllimited.numpy(), mj.actuator_has_ctrlrange.numpy())
    return ranged[:count]


def _scalar_actuators(model: newton.Model, topo: Topology, count: int) -> np.ndarray:
    """Per actuator, whether it is driven by ``control.mujoco.ctrl`` (CTRL_DIRECT) on one scalar dof of a tree
    joint (:func:`_on_scalar_dof`) with no activation dynamics and a fixed gain: the form of the motors and servos
    (their actuator armature and linear damping act apart, :func:`actuator_armature_and_damping`)."""
    mj = model.mujoco
    on_dof, _ = _on_scalar_dof(model, topo, count)
    form = (mj.ctrl_source.numpy()[:count] == CTRL_DIRECT) & on_dof
    form &= mj.actuator_dyntype.numpy()[:count] == DYN_NONE
    return form & (mj.actuator_gaintype.numpy()[:count] == GAIN_FIXED)


def _unapplied_passive_terms(model: newton.Model, topo: Topology, count: int) -> np.ndarray:
    """Per actuator, whether it has passive terms SolverSAP does not apply: polynomial damping (MJCF ``damping="d0
    d1 d2"`` with d1 or d2 ≠ 0, ``actuator_dampingpoly``), or armature or linear damping off the hinge and slide dofs
    of tree joints (:func:`actuator_armature_and_damping` applies them there)."""
    on_dof, _ = _on_scalar_dof(model, topo, count)
    linear = (_actuator_values(model, "actuator_armature", count) != 0.0) | (
        _actuator_values(model, "actuator_damping", count) != 0.0
    )
    polynomial = (_actuator_values(model, "actuator_dampingpoly", count) != 0.0).reshape(count, -1).any(axis=1)
    return polynomial | (linear & ~on_dof)


def _actuator_count(model: newton.Model) -> int:
    """How many MuJoCo actuators ``model`` holds with the attributes these functions read (0 without them)."""
    mj = getattr(model, "mujoco", None)
    count = model.custom_frequency_counts.get("mujoco:actuator", 0) if mj is not None else 0
    if not count or not hasattr(mj, "ctrl_source") or not hasattr(mj, "actuator_trnid"):
        return 0
    return count


def motor_rows(model: newton.Model, topo: Topology) -> np.ndarray:
    """Rows of ``model.mujoco``'s actuators that SolverSAP applies as motors: the form of :func:`_scalar_actuators`
    with no bias or an affine bias ``b0`` alone (MJCF ``<motor>``, or a ``<general>`` of that form). Empty for a
    model without Newton's MuJoCo attributes."""
    count = _actuator_count(model)
    if not count:
        return np.zeros(0, np.int32)
    mj = model.mujoco
    bias_type = mj.actuator_biastype.numpy()[:count]
    bias = mj.actuator_biasprm.numpy()[:count]
    constant = (bias_type == BIAS_NONE) | ((bias_type == BIAS_AFFINE) & (bias[:, 1] == 0.0) & (bias[:, 2] == 0.0))
    return np.nonzero(_scalar_actuators(model, topo, count) & constant)[0].astype(np.int32)


def _position_like(model: newton.Model, count: int) -> np.ndarray:
    """Per actuator, whether it is a position servo, an affine bias with ``b1 = −gain < 0`` (MJCF ``<position>``): the
    actuators whose ``b2 > 0`` is a ``dampratio`` (Newton's importer's and MuJoCo's convention before compiling)."""
    mj = model.mujoco
    gain = mj.actuator_gainprm.numpy()[:count, 0]
    bias = mj.actuator_biasprm.numpy()[:count]
    return (mj.actuator_biastype.numpy()[:count] == BIAS_AFFINE) & (bias[:, 1] < 0.0) & (gain == -bias[:, 1])


def _motors_act_at_zero_ctrl(model: newton.Model, motors: np.ndarray, clamp_ctrl: bool) -> np.ndarray:
    """Per motor of ``motors``, whether it has a force at ctrl 0 (:func:`control_force` there, then the force range):
    a control range that leaves 0 out (where MuJoCo clamps by it, ``clamp_ctrl`` its ``clampctrl`` flag), an affine
    constant ``b0 ≠ 0``, or a force range that leaves 0 out."""
    mj = model.mujoco
    u = np.zeros(len(motors))
    if clamp_ctrl:
        bounds = mj.actuator_ctrlrange.numpy()[motors]
        limited = range_applies(mj.actuator_ctrllimited.numpy()[motors], mj.actuator_has_ctrlrange.numpy()[motors])
        u = np.where(limited, np.clip(u, bounds[:, 0], bounds[:, 1]), u)
    b0 = np.where(mj.actuator_biastype.numpy()[motors] == BIAS_AFFINE, mj.actuator_biasprm.numpy()[motors, 0], 0.0)
    force = mj.actuator_gainprm.numpy()[motors, 0] * u + b0
    bounds = mj.actuator_forcerange.numpy()[motors]
    limited = range_applies(mj.actuator_forcelimited.numpy()[motors], mj.actuator_has_forcerange.numpy()[motors])
    return np.where(limited, np.clip(force, bounds[:, 0], bounds[:, 1]), force) != 0.0


def _velocity_like(model: newton.Model, count: int) -> np.ndarray:
    """Per actuator, whether it is a velocity servo, an affine bias with ``b1 = 0`` and ``b2 = −gain < 0`` (MJCF
    ``<velocity>``)."""
    mj = model.mujoco
    gain = mj.actuator_gainprm.numpy()[:count, 0]
    bias = mj.actuator_biasprm.numpy()[:count]
    affine = mj.actuator_biastype.numpy()[:count] == BIAS_AFFINE
    return affine & (bias[:, 1] == 0.0) & (bias[:, 2] < 0.0) & (gain == -bias[:, 2])


def _servo_form(model: newton.Model, topo: Topology, count: int) -> np.ndarray:
    """Per actuator, whether it has a servo's form: that of :func:`_scalar_actuators` with an affine bias whose
    position and velocity terms ``b1``, ``b2`` are ≤ 0 and not both 0, or a position servo with a ``dampratio``
    (``b2 > 0``, :func:`_position_like`)."""
    if not count:
        return np.zeros(0, bool)
    mj = model.mujoco
    bias = mj.actuator_biasprm.numpy()[:count]
    affine = mj.actuator_biastype.numpy()[:count] == BIAS_AFFINE
    servo = affine & (bias[:, 1] <= 0.0) & (bias[:, 2] <= 0.0) & ((bias[:, 1] < 0.0) | (bias[:, 2] < 0.0))
    servo |= _position_like(model, count) & (bias[:, 2] > 0.0)
    return _scalar_actuators(model, topo, count) & servo


def dampratio_damping(ratio, kp, inverse_inertia):
    """MuJoCo's damping ``2 ζ sqrt(kp m)`` for the damping ratio ζ of a position drive of stiffness kp with the
    reflected inertia ``m = 1 / inverse_inertia`` (0 where that is not positive), elementwise."""
    inverse_inertia = np.asarray(inverse_inertia, np.float64)
    inertia = np.divide(1.0, inverse_inertia, out=np.zeros_like(inverse_inertia), where=inverse_inertia > 0.0)
    return 2.0 * np.asarray(ratio) * np.sqrt(np.asarray(kp) * inertia)


def servo_rows(model: newton.Model, topo: Topology) -> np.ndarray:
    """Rows of ``model.mujoco``'s actuators that SolverSAP applies as servos (implicit PD drives, see the module): a
    servo's form (:func:`_servo_form`; MJCF ``<position>``/``<velocity>`` driven by ctrl, an affine ``<general>``),
    the first on its dof, on a dof without Newton's joint drive (which takes the dof's one drive row), in the order
    of their dofs. Empty for a model without Newton's MuJoCo attributes."""
    count = _actuator_count(model)
    rows = np.nonzero(_servo_form(model, topo, count))[0]
    if not len(rows):
        return np.zeros(0, np.int32)
    dof = model.mujoco.actuator_trnid.numpy()[rows, 0]
    _, first = np.unique(dof, return_index=True)
    rows, dof = rows[first], dof[first]
    return rows[~newton_drive_dofs(model)[dof]].astype(np.int32)


@wp.func
def clamps(limited: int, has_range: int):
    """Whether MuJoCo clamps by a range: its ``limited`` flag on, or ``auto`` with a range given (the device side of
    :func:`range_applies`)."""
    return limited == LIMITED or (limited == AUTO and has_range != 0)


@wp.func
def clamp_if(x: float, limited: int, has_range: int, bounds: wp.vec2):
    """``x`` clamped to ``bounds`` where MuJoCo clamps by them (:func:`clamps`); a value that is not finite stays as
    it is (a clamp would make a NaN control a bound)."""
    if wp.isfinite(x) and clamps(limited, has_range):
        return wp.clamp(x, bounds[0], bounds[1])
    return x


@wp.func
def control_force(
    k: int,
    clamp_ctrl: int,
    ctrl: wp.array(dtype=float),
    gainprm: wp.array(dtype=vec10),
    biastype: wp.array(dtype=wp.int32),
    biasprm: wp.array(dtype=vec10),
    ctrllimited: wp.array(dtype=wp.int32),
    has_ctrlrange: wp.array(dtype=wp.int32),
    ctrlrange: wp.array(dtype=wp.vec2),
):
    """``g u + b0`` [N or N·m per unit of gear] of actuator k: its gain ``g = gainprm[0]`` times its control ``u``
    (clamped to its ctrlrange with ``clamp_ctrl`` = 1, MuJoCo's ``clampctrl`` flag) plus its affine bias's constant
    ``biasprm[0]`` (none without bias)."""
    u = ctrl[k]
    if clamp_ctrl == 1:
        u = clamp_if(u, ctrllimited[k], has_ctrlrange[k], ctrlrange[k])
    a = gainprm[k][0] * u
    if biastype[k] == BIAS_AFFINE:
        a += biasprm[k][0]
    return a


@wp.kernel
def add_motor_forces(
    # model
    is_motor: wp.array(dtype=wp.int32),
    trnid: wp.array(dtype=wp.vec2i),
    gear: wp.array(dtype=vec6),
    gainprm: wp.array(dtype=vec10),
    biastype: wp.array(dtype=wp.int32),
    biasprm: wp.array(dtype=vec10),
    ctrllimited: wp.array(dtype=wp.int32),
    has_ctrlrange: wp.array(dtype=wp.int32),
    ctrlrange: wp.array(dtype=wp.vec2),
    forcelimited: wp.array(dtype=wp.int32),
    has_forcerange: wp.array(dtype=wp.int32),
    forcerange: wp.array(dtype=wp.vec2),
    # inputs
    clamp_ctrl: int,
    ctrl: wp.array(dtype=float),
    # outputs (accumulated)
    dof_motor_f_out: wp.array(dtype=float),
):
    """Per actuator k that is a motor (``is_motor``, :func:`motor_rows`): MuJoCo's actuator force
    ``f = clamp(g u + b0, forcerange)`` (:func:`control_force`) added to its dof's motor force as ``gear[0] · f``
    [N·m on a hinge, N on a slide]. A control that is not finite stays so: its world is then flagged failed, as a
    NaN ``joint_f`` is."""
    k = wp.tid()
    if is_motor[k] == 0:
        return
    f = control_force(k, clamp_ctrl, ctrl, gainprm, biastype, biasprm, ctrllimited, has_ctrlrange, ctrlrange)
    f = clamp_if(f, forcelimited[k], has_forcerange[k], forcerange[k])
    wp.atomic_add(dof_motor_f_out, trnid[k][0], gear[k][0] * f)


@wp.func
def effort_range(
    k: int,
    gear: float,
    e: float,
    motor: float,
    forcelimited: wp.array(dtype=wp.int32),
    has_forcerange: wp.array(dtype=wp.int32),
    forcerange: wp.array(dtype=wp.vec2),
):
    """``(τ_mid, e_half)`` [N·m or N]: the midpoint and half width of the range ``[L − m, H − m]`` of actuator k's
    joint force τ on a joint whose motors give m (each clamped to its own range, their sum not) and whose effort limit
    is e, with ``[L, H] = clamp(m + gear · forcerange, ±e)`` (no ``forcerange`` where MuJoCo does not clamp by it,
    and for k < 0): ``m + τ`` is then MuJoCo's ``clamp(m + clamp(τ, gear · forcerange), ±e)``. Half width infinite
    (midpoint 0) without either bound."""
    f_lo = -wp.inf
    f_hi = wp.inf
    if k >= 0 and clamps(forcelimited[k], has_forcerange[k]):
        bounds = forcerange[k]
        f_lo = wp.min(gear * bounds[0], gear * bounds[1])
        f_hi = wp.max(gear * bounds[0], gear * bounds[1])
    lo = wp.clamp(motor + f_lo, -e, e) - motor
    hi = wp.clamp(motor + f_hi, -e, e) - motor
    mid = float(0.0)
    half = hi - lo  # infinite: no effort limit and no force range
    if wp.isfinite(half):
        mid = 0.5 * (lo + hi)
        half = 0.5 * half
    return mid, half


@wp.kernel
def joint_f_plus_motors(
    # model
    joint_effort_limit: wp.array(dtype=float),
    # inputs
    joint_f: wp.array(dtype=float),
    dof_motor_f: wp.array(dtype=float),
    # outputs
    joint_f_out: wp.array(dtype=float),
):
    """Per dof: ``joint_f`` plus its motors' force m clamped to ``±joint_effort_limit``, SolverMuJoCo's joint actuator
    force range, which clamps the sum of the joint's actuator forces (a servo or drive on the dof takes what m leaves:
    :func:`mujoco_drives`). A NaN m stays NaN (its world is flagged failed), not a bound."""
    i = wp.tid()
    motor = dof_motor_f[i]
    if wp.isfinite(motor):
        motor = wp.clamp(motor, -joint_effort_limit[i], joint_effort_limit[i])
    joint_f_out[i] = joint_f[i] + motor


@wp.kernel
def mujoco_drives(
    # model
    drive_dofs: wp.array(dtype=wp.int32),
    joint_effort_limit: wp.array(dtype=float),
    dof_servo: wp.array(dtype=wp.int32),
    dof_drive_source: wp.array(dtype=wp.int32),
    servo_dampratio_kv: wp.array(dtype=float),
    dof_ref: wp.array(dtype=float),
    gear: wp.array(dtype=vec6),
    gainprm: wp.array(dtype=vec10),
    biastype: wp.array(dtype=wp.int32),
    biasprm: wp.array(dtype=vec10),
    ctrllimited: wp.array(dtype=wp.int32),
    has_ctrlrange: wp.array(dtype=wp.int32),
    ctrlrange: wp.array(dtype=wp.vec2),
    forcelimited: wp.array(dtype=wp.int32),
    has_forcerange: wp.array(dtype=wp.int32),
    forcerange: wp.array(dtype=wp.vec2),
    # inputs
    clamp_ctrl: int,
    ctrl: wp.array(dtype=float),
    dof_motor_f: wp.array(dtype=float),
    # outputs
    joint_f_out: wp.array(dtype=float),
    dof_servo_drive_out: wp.array(dtype=wp.vec4),
    dof_drive_ranges_out: wp.array(dtype=wp.vec4),
):
    """Per dof i of ``drive_dofs`` (those with a servo or a ``dof_drive_source``; -1 past them), with effort limit e
    (``joint_effort_limit``) and its motors' force m (their sum, unclamped: the joint's sum is clamped as a whole,
    :func:`effort_range`):

    * its servo k (``dof_servo``, -1 for none) with gear s, bias ``(b0, b1, b2)`` (a ``dampratio`` ``b2 > 0`` is
      ``−servo_dampratio_kv[k]``) and ``a = g u + b0``, the force
      ``τ = s clamp(a + b1 s (q + ref) + b2 s q̇, forcerange)`` as a PD drive on the dof ``Kp (q_t − q) + Kd (v_t −
      q̇) + u_ff``: ``dof_servo_drive = (Kp, Kd, q_t, v_t)`` with ``(Kp, Kd) = (−b1 s², −b2 s²)`` [N·m/rad,
      N·m·s/rad or N/m, N·s/m] and the set-point ``u0 = s (a + b1 s ref)`` (the force at ``q = q̇ = 0``) as a target,
      ``q_t = u0 / Kp`` (or ``v_t = u0 / Kd`` for ``Kp = 0``), so the drive's near-rigid rescaling of its gains keeps
      it; ``dof_drive_ranges = (−∞, ∞, −τ_mid, e_half)`` of its range ``s · forcerange`` (:func:`effort_range`). A
      control that is not finite makes ``joint_f_out`` NaN, which flags its world failed;
    * else the MJCF actuator j that Newton's joint drive of the dof was imported from (``dof_drive_source``; or
      ``SHARED_EFFORT``: a drive without one on a dof with motors): ``dof_drive_ranges = (t_lo, t_hi, −τ_mid,
      e_half)``, the bounds of the drive's target (its ``ctrlrange``, where MuJoCo clamps by it, less the joint's
      ``ref`` for a position target: MuJoCo's ctrl is ``target + ref``; unbounded else) and its effort range
      ``forcerange`` (gear 1: the drive is in joint space; none for ``SHARED_EFFORT``);

    and ``joint_f_out`` (``joint_f_plus_motors``' output, with m clamped) takes m unclamped plus the midpoint
    ``τ_mid``, an explicit force."""
    i = drive_dofs[wp.tid()]
    if i < 0:  # past the list (a graph captured before a notification shortened it)
        return
    e = joint_effort_limit[i]
    motor = dof_motor_f[i]
    # joint_f_plus_motors added the motors' sum clamped to ±e; here the joint's sum is clamped as a whole instead
    unclamped = motor - wp.clamp(motor, -e, e)
    k = dof_servo[i]
    if k >= 0:
        s = gear[k][0]
        b = biasprm[k]
        a = control_force(k, clamp_ctrl, ctrl, gainprm, biastype, biasprm, ctrllimited, has_ctrlrange, ctrlrange)
        mid, half = effort_range(k, s, e, motor, forcelimited, has_forcerange, forcerange)
        b2 = b[2]
        if b2 > 0.0:  # a dampratio, resolved
            b2 = -servo_dampratio_kv[k]
        kp = -b[1] * s * s
        kd = -b2 * s * s
        u0 = s * (a + b[1] * s * dof_ref[i])
        if kp > 0.0:
            dof_servo_drive_out[i] = wp.vec4(kp, kd, u0 / kp, 0.0)
        else:
            dof_servo_drive_out[i] = wp.vec4(kp, kd, 0.0, u0 / kd)
        dof_drive_ranges_out[i] = wp.vec4(-wp.inf, wp.inf, -mid, half)
        if wp.isfinite(a):
            joint_f_out[i] = joint_f_out[i] + unclamped + mid
        else:
            joint_f_out[i] = a
    else:
        j = dof_drive_source[i]
        mid, half = effort_range(j, 1.0, e, motor, forcelimited, has_forcerange, forcerange)
        t_lo = -wp.inf
        t_hi = wp.inf
        bounded = j >= 0 and clamps(ctrllimited[j], has_ctrlrange[j])
        if clamp_ctrl == 1 and bounded:
            offset = float(0.0)
            if biasprm[j][1] < 0.0:  # a position target: MuJoCo's ctrl is the target plus the joint's ref
                offset = dof_ref[i]
            t_lo = ctrlrange[j][0] - offset
            t_hi = ctrlrange[j][1] - offset
        dof_drive_ranges_out[i] = wp.vec4(t_lo, t_hi, -mid, half)
        joint_f_out[i] = joint_f_out[i] + unclamped + mid


def _drive_dampratio_rows(model: newton.Model, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The actuators that are Newton's joint drives imported from a ``<position dampratio>`` (JOINT_TARGET, a position
    servo with ``b2 > 0``) on a dof of the model, their dofs, and whether that dof's drive is in POSITION mode. The
    one actuator of a native BALL joint (on the joint's first dof, no actuator on its other dofs) stands for the drive
    the importer puts on each of the joint's three dofs, so it is listed once per dof, as SolverMuJoCo makes one
    actuator per axis; a BALL made of three hinges (``convert_3d_hinge_to_ball_joints``) has an actuator per driven
    dof, each listed once."""
    mj = model.mujoco
    bias = mj.actuator_biasprm.numpy()[:count]
    rows = np.nonzero((mj.ctrl_source.numpy()[:count] == CTRL_JOINT_TARGET) & _position_like(model, count))[0]
    targeted = mj.actuator_trnid.numpy()[rows, 0]  # every position-like drive actuator's dof
    rows = rows[bias[rows, 2] > 0.0]
    dofs = mj.actuator_trnid.numpy()[rows, 0]
    inside = (dofs >= 0) & (dofs < model.joint_dof_count)
    rows, dofs = rows[inside], dofs[inside]
    dof_joint = np.repeat(np.arange(model.joint_count), model.joint_dof_dim.numpy().sum(axis=1))
    joints = dof_joint[dofs]
    native_ball = (
        (model.joint_type.numpy()[joints] == int(newton.JointType.BALL))
        & (dofs == model.joint_qd_start.numpy()[joints])
        & ~np.isin(dofs + 1, targeted)
        & ~np.isin(dofs + 2, targeted)
    )
    rows = np.concatenate([rows[~native_ball], np.repeat(rows[native_ball], 3)])
    dofs = np.concatenate([dofs[~native_ball], (dofs[native_ball][:, None] + np.arange(3)).ravel()])
    return rows, dofs, model.joint_target_mode.numpy()[dofs] == int(newton.JointTargetMode.POSITION)


def _dampratio_drive_dofs(model: newton.Model, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The dofs of Newton's joint drives imported from a ``<position dampratio>`` whose damping is to be resolved
    (POSITION mode, ``joint_target_kd = 0``: SolverMuJoCo's rule) and their damping ratios."""
    rows, dofs, position = _drive_dampratio_rows(model, count)
    keep = position & (model.joint_target_kd.numpy()[dofs] == 0.0)
    return dofs[keep], model.mujoco.actuator_biasprm.numpy()[rows[keep], 2]


SHARED_EFFORT = -2
"""``drive_sources`` of a dof whose Newton drive has no MJCF ranges but shares the joint's effort limit with motors."""


def drive_sources(model: newton.Model, topo: Topology) -> np.ndarray:
    """Per Newton dof whose Newton joint drive acts (:func:`joint_constraints.newton_drive_dofs`) on a scalar tree dof,
    what bounds it beyond its gains (``mujoco_drives``): the MJCF actuator it was imported from, when that has a force
    or control range (the last JOINT_TARGET actuator of the drive's kind on the dof, as SolverMuJoCo takes it: a
    ``<position>``, a position servo's form, in POSITION mode, a ``<velocity>`` in VELOCITY mode); else
    ``SHARED_EFFORT`` where the dof has motors (MuJoCo clamps the joint's actuator force sum); -1 elsewhere."""
    sources = np.full(model.joint_dof_count, -1, np.int32)
    count = _actuator_count(model)
    if not count:
        return sources
    mj = model.mujoco
    on_dof, dof = _on_scalar_dof(model, topo, count)
    driven = on_dof & newton_drive_dofs(model)[dof]
    mode = model.joint_target_mode.numpy()[dof]
    fits = (_position_like(model, count) & (mode == int(newton.JointTargetMode.POSITION))) | (
        _velocity_like(model, count) & (mode == int(newton.JointTargetMode.VELOCITY))
    )
    rows = np.nonzero((mj.ctrl_source.numpy()[:count] == CTRL_JOINT_TARGET) & driven & fits)[0][::-1]
    _, last = np.unique(dof[rows], return_index=True)  # reversed: the last row of each dof
    rows = rows[last]
    rows = rows[_ranged(model, count)[rows]]
    motor_dofs = dof[motor_rows(model, topo)]
    shared = motor_dofs[newton_drive_dofs(model)[motor_dofs]]
    sources[shared] = SHARED_EFFORT
    sources[dof[rows]] = rows
    return sources


def _unresolved_drive_dampratio(model: newton.Model, count: int) -> np.ndarray:
    """The actuators of :func:`_drive_dampratio_rows` whose drive is not in POSITION mode (their dampratio acts in
    neither SolverSAP nor SolverMuJoCo)."""
    rows, _, position = _drive_dampratio_rows(model, count)
    return np.unique(rows[~position])


class MujocoActuators:
    """The MuJoCo motors and servos of a model with Newton's MuJoCo actuators (:func:`motor_rows`,
    :func:`servo_rows`) and the MJCF actuators that bound Newton's drives (:func:`drive_sources`), refreshed in place
    by :meth:`refresh`; the buffers of ``joint_f`` plus the motors' forces; and, written into the arrays given
    (``joint_constraints``' rows read them), the servos' drive parameters, the servos' and bounded drives' ranges
    (over the dofs of ``drive_dofs``, ``mujoco_drives``) and the damping that ``dampratio`` gives imported drives."""

    def __init__(
        self,
        model: newton.Model,
        topo: Topology,
        dof_servo_drive: wp.array,
        dof_dampratio_kd: wp.array,
        dof_drive_ranges: wp.array,
    ):
        self.model = model
        self.topo = topo
        self.count = model.custom_frequency_counts["mujoco:actuator"]
        device = model.device
        ndof = max(model.joint_dof_count, 1)
        self.is_motor = wp.zeros(self.count, dtype=wp.int32, device=device)
        self.dof_servo = wp.full(ndof, -1, dtype=wp.int32, device=device)
        self.dof_drive_source = wp.full(ndof, -1, dtype=wp.int32, device=device)
        self.drive_dofs = wp.zeros(ndof, dtype=wp.int32, device=device)  # the dofs mujoco_drives writes
        self.drive_dof_count = 0
        self.servo_dampratio_kv = wp.zeros(self.count, dtype=float, device=device)  # resolved b2 > 0, else 0
        self.zero_ctrl = wp.zeros(self.count, dtype=float, device=device)
        self.zero_dof_ref = wp.zeros(ndof, dtype=float, device=device)  # for a model without model.mujoco.dof_ref
        self.dof_motor_f = wp.zeros(ndof, dtype=float, device=device)
        self.joint_f = wp.zeros(ndof, dtype=float, device=device)
        self.dof_servo_drive = dof_servo_drive
        self.dof_dampratio_kd = dof_dampratio_kd
        self.dof_drive_ranges = dof_drive_ranges
        self.any = False
        self.any_servo = False
        self.act_at_zero_ctrl = False  # some servo or drive range, or a motor with a force at ctrl 0 (see add_to)
        self.clamp_ctrl = 1

    def refresh(self, reflected_inverse_inertia, resolve_dampratio: bool) -> None:
        """Re-read which actuators are motors and servos, which bound Newton's drives (the list ``drive_dofs``; -1
        past it) and MuJoCo's ``clampctrl`` flag (at construction and after ``notify_model_changed`` with actuator,
        inertial, joint dof or model properties), and with
        ``resolve_dampratio`` resolve the ``dampratio`` of servos and of Newton's imported drives:
        ``reflected_inverse_inertia(dofs)`` gives, per Newton dof, ``(M⁻¹)_ii`` at the reference configuration for the
        trees of ``dofs`` (called only when some damping is to be resolved)."""
        mj = self.model.mujoco
        motors, servos = motor_rows(self.model, self.topo), servo_rows(self.model, self.topo)
        flags = np.zeros(self.count, np.int32)
        flags[motors] = 1
        self.is_motor.assign(flags)
        dof_servo = np.full(self.dof_servo.shape[0], -1, np.int32)
        dof_servo[mj.actuator_trnid.numpy()[servos, 0]] = servos
        self.dof_servo.assign(dof_servo)
        sources = drive_sources(self.model, self.topo)
        self.dof_drive_source.assign(sources[: self.dof_drive_source.shape[0]])
        if resolve_dampratio:
            self._resolve_dampratio(servos, reflected_inverse_inertia)
        self.any_servo = bool(len(servos))
        drive_dofs = np.nonzero((dof_servo >= 0) | (sources[: len(dof_servo)] != -1))[0].astype(np.int32)
        padding = (0, self.drive_dofs.shape[0] - len(drive_dofs))
        self.drive_dofs.assign(np.pad(drive_dofs, padding, constant_values=-1))
        self.drive_dof_count = len(drive_dofs)
        self.clamp_ctrl = int(_clamps_ctrl(self.model))
        self.any = bool(len(motors)) or self.drive_dof_count > 0
        at_zero = _motors_act_at_zero_ctrl(self.model, motors, bool(self.clamp_ctrl))
        self.act_at_zero_ctrl = self.drive_dof_count > 0 or bool(at_zero.any())
        self.dof_servo_drive.zero_()  # none, where mujoco_drives does not write
        self.dof_drive_ranges.fill_(wp.vec4(0.0, 0.0, 0.0, -1.0))

    def launches(self) -> tuple[bool, bool, int]:
        """What a step launches for these actuators: whether with a ``ctrl`` (``any``), whether without one, and over
        how many dofs ``mujoco_drives`` runs."""
        return self.any, self.act_at_zero_ctrl, self.drive_dof_count

    def launches_more_than(self, earlier: tuple[bool, bool, int]) -> bool:
        """Whether a step launches work that a graph captured when :meth:`launches` gave ``earlier`` lacks (a graph
        whose ``mujoco_drives`` runs over more dofs than the list holds now is still right: the rest are -1)."""
        now = self.launches()
        return (now[0] and not earlier[0]) or (now[1] and not earlier[1]) or now[2] > earlier[2]

    def _resolve_dampratio(self, servos: np.ndarray, reflected_inverse_inertia) -> None:
        """``servo_dampratio_kv`` of the ``servos`` with a ``dampratio`` and ``dof_dampratio_kd`` of the imported
        drives to resolve (:func:`_dampratio_drive_dofs`), both 0 elsewhere (see the module)."""
        mj = self.model.mujoco
        bias = mj.actuator_biasprm.numpy()
        damped = servos[bias[servos, 2] > 0.0]
        servo_dofs = mj.actuator_trnid.numpy()[damped, 0]
        drive_dofs, drive_ratios = _dampratio_drive_dofs(self.model, self.count)
        kv = np.zeros(self.count)
        kd = np.zeros(self.dof_dampratio_kd.shape[0])
        if len(damped) or len(drive_dofs):
            inverse_inertia = reflected_inverse_inertia(np.concatenate([servo_dofs, drive_dofs]))
            gear = mj.actuator_gear.numpy()[damped, 0]
            kp = mj.actuator_gainprm.numpy()[damped, 0]
            kv[damped] = dampratio_damping(bias[damped, 2], kp, gear * gear * inverse_inertia[servo_dofs])
            ke = self.model.joint_target_ke.numpy()[drive_dofs]
            kd[drive_dofs] = dampratio_damping(drive_ratios, ke, inverse_inertia[drive_dofs])
        self.servo_dampratio_kv.assign(kv.astype(np.float32))
        self.dof_dampratio_kd.assign(kd.astype(np.float32))

    def add_to(self, joint_f: wp.array, control) -> wp.array:
        """``joint_f`` plus the motors' generalized forces from ``control.mujoco.ctrl`` (0 where ``control`` has
        none), in this object's buffer, and the servos' drive parameters and the servos' and bounded drives' ranges;
        ``joint_f`` as given when the model has none of them, or no ``ctrl`` and no actuator that acts at ctrl 0
        (motors alone, as Newton's ant's: nothing to launch). A ``ctrl`` shorter than the model's actuators raises
        ``ValueError``."""
        ctrl = getattr(getattr(control, "mujoco", None), "ctrl", None)
        if not self.any or (ctrl is None and not self.act_at_zero_ctrl):
            return joint_f
        if ctrl is None:
            ctrl = self.zero_ctrl
        elif ctrl.shape[0] < self.count:
            raise ValueError(
                f"control.mujoco.ctrl has {ctrl.shape[0]} entries; the model has {self.count} MuJoCo actuators"
            )
        model, mj = self.model, self.model.mujoco
        ranges = [mj.actuator_ctrllimited, mj.actuator_has_ctrlrange, mj.actuator_ctrlrange, mj.actuator_forcelimited,
                  mj.actuator_has_forcerange, mj.actuator_forcerange]  # fmt: skip
        bias = [mj.actuator_biastype, mj.actuator_biasprm]
        dof_ref = getattr(mj, "dof_ref", None)
        self.dof_motor_f.zero_()
        wp.launch(
            add_motor_forces,
            dim=self.count,
            inputs=[self.is_motor, mj.actuator_trnid, mj.actuator_gear, mj.actuator_gainprm, *bias, *ranges,
                    self.clamp_ctrl, ctrl],
            outputs=[self.dof_motor_f],
            device=model.device,
        )  # fmt: skip
        wp.launch(
            joint_f_plus_motors,
            dim=model.joint_dof_count,
            inputs=[model.joint_effort_limit, joint_f, self.dof_motor_f],
            outputs=[self.joint_f],
            device=model.device,
        )
        if self.drive_dof_count:
            wp.launch(
                mujoco_drives,
                dim=self.drive_dof_count,
                inputs=[self.drive_dofs, model.joint_effort_limit, self.dof_servo, self.dof_drive_source,
                        self.servo_dampratio_kv, dof_ref if dof_ref is not None else self.zero_dof_ref,
                        mj.actuator_gear, mj.actuator_gainprm, *bias, *ranges, self.clamp_ctrl, ctrl, self.dof_motor_f],
                outputs=[self.joint_f, self.dof_servo_drive, self.dof_drive_ranges],
                device=model.device,
            )  # fmt: skip
        return self.joint_f


def mujoco_actuators(
    model: newton.Model,
    topo: Topology,
    dof_servo_drive: wp.array,
    dof_dampratio_kd: wp.array,
    dof_drive_ranges: wp.array,
) -> MujocoActuators | None:
    """:class:`MujocoActuators` for a model with Newton's MuJoCo actuators (writing the servos' drive parameters and
    the imported drives' resolved damping into the arrays given, per dof; :meth:`MujocoActuators.refresh` before the
    first step), else None."""
    if not _actuator_count(model):
        return None
    return MujocoActuators(model, topo, dof_servo_drive, dof_dampratio_kd, dof_drive_ranges)
