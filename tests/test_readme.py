"""The Python examples of the README run as written."""

import pathlib
import re

import numpy as np


def test_readme_python_examples_run():
    """The examples run in order in one namespace: stepping, then replaying a captured graph."""
    text = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2, "README has a stepping and a graph-capture example"
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["solver"].stats.converged.all()
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    assert namespace["solver"].stats.converged.all()
    assert np.isfinite(namespace["state_0"].joint_q.numpy()).all()
