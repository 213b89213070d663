"""MuJoCo actuation that Newton's MJCF importer keeps for SolverMuJoCo: the motors SolverSAP applies, and warnings
naming the rest.

Newton's MJCF importer (which registers SolverMuJoCo's custom attributes itself) turns a ``<position>``/``<velocity>``
actuator on a joint into Newton's joint drive (``joint_target_ke/kd``, ``joint_target_mode``), which SolverSAP
applies, and keeps the rest in ``model.mujoco``: actuators driven by ``control.mujoco.ctrl`` (``<motor>``,
``<general>``; ``ctrl_source`` CTRL_DIRECT), the force and control ranges and ``dampratio`` of the drives (the
drive's damping then stays ``joint_target_kd = 0``), and gravity compensation (``gravcomp``, which the dynamics
applies: ``dynamics.body_inertia_and_bias``).

SolverSAP applies the MuJoCo motors (:func:`motor_rows`): ``τ_dof += gear · clamp(gain · clamp(ctrl, ctrlrange),
forcerange)``, an explicit generalized force like ``joint_f``, read from ``control.mujoco.ctrl`` at every step. The
other ctrl-driven actuators and the drives' ranges and ``dampratio`` are named in warnings.
"""

from __future__ import annotations

import warnings

import newton
import numpy as np
import warp as wp

from .topology import JOINT_D6, JOINT_PRISMATIC, JOINT_REVOLUTE, entity_list, name_list

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

CTRL_DIRECT = 1
"""``model.mujoco.ctrl_source`` of an actuator driven by ``control.mujoco.ctrl`` (Newton's ``CtrlSource``)."""
TRN_JOINT, TRN_JOINT_IN_PARENT = 0, 1
"""``model.mujoco.actuator_trntype`` of an actuator on a joint dof (``actuator_trnid[k, 0]``; Newton's ``TrnType``):
``joint`` and ``jointinparent``, which differ only on BALL and FREE joints."""
LIMITED, AUTO = wp.constant(1), wp.constant(2)
"""``actuator_ctrllimited``/``actuator_forcelimited``: on, or on where a range is given (MuJoCo's ``auto``)."""
DYN_NONE, GAIN_FIXED, BIAS_NONE = 0, 0, 0
"""``actuator_dyntype``, ``actuator_gaintype``, ``actuator_biastype`` of a motor: no activation state, a constant
gain ``gainprm[0]``, no bias."""

vec6 = wp.types.vector(length=6, dtype=wp.float32)
vec10 = wp.types.vector(length=10, dtype=wp.float32)


def _limited(flag: np.ndarray, has_range: np.ndarray) -> np.ndarray:
    """Per actuator, whether MuJoCo clamps by the range (``limited`` on, or ``auto`` with a range given)."""
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
    labels = list(model.joint_label)
    names = []
    for k in rows[:5]:
        joint = int(np.searchsorted(qd_start, dof[k], side="right")) - 1
        known = on_joint[k] and 0 <= dof[k] < model.joint_dof_count and joint < len(labels)
        names.append(f"actuator {int(k)} (joint '{labels[joint]}')" if known else f"actuator {int(k)}")
    return name_list(names, len(rows))


