"""Builders of the report tests: result dicts and answers following the store API.

The result follows the schema of :mod:`visiontune.refraction.result`; its posterior map is the
Blendowske acuity ``log10(1 + β²)`` of a known true correction on a small lens grid, so the
figures can be checked against independently computed values.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from visiontune.optics import Prescription
from visiontune.refraction.trial import Trial

TRUE_S, TRUE_C = -1.3, -0.6
MAP_SPHERE = [-3.0, -2.0, -1.0, 0.0, 1.0]
MAP_CYLINDER = [-2.0, -1.0, 0.0, 1.0]


def blendowske_va(s: float, c: float) -> float:
    ds, dc = s - TRUE_S, c - TRUE_C
    blur2 = 0.5 * (ds**2 + (ds + dc) ** 2)
    return math.log10(1.0 + blur2)


def make_result(**overrides) -> dict:
    """A schema-v1 result dict (rounded Rx S -1.25 / C -0.50 x 90, VA 0.12 logMAR)."""
    result = {
        "estimate": {"sphere_d": -1.3125, "cylinder_d": -0.5625, "axis_deg": 90.0},
        "rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0},
        "credible_interval": {"sphere_d": [-1.75, -0.875], "cylinder_d": [-1.0, -0.125]},
        "predicted_va_logmar": 0.12,
        "predicted_va_interval": [0.02, 0.31],
        "trials_used": 0,
        "duration_s": 754.0,
        "stopped_by": "budget",
        "acuity_curve": [[1, 0.9], [5, 0.6], [10, 0.35], [20, 0.12]],
        "posterior_map": {
            "sphere_d": MAP_SPHERE,
            "cylinder_d": MAP_CYLINDER,
            "va_logmar": [[blendowske_va(s, c) for c in MAP_CYLINDER] for s in MAP_SPHERE],
        },
    }
    result.update(overrides)
    return result


class FakeClock:
    """2026-03-04T09:00:00Z, then one second later at every call."""

    def __init__(self) -> None:
        self.t = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def trial_input(i: int, comparisons: bool = True) -> Trial:
    """A distinct answer per ``i``, trial ``i``: every 7th a duel, every 11th a comparison answered
    "=" (unless ``comparisons`` is False), every 5th a "don't know"."""
    comparison = comparisons and i % 11 == 10
    letters = "CDHKNORSVZ"
    correct = i % 3 != 0
    return Trial(
        index=i,
        s_logmar=round(0.05 * (i % 20) - 0.2, 2),
        lens=Prescription(-3.0 + 0.125 * (i % 33), -2.0 + 0.0625 * (i % 49), 90.0),
        letter_shown=letters[i % 10],
        letter_named=None if i % 5 == 4 else (letters[i % 10] if correct else letters[(i + 1) % 10]),
        correct=correct,
        lens2=Prescription(0.25, -0.25, 45.5)
        if i % 7 == 6
        else (Prescription(-0.5, -0.75, 10.0) if comparison else None),
        comparison="=" if comparison else None,
    )
