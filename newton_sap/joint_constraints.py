"""Joint-space constraint rows (SAP.md §5), frozen at ``q0`` for a step: PD drives and joint limits
on the scalar-coordinate dofs (REVOLUTE, PRISMATIC, D6).

Each internal dof i owns three constraint slots after the contacts: ``base + i`` (drive),
``base + n + i`` (lower limit) and ``base + 2n + i`` (upper limit); an unused slot has world -1.
All are one-row constraints on the dof's own velocity (``J = ±e_i``), stored in row 0 of the slot.
"""

import newton
import warp as wp

from .constraints.dispatch import JOINT_LIMIT, PD_DRIVE
from .constraints.friction_cone import TWO_PI_SQ
from .constraints.pd_drive import pd_drive_parameters

LIMIT_NEAR_RIGID_BETA = 0.1
"""β of joint limits (Drake's value)."""
MODE_POSITION = wp.constant(int(newton.JointTargetMode.POSITION))
MODE_VELOCITY = wp.constant(int(newton.JointTargetMode.VELOCITY))
MODE_POSITION_VELOCITY = wp.constant(int(newton.JointTargetMode.POSITION_VELOCITY))
NO_LIMIT = 0.5 * newton.MAXVAL
"""Limits beyond this magnitude mean "no limit" (Newton uses ±MAXVAL)."""


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
):
    c_world[slot] = world
    c_kind[slot] = kind
    c_R[slot] = wp.vec3(R, 1.0, 1.0)
    c_vhat[slot] = wp.vec3(v_hat, 0.0, 0.0)
    c_param[slot] = parameter
    c_nnz[slot] = 1
    c_dof[slot, 0] = dof
    c_J[slot, 0] = wp.vec3(sign, 0.0, 0.0)


@wp.kernel
def joint_constraint_rows(
    # model
    dof_public: wp.array(dtype=wp.int32),
    dof_coord: wp.array(dtype=wp.int32),
    dof_world: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    joint_target_mode: wp.array(dtype=wp.int32),
    joint_target_ke: wp.array(dtype=float),
    joint_target_kd: wp.array(dtype=float),
    joint_effort_limit: wp.array(dtype=float),
    joint_limit_lower: wp.array(dtype=float),
    joint_limit_upper: wp.array(dtype=float),
    joint_limit_ke: wp.array(dtype=float),
    joint_limit_kd: wp.array(dtype=float),
    # options
    limit_stiffness: float,
    limit_dissipation_time: float,
    base: int,
    dt: float,
    # inputs
    joint_q: wp.array(dtype=float),
    target_q: wp.array(dtype=float),
    target_qd: wp.array(dtype=float),
    joint_act: wp.array(dtype=float),
    v0: wp.array(dtype=float),
    tau: wp.array(dtype=float),
    A_rows: wp.array(dtype=float),
    # outputs
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_R: wp.array(dtype=wp.vec3),
    c_vhat: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
):
    """Drive and limit rows of dof i. A limit side is added only when the step can reach it:
    ``g0 ≤ 2 Δt max(|v0|, |v0 + Δt τ/A_ii|)`` (v* estimated from diag(A)), or when violated.
    Limit stiffness and dissipation: the options when given (> 0, ≥ 0), else Newton's
    ``joint_limit_ke`` and ``joint_limit_kd / joint_limit_ke``."""
    i = wp.tid()
    n = dof_public.shape[0]
    for k in range(3):
        c_world[base + k * n + i] = -1
        c_nnz[base + k * n + i] = 0
    c = dof_coord[i]
    if c < 0:
        return
    p = dof_public[i]
    w = dof_world[i]
    a_ii = A_rows[dof_row_start[i]]
    w_est = 1.0 / a_ii
    q0 = joint_q[c]
    kp, kv = drive_gains(joint_target_mode[p], joint_target_ke[p], joint_target_kd[p])
    if kp > 0.0 or kv > 0.0:
        R, v_hat = pd_drive_parameters(kp, kv, q0, target_q[c], target_qd[p], joint_act[p], dt, w_est)
        write_row(base + i, w, PD_DRIVE, i, 1.0, R, v_hat, dt * joint_effort_limit[p],
                  c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J)  # fmt: skip
    k_lim = limit_stiffness
    tau_d = limit_dissipation_time
    if k_lim <= 0.0:
        k_lim = joint_limit_ke[p]
        tau_d = joint_limit_kd[p] / joint_limit_ke[p]
    if tau_d < 0.0:
        tau_d = dt
    R_lim = wp.max(LIMIT_NEAR_RIGID_BETA * LIMIT_NEAR_RIGID_BETA * w_est / TWO_PI_SQ, 1.0 / (dt * k_lim * (dt + tau_d)))
    reach = 2.0 * dt * wp.max(wp.abs(v0[i]), wp.abs(v0[i] + dt * tau[i] / a_ii))
    lower = joint_limit_lower[p]
    upper = joint_limit_upper[p]
    if lower > -NO_LIMIT and q0 - lower <= reach:
        write_row(base + n + i, w, JOINT_LIMIT, i, 1.0, R_lim, -(q0 - lower) / (dt + tau_d), 0.0,
                  c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J)  # fmt: skip
    if upper < NO_LIMIT and upper - q0 <= reach:
        write_row(base + 2 * n + i, w, JOINT_LIMIT, i, -1.0, R_lim, -(upper - q0) / (dt + tau_d), 0.0,
                  c_world, c_kind, c_R, c_vhat, c_param, c_nnz, c_dof, c_J)  # fmt: skip
