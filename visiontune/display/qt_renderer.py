"""Qt patient window: optotypes drawn from their vector outlines with QPainterPath.

The glyph's design cell (``design_height`` grid units, 5 x MAR) is scaled to the letter
height in device pixels from :func:`~visiontune.display.geometry.letter_height_px`, centred,
black on white, even-odd fill, anti-aliased, flipped horizontally when the calibration says
``mirror``. :func:`paint_glyph` is the single drawing routine: ``PatientWindow.paintEvent``
and :func:`render_glyph_image` (used by tests and previews) both call it. A chart line
(:meth:`PatientWindow.show_line`, :func:`render_line_image`) is the same glyphs side by side at
logMAR chart spacing, one letter width between letters (Bailey & Lovie 1976;
:func:`~visiontune.display.geometry.line_centres_px`), drawn by :func:`paint_line`; mirrored, the
line is flipped as a whole (its first letter on the right), as a mirror shows a printed chart.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QScreen
from PySide6.QtWidgets import QWidget

from visiontune._validate import finite_array, positive
from visiontune.display.calibration import Calibration
from visiontune.display.geometry import (
    DEFAULT_MIN_INK_PX,
    displayable_logmar_range,
    largest_line_logmar,
    letter_height_px,
    line_centres_px,
    line_width_px,
)
from visiontune.display.optotypes import Glyph, LetterSet
from visiontune.errors import CalibrationError, InvalidInputError

BACKGROUND = QColor(255, 255, 255)
INK = QColor(0, 0, 0)


@lru_cache(maxsize=256)
def glyph_path(glyph: Glyph) -> QPainterPath:
    """The glyph's rings as one QPainterPath in grid units (y up), even-odd fill (cached per glyph)."""
    path = QPainterPath()
    path.setFillRule(Qt.FillRule.OddEvenFill)
    for ring in glyph.rings:
        pts = ring.tolist()  # plain floats (faster through shiboken than numpy scalars)
        path.moveTo(QPointF(pts[0][0], pts[0][1]))
        for x, y in pts[1:]:
            path.lineTo(QPointF(x, y))
        path.closeSubpath()
    return path


def paint_glyph(
    painter: QPainter,
    width: float,
    height: float,
    glyph: Glyph,
    height_px: float,
    *,
    design_height: float = 5.0,
    mirror: bool = False,
) -> None:
    """Fill a ``width`` x ``height`` device-pixel area white and draw ``glyph`` in black.

    The design cell (``design_height`` grid units square) is mapped to ``height_px`` pixels and
    centred on the area; grid y points up, so the transform is
    ``X = cx + k (x - c) * (-1 if mirror else 1)``, ``Y = cy - k (y - c)``,
    ``k = height_px / design_height``, ``c = design_height / 2``: a chart line of one letter
    (:func:`paint_line`, whose one centre is the area's).
    """
    paint_line(painter, width, height, [glyph], height_px, design_height=design_height, mirror=mirror)


def paint_line(
    painter: QPainter,
    width: float,
    height: float,
    glyphs: list[Glyph],
    height_px: float,
    *,
    design_height: float = 5.0,
    mirror: bool = False,
) -> None:
    """Fill a ``width`` x ``height`` device-pixel area white and draw ``glyphs`` as one chart line,
    each ``height_px`` tall, centres at :func:`~visiontune.display.geometry.line_centres_px` around
    the area's centre (one letter width apart); mirrored, the whole line is flipped
    (``X -> width - X``), so the first letter is drawn on the right."""
    painter.save()
    painter.fillRect(0, 0, int(np.ceil(width)), int(np.ceil(height)), BACKGROUND)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(INK)
    k = height_px / design_height
    c = design_height / 2.0
    for x, glyph in zip(line_centres_px(len(glyphs), height_px, width / 2.0), glyphs, strict=True):
        painter.save()
        painter.translate(width - x if mirror else x, height / 2.0)
        painter.scale(-k if mirror else k, -k)
        painter.translate(-c, -c)
        painter.drawPath(glyph_path(glyph))
        painter.restore()
    painter.restore()


def render_line_image(
    glyphs: list[Glyph], height_px: float, size: tuple[int, int], *, design_height: float = 5.0, mirror: bool = False
) -> QImage:
    """Render ``glyphs`` as a chart line (:func:`paint_line`) ``height_px`` tall in a ``size = (width,
    height)`` pixel image."""
    h = float(positive("height_px", height_px))
    w_img, h_img = (int(v) for v in finite_array("size", size, ndim=1))
    if w_img < 1 or h_img < 1:
        raise InvalidInputError(f"size: expected (width, height) >= 1 pixel, got {tuple(size)}")
    image = QImage(w_img, h_img, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    try:
        paint_line(painter, w_img, h_img, list(glyphs), h, design_height=design_height, mirror=mirror)
    finally:
        painter.end()
    return image


def render_glyph_image(
    glyph: Glyph, height_px: float, size: tuple[int, int], *, design_height: float = 5.0, mirror: bool = False
) -> QImage:
    """Render ``glyph`` ``height_px`` tall, centred in a ``size = (width, height)`` pixel image (a chart
    line of one letter, :func:`render_line_image`)."""
    return render_line_image([glyph], height_px, size, design_height=design_height, mirror=mirror)


def qimage_to_gray(image: QImage) -> np.ndarray:
    """``(height, width)`` uint8 array of an image's luminance (green channel of RGB32; the
    renderer draws only greys, so R = G = B)."""
    img = image.convertToFormat(QImage.Format.Format_RGB32)
    h, w, bpl = img.height(), img.width(), img.bytesPerLine()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=h * bpl).reshape(h, bpl)
    return buf[:, : 4 * w].reshape(h, w, 4)[:, :, 1].copy()  # BGRA in memory (little-endian)


