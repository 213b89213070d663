"""Contact constraint rows from Newton's ``Contacts`` (SAP.md §3-§4), frozen at ``q0`` for a step.

Per contact ``i < rigid_contact_count`` of Newton's buffer (a thread takes a run of contacts), into a slot of
the solver's contact slots (as many as the buffer's capacity). With parking (below) the contacts that join the
Newton iterations fill the slots from the first on, the parked ones from the last back, in the order the slots
are taken (``contact_slot`` maps each of the step's contacts to its slot, -1 for none, and keeps an earlier step's
entries past the contact count; ``c_contact`` maps a slot to its contact). So
the rows that the iterations sweep lie together at the front and each per-row array streams through them,
instead of holding them scattered among the parked ones (a landing 50-sphere pile: about 110 such rows per world
among 700 contacts). On the CPU a kernel's threads run in order and the slots follow the contacts' order; on a
GPU their order within each part varies from run to run, as the order of the solver's atomic sums does. Without
parking every row is swept, and contact ``i`` keeps slot ``i``.

* bodies and world from the two shapes (``shape_body``; -1 or a static body: no dofs); a contact whose
  shape indices are not both in ``[0, shape_count)`` (a ``Contacts`` of another model), whose sides are both
  immovable (static, or moved by kinematic bodies' dofs alone: ``kinematic_bodies``), or whose sides move as one
  (bodies welded together: the same last dof, a Jacobian of zero entries), is skipped;
* the signed distance ``φ0 = n·(p1 − p0) − (r0 + r1)`` [m] between the shapes' contact surfaces, from
  the body-frame points, the normal (shape 0 → shape 1) and Newton's ``rigid_contact_margin0/1``
  (effective radius plus the shape's ``margin``: as in Newton's other solvers, a margin offsets the
  surface outward, so shapes rest ``margin_0 + margin_1`` apart); contacts inside the detection gap
  (φ0 > 0) are kept;
* the contact frame ``R_WC = [t1 t2 n]`` and point ``p`` (midway between the two surfaces; in the detection gap
  with one side outside the problem, on the other side's surface: ``contact_point``);
* the Jacobian ``v_c = R_WCᵀ (v_1(p) − v_0(p))`` as sparse entries (dof, 3-vector): for each dof k on
  the chain of body 1 (+) and body 0 (−) up to their common ancestor, ``J_k = ± R_WCᵀ (v̄_k + ω_k × (p − r))``
  with ``S̄_k = [ω_k; v̄_k]`` about the tree's point r (``jacobian.chain_rows``), and ``c_vc = J v0`` at the
  step's start velocity (every row builder leaves it: the Newton loop's warm start reads it); kinematic bodies'
  dofs have no entries, their velocity ``J_k v0_k`` is subtracted from v̂ instead, as is the velocity the
  position update gives the two bodies beyond ``J v`` (``R_WCᵀ (u_1 − u_0)``, ``jacobian.offset_velocity``);
* the Delassus estimate ``w = ‖Σ_k J_k J_kᵀ / A_kk‖_F / 3`` [kg⁻¹], the compliance R (``w`` floored in
  ``contact_compliance``), the bias velocity v̂ and the friction coefficient μ from the pair's materials
  (or the solver's overrides); with Newton's ``rigid_contact_surface_velocity`` (meshes with
  ``enable_surface_velocity``, e.g. a conveyor belt) v̂ less its tangential part: the impulse depends on
  ``v̂ − v_c``, and the surfaces' material slides at ``v_c`` plus that velocity;
* with ``lagged = 1`` (``contact_approximation="lagged"``) the rows are ``CONTACT_LAGGED``, their parameter the
  friction bound ``μ n0`` (``lagged_contact.lagged_normal_impulse``: the elastic normal impulse at φ0 with the
  stiffness of the last step, whose Δt ``last_dt[0]`` holds, 0 before the first; 0 in the detection gap) instead
  of μ;
* with ``park = 1``, whether the contact is distant (``contact_is_distant`` at the step's start velocity
  ``v0``, its ``v_c0`` from the body twists, ``jacobian.body_chain_twists``): ``c_parked``, with ``γ = 0`` (the
  answer's impulse), ``c_vc = v_c0`` and what the check needs (frame, point, v̂, μ or a lagged row's bound 0, so
  that the check's ``contact_separates`` tests its normal alone; and φ0; the twists include the kinematic bodies'
  dofs and the FREE joints' offsets, so v̂ is not shifted by them until the row is completed), but neither Jacobian
  entries nor Delassus estimate nor R or G (they cost most of a row: no kernel reads them for a parked row); the
  solver leaves such rows out of the Newton iterations and checks them at the solution from the body twists there
  (``sap.py``). A row the check finds acting, or every parked row for a snapshot, is
  completed by this kernel again in a completing mode (its entries and R; the iterations then evaluate its γ
  and G)."""

