"""Answer times per kind of question, from a trial log with known timestamps.

A clinic refits the protocol's durations (``letter_seconds``, ``comparison_seconds``,
``slider_seconds``) from its own sessions: ``visiontune sessions durations`` reports, per kind,
the median and IQR of ``answered_at - presented_at``. The store here is written with known
gaps (drawn from a seeded generator, whole milliseconds so that the ISO 8601 text stores them
exactly); the oracle is numpy's median and percentiles of those gaps, kind by kind.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from visiontune import cli
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.answer_times import GAPS, answer_times
from visiontune.session.store import TrialStore

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
#: Mean answer time (s) of each kind in the made-up sessions; real and simulated differ.
MEANS = {"letter": 3.0, "comparison": 5.0, "slider": 8.0}
PATH = tuple(Prescription(-1.0 + 0.25 * k, -0.5, 90.0) for k in range(9))


class SetClock:
    """The store's clock, set by the test (pause and resume events are stamped with it)."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        return self.t


def _trial(kind: str, i: int, presented: datetime | None, answered: datetime | None) -> Trial:
    base = dict(
        index=i,
        s_logmar=0.1 * (i % 5),
        lens=Prescription(-1.0, -0.5, 90.0),
        letter_shown="HNKRDZSOVC"[i % 10],
        correct=True,
        presented_at=presented,
        answered_at=answered,
    )
    if kind == "comparison":
        return Trial(**base, lens2=Prescription(-0.75, -0.5, 90.0), comparison="12="[i % 3])
    if kind == "slider":
        return Trial(**{**base, "lens": PATH[i % 9]}, slider_knob="sphere", slider_lenses=PATH, slider_choice=i % 9)
    return Trial(**base, letter_named=base["letter_shown"])


def _session(store, clock, rng, *, simulated: bool, n: int = 30, scale: float = 1.0) -> dict[str, list[float]]:
    """One session of ``n`` answers of random kinds with random gaps; returns the gaps by kind."""
    patient = f"P{len(store.list_patients()) + 1}"
    store.create_patient(patient)
    sid = store.create_session(patient, eye="OD", protocol=load_protocol("clinical-sloan-compare"), simulated=simulated)
    gaps: dict[str, list[float]] = {}
    with store.open_session(sid) as handle:
        for i in range(n):
            kind = ("letter", "comparison", "slider")[int(rng.integers(3))]
            gap = round(float(rng.gamma(4.0, MEANS[kind] * scale / 4.0)), 3) + 0.001
            presented = clock.t + timedelta(seconds=round(float(rng.uniform(0.5, 2.0)), 3))
            answered = presented + timedelta(seconds=gap)
            handle.record_trial(_trial(kind, i, presented, answered))
            clock.t = answered
            gaps.setdefault(kind, []).append(gap)
    return gaps