class PatientWindow(QWidget):
    """The patient's screen: one optotype, exactly ``letter_height_px`` tall, or blank.

    ``screen``: the QScreen to use (default: the primary screen); ``fullscreen``: cover it,
    else a window (demo). The calibration must describe that screen.
    """

    def __init__(
        self,
        calibration: Calibration,
        letter_set: LetterSet,
        *,
        screen: QScreen | None = None,
        fullscreen: bool = False,
        min_ink_px: float = DEFAULT_MIN_INK_PX,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.calibration = calibration
        self.letter_set = letter_set
        self.displayable = displayable_logmar_range(calibration, min_ink_px=min_ink_px)
        self._fullscreen = bool(fullscreen)
        self._glyph: Glyph | None = None
        self._line: list[Glyph] | None = None
        self._height_px = 0.0
        self.setWindowTitle("VisionTune - patient")
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        if screen is not None:
            self.setScreen(screen)
            self.setGeometry(screen.geometry())

    @property
    def current(self) -> tuple[str, float] | None:
        """``(letter, height_px)`` on screen (a line's letters joined), or None when blank."""
        if self._line is not None:
            return "".join(g.name for g in self._line), self._height_px
        return None if self._glyph is None else (self._glyph.name, self._height_px)

    def line_fits(self, n_letters: int, logmar: float) -> bool:
        """Whether a chart line of ``n_letters`` at ``logmar`` fits this screen at chart spacing
        (:func:`~visiontune.display.geometry.largest_line_logmar`) and its letters are displayable."""
        s = float(logmar)
        return (
            self.displayable.min_logmar
            <= s
            <= min(self.displayable.max_logmar, largest_line_logmar(self.calibration, n_letters))
        )

    def show_line(self, letters, logmar: float) -> None:
        """Show the chart line ``letters`` (reading order) at ``logmar``, one letter width apart
        (and the window, if hidden). CalibrationError, the screen left as it was, if a letter is
        outside the displayable range or the line is wider than the screen (:meth:`line_fits`);
        InvalidInputError for an unknown letter."""
        letters = tuple(letters)
        if len(letters) < 1 or isinstance(letters[0], (tuple, list)):
            raise InvalidInputError(f"letters: expected the line's letters, got {letters!r}")
        s = self.displayable.check(logmar)
        glyphs = [self.letter_set.glyph(x) for x in letters]
        h = float(letter_height_px(s, self.calibration))
        if not self.line_fits(len(letters), s):
            raise CalibrationError(
                f"a line of {len(letters)} letters at {s:+.2f} logMAR is {line_width_px(len(letters), h):.0f} px wide "
                f"at chart spacing; this screen is {self.calibration.width_px} px wide (the largest line it shows is "
                f"{largest_line_logmar(self.calibration, len(letters)):+.2f} logMAR)"
            )
        self._glyph, self._line, self._height_px = None, glyphs, h
        self.update()
        if not self.isVisible():
            if self._fullscreen:
                super().showFullScreen()
            else:
                super().show()

    def show(self, letter: str | None = None, logmar: float | None = None) -> None:
        """Show ``letter`` at ``logmar`` (and the window, if hidden). With no argument this is
        ``QWidget.show`` (fullscreen if so configured). CalibrationError if the size is outside
        the displayable range; InvalidInputError for an unknown letter."""
        if (letter is None) != (logmar is None):
            raise InvalidInputError("letter, logmar: give both or neither")
        if letter is not None:
            s = self.displayable.check(logmar)
            glyph = self.letter_set.glyph(letter)
            self._glyph, self._line, self._height_px = glyph, None, float(letter_height_px(s, self.calibration))
            self.update()
        if not self.isVisible():
            if self._fullscreen:
                super().showFullScreen()
            else:
                super().show()

    def blank(self) -> None:
        """Show the white background only."""
        self._glyph = self._line = None
        self.update()

    def paintEvent(self, event) -> None:
        self._paint()

    def _paint(self) -> None:
        painter = QPainter(self)
        try:
            if self._line is None and self._glyph is None:
                painter.fillRect(self.rect(), BACKGROUND)
                return
            ratio = self.devicePixelRatioF()
            # Work in device pixels: the calibration is in device pixels.
            painter.scale(1.0 / ratio, 1.0 / ratio)
            paint, shown = (paint_glyph, self._glyph) if self._line is None else (paint_line, self._line)
            paint(
                painter,
                self.width() * ratio,
                self.height() * ratio,
                shown,
                self._height_px,
                design_height=self.letter_set.design_height,
                mirror=self.calibration.mirror,
            )
        finally:
            painter.end()
