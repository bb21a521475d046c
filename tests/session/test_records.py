"""Validation of the value types of the trial log."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from visiontune.errors import InvalidInputError
from visiontune.session.records import Lens, TrialInput


def test_lens_is_frozen_and_coerces_ints():
    lens = Lens(-1, 0, 90)
    assert lens == Lens(-1.0, 0.0, 90.0) and isinstance(lens.sphere_d, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lens.sphere_d = 2.0


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(sphere_d=float("nan"), cylinder_d=0.0), "lens.sphere_d"),
        (dict(sphere_d=0.0, cylinder_d="1"), "lens.cylinder_d"),
        (dict(sphere_d=0.0, cylinder_d=0.0, axis_deg=180.0), "lens.axis_deg"),
        (dict(sphere_d=0.0, cylinder_d=0.0, axis_deg=-1.0), "lens.axis_deg"),
        (dict(sphere_d=True, cylinder_d=0.0), "lens.sphere_d"),
    ],
)
def test_bad_lens_names_the_field(kwargs, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        Lens(**kwargs)


def _trial(**kw):
    base = dict(s_logmar=0.3, lens=Lens(0.0, 0.0), letter_shown="E", correct=True)
    base.update(kw)
    return TrialInput(**base)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(s_logmar=float("inf")), "s_logmar"),
        (dict(lens=(0.0, 0.0, 0.0)), "lens"),
        (dict(lens2="x"), "lens2"),
        (dict(letter_shown=""), "letter_shown"),
        (dict(letter_named=3), "letter_named"),
        (dict(correct=2), "correct"),
        (dict(correct="yes"), "correct"),
        (dict(presented_at=datetime(2026, 1, 1)), "presented_at"),
        (
            dict(presented_at=datetime(2026, 1, 2, tzinfo=UTC), answered_at=datetime(2026, 1, 1, tzinfo=UTC)),
            "answered_at",
        ),
    ],
)
def test_bad_trial_input_names_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=rf"^{name}:"):
        _trial(**kwargs)


def test_correct_accepts_0_and_1():
    assert _trial(correct=1).correct is True
    assert _trial(correct=0).correct is False
