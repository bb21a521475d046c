"""Texts of logged answers shared by the command line, the reports and the app: a slider answer
and a chart line on one line each, and how many answers of each kind a session used.

A slider answer reads ``"slider sphere: clearest S -1.25 / C -0.50 x 90 (4 of 9, path -2.25 to
-0.25 D)"``: the knob, the lens chosen, its place on the path (from 1) and the path's ends in
the knob's own unit (diopters of sphere or cylinder, degrees of axis; an axis of 0 is written 180).

A chart line reads ``"line D+ K+ N- R+ S+ (4 of 5 right) through S -1.25 / C -0.50 x 090"``: each
letter of the line in reading order with its answer (``+`` read right, ``-`` wrong; the trial
log's ``line_correct``), the count read right, and the lens.
"""

from __future__ import annotations

from collections.abc import Callable

from visiontune.optics.prescription import Prescription

__all__ = ["answer_kinds_text", "lens_text", "line_marks_text", "line_text", "slider_path_ends", "slider_text"]


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
