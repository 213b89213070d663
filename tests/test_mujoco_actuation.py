"""MuJoCo actuation SolverSAP applies: motors (MJCF ``<motor>``) and servos (``<position>``, ``<velocity>``, affine
``<general>``) driven by ``control.mujoco.ctrl``, and gravity compensation (``gravcomp``), against MuJoCo itself and
closed forms."""

import re

import newton
import newton.examples
import numpy as np
import pytest
import warp as wp

import newton_sap

pytest.importorskip("mujoco")

ZERO_GRAVITY = (0.0, 0.0, 0.0)


def mujoco_builder(gravity=None) -> newton.ModelBuilder:
    """A builder with SolverMuJoCo's custom attributes (which ``add_mjcf`` fills), ``gravity`` (default: Newton's)."""
    b = newton.ModelBuilder() if gravity is None else newton.ModelBuilder(gravity=gravity)
    newton.solvers.SolverMuJoCo.register_custom_attributes(b)
    return b


def mjcf_model(mjcf: str, worlds: int = 1, gravity=None, **add_mjcf_options) -> newton.Model:
    """``worlds`` copies of the MJCF model ``mjcf`` (text or a path), with SolverMuJoCo's custom attributes."""
    one = mujoco_builder(gravity)
    one.add_mjcf(mjcf, **add_mjcf_options)
    if worlds == 1:
        return one.finalize()
    scene = mujoco_builder(gravity)
    scene.replicate(one, worlds)
    return scene.finalize()


def hold_ctrl(model, solver, ctrl, dt: float, steps: int, target_q=None, target_qd=None):
    """The state after ``steps`` steps of ``dt`` from the model's initial state with ``control.mujoco.ctrl = ctrl``
    (none for None) and Newton's joint targets ``target_q``, ``target_qd`` where given."""
    s0, s1 = model.state(), model.state()
    control = model.control()
    for name, values in (("mujoco.ctrl", ctrl), ("joint_target_q", target_q), ("joint_target_qd", target_qd)):
        if values is not None:
            owner = control.mujoco if name == "mujoco.ctrl" else control
            getattr(owner, name.split(".")[-1]).assign(np.asarray(values, np.float32))
    for _ in range(steps):
        solver.step(s0, s1, control, None, dt)
        s0, s1 = s1, s0
    return s0


def ant_scene(worlds: int) -> newton.Model:
    """Newton's MJCF ant (8 hinge motors, gear 15, ctrlrange ±1) 1 m up, no gravity, ``worlds`` copies."""
    xform = wp.transform((0.0, 0.0, 1.0), wp.quat_identity())
    return mjcf_model(newton.examples.get_asset("nv_ant.xml"), worlds, ZERO_GRAVITY, xform=xform)


def step_from_mid_range(model, solver, ctrl, dt=1e-3):
    """``joint_qd`` after one step from rest with every hinge at the middle of its limits (no limit acts)."""
    s0, s1 = model.state(), model.state()
    q = s0.joint_q.numpy()
    hinge = model.joint_type.numpy() == newton.JointType.REVOLUTE
    dofs = model.joint_qd_start.numpy()[:-1][hinge]
    coords = model.joint_q_start.numpy()[:-1][hinge]
    q[coords] = 0.5 * (model.joint_limit_lower.numpy()[dofs] + model.joint_limit_upper.numpy()[dofs])
    s0.joint_q.assign(q)
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    control = model.control()
    control.mujoco.ctrl.assign(np.asarray(ctrl, np.float32))
    solver.step(s0, s1, control, None, dt)
    return s1.joint_qd.numpy()


def test_motors_move_the_ant_as_mujoco_does():
    """Two ant worlds, each with its own controls drawn in ±1.5 (past the ctrlrange ±1, so MuJoCo's clamp acts):
    one step of 1 ms from rest gives every world MuJoCo's velocities (MuJoCo's CPU build through SolverMuJoCo,
    one world at a time, contacts off), to float32 round-off (2.9e-7 of the largest)."""
    ctrl = np.random.default_rng(0).uniform(-1.5, 1.5, (2, 8))
    model = ant_scene(2)
    sap = step_from_mid_range(model, newton_sap.SolverSAP(model), ctrl.ravel())
    for world in range(2):
        model = ant_scene(1)
        solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True)
        reference = step_from_mid_range(model, solver, ctrl[world])
        ours = sap[world * 14 : (world + 1) * 14]
        assert np.abs(ours - reference).max() < 2e-6 * np.abs(reference).max(), (world, ours, reference)


def disk_mjcf(joint_attributes: str = "", actuator: str = "", option: str = "") -> str:
    """MJCF of a 2 kg disk of radius 0.2 m on a hinge (I = 0.04 kg·m²) without gravity, with the given attributes on
    its joint, actuator elements and ``<option>`` children."""
    return f"""
<mujoco>
  <option gravity="0 0 0">{option}</option>
  <worldbody>
    <body name="wheel">
      <joint name="axle" type="hinge" axis="0 0 1" {joint_attributes}/>
      <geom type="cylinder" size="0.2 0.05" mass="2.0"/>
    </body>
  </worldbody>
  <actuator>{actuator}</actuator>
</mujoco>
"""


def disk_on_hinge(joint_attributes: str = "", actuator: str = "", option: str = "") -> newton.Model:
    """The model of :func:`disk_mjcf`."""
    return mjcf_model(disk_mjcf(joint_attributes, actuator, option), gravity=ZERO_GRAVITY)


def spin_after_one_step(model, ctrl, dt=0.01):
    """The hinge's velocity [rad/s] after one step of ``dt`` from rest with ``control.mujoco.ctrl = ctrl``."""
    s0, s1 = model.state(), model.state()
    control = model.control()
    control.mujoco.ctrl.assign(np.asarray(ctrl, np.float32))
    newton_sap.SolverSAP(model).step(s0, s1, control, None, dt)
    return float(s1.joint_qd.numpy()[0])


