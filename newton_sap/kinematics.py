"""Forward kinematics, motion subspaces, body twists and bias accelerations (seed §3-§4).

One thread walks one root-to-leaf branch. At every joint it computes the child pose
``X_WC = X_WP · joint_X_p · X_j(q) · joint_X_c⁻¹``, each dof's motion subspace column ``S_k`` at the
child origin in world axes, the child's origin twist ``V_C = shift(V_P → p_C) + Σ S_k q̇_k`` and its
velocity-product (bias) acceleration ``A_C = shift(A_P → p_C) + Σ Ṡ_k q̇_k`` (Plücker coordinates at
the point coinciding with ``p_C``; gravity is added later, in RNE). Shared ancestors of several
branches are recomputed by each of them with identical results. ``flag_changed`` tells the solver whether
the buffers of its last FK still hold a step's input (``SolverSAP._kinematics``).

Columns (``p_M`` = joint child frame origin, ``ê`` = axis in world axes):
linear dof ``[0; ê]``; angular dof ``[ê; ê × (p_C − p_M)]``. Column rates: a column is carried by
the motion of the frame its axis is fixed in, ``Ṡ_k = V_k ×̂ S_k``, with ``V_k`` the parent twist plus
the joint's linear dofs (FREE, D6: rotation about the moving point M) plus, for the transported
(Euler-like) angular axes of a D6, the angular dofs before ``k``. By linearity the sum over a group of
columns carried by one frame is one product: ``Σ_k (V ×̂ S_k) q̇_k = V ×̂ (Σ_k S_k q̇_k)``.
"""

import warp as wp

from .constraints.dispatch import thread_slots
from .conventions import body_twist_to_public, free_com_centripetal, free_velocity_public_to_internal
from .kinematic_bodies import body_is_kinematic
from .spatial import motion_cross, twist_shift
from .topology import JOINT_BALL, JOINT_D6, JOINT_DISTANCE, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def joint_motion(
    jtype: int,
    q_start: int,
    axis_start: int,
    n_lin: int,
    n_ang: int,
    joint_q: wp.array(dtype=float),
    joint_axis: wp.array(dtype=wp.vec3),
):
    """Joint transform ``X_FM`` and the dof axes in F: columns of ``lin`` (linear dofs) and ``ang``
    (angular dofs), in Newton's coordinate order.

    D6 angular axes are intrinsic (transported): axis k is carried by the rotations of axes < k, so
    that ``ω = Σ ang_k q̇_k`` exactly; two axes are first replaced by Newton's frame built from them
    (comment in the D6 branch)."""
    lin = wp.mat33(0.0)
    ang = wp.mat33(0.0)
    p = wp.vec3(0.0)
    rot = wp.quat_identity()
    if jtype == JOINT_PRISMATIC:
        a = joint_axis[axis_start]
        lin[0, 0] = a[0]
        lin[1, 0] = a[1]
        lin[2, 0] = a[2]
        p = a * joint_q[q_start]
    elif jtype == JOINT_REVOLUTE:
        a = joint_axis[axis_start]
        ang[0, 0] = a[0]
        ang[1, 0] = a[1]
        ang[2, 0] = a[2]
        rot = wp.quat_from_axis_angle(a, joint_q[q_start])
    elif jtype == JOINT_BALL:
        ang = wp.identity(n=3, dtype=float)
        rot = wp.normalize(wp.quat(joint_q[q_start], joint_q[q_start + 1], joint_q[q_start + 2], joint_q[q_start + 3]))
    elif jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
        lin = wp.identity(n=3, dtype=float)
        ang = wp.identity(n=3, dtype=float)
        p = wp.vec3(joint_q[q_start], joint_q[q_start + 1], joint_q[q_start + 2])
        rot = wp.normalize(
            wp.quat(joint_q[q_start + 3], joint_q[q_start + 4], joint_q[q_start + 5], joint_q[q_start + 6])
        )
    elif jtype == JOINT_D6:
        for k in range(n_lin):
            a = joint_axis[axis_start + k]
            p = p + a * joint_q[q_start + k]
            lin[0, k] = a[0]
            lin[1, k] = a[1]
            lin[2, k] = a[2]
        # Newton's angular D6 coordinates (intrinsic rotations, each axis carried by the earlier ones):
        #   R = R(ê₀, q₀) R(ê₁, q₁) R(ê₂, q₂),  ω = ê₀ q̇₀ + R(ê₀, q₀) ê₁ q̇₁ + R(ê₀, q₀) R(ê₁, q₁) ê₂ q̇₂  (in F).
        # One or three axes: ê_k = a_k, the stored axes as they are (any angles between them).
        # Two axes: ê₀, ê₁ = first two columns of R_off = rot(quat_from_matrix([a₀ | a₁ | a₀ × a₁])),
        # Warp's quaternion extraction (trace / largest-diagonal formula, then normalized) applied to
        # that matrix. R_off = [a₀ | a₁ | a₀ × a₁] for orthonormal a₀, a₁; otherwise it is a nearby
        # rotation, neither Gram-Schmidt nor the polar factor (a₀ = x̂, a₁ = (x̂ + ŷ)/√2 give
        # ê₀, ê₁ = x̂, ŷ turned by ≈ −23.4° about ẑ).
        e0 = wp.vec3(0.0)
        e1 = wp.vec3(0.0)
        e2 = wp.vec3(0.0)
        if n_ang >= 1:
            e0 = joint_axis[axis_start + n_lin]
        if n_ang >= 2:
            e1 = joint_axis[axis_start + n_lin + 1]
        if n_ang == 2:
            q_off = wp.quat_from_matrix(wp.matrix_from_cols(e0, e1, wp.cross(e0, e1)))
            e0 = wp.quat_rotate(q_off, wp.vec3(1.0, 0.0, 0.0))
            e1 = wp.quat_rotate(q_off, wp.vec3(0.0, 1.0, 0.0))
        if n_ang == 3:
            e2 = joint_axis[axis_start + n_lin + 2]
        # transported axes: a₀ = ê₀, a₁ = R(ê₀, q₀) ê₁, a₂ = R(a₁, q₁) R(ê₀, q₀) ê₂
        a0 = e0
        a1 = wp.vec3(0.0)
        a2 = wp.vec3(0.0)
        if n_ang >= 1:
            rot = wp.quat_from_axis_angle(a0, joint_q[q_start + n_lin])
        if n_ang >= 2:
            a1 = wp.quat_rotate(rot, e1)
            rot = wp.quat_from_axis_angle(a1, joint_q[q_start + n_lin + 1]) * rot
        if n_ang == 3:
            a2 = wp.quat_rotate(rot, e2)
            rot = wp.quat_from_axis_angle(a2, joint_q[q_start + n_lin + 2]) * rot
        for r in range(3):
            ang[r, 0] = a0[r]
            ang[r, 1] = a1[r]
            ang[r, 2] = a2[r]
    return wp.transform(p, rot), lin, ang


