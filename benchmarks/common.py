"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import contextlib
import os
import platform
import sysconfig
import traceback
import xml.etree.ElementTree as ET

import newton


def newton_asset(filename: str) -> str:
    """Path of a file in Newton's bundled ``examples/assets`` directory."""
    return os.path.join(os.path.dirname(newton.__file__), "examples", "assets", filename)


def example_robot_data(relpath: str) -> str:
    """Path of a file in the installed example-robot-data (cmeel) ``robots`` directory."""
    base = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")
    path = os.path.join(base, relpath)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found (pip install example-robot-data)")
    return path


def dynamics_only_urdf(src: str, out_dir: str, fixed_joints: tuple[str, ...] = ()) -> str:
    """Write a copy of URDF ``src`` into ``out_dir`` without ``<visual>``/``<collision>`` elements (Newton would
    need ``trimesh`` for their meshes; dynamics only use ``<inertial>``), with the joints named in
    ``fixed_joints`` turned into fixed joints (their ``<mimic>`` removed), and return its path."""
    tree = ET.parse(src)
    root = tree.getroot()
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    found = set()
    for joint in root.iter("joint"):
        if joint.get("name") in fixed_joints:
            joint.set("type", "fixed")
            for e in joint.findall("mimic"):
                joint.remove(e)
            found.add(joint.get("name"))
    missing = set(fixed_joints) - found
    if missing:
        raise ValueError(f"{src} has no joint(s) {sorted(missing)}")
    path = os.path.join(out_dir, os.path.basename(src))
    tree.write(path)
    return path


def cpu_name() -> str:
    """The CPU model name (``/proc/cpuinfo``), for the report."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def error_text(exc: BaseException) -> str:
    """One line: exception type, message and the innermost frame."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" ({os.path.basename(tb[-1].filename)}:{tb[-1].lineno})" if tb else ""
    msg = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {msg[:300]}{where}"
