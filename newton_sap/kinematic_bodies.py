"""Kinematic bodies (Newton's ``BodyFlags.KINEMATIC``): tree roots whose motion the user prescribes.

Newton lets only a root body (its joint's parent is the world) be kinematic, with any joint type; its subtree
may hold dynamic bodies (a moving base). As in Newton's Featherstone solver, a step passes a kinematic root
joint's ``joint_q`` and ``joint_qd`` through unchanged: the user writes them before each step, and within the
step the body moves with ``joint_qd``, whatever force acts on it. Its dofs are not unknowns of the SAP problem:

* mass matrix: the row and column of a kinematic dof are decoupled with a unit diagonal and ``τ = 0``
  (``dynamics.mass_matrix_rows``), so the free motion and every Newton direction keep its velocity ``v0``. The
  dynamic dofs then solve ``M_dd (v_d − v0_d) = Δt τ_d``: the prescribed dofs do not accelerate within a step,
  and ``τ_d`` (RNE) holds the Coriolis and centrifugal forces of their velocity. A kinematic FREE root keeps its
  twist, a screw motion (``kinematics.forward_kinematics``: no bias acceleration), as Featherstone's does;
* the optimality test's norms leave the kinematic dofs out (``1/A_ii`` written as 0), so a fast kinematic body
  does not loosen the solves of the bodies around it;
* constraint rows: a kinematic dof has no Jacobian entry (``jacobian.chain_rows``); the velocity it gives the
  rows, ``J_k v0_k``, is subtracted from their bias velocity v̂, since the impulse depends on ``v̂ − v_c``
  only (a moving obstacle). A contact side that only kinematic dofs move is immovable (no rows between two
  such sides);
* joint-space rows (drives, limits, joint friction) of kinematic dofs are not formed; a mimic coupling takes a
  kinematic leader's or follower's velocity as given and acts on the other side (as MuJoCo moves the leader of a
  prescribed follower); between two kinematic dofs it is not formed.

The flags are read from ``model.body_flags`` on the device every step, so a body switched between kinematic and
dynamic (``notify_model_changed(BODY_PROPERTIES)``) acts from the next step, also in captured graphs.
"""

import newton
import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})  # forward only: the solver builds no adjoints

KINEMATIC = wp.constant(int(newton.BodyFlags.KINEMATIC))


@wp.func
def body_is_kinematic(b: int, body_flags: wp.array(dtype=wp.int32)):
    """1 if body ``b`` carries Newton's KINEMATIC flag, else 0 (also for ``b = -1``, the world)."""
    if b < 0:
        return 0
    if (body_flags[b] & KINEMATIC) != 0:
        return 1
    return 0


@wp.func
def dof_is_kinematic(k: int, dof_body: wp.array(dtype=wp.int32), body_flags: wp.array(dtype=wp.int32)):
    """1 if internal dof ``k`` belongs to a kinematic body's joint (prescribed velocity), else 0."""
    return body_is_kinematic(dof_body[k], body_flags)


@wp.func
def side_moves(d: int, dof_body: wp.array(dtype=wp.int32), body_flags: wp.array(dtype=wp.int32)):
    """1 if a constraint side whose dof chain starts at ``d`` (its body's last dof, -1: none) has a dof of the
    problem. Kinematic dofs are the roots' only, so a chain is entirely prescribed iff its first dof is."""
    if d < 0:
        return 0
    return 1 - dof_is_kinematic(d, dof_body, body_flags)


def check_kinematic_bodies(model: newton.Model, topo) -> np.ndarray:
    """The kinematic bodies of ``model`` (indices), checked: each must be the root of its tree (its parent the
    world or a body welded to it), as Newton's builder requires; a body switched to kinematic at run time is
    checked here too.

    Raises:
        ModelError: a kinematic body with a moving parent, naming it.
    """
    from .topology import ModelError, entity_label, model_labels

    if model.body_count == 0 or model.body_flags is None:
        return np.zeros(0, np.int64)
    kinematic = np.nonzero(model.body_flags.numpy() & int(newton.BodyFlags.KINEMATIC))[0]
    parent = topo.body_parent[kinematic]
    moving_parent = (parent >= 0) & (topo.body_tree[np.maximum(parent, 0)] >= 0)
    if moving_parent.any():
        b = int(kinematic[np.argmax(moving_parent)])
        raise ModelError(
            f"{entity_label(model_labels(model, 'body'), b, 'body')} is kinematic but its parent body "
            f"{int(topo.body_parent[b])} moves: only tree roots (attached to the world) can be kinematic"
        )
    return kinematic
