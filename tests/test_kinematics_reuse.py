"""A step reuses the kinematics that the previous step computed at its output state only while the input's
``joint_q`` and ``joint_qd`` are exactly that state's: every other input gives the step of a fresh solver
(bit for bit on the CPU, to round-off on CUDA: ``same_run``)."""

import newton
import numpy as np
import pytest

import newton_sap

from random_trees import add_random_tree, random_state, set_state
from same_run import assert_same_run

DT = 2e-3


def build(bodies=5, types=("revolute", "ball", "d6")):
    rng = np.random.default_rng(11)
    builder = newton.ModelBuilder()
    add_random_tree(builder, rng, bodies, chain=False, root_type="free", types=types)
    model = builder.finalize()
    state = model.state()
    set_state(model, state, *random_state(model, rng))
    return model, state


def step(solver, model, state, control=None):
    out = model.state()
    solver.step(state, out, control, None, DT)
    return out


def arrays(state):
    return [a.numpy() for a in (state.joint_q, state.joint_qd, state.body_q, state.body_qd)]


def change_q(model, state):
    q = state.joint_q.numpy()
    q[7] += 0.3  # the first coordinate after the FREE root's 7
    state.joint_q.assign(q)


def change_qd(model, state):
    qd = state.joint_qd.numpy()
    qd[-1] -= 0.7
    state.joint_qd.assign(qd)


@pytest.mark.parametrize("change", [None, change_q, change_qd], ids=["unchanged", "joint_q", "joint_qd"])
def test_step_after_an_in_place_change_equals_a_fresh_solver(change):
    """Step 0 → 1 → 2 with one solver, the input of the second step changed in place (a reset) or not;
    a fresh solver takes the same second step from scratch. The results are bit-identical."""
    model, s0 = build()
    solver = newton_sap.SolverSAP(model)
    s1 = step(solver, model, s0)
    if change is not None:
        change(model, s1)
    reused = step(solver, model, s1)
    assert solver._kinematics_stale.numpy()[0] == int(change is not None)  # FK skipped only when unchanged
    fresh = step(newton_sap.SolverSAP(model), model, s1)
    for a, b in zip(arrays(reused), arrays(fresh), strict=True):
        assert_same_run(a, b)


def test_a_change_past_the_first_thread_run_is_seen():
    """More coordinates than one thread of ``flag_changed`` compares: a change at index 300 is recomputed."""
    model, s0 = build(bodies=80, types=("ball",))
    assert model.joint_coord_count > 300
    solver = newton_sap.SolverSAP(model)
    s1 = step(solver, model, s0)
    q = s1.joint_q.numpy()
    q[300] += 0.2
    s1.joint_q.assign(q)
    reused = step(solver, model, s1)
    fresh = step(newton_sap.SolverSAP(model), model, s1)
    for a, b in zip(arrays(reused), arrays(fresh), strict=True):
        assert_same_run(a, b)


def test_state_arrays_of_another_size_are_refused():
    model, s0 = build()
    other, _ = build(bodies=3)
    solver = newton_sap.SolverSAP(model)
    with pytest.raises(ValueError, match="joint_q has"):
        solver.step(other.state(), model.state(), None, None, DT)


def test_alternating_between_two_states_equals_fresh_solvers():
    """One solver steps two independent trajectories in turn (each input is the output of the step before
    last, never the last one); each step equals a fresh solver's."""
    model, a = build()
    b = model.state()
    q, qd = a.joint_q.numpy(), a.joint_qd.numpy()
    set_state(model, b, q, -qd)
    solver = newton_sap.SolverSAP(model)
    for _ in range(3):
        for name in ("a", "b"):
            src = a if name == "a" else b
            out = step(solver, model, src)
            fresh = step(newton_sap.SolverSAP(model), model, src)
            for x, y in zip(arrays(out), arrays(fresh), strict=True):
                assert_same_run(x, y)
            if name == "a":
                a = out
            else:
                b = out


def test_joint_f_changes_between_steps_with_reused_kinematics():
    """``Control.joint_f`` is read at every step, also when the kinematics are reused: generalized forces
    on every dof (the FREE root's a wrench at its COM) set after the first step change ``joint_qd`` by
    ``Δt M⁻¹ f`` against the force-free step (velocity products at v0: at the midpoint velocities, which f moves,
    the response has a second-order part, 1.3e-3 of it here)."""
    model, s0 = build()
    solver = newton_sap.SolverSAP(model, coriolis="explicit")
    s1 = step(solver, model, s0)
    control = model.control()
    f = np.random.default_rng(5).uniform(-0.5, 0.5, model.joint_dof_count).astype(np.float32)
    control.joint_f.assign(f)
    pushed = step(solver, model, s1, control)
    free = step(newton_sap.SolverSAP(model, coriolis="explicit"), model, s1)
    M = newton_sap.SolverSAP(model).snapshot(s1, dt=DT).mass_matrix[0]
    expected = DT * np.linalg.solve(M.astype(np.float64), f.astype(np.float64))
    change = pushed.joint_qd.numpy().astype(np.float64) - free.joint_qd.numpy()
    assert np.abs(change - expected).max() < 1e-3 * np.abs(expected).max()


def test_graph_replay_after_an_in_place_reset_equals_a_fresh_solver():
    """Two captured steps ping-pong between two states (Warp's CPU graph); ``joint_q`` of the first state
    reset in place between replays is seen by the replayed step (the FK branch under ``capture_if``)."""
    import warp as wp

    model, s0 = build()
    s1 = model.state()
    solver = newton_sap.SolverSAP(model)
    solver.step(s0, s1, None, None, DT)  # sizes the buffers before capture
    solver.step(s1, s0, None, None, DT)
    with wp.ScopedCapture(device=model.device) as capture:
        solver.step(s0, s1, None, None, DT)
        solver.step(s1, s0, None, None, DT)
    wp.capture_launch(capture.graph)
    change_q(model, s0)
    start = model.state()
    for a, b in ((start.joint_q, s0.joint_q), (start.joint_qd, s0.joint_qd)):
        a.assign(b.numpy())
    wp.capture_launch(capture.graph)
    fresh_solver = newton_sap.SolverSAP(model)
    mid = step(fresh_solver, model, start)
    fresh = step(fresh_solver, model, mid)
    for a, b in zip(arrays(s0), arrays(fresh), strict=True):
        assert_same_run(a, b)
