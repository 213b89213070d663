"""MuJoCo equality rows of a Newton model (``model.mujoco.equality_constraint_*``), as SolverSAP reads them.

Newton's MJCF and USD importers bring a MuJoCo ``<equality>`` either as a Newton constraint that every solver can
read, recorded in the row's ``target_kind`` / ``target``: a loop-closing joint (``<connect>``, ``<weld>``:
JOINT) or a mimic constraint (``<joint>`` between two scalar joints: MIMIC); or, where Newton has no such
constraint, as a MuJoCo-only row (``target_kind`` NONE: ``newton.solvers.mujoco.add_equality_connect`` and its
siblings, a joint lock without ``joint2``, tendon equalities) that only SolverMuJoCo applies.

SolverSAP solves the Newton constraints. A converted constraint acts only while its own flag
(``joint_enabled``, ``constraint_mimic_enabled``) and its row's ``equality_constraint_enabled`` are both True:
switching either off releases it (SolverMuJoCo reads only the row, other Newton solvers only the Newton flag).
The importer sets both from ``active``; a constraint whose two flags disagree is named in a warning when the model
is checked (construction, ``notify_model_changed``), so switching only one of them on is not silent. MuJoCo-only
rows are named in a warning too, and so are converted rows whose ``solref``/``solimp`` (``model.mujoco.eq_solref``,
``eq_solimp``) soften them in SolverMuJoCo: SolverSAP holds its loop joints and mimic couplings near-rigid.
"""

import warnings

import newton
import numpy as np

from .topology import model_labels, name_list

_KIND = newton.solvers.mujoco.equality.MjcEqualityTargetKind
DEFAULT_SOLREF = (0.02, 1.0)
DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
"""MuJoCo's default ``solref``/``solimp`` of an equality, which a row keeps unless its MJCF sets them."""
TARGET_NONE, TARGET_JOINT, TARGET_MIMIC = int(_KIND.NONE), int(_KIND.JOINT), int(_KIND.MIMIC)
"""What a row became: nothing (a MuJoCo-only row), a loop joint, a mimic constraint."""


def equality_rows(model: newton.Model):
    """The model's MuJoCo equality attribute namespace (``model.mujoco``) when it has rows, else None."""
    rows = getattr(model, "mujoco", None)
    if rows is None or not getattr(rows, "equality_constraint_count", 0):
        return None
    if getattr(rows, "equality_constraint_target_kind", None) is None:
        return None
    return rows


def rows_targeting(model: newton.Model, kind: int, count: int) -> np.ndarray:
    """Per target of ``kind`` (joint or mimic constraint index, ``count`` of them): the equality row projected
    onto it, or -1."""
    row_of = np.full(count, -1, np.int32)
    rows = equality_rows(model)
    if rows is None:
        return row_of
    target_kind = rows.equality_constraint_target_kind.numpy()
    target = rows.equality_constraint_target.numpy()
    for r in np.nonzero((target_kind == kind) & (target >= 0) & (target < count))[0]:
        row_of[target[r]] = r
    return row_of


def loop_joint_rows(model: newton.Model, loop_joints) -> np.ndarray:
    """Per loop joint of ``loop_joints`` (joint indices): the equality row it was made from, or -1."""
    return rows_targeting(model, TARGET_JOINT, model.joint_count)[np.asarray(loop_joints, np.int64)]


def row_enabled(model: newton.Model) -> np.ndarray | None:
    """``equality_constraint_enabled`` of every row (NumPy bool), or None without rows."""
    rows = equality_rows(model)
    return None if rows is None else rows.equality_constraint_enabled.numpy().astype(bool)


def warn_half_enabled(model: newton.Model, loop_joints: np.ndarray, stacklevel: int) -> None:
    """One warning naming the converted constraints whose Newton flag and row flag disagree (they do not act)."""
    enabled = row_enabled(model)
    if enabled is None:
        return
    names = []
    loop_row = loop_joint_rows(model, loop_joints)
    joint_enabled = model.joint_enabled.numpy().astype(bool)
    labels = model_labels(model, "joint")
    for j, r in zip(loop_joints, loop_row, strict=True):
        if r >= 0 and enabled[r] != joint_enabled[j]:
            names.append(f"loop joint {j}" + (f" ('{labels[j]}')" if j < len(labels) and labels[j] else ""))
    count = getattr(model, "constraint_mimic_count", 0)
    if count:
        mimic_row = rows_targeting(model, TARGET_MIMIC, count)
        mimic_enabled = model.constraint_mimic_enabled.numpy().astype(bool)
        names += [
            f"mimic constraint {c}"
            for c in range(count)
            if mimic_row[c] >= 0 and enabled[mimic_row[c]] != mimic_enabled[c]
        ]
    if names:
        warnings.warn(
            f"{name_list(names, len(names))} made from MuJoCo equality rows act only while both their own enabled "
            "flag (joint_enabled, constraint_mimic_enabled) and the row's model.mujoco.equality_constraint_enabled "
            "are True; now the two disagree",
            UserWarning,
            stacklevel=stacklevel,
        )


def _row_names(rows, indices: np.ndarray) -> str:
    """Equality rows ``indices`` as ``row r ('label')``, the first five and how many more."""
    labels = list(getattr(rows, "equality_constraint_label", None) or [])
    names = [f"row {r}" + (f" ('{labels[r]}')" if r < len(labels) and labels[r] else "") for r in indices[:5]]
    return name_list(names, len(indices))


def warn_mujoco_only_rows(model: newton.Model, stacklevel: int) -> None:
    """One warning naming the enabled MuJoCo-only rows (``target_kind`` NONE), which SolverSAP does not apply."""
    rows = equality_rows(model)
    if rows is None:
        return
    only = np.nonzero((rows.equality_constraint_target_kind.numpy() == TARGET_NONE) & row_enabled(model))[0]
    if len(only) == 0:
        return
    warnings.warn(
        f"MuJoCo equality rows that Newton did not convert to loop joints or mimic constraints are applied only "
        f"by SolverMuJoCo, not by SolverSAP: {_row_names(rows, only)} of model.mujoco.equality_constraint_*",
        UserWarning,
        stacklevel=stacklevel,
    )


def warn_soft_rows(model: newton.Model, stacklevel: int) -> None:
    """One warning naming the enabled rows that Newton made a loop joint or mimic constraint of while their
    ``solref``/``solimp`` differ from MuJoCo's defaults: SolverMuJoCo softens them so, SolverSAP does not."""
    rows = equality_rows(model)
    if rows is None or getattr(rows, "eq_solref", None) is None or getattr(rows, "eq_solimp", None) is None:
        return
    converted = (rows.equality_constraint_target_kind.numpy() != TARGET_NONE) & row_enabled(model)
    own_solref = ~np.isclose(rows.eq_solref.numpy(), DEFAULT_SOLREF).all(axis=1)
    own_solimp = ~np.isclose(rows.eq_solimp.numpy(), DEFAULT_SOLIMP).all(axis=1)
    soft = np.nonzero(converted & (own_solref | own_solimp))[0]
    if len(soft) == 0:
        return
    warnings.warn(
        f"SolverSAP holds its loop joints and mimic couplings near-rigid: the solref/solimp of MuJoCo equality "
        f"{_row_names(rows, soft)} (model.mujoco.eq_solref, eq_solimp), which SolverMuJoCo applies, are not",
        UserWarning,
        stacklevel=stacklevel,
    )