@wp.func
def internal_dof(jtype: int, n_lin: int, n_ang: int, is_angular: int, k: int):
    """Offset inside a joint's internal dof range of its k-th linear or angular dof."""
    if jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
        if is_angular == 1:
            return k
        return n_ang + k
    if is_angular == 1:
        return n_lin + k
    return k


@wp.func
def joint_keeps_screw(jtype: int, child: int, body_flags: wp.array(dtype=wp.int32)):
    """1 for a kinematic body's FREE (or DISTANCE) joint, which keeps its twist within a step (a screw motion, see
    :func:`forward_kinematics`), else 0."""
    if (jtype == JOINT_FREE or jtype == JOINT_DISTANCE) and body_is_kinematic(child, body_flags) == 1:
        return 1
    return 0


@wp.func
def joint_twist_and_bias(
    jtype: int,
    n_lin: int,
    n_ang: int,
    d0: int,
    screw: int,
    V_parent: wp.spatial_vector,
    A_parent: wp.spatial_vector,
    dof_S: wp.array(dtype=wp.spatial_vector),
    qd: wp.array(dtype=float),
):
    """Twist ``V = V_P + Σ_k S_k q̇_k`` and bias acceleration ``A = A_P + Σ_k Ṡ_k q̇_k`` of a joint's child
    (module doc: each group of columns carried by one frame is one motion cross product), from its parent's
    ``V_parent``, ``A_parent`` (shifted to the child's origin), its columns ``dof_S`` and internal velocities
    ``qd`` from internal dof ``d0`` on. ``screw = 1`` leaves out the angular columns' carriage by the linear
    ones (:func:`joint_keeps_screw`)."""
    V_lin = wp.spatial_vector()
    for k in range(n_lin):
        d = d0 + internal_dof(jtype, n_lin, n_ang, 0, k)
        V_lin = V_lin + dof_S[d] * qd[d]
    A = A_parent + motion_cross(V_parent, V_lin)  # Σ_k (V_parent ×̂ S_k) q̇_k
    V_carrier = V_parent + V_lin  # motion of the frame that carries the angular axes
    V_ang = wp.spatial_vector()
    for k in range(n_ang):
        d = d0 + internal_dof(jtype, n_lin, n_ang, 1, k)
        S = dof_S[d]
        if jtype == JOINT_D6:
            A = A + motion_cross(V_ang, S) * qd[d]  # transported axes ride on earlier rotations
        V_ang = V_ang + S * qd[d]
    if screw == 0:
        A = A + motion_cross(V_carrier, V_ang)
    return V_carrier + V_ang, A


