"""Spatial algebra shared by the kernels (internal convention).

Internal twists and motion subspace columns are ``wp.spatial_vector`` laid out ``[ω; v]`` in world
coordinates: ``ω`` [rad/s] is the angular velocity and ``v`` [m/s] the velocity of the material point
that coincides with a chosen reference point (Plücker coordinates at that point). Wrenches are
``[n; f]``: the moment [N·m] about the same reference point and the force [N].

Spatial inertias about a reference point ``r`` are stored compactly as 10 numbers (``Inertia10``):
``(I_xx, I_yy, I_zz, I_xy, I_xz, I_yz, h_x, h_y, h_z, m)`` with ``I`` [kg·m²] the rotational inertia
about ``r``, ``h = m (c - r)`` [kg·m] the first mass moment and ``m`` [kg] the mass. The matrix they
stand for is ``[[I, [h]×], [-[h]×, m·1]]``; composite inertias about a common point are plain sums.
"""

import warp as wp

Inertia10 = wp.types.vector(length=10, dtype=wp.float32)


@wp.func
def rotation_vector(q: wp.quat):
    """Axis·angle [rad] of a unit quaternion (shortest rotation)."""
    if q[3] < 0.0:
        q = -q
    s = wp.length(wp.vec3(q[0], q[1], q[2]))
    angle = 2.0 * wp.atan2(s, q[3])
    if s < 1.0e-9:
        return 2.0 * wp.vec3(q[0], q[1], q[2])
    return wp.vec3(q[0], q[1], q[2]) * (angle / s)


@wp.func
def rotation_log_rate(e: wp.vec3):
    """``J_l⁻¹(e)`` (3×3): the rate of a rotation vector ``e = log(R)`` [rad] per angular velocity ω [rad/s] of R
    about the axes of its outer frame, ``ė = J_l⁻¹(e) ω`` for ``Ṙ = [ω]× R`` (``log(exp(δ) exp(e)) ≈ e + J_l⁻¹(e) δ``):
    ``1 − ½[e]× + c(θ)[e]×²``, ``c = 1/θ² − cot(θ/2)/(2θ)``, θ = |e| ≤ π (``c`` 1/12 at 0, 1/π² at π; its series
    ``1/12 + θ²/720`` below θ = 0.1, where float32 would cancel). ``J_l⁻¹(e) e = e``: along e the rate is ω's."""
    theta = wp.length(e)
    c = 1.0 / 12.0 + theta * theta / 720.0
    if theta >= 0.1:
        half = 0.5 * theta
        c = 1.0 / (theta * theta) - wp.cos(half) / (2.0 * theta * wp.sin(half))
    E = wp.skew(e)
    return wp.identity(3, dtype=float) - 0.5 * E + c * (E * E)


@wp.func
def ball_rotation_error(joint_q: wp.array(dtype=float), reference_q: wp.array(dtype=float), start: int):
    """``e = log(q q_r⁻¹)`` [rad] of the BALL joint whose quaternion (x, y, z, w) starts at ``start`` in ``joint_q``,
    against the reference rotation ``q_r`` at the same place in ``reference_q`` (a drive's ``joint_target_q``, the
    spring's ``joint_rest_q``): the rotation vector in the joint's parent frame F that takes ``q_r`` to ``q``. A zero
    ``q_r`` (targets zeroed in bulk) counts as the identity, as Newton's SolverMuJoCo takes a zero target (a stiff
    joint's zero rest quaternion is refused, ``model_checks``: SolverMuJoCo's spring is off there)."""
    q = wp.quat(joint_q[start], joint_q[start + 1], joint_q[start + 2], joint_q[start + 3])
    q_r = wp.quat(reference_q[start], reference_q[start + 1], reference_q[start + 2], reference_q[start + 3])
    if wp.length(q_r) == 0.0:
        q_r = wp.quat_identity()
    return rotation_vector(wp.normalize(q) * wp.quat_inverse(wp.normalize(q_r)))


@wp.func
def twist_shift(V: wp.spatial_vector, offset: wp.vec3):
    """Move the reference point of a twist (or spatial acceleration) by ``offset`` [m]:
    ``[ω; v] -> [ω; v + ω × offset]``."""
    w = wp.spatial_top(V)
    return wp.spatial_vector(w, wp.spatial_bottom(V) + wp.cross(w, offset))


@wp.func
def motion_cross(V: wp.spatial_vector, S: wp.spatial_vector):
    """Spatial cross product of two motion vectors at one point:
    ``[ω; v] ×̂ [ω'; v'] = [ω × ω'; ω × v' + v × ω']`` (the rate of a column carried by ``V``)."""
    w = wp.spatial_top(V)
    v = wp.spatial_bottom(V)
    ws = wp.spatial_top(S)
    vs = wp.spatial_bottom(S)
    return wp.spatial_vector(wp.cross(w, ws), wp.cross(w, vs) + wp.cross(v, ws))


@wp.func
def force_cross(V: wp.spatial_vector, F: wp.spatial_vector):
    """Spatial cross product of a motion and a force vector at one point:
    ``[ω; v] ×* [n; f] = [ω × n + v × f; ω × f]``."""
    w = wp.spatial_top(V)
    v = wp.spatial_bottom(V)
    n = wp.spatial_top(F)
    f = wp.spatial_bottom(F)
    return wp.spatial_vector(wp.cross(w, n) + wp.cross(v, f), wp.cross(w, f))


@wp.func
def rotational_inertia_about(mass: float, com_offset: wp.vec3, inertia_com_world: wp.mat33):
    """Rotational inertia [kg·m²] about a point ``r`` of a body of ``mass`` [kg] whose COM is at
    ``r + com_offset`` [m] (parallel axes): ``I_r = I_c + m (|d|² 1 - d dᵀ)``, world axes."""
    d = com_offset
    return inertia_com_world + mass * (wp.dot(d, d) * wp.identity(n=3, dtype=float) - wp.outer(d, d))


@wp.func
def inertia10_about(mass: float, com_offset: wp.vec3, inertia_com_world: wp.mat33):
    """Spatial inertia about a point ``r`` of a body of mass ``m`` [kg] whose COM is at
    ``r + com_offset`` [m], with rotational inertia ``inertia_com_world`` [kg·m²] about the COM in world
    axes: ``I_r`` (:func:`rotational_inertia_about`), ``h = m d``."""
    I = rotational_inertia_about(mass, com_offset, inertia_com_world)
    h = mass * com_offset
    return Inertia10(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2], h[0], h[1], h[2], mass)


@wp.func
def inertia10_apply(I10: Inertia10, V: wp.spatial_vector):
    """Momentum ``[I ω + h × v; m v - h × ω]`` of twist ``V = [ω; v]`` for the inertia ``I10``."""
    w = wp.spatial_top(V)
    v = wp.spatial_bottom(V)
    I = wp.mat33(I10[0], I10[3], I10[4], I10[3], I10[1], I10[5], I10[4], I10[5], I10[2])
    h = wp.vec3(I10[6], I10[7], I10[8])
    return wp.spatial_vector(I * w + wp.cross(h, v), I10[9] * v - wp.cross(h, w))


@wp.func
def dot6(a: wp.spatial_vector, b: wp.spatial_vector):
    """Pairing of a motion and a force vector (power [W] for a twist and a wrench)."""
    return wp.dot(wp.spatial_top(a), wp.spatial_top(b)) + wp.dot(wp.spatial_bottom(a), wp.spatial_bottom(b))
