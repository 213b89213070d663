"""Block-preconditioned conjugate gradients spread over all dofs, tree blocks and rows: the PCG of
``pcg.py`` laid out for GPUs.

``world_pcg`` gives each world one thread that runs the whole CG loop: one launch per Newton iteration,
right on the CPU, where every launch costs, but a GPU then runs a few thousand serial threads (a
1024-world 50-sphere pile took 365 ms per step on an H200 through the per-world block Cholesky, which has
the same layout). Here every CG iteration is five launches over all dofs, trees and the rows with curvature,
listed once per solve (``cg_curved_rows``; the threads of worlds that have stopped return at once), looped
on the device by ``wp.capture_while`` (a conditional node of the step's graph) until the slowest world
stops. Per-world sums (``rᵀr``, ``rᵀz``, ``pᵀHp``) are atomic adds, so on a GPU the order of their float
additions, hence the last bits of a step, can change from run to run. The iterates, the forcing term η and
the stopping rule are those of ``world_pcg``: same directions up to float rounding.

``pᵀHp`` is accumulated with the product itself, ``pᵀAp + Σ_c (J_c p)ᵀ G_c (J_c p)``, so no launch reads
the finished ``Hp`` only to reduce it.
"""

from __future__ import annotations

import warp as wp

from .constraints.dispatch import thread_slots
from .jacobian import row_product
from .pcg import forcing_term, precondition_tree

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints


@wp.kernel
def cg_begin_worlds(
    # model
    world_uses_pcg: wp.array(dtype=wp.int32),
    # inputs
    loosest_tolerance: float,
    world_active: wp.array(dtype=wp.int32),
    world_norms: wp.array(dtype=wp.vec3),
    world_cost_stalled: wp.array(dtype=wp.int32),
    # outputs
    cg_active: wp.array(dtype=wp.int32),
    cg_steps: wp.array(dtype=wp.int32),
    cg_sums: wp.array2d(dtype=float),
    world_forcing_out: wp.array(dtype=float),
    any_iterating: wp.array(dtype=wp.int32),
    curved_count_out: wp.array(dtype=wp.int32),
):
    """Per world: CG runs where the world uses PCG and still iterates; forcing term η
    (``pcg.forcing_term``); the per-world sums (columns: ``bᵀb, rᵀz, pᵀHp, rᵀr, rᵀz new``, and the ``rᵀr`` of the
    iterate the last step reached) cleared; the list of curved rows emptied (thread 0)."""
    w = wp.tid()
    if w == 0:
        curved_count_out[0] = 0
    for k in range(6):
        cg_sums[w, k] = 0.0
    cg_steps[w] = 0
    active = int(0)
    if world_uses_pcg[w] == 1 and world_active[w] == 1:
        active = 1
        world_forcing_out[w] = forcing_term(world_norms[w], world_cost_stalled[w], loosest_tolerance)
        any_iterating[0] = 1
    cg_active[w] = active


