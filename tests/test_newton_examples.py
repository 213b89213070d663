"""Newton's own example scenes stepped by SolverSAP in place of their solver, judged by their own checks.

Each example builds its model, collision pipeline, control and schedule as Newton ships it; the test replaces
its solver by a SolverSAP with its defaults (observables the example requests are allocated again for it), steps
the frames Newton's example tests run, and calls the example's per-frame check (``test_post_step``) and final
check (``test_final``): its success criteria, e.g. boxes carried round a kinematic conveyor belt, pyramids and a
domino spiral standing, a Dzhanibekov flip without energy gain, mimic joints tracking, an omniwheel robot
through its drive phases, a 100 m/s projectile breaking a brick wall through speculative contacts and scheduled
collision (20 frames; its velocity is set in ``body_qd`` alone, so the test checks SolverSAP's warning and sets
``joint_qd`` by ``newton.eval_ik``), Newton's IMU reading gravity on resting cubes from ``BODY_QDD`` (the example
relies on SolverMuJoCo's own collision detection: the test runs Newton's pipeline before each step).

Left out: ``basic_shapes``, whose rest heights allow 0.2 mm of penetration (XPBD's rigid contact): SAP's default
contact stiffness, 1e6 N/m, lets its 524 kg sphere sink m g / k = 5.1 mm, by design (README); ``newton_cradle``,
whose point is restitution (not modelled: README); examples that download assets or need CUDA; deformables
(cloth, cables, MPM, soft bodies), which SolverSAP does not step.
"""

import importlib

import newton
import newton.examples
import newton.viewer
import pytest

import newton_sap

EXAMPLES = {  # example module: frames and options, as in Newton's example tests (tests/test_examples.py)
    "basic.example_basic_conveyor": (100, []),
    "basic.example_basic_conveyor_forces": (100, []),
    "basic.example_basic_dzhanibekov": (230, []),
    "basic.example_basic_heightfield": (120, []),
    "basic.example_basic_joints": (100, []),
    "basic.example_basic_mimic_joint": (120, []),
    "basic.example_basic_pendulum": (100, []),
    "basic.example_basic_urdf": (200, ["--world-count", "16"]),
    "contacts.example_adaptive_collision": (20, []),  # a 100 m/s projectile, speculative contacts, scheduled collision
    "contacts.example_balance_bird": (60, []),
    "contacts.example_domino_spiral": (60, []),
    "contacts.example_pyramid": (120, ["--num-pyramids", "3", "--pyramid-size", "5"]),
    "robot.example_robot_omniwheel": (500, []),  # built with SolverMuJoCo first: needs mujoco-warp (test extra)
    "sensors.example_sensor_imu": (200, []),  # Newton's SensorIMU reads BODY_QDD; needs mujoco-warp
}
COLLIDES_IN_ITS_SOLVER = {"sensors.example_sensor_imu"}  # written for SolverMuJoCo's own collision detection
SETS_BODY_VELOCITIES = {"contacts.example_adaptive_collision"}  # body_qd alone (XPBD): joint_qd from newton.eval_ik


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_newton_example_passes_its_checks_with_sap(name):
    frames, options = EXAMPLES[name]
    module = importlib.import_module(f"newton.examples.{name}")
    make_parser = getattr(module.Example, "create_parser", newton.examples.create_parser)
    args = make_parser().parse_args(["--viewer", "null", "--num-frames", str(frames), "--test", *options])
    example = module.Example(newton.viewer.ViewerNull(num_frames=frames), args)
    if name in SETS_BODY_VELOCITIES:
        with pytest.warns(UserWarning, match="a velocity in model.body_qd but none in their joints' joint_qd"):
            solver = example.solver = newton_sap.SolverSAP(example.model)
        newton.eval_ik(example.model, example.state_0, example.state_0.joint_q, example.state_0.joint_qd)
    else:
        solver = example.solver = newton_sap.SolverSAP(example.model)
    example.graph = None  # a graph captured with Newton's solver (on CUDA) would replay that solver
    if name in COLLIDES_IN_ITS_SOLVER:  # its pipeline only sized the contact buffer: collide before each step
        sap_step = solver.step
        solver.step = lambda state_in, *args, **kw: (
            example.collision_pipeline.collide(state_in, example.contacts),
            sap_step(state_in, *args, **kw),
        )
    # observables belong to the solver that allocated them: one container of SolverSAP's for all of the example's,
    # which get its selections, so that arrays the example shared (``Observables.select``) stay shared
    owned = {attr: value for attr, value in vars(example).items()
             if isinstance(value, newton.solvers.SolverBase.Observables)}  # fmt: skip
    if owned:
        kinds = set().union(*(value.kinds for value in owned.values())) & solver.supported_observables
        contacts = next((value.contacts for value in owned.values() if value.contacts is not None), None)
        container = solver.observables(kinds, contacts=contacts)
        for attr, value in owned.items():
            setattr(example, attr, container.select(value.kinds & solver.supported_observables))
    for _ in range(frames):
        example.step()
        if hasattr(example, "test_post_step"):
            example.test_post_step()
    example.test_final()
    assert not solver.stats.failed.any()
