"""MuJoCo model settings that Newton's MJCF importer keeps in ``model.mujoco`` for SolverMuJoCo
(``newton_sap/mujoco_options.py``): a ``condim`` of 1 makes contacts frictionless, as in MuJoCo; the MuJoCo-only
physics SolverSAP does not model is named in warnings."""

import re
import warnings

import newton
import pytest

import newton_sap

pytest.importorskip("mujoco")


def sliding_box_mjcf(box: str, floor: str) -> str:
    """A 1 kg box of 10 cm resting on a plane, with the given geom attributes (μ = 1 on both)."""
    return f"""
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" {floor}/>
    <body name="box" pos="0 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1" {box}/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize(
    "box, floor, frictionless",
    [
        ('condim="1"', 'condim="1"', True),
        ('condim="1"', "", False),
        ('condim="1" priority="1"', "", True),
        ("", 'condim="1" priority="1"', True),
        ('condim="1"', 'priority="1"', False),
    ],
    ids=["both-1", "larger-3", "box-first", "floor-first", "floor-first-3"],
)
def test_a_pair_of_condim_1_slides_without_friction(box, floor, frictionless):
    """The box pushed to 2 m/s along the plane for 0.1 s (Δt 2 ms): where the pair's MuJoCo contact dimension is 1
    (the higher-priority geom's condim, the larger of the two at equal priority) it keeps its speed, as in MuJoCo;
    otherwise friction (μ = 1) slows it by about μ g t ≈ 1 m/s."""
    builder = newton.ModelBuilder()
    builder.add_mjcf(sliding_box_mjcf(box, floor))
    model = builder.finalize()
    solver = newton_sap.SolverSAP(model)
    pipeline = newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1 = model.state(), model.state()
    qd = s0.joint_qd.numpy()
    qd[0] = 2.0
    s0.joint_qd.assign(qd)
    for _ in range(50):
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, None, contacts, 0.002)
        s0, s1 = s1, s0
    vx = s0.joint_qd.numpy()[0]
    assert vx == pytest.approx(2.0, abs=1e-5) if frictionless else vx < 1.1, vx


MUJOCO_ONLY = {
    "tendon": ("""<tendon><fixed name="coupling" limited="true" range="-0.2 0.2">
                    <joint joint="hinge" coef="1"/></fixed></tendon>""", r"tendon 0 \('coupling'\) \(MuJoCo tendons"),
    "pair": ('<contact><pair geom1="floor" geom2="link" friction="0.05 0.05 0.005 0.0001 0.0001"/></contact>',
             r"<contact><pair> overrides"),
    "margin": ("", r"joint-limit margins of joint 0 \('.*hinge'\)"),
    "fluid": ('<option density="1.2" viscosity="1e-5"/>', r"fluid forces \(<option density viscosity>\)"),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(MUJOCO_ONLY))
def test_mujoco_only_physics_is_named(kind):
    """A fixed tendon with a limit, a ``<contact><pair>``, a joint-limit ``margin`` and fluid forces: SolverMuJoCo
    applies them, SolverSAP (like Featherstone) does not, and a warning says so; none without them."""
    extra, pattern = MUJOCO_ONLY[kind]
    margin = 'margin="0.1"' if kind == "margin" else ""

    def model_with(extra: str, margin: str):
        mjcf = f"""
<mujoco>
  {extra if kind == "fluid" else ""}
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" range="-1 1" limited="true" {margin}/>
      <geom name="link" type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" mass="1"/>
    </body>
  </worldbody>
  {extra if kind != "fluid" else ""}
</mujoco>"""
        builder = newton.ModelBuilder()
        builder.add_mjcf(mjcf)
        return builder.finalize()

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(model_with(extra, margin))
    named = [str(w.message) for w in record if "SolverSAP does not model" in str(w.message)]
    assert len(named) == 1 and re.search(pattern, named[0]), named
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        newton_sap.SolverSAP(model_with("", ""))
    assert not [w for w in record if "SolverSAP does not model" in str(w.message)]
