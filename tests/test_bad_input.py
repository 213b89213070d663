"""Models the solver cannot simulate are refused at construction, naming the entity; bad steps raise."""

import re
import warnings

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


def test_errors_in_a_model_of_several_worlds_name_the_world():
    """``replicate`` repeats every label, so a model of several worlds names the world too."""
    arm = newton.ModelBuilder()
    links = [arm.add_link(mass=1.0, label=f"link{k}") for k in range(2)]
    arm.add_articulation([arm.add_joint_revolute(-1, links[0], axis=(1, 0, 0), label="shoulder"),
                          arm.add_joint_revolute(links[0], links[1], axis=(1, 0, 0), label="elbow")])  # fmt: skip
    scene = newton.ModelBuilder()
    scene.replicate(arm, 3)
    model = scene.finalize()
    mass = model.body_mass.numpy()
    mass[5] = -1.0
    model.body_mass.assign(mass)
    with pytest.raises(ModelError, match=r"body 5 \('link1', world 2\) has invalid mass"):
        newton_sap.SolverSAP(model)


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


@pytest.mark.parametrize("kinematic", [False, True])
def test_moving_body_of_no_world_in_several_worlds_is_refused(kinematic):
    """A platform added after ``replicate`` belongs to world -1: it would couple problems solved apart."""
    box = newton.ModelBuilder()
    box.add_shape_box(box.add_body(xform=wp.transform((0.0, 0.0, 0.3), wp.quat_identity())), hx=0.1, hy=0.1, hz=0.1)
    scene = newton.ModelBuilder()
    scene.replicate(box, 2)
    platform = scene.add_body(label="platform", is_kinematic=kinematic)
    scene.add_shape_box(platform, hx=1.0, hy=1.0, hz=0.1)
    with pytest.raises(ModelError, match="platform.*belongs to no world.*2 worlds.*add it to each world"):
        newton_sap.SolverSAP(scene.finalize())


def test_a_body_far_lighter_in_rotation_than_its_shapes_is_named():
    """``add_body(mass=2.0)`` with a shape of density 0 gets Newton's inertia floor (1e-6 kg·m²): an impulse at its
    box's corners turns it 4e4 times as much as it moves it, and the near-rigid rule softens its contacts by as much
    (it sank 16 cm). It is named, at build and when a change of its inertia is notified; a solid box is not, nor is
    the box once its inertia is its shape's."""
    builder = newton.ModelBuilder()
    hollow = builder.add_body(mass=2.0, label="hollow")
    builder.add_shape_box(hollow, hx=0.1, hy=0.1, hz=0.1, cfg=newton.ModelBuilder.ShapeConfig(density=0.0))
    builder.add_shape_box(builder.add_body(label="solid"), hx=0.1, hy=0.1, hz=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Newton's own note that it raised the inertia to its floor
        model = builder.finalize()

    def named():
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            solver = newton_sap.SolverSAP(model)
        return solver, [str(w.message) for w in record if "as much as it moves" in str(w.message)]

    solver, messages = named()
    assert len(messages) == 1 and re.match(r"body 0 \('hollow'\): .* up to 4e\+04 times", messages[0])
    inertia = model.body_inertia.numpy()
    inertia[0] = np.eye(3) * 2.0 * 0.2**2 / 6.0  # the solid box's
    model.body_inertia.assign(inertia)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES)
    assert not [w for w in record if "as much as it moves" in str(w.message)]
    assert named()[1] == []
    inertia[0] = np.eye(3) * 1e-6
    model.body_inertia.assign(inertia)
    with pytest.warns(UserWarning, match=r"body 0 \('hollow'\): .* as much as it moves"):
        solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES)


def test_a_nan_inertia_notified_with_the_shapes_alone_waits_for_its_own_check():
    """The shapes' check (``SHAPE_PROPERTIES``) passes over a body whose inertia is NaN (no ``LinAlgError`` from its
    principal axes); the inertial check names it when its change is notified."""
    builder = newton.ModelBuilder()
    builder.add_shape_box(builder.add_body(label="box"), hx=0.1, hy=0.1, hz=0.1)
    model = builder.finalize()
    solver = newton_sap.SolverSAP(model)
    inertia = model.body_inertia.numpy()
    inertia[0] = np.nan  # a whole NaN matrix: NumPy's eigh raises on it
    model.body_inertia.assign(inertia)
    solver.notify_model_changed(newton.ModelFlags.SHAPE_PROPERTIES)
    with pytest.raises(ModelError, match="box.*non-finite inertia"):
        solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES)


