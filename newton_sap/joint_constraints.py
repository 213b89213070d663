"""Joint-space constraint rows (SAP.md §5), frozen at ``q0`` for a step, on the scalar-coordinate
dofs (REVOLUTE, PRISMATIC, D6): PD drives, joint limits, joint dry friction and mimic couplings; on the dofs of
BALL joints (their angular velocity ω about the axes of the joint's parent frame F): PD drives and joint dry
friction. A BALL drive's position error along axis k is the k-th component of ``e = log(q q_d⁻¹)`` [rad], the
rotation vector in F from the target rotation ``q_d`` (``joint_target_q``, a quaternion like ``joint_q``) to the
joint's ``q``; as ``q`` turns by ``exp(Δt ω) q`` in a step, ``e ≈ e0 + Δt J_l⁻¹(e0) ω`` to first order in Δt
(``spatial.rotation_log_rate``), so the drive on axis k is a scalar PD on ``e_k`` whose row is
``v_c = ė_k = J_l⁻¹(e0)_k · ω`` over the joint's three dofs (the scalar drive's ``q0 + Δt v``; its torque
``J_l⁻¹(e0)_kᵀ γ`` is the gradient of ``½ Kp e_k²``, so the drive adds no energy; ``e ≈ e0 + Δt ω``, first order in
e, let a stiff axis drift by ``½Δt (e × ω)_k`` a step and pumped energy into random trees until they exploded). A
BALL drive without a position gain is a velocity drive on ``ω_k``. Efforts and friction are per axis of F, but a
BALL drive with a position gain takes its feed-forward ``joint_act`` and its effort limit as a force on ``e_k`` like
the rest of its impulse: the torque ``J_l⁻¹(e0)_kᵀ u`` is ``u`` about axis k where e is small, and at least ``|u|``
(e = 2 rad about y: a feed-forward of 1 N·m about x acts as (0.64, 0, −1.0) N·m).

Each internal dof i owns ``SLOTS_PER_DOF`` constraint slots after the contacts, at
``base + k·n + i``: k = 0 drive, 1 lower limit, 2 upper limit, 3 friction, 4 mimic (i the
follower); an unused slot has world -1. All are one-row constraints stored in row 0 of the slot:
``J = ±e_i``, ``e_i − ρ e_leader`` for a mimic, a row of ``J_l⁻¹(e0)`` over a BALL joint's dofs for its drive.
"""

import newton
import numpy as np
import warp as wp

from .constraints.bilateral import bilateral_parameters
from .constraints.dispatch import BILATERAL, JOINT_FRICTION, JOINT_LIMIT, PD_DRIVE
from .constraints.friction_cone import TWO_PI_SQ, unilateral_bias_velocity
from .constraints.pd_drive import pd_drive_parameters
from .kinematic_bodies import dof_is_kinematic
from .mujoco_equalities import TARGET_MIMIC, row_enabled, rows_targeting
from .spatial import ball_rotation_error, rotation_log_rate

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

LIMIT_NEAR_RIGID_BETA = 0.1
"""β of joint limits (Drake's value)."""
MODE_POSITION = wp.constant(int(newton.JointTargetMode.POSITION))
MODE_VELOCITY = wp.constant(int(newton.JointTargetMode.VELOCITY))
MODE_POSITION_VELOCITY = wp.constant(int(newton.JointTargetMode.POSITION_VELOCITY))
NO_LIMIT = 0.5 * newton.MAXVAL
"""Limits beyond this magnitude mean "no limit" (Newton uses ±MAXVAL)."""
SLOTS_PER_DOF = wp.constant(5)
MIMIC_JOINT_TYPES = {int(newton.JointType.REVOLUTE), int(newton.JointType.PRISMATIC), int(newton.JointType.D6)}


def newton_drive_dofs(model: newton.Model) -> np.ndarray:
    """Per Newton dof, whether Newton's joint drive acts there: :func:`drive_gains` of its target mode and gains gives
    a positive gain."""
    mode = model.joint_target_mode.numpy()
    ke, kd = model.joint_target_ke.numpy(), model.joint_target_kd.numpy()
    position = np.isin(mode, (int(newton.JointTargetMode.POSITION), int(newton.JointTargetMode.POSITION_VELOCITY)))
    velocity = mode == int(newton.JointTargetMode.VELOCITY)
    return (position & ((ke > 0.0) | (kd > 0.0))) | (velocity & (kd > 0.0))


