"""RNE bias forces and CRBA mass matrix about a per-tree reference point (seed §4-§5).

All quantities of one tree are expressed in world axes about the tree's COM ``r`` at ``q0`` (treated
as a point fixed in space for this instant), where twists, inertias and wrenches simply add.

Kernel order in a step: :func:`tree_reference_points` → :func:`body_inertia_and_bias` →
:func:`accumulate_composite` once per depth level (leaves → root) → :func:`mass_matrix_rows`; with
``coriolis="midpoint"`` then a free-motion solve (v̄), :func:`velocity_difference` (δ = v̄ − v0),
``kinematics.branch_twists_and_bias`` at v̄ and at δ, :func:`velocity_product_changes` and
:func:`velocity_product_forces` (``SolverSAP._midpoint_velocity_products``).
"""

import warp as wp

from .kinematic_bodies import body_is_kinematic, dof_is_kinematic
from .spatial import (
    Inertia10,
    ball_rotation_error,
    dot6,
    force_cross,
    inertia10_about,
    inertia10_apply,
    rotation_log_rate,
    rotational_inertia_about,
    twist_shift,
)
from .topology import JOINT_BALL, JOINT_DISTANCE, JOINT_FREE

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

GYROSCOPIC_MIN_MOMENT_RATIO = wp.constant(1e-4)
"""Smallest principal moment, relative to the largest, that :func:`free_rotation_torque` integrates: ``L_k`` along
the thin axis carries the eigendecomposition's residue (float32 ``eig3``, fixed Jacobi sweeps: up to 1.5e-5 of the
largest moment), which the rate ``L_k/I_k`` magnifies; at this ratio a rod's velocity is off by up to 0.04 Δt|ω|
per step (its spin then drifts no more than with ``ω × I ω``, helper review)."""

GYROSCOPIC_MIN_TURN = wp.constant(1e-3)
"""Turn per step Δt|ω| [rad] below which a step keeps a body's ``ω × I ω`` rather than taking
:func:`free_rotation_torque`: they differ by O(Δt|ω|) relative, a velocity change of 1e-6 |ω| per step
(float32's round-off), and the explicit term gains 1e-7 of the energy per step there. Bodies nearly at rest
skip the eigendecomposition (this kernel on a resting box stack of 1024 worlds: 0.52 ms per step, 2.3 without)."""


@wp.kernel
def tree_reference_points(
    # model
    tree_body_start: wp.array(dtype=wp.int32),
    tree_bodies: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    # inputs
    body_q_in: wp.array(dtype=wp.transform),
    # outputs
    tree_ref_out: wp.array(dtype=wp.vec3),
):
    """Tree COM ``r = Σ m_b c_b / Σ m_b`` [m] (root origin for a massless tree). Small lever arms
    ``c_b − r`` keep float32 cancellation low."""
    t = wp.tid()
    m_sum = float(0.0)
    mc = wp.vec3(0.0)
    first = tree_bodies[tree_body_start[t]]
    for k in range(tree_body_start[t], tree_body_start[t + 1]):
        b = tree_bodies[k]
        m_sum += body_mass[b]
        mc += body_mass[b] * wp.transform_point(body_q_in[b], body_com[b])
    r = wp.transform_get_translation(body_q_in[first])
    if m_sum > 0.0:
        r = mc / m_sum
    tree_ref_out[t] = r


@wp.func
def body_inertia_about(mass: float, com_local: wp.vec3, inertia_local: wp.mat33, X: wp.transform, r: wp.vec3):
    """Spatial inertia (``Inertia10``) about the point r [m] of a body of ``mass`` [kg] at pose ``X``, its COM
    ``com_local`` [m] and rotational inertia ``inertia_local`` [kg·m²] about the COM given in the body frame."""
    R = wp.quat_to_matrix(wp.transform_get_rotation(X))
    return inertia10_about(mass, wp.transform_point(X, com_local) - r, R * inertia_local * wp.transpose(R))


