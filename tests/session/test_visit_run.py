"""``visiontune visit run|resume|show|signoff --simulate``: a whole simulated visit, headless.

Both eyes through the session engine and the trial log, then the balance, then the acuity
through the final prescriptions; a visit stopped mid-OS resumes and ends exactly as the
uninterrupted one.
"""

from __future__ import annotations

import json
import re

import pytest

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.report.visit_export import load_visit
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore
from visiontune.session.visit import eye_statuses, final_prescription

SEED = "5"


def _run(db, *extra) -> int:
    return main(["visit", "run", "--simulate", "--seed", SEED, "--quiet", "--db", str(db), *extra])


@pytest.fixture(scope="module")
def whole_visit(tmp_path_factory):
    """A simulated visit run once, uninterrupted: ``(db path, its printed result)``."""
    db = tmp_path_factory.mktemp("whole") / "log.sqlite3"
    assert _run(db) == 0
    return db


def _visit_log(db, vid=1) -> dict:
    """Everything the log says of the visit, for comparing two runs."""
    with TrialStore.open(db) as store:
        eyes = {}
        for eye, status in eye_statuses(store, vid).items():
            trials = store.trials(status.session_id, include_void=True) if status.session_id else []
            eyes[eye] = (status.state, status.found, [(t.s_logmar, t.lens, t.letter_shown, t.correct) for t in trials])
        b = store.visit_balance(vid)
        return {
            "eyes": eyes,
            "balance": [(a.plus_od_d, a.plus_os_d, a.clearer) for a in store.balance_answers(vid)],
            "outcome": (b.outcome, b.plus_change_od_d, b.plus_change_os_d),
            "acuities": [(a.eye, a.va_logmar, a.lenses) for a in store.visit_acuities(vid)],
        }