def mimic_couplings(model: newton.Model) -> list[tuple[int, int, float, float]]:
    """Every active mimic coupling of ``model`` as ``(follower joint, leader joint, offset, multiplier)``:
    the enabled rows of Newton's mimic constraints ``constraint_mimic_*`` (how Newton's MJCF importer brings
    ``<equality><joint>`` couplings of scalar joints; deprecated for builders, still what the importer writes) and
    the per-joint ``joint_mimic_joint/coeffs`` (URDF mimics) of joints that follow in no such row. A row, enabled or
    not, takes precedence over its follower's per-joint mimic, as in Newton's ``SolverMuJoCo``: disabling it frees
    the follower. A row made from a MuJoCo equality also needs that equality enabled (``mujoco_equalities``)."""
    couplings = []
    rows_follow = set()
    if getattr(model, "constraint_mimic_count", 0):
        follower, leader = model.constraint_mimic_joint0.numpy(), model.constraint_mimic_joint1.numpy()
        offset, multiplier = model.constraint_mimic_coef0.numpy(), model.constraint_mimic_coef1.numpy()
        enabled = model.constraint_mimic_enabled.numpy().astype(bool)
        equality = rows_targeting(model, TARGET_MIMIC, model.constraint_mimic_count)
        if (equality >= 0).any():
            enabled &= np.where(equality >= 0, row_enabled(model)[np.maximum(equality, 0)], True)
        rows_follow = {int(j) for j in follower[: model.constraint_mimic_count]}
        couplings += [
            (int(follower[c]), int(leader[c]), float(offset[c]), float(multiplier[c]))
            for c in range(model.constraint_mimic_count)
            if enabled[c]
        ]
    if model.joint_mimic_joint is not None and model.joint_count:
        mimic, coeffs = model.joint_mimic_joint.numpy(), model.joint_mimic_coeffs.numpy()
        couplings += [
            (int(j), int(mimic[j]), *map(float, coeffs[j])) for j in np.nonzero(mimic >= 0)[0] if j not in rows_follow
        ]
    return couplings


def mimic_tables(model: newton.Model, topo) -> tuple[np.ndarray, np.ndarray]:
    """Per internal dof: the internal dof it mimics (-1: none) and ``(offset, multiplier)`` with
    ``q = offset + multiplier · q_leader``, from :func:`mimic_couplings`.

    Raises:
        ModelError: a mimic between joints of different worlds, of an unsupported type, or of
            different dof counts, of a loop-closing joint (not a coordinate), of a joint with itself or with
            non-finite coefficients, or a joint that mimics two joints; the message names the follower joint.
    """
    from .topology import ModelError, entity_label, model_labels

    leader = np.full(topo.dof_count, -1, np.int32)
    coeffs = np.zeros((topo.dof_count, 2), np.float32)
    couplings = mimic_couplings(model)
    if not couplings or topo.dof_count == 0:
        return leader, coeffs
    jtype = model.joint_type.numpy()
    labels = model_labels(model, "joint")
    dim = model.joint_dof_dim.numpy().sum(axis=1)
    internal = {(int(topo.dof_joint[i]), int(topo.dof_public[i])): i for i in range(topo.dof_count)}
    qd_start = model.joint_qd_start.numpy()
    body_world = topo.body_world
    jchild = model.joint_child.numpy()
    for j, ref, offset, multiplier in couplings:
        name = entity_label(labels, j, "joint")
        if jtype[j] not in MIMIC_JOINT_TYPES or jtype[ref] not in MIMIC_JOINT_TYPES:
            raise ModelError(f"{name} mimics joint {ref}: only REVOLUTE, PRISMATIC and D6 joints can be coupled")
        if j == ref:
            raise ModelError(f"{name} mimics itself")
        if not (topo.joint_in_tree[j] and topo.joint_in_tree[ref]):
            raise ModelError(f"{name} mimics joint {ref}: a loop-closing joint has no coordinates to couple")
        if not (np.isfinite(offset) and np.isfinite(multiplier)):
            raise ModelError(f"{name} mimics joint {ref} with non-finite coefficients ({offset}, {multiplier})")
        if dim[j] != dim[ref]:
            raise ModelError(f"{name} mimics joint {ref} with a different number of dofs")
        if body_world[jchild[j]] != body_world[jchild[ref]]:
            raise ModelError(f"{name} mimics joint {ref} of another world")
        for k in range(int(dim[j])):
            i = internal[(j, int(qd_start[j]) + k)]
            if leader[i] >= 0:
                raise ModelError(f"{name} mimics two joints (two enabled constraint_mimic_* rows)")
            leader[i] = internal[(ref, int(qd_start[ref]) + k)]
            coeffs[i] = (offset, multiplier)
    return leader, coeffs


