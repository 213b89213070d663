"""Constraint Jacobian rows along the dof chains of two bodies (contacts, loop closures).

A constraint between a child side C and a parent side P at a world point p has the rows
``v_c = rows · (v_C(p) − v_P(p))`` (point velocities) or ``rows · (ω_C − ω_P)`` (angular). Body velocities
are sums over the dofs of each body's chain, ``V = Σ S̄_k q̇_k`` with ``S̄_k = [ω_k; v̄_k]`` about the
tree's point r (its COM, see ``dynamics``); so the Jacobian entry of dof k is ``± rows · (v̄_k + ω_k × (p − r))``
(or ``± rows · ω_k``). Dofs shared by both chains (a self-contact or a loop closure within one tree) move
both sides alike: the walks stop at the chains' common ancestor.

Where only the rows' velocity is wanted (the parked contacts' checks), the body twists ``V_b = Σ S̄_k q̇_k``
over each body's chain (``body_chain_twists``) give it without entries: ``v(p) = v̄_b + ω_b × (p − r)``. Both
include the position update's velocity beyond ``J v`` (:func:`offset_velocity`).
"""

import warp as wp

from .kinematic_bodies import dof_is_kinematic

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def second_walk(c: int, nnz: int, c_dof: wp.array2d(dtype=wp.int32), dof_parent: wp.array(dtype=wp.int32)):
    """Entry where row c's second chain walk starts (``nnz``: one walk). A row's entries are at most two
    walks, each dof followed by its parent (:func:`chain_rows`; joint rows have one or two single dofs, a
    BALL drive's row its joint's three dofs as one walk), so each walk lies in one tree."""
    for e in range(1, nnz):
        if c_dof[c, e] != dof_parent[c_dof[c, e - 1]]:
            return e
    return nnz


@wp.func
def on_one_chain(x: int, y: int, dof_parent: wp.array(dtype=wp.int32), dof_depth: wp.array(dtype=wp.int32)):
    """Whether dofs x and y lie on one chain: one of them is the other or one of its ancestors (the pairs that
    A's sparsity, and so the tree LDLᵀ, couple)."""
    deep = x
    shallow = y
    if dof_depth[y] > dof_depth[x]:
        deep = y
        shallow = x
    while deep >= 0 and dof_depth[deep] > dof_depth[shallow]:
        deep = dof_parent[deep]
    return deep == shallow


@wp.func
def row_product(c: int, c_nnz: wp.array(dtype=wp.int32), c_dof: wp.array2d(dtype=wp.int32),
                c_J: wp.array2d(dtype=wp.vec3), x: wp.array(dtype=float)):  # fmt: skip
    """``J_c x`` of row c from its sparse entries (dof, 3-vector): ``Σ_e J_e x[dof_e]``."""
    out = wp.vec3(0.0)
    for e in range(c_nnz[c]):
        out += c_J[c, e] * x[c_dof[c, e]]
    return out


@wp.func
def tangent_frame(n: wp.vec3):
    """Rotation ``R_WC`` whose columns are two unit tangents and the unit normal ``n`` (last)."""
    a = wp.vec3(1.0, 0.0, 0.0)
    if wp.abs(n[0]) > 0.8:
        a = wp.vec3(0.0, 1.0, 0.0)
    t1 = wp.normalize(wp.cross(a, n))
    t2 = wp.cross(n, t1)
    return wp.matrix_from_cols(t1, t2, n)


@wp.func
def common_ancestor(a: int, b: int, dof_tree: wp.array(dtype=wp.int32), dof_parent: wp.array(dtype=wp.int32)):
    """Deepest dof on both chains of dofs ``a`` and ``b`` (each followed by its parents), or -1 (static sides,
    different trees, or branches that share no dof). Only rows within one tree walk both chains."""
    if a < 0 or b < 0:
        return -1
    if dof_tree[a] != dof_tree[b]:
        return -1
    x = a
    while x >= 0:
        y = b
        while y >= 0:
            if y == x:
                return x
            y = dof_parent[y]
        x = dof_parent[x]
    return -1


