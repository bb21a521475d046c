"""Helpers of the app tests: the test protocol and where screenshots go."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.protocol_text import small_protocol_text

#: Where the app tests save their screenshots: a temporary folder, so that a test run leaves the
#: tracked docs/screenshots alone; ``VISIONTUNE_SCREENSHOTS=docs/screenshots pytest tests/app``
#: refreshes the README's pictures.
SCREENSHOTS = Path(os.environ.get("VISIONTUNE_SCREENSHOTS") or Path(tempfile.gettempdir()) / "visiontune-screenshots")


def write_protocol(folder: Path, max_trials: int = 40, lo: float = -1.0, hi: float = 2.0, name="app-test.toml") -> Path:
    path = folder / name
    path.write_text(
        small_protocol_text("app-test", purpose="the app tests", max_trials=max_trials, logmar=(lo, hi)),
        encoding="utf-8",
    )
    return path


def write_visit_protocol(
    folder: Path, max_trials: int = 8, logmar: tuple[float, float] | None = None, name: str = "visit-test.toml"
) -> Path:
    """``clinical-sloan`` (the optics model, any axis) stopping after ``max_trials`` answers
    (no minimum): a visit's two eyes in a few seconds. ``logmar``: the chart's range."""
    import re
    from importlib import resources

    text = (resources.files("visiontune") / "data" / "protocols" / "clinical-sloan.toml").read_text(encoding="utf-8")
    text = text.replace('name = "clinical-sloan"', 'name = "visit-test"')
    text = re.sub(r"max_trials = \d+", f"max_trials = {max_trials}", text)
    text = re.sub(r"min_trials = \d+", "min_trials = 0", text)
    if logmar is not None:
        text = re.sub(r"logmar = \[[^\]]*\]", f"logmar = [{logmar[0]}, {logmar[1]}]", text)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def write_line_protocol(
    folder: Path,
    max_trials: int = 10,
    logmar: tuple[float, float] = (0.0, 1.0),
    name: str = "lines-test.toml",
    seed: int = 3,
) -> Path:
    """The chart-line protocol (``clinical-sloan-lines-filed``: lines of 5 letters and 1-or-2
    comparisons) with ``max_trials`` answers, no minimum, 1000 particles, the chart's range
    ``logmar`` and ``seed`` (3: its simulated patient is asked lines at answers 1 and 5): a session
    of lines in a few seconds."""
    import re

    source = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-filed.toml"
    text = source.read_text(encoding="utf-8")
    text = text.replace('name = "clinical-sloan-lines-filed"', 'name = "lines-test"')
    text = re.sub(r"max_trials = \d+", f"max_trials = {max_trials}", text)
    text = re.sub(r"min_trials = \d+", "min_trials = 0", text)
    text = re.sub(r"n_particles = \d+", "n_particles = 1000", text)
    text = re.sub(r"^seed = \d+", f"seed = {seed}", text, flags=re.M)
    text = re.sub(r"logmar = \[[^\]]*\]", f"logmar = [{logmar[0]}, {logmar[1]}]", text)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path
