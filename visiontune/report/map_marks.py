"""Letter and slider answers on an acuity map (Qt-free): the PDF's figure
(:mod:`visiontune.report.figures`) and the app's live map (:mod:`visiontune.app.logic.session_host`,
:mod:`visiontune.app.logic.plot_frames`) mark them with this one rule.

A map shows predicted acuity over sphere × cylinder at one cylinder axis ``A``. A lens lies in
its plane (:func:`place_on_map`) when it has no cylinder, when its axis is within
:data:`MAP_AXIS_TOLERANCE_DEG` of ``A`` (at its own sphere and cylinder), or within that of
``A + 90`` (transposed: ``(S + C, -C)`` at axis ``A``, the same lens in the other cylinder form).

A letter answer whose lens lies in the plane is marked there (:func:`letter_marks`; a dot,
:data:`LETTER_READ_RGB` when read, :data:`LETTER_MISSED_RGB` when not). A slider answer whose
chosen lens lies in the plane is marked by that lens (a diamond, :data:`SLIDER_RGB`) and by the
knob's path through its lenses in the plane (a thin line, in knob order). A sphere knob's path is horizontal, a cylinder
knob's vertical; an axis knob keeps sphere and cylinder, so at most its lenses near ``A`` are placed, all on one point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LETTER_MISSED_RGB",
    "LETTER_READ_RGB",
    "MAP_AXIS_TOLERANCE_DEG",
    "SLIDER_RGB",
    "LetterMark",
    "SliderMark",
    "axis_gap_deg",
    "letter_marks",
    "path_polyline",
    "place_on_map",
    "slider_marks",
]

#: The colours of the marks on both maps (RGB 0-255): a letter read, a letter missed, a slider's lens.
LETTER_READ_RGB = (30, 140, 60)
LETTER_MISSED_RGB = (200, 40, 40)
SLIDER_RGB = (30, 90, 220)
#: Lenses within this many degrees of the map's axis are drawn on it.
MAP_AXIS_TOLERANCE_DEG = 10.0


def axis_gap_deg(a: float, b: float) -> float:
    """The angle between two cylinder axes (degrees, in [0, 90]): axes are defined modulo 180."""
    return abs((float(a) - float(b) + 90.0) % 180.0 - 90.0)


def place_on_map(lens, axis_deg: float | None) -> tuple[float, float] | None:
    """``(sphere, cylinder)`` (D) of a logged lens (``sphere_d``, ``cylinder_d``, ``axis_deg``) on
    a map drawn at ``axis_deg`` (module docstring; a map without an axis takes every lens as it
    is), or ``None`` when the lens is not in its plane."""
    s, c = float(lens.sphere_d), float(lens.cylinder_d)
    if axis_deg is None or c == 0.0:
        return s, c
    gap = axis_gap_deg(lens.axis_deg, axis_deg)
    if gap <= MAP_AXIS_TOLERANCE_DEG:
        return s, c
    if gap >= 90.0 - MAP_AXIS_TOLERANCE_DEG:
        return s + c, -c
    return None


@dataclass(frozen=True)
class LetterMark:
    """One letter answer on a map: its lens ``at`` ``(sphere, cylinder)`` (D) in the map's plane,
    whether it was read (``correct``) and ``void`` (undone)."""

    at: tuple[float, float]
    correct: bool
    void: bool = False


def letter_marks(trials: Sequence, axis_deg: float | None) -> list[LetterMark]:
    """The marks of the letter answers among ``trials`` (comparisons and sliders left out) whose
    lens lies on the map drawn at ``axis_deg`` (:func:`place_on_map`)."""
    marks = []
    for t in trials:
        if getattr(t, "comparison", None) is not None or getattr(t, "slider_choice", None) is not None:
            continue
        at = place_on_map(t.lens, axis_deg)
        if at is not None:
            marks.append(LetterMark(at, bool(t.correct), bool(getattr(t, "void", False))))
    return marks


@dataclass(frozen=True)
class SliderMark:
    """One slider answer on a map: its ``knob``, the lens ``chosen`` and the ``path``'s lenses
    that lie on the map (``(sphere, cylinder)`` in D, in knob order), and ``void`` (undone)."""

    knob: str
    chosen: tuple[float, float]
    path: tuple[tuple[float, float], ...]
    void: bool = False


def slider_marks(trials: Sequence, axis_deg: float | None) -> list[SliderMark]:
    """The marks of the slider answers among ``trials`` whose chosen lens lies on the map drawn
    at ``axis_deg`` (:func:`place_on_map`; trials of other kinds are left out), each path with its
    lenses on the map."""
    marks = []
    for t in trials:
        if getattr(t, "slider_choice", None) is None:
            continue
        chosen = place_on_map(t.lens, axis_deg)
        if chosen is None:
            continue
        path = tuple(xy for xy in (place_on_map(x, axis_deg) for x in t.slider_lenses) if xy is not None)
        marks.append(SliderMark(t.slider_knob, chosen, path, bool(getattr(t, "void", False))))
    return marks


def path_polyline(marks: Sequence[SliderMark]) -> np.ndarray:
    """``(2, m)`` sphere and cylinder (D) of every path, one after the other, each followed by a
    NaN column: a line broken between paths (pyqtgraph's ``connect="finite"``)."""
    columns = [xy for mark in marks for xy in (*mark.path, (np.nan, np.nan))]
    return np.array(columns, dtype=float).reshape(-1, 2).T