import warp as wp

from .constraints.dispatch import CONTACT, CONTACT_LAGGED, thread_slots
from .constraints.friction_cone import contact_bias_velocity, contact_compliance, contact_is_distant
from .constraints.lagged_contact import lagged_normal_impulse
from .dynamics import body_gravity
from .finite import all_finite, nonfinite_part, vector_nonfinite_part
from .jacobian import chain_rows, offset_velocity, point_velocity, tangent_frame
from .kinematic_bodies import side_moves

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def pair_parameters(
    shape0: int,
    shape1: int,
    shape_ke: wp.array(dtype=float),
    shape_kd: wp.array(dtype=float),
    shape_mu: wp.array(dtype=float),
    shape_condim: wp.array(dtype=wp.int32),
    shape_priority: wp.array(dtype=wp.int32),
    stiffness_override: float,
    dissipation_override: float,
):
    """Pair stiffness ``k = kA kB / (kA + kB)`` [N/m], dissipation time ``τ = τA + τB`` [s] with
    ``τ = kd / ke`` per shape, friction ``μ = 2 μA μB / (μA + μB)``; overrides > 0 (k) or ≥ 0 (τ) win. μ = 0 for a
    pair whose MuJoCo contact dimension is 1 (frictionless, :func:`pair_condim`). The series
    forms as sums of reciprocals, which stay finite for every finite material (``kA kB`` overflows float32 from
    about 1.8e19 N/m). Also the ``finite.nonfinite_part`` sum of the materials it used: a NaN μ would give μ = 0,
    an infinite ke a finite k, so the results alone do not show them."""
    kA = shape_ke[shape0]
    kB = shape_ke[shape1]
    kdA = shape_kd[shape0]
    kdB = shape_kd[shape1]
    muA = shape_mu[shape0]
    muB = shape_mu[shape1]
    used = nonfinite_part(muA) + nonfinite_part(muB)
    k = stiffness_override
    if stiffness_override <= 0.0:
        k = 1.0 / (1.0 / kA + 1.0 / kB)
        used += nonfinite_part(kA) + nonfinite_part(kB)
    tau = dissipation_override
    if dissipation_override < 0.0:
        tau = kdA / kA + kdB / kB
        used += nonfinite_part(kA) + nonfinite_part(kB) + nonfinite_part(kdA) + nonfinite_part(kdB)
    mu = float(0.0)
    if muA > 0.0 and muB > 0.0 and pair_condim(shape0, shape1, shape_condim, shape_priority) != 1:
        mu = 2.0 / (1.0 / muA + 1.0 / muB)
    return k, tau, mu, used


@wp.func
def pair_condim(
    shape0: int, shape1: int, shape_condim: wp.array(dtype=wp.int32), shape_priority: wp.array(dtype=wp.int32)
):
    """MuJoCo's contact dimension of a pair (MJCF geom ``condim``: 1 frictionless, 3 with friction; 4 and 6 add the
    torsional and rolling friction this solver does not model): the higher-priority shape's (``priority``), the
    larger of the two at equal priority (``mujoco_options.contact_dimensions``)."""
    p0 = shape_priority[shape0]
    p1 = shape_priority[shape1]
    if p0 > p1:
        return shape_condim[shape0]
    if p1 > p0:
        return shape_condim[shape1]
    return wp.max(shape_condim[shape0], shape_condim[shape1])