def test_a_non_finite_global_gravity_names_world_minus_1():
    """In a model of several worlds ``model.gravity`` ends with the global world's entry (world -1), not a world
    past the last one."""
    box = newton.ModelBuilder()
    box.add_shape_box(box.add_body(), hx=0.1, hy=0.1, hz=0.1)
    scene = newton.ModelBuilder()
    scene.replicate(box, 3)
    model = scene.finalize()
    model.set_gravity((0.0, 0.0, float("nan")), world=-1)
    with pytest.raises(ModelError, match=r"^world -1 has gravity"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize("dt", [0.0, -1e-3, float("nan")])
def test_non_positive_dt_raises(dt):
    model = chain()
    solver = newton_sap.SolverSAP(model)
    with pytest.raises(ValueError, match="dt"):
        solver.step(model.state(), model.state(), None, None, dt)
    wp.synchronize()


def limited_hinge(limit_ke, limit_kd):
    """A link on a hinge limited to ±0.1 rad with Newton's limit gains ``limit_ke``, ``limit_kd``."""
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, com=wp.vec3(0.3, 0, 0), inertia=wp.mat33(np.eye(3, dtype=np.float32) * 1e-2))
    joint = b.add_joint_revolute(-1, link, axis=(0, 1, 0), limit_lower=-0.1, limit_upper=0.1, limit_ke=limit_ke,
                                 limit_kd=limit_kd, label="shoulder")  # fmt: skip
    b.add_articulation([joint])
    return b.finalize()


@pytest.mark.parametrize(
    ("limit_ke", "limit_kd", "gain"),
    [
        (0.0, 0.0, "ke"),
        (0.0, 1.0, "ke"),
        (-5.0, 1.0, "ke"),
        (np.inf, 1.0, "ke"),
        (1e4, -1.0, "kd"),
        (1e4, np.nan, "kd"),
    ],
)
def test_newtons_limit_gains_are_checked_when_used(limit_ke, limit_kd, gain):
    model = limited_hinge(limit_ke, limit_kd)
    newton_sap.SolverSAP(model)  # the solver's own limit stiffness: Newton's gains are not read
    with pytest.raises(ModelError, match=f"shoulder.*joint_limit_{gain}"):
        newton_sap.SolverSAP(model, joint_limit_stiffness=None)


def test_limit_gains_are_checked_again_when_the_model_changes():
    model = limited_hinge(1e4, 10.0)
    solver = newton_sap.SolverSAP(model, joint_limit_stiffness=None)
    model.joint_limit_ke.assign(np.zeros(1, np.float32))
    with pytest.raises(ModelError, match="shoulder.*joint_limit_ke = 0.0"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_FORCE_PROPERTIES)


def bad_value(model, change):
    """``change`` applied to ``model``: (array name, index, value) set in place."""
    name, index, value = change
    values = getattr(model, name).numpy()
    values[index] = value
    getattr(model, name).assign(values)


