"""Loop-closing joints as rigid bilateral constraints (SAP.md §5), frozen at ``q0`` for a step.

A loop joint pins frame F on the parent (``X_WP · joint_X_p``) to frame M on the child
(``X_WC · joint_X_c``). Each loop joint owns two constraint slots after the joint-space slots:

* slot 0, point coincidence (every type): rows ``v_c = v_C(p) − v_P(p)`` in world axes at the
  midpoint p of the two origins, violation ``g0 = p_M − p_F`` [m];
* slot 1, orientation: FIXED (weld) rows ``ω_C − ω_P`` in world axes, violation the rotation vector
  of ``R_WM R_WFᵀ`` [rad]; REVOLUTE rows ``u_k·(ω_C − ω_P)`` for the two directions u_k normal to
  the hinge axis, violation ``u_k·(a_F × a_M)`` (axes in world; the third row is unused); BALL: none.

Rows are rigid (near-rigid rule, β = 0.1, τ = Δt: ``bilateral.py``) with ``w = ‖Σ J_k J_kᵀ / A_kk‖_F / n``
per slot of n rows in use (3; 2 for the revolute's orientation); a slot no dof can move stays inactive
(``DEGENERATE_RATIO``).
"""

import warp as wp

from .constraints.bilateral import bilateral_parameters
from .constraints.dispatch import BILATERAL
from .jacobian import chain_rows, offset_velocity, tangent_frame
from .spatial import rotation_vector
from .topology import JOINT_FIXED, JOINT_REVOLUTE

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

DEGENERATE_RATIO = 1.0e-8
"""A slot with ``‖W‖_F ≤ this · Σ_k ‖m_k‖² / A_kk`` (``jacobian.chain_rows``: its rows against unit rows along
the dofs' own motions) has Jacobian rows of round-off size, within about 1e-4 rad of normal to every motion of the
chain: the mechanism satisfies it structurally (the tilt rows of a planar linkage's hinge closure), so it stays
inactive. Enforced, such rows would get a near-rigid compliance R ∝ w of round-off size and turn their round-off
violations into impulses of about ``violation / (Δt |J| R)``: a tumbling planar four-bar closed by a hinge gained
4× its kinetic energy in 2 s (an absolute cut at w = 1e-12 kg⁻¹ let its 1.5e-7 rows through, R = 8e-16)."""


@wp.func
def write_slot(
    slot: int,
    world: int,
    nnz: int,
    v_c0: wp.vec3,
    v_known: wp.vec3,
    w_norm: float,
    scale: float,
    g0: wp.vec3,
    used: wp.vec3,
    dt: float,
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
):
    """Fill the parameters of loop-closure ``slot`` (its Jacobian entries are written already): rigid
    bilateral rows with violation ``g0``, Delassus estimate ``w = ‖W‖_F / (rows in use)`` from ``w_norm`` and
    ``scale`` of :func:`jacobian.chain_rows` (inactive if degenerate) and velocity ``v_c0 = J v0`` at the step's
    start; the bias velocity less ``v_known``, the rows' velocity that is no unknown (kinematic bodies:
    ``jacobian.chain_rows``; the position update's velocity beyond ``J v``: ``jacobian.offset_velocity``);
    ``used`` masks the rows in play."""
    if w_norm <= DEGENERATE_RATIO * scale:
        return  # no dof moves these rows (e.g. the tilt rows of a planar linkage): nothing to constrain
    w = w_norm / (used[0] + used[1] + used[2])
    R, v0 = bilateral_parameters(g0[0], w, dt)
    R1, v1 = bilateral_parameters(g0[1], w, dt)
    R2, v2 = bilateral_parameters(g0[2], w, dt)
    c_world[slot] = world
    c_kind[slot] = BILATERAL
    c_R[slot] = wp.vec3(R, R1 * used[1] + (1.0 - used[1]), R2 * used[2] + (1.0 - used[2]))
    c_vhat[slot] = wp.cw_mul(wp.vec3(v0, v1, v2) - v_known, used)
    c_param[slot] = 0.0
    c_nnz[slot] = nnz
    c_vc[slot] = v_c0


