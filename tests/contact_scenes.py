"""Small contact scenes with closed-form answers (SAP.md §7-§8), and a stepping loop that records."""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

import newton_sap
from newton_sap.constraints.dispatch import CONTACT_LAGGED, constraint_impulse

G = 9.81


def with_material(builder: newton.ModelBuilder, mu: float) -> newton.ModelBuilder.ShapeConfig:
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu)
    builder.default_shape_cfg = cfg
    return cfg


def incline_gravity(theta_deg):
    """Gravity tilted by θ in the x-z plane: a flat ground becomes an incline going down along +x."""
    t = np.radians(theta_deg)
    return (G * np.sin(t), 0.0, -G * np.cos(t))


def sphere_on_ground(radius=0.1, mass=1.0, height=0.12, mu=0.5, gravity=(0.0, 0.0, -G)):
    """A solid sphere (free joint) above a ground plane."""
    b = newton.ModelBuilder(gravity=gravity)
    with_material(b, mu)
    b.add_ground_plane()
    body = b.add_body(xform=wp.transform((0.0, 0.0, height), wp.quat_identity()))
    b.add_shape_sphere(
        body, radius=radius, cfg=newton.ModelBuilder.ShapeConfig(mu=mu, density=mass / (4.0 / 3.0 * np.pi * radius**3))
    )
    return b.finalize()


def box_on_ground(half=0.1, mass=1.0, mu=0.5, gravity=(0.0, 0.0, -G), boxes=1):
    """``boxes`` cubes stacked on a ground plane (each a free body), resting surfaces touching."""
    return box_stack_builder(half, mass, mu, gravity, boxes).finalize()


def box_stack_builder(half=0.1, mass=1.0, mu=0.5, gravity=(0.0, 0.0, -G), boxes=1, lift=0.0):
    """The builder of :func:`box_on_ground`, the stack raised ``lift`` [m] above the ground."""
    b = newton.ModelBuilder(gravity=gravity)
    with_material(b, mu)
    b.add_ground_plane()
    density = mass / (8.0 * half**3)
    for k in range(boxes):
        body = b.add_body(xform=wp.transform((0.0, 0.0, lift + half * (2 * k + 1)), wp.quat_identity()))
        b.add_shape_box(body, hx=half, hy=half, hz=half, cfg=newton.ModelBuilder.ShapeConfig(mu=mu, density=density))
    return b


def cylinder_with_offset_origin(offset, mu=0.6, gravity=(0.0, 0.0, -G), radius=0.1, half_height=0.15, mass=1.0):
    """A solid cylinder (free joint, axis y) lying on a ground plane, its body origin ``offset`` [m] (body frame)
    away from its centre, where its COM and shape sit: imported meshes often have their origin off the COM."""
    b = newton.ModelBuilder(gravity=gravity)
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu, density=0.0)
    b.add_ground_plane(cfg=cfg)
    offset = np.asarray(offset, float)
    axial = 0.5 * mass * radius**2
    across = mass * (3 * radius**2 + 4 * half_height**2) / 12
    body = b.add_link(xform=wp.transform(tuple(np.array([0.0, 0.0, radius]) - offset), wp.quat_identity()),
                      mass=mass, com=tuple(offset), inertia=wp.mat33(np.diag([across, axial, across])))  # fmt: skip
    along_y = wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), float(np.pi / 2))
    b.add_shape_cylinder(body, xform=wp.transform(tuple(offset), along_y), radius=radius, half_height=half_height,
                         cfg=cfg)  # fmt: skip
    b.add_articulation([b.add_joint_free(body)])
    return b.finalize()


def sphere_bin(count, radius=0.05, mu=0.5):
    """``count`` free spheres on a 4-wide grid of layers, dropped into a 0.4 m bin of static box walls."""
    return sphere_bin_builder(count, radius, mu).finalize()


def sphere_bin_builder(count, radius=0.05, mu=0.5):
    """The builder of :func:`sphere_bin`."""
    b = newton.ModelBuilder()
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=mu))
    wall = newton.ModelBuilder.ShapeConfig(mu=mu)
    inner, thick, height = 0.2, 0.02, 0.3
    for axis in (0, 1):
        for side in (-1.0, 1.0):
            pos = [0.0, 0.0, 0.5 * height]
            pos[axis] = side * (inner + thick)
            hx, hy = (thick, inner + 2 * thick) if axis == 0 else (inner + 2 * thick, thick)
            b.add_shape_box(-1, xform=wp.transform(pos, wp.quat_identity()), hx=hx, hy=hy, hz=0.5 * height, cfg=wall)
    rng = np.random.default_rng(1)
    for k in range(count):
        layer, i, j = k // 4, (k // 2) % 2, k % 2
        dx, dy = rng.uniform(-0.02, 0.02, 2)
        xform = wp.transform((0.12 * (i - 0.5) + dx, 0.12 * (j - 0.5) + dy, 0.07 + 0.11 * layer), wp.quat_identity())
        b.add_shape_sphere(b.add_body(xform=xform), radius=radius, cfg=newton.ModelBuilder.ShapeConfig(mu=mu))
    return b


