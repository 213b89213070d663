"""``SolverSAP.step`` as Newton calls it: its signature, partial ``Control`` objects, inputs of another
model (refused by size, or skipped), and contact buffers too small for the contacts found."""

import inspect
import warnings

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap

from contact_scenes import Run, box_on_ground

DT = 0.01
INERTIA = wp.mat33(1e-2, 0, 0, 0, 1e-2, 0, 0, 0, 1e-2)


def driven_pendulum():
    """A link on a PD-driven hinge whose model target (0.5 rad) is away from its start (0 rad)."""
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, com=wp.vec3(0.3, 0.0, 0.0), inertia=INERTIA)
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0, 1, 0), target_ke=50.0, target_kd=1.0)])
    model = b.finalize()
    model.joint_target_q.assign(np.array([0.5], np.float32))
    return model


def stepped(model, control, steps=10):
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
    return s0.joint_q.numpy()


def test_step_has_newtons_signature():
    ours = inspect.signature(newton_sap.SolverSAP.step).parameters
    newtons = inspect.signature(newton.solvers.SolverBase.step).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in newtons.values()]


def test_step_accepts_its_own_observables_and_refuses_others():
    model = box_on_ground()
    solver, other = newton_sap.SolverSAP(model), newton_sap.SolverSAP(model)
    observables = solver.observables([])  # an empty request: nothing to fill, still checked for its owner
    solver.step(model.state(), model.state(), None, None, DT, observables=observables)
    with pytest.raises(ValueError, match="allocated them"):
        other.step(model.state(), model.state(), None, None, DT, observables=observables)


def test_control_with_only_joint_f_takes_the_model_targets():
    """A bare ``newton.Control`` (targets None) steps like the model's control with the same ``joint_f``."""
    model = driven_pendulum()
    full = model.control()
    full.joint_f.assign(np.array([1.0], np.float32))
    bare = newton.Control()
    bare.joint_f = wp.array([1.0], dtype=float)
    q_full, q_bare = stepped(model, full), stepped(model, bare)
    assert q_full[0] > 0.05  # the drive pulls toward the model's target
    assert np.allclose(q_bare, q_full, atol=1e-7)


def test_no_control_reads_the_model_arrays_of_each_step():
    """``control=None`` takes the model's control arrays as they are at the step, also one replaced after the
    build (a new ``model.joint_f``: the solver kept the old one before; Featherstone reads the new one)."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    link = b.add_link(mass=1.0, inertia=INERTIA)
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0, 1, 0))])
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    model.joint_f = wp.array([1.0], dtype=float)  # 1 N·m on I = 0.01 kg·m²
    s0, s1 = model.state(), model.state()
    solver.step(s0, s1, None, None, DT)
    assert abs(s1.joint_qd.numpy()[0] - 1.0 * DT / 1e-2) < 1e-5


def swap_state_out(small, big):
    return {"state_out": small.state()}


def swap_control(small, big):
    return {"control": small.control()}


def swap_target_qd(small, big):
    control = newton.Control()
    control.joint_target_qd = small.control().joint_target_qd
    return {"control": control}


def swap_body_f(small, big):
    state_in = big.state()
    state_in.body_f = small.state().body_f
    return {"state_in": state_in}


@pytest.mark.parametrize(
    ("swap", "message"),
    [
        (swap_state_out, r"state_out\.joint_q has 7 entries, the model has 21"),
        (swap_control, r"control\.joint_f has 6 entries, the model has 18"),
        (swap_target_qd, r"control\.joint_target_qd has 6 entries, the model has 18"),
        (swap_body_f, r"state_in\.body_f has 1 entries, the model has 3"),
    ],
)
def test_arrays_of_another_model_are_refused_by_size(swap, message):
    small, big = box_on_ground(boxes=1), box_on_ground(boxes=3)
    solver = newton_sap.SolverSAP(big)
    args = {"state_in": big.state(), "state_out": big.state(), "control": None} | swap(small, big)
    with pytest.raises(ValueError, match=message):
        solver.step(args["state_in"], args["state_out"], args["control"], None, DT)


def test_contacts_with_shapes_outside_the_model_are_skipped():
    """One box stepped with the contacts of a three-box stack (same first box): only the box-ground
    contacts name shapes of the one-box model; the others are skipped, so the step equals the one with
    the model's own contacts."""
    own, stack = Run(box_on_ground(boxes=1)), Run(box_on_ground(boxes=3))
    stack.pipeline.collide(stack.s0, stack.contacts)
    own.pipeline.collide(own.s0, own.contacts)
    n_own = int(own.contacts.rigid_contact_count.numpy()[0])
    assert int(stack.contacts.rigid_contact_count.numpy()[0]) > n_own > 0
    results = []
    for contacts in (own.contacts, stack.contacts):
        state_out = own.model.state()
        own.solver.step(own.s0, state_out, None, contacts, DT)
        assert own.solver.stats.num_contacts[0] == n_own
        results.append(state_out.joint_q.numpy())
    assert np.allclose(results[0], results[1], atol=1e-7)