F = newton.ModelFlags
NOTIFIED_CHANGES = {  # a bad value, the flag that announces it, an unrelated flag, and what the error names
    "negative mass": (("body_mass", 1, -2.0), F.BODY_INERTIAL_PROPERTIES, F.SHAPE_PROPERTIES, "link1.*invalid mass"),
    "indefinite inertia": (("body_inertia", 0, np.diag([0.1, 0.1, -0.1])), F.BODY_INERTIAL_PROPERTIES,
                           F.JOINT_DOF_FORCE_PROPERTIES, "link0.*not positive semidefinite"),
    "kinematic body off the root": (("body_flags", 1, int(newton.BodyFlags.KINEMATIC)), F.BODY_PROPERTIES,
                                    F.CONSTRAINT_PROPERTIES, "link1.*kinematic but its parent body 0 moves"),
    "massless leaf, armature removed": (("joint_armature", 1, 0.0), F.JOINT_DOF_INERTIAL_PROPERTIES,
                                        F.JOINT_DOF_FORCE_PROPERTIES, "elbow.*massless"),
    "negative friction coefficient": (("shape_material_mu", 1, -0.5), F.SHAPE_PROPERTIES, F.BODY_INERTIAL_PROPERTIES,
                                      "shape 1.*friction coefficient -0.5"),
    "negative drive gain": (("joint_target_ke", 0, -1.0), F.JOINT_DOF_FORCE_PROPERTIES, F.SHAPE_PROPERTIES,
                            "shoulder.*negative or non-finite drive gains"),
    "NaN drive gain": (("joint_target_kd", 1, np.nan), F.JOINT_DOF_FORCE_PROPERTIES, F.SHAPE_PROPERTIES,
                       "elbow.*negative or non-finite drive gains"),
    "NaN mass": (("body_mass", 0, np.nan), F.BODY_INERTIAL_PROPERTIES, F.JOINT_DOF_FORCE_PROPERTIES,
                 "link0.*invalid mass"),
    "negative armature": (("joint_armature", 0, -0.5), F.JOINT_DOF_INERTIAL_PROPERTIES, F.SHAPE_PROPERTIES,
                          "shoulder.*armature -0.5"),
    "negative damping": (("joint_damping", 1, -50.0), F.JOINT_DOF_FORCE_PROPERTIES, F.BODY_INERTIAL_PROPERTIES,
                         "elbow.*joint_damping -50.0"),
    "NaN stiffness": (("joint_stiffness", 0, np.nan), F.JOINT_DOF_FORCE_PROPERTIES, F.SHAPE_PROPERTIES,
                      "shoulder.*joint_stiffness nan"),
    "NaN joint friction": (("joint_friction", 1, np.nan), F.JOINT_DOF_FORCE_PROPERTIES, F.SHAPE_PROPERTIES,
                           "elbow.*joint friction nan"),
    "NaN limit": (("joint_limit_lower", 0, np.nan), F.JOINT_DOF_FORCE_PROPERTIES, F.SHAPE_PROPERTIES,
                  "shoulder.*NaN limit"),
    "NaN joint frame": (("joint_X_p", 1, [0.0, np.nan, 0.0, 0.0, 0.0, 0.0, 1.0]), F.JOINT_PROPERTIES,
                        F.SHAPE_PROPERTIES, r"elbow.*joint_X_p .*finite position and a unit quaternion"),
    "non-unit frame quaternion": (("joint_X_c", 0, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]), F.JOINT_PROPERTIES,
                                  F.BODY_INERTIAL_PROPERTIES, "shoulder.*joint_X_c"),
    "zero joint axis": (("joint_axis", 1, [0.0, 0.0, 0.0]), F.JOINT_PROPERTIES, F.SHAPE_PROPERTIES,
                        "elbow.*finite unit vectors"),
    "NaN COM": (("body_com", 1, [np.nan, 0.0, 0.0]), F.BODY_INERTIAL_PROPERTIES, F.JOINT_DOF_FORCE_PROPERTIES,
                "link1.*non-finite COM"),
    "NaN gravity": (("gravity", 0, [0.0, 0.0, np.nan]), F.MODEL_PROPERTIES, F.SHAPE_PROPERTIES,
                    "world 0 has gravity"),
    "NaN spring rest position": (("joint_rest_q", 1, np.nan), F.JOINT_REFERENCE_POSE_PROPERTIES,
                                 F.SHAPE_PROPERTIES, "elbow.*joint_rest_q nan"),
    "NaN shape transform": (("shape_transform", 1, [np.nan, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]), F.SHAPE_PROPERTIES,
                            F.BODY_INERTIAL_PROPERTIES, "shape 1.*shape_transform.*finite with a nonzero quaternion"),
    "zero shape quaternion": (("shape_transform", 0, [0.0] * 7), F.SHAPE_PROPERTIES, F.JOINT_PROPERTIES,
                              "shape 0.*shape_transform"),
    "NaN shape scale": (("shape_scale", 1, [np.nan, 0.05, 0.05]), F.SHAPE_PROPERTIES, F.JOINT_PROPERTIES,
                        "shape 1.*shape_scale"),
    "negative margin": (("shape_margin", 0, -1.0), F.SHAPE_PROPERTIES, F.JOINT_DOF_FORCE_PROPERTIES,
                        r"shape 0.*shape_margin -1.0 \[m\]"),
    "NaN contact gap": (("shape_gap", 1, np.nan), F.SHAPE_PROPERTIES, F.BODY_INERTIAL_PROPERTIES,
                        "shape 1.*shape_gap nan"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(NOTIFIED_CHANGES))
