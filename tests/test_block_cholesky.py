"""Worlds above the dense size: the tree-block sparse Cholesky (``block_cholesky.py``) gives the same
Newton directions as the dense Cholesky of H, hence the same steps and iteration counts."""

import newton
import numpy as np
import pytest
import warp as wp

from contact_scenes import Run, box_on_ground, copy_state, initial_qd, one_model, sphere_bin, worlds_of_different_kinds


def hinged_board_with_objects(worlds=2):
    """Per world: a floating board with a hinged flap (one 7-dof tree), two boxes resting on the board and a
    sphere on the flap (6-dof trees), on a ground plane; trees of different sizes coupled by contacts."""
    single = newton.ModelBuilder()
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.6)
    board = single.add_link(xform=wp.transform((0.0, 0.0, 0.05), wp.quat_identity()))
    single.add_shape_box(board, hx=0.3, hy=0.2, hz=0.05, cfg=cfg)
    flap = single.add_link(xform=wp.transform((0.5, 0.0, 0.05), wp.quat_identity()))
    single.add_shape_box(flap, hx=0.2, hy=0.2, hz=0.05, cfg=cfg)
    root = single.add_joint_free(board)
    hinge = single.add_joint_revolute(
        board, flap, parent_xform=wp.transform((0.3, 0.0, 0.0), wp.quat_identity()),
        child_xform=wp.transform((-0.2, 0.0, 0.0), wp.quat_identity()), axis=(0.0, 1.0, 0.0),
    )  # fmt: skip
    single.add_articulation([root, hinge])
    for x in (-0.15, 0.12):
        box = single.add_body(xform=wp.transform((x, 0.0, 0.15), wp.quat_identity()))
        single.add_shape_box(box, hx=0.05, hy=0.05, hz=0.05, cfg=cfg)
    ball = single.add_body(xform=wp.transform((0.5, 0.05, 0.16), wp.quat_identity()))
    single.add_shape_sphere(ball, radius=0.06, cfg=cfg)
    b = newton.ModelBuilder()
    b.replicate(single, worlds)
    b.add_ground_plane(cfg=cfg)
    return b.finalize()


def pinned_arms_on_ground():
    """A floating base on the ground with two hinged arms whose tips are pinned together by a ball joint
    outside the articulation: the loop rows run along two branches of one tree (both down to the base)."""
    b = newton.ModelBuilder()
    inertia = wp.mat33(1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3)
    base = b.add_link(xform=wp.transform((0.0, 0.0, 0.05), wp.quat_identity()))
    b.add_shape_box(base, hx=0.3, hy=0.1, hz=0.05, cfg=newton.ModelBuilder.ShapeConfig(mu=0.5))
    y, alpha = (0.0, 1.0, 0.0), np.pi / 4
    arm = 0.2 / np.sin(alpha)
    left = b.add_link(mass=0.5, com=wp.vec3(0.0, 0.0, arm / 2), inertia=inertia)
    right = b.add_link(mass=0.5, com=wp.vec3(0.0, 0.0, arm / 2), inertia=inertia)
    joints = [
        b.add_joint_free(base),
        b.add_joint_revolute(base, left, axis=y, parent_xform=wp.transform((-0.2, 0.0, 0.05), wp.quat_identity())),
        b.add_joint_revolute(base, right, axis=y, parent_xform=wp.transform((0.2, 0.0, 0.05), wp.quat_identity())),
    ]
    b.add_articulation(joints)
    tip = wp.transform((0.0, 0.0, arm), wp.quat_identity())
    b.add_joint_ball(left, right, parent_xform=tip, child_xform=tip, label="tips")
    b.add_ground_plane()
    model = b.finalize()
    q = model.joint_q.numpy()
    q[7:9] = [alpha, -alpha]
    model.joint_q.assign(q)
    return model


