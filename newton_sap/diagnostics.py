"""Host-side diagnostics of Newton states (NumPy; for summaries and tests, not for hot loops)."""

from __future__ import annotations

import math

import newton
import numpy as np


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions ``q`` (…, 4) in Newton's xyzw order, shape (…, 3, 3)."""
    x, y, z, w = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def mechanical_energy(model: newton.Model, state: newton.State) -> np.ndarray:
    """Kinetic plus gravitational potential energy [J] of every world, shape (world_count,).

    ``Σ_b ½ m |v_com|² + ½ ωᵀ I_w ω − (1 − gravcomp) m g·c`` from the public body state (``body_qd = [v_com; ω]``;
    ``gravcomp``: MuJoCo's gravity compensation, ``model.mujoco.gravcomp``, 0 without); armature energy is not
    included (it is not a body property). Global bodies (world -1) count in world 0."""
    X = state.body_q.numpy().astype(np.float64)
    V = state.body_qd.numpy().astype(np.float64)
    m = model.body_mass.numpy().astype(np.float64)
    R = quat_to_matrix(X[:, 3:])
    I_w = R @ model.body_inertia.numpy().astype(np.float64) @ np.swapaxes(R, 1, 2)
    c = X[:, :3] + np.einsum("bij,bj->bi", R, model.body_com.numpy().astype(np.float64))
    world = model.body_world.numpy()
    gravity = model.gravity.numpy().astype(np.float64)
    g = gravity[np.where(world < 0, len(gravity) - 1, world)]  # a global body: Newton's global gravity, the last
    world = np.where(world < 0, 0, world)  # ... counted in world 0 (global bodies move only in one-world models)
    w = V[:, 3:]
    e = 0.5 * m * np.einsum("bi,bi->b", V[:, :3], V[:, :3]) + 0.5 * np.einsum("bi,bij,bj->b", w, I_w, w)
    gravcomp = getattr(getattr(model, "mujoco", None), "gravcomp", None)
    weight = m if gravcomp is None else (1.0 - gravcomp.numpy().astype(np.float64)[: len(m)]) * m
    e -= weight * np.einsum("bi,bi->b", g, c)
    return np.bincount(world, weights=e, minlength=max(model.world_count, 1))


def max_penetration(model: newton.Model, state: newton.State, contacts) -> float:
    """Deepest penetration [m] (≥ 0) of the shapes' geometry among ``contacts`` collided at ``state``: the
    largest ``−φ0`` with ``φ0 = n·(p1 − p0) − (r0 + r1)`` and the effective radii without the shapes'
    ``margin`` (the solvers rest shapes ``margin_0 + margin_1`` apart; the benchmark scenes have none). NaN when
    a body pose is not finite (the collision then finds no contacts of those bodies)."""
    if not np.all(np.isfinite(state.body_q.numpy())):
        return math.nan
    count = int(contacts.rigid_contact_count.numpy()[0])
    if count == 0:
        return 0.0
    shape_body = model.shape_body.numpy()
    margin = model.shape_margin.numpy()
    X = state.body_q.numpy().astype(np.float64)
    s0, s1 = contacts.rigid_contact_shape0.numpy()[:count], contacts.rigid_contact_shape1.numpy()[:count]
    valid = (s0 >= 0) & (s1 >= 0)
    s0, s1 = s0[valid], s1[valid]

    def world_points(shapes, points):
        bodies = shape_body[shapes]
        out = points.astype(np.float64).copy()
        moving = bodies >= 0
        R = quat_to_matrix(X[bodies[moving], 3:])
        out[moving] = X[bodies[moving], :3] + np.einsum("bij,bj->bi", R, out[moving])
        return out

    p0 = world_points(s0, contacts.rigid_contact_point0.numpy()[:count][valid])
    p1 = world_points(s1, contacts.rigid_contact_point1.numpy()[:count][valid])
    n = contacts.rigid_contact_normal.numpy()[:count][valid]
    r0 = contacts.rigid_contact_margin0.numpy()[:count][valid] - margin[s0]
    r1 = contacts.rigid_contact_margin1.numpy()[:count][valid] - margin[s1]
    phi = np.einsum("ci,ci->c", n, p1 - p0) - (r0 + r1)
    return max(0.0, float(-phi.min())) if len(phi) else 0.0