def test_values_changed_after_the_build_are_checked_when_notified(case):
    """notify_model_changed checks the values its flags name, as the constructor does (the broad
    JOINT_DOF_PROPERTIES and ALL included), and not the others."""
    change, flag, unrelated, message = NOTIFIED_CHANGES[case]
    b = newton.ModelBuilder()
    b.default_shape_cfg.density = 0.0
    links = [b.add_link(mass=m, label=f"link{k}") for k, m in enumerate((1.0, 0.0))]
    joints = [b.add_joint_revolute(p, c, axis=(1, 0, 0), armature=0.01, label=name)
              for p, c, name in ((-1, links[0], "shoulder"), (links[0], links[1], "elbow"))]  # fmt: skip
    b.add_articulation(joints)
    for link in links:
        b.add_shape_sphere(link, radius=0.05)
    model = b.finalize()
    solver = newton_sap.SolverSAP(model)
    bad_value(model, change)
    solver.notify_model_changed(unrelated)
    for flags in (flag, F.ALL):
        with pytest.raises(ModelError, match=message):
            solver.notify_model_changed(flags)


def free_body(mass=1.0, inertia=0.01, com=(0.0, 0.0, 0.0)):
    """One body on a FREE joint, its inertia ``inertia`` (a scalar: ``inertia · 1``, or a 3×3) about its COM."""
    b = newton.ModelBuilder()
    link = b.add_link(mass=mass, com=wp.vec3(*com), inertia=wp.mat33(np.eye(3) * inertia), label="puck")
    b.add_articulation([b.add_joint_free(link, label="float")])
    model = b.finalize()
    model.body_mass.assign(np.array([mass], np.float32))  # as randomization writes them: finalize corrects zeros
    model.body_inertia.assign(np.asarray(np.eye(3) * inertia, np.float32)[None])
    return model


@pytest.mark.parametrize(
    ("mass", "inertia", "com", "message"),
    [
        (1.0, 0.0, (0.0, 0.0, 0.0), "float.*turns body 0 .*no rotational inertia"),  # a point mass
        (1.0, 0.0, (0.2, 0.0, 0.0), "float.*turns body 0 .*no rotational inertia"),  # ... off its origin
        (0.0, 0.01, (0.0, 0.0, 0.0), "float.*massless"),  # inertia without mass
    ],
)
def test_free_body_with_a_singular_mass_matrix_is_refused(mass, inertia, com, message):
    """A FREE leaf whose 6×6 mass-matrix block is singular (its first step gave NaN before)."""
    with pytest.raises(ModelError, match=message):
        newton_sap.SolverSAP(free_body(mass, inertia, com))
    newton_sap.SolverSAP(free_body(1.0, np.diag([0.01, 0.01, 1e-6]), com))  # a thin rod: singular-ish, accepted


def hinge_leaf(inertia, com=(0.0, 0.0, 0.0), armature=0.0):
    """A 1 kg link on a hinge about z through its origin, its COM at ``com``, ``inertia`` written after
    ``finalize`` (which corrects degenerate ones)."""
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, com=wp.vec3(*com), inertia=wp.mat33(np.eye(3)), label="rod")
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0, 0, 1), armature=armature, label="spin")])
    model = b.finalize()
    model.body_inertia.assign(np.asarray(inertia, np.float32)[None])
    return model


def test_hinge_about_an_axis_without_inertia_is_refused():
    """A rod on a hinge along its own axis, its COM on the axis and no inertia about it: A = 0."""
    rod = np.diag([1.0, 1.0, 0.0])
    with pytest.raises(ModelError, match="spin.*turns body 0 .*no rotational inertia"):
        newton_sap.SolverSAP(hinge_leaf(rod))
    newton_sap.SolverSAP(hinge_leaf(rod, com=(0.1, 0.0, 0.0)))  # its mass off the axis
    newton_sap.SolverSAP(hinge_leaf(rod, armature=0.01))
    tip = newton.ModelBuilder()  # a 1 g, 5 mm finger tip on a hinge: small but regular
    link = tip.add_link(mass=1e-3, com=wp.vec3(0.0, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 1e-8))
    tip.add_articulation([tip.add_joint_revolute(-1, link, axis=(0, 0, 1))])
    newton_sap.SolverSAP(tip.finalize())