def folded_snake_with_balls(worlds=2, links=5):
    """Per world: a floating snake of ``links`` boxes on vertical hinges (``examples.scenes.snake_builder``: one tree of
    6 + 4 dofs by default, two chunks per row), folded so that its links touch, sliding and curling on the ground
    while two balls drop onto it: contacts within the snake's tree, between it and the balls, and stiction
    predictions on dofs past the first chunk."""
    from newton_sap.examples.scenes import snake_builder

    single = snake_builder(links, height=0.06)
    cfg = newton.ModelBuilder.ShapeConfig(mu=0.6)
    for x, y in ((0.0, 0.05), (0.08, 0.1)):
        ball = single.add_body(xform=wp.transform((x, y, 0.2), wp.quat_identity()))
        single.add_shape_sphere(ball, radius=0.04, cfg=cfg)
    b = newton.ModelBuilder()
    b.replicate(single, worlds)
    b.add_ground_plane(cfg=cfg)
    model = b.finalize()
    q = model.joint_q.numpy().reshape(worlds, -1)
    q[:, 7 : 7 + links - 1] = 1.25  # each hinge folded by 1.25 rad (not the builder's S): the snake curls onto itself
    model.joint_q.assign(q.ravel())
    return model


SNAKE_QD = [0.8, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, -3.0, 5.0, -2.0] + [0.0] * 12  # sliding and spinning, hinges whipping

SCENES = {
    "box stack": (lambda: box_on_ground(boxes=5, mu=0.5), [0.3, 0, 0, 0, 0, 0.5] * 5),
    "worlds of different kinds": (  # pools of different sizes, one after another in one pool on the CPU
        lambda: one_model(worlds_of_different_kinds())[0],
        initial_qd(worlds_of_different_kinds()),
    ),
    "sphere bin": (lambda: sphere_bin(10), None),
    "hinged board": (hinged_board_with_objects, None),
    "pinned arms": (pinned_arms_on_ground, [0.0, 0.5, 0.0, 0.2, 0.0, 0.0, 1.0, -1.0]),
    "folded snake": (folded_snake_with_balls, SNAKE_QD * 2),
}


@pytest.mark.parametrize("shared_pool", [True, False])
@pytest.mark.parametrize("scene", SCENES)
def test_block_cholesky_matches_dense_newton_systems(scene, shared_pool):
    """Each step from the same state with dense H solves and with the block Cholesky (no tree LDLᵀ, so every
    Newton system of the block worlds goes through it): the same velocities to float32 round-off and
    the same Newton iterations (both directions are exact). Both launches: the CPU's (one thread, every world
    in turn in one pool) and the GPUs' (a thread and a pool per world, at its offset), the pool filled with NaN
    first (a read of anything not written this solve, or of another world's, spoils the answer)."""
    from newton_sap.block_cholesky import vec8f

    build, qd0 = SCENES[scene]
    dense = Run(build(), qd0=qd0, dense_world_max_dofs=128)  # every world dense (the sphere bin of 72 dofs too)
    block = Run(build(), qd0=qd0, dense_world_max_dofs=0, block_cholesky_max_dofs=512)  # explicit: GPUs default to CG
    sap = block.solver._sap
    sap.world_tree_local_default.zero_()
    topo = block.solver.topology
    assert np.all(topo.world_block_offset >= 0) and not topo.world_uses_pcg.any()
    sap.block_shared_pool = shared_pool
    pool = topo.world_block_max if shared_pool else topo.world_block_size  # and as much for the kept H
    sap.block_pool = wp.array(np.full((2 * pool, 8), np.nan, np.float32), dtype=vec8f, device=sap.device)
    worst, same_iterations, iteration_gap = 0.0, 0, 0
    for _ in range(25):
        copy_state(dense.s0, block.s0)
        dense.step(0.01)
        block.step(0.01)
        worst = max(worst, np.abs(dense.qd - block.qd).max() / max(np.abs(dense.qd).max(), 1e-3))
        same_iterations += int(np.array_equal(dense.iterations[-1], block.iterations[-1]))
        iteration_gap = max(iteration_gap, np.abs(dense.iterations[-1] - block.iterations[-1]).max())
    assert np.all(np.concatenate(block.converged))
    assert not np.concatenate(block.cg_iterations).any()
    assert worst < 1e-4  # relative to the largest joint velocity
    # round-off may move a step's stop by one iteration where it is decided at the float32 floor (a flat cost
    # and a residual no longer falling fast: line_search.COST_FLAT, sap.FLOOR_PROGRESS)
    assert iteration_gap <= 1 and same_iterations >= 20


