"""Settings persist in a TOML file; a malformed file is an error naming the key."""

import pytest

from visiontune.app.settings import AppSettings, load_settings, save_settings
from visiontune.errors import ConfigurationError


def test_missing_file_gives_defaults(tmp_path):
    assert load_settings(tmp_path / "none.toml") == AppSettings()


def test_round_trip_with_quotes_and_backslashes(tmp_path):
    s = AppSettings(protocol='C:\\protocols\\my "own".toml', patient_screen="DP-2", calibration_path="/x/c.json",
                    export_dir="/tmp/e", pace_s=0.25)  # fmt: skip
    path = save_settings(s, tmp_path / "cfg" / "app.toml")
    assert load_settings(path) == s
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("text,key", [("protocl = 'x'", "protocl"), ("pace_s = -1", "pace_s"),
                                      ("pace_s = 'fast'", "pace_s"), ("protocol = 3", "protocol"),
                                      ("protocol = ", "invalid TOML")])  # fmt: skip
def test_bad_files_name_the_key(tmp_path, text, key):
    path = tmp_path / "app.toml"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=key) as err:
        load_settings(path)
    assert str(path) in str(err.value)


def test_settings_persist_between_runs_of_the_window(qtbot, make_window, paths):
    from PySide6.QtCore import Qt

    from visiontune.app.keys import Phase

    window = make_window()
    window.start_view.patient_id.setText("SIM-SET")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=30_000)
    window.close()
    saved = load_settings(paths["settings"])
    assert saved.protocol == str(paths["protocol"])
    from visiontune.app.main_window import AppOptions, MainWindow

    again = MainWindow(AppOptions(db_path=paths["db"], settings_path=paths["settings"],
                                  calibration_path=paths["calibration"]), saved)  # fmt: skip
    qtbot.addWidget(again)
    assert again.start_view.protocol.currentText() == str(paths["protocol"])
    again.close()
