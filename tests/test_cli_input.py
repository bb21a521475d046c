"""The command lines take what a clinician types (a value starting with '-', the slash form, a decimal
comma, a lower-case eye), check every flag they are given or say exactly what they expected, and print
prescriptions in the one notation (signed two decimals, the axis in three digits)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from visiontune import cli
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.report.tabular_visit import VISIT_JSON_SCHEMA_VERSION
from visiontune.session.simulated_visit import recorded_case
from visiontune.session.store import TrialStore

START = Prescription(-2.25, -1.25, 35)


def run(argv: list[str]) -> tuple[int, str, str]:
    """``visiontune.cli.main(argv)`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors (2)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def refused(argv: list[str], *needles: str) -> str:
    """Run ``argv``; it must exit 2 with one error line naming each of ``needles``, no traceback."""
    code, out, err = run(argv)
    assert code == 2, (argv, code, out, err)
    assert "Traceback" not in err
    error = [line for line in err.splitlines() if ": error: " in line]
    assert len(error) == 1, err
    for needle in needles:
        assert needle in error[0], (needle, error[0])
    return error[0]


def session_run(db, *flags: str) -> tuple[int, str, str]:
    return run(["session", "run", "--simulate", "--max-steps", "1", "--db", str(db), *flags])


def _start_of(db, session_id: int = 1):
    with TrialStore.open(db) as store:
        info = store.get_session(session_id)
        rx = info.starting_rx["rx"]
        return Prescription(rx["sphere_d"], rx["cylinder_d"], rx["axis_deg"]), info.starting_rx["source"], info.eye


# --- session run: --start-rx, --start-source, --eye -----------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--start-rx", "-2.25/-1.25x35"],  # argparse took it for an option: "expected one argument"
        ["--start-rx=-2.25/-1.25x35"],
        ["--start-rx", "-2.25 / -1.25 x 35"],
        ["--start-rx", "-2.25 -1.25 x 035"],
        ["--start-rx", "-2.25DS/-1.25DCx35"],
        ["--start-rx", "-2,25/-1,25x35"],  # a decimal comma
        ["--start-rx", "S \u22122.25 / C \u22121.25 \u00d7 035"],  # as the app prints it
    ],
)
def test_the_start_is_taken_as_a_clinician_types_it(tmp_path, flags):
    db = tmp_path / "log.sqlite3"
    code, out, err = session_run(db, "--quiet", *flags)
    assert code == 0, err
    assert _start_of(db) == (START, "autorefraction", "OD")
    # and printed in the one notation: signed two decimals, the axis in three digits
    assert "start S -2.25 / C -1.25 x 035 (autorefraction)" in err


def test_the_start_source_goes_with_the_start(tmp_path):
    db = tmp_path / "log.sqlite3"
    code, _, err = session_run(db, "--quiet", "--start-rx", "-2.25/-1.25x35", "--start-source", "retinoscopy")
    assert code == 0, err
    assert _start_of(db)[1] == "retinoscopy"


def test_a_start_source_without_a_start_is_refused_and_nothing_is_written(tmp_path):
    db = tmp_path / "log.sqlite3"
    refused(
        ["session", "run", "--simulate", "--start-source", "retinoscopy", "--db", str(db)],
        "--start-source retinoscopy",
        "--start-rx",
    )
    assert not db.exists()


def test_no_start_with_a_source_is_refused(tmp_path):
    db = tmp_path / "log.sqlite3"
    refused(
        ["session", "run", "--simulate", "--start-rx", "none", "--start-source", "spectacles", "--db", str(db)],
        "--start-rx none",
        "--start-source spectacles",
    )
    assert not db.exists()


@pytest.mark.parametrize("typed, eye", [("od", "OD"), ("Os", "OS"), ("OS", "OS")])
def test_the_eye_in_any_case(tmp_path, typed, eye):
    db = tmp_path / "log.sqlite3"
    code, _, err = session_run(db, "--quiet", "--eye", typed)
    assert code == 0, err
    with TrialStore.open(db) as store:
        assert store.get_session(1).eye.value == eye


def test_an_unknown_eye_says_what_was_expected(tmp_path):
    refused(["session", "run", "--simulate", "--eye", "OU", "--db", str(tmp_path / "x.db")], "OD", "OS", "'OU'")


def test_a_negative_zero_is_never_printed(tmp_path):
    """``s=-0.00 logMAR``: a letter size just below zero printed with a minus sign."""
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        store.create_patient("P-1")
        sid = store.create_session("P-1", eye="OD", protocol=load_protocol("clinical-sloan"), seed=1, simulated=True)
        with store.open_session(sid) as handle:
            handle.record_trial(
                Trial(
                    index=0,
                    s_logmar=-0.001,
                    lens=Prescription(-1.0, -0.5, 35.0),
                    letter_shown="C",
                    letter_named="C",
                    correct=True,
                )
            )
    code, out, err = run(["sessions", "show", str(sid), "--db", str(db)])
    assert code == 0, err
    assert "s=+0.00 S -1.00 / C -0.50 x 035 shown C named C correct" in out
    assert "-0.00" not in out


# --- session resume: the flags it cannot honour ----------------------------------------------------


@pytest.fixture
def open_session(tmp_path):
    db = tmp_path / "log.sqlite3"
    code, _, err = session_run(db, "--quiet")
    assert code == 0, err
    return db


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--slope", "nan"], "--slope"),
        (["--age", "-5"], "--age"),
        (["--slope", "3", "--age", "40", "--true-rx", "-1 -0.5 x 90"], "--true-rx, --slope, --age"),
        (["--best-va", "0.1"], "--best-va"),
        (["--patient-seed", "4"], "--patient-seed"),
    ],
)
def test_resume_refuses_the_flags_it_cannot_honour(open_session, flags, named):
    refused(["session", "resume", "1", "--simulate", "--max-steps", "1", "--db", str(open_session), *flags], named)
    with TrialStore.open(open_session) as store:
        assert store.trial_count(1) == 1  # nothing was asked


def test_resume_without_them_continues(open_session):
    code, _, err = run(
        ["session", "resume", "1", "--simulate", "--max-steps", "1", "--quiet", "--db", str(open_session)]
    )
    assert code == 0, err
    with TrialStore.open(open_session) as store:
        assert store.trial_count(1) == 2


@pytest.mark.parametrize("flag, value", [("--slope", "nan"), ("--age", "inf"), ("--best-va", "-inf")])
def test_a_new_session_refuses_numbers_that_are_not_finite(tmp_path, flag, value):
    refused(["session", "run", "--simulate", flag, value, "--db", str(tmp_path / "x.db")], flag, "finite")


# --- visit run, export -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def given_visit(tmp_path_factory):
    """A whole visit with the patient the clinician typed: both eyes' truth, OD's start, the age."""
    db = tmp_path_factory.mktemp("visit") / "log.sqlite3"
    code, out, err = run(
        [
            "visit",
            "run",
            "--simulate",
            "--quiet",
            "--db",
            str(db),
            "--true-rx",
            "OD -2.25/-1.25x35",
            "--true-rx",
            "OS -1,75 -0,50 x 150",
            "--start-rx",
            "OD -2.00/-1.00x30",
            "--start-source",
            "retinoscopy",
            "--age",
            "40",
        ]
    )
    assert code == 0, err
    return db, out, err


def test_visit_run_takes_the_patient_and_the_start(given_visit):
    db, out, _ = given_visit
    with TrialStore.open(db) as store:
        eyes = store.visit_eyes(1)
        od, os_ = (recorded_case(store, eyes[e].session_id) for e in ("OD", "OS"))
        assert od.true_rx == START and os_.true_rx == Prescription(-1.75, -0.5, 150)
        assert od.age_years == os_.age_years == 40.0
        assert (od.start_rx, od.start_source) == (Prescription(-2.0, -1.0, 30), "retinoscopy")
        assert store.get_session(eyes["OD"].session_id).starting_rx["source"] == "retinoscopy"
    assert "true correction S -2.25 / C -1.25 x 035" in out


def test_a_quiet_visit_prints_no_progress(given_visit):
    _, _, err = given_visit
    assert "answers so far" not in err and " trial " not in err


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--true-rx", "OD -1 -1 x 90", "--true-rx", "OD -2 -1 x 90"], "OD given twice"),
        (["--start-source", "spectacles"], "--start-source spectacles"),
        (["--start-rx", "-2.25 -1.25"], "--start-rx"),
        (["--age", "nan"], "--age"),
        (["--age", "40", "--max-steps", "3"], "--max-steps"),
    ],
)
def test_visit_run_refuses_what_it_cannot_read(tmp_path, flags, named):
    db = tmp_path / "log.sqlite3"
    refused(["visit", "run", "--simulate", "--db", str(db), *flags], named)
    if db.exists():
        with TrialStore.open(db) as store:
            assert store.list_visits() == []


def test_visit_signoff_takes_a_lower_case_eye(given_visit):
    db, _, _ = given_visit
    code, out, err = run(
        ["visit", "signoff", "1", "--eye", "od", "--rx", "-2.25/-1.25x35", "--by", "Dr A", "--db", str(db)]
    )
    assert code == 0, err
    assert "signed off S -2.25 / C -1.25 x 035 by Dr A" in out


def test_visit_export_help_says_the_version_the_file_writes(given_visit, tmp_path):
    code, out, _ = run(["visit", "export", "--help"])
    assert code == 0
    said = re.search(r"visiontune\.visit-export\s+version\s+(\d+)", out)
    assert said, out
    db, _, _ = given_visit
    path = tmp_path / "visit.json"
    code, _, err = run(["visit", "export", "1", "--json", str(path), "--db", str(db)])
    assert code == 0, err
    assert json.loads(path.read_text())["schema_version"] == int(said.group(1)) == VISIT_JSON_SCHEMA_VERSION


# --- simulate -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["-2.25/-1.25x180", "-2,25 -1,25", "-2.25 -1.25 x 180", "-2.25DS/-1.25DCx180"])
def test_simulate_takes_the_paper_patient_as_typed(typed):
    code, out, err = run(["simulate", "--trials", "2", "--quiet", "--true-rx", typed])
    assert code == 0, err
    assert "true correction:  S -2.25 / C -1.25 x 180" in out


def test_simulate_takes_any_axis_with_a_protocol():
    code, out, err = run(
        ["simulate", "--protocol", "clinical-sloan", "--trials", "3", "--quiet", "--true-rx", "-2.25/-1.25x35"]
    )
    assert code == 0, err
    assert "true correction:  S -2.25 / C -1.25 x 035" in out


def test_simulate_refuses_an_axis_the_paper_model_cannot_search():
    refused(["simulate", "--trials", "2", "--true-rx", "-2.25/-1.25x35"], "--true-rx", "fixed axis 180")


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--policy", "ts-ald"], "--policy"),
        (["--inference", "ep"], "--inference"),
        (["--reference-logmar", "0.3"], "--reference-logmar"),
    ],
)
def test_simulate_refuses_a_setting_a_protocol_would_ignore(flags, named):
    refused(["simulate", "--protocol", "clinical-sloan", *flags], named, "--protocol clinical-sloan")


# --- validate, bench ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--jobs", "0"],
        ["validate", "--jobs", "-2"],
        ["validate", "--jobs", "two"],
        ["bench", "refraction", "--jobs", "0"],
    ],
)
def test_a_worker_count_says_what_it_expected(tmp_path, argv):
    refused([*argv, "--out", str(tmp_path / "out")], "--jobs", "worker processes")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "/tmp/x", "x\\y", "a\nb", ""])
def test_a_page_name_with_folder_parts_is_refused(tmp_path, name):
    out = tmp_path / "out"
    refused(["validate", "--quick", "--name", name, "--out", str(out)], "--name", "plain name")
    assert list(tmp_path.iterdir()) == []
