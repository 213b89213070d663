"""Large worlds: block-preconditioned CG gives the same steps as the dense Cholesky of H."""

import newton
import numpy as np
import pytest
from sap_reference import solve_sap_problem

import newton_sap

from contact_scenes import Run, box_on_ground, copy_state
from random_trees import add_random_tree, random_state


# dense tree blocks, or Jacobi for every tree: a Jacobi-preconditioned solve stops at the float32 cost
# floor (the stall criterion of sap.py) with a 10-100x larger residual than the dense one, hence its
# looser per-step agreement
@pytest.mark.parametrize(("dense_max_dofs", "tolerance"), [(64, 1e-4), (0, 5e-3)])
def test_pcg_matches_dense_newton_systems(dense_max_dofs, tolerance):
    """A 5-box stack (boxes coupled through contacts) stepped with dense H solves and with PCG."""
    qd0 = [0.3, 0, 0, 0, 0, 0.5] * 5
    dense = Run(box_on_ground(boxes=5, mu=0.5), qd0=qd0)
    pcg = Run(
        box_on_ground(boxes=5, mu=0.5), qd0=qd0, dense_world_max_dofs=0, block_cholesky_max_dofs=0,
        dense_max_dofs=dense_max_dofs,
    )  # fmt: skip
    worst = 0.0
    for _ in range(30):
        # both step from the same state (a sliding, spinning stack would amplify round-off over steps)
        copy_state(dense.s0, pcg.s0)
        dense.step(0.01)
        pcg.step(0.01)
        scale = np.abs(dense.qd).max()
        worst = max(worst, np.abs(dense.qd - pcg.qd).max() / scale)
    assert pcg.solver.topology.world_uses_pcg.all()
    assert np.all(pcg.converged)
    assert np.all(np.concatenate(pcg.cg_iterations) > 0)
    assert worst < tolerance  # relative to the largest joint velocity


def test_dof_parallel_cg_gives_the_per_world_cg_steps():
    """The dof-parallel CG layout (``pcg_threads="dof"``, the GPU default) runs the per-world CG's iterations:
    four different worlds in one model (a resting stack, a sliding box, 12 spheres landing in a bin, a box in
    free fall) stepped from the same states by both layouts give the same velocities, CG and Newton
    iteration counts up to float round-off (the parallel sums add in another order)."""
    from contact_scenes import one_model, worlds_of_different_kinds

    worlds = worlds_of_different_kinds()
    runs = []
    for layout in ("world", "dof"):
        model, qd0 = one_model(worlds)
        runs.append(Run(model, qd0=qd0, dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads=layout))
    per_world, parallel = runs
    assert parallel.solver._sap.parallel_cg is not None and per_world.solver._sap.parallel_cg is None
    worst, cg_world, cg_dof = 0.0, 0, 0
    for _ in range(40):
        copy_state(per_world.s0, parallel.s0)
        per_world.step(0.01)
        parallel.step(0.01)
        scale = max(np.abs(per_world.qd).max(), 1e-3)
        worst = max(worst, np.abs(per_world.qd - parallel.qd).max() / scale)
        cg_world += int(per_world.cg_iterations[-1].sum())
        cg_dof += int(parallel.cg_iterations[-1].sum())
    assert np.all(np.concatenate(parallel.converged))
    assert cg_dof > 100
    assert abs(cg_dof - cg_world) <= 0.05 * cg_world
    assert worst < 1e-4


def test_device_defaults_of_the_large_world_solvers(gpu_paths):
    """On the CPU, worlds up to 512 dofs use the block Cholesky, CG runs one thread per world and distant contacts
    are parked; on GPUs every world above the dense size takes CG, parallel over dofs, and nothing is parked;
    explicit values are kept."""
    solver = newton_sap.SolverSAP(box_on_ground())
    expected = (0, "dof", False) if gpu_paths else (512, "world", True)
    o = solver.options
    assert (o.block_cholesky_max_dofs, o.pcg_threads, o.park_distant_contacts) == expected
    o = newton_sap.SolverSAP(box_on_ground(), block_cholesky_max_dofs=100, pcg_threads="dof",
                             park_distant_contacts=not gpu_paths).options  # fmt: skip
    assert (o.block_cholesky_max_dofs, o.pcg_threads, o.park_distant_contacts) == (100, "dof", not gpu_paths)


@pytest.mark.parametrize("layout", ["world", "dof"])
def test_cg_stopped_short_of_its_forcing_term_records_the_residual_it_reached(layout):
    """CG capped at one iteration per direction (Jacobi-preconditioned, a sliding 5-box stack): the direction's
    recorded forcing term is the relative residual CG reached, above any η it aimed at, so the line search's
    float32 stall tests (``PRECISE_FORCING``) do not take it for a precise Newton direction; η was recorded
    before, whatever CG reached."""
    from newton_sap.pcg import CG_LOOSEST_TOLERANCE

    run = Run(box_on_ground(boxes=5, mu=0.5), qd0=[0.3, 0, 0, 0, 0, 0.5] * 5, dense_world_max_dofs=0,
              block_cholesky_max_dofs=0, dense_max_dofs=0, pcg_threads=layout, max_iterations=5)  # fmt: skip
    run.solver._sap.cg_max_iterations = 1
    run.step(0.01)
    assert run.iterations[-1][0] == 5 and run.cg_iterations[-1][0] > 0
    assert run.solver._sap.world_forcing.numpy()[0] > CG_LOOSEST_TOLERANCE


@pytest.mark.parametrize("pcg_threads", ["world", "dof"])
def test_a_tree_block_broken_in_float32_preconditions_by_its_diagonal(pcg_threads):
    """Two random trees (a 19-dof FREE-rooted one and a 2-dof one) with a sphere on every body, some overlapping
    (stiff self-contacts; cond(A) 1.3e5): at the second Newton iteration the big tree's block of the preconditioner
    is not positive definite in float32, its tile Cholesky gives NaN, and PCG turned the world NaN, flagged failed,
    where the dense solve converges (helper review, session 28). The block then preconditions by A's diagonal:
    the world converges, as near the float64 SAP solve as float32 gets here."""
    rng = np.random.default_rng(2)
    scene = newton.ModelBuilder()
    for _ in range(2):
        world = newton.ModelBuilder()
        add_random_tree(world, rng, 5, root_type="free")
        add_random_tree(world, rng, 3, root_type=str(rng.choice(["revolute", "ball", "d6", "prismatic"])))
        for body in range(world.body_count):
            world.add_shape_sphere(body, radius=0.1, cfg=newton.ModelBuilder.ShapeConfig(density=0.0, mu=0.7))
        scene.add_world(world)
    scene.add_ground_plane()
    model = scene.finalize()
    solver = newton_sap.SolverSAP(model, dense_world_max_dofs=0, block_cholesky_max_dofs=0, pcg_threads=pcg_threads)
    q, qd = random_state(model, rng, speed=0.5)
    free_roots = (model.joint_type.numpy() == newton.JointType.FREE) & (model.joint_parent.numpy() < 0)
    q[model.joint_q_start.numpy()[np.nonzero(free_roots)[0]] + 2] = 0.6  # the FREE roots 0.6 m above the ground
    state = model.state()
    state.joint_q.assign(q)
    state.joint_qd.assign(qd)
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    pipeline.collide(state, contacts)
    snap = solver.snapshot(state, dt=0.01, contacts=contacts)
    assert not solver.stats.failed.any() and solver.stats.converged.all()
    reference = solve_sap_problem(snap, 1)
    assert np.abs(snap.velocity[1] - reference).max() < 1e-2 * np.abs(reference).max()
