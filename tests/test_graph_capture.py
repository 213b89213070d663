"""A step never waits for the device, so collision plus SAP steps can be captured in a graph and replayed.

Warp's CPU graphs (recorded operation streams replayed in C++) run the same capture path as CUDA graphs,
``wp.capture_while``/``wp.capture_if`` included, so the capture is tested here on the CPU: a replayed graph
must give exactly the states and statistics of the same steps launched one by one (on a GPU: to round-off,
``same_run``).
"""

import warnings

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap.examples.scenes import quadruped_pd

from contact_scenes import (
    Run,
    box_on_ground,
    copy_state,
    initial_qd,
    one_model,
    sphere_bin,
    sphere_pushed_to_wall_builder,
    worlds_of_different_kinds,
)
from same_run import assert_same_iterations, assert_same_run, bitwise

DT = 0.01
SLIDING_SPINNING = [0.3, 0.0, 0.0, 0.0, 0.0, 0.5]  # public FREE joint_qd of each box: v [m/s], ω [rad/s]


class Stepper:
    """Newton's collision pipeline and SolverSAP on one model, two steps per call (states ping-pong)."""

    def __init__(self, model, qd0=None, **options):
        self.model = model
        self.solver = newton_sap.SolverSAP(model, **options)
        self.pipeline = newton.CollisionPipeline(model)
        self.contacts = self.pipeline.contacts()
        self.control = model.control()
        self.s0, self.s1 = model.state(), model.state()
        if qd0 is not None:
            self.s0.joint_qd.assign(np.asarray(qd0, np.float32))
        newton.eval_fk(model, self.s0.joint_q, self.s0.joint_qd, self.s0)

    def two_steps(self):
        for a, b in ((self.s0, self.s1), (self.s1, self.s0)):
            self.pipeline.collide(a, self.contacts)
            self.solver.step(a, b, self.control, self.contacts, DT)


def pushed_spheres():
    """Two worlds: a sphere pushes another into a wall in the third step (``test_parked_contacts``), and one
    moving away."""
    return [sphere_pushed_to_wall_builder(3.0, approach=0.06), sphere_pushed_to_wall_builder(-3.0)]


CASES = {
    "box stack, dense Newton systems": (lambda: box_on_ground(boxes=3), SLIDING_SPINNING * 3, {}),
    "box stack, block Cholesky": (lambda: box_on_ground(boxes=3), SLIDING_SPINNING * 3, {"dense_world_max_dofs": 0}),
    "box stack, PCG": (
        lambda: box_on_ground(boxes=3),
        SLIDING_SPINNING * 3,
        {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 0},
    ),
    "landing sphere pile, dof-parallel PCG (a device loop inside the Newton loop)": (
        lambda: sphere_bin(10),
        None,
        {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 0, "pcg_threads": "dof"},
    ),
    "box stack, momentum mode": (lambda: box_on_ground(boxes=3), SLIDING_SPINNING * 3, {"momentum_mode": True}),
    "two quadrupeds under PD": (lambda: quadruped_pd(2), None, {}),
    "landing sphere pile, stiction predictions": (lambda: sphere_bin(10), None, {}),
    "landing sphere pile, lagged contacts (their bounds read the last step's Δt on the device)": (
        lambda: sphere_bin(10),
        None,
        {"contact_approximation": "lagged"},
    ),
    "a parked contact acts in the third step (a retry inside the graph)": (
        lambda: one_model(pushed_spheres())[0],
        initial_qd(pushed_spheres()),
        {},
    ),
    "worlds of different kinds (a world without constraints)": (
        lambda: one_model(worlds_of_different_kinds())[0],
        initial_qd(worlds_of_different_kinds()),
        {},
    ),
}


