"""Report figures: the colour map, cell edges, the heat map's pixels against the acuity values
computed independently (Blendowske ``log10(1 + β²)`` of the true correction), and where slider
answers are marked (the lens chosen, the knob's path)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from report_helpers import MAP_CYLINDER, MAP_SPHERE, blendowske_va, make_result

from visiontune.optics import Prescription as Lens
from visiontune.refraction.result import parse_result
from visiontune.refraction.trial import Trial
from visiontune.report.figures import (
    VIRIDIS_ANCHORS,
    acuity_colours,
    cell_edges,
    colormap,
    draw_acuity_curve,
    draw_acuity_map,
    letters_on_map,
    set_font,
    sliders_on_map,
)
from visiontune.report.map_marks import (
    LETTER_MISSED_RGB,
    LETTER_READ_RGB,
    SLIDER_RGB,
    LetterMark,
    SliderMark,
    path_polyline,
)


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


def _trial(i: int, s: float, c: float, void: bool, correct: bool = True) -> Trial:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    return Trial(i, 0.0, Lens(s, c, 90.0), "C", correct, "C" if correct else "D", t, t, void=void, session_id=1)


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
    trials = [_trial(0, 0.0, 1.0, False, correct=False), _trial(1, -3.0, -2.0, True), _trial(2, 1.0, -1.0, False)]
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
            if (s, c) in ((0.0, 1.0), (1.0, -1.0)):
                continue  # covered by a letter's dot
            expected = np.rint(acuity_colours(oracle[i, j], lo, hi)).astype(int)
            assert np.abs(pixel(s, c) - expected).max() <= 1, (s, c)
    np.testing.assert_array_equal(pixel(0.0, 1.0), LETTER_MISSED_RGB)  # a letter missed through it: a red dot
    np.testing.assert_array_equal(pixel(1.0, -1.0), LETTER_READ_RGB)  # a letter read through it: a green dot
    # the voided lens is hollow: its centre keeps the cell colour
    expected = acuity_colours(oracle[0, 0], lo, hi).astype(int)
    assert np.abs(pixel(-3.0, -2.0) - expected).max() <= 1
    # the best cell (lowest logMAR) is the bright yellow end of the map, the worst the dark one, as in the app
    best, worst = np.unravel_index(oracle.argmin(), oracle.shape), np.unravel_index(oracle.argmax(), oracle.shape)
    np.testing.assert_array_equal(pixel(MAP_SPHERE[best[0]], MAP_CYLINDER[best[1]]), VIRIDIS_ANCHORS[-1])
    np.testing.assert_array_equal(pixel(MAP_SPHERE[worst[0]], MAP_CYLINDER[worst[1]]), VIRIDIS_ANCHORS[0])


@pytest.mark.parametrize("curve", [[[1, 0.9], [10, 0.1]], []])
def test_acuity_curve_draws_inside_its_rect(curve):
    result = parse_result(make_result(acuity_curve=curve))
    img, plot = _render(lambda p, r: draw_acuity_curve(p, r, result))
    assert QRectF(0, 0, 900, 700).contains(plot)
    inside = [
        img.pixelColor(x, y)
        for x in range(int(plot.left()) + 3, int(plot.right()) - 3, 7)
        for y in range(int(plot.top()) + 3, int(plot.bottom()) - 3, 7)
    ]
    blue = sum(q.blue() > 120 and q.red() < 80 for q in inside)
    assert (blue > 0) == bool(curve)


def _slider(i: int, knob: str, path: list[tuple[float, float, float]], choice: int, void: bool = False) -> Trial:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    lenses = tuple(Lens(*x) for x in path)
    return Trial(
        i,
        0.1,
        lenses[choice],
        "C",
        False,
        None,
        t,
        t,
        void=void,
        slider_knob=knob,
        slider_lenses=lenses,
        slider_choice=choice,
        session_id=1,
    )


def test_sliders_are_marked_at_the_lens_chosen_with_their_path_at_the_maps_axis():
    """Map at axis 30: a sphere knob at axis 30 (its whole path, chosen -1.0 D); a cylinder knob
    at 35 ending at plano (axis 0, on every map); an axis knob 10..50 (only 20..40 lie within
    10 degrees); a sphere knob at axis 90 (off the map); a sphere knob at 115 in plus cylinder
    (the same lenses as (S + C, -C) at 25: transposed); a letter and a comparison."""
    t = datetime(2026, 1, 1, tzinfo=UTC)
    sphere = _slider(0, "sphere", [(-1.5, -1.0, 30.0), (-1.25, -1.0, 30.0), (-1.0, -1.0, 30.0), (-0.75, -1.0, 30.0)], 2)
    cylinder = _slider(1, "cylinder", [(0.5, -0.5, 35.0), (0.5, -0.25, 35.0), (0.5, 0.0, 0.0)], 1, void=True)
    axis = _slider(2, "axis", [(0.0, -1.0, a) for a in (10.0, 20.0, 30.0, 40.0, 50.0)], 1)
    away = _slider(3, "sphere", [(-2.0, -1.0, 90.0), (-1.75, -1.0, 90.0)], 0)
    plus = _slider(6, "sphere", [(-2.0, 0.75, 115.0), (-1.75, 0.75, 115.0)], 1)
    letter = Trial(4, 0.2, Lens(-1.0, -1.0, 30.0), "C", True, "C", t, t, session_id=1)
    comparison = Trial(
        5, 0.2, Lens(-1.0, -1.0, 30.0), "C", True, None, t, t, lens2=Lens(0.0, -1.0, 30.0), comparison="1", session_id=1
    )
    trials = [sphere, cylinder, axis, away, letter, comparison, plus]
    assert sliders_on_map(trials, 30.0) == [
        SliderMark("sphere", (-1.0, -1.0), ((-1.5, -1.0), (-1.25, -1.0), (-1.0, -1.0), (-0.75, -1.0))),
        SliderMark("cylinder", (0.5, -0.25), ((0.5, -0.5), (0.5, -0.25), (0.5, 0.0)), void=True),
        SliderMark("axis", (0.0, -1.0), ((0.0, -1.0),) * 3),
        SliderMark("sphere", (-1.0, -0.75), ((-1.25, -0.75), (-1.0, -0.75))),
    ]
    assert [m.knob for m in sliders_on_map(trials, None)] == ["sphere", "cylinder", "axis", "sphere", "sphere"]
    # sliders and comparisons are not letter dots
    assert letters_on_map(trials, 30.0) == [LetterMark((-1.0, -1.0), True)]
    line = path_polyline(sliders_on_map(trials, 30.0))
    assert line.shape == (2, 4 + 1 + 3 + 1 + 3 + 1 + 2 + 1) and np.isnan(line[:, [4, 8, 12, 15]]).all()
    np.testing.assert_array_equal(line[:, :4], [[-1.5, -1.25, -1.0, -0.75], [-1.0] * 4])


def test_the_lens_chosen_on_a_slider_is_a_blue_diamond_on_the_map():
    result = parse_result(make_result())  # a map without an axis: every lens is on it
    chosen = _slider(0, "sphere", [(-2.0, 0.0, 90.0), (-1.0, 0.0, 90.0), (0.0, 0.0, 90.0)], 1)
    img, plot = _render(lambda p, r: draw_acuity_map(p, r, result, [chosen]))
    xs, ys = (MAP_SPHERE[0] - 0.5, MAP_SPHERE[-1] + 0.5), (MAP_CYLINDER[0] - 0.5, MAP_CYLINDER[-1] + 0.5)
    x = plot.left() + (-1.0 - xs[0]) / (xs[1] - xs[0]) * plot.width()
    y = plot.bottom() - (0.0 - ys[0]) / (ys[1] - ys[0]) * plot.height()
    q = img.pixelColor(int(x), int(y))
    assert (q.red(), q.green(), q.blue()) == SLIDER_RGB


def test_the_engine_sessions_sliders_are_marked_at_their_lenses(store, slider_session):
    """Every slider of the SIMULATED engine session at the map's axis is marked at its chosen
    lens's sphere and cylinder, its path through its lenses' values."""
    from visiontune.report import load_session

    record = load_session(store, slider_session)
    axis = record.result.map_axis_deg
    near = [
        t
        for t in record.trials
        if t.slider_choice is not None and abs((t.lens.axis_deg - axis + 90.0) % 180.0 - 90.0) <= 10.0
    ]
    marks = sliders_on_map(record.trials, axis)
    assert len(near) >= 2 and len(marks) == len(near)
    for t, m in zip(near, marks, strict=True):
        assert m.chosen == (t.lens.sphere_d, t.lens.cylinder_d) and m.knob == t.slider_knob and m.void == t.void
        assert m.path == tuple((x.sphere_d, x.cylinder_d) for x in t.slider_lenses)
