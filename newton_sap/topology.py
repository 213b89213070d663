"""Host-side topology tables, built once per model with NumPy (kernels never discover topology).

Vocabulary:

* A *tree* is a connected set of moving bodies whose root's parent is the world or a static body
  (a body welded to the world through FIXED joints only). Static bodies belong to no tree.
  Bodies attached to a tree through FIXED joints belong to that tree (they carry mass, no dofs).
* *Internal dof order* groups dofs by world, then by tree, then topologically (parents first), so
  that every world and every tree owns one contiguous range. Inside a FREE/DISTANCE joint the
  internal order is ``[ω (3), v_M (3)]`` (seed §3); everything else keeps Newton's order.
* *Dof chain*: the parent of a dof is the previous dof of its joint, or the last dof of the nearest
  ancestor joint that has dofs. The mass matrix of a tree is nonzero only between a dof and its
  chain ancestors, so row ``i`` of its lower triangle is stored as the ``depth(i) + 1`` entries
  ``M[i, i], M[i, parent(i)], ...`` (``dof_row_start``).
* *Branches*: root-to-leaf joint paths (from a joint attached to the world), one FK thread each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import newton
import numpy as np
import warp as wp

JOINT_PRISMATIC = int(newton.JointType.PRISMATIC)
JOINT_REVOLUTE = int(newton.JointType.REVOLUTE)
JOINT_BALL = int(newton.JointType.BALL)
JOINT_FIXED = int(newton.JointType.FIXED)
JOINT_FREE = int(newton.JointType.FREE)
JOINT_DISTANCE = int(newton.JointType.DISTANCE)
JOINT_D6 = int(newton.JointType.D6)

SUPPORTED_JOINT_TYPES = {
    JOINT_PRISMATIC: "PRISMATIC",
    JOINT_REVOLUTE: "REVOLUTE",
    JOINT_BALL: "BALL",
    JOINT_FIXED: "FIXED",
    JOINT_FREE: "FREE",
    JOINT_DISTANCE: "DISTANCE",
    JOINT_D6: "D6",
}


LOOP_JOINT_TYPES = {JOINT_BALL: 0, JOINT_REVOLUTE: 1, JOINT_FIXED: 2}
"""Loop-closing joint types and the constraint they become: point (3 rows), point + two angular rows
(hinge), point + three angular rows (weld)."""


class ModelError(ValueError):
    """A model that newton-sap cannot simulate; the message names the offending entity."""


class WorldLabels(list):
    """The labels of a model's bodies, joints or shapes, with ``worlds`` (each one's world) in a model of several
    worlds, where ``ModelBuilder.replicate`` repeats every label: :func:`entity_label` names the world too."""

    def __init__(self, labels, worlds=None):
        super().__init__(labels)
        self.worlds = worlds


def model_labels(model, kind: str) -> WorldLabels:
    """:class:`WorldLabels` of the model's ``kind`` entities (``"body"``, ``"joint"`` or ``"shape"``)."""
    worlds = getattr(model, f"{kind}_world", None) if model.world_count > 1 else None
    return WorldLabels(getattr(model, f"{kind}_label"), worlds.numpy() if worlds is not None else None)


def entity_label(labels: list[str], index: int, kind: str) -> str:
    """``kind index ('label')`` for messages naming a body, joint or shape (``kind_index`` where unlabeled), and
    ``kind index ('label', world w)`` for :class:`WorldLabels` of several worlds."""
    name = labels[index] if index < len(labels) and labels[index] else f"{kind}_{index}"
    worlds = getattr(labels, "worlds", None)
    if worlds is not None and index < len(worlds):
        return f"{kind} {index} ('{name}', world {int(worlds[index])})"
    return f"{kind} {index} ('{name}')"


def name_list(names: list[str], count: int) -> str:
    """The first five of ``names``, the names of ``count`` entities, joined for a message, and how many more."""
    return ", ".join(names[:5]) + (f" and {count - 5} more" if count > 5 else "")


def entity_list(labels: list[str], indices, kind: str) -> str:
    """:func:`name_list` of the entities ``indices`` as :func:`entity_label` names them."""
    return name_list([entity_label(labels, int(i), kind) for i in indices[:5]], len(indices))


