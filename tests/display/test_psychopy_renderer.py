"""PsychoPy renderer: the pipe protocol, child death and timeouts (always), pixels (when a
Python with PsychoPy and an X display are available)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import letter_height_px, logmar_for_height_mm
from visiontune.display.optotypes import LETTER_SETS, load_letter_set
from visiontune.display.psychopy_renderer import PsychoPyRenderer
from visiontune.display.renderer import Renderer, RendererError
from visiontune.errors import CalibrationError, InvalidInputError

CAL = Calibration(100.0, 100.0, 400, 400, 4000.0)  # 0.25 mm pitch, a 400 x 400 px window


@pytest.fixture
def null_renderer():
    r = PsychoPyRenderer(CAL, "sloan", backend="null", fullscreen=False, timeout_s=5.0)
    yield r
    r.close()


def test_protocol_round_trip(null_renderer):
    r = null_renderer
    assert isinstance(r, Renderer)
    assert r.info["backend"] == "null" and r.info["pid"] == r.pid
    r.show("K", 0.3)
    r.blank()
    with pytest.raises(RendererError, match="no pixels"):
        r.capture()  # an error inside the child comes back as an error, the child lives on
    r.show("O", 0.0)
    r.close()
    assert r._process.poll() == 0
    with pytest.raises(RendererError, match="closed"):
        r.show("O", 0.0)


def test_bad_requests_fail_in_the_parent(null_renderer):
    with pytest.raises(CalibrationError, match="logmar"):
        null_renderer.show("K", 2.5)
    with pytest.raises(InvalidInputError, match="letter"):
        null_renderer.show("A", 0.0)
    null_renderer.show("K", 0.0)  # still usable


def test_bad_construction_arguments():
    with pytest.raises(InvalidInputError, match="backend"):
        PsychoPyRenderer(CAL, "sloan", backend="opengl")
    with pytest.raises(InvalidInputError, match="name"):
        PsychoPyRenderer(CAL, "klingon", backend="null")


def test_child_death_is_an_error_not_a_hang(null_renderer):
    null_renderer._process.kill()
    t0 = time.monotonic()
    with pytest.raises(RendererError, match="exited"):
        null_renderer.show("K", 0.0)
    assert time.monotonic() - t0 < 2.0


def test_child_crash_during_request(null_renderer):
    with pytest.raises(RendererError, match=r"exited \(code 3\)"):
        null_renderer._request(("_crash",))


def test_timeout_stops_the_child():
    r = PsychoPyRenderer(CAL, "sloan", backend="null", fullscreen=False, timeout_s=0.3)
    t0 = time.monotonic()
    with pytest.raises(RendererError, match="did not answer"):
        r._request(("_sleep", 30))
    assert time.monotonic() - t0 < 3.0
    assert r._process.poll() is not None
    r.close()


def test_missing_psychopy_is_reported(monkeypatch):
    if importlib.util.find_spec("psychopy") is not None:
        pytest.skip("PsychoPy is installed in this interpreter")
    with pytest.raises(RendererError, match="psychopy"):
        PsychoPyRenderer(CAL, "sloan", fullscreen=False, start_timeout_s=30)


def test_parent_never_imports_psychopy_or_qt():
    code = (
        "import sys, visiontune.display.psychopy_renderer, visiontune.display.calibration;"
        "bad=[m for m in sys.modules if m.startswith(('psychopy', 'PySide6', 'PyQt', 'pyglet'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


# -- pixels: need a Python with PsychoPy and a display ------------------------------------
# .ci/run builds .venv-psychopy and exports VISIONTUNE_PSYCHOPY_PYTHON (PsychoPy is not a
# dependency of the main environment); Xvfb provides the display. Each window costs a few
# seconds to open, so the windows are shared per module.


def _psychopy_python():
    reason = os.environ.get("VISIONTUNE_PSYCHOPY_SKIP_REASON")
    explicit = os.environ.get("VISIONTUNE_PSYCHOPY_PYTHON")
    for py in filter(None, (explicit, sys.executable)):
        if subprocess.run([py, "-c", "import psychopy"], capture_output=True).returncode == 0:
            return py, None
    if explicit:
        return None, f"VISIONTUNE_PSYCHOPY_PYTHON={explicit} cannot import psychopy"
    return (
        None,
        reason
        or "no Python with PsychoPy: run .ci/run or set VISIONTUNE_PSYCHOPY_PYTHON (PsychoPy is not a dependency)",
    )


@pytest.fixture(scope="module")
def psychopy_display():
    py, reason = _psychopy_python()
    if py is None:
        pytest.skip(reason)
    if os.environ.get("DISPLAY"):
        yield py, os.environ["DISPLAY"]
        return
    if shutil.which("Xvfb") is None:
        pytest.skip("no DISPLAY and no Xvfb to provide one (apt-get install xvfb)")
    number = next(n for n in range(57, 200) if not os.path.exists(f"/tmp/.X{n}-lock"))
    xvfb = subprocess.Popen(
        ["Xvfb", f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not os.path.exists(f"/tmp/.X11-unix/X{number}") and time.monotonic() < deadline:
        time.sleep(0.05)
    yield py, f":{number}"
    xvfb.kill()
    xvfb.wait()


@pytest.fixture(scope="module")
def open_window(psychopy_display):
    """Factory: a PsychoPy window (child process) on the test display, one per calibration and
    letter set, shared by the module's tests and closed at module end."""
    py, display = psychopy_display
    mp = pytest.MonkeyPatch()
    mp.setenv("DISPLAY", display)
    opened = {}

    def factory(cal, letter_set):
        if (cal, letter_set) not in opened:
            opened[cal, letter_set] = PsychoPyRenderer(
                cal, letter_set, fullscreen=False, python=py, start_timeout_s=120
            )
        return opened[cal, letter_set]

    yield factory
    for r in opened.values():
        r.close()
    mp.undo()