@pytest.mark.parametrize("ctrl", [(0.4, 0.2), (3.0, 0.2), (-0.4, 2.0), (-2.0, -0.9)])
def test_motor_torques_are_gear_times_clamped_gain_times_clamped_ctrl(ctrl):
    """A 2 kg disk of radius 0.2 m on a hinge (I = ½ m r² = 0.04 kg·m²) with a ``<motor gear="2" ctrlrange="-1 1">``
    and a ``<general gainprm="3" forcerange="-1.5 1.5">`` with a constant bias 0.25 (affine, no position or velocity
    term; a ``jointinparent`` transmission, the same on a hinge): one step of 10 ms from rest spins it at
    ``Δt (2 clamp(u₁, ±1) + clamp(3 u₂ + 0.25, ±1.5)) / I``."""
    actuators = """
    <motor joint="axle" gear="2" ctrlrange="-1 1"/>
    <general jointinparent="axle" gainprm="3" biastype="affine" biasprm="0.25 0 0" forcerange="-1.5 1.5"/>"""
    torque = 2.0 * np.clip(ctrl[0], -1.0, 1.0) + np.clip(3.0 * ctrl[1] + 0.25, -1.5, 1.5)
    assert spin_after_one_step(disk_on_hinge("", actuators), ctrl) == pytest.approx(0.01 * torque / 0.04, rel=1e-5)


def test_a_ctrl_array_shorter_than_the_actuators_is_refused():
    model = ant_scene(1)
    solver = newton_sap.SolverSAP(model)
    control = model.control()
    control.mujoco.ctrl = wp.zeros(5, dtype=float, device=model.device)
    s0, s1 = model.state(), model.state()
    with pytest.raises(ValueError, match="control.mujoco.ctrl has 5 entries; the model has 8 MuJoCo actuators"):
        solver.step(s0, s1, control, None, 1e-3)


GRAVCOMP_MJCF = """
<mujoco>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1.5"/>
      <body name="lower" pos="0.4 0 0" gravcomp="1">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.8"/>
        <body name="hand" pos="0.3 0 0.1" gravcomp="0.5">
          <joint name="wrist" type="hinge" axis="1 0 0"/>
          <geom type="box" pos="0 0.05 0" size="0.05 0.05 0.02" mass="0.4"/>
        </body>
      </body>
    </body>
    <body name="drop" pos="2 0 1" gravcomp="0.25">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1.0"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_gravity_compensation_moves_an_arm_as_mujoco_does():
    """A three-link arm whose links cancel 0, 1 and ½ of their weight (``gravcomp``) and a ball cancelling ¼ of its
    own, released from rest under gravity: one step of 1 ms gives MuJoCo's velocities (CPU build through
    SolverMuJoCo, contacts off); the ball falls at ¾ g (closed form)."""
    model = mjcf_model(GRAVCOMP_MJCF)
    velocities = []
    mujoco_cpu = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True)
    for solver in (newton_sap.SolverSAP(model), mujoco_cpu):
        s0, s1 = model.state(), model.state()
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        solver.step(s0, s1, None, None, 1e-3)
        velocities.append(s1.joint_qd.numpy())
    ours, reference = velocities
    assert np.abs(ours - reference).max() < 1e-5 * np.abs(reference).max(), (ours, reference)
    assert ours[5] == pytest.approx(-0.75 * 9.81 * 1e-3, rel=1e-5)  # the ball's COM velocity, z


def test_the_joints_actuator_force_range_clamps_its_motors():
    """``actuatorfrcrange="-1 1"`` on the hinge (Newton's ``joint_effort_limit``, SolverMuJoCo's joint actuator force
    range) caps a ``<motor gear="10">`` at ctrl 1 to 1 N·m, as MuJoCo does (the helper review measured 10 before)."""
    model = disk_on_hinge('actuatorfrcrange="-1 1"', '<motor joint="axle" gear="10"/>')
    assert spin_after_one_step(model, [1.0]) == pytest.approx(0.01 * 1.0 / 0.04, rel=1e-5)


def test_clampctrl_disabled_leaves_the_control_unclamped():
    """``<flag clampctrl="disable"/>``: MuJoCo applies ctrl 3 past its ctrlrange ±1, so does SolverSAP."""
    model = disk_on_hinge("", '<motor joint="axle" gear="2" ctrlrange="-1 1"/>', '<flag clampctrl="disable"/>')
    assert spin_after_one_step(model, [3.0]) == pytest.approx(0.01 * 6.0 / 0.04, rel=1e-5)


def test_a_non_finite_control_fails_its_world_alone():
    """A NaN control of a motor with a ctrlrange in world 0 of two ant worlds: the clamp made it the range's bound
    (a finite torque, the world reported converged); now world 0 is flagged failed and world 1 steps as it does
    alone."""
    model = ant_scene(2)
    ctrl = np.random.default_rng(1).uniform(-1.0, 1.0, 16)
    clean = step_from_mid_range(model, newton_sap.SolverSAP(model), ctrl)
    ctrl[3] = np.nan
    solver = newton_sap.SolverSAP(model)
    qd = step_from_mid_range(model, solver, ctrl)
    assert solver.stats.failed.tolist() == [True, False]
    assert np.array_equal(qd[14:], clean[14:])


def test_routed_gravity_compensation_is_named():
    """A joint whose gravity compensation MuJoCo routes through its actuators (``actuatorgravcomp``) is named."""
    model = disk_on_hinge('actuatorgravcomp="true"', '<motor joint="axle" gear="2"/>')
    with pytest.warns(UserWarning, match=r"gravity compensation of joint 0 \('.*axle'\) is routed"):
        newton_sap.SolverSAP(model)


def test_routed_gravity_compensation_below_a_free_base_names_its_hinge():
    """``jnt_actgravcomp`` is per dof: on a hinge below a FREE base (dof 6 of joint 1) the warning names that hinge,
    where reading the flags by joint index named no joint."""
    mjcf = """