@wp.func
def drive_gains(mode: int, ke: float, kd: float):
    """``(Kp, Kd)`` of a dof's drive by Newton's target mode: POSITION and POSITION_VELOCITY use both
    gains, VELOCITY only Kd; NONE and EFFORT have no drive."""
    kp = float(0.0)
    kv = float(0.0)
    if mode == MODE_POSITION or mode == MODE_POSITION_VELOCITY:
        kp = ke
        kv = kd
    elif mode == MODE_VELOCITY:
        kv = kd
    return kp, kv


@wp.func
def write_row(
    slot: int,
    world: int,
    kind: int,
    dof: int,
    sign: float,
    R: float,
    v_hat: float,
    parameter: float,
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    v0: wp.array(dtype=float),
    c_vc: wp.array(dtype=wp.vec3),
):
    """Fill constraint ``slot`` with a one-dof row ``v_c = sign · v[dof]`` of ``kind`` (compliance R, bias
    velocity v̂, type parameter) in ``world``, and its velocity ``sign · v0[dof]`` at the step's start."""
    c_world[slot] = world
    c_kind[slot] = kind
    c_R[slot] = wp.vec3(R, 1.0, 1.0)
    c_vhat[slot] = wp.vec3(v_hat, 0.0, 0.0)
    c_param[slot] = parameter
    c_nnz[slot] = 1
    c_dof[slot, 0] = dof
    c_J[slot, 0] = wp.vec3(sign, 0.0, 0.0)
    c_vc[slot] = wp.vec3(sign * v0[dof], 0.0, 0.0)


@wp.func
def limit_compliance_and_time(
    limit_stiffness: float, limit_dissipation_time: float, ke: float, kd: float, dt: float, w_est: float
):
    """A limit's compliance R [rad/(N·m·s) or m/(N·s)] and dissipation time τ_d [s]: stiffness and dissipation
    from the options when given (> 0, ≥ 0), else Newton's ``joint_limit_ke`` and ``joint_limit_kd / ke``
    (τ_d = Δt if negative); R no smaller than the near-rigid ``β² w / (4π²)``."""
    k = limit_stiffness
    tau_d = limit_dissipation_time
    if k <= 0.0:
        k = ke
        tau_d = kd / ke
    if tau_d < 0.0:
        tau_d = dt
    R = wp.max(LIMIT_NEAR_RIGID_BETA * LIMIT_NEAR_RIGID_BETA * w_est / TWO_PI_SQ, 1.0 / (dt * k * (dt + tau_d)))
    return R, tau_d


@wp.func
def limit_side(side: int, q0: float, lower: float, upper: float):
    """Side 0 (lower) or 1 (upper) of a dof's limit at ``q0``: the sign of its row ``±e_i``, its gap ``g0``
    (``q0 − lower``, ``upper − q0``) and whether that side is set (not ±``NO_LIMIT``). Its slot is
    ``base + (1 + side)·n + i``."""
    if side == 0:
        return float(1.0), q0 - lower, lower > -NO_LIMIT
    return float(-1.0), upper - q0, upper < NO_LIMIT


@wp.func
def write_rate_entries(
    slot: int,
    first: int,
    rate: wp.vec3,
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    v0: wp.array(dtype=float),
    c_vc: wp.array(dtype=wp.vec3),
):
    """Make the one-row constraint ``slot`` ``v_c = rate · (v[first], v[first + 1], v[first + 2])`` (a BALL joint's
    three dofs), with its velocity at the step's start from ``v0``. The entries run from the last dof to the first,
    each followed by its parent: one chain walk (``jacobian.second_walk``)."""
    c_nnz[slot] = 3
    v_c = float(0.0)
    for e in range(3):
        k = 2 - e
        c_dof[slot, e] = first + k
        c_J[slot, e] = wp.vec3(rate[k], 0.0, 0.0)
        v_c += rate[k] * v0[first + k]
    c_vc[slot] = wp.vec3(v_c, 0.0, 0.0)


