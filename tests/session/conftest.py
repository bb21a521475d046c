"""Fixtures of the session tests: a store in tmp_path with a deterministic clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.store import TrialStore


class FakeClock:
    """Returns 2026-01-01T00:00:00Z, then one second later at every call."""

    def __init__(self) -> None:
        self.t = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "log.sqlite3"


@pytest.fixture
def store(db_path, clock):
    with TrialStore.open(db_path, clock=clock) as s:
        yield s


@pytest.fixture
def protocol():
    return load_protocol("paper-ucb-ald")


@pytest.fixture
def session_id(store, protocol):
    store.create_patient("P001")
    return store.create_session("P001", eye="OD", protocol=protocol, seed=7)


def _make_trial(i: int, correct: bool = True, *, index: int | None = None, **kw) -> Trial:
    """A distinct trial per ``i`` (lens and size depend on i), of ``index`` (default ``i``)."""
    return Trial(
        index=i if index is None else index,
        s_logmar=0.1 * i - 0.5,
        lens=Prescription(-1.0 + 0.25 * i, 0.5 - 0.25 * i, 90.0),
        letter_shown="ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26],
        letter_named=kw.pop("letter_named", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26] if correct else "Z"),
        correct=correct,
        **kw,
    )


@pytest.fixture(name="make_trial")
def make_trial_fixture():
    """``make_trial(i, correct=True, index=i, **overrides) -> Trial``."""
    return _make_trial
