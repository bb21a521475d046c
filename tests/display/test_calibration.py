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

        def getWidth(self):
            return 53.0

        def getDistance(self):
            return 400.0

        def getSizePix(self):
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
    monkeypatch.delenv("VISIONTUNE_PSYCHOPY_PYTHON", raising=False)
    with pytest.raises(CalibrationError, match="PsychoPy is not installed"):
        from_psychopy_monitor("lane1")


def test_module_does_not_import_psychopy():
    assert "psychopy" not in cal_mod.__dict__


# -- luminance (ISO 10938:2016 background 80-320 cd/m^2; optotype <= 15% of it) -----------


@pytest.mark.parametrize("lb", [80.0, 85.0, 320.0])
def test_background_inside_iso_range_accepted(lb):
    c = Calibration(**GOOD, background_cd_m2=lb)
    assert c.background_cd_m2 == lb and c.background_nonstandard is False
    assert "within ISO 10938" in c.luminance_notes[0]


@pytest.mark.parametrize("lb", [79.9, 40.0, 320.1, 1000.0])
def test_background_outside_iso_range_is_an_error_naming_field_and_range(lb):
    with pytest.raises(CalibrationError, match=r"background_cd_m2: .*80-320 cd/m\^2"):
        Calibration(**GOOD, background_cd_m2=lb)


def test_deliberate_nonstandard_background_is_recorded(tmp_path):
    c = Calibration(**GOOD, background_cd_m2=40.0, background_nonstandard=True)
    assert "OUTSIDE ISO 10938" in c.luminance_notes[0]
    path = save_calibration(c, tmp_path / "cal.json")
    assert json.loads(path.read_text())["background_nonstandard"] is True
    assert load_calibration(path) == c
    # the same file without the flag is refused on load, naming the field
    data = json.loads(path.read_text())
    data["background_nonstandard"] = False
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match="background_cd_m2"):
        load_calibration(path)
    with pytest.raises(CalibrationError, match="background_nonstandard"):
        Calibration(**GOOD, background_nonstandard="yes")


def test_files_from_before_the_luminance_fields_still_load(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**GOOD, "mirror": False, "background_cd_m2": None}))
    c = load_calibration(path)
    assert c.optotype_cd_m2 is None and c.background_nonstandard is False


@pytest.mark.parametrize("lb, lo", [(85.0, 0.5), (100.0, 15.0), (320.0, 0.0)])
def test_weber_contrast_closed_form(lb, lo):
    c = Calibration(**GOOD, background_cd_m2=lb, optotype_cd_m2=lo)
    assert c.weber_contrast == pytest.approx(1.0 - lo / lb)
    assert c.weber_contrast >= 0.85
    assert "Weber contrast" in c.luminance_notes[1]


@pytest.mark.parametrize("lo, message", [(15.01, r"15%"), (-0.1, ">= 0"), (float("inf"), "finite"), ("dark", "number")])
def test_optotype_luminance_checked(lo, message):
    with pytest.raises(CalibrationError, match=f"optotype_cd_m2: .*{message}"):
        Calibration(**GOOD, background_cd_m2=100.0, optotype_cd_m2=lo)


def test_contrast_unknown_without_both_luminances():
    assert Calibration(**GOOD).weber_contrast is None
    assert Calibration(**GOOD, optotype_cd_m2=0.3).weber_contrast is None
    assert "not measured" in Calibration(**GOOD).luminance_notes[0]


def test_from_card_passes_luminance_on():
    c = Calibration.from_card(428.0, 269.9, 2560, 1440, 6000.0, background_cd_m2=85.0, optotype_cd_m2=0.2)
    assert c.weber_contrast == pytest.approx(1 - 0.2 / 85)
    with pytest.raises(CalibrationError, match="background_cd_m2"):
        Calibration.from_card(428.0, 269.9, 2560, 1440, 6000.0, background_cd_m2=500.0)


# -- a real PsychoPy Monitor Center profile, read by PsychoPy's own interpreter -------------


def psychopy_python():
    """The PsychoPy interpreter .ci/run prepares (VISIONTUNE_PSYCHOPY_PYTHON), or skip."""
    import os
    import subprocess

    py = os.environ.get("VISIONTUNE_PSYCHOPY_PYTHON")
    if not py or subprocess.run([py, "-c", "import psychopy"], capture_output=True).returncode != 0:
        pytest.skip(
            os.environ.get("VISIONTUNE_PSYCHOPY_SKIP_REASON")
            or "no Python with PsychoPy: run .ci/run or set VISIONTUNE_PSYCHOPY_PYTHON"
        )
    return py


