"""MuJoCo options and model settings that Newton's MJCF importer keeps in ``model.mujoco`` for SolverMuJoCo.

Applied here: a geom's ``condim`` 1 (frictionless contact; :func:`contact_dimensions`, which the contact rows read).
Named in warnings: option flags (MJCF ``<option><flag .../>``, ``model.mujoco.flag_*``) switched off, which make
SolverMuJoCo leave out a whole kind of force or constraint (``equality="disable"``: every equality constraint) while
SolverSAP reads no MuJoCo option and still applies them (:func:`warn_mujoco_option_flags`); and the MuJoCo-only
physics SolverSAP does not model (:func:`warn_mujoco_only_physics`): fixed tendons' limits, springs, damping,
friction and armature, ``<contact><pair>`` overrides, joint-limit margins, fluid forces.
"""

from __future__ import annotations

import warnings

import newton
import numpy as np

from .mujoco_actuation import range_applies
from .topology import entity_list, model_labels

DISABLING_FLAGS = ("constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper", "actuation")
"""The ``model.mujoco.flag_<name>`` that, switched off, leave a kind of force or constraint out of SolverMuJoCo's
step (MuJoCo's ``disable`` flags that SolverSAP's step would apply)."""


def warn_mujoco_option_flags(model: newton.Model, stacklevel: int) -> None:
    """One warning naming the MuJoCo option flags of :data:`DISABLING_FLAGS` that are off in some world; none for a
    model without Newton's MuJoCo attributes. ``stacklevel`` points at the ``SolverSAP(...)`` or
    ``notify_model_changed`` call."""
    mj = getattr(model, "mujoco", None)
    off = [
        name
        for name in DISABLING_FLAGS
        if (flag := getattr(mj, f"flag_{name}", None)) is not None and not flag.numpy().all()
    ]
    if off:
        listed = " ".join(f'{name}="disable"' for name in off)
        warnings.warn(
            f"MuJoCo option flags are off (<flag {listed}/>, model.mujoco.flag_*): SolverMuJoCo then leaves those "
            "forces or constraints out; SolverSAP reads no MuJoCo option and applies them",
            UserWarning,
            stacklevel=stacklevel,
        )


def contact_dimensions(model: newton.Model) -> tuple[np.ndarray, np.ndarray]:
    """Per shape, MuJoCo's contact dimension (MJCF geom ``condim``, ``model.mujoco.condim``) and its ``priority``
    (``model.mujoco.geom_priority``): 3 and 0 where the model has none. A pair takes the dimension of its
    higher-priority shape, the larger at equal priority (``contact_constraints.pair_condim``); at 1 MuJoCo's contact
    is frictionless, and so is SolverSAP's (Newton's ``nv_humanoid.xml`` gives its body geoms condim 1: their
    self-contacts slide freely in MuJoCo); 4 and 6 act as 3 (torsional and rolling friction are not modelled)."""
    count = max(model.shape_count, 1)
    mj = getattr(model, "mujoco", None)
    condim, priority = np.full(count, 3, np.int32), np.zeros(count, np.int32)
    for values, name in ((condim, "condim"), (priority, "geom_priority")):
        given = getattr(mj, name, None)
        if given is not None and model.shape_count:
            values[: model.shape_count] = given.numpy()[: model.shape_count]
    return condim, priority


def warn_mujoco_only_physics(model: newton.Model, stacklevel: int) -> None:
    """One warning per kind of MuJoCo-only physics the model holds (``model.mujoco``, filled by Newton's MJCF
    importer) that SolverSAP does not model (SolverMuJoCo applies it, Featherstone does not): fixed or spatial tendons
    with a limit, stiffness, damping, friction loss or armature (named; Newton's own routed tendons are another
    warning), ``<contact><pair>`` overrides of friction and contact dimension, joint-limit margins, and fluid forces
    (``<option density viscosity wind>``). None for a model without Newton's MuJoCo attributes. ``stacklevel`` points
    at the ``SolverSAP(...)`` or ``notify_model_changed`` call."""
    mj = getattr(model, "mujoco", None)
    if mj is None:
        return
    counts = model.custom_frequency_counts

    def values(name, count):
        array = getattr(mj, name, None)
        return None if array is None or not count else array.numpy()[:count]

    tendons = counts.get("mujoco:tendon", 0)
    passive = np.zeros(tendons, bool)
    for name in ("tendon_stiffness", "tendon_damping", "tendon_frictionloss", "tendon_armature"):
        given = values(name, tendons)
        if given is not None:
            passive |= given != 0.0
    limited, bounds = values("tendon_limited", tendons), values("tendon_range", tendons)
    if limited is not None and bounds is not None:
        passive |= range_applies(limited, bounds[:, 0] < bounds[:, 1])  # auto: a range given
    found = []
    if passive.any():
        labels = list(getattr(mj, "tendon_label", None) or [])
        found.append(
            f"{entity_list(labels, np.nonzero(passive)[0], 'tendon')} (MuJoCo tendons: their limits, springs, damping, "
            "friction loss and armature; drive the joints by Newton's joint drives or mimic couplings instead)"
        )
    if counts.get("mujoco:pair", 0):
        found.append("<contact><pair> overrides (model.mujoco.pair_*: their friction and condim; Newton's pipeline "
                     "makes the pair's contacts with the shapes' own materials)")  # fmt: skip
    margin = values("limit_margin", model.joint_dof_count)
    if margin is not None and (margin != 0.0).any():
        joints = np.unique(np.searchsorted(model.joint_qd_start.numpy(), np.nonzero(margin)[0], side="right") - 1)
        found.append(f"the joint-limit margins of {entity_list(model_labels(model, 'joint'), joints, 'joint')} "
                     "(limits act at the limit itself)")  # fmt: skip
    fluid = [name for name in ("density", "viscosity", "wind") if (v := values(name, 1)) is not None and v.any()]
    if fluid:
        found.append(f"fluid forces (<option {' '.join(fluid)}>)")
    for text in found:
        warnings.warn(
            f"SolverSAP does not model {text}, which only SolverMuJoCo applies", UserWarning, stacklevel=stacklevel
        )