def warn_mujoco_actuation(model: newton.Model, stacklevel: int) -> None:
    """Warnings naming the MuJoCo actuators driven by ``control.mujoco.ctrl`` that are not motors (SolverSAP applies
    those alone, :func:`motor_rows`), the drives whose MuJoCo force or control range or ``dampratio`` is not
    applied and the joints whose gravity compensation MuJoCo routes through their actuators; none for a model
    without Newton's MuJoCo attributes. ``stacklevel`` points at the ``SolverSAP(...)`` or
    ``notify_model_changed`` call."""
    mj = getattr(model, "mujoco", None)
    if mj is None:
        return
    count = model.custom_frequency_counts.get("mujoco:actuator", 0)
    if count and hasattr(mj, "ctrl_source") and hasattr(mj, "actuator_trnid"):
        direct = mj.ctrl_source.numpy()[:count] == CTRL_DIRECT
        ignored = direct.copy()
        ignored[motor_rows(model)] = False
        rows = np.nonzero(ignored)[0]
        if len(rows):
            warnings.warn(
                f"{_actuator_names(model, rows)} {_verb(rows)} driven by control.mujoco.ctrl, which only SolverMuJoCo "
                "applies to such actuators; SolverSAP applies the MuJoCo motors alone (a fixed gain, no bias, no "
                "activation dynamics, no actuator damping or armature, on a hinge or slide dof) and ignores these: "
                "drive their joints by control.joint_f or Newton's joint targets",
                UserWarning,
                stacklevel=stacklevel,
            )
        ranged = _limited(mj.actuator_forcelimited.numpy(), mj.actuator_has_forcerange.numpy())
        ranged |= _limited(mj.actuator_ctrllimited.numpy(), mj.actuator_has_ctrlrange.numpy())
        ranged |= mj.actuator_biasprm.numpy()[:, 2] > 0.0  # MuJoCo's dampratio (a damping the importer left at 0)
        rows = np.nonzero(ranged[:count] & ~direct)[0]
        if len(rows):
            warnings.warn(
                f"the force or control ranges or dampratio of {_actuator_names(model, rows)}, joint drives imported "
                "from MJCF, are applied only by SolverMuJoCo; SolverSAP clamps a drive by joint_effort_limit, takes "
                "its targets as given and its damping from joint_target_kd",
                UserWarning,
                stacklevel=stacklevel,
            )

    routed = getattr(mj, "jnt_actgravcomp", None)
    if routed is not None and model.joint_count:
        joints = np.nonzero(routed.numpy()[: model.joint_count])[0]
        if len(joints):
            warnings.warn(
                f"gravity compensation of {entity_list(list(model.joint_label), joints, 'joint')} is routed through "
                "its actuators in MuJoCo (MJCF actuatorgravcomp: clamped by the joint's actuator force range, and left "
                "out without actuators); SolverSAP applies it as a force at the bodies' COMs",
                UserWarning,
                stacklevel=stacklevel,
            )


def motor_rows(model: newton.Model) -> np.ndarray:
    """Rows of ``model.mujoco``'s actuators that SolverSAP applies, the MuJoCo motors: driven by
    ``control.mujoco.ctrl`` (CTRL_DIRECT), on one dof of a REVOLUTE, PRISMATIC or D6 joint (a ``joint`` or
    ``jointinparent`` transmission on a hinge or slide), with no activation dynamics, a fixed gain, no bias and no
    actuator damping or armature (MJCF ``<motor>``, or a ``<general>`` of that form). Empty for a model without
    Newton's MuJoCo attributes."""
    mj = getattr(model, "mujoco", None)
    count = model.custom_frequency_counts.get("mujoco:actuator", 0) if mj is not None else 0
    if not count or not hasattr(mj, "ctrl_source") or not hasattr(mj, "actuator_trnid"):
        return np.zeros(0, np.int32)
    dof = mj.actuator_trnid.numpy()[:count, 0]
    on_joint = np.isin(mj.actuator_trntype.numpy()[:count], (TRN_JOINT, TRN_JOINT_IN_PARENT))
    on_dof = on_joint & (dof >= 0) & (dof < model.joint_dof_count)
    joint = np.searchsorted(model.joint_qd_start.numpy(), np.where(on_dof, dof, 0), side="right") - 1
    scalar = np.isin(model.joint_type.numpy()[joint], (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_D6))
    motor = (mj.ctrl_source.numpy()[:count] == CTRL_DIRECT) & on_dof & scalar
    motor &= mj.actuator_dyntype.numpy()[:count] == DYN_NONE
    motor &= (mj.actuator_gaintype.numpy()[:count] == GAIN_FIXED) & (mj.actuator_biastype.numpy()[:count] == BIAS_NONE)
    for name in ("actuator_damping", "actuator_armature"):  # MuJoCo 4's actuator-level damping and armature
        if hasattr(mj, name):
            motor &= getattr(mj, name).numpy()[:count] == 0.0
    return np.nonzero(motor)[0].astype(np.int32)


@wp.func
def clamp_if(x: float, limited: int, has_range: int, bounds: wp.vec2):
    """``x`` clamped to ``bounds`` where MuJoCo's ``limited`` flag (on, or ``auto`` with a range) says so; a value
    that is not finite stays as it is (a clamp would make a NaN control a bound)."""
    if wp.isfinite(x) and (limited == LIMITED or (limited == AUTO and has_range != 0)):
        return wp.clamp(x, bounds[0], bounds[1])
    return x


