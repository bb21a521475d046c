"""Report figures drawn with QPainter (QtGui only, no widgets): any paint device works,
the PDF writer or a QImage in tests.

* :func:`draw_acuity_map`: heat map of the posterior acuity map (predicted logMAR on the
  sphere × cylinder lens grid of ``result.posterior_map``; rows of ``va_logmar`` are sphere
  values) with the letter and slider answers in the map's plane (:mod:`visiontune.report.map_marks`,
  the app's live map's rule too: a letter's lens a dot, green when read and red when missed, the
  lens chosen on a slider a blue diamond, each hollow when voided, the knob's path a thin blue line)
  and the prescription found (white cross outlined in black, drawn last). Comparisons (two
  lenses, no right or wrong) are not drawn. Sphere on the horizontal axis, cylinder vertical,
  both in diopters. Each grid value colours the cell centred on its lens (cell edges half-way
  between grid values).
* :func:`draw_acuity_curve`: predicted acuity through the estimate (logMAR) against the
  number of answers, from ``result.acuity_curve``.

Colours: :func:`colormap`, a linear interpolation of viridis anchor colours; the map reads it
through :func:`acuity_colours`, low logMAR (good acuity) bright yellow and high logMAR (poor
acuity) dark, as the app's live map (:mod:`visiontune.app.plots`), so the PDF and the screen
read the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen

from visiontune.refraction.result import SessionResult
from visiontune.refraction.trial import Trial
from visiontune.report.map_marks import (
    LETTER_MISSED_RGB,
    LETTER_READ_RGB,
    SLIDER_RGB,
    LetterMark,
    SliderMark,
    letter_marks,
    slider_marks,
)

__all__ = [
    "MAP_LEGEND",
    "VIRIDIS_ANCHORS",
    "acuity_colours",
    "colormap",
    "cell_edges",
    "draw_acuity_map",
    "draw_acuity_curve",
    "draw_map_legend",
    "letters_on_map",
    "sliders_on_map",
]

#: The legend printed under the map (PDF report, visit PDF), line by line.
MAP_LEGEND = (
    "Map: lenses at the map's axis (\u00b110\u00b0, or transposed from the axis \u00b190\u00b0): dots = letters "
    "through them (green read, red missed),",
    "blue diamonds = chosen on a slider (thin blue line: the knob's path); hollow = voided answer. "
    "White cross = the prescription found.",
)

#: viridis at 0, 0.25, 0.5, 0.75, 1 (matplotlib's table), RGB 0-255
VIRIDIS_ANCHORS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=float)


def colormap(values, lo: float, hi: float) -> np.ndarray:
    """``(..., 3)`` uint8 RGB for ``values`` on ``[lo, hi]`` (clipped); ``lo == hi`` maps to the
    middle colour. Piecewise-linear between :data:`VIRIDIS_ANCHORS`."""
    v = np.asarray(values, dtype=float)
    t = np.full(v.shape, 0.5) if hi <= lo else np.clip((v - lo) / (hi - lo), 0.0, 1.0)
    pos = np.linspace(0.0, 1.0, len(VIRIDIS_ANCHORS))
    rgb = np.stack([np.interp(t, pos, VIRIDIS_ANCHORS[:, k]) for k in range(3)], axis=-1)
    return np.rint(rgb).astype(np.uint8)


def acuity_colours(values, lo: float, hi: float) -> np.ndarray:
    """:func:`colormap` reversed for acuity: ``lo`` (the best acuity, lowest logMAR) the bright
    end, ``hi`` the dark end (the app's live map: ``cmap.reverse()``)."""
    return colormap(lo + hi - np.asarray(values, dtype=float), lo, hi)


def cell_edges(centres: Sequence[float]) -> np.ndarray:
    """``(n + 1,)`` cell edges around ``n`` increasing grid values: midpoints between
    neighbours, the outer edges half a step beyond the end values (one value: ±0.5)."""
    c = np.asarray(centres, dtype=float)
    if c.size == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[2 * c[0] - mid[0]], mid, [2 * c[-1] - mid[-1]]])


class _Frame:
    """Maps data ``(x, y)`` to device points inside ``rect`` (y grows upwards)."""

    def __init__(self, rect: QRectF, xlim: tuple[float, float], ylim: tuple[float, float]) -> None:
        self.rect, self.xlim, self.ylim = rect, xlim, ylim

    def x(self, v: float) -> float:
        x0, x1 = self.xlim
        return self.rect.left() + (v - x0) / (x1 - x0 or 1.0) * self.rect.width()

    def y(self, v: float) -> float:
        y0, y1 = self.ylim
        return self.rect.bottom() - (v - y0) / (y1 - y0 or 1.0) * self.rect.height()

    def point(self, x: float, y: float) -> QPointF:
        return QPointF(self.x(x), self.y(y))


