"""What Newton's MJCF importer keeps for SolverMuJoCo alone about actuation, named in warnings.

Newton's MJCF importer (which registers SolverMuJoCo's custom attributes itself) turns a ``<position>``/``<velocity>``
actuator on a joint into Newton's joint drive (``joint_target_ke/kd``, ``joint_target_mode``), which SolverSAP
applies, and keeps the rest in ``model.mujoco``: actuators driven by ``control.mujoco.ctrl`` (``<motor>``,
``<general>``; ``ctrl_source`` CTRL_DIRECT), the force and control ranges and ``dampratio`` of the drives (the
drive's damping then stays ``joint_target_kd = 0``), and gravity compensation (``gravcomp``). SolverMuJoCo
applies them all; SolverSAP, like SolverFeatherstone, none: these warnings say so, naming what is left out.
"""

from __future__ import annotations

import warnings

import newton
import numpy as np

from .topology import entity_list, name_list

CTRL_DIRECT = 1
"""``model.mujoco.ctrl_source`` of an actuator driven by ``control.mujoco.ctrl`` (Newton's ``CtrlSource``)."""
TRN_JOINT = 0
"""``model.mujoco.actuator_trntype`` of an actuator on a joint dof (``actuator_trnid[k, 0]``; Newton's ``TrnType``)."""
LIMITED, AUTO = 1, 2
"""``actuator_ctrllimited``/``actuator_forcelimited``: on, or on where a range is given (MuJoCo's ``auto``)."""


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
    on_joint = mj.actuator_trntype.numpy() == TRN_JOINT
    qd_start = model.joint_qd_start.numpy()
    labels = list(model.joint_label)
    names = []
    for k in rows[:5]:
        joint = int(np.searchsorted(qd_start, dof[k], side="right")) - 1
        known = on_joint[k] and 0 <= dof[k] < model.joint_dof_count and joint < len(labels)
        names.append(f"actuator {int(k)} (joint '{labels[joint]}')" if known else f"actuator {int(k)}")
    return name_list(names, len(rows))


def warn_mujoco_actuation(model: newton.Model, stacklevel: int) -> None:
    """Warnings naming the MuJoCo actuators driven by ``control.mujoco.ctrl``, the drives whose MuJoCo force or
    control range or ``dampratio`` is not applied, and the bodies with gravity compensation; none for a model
    without Newton's MuJoCo attributes. ``stacklevel`` points at the ``SolverSAP(...)`` or
    ``notify_model_changed`` call."""
    mj = getattr(model, "mujoco", None)
    if mj is None:
        return
    count = model.custom_frequency_counts.get("mujoco:actuator", 0)
    if count and hasattr(mj, "ctrl_source") and hasattr(mj, "actuator_trnid"):
        direct = mj.ctrl_source.numpy()[:count] == CTRL_DIRECT
        rows = np.nonzero(direct)[0]
        if len(rows):
            warnings.warn(
                f"{_actuator_names(model, rows)} {_verb(rows)} driven by control.mujoco.ctrl, which only SolverMuJoCo "
                "applies; SolverSAP ignores such MuJoCo actuators: drive the joints by control.joint_f or Newton's "
                "joint targets",
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
    gravcomp = getattr(mj, "gravcomp", None)
    if gravcomp is not None and model.body_count:
        bodies = np.nonzero(gravcomp.numpy()[: model.body_count] != 0.0)[0]
        if len(bodies):
            names = entity_list(list(model.body_label), bodies, "body")
            warnings.warn(
                f"gravity compensation (model.mujoco.gravcomp) of {names} is applied only by SolverMuJoCo; SolverSAP "
                "lets such bodies fall",
                UserWarning,
                stacklevel=stacklevel,
            )