<mujoco>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.1" mass="1"/>
      <body name="link">
        <joint name="elbow" type="hinge" axis="0 1 0" actuatorgravcomp="true"/>
        <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.04" mass="1"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="elbow"/></actuator>
</mujoco>"""
    with pytest.warns(UserWarning) as record:
        newton_sap.SolverSAP(mjcf_model(mjcf))
    named = [str(w.message) for w in record if "gravity compensation" in str(w.message)]
    assert len(named) == 1 and re.match(r"gravity compensation of joint 1 \('.*elbow'\) is routed", named[0])


def test_a_motors_armature_and_damping_act_through_its_gear():
    """A ``<motor gear="2" damping="0.5" armature="0.1">`` on the disk (I = 0.04 kg·m²): MuJoCo adds ``g² a = 0.4``
    kg·m² to the mass matrix and ``g² d = 2`` N·m·s/rad of implicit damping, so one step of 10 ms from rest at ctrl 1
    spins it at ``Δt g u / (I + g² a + Δt g² d)``."""
    model = disk_on_hinge("", '<motor joint="axle" gear="2" damping="0.5" armature="0.1"/>')
    assert spin_after_one_step(model, [1.0]) == pytest.approx(0.01 * 2.0 / (0.44 + 0.01 * 2.0), rel=1e-6)


def native_mujoco_state(mjcf: str, ctrl, dt: float, steps: int) -> np.ndarray:
    """``[qpos, qvel]`` after ``steps`` steps of ``dt`` from the initial state of MuJoCo's own compiled ``mjcf`` (CPU
    build, its Euler integrator) with ``ctrl``."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf)
    m.opt.timestep = dt
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    for _ in range(steps):
        mujoco.mj_step(m, d)
    return np.concatenate([d.qpos, d.qvel])


def test_an_actuators_armature_gives_a_massless_slide_its_inertia():
    """A slide moving a massless body is refused without armature (a zero mass-matrix diagonal) and accepted with an
    actuator armature a = 0.25 kg through gear 2: one step of 10 ms at ctrl 1 moves it at ``Δt g u / (g² a)``."""
    mjcf = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="slider">
      <joint name="s" type="slide" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/>
    </body>
  </worldbody>
  <actuator><motor joint="s" gear="2" {}/></actuator>
</mujoco>"""
    with pytest.raises(newton_sap.ModelError, match=r"joint 0 \('.*s'\) moves only massless bodies"):
        newton_sap.SolverSAP(mjcf_model(mjcf.format(""), gravity=ZERO_GRAVITY))
    model = mjcf_model(mjcf.format('armature="0.25"'), gravity=ZERO_GRAVITY)
    assert spin_after_one_step(model, [1.0]) == pytest.approx(0.01 * 2.0 / (4.0 * 0.25), rel=1e-6)


@pytest.mark.parametrize(
    "actuator, ctrl_direct",
    [
        ('<motor joint="axle" gear="2" damping="0.5" armature="0.1"/>', True),
        ('<position joint="axle" kp="10" gear="1.5" damping="2" armature="0.04" dampratio="0.3"/>', False),
        ('<position joint="axle" kp="10" gear="1.5" damping="2" armature="0.04" dampratio="0.3"/>', True),
    ],
    ids=["motor", "imported-drive", "servo"],
)
def test_actuator_armature_and_damping_move_the_disk_as_mujoco_does(actuator, ctrl_direct):
    """The disk for 0.2 s under a motor (ctrl 1), a ``<position>`` imported as Newton's joint drive (target 1 rad) and
    the same driven by ctrl as a servo (ctrl 1.5, the length ``L = 1.5 q``), each with actuator damping and armature,
    the last two with a ``dampratio`` (whose reflected inertia includes the armature). The state is MuJoCo's to
    O(Δt), the gap halving with Δt (SolverSAP's implicit position term: 5.1e-3 and 1.7e-3 at Δt = 1 ms; the motor's
    1.3e-8, float32 round-off): MuJoCo's own compiled MJCF for the ctrl-driven actuators, and for the imported drive
    SolverMuJoCo's (CPU build), whose actuator acts in joint space as Newton's drive does, without the gear
    (SolverMuJoCo's compiled ``dampratio`` damping of the servo, 0.423, is not MuJoCo's own 0.456, which SolverSAP
    takes). Without the damping and armature the drive's q would be 1.36 rad after 0.2 s instead of 0.52."""
    mjcf = disk_mjcf("", actuator)
    model = mjcf_model(mjcf, gravity=ZERO_GRAVITY, ctrl_direct=ctrl_direct)
    ctrl, target = ([1.0], None) if "motor" in actuator else ([1.5], None) if ctrl_direct else ([0.0], [1.0])
    gaps = []
    for dt in (1e-3, 5e-4):
        steps = round(0.2 / dt)
        state = hold_ctrl(model, newton_sap.SolverSAP(model), ctrl, dt, steps, target_q=target)
        ours = np.concatenate([state.joint_q.numpy(), state.joint_qd.numpy()])
        if ctrl_direct:
            reference = native_mujoco_state(mjcf, ctrl, dt, steps)
        else:
            solver = newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True)
            state = hold_ctrl(model, solver, ctrl, dt, steps, target_q=target)
            reference = np.concatenate([state.joint_q.numpy(), state.joint_qd.numpy()])
        gaps.append(np.abs(ours - reference).max())
    assert gaps[0] < 1e-5 if "motor" in actuator else (gaps[0] < 1e-2 and gaps[1] < 0.55 * gaps[0]), gaps