@wp.kernel
def cg_curved_rows(
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    cg_active: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    # outputs (curved_count zeroed before)
    curved_rows_out: wp.array(dtype=wp.int32),
    curved_count_out: wp.array(dtype=wp.int32),
):
    """The rows with curvature (``G ≠ 0``) of the iterating worlds, listed once per solve: the only rows
    :func:`cg_product_rows` visits in each CG step (a landing pile: about 50 of 750 rows per world). On the
    CPU the list keeps slot order (the threads and their runs go in order), so the products' sums keep
    theirs; on GPUs its order varies, as the sums' order does anyway. A thread takes a run of the used slots."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        if cg_active[c_world[c]] == 0:
            continue
        G = c_G[c]
        if wp.ddot(G, G) != 0.0:
            curved_rows_out[wp.atomic_add(curved_count_out, 0, 1)] = c


@wp.kernel
def cg_begin_dofs(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    grad: wp.array(dtype=float),
    # outputs
    r: wp.array(dtype=float),
    Hp: wp.array(dtype=float),
    dv_out: wp.array(dtype=float),
    cg_sums: wp.array2d(dtype=float),
):
    """Per dof of an iterating world: ``Δv = 0``, ``r = b = −∇ℓ``, ``Hp = 0``; ``bᵀb`` summed per world."""
    i = wp.tid()
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    dv_out[i] = 0.0
    Hp[i] = 0.0
    ri = -grad[i]
    r[i] = ri
    wp.atomic_add(cg_sums, w, 0, ri * ri)


@wp.kernel
def cg_update_precondition_trees(
    # model
    tree_world: wp.array(dtype=wp.int32),
    tree_dof_start: wp.array(dtype=wp.int32),
    tree_dof_count: wp.array(dtype=wp.int32),
    dof_dense_offset: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    update: int,
    sum_column: int,
    cg_active: wp.array(dtype=wp.int32),
    P: wp.array(dtype=float),
    P_factor: wp.array(dtype=float),
    pdiag: wp.array(dtype=float),
    p: wp.array(dtype=float),
    # outputs
    r: wp.array(dtype=float),
    Hp: wp.array(dtype=float),
    dv_out: wp.array(dtype=float),
    z: wp.array(dtype=float),
    cg_sums: wp.array2d(dtype=float),
):
    """Per tree of an iterating world. ``update = 1`` (a CG step): first, on the tree's dofs, ``α = rᵀz / pᵀHp``,
    ``Δv += α p``, ``r −= α Hp``, ``Hp = 0`` for the next product, and ``r_tᵀ r_t`` added to the world's ``rᵀr``
    (where ``pᵀHp ≤ 0`` or NaN nothing: no curvature left to use, :func:`cg_next_worlds` stops the world without a
    step). Then ``z_t = P_t⁻¹ r_t`` (:func:`~newton_sap.pcg.precondition_tree`) and ``r_tᵀ z_t`` added to the
    world's sum in column ``sum_column`` (``rᵀz``, or the new ``rᵀz``). The update rides on the tree's
    preconditioner thread, which reads its r anyway: one launch per CG step instead of two."""
    t = wp.tid()
    w = tree_world[t]
    m = tree_dof_count[t]
    if cg_active[w] == 0 or m == 0:  # a tree welded to the world has no dofs (and its start may be the end)
        return
    s = tree_dof_start[t]
    if update == 1:
        pHp = cg_sums[w, 2]
        if not pHp > 0.0:  # no curvature along p in float32, or NaN: no step
            return
        alpha = cg_sums[w, 1] / pHp
        rr = float(0.0)
        for a in range(m):
            i = s + a
            dv_out[i] = dv_out[i] + alpha * p[i]
            ri = r[i] - alpha * Hp[i]
            r[i] = ri
            Hp[i] = 0.0
            rr += ri * ri
        wp.atomic_add(cg_sums, w, 3, rr)
    precondition_tree(s, m, dof_dense_offset, dof_parent, dof_depth, dof_row_start, P, P_factor, pdiag, r, z)
    rz = float(0.0)
    for a in range(m):
        rz += r[s + a] * z[s + a]
    wp.atomic_add(cg_sums, w, sum_column, rz)


@wp.kernel
def cg_first_direction_dofs(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    z: wp.array(dtype=float),
    # outputs
    p: wp.array(dtype=float),
):
    """Per dof of an iterating world: ``p = z``."""
    i = wp.tid()
    if cg_active[dof_world[i]] == 0:
        return
    p[i] = z[i]


@wp.kernel
def cg_product_dofs(
    # model
    dof_world: wp.array(dtype=wp.int32),
    dof_parent: wp.array(dtype=wp.int32),
    dof_depth: wp.array(dtype=wp.int32),
    dof_row_start: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    A_rows: wp.array(dtype=float),
    p: wp.array(dtype=float),
    # outputs (accumulated; any_iterating zeroed here, raised again by cg_next_worlds)
    Hp: wp.array(dtype=float),
    cg_sums: wp.array2d(dtype=float),
    any_iterating: wp.array(dtype=wp.int32),
):
    """Per dof i of an iterating world, the entries of A in its row (A's layout: the diagonal, then one per
    ancestor j): ``Hp_i += A_ii p_i + Σ_j A_ij p_j`` and ``Hp_j += A_ij p_i``; ``pᵀAp`` summed per world
    (``A_ii p_i² + 2 Σ_j A_ij p_i p_j``). The first kernel of a CG step, so thread 0 lowers the loop's flag
    (a memset would be one more graph node per CG step)."""
    i = wp.tid()
    if i == 0:
        any_iterating[0] = 0
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    rs = dof_row_start[i]
    di = dof_depth[i]
    pi = p[i]
    own = A_rows[rs] * pi
    quadratic = own * pi
    j = dof_parent[i]
    while j >= 0:
        a = A_rows[rs + di - dof_depth[j]]
        own += a * p[j]
        quadratic += 2.0 * a * pi * p[j]
        wp.atomic_add(Hp, j, a * pi)
        j = dof_parent[j]
    wp.atomic_add(Hp, i, own)
    wp.atomic_add(cg_sums, w, 2, quadratic)


@wp.kernel
def cg_product_rows(
    # inputs
    slots_per_thread: int,
    curved_count: wp.array(dtype=wp.int32),
    curved_rows: wp.array(dtype=wp.int32),
    cg_active: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_G: wp.array(dtype=wp.mat33),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    p: wp.array(dtype=float),
    # outputs (accumulated)
    Hp: wp.array(dtype=float),
    cg_sums: wp.array2d(dtype=float),
):
    """Per constraint row c with curvature in an iterating world (:func:`cg_curved_rows`):
    ``Hp += J_cᵀ G_c J_c p``; ``(J_c p)ᵀ G_c (J_c p)`` summed per world. A thread takes a run of the list."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, curved_count[0])
    for k in range(begin, end):
        c = curved_rows[k]
        w = c_world[c]
        if cg_active[w] == 0:
            continue
        G = c_G[c]
        Jp = row_product(c, c_nnz, c_dof, c_J, p)
        u = G * Jp
        for e in range(c_nnz[c]):
            wp.atomic_add(Hp, c_dof[c, e], wp.dot(c_J[c, e], u))
        wp.atomic_add(cg_sums, w, 2, wp.dot(Jp, u))


