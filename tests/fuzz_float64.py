"""Differential fuzz of ``SolverSAP``'s float32 SAP solve against the float64 solve (``sap_reference``).

For each seed of a range it builds the random case of ``random_cases.build_case`` (realistic or ``--harsh``), draws
solver options from the seed (line search, stiction prediction, mode, contact approximation, solve path, parked
contacts), steps it ``--steps`` − 1 times with Newton's collision pipeline, takes a snapshot of the next step and
compares each world's solved velocities with the float64 minimizer of the same problem. One JSON line per world::

    {"seed", "harsh", "options", "steps", "world", "dofs", "rows", "iterations", "converged", "failed",
     "earlier_not_converged", "earlier_failed", "earlier_error", "free_children", "rel_error", "rel_residual"}

``rel_error`` is ``max|v − v_ref| / max(max|v_ref|, max|v*|)``; ``rel_residual`` is the float64 optimality residual
at the solver's v, ``‖D∇ℓ‖ / max(‖D A v‖, ‖D Jᵀγ‖)`` with ``D = diag(A)^-½`` (the reference's own test; NaN for a
failed world). A converged solve ``OFF`` or more off is *off* where that residual exceeds ``RESIDUAL_MET`` (it
stopped at a float32 floor), *ill-conditioned* where it does not (it met its stopping criterion; the problem's
condition leaves its velocities that far off). ``earlier_*`` count the world's earlier steps that did not converge
or failed, ``earlier_error`` the largest ``rel_error`` of those not converged (each solved again by a snapshot),
``free_children`` its FREE and DISTANCE joints under a parent body. The summary
printed at the end counts each class. From the repository root::

    PYTHONPATH=tests python tests/fuzz_float64.py --start 0 --budget 1800 --out real.jsonl
    PYTHONPATH=tests python tests/fuzz_float64.py --harsh --start 100000 --budget 1800 --out harsh.jsonl

``--compare A B`` prints the world solves whose class or iterations differ between two such files (same seeds,
steps and options), and the totals over the solves common to both.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

OFF = 1e-3
"""A converged solve at least this far off (``rel_error``) is *off* or *ill-conditioned* (see the module doc)."""
RESIDUAL_MET = 1e-5
"""A float64 relative residual at or below this met the solver's criterion (``rel_tolerance`` 1e-6) up to float32."""

PATHS = {
    "default": {},
    "dense": dict(dense_world_max_dofs=1024),
    "pcg-world": dict(dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads="world"),
    "pcg-dof": dict(dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads="dof"),
}


def draw_options(seed: int) -> dict:
    """Solver keywords of ``seed``'s run (JSON-serializable; ``path`` names an entry of ``PATHS``)."""
    rng = np.random.default_rng([seed, 7])
    return dict(
        line_search=str(rng.choice(["exact", "exact", "backtracking"])),
        stiction_prediction=bool(rng.random() < 0.7),
        momentum_mode=bool(rng.random() < 0.3),
        contact_approximation=str(rng.choice(["sap", "sap", "sap", "lagged"])),
        park_distant_contacts=bool(rng.random() < 0.8),
        path=str(rng.choice(list(PATHS), p=[0.55, 0.15, 0.15, 0.15])),
    )


def solver_keywords(options: dict) -> dict:
    keywords = {k: v for k, v in options.items() if k != "path"}
    keywords.update(PATHS[options["path"]])
    return keywords


def compare_worlds(solver, state, control, contacts, dt: float, worlds) -> tuple:
    """A snapshot of the step from ``state`` and, per world of ``worlds`` that did not fail, its
    ``(rel_error, rel_residual)`` against the float64 solve (NaN for the others), with the snapshot's stats."""
    from sap_reference import WorldProblem, solve_sap_problem  # noqa: PLC0415

    snap = solver.snapshot(state, control=control, dt=dt, contacts=contacts)
    stats = solver.stats
    errors = {}
    for world in worlds:
        v, v_star = snap.velocity[world].astype(np.float64), snap.v_star[world]
        errors[world] = (float("nan"), float("nan"))
        if not stats.failed[world] and len(v_star):
            v_ref = solve_sap_problem(snap, world, max_iterations=200)
            scale = max(np.abs(v_ref).max(), np.abs(v_star).max(), np.finfo(np.float32).tiny)
            errors[world] = (float(np.abs(v - v_ref).max() / scale), WorldProblem(snap, world).relative_residual(v))
    return snap, stats, errors


