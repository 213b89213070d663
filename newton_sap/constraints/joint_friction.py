"""Dry (Coulomb) friction in a joint, regularized like the friction cone (SAP.md §2, §5).

``γ = clamp(−v / R, ±Δt f_c)`` with ``R = σ w`` (σ: friction regularization, w: the dof's Delassus
estimate) and ``v̂ = 0``: a stiff linear damper near zero velocity that saturates at the friction
force ``f_c`` [N or N·m] (Newton's ``joint_friction``). It is the same saturating-linear impulse as
the PD drive's (``pd_drive.pd_drive_impulse``), with these parameters.
"""

import warp as wp

from .pd_drive import pd_drive_impulse


@wp.func
def joint_friction_impulse(v_c: wp.vec3, v_hat: wp.vec3, R: wp.vec3, impulse_limit: float):
    """Impulse γ [N·s], Hessian G and cost ℓ [J] of joint dry friction (``impulse_limit = Δt f_c``)."""
    return pd_drive_impulse(v_c, v_hat, R, impulse_limit)
