"""SAP constraint types, one module each, all with the same small contract (SAP.md §2):

* parameters: a compliance ``R`` (diagonal) and a bias velocity ``v̂`` from physical parameters;
* ``impulse(v_c) -> (γ, G, ℓ)``: the impulse ``γ = −∂ℓ/∂v_c`` [N·s], its Hessian
  ``G = −∂γ/∂v_c`` (PSD) and the constraint cost ``ℓ`` [J], as ``@wp.func``.

The solver gathers constraint velocities ``v_c = J v``, calls the type's impulse function, and adds
``−Jᵀγ`` to the gradient and ``Jᵀ G J`` to the Hessian of the SAP objective.
"""