def captured_and_launched(build, qd0, options, warm_pairs=1):
    """The same steps launched and replayed from a graph captured after ``warm_pairs`` launched pairs of
    steps, compared exactly (states and statistics; on CUDA to round-off) over 8 pairs; returns the replayed
    iterations [pair, world]."""
    launched = Stepper(build(), qd0, **options)
    captured = Stepper(build(), qd0, **options)
    for _ in range(warm_pairs):  # launched first: the first step sizes the solver's buffers (needed to capture)
        launched.two_steps()
        captured.two_steps()
    with wp.ScopedCapture(device=captured.model.device) as capture:
        captured.two_steps()
    iterations = []
    for _ in range(8):
        launched.two_steps()
        wp.capture_launch(capture.graph)
        for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
            assert_same_run(getattr(captured.s0, name).numpy(), getattr(launched.s0, name).numpy(), name)
        replayed, stepped = captured.solver.stats, launched.solver.stats
        assert_same_iterations(replayed.iterations, stepped.iterations)
        for name in ("converged", "num_contacts", "num_constraints"):
            assert_same_run(getattr(replayed, name), getattr(stepped, name), name)
        if bitwise():  # on CUDA the residual at the float32 floor and the CG steps to it are round-off
            for name in ("residual", "cg_iterations"):
                np.testing.assert_array_equal(getattr(replayed, name), getattr(stepped, name), err_msg=name)
        iterations.append(captured.solver.stats.iterations)
    assert np.all(captured.solver.stats.converged)
    return np.array(iterations)


@pytest.mark.parametrize("case", list(CASES))
def test_captured_steps_equal_launched_steps(case):
    build, qd0, options = CASES[case]
    iterations = captured_and_launched(build, qd0, options)
    assert iterations.max() > 0  # the Newton loop ran inside the graph


def test_resting_stack_replays_without_newton_iterations():
    """A settled 3-box stack converges at the first check of every step: inside the graph the Newton loop,
    the free motion (v* is read nowhere) and the directions' set-up are all skipped branches."""
    iterations = captured_and_launched(lambda: box_on_ground(boxes=3), None, {}, warm_pairs=20)
    assert iterations.max() == 0


def test_full_contact_buffer_is_reported_from_a_graph():
    run = Run(box_on_ground(boxes=2), rigid_contact_max=2)
    with pytest.warns(RuntimeWarning, match="contact buffer full"):
        run.step(DT)  # launched: sizes the buffers, warns
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no host read, hence no warning, inside a capture
        with wp.ScopedCapture(device=run.model.device) as capture:
            run.pipeline.collide(run.s0, run.contacts)
            run.solver.step(run.s0, run.s1, None, run.contacts, DT)
    run.solver._contact_overflow.zero_()  # forget the launched step's flag: the replay must raise it
    wp.capture_launch(capture.graph)
    assert run.solver.stats.contact_buffer_full


def test_raise_on_nonconvergence_is_refused_in_a_capture():
    model = box_on_ground()
    solver = newton_sap.SolverSAP(model, raise_on_nonconvergence=True)
    s0, s1 = model.state(), model.state()
    with pytest.raises(RuntimeError, match="cannot be captured"), wp.ScopedCapture(device=model.device):
        solver.step(s0, s1, None, None, DT)


