"""``SolverSAP``: articulated rigid bodies in reduced coordinates, stepped as in the seed (§5).

One step: branch FK at ``q0`` (poses, ``S``, twists, bias accelerations; public → internal velocities;
kept from the previous step's final FK when the input is that step's output, unchanged, on the CPU or
inside a graph capture)
→ RNE bias forces and CRBA mass matrix about each tree's COM → the constraints of the step (contacts,
PD drives, limits, couplings, loop closures: ``sap.py``) and ONE convex SAP problem per world, solved by
Newton's method → ``q1`` from ``v`` → FK at ``q1`` (internal → public velocities). The free motion
``v* = v0 + Δt A⁻¹ τ`` (dense tile Cholesky or sparse LDLᵀ per tree) is ``v`` where nothing constrains the
step; in v* mode the SAP solve forms it in the worlds that read it (those that iterate, those without
constraints), momentum mode never does.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import newton
import numpy as np
import warp as wp

from . import dynamics, factorization, integration, kinematics
from .constraints.dispatch import slots_per_thread
from .finite import all_finite, nonfinite_part, spatial_nonfinite_part
from .host_matrices import tree_inverse_diagonal
from .joint_constraints import mimic_tables
from .model_checks import (
    check_gravity,
    check_inertial_properties,
    check_joint_geometry,
    validate_joint_drives_and_limits,
    validate_shapes,
    warn_body_velocities_without_joint_velocities,
    warn_disabled_tree_joints,
    warn_rotationally_light_bodies,
)
from .mujoco_actuation import (
    actuator_armature_and_damping,
    check_actuator_values,
    mujoco_actuators,
    warn_mujoco_actuation,
)
from .mujoco_equalities import warn_half_enabled, warn_mujoco_only_rows, warn_soft_rows
from .mujoco_options import warn_mujoco_only_physics, warn_mujoco_option_flags
from .observables import (
    add_to_parents,
    body_acceleration_wrenches,
    mean_accelerations,
    parent_wrenches,
    public_body_velocities,
    roots_to_static_parents,
    static_body_wrenches,
    zero_soft_rows,
)
from .options import FLOAT32_MAX, FLOAT32_TINY, SapOptions
from .sap import SapSolver
from .snapshot import SapSnapshot, take_snapshot
from .spatial import Inertia10
from .topology import (
    JOINT_BALL,
    JOINT_D6,
    JOINT_DISTANCE,
    JOINT_FREE,
    JOINT_PRISMATIC,
    JOINT_REVOLUTE,
    articulated_trees,
    bucket_views,
    build_topology,
    entity_list,
    model_labels,
    to_device,
)

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@dataclass
class SolverStats:
    """Per-world results of the last step, NumPy arrays of length ``world_count``.

    Attributes:
        iterations: Newton iterations of the SAP solve (0: a world without constraints in the v* mode,
            one whose warm start ``v0`` already passes the first check, e.g. at rest, or one that failed on
            its inputs).
        residual: Last scaled optimality residual ``‖D ∇ℓ‖`` [√kg·m/s] of the SAP solve (NaN in a world that
            failed on its inputs).
        converged: False where the world failed or did not converge. True where the optimality criterion held,
            or where Newton's method stopped gaining at the float32 floor (see ``SapOptions.rel_tolerance``;
            ``residual`` says where).
        failed: True where one of the world's inputs (``joint_q``, ``joint_qd``, ``body_f``, the control
            arrays, a contact's points, normal, margins, surface velocity, material or per-contact properties)
            is not finite or a quaternion of its ``joint_q`` is zero (such a world is left out of the
            solve: it ends at its warm start ``v0``, or at ``v*`` without constraints in v* mode, and its
            contacts report no force), or where its solved velocities or its SAP residual are not finite;
            other worlds are unaffected.
        num_contacts: Contacts of the world that entered the SAP problem.
        num_constraints: All constraints of the world in the SAP problem (contacts, drives, limits,
            joint friction, mimic couplings, loop closures).
        parked_contacts: Contacts of the world left out of the Newton iterations and checked at the solution
            (``park_distant_contacts``): in the detection gap, far from closing it in the step.
        cg_iterations: Conjugate-gradient iterations summed over the step's Newton iterations, in
            worlds solved by PCG (by default above 512 dofs on the CPU, above ``dense_world_max_dofs`` = 64
            on GPUs); 0 in the worlds with exact Newton directions.
        contact_buffer_full: The step's ``Contacts`` buffer was full (``rigid_contact_count ≥
            rigid_contact_max``), so contacts may be missing from the SAP problem; the step also issues a
            ``RuntimeWarning`` (not inside a graph capture).
        contacts_dropped: A lower bound of the contacts missing: ``rigid_contact_count − rigid_contact_max``
            (Newton's pipeline counts some of the contacts it had no slot for, not all: its convex pairs (box,
            GJK/MPR) stop once the buffer is full, so 0 with ``contact_buffer_full`` set can hide many; a review
            measured 24 of 32 box contacts missing at 0).
        steps_failed: Steps since the solver's construction in which the world failed (the fields above describe
            the last step alone: a graph of several steps, or stats read every few steps, would hide a failure
            whose input was fixed in between); subtract two readings for the steps between them.
        steps_not_converged: Steps since the solver's construction in which the world did not converge (and did
            not fail).
    """

    iterations: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    failed: np.ndarray
    num_contacts: np.ndarray
    num_constraints: np.ndarray
    parked_contacts: np.ndarray
    cg_iterations: np.ndarray
    contact_buffer_full: bool = False
    contacts_dropped: int = 0
    steps_failed: np.ndarray | None = None
    steps_not_converged: np.ndarray | None = None


class SolverSAP(newton.solvers.SolverBase):
    """SAP time stepper for articulated rigid bodies (reduced coordinates) in Newton models.

    Drop-in Newton solver: ``solver.step(state_in, state_out, control, contacts, dt)``. Supports
    REVOLUTE, PRISMATIC, BALL, FREE, FIXED, D6 and DISTANCE (stepped as FREE) joints; any number of
    (also different) worlds in one model. Joint damping and joint stiffness (toward
    ``joint_rest_q``, scalar coordinates and BALL joints) are implicit (``A = M + Δt·D + Δt²·K``), armature joins
    the mass matrix; gravity, Coriolis, ``Control.joint_f`` and ``State.body_f`` are explicit. Contacts
    from Newton's collision pipeline enter one convex SAP problem per world (regularized friction
    cones, or with ``contact_approximation="lagged"`` friction bounded by the start penetration's elastic normal
    impulse), solved by Newton's method with an exact line search. PD drives and joint friction act on the dofs of
    REVOLUTE, PRISMATIC, D6 and BALL tree joints (a BALL joint's position error is its rotation vector from the
    target, ``joint_constraints``), joint limits on the scalar coordinates alone; set elsewhere (limits on BALL
    joints, anything on FREE or DISTANCE dofs or on a loop-closing joint) they are ignored, and the
    constructor warns, naming the joints (Newton's defaults for those dofs set none of them). DISTANCE
    joints are stepped as FREE: the distance range in their limits is not enforced, and a warning names
    the joints that have one (``add_joint_distance``'s default ``max_distance`` is 1 m). Kinematic
    bodies (Newton's ``BodyFlags.KINEMATIC``, tree roots) are prescribed: a step passes their joint's
    ``joint_q`` and ``joint_qd`` through and moves them with that velocity (``kinematic_bodies.py``).

    Args:
        model: The Newton model to simulate.
        **options: Keyword options, see :class:`~newton_sap.options.SapOptions` (units and defaults).
    """

    SUPPORTED_OBSERVABLES = frozenset(
        {
            newton.solvers.SolverBase.ObservableKind.CONTACT_F,
            newton.solvers.SolverBase.ObservableKind.BODY_QDD,
            newton.solvers.SolverBase.ObservableKind.BODY_PARENT_F,
        }
    )

    def __init__(self, model: newton.Model, **options):
        super().__init__(model)
        self.options = SapOptions.from_keywords(options).for_device(model.device)
        self._build()
        self._refresh_model_values(newton.ModelFlags.ALL, announce=False)
        self._skip_sap()  # the statistics before the first step: no world failed, nothing solved
        warn_body_velocities_without_joint_velocities(model, self.topology)
        if model.particle_count:
            warnings.warn(
                f"the model has {model.particle_count} particles; SolverSAP steps rigid bodies only and does not write "
                "the output state's particle arrays (step the particles with another Newton solver)",
                UserWarning,
                stacklevel=2,
            )
        if getattr(model, "tendon_count", 0):
            warnings.warn(
                f"the model has {model.tendon_count} routed tendons; SolverSAP does not apply them (Newton's "
                "SolverXPBD does)",
                UserWarning,
                stacklevel=2,
            )

    # ------------------------------------------------------------------ set-up
    def _build(self) -> None:
        model = self.model
        device = model.device
        o = self.options
        self.topology = build_topology(model, o.dense_max_dofs, o.dense_world_max_dofs, o.block_cholesky_max_dofs)
        topo = self.topology
        self._topo = to_device(topo, device)
        nb, ndof = max(topo.body_count, 1), max(topo.dof_count, 1)
        f32 = wp.float32

        def zeros(n, dtype=f32):
            return wp.zeros(n, dtype=dtype, device=device)

        self._body_q = zeros(nb, wp.transform)
        self._body_twist = zeros(nb, wp.spatial_vector)
        self._body_bias_acc = zeros(nb, wp.spatial_vector)
        self._composite_inertia = zeros(nb, Inertia10)
        self._composite_force = zeros(nb, wp.spatial_vector)
        self._dof_S = zeros(ndof, wp.spatial_vector)
        self._dof_S_tree = zeros(ndof, wp.spatial_vector)  # S about the tree points (dynamics)
        self._v0 = zeros(ndof)
        # the (joint_q, joint_qd) at which the kinematic buffers above were computed (NaN: not yet)
        self._kinematics_q = wp.full(max(model.joint_coord_count, 1), np.nan, dtype=f32, device=device)
        self._kinematics_qd = wp.full(max(model.joint_dof_count, 1), np.nan, dtype=f32, device=device)
        self._kinematics_stale = zeros(1, wp.int32)
        self._tau = zeros(ndof)
        self._A_inv_diag = zeros(ndof)  # 1/A_ii
        self._body_free_centripetal = zeros(nb, wp.vec3)  # FK's, for the rows (jacobian.offset_velocity)
        self._body_pivot_M = zeros(nb, wp.vec3)  # FREE joints' pivots (kinematics.free_joint_pivots)
        self._v_star = zeros(ndof)
        # the midpoint rule's velocity products (_midpoint_velocity_products): only articulated trees
        articulated = articulated_trees(topo)
        self._midpoint = o.coriolis == "midpoint" and bool(np.any(articulated))
        self._tree_articulated = wp.array(articulated.astype(np.int32), dtype=wp.int32, device=device)
        n_mid_b, n_mid_dof = (nb, ndof) if self._midpoint else (1, 1)
        self._v_mid = zeros(n_mid_dof)
        self._v_delta = zeros(n_mid_dof)
        self._delta_twist = zeros(n_mid_b, wp.spatial_vector)
        self._delta_bias_acc = zeros(n_mid_b, wp.spatial_vector)
        self._mid_twist = zeros(n_mid_b, wp.spatial_vector)
        self._mid_bias_acc = zeros(n_mid_b, wp.spatial_vector)
        self._mid_wrench = zeros(n_mid_b, wp.spatial_vector)
        self._rows = zeros(max(topo.sparse_nnz, 1))
        self._factor = zeros(max(topo.sparse_nnz, 1))
        self._y = zeros(ndof)
        self._x = zeros(ndof)
        self._dense = zeros(max(topo.dense_size, 1))
        self._dense_views = bucket_views(self._dense, topo.dense_buckets, topo.dense_bucket_offset)
        self._bucket_dof_start = {
            n: wp.array(topo.tree_dof_start[trees], dtype=wp.int32, device=device)
            for n, trees in topo.dense_buckets.items()
        }
        self._tree_ref = zeros(max(topo.tree_count, 1), wp.vec3)
        self._world_failed = zeros(topo.world_count, wp.int32)
        self._world_step_counts = zeros(topo.world_count, wp.vec2i)  # steps failed, steps not converged
        self._tree_ldlt = factorization.uses_tree_ldlt(device)  # every tree by the tree LDLᵀ (CPU)
        self._all_worlds = wp.full(max(topo.world_count, 1), 1, dtype=wp.int32, device=device)  # a mask: every world
        self._contact_overflow = zeros(2, wp.int32)  # last step's [buffer full, contacts dropped] (SolverStats)
        self._zero_joint_f = zeros(max(model.joint_dof_count, 1))
        self._actuator_armature = zeros(max(model.joint_dof_count, 1))  # MuJoCo actuators' per Newton dof [kg·m², kg]
        self._actuator_damping = zeros(max(model.joint_dof_count, 1))  # and their linear damping [N·m·s/rad, N·s/m]
        self._zero_body_f = zeros(nb, wp.spatial_vector)
        self._zero_body_gravcomp = zeros(nb)
        self._reference_state = None  # MuJoCo's qpos0, made the first time a dampratio is resolved
        self._scratch_body_qd = zeros(nb, wp.spatial_vector)
        self._subtree_wrench = zeros(nb, wp.spatial_vector)  # BODY_PARENT_F's sums (observables.py)
        self._static_tables(topo, device)
        if len(topo.loop_joints) and self.ObservableKind.BODY_PARENT_F in model.get_requested_state_attributes():
            warnings.warn(
                "State.body_parent_f is requested, but SolverSAP does not compute joint wrenches for a model with "
                "loop-closing joints (their wrenches act outside the tree joints' balance); steps fill it with NaN",
                UserWarning,
                stacklevel=2,
            )
        self._sap = SapSolver(topo, self._topo, device, self.options, model.joint_dof_count)
        self._sap.read_equality_rows(model)
        self._dense_blocks_used = int(not self._tree_ldlt or self._sap.uses_pcg)  # free motion, PCG
        # MuJoCo motors and servos driven by control.mujoco.ctrl (added to joint_f, drive rows)
        self._actuators = mujoco_actuators(
            model,
            topo,
            self._sap.dof_servo_drive,
            self._sap.dof_dampratio_kd,
            self._sap.dof_drive_ranges,
        )
        self._joint_rows = False  # any drive, finite limit or joint friction (_validate_joint_drives_and_limits)
        self._mimic_rows = False  # any mimic coupling

    def _refresh_model_values(self, flags: int, announce: bool = True) -> None:
        """Check the model values that ``flags`` (``newton.ModelFlags``) names, as the constructor does, and
        refresh in place what the solver derives from them: the mimic tables, whether steps solve
        joint-space constraints, and the kinematics kept from the last step (dropped: they depend on joint
        frames, axes and COMs). ``announce``: warn when the steps' constraints appear or disappear."""
        F, model, topo = newton.ModelFlags, self.model, self.topology
        flags = int(flags)
        if flags & F.JOINT_PROPERTIES:
            warn_disabled_tree_joints(model, topo)
            check_joint_geometry(model)
        drives = F.ACTUATOR_PROPERTIES | F.JOINT_DOF_PROPERTIES | F.JOINT_DOF_FORCE_PROPERTIES  # gains and modes
        if flags & drives:
            check_actuator_values(model)
            armature, damping = actuator_armature_and_damping(model, topo)
            self._actuator_armature.assign(np.pad(armature, (0, self._actuator_armature.shape[0] - len(armature))))
            self._actuator_damping.assign(np.pad(damping, (0, self._actuator_damping.shape[0] - len(damping))))
        inertial = F.BODY_PROPERTIES | F.BODY_INERTIAL_PROPERTIES  # masses, inertias, COMs, body flags
        inertial |= F.JOINT_DOF_PROPERTIES | F.JOINT_DOF_INERTIAL_PROPERTIES | F.JOINT_PROPERTIES  # armature, frames
        inertial |= F.ACTUATOR_PROPERTIES  # the actuators' armature
        if flags & inertial:
            check_inertial_properties(model, topo, self._actuator_armature.numpy()[: model.joint_dof_count])
            if model.body_count:  # masses, COMs and joint frames place the FREE joints' pivots
                T = self._topo
                wp.launch(kinematics.free_joint_pivots, dim=model.body_count,
                          inputs=[T.body_joint, T.body_parent, T.body_weld_start, T.body_welded, model.joint_X_p,
                                  model.joint_X_c, model.body_mass, model.body_com],
                          outputs=[self._body_pivot_M], device=model.device)  # fmt: skip
        if flags & F.MODEL_PROPERTIES:
            check_gravity(model)
            warn_mujoco_option_flags(model, stacklevel=4)  # the SolverSAP(...) or notify_model_changed call
            warn_mujoco_only_physics(model, stacklevel=4)
        if flags & F.SHAPE_PROPERTIES:
            validate_shapes(model, self.options)
            self._sap.read_contact_dimensions(model)
        if flags & (F.BODY_PROPERTIES | F.BODY_INERTIAL_PROPERTIES | F.SHAPE_PROPERTIES):
            warn_rotationally_light_bodies(model, stacklevel=4)  # the SolverSAP(...) or notify_model_changed call
        if flags & (F.JOINT_DOF_PROPERTIES | F.JOINT_DOF_FORCE_PROPERTIES | F.JOINT_REFERENCE_POSE_PROPERTIES):
            self._joint_rows = validate_joint_drives_and_limits(model, topo, self.options)
        if flags & F.CONSTRAINT_PROPERTIES:
            warn_mujoco_only_rows(model, stacklevel=4)  # the SolverSAP(...) or notify_model_changed call
            warn_soft_rows(model, stacklevel=4)
        if flags & drives:  # servos give way to Newton's drives, which take their actuators' ranges
            warn_mujoco_actuation(model, topo, stacklevel=4)
        damping = drives | inertial  # what dampratio's damping depends on
        if flags & (damping | F.MODEL_PROPERTIES) and self._actuators is not None:
            launched = self._actuators.launches()
            self._actuators.refresh(self._reference_inverse_inertia, resolve_dampratio=bool(flags & damping))
            if announce and self._actuators.launches_more_than(launched):
                warnings.warn(
                    "the model's MuJoCo actuators now need more launches per step (motors, servos or bounded drives "
                    "on more dofs): capture graphs of earlier steps again",
                    UserWarning,
                    stacklevel=3,  # the notify_model_changed call
                )
        if flags & (F.CONSTRAINT_PROPERTIES | F.JOINT_PROPERTIES):
            warn_half_enabled(model, topo.loop_joints, stacklevel=4)
        if flags & F.CONSTRAINT_PROPERTIES and topo.dof_count:
            leader, coeffs = mimic_tables(model, topo)
            self._sap.dof_mimic_leader.assign(leader)
            self._sap.dof_mimic_coeffs.assign(coeffs)
            self._mimic_rows = bool((leader >= 0).any())
        self._kinematics_q.fill_(np.nan)
        servos = self._actuators is not None and self._actuators.any_servo
        model_constraints = self._joint_rows or servos or self._mimic_rows or len(topo.loop_joints) > 0
        if announce and model_constraints != self._sap.model_constraints:
            warnings.warn(
                f"the model {'now has' if model_constraints else 'no longer has'} drives, joint limits, joint "
                "friction or mimic couplings: steps change what they solve; capture graphs of earlier steps again",
                UserWarning,
                stacklevel=3,  # the notify_model_changed call
            )
        self._sap.model_constraints = model_constraints

    def _static_tables(self, topo, device) -> None:
        """``BODY_PARENT_F``'s tables of the static bodies (welded to the world, outside every tree): all of
        them, those welded to another static body by depth (1, 2, ...), and the trees hanging on one."""
        static = np.nonzero(topo.body_tree < 0)[0]
        depth = {}  # a static body's parent is the world or a static body: its depth counts static ancestors
        for b in static:
            depth[int(b)], x = 0, int(b)
            while topo.body_parent[x] >= 0:
                x = int(topo.body_parent[x])
                depth[int(b)] += 1
        levels = [[b for b in static if depth[int(b)] == d] for d in range(1, max(depth.values(), default=0) + 1)]
        roots = topo.tree_bodies[topo.tree_body_start[:-1]] if topo.tree_count else np.zeros(0, np.int32)
        rooted = np.nonzero(topo.body_parent[roots] >= 0)[0] if len(roots) else np.zeros(0, np.int64)

        def device_array(values):
            return wp.array(np.asarray(values, np.int32), dtype=wp.int32, device=device)

        self._static_bodies = device_array(static)
        self._static_levels = [device_array(level) for level in levels]
        self._static_rooted_trees = device_array(rooted)

    @property
    def supported_observables(self) -> frozenset[str]:
        """``SUPPORTED_OBSERVABLES``, less ``BODY_PARENT_F`` for a model with loop-closing joints (their wrenches
        act on bodies outside the tree joints' balance; see ``observables.py``)."""
        if len(self.topology.loop_joints):
            return self.SUPPORTED_OBSERVABLES - {self.ObservableKind.BODY_PARENT_F}
        return self.SUPPORTED_OBSERVABLES

    def notify_model_changed(self, flags: int) -> None:
        """Newton's protocol for model arrays changed after the solver was built; ``flags``
        (``newton.ModelFlags``) names what changed.

        Steps read masses, inertias, COMs, joint frames and axes, armature, gains, limits, joint friction,
        shape materials and gravity from the model, so changed values act from the next step on. This call
        checks the values ``flags`` names as the constructor does (``ModelError`` naming the body, joint or
        shape), refreshes the mimic tables (``CONSTRAINT_PROPERTIES``) and drops the kinematics kept from
        the last step; MuJoCo's ``dampratio`` is resolved again from the current inertias (actuator, inertial or
        joint dof flags; ``mujoco_actuation``). The buffers steps read stay the same arrays, so a captured graph
        stays valid and replays the new values (domain randomization between replays). The one exception: a model
        that gains its first drive, finite limit, joint friction or mimic coupling, or loses its last, changes what a
        step launches, and so do MuJoCo actuators that need more launches (servos or bounded drives on more dofs, or
        motors where there were none); steps pick it up, and a warning says that graphs captured before must be
        captured again.
        Joint types, parents and articulations are fixed at ``finalize``: build a new solver for a new model."""
        self._refresh_model_values(flags)

    # ------------------------------------------------------------------ stepping
    def step(self, state_in, state_out, control, contacts, dt: float, *, observables=None) -> None:
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (Newton's public convention). ``dt`` must be positive
        and finite in float32 (``ValueError``; Newton's Featherstone takes 0 as a step that changes nothing).

        ``control``: Newton's ``Control``, or None for the model's own control arrays; an array a
        ``Control`` leaves None (e.g. one with only ``joint_f`` set) is taken from the model too.
        ``contacts``: Newton's ``Contacts`` from ``CollisionPipeline.collide(state_in, contacts)``, or
        None. Per-contact forces are written to ``contacts.rigid_contact_force`` [N] (on shape 1).
        ``observables``: a container from :meth:`observables` (Newton's solver observables), filled with what it
        requests: ``CONTACT_F``, the wrench on body 0 of each contact [N, N·m], also written to the deprecated
        ``contacts.force`` when that is allocated; ``BODY_QDD``, each body's mean acceleration over the step
        [m/s², rad/s²]; ``BODY_PARENT_F``, the wrench each body receives through its joint [N, N·m].
        Conventions: ``newton_sap/observables.py``. ``state_out``'s deprecated ``body_parent_f`` and ``body_qdd``,
        where allocated (``Model.request_state_attributes``), are filled too, as Newton's other solvers do.
        The state, control and contact arrays must belong to this solver's model: their sizes are checked
        (``ValueError``), and contacts with shape indices outside the model are skipped. Contacts from a pipeline
        with Newton's experimental body-pair reduction are refused (``ValueError``), as Newton asks of the solvers
        not validated with them.

        The step reads ``state_in.joint_q`` and ``joint_qd`` (not ``body_q``, ``body_qd``). When they equal the
        last output state's, the kinematics computed for that output are reused; after changing model
        arrays (frames, axes, masses) call :meth:`notify_model_changed`, as Newton requires.

        A step can be captured in a graph (``wp.ScopedCapture``; CUDA graphs need CUDA 12.4+ for the
        Newton loop's conditional nodes; Warp's CPU graphs work too) and then replays without host
        synchronization. Take one step before capturing: the first step with a given ``Contacts`` sizes
        the constraint buffers (kept per contact capacity: steps or snapshots with other contacts in between
        leave the graph valid). A graph freezes ``dt``, the arrays and the options: capture again when
        they change. Inside a capture the full-contact-buffer warning is not issued
        (``stats.contact_buffer_full`` still reports it), and ``raise_on_nonconvergence`` is refused."""
        dt = self._check_dt(dt)
        self.validate_observables(observables, contacts)
        self._require_unreduced_contacts(contacts)  # Newton's body-pair reduction: not validated with SAP
        capturing = self.model.device.is_capturing
        if capturing and self.options.raise_on_nonconvergence:
            raise RuntimeError("raise_on_nonconvergence reads the results after every step; it cannot be captured")
        self._check_state(state_in, "state_in", ("joint_q", "joint_qd", "body_f"))
        self._check_state(state_out, "state_out", ("joint_q", "joint_qd", "body_q", "body_qd"))
        control = self._control(control)
        momentum = self.options.momentum_mode
        self._flag_failed_inputs(state_in, control)
        self._step_dynamics(state_in, control, dt)
        sap_runs = contacts is not None or momentum or self._sap.model_constraints
        if sap_runs:
            self._count_dropped_contacts(contacts, warn_stacklevel=None if capturing else 3)
            self._sap.setup_constraints(self.model, state_in, control, contacts, self._body_q, self._tree_ref,
                                        self._dof_S_tree, self._A_inv_diag, self._body_free_centripetal, self._v0,
                                        self._tau, dt, self._world_failed)  # fmt: skip
            v = self._sap.solve(self._rows, self._dense, self._v0, self._v_star, self._tau, dt,
                                functools.partial(self._free_motion, dt, factored=self._midpoint),
                                self._world_failed)  # fmt: skip
        else:
            self._skip_sap()
            self._free_motion(dt, factored=self._midpoint)
            v = self._v_star
        body_parent_f = self._observable_output(observables, self.ObservableKind.BODY_PARENT_F, state_out)
        if body_parent_f is not None:
            self._joint_wrench_accelerations(v, dt, state_in.body_f)
        elif self.ObservableKind.BODY_PARENT_F not in self.supported_observables:
            unsupported = getattr(state_out, self.ObservableKind.BODY_PARENT_F, None)
            if unsupported is not None:  # allocated but not computed (loop joints): never an earlier step's values
                unsupported.fill_(float("nan"))
        self._flag_failed_results(v)
        if sap_runs:  # a failed world's contacts report no force
            self._write_contact_forces(contacts, dt, observables, body_parent_f is not None)
        if body_parent_f is not None:
            self._joint_wrench_sums(body_parent_f)
        wp.launch(_count_step_outcomes, dim=self.topology.world_count,
                  inputs=[self._world_failed, self._sap.world_converged], outputs=[self._world_step_counts],
                  device=self.model.device)  # fmt: skip
        body_qdd = self._observable_output(observables, self.ObservableKind.BODY_QDD, state_out)
        if body_qdd is not None:  # the start's body_qd, before _integrate moves the kinematic buffers on
            wp.launch(public_body_velocities, dim=self.model.body_count,
                      inputs=[self.model.body_com, self._body_q, self._body_twist], outputs=[body_qdd],
                      device=self.model.device)  # fmt: skip
        self._integrate(state_in, state_out, dt, v)
        if self.options.contact_approximation == "lagged":  # the stiffness that left the next step's penetrations
            self._sap.record_step_dt(dt)
        if body_qdd is not None:
            wp.launch(mean_accelerations, dim=self.model.body_count, inputs=[dt, state_out.body_qd],
                      outputs=[body_qdd], device=self.model.device)  # fmt: skip
        for kind, array in (
            (self.ObservableKind.BODY_PARENT_F, body_parent_f),
            (self.ObservableKind.BODY_QDD, body_qdd),
        ):
            deprecated = getattr(state_out, kind, None)
            if array is not None and deprecated is not None and deprecated.ptr != array.ptr:
                wp.copy(deprecated, array)
        if self.options.raise_on_nonconvergence:
            stats = self.stats
            if not stats.converged.all():
                failed, slow = np.nonzero(stats.failed)[0], np.nonzero(~stats.converged & ~stats.failed)[0]
                reasons = []
                if len(failed):
                    reasons.append(f"worlds {failed.tolist()} failed (a non-finite input or model value, a zero "
                                   "quaternion, or a non-finite velocity or residual, e.g. from a mass matrix that is "
                                   "singular where the world is)")  # fmt: skip
                if len(slow):
                    reasons.append(f"SAP did not converge in worlds {slow.tolist()} (residuals {stats.residual[slow]}, "
                                   f"iterations {stats.iterations[slow]})")  # fmt: skip
                raise RuntimeError("; ".join(reasons))

    def _observable_output(self, observables, kind: str, state_out):
        """Where observable ``kind`` (``BODY_PARENT_F``, ``BODY_QDD``) goes this step: the container's array if it
        requests it, else ``state_out``'s deprecated field of that name when allocated
        (``Model.request_state_attributes``), which Newton's other solvers still fill (and :meth:`step` copies
        a requested observable into it too); None when neither wants it or the model cannot give it."""
        array = _requested(observables, kind)
        if array is None and kind in self.supported_observables:
            array = getattr(state_out, kind, None)
        return array

    def _write_contact_forces(self, contacts, dt: float, observables, parent_f: bool) -> None:
        """``contacts.rigid_contact_force``, and the contact wrenches where requested (``CONTACT_F``) or
        allocated (the deprecated ``contacts.force``); with ``parent_f``, the contacts' share of the
        ``BODY_PARENT_F`` sums. See ``observables.py``."""
        contact_f = _requested(observables, self.ObservableKind.CONTACT_F)
        legacy = getattr(contacts, "force", None) if contacts is not None else None
        wrench = contact_f if contact_f is not None else legacy
        body_wrench = self._subtree_wrench if parent_f else None
        self._sap.write_contact_forces(self.model, contacts, self._body_q, self._tree_ref, self._world_failed, dt,
                                       wrench, body_wrench)  # fmt: skip
        if wrench is None:
            return
        zero_soft_rows(wrench, contacts.rigid_contact_max)
        if legacy is not None and legacy.ptr != wrench.ptr:
            wp.copy(legacy, wrench, count=legacy.shape[0])

    def _joint_wrench_accelerations(self, v, dt: float, body_f) -> None:
        """``BODY_PARENT_F``, first part: each tree body's momentum rate of the step's dof accelerations, and
        each static body's own loads, into ``_subtree_wrench`` (the contacts' wrenches follow,
        ``_write_contact_forces``)."""
        model, T = self.model, self._topo
        if len(self.topology.tree_bodies):
            wp.launch(
                body_acceleration_wrenches,
                dim=len(self.topology.tree_bodies),
                inputs=[T.tree_bodies, T.body_tree, model.body_mass, model.body_com, model.body_inertia,
                        T.body_last_dof, T.dof_parent, dt, self._body_q, self._tree_ref, self._dof_S_tree, self._v0, v],
                outputs=[self._subtree_wrench],
                device=model.device,
            )  # fmt: skip
        if self._static_bodies.shape[0]:
            wp.launch(
                static_body_wrenches,
                dim=self._static_bodies.shape[0],
                inputs=[self._static_bodies, model.body_world, model.body_mass, model.body_com, model.gravity,
                        self._body_gravcomp(), self._body_q, body_f if body_f is not None else self._zero_body_f],
                outputs=[self._subtree_wrench],
                device=model.device,
            )  # fmt: skip

    def _joint_wrench_sums(self, body_parent_f) -> None:
        """``BODY_PARENT_F``, last part: the per-body wrenches summed over subtrees (leaves → root), added to the
        RNE composite forces, the trees' totals handed to the static bodies they hang on and summed down the
        static chains, then moved to each body's COM in Newton's layout."""
        model, T = self.model, self._topo
        for level in reversed(T.body_levels):
            wp.launch(add_to_parents, dim=level.shape[0], inputs=[level, T.body_parent],
                      outputs=[self._subtree_wrench], device=model.device)  # fmt: skip
        if self._static_rooted_trees.shape[0]:
            wp.launch(roots_to_static_parents, dim=self._static_rooted_trees.shape[0],
                      inputs=[self._static_rooted_trees, T.tree_body_start, T.tree_bodies, T.body_parent,
                              self._tree_ref, self._composite_force],
                      outputs=[self._subtree_wrench], device=model.device)  # fmt: skip
        for level in reversed(self._static_levels):  # static bodies welded to static bodies: about the origin
            wp.launch(add_to_parents, dim=level.shape[0], inputs=[level, T.body_parent],
                      outputs=[self._subtree_wrench], device=model.device)  # fmt: skip
        wp.launch(
            parent_wrenches,
            dim=model.body_count,
            inputs=[T.body_tree, model.body_com, self._body_q, self._tree_ref, self._composite_force,
                    self._subtree_wrench],
            outputs=[body_parent_f],
            device=model.device,
        )  # fmt: skip

    def _count_dropped_contacts(self, contacts, warn_stacklevel: int | None) -> None:
        """Newton's pipeline stores at most ``rigid_contact_max`` contacts; ``rigid_contact_count`` may count
        some of the others. A full buffer and that excess are recorded on the device (``_contact_overflow``,
        read by ``stats``) and, unless ``warn_stacklevel`` is None (inside a capture), reported by a
        ``RuntimeWarning`` with that ``stacklevel`` (counted from here); reading them synchronizes the host."""
        if contacts is None:
            self._contact_overflow.zero_()
            return
        wp.launch(
            _count_dropped,
            dim=1,
            inputs=[contacts.rigid_contact_count, contacts.rigid_contact_max],
            outputs=[self._contact_overflow],
            device=self.model.device,
        )
        if warn_stacklevel is None:
            return
        full, dropped = (int(x) for x in self._contact_overflow.numpy())
        if full:
            warnings.warn(
                f"contact buffer full ({contacts.rigid_contact_max} slots): "
                + (f"at least {dropped} contacts dropped" if dropped else "contacts may be missing")
                + "; give the CollisionPipeline a larger rigid_contact_max",
                RuntimeWarning,
                stacklevel=warn_stacklevel,
            )

    def _check_state(self, state, owner: str, names: tuple[str, ...]) -> None:
        """The arrays ``names`` of ``state`` (``owner`` in the message) must fit the model; ``body_f`` may be
        None (no external forces)."""
        for name in names:
            array = getattr(state, name, None)
            if name != "body_f" or array is not None:
                _check_length(self.model, owner, name, array)

    def _control(self, control) -> newton.Control:
        """The control arrays of a step: ``control``'s, and the model's (the arrays ``Model.control`` refers to,
        read at each step: a model array replaced after the build is the one used) for each one it leaves None
        (all, for no ``control``), checked against the model's sizes. ``joint_f`` then gains the forces of the
        model's MuJoCo motors from ``control.mujoco.ctrl``, and the drive parameters of its MuJoCo servos and the
        ranges of its bounded drives are written (``mujoco_actuation.MujocoActuators``)."""
        resolved = newton.Control()
        for name in ("joint_f", "joint_target_q", "joint_target_qd", "joint_act"):
            array = getattr(control, name, None)
            if array is None:
                array = getattr(self.model, name)
            if array is not None:
                _check_length(self.model, "control", name, array)
            setattr(resolved, name, array)
        if self._actuators is not None:
            joint_f = resolved.joint_f if resolved.joint_f is not None else self._zero_joint_f
            resolved.joint_f = self._actuators.add_to(joint_f, control)
        return resolved

    def _reference_inverse_inertia(self, dofs: np.ndarray) -> np.ndarray:
        """Per Newton dof, ``(M⁻¹)_ii`` [1/kg or 1/(kg·m²)] at the reference configuration, MuJoCo's ``qpos0`` (the
        scalar coordinates at 0, Newton's for a joint at its MJCF ``ref``; balls at identity; free and distance joints
        as in ``model.joint_q``), M with armature, from this solver's own CRBA, for the trees holding the Newton dofs
        ``dofs`` (each tree block inverted on its own), 0 elsewhere: MuJoCo's ``dof_invweight0`` of a hinge or slide,
        which ``dampratio`` reads (``mujoco_actuation``). A kinematic body's dof gets 1 (its decoupled row); a tree
        whose block is singular there gets 0, and a warning names its joints. Overwrites the dynamics' buffers
        (``_refresh_model_values`` then drops the kinematics kept from the last step)."""
        model, topo = self.model, self.topology
        internal = np.full(model.joint_dof_count, -1)
        internal[topo.dof_public] = np.arange(topo.dof_count)
        dofs = internal[np.asarray(dofs, np.int64)]
        inverse = np.zeros(model.joint_dof_count)
        if not (dofs >= 0).any():
            return inverse
        q = model.joint_q.numpy().copy()
        q_start, joint_type = model.joint_q_start.numpy(), model.joint_type.numpy()
        coord_joint_type = np.repeat(joint_type, np.diff(q_start))
        q[np.isin(coord_joint_type, (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_D6))] = 0.0
        balls = q_start[:-1][joint_type == JOINT_BALL]
        q[balls[:, None] + np.arange(4)] = (0.0, 0.0, 0.0, 1.0)
        if self._reference_state is None:
            self._reference_state = model.state()
        state = self._reference_state
        state.joint_q.assign(q)
        state.joint_qd.zero_()
        self._dynamics(state, None, None, 1.0, step_terms=0, include_external=0)
        rows = self._rows.numpy().astype(np.float64)
        diagonal, singular = tree_inverse_diagonal(topo, rows, topo.dof_tree[dofs[dofs >= 0]])
        if len(singular):
            joints = entity_list(
                model_labels(model, "joint"), np.unique(topo.dof_joint[np.isin(topo.dof_tree, singular)]), "joint"
            )
            warnings.warn(
                f"the mass matrix of the tree of {joints} is singular "
                "at the reference configuration (MuJoCo's qpos0): the dampratio of its drives gives no damping",
                UserWarning,
                stacklevel=4,
            )
        inverse[topo.dof_public] = diagonal
        return inverse

    def _body_gravcomp(self) -> wp.array:
        """Per body, the fraction of its weight MuJoCo's gravity compensation cancels: ``model.mujoco.gravcomp`` (read
        at each step), zeros for a model without it."""
        gravcomp = getattr(getattr(self.model, "mujoco", None), "gravcomp", None)
        return gravcomp if gravcomp is not None else self._zero_body_gravcomp

    def _check_dt(self, dt: float) -> float:
        dt = float(dt)
        if not FLOAT32_TINY <= dt <= FLOAT32_MAX:  # the kernels take it in float32: 1e-46 would be 0, 1e39 inf
            raise ValueError(f"dt must be a positive time step [s] in float32's normal range, got {dt}")
        return dt

    def _dynamics(self, state, joint_f, body_f, dt: float, step_terms: int, include_external: int) -> None:
        """FK, RNE and CRBA at ``state``: fills A (sparse rows and dense blocks), τ and v0; ``step_terms``
        adds what a step of ``dt`` integrates implicitly: joint damping and stiffness (see
        ``dynamics.mass_matrix_rows``) and free bodies' gyroscopic torques (``dynamics.free_rotation_torque``);
        without them A = M and τ = −b."""
        model, topo, T = self.model, self.topology, self._topo
        device = model.device
        if joint_f is None:
            joint_f = self._zero_joint_f
        if body_f is None:
            body_f, include_external = self._zero_body_f, 0
        self._kinematics(state.joint_q, state.joint_qd)
        if topo.tree_count == 0:
            return
        wp.launch(
            dynamics.tree_reference_points,
            dim=topo.tree_count,
            inputs=[T.tree_body_start, T.tree_bodies, model.body_mass, model.body_com, self._body_q],
            outputs=[self._tree_ref],
            device=device,
        )
        wp.launch(
            dynamics.body_inertia_and_bias,
            dim=len(topo.tree_bodies),
            inputs=[
                T.tree_bodies, T.body_tree, T.body_parent, model.body_flags, model.body_world, model.body_mass,
                model.body_com, model.body_inertia,
                model.gravity, self._body_gravcomp(), T.body_joint, model.joint_type, model.joint_qd_start,
                model.joint_X_c, T.body_weld_start, T.body_welded, T.body_last_dof, T.dof_parent, T.dof_body,
                dt * step_terms, include_external,
                self._body_q, self._body_twist, self._body_bias_acc, body_f, joint_f, self._dof_S, self._tree_ref,
            ],
            outputs=[self._composite_inertia, self._composite_force, self._dof_S_tree],
            device=device,
        )  # fmt: skip
        for level in reversed(T.body_levels):
            wp.launch(
                dynamics.accumulate_composite,
                dim=level.shape[0],
                inputs=[level, T.body_parent],
                outputs=[self._composite_inertia, self._composite_force],
                device=device,
            )
        wp.launch(
            dynamics.mass_matrix_rows,
            dim=topo.dof_count,
            inputs=[
                T.dof_public, T.dof_body, T.dof_parent, T.dof_depth, T.dof_tree, T.dof_row_start,
                T.dof_dense_offset, T.dof_local, T.tree_dof_count, T.body_tree, model.body_flags, model.joint_armature,
                model.joint_damping, self._actuator_armature, self._actuator_damping, model.joint_stiffness,
                model.joint_rest_q, T.dof_coord, T.dof_ball_quat, T.dof_ball_axis, T.dof_joint, model.joint_type, dt,
                step_terms, self._dense_blocks_used, state.joint_q,
                self._v0, self._dof_S_tree, self._composite_inertia, self._composite_force, joint_f,
            ],
            outputs=[self._rows, self._dense, self._tau, self._A_inv_diag],
            device=device,
        )  # fmt: skip

    def _step_dynamics(self, state, control, dt: float) -> None:
        """The dynamics of a step of ``dt`` [s] from ``state`` under ``control``: A, v0 and τ with the step's
        implicit terms, its applied forces and its velocity products (``options.coriolis``)."""
        self._dynamics(state, control.joint_f, state.body_f, dt, step_terms=1, include_external=1)
        if self._midpoint:
            self._midpoint_velocity_products(dt)

    def _midpoint_velocity_products(self, dt: float) -> None:
        """``coriolis="midpoint"``: the Coriolis and centrifugal forces of articulated trees, ``c(q, v) =
        C(v, v)`` (C symmetric and bilinear), taken at the midpoint velocities ``v̄ = v0 + δ``, ``δ = ½ Δt A⁻¹ τ``
        (halfway to the free motion v*, with all of the step's forces in τ: gravity, applied, joint springs and
        dampers, the velocity products at v0), linearized about v0: ``τ −= 2 C(v0, δ) = c(v̄) − c(v0) − c(δ)`` (and
        the RNE composites with it). The explicit midpoint (second-order Runge–Kutta) step of ``A v̇ = τ(q, v)`` at
        the step's q, up to ``C(δ, δ)`` = O(Δt²): ``v̄ᵀ c(q, v̄) = ½ v̄ᵀ Ṁ v̄`` (the rest of c does no work), so the
        kinetic energy that c moves within the step matches, to O(Δt²), the change of ``½ vᵀ M v`` as q moves; taken
        at v0 that work is off at first order and fast-moving trees gain energy step after step (a ragdoll of ball
        joints ×5 in 2 s at Δt = 0.01, as under MuJoCo's Euler integrators). The prediction leaves out the
        constraint impulses (contacts, drives, limits: unknown before the solve), so a robot held at rest by them
        has a δ that sags under gravity; ``C(δ, δ)`` left out, its step is the explicit one bit for bit (with it, a
        Panda held by Kp = 500 settled 8e-3 N·m off its 21 N·m of gravity torque). Until session 33 v̄ followed the
        velocity products alone, ``v0 − ½ Δt A⁻¹ c(q, v0)``: under gravity it lagged the step's mean velocity by ``½
        Δt A⁻¹ g``, and an undamped triple pendulum gained 32 % of its energy in 20 s at Δt = 0.01 (now −1 %). A
        body's gyroscopic torque that the step already integrates (:func:`~newton_sap.dynamics.free_rotation_torque`)
        is kept. Cost: a solve with A for the prediction (in momentum mode too, where A is otherwise never factored on
        its own; v*'s solve then reuses the tree LDLᵀ's factors), the twists and products at v̄ and at δ. A tree
        that moves as one rigid body (one body, or bodies FIXED to a FREE, DISTANCE or BALL root:
        ``topology.articulated_trees``) keeps its products at v0: they are the gyroscopic torque, which the step
        integrates, and the centripetal pull of its COM off the root's origin, which the position update's pivot
        matches only at v0 (a nearly massless FREE root with a 2 kg welded body 20 cm off went ×8.6 in energy in 3 s
        at 40 rad/s with the midpoint rule on the pair)."""
        model, topo, T = self.model, self.topology, self._topo
        device = model.device
        self._free_motion(0.5 * dt, out=self._v_mid)
        wp.launch(dynamics.velocity_difference, dim=topo.dof_count, inputs=[self._v_mid, self._v0],
                  outputs=[self._v_delta], device=device)  # fmt: skip
        for v, twist, bias in ((self._v_mid, self._mid_twist, self._mid_bias_acc),
                               (self._v_delta, self._delta_twist, self._delta_bias_acc)):  # fmt: skip
            wp.launch(
                kinematics.branch_twists_and_bias,
                dim=len(topo.branch_start) - 1,
                inputs=[T.branch_start, T.branch_joints, model.joint_type, model.joint_parent, model.joint_child,
                        model.joint_dof_dim, T.joint_dof_internal_start, model.body_flags, self._body_q, self._dof_S,
                        v],
                outputs=[twist, bias],
                device=device,
            )  # fmt: skip
        wp.launch(
            dynamics.velocity_product_changes,
            dim=len(topo.tree_bodies),
            inputs=[T.tree_bodies, self._tree_articulated, T.body_tree, T.body_parent, model.body_flags,
                    model.body_mass, model.body_com, model.body_inertia, T.body_joint, model.joint_type,
                    model.joint_X_c, T.body_weld_start, T.body_welded, dt,
                    self._body_q, self._tree_ref, self._body_twist, self._body_bias_acc, self._mid_twist,
                    self._mid_bias_acc, self._delta_twist, self._delta_bias_acc],
            outputs=[self._mid_wrench],
            device=device,
        )  # fmt: skip
        wp.launch(
            dynamics.velocity_product_forces,
            dim=self.topology.tree_count,
            inputs=[T.tree_body_start, T.tree_bodies, T.body_tree, T.body_parent, self.model.body_flags,
                    T.body_last_dof, T.dof_parent, T.dof_body, self._dof_S_tree],
            outputs=[self._mid_wrench, self._tau, self._composite_force],
            device=device,
        )  # fmt: skip

    def _kinematics(self, joint_q, joint_qd) -> None:
        """FK at ``(joint_q, joint_qd)`` into the solver's buffers (``_body_q``, twists, bias accelerations,
        S, ``v0``) unless they hold it already: the previous step's FK at its output state left them there,
        and that state is usually this step's input. Compared entry by entry on the device, so an input
        changed in place (a reset) or another state is recomputed; ``notify_model_changed`` starts over.
        A failed world's NaN coordinates never compare equal, so FK then runs every step (same results).
        On a GPU outside a graph capture FK always runs: reading the flag would synchronize the host."""
        model, device = self.model, self.model.device
        if len(self.topology.branch_start) <= 1:
            return
        if device.is_cuda and not device.is_capturing:
            self._fk(joint_q, joint_qd)
            return
        self._kinematics_stale.zero_()
        n = max(model.joint_coord_count, model.joint_dof_count)
        per_thread = slots_per_thread(device)
        wp.launch(
            kinematics.flag_changed,
            dim=-(-n // per_thread),
            inputs=[per_thread, joint_q, self._kinematics_q, joint_qd, self._kinematics_qd],
            outputs=[self._kinematics_stale],
            device=device,
        )
        wp.capture_if(self._kinematics_stale, self._fk, joint_q=joint_q, public_qd=joint_qd)

    def _fk(self, joint_q, public_qd, state_out=None) -> None:
        """Branch FK at ``(joint_q, public_qd)`` into the solver's kinematic buffers, remembering the
        coordinates; with ``state_out``, its ``body_q`` and ``body_qd`` too."""
        model, topo, T = self.model, self.topology, self._topo
        if len(topo.branch_start) <= 1:
            return
        wp.launch(
            kinematics.forward_kinematics,
            dim=len(topo.branch_start) - 1,
            inputs=[
                T.branch_start, T.branch_joints, model.joint_type, model.joint_parent, model.joint_child,
                model.joint_X_p, model.joint_X_c, model.joint_axis, model.joint_dof_dim, model.joint_q_start,
                model.joint_qd_start, T.joint_dof_internal_start, model.body_com, T.body_weld_start,
                self._body_pivot_M, model.body_flags, int(state_out is not None), joint_q, public_qd,
            ],
            outputs=[
                self._body_q, self._body_twist, self._body_bias_acc, self._dof_S, self._v0, self._body_free_centripetal,
                state_out.body_q if state_out is not None else self._body_q,
                state_out.body_qd if state_out is not None else self._scratch_body_qd,
            ],
            device=model.device,
        )  # fmt: skip
        wp.copy(self._kinematics_q, joint_q, count=model.joint_coord_count)
        wp.copy(self._kinematics_qd, public_qd, count=model.joint_dof_count)

    def _free_motion(self, dt: float, worlds=None, rhs=None, out=None, factored: bool = False) -> None:
        """``v* = v0 + Δt A⁻¹ τ`` per tree (dense buckets, then the sparse levels; on the CPU every tree
        by the tree LDLᵀ, see ``factorization.TREE_LDLT_ON_CPU``), in the worlds flagged in the device mask
        ``worlds`` (None: every world); ``v0 + Δt A⁻¹ rhs`` into ``out`` when given. ``factored=True``: the step's
        midpoint prediction (:meth:`_midpoint_velocity_products`) left A's sparse factors in ``_factor``, which the
        sparse solve then reuses (the dense tiles factor in every call)."""
        T, device = self._topo, self.model.device
        worlds = self._all_worlds if worlds is None else worlds
        rhs = self._tau if rhs is None else rhs
        out = self._v_star if out is None else out
        trees, levels = T.sparse_trees, T.sparse_dof_levels
        if self._tree_ldlt:
            trees, levels = T.tree_ids, T.dof_levels
        else:
            for n, view in self._dense_views.items():
                wp.launch_tiled(
                    factorization.dense_free_motion_kernel(n),
                    dim=view.shape[0],
                    inputs=[self._bucket_dof_start[n], T.dof_world, dt, worlds, view, rhs, self._v0],
                    outputs=[out],
                    block_dim=64 if device.is_cpu else 128,
                    device=device,
                )
        if levels:
            factorization.solve_tree_systems(
                trees, levels, T, worlds, self._all_worlds, self._rows, rhs, dt, self._v0, self._factor, self._y,
                self._x, out, device, factored,
            )  # fmt: skip

    def _flag_failed_inputs(self, state, control) -> None:
        """``_world_failed``: 1 for the worlds with a non-finite input (``state.joint_q``, ``joint_qd``, ``body_f``,
        the arrays of the resolved ``control``) or a zero quaternion in ``joint_q``. Before the solve, which leaves
        such worlds out (``sap.init_worlds``): a NaN target or feed-forward becomes an impulse clamped to the effort
        limit, finite, and the world would iterate to ``max_iterations`` in every step."""
        self._world_failed.zero_()
        model, T = self.model, self._topo
        if model.joint_count:
            dof_input = [getattr(control, name) if getattr(control, name) is not None else self._zero_joint_f
                         for name in ("joint_f", "joint_target_qd", "joint_act")]  # fmt: skip
            target_q = control.joint_target_q if control.joint_target_q is not None else state.joint_q
            wp.launch(
                _flag_failed_inputs,
                dim=model.joint_count,
                inputs=[model.joint_type, model.joint_child, model.joint_q_start, model.joint_qd_start,
                        T.joint_in_tree, T.body_world, state.joint_q, target_q, state.joint_qd, *dof_input,
                        state.body_f if state.body_f is not None else self._zero_body_f],
                outputs=[self._world_failed],
                device=model.device,
            )  # fmt: skip

    def _skip_sap(self) -> None:
        """A step without a SAP problem (v* mode, no contacts, no joint-space constraints): the statistics say so
        on the device (``sap.idle_worlds``; no contacts dropped), so that ``stats`` reads the same arrays after
        every step, launched or replayed from a graph."""
        self._sap.skip(self._world_failed, self._contact_overflow)

    def _flag_failed_results(self, v) -> None:
        """``_world_failed`` also 1 for the worlds whose solved internal velocity in ``v`` or SAP residual is not
        finite."""
        model, T = self.model, self._topo
        if model.joint_count:
            wp.launch(
                _flag_failed_results,
                dim=model.joint_count,
                inputs=[model.joint_child, model.joint_dof_dim, T.joint_dof_internal_start, T.joint_in_tree,
                        T.body_world, v, self._sap.world_residual],
                outputs=[self._world_failed],
                device=model.device,
            )  # fmt: skip

    def _integrate(self, state_in, state_out, dt: float, v) -> None:
        model = self.model
        if model.joint_count:
            wp.launch(
                integration.integrate_joints,
                dim=model.joint_count,
                inputs=[
                    model.joint_type, model.joint_q_start, model.joint_qd_start, model.joint_dof_dim,
                    self._topo.joint_dof_internal_start, self._topo.joint_in_tree, model.joint_child, model.joint_X_c,
                    model.body_com, self._topo.body_weld_start, self._body_pivot_M, model.body_flags, dt,
                    state_in.joint_q, state_in.joint_qd, self._v0, v,
                ],
                outputs=[state_out.joint_q, state_out.joint_qd],
                device=model.device,
            )  # fmt: skip
        # body arrays of state_out from its joint coordinates, exactly as Newton's FK would make them; the
        # kinematic buffers then hold the next step's start (see _kinematics)
        self._fk(state_out.joint_q, state_out.joint_qd, state_out)

    # ------------------------------------------------------------------ results
    @property
    def stats(self) -> SolverStats:
        """Per-world results of the last step (see :class:`SolverStats`)."""
        failed = self._world_failed.numpy().astype(bool)
        sap = self._sap
        return SolverStats(
            iterations=sap.world_iterations.numpy().copy(),
            residual=sap.world_residual.numpy().astype(np.float64),
            converged=sap.world_converged.numpy().astype(bool) & ~failed,
            failed=failed,
            num_contacts=sap.world_contact_count.numpy().copy(),
            num_constraints=sap.world_constraint_count.numpy() + sap.world_parked_count.numpy(),
            parked_contacts=sap.world_parked_count.numpy().copy(),
            cg_iterations=sap.world_cg_iterations.numpy().copy(),
            contact_buffer_full=bool(self._contact_overflow.numpy()[0]),
            contacts_dropped=int(self._contact_overflow.numpy()[1]),
            steps_failed=self._world_step_counts.numpy()[:, 0].copy(),
            steps_not_converged=self._world_step_counts.numpy()[:, 1].copy(),
        )

    def snapshot(self, state, control=None, dt: float = 1e-3, contacts=None, solve: bool = False) -> SapSnapshot:
        """Diagnostic snapshot of the dynamics at ``state`` (see :class:`~newton_sap.snapshot.SapSnapshot`);
        ``dt`` [s] is the step used for ``v_star`` and the constraint data; with ``contacts`` (Newton's
        ``Contacts`` for ``state``), or with ``solve`` (a step without contacts: drives, limits, joint friction,
        equalities), it also holds the step's SAP problem and its solution. Copies to NumPy: not for hot loops.
        Without either the last step's ``stats`` are left as they were; with them, ``stats`` then describe the
        snapshot's SAP solve (iterations, residuals, dropped contacts) until the next step."""
        dt = self._check_dt(dt)
        self._check_state(state, "state", ("joint_q", "joint_qd", "body_f"))
        self._require_unreduced_contacts(contacts)
        return take_snapshot(self, state, self._control(control), dt, contacts, solve)


def _requested(observables, kind: str):
    """The array of observable ``kind`` (its field's name) in ``observables`` if it requests it, else None."""
    if observables is None or not observables.is_requested(kind):
        return None
    return getattr(observables, kind)


_ARRAY_LENGTHS = {  # a state or control array -> the Model count that is its length, and what it counts
    "joint_q": ("joint_coord_count", "joint coordinates"),
    "joint_qd": ("joint_dof_count", "joint dofs"),
    "body_q": ("body_count", "bodies"),
    "body_qd": ("body_count", "bodies"),
    "body_f": ("body_count", "bodies"),
    "joint_f": ("joint_dof_count", "joint dofs"),
    "joint_target_q": ("joint_coord_count", "joint coordinates"),
    "joint_target_qd": ("joint_dof_count", "joint dofs"),
    "joint_act": ("joint_dof_count", "joint dofs"),
}


def _check_length(model: newton.Model, owner: str, name: str, array) -> None:
    """Raise ``ValueError`` unless ``array`` (``owner.name``; None: no entries) has the length the model
    gives it; host-side (the shape only, no device access)."""
    count, what = _ARRAY_LENGTHS[name]
    expected, size = getattr(model, count), 0 if array is None else array.shape[0]
    if size != expected:
        raise ValueError(
            f"{owner}.{name} has {size} entries, the model has {expected} {what}: an array of another model?"
        )


@wp.kernel
def _count_dropped(
    contact_count: wp.array(dtype=wp.int32),
    contact_max: int,
    overflow_out: wp.array(dtype=wp.int32),
):
    """``overflow_out = [count ≥ max, max(0, count − max)]``: whether Newton's pipeline filled every contact
    slot, and how many contacts it counted beyond them (a single thread)."""
    count = contact_count[0]
    overflow_out[0] = 0
    if count >= contact_max:
        overflow_out[0] = 1
    overflow_out[1] = wp.max(count - contact_max, 0)


@wp.func
def _quaternion_start(joint_type: int, q_start: int):
    """Where a joint's quaternion lies in ``joint_q`` (BALL: first; FREE, DISTANCE: after the position), -1 if
    it has none."""
    if joint_type == JOINT_BALL:
        return q_start
    if joint_type == JOINT_FREE or joint_type == JOINT_DISTANCE:
        return q_start + 3
    return -1


@wp.kernel
def _flag_failed_inputs(
    joint_type: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_in_tree: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    joint_q_in: wp.array(dtype=float),
    joint_target_q_in: wp.array(dtype=float),
    joint_qd_in: wp.array(dtype=float),
    joint_f_in: wp.array(dtype=float),
    joint_target_qd_in: wp.array(dtype=float),
    joint_act_in: wp.array(dtype=float),
    body_f_in: wp.array(dtype=wp.spatial_vector),
    world_failed_out: wp.array(dtype=wp.int32),
):
    """One thread per joint: mark its world when one of its inputs is NaN or infinite (coordinates, position
    targets; velocities, forces, velocity targets and feed-forward of its dofs; its child's ``body_f`` for a tree
    joint) or its quaternion is zero or too large for its squared norm in float32. Read here because some never reach
    a velocity: the kinematics normalize a quaternion (a zero one to the identity), a drive clamps a NaN impulse to
    its effort limit, a loop-closing joint's coordinates pass through the step. NaN model values written without
    ``notify_model_changed`` (which checks them) flag their world where the constraint rows read them:
    ``joint_constraint_rows`` (drive gains, effort, limits, joint friction), ``contact_rows`` (materials)."""
    j = wp.tid()
    world = body_world[joint_child[j]]
    if world < 0:
        return
    parts = float(0.0)
    for k in range(joint_q_start[j], joint_q_start[j + 1]):
        parts += nonfinite_part(joint_q_in[k]) + nonfinite_part(joint_target_q_in[k])
    for k in range(joint_qd_start[j], joint_qd_start[j + 1]):
        parts += nonfinite_part(joint_qd_in[k]) + nonfinite_part(joint_f_in[k])
        parts += nonfinite_part(joint_target_qd_in[k]) + nonfinite_part(joint_act_in[k])
    if joint_in_tree[j] != 0:
        parts += spatial_nonfinite_part(body_f_in[joint_child[j]])
    failed = not all_finite(parts)
    k = _quaternion_start(joint_type[j], joint_q_start[j])
    if k >= 0:
        q = wp.vec4(joint_q_in[k], joint_q_in[k + 1], joint_q_in[k + 2], joint_q_in[k + 3])
        qq = wp.dot(q, q)
        if not (qq > 0.0 and all_finite(nonfinite_part(qq))):  # zero, or beyond float32 (finite entries of 2e19)
            failed = True
    if failed:
        world_failed_out[world] = 1


@wp.kernel
def _count_step_outcomes(
    world_failed: wp.array(dtype=wp.int32),
    world_converged: wp.array(dtype=wp.int32),
    world_step_counts: wp.array(dtype=wp.vec2i),
):
    """One thread per world: count the step as failed or, if not failed, as not converged (``SolverStats``)."""
    w = wp.tid()
    counts = world_step_counts[w]
    if world_failed[w] != 0:
        counts[0] = counts[0] + 1
    elif world_converged[w] == 0:
        counts[1] = counts[1] + 1
    world_step_counts[w] = counts


@wp.kernel
def _flag_failed_results(
    joint_child: wp.array(dtype=wp.int32),
    joint_dof_dim: wp.array2d(dtype=wp.int32),
    joint_dof_internal_start: wp.array(dtype=wp.int32),
    joint_in_tree: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    v_in: wp.array(dtype=float),
    world_residual: wp.array(dtype=float),
    world_failed_out: wp.array(dtype=wp.int32),
):
    """One thread per joint: mark its world when the solved (internal) velocities of a tree joint's dofs or its
    world's SAP residual (in a step without a SAP problem 0, NaN where the inputs failed) is NaN or infinite (a NaN
    model value written without ``notify_model_changed``, a float32 overflow)."""
    j = wp.tid()
    world = body_world[joint_child[j]]
    if world < 0:
        return
    parts = nonfinite_part(world_residual[world])
    if joint_in_tree[j] != 0:
        d0 = joint_dof_internal_start[j]
        for k in range(joint_dof_dim[j, 0] + joint_dof_dim[j, 1]):
            parts += nonfinite_part(v_in[d0 + k])
    if not all_finite(parts):
        world_failed_out[world] = 1
