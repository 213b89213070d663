"""Stiction prediction: a second direction for the Newton iterations in which contacts land.

Newton's own model lets a sliding contact's slip pass through zero along the step, so the exact line search
stops where the first such contact sticks, and one contact lands per iteration (a landing 50-sphere pile:
17 iterations per step). Here the sliding contacts whose slip the Newton direction ``Δv`` reverses (or ends
inside the cone) are modelled by their stiction branch, ``γ̃ = R⁻¹(v̂ − v_c)``, ``G̃ = R⁻¹``
(``predict_stiction``); in the worlds with such contacts the direction is solved again with that model's
gradient and Hessian (``sap.py``) and kept where it descends, ``Δṽᵀ∇ℓ < 0`` (``model_direction_slope``,
``adopt_model_direction``): 6 iterations per step on the same pile. The block-Cholesky worlds do all of this in
their own solve, right after their Newton direction (``block_cholesky.world_block_cholesky``, with
:func:`stiction_model_row`): there H̃ is the Newton solve's H plus the predicted rows' change. Measured on 16
landing 50-sphere worlds (60 replayed steps, alternating processes): 14.71 / 13.92 → 13.91 / 13.49 ms a step,
against a second launch that assembled H̃ afresh and a pass of its own over every row. Near the solution (within
``PREDICTION_MAX_RELATIVE_RESIDUAL`` of optimality) the worlds take plain Newton steps, for their local
convergence, and after a stiction-model step that the line search cut short (``line_search.MODEL_STEP_MIN_ALPHA``)
the next step is a plain one (``world_plain_newton``). The solution is the same: only the direction changes, and
the line search still minimizes the true ℓ along it.
"""

import warp as wp

from .constraints.dispatch import constraint_predicts_stiction, stiction_branch_impulse, thread_slots
from .jacobian import row_product

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

PREDICTION_MAX_RELATIVE_RESIDUAL = wp.constant(1.0e-2)
"""A world whose ‖D∇ℓ‖ is within this fraction of ``max(‖D A v‖, ‖D Jᵀγ‖)`` predicts nothing for the rest of the
step (``check_convergence``): it is in Newton's local phase, where a contact that the step takes into stiction
by a hair is better modelled by Newton's own model. Measured on a settled 50-sphere pile: its warm starts lie
about 5e-3 to 1e-2 from optimality (5e-3 here left most predictions in place) and one plain Newton step
converges, while a prediction there (about one world in eight per step) cost a second solve and a second
iteration; a landing pile predicts while its relative residual is 0.05 to 1."""

PLAIN_NEWTON_NEAR_OPTIMUM = wp.constant(1)
"""``world_plain_newton`` value of a world within ``PREDICTION_MAX_RELATIVE_RESIDUAL`` of optimality: plain
Newton steps for the rest of the time step (``check_convergence``). 0: the world predicts."""
PLAIN_NEWTON_ONCE = wp.constant(2)
"""``world_plain_newton`` value after a stiction-model step shorter than ``line_search.MODEL_STEP_MIN_ALPHA``: the
next Newton step is a plain one, and the predictions resume after it (``line_search``)."""


@wp.func
def world_predicts(plain_newton: int):
    """Whether a world whose ``world_plain_newton`` is ``plain_newton`` models stiction in its next direction: only
    with neither flag set (``predict_stiction``, and the block-Cholesky worlds' own solve)."""
    return plain_newton == 0


@wp.func
def stiction_model_row(
    c: int,
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_gamma: wp.array(dtype=wp.vec3),
    c_G: wp.array(dtype=wp.mat33),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    dv: wp.array(dtype=float),
):
    """Row c in the stiction model along the Newton step ``Δv``: ``(1, G̃, γ̃ − γ)`` where the step takes it
    through stiction (``stiction_branch_impulse``: ``γ̃ = R⁻¹(v̂ − v_c)``, ``G̃ = R⁻¹`` for SAP's cone, its linear
    branch), else ``(0, G, 0)``; a row without impulse (separated) is not sliding, so it predicts nothing."""
    G = c_G[c]
    gamma = c_gamma[c]
    if wp.dot(gamma, gamma) == 0.0:
        return int(0), G, wp.vec3(0.0)
    vc = c_vc[c]
    dvc = row_product(c, c_nnz, c_dof, c_J, dv)
    if constraint_predicts_stiction(c_kind[c], vc, dvc, c_vhat[c], c_R[c], c_param[c]) == 0:
        return int(0), G, wp.vec3(0.0)
    gamma_model, G_model = stiction_branch_impulse(c_kind[c], vc, c_vhat[c], c_R[c], c_param[c])
    return int(1), G_model, gamma_model - gamma


