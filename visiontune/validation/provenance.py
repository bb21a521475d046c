"""Where a results page's numbers came from: the machine, the code and the numerical libraries.

A benchmark run is a pure function of (rule, function, seed) and the software: the same install
replays a stored run bit for bit, while another NumPy or SciPy build agrees at first only to
rounding (1e-15) and the runs may then drift apart, since each answer is drawn from a probability
that the rounding moved. So every invocation of a sweep records :func:`software` beside its wall
time, and the pages print it (:func:`software_line`).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from visiontune import __version__
from visiontune.validation.parallel_runs import SweepSummary

__all__ = ["code_version", "command_line", "machine_description", "software", "software_line", "sweep_provenance"]


def command_line(subcommand: str) -> str:
    """The command a results page was made by: ``visiontune <subcommand>`` and the arguments it was
    given on the command line, or the bare subcommand when it was called from Python."""
    if sys.argv[1:2] == [subcommand]:
        return " ".join(["visiontune", subcommand, *sys.argv[2:]])
    return f"visiontune {subcommand}"


def machine_description() -> str:
    """``"<nproc> cores, <CPU model>, Python <version>"`` from ``os.cpu_count`` and ``/proc/cpuinfo``."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def code_version(package: Path | None = None) -> str:
    """``"commit <short hash>"`` of the checkout this package runs from (``", with uncommitted
    changes"`` when its code differs from the commit: results and docs being rewritten do not
    count), read with git's read-only commands; ``"unknown (not a git checkout)"`` otherwise (an
    installed copy: run sweeps from an editable install to have the commit recorded). ``package``:
    the package folder (default: visiontune's own)."""
    package = Path(__file__).resolve().parents[1] if package is None else Path(package).resolve()
    root = package.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", str(package)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return f"commit {head}" + (", with uncommitted changes" if dirty else "")


def software() -> dict[str, str]:
    """The versions that decide a run's numbers to the last bit: VisionTune (and its commit), Python,
    NumPy, SciPy."""
    import numpy
    import scipy

    return {
        "visiontune": __version__,
        "code": code_version(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
    }


def sweep_provenance(subcommand: str, wall_s: float, summary: SweepSummary) -> dict:
    """The head of a sweep's results metadata: its command (:func:`command_line`), machine, software,
    wall time ``wall_s`` (s) and the runs it made now and in all (``summary``)."""
    return {
        "command": command_line(subcommand),
        "machine": machine_description(),
        "software": software(),
        "wall_s": wall_s,
        "runs_now": summary.ran,
        "runs_total": summary.planned,
    }


def _describe(versions: dict) -> str:
    return (
        f"visiontune {versions.get('visiontune', '?')} ({versions.get('code', 'code not recorded')}), "
        f"Python {versions.get('python', '?')}, NumPy {versions.get('numpy', '?')}, SciPy {versions.get('scipy', '?')}"
    )


def software_line(wall: list[dict] | None) -> str:
    """``"- Software: ..."`` for a results page: the versions each invocation recorded in its wall-time
    entry (key ``software``), invocations with the same versions grouped, numbered from 1."""
    groups: dict[str, list[int]] = {}
    for i, entry in enumerate(wall or [], start=1):
        versions = entry.get("software")
        groups.setdefault(_describe(versions) if versions else "not recorded", []).append(i)
    if not groups:
        return "- Software: no invocation recorded."
    parts = [f"invocation{'s' if len(ns) > 1 else ''} {', '.join(map(str, ns))}: {text}" for text, ns in groups.items()]
    return (
        "- Software (the same versions replay a stored run bit for bit; other NumPy/SciPy builds agree to "
        "rounding, then may drift): " + "; ".join(parts) + "."
    )
