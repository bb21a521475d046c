"""Settings persist in a TOML file; a malformed file is an error naming the key. Settings and
the app's log are user-only (files 0600, folders 0700) whatever the umask."""

import logging
import os
import stat

import pytest

from visiontune.app.logic.settings import AppSettings, load_settings, save_settings
from visiontune.errors import ConfigurationError


def test_missing_file_gives_defaults(tmp_path):
    assert load_settings(tmp_path / "none.toml") == AppSettings()


def test_round_trip_with_quotes_and_backslashes(tmp_path):
    from visiontune.refraction.protocol import protocol_dirs

    own = tmp_path / 'C:\\protocols\\my "own".toml'  # a protocol the settings refuse unless it loads
    own.write_text((protocol_dirs()[0] / "clinical-sloan.toml").read_text(encoding="utf-8"), encoding="utf-8")
    s = AppSettings(
        protocol=str(own),
        patient_screen="DP-2",
        calibration_path="/x/c.json",
        export_dir="/tmp/e",
        pace_s=0.25,
        cylinder_form="plus",
    )
    path = save_settings(s, tmp_path / "cfg" / "app.toml")
    assert load_settings(path) == s
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "text,key",
    [
        ("protocl = 'x'", "protocl"),
        ("pace_s = -1", "pace_s"),
        ("pace_s = 'fast'", "pace_s"),
        ("protocol = 3", "protocol"),
        ("protocol = ", "invalid TOML"),
        ("cylinder_form = 'mixed'", "cylinder_form: expected 'minus' or 'plus'"),
    ],
)
def test_bad_files_name_the_key(tmp_path, text, key):
    path = tmp_path / "app.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=key) as err:
        load_settings(path)
    assert str(path) in str(err.value)


def test_settings_persist_between_runs_of_the_window(qtbot, make_window, paths):
    from PySide6.QtCore import Qt

    from visiontune.app.logic.keys import Phase

    window = make_window()
    window.start_view.patient_id.setText("SIM-SET")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=30_000)
    window.close()
    saved = load_settings(paths["settings"])
    assert saved.protocol == str(paths["protocol"])
    from visiontune.app.main_window import AppOptions, MainWindow

    again = MainWindow(
        AppOptions(db_path=paths["db"], settings_path=paths["settings"], calibration_path=paths["calibration"]), saved
    )
    qtbot.addWidget(again)
    assert again.start_view.protocol.currentText() == str(paths["protocol"])
    again.close()


# --- privacy of the settings and of the app log -----------------------------------


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_settings_file_and_folders_are_user_only_under_umask_000(tmp_path, umask_000):
    path = save_settings(AppSettings(), tmp_path / "a" / "b" / "app.toml")
    assert _mode(path) == 0o600
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["app.toml"]  # no app.toml.tmp


def test_default_config_folder_is_tightened(tmp_path, monkeypatch, umask_000):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    folder = tmp_path / "visiontune"
    folder.mkdir()
    os.chmod(folder, 0o777)  # what an older VisionTune left under umask 000
    path = save_settings(AppSettings())
    assert path.parent == folder and _mode(folder) == 0o700 and _mode(path) == 0o600


def test_settings_refuse_a_folder_or_fifo(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "DIR").mkdir()
    for bad, what in ((tmp_path / "pipe", "FIFO"), (tmp_path / "DIR", "folder")):
        with pytest.raises(ConfigurationError, match=what):
            save_settings(AppSettings(), bad)
        with pytest.raises(ConfigurationError, match=what):
            load_settings(bad)


def test_settings_that_are_not_utf8_are_a_configuration_error(tmp_path):
    path = tmp_path / "app.toml"
    path.write_bytes(b"protocol = '\xff'")
    with pytest.raises(ConfigurationError, match="not UTF-8"):
        load_settings(path)


def test_app_log_is_user_only_under_umask_000(tmp_path, umask_000):
    from visiontune.app import logs

    folder = tmp_path / "state" / "visiontune" / "log"
    try:
        path = logs.configure_logging(folder)
        logging.getLogger("visiontune.app").info("patient P-0042 trial 1")
        logs.flush_log()
        assert "P-0042" in path.read_text()
        assert _mode(path) == 0o600
        for p in (tmp_path / "state", tmp_path / "state" / "visiontune", folder):
            assert _mode(p) == 0o700, p
        handler = next(h for h in logging.getLogger("visiontune").handlers if getattr(h, "_visiontune_app", False))
        handler.doRollover()  # rotated files and the new one stay private
        logging.getLogger("visiontune.app").info("after rollover")
        logs.flush_log()
        assert {_mode(p) for p in folder.iterdir()} == {0o600}
        assert sorted(p.name for p in folder.iterdir()) == ["app.log", "app.log.1"]
    finally:
        for h in list(logging.getLogger("visiontune").handlers):
            if getattr(h, "_visiontune_app", False):
                logging.getLogger("visiontune").removeHandler(h)
                h.close()


def test_existing_loose_log_is_made_user_only(tmp_path):
    from visiontune.app import logs

    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "app.log").write_text("old\n")
    os.chmod(folder / "app.log", 0o644)
    try:
        path = logs.configure_logging(folder)
        assert _mode(path) == 0o600
    finally:
        for h in list(logging.getLogger("visiontune").handlers):
            if getattr(h, "_visiontune_app", False):
                logging.getLogger("visiontune").removeHandler(h)
                h.close()


def test_default_log_folder_is_tightened(tmp_path, monkeypatch):
    from visiontune.app import logs

    monkeypatch.setattr(logs, "default_log_dir", lambda: tmp_path / "log")
    (tmp_path / "log").mkdir()
    os.chmod(tmp_path / "log", 0o755)
    try:
        logs.configure_logging()
        assert _mode(tmp_path / "log") == 0o700
    finally:
        for h in list(logging.getLogger("visiontune").handlers):
            if getattr(h, "_visiontune_app", False):
                logging.getLogger("visiontune").removeHandler(h)
                h.close()
