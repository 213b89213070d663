"""``SolverSAP``: articulated rigid bodies in reduced coordinates, stepped as in the seed (§5).

One step: branch FK at ``q0`` (poses, ``S``, twists, bias accelerations; public → internal velocities)
→ RNE bias forces and CRBA mass matrix about each tree's COM → free motion
``v* = v0 + Δt A⁻¹ τ`` (dense tile Cholesky or sparse LDLᵀ per tree) → ``q1`` from ``v`` →
FK at ``q1`` (internal → public velocities). Contacts and joint-space constraints join in the SAP
solve of the next development stage; until then ``v = v*`` exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import newton
import numpy as np
import warp as wp

from . import dynamics, factorization, integration, kinematics
from .conventions import free_joint_velocity_map
from .options import SapOptions
from .sap import SapSolver
from .spatial import Inertia10
from .topology import JOINT_DISTANCE, JOINT_FREE, ModelError, bucket_views, build_topology, to_device


@dataclass
class SolverStats:
    """Per-world results of the last step, NumPy arrays of length ``world_count``.

    Attributes:
        iterations: Newton iterations of the SAP solve (0: a world without constraints needs none
            in the v* mode).
        residual: Last scaled optimality residual ``‖D ∇ℓ‖`` of the SAP solve.
        converged: False where the world failed (non-finite state or result) or did not converge.
        failed: True where the world produced a non-finite velocity; other worlds are unaffected.
        num_contacts: Contacts of the world that entered the SAP problem.
        contact_buffer_full: The step's ``Contacts`` buffer was full, so Newton's pipeline may have
            dropped contacts (it does not count them); a ``RuntimeWarning`` was issued too.
    """

    iterations: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    failed: np.ndarray
    num_contacts: np.ndarray
    contact_buffer_full: bool = False


@dataclass
class SapSnapshot:
    """Dynamics of one state, one float64 NumPy array per world, in Newton's public generalized
    coordinates (the order and meaning of ``State.joint_qd``, dual to ``Control.joint_f``).

    Attributes:
        mass_matrix: ``M(q)`` [kg, kg·m, kg·m²], n×n per world, armature included, damping not.
        bias: ``b(q, v)`` with ``M q̈ + b = τ`` [N, N·m]: gravity, Coriolis and gyroscopic terms.
        tau: The step's right-hand side ``joint_f + Jᵀ body_f − b − D v0 − K (q0 + Δt v0 − q_rest)``
            [N, N·m] (D, K: joint damping and stiffness; K acts on scalar coordinates only).
        v_star: Free-motion velocity ``v0 + Δt (M + Δt D + Δt² K)⁻¹ τ`` (public convention at ``q0``).
        dof_start: Per world, the first public dof index (``joint_qd[dof_start[w] : dof_start[w] + n]``).

    Internally the solver uses ``[ω; v_M]`` for FREE joints (see ``conventions.py``); with
    ``q̇_pub = T q̇_int`` the public quantities are ``M_pub = T⁻ᵀ M_int T⁻¹`` and
    ``b_pub = T⁻ᵀ b_int − M_pub Ṫ q̇_int``, ``τ_pub = T⁻ᵀ τ_int + M_pub Ṫ q̇_int`` (``Ṫ q̇_int`` is
    ``ω × (ω × r)`` in the linear slots of each free joint, r = COM − M in F).
    """

    mass_matrix: list[np.ndarray]
    bias: list[np.ndarray]
    tau: list[np.ndarray]
    v_star: list[np.ndarray]
    dof_start: list[int]


class SolverSAP(newton.solvers.SolverBase):
    """SAP time stepper for articulated rigid bodies (reduced coordinates) in Newton models.

    Drop-in Newton solver: ``solver.step(state_in, state_out, control, contacts, dt)``. Supports
    REVOLUTE, PRISMATIC, BALL, FREE, FIXED, D6 and DISTANCE (stepped as FREE) joints; any number of
    (also different) worlds in one model. Joint damping and joint stiffness (toward
    ``joint_rest_q``, scalar coordinates) are implicit (``A = M + Δt·D + Δt²·K``), armature joins the
    mass matrix; gravity, Coriolis, ``Control.joint_f`` and ``State.body_f`` are explicit. Contacts
    from Newton's collision pipeline enter one convex SAP problem per world (regularized friction
    cones), solved by Newton's method with an exact line search.

    Args:
        model: The Newton model to simulate.
        **options: Keyword options, see :class:`~newton_sap.options.SapOptions` (units and defaults).
    """

    def __init__(self, model: newton.Model, **options):
        super().__init__(model)
        self.options = SapOptions(**options)
        self._build()

    # ------------------------------------------------------------------ set-up
    def _build(self) -> None:
        model = self.model
        device = model.device
        _validate_materials(model, self.options)
        self.topology = build_topology(model, self.options.dense_max_dofs, self.options.dense_world_max_dofs)
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
        self._v0 = zeros(ndof)
        self._f = zeros(ndof)
        self._tau = zeros(ndof)
        self._v_star = zeros(ndof)
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
        self._zero_joint_f = zeros(max(model.joint_dof_count, 1))
        self._zero_body_f = zeros(nb, wp.spatial_vector)
        self._scratch_body_qd = zeros(nb, wp.spatial_vector)
        self._default_control = model.control(clone_variables=False)
        self._sap = SapSolver(topo, self._topo, device, self.options)
        self._sap_ran = False
        self._contact_buffer_full = False

    def notify_model_changed(self, flags: int) -> None:
        """Rebuild every table and buffer from the model (topology, masses, axes may all have changed)."""
        self._build()

    # ------------------------------------------------------------------ stepping
    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (Newton's public convention).

        ``contacts``: Newton's ``Contacts`` from ``CollisionPipeline.collide(state_in, contacts)``, or
        None. Per-contact forces are written to ``contacts.rigid_contact_force`` [N] (on shape 1)."""
        dt = self._check_dt(dt)
        control = control if control is not None else self._default_control
        momentum = self.options.momentum_mode
        self._dynamics(state_in, control.joint_f, state_in.body_f, dt, passive=1, include_external=1)
        if not momentum:
            self._free_motion(dt)
        self._sap_ran = contacts is not None or momentum
        v = self._v_star
        if self._sap_ran:
            self._check_contact_capacity(contacts)
            self._sap.setup_contacts(self.model, contacts, self._body_q, self._dof_S, self._rows, dt)
            v = self._sap.solve(self._rows, self._dense, self._v0, self._v_star, self._tau, dt)
            self._sap.write_contact_forces(contacts, dt)
        self._flag_failed_worlds(v)
        self._integrate(state_in, state_out, dt, v)
        if self.options.raise_on_nonconvergence:
            stats = self.stats
            if not stats.converged.all():
                bad = np.nonzero(~stats.converged)[0]
                raise RuntimeError(f"SAP did not converge in worlds {bad.tolist()} (residuals {stats.residual[bad]})")

    def _check_contact_capacity(self, contacts) -> None:
        """Newton's pipeline stops writing contacts when ``rigid_contact_max`` is reached, without
        counting what it dropped: a full buffer is reported (stats and a warning), never silent."""
        self._contact_buffer_full = False
        if contacts is None or contacts.rigid_contact_max == 0:
            return
        count = int(contacts.rigid_contact_count.numpy()[0])
        if count >= contacts.rigid_contact_max:
            self._contact_buffer_full = True
            warnings.warn(
                f"contact buffer full ({count} of {contacts.rigid_contact_max} slots): contacts may have been "
                "dropped; give the CollisionPipeline a larger rigid_contact_max",
                RuntimeWarning,
                stacklevel=3,
            )

    def _check_dt(self, dt: float) -> float:
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"dt must be a positive finite time step [s], got {dt}")
        return dt

    def _dynamics(self, state, joint_f, body_f, dt: float, passive: int, include_external: int) -> None:
        """FK, RNE and CRBA at ``state``: fills A (sparse rows and dense blocks), τ and v0; ``passive``
        adds the implicit joint damping and stiffness (see ``dynamics.mass_matrix_rows``)."""
        model, topo, T = self.model, self.topology, self._topo
        device = model.device
        if joint_f is None:
            joint_f = self._zero_joint_f
        if body_f is None:
            body_f, include_external = self._zero_body_f, 0
        self._fk(state.joint_q, state.joint_qd, joint_f, body_q_out=self._body_q)
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
                T.tree_bodies, T.body_tree, T.body_world, model.body_mass, model.body_com, model.body_inertia,
                model.gravity, T.body_joint, model.joint_type, model.joint_qd_start, include_external, self._body_q,
                self._body_twist, self._body_bias_acc, body_f, joint_f, self._tree_ref,
            ],
            outputs=[self._composite_inertia, self._composite_force],
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
                T.dof_dense_offset, T.dof_local, T.tree_dof_count, T.body_tree, model.joint_armature,
                model.joint_damping, model.joint_stiffness, model.joint_rest_q, T.dof_coord, dt, passive,
                state.joint_q, self._v0, self._body_q, self._dof_S, self._tree_ref, self._composite_inertia,
                self._composite_force, self._f,
            ],
            outputs=[self._rows, self._dense, self._tau],
            device=device,
        )  # fmt: skip

    def _fk(self, joint_q, public_qd, public_f, body_q_out, body_qd_out=None):
        model, topo, T = self.model, self.topology, self._topo
        if len(topo.branch_start) <= 1:
            return
        wp.launch(
            kinematics.forward_kinematics,
            dim=len(topo.branch_start) - 1,
            inputs=[
                T.branch_start, T.branch_joints, model.joint_type, model.joint_parent, model.joint_child,
                model.joint_X_p, model.joint_X_c, model.joint_axis, model.joint_dof_dim, model.joint_q_start,
                model.joint_qd_start, T.joint_dof_internal_start, model.body_com,
                int(body_qd_out is not None), joint_q, public_qd, public_f,
            ],
            outputs=[
                body_q_out, self._body_twist, self._body_bias_acc, self._dof_S, self._v0, self._f,
                body_qd_out if body_qd_out is not None else self._scratch_body_qd,
            ],
            device=model.device,
        )  # fmt: skip

    def _free_motion(self, dt: float) -> None:
        """``v* = v0 + Δt A⁻¹ τ`` per tree (dense buckets, then sparse levels)."""
        T, device = self._topo, self.model.device
        for n, view in self._dense_views.items():
            wp.launch_tiled(
                factorization.dense_free_motion_kernel(n),
                dim=view.shape[0],
                inputs=[self._bucket_dof_start[n], dt, view, self._tau, self._v0],
                outputs=[self._v_star],
                block_dim=64 if device.is_cpu else 128,
                device=device,
            )
        if not T.sparse_dof_levels:
            return
        wp.copy(self._factor, self._rows)
        wp.copy(self._y, self._tau)
        for level in reversed(T.sparse_dof_levels):
            wp.launch(
                factorization.sparse_factor_level,
                dim=level.shape[0],
                inputs=[level, T.dof_parent, T.dof_depth, T.dof_row_start],
                outputs=[self._factor, self._y],
                device=device,
            )
        for level in T.sparse_dof_levels:
            wp.launch(
                factorization.sparse_solve_level,
                dim=level.shape[0],
                inputs=[level, T.dof_parent, T.dof_depth, T.dof_row_start, dt, self._factor, self._y, self._v0],
                outputs=[self._x, self._v_star],
                device=device,
            )

    def _flag_failed_worlds(self, v) -> None:
        self._world_failed.zero_()
        if self.topology.dof_count:
            wp.launch(
                _flag_nonfinite,
                dim=self.topology.dof_count,
                inputs=[self._topo.dof_world, v],
                outputs=[self._world_failed],
                device=self.model.device,
            )

    def _integrate(self, state_in, state_out, dt: float, v) -> None:
        model = self.model
        if model.joint_count:
            wp.launch(
                integration.integrate_joints,
                dim=model.joint_count,
                inputs=[model.joint_type, model.joint_q_start, model.joint_qd_start, model.joint_dof_dim,
                        self._topo.joint_dof_internal_start, model.joint_child, model.joint_X_c, model.body_com, dt,
                        state_in.joint_q, self._v0, v],
                outputs=[state_out.joint_q, state_out.joint_qd],
                device=model.device,
            )  # fmt: skip
        # body arrays of state_out from its joint coordinates, exactly as Newton's FK would make them
        self._fk(state_out.joint_q, state_out.joint_qd, self._zero_joint_f, state_out.body_q, state_out.body_qd)

    # ------------------------------------------------------------------ results
    @property
    def stats(self) -> SolverStats:
        """Per-world results of the last step (see :class:`SolverStats`)."""
        failed = self._world_failed.numpy().astype(bool)
        nw = self.topology.world_count
        if not self._sap_ran:
            return SolverStats(
                iterations=np.zeros(nw, np.int32),
                residual=np.zeros(nw, np.float64),
                converged=~failed,
                failed=failed,
                num_contacts=np.zeros(nw, np.int32),
            )
        sap = self._sap
        return SolverStats(
            iterations=sap.world_iterations.numpy().copy(),
            residual=sap.world_residual.numpy().astype(np.float64),
            converged=sap.world_converged.numpy().astype(bool) & ~failed,
            failed=failed,
            num_contacts=sap.world_contact_count.numpy().copy(),
            contact_buffer_full=self._contact_buffer_full,
        )

    def snapshot(self, state, control=None, dt: float = 1e-3) -> SapSnapshot:
        """Diagnostic snapshot of the dynamics at ``state`` (see :class:`SapSnapshot`); ``dt`` [s] is
        the step used for ``v_star``. Runs on the solver's device and copies to NumPy (not for hot
        loops)."""
        dt = self._check_dt(dt)
        control = control if control is not None else self._default_control
        topo = self.topology
        # bias: the same pipeline with no applied or passive force gives τ = −b and A = M
        self._dynamics(state, None, None, dt, passive=0, include_external=0)
        mass_int = self._dense_matrices_internal()
        bias_int = -self._tau.numpy()[: topo.dof_count].astype(np.float64)
        self._dynamics(state, control.joint_f, state.body_f, dt, passive=1, include_external=1)
        tau_int = self._tau.numpy()[: topo.dof_count].astype(np.float64)
        self._free_motion(dt)
        v_star_int = self._v_star.numpy()[: topo.dof_count].astype(np.float64)
        v0_int = self._v0.numpy()[: topo.dof_count].astype(np.float64)
        return self._to_public_snapshot(state, mass_int, bias_int, tau_int, v_star_int, v0_int)

    def _dense_matrices_internal(self) -> list[np.ndarray]:
        """Per world, the dense internal mass matrix assembled from the sparse rows (float64)."""
        topo = self.topology
        rows = self._rows.numpy().astype(np.float64)
        out = []
        for w in range(topo.world_count):
            s, e = int(topo.world_dof_start[w]), int(topo.world_dof_start[w + 1])
            M = np.zeros((e - s, e - s))
            for i in range(s, e):
                j, rs, di = i, topo.dof_row_start[i], topo.dof_depth[i]
                while j >= 0:
                    M[i - s, j - s] = M[j - s, i - s] = rows[rs + di - topo.dof_depth[j]]
                    j = topo.dof_parent[j]
            out.append(M)
        return out

    def _to_public_snapshot(self, state, mass_int, bias_int, tau_int, v_star_int, v0_int) -> SapSnapshot:
        """Map internal per-world quantities to Newton's public coordinates (see :class:`SapSnapshot`)."""
        topo, model = self.topology, self.model
        body_q = self._body_q.numpy()
        body_com = model.body_com.numpy()
        jtype = model.joint_type.numpy()
        jparent = model.joint_parent.numpy()
        jX_p = model.joint_X_p.numpy()
        jX_c = model.joint_X_c.numpy()
        jchild = model.joint_child.numpy()
        snap = SapSnapshot([], [], [], [], [])
        for w in range(topo.world_count):
            s, e = int(topo.world_dof_start[w]), int(topo.world_dof_start[w + 1])
            n = e - s
            pub = topo.dof_public[s:e]
            pub0 = int(pub.min()) if n else 0
            # permutation P (internal -> public slot) and the free-joint maps T
            Tm = np.zeros((n, n))
            acc = np.zeros(n)  # Ṫ q̇_int in public slots
            handled = np.zeros(n, bool)
            for i in range(n):
                if handled[i]:
                    continue
                j = int(topo.dof_joint[s + i])
                if jtype[j] in (JOINT_FREE, JOINT_DISTANCE):
                    r = _free_joint_com_in_parent(body_q, body_com, jparent[j], jchild[j], jX_p[j], jX_c[j])
                    Tf = free_joint_velocity_map(r)
                    ints = np.arange(i, i + 6)
                    pubs = np.sort(pub[ints]) - pub0  # the joint's public slots, order [v, ω]
                    Tm[np.ix_(pubs, ints)] = Tf
                    wv = v0_int[s + i : s + i + 3]
                    acc[pubs[0:3]] = np.cross(wv, np.cross(wv, r))
                    handled[ints] = True
                else:
                    Tm[pub[i] - pub0, i] = 1.0
                    handled[i] = True
            Tinv = np.linalg.inv(Tm)
            M_pub = Tinv.T @ mass_int[w] @ Tinv
            snap.mass_matrix.append(M_pub)
            snap.bias.append(Tinv.T @ bias_int[s:e] - M_pub @ acc)
            snap.tau.append(Tinv.T @ tau_int[s:e] + M_pub @ acc)
            snap.v_star.append(Tm @ v_star_int[s:e])
            snap.dof_start.append(pub0)
        return snap


