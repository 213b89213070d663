"""Random scenes whose solves once went wrong (``random_cases.py``, from a differential fuzz against the float64 solve):
each solve path and option that the finding touched, against ``sap_reference.solve_sap_problem``."""

import newton
import numpy as np
import pytest
from random_cases import build_case
from sap_reference import solve_sap_problem

import newton_sap
from newton_sap.constraints.dispatch import CONTACT, JOINT_LIMIT

PCG_WORLD = dict(dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads="world")
PCG_DOF = dict(dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads="dof")


@pytest.fixture(scope="module")
def hard_limit_case():
    """Harsh case 100101 (4 worlds, Δt 0.01 s); its world 3 (21 dofs, 26 contacts down to 12.5 cm deep and two
    sides of a hard joint limit, ``R = 1.3e-5``) and that world's float64 solution."""
    model, state, control, spec = build_case(100101, harsh=True)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    snap = newton_sap.SolverSAP(model).snapshot(state, control=control, dt=spec.dt, contacts=contacts)
    world = 3
    kinds = snap.constraint_kind[world]
    assert snap.v_star[world].shape == (21,) and np.count_nonzero(kinds == CONTACT) == 26  # still the finding's world
    assert np.count_nonzero(kinds == JOINT_LIMIT) == 2
    return model, state, control, spec, contacts, world, solve_sap_problem(snap, world, max_iterations=200)


@pytest.mark.parametrize(
    "options",
    [
        dict(stiction_prediction=True),
        dict(stiction_prediction=False),
        dict(PCG_WORLD, stiction_prediction=False, park_distant_contacts=False),
        dict(PCG_DOF),
        dict(line_search="backtracking", stiction_prediction=False),
        dict(line_search="backtracking", park_distant_contacts=False),
    ],
    ids=["default", "no-stiction-prediction", "pcg-world", "pcg-dof", "backtracking", "backtracking-unparked"],
)
def test_a_hard_limit_at_its_kink_converges_to_the_float64_solve(hard_limit_case, options):
    """The iterations bring the hard limit within 3 float32 ulps of its kink. Evaluated on its inactive side there
    (G = 0), it let the Newton direction push through it and the line search stop after a step of round-off: the
    world ended *converged* 4.8 % off the float64 solve (relative residual 4e-2) on the default path; on the CG paths
    a loose direction stalled the same way, 2.6-4.4 % off. Now the limit's stiff branch within round-off of the kink
    (``friction_cone.KINK_ROUND_OFF``) and a precise CG direction after a loose one stalls (``INEXACT_STALL``) take
    every path to within 1e-6 of the float64 solve. With backtracking the limit, on the band's edge with no impulse
    along a line search, left it by round-off and lost its curvature (``sap.constraint_eval``); the next direction
    pushed into it, a step of 5e-6 moved no velocity measurably, and the world ended not converged 4-8 % off. That step
    crossed the limit's kink, so the next direction differs and the world goes on (``line_search.curvature_gained``):
    converged in 15-16 iterations within 3e-6."""
    model, state, control, spec, contacts, world, v_ref = hard_limit_case
    solver = newton_sap.SolverSAP(model, **options)
    snap = solver.snapshot(state, control=control, dt=spec.dt, contacts=contacts)
    assert bool(solver.stats.converged[world]) and not bool(solver.stats.failed[world])
    assert np.abs(snap.velocity[world] - v_ref).max() < 1e-4 * np.abs(v_ref).max()


def test_a_lagged_world_keeps_converging_to_the_float64_solve():
    """Harsh case 100090, world 3 (16 dofs, 16 constraints), ``contact_approximation="lagged"`` in momentum mode: it
    converges within 1e-4 of the float64 solve. Evaluating the rows without impulse along the last line search (dead
    segments) in full where they had curvature, a review's proposal for the kink band, stopped it 13 % off, reported
    converged (``sap.constraint_eval``)."""
    model, state, control, spec = build_case(100090, harsh=True)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    solver = newton_sap.SolverSAP(model, contact_approximation="lagged", momentum_mode=True)
    snap = solver.snapshot(state, control=control, dt=spec.dt, contacts=contacts)
    world = 3
    assert snap.v_star[world].shape == (16,) and len(snap.constraint_kind[world]) == 16  # still the finding's world
    v_ref = solve_sap_problem(snap, world, max_iterations=200)
    assert bool(solver.stats.converged[world])
    assert np.abs(snap.velocity[world] - v_ref).max() < 1e-4 * np.abs(v_ref).max()