@pytest.mark.parametrize("ctrl_direct", [False, True], ids=["imported-drive", "motor"])
def test_polynomial_actuator_damping_is_named_and_its_linear_term_applied(ctrl_direct):
    """``damping="d0 d1 d2"`` (``actuator_dampingpoly``) on a ``<motor>`` (driven by ctrl) and on a ``<position>``
    imported as Newton's joint drive: SolverSAP names its polynomial terms and applies the rest, the actuator's force
    and its linear damping d0 = 0.5 (through gear 2, and in joint space): one step of 10 ms from rest spins the disk
    (I = 0.04 kg·m²) at ``Δt g u / (I + Δt g² d0)`` at ctrl 1, and at ``Δt kp / (I + Δt² kp + Δt d0)`` toward a
    target of 1 rad (the implicit drive)."""
    actuator = '<motor joint="axle" gear="2"' if ctrl_direct else '<position joint="axle" kp="10"'
    model = disk_on_hinge("", actuator + ' damping="0.5 1 0"/>')
    dt = 0.01
    with pytest.warns(UserWarning, match=r"actuator damping or armature of actuator 0 \(joint '.*axle'\)"):
        solver = newton_sap.SolverSAP(model)
    if ctrl_direct:
        state = hold_ctrl(model, solver, [1.0], dt, 1)
        expected = dt * 2.0 / (0.04 + dt * 4.0 * 0.5)
    else:
        state = hold_ctrl(model, solver, None, dt, 1, target_q=[1.0])
        expected = dt * 10.0 / (0.04 + dt * dt * 10.0 + dt * 0.5)
    assert state.joint_qd.numpy()[0] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    "name, entry, value",
    [
        ("actuator_ctrlrange", (0, 1), np.nan),
        ("actuator_forcerange", (0, 0), 5.0),
        ("actuator_forcerange", (0, 0), 2.0),
        ("actuator_armature", 0, -0.1),
        ("actuator_damping", 0, np.nan),
    ],
    ids=["nan-ctrlrange", "inverted-forcerange", "empty-forcerange", "negative-armature", "nan-damping"],
)
def test_a_bad_actuator_value_is_refused_naming_the_actuator(name, entry, value):
    """A range MuJoCo clamps by with a NaN bound (a clamp would drop it and pin the force to the other bound) or its
    lower bound not below its upper (MuJoCo's compiler refuses both), and a negative or NaN actuator armature or
    damping (an indefinite mass matrix or step), are refused at construction and by ``notify_model_changed``."""
    actuator = '<motor joint="axle" ctrlrange="-1 1" forcerange="-2 2"/>'
    model = disk_on_hinge("", actuator)
    solver = newton_sap.SolverSAP(model)
    array = getattr(model.mujoco, name)
    values = array.numpy()
    values[entry] = value
    array.assign(values)
    kind = name.split("_")[1]
    with pytest.raises(newton_sap.ModelError, match=rf"actuator 0 \(joint '.*axle'\) has {kind}"):
        solver.notify_model_changed(newton.ModelFlags.ACTUATOR_PROPERTIES)
    with pytest.raises(newton_sap.ModelError, match=rf"actuator 0 \(joint '.*axle'\) has {kind}"):
        newton_sap.SolverSAP(model)


SERVO = '<general joint="axle" gear="2" gainprm="30" biastype="affine" biasprm="0.5 -30 -2" forcerange="-10 30"/>'
"""An affine servo on the disk's hinge: ``τ = 2 clamp(30 u + 0.5 − 30 L − 2 L̇, [−10, 30])`` with the actuator length
``L = 2 (q + ref)``."""


@pytest.mark.parametrize("ctrl", [0.3, 6.0, -6.0])
def test_a_servo_is_an_implicit_pd_drive_clamped_by_its_force_range(ctrl):
    """The servo on the disk (I = 0.04 kg·m², joint ``ref`` 20°, so MuJoCo's length has ``q + ref``) from q0 = 0.1,
    q̇0 = 0.5: one step of 10 ms gives the implicit PD step, ``I (v − v0) = Δt τ(q0 + Δt v, v)`` (Kp = 120, Kd = 8,
    the torque at q = q̇ = 0 ``2 (30 u + 0.5 − 60 ref)``) where τ is inside ``2 · [−10, 30]``, else ``v0 + Δt τ_bound /
    I``: inside at u = 0.3, at the upper bound at 6, at the lower at −6."""
    I, dt, q0, v0, ref = 0.04, 0.01, 0.1, 0.5, np.deg2rad(20.0)
    model = disk_on_hinge('ref="20"', SERVO)
    s0, s1 = model.state(), model.state()
    s0.joint_q.assign([q0])
    s0.joint_qd.assign([v0])
    control = model.control()
    control.mujoco.ctrl.assign([ctrl])
    newton_sap.SolverSAP(model).step(s0, s1, control, None, dt)
    kp, kd, u_ff = 120.0, 8.0, 2.0 * (30.0 * ctrl + 0.5 - 60.0 * ref)
    v = (I * v0 + dt * (u_ff - kp * q0)) / (I + dt * kd + dt * dt * kp)
    torque = u_ff - kp * (q0 + dt * v) - kd * v
    if not -20.0 <= torque <= 60.0:
        v = v0 + dt * np.clip(torque, -20.0, 60.0) / I
    assert s1.joint_qd.numpy()[0] == pytest.approx(v, rel=1e-5, abs=1e-5)
    inside = {0.3: True, 6.0: False, -6.0: False}[ctrl]
    assert (-20.0 <= torque <= 60.0) == inside


@pytest.mark.parametrize(
    "actuator, torque",
    [
        (SERVO, None),
        ('<general joint="axle" gainprm="3" biastype="affine" biasprm="0.25 0 0"/>', 0.25),
        ('<motor joint="axle" gear="2" ctrlrange="0.5 1"/>', 1.0),
    ],
    ids=["servo", "motor-with-bias", "motor-ctrlrange-without-0"],
)
def test_without_a_control_actuators_act_at_ctrl_zero(actuator, torque):
    """No ``control`` (MuJoCo's ``ctrl`` starts at 0): the servo, a motor with a constant bias 0.25 N·m and a motor
    of gear 2 whose ctrlrange [0.5, 1] clamps ctrl 0 to 0.5 act with u = 0, as a zero control does (the motors spin
    the disk at ``Δt τ / I``, τ = 0.25 and 1 N·m, as MuJoCo does)."""
    model = disk_on_hinge('ref="20"', actuator)
    spins = []
    for control in (None, model.control()):
        s0, s1 = model.state(), model.state()
        newton_sap.SolverSAP(model).step(s0, s1, control, None, 0.01)
        spins.append(float(s1.joint_qd.numpy()[0]))
    assert spins[0] == spins[1] != 0.0
    if torque is not None:
        assert spins[0] == pytest.approx(0.01 * torque / 0.04, rel=1e-5)


