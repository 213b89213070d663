"""newton-sap: SAP (Semi-Analytic Primal) time steppers for the Newton physics engine.

Public API: :class:`SolverSAP` with its result types :class:`SolverStats` and :class:`SapSnapshot`,
and :class:`ModelError`, raised at construction for models the solver cannot simulate.
"""

from .solver_sap import SapSnapshot, SolverSAP, SolverStats
from .topology import ModelError

__all__ = ["ModelError", "SapSnapshot", "SolverSAP", "SolverStats"]
