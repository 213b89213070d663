"""The one place where Newton's public velocity convention meets the solver's internal one.

Public (Newton): ``body_qd = [v_com; ω]`` in world; a FREE/DISTANCE joint's ``joint_qd`` is
``[v_com; ω]`` expressed in the joint parent frame F (world for a root joint), ``v_com`` being the
child COM's velocity relative to the parent's motion; ``joint_f`` is dual to ``joint_qd``.

Internal (seed §1, §3): body twists ``[ω; v_o]`` in world at the body origin; a FREE joint's
generalized velocity is ``[ω; v_M]`` in F, ``v_M`` the velocity of the joint's child frame origin M.
With ``r = R_WFᵀ (c − p_M)`` (child COM relative to M, in F):

    v_pub = v_M + ω × r,          ω_pub = ω

A FREE/DISTANCE joint's ``joint_f`` is, in Newton, a world-frame wrench ``[f; τ]`` on the child at its
COM (like ``State.body_f``), so RNE applies it as an external body wrench. All other joint types use
the same numbers in both conventions. The FK kernel applies these maps
(in ``kinematics.py``); the snapshot applies their matrix form in :func:`free_joint_velocity_map`.
"""

import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.func
def free_velocity_public_to_internal(v_pub: wp.vec3, w_pub: wp.vec3, r: wp.vec3):
    """``v_M = v_pub − ω × r`` [m/s]; the angular velocity is unchanged."""
    return v_pub - wp.cross(w_pub, r)


@wp.func
def free_com_centripetal(w: wp.vec3, r: wp.vec3):
    """``Ṫ q̇_int = ω × (ω × r)`` [m/s²]: the rate of the map T applied to the velocity (``ω`` the angular velocity,
    ``r`` = COM − M, both in F)."""
    return wp.cross(w, wp.cross(w, r))


@wp.func
def free_com_velocity_after_step(v_m1: wp.vec3, w1: wp.vec3, w0: wp.vec3, r0: wp.vec3, dt: float):
    """Velocity [m/s] of a FREE joint's pivot after a step that changed the internal velocity to ``(ω1, v_M1)``:
    ``T(q0) q̇_int1`` plus the change of T over the step, ``Δt Ṫ q̇_int0`` (:func:`free_com_centripetal` at the
    step's start, ``r0`` = pivot − M in F then). The pivot is the child's COM for a lone body (then this is the
    public velocity), the COM of the child and the bodies FIXED to it otherwise (``integration``)."""
    return v_m1 + wp.cross(w1, r0) + dt * free_com_centripetal(w0, r0)


@wp.func
def body_twist_to_public(twist: wp.spatial_vector, com_offset_world: wp.vec3):
    """Internal origin twist ``[ω; v_o]`` -> Newton's ``body_qd = [v_com; ω]`` (``com_offset_world`` =
    COM minus origin, world axes [m])."""
    w = wp.spatial_top(twist)
    return wp.spatial_vector(wp.spatial_bottom(twist) + wp.cross(w, com_offset_world), w)


def free_joint_velocity_map(r: np.ndarray) -> np.ndarray:
    """6×6 matrix ``T`` with ``q̇_pub = T q̇_int`` for one free joint, public order ``[v, ω]`` and
    internal order ``[ω, v_M]``; ``r`` [m] is the COM relative to M in F."""
    skew = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    T = np.zeros((6, 6))
    T[0:3, 3:6] = np.eye(3)  # v_pub = v_M ...
    T[0:3, 0:3] = -skew  # ... + ω × r = v_M − [r]× ω
    T[3:6, 0:3] = np.eye(3)
    return T
