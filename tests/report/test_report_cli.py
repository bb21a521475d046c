"""``visiontune report ID --pdf --csv --json --fhir``: files written 0600, clear errors."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from fhir.resources.R4B.visionprescription import VisionPrescription

from visiontune import cli
from visiontune.report.tabular import trials_from_csv


@pytest.fixture
def main(monkeypatch):
    """``visiontune.cli.main`` with the report command wired as the project wires it."""
    monkeypatch.setitem(cli.COMMANDS, "report", ("visiontune.report.cli", "export a finished session"))
    return cli.main


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_report_writes_every_format_user_only(main, db_path, store, make_session, tmp_path, capsys):
    sid = make_session(simulated=True)
    kinds = (("pdf", "pdf"), ("csv", "csv"), ("json", "json"), ("fhir", "json"))
    out = {k: tmp_path / f"out-{k}.{ext}" for k, ext in kinds}
    (tmp_path / "out-csv.csv").write_text("session_id,trial_index\n")  # an earlier export: a CSV table
    os.chmod(tmp_path / "out-csv.csv", 0o644)  # an existing looser file is replaced by a 0600 one
    old_umask = os.umask(0)
    try:
        argv = ["report", str(sid), "--db", str(db_path)] + [a for k, p in out.items() for a in (f"--{k}", str(p))]
        assert main(argv) == 0
    finally:
        os.umask(old_umask)
    for path in out.values():
        assert _mode(path) == 0o600, path
    assert out["pdf"].read_bytes().startswith(b"%PDF-")
    trials, simulated = trials_from_csv(out["csv"].read_text())
    assert simulated and trials == store.trials(sid, include_void=True)
    assert json.loads(out["json"].read_text())["result"] == store.get_session(sid).result
    assert VisionPrescription.model_validate_json(out["fhir"].read_text()).lensSpecification[0].sphere == -1.25
    assert str(out["pdf"]) in capsys.readouterr().out
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("unknown", "no session 77"),
        ("open", "is open: only a finished session can be exported"),
        ("none", "nothing to export"),
    ],
)
def test_report_errors_are_one_line_and_exit_2(main, db_path, store, make_session, tmp_path, capsys, which, message):
    open_sid = make_session(finish=False)
    sid = {"unknown": 77, "open": open_sid, "none": open_sid}[which]
    argv = ["report", str(sid), "--db", str(db_path)] + ([] if which == "none" else ["--csv", str(tmp_path / "t.csv")])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("visiontune report: error:") and message in err and err.count("\n") == 1
    assert not (tmp_path / "t.csv").exists()


def test_report_runs_without_a_display(db_path, store, make_session, tmp_path):
    """A command-line run with no display and no QT_QPA_PLATFORM draws offscreen."""
    sid = make_session()
    store.close()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    code = (
        "import argparse, sys; from visiontune.report import cli; p = argparse.ArgumentParser(); "
        "cli.add_arguments(p); sys.exit(cli.run(p.parse_args(sys.argv[1:])))"
    )
    pdf = tmp_path / "r.pdf"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(sid), "--db", str(db_path), "--pdf", str(pdf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert pdf.read_bytes().startswith(b"%PDF-") and _mode(pdf) == 0o600
