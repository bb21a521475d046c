"""Qt renderer: the ink on the captured image has the size the calibration asks for."""

import numpy as np
import pytest

pytest.importorskip("PySide6")

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import letter_height_px
from visiontune.display.optotypes import LETTER_SETS, load_letter_set
from visiontune.display.qt_renderer import PatientWindow, qimage_to_gray, render_glyph_image
from visiontune.display.renderer import Renderer
from visiontune.errors import CalibrationError, InvalidInputError

CAL_4M = Calibration(480.0, 270.0, 1920, 1080, 4000.0)  # 0.25 mm pitch
CAL_6M = Calibration(597.9, 336.3, 1920, 1080, 6000.0)  # 27" 1080p, 0.311 mm pitch
SIZES = np.round(np.arange(-0.3, 1.0001, 0.1), 1)
INK = 128  # a pixel is ink when more than half covered


def render(glyph, h_px, mirror=False, pad=6):
    side = int(np.ceil(h_px)) + 2 * pad + (int(np.ceil(h_px)) % 2)
    return qimage_to_gray(render_glyph_image(glyph, h_px, (side, side), mirror=mirror))


def polygon_centroid(rings):
    """Oracle: area-weighted centroid of signed rings (shoelace), grid units."""
    a_tot = cx = cy = 0.0
    for r in rings:
        x, y = r[:, 0], r[:, 1]
        xn, yn = np.roll(x, -1), np.roll(y, -1)
        cross = x * yn - xn * y
        a_tot += cross.sum() / 2
        cx += ((x + xn) * cross).sum() / 6
        cy += ((y + yn) * cross).sum() / 6
    return cx / a_tot, cy / a_tot


def ink_box(gray):
    rows = np.flatnonzero((gray < INK).any(axis=1))
    cols = np.flatnonzero((gray < INK).any(axis=0))
    return rows[0], rows[-1] + 1, cols[0], cols[-1] + 1  # top, bottom, left, right (exclusive)


@pytest.mark.parametrize("cal", [CAL_4M, CAL_6M], ids=["4m", "6m"])
@pytest.mark.parametrize("set_name", LETTER_SETS)
def test_ink_height_and_centre_match_calibration(qapp, cal, set_name):
    ls = load_letter_set(set_name)
    for s in SIZES:
        h_px = letter_height_px(s, cal)
        k = h_px / ls.design_height
        for g in ls.glyphs:
            gray = render(g, h_px)
            top, bottom, left, right = ink_box(gray)
            x0, y0, x1, y1 = g.ink_bounds
            where = f"{set_name}/{g.name} at {s} logMAR ({h_px:.2f} px)"
            assert bottom - top == pytest.approx((y1 - y0) * k, abs=1.5), where  # 50%-covered rows
            # sub-pixel ink height: the coverage of each row's most covered pixel, summed
            coverage = 1.0 - gray / 255.0
            assert coverage.max(axis=1).sum() == pytest.approx((y1 - y0) * k, abs=1.0), where
            cy, cx = gray.shape[0] / 2, gray.shape[1] / 2
            assert (top + bottom) / 2 == pytest.approx(cy - ((y0 + y1) / 2 - 2.5) * k, abs=1.0), where
            # centred: the ink's centre of mass is where the outline's centroid maps to
            ink = coverage
            rows, cols = np.indices(gray.shape) + 0.5
            gx, gy = polygon_centroid(g.rings)
            assert (ink * cols).sum() / ink.sum() == pytest.approx(cx + (gx - 2.5) * k, abs=0.25), where
            assert (ink * rows).sum() / ink.sum() == pytest.approx(cy - (gy - 2.5) * k, abs=0.25), where


@pytest.mark.parametrize("set_name", LETTER_SETS)
def test_mirrored_is_horizontal_flip(qapp, set_name):
    for g in load_letter_set(set_name).glyphs:
        for h_px in (17.3, 60.0):
            plain, mirrored = render(g, h_px), render(g, h_px, mirror=True)
            diff = np.abs(mirrored.astype(int) - np.fliplr(plain).astype(int))
            assert diff.max() <= 2, g.name  # rasteriser rounding only
            assert not np.array_equal(plain, mirrored) or np.array_equal(plain, np.fliplr(plain))


@pytest.mark.parametrize("set_name", LETTER_SETS)
def test_letters_of_a_set_are_pairwise_distinct(qapp, set_name):
    ls = load_letter_set(set_name)
    masks = np.array([render(g, 40.0) < INK for g in ls.glyphs])
    n = len(masks)
    for i in range(n):
        for j in range(i + 1, n):
            differ = np.mean(masks[i] != masks[j]) / max(masks[i].mean(), masks[j].mean())
            assert differ > 0.08, (ls.letters[i], ls.letters[j], differ)