@wp.func
def per_contact_parameters(k: float, tau: float, mu: float, stiffness: float, damping: float, friction_scale: float):
    """A pair's ``(k, τ, μ)`` with a contact's own properties, in Newton's convention (``Contacts`` with
    ``per_contact_shape_properties``, which its pipeline fills for hydroelastic shapes): ``stiffness`` > 0 [N/m]
    replaces k, ``damping`` > 0 [N·s/m] makes τ = damping / k, ``friction_scale`` > 0 scales μ; zeros keep
    the pair's values. Also the ``finite.nonfinite_part`` sum of the three (a NaN one would count as unset)."""
    if stiffness > 0.0:
        k = stiffness
    if damping > 0.0:
        tau = damping / k
    if friction_scale > 0.0:
        mu = mu * friction_scale
    return k, tau, mu, nonfinite_part(stiffness) + nonfinite_part(damping) + nonfinite_part(friction_scale)


@wp.func
def contact_finite(
    normal: wp.vec3, phi0: float, p: wp.vec3, v_hat: wp.vec3, k: float, tau: float, mu: float, used: float
):
    """Whether a contact's geometry and parameters are finite: Newton's ``normal`` as given (``wp.normalize`` makes
    a NaN one zero), φ0 [m] and the point p [m], which carry its points and margins, v̂ [m/s] its surface velocity,
    ``(k, τ, μ)`` and ``used``, the ``nonfinite_part`` sum of the materials and per-contact properties they came from
    (``pair_parameters``, ``per_contact_parameters``). A NaN there would not show in a velocity: every test of the
    cone's projection fails on it, so the row's impulse is 0 and the contact switched off."""
    scalars = used + nonfinite_part(phi0) + nonfinite_part(k) + nonfinite_part(tau) + nonfinite_part(mu)
    return all_finite(scalars + vector_nonfinite_part(normal) + vector_nonfinite_part(p) + vector_nonfinite_part(v_hat))


@wp.func
def contact_velocity_from_twists(
    body0: int,
    body1: int,
    p: wp.vec3,
    R_WC: wp.mat33,
    body_tree: wp.array(dtype=wp.int32),
    tree_ref: wp.array(dtype=wp.vec3),
    body_twist: wp.array(dtype=wp.spatial_vector),
):
    """A contact's ``v_c = R_WCᵀ (v_1(p) − v_0(p))`` [m/s] from the body twists (``body_chain_twists``): ``J v``
    without Jacobian entries (bodies -1 or outside the trees do not move)."""
    v_rel = point_velocity(body1, p, body_tree, tree_ref, body_twist)
    v_rel -= point_velocity(body0, p, body_tree, tree_ref, body_twist)
    return wp.transpose(R_WC) * v_rel


@wp.func
def contact_point(surface0: wp.vec3, surface1: wp.vec3, phi0: float, moves0: int, moves1: int):
    """Where a contact's impulse acts [m]: midway between the two surfaces' points (Drake's point contact), except
    in the detection gap (``φ0 > 0``) when only one side has dofs of the problem: there, on that side's surface.
    Such a body closes the gap itself (or a static or kinematic body reaches it), so the contact happens at its own
    surface point; the midpoint would lengthen its lever arm by ``φ0 / 2`` (a sphere landing at 3 m/s with 2 m/s
    across, Δt 0.01: 2.5 % too fast a roll after)."""
    if phi0 > 0.0 and moves0 != moves1:
        if moves0 == 1:
            return surface0
        return surface1
    return 0.5 * (surface0 + surface1)


ROWS_BUILD = wp.constant(0)
"""``contact_rows`` mode: every contact's row; a distant one parked without Jacobian entries or compliance."""
ROWS_COMPLETE_UNPARKED = wp.constant(1)
"""Mode: the rows a check unparked (``c_parked = UNPARKED``) get their entries and R and join the iterations."""
ROWS_COMPLETE_PARKED = wp.constant(2)
"""Mode: every parked row gets its entries and R and stays parked (a snapshot's constraint data)."""

FRONT = wp.constant(0)  # contact_slot_fill: slots taken from the front (rows in the Newton iterations)
BACK = wp.constant(1)  # contact_slot_fill: slots taken from the back (parked rows)


@wp.func
def first_parked_slot(slot_count: int, contact_slot_fill: wp.array(dtype=wp.int32)):
    """The first of the parked contacts' slots, the last ``contact_slot_fill[BACK]`` of the ``slot_count`` contact
    slots (``contact_rows``)."""
    return slot_count - contact_slot_fill[BACK]


