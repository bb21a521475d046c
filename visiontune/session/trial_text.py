"""Texts of logged answers shared by the command line, the reports and the app: a slider answer
and a chart line on one line each, and how many answers of each kind a session used.

A slider answer reads ``"slider sphere: clearest S -1.25 / C -0.50 x 90 (4 of 9, path -2.25 to
-0.25 D)"``: the knob, the lens chosen, its place on the path (from 1) and the path's ends in
the knob's own unit (diopters of sphere or cylinder, degrees of axis; an axis of 0 is written 180).

A chart line reads ``"line D+ K+ N- R+ S+ (4 of 5 right) through S -1.25 / C -0.50 x 090"``: each
letter of the line in reading order with its answer (``+`` read right, ``-`` wrong; the trial
log's ``line_correct``), the count read right, and the lens.

A lens held before the trial lens in the frame (:mod:`visiontune.refraction.clinical_pairs`) reads
``"±0.50 D cross-cylinder before S -1.25 / C -0.50 x 090: 1 minus axis 135, 2 minus axis 045"``,
``"±0.75 D flipper before ...: 1 +0.75, 2 -0.75"`` or ``"+0.50 D sphere before ...: 1 without,
2 with"``; the held lens is read from the power vectors (Thibos et al. 1997): ``H = P(lens 1) -
P(frame)`` (``P(lens 2) - P(frame)`` "with or without"), a sphere when ``J(H) = 0``, else a
cross-cylinder of power ``|J(H)|`` whose minus axis is ``atan2(J45, J0) / 2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from visiontune.optics.prescription import Prescription

__all__ = [
    "answer_kinds_text",
    "held_text",
    "lens_text",
    "line_marks_text",
    "line_text",
    "slider_path_ends",
    "slider_text",
]


def lens_text(lens) -> str:
    """Clinical text of a logged lens as stored (``sphere_d``, ``cylinder_d``, ``axis_deg``), e.g.
    ``"S -1.25 / C -0.50 x 180"`` (:meth:`Prescription.format`; an axis of 0 written 180)."""
    return Prescription(lens.sphere_d, lens.cylinder_d, lens.axis_deg or 180.0).format()


def slider_path_ends(knob: str, lenses) -> str:
    """The ends of a slider's path in the knob's unit: ``"-2.25 to -0.25 D"``, ``"60 to 120°"``."""
    first, last = lenses[0], lenses[-1]
    if knob == "axis":
        return f"{first.axis_deg or 180.0:.0f} to {last.axis_deg or 180.0:.0f}\u00b0"
    return f"{getattr(first, f'{knob}_d'):+.2f} to {getattr(last, f'{knob}_d'):+.2f} D"


def slider_text(trial, lens: Callable[[object], str] = lens_text) -> str:
    """A slider answer on one line (module docstring); ``lens`` writes the lens chosen
    (default :func:`lens_text`; the app passes the clinic's cylinder form)."""
    n = len(trial.slider_lenses)
    return (
        f"slider {trial.slider_knob}: clearest {lens(trial.lens)} ({trial.slider_choice + 1} of {n}, "
        f"path {slider_path_ends(trial.slider_knob, trial.slider_lenses)})"
    )


def line_marks_text(trial) -> str:
    """A chart line's letters with their answers, ``"D+ K+ N- R+ S+"`` (module docstring)."""
    return " ".join(
        f"{x}{'+' if c == '1' else '-'}" for x, c in zip(trial.letter_shown, trial.line_correct, strict=True)
    )


def line_text(trial, lens: Callable[[object], str] = lens_text) -> str:
    """A chart line on one line (module docstring); ``lens`` writes its lens (default :func:`lens_text`)."""
    right = trial.line_correct.count("1")
    return f"line {line_marks_text(trial)} ({right} of {len(trial.line_correct)} right) through {lens(trial.lens)}"


def _axis_text(deg: float) -> str:
    deg = float(deg) % 180.0
    return f"{180.0 if round(deg) == 0 else deg:03.0f}"


def held_text(lens1, lens2, frame, lens: Callable[[object], str] = lens_text, minus: str = "-") -> str:
    """A lens held before the trial lens ``frame`` to show ``lens1`` and ``lens2`` (module
    docstring); ``lens`` writes the frame lens (default :func:`lens_text`), ``minus`` the minus
    sign of the powers held (the app's U+2212)."""

    def signed(x: float) -> str:
        return f"{x:+.2f}".replace("-", minus)

    at = Prescription(frame.sphere_d, frame.cylinder_d, frame.axis_deg or 180.0).power_vector_array()
    one = Prescription(lens1.sphere_d, lens1.cylinder_d, lens1.axis_deg or 180.0).power_vector_array()
    two = Prescription(lens2.sphere_d, lens2.cylinder_d, lens2.axis_deg or 180.0).power_vector_array()
    before = f"before {lens(frame)}"
    if max(abs(one - at)) <= 1e-6:  # "with or without": lens 1 is the frame lens alone
        return f"{signed(two[0] - at[0])} D sphere {before}: 1 without, 2 with"
    held = one - at
    if abs(held[1]) <= 1e-6 and abs(held[2]) <= 1e-6:
        return f"±{abs(held[0]):.2f} D flipper {before}: 1 {signed(held[0])}, 2 {signed(-held[0])}"
    power = float((held[1] ** 2 + held[2] ** 2) ** 0.5)
    minus_axis = math.degrees(math.atan2(held[2], held[1])) / 2.0
    return (
        f"±{power:.2f} D cross-cylinder {before}: 1 minus axis {_axis_text(minus_axis)}, "
        f"2 minus axis {_axis_text(minus_axis + 90.0)}"
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def answer_kinds_text(trials_used: int, comparisons_used: int = 0, sliders_used: int = 0, lines_used: int = 0) -> str:
    """``"9 letters, 1 comparison, 2 sliders, 3 chart lines"``: the answers a session used by kind
    (letters read, comparisons of two lenses, sliders, chart lines; the letters are the rest; another
    kind without answers is left out), or ``""`` when every answer was a letter."""
    if not comparisons_used and not sliders_used and not lines_used:
        return ""
    parts = [_count(trials_used - comparisons_used - sliders_used - lines_used, "letter", "letters")]
    if comparisons_used:
        parts.append(_count(comparisons_used, "comparison", "comparisons"))
    if sliders_used:
        parts.append(_count(sliders_used, "slider", "sliders"))
    if lines_used:
        parts.append(_count(lines_used, "chart line", "chart lines"))
    return ", ".join(parts)