def randomize(model, seed: int) -> int:
    """Domain randomization in place: body masses and inertias (±25 %), COMs (±1 cm), friction, drive
    stiffness (±50 %) and armature; returns Newton's flags for these changes."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.8, 1.25, model.body_count).astype(np.float32)
    model.body_mass.assign(model.body_mass.numpy() * scale)
    model.body_inertia.assign(model.body_inertia.numpy() * scale[:, None, None])
    model.body_com.assign(model.body_com.numpy() + rng.uniform(-0.01, 0.01, (model.body_count, 3)).astype(np.float32))
    model.shape_material_mu.assign(rng.uniform(0.3, 1.0, model.shape_count).astype(np.float32))
    ke_scale = rng.uniform(0.5, 1.5, model.joint_dof_count).astype(np.float32)
    model.joint_target_ke.assign(model.joint_target_ke.numpy() * ke_scale)
    model.joint_armature.assign(model.joint_armature.numpy() + np.float32(0.02))
    F = newton.ModelFlags
    return (
        F.BODY_INERTIAL_PROPERTIES | F.SHAPE_PROPERTIES | F.JOINT_DOF_FORCE_PROPERTIES | F.JOINT_DOF_INERTIAL_PROPERTIES
    )


def test_model_changes_reach_a_captured_graph():
    """notify_model_changed allocates nothing: a graph captured before a domain randomization replays the
    new masses, COMs, friction, gains and armature, step for step as a solver built for the changed model."""
    captured = Stepper(quadruped_pd(2))
    captured.two_steps()
    with wp.ScopedCapture(device=captured.model.device) as capture:
        captured.two_steps()
    captured.solver.notify_model_changed(randomize(captured.model, seed=3))
    changed_model = quadruped_pd(2)
    randomize(changed_model, seed=3)
    reference, unchanged = Stepper(changed_model), Stepper(quadruped_pd(2))
    for other in (reference, unchanged):
        copy_state(captured.s0, other.s0)
    for _ in range(3):
        wp.capture_launch(capture.graph)
        reference.two_steps()
        unchanged.two_steps()
        for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
            assert_same_run(getattr(captured.s0, name).numpy(), getattr(reference.s0, name).numpy(), name)
        assert_same_iterations(captured.solver.stats.iterations, reference.solver.stats.iterations)
    moved = np.abs(captured.s0.joint_qd.numpy() - unchanged.s0.joint_qd.numpy()).max()
    assert moved > 1e-2  # [rad/s, m/s]: the changes act


def test_replayed_steps_report_their_own_statistics():
    """``stats`` reads per-world arrays that every step writes on the device, so a replayed graph's statistics
    are its steps', whatever Python-side calls came between: a launched step without contacts (no SAP problem)
    before a replay of contact steps, and a snapshot with contacts before replays of contact-free steps (which
    report no iterations, contacts or constraints). Before, a host flag of the last Python call chose between
    the arrays and zeros."""
    with_contacts = Stepper(box_on_ground(boxes=3), SLIDING_SPINNING * 3)
    with_contacts.two_steps()
    with wp.ScopedCapture(device=with_contacts.model.device) as capture:
        with_contacts.two_steps()
    with_contacts.solver.step(with_contacts.s0, with_contacts.model.state(), with_contacts.control, None, DT)
    assert with_contacts.solver.stats.num_contacts.sum() == 0
    wp.capture_launch(capture.graph)
    stats = with_contacts.solver.stats
    assert stats.iterations.min() > 0 and stats.num_contacts.min() > 0

    free = Stepper(box_on_ground(boxes=3), SLIDING_SPINNING * 3)
    free.s0.joint_q.assign(free.s0.joint_q.numpy() + np.tile([0, 0, 1.0, 0, 0, 0, 0], 3).astype(np.float32))

    def free_steps():
        free.solver.step(free.s0, free.s1, free.control, None, DT)
        free.solver.step(free.s1, free.s0, free.control, None, DT)

    free_steps()
    with wp.ScopedCapture(device=free.model.device) as capture:
        free_steps()
    lowered = free.model.state()
    copy_state(free.s0, lowered)
    lowered.joint_q.assign(lowered.joint_q.numpy() - np.tile([0, 0, 1.0, 0, 0, 0, 0], 3).astype(np.float32))
    newton.eval_fk(free.model, lowered.joint_q, lowered.joint_qd, lowered)
    free.pipeline.collide(lowered, free.contacts)
    free.solver.snapshot(lowered, free.control, DT, contacts=free.contacts)
    assert free.solver.stats.num_contacts.sum() > 0
    wp.capture_launch(capture.graph)
    stats = free.solver.stats
    assert stats.num_contacts.sum() == 0 and stats.num_constraints.sum() == 0 and stats.iterations.sum() == 0
    assert stats.converged.all()


def test_constraint_buffers_of_each_contact_capacity_are_kept():
    """A step without contacts (fewer constraint slots) or a snapshot with another ``Contacts`` takes the
    per-slot buffers of that capacity; the next step with the first ``Contacts`` takes its own buffers again,
    the same arrays: a graph captured before still owns live buffers (a CUDA graph keeps no reference to its
    arrays: freed ones would be overwritten), and alternating allocates nothing. Replays after both equal the
    launched steps."""
    launched, captured = Stepper(quadruped_pd(2)), Stepper(quadruped_pd(2))  # drives: rows without contacts too
    launched.two_steps()
    captured.two_steps()
    buffers = captured.solver._sap.c_gamma.ptr
    with wp.ScopedCapture(device=captured.model.device) as capture:
        captured.two_steps()
    launched.two_steps()
    captured.solver.step(captured.s0, captured.model.state(), captured.control, None, DT)  # fewer slots
    assert captured.solver._sap.c_gamma.ptr != buffers
    other = newton.CollisionPipeline(captured.model, rigid_contact_max=64)
    contacts = other.contacts()
    other.collide(captured.s0, contacts)
    captured.solver.snapshot(captured.s0, captured.control, DT, contacts=contacts)  # another capacity
    wp.capture_launch(capture.graph)
    assert_same_run(captured.s0.joint_qd.numpy(), launched.s0.joint_qd.numpy())
    captured.two_steps()
    assert captured.solver._sap.c_gamma.ptr == buffers
