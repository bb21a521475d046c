"""Report figures: the colour map, cell edges, and the heat map's pixels against the
acuity values computed independently (Blendowske ``log10(1 + β²)`` of the true correction)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from report_helpers import MAP_CYLINDER, MAP_SPHERE, blendowske_va, make_result

from visiontune.refraction.result import parse_result
from visiontune.report.figures import (
    VIRIDIS_ANCHORS,
    cell_edges,
    colormap,
    draw_acuity_curve,
    draw_acuity_map,
    set_font,
)
from visiontune.session.records import Lens, Trial


def test_colormap_hits_the_anchors_and_clips():
    values = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(colormap(values, 0.0, 1.0), VIRIDIS_ANCHORS.astype(np.uint8))
    np.testing.assert_array_equal(colormap([-5.0, 7.0], 0.0, 1.0), VIRIDIS_ANCHORS[[0, -1]].astype(np.uint8))
    halfway = np.rint((VIRIDIS_ANCHORS[0] + VIRIDIS_ANCHORS[1]) / 2)
    np.testing.assert_array_equal(colormap(0.125, 0.0, 1.0), halfway)
    np.testing.assert_array_equal(colormap(3.0, 2.0, 2.0), VIRIDIS_ANCHORS[2].astype(np.uint8))


def test_cell_edges():
    np.testing.assert_allclose(cell_edges([0.0, 1.0, 3.0]), [-0.5, 0.5, 2.0, 4.0])
    np.testing.assert_allclose(cell_edges([2.0]), [1.5, 2.5])


def _trial(i: int, s: float, c: float, void: bool) -> Trial:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    return Trial(1, i, 0.0, Lens(s, c, 90.0), "C", "C", True, t, t, void=void)


def _render(draw) -> tuple[QImage, QRectF]:
    img = QImage(900, 700, QImage.Format_RGB32)
    img.fill(QColor(255, 255, 255))
    p = QPainter(img)
    try:
        set_font(p, 8)
        plot = draw(p, QRectF(0, 0, 900, 700))
    finally:
        p.end()
    return img, plot


def test_heat_map_pixels_match_independent_acuity_values():
    result = parse_result(make_result())
    trials = [_trial(0, 0.0, 1.0, False), _trial(1, -3.0, -2.0, True)]
    img, plot = _render(lambda p, r: draw_acuity_map(p, r, result, trials))
    oracle = np.array([[blendowske_va(s, c) for c in MAP_CYLINDER] for s in MAP_SPHERE])
    lo, hi = oracle.min(), oracle.max()
    xs, ys = (MAP_SPHERE[0] - 0.5, MAP_SPHERE[-1] + 0.5), (MAP_CYLINDER[0] - 0.5, MAP_CYLINDER[-1] + 0.5)

    def pixel(s, c):
        x = plot.left() + (s - xs[0]) / (xs[1] - xs[0]) * plot.width()
        y = plot.bottom() - (c - ys[0]) / (ys[1] - ys[0]) * plot.height()
        q = img.pixelColor(int(x), int(y))
        return np.array([q.red(), q.green(), q.blue()])

    for i, s in enumerate(MAP_SPHERE):
        for j, c in enumerate(MAP_CYLINDER):
            if (s, c) == (0.0, 1.0):
                continue  # covered by the presented lens's dot
            expected = np.rint(colormap(oracle[i, j], lo, hi)).astype(int)
            assert np.abs(pixel(s, c) - expected).max() <= 1, (s, c)
    np.testing.assert_array_equal(pixel(0.0, 1.0), [230, 30, 30])  # answered lens: filled red dot
    # the voided lens is hollow: its centre keeps the cell colour
    expected = colormap(oracle[0, 0], lo, hi).astype(int)
    assert np.abs(pixel(-3.0, -2.0) - expected).max() <= 1
    # the worst cell (highest logMAR) is the yellow end of the map
    assert oracle.argmax() == np.ravel_multi_index((4, 3), oracle.shape)


@pytest.mark.parametrize("curve", [[[1, 0.9], [10, 0.1]], []])
def test_acuity_curve_draws_inside_its_rect(curve):
    result = parse_result(make_result(acuity_curve=curve))
    img, plot = _render(lambda p, r: draw_acuity_curve(p, r, result))
    assert QRectF(0, 0, 900, 700).contains(plot)
    inside = [img.pixelColor(x, y) for x in range(int(plot.left()) + 3, int(plot.right()) - 3, 7)
              for y in range(int(plot.top()) + 3, int(plot.bottom()) - 3, 7)]  # fmt: skip
    blue = sum(q.blue() > 120 and q.red() < 80 for q in inside)
    assert (blue > 0) == bool(curve)
