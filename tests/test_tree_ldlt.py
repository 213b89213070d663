"""The tree LDLᵀ path of the CPU (``factorization.TREE_LDLT_ON_CPU``): free motion of every tree, and the
Newton directions of worlds whose constraints each act along one chain, solved by the no-fill
factorization of ``H = A + Jᵀ G J`` in A's sparse layout. Both give the dense tile Cholesky's answers, and
worlds with constraints between trees keep the dense path."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap import factorization
from newton_sap.examples import scenes

from random_trees import add_random_tree


def solver(model, monkeypatch, tree_ldlt: bool):
    monkeypatch.setattr(factorization, "TREE_LDLT_ON_CPU", tree_ldlt)
    return newton_sap.SolverSAP(model)


def box_worlds() -> newton.Model:
    """World 0: one free box on the ground (its contacts act along one chain). World 1: two stacked boxes
    (their contacts couple two trees)."""
    scene = newton.ModelBuilder()
    for boxes in (1, 2):
        b = newton.ModelBuilder()
        for k in range(boxes):
            body = b.add_body(xform=wp.transform((0.0, 0.0, 0.1 + 0.2 * k), wp.quat_identity()))
            b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
        scene.add_world(b)
    scene.add_ground_plane()
    return scene.finalize()


def test_worlds_with_constraints_between_trees_keep_the_dense_path(monkeypatch):
    model = box_worlds()
    sap = solver(model, monkeypatch, True)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    pipeline.collide(s0, contacts)
    sap.step(s0, s1, None, contacts, 0.01)
    assert (sap.stats.num_contacts > 0).all()
    assert sap._sap.world_tree_local.numpy().tolist() == [1, 0]
    dense = solver(model, monkeypatch, False)
    dense.step(s0, s1, None, contacts, 0.01)
    assert dense._sap.world_tree_local.numpy().tolist() == [0, 0]


@pytest.mark.parametrize("name", ["humanoid", "quadruped"])
def test_tree_ldlt_steps_match_the_dense_cholesky(monkeypatch, name):
    """Along one trajectory (falling, landing, standing), each step taken by both paths from the same state
    agrees to float32 round-off of the direction, with the same Newton iterations (up to the stopping
    test's round-off)."""
    scene = scenes.SCENES[name]
    model = scene.build(2)
    tree, dense = solver(model, monkeypatch, True), solver(model, monkeypatch, False)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    control = model.control()
    if scene.targets is not None:
        control.joint_target_q.assign(scene.targets(model, 0.0))  # PD drives (the quadruped's stance)
    state, out_tree, out_dense = model.state(), model.state(), model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    tree_local_steps = 0
    iterations = np.zeros(2)
    for _ in range(60):
        pipeline.collide(state, contacts)
        tree.step(state, out_tree, control, contacts, scene.dt)
        dense.step(state, out_dense, control, contacts, scene.dt)
        qd_tree, qd_dense = out_tree.joint_qd.numpy(), out_dense.joint_qd.numpy()
        scale = 1.0 + np.abs(qd_dense).max()
        assert np.abs(qd_tree - qd_dense).max() < 2e-4 * scale
        assert np.abs(out_tree.joint_q.numpy() - out_dense.joint_q.numpy()).max() < 2e-6 * scale
        # the stopping test (and the float32-floor stop, which waits for the residual to stop falling fourfold) may
        # fall on either side of its tolerance by round-off: at most two iterations apart (one until session 33's
        # midpoint velocities moved this trajectory onto a step where they differ by two), 5 % over the trajectory
        assert np.abs(tree.stats.iterations - dense.stats.iterations).max() <= 2
        iterations += np.array([tree.stats.iterations.sum(), dense.stats.iterations.sum()])
        assert tree.stats.converged.all()
        if (tree.stats.num_contacts > 0).any() and (tree.stats.iterations > 0).any():
            assert tree._sap.world_tree_local.numpy().all() and not dense._sap.world_tree_local.numpy().any()
            tree_local_steps += 1
        state, out_tree = out_tree, state
    assert tree_local_steps > 10  # the robots touched the ground and Newton iterated on the tree path
    assert abs(iterations[0] - iterations[1]) <= 0.05 * iterations[1]


def test_level_by_level_solve_matches_one_thread_per_tree(monkeypatch):
    """The GPUs' form of the tree LDLᵀ (level by level, ``factorization.TREE_THREADS_ON_CPU = False``) takes
    the steps of the CPU's one thread per tree, to round-off (siblings update their ancestors in another
    order)."""
    scene = scenes.SCENES["humanoid"]
    model = scene.build(2)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    threads, levels = solver(model, monkeypatch, True), solver(model, monkeypatch, True)  # the form: per call
    state, out_threads, out_levels = model.state(), model.state(), model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    landed = 0
    for _ in range(60):
        pipeline.collide(state, contacts)
        monkeypatch.setattr(factorization, "TREE_THREADS_ON_CPU", True)
        threads.step(state, out_threads, None, contacts, scene.dt)
        monkeypatch.setattr(factorization, "TREE_THREADS_ON_CPU", False)
        levels.step(state, out_levels, None, contacts, scene.dt)
        qd_threads, qd_levels = out_threads.joint_qd.numpy(), out_levels.joint_qd.numpy()
        assert np.abs(qd_threads - qd_levels).max() < 2e-4 * (1.0 + np.abs(qd_levels).max())
        landed += int((threads.stats.iterations > 0).any() and threads._sap.world_tree_local.numpy().all())
        state, out_threads = out_threads, state
    assert landed > 10


@pytest.mark.parametrize("one_thread_per_tree", [True, False])
def test_a_reused_factor_solves_as_a_fresh_one(monkeypatch, one_thread_per_tree):
    """``solve_tree_systems(..., factored=True)`` reduces a new right-hand side with the factors an earlier call
    left (the midpoint Coriolis prediction's, reused by v*'s solve): the same bits as factoring again, in both forms
    of the tree LDLᵀ; without those factors it gives something else."""
    monkeypatch.setattr(factorization, "TREE_THREADS_ON_CPU", one_thread_per_tree)
    model = scenes.SCENES["humanoid"].build(2)
    sap = solver(model, monkeypatch, True)
    state = model.state()
    newton.eval_fk(model, state.joint_q, state.joint_qd, state)
    sap.step(state, model.state(), None, None, 0.01)  # A's rows at the state
    T, n = sap._topo, sap.topology.dof_count
    rng = np.random.default_rng(5)
    rhs_first, rhs = (wp.array(rng.normal(size=n).astype(np.float32)) for _ in range(2))

    def solve(rhs, factor, factored):
        out = wp.zeros(n, dtype=float)
        factorization.solve_tree_systems(
            T.tree_ids, T.dof_levels, T, sap._all_worlds, sap._all_worlds, sap._rows, rhs, 0.5, sap._v0, factor,
            wp.zeros(n, dtype=float), wp.zeros(n, dtype=float), out, "cpu", factored,
        )  # fmt: skip
        return out.numpy()

    factor = wp.zeros_like(sap._rows)
    solve(rhs_first, factor, factored=False)
    fresh = solve(rhs, wp.zeros_like(sap._rows), factored=False)
    assert np.array_equal(solve(rhs, factor, factored=True), fresh)
    assert not np.array_equal(solve(rhs, wp.clone(sap._rows), factored=True), fresh)


@wp.kernel
def _solve_factored_trees(
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    factor: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
):
    t = wp.tid()
    factorization.solve_factored_tree(
        tree_dof_start[t], tree_dof_count[t], dof_parent, dof_depth, dof_row_start, factor, r, z
    )


def two_random_trees(rng):
    """Two random branching trees of 6 bodies (FREE roots) in one model, its topology and device tables, and a random
    unit lower-triangular L nonzero only on chains (A's sparsity: ``L[k, i]`` for i an ancestor of k)."""
    builder = newton.ModelBuilder()
    for _ in range(2):
        add_random_tree(builder, rng, 6, chain=False, root_type="free")
    model = builder.finalize()
    solver = newton_sap.SolverSAP(model)
    topology = solver.topology
    L = np.eye(topology.dof_count)
    for k in range(topology.dof_count):
        i = topology.dof_parent[k]
        while i >= 0:
            L[k, i] = rng.uniform(-0.5, 0.5)
            i = topology.dof_parent[i]
    return model, topology, solver._sap.T, L


def tree_rows(topology, M):
    """The on-chain entries of the dense symmetric M in A's sparse rows (row k: k's diagonal, then its ancestors')."""
    rows = np.zeros(topology.sparse_nnz)
    for k in range(topology.dof_count):
        i = k
        while i >= 0:
            rows[topology.dof_row_start[k] + topology.dof_depth[k] - topology.dof_depth[i]] = M[k, i]
            i = topology.dof_parent[i]
    return rows


@pytest.mark.parametrize("case", ["definite", "dropped couplings", "round-off"])
def test_factored_trees_solve_their_rows_or_the_shifted_rows_where_those_are_indefinite(case):
    """``factor_trees`` and ``solve_factored_tree`` (PCG's preconditioner of trees above ``dense_max_dofs``) on two
    random branching trees, M = Lᵀ D L with L nonzero only on chains (A's sparsity). A positive definite M is solved as
    it is, its diagonal shift ignored. An indefinite M is factored again as ``(1 + δ) M_ii + shift_i`` on the diagonal,
    δ = 1e-5, 1e-3, ... until positive definite: with one D of each tree at −0.3 (couplings dropped from M, moved to
    the shift) the shift makes it definite; with M's smallest eigenvalue at −1e-4 and no shift (float32 round-off in
    M's sums) δ does."""
    rng = np.random.default_rng(3)
    model, topology, T, L = two_random_trees(rng)
    n, row_start = topology.dof_count, topology.dof_row_start
    D = rng.uniform(0.5, 2.0, n)
    if case == "dropped couplings":
        D[[3, n - 2]] = -0.3  # one in each tree
    M = L.T @ np.diag(D) @ L
    if case == "round-off":
        M -= (np.linalg.eigvalsh(M).min() + 1e-4) * np.eye(n)  # smallest eigenvalue −1e-4, diagonal still positive
    shift = np.full(n, 1.0 - np.linalg.eigvalsh(M).min() if case != "round-off" else 0.0)
    rows = tree_rows(topology, M)
    ones = wp.ones(model.world_count, dtype=wp.int32)
    factor = wp.zeros(topology.sparse_nnz, dtype=float)
    wp.launch(
        factorization.factor_trees, dim=topology.tree_count,
        inputs=[wp.array(np.arange(topology.tree_count), dtype=wp.int32), T.tree_dof_start, T.tree_dof_count,
                T.tree_world, T.dof_parent, T.dof_depth, T.dof_row_start, ones, ones,
                wp.array(rows, dtype=float), wp.array(shift, dtype=float)],
        outputs=[factor, wp.zeros(n, dtype=float)],
    )  # fmt: skip
    r = rng.normal(size=n)
    z = wp.zeros(n, dtype=float)
    wp.launch(
        _solve_factored_trees, dim=topology.tree_count,
        inputs=[T.tree_dof_start, T.tree_dof_count, T.dof_parent, T.dof_depth, T.dof_row_start, factor,
                wp.array(r, dtype=float), z],
    )  # fmt: skip
    if case == "definite":
        solved = M
    else:
        delta = next(
            d for d in (1e-5, 1e-3, 1e-1, 10.0) if np.linalg.eigvalsh(M + np.diag(d * np.diag(M) + shift)).min() > 0
        )
        solved = M + np.diag(delta * np.diag(M) + shift)
    expected = np.linalg.solve(solved, r)
    assert np.all(factor.numpy()[row_start] > 0.0)  # D of the factor that was kept
    assert np.abs(z.numpy() - expected).max() < 1e-3 * np.abs(expected).max()


@pytest.mark.parametrize("case", ["round-off", "beyond the retries"])
def test_broken_tree_factors_are_refactored_or_fall_back_to_the_diagonal(case):
    """``resolve_broken_trees`` (the CPU tree-local solve's repair) on two random branching trees whose last factor
    has a pivot that is not positive: M with its smallest eigenvalue at −1e-4 (float32 round-off in H's sums) is solved
    as ``(1 + δ) M_ii`` on the diagonal, the first δ of 1e-5, 1e-3, ... that makes it definite; a coupling of 1e3
    between two dofs whose diagonals are about 1, which no δ up to 10 repairs, leaves that tree with M's diagonal
    (Jacobi), as the dense path does: ``out = base + scale · rhs / diag(M)``."""
    rng = np.random.default_rng(5)
    model, topology, T, L = two_random_trees(rng)
    n, row_start, parent = topology.dof_count, topology.dof_row_start, topology.dof_parent
    M = L.T @ np.diag(rng.uniform(0.5, 2.0, n)) @ L
    if case == "round-off":
        M -= (np.linalg.eigvalsh(M).min() + 1e-4) * np.eye(n)
    else:
        k = n - 1  # a leaf of the second tree and its parent
        M[k, parent[k]] = M[parent[k], k] = 1e3
    rows = tree_rows(topology, M)
    factor = np.ones(topology.sparse_nnz)
    factor[row_start[:n]] = -1.0  # the last factorization's pivots: broken in every tree
    rhs, base, scale = rng.normal(size=n), rng.normal(size=n), 0.5
    out = wp.zeros(n, dtype=float)
    ones = wp.ones(model.world_count, dtype=wp.int32)
    wp.launch(
        factorization.resolve_broken_trees, dim=topology.tree_count,
        inputs=[wp.array(np.arange(topology.tree_count), dtype=wp.int32), T.tree_dof_start, T.tree_dof_count,
                T.tree_world, T.dof_parent, T.dof_depth, T.dof_row_start, ones, ones, wp.array(rows, dtype=float),
                wp.array(rhs, dtype=float), scale, wp.array(base, dtype=float), wp.zeros(n, dtype=float)],
        outputs=[wp.array(factor, dtype=float), wp.zeros(n, dtype=float), wp.zeros(n, dtype=float), out],
    )  # fmt: skip
    expected = np.empty(n)
    for s, m in zip(topology.tree_dof_start, topology.tree_dof_count, strict=True):
        block = M[s : s + m, s : s + m]
        for delta in (1e-5, 1e-3, 1e-1, 10.0):
            shifted = block + delta * np.diag(np.diag(block))
            if np.linalg.eigvalsh(shifted).min() > 0.0:
                expected[s : s + m] = np.linalg.solve(shifted, rhs[s : s + m])
                break
        else:
            assert case == "beyond the retries" and s > 0  # only the tree holding the coupling
            expected[s : s + m] = rhs[s : s + m] / np.diag(block)
    expected = base + scale * expected
    assert np.abs(out.numpy() - expected).max() < 1e-3 * np.abs(expected).max()


def test_a_tree_local_hessian_indefinite_in_float32_is_refactored_with_a_scaled_diagonal(gpu_paths):
    """The benchmark's snake (``examples.scenes.snake_builder``: one 71-dof tree, 8.6 m) resting on the ground, whose
    contacts each act along one chain: the CPU solves its Newton systems by the tree LDLᵀ of H's rows. At rest
    ``A + Jᵀ G J`` summed in float32 is indefinite (cond(H) ≈ 4e11), and the LDLᵀ of those rows had negative pivots:
    steps stopped 2e-3 m/s off the float64 solve of their own problems (velocities of about 2.5e-3 m/s), steps 17, 22
    and 23 not converged. Refactored with a scaled diagonal (``factor_trees``), every step converges and resting steps
    come within 2e-5 m/s of the float64 solve."""
    if gpu_paths:
        pytest.skip("the CPU's tree LDLᵀ of H (factorization.TREE_LDLT_ON_CPU)")
    from sap_reference import solve_sap_problem

    from newton_sap.examples.scenes import snake_builder

    from contact_scenes import Run

    builder = newton.ModelBuilder()
    builder.add_builder(snake_builder())
    builder.add_ground_plane()
    run = Run(builder.finalize())
    run.step(0.01, steps=22)
    assert np.all(run.converged)
    for _ in range(2):
        run.pipeline.collide(run.s0, run.contacts)
        snap = run.solver.snapshot(run.s0, dt=0.01, contacts=run.contacts)
        assert run.solver._sap.world_tree_local.numpy().all() and run.solver.stats.converged.all()
        reference = solve_sap_problem(snap, 0, max_iterations=300)
        assert np.abs(snap.velocity[0] - reference).max() < 2e-5
        run.step(0.01)


@pytest.mark.parametrize("indefinite", [False, True], ids=["spd", "indefinite"])
def test_the_dense_free_motion_is_the_cholesky_solve_or_nan_where_it_breaks_down(indefinite):
    """The tile kernel of the dense free motion (trees up to ``dense_max_dofs`` on GPUs) on one 3-dof tree: ``v* = v0
    + Δt A⁻¹ τ`` for an SPD A; for an A whose float32 Cholesky breaks down, NaN, which fails the world (on CUDA a
    failed factorization need not leave NaN behind: the kernel checks the pivots; the CPU's scalar Cholesky gave NaN
    already)."""
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    if indefinite:
        A[2, 2] = -1.0
    tau, v0, dt = np.array([1.0, -2.0, 0.5]), np.array([0.1, 0.2, -0.3]), 0.01
    v_star = wp.zeros(3, dtype=float)
    wp.launch_tiled(
        factorization.dense_free_motion_kernel(3),
        dim=1,
        inputs=[wp.array([0], dtype=wp.int32), wp.array([0, 0, 0], dtype=wp.int32), dt, wp.array([1], dtype=wp.int32),
                wp.array(A[None].astype(np.float32)), wp.array(tau.astype(np.float32)),
                wp.array(v0.astype(np.float32))],
        outputs=[v_star],
        block_dim=64,
    )  # fmt: skip
    if indefinite:
        assert np.isnan(v_star.numpy()).all()
    else:
        np.testing.assert_allclose(v_star.numpy(), v0 + dt * np.linalg.solve(A, tau), rtol=1e-5)