@wp.func
def body_gravity(gravity: wp.array(dtype=wp.vec3), body_world: wp.array(dtype=wp.int32), b: int):
    """Gravity [m/s²] acting on body b: its world's entry of ``Model.gravity``; for a global body (``body_world``
    -1, Newton's) the last entry, Newton's global gravity (after the worlds' own, or the one entry of a model
    without explicit worlds)."""
    world = body_world[b]
    if world < 0:
        world = gravity.shape[0] - 1
    return gravity[world]


@wp.func
def rotation_increment(L: wp.vec3, axis: wp.vec3, angle: float):
    """``R(axis, angle) L − L`` for a unit ``axis`` (Rodrigues, with ``1 − cos θ = 2 sin²(θ/2)`` so that small
    angles keep their digits)."""
    s = wp.sin(0.5 * angle)
    return wp.sin(angle) * wp.cross(axis, L) + 2.0 * s * s * (axis * wp.dot(axis, L) - L)


@wp.func
def free_rotation_torque(inertia: wp.mat33, omega: wp.vec3, dt: float):
    """Gyroscopic torque [N·m] of a freely rotating body over a step of ``dt`` [s]: ``(L − L̃)/Δt`` with
    ``L = I ω`` (``inertia`` [kg·m²] about the point the body turns about, ``omega`` [rad/s], world axes) and
    ``L̃`` the torque-free Euler equations ``L̇ = L × ∂H/∂L``, ``H = ½ Lᵀ I⁻¹ L``, integrated over Δt in the
    principal axes frozen at the step's start. ``H`` splits into ``½|L|²/I_m`` (I_m the middle principal moment;
    its flow leaves L in place) and ``½ L_k² (1/I_k − 1/I_m)`` for the two other axes k, each flow an exact
    rotation of L about axis k by ``−Δt L_k (1/I_k − 1/I_m)``. Strang's composition (a, then c, then a: second
    order) keeps ``|L|`` exactly and ``H`` up to O(Δt²) without drift, is exact for axisymmetric bodies and gives
    0 for isotropic ones; it tends to ``ω × I ω`` as Δt → 0. The explicit ``ω × I ω`` gains energy step after
    step once ``Δt|ω|`` nears 0.1 and diverges beyond 0.3 (a body tumbling at 30 rad/s at Δt = 0.01). An inertia
    whose smallest principal moment is below ``GYROSCOPIC_MIN_MOMENT_RATIO`` times its largest (a point mass, a
    needle) keeps ``ω × I ω``: the rate ``L_k/I_k`` about its thin axis would magnify the round-off in ``L_k``."""
    L = inertia * omega
    scale = wp.trace(inertia)
    if not (scale > 0.0):
        return wp.cross(omega, L)
    Q, d = wp.eig3(inertia / scale)  # unit trace: eig3 squares entries, which a 1e-21 or 1e19 kg·m² would lose
    d = d * scale
    if not (wp.min(d) > GYROSCOPIC_MIN_MOMENT_RATIO * wp.max(d)):
        return wp.cross(omega, L)
    mid = int(0)
    if (d[1] - d[0]) * (d[1] - d[2]) <= 0.0:
        mid = 1
    elif (d[2] - d[0]) * (d[2] - d[1]) <= 0.0:
        mid = 2
    a = (mid + 1) % 3
    c = (mid + 2) % 3
    axis_a = wp.vec3(Q[0, a], Q[1, a], Q[2, a])
    axis_c = wp.vec3(Q[0, c], Q[1, c], Q[2, c])
    rate_a = 1.0 / d[a] - 1.0 / d[mid]
    rate_c = 1.0 / d[c] - 1.0 / d[mid]
    dL = rotation_increment(L, axis_a, -0.5 * dt * rate_a * wp.dot(axis_a, L))
    dL += rotation_increment(L + dL, axis_c, -dt * rate_c * wp.dot(axis_c, L + dL))
    dL += rotation_increment(L + dL, axis_a, -0.5 * dt * rate_a * wp.dot(axis_a, L + dL))
    return -dL / dt


