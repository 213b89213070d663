"""The Python examples of the README run as written."""

import pathlib
import re

import numpy as np


def test_readme_python_examples_run():
    """The examples run in order in one namespace: stepping, observables, then replaying a captured graph."""
    text = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3, "README has a stepping, an observables and a graph-capture example"
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
        assert namespace["solver"].stats.converged.all()
    wrenches = namespace["wrenches"]
    assert len(wrenches) and np.isfinite(wrenches).all()
    weight = 9.81 * namespace["model"].body_mass.numpy().sum()  # 16 ants at rest: the ground carries their weight
    np.testing.assert_allclose(abs(wrenches[:, 2].sum()), weight, rtol=1e-3)
    assert np.isfinite(namespace["state_0"].joint_q.numpy()).all()