def _ticks(lo: float, hi: float, n: int = 5) -> np.ndarray:
    if hi <= lo:
        return np.array([lo])
    raw = (hi - lo) / n
    step = min((s * 10.0 ** np.floor(np.log10(raw)) for s in (1, 2, 2.5, 5, 10)), key=lambda s: abs(s - raw))
    ticks = np.arange(np.ceil(lo / step) * step, hi + 1e-9 * step, step)
    return np.round(ticks, 10) + 0.0


def _axes(p: QPainter, f: _Frame, xlabel: str, ylabel: str, title: str) -> None:
    fm = QFontMetricsF(p.font())
    p.setPen(QPen(Qt.black, 0))
    p.setBrush(Qt.NoBrush)
    p.drawRect(f.rect)
    for v in _ticks(*f.xlim):
        x = f.x(v)
        p.drawLine(QPointF(x, f.rect.bottom()), QPointF(x, f.rect.bottom() + fm.height() * 0.3))
        label = f"{v + 0.0:g}"
        p.drawText(QPointF(x - fm.horizontalAdvance(label) / 2, f.rect.bottom() + fm.height() * 1.3), label)
    for v in _ticks(*f.ylim):
        y = f.y(v)
        p.drawLine(QPointF(f.rect.left() - fm.height() * 0.3, y), QPointF(f.rect.left(), y))
        label = f"{v + 0.0:g}"
        x = f.rect.left() - fm.height() * 0.4 - fm.horizontalAdvance(label)
        p.drawText(QPointF(x, y + fm.ascent() / 2.5), label)
    x = f.rect.center().x() - fm.horizontalAdvance(xlabel) / 2
    p.drawText(QPointF(x, f.rect.bottom() + fm.height() * 2.4), xlabel)
    p.drawText(QPointF(f.rect.left(), f.rect.top() - fm.height() * 0.5), title)
    p.save()
    p.translate(f.rect.left() - fm.height() * 2.6, f.rect.center().y() + fm.horizontalAdvance(ylabel) / 2)
    p.rotate(-90)
    p.drawText(QPointF(0, 0), ylabel)
    p.restore()


def _plot_rect(p: QPainter, rect: QRectF, right_extra: float = 0.0) -> QRectF:
    h = QFontMetricsF(p.font()).height()
    width = rect.width() - 4.0 * h - right_extra
    return QRectF(rect.left() + 3.6 * h, rect.top() + 1.6 * h, width, rect.height() - 4.4 * h)


def letters_on_map(trials: Sequence[Trial], axis_deg: float | None) -> list[LetterMark]:
    """The letter answers on the map (:func:`~visiontune.report.map_marks.letter_marks`: the
    rule the app's live map follows too). Comparisons (two lenses, no right or wrong) and sliders
    (:func:`sliders_on_map`) are left out."""
    return letter_marks(trials, axis_deg)


def sliders_on_map(trials: Sequence[Trial], axis_deg: float | None) -> list[SliderMark]:
    """The slider answers on the map (:func:`~visiontune.report.map_marks.slider_marks`: the
    rule the app's live map follows too)."""
    return slider_marks(trials, axis_deg)


def _draw_slider_marks(p: QPainter, f: _Frame, marks: Sequence[SliderMark], size: float) -> None:
    """Each path a thin line, then each chosen lens a diamond (hollow when voided)."""
    colour = QColor(*SLIDER_RGB)
    p.setBrush(Qt.NoBrush)
    p.setPen(QPen(colour, max(1.0, size / 3)))
    for mark in marks:
        points = [f.point(*xy) for xy in mark.path]
        for a, b in zip(points[:-1], points[1:], strict=True):
            p.drawLine(a, b)
    for mark in marks:
        c = f.point(*mark.chosen)
        p.setPen(QPen(QColor(255, 255, 255), max(1.0, size / 3)))
        p.setBrush(Qt.NoBrush if mark.void else QBrush(colour))
        p.drawPolygon([c + QPointF(0, -size), c + QPointF(size, 0), c + QPointF(0, size), c + QPointF(-size, 0)])