SERVO_ARM = """
<mujoco>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" ref="10"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1.5"/>
      <body name="lower" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.8"/>
        <body name="slider" pos="0.3 0 0.1">
          <joint name="slide" type="slide" axis="1 0 0"/>
          <geom type="box" size="0.05 0.05 0.02" mass="0.4"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="shoulder" gainprm="60" biastype="affine" biasprm="0 -60 -6" forcerange="-40 25"/>
    <position joint="elbow" kp="20" kv="1" gear="1.5"/>
    <velocity joint="slide" kv="8"/>
  </actuator>
</mujoco>
"""


def test_servos_move_an_arm_as_mujoco_does_to_first_order_in_dt():
    """An arm under gravity with an affine ``<general>`` servo (shoulder, ``ref`` 10°, an asymmetric force range), a
    ``<position>`` (elbow, gear 1.5) and a ``<velocity>`` servo (slide), imported with ``ctrl_direct=True`` so all
    three are driven by ctrl: after 0.4 s from rest the state differs from MuJoCo's (CPU build through SolverMuJoCo)
    by O(Δt), SolverSAP's implicit position term (and midpoint Coriolis forces) against MuJoCo's explicit ones:
    1.13e-2 at Δt = 1 ms (1.01e-2 with v̄ from the velocity products alone, until session 33), half that at 0.5 ms (a
    wrong ref, gear or sign would leave an O(1) gap)."""
    model = mjcf_model(SERVO_ARM, ctrl_direct=True)
    gaps = []
    for dt in (1e-3, 5e-4):
        states = []
        for solver in (
            newton_sap.SolverSAP(model),
            newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True),
        ):
            state = hold_ctrl(model, solver, [0.8, -0.5, 0.3], dt, round(0.4 / dt))
            states.append(np.concatenate([state.joint_q.numpy(), state.joint_qd.numpy()]))
        gaps.append(np.abs(states[0] - states[1]).max())
    assert gaps[0] < 1.2e-2 and gaps[1] < 0.55 * gaps[0], gaps


def test_a_stiff_position_servo_holds_a_link_against_gravity():
    """A 1 kg, 0.5 m link on a hinge held at ctrl 0.6 rad by a servo of Kp = 2000 N·m/rad, Kd = 20 N·m·s/rad
    stepped 3 s at Δt = 0.02: at rest where ``Kp (0.6 − q) = m g (l/2) cos q`` (to 1e-4 N·m of 2.0)."""
    mjcf = """
<mujoco>
  <worldbody>
    <body name="link" pos="0 0 1">
      <joint name="pivot" type="hinge" axis="0 -1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1.0"/>
    </body>
  </worldbody>
  <actuator><general joint="pivot" gainprm="2000" biastype="affine" biasprm="0 -2000 -20"/></actuator>
</mujoco>
"""
    model = mjcf_model(mjcf)
    state = hold_ctrl(model, newton_sap.SolverSAP(model), [0.6], 0.02, 150)
    q = float(state.joint_q.numpy()[0])
    assert abs(float(state.joint_qd.numpy()[0])) < 1e-5
    assert 2000.0 * (0.6 - q) == pytest.approx(9.81 * 0.25 * np.cos(q), abs=1e-4)


def test_a_non_finite_servo_control_fails_its_world_alone():
    """Two disk worlds with the servo, a NaN control in world 0: world 0 is flagged failed, world 1 steps as alone."""
    model = mjcf_model(disk_mjcf('ref="20"', SERVO), 2, ZERO_GRAVITY)
    spins = []
    for ctrl in ([0.3, 0.3], [np.nan, 0.3]):
        solver = newton_sap.SolverSAP(model)
        spins.append(hold_ctrl(model, solver, ctrl, 0.01, 1).joint_qd.numpy())
    assert solver.stats.failed.tolist() == [True, False]
    assert spins[1][1] == spins[0][1] != 0.0


def test_servos_left_out_are_named_and_a_newton_drive_takes_their_dof():
    """A second servo on the disk's hinge is named, and so is an affine actuator with a positive velocity term that is
    no position servo's ``dampratio`` (its gain is not ``−b1``); so is a servo on a dof that gains Newton's joint drive
    (``notify_model_changed``), which then acts in its place (a 10 N·m·s/rad velocity drive at 0 stops the disk
    spinning at 1 rad/s to ``I v0 / (I + Δt Kd)``)."""
    actuators = SERVO + '<general joint="axle" gainprm="5" biastype="affine" biasprm="0 -5 0"/>'
    actuators += '<general joint="axle" gainprm="4" biastype="affine" biasprm="0 -5 1"/>'
    with pytest.warns(UserWarning) as record:
        model = disk_on_hinge("", actuators)
        solver = newton_sap.SolverSAP(model)
    messages = [str(w.message) for w in record]
    assert [m for m in messages if re.match(r"actuator 2 \(joint '.*axle'\) is driven by control.mujoco.ctrl", m)]
    assert [m for m in messages if re.match(r"actuator 1 \(joint '.*axle'\) is a MuJoCo servo on a dof", m)]
    model.joint_target_mode.assign([int(newton.JointTargetMode.VELOCITY)])
    model.joint_target_kd.assign([10.0])
    with pytest.warns(UserWarning, match=r"actuator 0 \(joint '.*axle'\), actuator 1 .* are MuJoCo servos on a dof"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_PROPERTIES)
    s0, s1 = model.state(), model.state()
    s0.joint_qd.assign([1.0])
    solver.step(s0, s1, model.control(), None, 0.01)
    assert s1.joint_qd.numpy()[0] == pytest.approx(0.04 / (0.04 + 0.01 * 10.0), rel=1e-5)