@wp.kernel
def loop_rows(
    # model
    loop_joints: wp.array(dtype=wp.int32),
    loop_equality_row: wp.array(dtype=wp.int32),
    equality_enabled: wp.array(dtype=wp.bool),
    joint_type: wp.array(dtype=wp.int32),
    joint_enabled: wp.array(dtype=wp.bool),
    joint_parent: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_axis: wp.array(dtype=wp.vec3),
    joint_qd_start: wp.array(dtype=wp.int32),
    body_world: wp.array(dtype=wp.int32),
    body_last_dof: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_tree: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    # options
    base: int,
    dt: float,
    # inputs
    body_q: wp.array(dtype=wp.transform),
    tree_ref: wp.array(dtype=wp.vec3),
    dof_S_tree: wp.array(dtype=wp.spatial_vector),
    A_inv_diag: wp.array(dtype=float),
    body_free_centripetal: wp.array(dtype=wp.vec3),
    v0: wp.array(dtype=float),
    # outputs
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    c_vc: wp.array(dtype=wp.vec3),
):
    """Point and orientation slots of loop joint ``loop_joints[tid]`` (see module doc); both inactive while
    its ``joint_enabled`` is False (MJCF equalities with ``active="false"``) or the MuJoCo equality row it was
    made from, ``loop_equality_row[tid]`` (-1: none), is disabled (``mujoco_equalities``)."""
    k = wp.tid()
    j = loop_joints[k]
    slot = base + 2 * k
    c_world[slot] = -1
    c_world[slot + 1] = -1
    c_nnz[slot] = 0
    c_nnz[slot + 1] = 0
    row = loop_equality_row[k]
    if not joint_enabled[j] or (row >= 0 and not equality_enabled[row]):
        return
    P = joint_parent[j]
    C = joint_child[j]
    X_WP = wp.transform_identity()
    d_parent = int(-1)
    if P >= 0:
        X_WP = body_q[P]
        d_parent = body_last_dof[P]
    d_child = body_last_dof[C]
    if d_child < 0 and d_parent < 0:
        return
    world = body_world[C]
    if d_child < 0:
        world = body_world[P]
    X_WF = X_WP * joint_X_p[j]
    X_WM = body_q[C] * joint_X_c[j]
    p_F = wp.transform_get_translation(X_WF)
    p_M = wp.transform_get_translation(X_WM)
    p = 0.5 * (p_F + p_M)
    eye = wp.identity(n=3, dtype=float)
    nnz, v_c0, v_kinematic, w_norm, scale = chain_rows(slot, d_child, d_parent, eye, p, 0, tree_ref, dof_tree,
                                                       dof_parent, dof_S_tree, dof_body, body_flags, A_inv_diag, v0,
                                                       c_dof, c_J)  # fmt: skip
    # the point rows also move at the position update's velocity beyond J v (a translation: none on the angular rows)
    v_known = (
        v_kinematic + offset_velocity(C, body_free_centripetal, dt) - offset_velocity(P, body_free_centripetal, dt)
    )
    write_slot(slot, world, nnz, v_c0, v_known, w_norm, scale, p_M - p_F, wp.vec3(1.0), dt,
               c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_vc)  # fmt: skip
    jtype = joint_type[j]
    if jtype == JOINT_FIXED:
        q_err = wp.transform_get_rotation(X_WM) * wp.quat_inverse(wp.transform_get_rotation(X_WF))
        nnz, v_c0, v_known, w_norm, scale = chain_rows(slot + 1, d_child, d_parent, eye, p, 1, tree_ref, dof_tree,
                                                dof_parent, dof_S_tree, dof_body, body_flags, A_inv_diag, v0,
                                                c_dof, c_J)  # fmt: skip
        write_slot(slot + 1, world, nnz, v_c0, v_known, w_norm, scale, rotation_vector(q_err), wp.vec3(1.0), dt,
                   c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_vc)  # fmt: skip
    elif jtype == JOINT_REVOLUTE:
        axis = joint_axis[joint_qd_start[j]]
        a_F = wp.normalize(wp.transform_vector(X_WF, axis))
        a_M = wp.normalize(wp.transform_vector(X_WM, axis))
        frame = tangent_frame(a_F)
        u1 = wp.vec3(frame[0, 0], frame[1, 0], frame[2, 0])
        u2 = wp.vec3(frame[0, 1], frame[1, 1], frame[2, 1])
        rows = wp.matrix_from_rows(u1, u2, wp.vec3(0.0))
        nnz, v_c0, v_known, w_norm, scale = chain_rows(slot + 1, d_child, d_parent, rows, p, 1, tree_ref, dof_tree,
                                                dof_parent, dof_S_tree, dof_body, body_flags, A_inv_diag, v0,
                                                c_dof, c_J)  # fmt: skip
        tilt = wp.cross(a_F, a_M)
        violation = wp.vec3(wp.dot(u1, tilt), wp.dot(u2, tilt), 0.0)
        write_slot(slot + 1, world, nnz, v_c0, v_known, w_norm, scale, violation, wp.vec3(1.0, 1.0, 0.0), dt,
                   c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_vc)  # fmt: skip