@wp.func
def chain_rows(
    slot: int,
    d_child: int,
    d_parent: int,
    rows: wp.mat33,
    p: wp.vec3,
    angular: int,
    tree_ref: wp.array(dtype=wp.vec3),
    dof_tree: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    dof_body: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    A_inv_diag: wp.array(dtype=float),
    v: wp.array(dtype=float),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
):
    """Jacobian entries ``± rows · (point velocity at p)`` (or ``± rows · ω``) along the child (+) and
    parent (−) dof chains, each up to (without) their common ancestor; returns the entry count, the rows'
    velocity ``J v`` [m/s or rad/s] at the dof velocities ``v`` (summed as :func:`row_product` does, while
    the entries are at hand), the velocity ``J_k v_k`` summed over the kinematic bodies' dofs, which get no
    entry (``kinematic_bodies``: the caller subtracts it from the rows' bias velocity), and ``‖W‖_F`` of
    ``W = Σ_k J_k J_kᵀ / A_kk`` over the entries (symmetric: its diagonal and upper entries are summed; 0 when
    no dof moves the rows): the Delassus estimate of SAP.md §4 is ``w = ‖W‖_F / (rows in use)``; and the same
    sum's scale for unit rows along each dof's own motion, ``Σ_k ‖m_k‖² / A_kk`` (``m_k`` the point velocity or
    ω of dof k), an upper bound of ``‖W‖_F`` for orthonormal rows, which tells rows that no dof moves apart from
    rows that are merely light or heavy.
    ``dof_S_tree`` holds the motion columns about each tree's point ``tree_ref`` (``S̄_k = [ω_k; v̄_k]``), so
    the point velocity is ``v̄_k + ω_k × (p − r)``: one lever arm per walk, no body pose per dof."""
    W_diag = wp.vec3(0.0)
    W_upper = wp.vec3(0.0)  # W_01, W_02, W_12
    shared = common_ancestor(d_child, d_parent, dof_tree, dof_parent)
    e = int(0)
    v_c = wp.vec3(0.0)
    v_kinematic = wp.vec3(0.0)
    scale = float(0.0)
    for side in range(2):
        k = d_child
        sign = float(1.0)
        if side == 1:
            k = d_parent
            sign = -1.0
        if k < 0:
            continue
        lever = p - tree_ref[dof_tree[k]]
        while k != shared:  # shared = -1 unless both chains lie in one tree: then the walk ends at the root
            S = dof_S_tree[k]
            motion = wp.spatial_top(S)
            if angular == 0:
                motion = wp.spatial_bottom(S) + wp.cross(motion, lever)
            Jk = sign * (rows * motion)
            if dof_is_kinematic(k, dof_body, body_flags) == 1:
                v_kinematic += Jk * v[k]
                k = dof_parent[k]
                continue
            c_dof[slot, e] = k
            c_J[slot, e] = Jk
            v_c += Jk * v[k]
            Jk_scaled = Jk * A_inv_diag[k]
            W_diag += wp.cw_mul(Jk, Jk_scaled)
            W_upper += wp.vec3(Jk[0] * Jk_scaled[1], Jk[0] * Jk_scaled[2], Jk[1] * Jk_scaled[2])
            scale += wp.dot(motion, motion) * A_inv_diag[k]
            e += 1
            k = dof_parent[k]
    return e, v_c, v_kinematic, wp.sqrt(wp.dot(W_diag, W_diag) + 2.0 * wp.dot(W_upper, W_upper)), scale


@wp.func
def chain_twist(
    b: int,
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    v: wp.array(dtype=float),
):
    """``Σ_k S̄_k v_k`` over body b's dof chain (``S̄_k`` about its tree's point): its twist ``[ω; v̄]`` at the
    dof velocities ``v`` (or its acceleration at dof accelerations); zero for a body without dofs."""
    twist = wp.spatial_vector()
    k = body_last_dof[b]
    while k >= 0:
        twist += dof_S_tree[k] * v[k]
        k = dof_parent[k]
    return twist


@wp.kernel
def body_chain_twists(
    # model
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    # inputs
    dt: float,
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    body_free_centripetal: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=float),
    # outputs
    body_twist_out: wp.array(dtype=wp.spatial_vector),
):
    """Per body, its twist ``V_b = Σ_k S̄_k v_k + [0; u_b] = [ω; v̄]`` [rad/s; m/s] at the dof velocities ``v`` as
    the step's position update moves it (``u_b`` from :func:`offset_velocity`), summed over its dof chain, with
    the linear part at its tree's point (``S̄_k`` about ``tree_ref``); zero for a body without dofs."""
    b = wp.tid()
    twist = chain_twist(b, body_last_dof, dof_parent, dof_S_tree, v)
    body_twist_out[b] = twist + wp.spatial_vector(wp.vec3(0.0), offset_velocity(b, body_free_centripetal, dt))


@wp.func
def point_velocity(
    body: int,
    p: wp.vec3,
    body_tree: wp.array(dtype=wp.int32),
    tree_ref: wp.array(dtype=wp.vec3),
    body_twist: wp.array(dtype=wp.spatial_vector),
):
    """Velocity [m/s] of the world point p [m] moving with ``body`` (``body_chain_twists``): ``v̄ + ω × (p − r)``;
    zero for no body (-1) or a body outside the trees."""
    if body < 0:
        return wp.vec3(0.0)
    t = body_tree[body]
    if t < 0:
        return wp.vec3(0.0)
    twist = body_twist[body]
    return wp.spatial_bottom(twist) + wp.cross(wp.spatial_top(twist), p - tree_ref[t])


@wp.func
def offset_velocity(body: int, body_free_centripetal: wp.array(dtype=wp.vec3), dt: float):
    """``u_b = Δt Σ R_WF (ω × (ω × r))`` [m/s]: the velocity a step's position update gives every point of
    ``body`` beyond its Jacobian velocity, from the FREE joints on its chain (``integration``; the sum is
    ``kinematics.forward_kinematics``'s ``body_free_centripetal``); zero for no body (-1)."""
    if body < 0:
        return wp.vec3(0.0)
    return dt * body_free_centripetal[body]