@pytest.mark.parametrize(
    ("gain", "bias", "ctrl", "settled", "value"),
    [("1e7", "0 -1e7 -1e5", 0.5, "joint_q", 0.5), ("1e6", "0 0 -1e6", 1.0, "joint_qd", 1.0)],
)
def test_near_rigid_servos_keep_their_set_point(gain, bias, ctrl, settled, value):
    """Servos too stiff for Δt = 0.01 on the disk (Kp = 1e7 N·m/rad, or a velocity servo of Kd = 1e6 N·m·s/rad): the
    drive's near-rigid rescaling softens their gains, and they still settle at their set-point (the review measured
    q = 9.5 for 0.5 and q̇ = 63 for 1 when the set-point was a feed-forward force, which the rescaling left as it
    was)."""
    model = disk_on_hinge("", f'<general joint="axle" gainprm="{gain}" biastype="affine" biasprm="{bias}"/>')
    state = hold_ctrl(model, newton_sap.SolverSAP(model), [ctrl], 0.01, 100)
    assert float(getattr(state, settled).numpy()[0]) == pytest.approx(value, rel=1e-4)


def test_motors_and_a_servo_share_the_joints_effort_limit():
    """``actuatorfrcrange="-1 1"`` on the disk's hinge with a motor at 0.8 N·m and a servo pulling hard the same way:
    MuJoCo clamps their sum to 1 N·m, and so does SolverSAP (the servo's range narrowed by the motors' torque; the
    review measured 1.8 when each was clamped apart)."""
    actuators = '<motor joint="axle"/><general joint="axle" gainprm="30" biastype="affine" biasprm="0 -30 -2"/>'
    model = disk_on_hinge('actuatorfrcrange="-1 1"', actuators)
    assert spin_after_one_step(model, [0.8, 5.0]) == pytest.approx(0.01 * 1.0 / 0.04, rel=1e-5)
    assert spin_after_one_step(model, [0.8, -5.0]) == pytest.approx(0.01 * -1.0 / 0.04, rel=1e-5)


def test_a_servo_on_a_loop_closing_joint_is_named():
    """A servo whose dof belongs to a loop-closing joint (not one of the solver's tree dofs): named, not applied."""
    b = mujoco_builder(ZERO_GRAVITY)
    b.add_mjcf(disk_mjcf("", '<general joint="axle" gainprm="30" biastype="affine" biasprm="0 -30 -2"/>'))
    link = b.add_link(mass=1.0, inertia=wp.mat33(np.eye(3) * 0.01))
    b.add_articulation([b.add_joint_revolute(-1, link, axis=(0.0, 0.0, 1.0))])
    b.add_joint_revolute(link, 0, axis=(0.0, 0.0, 1.0))  # closes a loop: the disk has its own hinge
    model = b.finalize()
    trnid = model.mujoco.actuator_trnid.numpy()
    trnid[0, 0] = 2  # the loop joint's dof
    model.mujoco.actuator_trnid.assign(trnid)
    with pytest.warns(UserWarning, match=r"actuator 0 .* is driven by control.mujoco.ctrl"):
        newton_sap.SolverSAP(model)


DAMPRATIO_MJCF = """
<mujoco>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" armature="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" mass="1.5"/>
      <body name="lower" pos="0.4 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" ref="30"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.8"/>
      </body>
    </body>
    <body name="float" pos="2 0 1">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.1" mass="3"/>
      <body name="flap" pos="0.2 0 0">
        <joint name="flap" type="hinge" axis="0 0 1"/>
        <geom type="box" pos="0.15 0 0" size="0.15 0.05 0.02" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="shoulder" kp="40" dampratio="1"/>
    <position joint="elbow" kp="15" dampratio="0.7" gear="2"/>
    <position joint="flap" kp="5" dampratio="0.5"/>
  </actuator>
</mujoco>
"""


def test_dampratio_gives_mujocos_damping():
    """``<position dampratio>`` on an arm (armature, a joint ``ref``, gear 2) and on a flap hinged to a free body: as
    ctrl-driven servos, SolverSAP's damping is MuJoCo's own compiled ``−biasprm[2]`` (``2 ζ sqrt(kp m)``, m from
    ``(M⁻¹)_ii`` at qpos0); as Newton's joint drives (``joint_target_kd`` 0), it is the ``joint_target_kd`` that
    SolverMuJoCo writes into its model (to float32 round-off)."""
    import mujoco

    compiled = -mujoco.MjModel.from_xml_string(DAMPRATIO_MJCF).actuator_biasprm[:, 2]
    servos = newton_sap.SolverSAP(mjcf_model(DAMPRATIO_MJCF, ctrl_direct=True))
    assert servos._actuators.servo_dampratio_kv.numpy() == pytest.approx(compiled, rel=1e-5)
    drives = newton_sap.SolverSAP(mjcf_model(DAMPRATIO_MJCF))
    model = mjcf_model(DAMPRATIO_MJCF)
    newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True)
    written = model.joint_target_kd.numpy()
    assert written[[0, 1, 8]] == pytest.approx([compiled[0], 0.6315213, compiled[2]], rel=1e-5)
    assert drives._sap.dof_dampratio_kd.numpy() == pytest.approx(written, rel=1e-5)


