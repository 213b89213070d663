"""What a step reports besides the state: contact forces, body accelerations and joint reactions, in Newton's
conventions.

* ``contacts.rigid_contact_force`` [N], one ``vec3`` per contact: the force on shape 1, ``R_WC γ / Δt`` (the
  contact's impulse over the step, ``R_WC`` its frame, normal last, from shape 0 to shape 1).
* ``CONTACT_F`` (``Observables.contact_f``, and the deprecated ``contacts.force`` when allocated) [N, N·m], one
  spatial vector per contact: the force on body 0 (shape 0's body) by body 1, ``f0 = −R_WC γ / Δt``, and its
  moment ``(p − c0) × f0`` about body 0's center of mass ``c0`` (world axes; about the world origin when shape 0
  has no body, ``shape_body = −1``), ``p`` the contact point at which SAP applies it (midway between the two
  surfaces at the step's start, or in the detection gap on the one moving side's surface:
  ``contact_constraints.contact_point``; the step's constraints are linearized there). Rigid contact ``i`` is row ``i``;
  the rows of soft contacts (``rigid_contact_max`` on) are zero: this solver steps no particles.
* ``BODY_QDD`` (``Observables.body_qdd``) [m/s², rad/s²]: the step's mean acceleration of each body,
  ``(body_qd_out − body_qd_in) / Δt`` with ``body_qd = [v_com; ω]`` in world axes, ``body_qd_in`` from the
  input state's ``joint_q`` and ``joint_qd`` (not its ``body_qd``, which the step does not read). An impact's
  velocity jump over Δt is part of it, as in Newton's other time steppers. A kinematic root's pose is not
  advanced by a step (the user writes it: ``kinematic_bodies``), so for the bodies it carries this difference
  leaves out the root's own motion within the step (e.g. the centripetal acceleration on a turning base);
  ``BODY_PARENT_F`` includes it.
* ``BODY_PARENT_F`` (``Observables.body_parent_f``) [N, N·m]: the wrench each body receives through its
  joint, force and moment about its COM in world axes (Newton's and MuJoCo's ``cfrc_int`` convention): the
  Newton–Euler balance of its subtree in the step's discrete dynamics, at the start's configuration and
  velocities (where the step forms them) with the dof accelerations ``(v − v0) / Δt``,
  ``Σ_subtree (I_k A_k + V_k ×* I_k V_k − f_gravity − f_external − f_contacts)``. It includes what the joint's
  drives, limits, friction, damping and ``joint_f`` exert (they act inside the joint) and, where armature
  is set, omits the rotor's share ``armature · q̈``. A FREE (or DISTANCE) joint transmits nothing: there it
  is the residual of the body's balance, zero up to round-off and armature; a kinematic body's FREE joint
  transmits what holds it to its prescribed motion. A body welded to the world (a
  chain of FIXED joints: the solver's static bodies) receives what holds it and all that hangs on it: its
  weight, ``body_f`` and contacts, plus the wrenches its children's joints transmit to it (a global body's weight
  from Newton's global gravity, the last entry of ``Model.gravity``). MuJoCo's gravity compensation
  (``model.mujoco.gravcomp``) counts as an upward force at each body's COM, so it lightens the wrenches; MuJoCo's
  ``cfrc_int`` (SolverMuJoCo's ``body_parent_f``) charges it to the joints instead (MuJoCo applies it as a joint
  space force), by the subtree's compensation. Models with loop-closing joints do not offer it (their loop
  wrenches act on bodies that the tree joints would otherwise be charged with).

The contact-indexed arrays are written in full (zero where no contact acts), so a buffer sum is a total.
"""

from __future__ import annotations

import warp as wp

from .constraints.dispatch import thread_slots
from .conventions import body_twist_to_public
from .dynamics import body_gravity, body_inertia_about
from .jacobian import chain_twist
from .spatial import inertia10_apply

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def reference_point(b: int, body_tree: wp.array(dtype=wp.int32), tree_ref: wp.array(dtype=wp.vec3)):
    """The point [m] about which ``BODY_PARENT_F``'s sums of body b are taken: its tree's point, or the world
    origin for a static body."""
    t = body_tree[b]
    if t < 0:
        return wp.vec3(0.0)
    return tree_ref[t]