@pytest.mark.parametrize(
    "seed, harsh, world, shape, options",
    [
        (814, False, 0, (106, 120), dict(line_search="backtracking")),
        (857, False, 0, (88, 102), dict(line_search="backtracking", momentum_mode=True)),
        (857, False, 0, (88, 102), dict(line_search="backtracking", stiction_prediction=False)),
        (
            100015,
            True,
            1,
            (12, 6),
            dict(line_search="backtracking", contact_approximation="lagged", stiction_prediction=False),
        ),
    ],  # fmt: skip
    ids=["814", "857-momentum", "857-plain-newton", "100015-lagged"],
)
def test_backtracking_lands_on_the_minimum_along_its_line(seed, harsh, world, shape, options):
    """Cases whose backtracking solves crept to ``max_iterations`` at a relative residual of 1 (up to 3× the
    velocity scale off): a stiff row (a hard joint limit) turning on just past the minimum along the line left every
    step on a trial short of the row's kink, where the next Newton direction was the same again; in the lagged world
    the minimum lay below the shortest trial and the slope's linear interpolation took a step far from it every
    iteration. Landing on the minimum between the trials that bracket it (``line_search.slope_root``) converges each
    to the float64 solve within 1e-4, in at most 40 Newton iterations (now 4-27, as many as the exact search)."""
    model, state, control, spec = build_case(seed, harsh=harsh)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    solver = newton_sap.SolverSAP(model, **options)
    snap = solver.snapshot(state, control=control, dt=spec.dt, contacts=contacts)
    assert (len(snap.v_star[world]), len(snap.constraint_kind[world])) == shape  # still the finding's world
    v_ref = solve_sap_problem(snap, world, max_iterations=200)
    assert bool(solver.stats.converged[world]) and int(solver.stats.iterations[world]) <= 40
    assert np.abs(snap.velocity[world] - v_ref).max() < 1e-4 * np.abs(v_ref).max()


@pytest.mark.parametrize(
    "seed, shape, options",
    [
        (512, (101, 69), dict(momentum_mode=True, stiction_prediction=False)),
        (319, (128, 126), dict(PCG_WORLD, contact_approximation="lagged", line_search="backtracking")),
    ],
    ids=["512-momentum", "319-pcg-lagged"],
)
def test_a_world_at_its_float32_floor_stops_and_joins_what_its_answer_crosses(seed, shape, options):
    """Realistic cases whose one world (velocities up to 1e3 m/s) reached its float32 floor in 11-20 Newton
    iterations with a free body at 2e-3 of its own scale, above ``sap.TREE_FLOOR``: it iterated on the floor to
    ``max_iterations``, and the joint limits and parked contacts its answer crossed joined with no iterations left, so
    it ended not converged 50 % (512) and 72 % (319) off the float64 solve. Stopping where the worst tree no longer
    converges (``sap.FLOOR_PATIENCE``) leaves the retry its iterations: converged within 1e-4."""
    model, state, control, spec = build_case(seed)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    solver = newton_sap.SolverSAP(model, **options)
    snap = solver.snapshot(state, control=control, dt=spec.dt, contacts=contacts)
    world = 0
    assert (len(snap.v_star[world]), int(solver.stats.num_contacts[world])) == shape  # still the finding's world
    v_ref = solve_sap_problem(snap, world, max_iterations=200)
    assert bool(solver.stats.converged[world]) and int(solver.stats.iterations[world]) < 80
    assert np.abs(snap.velocity[world] - v_ref).max() < 1e-4 * np.abs(v_ref).max()


def test_the_differential_fuzz_checks_a_case_against_the_float64_solve():
    """``fuzz_float64.run_case`` (the harness these findings come from) on realistic case 3 (three worlds of 19, 21
    and 5 dofs with contacts, drives and limits; its drawn options take the dof-parallel CG) at its second step: one
    record per world, each converged within 1e-3 of the float64 solve, and the first step converged in every world."""
    from fuzz_float64 import draw_options, run_case, verdict

    records = run_case(3, False, draw_options(3), steps=2)
    assert [r["world"] for r in records] == list(range(len(records))) and len(records) >= 1
    assert all(verdict(r) == "ok" and r["earlier_not_converged"] == 0 for r in records)