def test_landolt_gap_faces_the_asked_orientation(qapp):
    ls = load_letter_set("landolt_c")
    h_px = 101.0
    k = h_px / 5
    angles = np.radians(np.arange(0.0, 360.0, 0.5))
    for i, g in enumerate(ls.glyphs):
        gray = render(g, h_px).astype(float)
        cy, cx = gray.shape[0] / 2, gray.shape[1] / 2
        # sample the middle of the ring (radius 2 units); image y points down
        xs = cx + 2.0 * k * np.cos(angles) - 0.5
        ys = cy - 2.0 * k * np.sin(angles) - 0.5
        light = gray[np.round(ys).astype(int), np.round(xs).astype(int)] > INK
        # the gap is the only light arc: its circular mean is the gap direction
        found = np.degrees(np.arctan2(np.sin(angles[light]).mean(), np.cos(angles[light]).mean()))
        assert ((found - 45.0 * i + 180) % 360) - 180 == pytest.approx(0.0, abs=2.0), g.name
        # its angular width: a 1-unit chord at radius 2 -> 2 asin(0.25) = 28.96 degrees
        assert light.mean() * 360 == pytest.approx(np.degrees(2 * np.arcsin(0.25)), abs=3.0)


def test_render_rejects_bad_arguments(qapp):
    g = load_letter_set("sloan").glyph("H")
    with pytest.raises(InvalidInputError, match="height_px"):
        render_glyph_image(g, 0.0, (50, 50))
    with pytest.raises(InvalidInputError, match="size"):
        render_glyph_image(g, 10.0, (0, 50))


def test_patient_window_draws_what_render_draws(qtbot):
    cal = Calibration(480.0, 270.0, 1920, 1080, 4000.0, mirror=True)
    ls = load_letter_set("sloan")
    win = PatientWindow(cal, ls)
    qtbot.addWidget(win)
    assert isinstance(win, Renderer)
    win.resize(320, 240)
    win.show("R", 0.5)
    qtbot.waitExposed(win)
    assert win.current == ("R", pytest.approx(letter_height_px(0.5, cal)))
    shot = qimage_to_gray(win.grab().toImage())
    expected = qimage_to_gray(render_glyph_image(ls.glyph("R"), letter_height_px(0.5, cal), (320, 240), mirror=True))
    assert shot.shape == expected.shape
    assert np.abs(shot.astype(int) - expected.astype(int)).max() <= 2
    assert (shot < INK).any()
    win.blank()
    assert win.current is None
    assert (qimage_to_gray(win.grab().toImage()) == 255).all()


def test_patient_window_refuses_what_it_cannot_show(qtbot):
    win = PatientWindow(CAL_4M, load_letter_set("sloan"))
    qtbot.addWidget(win)
    with pytest.raises(CalibrationError, match="logmar"):
        win.show("H", 3.0)
    with pytest.raises(CalibrationError, match="logmar"):
        win.show("H", -1.0)  # 1.2 px at 4 m on a 0.25 mm panel
    with pytest.raises(InvalidInputError, match="letter"):
        win.show("A", 0.0)
    with pytest.raises(InvalidInputError, match="both"):
        win.show("H")
    assert win.current is None


def test_rendering_does_not_drain_none_refcount(qapp):
    """PySide6 6.12.0 on Python 3.11 drops a reference to None on every void Qt call and
    aborts the interpreter after a few hundred thousand ("none_dealloc"); pyproject.toml
    excludes it. 200 glyphs make ~100k such calls: on a bad binding None's count falls by that much."""
    import sys

    glyphs = load_letter_set("letters26").glyphs
    before = sys.getrefcount(None)
    for i in range(200):
        render_glyph_image(glyphs[i % 26], 30.0 + i % 7, (40, 40))
    assert sys.getrefcount(None) >= before - 50


def test_patient_window_fullscreen_on_a_chosen_screen(qtbot, qapp):
    screen = qapp.primaryScreen()
    win = PatientWindow(CAL_4M, load_letter_set("landolt_c"), screen=screen, fullscreen=True)
    qtbot.addWidget(win)
    win.show("up", 0.0)
    qtbot.waitExposed(win)
    assert win.isFullScreen()
    assert win.screen() is screen
    win.close()
    assert not win.isVisible()


def test_black_on_white_meets_the_contrast_standard(qapp):
    """ISO 8596/10938 want the optotype at most 15% of the background's luminance: the
    renderer draws RGB 0 on RGB 255, i.e. the screen's black level on its white."""
    for set_name in LETTER_SETS:
        g = load_letter_set(set_name).glyphs[0]
        gray = render(g, 60.0)
        assert gray.min() == 0, set_name  # the stroke's core is full black
        assert gray[0].min() == 255 and np.median(gray) == 255, set_name  # background full white
