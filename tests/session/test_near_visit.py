"""The visit step "near addition" (session/near_visit.py, near_store.py): a simulated visit of a
62-year-old files an add per eye, every near answer in the trial log before the next question; the
near tables are append-only; a visit killed (SIGKILL, a real child process) mid-near-step resumes and
ends exactly as the uninterrupted one; refusals."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from visiontune.cli import main
from visiontune.errors import InvalidInputError, SessionError
from visiontune.session import near_store
from visiontune.session.near_visit import wants_near
from visiontune.session.store import TrialStore
from visiontune.session.visit import create_visit

SEED = "5"


def _run(db, *extra) -> int:
    return main(["visit", "run", "--simulate", "--seed", SEED, "--age", "62", "--quiet", "--db", str(db), *extra])


def _near_log(db, vid=1) -> dict:
    with TrialStore.open(db) as store:
        setup = near_store.near_setup(store, vid)
        answers = {
            e: [
                (a.index, a.phase, a.add_d, a.size_logmar, a.letter, a.correct)
                for a in near_store.near_answers(store, vid, e)
            ]
            for e in ("OD", "OS")
        }
        adds = {
            e: (
                r.add_d,
                r.lower_d,
                r.upper_d,
                r.tentative_add_d,
                r.amplitude_d,
                r.near_point_cm,
                r.far_point_cm,
                r.near_va_logmar,
                r.distance_cm,
                r.detail,
            )
            for e, r in near_store.near_add_records(store, vid).items()
        }
        return {
            "distance": setup and setup.distance_cm,
            "simulated": setup and setup.simulated,
            "answers": answers,
            "adds": adds,
        }


@pytest.fixture(scope="module")
def distance_done(tmp_path_factory):
    """A simulated visit of a 62-year-old with its distance part done and no near step yet."""
    db = tmp_path_factory.mktemp("distance") / "log.sqlite3"
    assert _run(db, "--no-near") == 0
    return db


def _copy(src, dst):
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    return dst


@pytest.fixture(scope="module")
def whole(distance_done, tmp_path_factory):
    db = _copy(distance_done, tmp_path_factory.mktemp("whole") / "log.sqlite3")
    assert main(["visit", "resume", "1", "--simulate", "--near", "--quiet", "--db", str(db)]) == 0
    return db


def test_a_62_year_old_gets_an_add_per_eye_recorded_with_its_answers(whole, capsys):
    log = _near_log(whole)
    assert log["distance"] == 40.0 and log["simulated"]["mark"] == "SIMULATED"
    assert set(log["adds"]) == {"OD", "OS"}
    for eye, add in log["adds"].items():
        add_d, lower, upper, tentative = add[:4]
        assert lower <= add_d <= upper and tentative == 2.5 and add[-1]["mark"] == "SIMULATED"
        assert add_d * 4 == round(add_d * 4)
        phases = [a[1] for a in log["answers"][eye]]
        assert phases.count("check") == 3 and phases[-3:] == ["check"] * 3
        assert all(a[2] == add_d for a in log["answers"][eye] if a[1] == "check")
    assert main(["visit", "show", "1", "--db", str(whole)]) == 0
    out = capsys.readouterr().out
    assert "OD  near add +" in out and "OS  near add +" in out and "at 40 cm" in out


def test_the_near_tables_are_append_only(whole, tmp_path):
    db = _copy(whole, tmp_path / "copy.sqlite3")
    conn = sqlite3.connect(db)
    for sql in (
        "UPDATE visit_near_adds SET add_d = 0",
        "DELETE FROM visit_near_answers",
        "UPDATE visit_near SET distance_cm = 33",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(sql)
    with pytest.raises(sqlite3.DatabaseError, match="add of this eye is filed"):
        conn.execute("INSERT INTO visit_near_answers VALUES (1, 'OD', 999, 'refine', 1, 0.1, 'C', 1, 'x')")
    conn.close()
    with TrialStore.open(db) as store:
        with pytest.raises(SessionError, match="filed"):
            near_store.record_near_answer(
                store, 1, "OD", 50, phase="refine", add_d=1.0, size_logmar=0.1, letter="C", correct=True
            )
        with pytest.raises(SessionError, match="begun already"):
            near_store.start_near(store, 1, distance_cm=40, method="x", simulated={"mark": "SIMULATED"})


_KILLER = textwrap.dedent("""
    import os, signal, sys
    from visiontune.session.near_visit import drive_simulated_near
    from visiontune.session.simulated_visit import recorded_case
    from visiontune.session.store import TrialStore
    db, eye, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = TrialStore.open(db)
    cases = {e: recorded_case(store, l.session_id) for e, l in store.visit_eyes(1).items()}
    seen = []
    def on_answer(e, record):
        seen.append(e)
        if e == eye and seen.count(e) == after:
            os.kill(os.getpid(), signal.SIGKILL)
    drive_simulated_near(store, 1, cases, on_answer=on_answer)
    sys.exit(3)  # not reached: killed first