def make_psychopy_monitor(py, home, name, width_cm, distance_cm, size_pix):
    import subprocess

    code = (
        f"from psychopy import monitors; m = monitors.Monitor({name!r}, width={width_cm}, distance={distance_cm});"
        f"m.setSizePix({list(size_pix)}); m.save()"
    )
    subprocess.run([py, "-c", code], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, check=True, capture_output=True)


def test_from_real_psychopy_monitor_in_a_child(tmp_path, monkeypatch):
    py = psychopy_python()
    make_psychopy_monitor(py, tmp_path, "lane6m", 59.79, 600.0, (1920, 1080))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "psychopy", None)  # not in this process: ask the child
    monkeypatch.setenv("VISIONTUNE_PSYCHOPY_PYTHON", py)
    c = from_psychopy_monitor("lane6m", mirror=True, background_cd_m2=85.0)
    assert (c.screen_width_mm, c.viewing_distance_mm) == (pytest.approx(597.9), pytest.approx(6000.0))
    assert c.screen_height_mm == pytest.approx(597.9 * 1080 / 1920)
    assert (c.width_px, c.height_px, c.mirror, c.background_cd_m2) == (1920, 1080, True, 85.0)
    with pytest.raises(CalibrationError, match="no PsychoPy monitor named 'lane4m'.*lane6m"):
        from_psychopy_monitor("lane4m")


def test_psychopy_child_that_cannot_run_is_a_calibration_error(tmp_path):
    with pytest.raises(CalibrationError, match="name: "):
        from_psychopy_monitor("lane1", python=str(tmp_path / "no-such-python"))
    with pytest.raises(CalibrationError, match="could not read monitor"):
        from_psychopy_monitor("lane1", python=sys.executable)  # a Python without PsychoPy


# --- a physical range for every quantity; files that are not calibrations ---------


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("viewing_distance_mm", 1e308, "<= 20000 mm"),
        ("viewing_distance_mm", 20000.5, "<= 20000 mm"),
        ("screen_width_mm", 1e308, "between 10 and 20000 mm"),
        ("screen_height_mm", 5.0, "between 10 and 20000 mm"),
        ("width_px", 10**6, "at most 100000 pixels"),
        ("width_px", float("inf"), "whole number of pixels"),
        ("height_px", float("nan"), "whole number of pixels"),
        ("width_px", "1920", "whole number of pixels"),
        ("background_cd_m2", 1e308, "at most 10000 cd/m^2"),
        ("optotype_cd_m2", 1e308, "<= 10000 cd/m^2"),
        ("screen_width_mm", 10**400, "expected a finite number"),
        ("screen_width_mm", [480.0], "expected a finite number"),
    ],
)
def test_every_quantity_has_a_physical_range(field, value, message):
    with pytest.raises(CalibrationError, match=field) as err:
        Calibration(**{**GOOD, field: value, **({"background_nonstandard": True} if "background" in field else {})})
    assert message in str(err.value)


def test_pixel_pitch_has_a_physical_range():
    with pytest.raises(CalibrationError, match="pixel pitch"):
        Calibration(
            screen_width_mm=20.0, screen_height_mm=11.25, width_px=3840, height_px=2160, viewing_distance_mm=4000.0
        )
    with pytest.raises(CalibrationError, match="pixel pitch"):
        Calibration(
            screen_width_mm=2000.0, screen_height_mm=1125.0, width_px=160, height_px=90, viewing_distance_mm=4000.0
        )


def test_largest_sensible_lane_is_accepted():
    assert Calibration(**{**GOOD, "viewing_distance_mm": 20000.0}).viewing_distance_mm == 20000.0


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 40_000, "nested too deeply"),
        (b"[" * 100_000, "bytes"),
        (b"1" * 5000, "not valid JSON"),
    ],
)
def test_files_that_are_not_calibrations(tmp_path, content, message):
    path = tmp_path / "cal.json"
    path.write_bytes(content)
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


def test_save_refuses_a_folder_and_a_fifo_and_leaves_nothing(tmp_path):
    import os

    (tmp_path / "DIR").mkdir()
    os.mkfifo(tmp_path / "pipe")
    for target in (tmp_path / "DIR", tmp_path / "pipe"):
        with pytest.raises(CalibrationError, match="expected a regular file or a new file path"):
            save_calibration(Calibration(**GOOD), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR", "pipe"]
