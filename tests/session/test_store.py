"""The trial log: round trips, append-only rows, session state machine, files, damage."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from dataclasses import dataclass

import numpy as np
import pytest

import visiontune
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.optics import Prescription
from visiontune.session.migrations import MIGRATIONS, SCHEMA_VERSION
from visiontune.session.records import EventKind, Eye, SessionState
from visiontune.session.store import DATA_DIR_ENV, TrialStore, default_database_path


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- round trips ------------------------------------------------------------------------------


def test_patient_round_trip(store, clock):
    p = store.create_patient("P-01.a_b")
    assert p.patient_id == "P-01.a_b" and p.created_at.tzinfo is not None
    assert store.get_patient("P-01.a_b") == p
    assert store.list_patients() == [p]


@pytest.mark.parametrize("bad", ["", "x" * 65, "has space", "é", 12])
def test_bad_patient_id(store, bad):
    with pytest.raises(InvalidInputError, match="^patient_id:"):
        store.create_patient(bad)


def test_duplicate_and_unknown_patient(store, protocol):
    store.create_patient("P1")
    with pytest.raises(InvalidInputError, match="already exists"):
        store.create_patient("P1")
    with pytest.raises(InvalidInputError, match="^patient_id: no patient 'P2'"):
        store.create_session("P2", eye="OD", protocol=protocol)


@dataclass(frozen=True)
class _Calib:
    distance_mm: float
    pixel_pitch_mm: float


def test_session_round_trip(store, protocol):
    store.create_patient("P1")
    sid = store.create_session(
        "P1",
        eye="OS",
        protocol=protocol,
        calibration=_Calib(4000.0, 0.25),
        simulated=True,
        starting_rx={"sphere_d": -1.25, "cylinder_d": np.float64(-0.5), "axis_deg": 90},
    )
    info = store.get_session(sid)
    assert info.session_id == sid and info.patient_id == "P1" and info.eye is Eye.OS
    assert info.seed == protocol.seed  # defaults to the protocol's seed
    assert info.software_version == visiontune.__version__
    assert info.simulated is True and info.state is SessionState.OPEN
    assert info.calibration == {"distance_mm": 4000.0, "pixel_pitch_mm": 0.25}
    assert info.starting_rx == {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90}
    assert info.finished_at is None and info.result is None
    assert info.protocol == protocol.__class__(**{**protocol.__dict__, "source": info.protocol.source})
    assert info.protocol_toml == protocol.source_text
    assert store.list_sessions() == [info]
    assert store.list_sessions(patient_id="P1", state="open") == [info]
    assert store.list_sessions(state=SessionState.FINISHED) == []


def test_session_argument_errors(store, protocol):
    store.create_patient("P1")
    with pytest.raises(InvalidInputError, match="^eye:"):
        store.create_session("P1", eye="left", protocol=protocol)
    with pytest.raises(InvalidInputError, match="^seed:"):
        store.create_session("P1", eye="OD", protocol=protocol, seed=-1)
    with pytest.raises(InvalidInputError, match="^calibration:"):
        store.create_session("P1", eye="OD", protocol=protocol, calibration={"x": float("nan")})
    with pytest.raises(InvalidInputError, match="^protocol:"):
        store.create_session("P1", eye="OD", protocol=42)
    with pytest.raises(SessionError, match="no session 99"):
        store.get_session(99)
    assert store.list_sessions() == []  # nothing half-written


def test_record_and_read_back(store, session_id, clock, make_trial):
    with store.open_session(session_id) as h:
        duel = make_trial(3, correct=False, letter_named=None, lens2=Prescription(1.0, -0.75, 10.0))
        written = [h.record_trial(make_trial(i)) for i in range(3)] + [h.record_trial(duel)]
        assert [t.index for t in written] == [0, 1, 2, 3]
        assert h.trials() == written
    fresh = TrialStore.open(store.path)
    try:
        got = fresh.trials(session_id)
    finally:
        fresh.close()
    assert got == written
    assert got[3].lens2 == Prescription(1.0, -0.75, 10.0) and got[3].letter_named is None and got[3].correct is False
    assert got[0].lens2 is None and got[0].presented_at <= got[0].answered_at


def test_explicit_timestamps_are_kept(store, session_id, make_trial):
    from datetime import datetime, timedelta, timezone

    tz = timezone(timedelta(hours=2))
    t0 = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=tz)
    with store.open_session(session_id) as h:
        trial = h.record_trial(make_trial(0, presented_at=t0, answered_at=t0 + timedelta(seconds=2.5)))
    [back] = store.trials(session_id)
    assert back.presented_at == t0 and back.answered_at - back.presented_at == timedelta(seconds=2.5)
    assert back == trial


# --- append-only ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE trials SET correct = 1 - correct",
        "UPDATE trials SET s_logmar = 9 WHERE idx = 0",
        "DELETE FROM trials",
        "DELETE FROM trials WHERE idx = 1",
        "UPDATE events SET kind = 'note'",
        "DELETE FROM events",
        "DELETE FROM sessions",
        "UPDATE sessions SET seed = 1",
        "UPDATE sessions SET protocol_toml = 'x'",
    ],
)
def test_raw_sql_cannot_change_the_log(store, session_id, sql, make_trial):
    with store.open_session(session_id) as h:
        for i in range(3):
            h.record_trial(make_trial(i))
        h.undo()
    before = (store.trials(session_id, include_void=True), store.events(session_id), store.get_session(session_id))
    conn = sqlite3.connect(store.path)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)
        conn.rollback()
    finally:
        conn.close()
    after = (store.trials(session_id, include_void=True), store.events(session_id), store.get_session(session_id))
    assert after == before


def test_raw_sql_cannot_insert_out_of_order_or_into_finished(store, session_id, make_trial):
    with store.open_session(session_id) as h:
        h.record_trial(make_trial(0))
    conn = sqlite3.connect(store.path)
    ins = (
        "INSERT INTO trials (session_id, idx, s_logmar, sphere_d, cylinder_d, axis_deg, letter_shown, "
        "correct, presented_at, answered_at) VALUES (?, ?, 0, 0, 0, 0, 'A', 1, 't', 't')"
    )
    try:
        with pytest.raises(sqlite3.IntegrityError, match="next one"):
            conn.execute(ins, (session_id, 5))
        conn.execute("UPDATE sessions SET state = 'finished' WHERE id = ?", (session_id,))
        with pytest.raises(sqlite3.IntegrityError, match="open session"):
            conn.execute(ins, (session_id, 1))
        with pytest.raises(sqlite3.IntegrityError, match="finished session cannot change"):
            conn.execute("UPDATE sessions SET state = 'open' WHERE id = ?", (session_id,))
    finally:
        conn.rollback()
        conn.close()


# --- undo / pause / resume / finish -------------------------------------------------------------


def test_undo_voids_the_last_non_void_trial(store, session_id, make_trial):
    with store.open_session(session_id) as h:
        assert h.undo() is None and h.events() == []  # nothing to undo, nothing written
        for i in range(4):
            h.record_trial(make_trial(i))
        first = h.undo(reason="patient sneezed")
        second = h.undo()
        assert (first.index, first.void) == (3, True) and (second.index, second.void) == (2, True)
        assert [t.index for t in h.trials()] == [0, 1]
        assert [(t.index, t.void) for t in h.trials(include_void=True)] == [(0, 0), (1, 0), (2, 1), (3, 1)]
        nxt = h.record_trial(make_trial(9, index=4))
        assert nxt.index == 4  # indices count void trials too; the log is never rewritten
        assert h.undo().index == 4
        assert h.undo().index == 1
        events = h.events()
    assert [(e.kind, e.trial_index) for e in events] == [
        (EventKind.UNDO, 3),
        (EventKind.UNDO, 2),
        (EventKind.UNDO, 4),
        (EventKind.UNDO, 1),
    ]
    assert events[0].payload == {"reason": "patient sneezed"} and events[1].payload is None
    assert all(a.at < b.at for a, b in zip(events, events[1:]))


def test_pause_resume_finish_sequence(store, session_id, make_trial):
    with store.open_session(session_id) as h:
        h.record_trial(make_trial(0))
        h.pause()
        assert h.info.state is SessionState.PAUSED
        with pytest.raises(SessionError, match=rf"session {session_id} is paused: cannot record a trial; resume"):
            h.record_trial(make_trial(1))
        with pytest.raises(SessionError, match="is paused: cannot undo"):
            h.undo()
        with pytest.raises(SessionError, match="is paused: cannot pause"):
            h.pause()
        h.resume()
        with pytest.raises(SessionError, match="is open: cannot resume"):
            h.resume()
        h.record_trial(make_trial(1))
        h.note("lens tray swapped")
        h.finish({"sphere_d": -1.0, "cylinder_d": -0.25, "va_logmar": np.float64(0.02)})
        info = h.info
        assert info.state is SessionState.FINISHED and info.finished_at is not None
        assert info.result == {"sphere_d": -1.0, "cylinder_d": -0.25, "va_logmar": 0.02}
        for action in (lambda: h.record_trial(make_trial(2)), h.undo, h.pause, h.resume, lambda: h.finish({})):
            with pytest.raises(SessionError, match="is finished"):
                action()
        h.note(
            "reviewed", data={"theta": np.float64(25.0), "lengthscales": np.array([1.0, 2.0])}
        )  # notes stay possible
        kinds = [e.kind for e in h.events()]
        assert len(h.trials()) == 2
    assert kinds == ["pause", "resume", "note", "finish", "note"]
    events = store.events(session_id)
    assert events[3].payload == info.result
    assert events[2].payload == {"text": "lens tray swapped"}
    assert events[4].payload == {"text": "reviewed", "data": {"theta": 25.0, "lengthscales": [1.0, 2.0]}}


def test_finish_from_paused_and_closed_handle(store, session_id):
    h = store.open_session(session_id)
    h.pause()
    h.finish('{"stopped": "clinician"}')
    h.close()
    with pytest.raises(SessionError, match="handle is closed"):
        h.note("x")
    assert store.get_session(session_id).result == {"stopped": "clinician"}
    with store.open_session(session_id) as again:  # a finished session can be reopened to read
        assert again.trials() == []


def test_record_rejects_non_trial_input(store, session_id):
    with store.open_session(session_id) as h, pytest.raises(InvalidInputError, match="^trial:"):
        h.record_trial({"s_logmar": 0.0})


def test_same_process_cannot_open_a_session_twice(store, session_id):
    with store.open_session(session_id):
        with pytest.raises(SessionError, match=rf"session {session_id} is open in this process \(pid {os.getpid()}\)"):
            store.open_session(session_id)
    with store.open_session(session_id):  # released on close
        pass


# --- files ------------------------------------------------------------------------------------


def test_files_are_user_only(tmp_path, clock, protocol, make_trial):
    path = tmp_path / "new" / "dir" / "log.sqlite3"
    with TrialStore.open(path, clock=clock) as s:
        s.create_patient("P1")
        sid = s.create_session("P1", eye="OU", protocol=protocol)
        with s.open_session(sid) as h:
            h.record_trial(make_trial(0))
            created = sorted(p.name for p in path.parent.iterdir())
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
    assert "log.sqlite3" in created and "log.sqlite3-wal" in created and f"log.sqlite3.session-{sid}.lock" in created
    assert set(modes.values()) == {0o600}, modes
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_pragmas(store):
    conn = store.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)


def test_default_path_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert default_database_path() == tmp_path / "data" / "visiontune.sqlite3"
    with TrialStore.open() as s:
        assert s.path == tmp_path / "data" / "visiontune.sqlite3"
    assert (tmp_path / "data" / "visiontune.sqlite3").is_file()
    monkeypatch.delenv(DATA_DIR_ENV)
    default = default_database_path()
    assert default.name == "visiontune.sqlite3" and default.parent.name == "visiontune"


# --- damaged, foreign and newer files: StoreError, file untouched ------------------------------


def _populated(path, protocol, make_trial, n=200):
    with TrialStore.open(path) as s:
        s.create_patient("P1")
        sid = s.create_session("P1", eye="OD", protocol=protocol)
        with s.open_session(sid) as h:
            for i in range(n):
                h.record_trial(make_trial(i % 20, index=i))
    assert not path.with_name(path.name + "-wal").exists()  # checkpointed on close


def _assert_refused(path, match):
    digest = sha256(path)
    siblings = sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(StoreError, match=match) as info:
        TrialStore.open(path)
    assert str(path) in str(info.value)
    assert sha256(path) == digest
    assert sorted(p.name for p in path.parent.iterdir()) == siblings


def test_random_bytes_file(tmp_path):
    path = tmp_path / "noise.sqlite3"
    path.write_bytes(np.random.default_rng(0).bytes(8192))
    _assert_refused(path, "not an SQLite database")


def test_text_file(tmp_path):
    path = tmp_path / "notes.sqlite3"
    path.write_text("patient list\nP1, P2\n")
    _assert_refused(path, "not an SQLite database")


def test_truncated_database(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    _populated(path, protocol, make_trial)
    data = path.read_bytes()
    assert len(data) > 4 * 4096
    path.write_bytes(data[: len(data) // 2])
    _assert_refused(path, "damaged")


def test_corrupted_page(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    _populated(path, protocol, make_trial)
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(1)
    data[4096 * 2 : 4096 * 4] = rng.bytes(2 * 4096)  # overwrite two b-tree pages
    path.write_bytes(bytes(data))
    _assert_refused(path, "damaged")


def test_foreign_sqlite_database(tmp_path):
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.commit()
    conn.close()
    _assert_refused(path, "no 'meta' table")


def test_newer_schema_is_refused_untouched(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    _populated(path, protocol, make_trial, n=3)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    _assert_refused(
        path,
        rf"schema version {SCHEMA_VERSION + 1} is newer than this VisionTune supports \(version {SCHEMA_VERSION}\)",
    )


def test_empty_file_is_initialised(tmp_path):
    path = tmp_path / "empty.sqlite3"
    path.touch()
    with TrialStore.open(path) as s:
        assert s.schema_version == SCHEMA_VERSION


def test_directory_is_refused(tmp_path):
    with pytest.raises(StoreError, match="not a regular file"):
        TrialStore.open(tmp_path)


def test_closed_store(store):
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_json_columns_round_trip_exactly(store, protocol):
    store.create_patient("P1")
    calib = {"distance_mm": 4000.0, "pixel_pitch_mm": 0.2487, "mirror": True, "name": "Room 2 — ÉDTRS"}
    sid = store.create_session("P1", eye="OD", protocol=protocol, calibration=json.dumps(calib))
    assert store.get_session(sid).calibration == calib


def test_dropped_handle_releases_the_lock(store, session_id):
    import gc

    store.open_session(session_id)  # not kept, not closed
    gc.collect()
    with store.open_session(session_id):
        pass
