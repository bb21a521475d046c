"""The texts the session view shows, built without Qt (the engine process builds them too).

``lens_text`` and ``acuity_text`` are the clinician-facing formats (U+2212 minus signs,
U+00D7 times); :func:`estimate_texts` builds the three lines of the estimate panel from a
:class:`~visiontune.session.engine.CurrentEstimate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.optics import Prescription
from visiontune.optics.acuity_units import format_snellen

MINUS = "\u2212"


def lens_text(lens: Prescription) -> str:
    """``S −1.25 / C −0.50 × 180`` (U+2212 minus, U+00D7 times)."""
    return lens.format(unicode_minus=True).replace(" x ", " \u00d7 ")


def acuity_text(logmar: float, chart_range: tuple[float, float] | None = None) -> str:
    """``+0.30 logMAR (20/40)``; at an edge of ``chart_range`` (logMAR) the value is a bound, said so."""
    text = f"{logmar:+.2f} logMAR ({format_snellen(logmar)})"
    if chart_range is not None and logmar <= chart_range[0] + 1e-9:
        text = f"{chart_range[0]:+.2f} logMAR or better (the smallest letter of the chart)"
    elif chart_range is not None and logmar >= chart_range[1] - 1e-9:
        text = f"{chart_range[1]:+.2f} logMAR or worse (the largest letter of the chart)"
    return text.replace("-", MINUS)


@dataclass(frozen=True)
class EstimateTexts:
    """The estimate panel's three lines: best lens, credible interval ("" without a region),
    predicted acuity with its interval."""

    best_lens: str
    interval: str
    acuity: str


def estimate_texts(estimate, chart_range: tuple[float, float] | None) -> EstimateTexts:
    """The panel's lines for ``estimate`` (a :class:`~visiontune.session.engine.CurrentEstimate`);
    ``chart_range``: the protocol's logMAR range (an acuity at its edge is a bound)."""
    interval = ""
    if estimate.region is not None:
        r = estimate.region
        interval = (f"{round(100 * r.level)}% credible interval: sphere {r.sphere_d[0]:+.2f} to {r.sphere_d[1]:+.2f} D, "
                    f"cylinder {r.cylinder_d[0]:+.2f} to {r.cylinder_d[1]:+.2f} D").replace("-", MINUS)  # fmt: skip
    lo, hi = estimate.va_interval
    acuity = (f"Predicted acuity through it: {acuity_text(estimate.va_logmar, chart_range)}; "
              f"interval {lo:+.2f} to {hi:+.2f}").replace("-", MINUS)  # fmt: skip
    return EstimateTexts(f"Best lens now: {lens_text(estimate.lens)}", interval, acuity)