@dataclass
class Topology:
    """All index tables of one model; NumPy on the host, mirrored to the device by :meth:`to_device`.

    Counts: ``body_count``, ``joint_count``, ``dof_count`` (all worlds), ``tree_count``,
    ``world_count``. Arrays are int32 unless noted.
    """

    body_count: int
    joint_count: int
    dof_count: int
    world_count: int
    # bodies
    body_joint: np.ndarray  # [body] joint whose child the body is, -1 if none
    body_parent: np.ndarray  # [body] parent body, -1 for the world
    body_tree: np.ndarray  # [body] tree index, -1 for static bodies
    body_depth: np.ndarray  # [body] depth inside its tree (root = 0), -1 for static
    body_world: np.ndarray  # [body] world index (0 for global entities in one-world models)
    body_weld_start: np.ndarray  # [body + 1] offsets into body_welded
    body_welded: np.ndarray  # per body on a FREE, DISTANCE or BALL joint: the bodies FIXED to it (through FIXED
    # joints only), which turn with it as one rigid body (the gyroscopic torque the step integrates)
    # joints
    joint_dof_internal_start: np.ndarray  # [joint] first internal dof of the joint
    joint_in_tree: np.ndarray  # [joint] 1 for tree joints, 0 for loop-closing joints
    loop_joints: np.ndarray  # loop-closing joints (constraints, not tree edges)
    # internal dofs (index = internal dof id)
    dof_public: np.ndarray  # [dof] Newton dof index (position in joint_qd / joint_f)
    dof_joint: np.ndarray  # [dof] joint
    dof_body: np.ndarray  # [dof] child body of the dof's joint
    dof_parent: np.ndarray  # [dof] chain parent (internal id), -1 at a tree root
    dof_depth: np.ndarray  # [dof] chain depth (root dof = 0)
    dof_tree: np.ndarray  # [dof] tree
    dof_row_start: np.ndarray  # [dof] offset of row i in the sparse lower-triangle storage
    dof_dense_offset: np.ndarray  # [dof] offset of the tree's dense block (-1: sparse tree)
    dof_local: np.ndarray  # [dof] index inside the tree
    dof_coord: np.ndarray  # [dof] its coordinate in joint_q for scalar-coordinate joints, -1 for BALL/FREE
    dof_ball_quat: np.ndarray  # [dof] a BALL tree joint's quaternion start in joint_q (x, y, z, w), -1 otherwise
    dof_ball_axis: np.ndarray  # [dof] a BALL tree joint dof's axis of F (0, 1, 2), -1 otherwise
    sparse_nnz: int
    # trees
    tree_dof_start: np.ndarray  # [tree] first internal dof
    tree_dof_count: np.ndarray  # [tree]
    tree_world: np.ndarray  # [tree]
    tree_body_start: np.ndarray  # [tree + 1] offsets into tree_bodies
    tree_bodies: np.ndarray  # bodies of each tree, parents first
    tree_is_dense: np.ndarray  # [tree] bool: dense Cholesky (True) or sparse LDLᵀ
    # worlds
    world_dof_start: np.ndarray  # [world + 1] internal dof range of each world
    dof_world: np.ndarray  # [dof] world of the dof
    body_last_dof: np.ndarray  # [body] last internal dof on the path root..body, -1 if none (static)
    max_chain: int  # longest dof chain (max depth + 1): bounds one body's Jacobian entries
    # FK branches
    branch_start: np.ndarray  # [branch + 1] offsets into branch_joints
    branch_joints: np.ndarray  # joints of each branch, root first
    # composite-inertia levels (leaves -> root): bodies whose parent is in the same tree
    body_levels: list[np.ndarray] = field(default_factory=list)  # level d: tree bodies at depth d >= 1
    # dense path: trees grouped by size
    dense_buckets: dict[int, np.ndarray] = field(default_factory=dict)  # size n -> tree ids
    dense_bucket_offset: dict[int, int] = field(default_factory=dict)  # size n -> offset in dense storage
    dense_size: int = 0
    # sparse path: dofs of sparse trees grouped by chain depth, and all dofs so grouped (GPUs); the sparse
    # trees, and all trees (the CPU's one-thread-per-tree form)
    sparse_dof_levels: list[np.ndarray] = field(default_factory=list)
    dof_levels: list[np.ndarray] = field(default_factory=list)
    sparse_trees: np.ndarray | None = None
    tree_ids: np.ndarray | None = None
    # SAP: dense per-world matrices grouped by world size
    world_buckets: dict[int, np.ndarray] = field(default_factory=dict)  # size n -> world ids
    world_bucket_offset: dict[int, int] = field(default_factory=dict)  # size n -> offset in world storage
    world_dense_offset: np.ndarray | None = (
        None  # [world] offset of its n×n block, -1: no dofs, block-Cholesky or PCG world
    )
    world_dense_size: int = 0
    world_uses_pcg: np.ndarray | None = None  # [world] 1 where the SAP systems are solved by PCG
    # SAP: tree-block sparse Cholesky of the worlds between the dense and the PCG sizes
    world_tree_start: np.ndarray | None = None  # [world + 1] tree range of each world
    world_block_offset: np.ndarray | None = None  # [world] offset of its pool (8-float chunks), -1: other solve
    world_block_size: int = 0  # chunks of all pools (the solver adds as many for the kept Hessians)
    world_block_max: int = 0  # chunks of the largest pool
    tree_chunk_start: np.ndarray | None = None  # [tree] its first chunk in its world's chunked vectors
    tree_A_offset: np.ndarray | None = None  # [tree] its chunked block of A (block-Cholesky worlds; -1: other)
    tree_A_size: int = 0  # chunks of all those blocks
    world_pair_offset: np.ndarray | None = None  # [world] offset of its T×T tree-pair pattern (T trees)
    world_pair_size: int = 0

    @property
    def tree_count(self) -> int:
        """Number of kinematic trees (articulations and free bodies) over all worlds."""
        return len(self.tree_dof_start)