def run_case(seed: int, harsh: bool, options: dict, steps: int = 1) -> list[dict]:
    """One record per world of case ``seed`` solved with ``options``, at its ``steps``-th step."""
    import newton  # noqa: PLC0415 (imported here so that --compare needs neither)
    from random_cases import build_case  # noqa: PLC0415

    import newton_sap  # noqa: PLC0415

    model, state, control, spec = build_case(seed, harsh=harsh)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    solver = newton_sap.SolverSAP(model, **solver_keywords(options))
    state_next = model.state()
    worlds = range(model.world_count)
    not_converged, failed_steps = np.zeros(model.world_count, int), np.zeros(model.world_count, int)
    earlier_error = np.zeros(model.world_count)  # the largest rel_error of a world's earlier not-converged steps
    for _ in range(steps - 1):
        pipeline.collide(state, contacts)
        solver.step(state, state_next, control, contacts, spec.dt)
        converged, failed = solver.stats.converged.copy(), solver.stats.failed.copy()
        not_converged += ~converged & ~failed
        failed_steps += failed
        again = np.flatnonzero(~converged & ~failed)
        if len(again):  # that step again, against the float64 solve
            errors = compare_worlds(solver, state, control, contacts, spec.dt, again)[2]
            for world in again:
                earlier_error[world] = max(earlier_error[world], errors[world][0])
        state, state_next = state_next, state
    joint_type, joint_parent, joint_world = (
        a.numpy() for a in (model.joint_type, model.joint_parent, model.joint_world)
    )
    free_child = np.isin(joint_type, [int(newton.JointType.FREE), int(newton.JointType.DISTANCE)]) & (joint_parent >= 0)
    pipeline.collide(state, contacts)
    snap, stats, errors = compare_worlds(solver, state, control, contacts, spec.dt, worlds)
    return [
        dict(
            seed=seed,
            harsh=harsh,
            options=options,
            steps=steps,
            world=world,
            dofs=len(snap.v_star[world]),
            rows=len(snap.constraint_kind[world]),
            iterations=int(stats.iterations[world]),
            converged=bool(stats.converged[world]),
            failed=bool(stats.failed[world]),
            earlier_not_converged=int(not_converged[world]),
            earlier_failed=int(failed_steps[world]),
            earlier_error=float(earlier_error[world]),
            free_children=int(np.count_nonzero(free_child & (joint_world == world))),
            rel_error=errors[world][0],
            rel_residual=errors[world][1],
        )
        for world in worlds
    ]


def verdict(record: dict) -> str:
    if record["failed"]:
        return "failed"
    if not record["converged"]:
        return "not converged"
    if record["rel_error"] < OFF:
        return "ok"
    return "off" if record["rel_residual"] > RESIDUAL_MET else "ill-conditioned"


def summarize(records: list[dict]) -> str:
    counts = {}
    for r in records:
        counts[verdict(r)] = counts.get(verdict(r), 0) + 1
    iterations = sum(r["iterations"] for r in records)
    parts = ", ".join(f"{k} {counts[k]}" for k in sorted(counts))
    not_converged = sum(r["earlier_not_converged"] for r in records)
    within = sum(1 for r in records if r["earlier_not_converged"] and r.get("earlier_error", 0.0) < OFF)
    failed = sum(r["earlier_failed"] for r in records)
    return (
        f"{len(records)} world solves: {parts}; Newton iterations {iterations}; earlier steps not converged"
        f" {not_converged} (worlds whose all were within {OFF:g}: {within}), failed {failed}"
    )


def load(path: str) -> dict:
    with open(path) as f:
        return {
            (r["seed"], r["steps"], r["world"], json.dumps(r["options"], sort_keys=True)): r for r in map(json.loads, f)
        }


def compare(path_a: str, path_b: str) -> None:
    a, b = load(path_a), load(path_b)
    common = sorted(set(a) & set(b))
    for key in common:
        ra, rb = a[key], b[key]
        if verdict(ra) != verdict(rb) or ra["iterations"] != rb["iterations"]:
            print(
                f"seed {key[0]} step {key[1]} world {key[2]} {key[3]}:"
                f" {verdict(ra)} {ra['iterations']} it {ra['rel_error']:.2e}"
                f" -> {verdict(rb)} {rb['iterations']} it {rb['rel_error']:.2e}"
            )
    print(f"A: {summarize([a[k] for k in common])}")
    print(f"B: {summarize([b[k] for k in common])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harsh", action="store_true", help="the harsh profile (seeds from 100000 by convention)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=None, help="seeds to run (default: until --budget)")
    parser.add_argument("--steps", type=int, default=1, help="the step compared (1: the first, from the case's state)")
    parser.add_argument("--budget", type=float, default=600.0, help="wall-clock seconds to stop after")
    parser.add_argument("--out", default="fuzz.jsonl", help="JSON-lines output (appended)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two outputs instead")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    warnings.simplefilter("ignore")
    import warp as wp  # noqa: PLC0415

    wp.config.quiet = True
    t_end = time.monotonic() + args.budget
    records, seed = [], args.start
    with open(args.out, "a") as out:
        while time.monotonic() < t_end and (args.count is None or seed < args.start + args.count):
            options = draw_options(seed)
            try:
                case_records = run_case(seed, args.harsh, options, args.steps)
            except ValueError as error:  # a case the model checks refuse (e.g. a degenerate random inertia)
                print(f"seed {seed}: refused: {error}")
                case_records = []
            for record in case_records:
                out.write(json.dumps(record) + "\n")
                if verdict(record) in ("not converged", "off") or record["earlier_not_converged"]:
                    print(
                        f"seed {seed} world {record['world']}: {verdict(record)}, {record['dofs']} dofs,"
                        f" {record['iterations']} it, rel {record['rel_error']:.2e} (residual"
                        f" {record['rel_residual']:.1e}), earlier not converged {record['earlier_not_converged']}"
                        f" (largest error {record['earlier_error']:.1e}), free children {record['free_children']},"
                        f" {options}"
                    )
            out.flush()
            records += case_records
            seed += 1
    print(f"seeds {args.start}..{seed - 1}: {summarize(records)}")


if __name__ == "__main__":
    main()