def test_body_pair_reduced_contacts_are_refused():
    """Newton's body-pair contact reduction keeps representatives whose separation convention a solver must be
    validated for; SolverSAP is not, and says so (Newton's check, as its own solvers do)."""
    model = box_on_ground()
    reduction = newton.CollisionPipeline.BodyPairReductionConfig()
    pipeline = newton.CollisionPipeline(model, body_pair_reduction=reduction)
    contacts = pipeline.contacts()
    state = model.state()
    pipeline.collide(state, contacts)
    solver = newton_sap.SolverSAP(model)
    with pytest.raises(ValueError, match="body-pair-reduced"):
        solver.step(state, model.state(), None, contacts, DT)
    with pytest.raises(ValueError, match="body-pair-reduced"):
        solver.snapshot(state, dt=DT, contacts=contacts)


def test_dropped_contacts_are_counted_and_named():
    """Newton's pipeline counts contacts beyond the buffer on some of its paths: that excess is the
    reported lower bound of the contacts dropped."""
    run = Run(box_on_ground(boxes=2), rigid_contact_max=2)
    with pytest.warns(
        RuntimeWarning, match=r"contact buffer full \(2 slots\): at least (\d+) contacts dropped"
    ) as record:
        run.step(DT)
    found = int(run.contacts.rigid_contact_count.numpy()[0])
    stats = run.solver.stats
    assert found > 2 and stats.contacts_dropped == found - 2 and stats.contact_buffer_full
    assert f"at least {found - 2} contacts dropped" in str(record[0].message)


def test_a_buffer_filled_exactly_is_reported_full():
    """A three-box stack has 12 contacts; with 4 slots Newton's pipeline stops counting at 4 (the count
    equals the capacity though 8 are missing): a full buffer is reported, never taken as complete."""
    complete = Run(box_on_ground(boxes=3))
    complete.pipeline.collide(complete.s0, complete.contacts)
    assert int(complete.contacts.rigid_contact_count.numpy()[0]) == 12
    run = Run(box_on_ground(boxes=3), rigid_contact_max=4)
    with pytest.warns(RuntimeWarning, match=r"contact buffer full \(4 slots\): contacts may be missing"):
        run.step(DT)
    assert int(run.contacts.rigid_contact_count.numpy()[0]) == 4
    assert run.solver.stats.contact_buffer_full and run.solver.stats.num_contacts[0] == 4


def test_a_buffer_with_room_is_not_reported():
    run = Run(box_on_ground(), rigid_contact_max=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run.step(DT)
    stats = run.solver.stats
    assert int(run.contacts.rigid_contact_count.numpy()[0]) == 4
    assert stats.contacts_dropped == 0 and not stats.contact_buffer_full


def test_contact_forces_past_the_count_are_zero_when_the_count_shrinks():
    """Newton's pipeline leaves the buffer's entries past its contact count as an earlier collision wrote them;
    ``rigid_contact_force`` holds the step's force for each contact and zero after the count, so a sum over the
    whole buffer is the contacts' total force. A two-box stack rests (12 contacts: the ground holds both boxes),
    then is lifted 5 m: only the 4 contacts between the boxes are left, carrying no force in free fall."""
    run = Run(box_on_ground(boxes=2))
    run.step(DT, steps=20)
    forces = run.contacts.rigid_contact_force.numpy()
    count = int(run.contacts.rigid_contact_count.numpy()[0])
    assert count == 12
    shape0, shape1 = (a.numpy()[:count] for a in (run.contacts.rigid_contact_shape0, run.contacts.rigid_contact_shape1))
    on_boxes = np.where(shape1 == 0, -1.0, 1.0) * forces[:count, 2]  # the force on shape 1: on the box from the ground
    np.testing.assert_allclose(on_boxes[(shape0 == 0) | (shape1 == 0)].sum(), 2.0 * 9.81, rtol=1e-2)  # holds 2 kg
    q = run.s0.joint_q.numpy().reshape(2, 7)
    q[:, 2] += 5.0
    run.s0.joint_q.assign(q.ravel())
    newton.eval_fk(run.model, run.s0.joint_q, run.s0.joint_qd, run.s0)
    run.step(DT)
    forces = run.contacts.rigid_contact_force.numpy()
    count = int(run.contacts.rigid_contact_count.numpy()[0])
    assert count == 4
    assert np.abs(forces[:count]).max() < 0.1  # free fall: the boxes barely press on each other (9.8 N at rest)
    assert not forces[count:].any()
