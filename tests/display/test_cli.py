"""`visiontune calibrate`: the three ways in, --show, and one-line errors (exit 2)."""

import json
import math
import stat

import pytest

from visiontune.display import cli
from visiontune.display.calibration import CARD_HEIGHT_MM, CARD_WIDTH_MM, Calibration, load_calibration
from visiontune.display.geometry import displayable_logmar_range

from .test_calibration import make_psychopy_monitor, psychopy_python

SIZE = ["--width-mm", "597.9", "--height-mm", "336.3", "--resolution", "1920x1080", "--distance-mm", "6000"]


def logmar_of_px(px, pitch_mm, distance_mm):
    """Oracle, written out: a letter ``px`` pixels tall subtends 2 atan(h / 2d); logMAR =
    log10(angle / 5 arcmin)."""
    angle_arcmin = math.degrees(2 * math.atan(px * pitch_mm / (2 * distance_mm))) * 60
    return math.log10(angle_arcmin / 5)


def calibrate(argv, path, capsys):
    rc = cli.main([*argv, "--file", str(path)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_physical_size_is_saved_private_and_reported(tmp_path, capsys):
    path = tmp_path / "cfg" / "calibration.json"
    rc, out, err = calibrate([*SIZE, "--mirror", "--background-cd-m2", "85"], path, capsys)
    assert (rc, err) == (0, "")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_calibration(path) == Calibration(597.9, 336.3, 1920, 1080, 6000.0, mirror=True, background_cd_m2=85.0)
    pitch = 336.3 / 1080
    lo, hi = logmar_of_px(5, pitch, 6000.0), logmar_of_px(1080, pitch, 6000.0)
    assert f"displayable {lo:+.3f} to {hi:+.3f} logMAR" in out
    # logMAR 0 at 6 m: 2 * 6000 * tan(2.5 arcmin) = 8.727 mm
    assert f"{2 * 6000 * math.tan(math.radians(2.5 / 60)):.3f} mm" in out
    assert "mirrored" in out and "within ISO 10938" in out


def test_card_measurement(tmp_path, capsys):
    path = tmp_path / "cal.json"
    # a 0.25 mm panel shows the card 342.4 x 215.92 px
    rc, out, _ = calibrate(["--card-px", str(CARD_WIDTH_MM / 0.25), str(CARD_HEIGHT_MM / 0.25),
                            "--resolution", "1920x1080", "--distance-mm", "4000"], path, capsys)
    assert rc == 0
    c = load_calibration(path)
    assert c.pixel_pitch_x_mm == pytest.approx(0.25) and c.pixel_pitch_mm == pytest.approx(0.25)
    assert (c.screen_width_mm, c.screen_height_mm) == (pytest.approx(480.0), pytest.approx(270.0))
    assert f"{logmar_of_px(5, 0.25, 4000.0):+.3f} to" in out


def test_show_prints_the_stored_calibration(tmp_path, capsys):
    path = tmp_path / "cal.json"
    assert calibrate([*SIZE, "--background-cd-m2", "100", "--optotype-cd-m2", "0.4"], path, capsys)[0] == 0
    rc, out, err = calibrate(["--show"], path, capsys)
    assert (rc, err) == (0, "")
    rng = displayable_logmar_range(load_calibration(path))
    assert f"{rng.min_logmar:+.3f} to {rng.max_logmar:+.3f} logMAR" in out
    assert "597.9 x 336.3 mm, 1920 x 1080 px" in out
    assert f"Weber contrast {1 - 0.4 / 100:.3f}" in out
    # a larger minimum ink height narrows the range from below only
    out10 = calibrate(["--show", "--min-ink-px", "10"], path, capsys)[1]
    assert f"{logmar_of_px(10, 336.3 / 1080, 6000.0):+.3f} to {rng.max_logmar:+.3f}" in out10


def test_nonstandard_background_needs_the_flag(tmp_path, capsys):
    path = tmp_path / "cal.json"
    rc, _, err = calibrate([*SIZE, "--background-cd-m2", "40"], path, capsys)
    assert rc == 2 and "80-320" in err and not path.exists()
    rc, out, _ = calibrate([*SIZE, "--background-cd-m2", "40", "--nonstandard-background"], path, capsys)
    assert rc == 0 and "OUTSIDE ISO 10938" in out
    assert json.loads(path.read_text())["background_nonstandard"] is True


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--width-mm", "0", *SIZE[2:]], "screen_width_mm"),
        (["--width-mm", "597.9", "--height-mm", "-336.3", *SIZE[4:]], "screen_height_mm"),
        ([*SIZE[:6], "--distance-mm", "400"], "viewing_distance_mm"),
        ([*SIZE[:6], "--distance-mm", "6"], "viewing_distance_mm"),
        ([*SIZE[:4], "--resolution", "0x1080", *SIZE[6:]], "--resolution"),
        ([*SIZE[:4], "--resolution", "full-hd", *SIZE[6:]], "--resolution"),
        ([*SIZE[:4], *SIZE[6:]], "--resolution"),
        (SIZE[:6], "--distance-mm"),
        (["--width-mm", "597.9", *SIZE[4:]], "--height-mm"),
        ([*SIZE[:4], "--resolution", "1920x1920", *SIZE[6:]], "square"),
        ([*SIZE, "--card-px", "342", "216"], "one way"),
        (["--card-px", "0", "216", *SIZE[4:]], "card_width_px"),
        ([*SIZE, "--optotype-cd-m2", "30", "--background-cd-m2", "100"], "optotype_cd_m2"),
        ([*SIZE, "--min-ink-px", "2000"], "min_ink_px"),
        (["--resolution", "1920x1080"], "screen size"),
        ([], "nothing to do"),
        (["--show"], "no screen calibration"),
    ],
)
def test_impossible_values_are_one_line_exit_2(tmp_path, capsys, argv, names):
    path = tmp_path / "cal.json"
    rc, out, err = calibrate(argv, path, capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("visiontune calibrate: error: ")
    assert names in err
    assert not path.exists()  # nothing saved


def test_psychopy_monitor(tmp_path, capsys, monkeypatch):
    py = psychopy_python()
    make_psychopy_monitor(py, tmp_path, "lane4m", 48.0, 400.0, (1920, 1080))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("VISIONTUNE_PSYCHOPY_PYTHON", py)
    path = tmp_path / "cal.json"
    rc, out, err = calibrate(["--psychopy-monitor", "lane4m", "--mirror"], path, capsys)
    assert (rc, err) == (0, ""), err
    assert load_calibration(path) == Calibration(480.0, 270.0, 1920, 1080, 4000.0, mirror=True)
    # the lane's measured distance overrides the profile's
    assert calibrate(["--psychopy-monitor", "lane4m", "--distance-mm", "6000"], path, capsys)[0] == 0
    assert load_calibration(path).viewing_distance_mm == 6000.0
    rc, _, err = calibrate(["--psychopy-monitor", "lane4m", "--resolution", "800x600"], path, capsys)
    assert rc == 2 and "--resolution" in err
    rc, _, err = calibrate(["--psychopy-monitor", "nope"], path, capsys)
    assert rc == 2 and "no PsychoPy monitor named 'nope'" in err


def test_works_as_visiontune_calibrate(tmp_path, capsys):
    """Through the top-level entry point."""
    from visiontune import cli as top

    path = tmp_path / "cal.json"
    assert top.main(["calibrate", *SIZE, "--file", str(path)]) == 0
    assert load_calibration(path).viewing_distance_mm == 6000.0
    capsys.readouterr()
    assert top.main(["calibrate", "--width-mm", "0", *SIZE[2:], "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "screen_width_mm" in err
