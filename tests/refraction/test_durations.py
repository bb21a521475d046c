"""The default durations of a letter, a comparison and a slider live in one place.

:mod:`visiontune.refraction.durations` derives them from published timings; the settings'
defaults, the protocol reader's defaults and the shipped protocol's values must be those
constants, so that changing one of them cannot leave another behind.
"""

from __future__ import annotations

from pathlib import Path

from visiontune.refraction import durations
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.slider import SliderSettings


def test_the_defaults_are_the_durations_module_and_the_protocol_files_agree():
    """One place: the settings' defaults, the protocol reader's defaults and the shipped
    protocol's values are :mod:`visiontune.refraction.durations`."""
    assert MixedSettings().letter_seconds == durations.LETTER_SECONDS
    assert MixedSettings().comparison_seconds == durations.COMPARISON_SECONDS
    assert SliderSettings().slider_seconds == durations.SLIDER_SECONDS
    shipped = load_protocol("clinical-sloan-compare").comparisons
    assert (shipped.letter_seconds, shipped.comparison_seconds) == (
        durations.LETTER_SECONDS,
        durations.COMPARISON_SECONDS,
    )
    text = load_protocol("clinical-sloan-compare").source_text
    for key in ("letter_seconds", "comparison_seconds"):
        text = "\n".join(line for line in text.splitlines() if not line.startswith(key))
    read = parse_protocol(text, source="test").comparisons  # the reader's own defaults
    assert (read.letter_seconds, read.comparison_seconds) == (durations.LETTER_SECONDS, durations.COMPARISON_SECONDS)


def test_the_validation_protocols_use_the_defaults():
    """The protocols of the stored validation runs (docs/results/protocols) state the defaults."""
    root = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols"
    for name in (
        "clinical-sloan-compare-sliders.toml",
        "clinical-sloan-compare-over-minus-guard.toml",
        "clinical-sloan-compare-sliders-evr-precision.toml",
        "clinical-sloan-compare-evr-precision.toml",
        "clinical-sloan-compare-evr.toml",
        "clinical-sloan-compare-sliders-evr-stop.toml",
        "clinical-sloan-compare-reach-1.5.toml",
        "clinical-sloan-compare-trial-frame.toml",
    ):
        protocol = load_protocol(str(root / name))
        assert (protocol.comparisons.letter_seconds, protocol.comparisons.comparison_seconds) == (
            durations.LETTER_SECONDS,
            durations.COMPARISON_SECONDS,
        ), name
    sliders = load_protocol(str(root / "clinical-sloan-compare-sliders.toml")).sliders
    assert sliders.slider_seconds == durations.SLIDER_SECONDS
