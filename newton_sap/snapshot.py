"""Diagnostic snapshot of one step's dynamics and contact problem, in Newton's public coordinates.

Host-side (NumPy) and built from the solver's own buffers: for tests, debugging and analysis, not for
hot loops.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .constraints.dispatch import CONTACT_KINDS
from .conventions import free_joint_velocity_map
from .diagnostics import quat_to_matrix
from .host_matrices import world_matrices
from .topology import JOINT_DISTANCE, JOINT_FREE


@dataclass
class SapSnapshot:
    """Dynamics of one state, one float64 NumPy array per world, in Newton's public generalized
    coordinates (the order and meaning of ``State.joint_qd``, dual to ``Control.joint_f``): the n dofs
    of a world's trees, ``joint_qd[dofs[w]]``. Loop-closing joints' dofs are not among them (their
    joints are constraints, see ``constraint_kind``). A kinematic body's dofs are, as the solver holds them
    (prescribed, ``kinematic_bodies.py``): decoupled from the other dofs in ``mass_matrix`` (internally a unit
    diagonal and zero ``bias`` and ``tau``; a FREE root's public block and terms carry the map T below),
    ``v_star`` and ``velocity`` the given ``joint_qd``.

    Attributes:
        mass_matrix: ``M(q)`` [kg, kg·m, kg·m²], n×n per world, armature included, damping not.
        problem_matrix: The step's ``A = M + Δt D + Δt² K`` [kg, kg·m, kg·m²], n×n per world: the mass matrix with
            the joint damping and stiffness the step integrates implicitly (D, K below; a BALL joint's stiffness
            adds ``Δt² JᵀKJ`` to its 3×3 block, ``J = J_l⁻¹(e0)`` the rate of its error, ``dynamics.ball_spring``); the
            matrix of the SAP problem's ``½ (v − v*)ᵀ A (v − v*)`` and of ``v_star``. ``mass_matrix`` where no joint
            has damping or stiffness.
        bias: ``b(q, v)`` with ``M q̈ + b = τ`` [N, N·m]: gravity (less MuJoCo's gravity compensation,
            ``model.mujoco.gravcomp``), Coriolis and gyroscopic terms.
        tau: The step's right-hand side ``joint_f + Jᵀ body_f − b − D v0 − K (q0 + Δt v0 − q_rest)`` (``joint_f``
            with the MuJoCo motors' forces, ``mujoco_actuation``; ``b`` with the gyroscopic torques of freely turning
            bodies integrated over Δt, ``dynamics.free_rotation_torque``, and, with ``coriolis="midpoint"``, the
            velocity products of articulated trees taken at the midpoint velocities
            ``SolverSAP._midpoint_velocity_products``, so it depends on ``dt`` and differs from ``bias`` there)
            [N, N·m] (D, K: joint damping and stiffness; K acts on scalar coordinates and BALL joints, whose spring
            takes ``Jᵀ K (e0 + Δt J v0)`` instead).
        v_star: Free-motion velocity ``v0 + Δt (M + Δt D + Δt² K)⁻¹ τ − Δt Ṫ q̇_int`` (public convention at ``q0``;
            the last term, zero but for a spinning free body whose COM is off its origin, is explained below).
        dofs: Per world, the (n,) increasing public dof indices of the rows and columns.
        contact_jacobian: With a solve (``contacts`` or ``solve`` given to the snapshot): per world, the contacts'
            ``J`` of shape (3·nc, n) with ``v_c = J joint_qd`` [m/s], three rows (t1, t2, n) per contact in the order
            of Newton's contact buffer.
        contact_index: Per world, (nc,) each contact's index in Newton's contact buffer. The buffer's contacts
            between two bodies that cannot move (static shapes, bodies welded to the world, bodies moved by
            kinematic bodies' dofs alone) and those with
            shape indices outside the model are in no world's problem: the snapshot's k-th contact is buffer
            contact ``contact_index[w][k]``, not k.
        contact_frame: Per world, (nc, 3, 3) rotations ``R_WC = [t1 t2 n]``, normal from shape 0 to 1.
        contact_distance: Per world, (nc,) signed distances φ0 [m] (negative: penetration).
        contact_point: Per world, (nc, 3) contact points [m] in world, where the impulses act
            (``contact_constraints.contact_point``).
        contact_compliance: Per world, (nc, 3) the regularization ``R`` [kg⁻¹].
        contact_bias_velocity: Per world, (nc, 3) ``v̂`` [m/s], less the contact's velocity that is no unknown: what
            kinematic bodies give it (their dofs have zero columns in ``contact_jacobian``, their mass-matrix rows
            are decoupled), the position update's ``R_WCᵀ (u_1 − u_0)`` (``jacobian.offset_velocity``) and a mesh's
            tangential surface velocity (``contact_constraints``).
        contact_friction: Per world, (nc,) μ; with ``contact_approximation="lagged"`` the friction bound μ n0 [N·s]
            (n0 with the stiffness of the solver's last step, ``lagged_contact.lagged_normal_impulse``).
        contact_impulse: Per world, (nc, 3) the solved impulses γ [N·s] in the contact frames (0 in a world
            that failed: ``stats.failed``).
        constraint_kind: Per world, (m,) the type of every constraint of the step (contacts, drives,
            limits, joint friction, mimic, loop closures; ``constraints.dispatch`` constants): the contacts
            first, in the order of Newton's contact buffer.
        constraint_jacobian: Per world, (3·m, n): three rows per constraint (unused rows are zero).
        constraint_impulse: Per world, (m, 3) the solved impulses [N·s] (row 0 for one-row types; 0 in a
            failed world).
        constraint_compliance: Per world, (m, 3) every constraint's regularization ``R`` (its unused rows 1),
            [kg⁻¹] for contacts, [kg⁻¹] or [(kg·m²)⁻¹] for a dof's rows.
        constraint_bias_velocity: Per world, (m, 3) every constraint's ``v̂`` [m/s or rad/s], as
            ``contact_bias_velocity`` for the contacts.
        constraint_parameter: Per world, (m,) every constraint's type parameter (``constraints.dispatch``): μ
            (contacts), the friction bound μ n0 [N·s] (lagged contacts), the impulse limit Δt·e of a drive or Δt·f_c
            of joint friction [N·s or N·m·s], unused (0) for limits and equalities. The problem of a world is
            ``min ½ (v − v*)ᵀ A (v − v*) + Σ ℓ_i(J_i v)`` over these (``tests/sap_reference.py`` solves it in
            float64).
        velocity: With a solve: per world, the step's solved velocity ``v`` (public convention at
            ``q0``): ``A (v − v*) = J_allᵀ γ_all`` at convergence.

    Internally the solver uses ``[ω; v_M]`` for FREE joints (see ``conventions.py``); with
    ``q̇_pub = T q̇_int`` the public quantities are ``M_pub = T⁻ᵀ M_int T⁻¹``,
    ``b_pub = T⁻ᵀ b_int − M_pub Ṫ q̇_int``, ``τ_pub = T⁻ᵀ τ_int + M_pub Ṫ q̇_int`` (``Ṫ q̇_int`` is
    ``ω × (ω × r)`` in the linear slots of each free joint, r = COM − M in F) and ``J_pub = J_int T⁻¹``.
    ``v_star`` and ``velocity`` are ``T(q0) q̇_int``, consistent with ``J_pub``; the public ``joint_qd`` a
    step writes adds ``Δt Ṫ q̇_int`` to them (``conventions.free_com_velocity_after_step``), a term of
    order ``Δt |ω|² |r|`` for free bodies whose COM is not their origin; for a FREE body with bodies FIXED to it
    the written velocity is its COM's after the group turned about the group's COM (``integration``), which differs
    from this by the turn, O(Δt |ω| |v|).
    """

    mass_matrix: list[np.ndarray] = field(default_factory=list)
    problem_matrix: list[np.ndarray] = field(default_factory=list)
    bias: list[np.ndarray] = field(default_factory=list)
    tau: list[np.ndarray] = field(default_factory=list)
    v_star: list[np.ndarray] = field(default_factory=list)
    dofs: list[np.ndarray] = field(default_factory=list)
    contact_jacobian: list[np.ndarray] = field(default_factory=list)
    contact_index: list[np.ndarray] = field(default_factory=list)
    contact_frame: list[np.ndarray] = field(default_factory=list)
    contact_distance: list[np.ndarray] = field(default_factory=list)
    contact_point: list[np.ndarray] = field(default_factory=list)
    contact_compliance: list[np.ndarray] = field(default_factory=list)
    contact_bias_velocity: list[np.ndarray] = field(default_factory=list)
    contact_friction: list[np.ndarray] = field(default_factory=list)
    contact_impulse: list[np.ndarray] = field(default_factory=list)
    constraint_kind: list[np.ndarray] = field(default_factory=list)
    constraint_jacobian: list[np.ndarray] = field(default_factory=list)
    constraint_impulse: list[np.ndarray] = field(default_factory=list)
    constraint_compliance: list[np.ndarray] = field(default_factory=list)
    constraint_bias_velocity: list[np.ndarray] = field(default_factory=list)
    constraint_parameter: list[np.ndarray] = field(default_factory=list)
    velocity: list[np.ndarray] = field(default_factory=list)


def take_snapshot(solver, state, control, dt: float, contacts, solve: bool = False) -> SapSnapshot:
    """Run the step's dynamics (and, with ``contacts`` or ``solve``, its SAP solve) on ``solver`` without
    integrating, and gather the results per world in public coordinates. ``control``: the step's control
    arrays, all set (``SolverSAP._control``). After a snapshot with a solve, ``solver.stats`` describe
    the snapshot's solve."""
    n = solver.topology.dof_count

    def host(array):
        return array.numpy()[:n].astype(np.float64)

    # bias: the same pipeline without applied forces and step terms gives τ = −b and A = M
    solver._dynamics(state, None, None, dt, step_terms=0, include_external=0)
    mass_int = world_matrices(solver.topology, solver._rows.numpy().astype(np.float64))
    bias_int = -host(solver._tau)
    solver._step_dynamics(state, control, dt)
    problem_int = world_matrices(solver.topology, solver._rows.numpy().astype(np.float64))
    tau_int, v0_int = host(solver._tau), host(solver._v0)
    solver._free_motion(dt)
    v_star_int = host(solver._v_star)
    snap = SapSnapshot()
    maps = _velocity_maps(solver, v0_int)
    for w, (T, acc, dofs) in enumerate(maps):
        s, e = int(solver.topology.world_dof_start[w]), int(solver.topology.world_dof_start[w + 1])
        T_inv = np.linalg.inv(T)
        M_pub = T_inv.T @ mass_int[w] @ T_inv
        snap.mass_matrix.append(M_pub)
        snap.problem_matrix.append(T_inv.T @ problem_int[w] @ T_inv)
        snap.bias.append(T_inv.T @ bias_int[s:e] - M_pub @ acc)
        snap.tau.append(T_inv.T @ tau_int[s:e] + M_pub @ acc)
        snap.v_star.append(T @ v_star_int[s:e])
        snap.dofs.append(dofs)
    if contacts is not None or solve:
        _problem_data(solver, state, control, contacts, dt, maps, snap)
    return snap


def _problem_data(solver, state, control, contacts, dt, maps, snap) -> None:
    """Set up and solve the step's SAP problem (``contacts`` may be None), with the step's statistics
    (``solver.stats``, a dropped-contacts warning); gather it per world."""
    sap, topo = solver._sap, solver.topology
    solver._count_dropped_contacts(contacts, warn_stacklevel=5)  # the caller of solver.snapshot
    solver._flag_failed_inputs(state, control)
    sap.setup_constraints(solver.model, state, control, contacts, solver._body_q, solver._tree_ref, solver._dof_S_tree,
                          solver._A_inv_diag, solver._body_free_centripetal, solver._v0, solver._tau, dt,
                          solver._world_failed)  # fmt: skip
    v = sap.solve(solver._rows, solver._dense, solver._v0, solver._v_star, solver._tau, dt,
                  functools.partial(solver._free_motion, dt), solver._world_failed)  # fmt: skip
    solver._flag_failed_results(v)
    sap.complete_parked_rows()  # the parked contacts' Jacobians and compliances, not formed by the solve
    v_int = v.numpy()
    c_world, c_kind = sap.c_world.numpy(), sap.c_kind.numpy()
    c_nnz, c_dof, c_J = sap.c_nnz.numpy(), sap.c_dof.numpy(), sap.c_J.numpy().astype(np.float64)
    # per slot, every constraint's (the constraint_* fields, and the contact_* ones of the contacts among them)
    per_slot = {name: array.numpy().astype(np.float64)
                for name, array in (("impulse", sap.c_gamma), ("compliance", sap.c_R),
                                    ("bias_velocity", sap.c_vhat), ("parameter", sap.c_param))}  # fmt: skip
    failed = solver._world_failed.numpy().astype(bool)
    per_slot["impulse"][(c_world >= 0) & failed[np.maximum(c_world, 0)]] = 0.0  # a failed world has no solution
    contact_names = {"impulse": "contact_impulse", "compliance": "contact_compliance",
                     "bias_velocity": "contact_bias_velocity", "parameter": "contact_friction"}  # fmt: skip
    contact_only = {  # per slot, the contacts' alone
        "contact_index": sap.c_contact.numpy(),
        "contact_frame": sap.c_frame.numpy().astype(np.float64),
        "contact_distance": sap.c_phi.numpy().astype(np.float64),
        "contact_point": sap.c_point.numpy().astype(np.float64),
    }
    # the contact slots are taken in no order of the buffer's (contact_rows): contacts by their index in the
    # buffer, then the other rows by slot
    slot = np.arange(len(c_world))
    order_key = np.where(slot < sap.contact_slots, sap.c_contact.numpy(), sap.contact_slots + slot)
    for w, (T, _acc, _dofs) in enumerate(maps):
        s, e = int(topo.world_dof_start[w]), int(topo.world_dof_start[w + 1])
        T_inv = np.linalg.inv(T)
        slots = np.nonzero(c_world == w)[0]
        slots = slots[np.argsort(order_key[slots], kind="stable")]
        J = np.zeros((3 * len(slots), e - s))
        for row, c in enumerate(slots):
            for k in range(c_nnz[c]):
                J[3 * row : 3 * row + 3, c_dof[c, k] - s] += c_J[c, k]
        J = J @ T_inv
        contacts_w = np.isin(c_kind[slots], CONTACT_KINDS)
        rows = np.repeat(contacts_w, 3)
        snap.contact_jacobian.append(J[rows])
        snap.constraint_kind.append(c_kind[slots].copy())
        snap.constraint_jacobian.append(J)
        for name, values in per_slot.items():
            getattr(snap, f"constraint_{name}").append(values[slots])
            getattr(snap, contact_names[name]).append(values[slots[contacts_w]])
        for name, values in contact_only.items():
            getattr(snap, name).append(values[slots[contacts_w]])
        snap.velocity.append(T @ v_int[s:e].astype(np.float64))


def _velocity_maps(solver, v0_int: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per world: ``T`` with ``q̇_pub = T q̇_int`` (a permutation, plus the free-joint blocks of
    :func:`free_joint_velocity_map`), ``Ṫ q̇_int`` at v0 in public slots, and the public dof of each
    public slot (increasing; a loop-closing joint's dofs, which may lie between, are none)."""
    topo, model = solver.topology, solver.model
    body_q = solver._body_q.numpy().astype(np.float64)
    body_com = model.body_com.numpy().astype(np.float64)
    jtype, jparent, jchild = model.joint_type.numpy(), model.joint_parent.numpy(), model.joint_child.numpy()
    jX_p, jX_c = model.joint_X_p.numpy().astype(np.float64), model.joint_X_c.numpy().astype(np.float64)
    maps = []
    for w in range(topo.world_count):
        s, e = int(topo.world_dof_start[w]), int(topo.world_dof_start[w + 1])
        n = e - s
        dofs = np.sort(topo.dof_public[s:e])
        slot = np.searchsorted(dofs, topo.dof_public[s:e])  # public slot of each internal dof
        T = np.zeros((n, n))
        acc = np.zeros(n)
        i = 0
        while i < n:
            j = int(topo.dof_joint[s + i])
            if jtype[j] in (JOINT_FREE, JOINT_DISTANCE):
                r = _free_joint_com_in_parent(body_q, body_com, jparent[j], jchild[j], jX_p[j], jX_c[j])
                ints = np.arange(i, i + 6)
                pubs = np.sort(slot[ints])  # the joint's public slots, order [v, ω]
                T[np.ix_(pubs, ints)] = free_joint_velocity_map(r)
                w0 = v0_int[s + i : s + i + 3]
                acc[pubs[0:3]] = np.cross(w0, np.cross(w0, r))
                i += 6
            else:
                T[slot[i], i] = 1.0
                i += 1
        maps.append((T, acc, dofs))
    return maps


def _free_joint_com_in_parent(body_q, body_com, parent, child, X_p, X_c) -> np.ndarray:
    """COM of a free joint's child relative to the joint child frame origin M, in the parent frame F [m]."""
    X_WC = body_q[child]
    R_WC = quat_to_matrix(X_WC[3:])
    R_WF = quat_to_matrix(X_p[3:])
    if parent >= 0:
        R_WF = quat_to_matrix(body_q[parent][3:]) @ R_WF
    p_M = X_WC[:3] + R_WC @ X_c[:3]
    c = X_WC[:3] + R_WC @ body_com[child]
    return R_WF.T @ (c - p_M)