def test_d6_joint_with_parallel_axes_is_refused():
    """Two equal angular axes: a singular mass matrix whose null space drifted while every step reported
    converged (the spin about z went from 1 to −4.5 rad/s with no torque)."""
    JA = newton.ModelBuilder.JointDofConfig
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, inertia=wp.mat33(np.eye(3) * 0.01), com=wp.vec3(0.2, 0, 0), label="d6link")
    joint = b.add_joint_d6(-1, link, angular_axes=[JA(axis=(0, 0, 1)), JA(axis=(0, 0, 1))], label="wrist")
    b.add_articulation([joint])
    with pytest.raises(ModelError, match="wrist.*parallel axes"):
        newton_sap.SolverSAP(b.finalize())


def test_limits_no_position_satisfies_are_refused():
    model = limited_hinge(1e4, 10.0)
    model.joint_limit_lower.assign(np.array([np.inf], np.float32))
    model.joint_limit_upper.assign(np.array([np.inf], np.float32))
    with pytest.raises(ModelError, match="shoulder.*no position satisfies"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize("dt", [1e-46, 1e39])
def test_dt_must_fit_float32(dt):
    """1e-46 is 0 in the kernels' float32 (steps did nothing, converged), 1e39 infinite (every world NaN)."""
    model = chain()
    solver = newton_sap.SolverSAP(model)
    with pytest.raises(ValueError, match="float32"):
        solver.step(model.state(), model.state(), None, None, dt)


def test_friction_regularization_has_a_floor():
    """Below σ = 1e-6 H's conditioning outgrows float32 (σ = 1e-9 broke a box thrown onto the ground, σ = 1e-37
    every world)."""
    with pytest.raises(ValueError, match="friction_regularization must be >= 1e-06"):
        newton_sap.SolverSAP(chain(), friction_regularization=1e-7)


@pytest.mark.parametrize(
    "bad",
    [{"max_iterations": 2.5}, {"max_iterations": True}, {"dense_max_dofs": 8.0}, {"dense_world_max_dofs": -1},
     {"block_cholesky_max_dofs": "512"}, {"max_iterations": 2**31}],
)  # fmt: skip
def test_integer_options_must_be_integers(bad):
    """... that fit the kernels' int32 (2**31 iterations would wrap to a negative count)."""
    with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an integer"):
        newton_sap.SolverSAP(chain(), **bad)


@pytest.mark.parametrize(
    "bad", [{"friction_regularization": 1e-46}, {"near_rigid_threshold": 1e39}, {"contact_stiffness": 1e39}]
)
def test_real_options_must_fit_float32(bad):
    """The kernels compute in float32: σ = 1e-46 would be 0 there (contacts then act not at all) and 1e39 inf."""
    with pytest.raises(ValueError, match=f"{next(iter(bad))} = .* outside float32's normal range"):
        newton_sap.SolverSAP(chain(), **bad)


def ball_pendulum(label="hip"):
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, com=wp.vec3(0, 0, -0.3), inertia=wp.mat33(np.eye(3, dtype=np.float32) * 1e-2))
    b.add_articulation([b.add_joint_ball(-1, link, label=label)])
    return b


def set_dof_1(model, setting):
    for name, value in setting.items():
        values = getattr(model, name).numpy()
        values[1] = value
        getattr(model, name).assign(values)


def test_limits_on_a_ball_joint_are_named_in_a_warning():
    model = ball_pendulum().finalize()
    set_dof_1(model, {"joint_limit_upper": 0.5})
    with pytest.warns(UserWarning, match=r"ignored on joint 0 \('hip'\)"):
        newton_sap.SolverSAP(model)