@wp.func
def integrated_gyroscopic_inertia(
    b: int,
    X: wp.transform,
    c: wp.vec3,
    I_com: wp.mat33,
    omega: wp.vec3,
    gyroscopic_dt: float,
    body_flags: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_joint: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_X_c: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    body_inertia: wp.array(dtype=wp.mat33),
    body_weld_start: wp.array(dtype=wp.int32),
    body_welded: wp.array(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
):
    """Whether body b (pose X, COM c [m], ``I_com`` [kg·m²] world axes, turning at ``omega`` [rad/s]) takes
    :func:`free_rotation_torque` over a step of ``gyroscopic_dt`` [s] in place of ``ω × I_p ω`` (1 or 0), and
    ``I_p``, the rotational inertia about the point it turns about (rule: :func:`body_inertia_and_bias`) of b and
    the bodies FIXED to it (``body_welded``, poses ``body_q``), which turn with it as one rigid body: the torque
    of all of them is integrated at b, and theirs stays in their own products (in which ``ω × I_p ω`` of the group
    cancels): a tumbling body split into a FREE root and a FIXED child (1 % of the inertia in the root) went NaN at
    84 rad/s and Δt = 0.01 where the whole body stays within 4 % of its energy."""
    j = body_joint[b]
    jtype = joint_type[j]
    if not (gyroscopic_dt * wp.length(omega) >= GYROSCOPIC_MIN_TURN) or body_is_kinematic(b, body_flags) == 1:
        return 0, I_com
    if jtype != JOINT_FREE and jtype != JOINT_DISTANCE and jtype != JOINT_BALL:
        return 0, I_com
    mass = body_mass[b]
    moment = mass * c
    for k in range(body_weld_start[b], body_weld_start[b + 1]):  # (never kinematic: only tree roots are)
        i = body_welded[k]
        mass += body_mass[i]
        moment += body_mass[i] * wp.transform_point(body_q[i], body_com[i])
    pivot = c
    if mass > 0.0:
        pivot = moment / mass  # the group's COM
    parent = body_parent[b]
    if jtype == JOINT_BALL and (parent < 0 or body_tree[parent] < 0 or body_is_kinematic(parent, body_flags) == 1):
        pivot = wp.transform_point(X, wp.transform_get_translation(joint_X_c[j]))  # the joint's centre, at rest
    I_p = rotational_inertia_about(body_mass[b], c - pivot, I_com)
    for k in range(body_weld_start[b], body_weld_start[b + 1]):
        i = body_welded[k]
        R = wp.quat_to_matrix(wp.transform_get_rotation(body_q[i]))
        c_i = wp.transform_point(body_q[i], body_com[i])
        I_p += rotational_inertia_about(body_mass[i], c_i - pivot, R * body_inertia[i] * wp.transpose(R))
    return 1, I_p


@wp.func
def velocity_product_wrench(I10: Inertia10, V: wp.spatial_vector, A: wp.spatial_vector):
    """RNE's velocity-product wrench ``I Ā + V ×* I V`` of a body of inertia ``I10`` with twist V and bias
    acceleration A (all about one point, world axes)."""
    return inertia10_apply(I10, A) + force_cross(V, inertia10_apply(I10, V))


@wp.kernel
def body_inertia_and_bias(
    # model
    tree_bodies: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    body_inertia: wp.array(dtype=wp.mat33),
    gravity: wp.array(dtype=wp.vec3),
    body_gravcomp: wp.array(dtype=float),
    body_joint: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_X_c: wp.array(dtype=wp.transform),
    body_weld_start: wp.array(dtype=wp.int32),
    body_welded: wp.array(dtype=wp.int32),
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    # inputs
    gyroscopic_dt: float,
    include_external: int,
    body_q_in: wp.array(dtype=wp.transform),
    body_twist_in: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_in: wp.array(dtype=wp.spatial_vector),
    body_f_in: wp.array(dtype=wp.spatial_vector),
    joint_f_in: wp.array(dtype=float),
    dof_S_in: wp.array(dtype=wp.spatial_vector),
    tree_ref_in: wp.array(dtype=wp.vec3),
    # outputs
    composite_inertia_out: wp.array(dtype=Inertia10),
    composite_force_out: wp.array(dtype=wp.spatial_vector),
    dof_S_tree_out: wp.array(dtype=wp.spatial_vector),
):
    """Per moving body, about its tree point r: the 10-number inertia ``I_b`` and the RNE bias wrench
    ``f_b = I_b Ā_b + V̄_b ×* I_b V̄_b − f_ext`` with ``Ā_b`` the bias acceleration shifted to r minus
    gravity (uniform field: ``[0; −g]``), less the fraction ``body_gravcomp`` of it that MuJoCo's gravity
    compensation cancels (``model.mujoco.gravcomp``: an upward force ``gravcomp · m g`` at the COM; zeros
    without). ``f_ext = [f; τ]`` [N, N·m] at the COM, world axes: the ``joint_f`` of the body's FREE/DISTANCE
    joint (Newton's convention) plus, when ``include_external = 1``, ``body_f``. Both seed the composite (subtree)
    sums. Also the motion columns of the body's own joint about r, ``S̄_k = [ω_k; v_k + ω_k × (r − p_b)]``, which
    CRBA and the constraint Jacobians read without the body pose. With ``gyroscopic_dt`` > 0 [s], a dynamic body whose
    own joint leaves its rotation free and that turns by ``GYROSCOPIC_MIN_TURN`` or more over that step takes
    :func:`free_rotation_torque` in place of its gyroscopic torque ``ω × I_p ω``, ``I_p`` its rotational inertia
    about the point p it turns about: the joint's centre on a BALL joint to the world, a static body or a kinematic
    one (with p at rest, ``V̄ ×* I V̄`` is ``ω × I_p ω`` plus a pure force; a kinematic parent moves as if infinitely
    heavy: a top on one at rest gained 52 % of its energy in 2 s at Δt = 5 ms about its COM, none about the joint),
    else the COM (FREE, DISTANCE, a BALL joint on a dynamic parent: taken about its centre, a light parent's motion
    would make the body's O(Δt) torque act through its parallel-axis inertia, and such a body lost 16 % of its
    energy in 2 s where the COM keeps it within 3 %). A kinematic body keeps ``ω × I ω``: the wrench that holds it
    to its prescribed spin. 0 gives the exact bias ``b(q, v)``."""
    k = wp.tid()
    b = tree_bodies[k]
    r = tree_ref_in[body_tree[b]]
    X = body_q_in[b]
    p = wp.transform_get_translation(X)
    c = wp.transform_point(X, body_com[b])
    R = wp.quat_to_matrix(wp.transform_get_rotation(X))
    I_com = R * body_inertia[b] * wp.transpose(R)  # about the COM, world axes
    I10 = inertia10_about(body_mass[b], c - r, I_com)
    V = twist_shift(body_twist_in[b], r - p)
    weight_acc = (1.0 - body_gravcomp[b]) * body_gravity(gravity, body_world, b)
    A_bias = twist_shift(body_bias_acc_in[b], r - p)
    A = A_bias - wp.spatial_vector(wp.vec3(0.0), weight_acc)
    f = velocity_product_wrench(I10, V, A)
    fe = wp.vec3(0.0)
    te = wp.vec3(0.0)
    j = body_joint[b]
    omega = wp.spatial_top(body_twist_in[b])
    integrated, I_pivot = integrated_gyroscopic_inertia(
        b, X, c, I_com, omega, gyroscopic_dt, body_flags, body_parent, body_tree, body_mass, body_joint, joint_type,
        joint_X_c, body_com, body_inertia, body_weld_start, body_welded, body_q_in,
    )  # fmt: skip
    if integrated == 1:
        gyroscopic = free_rotation_torque(I_pivot, omega, gyroscopic_dt) - wp.cross(omega, I_pivot * omega)
        f += wp.spatial_vector(gyroscopic, wp.vec3(0.0))
    if joint_type[j] == JOINT_FREE or joint_type[j] == JOINT_DISTANCE:
        s = joint_qd_start[j]
        fe = wp.vec3(joint_f_in[s], joint_f_in[s + 1], joint_f_in[s + 2])
        te = wp.vec3(joint_f_in[s + 3], joint_f_in[s + 4], joint_f_in[s + 5])
    if include_external == 1:
        fe += wp.spatial_top(body_f_in[b])
        te += wp.spatial_bottom(body_f_in[b])
    f = f - wp.spatial_vector(te + wp.cross(c - r, fe), fe)
    composite_inertia_out[b] = I10
    composite_force_out[b] = f
    d = body_last_dof[b]
    while d >= 0:
        if dof_body[d] != b:
            break  # an ancestor's dof (b's own joint has fewer, or none)
        dof_S_tree_out[d] = twist_shift(dof_S_in[d], r - p)
        d = dof_parent[d]


@wp.kernel
def accumulate_composite(
    # model
    level_bodies: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    # outputs (read and updated)
    composite_inertia: wp.array(dtype=Inertia10),
    composite_force: wp.array(dtype=wp.spatial_vector),
):
    """One depth level, leaves → root: ``I^c_parent += I^c_b`` and ``F^c_parent += F^c_b`` (all about
    the tree point, so plain sums)."""
    b = level_bodies[wp.tid()]
    p = body_parent[b]
    wp.atomic_add(composite_inertia, p, composite_inertia[b])
    wp.atomic_add(composite_force, p, composite_force[b])


@wp.kernel
def velocity_product_changes(
    # model
    tree_bodies: wp.array(dtype=wp.int32),
    tree_articulated: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=float),
    body_com: wp.array(dtype=wp.vec3),
    body_inertia: wp.array(dtype=wp.mat33),
    body_joint: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_X_c: wp.array(dtype=wp.transform),
    body_weld_start: wp.array(dtype=wp.int32),
    body_welded: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    body_q_in: wp.array(dtype=wp.transform),
    tree_ref_in: wp.array(dtype=wp.vec3),
    body_twist_in: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_in: wp.array(dtype=wp.spatial_vector),
    body_twist_mid_in: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_mid_in: wp.array(dtype=wp.spatial_vector),
    body_twist_delta_in: wp.array(dtype=wp.spatial_vector),
    body_bias_acc_delta_in: wp.array(dtype=wp.spatial_vector),
    # outputs
    wrench_out: wp.array(dtype=wp.spatial_vector),
):
    """Per body of an articulated tree (``tree_articulated``, per tree: ``topology.articulated_trees``), about its
    tree point r, the change of its velocity-product wrench ``w = I Ā + V̄ ×* I V̄`` (:func:`velocity_product_wrench`,
    quadratic in the velocities) from v0 (FK's twists and bias accelerations) to the midpoint velocities
    ``v̄ = v0 + δ`` (the ``_mid_in`` ones), linearized: ``w(v̄) − w(v0) − w(δ)`` (the ``_delta_in`` twists and bias
    accelerations are δ's), ``SolverSAP._midpoint_velocity_products``; 0 in a tree that moves as one rigid body.
    Where the step integrates the body's gyroscopic torque over ``dt`` [s] (:func:`integrated_gyroscopic_inertia`)
    that torque already spans the step: its part of the change, ``g(ω̄) − g(ω) − g(ω_δ)`` with ``g(ω) = ω × I_p ω``,
    is left out."""
    k = wp.tid()
    b = tree_bodies[k]
    t = body_tree[b]
    if tree_articulated[t] == 0:
        wrench_out[b] = wp.spatial_vector()  # one rigid body (alone, or with all the others welded to it)
        return
    r = tree_ref_in[t]
    X = body_q_in[b]
    p = wp.transform_get_translation(X)
    c = wp.transform_point(X, body_com[b])
    R = wp.quat_to_matrix(wp.transform_get_rotation(X))
    I_com = R * body_inertia[b] * wp.transpose(R)
    I10 = inertia10_about(body_mass[b], c - r, I_com)
    w = velocity_product_wrench(I10, twist_shift(body_twist_in[b], r - p), twist_shift(body_bias_acc_in[b], r - p))
    w_mid = velocity_product_wrench(
        I10, twist_shift(body_twist_mid_in[b], r - p), twist_shift(body_bias_acc_mid_in[b], r - p)
    )
    w_delta = velocity_product_wrench(
        I10, twist_shift(body_twist_delta_in[b], r - p), twist_shift(body_bias_acc_delta_in[b], r - p)
    )
    change = w_mid - w - w_delta
    omega = wp.spatial_top(body_twist_in[b])
    integrated, I_pivot = integrated_gyroscopic_inertia(
        b, X, c, I_com, omega, dt, body_flags, body_parent, body_tree, body_mass, body_joint, joint_type, joint_X_c,
        body_com, body_inertia, body_weld_start, body_welded, body_q_in,
    )  # fmt: skip
    if integrated == 1:
        omega_mid = wp.spatial_top(body_twist_mid_in[b])
        omega_delta = wp.spatial_top(body_twist_delta_in[b])
        gyroscopic = (
            wp.cross(omega_mid, I_pivot * omega_mid)
            - wp.cross(omega, I_pivot * omega)
            - wp.cross(omega_delta, I_pivot * omega_delta)
        )
        change -= wp.spatial_vector(gyroscopic, wp.vec3(0.0))
    wrench_out[b] = change


