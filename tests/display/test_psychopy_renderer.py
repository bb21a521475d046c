"""PsychoPy renderer: the pipe protocol, child death and timeouts (always), pixels (when a
Python with PsychoPy and an X display are available)."""

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import letter_height_px
from visiontune.display.optotypes import load_letter_set
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
    try:
        import psychopy  # noqa: F401
    except ImportError:
        pass
    else:
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

def _psychopy_python():
    candidates = [os.environ.get("VISIONTUNE_PSYCHOPY_PYTHON"), sys.executable]
    for py in filter(None, candidates):
        if subprocess.run([py, "-c", "import psychopy"], capture_output=True).returncode == 0:
            return py
    return None


@pytest.fixture(scope="module")
def psychopy_display():
    py = _psychopy_python()
    if py is None:
        pytest.skip("no Python with PsychoPy: set VISIONTUNE_PSYCHOPY_PYTHON to one (PsychoPy is not a dependency)")
    if os.environ.get("DISPLAY"):
        yield py, os.environ["DISPLAY"]
        return
    if shutil.which("Xvfb") is None:
        pytest.skip("no DISPLAY and no Xvfb to provide one")
    number = next(n for n in range(57, 200) if not os.path.exists(f"/tmp/.X{n}-lock"))
    xvfb = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(f"/tmp/.X11-unix/X{number}") and time.monotonic() < deadline:
        time.sleep(0.05)
    yield py, f":{number}"
    xvfb.kill()
    xvfb.wait()


def _ink_rows(gray):
    rows = np.flatnonzero((gray < 128).any(axis=1))
    return rows[0], rows[-1] + 1


@pytest.mark.slow  # ~10-20 s each: 30 letter/size pairs, two windows
@pytest.mark.parametrize("distance_mm, pitch_mm", [(4000.0, 0.25), (6000.0, 0.311)], ids=["4m", "6m"])
def test_psychopy_ink_height_and_mirror(psychopy_display, monkeypatch, distance_mm, pitch_mm):
    py, display = psychopy_display
    monkeypatch.setenv("DISPLAY", display)
    cal = Calibration(400 * pitch_mm, 400 * pitch_mm, 400, 400, distance_mm)
    mirrored = Calibration(400 * pitch_mm, 400 * pitch_mm, 400, 400, distance_mm, mirror=True)
    sizes = (-0.3, 0.3, 1.0)
    with PsychoPyRenderer(cal, "sloan", fullscreen=False, python=py) as plain, \
         PsychoPyRenderer(mirrored, "sloan", fullscreen=False, python=py) as flipped:
        for letter in load_letter_set("sloan").letters:
            for s in sizes:
                plain.show(letter, s)
                gray = plain.capture()
                assert gray.shape == (400, 400)
                top, bottom = _ink_rows(gray)
                x0, y0, x1, y1 = load_letter_set("sloan").glyph(letter).ink_bounds
                k = letter_height_px(s, cal) / 5
                assert bottom - top == pytest.approx((y1 - y0) * k, abs=1.0), (letter, s)
                assert (top + bottom) / 2 == pytest.approx(200 - ((y0 + y1) / 2 - 2.5) * k, abs=1.0), (letter, s)
                flipped.show(letter, s)
                other = flipped.capture()
                assert np.mean(np.abs(other.astype(int) - np.fliplr(gray).astype(int)) > 64) < 0.002, (letter, s)
        plain.blank()
        assert (plain.capture() > 250).all()