def scalar_tree_dofs(model, topo: Topology) -> np.ndarray:
    """Per Newton dof of ``model``, whether it is a scalar-coordinate dof of a tree joint (REVOLUTE, PRISMATIC, D6):
    those that drives, limits, joint friction, joint stiffness and MuJoCo's joint actuators act on."""
    scalar = np.zeros(model.joint_dof_count, bool)
    scalar[topo.dof_public[topo.dof_coord >= 0]] = True
    return scalar


def articulated_trees(topo: Topology) -> np.ndarray:
    """Per tree, whether it moves as more than one rigid body: not a lone body, nor a body on a FREE, DISTANCE or
    BALL joint with every other body of the tree FIXED to it (``body_welded``). The midpoint rule of the velocity
    products applies to these (``dynamics.velocity_product_changes``)."""
    roots = topo.tree_bodies[topo.tree_body_start[:-1]]
    welded = topo.body_weld_start[roots + 1] - topo.body_weld_start[roots]
    return welded != np.diff(topo.tree_body_start) - 1


def ball_tree_dofs(model, topo: Topology) -> np.ndarray:
    """Per Newton dof of ``model``, whether it is a dof of a BALL tree joint: drives, joint friction and joint stiffness
    act on those too (``joint_constraints``, ``dynamics.mass_matrix_rows``), limits do not."""
    ball = np.zeros(model.joint_dof_count, bool)
    ball[topo.dof_public[topo.dof_ball_quat >= 0]] = True
    return ball


