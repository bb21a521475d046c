"""Slider questions ("turn the knob; where is it clearest?") in a clinical session over the SQLite
trial log: recorded with the knob, its path and the choice before anything else happens,
replayed after a crash to the same next question and the same particles, undone like letters,
asked exactly as the bench asks them, counted in the result, and run from the command line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.simulated_sessions import SimulatedCase, answer_until, assert_resumes_as_left, left_as
from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog, Refraction, is_slider
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.result import parse_result
from visiontune.refraction.trial import Trial
from visiontune.session.engine import (
    Answer,
    ComparisonReply,
    PendingSlider,
    SliderReply,
)
from visiontune.session.store import TrialStore

PROTOCOL_PATH = Path(__file__).resolve().parent.parent / "protocols" / "sloan-compare-sliders.toml"
PROTOCOL = load_protocol(PROTOCOL_PATH)
SIM = SimulatedCase(PROTOCOL)
CASE, START = SIM.case, SIM.start
_session, _presenter = SIM.session, SIM.presenter


@pytest.fixture
def store(tmp_path):
    with TrialStore.open(tmp_path / "log.sqlite3") as s:
        yield s


def _until_slider(session, presenter) -> PendingSlider:
    return answer_until(session, presenter, PendingSlider)


def test_sliders_are_logged_with_their_path_and_resume_to_the_same_question(store):
    presenter = _presenter()
    with _session(store) as session:
        q = _until_slider(session, presenter)
        session.record(presenter.present(q))
        session.run(presenter, max_steps=3)
        left = left_as(session)
    stored = store.trials(left[0])
    sliders = [t for t in stored if is_slider(t)]
    assert sliders and sliders[0].index == q.index
    first = sliders[0]
    assert first.slider_knob == q.knob and len(first.slider_lenses) == len(q.lenses)
    assert [(x.sphere_d, x.cylinder_d, x.axis_deg) for x in first.slider_lenses] == [
        (x.sphere_d, x.cylinder_d, x.axis_deg % 180.0) for x in q.lenses
    ]
    assert first.lens == first.slider_lenses[first.slider_choice] and first.comparison is None and first.lens2 is None
    assert_resumes_as_left(store, left)


def test_the_bench_and_the_clinic_ask_the_same_questions(store):
    """The in-memory log (bench) and the SQLite log (clinic) give the same 25 questions and answers."""
    bench = Refraction(MemoryLog(), PROTOCOL, seed=CASE.seed, start=START, simulated=True)
    bench.run(_presenter(), max_steps=25)
    with _session(store) as clinic:
        clinic.run(_presenter(), max_steps=25)
        ours = clinic.trials()

    def key(t):
        lenses = t.slider_lenses or ()
        path = [(x.sphere_d, x.cylinder_d, x.axis_deg % 180) for x in lenses] if lenses else None
        return (
            t.s_logmar,
            t.lens.sphere_d,
            t.lens.cylinder_d,
            t.lens.axis_deg % 180,
            t.comparison,
            t.slider_knob,
            path,
            t.slider_choice,
        )

    assert [key(t) for t in ours] == [key(t) for t in bench.trials()] and any(is_slider(t) for t in ours)


def test_undo_of_a_slider_and_a_wrong_kind_of_answer(store):
    presenter = _presenter()
    with _session(store) as session:
        q = _until_slider(session, presenter)
        n = len(store.trials(session.session_id, include_void=True))
        for wrong in (Answer(correct=True), ComparisonReply("1"), SliderReply(len(q.lenses))):
            with pytest.raises(InvalidInputError, match="nothing was recorded"):
                session.record(wrong)
        assert len(store.trials(session.session_id, include_void=True)) == n
        before = session.engine.posterior(session.trials()).theta.copy()
        session.record(SliderReply(q.start))
        undone = session.undo()
        assert undone.void and undone.slider_choice == q.start and undone.slider_knob == q.knob
        np.testing.assert_array_equal(session.engine.posterior(session.trials()).theta, before)
        assert session.next_query().index == q.index + 1


def test_result_counts_the_sliders_and_the_report_reads_it(store, tmp_path, capsys):
    with _session(store) as session:
        result = session.run(_presenter())
        valid = session.trials()
    assert result["sliders_used"] == sum(is_slider(t) for t in valid) >= 1
    assert store.get_session(session.session_id).result["sliders_used"] == result["sliders_used"]
    assert parse_result(result).sliders_used == result["sliders_used"]
    too_many = result["trials_used"] - result["comparisons_used"] + 1
    with pytest.raises(Exception, match=r"sliders_used: expected an integer in \[0, trials_used - comparisons_used"):
        parse_result({**result, "sliders_used": too_many})
    out = tmp_path / "report.json"
    assert main(["report", str(session.session_id), "--db", str(store.path), "--json", str(out)]) == 0
    assert out.exists()


def test_the_store_refuses_half_a_slider(store):
    lens = Prescription(-1.0, -0.5, 90.0)
    for kwargs, message in (
        ({"slider_knob": "sphere", "slider_choice": 0}, "together"),
        ({"slider_knob": "knob", "slider_lenses": (lens, lens), "slider_choice": 0}, "slider_knob"),
        ({"slider_knob": "axis", "slider_lenses": (lens,), "slider_choice": 0}, "slider_lenses"),
        ({"slider_knob": "axis", "slider_lenses": (lens, lens), "slider_choice": 2}, "slider_choice"),
        (
            {
                "slider_knob": "axis",
                "slider_lenses": (lens, lens),
                "slider_choice": 0,
                "lens2": lens,
                "comparison": "1",
            },
            "not both",
        ),
    ):
        with pytest.raises(InvalidInputError, match=message):
            Trial(0, 0.1, lens, "H", True, **kwargs)


def test_session_run_simulate_runs_a_protocol_with_sliders(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    args = ["session", "run", "--simulate", "--db", str(db), "--protocol", str(PROTOCOL_PATH), "--patient-seed", "2"]
    assert main([*args, "--max-steps", "40"]) == 0
    err = capsys.readouterr().err
    assert "slider " in err and "clearest" in err
    assert main(["session", "resume", "1", "--simulate", "--db", str(db), "--quiet"]) == 0
    assert "finished" in capsys.readouterr().out
    with TrialStore.open(db) as s:
        assert any(is_slider(t) for t in s.trials(1)) and s.get_session(1).result["sliders_used"] >= 1
