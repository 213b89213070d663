"""Every constraint-row builder leaves ``c_vc = J v0``, the rows' velocities at the step's start: the Newton
loop's warm start reads them instead of forming ``J v0`` (``VC_AT_START`` in ``sap.py``). A parked contact's
comes from the body twists (it has no entries until completed); completed, its entries give the same."""

import newton
import numpy as np
import warp as wp
from test_loop_closure import four_bar

import newton_sap

import references as refs
from contact_scenes import sphere_pushed_to_wall_builder


def start_velocity_errors(model, joint_qd, contacts: bool, steps: int = 3, **options) -> tuple[list[float], int]:
    """Largest ``|c_vc − J v0|`` [m/s, rad/s] over the used rows, recorded as each step's solve begins, from
    an initial ``joint_qd`` (every row then starts moving: stale velocities would not match); and the number
    of parked rows seen."""
    solver = newton_sap.SolverSAP(model, **options)
    sap = solver._sap
    solve = sap.solve
    errors, parked = [], []

    def recording_solve(A_rows, tree_blocks, v0, *args, **kwargs):
        sap.complete_parked_rows()  # parked contacts bring v_c0 from the body twists, without entries
        used = sap.c_world.numpy() >= 0
        parked.append(int((sap.c_parked.numpy()[used] != 0).sum()))
        nnz, dof, J, vc = sap.c_nnz.numpy(), sap.c_dof.numpy(), sap.c_J.numpy(), sap.c_vc.numpy()
        v = v0.numpy()
        expected = np.array([(J[c, : nnz[c]] * v[dof[c, : nnz[c]], None]).sum(axis=0) for c in np.flatnonzero(used)])
        errors.append(float(np.abs(vc[used] - expected).max()) if used.any() else 0.0)
        return solve(A_rows, tree_blocks, v0, *args, **kwargs)

    sap.solve = recording_solve
    control = model.control()
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign(np.asarray(joint_qd, np.float32))
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    pipeline = newton.CollisionPipeline(model) if contacts else None
    buffer = pipeline.contacts() if contacts else None
    for _ in range(steps):
        if contacts:
            pipeline.collide(s0, buffer)
        solver.step(s0, s1, control, buffer, 0.01)
        s0, s1 = s1, s0
    assert len(errors) == steps
    return errors, sum(parked)


def test_contact_rows_bring_their_start_velocities():
    """Contacts (parked and in the iterations) between two moving spheres and a wall."""
    builder, qd = sphere_pushed_to_wall_builder(speed=2.0, approach=0.02)
    model = builder.finalize()
    qd = np.asarray(qd) + np.random.default_rng(3).normal(0.0, 0.3, len(qd))
    errors, parked = start_velocity_errors(model, qd, contacts=True, park_distant_contacts=True)
    assert max(errors) < 1e-5 and parked > 0


def test_joint_rows_bring_their_start_velocities():
    """Panda arm: PD drives, joint friction (every dof), limits reached within the step, and the fingers'
    mimic rows (two dofs)."""
    model = refs.build_newton_model("panda", device="cpu")
    n = model.joint_dof_count
    model.joint_target_mode.assign(np.full(n, int(newton.JointTargetMode.POSITION), np.int32))
    model.joint_target_ke.assign(np.full(n, 100.0, np.float32))
    model.joint_target_kd.assign(np.full(n, 10.0, np.float32))
    model.joint_friction.assign(np.full(n, 0.1, np.float32))
    q = model.joint_q.numpy()
    q[:7] = model.joint_limit_upper.numpy()[:7] - 1e-3  # at the limits' reach
    model.joint_q.assign(q)
    qd = np.random.default_rng(5).normal(0.0, 0.5, n)
    solver_kinds = {"dense": {}, "tree LDLᵀ": {"dense_world_max_dofs": 0}}
    for options in solver_kinds.values():
        assert max(start_velocity_errors(model, qd, contacts=False, **options)[0]) < 1e-5


def test_loop_closure_rows_bring_their_start_velocities():
    """A tilted four-bar's revolute closure: point rows and the two orientation rows."""
    model = four_bar(tilt=wp.quat_rpy(0.3, 0.2, 0.1))
    assert max(start_velocity_errors(model, [0.8, -0.8, 0.8], contacts=False)[0]) < 1e-5