@wp.kernel
def cg_next_worlds(
    # inputs
    max_iterations: int,
    world_forcing: wp.array(dtype=float),
    # outputs
    cg_active: wp.array(dtype=wp.int32),
    cg_steps: wp.array(dtype=wp.int32),
    cg_sums: wp.array2d(dtype=float),
    cg_beta: wp.array(dtype=float),
    any_iterating: wp.array(dtype=wp.int32),
):
    """Per iterating world: stop where ``pᵀHp ≤ 0`` or NaN (no step taken), at ``‖r‖ ≤ η ‖b‖`` or after
    ``max_iterations`` steps (stopped short of η, ``world_forcing`` then holds the relative residual ``‖r‖ / ‖b‖``
    of the iterate reached, as ``pcg.world_pcg`` records it; the line search's float32 stall tests take only
    precise directions); otherwise
    ``β = rᵀz_new / rᵀz``, the new ``rᵀz`` kept and the other per-iteration sums cleared, and the loop goes on."""
    w = wp.tid()
    if cg_active[w] == 0:
        return
    if not cg_sums[w, 2] > 0.0:  # as world_pcg: a NaN pᵀHp stops the world with what it reached
        cg_active[w] = 0
        reached = cg_sums[w, 0]  # rᵀr of the iterate (no step taken: r = b)
        if cg_steps[w] > 0:
            reached = cg_sums[w, 5]
        eta = world_forcing[w]
        if reached > eta * eta * cg_sums[w, 0]:  # short of η: the relative residual reached, as world_pcg records
            world_forcing[w] = wp.sqrt(reached / cg_sums[w, 0])
        return
    steps = cg_steps[w] + 1
    cg_steps[w] = steps
    eta = world_forcing[w]
    if cg_sums[w, 3] <= eta * eta * cg_sums[w, 0]:
        cg_active[w] = 0
        return
    if steps >= max_iterations:  # stopped short of η: the relative residual it reached
        cg_active[w] = 0
        world_forcing[w] = wp.sqrt(cg_sums[w, 3] / cg_sums[w, 0])
        return
    cg_beta[w] = cg_sums[w, 4] / cg_sums[w, 1]
    cg_sums[w, 1] = cg_sums[w, 4]
    cg_sums[w, 5] = cg_sums[w, 3]
    cg_sums[w, 2] = 0.0
    cg_sums[w, 3] = 0.0
    cg_sums[w, 4] = 0.0
    any_iterating[0] = 1


