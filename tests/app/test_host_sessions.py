"""Robustness in the app's engine: the session list offers neither a discarded session nor breaks
on a damaged one, a new export folder is user-only (0700) whatever the umask, and an estimate is
shown before the first answer only where the model's prior knows the start."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from visiontune.app.logic.messages import (
    Close,
    EstimateReady,
    ExportSession,
    Failed,
    Finished,
    OpenStore,
    SessionsListed,
)
from visiontune.app.logic.session_host import SessionHost, record_simulated_session
from visiontune.refraction.protocol import load_protocol
from visiontune.session.store import TrialStore


def _listed(db):
    events = []
    host = SessionHost(events.append)
    host.handle(OpenStore(str(db)))
    host.handle(Close())
    assert not any(isinstance(e, Failed) for e in events), events
    return [s.session_id for s in next(e.value for e in reversed(events) if isinstance(e, SessionsListed))]


def test_the_resume_offer_leaves_out_discarded_and_damaged_sessions(tmp_path):
    db = tmp_path / "log.sqlite3"
    sloan = load_protocol("clinical-sloan")
    with TrialStore.open(db) as store:
        store.create_patient("P1")
        discarded, damaged, sound = (store.create_session("P1", eye="OD", protocol=sloan) for _ in range(3))
    assert _listed(db) == [discarded, damaged, sound]
    with TrialStore.open(db) as store, store.open_session(discarded) as handle:
        handle.discard("engine refused the protocol")
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER sessions_snapshot_is_fixed")
    conn.execute("UPDATE sessions SET created_at = 'yesterday' WHERE id = ?", (damaged,))
    conn.commit()
    conn.close()
    assert _listed(db) == [sound]  # the others still list; the damaged one is in the log's warnings


def test_a_new_export_folder_is_0700_under_umask_000(tmp_path, umask_000):
    db = tmp_path / "log.sqlite3"
    record_simulated_session(db, "clinical-sloan", 2, seed=1)
    folder = tmp_path / "exports" / "2026"
    events = []
    host = SessionHost(events.append)
    host.handle(OpenStore(str(db)))
    host.handle(ExportSession(1, str(folder)))
    host.handle(Close())
    assert not any(isinstance(e, Failed) for e in events), events
    view = next(e.value for e in events if isinstance(e, Finished))
    assert view.exports and all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in view.exports.values())
    for f in (tmp_path / "exports", folder):
        assert stat.S_IMODE(f.stat().st_mode) == 0o700, f


@pytest.mark.parametrize(
    ("protocol", "before_any_answer"),
    [
        ("clinical-sloan", True),
        (
            str(
                Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-optics-gp.toml"
            ),
            True,
        ),
        ("paper-ucb-ald", False),
    ],
)
def test_an_estimate_before_the_first_answer_only_where_the_prior_knows_the_start(
    tmp_path, protocol, before_any_answer
):
    """The models of particles (optics; the GP on the optics prediction) have a prior centred on the
    start, so the app shows their estimate before any answer; a GP alone has none to show."""

    events = record_simulated_session(tmp_path / "log.sqlite3", protocol, 1, finish=False)
    counts = [e.value.n_trials for e in events if isinstance(e, EstimateReady)]
    assert (0 in counts) is before_any_answer
    assert 1 in counts
