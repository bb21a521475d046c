import os
import subprocess
import sys

import pytest

import visiontune
from visiontune.cli import main
from visiontune.errors import one_line


def test_version_flag_prints_package_version(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert visiontune.__version__ in capsys.readouterr().out


def test_help_runs_as_module():
    out = subprocess.run([sys.executable, "-m", "visiontune", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "usage: visiontune" in out.stdout


# --- what the user typed is quoted as one printable line -------------------------

NASTY = "evil\x1b[31m\nRED\r\x07\u2028"


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _assert_one_clean_error_line(code, err):
    assert code == 2
    lines = err.rstrip("\n").split("\n")
    error_lines = [line for line in lines if ": error: " in line]
    assert len(error_lines) == 1 and error_lines[0] == lines[-1], err
    assert not any(ch in err for ch in "\x1b\r\x07\u2028"), repr(err)


def test_one_line_escapes_control_characters_and_line_breaks():
    assert one_line(NASTY) == "evil\\x1b[31m\\nRED\\r\\x07\\u2028"
    assert one_line("S -1.25 / C 0.50 x 90 é ü") == "S -1.25 / C 0.50 x 90 é ü"  # printable text untouched
    assert one_line(os.fsdecode(b"/tmp/\xff.toml")) == "/tmp/\\udcff.toml"  # an undecodable file name


@pytest.mark.parametrize(
    "argv",
    [
        ["session", "run", "--simulate", "--protocol", f"{NASTY}.toml"],  # a protocol path (VisionTuneError)
        ["session", "run", "--simulate", "--protocol", NASTY],  # a protocol name
        ["sessions", "list", NASTY],  # argparse: unrecognized arguments
        ["sessions", "show", NASTY],  # argparse: a bad value
        ["report", "1", "--csv", "x.csv", "--db", f"/nonexistent/{NASTY}.sqlite3"],  # a path in the error
        ["calibrate", "--show", "--file", f"/nonexistent/{NASTY}.json"],
    ],
    ids=["protocol-path", "protocol-name", "unrecognized", "bad-id", "report-path", "calibration-path"],
)
def test_error_lines_escape_what_the_user_typed(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    code, out, err = _run(argv, capsys)
    _assert_one_clean_error_line(code, err)
    assert "evil\\x1b[31m\\nRED" in err, err


def test_calibrate_module_entry_escapes_too(capsys):
    from visiontune.display import cli as display_cli

    code = display_cli.main(["--show", "--file", f"/nonexistent/{NASTY}.json"])
    _assert_one_clean_error_line(code, capsys.readouterr().err)
