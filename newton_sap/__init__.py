"""newton-sap: SAP (Semi-Analytic Primal) time steppers for the Newton physics engine.

Public API: :class:`SolverSAP`, its options :class:`SapOptions` and result types :class:`SolverStats`
and :class:`SapSnapshot`, and :class:`ModelError`, raised at construction for models the solver
cannot simulate.
"""

import importlib

_EXPORTS = {
    "ModelError": ".topology",
    "SapOptions": ".options",
    "SapSnapshot": ".snapshot",
    "SolverSAP": ".solver_sap",
    "SolverStats": ".solver_sap",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """The public names, imported on first use (Warp and Newton load then): the command line can catch a Ctrl-C
    during those imports (``__main__``)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_EXPORTS})