@wp.kernel
def forward_kinematics(
    # model
    branch_start: wp.array(dtype=wp.int32),
    branch_joints: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_parent: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_axis: wp.array(dtype=wp.vec3),
    joint_dof_dim: wp.array2d(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_dof_internal_start: wp.array(dtype=wp.int32),
    body_com: wp.array(dtype=wp.vec3),
    body_weld_start: wp.array(dtype=wp.int32),
    body_pivot_M: wp.array(dtype=wp.vec3),
    body_flags: wp.array(dtype=wp.int32),
    # inputs
    write_public: int,
    joint_q_in: wp.array(dtype=float),
    public_qd_in: wp.array(dtype=float),
    # outputs
    body_q_out: wp.array(dtype=wp.transform),
    body_twist_out: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_out: wp.array(dtype=wp.spatial_vector),
    dof_S_out: wp.array(dtype=wp.spatial_vector),
    internal_v_out: wp.array(dtype=float),
    body_free_centripetal_out: wp.array(dtype=wp.vec3),
    public_body_q_out: wp.array(dtype=wp.transform),
    public_body_qd_out: wp.array(dtype=wp.spatial_vector),
):
    """Branch FK (see module doc) from Newton's ``joint_q`` and ``joint_qd`` (public). Writes poses,
    twists, bias accelerations, S, the internal velocities ``internal_v_out`` [rad/s, m/s], the FREE joints'
    centripetal terms ``body_free_centripetal_out`` [m/s²] (below) and, if ``write_public = 1``, Newton's
    ``body_q`` and ``body_qd`` (public) too. A FREE joint's public velocity is converted with its COM − M in F formed
    as the position update forms it (``integration``), so the round trip adds no velocity (for a body with others
    FIXED to it, none beyond round-off).

    ``body_free_centripetal_out[b] = Σ R_WF (ω × (ω × r))`` over the FREE/DISTANCE joints on b's chain (ω the
    joint's angular velocity, r its pivot − M, both in F, the pivot the COM of its child and the bodies welded to
    it, :func:`free_joint_pivots`; kinematic bodies' joints left out). The position update moves a FREE joint's pivot
    (``integration``), so every point of its child's subtree moves Δt times this faster than its Jacobian velocity
    ``J v``, a translation (up to the rotation's own centripetal term about the
    COM, which does not depend on where the origin lies): the constraint rows take it into their bias velocity
    (``jacobian.offset_velocity``).

    A kinematic body's FREE (or DISTANCE) joint keeps its twist within a step, a screw motion (its
    prescribed dofs do not accelerate: ``kinematic_bodies``, as Newton's Featherstone solver holds it): the
    term ``V_carrier ×̂ V_ang = [0; −ω × v_M]`` that the internal ``[ω; v_M]`` velocities (M moving straight)
    would give is left out, so the bodies it carries feel the centripetal acceleration of its turns."""
    branch = wp.tid()
    X_WP = wp.transform_identity()
    V_P = wp.spatial_vector()
    A_P = wp.spatial_vector()
    U_P = wp.vec3(0.0)
    for idx in range(branch_start[branch], branch_start[branch + 1]):
        j = branch_joints[idx]
        jtype = joint_type[j]
        parent = joint_parent[j]
        child = joint_child[j]
        n_lin = joint_dof_dim[j, 0]
        n_ang = joint_dof_dim[j, 1]
        qd0 = joint_qd_start[j]
        d0 = joint_dof_internal_start[j]
        if parent < 0:
            X_WP = wp.transform_identity()
            V_P = wp.spatial_vector()
            A_P = wp.spatial_vector()
            U_P = wp.vec3(0.0)

        X_WF = X_WP * joint_X_p[j]
        X_j, lin, ang = joint_motion(jtype, joint_q_start[j], qd0, n_lin, n_ang, joint_q_in, joint_axis)
        X_WM = X_WF * X_j
        X_WC = X_WM * wp.transform_inverse(joint_X_c[j])
        p_C = wp.transform_get_translation(X_WC)
        p_M = wp.transform_get_translation(X_WM)
        p_P = wp.transform_get_translation(X_WP)
        c_off = wp.transform_vector(X_WC, body_com[child])  # COM − origin, world
        r_F = wp.vec3(0.0)  # a FREE (DISTANCE) joint's COM − M, in F
        pivot_F = wp.vec3(0.0)  # and its pivot − M (the COM of its body and the bodies welded to it)
        if jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
            # from the joint's own rotation, bit for bit as the position update forms it (integration): at rest
            # r0 − q1 r_M there is exactly 0, and world positions far from the origin cancel no digits
            r_M = wp.transform_point(wp.transform_inverse(joint_X_c[j]), body_com[child])
            r_F = wp.quat_rotate(wp.transform_get_rotation(X_j), r_M)
            pivot_F = r_F  # a body with nothing welded to it: its COM, read from the model every step
            if body_weld_start[child + 1] > body_weld_start[child]:
                pivot_F = wp.quat_rotate(wp.transform_get_rotation(X_j), body_pivot_M[child])

        V_parent = twist_shift(V_P, p_C - p_P)
        A = twist_shift(A_P, p_C - p_P)

        # generalized velocities of this joint (internal), converting from public if asked
        if jtype == JOINT_FREE or jtype == JOINT_DISTANCE:
            v_pub = wp.vec3(public_qd_in[qd0], public_qd_in[qd0 + 1], public_qd_in[qd0 + 2])
            w_pub = wp.vec3(public_qd_in[qd0 + 3], public_qd_in[qd0 + 4], public_qd_in[qd0 + 5])
            v_m = free_velocity_public_to_internal(v_pub, w_pub, r_F)
            for k in range(3):
                internal_v_out[d0 + k] = w_pub[k]
                internal_v_out[d0 + 3 + k] = v_m[k]
        else:
            for k in range(n_lin + n_ang):
                internal_v_out[d0 + k] = public_qd_in[qd0 + k]
        qd_src = internal_v_out

        # motion subspace columns, then the twist and bias acceleration they carry
        R_WF = wp.quat_to_matrix(wp.transform_get_rotation(X_WF))
        for k in range(n_lin):
            e = R_WF * wp.vec3(lin[0, k], lin[1, k], lin[2, k])
            dof_S_out[d0 + internal_dof(jtype, n_lin, n_ang, 0, k)] = wp.spatial_vector(wp.vec3(0.0), e)
        for k in range(n_ang):
            e = R_WF * wp.vec3(ang[0, k], ang[1, k], ang[2, k])
            dof_S_out[d0 + internal_dof(jtype, n_lin, n_ang, 1, k)] = wp.spatial_vector(e, wp.cross(e, p_C - p_M))
        screw = joint_keeps_screw(jtype, child, body_flags)
        V, A = joint_twist_and_bias(jtype, n_lin, n_ang, d0, screw, V_parent, A, dof_S_out, qd_src)
        U = U_P
        if (jtype == JOINT_FREE or jtype == JOINT_DISTANCE) and screw == 0:
            w_F = wp.vec3(qd_src[d0], qd_src[d0 + 1], qd_src[d0 + 2])
            U = U + R_WF * free_com_centripetal(w_F, pivot_F)

        if write_public == 1:
            public_body_q_out[child] = X_WC
            public_body_qd_out[child] = body_twist_to_public(V, c_off)

        body_q_out[child] = X_WC
        body_twist_out[child] = V
        body_bias_acc_out[child] = A
        body_free_centripetal_out[child] = U
        X_WP = X_WC
        V_P = V
        A_P = A
        U_P = U


@wp.kernel
def branch_twists_and_bias(
    # model
    branch_start: wp.array(dtype=wp.int32),
    branch_joints: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_parent: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_dof_dim: wp.array2d(dtype=wp.int32),
    joint_dof_internal_start: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    # inputs
    body_q_in: wp.array(dtype=wp.transform),
    dof_S_in: wp.array(dtype=wp.spatial_vector),
    v_in: wp.array(dtype=float),
    # outputs
    body_twist_out: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_out: wp.array(dtype=wp.spatial_vector),
):
    """The velocity half of :func:`forward_kinematics` at other internal velocities ``v_in`` [rad/s, m/s]: every
    body's twist and bias acceleration at the poses ``body_q_in`` and columns ``dof_S_in`` FK computed, one
    thread per branch (shared ancestors recomputed with identical results)."""
    branch = wp.tid()
    V_P = wp.spatial_vector()
    A_P = wp.spatial_vector()
    p_P = wp.vec3(0.0)
    for idx in range(branch_start[branch], branch_start[branch + 1]):
        j = branch_joints[idx]
        jtype = joint_type[j]
        child = joint_child[j]
        if joint_parent[j] < 0:
            V_P = wp.spatial_vector()
            A_P = wp.spatial_vector()
            p_P = wp.vec3(0.0)
        p_C = wp.transform_get_translation(body_q_in[child])
        V, A = joint_twist_and_bias(
            jtype, joint_dof_dim[j, 0], joint_dof_dim[j, 1], joint_dof_internal_start[j],
            joint_keeps_screw(jtype, child, body_flags), twist_shift(V_P, p_C - p_P), twist_shift(A_P, p_C - p_P),
            dof_S_in, v_in,
        )  # fmt: skip
        body_twist_out[child] = V
        body_bias_acc_out[child] = A
        V_P = V
        A_P = A
        p_P = p_C


@wp.kernel
def flag_changed(
    # inputs
    entries_per_thread: int,
    q: wp.array(dtype=float),
    key_q: wp.array(dtype=float),
    qd: wp.array(dtype=float),
    key_qd: wp.array(dtype=float),
    # outputs (zeroed before)
    changed_out: wp.array(dtype=wp.int32),
):
    """``changed_out[0] = 1`` unless ``q = key_q`` and ``qd = key_qd`` entry by entry (a NaN never equals):
    whether the kinematics computed at ``(key_q, key_qd)`` are stale for ``(q, q̇)``. A thread compares a
    run of entries of each array (:func:`thread_slots`)."""
    begin, end = thread_slots(wp.tid(), entries_per_thread, q.shape[0])
    for i in range(begin, end):
        if q[i] != key_q[i]:
            changed_out[0] = 1
            return
    begin, end = thread_slots(wp.tid(), entries_per_thread, qd.shape[0])
    for i in range(begin, end):
        if qd[i] != key_qd[i]:
            changed_out[0] = 1
            return


@wp.kernel
def free_joint_pivots(
    # model
    body_joint: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_weld_start: wp.array(dtype=wp.int32),
    body_welded: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    # outputs
    body_pivot_M_out: wp.array(dtype=wp.vec3),
):
    """Per body b, in its joint's child frame M [m]: the COM of b and the bodies FIXED to it
    (``topology.body_welded``; their poses relative to b are ``X_p X_c⁻¹`` along the FIXED joints between), about
    which the position update turns a FREE or DISTANCE joint (``integration``) and whose centripetal term the rows
    take (:func:`forward_kinematics`); b's own COM for a group without mass. Refreshed at construction and by
    ``notify_model_changed`` with inertial or joint properties (as the kinematics kept across steps are); a body
    with nothing welded to it reads its COM from the model instead, every step."""
    b = wp.tid()
    mass = body_mass[b]
    moment = mass * body_com[b]
    for k in range(body_weld_start[b], body_weld_start[b + 1]):
        i = body_welded[k]
        X = wp.transform_identity()  # i's pose in b's frame
        x = i
        while x != b:
            j = body_joint[x]
            X = joint_X_p[j] * wp.transform_inverse(joint_X_c[j]) * X
            x = body_parent[x]
        mass += body_mass[i]
        moment += body_mass[i] * wp.transform_point(X, body_com[i])
    pivot = body_com[b]
    if body_weld_start[b + 1] > body_weld_start[b] and mass > 0.0:
        pivot = moment / mass
    body_pivot_M_out[b] = wp.transform_point(wp.transform_inverse(joint_X_c[body_joint[b]]), pivot)