@pytest.mark.parametrize("ctrl_direct", [False, True])
def test_a_critically_damped_position_drive_does_not_overshoot(ctrl_direct):
    """``<position kp="10" dampratio="1">`` on the disk (I = 0.04 kg·m²: Kd = 2 sqrt(Kp I) = 1.265 N·m·s/rad), as
    Newton's drive and as a ctrl-driven servo, moved to 0.5 rad from rest at Δt = 0.01: no overshoot past round-off,
    within 1e-3 rad of the target after 1.5 s (without the damping the drive would oscillate undamped)."""
    model = mjcf_model(disk_mjcf("", '<position joint="axle" kp="10" dampratio="1"/>'), ctrl_direct=ctrl_direct)
    solver = newton_sap.SolverSAP(model)
    s0, s1 = model.state(), model.state()
    control = model.control()
    if ctrl_direct:
        control.mujoco.ctrl.assign([0.5])
    else:
        control.joint_target_q.assign([0.5])
    peak = 0.0
    for _ in range(150):
        solver.step(s0, s1, control, None, 0.01)
        s0, s1 = s1, s0
        peak = max(peak, float(s0.joint_q.numpy()[0]))
    assert peak < 0.5 + 1e-5
    assert float(s0.joint_q.numpy()[0]) == pytest.approx(0.5, abs=1e-3)


def test_dampratio_on_a_singular_tree_or_a_velocity_drive_is_named():
    """A ``<position dampratio>`` servo below a massless body (its tree's mass matrix singular at qpos0): the solver is
    built, a warning names the tree's joints and the servo gets no damping; a ``<position dampratio>`` whose drive
    Newton's importer makes POSITION_VELOCITY (a ``<velocity>`` on the same joint) is named as not applied."""
    singular = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="h1" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/>
      <body name="b">
        <joint name="h2" type="hinge" axis="0 0 1"/>
        <geom type="box" size="0.1 0.1 0.1" pos="0.3 0 0" mass="1"/>
      </body>
    </body>
  </worldbody>
  <actuator><position joint="h2" kp="10" dampratio="1"/></actuator>
</mujoco>
"""
    model = mjcf_model(singular, ctrl_direct=True)
    with pytest.warns(UserWarning, match=r"the mass matrix of the tree of joint 0 .*, joint 1 .* is singular"):
        solver = newton_sap.SolverSAP(model)
    assert solver._actuators.servo_dampratio_kv.numpy().tolist() == [0.0]
    both = disk_mjcf("", '<position joint="axle" kp="10" dampratio="1"/><velocity joint="axle" kv="0.2"/>')
    with pytest.warns(UserWarning, match=r"the dampratio of actuator 0 \(joint '.*axle'\), joint drives imported"):
        newton_sap.SolverSAP(mjcf_model(both))


def one_step_spins_as_mujoco(model, ctrl, targets: dict, spin: float, rel: float) -> None:
    """One step of 10 ms from rest with ``ctrl`` and Newton's joint ``targets`` spins the disk at ``spin`` [rad/s]
    (to ``rel``) under SolverSAP and under SolverMuJoCo's CPU build."""
    for solver in (
        newton_sap.SolverSAP(model),
        newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True),
    ):
        state = hold_ctrl(model, solver, ctrl, 0.01, 1, **targets)
        assert float(state.joint_qd.numpy()[0]) == pytest.approx(spin, rel=rel)


@pytest.mark.parametrize(
    ("actuator", "targets", "spin"),
    [
        ('<position joint="axle" kp="100" forcerange="-0.5 2"/>', {"target_q": [1.0]}, 0.01 * 2.0 / 0.04),
        ('<position joint="axle" kp="100" forcerange="-0.5 2"/>', {"target_q": [-1.0]}, -0.01 * 0.5 / 0.04),
        ('<velocity joint="axle" kv="5" forcerange="-0.2 0.2" ctrlrange="-3 3"/>', {"target_qd": [10.0]}, 0.05),
        ('<velocity joint="axle" kv="1" ctrlrange="-3 3"/>', {"target_qd": [10.0]}, 0.01 * 3.0 / (0.04 + 0.01)),
    ],
)
def test_imported_drives_take_their_actuators_ranges(actuator, targets, spin):
    """Newton's joint drives imported from a ``<position>``/``<velocity>`` with a ``forcerange`` (asymmetric) or a
    ``ctrlrange``: one step of 10 ms from rest on the disk (I = 0.04 kg·m²) is clamped as MuJoCo clamps (SolverMuJoCo's
    CPU build gives the same): ``Δt τ_bound / I`` past the force range, and a velocity target of 10 rad/s taken as the
    ctrlrange's 3 (``Kd (3 − v) = I v / Δt``, Kd = 1 N·m·s/rad)."""
    model = mjcf_model(disk_mjcf("", actuator), gravity=ZERO_GRAVITY)
    one_step_spins_as_mujoco(model, None, targets, spin, rel=2e-3)


def test_an_imported_position_target_is_clamped_to_its_ctrlrange_past_the_joints_ref():
    """``<position kp="10" kv="2" ctrlrange="-0.3 0.3">`` on the disk's hinge with ``ref`` 20°: MuJoCo's ctrl is the
    Newton target plus ref, so a target of 1 rad is held at ``0.3 − ref`` (−0.049 rad), as SolverMuJoCo holds it."""
    model = mjcf_model(disk_mjcf('ref="20"', '<position joint="axle" kp="10" kv="2" ctrlrange="-0.3 0.3"/>'))
    held = []
    for solver in (
        newton_sap.SolverSAP(model),
        newton.solvers.SolverMuJoCo(model, use_mujoco_cpu=True, disable_contacts=True),
    ):
        held.append(float(hold_ctrl(model, solver, None, 0.01, 300, target_q=[1.0]).joint_q.numpy()[0]))
    assert held[0] == pytest.approx(0.3 - np.deg2rad(20.0), abs=1e-4)
    assert held[0] == pytest.approx(held[1], abs=1e-4)


