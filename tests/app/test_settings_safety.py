"""Settings are written only after a deliberate change, only over a settings file, never with a
refused setting (``app --settings LOG`` never saves over the trial log; ``app --protocol nope`` is not
persisted); a damaged or invalid file is reported once and ignored, never a start-up failure, and left as
it is."""

import hashlib
import os
import subprocess
import sys

import pytest
from app_helpers import write_protocol

from visiontune.app.logic.settings import AppSettings, load_settings, load_settings_for_app, save_settings
from visiontune.errors import ConfigurationError
from visiontune.refraction.protocol import DEFAULT_PROTOCOL
from visiontune.session.store import TrialStore


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def trial_log(tmp_path):
    path = tmp_path / "data" / "visiontune.sqlite3"
    path.parent.mkdir()
    with TrialStore.open(path) as store:
        store.create_patient("P1")
    return path


def test_the_settings_writer_refuses_the_trial_log(trial_log):
    before = _digest(trial_log)
    with pytest.raises(ConfigurationError, match="not a VisionTune settings file; it is not replaced"):
        save_settings(AppSettings(pace_s=0.1), trial_log)
    assert _digest(trial_log) == before


def test_the_default_trial_log_is_refused_by_identity(trial_log, monkeypatch, tmp_path):
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(trial_log.parent))
    link = tmp_path / "app.toml"
    os.link(trial_log, link)
    with pytest.raises(ConfigurationError, match="is the trial log"):
        save_settings(AppSettings(pace_s=0.1), link)


@pytest.mark.parametrize("text", ["protocol = ", "[[x]]\nweird", "colour = 'blue'\n", "\xff"])
def test_a_malformed_settings_file_is_never_replaced(tmp_path, text):
    path = tmp_path / "app.toml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ConfigurationError, match="it is not replaced"):
        save_settings(AppSettings(pace_s=0.1), path)
    assert path.read_bytes() == text.encode("latin-1")
    settings, problem = load_settings_for_app(path)
    assert settings == AppSettings() and str(path) in problem and "left as it is" in problem


def test_a_refused_protocol_is_never_persisted(tmp_path):
    path = save_settings(AppSettings(pace_s=0.1), tmp_path / "app.toml")
    before = _digest(path)
    with pytest.raises(ConfigurationError, match="nope: no shipped protocol"):
        save_settings(AppSettings(protocol="nope", pace_s=0.1), path)
    assert _digest(path) == before


def test_an_invalid_protocol_in_the_file_is_reported_and_the_rest_kept(tmp_path):
    path = tmp_path / "app.toml"
    path.write_text('protocol = "nope"\npace_s = 0.25\n')
    settings, problem = load_settings_for_app(path)
    assert settings == AppSettings(pace_s=0.25)
    assert "nope" in problem and f"The protocol {DEFAULT_PROTOCOL} is used" in problem
    assert path.read_text() == 'protocol = "nope"\npace_s = 0.25\n'  # reading writes nothing
    save_settings(AppSettings(pace_s=0.5), path)  # a deliberate change replaces a settings file
    assert load_settings(path) == AppSettings(pace_s=0.5)


def test_unchanged_settings_are_not_rewritten(tmp_path):
    path = save_settings(AppSettings(pace_s=0.1), tmp_path / "app.toml")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    inode = os.stat(path).st_ino
    assert save_settings(AppSettings(pace_s=0.1), path) == path
    assert os.stat(path).st_ino == inode and os.stat(path).st_mtime_ns == 1_000_000_000


def test_closing_the_window_writes_no_settings(make_window, paths):
    window = make_window()
    window.close()
    assert not paths["settings"].exists()


def _run_app(tmp_path, *args):
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "VISIONTUNE_DATA_DIR": str(tmp_path / "data"),
        "OPENBLAS_NUM_THREADS": "1",
    }
    code = (
        "import sys, argparse; from visiontune.app import cli; p = argparse.ArgumentParser(); "
        "cli.add_arguments(p); sys.exit(cli.run(p.parse_args(sys.argv[1:])))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "--simulate", "--pace", "0.01", "--exit-after", "2", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_app_started_on_the_trial_log_as_settings_leaves_it_alone(tmp_path, trial_log):
    other_log = tmp_path / "session-log.sqlite3"
    before = _digest(trial_log)
    proc = _run_app(
        tmp_path, "--settings", str(trial_log), "--db", str(other_log), "--protocol", str(write_protocol(tmp_path))
    )
    assert proc.returncode == 0, proc.stderr
    assert _digest(trial_log) == before
    with TrialStore.open(trial_log) as store:
        assert store.get_patient("P1")
    log_text = (tmp_path / "state" / "visiontune" / "log" / "app.log").read_text()
    assert "settings not saved" in log_text and "is the trial log" in log_text


def test_the_app_starts_on_a_settings_file_with_a_refused_protocol_and_reports_it_once(tmp_path):
    settings = tmp_path / "app.toml"
    settings.write_text('protocol = "nope"\npace_s = 0.25\n')
    proc = _run_app(tmp_path, "--settings", str(settings), "--db", str(tmp_path / "log.sqlite3"))
    assert proc.returncode == 0, proc.stderr
    log_text = (tmp_path / "state" / "visiontune" / "log" / "app.log").read_text()
    assert log_text.count("reported to the user") == 1
    assert "nope: no shipped protocol" in log_text and f"The protocol {DEFAULT_PROTOCOL} is used" in log_text
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        (info,) = store.list_sessions()
        assert len(store.trials(info.session_id)) == 2
