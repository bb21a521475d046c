"""The one trial type: what it refuses (naming the field), and what a log may record (check_next)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog
from visiontune.refraction.trial import Trial, check_next, trial_kind

LENS = Prescription(-1.0, -0.5, 90.0)


def _trial(**kw) -> Trial:
    base = dict(index=0, s_logmar=0.3, lens=Prescription(0.0, 0.0), letter_shown="E", correct=True)
    base.update(kw)
    return Trial(**base)


def test_a_trial_is_frozen_and_coerces_its_numbers():
    trial = _trial(s_logmar=np.float64(0.25), index=np.int64(3), correct=np.bool_(False))
    assert (trial.s_logmar, trial.index, trial.correct) == (0.25, 3, False)
    assert type(trial.s_logmar) is float and type(trial.index) is int and type(trial.correct) is bool
    with pytest.raises(dataclasses.FrozenInstanceError):
        trial.correct = True


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(index=-1), "index"),
        (dict(index=1.0), "index"),
        (dict(index=True), "index"),
        (dict(session_id="1"), "session_id"),
        (dict(s_logmar=float("inf")), "s_logmar"),
        (dict(s_logmar="0.3"), "s_logmar"),
        (dict(lens=(0.0, 0.0, 0.0)), "lens"),
        (dict(lens2="x"), "lens2"),
        (dict(comparison="1"), "comparison"),
        (dict(lens2=LENS, comparison="3"), "comparison"),
        (dict(letter_shown=""), "letter_shown"),
        (dict(letter_named=3), "letter_named"),
        (dict(correct=2), "correct"),
        (dict(correct="yes"), "correct"),
        (dict(void=None), "void"),
        (dict(presented_at=datetime(2026, 1, 1)), "presented_at"),
        (
            dict(presented_at=datetime(2026, 1, 2, tzinfo=UTC), answered_at=datetime(2026, 1, 1, tzinfo=UTC)),
            "answered_at",
        ),
        (dict(slider_knob="sphere", slider_choice=0), "slider"),
        (dict(slider_knob="focus", slider_lenses=(LENS, LENS), slider_choice=0), "slider_knob"),
        (dict(slider_knob="sphere", slider_lenses=(LENS, LENS), slider_choice=2), "slider_choice"),
        (dict(letter_shown="CDH", line_correct="10"), "line_correct"),
    ],
)
def test_a_bad_trial_names_the_field(kwargs, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        _trial(**kwargs)


def test_correct_accepts_0_and_1():
    assert _trial(correct=1).correct is True
    assert _trial(correct=0).correct is False


def test_kinds():
    assert trial_kind(_trial()) == "letter"
    assert trial_kind(_trial(lens2=LENS)) == "letter"  # a duel
    assert trial_kind(_trial(lens2=LENS, comparison="=")) == "comparison"
    path = (LENS, Prescription(-0.75, -0.5, 90.0))
    assert trial_kind(_trial(lens=path[1], slider_knob="sphere", slider_lenses=list(path), slider_choice=1)) == "slider"
    assert _trial(lens=path[1], slider_knob="sphere", slider_lenses=list(path), slider_choice=1).slider_lenses == path
    assert trial_kind(_trial(letter_shown="CDH", line_correct="101")) == "letter"


def test_a_log_records_only_its_next_trial_and_keeps_nothing_else():
    assert check_next(_trial(index=2), 2).index == 2
    with pytest.raises(InvalidInputError, match=r"^trial: expected a Trial"):
        check_next({"index": 0}, 0)
    with pytest.raises(InvalidInputError, match=r"^trial\.index: expected 1, the log's next trial, got 0"):
        check_next(_trial(), 1)
    with pytest.raises(InvalidInputError, match=r"^trial\.void"):
        check_next(_trial(void=True), 0)
    log = MemoryLog()
    first = log.record(_trial())
    assert first.answered_at is not None and first.presented_at is None
    with pytest.raises(InvalidInputError, match="trial.index"):
        log.record(_trial())  # the answer to question 0 again, not question 1
    assert log.trials() == [first]
    log.undo()
    assert log.record(_trial(index=1)).index == 1  # void trials count
    assert [t.index for t in log.trials(include_void=True)] == [0, 1]
