"""Screen calibration: validation, card measurement, per-machine storage, PsychoPy import."""

import json
import stat
import sys
import types

import pytest

from visiontune.display import calibration as cal_mod
from visiontune.display.calibration import (
    CARD_HEIGHT_MM,
    CARD_WIDTH_MM,
    Calibration,
    default_calibration_path,
    from_psychopy_monitor,
    load_calibration,
    save_calibration,
)
from visiontune.errors import CalibrationError

GOOD = dict(screen_width_mm=480.0, screen_height_mm=270.0, width_px=1920, height_px=1080, viewing_distance_mm=4000.0)


def test_pixel_pitch():
    c = Calibration(**GOOD)
    assert c.pixel_pitch_x_mm == pytest.approx(0.25)
    assert c.pixel_pitch_mm == pytest.approx(0.25)
    assert c.mirror is False and c.background_cd_m2 is None


@pytest.mark.parametrize(
    "field, value",
    [
        ("screen_width_mm", 0),
        ("screen_width_mm", -480),
        ("screen_height_mm", 0.0),
        ("screen_height_mm", float("nan")),
        ("width_px", 0),
        ("height_px", 0),
        ("height_px", 1080.5),
        ("viewing_distance_mm", 499.0),
        ("viewing_distance_mm", -4000),
        ("viewing_distance_mm", 4.0),
        ("background_cd_m2", -85),
        ("mirror", "yes"),
    ],
)
def test_impossible_calibrations_name_the_field(field, value):
    with pytest.raises(CalibrationError, match=field):
        Calibration(**{**GOOD, field: value})


def test_non_square_pixels_rejected():
    with pytest.raises(CalibrationError, match="square"):
        Calibration(**{**GOOD, "screen_height_mm": 300.0})


def test_half_metre_is_accepted():
    assert Calibration(**{**GOOD, "viewing_distance_mm": 500.0}).viewing_distance_mm == 500.0


def test_from_card():
    # A 0.2 mm-pitch screen shows the card as 428 x 269.9 px.
    c = Calibration.from_card(CARD_WIDTH_MM / 0.2, CARD_HEIGHT_MM / 0.2, 2560, 1440, 6000.0, mirror=True)
    assert c.screen_width_mm == pytest.approx(512.0)
    assert c.screen_height_mm == pytest.approx(288.0)
    assert c.pixel_pitch_mm == pytest.approx(0.2)
    assert c.mirror is True
    with pytest.raises(CalibrationError, match="card_width_px"):
        Calibration.from_card(0, 270, 2560, 1440, 6000.0)


def test_save_load_roundtrip_private_file(tmp_path):
    c = Calibration(**GOOD, mirror=True, background_cd_m2=85.0)
    path = save_calibration(c, tmp_path / "sub" / "cal.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_calibration(path) == c


def test_default_path_in_user_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert default_calibration_path() == tmp_path / "visiontune" / "calibration.json"
    c = Calibration(**GOOD)
    save_calibration(c)
    assert load_calibration() == c


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no screen calibration"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "height_px"}), "height_px"),
        (json.dumps({**GOOD, "colour": "red"}), "colour"),
        (json.dumps({**GOOD, "viewing_distance_mm": 40}), "viewing_distance_mm"),
    ],
)
def test_load_errors_are_clear(tmp_path, content, message):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


def test_from_psychopy_monitor_with_fake_module(monkeypatch):
    """The conversion from Monitor Center units (cm) to ours, on a stand-in module."""

    class FakeMonitor:
        def __init__(self, name):
            self.name = name

        def getWidth(self):  # noqa: N802
            return 53.0

        def getDistance(self):  # noqa: N802
            return 400.0

        def getSizePix(self):  # noqa: N802
            return [1920, 1080]

    monitors = types.SimpleNamespace(Monitor=FakeMonitor, getAllMonitors=lambda: ["lane1"])
    package = types.ModuleType("psychopy")
    package.monitors = monitors
    monkeypatch.setitem(sys.modules, "psychopy", package)
    monkeypatch.setitem(sys.modules, "psychopy.monitors", monitors)
    c = from_psychopy_monitor("lane1", mirror=True)
    assert c.screen_width_mm == pytest.approx(530.0)
    assert c.screen_height_mm == pytest.approx(530.0 * 1080 / 1920)
    assert c.viewing_distance_mm == pytest.approx(4000.0)
    assert (c.width_px, c.height_px, c.mirror) == (1920, 1080, True)
    with pytest.raises(CalibrationError, match="no PsychoPy monitor"):
        from_psychopy_monitor("lane2")


def test_from_psychopy_monitor_without_psychopy(monkeypatch):
    monkeypatch.setitem(sys.modules, "psychopy", None)  # import fails as if not installed
    with pytest.raises(CalibrationError, match="PsychoPy is not installed"):
        from_psychopy_monitor("lane1")


def test_module_does_not_import_psychopy():
    assert "psychopy" not in cal_mod.__dict__
