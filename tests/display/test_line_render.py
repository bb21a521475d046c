"""A chart line on the patient screen: each letter where a letter drawn alone at its place would be,
one letter width apart (Bailey & Lovie 1976), mirrored as a whole; the widest line a screen shows."""

import math

import numpy as np
import pytest

pytest.importorskip("PySide6")

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import largest_line_logmar, letter_height_px, line_centres_px, line_width_px
from visiontune.display.optotypes import load_letter_set
from visiontune.display.qt_renderer import PatientWindow, qimage_to_gray, render_glyph_image, render_line_image
from visiontune.errors import CalibrationError, InvalidInputError

CAL_4M = Calibration(480.0, 270.0, 1920, 1080, 4000.0)  # 0.25 mm pitch
INK = 128


def test_line_centres_are_two_heights_apart_around_the_centre():
    assert line_centres_px(5, 10.0, 100.0) == [60.0, 80.0, 100.0, 120.0, 140.0]
    assert line_centres_px(1, 7.0, 3.0) == [3.0]
    assert line_width_px(5, 10.0) == 90.0  # 5 letters and 4 gaps, each a letter height
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="n_letters"):
            line_centres_px(bad, 10.0)
    with pytest.raises(InvalidInputError, match="letter_height_px"):
        line_centres_px(3, 0.0)


def test_each_letter_of_a_line_is_the_letter_drawn_alone_at_its_place(qapp):
    """Oracle: one letter alone, rendered centred in a cell ``2 h`` wide, at each place: the line's
    image is those cells side by side (a pitch of an even number of pixels keeps the grid aligned)."""
    ls = load_letter_set("sloan")
    letters = "DKNRS"
    h = 24.0  # a pitch of 48 px
    width, height = 5 * 48, 40
    line = qimage_to_gray(render_line_image([ls.glyph(x) for x in letters], h, (width, height)))
    alone = np.hstack([qimage_to_gray(render_glyph_image(ls.glyph(x), h, (48, height))) for x in letters])
    assert line.shape == alone.shape
    assert np.abs(line.astype(int) - alone.astype(int)).max() <= 2  # rasteriser rounding only
    # one letter width of white between the letters' cells: no ink within h/2 of a cell's edge
    cols = (line < INK).any(axis=0)
    for j in range(1, 5):
        assert not cols[48 * j - 10 : 48 * j + 10].any()
    mirrored = qimage_to_gray(render_line_image([ls.glyph(x) for x in letters], h, (width, height), mirror=True))
    assert np.abs(mirrored.astype(int) - np.fliplr(line).astype(int)).max() <= 2  # the whole line flipped


def test_the_patient_window_draws_a_line_and_refuses_one_wider_than_the_screen(qtbot):
    ls = load_letter_set("sloan")
    win = PatientWindow(CAL_4M, ls)
    qtbot.addWidget(win)
    win.resize(640, 200)
    win.show_line("CHOVZ", 0.3)
    qtbot.waitExposed(win)
    h = letter_height_px(0.3, CAL_4M)
    assert win.current == ("CHOVZ", pytest.approx(h))
    shot = qimage_to_gray(win.grab().toImage())
    expected = qimage_to_gray(render_line_image([ls.glyph(x) for x in "CHOVZ"], h, (640, 200)))
    assert np.abs(shot.astype(int) - expected.astype(int)).max() <= 2 and (shot < INK).any()
    # oracle: the widest 5-letter line is 1920 px = 9 letter heights, at 0.25 mm a pixel and 4 m
    top = math.log10(2 * math.degrees(math.atan(1920 / 9 * 0.25 / 2 / 4000.0)) * 60 / 5)
    assert largest_line_logmar(CAL_4M, 5) == pytest.approx(top, abs=1e-12)
    assert win.line_fits(5, top - 0.01) and not win.line_fits(5, top + 0.01)
    with pytest.raises(CalibrationError, match="1920 px wide"):
        win.show_line("CHOVZ", top + 0.01)
    with pytest.raises(InvalidInputError, match="letter"):
        win.show_line("CHOVA", 0.3)
    assert win.current == ("CHOVZ", pytest.approx(h))  # a refused line leaves the screen as it was
    win.show("H", 0.3)
    assert win.current == ("H", pytest.approx(h))
    win.blank()
    assert win.current is None


def test_the_psychopy_renderer_sends_a_line_placed_and_checked_here():
    """The null backend (no PsychoPy needed) keeps what it was asked to draw: the letters, the
    height and the centres, computed in the parent; a line too wide or a wrong letter never reaches it."""
    from visiontune.display.psychopy_renderer import PsychoPyRenderer

    cal = Calibration(100.0, 100.0, 400, 400, 4000.0)  # 0.25 mm a pixel, a 400 px wide window
    with PsychoPyRenderer(cal, "sloan", backend="null", fullscreen=False, timeout_s=5.0) as r:
        r.show_line("DKNRS", 0.2)
        h = letter_height_px(0.2, cal)
        names, height, centres = r._request(("_state",))
        assert names == "DKNRS" and height == pytest.approx(h)
        assert centres == pytest.approx((-4 * h, -2 * h, 0.0, 2 * h, 4 * h))
        top = largest_line_logmar(cal, 5)
        with pytest.raises(CalibrationError, match="wider than this screen"):
            r.show_line("DKNRS", top + 0.01)
        with pytest.raises(InvalidInputError, match="letter"):
            r.show_line("DKNRA", 0.2)
        assert r._request(("_state",))[0] == "DKNRS"  # nothing sent: the line shown before stays
        r.show("K", 0.2)
        assert r._request(("_state",)) == ("K", pytest.approx(h))
