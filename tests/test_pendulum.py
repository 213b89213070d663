"""Double pendulum without damping: the energy error of the semi-implicit step is O(Δt)."""

import newton
import numpy as np
import warp as wp

import newton_sap
from newton_sap.diagnostics import mechanical_energy

G = 9.81


def double_pendulum():
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    I = wp.mat33(*np.diag([0.02, 0.02, 0.002]).ravel())
    l0 = b.add_link(mass=1.0, com=wp.vec3(0.0, 0.0, -0.5), inertia=I)
    l1 = b.add_link(mass=0.7, com=wp.vec3(0.0, 0.0, -0.4), inertia=I)
    j0 = b.add_joint_revolute(-1, l0, axis=(1.0, 0.0, 0.0), parent_xform=wp.transform((0, 0, 2.0), wp.quat_identity()))
    j1 = b.add_joint_revolute(l0, l1, axis=(1.0, 0.0, 0.0), parent_xform=wp.transform((0, 0, -1.0), wp.quat_identity()))
    b.add_articulation([j0, j1])
    return b.finalize()


def max_energy_error(dt, seconds=5.0):
    model = double_pendulum()
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign(np.array([1.2, -0.6], np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    E0 = mechanical_energy(model, s0)[0]
    err = 0.0
    for k in range(int(round(seconds / dt))):
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
        if k % 10 == 0:
            err = max(err, abs(mechanical_energy(model, s0)[0] - E0))
    return err / abs(E0)


def test_energy_error_is_first_order_in_dt():
    e1 = max_energy_error(1e-3)
    e2 = max_energy_error(2e-3)
    assert e1 < 1e-2, e1
    assert 1.5 < e2 / e1 < 2.6, (e1, e2)
