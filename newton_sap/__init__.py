"""newton-sap: SAP (Semi-Analytic Primal) time steppers for the Newton physics engine.

Public API: :class:`SolverSAP`, its options :class:`SapOptions` and result types :class:`SolverStats`
and :class:`SapSnapshot`, and :class:`ModelError`, raised at construction for models the solver
cannot simulate.
"""

from .options import SapOptions
from .snapshot import SapSnapshot
from .solver_sap import SolverSAP, SolverStats
from .topology import ModelError

__all__ = ["ModelError", "SapOptions", "SapSnapshot", "SolverSAP", "SolverStats"]
