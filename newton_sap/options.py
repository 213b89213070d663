"""Options of :class:`~newton_sap.SolverSAP`, validated once at construction."""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from dataclasses import dataclass

import warp as wp

DEFAULT_CONTACT_STIFFNESS = 1.0e6
"""[N/m]. Newton's default material (ke = 2.5e3) is tuned for penalty solvers and lets robots sink by
centimetres; with 1e6 a humanoid or quadruped stands within a millimetre (the near-rigid clamp of
SAP.md §2 keeps the problem well conditioned however stiff k is)."""
DEFAULT_CONTACT_DISSIPATION_TIME = 0.02
"""[s] Kelvin–Voigt dissipation time scale τ_d of every contact (damping ``d = τ_d k``)."""
FLOAT32_MAX, FLOAT32_TINY = 3.4028234663852886e38, 1.1754943508222875e-38  # the kernels' float32 range
MIN_FRICTION_REGULARIZATION = 1e-6
"""Smallest σ. A sticking contact adds ``1 / (σ w)`` to H against A's ``1 / w``: below σ ≈ 1e-6 H's conditioning
outgrows float32 (a box thrown onto the ground: relative residuals at the float32 floor up to 2e-4 at σ = 1e-6,
7e-2 at 1e-8, and a world NaN at 1e-9; σ = 1e-37 made every world NaN), while stiction creeps at ``σ Δt g``,
1e-7 m/s at Δt = 0.01, already far below any use."""
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class SapOptions:
    """Solver options (keyword arguments of :class:`~newton_sap.SolverSAP`).

    Attributes:
        momentum_mode: Solve the momentum form ``½ (v − v0)ᵀA(v − v0) − Δt τᵀ(v − v0) + Σ ℓ_c``
            (A never factored on its own, v* never formed) instead of the v* form.
        line_search: ``"exact"`` (root of dℓ/dα) or ``"backtracking"`` (Armijo).
        rel_tolerance: ε_r of the optimality criterion ``‖D∇ℓ‖ ≤ ε_a + ε_r max(‖DAv‖, ‖DJᵀγ‖)``
            (``D = diag(A)^(−1/2)``), which the world and each of its trees must meet (a light body beside a
            fast heavy one is judged by its own scale). The solve runs in float32: a world whose Newton iterations stop
            gaining (the cost criterion of SAP.md §6, or a step that changes the cost or ``v`` by round-off
            only) also ends converged, typically at 1e-5 to 1e-4 relative on contact-rich scenes; its
            ``stats.residual`` says where it stopped.
        abs_tolerance: ε_a of the same criterion [√kg·m/s] (the units of ``D∇ℓ``).
        max_iterations: Newton iterations per step before a world is marked not converged.
        contact_stiffness: Contact stiffness k [N/m] of every pair; None uses the shapes'
            ``shape_material_ke`` (combined in series).
        contact_dissipation_time: Dissipation time scale τ_d [s] of every pair; None uses
            ``shape_material_kd / shape_material_ke`` of each shape (summed).
        near_rigid_threshold: β of the near-rigid regime (0: purely compliant contact).
        near_rigid_time_step: A reference step Δt_r [s] for the near-rigid regime, or None. The regime caps a
            contact's stiffness at about ``4π² / (β² w Δt²)`` (w: its Delassus estimate [kg⁻¹]), so where it
            binds, contacts at rest sink by an amount that follows each step's Δt; steps of varying Δt then keep
            moving resting bodies (a box stack at mm/s). With Δt_r, the cap is taken at Δt_r for every step of
            Δt ≤ Δt_r: one stiffness, one resting penetration (a longer step takes its own cap).
        friction_regularization: σ: regularized friction slips by about ``σ Δt g`` when sticking; at least
            :data:`MIN_FRICTION_REGULARIZATION` (1e-6).
        joint_limit_stiffness: Stiffness [N/m or N·m/rad] of every joint limit (near-rigid by
            default: the β = 0.1 clamp decides); None uses Newton's ``joint_limit_ke``.
        joint_limit_dissipation_time: Dissipation time τ_d [s] of joint limits when
            ``joint_limit_stiffness`` is given: a limit violated at the step's start pushes its joint back at
            ``violation / (Δt + τ_d)``, at most ``violation / τ_d`` whatever Δt (a reset past a limit; MuJoCo's
            soft limits alike), and a loaded limit gives way by ``Δt + τ_d`` times its near-rigid compliance. Negative
            means one time step (Drake's choice: ``violation / (2 Δt)``, violent at small Δt).
        dense_max_dofs: Trees up to this many dofs have dense blocks: on GPUs their mass matrix is
            factored densely (tiles), and PCG preconditions with these blocks. Larger trees, and on the
            CPU every tree, factor by the level-parallel tree LDLᵀ (``factorization.py``); PCG preconditions
            larger trees by the tree LDLᵀ of their block of H (one thread per tree, ``factor_trees``).
        dense_world_max_dofs: Worlds up to this many dofs solve each Newton system exactly: by a dense
            tile Cholesky of ``H = A + JᵀGJ``, or on the CPU, in a world whose constraints each act
            along one chain (a robot on static ground), by the tree LDLᵀ of H.
        block_cholesky_max_dofs: Larger worlds up to this many dofs also solve each Newton system exactly,
            by a sparse Cholesky of H with the trees as blocks (``block_cholesky.py``; the tree LDLᵀ
            in the steps where the CPU's condition above holds). Each such world keeps an n×n float
            array (1 MiB at 512 dofs). Worlds above it use conjugate gradients preconditioned by the
            per-tree blocks of H (for trees above ``dense_max_dofs``, without the entries coupling two of
            their branches). None (default): 512 on the CPU, 0 on CUDA devices, where one thread per
            world runs the block Cholesky and leaves the GPU idle (a 1024-world 50-sphere pile: 365 ms
            per step on an H200).
        pcg_threads: How conjugate gradients run in the PCG worlds: ``"world"``, one thread per world runs
            the whole loop in one launch (``pcg.py``; every launch costs on the CPU); ``"dof"``, each CG
            iteration is a few launches over all dofs, trees and rows, looped on the device
            (``pcg_parallel.py``; GPUs; its per-world sums are float atomics, so on a GPU repeated runs can
            differ in the last bits). None (default): ``"world"`` on the CPU, ``"dof"`` on CUDA devices.
        raise_on_nonconvergence: Also raise ``RuntimeError`` after a step in which a world did not
            converge or failed, once the step's output state and ``stats`` are written (they flag it as
            without this option). Refused inside a graph capture.
        stiction_prediction: Model sliding contacts that a Newton step takes through stiction by
            their stiction branch, and use that model's direction where it descends
            (``stiction_prediction.py``). Same solutions, far fewer Newton iterations when many contacts
            change between sliding and sticking (a landing 50-sphere pile: 6 instead of 17 per step);
            False gives plain Newton directions.
        park_distant_contacts: Leave out of the Newton iterations the contacts in the detection gap that
            are far from closing it in this step (``contact_constraints.py``), and check them at the
            solution: a world where one of them would act is solved again with it. Same solutions;
            Newton's default gap of 0.1 m gives a 50-sphere pile about 700 contacts per world, of which
            about 100 can act in a step. False keeps every contact in the iterations. None (default): on
            the CPU; off on CUDA devices until it is checked and timed on a GPU (the retry runs the Newton
            loop inside a second conditional graph node; its re-sort allocates nothing, ``scan.py``, as
            CUDA graphs require there). True opts in on any device.
        coriolis: Where a step evaluates the Coriolis and centrifugal forces of articulated trees:
            ``"midpoint"`` (default), at ``v̄ = v0 + ½ Δt A⁻¹ τ``, halfway to the free motion, linearized about v0
            (the explicit midpoint rule: energy-consistent to O(Δt²), so a tumbling ragdoll stays within about
            10 % of its energy at Δt = 0.01 where the evaluation at v0 pumps it up; at rest the explicit step;
            ``SolverSAP._midpoint_velocity_products``);
            ``"explicit"``, at the step's v0, as semi-implicit Euler (Newton's Featherstone, MuJoCo's Euler and
            ``implicitfast`` integrators) takes them. A tree that moves as one rigid body (one body, or bodies
            FIXED to a FREE, DISTANCE or BALL root) takes them at v0 either way.
        contact_approximation: The contact model: ``"sap"`` (default), SAP's regularized friction cone, whose
            projection couples the normal impulse to the slip, so that a sliding contact separates at about
            ``μ ‖v_t‖`` (a box slid at 2 m/s with μ = 0.5 hops centimetres); ``"lagged"``, the same compliant
            normal law with friction bounded by μ times the elastic normal impulse at the step's start
            penetration (Drake's Lagged approximation): no such lift, at the price of friction that lags the normal
            force (none in the step an impact starts to penetrate, less than Coulomb's while the penetration builds
            up, one more step after a lift-off) and more Newton iterations (``constraints/lagged_contact.py``).
            Both are convex.
    """

    momentum_mode: bool = False
    line_search: str = "exact"
    rel_tolerance: float = 1.0e-6
    abs_tolerance: float = 1.0e-14
    max_iterations: int = 100
    contact_stiffness: float | None = DEFAULT_CONTACT_STIFFNESS
    contact_dissipation_time: float | None = DEFAULT_CONTACT_DISSIPATION_TIME
    near_rigid_threshold: float = 1.0
    near_rigid_time_step: float | None = None
    friction_regularization: float = 1.0e-3
    joint_limit_stiffness: float | None = 1.0e12
    joint_limit_dissipation_time: float = 0.02
    dense_max_dofs: int = 64
    dense_world_max_dofs: int = 64
    block_cholesky_max_dofs: int | None = None
    pcg_threads: str | None = None
    raise_on_nonconvergence: bool = False
    stiction_prediction: bool = True
    park_distant_contacts: bool | None = None
    coriolis: str = "midpoint"
    contact_approximation: str = "sap"

    def __post_init__(self):
        if self.line_search not in ("exact", "backtracking"):
            raise ValueError(f"line_search must be 'exact' or 'backtracking', got {self.line_search!r}")
        for name in ("momentum_mode", "raise_on_nonconvergence", "stiction_prediction"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("rel_tolerance", "abs_tolerance", "contact_stiffness", "contact_dissipation_time",
                     "near_rigid_threshold", "near_rigid_time_step", "friction_regularization", "joint_limit_stiffness",
                     "joint_limit_dissipation_time"):  # fmt: skip
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"{name} must be a real number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value}")
            if abs(value) > FLOAT32_MAX or 0.0 < abs(value) < FLOAT32_TINY:  # the kernels compute in float32
                raise ValueError(
                    f"{name} = {value} is outside float32's normal range [{FLOAT32_TINY:.3g}, {FLOAT32_MAX:.3g}]"
                )
        for name in ("rel_tolerance", "abs_tolerance"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        _require_int("max_iterations", self.max_iterations, minimum=1)
        if self.contact_stiffness is not None and not self.contact_stiffness > 0.0:
            raise ValueError(f"contact_stiffness must be > 0 [N/m] or None, got {self.contact_stiffness}")
        if self.contact_dissipation_time is not None and not self.contact_dissipation_time >= 0.0:
            raise ValueError(f"contact_dissipation_time must be >= 0 [s] or None, got {self.contact_dissipation_time}")
        if self.joint_limit_stiffness is not None and not self.joint_limit_stiffness > 0.0:
            raise ValueError(f"joint_limit_stiffness must be > 0 or None, got {self.joint_limit_stiffness}")
        if not self.near_rigid_threshold >= 0.0:
            raise ValueError(f"near_rigid_threshold must be >= 0, got {self.near_rigid_threshold}")
        if self.near_rigid_time_step is not None and not self.near_rigid_time_step > 0.0:
            raise ValueError(f"near_rigid_time_step must be > 0 [s] or None, got {self.near_rigid_time_step}")
        sigma = self.friction_regularization
        if not sigma >= MIN_FRICTION_REGULARIZATION:
            raise ValueError(f"friction_regularization must be >= {MIN_FRICTION_REGULARIZATION:g}, got {sigma}")
        for name in ("dense_max_dofs", "dense_world_max_dofs"):
            _require_int(name, getattr(self, name), minimum=0)
        if self.block_cholesky_max_dofs is not None:
            _require_int("block_cholesky_max_dofs", self.block_cholesky_max_dofs, minimum=0)
        if self.park_distant_contacts is not None and not isinstance(self.park_distant_contacts, bool):
            raise ValueError(f"park_distant_contacts must be True, False or None, got {self.park_distant_contacts!r}")
        if self.coriolis not in ("midpoint", "explicit"):
            raise ValueError(f"coriolis must be 'midpoint' or 'explicit', got {self.coriolis!r}")
        if self.contact_approximation not in ("sap", "lagged"):
            raise ValueError(f"contact_approximation must be 'sap' or 'lagged', got {self.contact_approximation!r}")
        if self.pcg_threads not in (None, "world", "dof"):
            raise ValueError(f"pcg_threads must be 'world', 'dof' or None, got {self.pcg_threads!r}")

    @classmethod
    def from_keywords(cls, options: dict) -> SapOptions:
        """``SapOptions(**options)``; a name that is no option raises ``TypeError`` naming the closest
        option and listing all of them."""
        names = [field.name for field in dataclasses.fields(cls)]
        for key in options:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(f"unknown SolverSAP option {key!r}{hint}; the options are: {', '.join(names)}")
        return cls(**options)

    def for_device(self, device) -> SapOptions:
        """These options with the device-dependent defaults (None) resolved for Warp ``device``."""
        return self.with_defaults(cuda=wp.get_device(device).is_cuda)

    def with_defaults(self, *, cuda: bool) -> SapOptions:
        """These options with the device-dependent defaults (None) resolved for a CUDA device (``cuda``) or
        the CPU."""
        cholesky = self.block_cholesky_max_dofs
        return dataclasses.replace(
            self,
            block_cholesky_max_dofs=(0 if cuda else 512) if cholesky is None else cholesky,
            pcg_threads=("dof" if cuda else "world") if self.pcg_threads is None else self.pcg_threads,
            park_distant_contacts=not cuda if self.park_distant_contacts is None else self.park_distant_contacts,
        )


def _require_int(name: str, value, minimum: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer (not a bool or a float) ``>= minimum`` that fits the
    kernels' int32."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not minimum <= value <= INT32_MAX:
        raise ValueError(f"{name} must be an integer in [{minimum}, {INT32_MAX}], got {value!r}")
