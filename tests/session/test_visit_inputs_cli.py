"""``visiontune visit inputs ID --pd MM --examiner NAME``: the PD or the examiner added after a run.

Each call appends one entry of the visit's inputs (the earlier ones stay in the trial log, the
latest is in force, the PD's three values as one group); a refusal names the flag and records
nothing; the exported record carries what is in force.
"""

from __future__ import annotations

import json

import pytest

from visiontune.cli import main
from visiontune.session.store import TrialStore
from visiontune.session.visit_records import visit_input_rows, visit_inputs


@pytest.fixture
def db(tmp_path):
    """A simulated visit stopped after two answers, without PD or examiner."""
    path = tmp_path / "log.sqlite3"
    assert (
        main(
            [
                "visit",
                "run",
                "--simulate",
                "--seed",
                "3",
                "--quiet",
                "--no-near",
                "--no-balance",
                "--max-steps",
                "2",
                "--db",
                str(path),
            ]
        )
        == 0
    )
    return path


def _rows(db) -> list[dict]:
    with TrialStore.open(db, read_only=True) as store:
        return visit_input_rows(store, 1)


def test_pd_and_examiner_appended_the_latest_in_force(db, capsys):
    before = _rows(db)
    assert main(["visit", "inputs", "1", "--pd", "63", "--examiner", "J. Examiner", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED visit 1: inputs recorded" in out and "pupillary distance 63 mm" in out
    assert "examiner J. Examiner" in out
    assert main(["visit", "inputs", "1", "--pd", "31.5/32", "--db", str(db)]) == 0
    assert "pupillary distance 63.5 mm (OD 31.5 / OS 32)" in capsys.readouterr().out
    rows = _rows(db)
    assert rows[: len(before)] == before and len(rows) == len(before) + 2  # appended, nothing rewritten
    assert (rows[-2]["pd_mm"], rows[-2]["examiner"]) == (63.0, "J. Examiner")
    assert (rows[-1]["pd_od_mm"], rows[-1]["pd_os_mm"], rows[-1]["examiner"]) == (31.5, 32.0, None)
    with TrialStore.open(db, read_only=True) as store:
        given = visit_inputs(store, 1)
    assert (given.pd_mm, given.pd_od_mm, given.pd_os_mm, given.examiner) == (63.5, 31.5, 32.0, "J. Examiner")
    assert main(["visit", "show", "1", "--json", "--db", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)["inputs"]
    assert (shown["pd_mm"], shown["examiner"], shown["pd_file"]) == (63.5, "J. Examiner", None)  # typed, no file


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "give --pd and/or --examiner"),
        (["--pd", "90"], "--pd"),
        (["--pd", "sixty"], "--pd: 'sixty' is not a distance"),
        (["--pd", "31.5/32/1"], "--pd: '31.5/32/1' has 3 parts"),
        (["--examiner", "  "], "--examiner"),
        (["--pd", "63", "--examiner", "A\x07B"], "--examiner"),
    ],
)
def test_refusals_name_the_flag_and_record_nothing(db, capsys, argv, problem):
    before = _rows(db)
    assert main(["visit", "inputs", "1", *argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert _rows(db) == before


def test_no_such_visit(db, capsys):
    before = _rows(db)
    assert main(["visit", "inputs", "7", "--pd", "63", "--db", str(db)]) != 0
    assert "no visit 7" in capsys.readouterr().err
    assert _rows(db) == before and all(r["pd_mm"] is None for r in before)