def _calibration(distance_mm, pitch_mm, mirror=False):
    return Calibration(400 * pitch_mm, 400 * pitch_mm, 400, 400, distance_mm, mirror=mirror)


def _ink_box(gray):
    rows = np.flatnonzero((gray < 128).any(axis=1))
    cols = np.flatnonzero((gray < 128).any(axis=0))
    return rows[0], rows[-1] + 1, cols[0], cols[-1] + 1  # top, bottom, left, right (exclusive)


@pytest.mark.parametrize("distance_mm, pitch_mm", [(4000.0, 0.25), (6000.0, 0.311)], ids=["4m", "6m"])
def test_psychopy_ink_height_centre_and_mirror(open_window, distance_mm, pitch_mm):
    cal = _calibration(distance_mm, pitch_mm)
    plain = open_window(cal, "sloan")
    flipped = open_window(_calibration(distance_mm, pitch_mm, mirror=True), "sloan")
    ls = load_letter_set("sloan")
    for letter, s in [("C", -0.3), ("K", 0.0), ("Z", 0.3), ("R", 0.7), ("S", 1.0), ("H", -0.1)]:
        plain.show(letter, s)
        gray = plain.capture()
        assert gray.shape == (400, 400)
        top, bottom, left, right = _ink_box(gray)
        x0, y0, x1, y1 = ls.glyph(letter).ink_bounds
        k = letter_height_px(s, cal) / 5
        where = (letter, s, round(5 * k, 2))
        assert bottom - top == pytest.approx((y1 - y0) * k, abs=1.0), where
        assert right - left == pytest.approx((x1 - x0) * k, abs=1.0), where
        # centred: the design cell's centre (2.5, 2.5) is the window's centre (200, 200)
        assert (top + bottom) / 2 == pytest.approx(200 - ((y0 + y1) / 2 - 2.5) * k, abs=1.0), where
        assert (left + right) / 2 == pytest.approx(200 + ((x0 + x1) / 2 - 2.5) * k, abs=1.0), where
        # black on white: the optotype is the screen's black, far under 15% of the background
        assert gray.min() == 0 and np.median(gray) == 255, where
        flipped.show(letter, s)
        other = flipped.capture()
        assert np.mean(np.abs(other.astype(int) - np.fliplr(gray).astype(int)) > 64) < 0.002, where
    plain.blank()
    assert (plain.capture() > 250).all()