@wp.kernel
def contact_forces(
    # model
    shape_body: wp.array(dtype=wp.int32),
    body_com: wp.array(dtype=wp.vec3),
    # inputs
    slots_per_thread: int,
    capacity: int,
    dt: float,
    contact_count: wp.array(dtype=wp.int32),
    contact_shape0: wp.array(dtype=wp.int32),
    contact_shape1: wp.array(dtype=wp.int32),
    contact_slot: wp.array(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
    body_tree: wp.array(dtype=wp.int32),
    tree_ref: wp.array(dtype=wp.vec3),
    world_failed: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_frame: wp.array(dtype=wp.mat33),
    c_gamma: wp.array(dtype=wp.vec3),
    c_point: wp.array(dtype=wp.vec3),
    # outputs (any may be None; body_wrench is added to)
    force_out: wp.array(dtype=wp.vec3),
    wrench_out: wp.array(dtype=wp.spatial_vector),
    body_wrench: wp.array(dtype=wp.spatial_vector),
):
    """Per entry of the buffer's first ``capacity``: ``force_out`` the force on shape 1, ``f1 = R_WC γ / Δt``;
    ``wrench_out`` the force on body 0 and its moment, ``[−f1; (p − c0) × (−f1)]`` with ``c0`` body 0's COM at
    the step's start ``body_q`` (the origin for a shape 0 without a body). From the slot of each of the
    ``rigid_contact_count`` contacts; zero for a contact without one, for one in a world that failed this step
    (``world_failed``: no solution, its γ a NaN or an unfinished iterate) and for the entries after the count
    (``contact_slot`` is not read there: it holds an earlier step's slots). ``body_wrench`` [internal ``[n; f]``
    about each body's tree point, about the origin for a static body] loses each contact's wrench on each of its
    two bodies (the subtree balances of ``BODY_PARENT_F``). A thread takes a run of entries."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, capacity)
    count = wp.min(capacity, contact_count[0])
    for i in range(begin, end):
        f1 = wp.vec3(0.0)
        wrench = wp.spatial_vector()
        if i < count:
            c = contact_slot[i]
            failed = int(0)
            if c >= 0:
                w = c_world[c]
                if w >= 0:
                    failed = world_failed[w]
            if c >= 0 and failed == 0:
                f1 = c_frame[c] * c_gamma[c] / dt
                p = c_point[c]
                b0 = shape_body[contact_shape0[i]]
                if wrench_out:
                    c0 = wp.vec3(0.0)
                    if b0 >= 0:
                        c0 = wp.transform_point(body_q[b0], body_com[b0])
                    wrench = wp.spatial_vector(-f1, wp.cross(p - c0, -f1))
                if body_wrench:
                    b1 = shape_body[contact_shape1[i]]
                    if b0 >= 0:
                        r0 = reference_point(b0, body_tree, tree_ref)
                        wp.atomic_add(body_wrench, b0, wp.spatial_vector(wp.cross(p - r0, f1), f1))
                    if b1 >= 0:
                        r1 = reference_point(b1, body_tree, tree_ref)
                        wp.atomic_sub(body_wrench, b1, wp.spatial_vector(wp.cross(p - r1, f1), f1))
        if force_out:
            force_out[i] = f1
        if wrench_out:
            wrench_out[i] = wrench


@wp.kernel
def public_body_velocities(
    # model
    body_com: wp.array(dtype=wp.vec3),
    # inputs
    body_q: wp.array(dtype=wp.transform),
    body_twist: wp.array(dtype=wp.spatial_vector),
    # outputs
    body_qd_out: wp.array(dtype=wp.spatial_vector),
):
    """Per body, Newton's ``body_qd = [v_com; ω]`` [m/s, rad/s] from the solver's pose and origin twist
    ``[ω; v_o]`` (``kinematics.forward_kinematics``)."""
    b = wp.tid()
    X = body_q[b]
    body_qd_out[b] = body_twist_to_public(body_twist[b], wp.transform_vector(X, body_com[b]))


@wp.kernel
def mean_accelerations(
    # inputs
    dt: float,
    body_qd_end: wp.array(dtype=wp.spatial_vector),
    # outputs (read: the step's start body_qd)
    body_qdd: wp.array(dtype=wp.spatial_vector),
):
    """Per body, ``(body_qd_end − body_qd_start) / Δt`` [m/s², rad/s²] over ``body_qdd``, which holds
    ``body_qd_start``."""
    b = wp.tid()
    body_qdd[b] = (body_qd_end[b] - body_qdd[b]) / dt


@wp.kernel
def body_acceleration_wrenches(
    # model
    tree_bodies: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    body_inertia: wp.array(dtype=wp.mat33),
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    body_q: wp.array(dtype=wp.transform),
    tree_ref: wp.array(dtype=wp.vec3),
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    v0: wp.array(dtype=float),
    v: wp.array(dtype=float),
    # outputs
    body_wrench_out: wp.array(dtype=wp.spatial_vector),
):
    """Per tree body b, ``I_b Σ_k S̄_k (v_k − v0_k) / Δt`` [N·m; N] about its tree's point: the momentum rate
    of the dof accelerations along its chain (the start's bias acceleration is in the RNE composite forces)."""
    b = tree_bodies[wp.tid()]
    r = tree_ref[body_tree[b]]
    I10 = body_inertia_about(body_mass[b], body_com[b], body_inertia[b], body_q[b], r)
    acceleration = (chain_twist(b, body_last_dof, dof_parent, dof_S_tree, v)
                    - chain_twist(b, body_last_dof, dof_parent, dof_S_tree, v0)) / dt  # fmt: skip
    body_wrench_out[b] = inertia10_apply(I10, acceleration)


@wp.kernel
def static_body_wrenches(
    # model
    static_bodies: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    gravity: wp.array(dtype=wp.vec3),
    body_gravcomp: wp.array(dtype=float),
    # inputs
    body_q: wp.array(dtype=wp.transform),
    body_f: wp.array(dtype=wp.spatial_vector),
    # outputs
    body_wrench_out: wp.array(dtype=wp.spatial_vector),
):
    """Per static body (welded to the world, at rest), what holds it against its own loads, about the origin:
    ``−((1 − gravcomp) m g + f_ext)`` at its COM c and ``−τ_ext`` (``body_f = [f_ext; τ_ext]``, Newton's layout;
    ``body_gravcomp``: MuJoCo's gravity compensation). ``body_world`` is Newton's (-1: global; see
    :func:`~newton_sap.dynamics.body_gravity`)."""
    b = static_bodies[wp.tid()]
    c = wp.transform_point(body_q[b], body_com[b])
    weight = (1.0 - body_gravcomp[b]) * body_mass[b] * body_gravity(gravity, body_world, b)
    f = -(weight + wp.spatial_top(body_f[b]))
    body_wrench_out[b] = wp.spatial_vector(wp.cross(c, f) - wp.spatial_bottom(body_f[b]), f)


@wp.kernel
def roots_to_static_parents(
    # model
    static_rooted_trees: wp.array(dtype=wp.int32),
    tree_body_start: wp.array(dtype=wp.int32),
    tree_bodies: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    # inputs
    tree_ref: wp.array(dtype=wp.vec3),
    composite_force: wp.array(dtype=wp.spatial_vector),
    # outputs (read and updated)
    body_wrench: wp.array(dtype=wp.spatial_vector),
):
    """Per tree whose root hangs on a static body, the wrench its root's joint transmits (its whole balance,
    about its point r) added to that body's sum about the origin: ``[n_r + r × f; f]``."""
    t = static_rooted_trees[wp.tid()]
    root = tree_bodies[tree_body_start[t]]  # parents first
    w = composite_force[root] + body_wrench[root]
    f = wp.spatial_bottom(w)
    wp.atomic_add(body_wrench, body_parent[root], wp.spatial_vector(wp.spatial_top(w) + wp.cross(tree_ref[t], f), f))


@wp.kernel
def add_to_parents(
    # model
    level_bodies: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    # outputs (read and updated)
    body_wrench: wp.array(dtype=wp.spatial_vector),
):
    """One depth level, leaves → root: ``W_parent += W_b`` (wrenches about the tree's point: plain sums)."""
    b = level_bodies[wp.tid()]
    wp.atomic_add(body_wrench, body_parent[b], body_wrench[b])


@wp.kernel
def parent_wrenches(
    # model
    body_tree: wp.array(dtype=wp.int32),
    body_com: wp.array(dtype=wp.vec3),
    # inputs
    body_q: wp.array(dtype=wp.transform),
    tree_ref: wp.array(dtype=wp.vec3),
    composite_force: wp.array(dtype=wp.spatial_vector),
    subtree_wrench: wp.array(dtype=wp.spatial_vector),
    # outputs
    body_parent_f_out: wp.array(dtype=wp.spatial_vector),
):
    """Per body, Newton's ``body_parent_f = [f; n_c]``: the subtree's sums ``[n_r; f]`` about its reference
    point r (a tree body: the RNE composite force plus the acceleration and contact sums, about its tree's point;
    a static body: its sum about the origin), moved to the COM c, ``n_c = n_r + (r − c) × f``."""
    b = wp.tid()
    w = subtree_wrench[b]
    if body_tree[b] >= 0:
        w = w + composite_force[b]
    f = wp.spatial_bottom(w)
    c = wp.transform_point(body_q[b], body_com[b])
    body_parent_f_out[b] = wp.spatial_vector(
        f, wp.spatial_top(w) + wp.cross(reference_point(b, body_tree, tree_ref) - c, f)
    )


def zero_soft_rows(wrench: wp.array, rigid_contact_max: int) -> None:
    """Zero the rows of soft contacts (``rigid_contact_max`` on) of a contact-indexed wrench array."""
    if wrench.shape[0] > rigid_contact_max:
        wrench[rigid_contact_max:].zero_()