def draw_acuity_map(painter: QPainter, rect: QRectF, result: SessionResult, trials: Sequence[Trial] = ()) -> QRectF:
    """Draw the posterior acuity map in ``rect`` (device units); return the heat map's plot
    rectangle (inside the axes). ``trials``: lenses to mark (``Trial.void`` drawn hollow)."""
    p = painter
    p.save()
    h = QFontMetricsF(p.font()).height()
    sx, sy = cell_edges(result.map_sphere_d), cell_edges(result.map_cylinder_d)
    values = np.asarray(result.map_va_logmar, dtype=float)
    lo, hi = float(values.min()), float(values.max())
    colours = acuity_colours(values, lo, hi)
    plot = _plot_rect(p, rect, right_extra=3.5 * h)
    f = _Frame(plot, (sx[0], sx[-1]), (sy[0], sy[-1]))
    p.setPen(Qt.NoPen)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            r, g, b = (int(v) for v in colours[i, j])
            cell = QRectF(QPointF(f.x(sx[i]), f.y(sy[j + 1])), QPointF(f.x(sx[i + 1]), f.y(sy[j])))
            p.fillRect(cell.adjusted(-0.5, -0.5, 0.5, 0.5), QColor(r, g, b))
    dot = max(2.0, 0.18 * h)
    p.setClipRect(plot)  # a lens transposed onto the other sign of cylinder lies off the map
    for mark in letters_on_map(trials, result.map_axis_deg):
        p.setPen(QPen(QColor(255, 255, 255), max(1.0, dot / 3)))
        fill = QColor(*(LETTER_READ_RGB if mark.correct else LETTER_MISSED_RGB))
        p.setBrush(Qt.NoBrush if mark.void else QBrush(fill))
        p.drawEllipse(f.point(*mark.at), dot, dot)
    _draw_slider_marks(p, f, sliders_on_map(trials, result.map_axis_deg), 1.5 * dot)
    p.setClipping(False)
    e = result.rounded  # the prescription found, at the map's axis
    c, arm = f.point(e.sphere_d, e.cylinder_d), 6 * dot
    for colour, w in ((QColor(0, 0, 0), max(3.0, dot * 1.2)), (QColor(255, 255, 255), max(1.5, dot / 1.5))):
        p.setPen(QPen(colour, w))
        p.drawLine(c + QPointF(-arm, 0), c + QPointF(arm, 0))
        p.drawLine(c + QPointF(0, -arm), c + QPointF(0, arm))
    at_axis = "" if result.map_axis_deg is None else f" at axis {result.map_axis_deg:.0f}\u00b0"
    _axes(p, f, "sphere (D)", f"cylinder (D){at_axis}", f"Predicted acuity (logMAR) over lenses{at_axis}")
    # colour bar
    bar = QRectF(plot.right() + 0.8 * h, plot.top(), 0.8 * h, plot.height())
    steps = 64
    for k in range(steps):
        r, g, b = (int(v) for v in acuity_colours(lo + (hi - lo) * (k + 0.5) / steps, lo, hi))
        y0 = bar.bottom() - bar.height() * (k + 1) / steps
        p.fillRect(QRectF(bar.left(), y0, bar.width(), bar.height() / steps + 0.5), QColor(r, g, b))
    p.setPen(QPen(Qt.black, 0))
    p.setBrush(Qt.NoBrush)
    p.drawRect(bar)
    p.drawText(QPointF(bar.right() + 0.2 * h, bar.top() + 0.4 * h), f"{hi:.2f}")
    p.drawText(QPointF(bar.right() + 0.2 * h, bar.bottom()), f"{lo:.2f}")
    p.restore()
    return plot


def draw_acuity_curve(painter: QPainter, rect: QRectF, result: SessionResult) -> QRectF:
    """Draw predicted acuity (logMAR) against the number of answers in ``rect``; return the
    plot rectangle. An empty curve draws the axes and the words "no data"."""
    p = painter
    p.save()
    plot = _plot_rect(p, rect)
    pts = result.acuity_curve
    if pts:
        n = [q[0] for q in pts]
        va = [q[1] for q in pts]
        xlim = (min(0, min(n)), max(max(n), 1))
        ylo, yhi = min(min(va), 0.0), max(max(va), 0.1)
        pad = 0.05 * (yhi - ylo)
        f = _Frame(plot, xlim, (ylo - pad, yhi + pad))
        p.setPen(QPen(QColor(20, 80, 170), max(1.0, QFontMetricsF(p.font()).height() / 8)))
        p.setBrush(Qt.NoBrush)
        for a, b in zip(pts[:-1], pts[1:], strict=True):
            p.drawLine(f.point(*a), f.point(*b))
        p.setBrush(QBrush(QColor(20, 80, 170)))
        r = max(1.5, QFontMetricsF(p.font()).height() / 8)
        for q in pts:
            p.drawEllipse(f.point(*q), r, r)
    else:
        f = _Frame(plot, (0, 1), (0, 1))
        p.drawText(plot, Qt.AlignCenter, "no data")
    _axes(p, f, "answers", "logMAR", "Predicted acuity through the estimate")
    p.restore()
    return plot


def draw_map_legend(painter: QPainter, x: float, y: float) -> float:
    """Draw :data:`MAP_LEGEND` from the baseline ``(x, y)`` down, in the painter's font; return
    the baseline of its last line."""
    step = QFontMetricsF(painter.font()).height()
    for k, line in enumerate(MAP_LEGEND):
        painter.drawText(QPointF(x, y + k * step), line)
    return y + (len(MAP_LEGEND) - 1) * step


def set_font(painter: QPainter, point_size: float, bold: bool = False) -> None:
    """Set a sans-serif font of ``point_size`` points (scaled by the device's resolution)."""
    font = QFont("DejaVu Sans")
    font.setStyleHint(QFont.SansSerif)
    font.setPointSizeF(point_size)
    font.setBold(bold)
    painter.setFont(font)