@wp.kernel
def joint_constraint_rows(
    # model
    dof_public: wp.array(dtype=wp.int32),
    dof_coord: wp.array(dtype=wp.int32),
    dof_ball_quat: wp.array(dtype=wp.int32),
    dof_ball_axis: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    joint_target_mode: wp.array(dtype=wp.int32),
    joint_target_ke: wp.array(dtype=float),
    joint_target_kd: wp.array(dtype=float),
    joint_effort_limit: wp.array(dtype=float),
    joint_limit_lower: wp.array(dtype=float),
    joint_limit_upper: wp.array(dtype=float),
    joint_limit_ke: wp.array(dtype=float),
    joint_limit_kd: wp.array(dtype=float),
    joint_friction: wp.array(dtype=float),
    dof_mimic_leader: wp.array(dtype=wp.int32),
    dof_mimic_coeffs: wp.array(dtype=wp.vec2),
    # options
    limit_stiffness: float,
    limit_dissipation_time: float,
    friction_regularization: float,
    base: int,
    dt: float,
    # inputs
    joint_q: wp.array(dtype=float),
    target_q: wp.array(dtype=float),
    target_qd: wp.array(dtype=float),
    joint_act: wp.array(dtype=float),
    dof_servo_drive: wp.array(dtype=wp.vec4),
    dof_dampratio_kd: wp.array(dtype=float),
    dof_drive_ranges: wp.array(dtype=wp.vec4),
    v0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    A_inv_diag: wp.array(dtype=float),
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
    world_failed_out: wp.array(dtype=wp.int32),
):
    """Drive, limit, friction and mimic rows of dof i, with their velocities ``J v0`` at the step's start (a BALL
    joint's dof: drive and friction rows, its drive's position the axis' component of ``ball_rotation_error`` with
    target 0 and, with a position gain, its row that component's rate over the joint's dofs, its Delassus estimate
    ``Σ_k J_k² / A_kk``). The drive is Newton's (``joint_target_*``, feed-forward ``joint_act``; a POSITION drive with
    ``joint_target_kd`` 0 takes ``dof_dampratio_kd``, its imported ``dampratio`` resolved, 0 without) where its
    gains act, else a MuJoCo servo's (``dof_servo_drive`` ``(Kp, Kd, q_target, v_target)``) where it has one;
    ``dof_drive_ranges`` ``(t_lo, t_hi, u_ff, e)`` with ``e ≥ 0`` bound its target (by mode), add to its
    feed-forward and set its effort range (``mujoco_actuation.mujoco_drives``: the MJCF actuator's ranges, what the
    motors leave of the effort limit). A limit side is added when violated or when the step may reach it, ``g0 ≤ 2
    Δt max(|v0|, |v0 + Δt τ/A_ii|)`` (SAP.md §5's window, v* estimated from diag(A)); the window does not see what
    drives, contacts, mimics or other dofs' forces do, so the sides left out are checked at the solution
    (``check_left_out_limits``). A kinematic body's dof (prescribed) has no drive, limit or friction rows; a mimic
    row has no entry for a kinematic side (leader or follower), whose velocity moves into v̂ (``kinematic_bodies``),
    and none at all when both sides are kinematic. Limit compliance: ``limit_compliance_and_time``. A NaN among the
    model values a dynamic dof's rows read (gains, effort limit, limits, their stiffness and damping when used,
    friction: written without ``notify_model_changed``, which refuses them) marks its world in ``world_failed_out``,
    which the solve then leaves out: a NaN gain would push with the full effort limit, a NaN limit or friction
    drop its row."""
    i = wp.tid()
    n = dof_public.shape[0]
    for k in range(SLOTS_PER_DOF):
        c_world[base + k * n + i] = -1
        c_nnz[base + k * n + i] = 0
    c = dof_coord[i]
    ball = dof_ball_quat[i]
    if c < 0 and ball < 0:
        return  # a FREE or DISTANCE joint's dof: no joint rows
    p = dof_public[i]
    w = dof_world[i]
    w_est = A_inv_diag[i]
    q0 = float(0.0)  # the drive's position [m or rad] and target: a scalar coordinate, or a BALL axis' error (below)
    q_target = float(0.0)
    if c >= 0:
        q0 = joint_q[c]
        q_target = target_q[c]
    leader = dof_mimic_leader[i]  # scalar dofs only (mimic_tables)
    if leader >= 0:
        coeffs = dof_mimic_coeffs[i]
        g0 = q0 - coeffs[1] * joint_q[dof_coord[leader]] - coeffs[0]
        # 1/A_ii is 0 for a kinematic dof: no share in the Delassus estimate
        w_m = w_est + coeffs[1] * coeffs[1] * A_inv_diag[leader]
        if w_m > 0.0:  # some dof of the row is dynamic
            R_m, v_hat_m = bilateral_parameters(g0, w_m, dt)
            slot = base + 4 * n + i
            # v_c = v_i − ρ v_leader: a kinematic side's velocity is given and moves into v̂
            leader_kinematic = dof_is_kinematic(leader, dof_body, body_flags)
            row_dof = i
            row_sign = float(1.0)
            if leader_kinematic == 1:
                v_hat_m += coeffs[1] * v0[leader]
            elif dof_is_kinematic(i, dof_body, body_flags) == 1:
                row_dof = leader
                row_sign = -coeffs[1]
                v_hat_m -= v0[i]
            write_row(slot, w, BILATERAL, row_dof, row_sign, R_m, v_hat_m, 0.0,
                      c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J, v0, c_vc)  # fmt: skip
            if row_dof == i and leader_kinematic == 0:  # both sides unknowns: the leader's entry too
                c_nnz[slot] = 2
                c_dof[slot, 1] = leader
                c_J[slot, 1] = wp.vec3(-coeffs[1], 0.0, 0.0)
                c_vc[slot] = c_vc[slot] + c_J[slot, 1] * v0[leader]
    if dof_is_kinematic(i, dof_body, body_flags) == 1:
        return  # prescribed: no drive, limit or friction rows
    kd = joint_target_kd[p]
    if kd == 0.0 and joint_target_mode[p] == MODE_POSITION:
        kd = dof_dampratio_kd[p]
    kp, kv = drive_gains(joint_target_mode[p], joint_target_ke[p], kd)
    v_target = float(target_qd[p])
    u_ff = float(joint_act[p])
    effort = float(joint_effort_limit[p])
    if kp <= 0.0 and kv <= 0.0:  # no Newton drive: a MuJoCo servo's, if any
        servo = dof_servo_drive[p]
        kp = servo[0]
        kv = servo[1]
        q_target = servo[2]
        v_target = servo[3]
        u_ff = 0.0
    gains = kp + kv + joint_friction[p]
    if limit_stiffness <= 0.0:
        gains += joint_limit_ke[p] + joint_limit_kd[p]
    if wp.isnan(gains) or wp.isnan(effort) or wp.isnan(joint_limit_lower[p]) or wp.isnan(joint_limit_upper[p]):
        world_failed_out[w] = 1  # (limits and effort may be ±inf: none)
    ranges = dof_drive_ranges[p]
    if ranges[3] >= 0.0:  # the MJCF actuator's ranges, the effort the motors leave
        if joint_target_mode[p] == MODE_POSITION:
            q_target = wp.clamp(q_target, ranges[0], ranges[1])
        elif joint_target_mode[p] == MODE_VELOCITY:
            v_target = wp.clamp(v_target, ranges[0], ranges[1])
        u_ff += ranges[2]
        effort = ranges[3]
    if kp > 0.0 or kv > 0.0:
        ball_position = c < 0 and kp > 0.0  # a BALL axis with a position gain: its error from the target, target 0
        axis = dof_ball_axis[i]
        rate = wp.vec3(0.0)  # the error's rate per joint ω, ė_axis = rate · ω (row axis of J_l⁻¹(e))
        w_drive = w_est
        if ball_position:
            e = ball_rotation_error(joint_q, target_q, ball)
            q0 = e[axis]
            rate = rotation_log_rate(e)[axis]
            first = i - axis  # the joint's dofs are ω's axes 0, 1, 2 in order
            w_drive = float(0.0)
            for k in range(3):
                w_drive += rate[k] * rate[k] * A_inv_diag[first + k]
        R, v_hat = pd_drive_parameters(kp, kv, q0, q_target, v_target, u_ff, dt, w_drive)
        write_row(base + i, w, PD_DRIVE, i, 1.0, R, v_hat, dt * effort,
                  c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J, v0, c_vc)  # fmt: skip
        if ball_position:
            write_rate_entries(base + i, i - axis, rate, c_nnz, c_dof, c_J, v0, c_vc)
    R_lim, tau_d = limit_compliance_and_time(
        limit_stiffness, limit_dissipation_time, joint_limit_ke[p], joint_limit_kd[p], dt, w_est
    )
    reach = 2.0 * dt * wp.max(wp.abs(v0[i]), wp.abs(v0[i] + dt * tau[i] * w_est))
    for side in range(2):
        sign, g0, limited = limit_side(side, q0, joint_limit_lower[p], joint_limit_upper[p])
        if c >= 0 and limited and g0 <= reach:  # limits on scalar coordinates only
            v_hat = unilateral_bias_velocity(g0, dt, tau_d)
            write_row(base + (1 + side) * n + i, w, JOINT_LIMIT, i, sign, R_lim, v_hat, 0.0,
                      c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J, v0, c_vc)  # fmt: skip
    f_c = joint_friction[p]
    if f_c > 0.0:
        write_row(base + 3 * n + i, w, JOINT_FRICTION, i, 1.0, friction_regularization * w_est, 0.0, dt * f_c,
                  c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J, v0, c_vc)  # fmt: skip