""")


def _kill_mid_step(db, eye, after):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, str(db), eye, str(after)],
        env=env,
        timeout=300,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_visit_killed_mid_near_step_resumes_to_the_uninterrupted_one(distance_done, whole, tmp_path):
    db = _copy(distance_done, tmp_path / "killed.sqlite3")
    _kill_mid_step(db, "OD", 2)  # two right-eye answers in, then SIGKILL
    log = _near_log(db)
    assert len(log["answers"]["OD"]) == 2 and log["adds"] == {}
    _kill_mid_step(db, "OS", 1)  # resumed by the child, OD filed, killed after one left-eye answer
    log = _near_log(db)
    assert set(log["adds"]) == {"OD"} and len(log["answers"]["OS"]) == 1
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    assert _near_log(db) == _near_log(whole)


def test_who_gets_the_near_step_and_refusals(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        young = create_visit(store, "P1", simulated=True, age_years=30, cylinder_form="minus")
        old = create_visit(store, "P2", simulated=True, age_years=45, cylinder_form="minus")
        unknown = create_visit(store, "P3", simulated=True, cylinder_form="minus")
        assert [wants_near(store, v, None) for v in (young, old, unknown)] == [False, True, False]
        assert wants_near(store, young, True) and not wants_near(store, old, False)
        with pytest.raises(InvalidInputError, match="near distance"):
            near_store.start_near(store, young, distance_cm=float("nan"), method="x", simulated={})
        with pytest.raises(SessionError, match="has not begun"):
            near_store.record_near_answer(
                store, old, "OD", 0, phase="refine", add_d=1.0, size_logmar=0.1, letter="C", correct=True
            )
    for bad in ("0", "-40", "nan", "10"):
        with pytest.raises(SystemExit) as exc:
            main(["visit", "run", "--simulate", "--near-distance-cm", bad, "--db", str(db)])
        assert exc.value.code == 2
        assert "--near-distance-cm" in capsys.readouterr().err


def _real_visit(db):
    """A real patient's visit (age 55): both eyes refracted through the engine, no near step yet."""
    from visiontune.refraction.loop import SimulatedPresenter
    from visiontune.refraction.protocol import load_protocol
    from visiontune.refraction.start import StartingPoint
    from visiontune.session.simulated_visit import visit_cases
    from visiontune.session.visit import start_eye

    protocol = load_protocol("clinical-sloan")
    cases = visit_cases(7, protocol)
    with TrialStore.open(db) as store:
        vid = create_visit(store, "P-0042", simulated=False, age_years=55, clinician="Dr A. Optom")
        for eye in ("OD", "OS"):
            case = cases[eye]
            with start_eye(
                store,
                vid,
                eye,
                protocol=protocol,
                seed=7,
                start=StartingPoint(case.start_rx, "autorefraction", case.age_years),
            ) as session:
                assert session.run(SimulatedPresenter(case.patient(10))) is not None
    return vid


