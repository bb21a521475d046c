"""The one Trial through the SQLite trial log: any answer recorded is read back equal (lenses at
axis 180 included), the lens columns hold the axis in [0, 180) as they always have, and the
recorded trial is the one the log returned (what the loop keeps without reading it again)."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.slider import KNOBS
from visiontune.refraction.trial import Trial, TrialLog
from visiontune.session.engine import StoreLog
from visiontune.session.store import TrialStore

POWER = st.floats(-20, 20, allow_nan=False)
LENS = st.builds(Prescription, POWER, POWER, st.sampled_from([1.0, 45.5, 90.0, 179.5, 180.0]))
LETTERS = st.text(alphabet="CDHKNORSVZ", min_size=1, max_size=1)
WHEN = st.integers(0, 10**9).map(lambda us: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=us))


@st.composite
def answers(draw) -> dict:
    """The answer's own fields of one trial of any kind (index and stamps left to the test)."""
    base = dict(s_logmar=draw(st.floats(-0.3, 1.0, allow_nan=False)), letter_shown=draw(LETTERS))
    kind = draw(st.sampled_from(["letter", "duel", "comparison", "slider", "line"]))
    if kind == "slider":
        path = tuple(draw(st.lists(LENS, min_size=2, max_size=5)))
        choice = draw(st.integers(0, len(path) - 1))
        knob = draw(st.sampled_from(KNOBS))
        return base | dict(lens=path[choice], correct=False, slider_knob=knob, slider_lenses=path, slider_choice=choice)
    if kind == "line":
        shown = "".join(draw(st.permutations("CDHKN"))[: draw(st.integers(2, 5))])
        read = "".join(draw(st.sampled_from("01")) for _ in shown)
        return base | dict(
            lens=draw(LENS), letter_shown=shown, correct=read.count("1") * 2 > len(read), line_correct=read
        )
    extra = {}
    if kind in ("duel", "comparison"):
        extra["lens2"] = draw(LENS)
    if kind == "comparison":
        extra["comparison"] = draw(st.sampled_from("12="))
    named = draw(st.none() | LETTERS)
    return base | dict(lens=draw(LENS), correct=draw(st.booleans()), letter_named=named, **extra)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(answers(), WHEN, st.floats(0, 30, allow_nan=False)), min_size=1, max_size=6))
def test_any_trial_recorded_is_read_back_equal(given_answers):
    with tempfile.TemporaryDirectory() as tmp, TrialStore.open(Path(tmp) / "log.sqlite3") as store:
        store.create_patient("P1")
        sid = store.create_session("P1", eye="OD", protocol=load_protocol("clinical-sloan"), seed=1)
        with store.open_session(sid) as handle:
            recorded = [
                handle.record_trial(Trial(i, **fields, presented_at=t, answered_at=t + timedelta(seconds=gap)))
                for i, (fields, t, gap) in enumerate(given_answers)
            ]
        assert store.trials(sid, include_void=True) == recorded
        assert all(t.session_id == sid and not t.void for t in recorded)
        rows = sqlite3.connect(store.path).execute("SELECT axis_deg, axis2_deg, slider_path FROM trials").fetchall()
    for (axis, axis2, path), t in zip(rows, recorded, strict=True):
        assert axis == t.lens.axis_deg % 180.0 and 0.0 <= axis < 180.0
        assert axis2 == (None if t.lens2 is None else t.lens2.axis_deg % 180.0)
        if path is not None:
            assert [x["axis_deg"] for x in json.loads(path)] == [x.axis_deg % 180.0 for x in t.slider_lenses]


def test_the_log_in_memory_and_the_sqlite_log_are_one_trial_log(store, session_id, make_trial):
    """Both logs take the same trial and give back the same answer (the store adds its session)."""
    memory = MemoryLog()
    with store.open_session(session_id) as handle:
        stored = StoreLog(handle)
        assert isinstance(memory, TrialLog) and isinstance(stored, TrialLog)
        trial = make_trial(0, presented_at=datetime(2026, 1, 1, tzinfo=UTC))
        a, b = memory.record(trial), stored.record(trial)
        assert b.session_id == session_id and a.session_id is None
        keep = ("answered_at", "session_id")
        assert {k: v for k, v in vars(a).items() if k not in keep} == {
            k: v for k, v in vars(b).items() if k not in keep
        }
        assert memory.trials() == [a] and stored.trials() == [b] == store.trials(session_id)
