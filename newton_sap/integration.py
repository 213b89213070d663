"""Position update ``q1 = q0 + Δt · G(q0) v`` from the solved internal velocities (seed §5 step 5).

Scalar coordinates (REVOLUTE, PRISMATIC, D6) advance by ``Δt q̇``. Rotations (BALL, FREE/DISTANCE)
are rotated by ``exp(Δt ω_F)`` on the left (ω is expressed in the joint parent frame F) and
renormalized. A FREE joint's position (the child frame origin M in F) is advanced through its pivot, the COM of its
child and the bodies FIXED to it (``kinematics.free_joint_pivots``; the child's COM when nothing is welded to it):
the group turns about its COM, which moves by ``Δt v_c1``: ``p1 = c0 + Δt v_c1 − R1 r_M`` (r_M the pivot in M), and
the public velocity is then the child's own COM's at q1, ``v_c1 + ω1 × R1 (com_M − r_M)``. Turning the child about
its own COM instead, a nearly massless root carrying a 2 kg welded body 20 cm off gained 114 % of its energy in 3 s
at 40 rad/s and Δt = 0.01 (session 33).

The step's new velocities are also written back in Newton's public convention here. For a FREE
joint the public velocity is the child's COM's, ``q̇_pub = T(q0) q̇_int``. The pivot's velocity after the step is that
of ``T q̇_int`` with T frozen at q0 plus the rate of T, ``Δt ω0 × (ω0 × r0)`` (r0 the pivot − M in F at q0):
``v_c1 = v_M1 + ω1 × r0 + Δt ω0 × (ω0 × r0)`` (``conventions.free_com_velocity_after_step``), and for a lone body
(pivot = its COM) that is the public velocity written. To first order in the displacement this is the seed's
``p += Δt v_M``; unlike it, a torque-free body spinning about an offset COM keeps its COM still instead of drifting
by ``O((ωΔt)² |r|)`` per step. The term ``b = Δt ω0 × (ω0 × r0)`` moves every point of the child's subtree at ``b``
beyond its Jacobian velocity, so the constraint rows take it into their bias velocity
(``kinematics.forward_kinematics`` keeps ``Σ R_WF b / Δt`` over each body's chain, with the same pivot).
"""

import warp as wp

from .conventions import free_com_velocity_after_step
from .kinematic_bodies import body_is_kinematic
from .topology import JOINT_BALL, JOINT_DISTANCE, JOINT_FREE

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def normalize_keeping_nan(q: wp.quat):
    """``q / |q|``, but a quaternion with a NaN or infinite entry is returned as it is (``wp.normalize`` would
    return the identity): a world whose rotation broke stays non-finite, hence flagged, step after step."""
    if wp.isfinite(wp.length(q)):
        return wp.normalize(q)
    return q


@wp.func
def rotate_quat(q: wp.quat, w: wp.vec3, dt: float):
    """``normalize(exp(dt·ω) ⊗ q)`` for an angular velocity ω [rad/s] in the frame q maps into."""
    angle = wp.length(w) * dt
    dq = wp.quat_identity()
    if angle > 0.0:
        dq = wp.quat_from_axis_angle(wp.normalize(w), angle)
    return normalize_keeping_nan(dq * q)


