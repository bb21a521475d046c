"""Optotype size on screen: logMAR -> millimetres -> pixels, and the range a screen can show.

An optotype is 5 x MAR tall (docs/design.md, *Letter size on screen*; ISO 8596): at logMAR
``s`` the letter subtends ``5 * 10**s`` arcmin, so at viewing distance ``d``

    h = 2 d tan(5 * 10**s / 2 arcmin)

exactly (no small-angle approximation). Pixels = ``h / pixel pitch``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visiontune._validate import finite_array, positive
from visiontune.display.calibration import Calibration
from visiontune.errors import CalibrationError, InvalidInputError

ARCMIN = math.pi / (180.0 * 60.0)
#: Default smallest ink height, pixels. At 5 px the stroke (1/5 of the height, the critical
#: detail of ISO 8596) is 1 px, the smallest detail a screen can draw; below that the letter's
#: shape is lost to the pixel grid and anti-aliasing turns it into a grey blob.
DEFAULT_MIN_INK_PX = 5.0


def letter_height_mm(logmar, distance_mm):
    """Optotype height, mm: ``h = 2 d tan(5 * 10**s / 2 arcmin)`` (docs/design.md; ISO 8596).

    ``logmar``: scalar or array, logMAR. ``distance_mm``: viewing distance, mm (> 0).
    Returns a float or an array shaped like ``logmar``.
    """
    s = finite_array("logmar", logmar)
    d = positive("distance_mm", distance_mm)
    angle = 5.0 * 10.0**s * ARCMIN
    if np.any(angle >= math.pi):
        raise CalibrationError(f"logmar: a letter of {float(np.max(s)):g} logMAR would subtend >= 180 degrees")
    h = 2.0 * d * np.tan(angle / 2.0)
    return float(h) if h.ndim == 0 else h


def logmar_for_height_mm(height_mm, distance_mm):
    """Inverse of :func:`letter_height_mm`: ``s = log10(2 atan(h / 2d) / (5 arcmin))``."""
    h = positive("height_mm", height_mm)
    d = positive("distance_mm", distance_mm)
    s = np.log10(2.0 * np.arctan(h / (2.0 * d)) / (5.0 * ARCMIN))
    return float(s) if s.ndim == 0 else s


def letter_height_px(logmar, calibration: Calibration):
    """Optotype height in device pixels: ``letter_height_mm(s, d) / pixel_pitch_mm``."""
    return letter_height_mm(logmar, calibration.viewing_distance_mm) / calibration.pixel_pitch_mm


@dataclass(frozen=True)
class LogmarRange:
    """Letter sizes a screen shows faithfully, logMAR (inclusive)."""

    min_logmar: float
    max_logmar: float

    def check(self, logmar: float) -> float:
        """Return ``logmar`` if inside the range; CalibrationError otherwise (never clipped)."""
        s = float(finite_array("logmar", logmar))
        if not (self.min_logmar <= s <= self.max_logmar):
            raise CalibrationError(
                f"logmar: {s:g} is outside the displayable range [{self.min_logmar:.3f}, {self.max_logmar:.3f}] "
                "for this screen and distance"
            )
        return s


def displayable_logmar_range(calibration: Calibration, *, min_ink_px: float = DEFAULT_MIN_INK_PX) -> LogmarRange:
    """Range of logMAR sizes ``calibration`` can show.

    Minimum: ink height ``min_ink_px`` pixels (default 5: a 1-px stroke). Maximum: the letter
    (5 x 5 design cell, as tall as wide) fits the screen: ``min(width_px, height_px)`` pixels.
    """
    m = float(positive("min_ink_px", min_ink_px))
    d = calibration.viewing_distance_mm
    lo = logmar_for_height_mm(m * calibration.pixel_pitch_mm, d)
    # The renderer draws with square pixels of the vertical pitch, so the letter (as wide as
    # tall) needs height_px rows and as many columns.
    max_px = min(calibration.height_px, calibration.width_px)
    hi = logmar_for_height_mm(max_px * calibration.pixel_pitch_mm, d)
    if hi < lo:
        raise CalibrationError(
            f"min_ink_px: {m:g} px is taller than the screen ({calibration.height_px} px); nothing is displayable"
        )
    return LogmarRange(float(lo), float(hi))


def line_centres_px(n_letters: int, letter_height_px: float, centre_x_px: float = 0.0) -> list[float]:
    """The x of each letter's centre (px) in a chart line of ``n_letters`` letters ``letter_height_px``
    tall, centred on ``centre_x_px``: letters as wide as high (Sloan, ISO 8596) with one letter width
    between neighbours (Bailey & Lovie 1976), so centres ``2 h`` apart::

        x_j = centre_x_px + 2 h (j - (n - 1) / 2),   j = 0 .. n - 1
    """
    if isinstance(n_letters, bool) or int(n_letters) != n_letters or n_letters < 1:
        raise InvalidInputError(f"n_letters: expected a count of letters >= 1, got {n_letters!r}")
    h = float(positive("letter_height_px", letter_height_px))
    pitch = 2.0 * h
    first = float(centre_x_px) - pitch * (int(n_letters) - 1) / 2.0
    return [first + pitch * j for j in range(int(n_letters))]


def line_width_px(n_letters: int, letter_height_px: float) -> float:
    """The width of a chart line, outer edge to outer edge (px): ``n`` letters ``h`` wide and
    ``n - 1`` gaps of ``h`` (:func:`line_centres_px`), ``(2 n - 1) h``."""
    centres = line_centres_px(n_letters, letter_height_px)
    return centres[-1] - centres[0] + float(letter_height_px)


def largest_line_logmar(calibration: Calibration, n_letters: int) -> float:
    """The largest letter size (logMAR) at which a chart line of ``n_letters`` fits the screen's
    width at chart spacing (:func:`line_width_px`) and its letters its height: a letter
    ``min(width_px / (2 n - 1), height_px)`` pixels tall."""
    widest = calibration.width_px / line_width_px(n_letters, 1.0)
    max_px = min(float(calibration.height_px), widest)
    return float(logmar_for_height_mm(max_px * calibration.pixel_pitch_mm, calibration.viewing_distance_mm))


def check_displayable(logmar: float, calibration: Calibration, *, min_ink_px: float = DEFAULT_MIN_INK_PX) -> float:
    """Return ``logmar`` if ``calibration`` shows it faithfully, else raise CalibrationError."""
    return displayable_logmar_range(calibration, min_ink_px=min_ink_px).check(logmar)