PARKED = wp.constant(1)  # c_parked: out of the Newton iterations, entries and R not formed unless completed
UNPARKED = wp.constant(2)  # c_parked: would act at the solution (check_parked_contacts), row to complete


@wp.func
def contact_gravity(
    b0: int,
    b1: int,
    body_tree: wp.array(dtype=wp.int32),
    gravity: wp.array(dtype=wp.vec3),
    newton_body_world: wp.array(dtype=wp.int32),
):
    """The larger gravity magnitude [m/s²] of a contact's bodies in trees (``dynamics.body_gravity``: a global
    body of a one-world model falls with Newton's global gravity, not its solver world's)."""
    g = float(0.0)
    if b0 >= 0 and body_tree[b0] >= 0:
        g = wp.length(body_gravity(gravity, newton_body_world, b0))
    if b1 >= 0 and body_tree[b1] >= 0:
        g = wp.max(g, wp.length(body_gravity(gravity, newton_body_world, b1)))
    return g


@wp.kernel
def contact_rows(
    # model
    shape_body: wp.array(dtype=wp.int32),
    shape_ke: wp.array(dtype=float),
    shape_kd: wp.array(dtype=float),
    shape_mu: wp.array(dtype=float),
    shape_condim: wp.array(dtype=wp.int32),
    shape_priority: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    body_last_dof: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    gravity: wp.array(dtype=wp.vec3),
    newton_body_world: wp.array(dtype=wp.int32),
    # options
    mode: int,
    slots_per_thread: int,
    slot_count: int,
    stiffness_override: float,
    dissipation_override: float,
    beta: float,
    near_rigid_dt: float,
    sigma: float,
    dt: float,
    park: int,
    lagged: int,
    # inputs
    last_dt: wp.array(dtype=float),
    contact_count: wp.array(dtype=wp.int32),
    contact_shape0: wp.array(dtype=wp.int32),
    contact_shape1: wp.array(dtype=wp.int32),
    contact_point0: wp.array(dtype=wp.vec3),
    contact_point1: wp.array(dtype=wp.vec3),
    contact_normal: wp.array(dtype=wp.vec3),
    contact_margin0: wp.array(dtype=float),
    contact_margin1: wp.array(dtype=float),
    contact_stiffness: wp.array(dtype=float),
    contact_damping: wp.array(dtype=float),
    contact_friction_scale: wp.array(dtype=float),
    contact_surface_velocity: wp.array(dtype=wp.vec3),
    body_q: wp.array(dtype=wp.transform),
    tree_ref: wp.array(dtype=wp.vec3),
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    A_inv_diag: wp.array(dtype=float),
    body_free_centripetal: wp.array(dtype=wp.vec3),
    v0: wp.array(dtype=float),
    body_twist: wp.array(dtype=wp.spatial_vector),
    # outputs (c_parked read and updated; contact_slot_out and c_contact written by ROWS_BUILD, c_contact read by the
    # completing modes; contact_slot_fill zeroed before)
    contact_slot_out: wp.array(dtype=wp.int32),
    contact_slot_fill: wp.array(dtype=wp.int32),
    c_contact: wp.array(dtype=wp.int32),
    c_world_out: wp.array(dtype=wp.int32),
    c_kind_out: wp.array(dtype=wp.int32),
    c_frame_out: wp.array(dtype=wp.mat33),
    c_R_out: wp.array(dtype=wp.vec3),
    c_vhat_out: wp.array(dtype=wp.vec3),
    c_param_out: wp.array(dtype=float),
    c_phi_out: wp.array(dtype=float),
    c_point_out: wp.array(dtype=wp.vec3),
    c_nnz_out: wp.array(dtype=wp.int32),
    c_dof_out: wp.array2d(dtype=wp.int32),
    c_J_out: wp.array2d(dtype=wp.vec3),
    c_parked: wp.array(dtype=wp.int32),
    c_vc_out: wp.array(dtype=wp.vec3),
    c_gamma_out: wp.array(dtype=wp.vec3),
    c_G_out: wp.array(dtype=wp.mat33),
    world_contact_count: wp.array(dtype=wp.int32),
    world_parked_count: wp.array(dtype=wp.int32),
    world_failed_out: wp.array(dtype=wp.int32),
):
    """The rows of this thread's run (``thread_slots`` over ``slot_count``, the buffer's capacity, see the module
    doc). ``ROWS_BUILD``: the run's part below the buffer's ``contact_count``, a run of contacts (the threads past the
    count have nothing to do); every contact in use takes a slot, from the front or, parked, from the back (the
    slots between keep what an earlier step left there until ``count_constraints`` marks them unused); with
    ``park = 1`` a distant contact (``contact_is_distant`` at ``v0``, its velocity from the body twists at ``v0``,
    ``body_chain_twists``) is parked: γ = 0 and ``v_c`` written, no entries, R or G; a contact whose geometry or
    parameters are not finite (``contact_finite``) marks its world in ``world_failed_out``. The completing modes: a
    run of slots, of which they visit the parked part (the last ``contact_slot_fill[BACK]``) and form the entries and
    R of the rows they select (same geometry, same walk), leaving the rest of each row, and every other slot, as it
    is."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, slot_count)
    if mode == ROWS_BUILD:  # the contacts in the buffer only (Newton leaves the entries after its count stale)
        end = wp.min(end, contact_count[0])
    else:  # the parked rows, unparked or not, hold the last slots: only those are visited
        begin = wp.max(begin, first_parked_slot(slot_count, contact_slot_fill))
    for t in range(begin, end):
        i = t
        c = int(-1)
        if mode == ROWS_BUILD:
            contact_slot_out[i] = -1
            if park == 0:  # without parking every contact keeps its own slot (no atomics), the first ones in use
                if i == 0:
                    contact_slot_fill[FRONT] = wp.min(contact_count[0], slot_count)
                c_world_out[i] = -1  # unless the contact takes it below
        else:
            c = t
            if mode == ROWS_COMPLETE_UNPARKED and c_parked[c] != UNPARKED:
                continue
            if mode == ROWS_COMPLETE_PARKED and c_parked[c] != PARKED:
                continue
            i = c_contact[c]
        s0 = contact_shape0[i]
        s1 = contact_shape1[i]
        shape_count = shape_body.shape[0]
        if s0 < 0 or s1 < 0 or s0 >= shape_count or s1 >= shape_count:
            continue
        b0 = shape_body[s0]
        b1 = shape_body[s1]
        d0 = int(-1)
        d1 = int(-1)
        world = int(-1)
        X0 = wp.transform_identity()
        X1 = wp.transform_identity()
        if b0 >= 0:
            X0 = body_q[b0]
            d0 = body_last_dof[b0]
            if body_tree[b0] >= 0:
                world = body_world[b0]
        if b1 >= 0:
            X1 = body_q[b1]
            d1 = body_last_dof[b1]
            if body_tree[b1] >= 0:
                world = body_world[b1]
        moves0 = side_moves(d0, dof_body, body_flags)
        moves1 = side_moves(d1, dof_body, body_flags)
        if (moves0 == 0 and moves1 == 0) or d0 == d1:
            continue  # both sides immovable (static, or moved by kinematic bodies' dofs alone), or moved as one

        n = wp.normalize(contact_normal[i])
        r0 = contact_margin0[i]
        r1 = contact_margin1[i]
        p0 = wp.transform_point(X0, contact_point0[i])
        p1 = wp.transform_point(X1, contact_point1[i])
        phi0 = wp.dot(n, p1 - p0) - (r0 + r1)
        p = contact_point(p0 + r0 * n, p1 - r1 * n, phi0, moves0, moves1)
        R_WC = tangent_frame(n)
        R_CW = wp.transpose(R_WC)
        k_pair, tau, mu, used = pair_parameters(
            s0, s1, shape_ke, shape_kd, shape_mu, shape_condim, shape_priority, stiffness_override, dissipation_override
        )
        if contact_stiffness.shape[0] > 0:  # the contacts' own properties (empty arrays: none)
            k_pair, tau, mu, used_own = per_contact_parameters(
                k_pair, tau, mu, contact_stiffness[i], contact_damping[i], contact_friction_scale[i]
            )
            used += used_own
        v_hat = contact_bias_velocity(phi0, dt, tau)
        if contact_surface_velocity.shape[0] > 0:  # Newton's mesh surface velocities (an empty array: none)
            u = R_CW * contact_surface_velocity[i]  # shape 1's surface relative to shape 0's, moving its material
            v_hat -= wp.vec3(u[0], u[1], 0.0)  # along the surface only: a conveyor belt
        if mode == ROWS_BUILD:
            if not contact_finite(contact_normal[i], phi0, p, v_hat, k_pair, tau, mu, used):
                world_failed_out[world] = 1  # left out of the solve (sap.init_worlds) and reported failed
            wp.atomic_add(world_contact_count, world, 1)
            parked = int(0)
            v_c0 = wp.vec3(0.0)
            if park == 1 and phi0 > 0.0:
                v_c0 = contact_velocity_from_twists(b0, b1, p, R_WC, body_tree, tree_ref, body_twist)
                g = contact_gravity(b0, b1, body_tree, gravity, newton_body_world)
                parked = contact_is_distant(phi0, v_c0, v_hat, mu, dt, dt * g)
            if park == 0:
                c = i
            elif parked == 1:
                c = slot_count - 1 - wp.atomic_add(contact_slot_fill, BACK, 1)
            else:
                c = wp.atomic_add(contact_slot_fill, FRONT, 1)
            contact_slot_out[i] = c
            c_contact[c] = i
            c_world_out[c] = world
            c_kind_out[c] = CONTACT
            c_param_out[c] = mu
            if lagged == 1:  # its friction bound is set with R below (0 in the detection gap, where parking is)
                c_kind_out[c] = CONTACT_LAGGED
                c_param_out[c] = 0.0
            c_frame_out[c] = R_WC
            c_vhat_out[c] = v_hat
            c_phi_out[c] = phi0
            c_point_out[c] = p
            c_parked[c] = 0
            if parked == 1:  # its impulse is the answer's; the rest of its row is formed only if it joins
                c_parked[c] = PARKED
                c_vc_out[c] = v_c0
                c_gamma_out[c] = wp.vec3(0.0)
                wp.atomic_add(world_parked_count, world, 1)
                continue

        # Jacobian entries along both chains, and the Delassus estimate from diag(A)
        e, vc_walk, vc_kinematic, w_norm, _scale = chain_rows(c, d1, d0, R_CW, p, 0, tree_ref, dof_tree, dof_parent,
                                                              dof_S_tree, dof_body, body_flags, A_inv_diag, v0,
                                                              c_dof_out, c_J_out)  # fmt: skip
        # a kinematic body moves like an obstacle (kinematic_bodies); the position update's velocity beyond J v
        u = offset_velocity(b1, body_free_centripetal, dt) - offset_velocity(b0, body_free_centripetal, dt)
        vc_known = vc_kinematic + R_CW * u
        c_vhat_out[c] = v_hat - vc_known
        R = contact_compliance(k_pair, tau, dt, beta, sigma, w_norm / 3.0, near_rigid_dt)
        c_R_out[c] = R
        if lagged == 1:  # friction bound μ n0, n0 the elastic normal impulse at the step's start penetration
            R_n_last = R[2]  # the compliance of the last step, which left that penetration (0: none, this Δt)
            dt_last = last_dt[0]
            if dt_last > 0.0 and dt_last != dt:
                R_n_last = contact_compliance(k_pair, tau, dt_last, beta, sigma, w_norm / 3.0, near_rigid_dt)[2]
            else:
                dt_last = dt
            c_param_out[c] = mu * lagged_normal_impulse(phi0, dt, dt_last, tau, R_n_last)
        c_nnz_out[c] = e
        if mode == ROWS_BUILD:
            c_vc_out[c] = vc_walk
        elif mode == ROWS_COMPLETE_UNPARKED:
            c_parked[c] = 0


@wp.kernel
def record_step_dt(dt: float, last_dt_out: wp.array(dtype=float)):
    """``last_dt[0] = Δt`` [s] of the step just taken: the stiffness that left the next step's start penetrations
    depends on it under the near-rigid cap, and the lagged friction bounds read it (``contact_rows``). On the device,
    so that a replayed graph keeps it too."""
    last_dt_out[0] = dt