def sphere_pushed_to_wall_builder(speed=3.0, gap=0.01, approach=0.0, radius=0.05, mass=1.0):
    """Without gravity: sphere B at rest ``gap`` [m] from a static wall (the plane x = 0), sphere A
    ``approach`` [m] from B and moving at ``speed`` [m/s] along −x towards it (a negative speed moves A
    away). Returns the builder and the initial public ``joint_qd`` (A first). On impact B closes its gap
    within the step (the wall then stops it at ``gap / Δt``), though it is at rest at the step's start."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_shape_box(-1, xform=wp.transform((-0.1, 0.0, 0.0), wp.quat_identity()), hx=0.1, hy=0.3, hz=0.3)
    cfg = newton.ModelBuilder.ShapeConfig(density=mass / (4.0 / 3.0 * np.pi * radius**3))
    for x in (3.0 * radius + gap + approach, radius + gap):  # A, then B
        b.add_shape_sphere(b.add_body(xform=wp.transform((x, 0.0, 0.0), wp.quat_identity())), radius=radius, cfg=cfg)
    return b, [-speed, 0.0, 0.0, 0.0, 0.0, 0.0] + [0.0] * 6


def worlds_of_different_kinds():
    """Builders and initial public ``joint_qd`` (None: at rest) of four contact worlds in different regimes of
    a step: a 3-box stack that comes to rest (after about 25 steps of 0.01 s its warm start meets the
    criteria), a box sliding at 3 m/s with μ = 0.5 (Newton iterations), 12 spheres dropped into a bin (72
    dofs: the block Cholesky) and a box falling from 1 m above the ground (no contact in the detection gap:
    no constraint, ``v = v*``)."""
    return [
        (box_stack_builder(boxes=3), None),
        (box_stack_builder(), [3.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        (sphere_bin_builder(12), None),
        (box_stack_builder(lift=1.0), None),
    ]


def initial_qd(worlds) -> np.ndarray:
    """The initial public ``joint_qd`` of ``(builder, qd or None)`` worlds (None: at rest), concatenated."""
    return np.concatenate([np.zeros(b.joint_dof_count) if qd is None else np.asarray(qd, float) for b, qd in worlds])


def one_model(worlds):
    """``(builder, qd or None)`` worlds (:func:`worlds_of_different_kinds`) in one model, and its initial
    public ``joint_qd``."""
    scene = newton.ModelBuilder()
    for builder, _ in worlds:
        scene.add_world(builder)
    return scene.finalize(), initial_qd(worlds)


def copy_state(source: newton.State, target: newton.State) -> None:
    """``target``'s joint and body arrays set to ``source``'s: two runs stepping from the same state."""
    for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
        getattr(target, name).assign(getattr(source, name))


class Run:
    """Steps a model with ``SolverSAP`` and Newton's collision pipeline, recording per step; with ``observe``
    (observable kinds) each step fills ``observables`` and keeps its start's ``body_q`` in ``start_body_q``.
    ``per_contact``: ``Contacts`` with per-contact properties, each step's set to these ``(stiffness, damping,
    friction scale)`` after the collision. ``control``: the ``newton.Control`` every step reads (None: none)."""

    def __init__(self, model, qd0=None, rigid_contact_max=None, observe=(), per_contact=None, control=None, **options):
        self.model = model
        self.control = control
        self.solver = newton_sap.SolverSAP(model, **options)
        self.pipeline = newton.CollisionPipeline(model, rigid_contact_max=rigid_contact_max)
        self.contacts = self.pipeline.contacts()
        self.per_contact = per_contact
        if per_contact is not None:
            self.contacts = newton.Contacts(self.pipeline.rigid_contact_max, 0, per_contact_shape_properties=True,
                                            device=model.device)  # fmt: skip
        self.observables = self.solver.observables(observe, contacts=self.contacts) if observe else None
        self.start_body_q = None
        self.s0, self.s1 = model.state(), model.state()
        if qd0 is not None:
            self.s0.joint_qd.assign(np.asarray(qd0, np.float32))
        newton.eval_fk(model, self.s0.joint_q, self.s0.joint_qd, self.s0)
        self.iterations: list[np.ndarray] = []
        self.converged: list[np.ndarray] = []
        self.cg_iterations: list[np.ndarray] = []

    def step(self, dt, steps=1):
        for _ in range(steps):
            self.pipeline.collide(self.s0, self.contacts)
            if self.per_contact is not None:
                for name, value in zip(("stiffness", "damping", "friction"), self.per_contact, strict=True):
                    getattr(self.contacts, f"rigid_contact_{name}").fill_(value)
            if self.observables is not None:
                self.start_body_q = self.s0.body_q.numpy().copy()
            self.solver.step(self.s0, self.s1, self.control, self.contacts, dt, observables=self.observables)
            self.s0, self.s1 = self.s1, self.s0
            stats = self.solver.stats
            self.iterations.append(stats.iterations)
            self.converged.append(stats.converged)
            self.cg_iterations.append(stats.cg_iterations)
        return self.s0

    def set_qd(self, qd) -> None:
        """Joint velocities of the current state set to ``qd`` (public convention), body velocities to match."""
        self.s0.joint_qd.assign(np.asarray(qd, np.float32))
        newton.eval_fk(self.model, self.s0.joint_q, self.s0.joint_qd, self.s0)

    @property
    def q(self):
        return self.s0.joint_q.numpy()

    @property
    def qd(self):
        return self.s0.joint_qd.numpy()


@wp.kernel
def _constraint_rows(
    kind: int,
    v_c: wp.array(dtype=wp.vec3),
    v_hat: wp.array(dtype=wp.vec3),
    R: wp.array(dtype=wp.vec3),
    parameter: wp.array(dtype=float),
    gamma_out: wp.array(dtype=wp.vec3),
    G_out: wp.array(dtype=wp.mat33),
    cost_out: wp.array(dtype=float),
):
    i = wp.tid()
    g, G, c = constraint_impulse(kind, v_c[i], v_hat[i], R[i], parameter[i])
    gamma_out[i] = g
    G_out[i] = G
    cost_out[i] = c


def evaluate_rows(kind, v_c, v_hat, R, parameter):
    """γ [N·s], G [kg] and ℓ [J] of rows of constraint type ``kind`` (``dispatch.constraint_impulse``, float32 on
    the device) at ``v_c``, with ``v_hat``, ``R`` and ``parameter`` per row; float64 NumPy arrays."""
    n = len(v_c)
    out = wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.mat33), wp.zeros(n, dtype=float)
    arrays = [wp.array(np.asarray(x, np.float32), dtype=wp.vec3) for x in (v_c, v_hat, R)]
    wp.launch(_constraint_rows, dim=n, inputs=[int(kind), *arrays, wp.array(np.asarray(parameter, np.float32))],
              outputs=list(out))  # fmt: skip
    return [o.numpy().astype(np.float64) for o in out]


def friction_cone_impulse(v_c, v_hat, R, mu, eps=1.0e-7):
    """γ [N·s] of one contact: the R-norm projection of ``y = R⁻¹ (v̂ − v_c)`` onto ``‖γ_t‖ ≤ μ γ_n``."""
    y = (v_hat - v_c) / R
    y_r = np.sqrt(y[0] ** 2 + y[1] ** 2 + eps**2)
    mu_hat = mu * R[0] / R[2]
    if y_r <= mu * y[2]:
        return y  # stiction
    if y[2] <= -mu_hat * y_r:
        return np.zeros(3)  # separation
    gamma_n = (y[2] + mu_hat * y_r) / (1.0 + mu * mu_hat)
    return np.array([mu * gamma_n * y[0] / y_r, mu * gamma_n * y[1] / y_r, gamma_n])


def require_sap_contacts(snap, world: int) -> None:
    """Refuse a snapshot of lagged contacts (``contact_approximation="lagged"``): their ``contact_friction`` is a
    friction bound [N·s], not the μ that SAP's projection reads."""
    assert not np.isin(CONTACT_LAGGED, snap.constraint_kind[world]), "SAP's friction cone only"


def contact_impulses(snap, v, world=0):
    """γ [N·s] of ``world``'s contacts at ``v`` (one row per contact), by the independent projection."""
    require_sap_contacts(snap, world)
    v_c = (snap.contact_jacobian[world] @ v).reshape(-1, 3)
    R, v_hat, mu = (snap.contact_compliance[world], snap.contact_bias_velocity[world],
                    snap.contact_friction[world])  # fmt: skip
    return np.array([friction_cone_impulse(v_c[k], v_hat[k], R[k], mu[k]) for k in range(len(mu))])