@pytest.mark.parametrize(
    "setting",
    [{"joint_friction": 0.2}, {"joint_stiffness": 10.0},
     {"joint_target_ke": 50.0, "joint_target_mode": int(newton.JointTargetMode.POSITION)}],
)  # fmt: skip
def test_drives_friction_and_stiffness_on_a_ball_joint_give_no_warning(setting):
    """They act (``tests/test_ball_drives.py``)."""
    model = ball_pendulum().finalize()
    set_dof_1(model, setting)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(model)
    assert not [w for w in record if "ignored on" in str(w.message)]


@pytest.mark.parametrize("max_distance", [-1.0, 1.0], ids=["no-range", "default-range"])
def test_newtons_defaults_on_ball_free_and_distance_joints_give_no_warning_but_a_distance_range(max_distance):
    """Newton's defaults on BALL, FREE and DISTANCE joints set nothing the solver ignores, but for a DISTANCE joint's
    range (``add_joint_distance``'s default ``max_distance`` is 1 m; negative bounds are none), which is not
    enforced: a warning names the joint."""
    b = ball_pendulum()
    b.add_body(mass=1.0, inertia=wp.mat33(np.eye(3, dtype=np.float32) * 1e-2))  # a FREE joint
    link = b.add_link(mass=1.0, inertia=wp.mat33(np.eye(3, dtype=np.float32) * 1e-2), label="tethered")
    b.add_articulation([b.add_joint_distance(-1, link, max_distance=max_distance, label="tether")])
    model = b.finalize()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(model)
    assert not [w for w in record if "ignored on" in str(w.message)]
    ranges = [str(w.message) for w in record if "distance range" in str(w.message)]
    assert len(ranges) == (max_distance >= 0.0), ranges
    assert all(re.search(r"not enforced on joint 2 \('tether'\)", m) for m in ranges), ranges


def test_particles_are_named_in_a_warning():
    """SolverSAP steps rigid bodies only; a model with particles says so instead of leaving them frozen silently."""
    b = newton.ModelBuilder()
    b.add_particle((0.0, 0.0, 1.0), (0.0, 0.0, 0.0), mass=1.0)
    link = b.add_link(mass=1.0)
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(1, 0, 0))])
    with pytest.warns(UserWarning, match="1 particles; SolverSAP steps rigid bodies only"):
        newton_sap.SolverSAP(b.finalize())


def test_routed_tendons_are_named_in_a_warning():
    """Newton's routed tendons (``add_tendon``; SolverXPBD steps them) are not applied: the model says so. A body
    hanging from the world by one falls freely, as in Featherstone."""
    from newton._src.sim.tendon import TendonGuide

    b = newton.ModelBuilder()
    body = b.add_body(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()), mass=1.0)
    b.add_tendon([TendonGuide(body=-1, offset=(0.0, 0.0, 2.0)), TendonGuide(body=body, offset=(0.0, 0.0, 0.0))])
    with pytest.warns(UserWarning, match="1 routed tendons; SolverSAP does not apply them"):
        newton_sap.SolverSAP(b.finalize())


