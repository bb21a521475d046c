"""``visiontune app`` options, and a smoke run in a child process: a simulated session that
closes itself after N answers (what packaging tests run)."""

import argparse
import os
import subprocess
import sys

import pytest
from app_helpers import write_protocol

from visiontune.app import cli
from visiontune.errors import InvalidInputError
from visiontune.session.store import TrialStore


def parse(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_options():
    a = parse(
        "--simulate", "--pace", "0", "--db", "x.db", "--protocol", "clinical-sloan", "--windowed", "--exit-after", "3"
    )
    assert (a.simulate, a.pace, a.db, a.protocol, a.windowed, a.exit_after) == (
        True,
        0.0,
        "x.db",
        "clinical-sloan",
        True,
        3,
    )


@pytest.mark.parametrize("argv,match", [(("--pace", "-1"), "--pace"), (("--exit-after", "0"), "--exit-after")])
def test_bad_options_name_the_option(argv, match):
    with pytest.raises(InvalidInputError, match=match):
        cli.run(parse(*argv))


def test_exit_after_runs_a_simulated_session_and_closes(tmp_path):
    protocol = write_protocol(tmp_path)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    code = (
        "import sys, argparse; from visiontune.app import cli; p = argparse.ArgumentParser(); "
        "cli.add_arguments(p); sys.exit(cli.run(p.parse_args(sys.argv[1:])))"
    )
    db = tmp_path / "log.sqlite3"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--simulate",
            "--pace",
            "0.01",
            "--db",
            str(db),
            "--protocol",
            str(protocol),
            "--exit-after",
            "3",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    with TrialStore.open(db) as store:
        (info,) = store.list_sessions()
        assert info.simulated and info.state.value == "open" and len(store.trials(info.session_id)) == 3
    log_text = (tmp_path / "state" / "visiontune" / "log" / "app.log").read_text()
    assert "exit after 3 answers" in log_text and f"session {info.session_id} closed" in log_text
    assert (tmp_path / "cfg" / "visiontune" / "app.toml").is_file()  # settings saved in the config dir
