"""Helpers of the app tests: the test protocol and where screenshots go."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PROTOCOL_TEXT = """
name = "app-test"
description = "small fixed-hyperparameter protocol for the app tests"
policy = "ucb-ald"
seed = 11
initial_random_trials = 3

[search_space]
sphere_d = [-4.0, 4.0]
cylinder_d = [-4.0, 4.0]
axis_deg = 90.0

[context_space]
logmar = [{lo}, {hi}]

[letters]
set = "sloan"
n_alternatives = 10

[stopping]
max_trials = {max_trials}

[model]
kernel = "refraction-se"
hyperparameters = {{ theta = 25.0, lengthscales = [2.0, 2.0], variance = 9.0 }}
"""

#: Where the app tests save their screenshots: a temporary folder, so that a test run leaves the
#: tracked docs/screenshots alone; ``VISIONTUNE_SCREENSHOTS=docs/screenshots pytest tests/app``
#: refreshes the README's pictures.
SCREENSHOTS = Path(os.environ.get("VISIONTUNE_SCREENSHOTS") or Path(tempfile.gettempdir()) / "visiontune-screenshots")


def write_protocol(folder: Path, max_trials: int = 40, lo: float = -1.0, hi: float = 2.0, name="app-test.toml") -> Path:
    path = folder / name
    path.write_text(PROTOCOL_TEXT.format(max_trials=max_trials, lo=lo, hi=hi), encoding="utf-8")
    return path