def test_a_real_patients_near_step_is_asked_answered_and_resumed_from_the_log(tmp_path):
    from visiontune.refraction.near_population import NearCase
    from visiontune.session.near_visit import answer_near, begin_near, next_near_question

    db = tmp_path / "real.sqlite3"
    vid = _real_visit(db)
    eye_of = {
        "OD": NearCase(55, 1.5, 0.3, 0.0, 5.0, 0.02, "blendowske", (0, 0, 0), 4, 0),
        "OS": NearCase(55, 1.5, 0.3, 0.0, 5.0, 0.02, "blendowske", (0.1, 0, 0), 5, 1),
    }

    def clinician_enters(store, limit=None):
        done = 0
        while (asked := next_near_question(store, vid)) is not None and (limit is None or done < limit):
            eye, index, _, q = asked
            _, right = eye_of[eye].answer(index, q.add_d, q.size_logmar, 2.5)
            answer_near(store, vid, eye, index, right, "H")
            done += 1

    with TrialStore.open(db) as store:
        with pytest.raises(SessionError, match="has not begun"):
            next_near_question(store, vid)
        with pytest.raises(InvalidInputError, match="simulated patient only"):
            near_store.start_near(store, vid, distance_cm=40, method="x", simulated={"eyes": {}})
        begin_near(store, vid)
        clinician_enters(store, limit=4)
        with pytest.raises(SessionError, match="question asked is OD question 4"):
            answer_near(store, vid, "OD", 7, True)
    sqlite_copy = _copy(db, tmp_path / "copy.sqlite3")
    with TrialStore.open(db) as store:  # the app closed and opened again: the step goes on from the log
        clinician_enters(store)
        adds = near_store.near_add_records(store, vid)
    with TrialStore.open(sqlite_copy) as store:
        clinician_enters(store)
        again = near_store.near_add_records(store, vid)
    assert set(adds) == {"OD", "OS"} and adds["OD"].detail is None
    assert [(a.add_d, a.lower_d, a.upper_d) for a in adds.values()] == [
        (a.add_d, a.lower_d, a.upper_d) for a in again.values()
    ]
    assert all(abs(a.add_d - eye_of[e].true_add(2.5)) <= 0.25 for e, a in adds.items())


def test_an_add_not_filed_when_the_process_ended_is_filed_from_the_log(tmp_path):
    """The right eye's answers written, its add not (the process ended between the last answer and
    the add): the next question files that add from the log before asking the left eye, the add an
    uninterrupted step files."""
    from visiontune.refraction.near_population import NearCase
    from visiontune.session.near_visit import answer_near, begin_near, next_near_question

    case = NearCase(60, 1.0, 0.3, 0.0, 5.0, 0.02, "blendowske", (0, 0, 0), 4, 0)
    ran = {}
    for how in ("uninterrupted", "ended before the add"):
        db = tmp_path / f"{len(ran)}.sqlite3"
        vid = _real_visit(db)
        with TrialStore.open(db) as store:
            begin_near(store, vid)
            while (asked := next_near_question(store, vid))[0] == "OD":
                _, index, phase, q = asked
                _, right = case.answer(index, q.add_d, q.size_logmar, 2.5)
                if how == "uninterrupted":
                    answer_near(store, vid, "OD", index, right, "H")
                else:  # answer_near's write alone: the add is never filed by it
                    assert "OD" not in near_store.near_add_records(store, vid)
                    near_store.record_near_answer(
                        store,
                        vid,
                        "OD",
                        index,
                        phase=phase,
                        add_d=q.add_d,
                        size_logmar=q.size_logmar,
                        letter="H",
                        correct=right,
                    )
            ran[how] = near_store.near_add_records(store, vid)["OD"]
    a, b = ran["uninterrupted"], ran["ended before the add"]
    assert (a.add_d, a.lower_d, a.upper_d, a.near_va_logmar) == (b.add_d, b.lower_d, b.upper_d, b.near_va_logmar)


def test_a_resumed_near_step_keeps_its_distance(whole, tmp_path, capsys):
    db = _copy(whole, tmp_path / "copy.sqlite3")
    before = _near_log(db)
    code = main(["visit", "resume", "1", "--simulate", "--quiet", "--near-distance-cm", "33", "--db", str(db)])
    assert code != 0 and "near step is at 40 cm, not 33 cm" in capsys.readouterr().err
    assert _near_log(db) == before