def test_a_body_velocity_its_joints_do_not_have_is_named_in_a_warning():
    """A velocity set on ``body_qd`` alone (maximal-coordinate style, as Newton's XPBD examples do) is not seen by a
    solver that steps joint coordinates: the constructor names the body. A consistent one (the FREE joint's
    ``joint_qd`` set too) gives no warning, and the body then moves with it."""
    b = newton.ModelBuilder(gravity=wp.vec3(0.0))
    inertia = wp.mat33(np.eye(3) * 1e-2)
    b.add_body(xform=wp.transform((0.0, 0.0, 1.0), wp.quat_identity()), mass=1.0, inertia=inertia, label="still")
    thrown = b.add_body(
        xform=wp.transform((0.0, 2.0, 1.0), wp.quat_identity()), mass=1.0, inertia=inertia, label="thrown"
    )
    b.body_qd[thrown] = (3.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    model = b.finalize()
    with pytest.warns(UserWarning, match=r"body 1 \('thrown'\) has a velocity in model.body_qd but none in"):
        newton_sap.SolverSAP(model)
    qd = model.joint_qd.numpy()
    qd[6:9] = (3.0, 0.0, 0.0)  # the FREE joint's [v_com, ω]
    model.joint_qd.assign(qd)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        solver = newton_sap.SolverSAP(model)
    assert not [w for w in record if "model.body_qd" in str(w.message)]
    state_0, state_1 = model.state(), model.state()
    solver.step(state_0, state_1, model.control(), None, 0.1)
    np.testing.assert_allclose(state_1.body_q.numpy()[thrown, :3], (0.3, 2.0, 1.0), atol=1e-6)


@pytest.mark.parametrize(
    ("mode", "ke", "kd"),
    [(newton.JointTargetMode.NONE, 200.0, 0.0), (newton.JointTargetMode.EFFORT, 200.0, 5.0),
     (newton.JointTargetMode.VELOCITY, 200.0, 0.0)],
)  # fmt: skip
def test_drive_gains_without_a_drive_mode_are_named_in_a_warning(mode, ke, kd):
    """Gains written after ``finalize`` (the builder inferred mode NONE from zero gains), or a VELOCITY drive given
    only ``ke``, drive nothing, as in SolverMuJoCo: the check names the joint, at construction and on
    ``notify_model_changed``; with a mode that uses them, no warning."""
    b = newton.ModelBuilder()
    link = b.add_link(mass=1.0, com=wp.vec3(0.2, 0.0, 0.0), inertia=wp.mat33(np.eye(3) * 0.01))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0, 1, 0), label="elbow")])
    model = b.finalize()
    model.joint_target_mode.assign(np.array([int(mode)], np.int32))
    solver = newton_sap.SolverSAP(model)
    model.joint_target_ke.assign(np.array([ke], np.float32))
    model.joint_target_kd.assign(np.array([kd], np.float32))
    with pytest.warns(UserWarning, match=r"uses none of them .* so no drive acts on joint 0 \('elbow'\)"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_PROPERTIES)
    with pytest.warns(UserWarning, match=r"no drive acts on joint 0 \('elbow'\)"):
        newton_sap.SolverSAP(model)
    model.joint_target_mode.assign(np.array([int(newton.JointTargetMode.POSITION)], np.int32))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(model)
    assert not [w for w in record if "no drive acts" in str(w.message)]


ACTUATED_MJCF = """
<mujoco>
  <worldbody>
    <body name="rotor" gravcomp="1">
      <joint name="spin" type="hinge" axis="0 0 1"/>
      <geom type="box" size="0.5 0.1 0.1" mass="1.0"/>
      <body name="arm">
        <joint name="lift" type="hinge" axis="0 1 0"/>
        <geom type="box" size="0.5 0.1 0.1" mass="1.0"/>
      </body>
      <body name="tip">
        <joint name="twist" type="hinge" axis="0 1 0"/>
        <geom type="box" size="0.5 0.1 0.1" mass="1.0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="spin" kp="100" dampratio="1" ctrlrange="-0.5 0.5"/>
    <position joint="lift" kp="100" kv="2"/>
    <general joint="twist" dyntype="filter" dynprm="0.1" gainprm="2" ctrlrange="-1 1"/>
    <motor joint="lift" gear="2"/>
    <velocity joint="spin" kv="3"/>
  </actuator>
</mujoco>
"""


def test_actuation_only_solver_mujoco_applies_is_named_in_warnings():
    """Newton's MJCF importer keeps a ``<general>`` actuator with activation dynamics (driven by
    ``control.mujoco.ctrl``) and the ctrlrange of a drive that a ``<velocity>`` on its joint makes POSITION_VELOCITY
    for SolverMuJoCo alone: each is named. A ``<position>`` actuator with plain gains is Newton's joint drive, a
    ``<motor>`` a force and a body's gravcomp a share of its weight, which SolverSAP applies: not named."""
    b = newton.ModelBuilder()
    b.add_mjcf(ACTUATED_MJCF)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(b.finalize())
    messages = [str(w.message) for w in record]
    assert [m for m in messages if re.match(r"actuator 2 \(joint '.*twist'\) is driven by control.mujoco.ctrl", m)]
    assert not [m for m in messages if "actuator 3" in m]
    ranged = [m for m in messages if "force or control ranges of" in m]
    assert len(ranged) == 1 and "spin" in ranged[0] and "lift" not in ranged[0]
    assert not [m for m in messages if "gravity compensation" in m or "gravcomp" in m]
