"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import contextlib
import os
import pickle
import platform
import subprocess
import sys
import sysconfig
import tempfile
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable

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


def run_jobs_in_children(script: str, jobs: list, args, crashed: Callable[[tuple, str], list]) -> list:
    """Run ``jobs`` in order in child processes ``python script --worker DIR``: the child reads
    ``DIR/jobs.pkl`` (``(jobs, args)``) and writes each job's list of rows to ``DIR/<index>.pkl`` as soon
    as it is done. A job that takes its process down (a native abort, which Python cannot catch) gets
    ``crashed(job, reason)`` as its rows, the reason ending with the child's last stderr lines, and the
    remaining jobs go on in a fresh process. Returns all rows in job order."""
    rows: list = []
    pending = list(jobs)
    while pending:
        with tempfile.TemporaryDirectory(prefix=os.path.splitext(os.path.basename(script))[0] + "_") as job_dir:
            with open(os.path.join(job_dir, "jobs.pkl"), "wb") as f:
                pickle.dump((pending, args), f)
            proc = subprocess.run(
                [sys.executable, os.path.abspath(script), "--worker", job_dir], stderr=subprocess.PIPE, text=True
            )
            sys.stderr.write(proc.stderr)
            done = 0
            while os.path.exists(os.path.join(job_dir, f"{done}.pkl")):
                with open(os.path.join(job_dir, f"{done}.pkl"), "rb") as f:
                    rows += pickle.load(f)
                done += 1
        if done < len(pending):
            tail = " ".join(" ".join(proc.stderr.strip().splitlines()[-2:]).split())
            code = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
            print(f"{' '.join(map(str, pending[done]))}: process died ({code})", flush=True)
            rows += crashed(pending[done], f"process died ({code}): {tail[-300:]}")
            done += 1
        pending = pending[done:]
    return rows