def test_block_worlds_take_the_tree_ldlt_while_their_contacts_stay_on_single_trees(gpu_paths):
    """A model of block-Cholesky worlds only (10 spheres dropped into a bin, no dense world): on the CPU, in the
    steps where every contact in the Newton iterations touches one sphere (the others are parked), the world is
    solved by the tree LDLᵀ, whose Hessian rows are then assembled (``hessian_assembly``, launched only when some
    world takes it); once spheres touch, by the block Cholesky. On the GPUs' paths (no tree LDLᵀ) by the block
    Cholesky alone, without any assembly launch. Either way the steps are the dense solves' to round-off."""
    dense = Run(sphere_bin(10), dense_world_max_dofs=128)
    block = Run(sphere_bin(10), dense_world_max_dofs=0, block_cholesky_max_dofs=512)
    sap = block.solver._sap
    assert not sap.uses_dense_worlds and not sap.uses_pcg and sap.tree_ldlt == (not gpu_paths)
    worst, solved_by, other_iterations = 0.0, set(), 0
    for _ in range(12):
        copy_state(dense.s0, block.s0)
        dense.step(0.01)
        block.step(0.01)
        if block.iterations[-1][0] > 0:
            solved_by.add("tree LDLT" if sap.tree_ldlt and sap.any_tree_local.numpy()[0] else "block Cholesky")
        worst = max(worst, np.abs(dense.qd - block.qd).max() / max(np.abs(dense.qd).max(), 1e-3))
        other_iterations += int(not np.array_equal(dense.iterations[-1], block.iterations[-1]))
    assert solved_by == ({"block Cholesky"} if gpu_paths else {"tree LDLT", "block Cholesky"})
    assert worst < 1e-4  # relative to the largest joint velocity
    assert other_iterations <= 1  # exact directions both: round-off may move one step's convergence


def test_block_cholesky_size_limit_selects_pcg():
    """Worlds above ``block_cholesky_max_dofs`` use PCG; the option's bounds are checked."""
    run = Run(box_on_ground(boxes=2), dense_world_max_dofs=0, block_cholesky_max_dofs=6)
    assert run.solver.topology.world_uses_pcg.all() and np.all(run.solver.topology.world_block_offset < 0)
    run.step(0.01, steps=3)
    assert np.all(np.concatenate(run.converged))
    with pytest.raises(ValueError, match="block_cholesky_max_dofs"):
        Run(box_on_ground(), block_cholesky_max_dofs=-1)