@wp.kernel
def cg_direction_dofs(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    cg_active: wp.array(dtype=wp.int32),
    cg_beta: wp.array(dtype=float),
    z: wp.array(dtype=float),
    # outputs
    p: wp.array(dtype=float),
):
    """Per dof of an iterating world: ``p = z + β p``."""
    i = wp.tid()
    w = dof_world[i]
    if cg_active[w] == 0:
        return
    p[i] = z[i] + cg_beta[w] * p[i]


@wp.kernel
def cg_count_iterations(
    # model
    world_uses_pcg: wp.array(dtype=wp.int32),
    # inputs
    cg_steps: wp.array(dtype=wp.int32),
    # outputs
    world_cg_iterations: wp.array(dtype=wp.int32),
):
    """Per PCG world: this solve's CG steps added to the step's count."""
    w = wp.tid()
    if world_uses_pcg[w] == 1:
        world_cg_iterations[w] = world_cg_iterations[w] + cg_steps[w]


class ParallelConjugateGradients:
    """Scratch of the dof-parallel CG and its launches (see the module doc).

    Args:
        topology: Host topology (counts).
        device_topology: Its device arrays (``dof_world``, ``tree_world``, ...).
        device: Warp device.
        r, z, p, Hp: Per-dof CG vectors [dof] (the solver's, shared with the per-world layout).
    """

    def __init__(self, topology, device_topology, device, r, z, p, Hp):
        nw = max(topology.world_count, 1)
        self.T, self.device = device_topology, device
        self.world_count, self.dof_count, self.tree_count = (
            topology.world_count,
            topology.dof_count,
            topology.tree_count,
        )
        self.active = wp.zeros(nw, dtype=wp.int32, device=device)
        self.steps = wp.zeros(nw, dtype=wp.int32, device=device)
        self.sums = wp.zeros((nw, 6), dtype=float, device=device)
        self.beta = wp.zeros(nw, dtype=float, device=device)
        self.any_iterating = wp.zeros(1, dtype=wp.int32, device=device)
        self.curved_count = wp.zeros(1, dtype=wp.int32, device=device)
        self.r, self.z, self.p, self.Hp = r, z, p, Hp

    def solve(
        self,
        max_iterations: int,
        loosest_tolerance: float,
        world_active,
        world_norms,
        world_cost_stalled,
        rows,
        A_rows,
        preconditioner,
        grad,
        dv,
        world_cg_iterations,
        forcing,
    ) -> None:
        """``dv ≈ −H⁻¹ grad`` in the PCG worlds flagged in ``world_active`` (forcing terms from ``world_norms`` and
        ``world_cost_stalled``, ``pcg.forcing_term``, into ``forcing``,
        CG steps added to ``world_cg_iterations``). ``preconditioner``: ``(P, P_factor, pdiag)``, the dense tree blocks'
        Cholesky factors, the larger trees' LDLᵀ factors in A's layout and the Jacobi diagonal
        (``pcg.precondition_tree``). ``rows``: ``(slots_per_thread, slot_threads, used_count, used_slots, c_world, c_G,
        c_nnz, c_dof, c_J, curved_rows)`` of the constraint rows (``curved_rows``: a per-slot scratch list)."""
        T, dev = self.T, self.device
        slots_per_thread, slot_threads, used_count, used_slots, c_world, c_G, c_nnz, c_dof, c_J, curved_rows = rows
        self.any_iterating.zero_()
        wp.launch(cg_begin_worlds, dim=self.world_count,
                  inputs=[T.world_uses_pcg, loosest_tolerance, world_active, world_norms, world_cost_stalled],
                  outputs=[self.active, self.steps, self.sums, forcing, self.any_iterating, self.curved_count],
                  device=dev)  # fmt: skip
        wp.launch(cg_curved_rows, dim=slot_threads,
                  inputs=[slots_per_thread, used_count, used_slots, self.active, c_world, c_G],
                  outputs=[curved_rows, self.curved_count], device=dev)  # fmt: skip
        wp.launch(cg_begin_dofs, dim=self.dof_count, inputs=[T.dof_world, self.active, grad],
                  outputs=[self.r, self.Hp, dv, self.sums], device=dev)  # fmt: skip
        self._update_precondition(preconditioner, dv, 0, 1)
        wp.launch(cg_first_direction_dofs, dim=self.dof_count, inputs=[T.dof_world, self.active, self.z],
                  outputs=[self.p], device=dev)  # fmt: skip
        curved = (slots_per_thread, slot_threads, curved_rows, c_world, c_G, c_nnz, c_dof, c_J)
        wp.capture_while(self.any_iterating, self._iteration, max_iterations=max_iterations, rows=curved,
                         A_rows=A_rows, preconditioner=preconditioner, dv=dv, forcing=forcing)  # fmt: skip
        wp.launch(cg_count_iterations, dim=self.world_count, inputs=[T.world_uses_pcg, self.steps],
                  outputs=[world_cg_iterations], device=dev)  # fmt: skip

    def _update_precondition(self, preconditioner, dv, update: int, sum_column: int) -> None:
        """:func:`cg_update_precondition_trees` on every tree (``update``: also the CG step's update)."""
        T = self.T
        wp.launch(cg_update_precondition_trees, dim=self.tree_count,
                  inputs=[T.tree_world, T.tree_dof_start, T.tree_dof_count, T.dof_dense_offset, T.dof_parent,
                          T.dof_depth, T.dof_row_start, update, sum_column, self.active, *preconditioner, self.p],
                  outputs=[self.r, self.Hp, dv, self.z, self.sums], device=self.device)  # fmt: skip

    def _iteration(self, max_iterations, rows, A_rows, preconditioner, dv, forcing) -> None:
        """One CG step in every iterating world (the body of the device loop)."""
        T, dev = self.T, self.device
        slots_per_thread, slot_threads, curved_rows, c_world, c_G, c_nnz, c_dof, c_J = rows
        wp.launch(cg_product_dofs, dim=self.dof_count,
                  inputs=[T.dof_world, T.dof_parent, T.dof_depth, T.dof_row_start, self.active, A_rows, self.p],
                  outputs=[self.Hp, self.sums, self.any_iterating], device=dev)  # fmt: skip
        wp.launch(cg_product_rows, dim=slot_threads,
                  inputs=[slots_per_thread, self.curved_count, curved_rows, self.active, c_world, c_G, c_nnz, c_dof,
                          c_J, self.p],
                  outputs=[self.Hp, self.sums], device=dev)  # fmt: skip
        self._update_precondition(preconditioner, dv, 1, 4)
        wp.launch(cg_next_worlds, dim=self.world_count, inputs=[max_iterations, forcing],
                  outputs=[self.active, self.steps, self.sums, self.beta, self.any_iterating], device=dev)  # fmt: skip
        wp.launch(cg_direction_dofs, dim=self.dof_count, inputs=[T.dof_world, self.active, self.beta, self.z],
                  outputs=[self.p], device=dev)  # fmt: skip
