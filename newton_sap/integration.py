"""Position update ``q1 = q0 + Δt · G(q0) v`` from the solved internal velocities (seed §5 step 5).

Scalar coordinates (REVOLUTE, PRISMATIC, D6) advance by ``Δt q̇``. Rotations (BALL, FREE/DISTANCE)
are rotated by ``exp(Δt ω_F)`` on the left (ω is expressed in the joint parent frame F) and
renormalized. A FREE joint's position, the child frame origin M in F, advances by ``Δt v_M``.
"""

import warp as wp

from .topology import JOINT_BALL, JOINT_DISTANCE, JOINT_FREE


@wp.func
def rotate_quat(q: wp.quat, w: wp.vec3, dt: float):
    """``normalize(exp(dt·ω) ⊗ q)`` for an angular velocity ω [rad/s] in the frame q maps into."""
    angle = wp.length(w) * dt
    dq = wp.quat_identity()
    if angle > 0.0:
        dq = wp.quat_from_axis_angle(wp.normalize(w), angle)
    return wp.normalize(dq * q)


@wp.kernel
def integrate_joints(
    # model
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_dof_dim: wp.array2d(dtype=wp.int32),
    joint_dof_internal_start: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    joint_q_in: wp.array(dtype=float),
    internal_v_in: wp.array(dtype=float),
    # outputs
    joint_q_out: wp.array(dtype=float),
):
    """One thread per joint; joints without dofs have no coordinates."""
    j = wp.tid()
    jtype = joint_type[j]
    qs = joint_q_start[j]
    d0 = joint_dof_internal_start[j]
    ndof = joint_dof_dim[j, 0] + joint_dof_dim[j, 1]
    if jtype == JOINT_BALL:
        q = wp.quat(joint_q_in[qs], joint_q_in[qs + 1], joint_q_in[qs + 2], joint_q_in[qs + 3])
        w = wp.vec3(internal_v_in[d0], internal_v_in[d0 + 1], internal_v_in[d0 + 2])
        q1 = rotate_quat(q, w, dt)
        for k in range(4):
            joint_q_out[qs + k] = q1[k]
    elif jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
        q = wp.quat(joint_q_in[qs + 3], joint_q_in[qs + 4], joint_q_in[qs + 5], joint_q_in[qs + 6])
        w = wp.vec3(internal_v_in[d0], internal_v_in[d0 + 1], internal_v_in[d0 + 2])
        q1 = rotate_quat(q, w, dt)
        for k in range(3):
            joint_q_out[qs + k] = joint_q_in[qs + k] + dt * internal_v_in[d0 + 3 + k]
        for k in range(4):
            joint_q_out[qs + 3 + k] = q1[k]
    else:
        for k in range(ndof):
            joint_q_out[qs + k] = joint_q_in[qs + k] + dt * internal_v_in[d0 + k]