def _merge(*parts: dict[str, list[float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for part in parts:
        for kind, values in part.items():
            out.setdefault(kind, []).extend(values)
    return out


@pytest.fixture
def clock():
    return SetClock()


@pytest.fixture
def store(tmp_path, clock):
    with TrialStore.open(tmp_path / "log.sqlite3", clock=clock) as s:
        yield s


def _check_rows(found, gaps: dict[str, list[float]], *, simulated: bool) -> None:
    for kind, values in gaps.items():
        row = found.row(kind, simulated=simulated)
        q1, med, q3 = np.percentile(values, [25, 50, 75])
        assert row is not None and row.n == len(values)
        assert row.median_s == pytest.approx(np.median(values), abs=1e-6)
        assert (row.q1_s, row.q3_s) == pytest.approx((q1, q3), abs=1e-6)
        assert row.iqr_s == pytest.approx(q3 - q1, abs=1e-6)
        assert row.mean_s == pytest.approx(np.mean(values), abs=1e-6)
        assert row.simulated is simulated


def test_median_and_iqr_per_kind_match_the_known_gaps(store, clock):
    rng = np.random.default_rng(2026)
    gaps = _merge(_session(store, clock, rng, simulated=False), _session(store, clock, rng, simulated=False, n=25))
    found = answer_times(store)
    assert found.real_sessions == 2 and found.simulated_sessions == 0 and found.left_out == {}
    assert {r.kind for r in found.rows} == set(gaps) == {"letter", "comparison", "slider"}
    _check_rows(found, gaps, simulated=False)
    assert all(r.sessions == 2 for r in found.rows)


def test_simulated_sessions_are_left_out_by_default_and_summarised_apart_when_asked(store, clock):
    rng = np.random.default_rng(7)
    real = _session(store, clock, rng, simulated=False)
    simulated = _session(store, clock, rng, simulated=True, scale=0.01)  # the computer's clock: far faster
    default = answer_times(store)
    assert default.left_out == {"SIMULATED sessions (the computer's clock)": 1}
    assert default.simulated_sessions == 0 and not any(r.simulated for r in default.rows)
    _check_rows(default, real, simulated=False)
    both = answer_times(store, include_simulated=True)
    assert both.real_sessions == 1 and both.simulated_sessions == 1 and both.left_out == {}
    _check_rows(both, real, simulated=False)  # never mixed: the real rows are unchanged
    _check_rows(both, simulated, simulated=True)


def test_void_paused_and_untimed_answers_are_left_out_and_counted(store, clock, tmp_path):
    store.create_patient("P1")
    sid = store.create_session("P1", eye="OD", protocol=load_protocol("clinical-sloan-compare"))
    kept = []
    with store.open_session(sid) as handle:
        t = T0
        for i, gap in enumerate((2.5, 3.5, 4.25)):
            handle.record_trial(_trial("letter", i, t, t + timedelta(seconds=gap)))
            kept.append(gap)
            t += timedelta(seconds=10)
        handle.record_trial(_trial("letter", 3, t, t + timedelta(seconds=60.0)))  # then undone
        clock.t = t + timedelta(seconds=61)
        handle.undo("wrong key")
        t += timedelta(seconds=70)
        clock.t = t + timedelta(seconds=5)  # paused while the letter was on screen
        handle.pause()
        clock.t = t + timedelta(seconds=300)
        handle.resume()
        handle.record_trial(_trial("letter", 4, t, t + timedelta(seconds=301)))
        clock.t = t + timedelta(seconds=400)
        handle.record_trial(_trial("letter", 5, None, None))  # no presented_at: both stamped now
    found = answer_times(store)
    assert found.left_out == {
        "void (undone) answers": 1,
        "answers spanning a pause": 1,
        "untimed answers (no presented_at)": 1,
        "gaps between answers around an untimed one": 1,
    }
    _check_rows(found, {"letter": kept}, simulated=False)
    # between answers, one lens throughout: 10 s apart less each answer, the undone one's included
    assert found.gaps[0].kind == "lens kept" and len(found.gaps) == 1
    assert found.gaps[0].median_s == pytest.approx(np.median([7.5, 6.5, 5.75, 10.0]))
    assert found.lens_change_s() is None


def test_the_gap_to_the_next_question_is_sorted_by_whether_the_lens_changed(store, clock):
    """The next question's first lens against the last lens shown: a comparison's lens 2 and a
    slider's last lens are the ones in place after them; either cylinder form is the same lens."""
    store.create_patient("P1")
    sid = store.create_session("P1", eye="OD", protocol=load_protocol("clinical-sloan-compare"))
    a, a_plus, b, c = (
        Prescription(-1.0, -0.5, 90.0),
        Prescription(-1.5, 0.5, 0.0),
        Prescription(-0.75, -0.5, 90.0),
        Prescription(-1.0, -0.75, 90.0),
    )
    letter = dict(index=0, s_logmar=0.2, letter_shown="H", letter_named="H", correct=True)
    questions = [  # (trial, gap before it, kind): the gap from the previous answer to this question on screen
        (Trial(lens=a, **letter), None, "first"),
        (Trial(lens=a_plus, **letter), 1.5, "lens kept"),
        (Trial(lens=b, **letter), 6.0, "lens changed"),
        (
            Trial(index=0, lens=b, lens2=c, comparison="1", s_logmar=0.2, letter_shown="H", correct=True),
            2.0,
            "lens kept",
        ),
        (Trial(lens=c, **letter), 1.0, "lens kept"),  # lens 2 of the comparison is in place
        (
            Trial(
                index=0,
                lens=PATH[4],
                slider_knob="sphere",
                slider_lenses=PATH,
                slider_choice=4,
                s_logmar=0.2,
                letter_shown="H",
                correct=True,
            ),
            7.0,
            "lens changed",
        ),
        (Trial(lens=PATH[8], **letter), 2.5, "lens kept"),  # the slider's path ends on PATH[8]
        (Trial(lens=a, **letter), 8.0, "lens changed"),
        (Trial(lens=b, **letter), 40.0, "paused"),
    ]
    expected: dict[str, list[float]] = {}
    with store.open_session(sid) as handle:
        t = T0
        for k, (trial, gap, kind) in enumerate(questions):
            if kind == "paused":
                clock.t = t + timedelta(seconds=5)
                handle.pause()
                clock.t = t + timedelta(seconds=30)
                handle.resume()
            presented = t if gap is None else t + timedelta(seconds=gap)
            t = presented + timedelta(seconds=3)
            handle.record_trial(dataclasses.replace(trial, index=k, presented_at=presented, answered_at=t))
            if kind in ("lens kept", "lens changed"):
                expected.setdefault(kind, []).append(gap)
    found = answer_times(store)
    assert found.left_out == {"gaps between answers spanning a pause": 1}
    assert [(r.kind, r.n) for r in found.gaps] == [("lens kept", 4), ("lens changed", 3)]
    for row in found.gaps:
        assert row.median_s == pytest.approx(np.median(expected[row.kind]))
        assert row.mean_s == pytest.approx(np.mean(expected[row.kind]))
    assert found.lens_change_s() == pytest.approx(np.median([6.0, 7.0, 8.0]) - np.median([1.5, 2.0, 1.0, 2.5]))


def test_a_damaged_session_is_counted_and_does_not_hide_the_others(store, clock):
    rng = np.random.default_rng(3)
    good = _session(store, clock, rng, simulated=False, n=12)
    _session(store, clock, rng, simulated=False, n=5)
    store.conn.execute("DROP TRIGGER trials_no_update")  # damage as a foreign tool would write it
    store.conn.execute("UPDATE trials SET presented_at = 'not a time' WHERE session_id = 2 AND idx = 1")
    found = answer_times(store)
    assert found.left_out == {"damaged sessions": 1} and found.real_sessions == 1
    _check_rows(found, good, simulated=False)


def _cli(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def test_the_command_prints_medians_protocol_values_and_marks_simulated(tmp_path, capsys):
    clock = SetClock()
    db = tmp_path / "log.sqlite3"
    rng = np.random.default_rng(11)
    with TrialStore.open(db, clock=clock) as store:
        real = _session(store, clock, rng, simulated=False)
        _session(store, clock, rng, simulated=True, scale=0.01)
    code, out = _cli(["sessions", "durations", "--db", str(db)], capsys)
    assert code == 0 and "SIMULATED" in out.splitlines()[-1] and "1 real-patient sessions" in out
    assert not any(line.rstrip().endswith("SIMULATED") for line in out.splitlines())
    letter = next(line.split() for line in out.splitlines() if line.startswith("letter "))
    assert float(letter[3]) == pytest.approx(np.median(real["letter"]), abs=0.005)
    assert f"[comparisons] letter_seconds = {np.median(real['letter']):.1f}" in out
    # every gap between two answers is in one of the two rows, and their medians' difference is printed
    kept, changed = (next(line.split() for line in out.splitlines() if line.startswith(g + " ")) for g in GAPS)
    assert int(kept[2]) + int(changed[2]) == sum(len(v) for v in real.values()) - 1
    assert f"a change of lens adds {float(changed[4]) - float(kept[4]):.1f} s" in out
    assert f"lens_change_seconds = {max(float(changed[4]) - float(kept[4]), 0.0):.1f}" in out
    code, out = _cli(["sessions", "durations", "--db", str(db), "--include-simulated"], capsys)
    simulated_rows = [line for line in out.splitlines() if line.rstrip().endswith("SIMULATED")]
    assert code == 0 and len(simulated_rows) == len(real) + len(GAPS)  # each kind and each gap, apart
    code, out = _cli(["sessions", "durations", "--db", str(db), "--include-simulated", "--json"], capsys)
    doc = json.loads(out)
    assert doc["real_sessions"] == 1 and doc["simulated_sessions"] == 1
    assert {(r["kind"], r["simulated"]) for r in doc["rows"]} == {(k, s) for k in real for s in (False, True)}
    assert {(r["kind"], r["simulated"]) for r in doc["gaps"]} == {(g, s) for g in GAPS for s in (False, True)}
    real_gaps = {r["kind"]: r["median_s"] for r in doc["gaps"] if not r["simulated"]}
    assert doc["lens_change_s"] == pytest.approx(real_gaps["lens changed"] - real_gaps["lens kept"])


def _line(i: int, presented: datetime, answered: datetime, correct: str = "11010") -> Trial:
    """A chart line of five letters read through one lens (``line_correct`` one 1 / 0 per letter)."""
    return Trial(
        index=i,
        s_logmar=0.3,
        lens=Prescription(-1.0, -0.5, 90.0),
        letter_shown="DKNRS",
        correct=correct.count("1") >= 3,
        presented_at=presented,
        answered_at=answered,
        line_correct=correct,
    )


def test_a_chart_line_is_its_own_kind_of_answer_timed_as_one(store, clock, tmp_path, capsys):
    """Lines beside letters in one session: the lines' row holds exactly the lines' gaps (one answer
    a line, whatever its letters), the letters' row only the letters'; the command prints the line's
    protocol value ``[chart_line] line_seconds`` from the lines' median."""
    rng = np.random.default_rng(37)
    store.create_patient("P-LINES")
    sid = store.create_session("P-LINES", eye="OD", protocol=load_protocol("clinical-sloan-compare"), simulated=False)
    gaps: dict[str, list[float]] = {}
    with store.open_session(sid) as handle:
        for i in range(24):
            kind = "line" if i % 3 == 0 else "letter"
            gap = round(float(rng.gamma(4.0, (6.0 if kind == "line" else 3.0) / 4.0)), 3) + 0.001
            presented = clock.t + timedelta(seconds=1.0)
            answered = presented + timedelta(seconds=gap)
            trial = _line(i, presented, answered) if kind == "line" else _trial("letter", i, presented, answered)
            handle.record_trial(trial)
            clock.t = answered
            gaps.setdefault(kind, []).append(gap)
    found = answer_times(store)
    assert {r.kind for r in found.rows} == {"letter", "line"}
    assert found.row("line").n == 8 and found.row("letter").n == 16
    _check_rows(found, gaps, simulated=False)
    code, out = _cli(["sessions", "durations", "--db", str(store.path)], capsys)
    assert code == 0 and f"[chart_line] line_seconds = {np.median(gaps['line']):.1f}" in out
    line_row = next(line.split() for line in out.splitlines() if line.startswith("line "))
    assert int(line_row[1]) == 8 and float(line_row[3]) == pytest.approx(np.median(gaps["line"]), abs=0.005)