@wp.kernel
def integrate_joints(
    # model
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_dof_dim: wp.array2d(dtype=wp.int32),
    joint_dof_internal_start: wp.array(dtype=wp.int32),
    joint_in_tree: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_X_c: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    body_weld_start: wp.array(dtype=wp.int32),
    body_pivot_M: wp.array(dtype=wp.vec3),
    body_flags: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    joint_q_in: wp.array(dtype=float),
    joint_qd_in: wp.array(dtype=float),
    internal_v0_in: wp.array(dtype=float),
    internal_v_in: wp.array(dtype=float),
    # outputs
    joint_q_out: wp.array(dtype=float),
    joint_qd_out: wp.array(dtype=float),
):
    """One thread per joint (joints without dofs have no coordinates): ``joint_q_out`` from the
    solved internal velocities ``internal_v_in`` and Newton's ``joint_qd_out`` (public). Loop-closing
    joints are constraints, not coordinates of the system, and a kinematic body's joint is prescribed by the
    user (``kinematic_bodies``): their entries are copied unchanged."""
    j = wp.tid()
    if joint_in_tree[j] == 0 or body_is_kinematic(joint_child[j], body_flags) == 1:
        for k in range(joint_q_start[j], joint_q_start[j + 1]):
            joint_q_out[k] = joint_q_in[k]
        for k in range(joint_qd_start[j], joint_qd_start[j + 1]):
            joint_qd_out[k] = joint_qd_in[k]
        return
    jtype = joint_type[j]
    qs = joint_q_start[j]
    d0 = joint_dof_internal_start[j]
    qd0 = joint_qd_start[j]
    ndof = joint_dof_dim[j, 0] + joint_dof_dim[j, 1]
    if jtype == JOINT_BALL:
        q = wp.quat(joint_q_in[qs], joint_q_in[qs + 1], joint_q_in[qs + 2], joint_q_in[qs + 3])
        w = wp.vec3(internal_v_in[d0], internal_v_in[d0 + 1], internal_v_in[d0 + 2])
        q1 = rotate_quat(q, w, dt)
        for k in range(4):
            joint_q_out[qs + k] = q1[k]
        for k in range(3):
            joint_qd_out[qd0 + k] = w[k]
    elif jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
        # normalized as FK reads it: the COM offset r0 below must use the rotation the dynamics used
        q = normalize_keeping_nan(
            wp.quat(joint_q_in[qs + 3], joint_q_in[qs + 4], joint_q_in[qs + 5], joint_q_in[qs + 6])
        )
        w = wp.vec3(internal_v_in[d0], internal_v_in[d0 + 1], internal_v_in[d0 + 2])
        q1 = rotate_quat(q, w, dt)
        r_M = wp.transform_point(wp.transform_inverse(joint_X_c[j]), body_com[joint_child[j]])  # COM in M
        # pivot − M in F at q0, bit for bit FK's (kinematics forms it by the same expression): with another
        # evaluation the conversion back would add the round-off difference to v_com every step
        pivot_M = r_M  # the COM of the child and the bodies welded to it, in M (kinematics.free_joint_pivots)
        if body_weld_start[joint_child[j] + 1] > body_weld_start[joint_child[j]]:
            pivot_M = body_pivot_M[joint_child[j]]
        pivot0 = wp.quat_rotate(q, pivot_M)
        w0 = wp.vec3(internal_v0_in[d0], internal_v0_in[d0 + 1], internal_v0_in[d0 + 2])
        v_m = wp.vec3(internal_v_in[d0 + 3], internal_v_in[d0 + 4], internal_v_in[d0 + 5])
        v_pivot = free_com_velocity_after_step(v_m, w, w0, pivot0, dt)
        p0 = wp.vec3(joint_q_in[qs], joint_q_in[qs + 1], joint_q_in[qs + 2])
        p1 = p0 + pivot0 + dt * v_pivot - wp.quat_rotate(q1, pivot_M)
        v_com = v_pivot + wp.cross(w, wp.quat_rotate(q1, r_M - pivot_M))  # the child's COM, at q1
        for k in range(3):
            joint_q_out[qs + k] = p1[k]
            joint_qd_out[qd0 + k] = v_com[k]
            joint_qd_out[qd0 + 3 + k] = w[k]
        for k in range(4):
            joint_q_out[qs + 3 + k] = q1[k]
    else:
        for k in range(ndof):
            joint_q_out[qs + k] = joint_q_in[qs + k] + dt * internal_v_in[d0 + k]
            joint_qd_out[qd0 + k] = internal_v_in[d0 + k]