@pytest.mark.parametrize(
    ("actuators", "ctrl", "spin"),
    [
        # a motor at 0.6 N·m and a drive pulling hard share actuatorfrcrange ±1 (drive without ranges)
        ('<position joint="axle" kp="100"/><motor joint="axle"/>', [0.0, 0.6], 0.01 * 1.0 / 0.04),
        # two <position>s on the dof: the last one's force range, as SolverMuJoCo takes it
        ('<position joint="axle" kp="100" forcerange="-0.5 0.5"/><position joint="axle" kp="100" forcerange="-2 2"/>',
         None, 0.01 * 2.0 / 0.04),
    ],
)  # fmt: skip
def test_imported_drives_share_the_effort_limit_and_take_the_last_actuators_range(actuators, ctrl, spin):
    """One step of 10 ms from rest toward a target of 1 rad on the disk with ``actuatorfrcrange="-2 2"`` (the second
    case) or ``"-1 1"``: as SolverMuJoCo's CPU build (the review measured 0.40 rad/s against 0.25 for the first case,
    0.125 against 0.5 for the second)."""
    limit = "-1 1" if "motor" in actuators else "-2 2"
    model = mjcf_model(disk_mjcf(f'actuatorfrcrange="{limit}"', actuators), gravity=ZERO_GRAVITY)
    one_step_spins_as_mujoco(model, ctrl, {"target_q": [1.0]}, spin, rel=2e-3)


def test_drive_ranges_follow_a_mode_change_and_unapplied_ones_are_named():
    """A ranged ``<position>`` drive switched to VELOCITY mode (``notify_model_changed`` with
    ``JOINT_DOF_FORCE_PROPERTIES``, Newton's flag for target modes) steps as a solver built after the change does
    (the review measured its velocity target clamped by the position's ranges); the ranges of a ``<position>`` that
    a ``<velocity>`` listed before it on the same joint makes POSITION_VELOCITY are named (the last actuator was
    missed)."""
    model = mjcf_model(
        disk_mjcf("", '<position joint="axle" kp="10" kv="1" forcerange="-0.05 0.05" ctrlrange="-0.3 0.3"/>')
    )
    solver = newton_sap.SolverSAP(model)
    model.joint_target_mode.assign([int(newton.JointTargetMode.VELOCITY)])
    with pytest.warns(UserWarning, match="force or control ranges of actuator 0"):
        solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_FORCE_PROPERTIES)
    spins = [
        hold_ctrl(model, s, None, 0.01, 1, target_qd=[2.0]).joint_qd.numpy()[0]
        for s in (solver, newton_sap.SolverSAP(model))
    ]
    assert spins[0] == spins[1] == pytest.approx(0.01 * 1.0 * 2.0 / (0.04 + 0.01 * 1.0), rel=1e-5)
    both = '<velocity joint="axle" kv="3"/><position joint="axle" kp="10" ctrlrange="-0.3 0.3"/>'
    with pytest.warns(UserWarning, match=r"force or control ranges of actuator 1 \(joint '.*axle'\)"):
        newton_sap.SolverSAP(mjcf_model(disk_mjcf("", both)))


@pytest.mark.parametrize(
    ("actuators", "ctrl", "targets", "spin"),
    [
        # a servo pulling down within forcerange [-2, 0.3] against a motor at 1.5 N·m past the limit ±1
        ('<general joint="axle" gainprm="100" biastype="affine" biasprm="0 -100 -1" forcerange="-2 0.3"/>'
         '<motor joint="axle"/>', [-1.0, 1.5], {}, -0.125),
        # a <velocity> drive within ±0.7 against a motor at -3 N·m
        ('<velocity joint="axle" kv="5" forcerange="-0.7 0.7"/><motor joint="axle"/>', [0.0, -3.0],
         {"target_qd": [10.0]}, -0.25),
    ],
)  # fmt: skip
def test_motors_past_the_effort_limit_and_a_ranged_drive_sum_as_in_mujoco(actuators, ctrl, targets, spin):
    """MuJoCo clamps each actuator by its own force range and the joint's sum by ``actuatorfrcrange`` (±1 here): with
    the motors alone past the limit, one step of 10 ms on the disk matches SolverMuJoCo's CPU build (the review
    measured −0.25 and −0.075 when the motors' sum was clamped first)."""
    model = mjcf_model(disk_mjcf('actuatorfrcrange="-1 1"', actuators), gravity=ZERO_GRAVITY)
    one_step_spins_as_mujoco(model, ctrl, targets, spin, rel=1e-5)


def test_a_graph_replays_after_servos_are_removed_and_warns_when_they_are_added():
    """Three disks, a servo on the second and the third: a step captured in a CPU graph replays right after the third
    servo becomes a motor (``notify_model_changed``; the review measured the first disk's motor cancelled); turning
    it back into a servo needs a launch the graph lacks, and a warning says to capture again."""
    actuators = '<general joint="axle" gainprm="30" biastype="affine" biasprm="0 -30 -2"/>'
    model = mjcf_model(disk_mjcf("", actuators), 3, ZERO_GRAVITY)
    solver = newton_sap.SolverSAP(model)
    control = model.control()
    control.mujoco.ctrl.assign([0.3, 0.3, 0.3])
    s0, s1 = model.state(), model.state()
    solver.step(s0, s1, control, None, 0.01)
    with wp.ScopedCapture(device="cpu") as capture:
        solver.step(s0, s1, control, None, 0.01)
    bias = model.mujoco.actuator_biasprm.numpy()
    bias[2, 1:3] = 0.0  # the third disk's servo is a motor now
    model.mujoco.actuator_biasprm.assign(bias)
    solver.notify_model_changed(newton.ModelFlags.ACTUATOR_PROPERTIES)
    wp.capture_launch(capture.graph)
    replayed = s1.joint_qd.numpy().copy()
    fresh = hold_ctrl(model, newton_sap.SolverSAP(model), [0.3, 0.3, 0.3], 0.01, 1).joint_qd.numpy()
    assert np.array_equal(replayed, fresh)
    bias[2, 1:3] = (-30.0, -2.0)
    model.mujoco.actuator_biasprm.assign(bias)
    with pytest.warns(UserWarning, match="MuJoCo actuators now need more launches per step"):
        solver.notify_model_changed(newton.ModelFlags.ACTUATOR_PROPERTIES)