@wp.kernel
def predict_stiction(
    # model
    world_block_offset: wp.array(dtype=wp.int32),
    # inputs
    slots_per_thread: int,
    used_count: wp.array(dtype=wp.int32),
    used_slots: wp.array(dtype=wp.int32),
    world_active: wp.array(dtype=wp.int32),
    world_tree_local: wp.array(dtype=wp.int32),
    world_plain_newton: wp.array(dtype=wp.int32),
    c_world: wp.array(dtype=wp.int32),
    c_kind: wp.array(dtype=wp.int32),
    c_vc: wp.array(dtype=wp.vec3),
    c_gamma: wp.array(dtype=wp.vec3),
    c_G: wp.array(dtype=wp.mat33),
    c_vhat: wp.array(dtype=wp.vec3),
    c_R: wp.array(dtype=wp.vec3),
    c_param: wp.array(dtype=float),
    c_nnz: wp.array(dtype=wp.int32),
    c_dof: wp.array2d(dtype=wp.int32),
    c_J: wp.array2d(dtype=wp.vec3),
    dv: wp.array(dtype=float),
    # outputs (grad_model starts as a copy of ∇ℓ; world_predicted and any_predicted zeroed before)
    c_G_model_out: wp.array(dtype=wp.mat33),
    grad_model_out: wp.array(dtype=float),
    world_predicted_out: wp.array(dtype=wp.int32),
    any_predicted_out: wp.array(dtype=wp.int32),
):
    """Per constraint of an active world, along the Newton step ``Δv_c = J Δv``: the model used for the
    second direction (:func:`stiction_model_row`). A row predicted to pass through stiction gets its linear branch
    (``G_model = G̃`` and ``∇ℓ_model = ∇ℓ − Jᵀ(γ̃ − γ)``) and marks its world (``world_predicted = 1``); other rows
    keep ``G``. Worlds flagged in ``world_plain_newton`` predict nothing, and the block-Cholesky worlds (not solved
    by the tree LDLᵀ this step) predict in ``world_block_cholesky`` itself. A thread takes a run of the used
    slots."""
    begin, end = thread_slots(wp.tid(), slots_per_thread, used_count[0])
    for k in range(begin, end):
        c = used_slots[k]
        w = c_world[c]
        if world_active[w] == 0 or (world_block_offset[w] >= 0 and world_tree_local[w] == 0):
            continue
        if not world_predicts(world_plain_newton[w]):
            c_G_model_out[c] = c_G[c]
            continue
        predicted, G_model, change = stiction_model_row(
            c, c_kind, c_vc, c_gamma, c_G, c_vhat, c_R, c_param, c_nnz, c_dof, c_J, dv
        )
        if predicted == 1:
            for e in range(c_nnz[c]):
                wp.atomic_add(grad_model_out, c_dof[c, e], -wp.dot(c_J[c, e], change))
            world_predicted_out[w] = 1
            any_predicted_out[0] = 1
        c_G_model_out[c] = G_model


@wp.kernel
def model_direction_slope(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    world_predicted: wp.array(dtype=wp.int32),
    dv_model: wp.array(dtype=float),
    grad: wp.array(dtype=float),
    # outputs (zeroed before)
    world_slope_out: wp.array(dtype=float),
):
    """``dℓ/dα(0) = Δṽᵀ ∇ℓ`` of the stiction-model direction, per world that has one."""
    i = wp.tid()
    w = dof_world[i]
    if world_predicted[w] == 1:
        wp.atomic_add(world_slope_out, w, dv_model[i] * grad[i])


@wp.kernel
def adopt_model_direction(
    # model
    dof_world: wp.array(dtype=wp.int32),
    # inputs
    world_predicted: wp.array(dtype=wp.int32),
    world_slope: wp.array(dtype=float),
    dv_model: wp.array(dtype=float),
    # outputs
    dv_out: wp.array(dtype=float),
):
    """``Δv = Δṽ`` in the worlds whose stiction-model direction descends."""
    i = wp.tid()
    w = dof_world[i]
    if world_predicted[w] == 1 and world_slope[w] < 0.0:
        dv_out[i] = dv_model[i]