@wp.kernel
def check_left_out_limits(
    # model
    dof_public: wp.array(dtype=wp.int32),
    dof_coord: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    dof_body: wp.array(dtype=wp.int32),
    body_flags: wp.array(dtype=wp.int32),
    joint_limit_lower: wp.array(dtype=float),
    joint_limit_upper: wp.array(dtype=float),
    joint_limit_ke: wp.array(dtype=float),
    joint_limit_kd: wp.array(dtype=float),
    # options
    limit_stiffness: float,
    limit_dissipation_time: float,
    base: int,
    dt: float,
    momentum_mode: int,
    # inputs
    joint_q: wp.array(dtype=float),
    A_inv_diag: wp.array(dtype=float),
    v: wp.array(dtype=float),
    world_iterations: wp.array(dtype=wp.int32),
    world_constraint_count: wp.array(dtype=wp.int32),
    world_residual: wp.array(dtype=float),
    # outputs (the rows of the limit sides that join; world_retry and any_retry zeroed before)
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    c_vc: wp.array(dtype=wp.vec3),
    world_retry_out: wp.array(dtype=wp.int32),
    any_retry_out: wp.array(dtype=wp.int32),
):
    """Per dof, at the solved ``v``: a limit side that ``joint_constraint_rows`` left out (beyond its window) but
    that the step crosses, ``sign · v_i < v̂ = −g0/Δt`` (its impulse ``max(0, (v̂ − sign · v_i) / R)`` would not
    be zero), gets its row, as it would have been built, and its world is flagged to be solved again (the retry
    of ``sap.py``; a side joins once, so the retries end). Skipped as ``check_parked_contacts`` skips them: the
    worlds still at ``v = v0`` (inside every window) and those with a non-finite residual."""
    i = wp.tid()
    c = dof_coord[i]
    if c < 0 or dof_is_kinematic(i, dof_body, body_flags) == 1:
        return
    w = dof_world[i]
    if world_iterations[w] == 0 and (momentum_mode == 1 or world_constraint_count[w] > 0):
        return
    if not wp.isfinite(world_residual[w]):
        return
    p = dof_public[i]
    n = dof_public.shape[0]
    for side in range(2):
        slot = base + (1 + side) * n + i
        sign, g0, limited = limit_side(side, joint_q[c], joint_limit_lower[p], joint_limit_upper[p])
        if limited and c_world[slot] < 0 and sign * v[i] < -g0 / dt:
            R, tau_d = limit_compliance_and_time(
                limit_stiffness, limit_dissipation_time, joint_limit_ke[p], joint_limit_kd[p], dt, A_inv_diag[i]
            )
            write_row(slot, w, JOINT_LIMIT, i, sign, R, unilateral_bias_velocity(g0, dt, tau_d), 0.0,
                      c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J, v, c_vc)  # fmt: skip
            world_retry_out[w] = 1
            any_retry_out[0] = 1
