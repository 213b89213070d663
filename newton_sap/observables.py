"""What a step reports besides the state: per-contact forces and body accelerations, in Newton's conventions.

* ``contacts.rigid_contact_force`` [N], one ``vec3`` per contact: the force on shape 1, ``R_WC γ / Δt`` (the
  contact's impulse over the step, ``R_WC`` its frame, normal last, from shape 0 to shape 1).
* ``CONTACT_F`` (``Observables.contact_f``, and the deprecated ``contacts.force`` when allocated) [N, N·m], one
  spatial vector per contact: the force on body 0 (shape 0's body) by body 1, ``f0 = −R_WC γ / Δt``, and its
  moment ``(p − c0) × f0`` about body 0's center of mass ``c0`` (world axes; about the world origin when shape 0
  is static), ``p`` the contact point at which SAP applies it (midway between the two surfaces at the step's
  start; the step's constraints are linearized there). Rigid contact ``i`` is row ``i``; the rows of soft
  contacts (``rigid_contact_max`` on) are zero: this solver steps no particles.
* ``BODY_QDD`` (``Observables.body_qdd``) [m/s², rad/s²]: the step's mean acceleration of each body,
  ``(body_qd_out − body_qd_in) / Δt`` with ``body_qd = [v_com; ω]`` in world axes, ``body_qd_in`` from the
  input state's ``joint_q`` and ``joint_qd`` (not its ``body_qd``, which the step does not read). An impact's
  velocity jump over Δt is part of it, as in Newton's other time steppers.

Every kernel writes every entry it owns (zero where no contact acts), so a buffer sum is a total.
"""

from __future__ import annotations

import warp as wp

from .constraints.dispatch import thread_slots
from .conventions import body_twist_to_public

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


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
    contact_slot: wp.array(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
    c_frame: wp.array(dtype=wp.mat33),
    c_gamma: wp.array(dtype=wp.vec3),
    c_point: wp.array(dtype=wp.vec3),
    # outputs (either may be None)
    force_out: wp.array(dtype=wp.vec3),
    wrench_out: wp.array(dtype=wp.spatial_vector),
):
    """Per entry of the buffer's first ``capacity``: ``force_out`` the force on shape 1, ``f1 = R_WC γ / Δt``;
    ``wrench_out`` the force on body 0 and its moment, ``[−f1; (p − c0) × (−f1)]`` with ``c0`` body 0's COM at
    the step's start ``body_q`` (the origin for a static shape 0). From the slot of each of the
    ``rigid_contact_count`` contacts; zero for a contact without one and for the entries after the count
    (``contact_slot`` is not read there: it holds an earlier step's slots). A thread takes a run of entries."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, capacity)
    count = wp.min(capacity, contact_count[0])
    for i in range(begin, end):
        f1 = wp.vec3(0.0)
        wrench = wp.spatial_vector()
        if i < count:
            c = contact_slot[i]
            if c >= 0:
                f1 = c_frame[c] * c_gamma[c] / dt
                if wrench_out:
                    c0 = wp.vec3(0.0)
                    b0 = shape_body[contact_shape0[i]]
                    if b0 >= 0:
                        c0 = wp.transform_point(body_q[b0], body_com[b0])
                    wrench = wp.spatial_vector(-f1, wp.cross(c_point[c] - c0, -f1))
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


def zero_soft_rows(wrench: wp.array, rigid_contact_max: int) -> None:
    """Zero the rows of soft contacts (``rigid_contact_max`` on) of a contact-indexed wrench array."""
    if wrench.shape[0] > rigid_contact_max:
        wrench[rigid_contact_max:].zero_()