@wp.kernel
def velocity_product_forces(
    # model
    tree_body_start: wp.array(dtype=wp.int32),
    tree_bodies: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    # inputs
    dof_S_tree_in: wp.array(dtype=wp.spatial_vector),
    # outputs
    wrench: wp.array(dtype=wp.spatial_vector),
    tau_out: wp.array(dtype=float),
    composite_force_out: wp.array(dtype=wp.spatial_vector),
):
    """One thread per tree, bodies leaves → root (``tree_bodies`` lists parents first): each body's wrench change
    ``wrench`` (about the tree point, world axes; :func:`velocity_product_changes`) becomes its subtree sum
    ``W^c_b`` (read and updated in place), added to ``composite_force_out`` (the RNE composites that
    ``BODY_PARENT_F`` reads), and the joint-space forces ``−S̄_iᵀ W^c_b`` of its own joint's dofs (0 for a kinematic
    body's, outside the problem) are added to ``tau_out``."""
    t = wp.tid()
    for k in range(tree_body_start[t + 1] - 1, tree_body_start[t] - 1, -1):
        b = tree_bodies[k]
        W = wrench[b]
        parent = body_parent[b]
        if parent >= 0:
            if body_tree[parent] == t:
                wrench[parent] = wrench[parent] + W
        composite_force_out[b] = composite_force_out[b] + W
        kinematic = body_is_kinematic(b, body_flags)
        d = body_last_dof[b]
        while d >= 0:
            if dof_body[d] != b:
                break  # an ancestor's dof
            force = -dot6(dof_S_tree_in[d], W)
            if kinematic == 1:
                force = 0.0
            tau_out[d] = tau_out[d] + force
            d = dof_parent[d]


