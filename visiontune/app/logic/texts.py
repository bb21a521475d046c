"""The texts the session view shows, built without Qt (the engine process builds them too).

``lens_text`` and ``acuity_text`` are the clinician-facing formats (U+2212 minus signs,
U+00D7 times, the axis in three digits as prescriptions write it); ``region_text`` the
credible region as a clinician reads it, "S ±x / C ±y / axis ±z°"; ``start_text``,
``answers_text`` (the session's one count of answers), ``progress_text``, ``attention_text`` (a run of
lapses read in the answers) and ``stop_text`` the session panel's lines; :func:`estimate_texts` builds
the lines of the estimate panel from a :class:`~visiontune.refraction.estimate.CurrentEstimate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.optics import Prescription
from visiontune.optics.acuity_units import format_snellen
from visiontune.optics.notation import rx_text
from visiontune.refraction.lenses import in_form

MINUS = "\u2212"


def lens_text(lens: Prescription, kind: str | None = None) -> str:
    """``S −1.25 / C −0.50 × 030`` in the one notation (:func:`visiontune.optics.notation.rx_text`:
    U+2212 minus, U+00D7 times, plano and DS, the axis in three digits); a value off the
    trial-lens steps is marked ``(not a trial lens)``, ``kind`` naming it."""
    return rx_text(lens, unicode=True, kind=kind)


def rx_from_dict(data) -> Prescription | None:
    """A prescription stored as ``{"sphere_d", "cylinder_d", "axis_deg"}`` (a session result),
    or None."""
    if not data:
        return None
    axis = data.get("axis_deg")
    return Prescription(
        float(data["sphere_d"]), float(data["cylinder_d"]), 180.0 if axis is None else float(axis) or 180.0
    )


def _half_width(interval) -> float:
    return 0.5 * abs(float(interval[1]) - float(interval[0]))


def region_text(region, lens: Prescription | None = None) -> str:
    """``S ±0.25 / C ±0.25 / axis ±10°`` for a credible region (a
    :class:`~visiontune.refraction.estimate.Region` or its ``to_dict()``, e.g. a result's
    ``credible_interval``): the half-widths of its sphere and cylinder intervals and its axis
    ± (omitted when it has none, or when ``lens`` has no cylinder)."""
    get = region.get if isinstance(region, dict) else lambda k, d=None: getattr(region, k, d)
    text = f"S \u00b1{_half_width(get('sphere_d')):.2f} / C \u00b1{_half_width(get('cylinder_d')):.2f}"
    axis_pm = get("axis_pm_deg")
    if axis_pm is not None and (lens is None or abs(lens.cylinder_d) > 1e-9):
        text += f" / axis \u00b1{min(90.0, float(axis_pm)):.0f}\u00b0"
    return text


def start_text(start, cylinder_form: str | None = None) -> str:
    """The starting point: ``S −2.00 / C −1.00 × 030 (autorefraction, age 45)`` (in
    ``cylinder_form`` when given), or ``none``."""
    if start is None or start.rx is None:
        return "none"
    age = "" if start.age_years is None else f", age {start.age_years:.0f}"
    rx = start.rx if cylinder_form is None else in_form(start.rx, cylinder_form)
    return f"{lens_text(rx)} ({SOURCE_NAMES.get(start.source, start.source)}{age})"


#: How each stop reason (:data:`~visiontune.refraction.loop.STOP_REASONS`) reads on screen.
STOP_MEANINGS = {
    "budget": "every answer of the budget is used",
    "precision": "the protocol's precision stop: the credible region within its limits, or the lens to file "
    "within 0.25 D as likely as it asks",
    "information": "the next answer would teach almost nothing",
    "clinician": "finished by the clinician",
}
#: The starting prescription's sources as the clinician reads them.
SOURCE_NAMES = {
    "autorefraction": "autorefraction",
    "retinoscopy": "retinoscopy",
    "spectacles": "habitual spectacles",
    "none": "none",
}


def answers_text(count: int, budget: int) -> str:
    """The session's one count: ``Answers: 6 of 120`` (answers recorded, of the protocol's budget).
    The page names no other number: the lens to set is the next answer, and a status line speaks
    of an answer by its place in the same count (:func:`answer_text`)."""
    return f"Answers: {int(count)} of {int(budget)}"


def answer_text(number: int, budget: int) -> str:
    """``Answer 7 of 120``: the answer that brings the count (:func:`answers_text`) to ``number``."""
    return f"Answer {int(number)} of {int(budget)}"


def stop_text(reason: str | None) -> str:
    """The stopping-rule line: ``Stopping rule: not met yet`` or ``Stopping rule met:
    precision (the protocol's precision stop: ...)`` (:data:`STOP_MEANINGS`)."""
    if reason is None:
        return "Stopping rule: not met yet"
    return f"Stopping rule met: {reason} ({STOP_MEANINGS.get(reason, reason)})"


def progress_text(
    progress: float, precision, *, waits_for_sensitivity: bool = False, waits_for_over_minus: bool = False
) -> str:
    """The progress line: toward the protocol's ``precision`` stop (a
    :class:`~visiontune.refraction.protocol.Precision` or None: then the budget used), which with
    ``waits_for_sensitivity`` also waits until the patient's sensitivity to comparisons is learned,
    and with ``waits_for_over_minus`` until the lens to file is safe from over-minus (a patient who
    may accommodate; ``precision.over_minus_risk``)."""
    pct = f"{100.0 * min(max(progress, 0.0), 1.0):.0f}%"
    if precision is None:
        return f"Budget used: {pct} (no precision stop in this protocol)"
    if getattr(precision, "filed_within_probability", None) is not None:
        goal = f"the lens to file within 0.25 D, {100.0 * precision.filed_within_probability:g}% likely"
    elif getattr(precision, "m_d", None) is not None:
        goal = f"\u00b1{precision.m_d:.2f} D on M and \u00b1{precision.cylinder_vector_d:.2f} D on J"
    else:
        goal = f"sphere and cylinder intervals narrower than {precision.sphere_d:.2f} / {precision.cylinder_d:.2f} D"
    if waits_for_sensitivity:
        goal += ", the patient's sensitivity to 1-or-2 comparisons learned"
    if waits_for_over_minus:
        goal += f", over 0.25 D too minus at most {100.0 * precision.over_minus_risk:g}% likely"
    return f"Precision stop ({goal}): {pct}"


#: The probability of a lapse at the last answer above which the clinician is told (the odds even).
ATTENTION_WARNING = 0.5


def attention_text(lapsed: float | None) -> str:
    """The clinician's warning when the model reads the last answers as a run of lapses (the patient
    answering at random; :mod:`~visiontune.refraction.attention`): "" when the protocol does not read
    runs (``lapsed`` None) or the probability that the last answer was lapsed is below
    :data:`ATTENTION_WARNING`. The answers stay in the log and the model weighs them as it reads them."""
    if lapsed is None or lapsed < ATTENTION_WARNING:
        return ""
    return (
        f"The last answers look random ({100.0 * lapsed:.0f}% likely the patient's attention has lapsed): "
        "re-instruct the patient before going on"
    )


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
    """The estimate panel's lines: best lens, credible region ("" without a region; "S ±x /
    C ±y / axis ±z°" and the sphere and cylinder intervals), predicted acuity with its
    interval, progress toward the precision stop ("" when not given)."""

    best_lens: str
    interval: str
    acuity: str
    progress: str = ""


def estimate_texts(estimate, chart_range: tuple[float, float] | None, progress: str = "") -> EstimateTexts:
    """The panel's lines for ``estimate`` (a :class:`~visiontune.refraction.estimate.CurrentEstimate`);
    ``chart_range``: the protocol's logMAR range (an acuity at its edge is a bound);
    ``progress``: the :func:`progress_text` line."""
    interval = ""
    if estimate.region is not None:
        r = estimate.region
        interval = (
            f"{round(100 * r.level)}% credible region: {region_text(r, estimate.lens)}\n"
            f"(sphere {r.sphere_d[0]:+.2f} to {r.sphere_d[1]:+.2f} D, "
            f"cylinder {r.cylinder_d[0]:+.2f} to {r.cylinder_d[1]:+.2f} D)"
        ).replace("-", MINUS)
    lo, hi = estimate.va_interval
    acuity = (
        f"Predicted acuity through it: {acuity_text(estimate.va_logmar, chart_range)}; interval {lo:+.2f} to {hi:+.2f}"
    ).replace("-", MINUS)
    when = "now" if estimate.n_trials else "before any answer"
    return EstimateTexts(f"Best lens {when}: {lens_text(estimate.rounded)}", interval, acuity, progress)


def device_text(view) -> str:
    """The lens-device panel's lines for a :class:`~visiontune.app.logic.worker_device.DeviceView`:
    the device and its port, its kind (trial frame, manual or motorized phoropter) with its seconds
    a change of lens and their source, the lens confirmed before each eye, who confirmed it and when, and
    for the CV-5000 that its driver must be verified on the clinic's own device."""
    from visiontune.app.logic.worker_device import CV5000_CAUTION

    where = f" on {view.port}" if view.port else ""
    state = "" if view.kind == "manual" else (" \u00b7 connected" if view.connected else " \u00b7 NOT connected")
    lines = [f"Lens device: {view.short_label}{where}{state}"]
    kind = getattr(view, "device_kind", None)
    if kind is not None:  # the kind in force and what a change of lens is priced at, with its source
        lines.append(f"Kind: {view.kind_label} \u00b7 {view.change_seconds:g} s a change of lens, {view.change_source}")
    if view.od is None and view.os is None:
        lines.append("Lenses confirmed: none yet")
    else:
        lines.append(f"Lenses confirmed: OD {view.od} \u00b7 OS {view.os}")
    who = "the clinician (Enter)" if view.confirmation == "clinician" else "the device"
    if view.confirmed_at is not None:
        change = f" (change {view.change_s:.2f} s)" if view.change_s is not None else ""
        lines.append(f"Last confirmed by {who}: trial {view.trial + 1} at {view.confirmed_at:%H:%M:%S} UTC{change}")
    else:
        lines.append(f"Confirmed by {who} before each letter is shown")
    if view.kind == "cv5000":
        lines.append(CV5000_CAUTION)
    return "\n".join(lines)
