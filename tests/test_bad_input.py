"""Models the solver cannot simulate are refused at construction, naming the entity; bad steps raise."""

import newton
import numpy as np
import pytest
import warp as wp

import newton_sap
from newton_sap import ModelError


def chain(masses=(1.0, 1.0), loop=False):
    b = newton.ModelBuilder()
    links = [b.add_link(mass=m, label=f"link{k}") for k, m in enumerate(masses)]
    j0 = b.add_joint_revolute(-1, links[0], axis=(1, 0, 0), label="shoulder")
    j1 = b.add_joint_revolute(links[0], links[1], axis=(1, 0, 0), label="elbow")
    b.add_articulation([j0, j1])
    if loop:
        b.add_joint_prismatic(-1, links[1], axis=(1, 0, 0), label="closure")
    return b.finalize()


def test_valid_chain_builds():
    newton_sap.SolverSAP(chain())


def test_unsupported_joint_type_names_the_joint():
    model = chain()
    types = model.joint_type.numpy()
    types[1] = int(newton.JointType.ROD)
    model.joint_type.assign(types)
    with pytest.raises(ModelError, match="elbow.*unsupported type"):
        newton_sap.SolverSAP(model)


def test_negative_mass_names_the_body():
    model = chain()
    model.body_mass.assign(np.array([1.0, -2.0], np.float32))
    with pytest.raises(ModelError, match="link1.*invalid mass"):
        newton_sap.SolverSAP(model)


def test_inertia_not_psd_names_the_body():
    model = chain()
    inertia = model.body_inertia.numpy()
    inertia[0] = np.diag([0.1, 0.1, -0.1])
    model.body_inertia.assign(inertia)
    with pytest.raises(ModelError, match="link0.*not positive semidefinite"):
        newton_sap.SolverSAP(model)


def test_massless_leaf_without_armature_is_refused():
    with pytest.raises(ModelError, match="elbow.*massless"):
        newton_sap.SolverSAP(chain(masses=(1.0, 0.0)))


def test_massless_leaf_with_armature_is_accepted():
    model = chain(masses=(1.0, 0.0))
    model.joint_armature.assign(np.array([0.0, 0.01], np.float32))
    newton_sap.SolverSAP(model)


def test_unsupported_loop_closing_joint_is_named():
    with pytest.raises(ModelError, match="closure.*kinematic loop.*PRISMATIC"):
        newton_sap.SolverSAP(chain(loop=True))


def test_unmarked_loop_is_refused():
    model = chain()
    parent = model.joint_parent.numpy()
    parent[0] = 1  # shoulder now hangs link0 from link1, which hangs from link0
    model.joint_parent.assign(parent)
    with pytest.raises(ModelError, match="cycle|loop"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan")])
def test_non_positive_dt_raises(dt):
    model = chain()
    solver = newton_sap.SolverSAP(model)
    with pytest.raises(ValueError, match="dt"):
        solver.step(model.state(), model.state(), None, None, dt)
    wp.synchronize()
