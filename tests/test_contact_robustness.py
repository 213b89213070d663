"""Contact bad input and failure handling: named materials, full buffers, non-convergence, NaN worlds."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap import ModelError

from contact_scenes import Run, box_on_ground, with_material


@pytest.mark.parametrize("mu", [-0.1, np.inf, np.nan])
def test_bad_friction_names_the_shape(mu):
    model = box_on_ground()
    values = model.shape_material_mu.numpy()
    values[1] = mu
    model.shape_material_mu.assign(values)
    with pytest.raises(ModelError, match="shape 1.*friction"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize("ke", [0.0, -1.0, np.inf])
def test_bad_material_stiffness_names_the_shape_when_materials_are_used(ke):
    """An infinite stiffness would make the pair's series stiffness inf/inf = NaN."""
    model = box_on_ground()
    values = model.shape_material_ke.numpy()
    values[0] = ke
    model.shape_material_ke.assign(values)
    newton_sap.SolverSAP(model)  # the solver's own stiffness is used: fine
    with pytest.raises(ModelError, match="shape 0.*stiffness"):
        newton_sap.SolverSAP(model, contact_stiffness=None)


@pytest.mark.parametrize(
    "bad",
    [{"contact_stiffness": 0.0}, {"contact_stiffness": np.inf}, {"contact_dissipation_time": np.nan},
     {"friction_regularization": np.inf}, {"rel_tolerance": np.nan}, {"line_search": "golden"},
     {"max_iterations": 0}, {"pcg_threads": "block"}, {"rel_tolerance": "1e-6"}, {"contact_stiffness": True},
     {"momentum_mode": "yes"}, {"stiction_prediction": 1}],
)  # fmt: skip
def test_bad_options_are_refused(bad):
    with pytest.raises(ValueError):
        newton_sap.SolverSAP(box_on_ground(), **bad)


def test_full_contact_buffer_is_reported():
    run = Run(box_on_ground(boxes=2), rigid_contact_max=2)
    with pytest.warns(RuntimeWarning, match="contact buffer full"):
        run.step(0.01)
    assert run.solver.stats.contact_buffer_full


def test_non_convergence_is_flagged_or_raised():
    run = Run(box_on_ground(boxes=3), qd0=[1.0, 0, 0, 0, 0, 3.0] * 3, max_iterations=1)
    run.step(0.01, 5)
    stats = run.solver.stats
    assert not stats.converged.all() and (stats.residual > 0).all()
    strict = Run(box_on_ground(boxes=3), qd0=[1.0, 0, 0, 0, 0, 3.0] * 3, max_iterations=1, raise_on_nonconvergence=True)
    with pytest.raises(RuntimeError, match="did not converge"):
        strict.step(0.01, 5)


@pytest.mark.parametrize(
    "options",
    [{}, {"dense_world_max_dofs": 0}, {"dense_world_max_dofs": 0, "block_cholesky_max_dofs": 0}],
    ids=["dense", "block Cholesky", "PCG"],
)
def test_nan_world_with_contacts_does_not_spread(options):
    robot = newton.ModelBuilder()
    with_material(robot, 0.5)
    for k in range(2):
        body = robot.add_body(xform=wp.transform((0.0, 0.0, 0.1 * (2 * k + 1)), wp.quat_identity()))
        robot.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    scene = newton.ModelBuilder()
    scene.replicate(robot, 3)
    with_material(scene, 0.5)
    scene.add_ground_plane()  # shared by the three worlds
    model = scene.finalize()
    qd0 = np.tile([0.3, 0, 0, 0, 0, 0.5], 6).astype(np.float32)
    clean = Run(model, qd0=qd0, **options)
    clean.step(0.01, 3)
    broken = Run(model, qd0=qd0, **options)
    q = broken.s0.joint_q.numpy()
    q[14 + 2] = np.nan  # world 1, first box height
    broken.s0.joint_q.assign(q)
    broken.step(0.01, 3)
    assert broken.solver.stats.converged.tolist() == [True, False, True]
    keep = np.ones(len(q), bool)
    keep[14:28] = False
    assert np.allclose(broken.q[keep], clean.q[keep], atol=1e-6)
