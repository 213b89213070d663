"""SAP constraint types, one module each, all with the same small contract (SAP.md §2):

* parameters: a compliance ``R`` (diagonal) and a bias velocity ``v̂`` from physical parameters;
* ``impulse(v_c) -> (γ, G, ℓ)``: the impulse ``γ = −∂ℓ/∂v_c`` [N·s], its Hessian
  ``G = −∂γ/∂v_c`` (PSD) and the constraint cost ``ℓ`` [J], as ``@wp.func``.

The solver gathers constraint velocities ``v_c = J v``, calls the type's impulse function, and adds
``−Jᵀγ`` to the gradient and ``Jᵀ G J`` to the Hessian of the SAP objective.

Optionally a type tells whether a Newton step ``Δv_c`` takes it through its linear branch
``γ = R⁻¹(v̂ − v_c)`` (``dispatch.constraint_predicts_stiction``; the friction cone does), so the solver
can model it by that branch for the step's direction.
"""
