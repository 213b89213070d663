"""What a run records or shows (``--viewer``): Newton's viewer backends, by name.

``file`` writes ``recording.json`` (Newton's ``ViewerFile``), ``usd`` ``recording.usd`` (``ViewerUSD``, needs
usd-core), ``rerun`` ``recording.rrd`` (``ViewerRerun``, needs rerun-sdk), ``gl`` opens a live window
(``ViewerGL``, needs pyglet and a display), ``none`` shows and records nothing. :func:`viewer_unavailable` says in
one line why a backend cannot run here, so the command line refuses before any work.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import newton
import newton.viewer

VIEWERS = ("file", "usd", "rerun", "gl", "none")
"""The ``--viewer`` values."""

RECORDING_FILES = {"file": "recording.json", "usd": "recording.usd", "rerun": "recording.rrd"}
"""The file each recording backend writes into the output folder."""

_REQUIREMENTS = {  # viewer: (module, package, what to pip install)
    "usd": ("pxr", "usd-core", "usd-core"),
    "rerun": ("rerun", "rerun-sdk", "rerun-sdk"),
    "gl": ("pyglet", "pyglet", "'pyglet<3'"),
}


def module_available(name: str) -> bool:
    """Whether the module ``name`` can be imported (without importing it)."""
    return importlib.util.find_spec(name) is not None


def display_available() -> bool:
    """Whether a window can be opened: always on macOS and Windows, elsewhere when an X11 or Wayland display is
    set."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def viewer_unavailable(kind: str) -> str | None:
    """One line saying why ``--viewer kind`` cannot run on this machine, or None when it can."""
    if kind in _REQUIREMENTS:
        module, package, pip_argument = _REQUIREMENTS[kind]
        if not module_available(module):
            return f"--viewer {kind} needs {package}: pip install {pip_argument}"
    if kind == "gl" and not display_available():
        return "--viewer gl needs a display (DISPLAY is not set); record with --viewer usd or file instead"
    return None


def make_viewer(kind: str, recording: str | None, fps: float) -> newton.viewer.ViewerBase | None:
    """The Newton viewer for ``--viewer kind`` (one of :data:`VIEWERS`).

    Args:
        kind: The backend's name.
        recording: Path of the file a recording backend writes; None: ``file``, ``usd`` and ``rerun`` record
            nothing (``gl`` needs no path).
        fps: Frames per simulated second the caller logs (the USD stage's time codes per second).

    Returns:
        The viewer (its model not set yet), or None when nothing is recorded or shown.
    """
    if kind not in VIEWERS:
        raise ValueError(f"unknown viewer {kind!r}; valid: {', '.join(VIEWERS)}")
    if kind == "gl":
        return newton.viewer.ViewerGL()
    if kind == "none" or recording is None:
        return None
    if kind == "file":
        return newton.viewer.ViewerFile(recording)
    if kind == "usd":
        return newton.viewer.ViewerUSD(recording, fps=fps, num_frames=None)
    # Outside a notebook Newton 1.8's ViewerRerun also serves Rerun's web viewer (and opens a browser), which
    # replaces the file sink: the .rrd would get no frames (rerun-sdk 0.41). Construct it as in a notebook, where it
    # only writes the file.
    from newton._src.viewer import viewer_rerun

    in_notebook = viewer_rerun.is_jupyter_notebook
    viewer_rerun.is_jupyter_notebook = lambda: True
    try:
        return newton.viewer.ViewerRerun(app_id="newton-sap", record_to_rrd=recording, keep_historical_data=True)
    finally:
        viewer_rerun.is_jupyter_notebook = in_notebook
