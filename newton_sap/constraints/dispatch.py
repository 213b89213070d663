"""One entry point for every constraint type, so the SAP iterations stay type-agnostic.

A constraint occupies one slot of the solver's constraint arrays: up to three velocity rows
``v_c = J v`` (sparse Jacobian entries), a diagonal compliance ``R``, a bias velocity ``v̂`` and one
type parameter (μ for SAP's contacts, the friction bound μ n0 for lagged ones). Adding a type means: its
module with the impulse contract (see the package doc), one branch below, and a kernel that fills its slots.
"""

import warp as wp

from .bilateral import bilateral_impulse
from .friction_cone import friction_cone_impulse, friction_cone_predicts_stiction
from .joint_friction import joint_friction_impulse
from .joint_limit import joint_limit_impulse
from .lagged_contact import lagged_contact_impulse, lagged_contact_predicts_stiction, lagged_contact_stiction_branch
from .pd_drive import pd_drive_impulse

SLOTS_PER_THREAD_CPU = 1024
"""Constraint slots per thread of the per-row kernels on the CPU (one on GPUs). How many rows are used is
known only on the device, so those kernels are launched for the slot capacity and the threads past the
end have nothing to do. On the CPU, Warp runs the threads one after the other and each costs its
argument set even when it returns at once, and most slots are empty (Newton's contact buffer and the joint
slots of a 1024-world quadruped: 26k used of 159k; of a 1024-world landing pile: about 110k rows in the
iterations and 755k contacts of 3.0M slots), so a thread takes a run instead: of the contacts of Newton's buffer
when the contact rows are built, of the list of used slots (in slot order, the order the rows are stored in)
afterwards. With 64 slots per thread that pile launched 47k threads per per-row launch, which cost 0.6-1.0 ms
each (13-21 ns per idle thread of a 20-argument kernel), in some 30 launches a step; with 1024, launched, per
step: ``constraint_eval`` 54.8 → 48.3 ms, ``line_rows`` 29.6 → 24.7, ``predict_stiction`` 22.9 → 18.4,
``hessian_assembly`` 9.1 → 4.1."""


def slots_per_thread(device) -> int:
    """Slots per thread of the per-row kernels on ``device``: :data:`SLOTS_PER_THREAD_CPU` or 1 (GPUs)."""
    return SLOTS_PER_THREAD_CPU if wp.get_device(device).is_cpu else 1


@wp.func
def thread_slots(t: int, slots_per_thread: int, slot_count: int):
    """Entries ``[begin, end)`` of a list of ``slot_count`` slots taken by thread t of a per-row kernel (see
    :data:`SLOTS_PER_THREAD_CPU`)."""
    begin = t * slots_per_thread
    return begin, wp.min(begin + slots_per_thread, slot_count)


CONTACT = wp.constant(0)
"""Point contact with regularized friction (``friction_cone.py``); parameter: μ."""
PD_DRIVE = wp.constant(1)
"""Implicit PD drive with effort limit (``pd_drive.py``); parameter: the impulse limit Δt·e."""
JOINT_LIMIT = wp.constant(2)
"""One side of a joint limit (``joint_limit.py``); no parameter."""
JOINT_FRICTION = wp.constant(3)
"""Dry friction in a joint (``joint_friction.py``); parameter: the impulse limit Δt·f_c."""
BILATERAL = wp.constant(4)
"""A rigid equality such as a mimic coupling (``bilateral.py``); no parameter."""
CONTACT_LAGGED = wp.constant(5)
"""Point contact with friction bounded by the normal impulse at the step's start (``lagged_contact.py``);
parameter: that bound μ n0 [N·s]."""
CONTACT_KINDS = (int(CONTACT), int(CONTACT_LAGGED))
"""The contact types (``contact_approximation``): the rows ``contact_rows`` fills."""


@wp.func
def constraint_impulse(kind: int, v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, parameter: float):
    """Impulse γ [N·s], Hessian ``G = −∂γ/∂v_c`` and cost ℓ [J] of a constraint of type ``kind``."""
    if kind == CONTACT:
        return friction_cone_impulse(v_c, v_hat, R, parameter)
    if kind == PD_DRIVE:
        return pd_drive_impulse(v_c, v_hat, R, parameter)
    if kind == JOINT_LIMIT:
        return joint_limit_impulse(v_c, v_hat, R, parameter)
    if kind == JOINT_FRICTION:
        return joint_friction_impulse(v_c, v_hat, R, parameter)
    if kind == BILATERAL:
        return bilateral_impulse(v_c, v_hat, R, parameter)
    if kind == CONTACT_LAGGED:
        return lagged_contact_impulse(v_c, v_hat, R, parameter)
    return wp.vec3(0.0), wp.mat33(0.0), float(0.0)


@wp.func
def constraint_predicts_stiction(kind: int, v_c: wp.vec3, dv_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, parameter: float):
    """1 if the Newton step ``Δv_c`` takes a saturated friction constraint through its linear (stiction)
    branch, so that branch models it better than its Newton model at ``v_c``; contacts only (the other
    types are modelled by their Newton model at ``v_c``)."""
    if kind == CONTACT:
        return friction_cone_predicts_stiction(v_c, dv_c, v_hat, R, parameter)
    if kind == CONTACT_LAGGED:
        return lagged_contact_predicts_stiction(v_c, dv_c, v_hat, R, parameter)
    return 0


@wp.func
def stiction_branch_impulse(kind: int, v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, parameter: float):
    """Impulse γ [N·s] and Hessian G of a contact's stiction branch at ``v_c``, whatever its actual region there:
    SAP's cone, the template's linear branch ``γ = R⁻¹ (v̂ − v_c)``, ``G = R⁻¹``; a lagged contact, its friction's
    linear branch beside its normal law (``lagged_contact_stiction_branch``)."""
    if kind == CONTACT_LAGGED:
        return lagged_contact_stiction_branch(v_c, v_hat, R, parameter)
    R_inv = wp.vec3(1.0 / R[0], 1.0 / R[1], 1.0 / R[2])
    return wp.cw_mul(R_inv, v_hat - v_c), wp.diag(R_inv)