@wp.kernel
def velocity_difference(
    v_in: wp.array(dtype=float),
    v_ref_in: wp.array(dtype=float),
    # outputs
    difference_out: wp.array(dtype=float),
):
    """``δ_i = v_i − v_ref,i``."""
    i = wp.tid()
    difference_out[i] = v_in[i] - v_ref_in[i]


@wp.func
def ball_spring(
    i: int,
    axis: int,
    ball: int,
    dt: float,
    rs: int,
    dense: int,
    n: int,
    li: int,
    dof_public: wp.array(dtype=wp.int32),
    dof_local: wp.array(dtype=wp.int32),
    joint_stiffness: wp.array(dtype=float),
    joint_rest_q: wp.array(dtype=float),
    joint_q_in: wp.array(dtype=float),
    v0_in: wp.array(dtype=float),
    rows_out: wp.array(dtype=float),
    dense_out: wp.array(dtype=float),
):
    """The implicit spring of the BALL joint whose axis ``axis`` is dof i (its quaternion at ``ball`` in
    ``joint_q``), stiffness ``K = diag(k_0, k_1, k_2)`` [N·m/rad] per axis toward ``joint_rest_q``: a force on its
    error ``e = log(q q_rest⁻¹)`` whose rate is ``ė = J ω``, ``J = J_l⁻¹(e0)`` (``spatial.rotation_log_rate``), so
    the step solves ``M(v − v0) = Δt(… − Jᵀ K (e0 + Δt J v))``. Adds ``Δt² (JᵀKJ)_ab`` to row i of A (``b ≤ a = axis``:
    the joint's dofs are consecutive on one chain, axis b at offset ``a − b`` of the row; in the dense block the
    entry (a, b) below the diagonal and its mirror (b, a), the diagonal's the caller copies from the row) and returns
    ``(Jᵀ K (e0 + Δt J v0))_a``, what ``τ_i`` loses. Nothing where the joint has no stiffness."""
    first = i - axis
    K = wp.vec3(
        joint_stiffness[dof_public[first]],
        joint_stiffness[dof_public[first + 1]],
        joint_stiffness[dof_public[first + 2]],
    )
    if K[0] == 0.0 and K[1] == 0.0 and K[2] == 0.0:
        return float(0.0)  # the rotation's log only where a spring acts
    e = ball_rotation_error(joint_q_in, joint_rest_q, ball)
    J = rotation_log_rate(e)
    KJ = wp.diag(K) * J
    JtKJ = wp.transpose(J) * KJ
    for b in range(axis + 1):
        value = dt * dt * JtKJ[axis, b]
        rows_out[rs + axis - b] = rows_out[rs + axis - b] + value
        if dense >= 0 and b < axis:
            lj = dof_local[first + b]
            dense_out[dense + li * n + lj] = dense_out[dense + li * n + lj] + value
            dense_out[dense + lj * n + li] = dense_out[dense + lj * n + li] + value
    v0 = wp.vec3(v0_in[first], v0_in[first + 1], v0_in[first + 2])
    return (wp.transpose(J) * (wp.cw_mul(K, e + dt * (J * v0))))[axis]


