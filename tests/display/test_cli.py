"""`visiontune calibrate`: the three ways in, --show, and one-line errors (exit 2)."""

import json
import math
import os
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
    rc, out, _ = calibrate(
        [
            "--card-px",
            str(CARD_WIDTH_MM / 0.25),
            str(CARD_HEIGHT_MM / 0.25),
            "--resolution",
            "1920x1080",
            "--distance-mm",
            "4000",
        ],
        path,
        capsys,
    )
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


# --- no traceback on any file, no leftovers, every quantity in a physical range ----


def _one_line_error(rc, out, err):
    assert rc == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("visiontune calibrate: error: "), err
    return err


def test_file_that_is_a_folder_is_refused_and_nothing_is_left(tmp_path, capsys):
    folder = tmp_path / "DIR"
    folder.mkdir()
    err = _one_line_error(*calibrate(SIZE, folder, capsys))
    assert "is a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR"] and list(folder.iterdir()) == []
    assert "is a folder" in _one_line_error(*calibrate(["--show"], folder, capsys))


def test_fifo_is_refused_for_saving_and_showing_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "FIFO" in _one_line_error(*calibrate(SIZE, fifo, capsys))
    assert "FIFO" in _one_line_error(*calibrate(["--show"], fifo, capsys))
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_dev_full_is_refused_and_stays_a_device(capsys):
    before = os.stat("/dev/full")
    assert "character device" in _one_line_error(*calibrate(SIZE, "/dev/full", capsys))
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe{\x00", "not UTF-8"),
        (b'{"screen_width_mm": "\xe9"}', "not UTF-8"),
        (b"[" * 100_000, "bytes"),  # larger than any calibration file
        (b"[" * 50_000, "nested too deeply"),  # small enough to parse: RecursionError
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested too deeply"),
        (b"", "not valid JSON"),
        (b"9" * 5000, "not valid JSON"),  # beyond Python's int digit limit
    ],
)
def test_show_of_a_broken_file_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "cal.json"
    path.write_bytes(content)
    assert message in _one_line_error(*calibrate(["--show"], path, capsys))
    assert path.read_bytes() == content


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_full_disk_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, failing):
    import errno

    from visiontune import private_files

    path = tmp_path / "cal.json"
    assert calibrate(SIZE, path, capsys)[0] == 0
    before = path.read_bytes()

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(private_files.os, failing, no_space)
    err = _one_line_error(*calibrate([*SIZE[:6], "--distance-mm", "4000"], path, capsys))
    monkeypatch.undo()
    assert "no space left" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]  # no cal.json.tmp
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "argv, name",
    [
        ([*SIZE[:6], "--distance-mm", "1e308"], "viewing_distance_mm"),
        ([*SIZE[:6], "--distance-mm", "20001"], "viewing_distance_mm"),
        ([*SIZE[:6], "--distance-mm", "inf"], "viewing_distance_mm"),
        ([*SIZE[:6], "--distance-mm", "nan"], "viewing_distance_mm"),
        (["--width-mm", "1e308", "--height-mm", "1e308", *SIZE[4:]], "screen_width_mm"),
        (["--width-mm", "5", "--height-mm", "3", *SIZE[4:]], "screen_width_mm"),
        (["--width-mm", "20000", "--height-mm", "11250", *SIZE[4:]], "pixel pitch"),
        (["--width-mm", "20", "--height-mm", "11.25", "--resolution", "3840x2160", *SIZE[6:]], "pixel pitch"),
        ([*SIZE[:4], "--resolution", "99999999999999999999x1", *SIZE[6:]], "--resolution"),
        ([*SIZE[:4], "--resolution", "200000x112500", *SIZE[6:]], "--resolution"),
        (["--card-px", "1e308", "1e308", *SIZE[4:]], "card_width_px"),
        (["--card-px", "nan", "216", *SIZE[4:]], "card_width_px"),
        ([*SIZE, "--background-cd-m2", "1e308", "--nonstandard-background"], "background_cd_m2"),
        ([*SIZE, "--optotype-cd-m2", "1e308"], "optotype_cd_m2"),
        ([*SIZE, "--min-ink-px", "1e308"], "min_ink_px"),
        ([*SIZE, "--min-ink-px", "nan"], "min_ink_px"),
    ],
)
def test_every_quantity_has_a_physical_range(tmp_path, capsys, argv, name):
    path = tmp_path / "cal.json"
    assert name in _one_line_error(*calibrate(argv, path, capsys))
    assert not path.exists()


def test_a_stored_file_out_of_range_is_refused_on_show(tmp_path, capsys):
    path = tmp_path / "cal.json"
    good = dict(screen_width_mm=597.9, screen_height_mm=336.3, width_px=1920, height_px=1080, viewing_distance_mm=6000)
    for field, value in [
        ("viewing_distance_mm", 1e308),
        ("width_px", 1e300),
        ("width_px", [1920]),
        ("screen_width_mm", True),
        ("mirror", 1),
    ]:
        path.write_text(json.dumps({**good, field: value}))
        assert field in _one_line_error(*calibrate(["--show"], path, capsys))
    path.write_text(json.dumps(good).replace("6000", "1e999"))  # JSON that decodes to inf
    assert "viewing_distance_mm" in _one_line_error(*calibrate(["--show"], path, capsys))


def test_default_config_folder_and_file_are_user_only_under_umask_000(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path))
    old_folder = tmp_path / "config" / "visiontune"
    old_folder.mkdir(parents=True)
    os.chmod(old_folder, 0o755)  # as an older VisionTune left it
    old = os.umask(0)
    try:
        assert cli.main(SIZE) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    path = old_folder / "calibration.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(old_folder.stat().st_mode) == 0o700


def test_new_folders_for_a_named_file_are_0700_under_umask_000(tmp_path, capsys):
    path = tmp_path / "a" / "b" / "cal.json"
    old = os.umask(0)
    try:
        assert calibrate(SIZE, path, capsys)[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "a", tmp_path / "a" / "b")} == {0o700}