SIZES = np.round(np.arange(-0.3, 1.0001, 0.1), 1)


@pytest.mark.parametrize("distance_mm, pitch_mm", [(4000.0, 0.25), (6000.0, 0.311)], ids=["4m", "6m"])
@pytest.mark.parametrize("set_name", LETTER_SETS)
def test_psychopy_every_letter_at_every_size(open_window, set_name, distance_mm, pitch_mm):
    """The renderer's battery: every letter of every set, -0.3 to 1.0 logMAR in 0.1 steps; the ink box's
    height and width are the outline's bounds times the calibration's scale (±1 px), centred."""
    cal = _calibration(distance_mm, pitch_mm)
    r = open_window(cal, set_name)
    ls = load_letter_set(set_name)
    for s in SIZES:
        k = letter_height_px(s, cal) / 5
        for g in ls.glyphs:
            r.show(g.name, s)
            top, bottom, left, right = _ink_box(r.capture())
            x0, y0, x1, y1 = g.ink_bounds
            where = (g.name, s, round(5 * k, 2))
            assert bottom - top == pytest.approx((y1 - y0) * k, abs=1.0), where
            assert right - left == pytest.approx((x1 - x0) * k, abs=1.0), where
            assert (top + bottom) / 2 == pytest.approx(200 - ((y0 + y1) / 2 - 2.5) * k, abs=1.0), where
            assert (left + right) / 2 == pytest.approx(200 + ((x0 + x1) / 2 - 2.5) * k, abs=1.0), where


def test_psychopy_letters_of_a_set_are_pairwise_distinct(open_window):
    """All 26 letters at one size (50 px): every pair differs in at least 8% of the ink."""
    cal = _calibration(4000.0, 0.25)
    r = open_window(cal, "letters26")
    ls = load_letter_set("letters26")
    s = 0.934  # 50 px at 4 m on a 0.25 mm panel
    k = letter_height_px(s, cal) / 5
    masks = []
    for g in ls.glyphs:
        r.show(g.name, s)
        gray = r.capture()
        top, bottom, _, _ = _ink_box(gray)
        x0, y0, x1, y1 = g.ink_bounds
        assert bottom - top == pytest.approx((y1 - y0) * k, abs=1.0), g.name
        masks.append(gray < 128)
    masks = np.array(masks)
    for i in range(len(masks)):
        for j in range(i + 1, len(masks)):
            differ = np.mean(masks[i] != masks[j]) / max(masks[i].mean(), masks[j].mean())
            assert differ > 0.08, (ls.letters[i], ls.letters[j], differ)


def test_psychopy_landolt_gap_faces_the_asked_orientation(open_window):
    cal = _calibration(4000.0, 0.25)
    r = open_window(cal, "landolt_c")
    ls = load_letter_set("landolt_c")
    s = logmar_for_height_mm(101.0 * cal.pixel_pitch_mm, cal.viewing_distance_mm)  # 101 px tall
    k = letter_height_px(s, cal) / 5
    angles = np.radians(np.arange(0.0, 360.0, 0.5))
    for i, g in enumerate(ls.glyphs):
        r.show(g.name, s)
        gray = r.capture().astype(float)
        # sample the middle of the ring (radius 2 units) around the window's centre; y down
        xs = 200 + 2.0 * k * np.cos(angles) - 0.5
        ys = 200 - 2.0 * k * np.sin(angles) - 0.5
        light = gray[np.round(ys).astype(int), np.round(xs).astype(int)] > 128
        found = np.degrees(np.arctan2(np.sin(angles[light]).mean(), np.cos(angles[light]).mean()))
        assert ((found - 45.0 * i + 180) % 360) - 180 == pytest.approx(0.0, abs=2.0), g.name
        # a 1-unit gap at radius 2 spans 2 asin(0.25) = 28.96 degrees
        assert light.mean() * 360 == pytest.approx(np.degrees(2 * np.arcsin(0.25)), abs=3.0), g.name
