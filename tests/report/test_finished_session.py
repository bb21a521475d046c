"""Reading a session for export: unknown or unfinished sessions are clear errors; exporting
never changes the trial log."""

from __future__ import annotations

import sqlite3

import pytest

from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.report import ExportPaths, export_session, load_session


def _dump(db_path) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_load_finished_session(store, make_session):
    sid = make_session(n_trials=12, undo_at=(3, 8))
    rec = load_session(store, sid)
    assert rec.session_id == sid and rec.info.patient_id == "P-0042"
    assert len(rec.trials) == 12 and [t.index for t in rec.trials if t.void] == [3, 8]
    assert len(rec.valid_trials) == 10 == rec.result.trials_used
    assert [e.kind.value for e in rec.events].count("undo") == 2


def test_unknown_session_is_a_clear_error(store, make_session):
    make_session()
    with pytest.raises(SessionError, match="no session 99"):
        load_session(store, 99)


@pytest.mark.parametrize("pause", [False, True])
def test_unfinished_session_is_a_clear_error(store, make_session, pause):
    sid = make_session(finish=False)
    if pause:
        with store.open_session(sid) as h:
            h.pause()
    state = "paused" if pause else "open"
    with pytest.raises(SessionError, match=f"session {sid} is {state}: only a finished session can be exported"):
        load_session(store, sid)


def test_result_contradicting_the_simulated_flag(store, make_session):
    sid = make_session(simulated=False, result_simulated=True)
    with pytest.raises(StoreError, match="result.simulated is True but the session is not simulated"):
        load_session(store, sid)


def test_result_contradicting_the_number_of_answers(store, make_session):
    sid = make_session(n_trials=12, undo_at=(3, 8), trials_used=12)
    with pytest.raises(StoreError, match="result.trials_used is 12 but the log holds 10 valid answers"):
        load_session(store, sid)


def test_malformed_stored_result_names_session_and_key(store, make_session):
    sid = make_session(stopped_by="tired")
    with pytest.raises(StoreError, match=rf"session {sid} in .*result.stopped_by"):
        load_session(store, sid)


def test_export_never_changes_the_log(db_path, store, make_session, tmp_path):
    sid = make_session(simulated=True)
    open_sid = make_session(finish=False)
    store.close()
    before = _dump(db_path)
    paths = ExportPaths(*(tmp_path / f"out.{k}" for k in ("pdf", "csv", "json", "fhir.json")))
    written = export_session(db_path, sid, paths)
    assert set(written) == {"pdf", "csv", "json", "fhir"}
    with pytest.raises(SessionError):
        export_session(db_path, open_sid, ExportPaths(csv=tmp_path / "x.csv"))
    with pytest.raises(SessionError):
        export_session(db_path, 1234, ExportPaths(csv=tmp_path / "x.csv"))
    assert not (tmp_path / "x.csv").exists()
    assert _dump(db_path) == before


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_export_refuses_to_write_over_the_log(db_path, store, make_session, suffix):
    sid = make_session()
    target = db_path.with_name(db_path.name + suffix)
    before = _dump(db_path)
    with pytest.raises(InvalidInputError, match="--csv: .* is the trial log"):
        export_session(db_path, sid, ExportPaths(csv=target))
    assert _dump(db_path) == before


def test_bad_output_paths(db_path, store, make_session, tmp_path):
    sid = make_session()
    with pytest.raises(InvalidInputError, match="--json: folder .* does not exist"):
        export_session(db_path, sid, ExportPaths(json=tmp_path / "missing" / "s.json"))
    with pytest.raises(InvalidInputError, match="--pdf: .* is a folder"):
        export_session(db_path, sid, ExportPaths(pdf=tmp_path))
    with pytest.raises(InvalidInputError, match="--fhir: .* is also the --json output"):
        export_session(db_path, sid, ExportPaths(json=tmp_path / "a.json", fhir=tmp_path / "a.json"))
    with pytest.raises(InvalidInputError, match="nothing to export"):
        export_session(db_path, sid, ExportPaths())
    assert not (tmp_path / "a.json").exists()


def test_export_opens_no_network_connection(db_path, store, make_session, tmp_path, monkeypatch):
    """Clinical data stays on the machine: any attempt to connect a socket fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    sid = make_session(simulated=True)
    paths = ExportPaths(*(tmp_path / f"n.{k}" for k in ("pdf", "csv", "json", "fhir.json")))
    assert set(export_session(db_path, sid, paths)) == {"pdf", "csv", "json", "fhir"}


def test_missing_or_empty_log_is_neither_created_nor_migrated(tmp_path):
    missing = tmp_path / "nowhere.sqlite3"
    with pytest.raises(StoreError, match="no trial log there"):
        export_session(missing, 1, ExportPaths(csv=tmp_path / "x.csv"))
    assert not missing.exists()
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match="schema version 0 is older"):
        export_session(empty, 1, ExportPaths(csv=tmp_path / "x.csv"))
    assert empty.read_bytes() == b""
    assert not (tmp_path / "x.csv").exists()