def test_a_simulated_visit_runs_both_eyes_then_the_balance_then_the_acuity(whole_visit, capsys):
    with TrialStore.open(whole_visit) as store:
        visit = store.get_visit(1)
        assert visit.simulated and visit.patient_id == "SIM-0001" and visit.age_years is not None
        statuses = eye_statuses(store, 1)
        assert [s.state for s in statuses.values()] == ["finished", "finished"]
        sessions = {e: store.get_session(s.session_id) for e, s in statuses.items()}
        assert sessions["OD"].eye.value == "OD" and sessions["OS"].eye.value == "OS"
        assert sessions["OD"].seed == 5 and sessions["OS"].seed == 4  # the left eye's seed is 5 ^ 1
        assert all(i.simulated for i in sessions.values())
        answers = store.balance_answers(1)
        outcome = store.visit_balance(1)
        acuities = store.visit_acuities(1)
        assert 1 <= len(answers) <= 3 and outcome.done
        assert answers[0].plus_od_d == answers[0].plus_os_d == 0.75
        # in the log order: every refraction answer, then the balance, then the acuities
        last_trial = max(t.answered_at for s in sessions.values() for t in store.trials(s.session_id))
        assert last_trial < answers[0].at <= answers[-1].at < outcome.at < acuities[0].at
        assert [a.eye for a in acuities] == ["OD", "OS", "OU"]  # each eye, then both eyes open
        for a in acuities:
            for eye in ("OD", "OS") if a.eye == "OU" else (a.eye,):
                assert a.lenses[eye].is_equivalent(final_prescription(store, 1, eye), 1e-9)
            assert -0.3 <= a.va_logmar <= 0.5 and "letter chart" in a.method
    assert main(["visit", "show", "1", "--db", str(whole_visit)]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED visit 1" in out and "balance question 1" in out and out.count("final ") == 2
    assert main(["visit", "show", "1", "--json", "--db", str(whole_visit)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["simulated"] is True and doc["eyes"]["OD"]["state"] == "finished" and doc["balance"]["answers"]


def test_the_run_prints_the_result_with_the_truth(tmp_path, capsys):
    assert _run(tmp_path / "log.sqlite3", "--no-balance") == 0
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED visit 1: patient SIM-0001")
    assert out.count("true correction") == 2 and out.count("acuity through it") == 2
    assert "balance: not done (not requested)" in out


def test_a_skipped_eye_has_its_reason_and_no_session_and_no_balance(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--skip-os", "prosthetic eye") == 0
    with TrialStore.open(db) as store:
        statuses = eye_statuses(store, 1)
        assert statuses["OS"].state == "skipped" and statuses["OS"].skip_reason == "prosthetic eye"
        assert statuses["OD"].finished and len(store.list_sessions()) == 1
        balance = store.visit_balance(1)
        assert (balance.outcome, balance.reason) == (
            "not done",
            "OS skipped (prosthetic eye): a balance needs both eyes",
        )
        assert [a.eye for a in store.visit_acuities(1)] == ["OD"]
    assert "OS  skipped: prosthetic eye" in capsys.readouterr().out


def test_both_eyes_skipped_is_refused_before_anything_is_written(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--skip-od", "a", "--skip-os", "b") == 2
    assert "a visit refracts at least one eye" in capsys.readouterr().err
    assert not db.exists() or TrialStore.open(db).list_visits() == []


def test_a_visit_stopped_mid_os_resumes_to_the_same_end(whole_visit, tmp_path, capsys):
    """Stop after OD and 10 answers of OS (as a crash would leave it), pause OS in between as
    a clinician might, resume: the same answers, the same prescriptions, balance and acuities."""
    whole = _visit_log(whole_visit)
    od_answers = len(whole["eyes"]["OD"][2])
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--max-steps", str(od_answers + 10)) == 0
    assert "visit resume 1 --simulate" in capsys.readouterr().err
    with TrialStore.open(db) as store:
        statuses = eye_statuses(store, 1)
        assert (statuses["OD"].state, statuses["OS"].state, statuses["OS"].answers) == ("finished", "open", 10)
        assert store.visit_balance(1) is None and store.visit_acuities(1) == []
        with pytest.raises(InvalidInputError, match="OS not done"):
            load_visit(store, 1)
        with RefractionSession.resume(store, statuses["OS"].session_id) as session:
            session.pause()
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    assert _visit_log(db) == whole


def test_a_visit_stopped_mid_balance_resumes_at_the_next_question(whole_visit, tmp_path, monkeypatch):
    """The balance answers are written one by one: a crash as the last one is being recorded
    leaves the others on record; resuming asks that question again, hears the same answer and
    ends as the uninterrupted visit."""
    whole = _visit_log(whole_visit)
    real = TrialStore.record_balance_answer
    calls = []

    def crash_at_last(self, visit_id, index, **kw):
        calls.append(index)
        if index == len(whole["balance"]) - 1:
            raise RuntimeError("power cut")
        return real(self, visit_id, index, **kw)

    db = tmp_path / "log.sqlite3"
    monkeypatch.setattr(TrialStore, "record_balance_answer", crash_at_last)
    with pytest.raises(RuntimeError, match="power cut"):
        _run(db)
    monkeypatch.setattr(TrialStore, "record_balance_answer", real)
    with TrialStore.open(db) as store:
        assert len(store.balance_answers(1)) == len(whole["balance"]) - 1 and store.visit_balance(1) is None
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    assert _visit_log(db) == whole


def test_a_real_patients_visit_is_not_run_headless(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        store.create_patient("P1")
        store.create_visit("P1")
    assert main(["visit", "resume", "1", "--simulate", "--db", str(db)]) == 2
    assert "is a real patient's; continue it in the app" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rx, message",
    [
        ("-4.00 -0.75 x 190", r"--rx: axis_deg: must be in \[0, 180\] degrees, got 190"),
        (
            "-4.75 +0.75 x 126",
            "plus-cylinder form but this visit writes minus cylinders; enter S -4.00 / C -0.75 x 036",
        ),
        ("minus four", "--rx: text: cannot read a prescription"),
    ],
)
def test_bad_sign_off_gives_a_clear_message_and_the_log_is_unchanged(whole_visit, capsys, rx, message):
    with TrialStore.open(whole_visit) as store:
        before = list(store.conn.iterdump())
    assert main(["visit", "signoff", "1", "--eye", "OD", "--rx", rx, "--by", "Dr B", "--db", str(whole_visit)]) == 2
    err = capsys.readouterr().err
    assert "visiontune visit: error:" in err and "nothing was recorded" in err
    assert re.search(message, err), err
    with TrialStore.open(whole_visit) as store:
        assert list(store.conn.iterdump()) == before


def test_sign_off_from_the_command_line_is_kept_beside_the_found(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--no-balance", "--skip-os", "amblyopic eye") == 0
    with TrialStore.open(db) as store:
        found = eye_statuses(store, 1)["OD"].found
    edited = f"{found.sphere_d + 0.25:+.2f} {found.cylinder_d:+.2f} x {found.axis_deg:g}"
    assert main(["visit", "signoff", "1", "--eye", "OD", "--rx", edited, "--by", "Dr B", "--db", str(db)]) == 0
    assert main(["visit", "signoff", "1", "--eye", "OS", "--rx", edited, "--by", "Dr B", "--db", str(db)]) == 2
    assert "OS was skipped: there is no prescription to sign off" in capsys.readouterr().err
    with TrialStore.open(db) as store:
        assert eye_statuses(store, 1)["OD"].found == found
        [signed] = store.visit_signoffs(1)
        assert signed.by == "Dr B" and signed.prescription.sphere_d == found.sphere_d + 0.25
        assert final_prescription(store, 1, "OD") == signed.prescription