@wp.kernel
def mass_matrix_rows(
    # model
    dof_public: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_local: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    body_tree: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    joint_armature: wp.array(dtype=float),
    joint_damping: wp.array(dtype=float),
    actuator_armature: wp.array(dtype=float),
    actuator_damping: wp.array(dtype=float),
    joint_stiffness: wp.array(dtype=float),
    joint_rest_q: wp.array(dtype=float),
    dof_coord: wp.array(dtype=wp.int32),
    dof_ball_quat: wp.array(dtype=wp.int32),
    dof_ball_axis: wp.array(dtype=wp.int32),
    dof_joint: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    passive: int,
    write_dense: int,
    joint_q_in: wp.array(dtype=float),
    v0_in: wp.array(dtype=float),
    dof_S_tree_in: wp.array(dtype=wp.spatial_vector),
    composite_inertia_in: wp.array(dtype=Inertia10),
    composite_force_in: wp.array(dtype=wp.spatial_vector),
    joint_f_in: wp.array(dtype=float),
    # outputs
    rows_out: wp.array(dtype=float),
    dense_out: wp.array(dtype=float),
    tau_out: wp.array(dtype=float),
    A_inv_diag_out: wp.array(dtype=float),
):
    """Row i of A and ``τ_i``, one thread per dof.

    ``S̄_i`` is S_i about the tree point (:func:`body_inertia_and_bias`); ``F_i = I^c_{b(i)} S̄_i``; for j
    on i's dof chain ``M_ij = S̄_jᵀ F_i`` (only the subtree of b(i) is moved by both). Armature [kg·m² or
    kg], the joint's and its MuJoCo actuators' (per Newton dof, ``mujoco_actuation.actuator_armature_and_damping``),
    joins the diagonal. ``τ_i = f_i − S̄_iᵀ F^c_{b(i)}`` (applied generalized force minus RNE bias), with
    ``f_i`` Newton's ``joint_f`` of the dof (0 for FREE/DISTANCE joints, whose ``joint_f`` is a wrench that
    :func:`body_inertia_and_bias` applies).

    With ``passive = 1`` the joint's damping d [N·s/m or N·m·s/rad] (every dynamic dof; its actuators' added) and
    stiffness k [N/m or N·m/rad] toward ``joint_rest_q`` are implicit: on scalar coordinates (REVOLUTE, PRISMATIC,
    D6) the step solves ``M(v − v0) = Δt(τ − d v − k (q0 + Δt v − q_rest))``, i.e. ``A = M + Δt d + Δt² k`` on the
    diagonal and ``τ_i −= d v0 + k (q0 + Δt v0 − q_rest)``; a BALL joint's stiffness acts on its error
    ``log(q0 q_rest⁻¹)`` through the error's exact rate (:func:`ball_spring`; with equal stiffness per axis MuJoCo's
    ball spring torque ``−k e``).
    Writes the sparse row (``A_ii, A_i,parent(i), ...``), ``1/A_ii`` (the constraints' Delassus
    estimates) and, for dense trees when ``write_dense = 1`` (the GPU's dense free motion, PCG's
    preconditioner), both triangles of the tree's dense block.

    A kinematic body's dof (``kinematic_bodies``: prescribed velocity) is decoupled: ``A_ij = 0`` for j ≠ i
    in its row and column, ``A_ii = 1`` (a placeholder pivot, its Δv is 0), ``τ_i = 0`` and ``1/A_ii`` written
    as 0."""
    i = wp.tid()
    b = dof_body[i]
    kinematic_i = body_is_kinematic(b, body_flags)
    t = body_tree[b]
    Si = dof_S_tree_in[i]
    Fi = inertia10_apply(composite_inertia_in[b], Si)
    di = dof_depth[i]
    rs = dof_row_start[i]
    dense = int(-1)
    if write_dense == 1:
        dense = dof_dense_offset[i]
    n = tree_dof_count[t]
    li = dof_local[i]
    j = i
    while j >= 0:
        Mij = dot6(dof_S_tree_in[j], Fi)
        if j == i:
            Mij += joint_armature[dof_public[i]] + actuator_armature[dof_public[i]]
            if kinematic_i == 1:
                Mij = 1.0
        elif kinematic_i == 1 or dof_is_kinematic(j, dof_body, body_flags) == 1:
            Mij = 0.0
        rows_out[rs + di - dof_depth[j]] = Mij
        if dense >= 0:
            lj = dof_local[j]
            dense_out[dense + li * n + lj] = Mij
            dense_out[dense + lj * n + li] = Mij
        j = dof_parent[j]
    f = float(0.0)
    jtype = joint_type[dof_joint[i]]
    if jtype != JOINT_FREE and jtype != JOINT_DISTANCE:
        f = joint_f_in[dof_public[i]]
    tau = f - dot6(Si, composite_force_in[b])
    if kinematic_i == 1:
        tau = 0.0
    elif passive == 1:
        pub = dof_public[i]
        d = joint_damping[pub] + actuator_damping[pub]
        k = float(0.0)
        spring = float(0.0)
        c = dof_coord[i]
        ball = dof_ball_quat[i]
        if c >= 0:
            k = joint_stiffness[pub]
            spring = joint_q_in[c] + dt * v0_in[i] - joint_rest_q[c]
        elif ball >= 0:
            tau -= ball_spring(i, dof_ball_axis[i], ball, dt, rs, dense, n, li, dof_public, dof_local, joint_stiffness,
                               joint_rest_q, joint_q_in, v0_in, rows_out, dense_out)  # fmt: skip
        tau -= d * v0_in[i] + k * spring
        diag = rows_out[rs] + dt * d + dt * dt * k
        rows_out[rs] = diag
        if dense >= 0:
            dense_out[dense + li * n + li] = diag
    tau_out[i] = tau
    if kinematic_i == 1:
        A_inv_diag_out[i] = 0.0  # outside the problem: no Delassus share, no weight in the optimality norms
    else:
        A_inv_diag_out[i] = 1.0 / rows_out[rs]
