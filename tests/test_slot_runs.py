"""The per-row kernels split the constraint slots into runs, one run per thread (1024 slots on the CPU, 1 on
GPUs: ``dispatch.SLOTS_PER_THREAD_CPU``). The split is a partition only: every run length gives the same
steps, bit for bit (on CUDA, where the run length is always 1, two runs agree to round-off: ``same_run``),
with contacts, PD drives and joint limits in several worlds."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.constraints import dispatch

from same_run import assert_same_iterations, assert_same_run


def world(k: int) -> newton.ModelBuilder:
    """Two boxes thrown sideways onto the ground next to a PD-driven, limited pendulum (world index k
    varies the throw)."""
    b = newton.ModelBuilder()
    b.default_shape_cfg = newton.ModelBuilder.ShapeConfig(mu=0.5)
    for i in range(2):
        body = b.add_body(xform=wp.transform((0.3 * i, 0.0, 0.1 + 0.21 * i), wp.quat_identity()))
        b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    link = b.add_link(mass=1.0, com=wp.vec3(0.3, 0.0, 0.0), inertia=wp.mat33(np.eye(3, dtype=np.float32) * 0.01))
    joint = b.add_joint_revolute(
        -1, link, parent_xform=wp.transform((0.0, 1.0, 1.0), wp.quat_identity()), axis=(0.0, 1.0, 0.0),
        target_ke=50.0 + 10.0 * k, target_kd=2.0, actuator_mode=newton.JointTargetMode.POSITION,
        limit_lower=-0.3, limit_upper=0.3,
    )  # fmt: skip
    b.add_articulation([joint])
    return b


def simulate(worlds: int, steps: int = 15, dt: float = 0.01):
    scene = newton.ModelBuilder()
    for k in range(worlds):
        scene.add_world(world(k))
    scene.add_ground_plane()
    model = scene.finalize()
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    qd = s0.joint_qd.numpy().reshape(worlds, -1)
    qd[:, 0] = 1.0 + 0.2 * np.arange(worlds)  # box 0 slides along +x (Newton's public qd: linear first)
    qd[:, 7] = -0.5  # box 1 slides along −y
    s0.joint_qd.assign(qd.ravel())
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    iterations = []
    for _ in range(steps):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, None, contacts, dt)
        s0, s1 = s1, s0
        iterations.append(solver.stats.iterations)
    return s0.joint_q.numpy(), s0.joint_qd.numpy(), np.array(iterations), solver.stats.num_contacts


@pytest.mark.parametrize("run_length", [1, 5])
def test_every_run_length_gives_the_same_steps(monkeypatch, run_length):
    q_ref, qd_ref, its_ref, contacts_ref = simulate(worlds=3)
    assert its_ref.sum() > 0 and (contacts_ref > 0).all()  # the solve iterates, with contacts in every world
    monkeypatch.setattr(dispatch, "SLOTS_PER_THREAD_CPU", run_length)
    q, qd, its, contacts = simulate(worlds=3)
    assert_same_iterations(its, its_ref)
    assert_same_run(contacts, contacts_ref)
    assert_same_run(q, q_ref, "joint_q")
    assert_same_run(qd, qd_ref, "joint_qd")
