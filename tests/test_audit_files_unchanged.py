"""The audit of the commands aimed at the user's own files, rerun: every command it names leaves every
file of the data and config directories byte-identical (hashed before and after; no file added or
removed), and says why it refused (exit code 2)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from visiontune.cli import main

CALIBRATE = [
    "calibrate",
    "--width-mm",
    "597.9",
    "--height-mm",
    "336.3",
    "--resolution",
    "1920x1080",
    "--distance-mm",
    "6000",
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A data directory with a finished SIMULATED visit (seed 1), a calibration and settings."""
    root = tmp_path_factory.mktemp("audit")
    env = {
        **os.environ,
        "VISIONTUNE_DATA_DIR": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "cfg"),
        "OPENBLAS_NUM_THREADS": "1",
    }
    run = [sys.executable, "-m", "visiontune"]
    subprocess.run(
        [*run, "visit", "run", "--simulate", "--quiet", "--seed", "1", "--protocol", "clinical-sloan"],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    subprocess.run([*run, *CALIBRATE], env=env, check=True, capture_output=True, timeout=60)
    (root / "cfg" / "visiontune" / "app.toml").write_text('protocol = "clinical-sloan"\npace_s = 0.2\n')
    return root


@pytest.fixture
def home(recorded, tmp_path, monkeypatch):
    root = tmp_path / "home"
    shutil.copytree(recorded, root)
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(root / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return root


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


LOG = "{data}/visiontune.sqlite3"
CAL = "{cfg}/visiontune/calibration.json"
SETTINGS = "{cfg}/visiontune/app.toml"
AUDIT = [
    pytest.param([*CALIBRATE, "--file", LOG], "is the trial log", id="calibrate --file LOG"),
    pytest.param([*CALIBRATE, "--file", SETTINGS], "is the settings", id="calibrate --file SETTINGS"),
    pytest.param(
        ["visit", "signoff", "1", "--eye", "OD", "--rx", "-99 0 x 90", "--by", "X"],
        "outside the range",
        id="signoff -99",
    ),
    pytest.param(
        ["visit", "signoff", "1", "--eye", "OD", "--rx", "0 -30 x 90", "--by", "X"],
        "outside the range",
        id="signoff C -30",
    ),
    pytest.param(["simulate", "--trials", "6", "--quiet", "--json", LOG], "is the trial log", id="simulate --json LOG"),
    pytest.param(
        ["simulate", "--trials", "6", "--quiet", "--plot", CAL], "is the calibration", id="simulate --plot CAL"
    ),
    pytest.param(["report", "1", "--pdf", LOG], "is the trial log", id="report --pdf LOG"),
    pytest.param(["report", "1", "--csv", SETTINGS], "is the settings", id="report --csv SETTINGS"),
    pytest.param(["visit", "export", "1", "--json", CAL], "is the calibration", id="visit export --json CAL"),
    pytest.param(
        ["simulate", "--trials", "6", "--quiet", "--json", LOG + "-wal"],
        "is the trial log",
        id="simulate --json LOG-wal",
    ),
]


@pytest.mark.parametrize("argv, reason", AUDIT)
def test_an_audit_command_aimed_at_a_user_file_changes_no_file(home, capsys, argv, reason):
    argv = [a.format(data=home / "data", cfg=home / "cfg") for a in argv]
    if argv[-1].endswith("-wal"):
        Path(argv[-1]).write_bytes(b"")  # a write-ahead log beside the trial log, as while a session runs
    before = _hashes(home)
    assert main(argv) == 2
    assert reason in capsys.readouterr().err
    assert _hashes(home) == before


def test_the_app_started_with_the_trial_log_as_settings_or_a_refused_protocol_changes_no_file(home, tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "OPENBLAS_NUM_THREADS": "1"}
    app = [
        sys.executable,
        "-m",
        "visiontune",
        "app",
        "--simulate",
        "--pace",
        "0.01",
        "--exit-after",
        "2",
        "--db",
        str(tmp_path / "other.sqlite3"),
    ]
    before = _hashes(home)
    ran = subprocess.run(
        [*app, "--settings", str(home / "data" / "visiontune.sqlite3")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ran.returncode == 0, ran.stderr
    refused = subprocess.run([*app, "--protocol", "nope"], env=env, capture_output=True, text=True, timeout=180)
    assert refused.returncode == 2 and "nope" in refused.stderr
    assert _hashes(home) == before