def _validate_materials(model: newton.Model, options: SapOptions) -> None:
    """Shape materials the contact model reads must be physical; the error names the shape."""
    if model.shape_count == 0:
        return
    labels = list(model.shape_label)
    ke = model.shape_material_ke.numpy()
    kd = model.shape_material_kd.numpy()
    mu = model.shape_material_mu.numpy()
    for s in range(model.shape_count):
        name = f"shape {s} ('{labels[s] if s < len(labels) else s}')"
        if not mu[s] >= 0.0:
            raise ModelError(f"{name} has negative friction coefficient {mu[s]}")
        uses_ke = options.contact_stiffness is None or options.contact_dissipation_time is None
        if uses_ke and not ke[s] > 0.0:
            raise ModelError(f"{name} has contact stiffness shape_material_ke = {ke[s]} [N/m]; it must be > 0")
        if options.contact_dissipation_time is None and not kd[s] >= 0.0:
            raise ModelError(f"{name} has negative contact damping shape_material_kd = {kd[s]}")


def _free_joint_com_in_parent(body_q, body_com, parent, child, X_p, X_c) -> np.ndarray:
    """COM of a free joint's child relative to the joint child frame origin M, in the parent frame F [m]."""
    X_WC = body_q[child]
    X_WP = body_q[parent] if parent >= 0 else np.array([0, 0, 0, 0, 0, 0, 1.0])
    X_WF = _tf_mul(X_WP, X_p)
    X_WM = _tf_mul(X_WC, X_c)
    c = X_WC[:3] + _quat_rotate(X_WC[3:], body_com[child])
    return _quat_rotate(_quat_conj(X_WF[3:]), c - X_WM[:3])


def _quat_rotate(q, v):
    q = np.asarray(q, np.float64)
    u, s = q[:3], q[3]
    return 2.0 * np.dot(u, v) * u + (s * s - np.dot(u, u)) * np.asarray(v) + 2.0 * s * np.cross(u, v)


def _quat_conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


def _quat_mul(a, b):
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - np.dot(av, bv)]])


def _tf_mul(a, b):
    return np.concatenate([a[:3] + _quat_rotate(a[3:], b[:3]), _quat_mul(a[3:], b[3:])])


@wp.kernel
def _flag_nonfinite(
    dof_world: wp.array(dtype=wp.int32),
    v_in: wp.array(dtype=float),
    world_failed_out: wp.array(dtype=wp.int32),
):
    """Mark the world of every dof whose solved velocity is NaN or infinite."""
    i = wp.tid()
    if not wp.isfinite(v_in[i]):
        world_failed_out[dof_world[i]] = 1