def build_topology(
    model: newton.Model, dense_max_dofs: int = 64, dense_world_max_dofs: int = 64, block_cholesky_max_dofs: int = 512
) -> Topology:
    """Build every topology table of ``model`` and validate it.

    Args:
        model: A finalized Newton model (any number of worlds, also heterogeneous).
        dense_max_dofs: Trees with at most this many dofs use the dense Cholesky path, larger ones
            the level-parallel sparse LDLᵀ path.
        dense_world_max_dofs: Worlds with at most this many dofs solve the SAP Newton systems with a
            dense Cholesky, larger ones by the tree-block sparse Cholesky (``block_cholesky.py``) up to
            ``block_cholesky_max_dofs`` dofs, and with block-preconditioned conjugate gradients above.

    Raises:
        ModelError: unsupported joint type, a body that is the child of two articulation joints (an
            unmarked kinematic loop) or a joint cycle, a loop-closing joint (outside every articulation)
            whose type is not BALL, REVOLUTE or FIXED, a body without a joint, dofs that move no tree, a
            moving body outside any world of a multi-world model, or block-Cholesky storage beyond int32
            indexing. Masses, inertias, armature and body flags are values users change after the build:
            :func:`model_checks.check_inertial_properties` checks them.
    """
    nb = model.body_count
    nj = model.joint_count
    body_labels = model_labels(model, "body")
    joint_labels = model_labels(model, "joint")

    jtype = model.joint_type.numpy() if nj else np.zeros(0, np.int32)
    jparent = model.joint_parent.numpy() if nj else np.zeros(0, np.int32)
    jchild = model.joint_child.numpy() if nj else np.zeros(0, np.int32)
    jqd_start = model.joint_qd_start.numpy() if nj else np.zeros(1, np.int32)
    jdof_dim = model.joint_dof_dim.numpy() if nj else np.zeros((0, 2), np.int32)
    jarticulation = model.joint_articulation.numpy() if nj else np.zeros(0, np.int32)
    bworld_raw = model.body_world.numpy() if nb else np.zeros(0, np.int32)

    # --- joint types, the body -> joint map and loop-closing joints -----------------------------
    for j in range(nj):
        if int(jtype[j]) not in SUPPORTED_JOINT_TYPES:
            raise ModelError(
                f"{entity_label(joint_labels, j, 'joint')} has unsupported type {int(jtype[j])}; "
                f"supported: {', '.join(SUPPORTED_JOINT_TYPES.values())}"
            )
    body_joint = np.full(nb, -1, np.int32)
    loop_joints = []
    # articulation joints first: a joint outside every articulation whose child already has one
    # closes a loop (Newton's convention for loop closures)
    for j in sorted(range(nj), key=lambda j: (jarticulation[j] < 0, j)):
        c = int(jchild[j])
        if body_joint[c] >= 0:
            if jarticulation[j] >= 0:
                raise ModelError(
                    f"{entity_label(body_labels, c, 'body')} is the child of two joints "
                    f"({entity_label(joint_labels, int(body_joint[c]), 'joint')} and "
                    f"{entity_label(joint_labels, j, 'joint')}): "
                    "an unmarked kinematic loop"
                )
            if int(jtype[j]) not in LOOP_JOINT_TYPES:
                raise ModelError(
                    f"{entity_label(joint_labels, j, 'joint')} closes a kinematic loop with unsupported type "
                    f"{SUPPORTED_JOINT_TYPES[int(jtype[j])]}; loop closures may be BALL, REVOLUTE or FIXED"
                )
            loop_joints.append(j)
            continue
        body_joint[c] = j
    for b in range(nb):
        if body_joint[b] < 0:
            raise ModelError(f"{entity_label(body_labels, b, 'body')} has no joint; add a free or fixed joint for it")

    body_parent = np.array([jparent[body_joint[b]] for b in range(nb)], np.int32) if nb else np.zeros(0, np.int32)
    children: list[list[int]] = [[] for _ in range(nb)]
    roots_world: list[int] = []
    for b in range(nb):
        p = int(body_parent[b])
        (roots_world if p < 0 else children[p]).append(b)
    _check_acyclic(nb, body_parent, body_labels)

    # --- welded groups: bodies FIXED to a body whose joint leaves its rotation free ------------------
    body_weld_start = np.zeros(nb + 1, np.int32)
    body_welded: list[int] = []
    for b in range(nb):
        if int(jtype[body_joint[b]]) in (JOINT_FREE, JOINT_DISTANCE, JOINT_BALL):
            stack = list(children[b])
            while stack:
                c = stack.pop()
                if int(jtype[body_joint[c]]) == JOINT_FIXED:
                    body_welded.append(c)
                    stack.extend(children[c])
        body_weld_start[b + 1] = len(body_welded)

    # --- worlds -------------------------------------------------------------------------------------
    world_count = max(int(model.world_count), 1)
    body_world = bworld_raw.copy()
    if world_count == 1:
        body_world[:] = 0

    # --- static bodies and trees ----------------------------------------------------------------
    static = np.zeros(nb, bool)
    order = _topological_bodies(roots_world, children)
    for b in order:
        p = int(body_parent[b])
        static[b] = jtype[body_joint[b]] == JOINT_FIXED and (p < 0 or static[p])
    for b in order:
        if not static[b] and body_world[b] < 0:
            raise ModelError(
                f"{entity_label(body_labels, b, 'body')} moves but belongs to no world (world -1) of a model of "
                f"{world_count} worlds, whose problems are solved apart: add it to each world (a kinematic or dynamic "
                "copy per world), or make it static"
            )

    body_tree = np.full(nb, -1, np.int32)
    body_depth = np.full(nb, -1, np.int32)
    tree_roots = [b for b in order if not static[b] and (body_parent[b] < 0 or static[body_parent[b]])]
    # trees sorted by world so that each world's dofs are contiguous
    tree_roots.sort(key=lambda b: (int(body_world[b]), b))
    tree_bodies_list: list[list[int]] = []
    for t, root in enumerate(tree_roots):
        bodies = _topological_bodies([root], children)
        for b in bodies:
            body_tree[b] = t
            p = int(body_parent[b])
            body_depth[b] = 0 if b == root else body_depth[p] + 1
        tree_bodies_list.append(bodies)

    # --- internal dofs --------------------------------------------------------------------------
    dof_public, dof_joint, dof_body, dof_parent, dof_depth, dof_tree, dof_local, dof_coord = ([] for _ in range(8))
    dof_ball_quat, dof_ball_axis = [], []
    jq_start = model.joint_q_start.numpy() if nj else np.zeros(1, np.int32)
    joint_dof_internal_start = np.zeros(nj, np.int32)
    tree_dof_start, tree_dof_count = [], []
    last_dof_of_body = np.full(nb, -1, np.int64)  # last internal dof on the path root..body
    for t, bodies in enumerate(tree_bodies_list):
        tree_dof_start.append(len(dof_public))
        for b in bodies:
            j = int(body_joint[b])
            p = int(body_parent[b])
            prev = int(last_dof_of_body[p]) if p >= 0 and body_tree[p] == t else -1
            joint_dof_internal_start[j] = len(dof_public)
            n_lin, n_ang = int(jdof_dim[j, 0]), int(jdof_dim[j, 1])
            public = list(range(int(jqd_start[j]), int(jqd_start[j]) + n_lin + n_ang))
            scalar_coords = jtype[j] in (JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_D6)
            if jtype[j] in (JOINT_FREE, JOINT_DISTANCE):
                public = public[3:] + public[:3]  # internal [ω, v_M]
            for k in public:
                dof_coord.append(int(jq_start[j]) + k - int(jqd_start[j]) if scalar_coords else -1)
                dof_ball_quat.append(int(jq_start[j]) if jtype[j] == JOINT_BALL else -1)
                dof_ball_axis.append(k - int(jqd_start[j]) if jtype[j] == JOINT_BALL else -1)
                dof_public.append(k)
                dof_joint.append(j)
                dof_body.append(b)
                dof_parent.append(prev)
                dof_depth.append(0 if prev < 0 else dof_depth[prev] + 1)
                dof_tree.append(t)
                dof_local.append(len(dof_public) - 1 - tree_dof_start[t])
                prev = len(dof_public) - 1
            last_dof_of_body[b] = prev
        tree_dof_count.append(len(dof_public) - tree_dof_start[t])
    ndof = len(dof_public)
    loop_dofs = sum(int(jdof_dim[j].sum()) for j in loop_joints)
    if ndof + loop_dofs != model.joint_dof_count:
        raise ModelError(
            f"{model.joint_dof_count - ndof - loop_dofs} dofs belong to no moving tree; "
            "every joint with dofs must move a body"
        )

    dof_depth_a = np.asarray(dof_depth, np.int32)
    row_start = np.zeros(ndof, np.int32)
    if ndof:
        row_start[1:] = np.cumsum(dof_depth_a[:-1] + 1)
    sparse_nnz = int((dof_depth_a + 1).sum())

    tree_dof_start_a = np.asarray(tree_dof_start, np.int32)
    tree_dof_count_a = np.asarray(tree_dof_count, np.int32)
    tree_world = np.asarray([body_world[r] for r in tree_roots], np.int32)
    tree_is_dense = tree_dof_count_a <= dense_max_dofs

    # dense storage: blocks grouped by tree size, contiguous per size bucket
    dense_buckets: dict[int, np.ndarray] = {}
    dense_bucket_offset: dict[int, int] = {}
    tree_dense_offset = np.full(len(tree_roots), -1, np.int64)
    offset = 0
    for n in sorted({int(n) for n, d in zip(tree_dof_count_a, tree_is_dense, strict=True) if d and n > 0}):
        trees = np.nonzero((tree_dof_count_a == n) & tree_is_dense)[0].astype(np.int32)
        dense_buckets[n] = trees
        dense_bucket_offset[n] = offset
        tree_dense_offset[trees] = offset + np.arange(len(trees)) * n * n
        offset += len(trees) * n * n
    dof_tree_a = np.asarray(dof_tree, np.int32)
    dof_dense_offset = tree_dense_offset[dof_tree_a] if ndof else np.zeros(0, np.int64)

    sparse_mask = ~tree_is_dense[dof_tree_a] if ndof else np.zeros(0, bool)
    max_depth = int(dof_depth_a.max()) if ndof else -1
    sparse_dof_levels = [np.nonzero(sparse_mask & (dof_depth_a == d))[0].astype(np.int32) for d in range(max_depth + 1)]
    sparse_dof_levels = [lvl for lvl in sparse_dof_levels if len(lvl)] if sparse_mask.any() else []
    dof_levels = [np.nonzero(dof_depth_a == d)[0].astype(np.int32) for d in range(max_depth + 1)]

    world_dof_start = np.zeros(world_count + 1, np.int32)
    for t in range(len(tree_roots)):
        world_dof_start[tree_world[t] + 1] += tree_dof_count_a[t]
    world_dof_start = np.cumsum(world_dof_start).astype(np.int32)

    # dense per-world blocks (the SAP Hessian couples the trees of a world through contacts)
    world_dof_count = np.diff(world_dof_start)
    world_buckets: dict[int, np.ndarray] = {}
    world_bucket_offset: dict[int, int] = {}
    world_dense_offset = np.full(world_count, -1, np.int64)
    woffset = 0
    for n in sorted({int(n) for n in world_dof_count if 0 < n <= dense_world_max_dofs}):
        worlds = np.nonzero(world_dof_count == n)[0].astype(np.int32)
        world_buckets[n] = worlds
        world_bucket_offset[n] = woffset
        world_dense_offset[worlds] = woffset + np.arange(len(worlds)) * n * n
        woffset += len(worlds) * n * n

    # tree-block sparse Cholesky: a pool of 8-float chunks (right-hand side and factor) and a T×T pattern per world
    # (trees are grouped by world); the CPU allocates only the largest pool, but the per-world offsets stay int32
    if np.any(np.diff(tree_world) < 0):
        raise AssertionError("trees must be ordered by world")
    world_tree_start = np.searchsorted(tree_world, np.arange(world_count + 1)).astype(np.int32)
    world_tree_count = np.diff(world_tree_start)
    uses_block = (world_dof_count > dense_world_max_dofs) & (world_dof_count <= block_cholesky_max_dofs)
    tree_chunk_start = np.zeros(len(tree_dof_count_a), np.int64)
    block_sizes = np.zeros(world_count, np.int64)
    for w in np.nonzero(uses_block)[0]:
        block_sizes[w], tree_chunk_start[world_tree_start[w] : world_tree_start[w + 1]] = _block_pool_chunks(
            tree_dof_count_a[world_tree_start[w] : world_tree_start[w + 1]]
        )
    world_block_offset = np.where(uses_block, np.cumsum(block_sizes) - block_sizes, -1)
    # A's blocks of those worlds' trees in the factor's chunked rows (n rows of ⌈n/8⌉ chunks), copied into each solve
    tree_A_size = np.where(uses_block[tree_world], tree_dof_count_a.astype(np.int64) * ((tree_dof_count_a + 7) // 8), 0)
    tree_A_offset = np.where(uses_block[tree_world], np.cumsum(tree_A_size) - tree_A_size, -1)
    pair_sizes = np.where(uses_block, world_tree_count.astype(np.int64) ** 2, 0)
    world_pair_offset = np.where(uses_block, np.cumsum(pair_sizes) - pair_sizes, -1)
    if max(2 * block_sizes.sum(), tree_A_size.sum()) >= 2**31:  # the pools and as much again for the kept Hessians
        raise ModelError(
            f"the block-Cholesky factors of {int(uses_block.sum())} worlds need {int(2 * block_sizes.sum())} chunks "
            "of 8 floats (their pools and the Hessians kept for the stiction model), more than int32 indexing allows: "
            "lower block_cholesky_max_dofs (PCG above it)"
        )

    # --- FK branches: root-to-leaf joint paths ----------------------------------------------------
    branch_joints, branch_start = [], [0]
    for b in order:
        if children[b]:
            continue
        path = []
        x = b
        while x >= 0:
            path.append(int(body_joint[x]))
            x = int(body_parent[x])
        branch_joints.extend(reversed(path))
        branch_start.append(len(branch_joints))

    max_body_depth = int(body_depth.max()) if nb else -1
    body_levels = [np.nonzero(body_depth == d)[0].astype(np.int32) for d in range(1, max_body_depth + 1)]

    tree_bodies = (
        np.concatenate([np.asarray(b, np.int32) for b in tree_bodies_list])
        if tree_bodies_list
        else np.zeros(0, np.int32)
    )
    tree_body_start = np.zeros(len(tree_bodies_list) + 1, np.int32)
    tree_body_start[1:] = np.cumsum([len(b) for b in tree_bodies_list])

    topo = Topology(
        body_count=nb,
        joint_count=nj,
        dof_count=ndof,
        world_count=world_count,
        body_joint=body_joint,
        body_parent=body_parent,
        body_tree=body_tree,
        body_depth=body_depth,
        body_world=body_world.astype(np.int32),
        body_weld_start=body_weld_start,
        body_welded=np.asarray(body_welded, np.int32),
        joint_dof_internal_start=joint_dof_internal_start,
        joint_in_tree=np.isin(np.arange(nj), loop_joints, invert=True).astype(np.int32),
        loop_joints=np.asarray(loop_joints, np.int32),
        dof_public=np.asarray(dof_public, np.int32),
        dof_joint=np.asarray(dof_joint, np.int32),
        dof_body=np.asarray(dof_body, np.int32),
        dof_parent=np.asarray(dof_parent, np.int32),
        dof_depth=dof_depth_a,
        dof_tree=dof_tree_a,
        dof_row_start=row_start,
        dof_dense_offset=dof_dense_offset.astype(np.int32),
        dof_local=np.asarray(dof_local, np.int32),
        dof_coord=np.asarray(dof_coord, np.int32),
        dof_ball_quat=np.asarray(dof_ball_quat, np.int32),
        dof_ball_axis=np.asarray(dof_ball_axis, np.int32),
        sparse_nnz=sparse_nnz,
        tree_dof_start=tree_dof_start_a,
        tree_dof_count=tree_dof_count_a,
        tree_world=tree_world,
        tree_body_start=tree_body_start,
        tree_bodies=tree_bodies,
        tree_is_dense=tree_is_dense,
        world_dof_start=world_dof_start,
        branch_start=np.asarray(branch_start, np.int32),
        branch_joints=np.asarray(branch_joints, np.int32),
        body_levels=body_levels,
        dense_buckets=dense_buckets,
        dense_bucket_offset=dense_bucket_offset,
        dense_size=offset,
        sparse_dof_levels=sparse_dof_levels,
        dof_levels=dof_levels,
        sparse_trees=np.nonzero(~tree_is_dense)[0].astype(np.int32),
        tree_ids=np.arange(len(tree_roots), dtype=np.int32),
        dof_world=tree_world[dof_tree_a] if ndof else np.zeros(0, np.int32),
        body_last_dof=last_dof_of_body.astype(np.int32),
        max_chain=int(dof_depth_a.max()) + 1 if ndof else 0,
        world_buckets=world_buckets,
        world_bucket_offset=world_bucket_offset,
        world_dense_offset=world_dense_offset.astype(np.int32),
        world_dense_size=woffset,
        world_uses_pcg=((world_dof_count > dense_world_max_dofs) & ~uses_block).astype(np.int32),
        world_tree_start=world_tree_start,
        world_block_offset=world_block_offset.astype(np.int32),
        world_block_size=int(block_sizes.sum()),
        world_block_max=int(block_sizes.max(initial=0)),
        tree_chunk_start=tree_chunk_start.astype(np.int32),
        tree_A_offset=tree_A_offset.astype(np.int32),
        tree_A_size=int(tree_A_size.sum()),
        world_pair_offset=world_pair_offset.astype(np.int32),
        world_pair_size=int(pair_sizes.sum()),
    )
    return topo


def _block_pool_chunks(dof_counts: np.ndarray) -> tuple[int, np.ndarray]:
    """Pool of a block-Cholesky world (``block_cholesky.py``) in 8-float chunks, and each tree's first chunk in
    its chunked right-hand side. The pool holds the right-hand side (a tree of n dofs takes ``⌈n/8⌉`` chunks)
    and U's blocks for any elimination order: tree k's block row takes ``n_k`` rows of the chunks of k and of
    every tree eliminated after it (at most), and ``Σ_k n_k Σ_(j not before k) P_j`` is largest with the
    trees in decreasing ``n/P`` (swapping neighbours k, j changes it by ``n_j P_k − n_k P_j``), so that order
    bounds every pattern's. A tree's column takes a whole chunk: a world of 6-dof bodies needs about 0.7 of the
    n² floats of a dense factor, but one of 1-dof trees 4 times as many (the CPU keeps one world's pool; the GPUs
    one per world, and they take CG above 64 dofs unless ``block_cholesky_max_dofs`` says otherwise). With stiction
    prediction the solver allocates as much again, for each world's H kept beside its factor."""
    chunks = (dof_counts.astype(np.int64) + 7) // 8
    start = np.cumsum(chunks) - chunks
    order = np.argsort(-dof_counts / np.maximum(chunks, 1), kind="stable")
    later_chunks = np.cumsum(chunks[order][::-1])[::-1]  # chunks of the trees from each position on
    blocks = int((dof_counts[order].astype(np.int64) * later_chunks).sum())
    return int(chunks.sum()) + blocks, start


def _topological_bodies(roots: list[int], children: list[list[int]]) -> list[int]:
    """Bodies reachable from ``roots`` in depth-first preorder (parents before children)."""
    out, stack = [], list(reversed(roots))
    while stack:
        b = stack.pop()
        out.append(b)
        stack.extend(reversed(children[b]))
    return out


def _check_acyclic(nb: int, body_parent: np.ndarray, body_labels: list[str]) -> None:
    for b in range(nb):
        x, steps = b, 0
        while x >= 0:
            x = int(body_parent[x])
            steps += 1
            if steps > nb:
                raise ModelError(
                    f"{entity_label(body_labels, b, 'body')} lies on a joint cycle: an unmarked kinematic loop"
                )


@dataclass
class DeviceTopology:
    """Device copies of the :class:`Topology` arrays the kernels read (same names)."""

    arrays: dict[str, wp.array]
    body_levels: list[wp.array]
    sparse_dof_levels: list[wp.array]
    dof_levels: list[wp.array]
    dense_buckets: dict[int, wp.array]
    world_buckets: dict[int, wp.array]

    def __getattr__(self, name):
        try:
            return self.__dict__["arrays"][name]
        except KeyError as e:
            raise AttributeError(name) from e


def bucket_views(storage: wp.array, buckets: dict[int, np.ndarray], offsets: dict[int, int]) -> dict[int, wp.array]:
    """Per size n, the (count, n, n) view of ``storage`` holding that bucket's dense blocks."""
    return {
        n: storage[offsets[n] : offsets[n] + len(ids) * n * n].reshape((len(ids), n, n)) for n, ids in buckets.items()
    }


def to_device(topo: Topology, device) -> DeviceTopology:
    """Copy every index table of ``topo`` to ``device`` as int32 Warp arrays."""
    names = [
        "body_joint", "body_parent", "body_tree", "body_world", "body_weld_start", "body_welded",
        "joint_dof_internal_start", "dof_public", "dof_joint",
        "dof_body", "dof_parent", "dof_depth", "dof_tree", "dof_row_start", "dof_dense_offset", "dof_local",
        "dof_coord", "dof_ball_quat", "dof_ball_axis", "tree_dof_start", "tree_dof_count", "tree_world",
        "tree_body_start", "tree_bodies", "world_dof_start", "branch_start", "branch_joints", "body_last_dof",
        "world_dense_offset", "dof_world", "world_uses_pcg", "joint_in_tree", "loop_joints", "sparse_trees",
        "tree_ids", "world_tree_start", "world_block_offset", "world_pair_offset", "tree_chunk_start",
        "tree_A_offset",
    ]  # fmt: skip
    arrays = {
        n: wp.array(np.ascontiguousarray(getattr(topo, n), dtype=np.int32), dtype=wp.int32, device=device)
        for n in names
    }
    return DeviceTopology(
        arrays=arrays,
        body_levels=[wp.array(lvl, dtype=wp.int32, device=device) for lvl in topo.body_levels],
        sparse_dof_levels=[wp.array(lvl, dtype=wp.int32, device=device) for lvl in topo.sparse_dof_levels],
        dof_levels=[wp.array(lvl, dtype=wp.int32, device=device) for lvl in topo.dof_levels],
        dense_buckets={n: wp.array(t, dtype=wp.int32, device=device) for n, t in topo.dense_buckets.items()},
        world_buckets={n: wp.array(w, dtype=wp.int32, device=device) for n, w in topo.world_buckets.items()},
    )
