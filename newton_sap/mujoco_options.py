"""MuJoCo option flags (MJCF ``<option><flag .../>``) that Newton keeps for SolverMuJoCo alone, named in a warning.

Newton's MJCF importer stores the ``<flag>`` attributes as ``model.mujoco.flag_*``. A flag switched off makes
SolverMuJoCo leave out a whole kind of force or constraint (``equality="disable"``: every equality constraint).
SolverSAP reads no MuJoCo option and still applies them; the warning names the flags that are off.
"""

from __future__ import annotations

import warnings

import newton

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
