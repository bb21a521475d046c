"""A shipped protocol cut short for the validation command's tests."""

from __future__ import annotations

from pathlib import Path

from visiontune.refraction.protocol import load_protocol


def short_protocol(tmp_path: Path, base: str, trials: int) -> Path:
    """``base`` (a shipped protocol's name) renamed ``short``, at most ``trials`` answers and no minimum,
    written to ``tmp_path / "short.toml"``."""
    text = load_protocol(base).source_text.replace("max_trials = 120", f"max_trials = {trials}")
    text = text.replace("min_trials = 20", "min_trials = 0").replace(f'name = "{base}"', 'name = "short"')
    path = tmp_path / "short.toml"
    path.write_text(text)
    return path