def _random_tree_world(rng, tree_count):
    """Chain sizes and coupled tree pairs of a synthetic world: ``tree_count`` 0 gives the fixed small world
    (10 trees, one bitset word per pattern row); otherwise random chains of 1 to 19 dofs and about 1.5 pairs per
    tree, each tree coupled to a random earlier one (a connected graph, so the elimination fills in)."""
    if tree_count == 0:
        sizes = [3, 1, 9, 2, 8, 5, 17, 6, 1, 2]
        pairs = [(0, 2), (2, 4), (4, 5), (1, 4), (3, 4), (5, 7), (6, 7), (8, 2), (9, 6), (2, 6), (4, 4), (7, 7)]
        return sizes, pairs
    sizes = [int(s) for s in rng.integers(1, 20, size=tree_count)]
    pairs = [(int(rng.integers(t)), t) for t in range(1, tree_count)]
    pairs += [tuple(int(x) for x in rng.choice(tree_count, 2, replace=False)) for _ in range(tree_count // 2)]
    return sizes, pairs + [(3, 3)]


def _check_block_cholesky(rng, tree_parents, row_dofs, curved=None, shared_pool=1):
    """``world_block_cholesky`` on one synthetic world against NumPy: trees given by their dofs' local parents
    (-1: root), A with random entries at ancestor pairs and a dominant diagonal (SPD, A's sparsity), a row per
    entry of ``row_dofs`` (one or two chain walks, world dof indices) with random J and SPD G;
    ``Δv = −H⁻¹ ∇ℓ`` with ``H = A + Σ Jᵀ G J``. ``curved``: one launch per mask (default: one, all rows), each
    with new random G on the masked rows and G = 0 on the others, on the same scratch (the order is kept where
    the tree graph is the last ordered one's). ``shared_pool``: the CPU's launch (1) or a thread per world (0)."""
    from newton_sap.block_cholesky import tree_blocks_in_chunks, vec8f, world_block_cholesky
    from newton_sap.topology import _block_pool_chunks

    sizes = [len(p) for p in tree_parents]
    T, n = len(sizes), sum(sizes)
    tree_start = np.cumsum([0, *sizes[:-1]])
    dof_tree = np.repeat(np.arange(T), sizes)
    local = zip(tree_parents, tree_start, strict=True)
    dof_parent = np.concatenate([[q + s0 if q >= 0 else -1 for q in p] for p, s0 in local])
    dof_depth = np.zeros(n, int)
    for i in range(n):  # parents come first
        dof_depth[i] = dof_depth[dof_parent[i]] + 1 if dof_parent[i] >= 0 else 0

    def ancestors(i):  # i and its ancestors, nearest first
        out = []
        while i >= 0:
            out.append(i)
            i = dof_parent[i]
        return out

    A = np.zeros((n, n))
    for i in range(n):
        for j in ancestors(i)[1:]:
            A[i, j] = A[j, i] = 0.5 * rng.standard_normal()
    A[np.diag_indices(n)] = 1.0 + np.abs(A).sum(axis=1) + rng.random(n)
    A_rows = np.concatenate([[A[i, j] for j in ancestors(i)] for i in range(n)])
    row_start = np.cumsum(np.concatenate([[0], dof_depth[:-1] + 1]))
    m = len(row_dofs)
    width = max(len(d) for d in row_dofs)
    c_dof, c_J, J_full = np.zeros((m, width), np.int32), np.zeros((m, width, 3)), []
    for c, dofs in enumerate(row_dofs):
        J = rng.standard_normal((3, len(dofs)))
        Jfull = np.zeros((3, n))
        np.add.at(Jfull.T, dofs, J.T)
        c_dof[c, : len(dofs)], c_J[c, : len(dofs)] = dofs, J.T
        J_full.append(Jfull)

    i32 = lambda x: wp.array(np.asarray(x, np.int32), dtype=wp.int32)  # noqa: E731
    f32 = lambda x: wp.array(np.asarray(x, np.float32), dtype=float)  # noqa: E731
    scratch = lambda size, dtype=wp.int32: wp.zeros(size, dtype=dtype)  # noqa: E731
    pool, chunk_start = _block_pool_chunks(np.asarray(sizes))
    used = scratch(1)
    A_size = [s * ((s + 7) // 8) for s in sizes]  # A's tree blocks in chunks (topology.tree_A_offset)
    A_offset = np.cumsum([0, *A_size[:-1]])
    A_chunks = wp.zeros(max(sum(A_size), 1), dtype=vec8f)
    wp.launch(tree_blocks_in_chunks, dim=T,
              inputs=[i32(tree_start), i32(sizes), i32(A_offset), i32(dof_parent), i32(dof_depth), i32(row_start),
                      f32(A_rows)],
              outputs=[A_chunks])  # fmt: skip
    outputs = [scratch(T * T, wp.uint32), scratch(T * T), scratch(T * T), scratch(T), scratch(T), scratch(T),
               scratch(T), used, scratch(T * T, wp.uint32), scratch(pool, vec8f), scratch(n, float)]  # fmt: skip
    for mask in curved if curved is not None else [np.ones(m, bool)]:
        H, c_G = A.copy(), np.zeros((m, 3, 3))
        for c in np.nonzero(mask)[0]:
            X = rng.standard_normal((3, 3))
            c_G[c] = X @ X.T + 0.1 * np.eye(3)
            H += J_full[c].T @ c_G[c] @ J_full[c]
        grad = rng.standard_normal(n)
        dv = wp.zeros(n, dtype=float)
        rows3 = lambda dtype: wp.zeros(m, dtype=dtype)  # noqa: E731 (read by the stiction prediction only: off)
        wp.launch(
            world_block_cholesky,
            dim=1,
            inputs=[i32([0, n]), i32([0, T]), i32([0]), i32([0]), i32(tree_start), i32(sizes), i32(chunk_start),
                    i32(dof_tree), i32(dof_parent), i32(A_offset), shared_pool, pool, 0, i32([1]), i32([0]), i32([0]),
                    i32([0]), i32([m]), i32(np.arange(m)), rows3(wp.int32), rows3(wp.vec3), rows3(wp.vec3),
                    wp.array(c_G.astype(np.float32), dtype=wp.mat33), rows3(wp.vec3), rows3(wp.vec3), rows3(float),
                    i32([len(d) for d in row_dofs]), wp.array(c_dof, dtype=wp.int32),
                    wp.array(c_J.astype(np.float32), dtype=wp.vec3), A_chunks, f32(grad)],
            outputs=[*outputs, dv, rows3(wp.mat33), scratch(1), scratch(1, float)],
        )  # fmt: skip
        chunks = (np.asarray(sizes) + 7) // 8
        assert chunks.sum() + used.numpy()[0] <= pool  # the right-hand side and U's blocks
        expected = -np.linalg.solve(H, grad)
        np.testing.assert_allclose(dv.numpy(), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_block_cholesky_keeps_the_order_only_for_the_same_graph():
    """Three launches on the same scratch (:func:`_check_block_cholesky`): trees 0–1 coupled and 2 alone (the
    2–1 row without curvature); new G on the same rows (same graph: the kept order); then the 2–1 row curved,
    a pair in no block of the kept pattern, which a kept order would drop."""
    parents = [[-1, 0, 1, 2, 3, 4], [-1, 0, 1, 2, 3, 4], [-1, 0, 1]]
    rows = [[5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6], [14, 13, 12, 11, 10, 9, 8, 7, 6], [3, 2, 1, 0]]
    first = np.array([True, False, True])
    _check_block_cholesky(np.random.default_rng(5), parents, rows, curved=[first, first, np.ones(3, bool)])


@pytest.mark.parametrize("shared_pool", [1, 0])
@pytest.mark.parametrize("tree_count", [0, 70])
def test_block_cholesky_solves_random_tree_systems(tree_count, shared_pool):
    """Chains of 1 to 19 dofs (one to three 8-float chunks, every remainder) and constraint rows coupling two trees
    (each walk from the chain's last or a random dof to its root) or within one tree (:func:`_check_block_cholesky`).
    70 trees: pattern rows of three bitset words."""
    rng = np.random.default_rng(7)
    sizes, pairs = _random_tree_world(rng, tree_count)
    tree_start = np.cumsum([0, *sizes[:-1]])

    def walk(t, full):
        """Dofs from the chain's last (``full``) or a random dof down to its root."""
        d = tree_start[t] + (sizes[t] - 1 if full else rng.integers(sizes[t]))
        return list(range(d, tree_start[t] - 1, -1))

    rows = [walk(a, c % 2 == 0) + (walk(b, c % 3 != 2) if a != b else []) for c, (a, b) in enumerate(pairs)]
    _check_block_cholesky(rng, [[k - 1 for k in range(s)] for s in sizes], rows, shared_pool=shared_pool)


def test_block_cholesky_solves_branched_tree_systems():
    """Branched trees (:func:`_check_block_cholesky`): rows of two branches of one tree (each order; with and
    without the root; walks of 1 to 5 dofs, so a 3-entry tile spans the branches' seam), rows between two
    trees from branch dofs, and single walks."""
    parents = [[-1, 0, 1, 1, 3, 2, 5, 0, 7], [-1, 0, 0, 2, 2], [-1], [-1, 0, 1, 2, 3, 4, 5, 6]]
    start = np.cumsum([0, *[len(p) for p in parents[:-1]]])

    def walk(t, d, stop=-1):
        """World dofs from tree t's local dof d up to (not including) the local dof ``stop`` (-1: to the root)."""
        out = []
        while d != stop:
            out.append(int(start[t] + d))
            d = parents[t][d]
        return out

    rows = [
        walk(0, 6) + walk(0, 4, 1),  # 6 5 2 1 0 | 4 3: branches meeting at 1
        walk(0, 4, 1) + walk(0, 6),  # the same, the other order
        walk(0, 8, 0) + walk(0, 6),  # 8 7 | 6 5 2 1 0
        walk(1, 4, 0) + walk(1, 3, 0),  # two leaves below the root, the root not in the row
        walk(1, 3) + walk(1, 1, 0),
        walk(0, 6) + walk(3, 7),  # two trees
        walk(2, 0) + walk(0, 8),
        walk(3, 3) + walk(0, 3, 1),
        walk(3, 7),
        walk(0, 4),
    ]
    _check_block_cholesky(np.random.default_rng(3), parents, rows)