@wp.kernel
def add_motor_forces(
    # model
    is_motor: wp.array(dtype=wp.int32),
    trnid: wp.array(dtype=wp.vec2i),
    gear: wp.array(dtype=vec6),
    gainprm: wp.array(dtype=vec10),
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
    ``f = clamp(g · clamp(u, ctrlrange), forcerange)`` [N or N·m per unit of gear] with ``u = ctrl[k]`` (its clamp
    only with ``clamp_ctrl`` = 1: MuJoCo's ``clampctrl`` flag) and gain ``g = gainprm[0]``, added to its dof's
    motor force as ``gear[0] · f`` [N·m on a hinge, N on a slide]. A control that is not finite stays so: its
    world is then flagged failed, as a NaN ``joint_f`` is."""
    k = wp.tid()
    if is_motor[k] == 0:
        return
    u = ctrl[k]
    if clamp_ctrl == 1:
        u = clamp_if(u, ctrllimited[k], has_ctrlrange[k], ctrlrange[k])
    f = clamp_if(gainprm[k][0] * u, forcelimited[k], has_forcerange[k], forcerange[k])
    wp.atomic_add(dof_motor_f_out, trnid[k][0], gear[k][0] * f)


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
    """Per dof: ``joint_f`` plus its motors' force clamped to ``±joint_effort_limit``, which SolverMuJoCo makes the
    joint's actuator force range (MJCF ``actuatorfrcrange``; MuJoCo clamps there the sum of the joint's actuator
    forces, here the motors' alone: a drive on the joint is clamped by the limit apart)."""
    i = wp.tid()
    motor = dof_motor_f[i]
    if wp.isfinite(motor):  # a NaN stays NaN (its world is flagged failed), not a bound
        motor = wp.clamp(motor, -joint_effort_limit[i], joint_effort_limit[i])
    joint_f_out[i] = joint_f[i] + motor


class MujocoMotors:
    """The MuJoCo motors of a model with Newton's MuJoCo actuators (:func:`motor_rows`, refreshed in place by
    :meth:`refresh`) and the buffers of their forces and of ``joint_f`` plus them."""

    def __init__(self, model: newton.Model):
        self.model = model
        self.count = model.custom_frequency_counts["mujoco:actuator"]
        self.is_motor = wp.zeros(self.count, dtype=wp.int32, device=model.device)
        self.dof_motor_f = wp.zeros(max(model.joint_dof_count, 1), dtype=float, device=model.device)
        self.joint_f = wp.zeros(max(model.joint_dof_count, 1), dtype=float, device=model.device)
        self.any = False
        self.clamp_ctrl = 1
        self.refresh()

    def refresh(self) -> None:
        """Re-read which actuators are motors and MuJoCo's ``clampctrl`` flag (after ``notify_model_changed`` with
        actuator or model properties)."""
        flags = np.zeros(self.count, np.int32)
        flags[motor_rows(self.model)] = 1
        self.is_motor.assign(flags)
        self.any = bool(flags.any())
        clampctrl = getattr(self.model.mujoco, "flag_clampctrl", None)
        self.clamp_ctrl = int(clampctrl is None or bool(clampctrl.numpy().all()))

    def add_to(self, joint_f: wp.array, control) -> wp.array:
        """``joint_f`` plus the motors' generalized forces from ``control.mujoco.ctrl``, in this
        object's buffer; ``joint_f`` as given when the model has no motor or ``control`` no ``mujoco.ctrl`` (no
        control: no motor force, as in SolverMuJoCo). A ``ctrl`` shorter than the model's actuators raises
        ``ValueError``."""
        ctrl = getattr(getattr(control, "mujoco", None), "ctrl", None)
        if ctrl is None or not self.any:
            return joint_f
        if ctrl.shape[0] < self.count:
            raise ValueError(
                f"control.mujoco.ctrl has {ctrl.shape[0]} entries; the model has {self.count} MuJoCo actuators"
            )
        model, mj = self.model, self.model.mujoco
        self.dof_motor_f.zero_()
        wp.launch(
            add_motor_forces,
            dim=self.count,
            inputs=[self.is_motor, mj.actuator_trnid, mj.actuator_gear, mj.actuator_gainprm, mj.actuator_ctrllimited,
                    mj.actuator_has_ctrlrange, mj.actuator_ctrlrange, mj.actuator_forcelimited,
                    mj.actuator_has_forcerange, mj.actuator_forcerange, self.clamp_ctrl, ctrl],
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
        return self.joint_f


def mujoco_motors(model: newton.Model) -> MujocoMotors | None:
    """:class:`MujocoMotors` for a model with Newton's MuJoCo actuators, else None."""
    mj = getattr(model, "mujoco", None)
    if mj is None or not model.custom_frequency_counts.get("mujoco:actuator", 0) or not hasattr(mj, "ctrl_source"):
        return None
    return MujocoMotors(model)
