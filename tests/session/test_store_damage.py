"""Damage SQLite does not see, out-of-range ids, locks, leftovers and file modes.

Damaged text (not UTF-8, not JSON, not a timestamp) stays confined to its session: the list
shows it marked damaged with what is wrong, reading it is a StoreError, the others read as
before. Session ids beyond SQLite's int64 are a StoreError, not an OverflowError.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import threading

import pytest

from visiontune.errors import SessionError, StoreError
from visiontune.session import store as store_mod
from visiontune.session.records import DamagedText
from visiontune.session.store import MAX_SESSION_ID, TrialStore

RESULT = {  # a schema-v1 result (visiontune.refraction.result) of one answer
    "estimate": {"sphere_d": -1.3125, "cylinder_d": -0.5625, "axis_deg": 90.0},
    "rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0},
    "credible_interval": {"sphere_d": [-1.75, -0.875], "cylinder_d": [-1.0, -0.125]},
    "predicted_va_logmar": 0.12,
    "predicted_va_interval": [0.02, 0.31],
    "trials_used": 1,
    "duration_s": 12.0,
    "stopped_by": "budget",
    "acuity_curve": [[1, 0.9]],
    "posterior_map": {"sphere_d": [-2.0, 0.0], "cylinder_d": [-1.0, 0.0], "va_logmar": [[0.3, 0.2], [0.1, 0.4]]},
}


def _finished_sessions(path, protocol, make_trial, n=3):
    """``n`` finished sessions of one trial each, the database closed (WAL checkpointed)."""
    with TrialStore.open(path) as s:
        s.create_patient("P1")
        ids = []
        for _ in range(n):
            sid = s.create_session("P1", eye="OD", protocol=protocol)
            with s.open_session(sid) as h:
                h.record_trial(make_trial(0))
                h.finish(RESULT)
            ids.append(sid)
    return ids


def _raw_update(path, sql, *args):
    """Write damage the way a foreign tool would: past the append-only triggers."""
    conn = sqlite3.connect(path)
    for trigger in ("sessions_finished_is_final", "sessions_snapshot_is_fixed"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute(sql, args)
    conn.commit()
    conn.close()


DAMAGE = [
    ("UPDATE sessions SET result_json = CAST(X'FF' AS TEXT) WHERE id = ?", "result_json: not valid UTF-8 text"),
    ("UPDATE sessions SET result_json = '{' WHERE id = ?", "result_json: not valid JSON"),
    ("UPDATE sessions SET created_at = 'yesterday' WHERE id = ?", "created_at: 'yesterday' is not an ISO 8601"),
    ("UPDATE sessions SET created_at = '2026-01-01T00:00:00' WHERE id = ?", "has no time zone"),
    ("UPDATE sessions SET patient_id = CAST(X'50FF' AS TEXT) WHERE id = ?", "patient_id: not valid UTF-8"),
    ("UPDATE sessions SET result_json = ? || '1' WHERE id = ?", "nested too deeply"),
]


@pytest.mark.parametrize(("sql", "message"), DAMAGE, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(DAMAGE)])
def test_damaged_text_is_confined_to_its_session(tmp_path, protocol, make_trial, sql, message):
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial)
    args = ("[" * 100_000, ids[1]) if sql.count("?") == 2 else (ids[1],)
    _raw_update(path, sql, *args)
    with TrialStore.open(path) as s:  # passes quick_check: the file opens
        listed = s.list_sessions()
        assert [i.session_id for i in listed] == ids
        assert [bool(i.damage) for i in listed] == [False, True, False]
        assert any(message in d for d in listed[1].damage), listed[1].damage
        with pytest.raises(StoreError, match=rf"session {ids[1]} in .* is damaged: .*{message.split(':')[0]}"):
            s.get_session(ids[1])
        with pytest.raises(StoreError, match="damaged"):
            s.trials(ids[1])
        assert s.get_session(ids[1], allow_damaged=True).damaged
        assert s.trial_count(ids[1]) == 1
        for sid in (ids[0], ids[2]):  # the others read as before
            assert s.get_session(sid).result == RESULT and len(s.trials(sid)) == 1


def test_damaged_text_reads_as_printable_text(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial, n=1)
    _raw_update(path, "UPDATE sessions SET result_json = CAST(X'7BFF' AS TEXT) WHERE id = ?", ids[0])
    with TrialStore.open(path) as s:
        info = s.get_session(ids[0], allow_damaged=True)
        assert isinstance(info.result_json, DamagedText) and info.result_json.raw == b"{\xff"
        info.result_json.encode("utf-8")  # printable: replacement characters, no surrogates
        with pytest.raises(StoreError, match="result_json is damaged: not valid UTF-8"):
            _ = info.result


@pytest.mark.parametrize(("mask", "message"), [(0x80, "not valid UTF-8"), (0x01, "not valid JSON")])
def test_bit_flip_inside_a_result_page(tmp_path, protocol, make_trial, mask, message):
    """A flipped bit in the stored text passes SQLite's quick_check; the store still says
    which session is damaged and reads the others."""
    path = tmp_path / "log.sqlite3"
    with TrialStore.open(path) as s:
        s.create_patient("P1")
        ids = []
        for duration in (12.5, 13.5):  # a marker unique to each session's result
            sid = s.create_session("P1", eye="OD", protocol=protocol)
            with s.open_session(sid) as h:
                h.record_trial(make_trial(0))
                h.finish({**RESULT, "duration_s": duration})
            ids.append(sid)
    data = bytearray(path.read_bytes())
    marker = b'"duration_s": 12.5'
    hits = [i for i in range(len(data)) if data.startswith(marker, i)]
    assert len(hits) == 2  # the session row and its finish event
    for at in hits:
        data[at] ^= mask  # '"' -> 0xA2 (a lone continuation byte) or '#'
    path.write_bytes(bytes(data))
    with TrialStore.open(path) as s:  # quick_check passes
        listed = s.list_sessions()
        assert [bool(i.damage) for i in listed] == [True, False]
        assert any(message in d for d in listed[0].damage), listed[0].damage
        with pytest.raises(StoreError, match=f"session {ids[0]} in .* is damaged: result_json: {message}"):
            s.get_session(ids[0])
        assert s.get_session(ids[1]).result["duration_s"] == 13.5
        assert len(s.trials(ids[1])) == 1 and len(s.events(ids[1])) == 1


def test_damaged_trial_row_is_a_store_error(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial, n=2)
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER trials_no_update")
    conn.execute(
        "UPDATE trials SET presented_at = 'soon', letter_shown = CAST(X'FF' AS TEXT) WHERE session_id = ?", (ids[0],)
    )
    conn.commit()
    conn.close()
    with TrialStore.open(path) as s:
        with pytest.raises(StoreError, match=r"trial 0 is damaged: letter_shown: not valid UTF-8 text; presented_at"):
            s.trials(ids[0])
        assert s.trial_count(ids[0]) == 1 and len(s.trials(ids[1])) == 1


@pytest.mark.parametrize("sid", [MAX_SESSION_ID + 1, 2**70, -(2**63) - 1])
def test_session_ids_beyond_int64_are_a_store_error(store, session_id, sid):
    for call in (store.get_session, store.trials, store.events, store.open_session, store.trial_count):
        with pytest.raises(StoreError, match=rf"session id {sid} is out of range"):
            call(sid)


def test_largest_int64_id_is_simply_unknown(store):
    with pytest.raises(SessionError, match=f"no session {MAX_SESSION_ID}"):
        store.get_session(MAX_SESSION_ID)


# --- locks and leftovers ---------------------------------------------------------------------


def test_session_lock_file_is_removed_when_the_session_is_closed(store, session_id):
    lock = store.path.with_name(f"{store.path.name}.session-{session_id}.lock")
    with store.open_session(session_id):
        assert lock.is_file()
        with pytest.raises(SessionError, match="open in this process"):
            store.open_session(session_id)
        assert lock.is_file()  # a refused second opener does not remove the holder's file
    assert not lock.exists()
    with store.open_session(session_id):  # and it can be taken again
        assert lock.is_file()
    assert not lock.exists()


def test_lock_taken_on_a_removed_file_is_retaken_on_the_file_at_the_path(store, session_id, monkeypatch):
    """An opener whose descriptor names a lock file its holder has just removed must not
    believe it holds the lock: it retries on the file now at the path."""
    import fcntl

    lock_path = store.path.with_name(f"{store.path.name}.session-{session_id}.lock")
    real_flock = fcntl.flock
    calls = []

    def flock_after_removal(fd, op):
        if not calls:  # the previous holder removes the file between our open and our flock
            os.unlink(lock_path)
        calls.append(fd)
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock_after_removal)
    with store.open_session(session_id) as handle:
        assert len(calls) == 2  # first attempt discarded, second on the new file
        st = os.stat(lock_path)
        mine = os.fstat(handle._lock._fd)
        assert (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


@pytest.mark.parametrize("journal", ["wal-exclusive", "delete"])
def test_locked_database_is_called_locked_not_damaged(tmp_path, protocol, make_trial, monkeypatch, journal):
    path = tmp_path / "log.sqlite3"
    _finished_sessions(path, protocol, make_trial, n=1)
    holder = sqlite3.connect(path, isolation_level=None)
    if journal == "delete":
        holder.execute("PRAGMA journal_mode = DELETE")  # a foreign tool that locks the whole file
    else:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # keeps its -wal: the read-only check meets the lock
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    monkeypatch.setattr(store_mod, "READ_CHECK_TIMEOUT_S", 0.05)
    monkeypatch.setattr(store_mod, "LOCK_TIMEOUT_S", 0.05)
    try:
        with pytest.raises(StoreError) as info:
            TrialStore.open(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked" in str(info.value) and "damaged" not in str(info.value), info.value


def test_new_database_on_a_full_disk_leaves_no_file(tmp_path, monkeypatch):
    path = tmp_path / "data" / "log.sqlite3"

    def disk_full(conn, where):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store_mod, "apply_migrations", disk_full)
    with pytest.raises(StoreError, match="disk is full"):
        TrialStore.open(path)
    assert list(path.parent.iterdir()) == []


def test_new_database_that_cannot_be_created_is_a_store_error(tmp_path, monkeypatch):
    path = tmp_path / "log.sqlite3"
    real_open = os.open

    def no_space(p, flags, *args):
        if str(p) == str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(p, flags, *args)

    monkeypatch.setattr(store_mod.os, "open", no_space)
    with pytest.raises(StoreError, match="cannot create the trial log"):
        TrialStore.open(path)
    assert not path.exists()


def test_an_existing_database_is_never_removed_on_failure(tmp_path, protocol, make_trial, monkeypatch):
    path = tmp_path / "log.sqlite3"
    _finished_sessions(path, protocol, make_trial, n=1)
    monkeypatch.setattr(
        store_mod,
        "apply_migrations",
        lambda conn, where: (_ for _ in ()).throw(sqlite3.OperationalError("database or disk is full")),
    )
    with pytest.raises(StoreError):
        TrialStore.open(path)
    assert path.stat().st_size > 0


# --- modes -----------------------------------------------------------------------------------


def test_every_file_and_folder_is_user_only_under_umask_000(tmp_path, protocol, make_trial):
    path = tmp_path / "a" / "b" / "log.sqlite3"
    old = os.umask(0)
    try:
        with TrialStore.open(path) as s:
            s.create_patient("P1")
            sid = s.create_session("P1", eye="OD", protocol=protocol)
            with s.open_session(sid) as h:
                h.record_trial(make_trial(0))
                names = sorted(p.name for p in path.parent.iterdir())
                modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
    finally:
        os.umask(old)
    assert names == ["log.sqlite3", "log.sqlite3-shm", "log.sqlite3-wal", f"log.sqlite3.session-{sid}.lock"]
    assert set(modes.values()) == {0o600}, modes
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_an_existing_looser_database_is_made_user_only(tmp_path, protocol, make_trial):
    path = tmp_path / "log.sqlite3"
    _finished_sessions(path, protocol, make_trial, n=1)
    os.chmod(path, 0o644)
    with TrialStore.open(path):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_default_data_folder_is_tightened(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    os.chmod(folder, 0o755)
    monkeypatch.setenv(store_mod.DATA_DIR_ENV, str(folder))
    with TrialStore.open():
        pass
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_device_or_fifo_as_database_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = []

    def open_it():
        try:
            TrialStore.open(fifo)
        except StoreError as exc:
            done.append(str(exc))

    t = threading.Thread(target=open_it, daemon=True)
    t.start()
    t.join(10)
    assert done and "not a regular file" in done[0]
    if os.path.exists("/dev/full"):
        with pytest.raises(StoreError, match="not a regular file"):
            TrialStore.open("/dev/full")
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


# --- through the command line ----------------------------------------------------------------


def _cli(argv, capsys):
    from visiontune import cli

    try:
        code = cli.main(argv)
    except SystemExit as exc:  # an argparse error (usage line, then one error line)
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_sessions_show_of_a_damaged_session_or_huge_id_is_one_line(tmp_path, protocol, make_trial, capsys):
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial)
    _raw_update(path, "UPDATE sessions SET created_at = 'yesterday' WHERE id = ?", ids[1])
    code, out, err = _cli(["sessions", "show", str(ids[1]), "--db", str(path)], capsys)
    assert code == 2 and "damaged: created_at" in err and err.count("\n") == 1, err
    for sid in (2**63, 2**64 + 5):  # refused by the store, or already by the argument parser
        code, out, err = _cli(["sessions", "show", str(sid), "--db", str(path)], capsys)
        error_lines = [line for line in err.splitlines() if "error:" in line]
        assert code == 2 and len(error_lines) == 1 and str(sid) in error_lines[0], err
    code, out, err = _cli(["sessions", "show", str(ids[0]), "--db", str(path)], capsys)
    assert code == 0, err


def test_sessions_list_marks_the_damaged_session_and_lists_the_others(tmp_path, protocol, make_trial, capsys):
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial)
    _raw_update(path, "UPDATE sessions SET result_json = CAST(X'FF' AS TEXT) WHERE id = ?", ids[0])
    _raw_update(path, "UPDATE sessions SET created_at = 'yesterday' WHERE id = ?", ids[1])
    code, out, err = _cli(["sessions", "list", "--db", str(path)], capsys)
    assert code == 0, err
    rows = {int(line.split()[0]): line for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert sorted(rows) == ids
    assert "DAMAGED" in rows[ids[0]].upper() and "result_json" in rows[ids[0]]
    assert "DAMAGED" in rows[ids[1]].upper() and "created_at" in rows[ids[1]]
    assert "DAMAGED" not in rows[ids[2]].upper()


def test_sessions_show_of_a_result_that_is_json_but_not_a_result(tmp_path, protocol, make_trial, capsys):
    """A bit flip can leave valid JSON that is not a result (a key renamed): a clear error."""
    path = tmp_path / "log.sqlite3"
    ids = _finished_sessions(path, protocol, make_trial, n=1)
    _raw_update(
        path, "UPDATE sessions SET result_json = replace(result_json, 'rounded', 'roundee') WHERE id = ?", ids[0]
    )
    code, out, err = _cli(["sessions", "show", str(ids[0]), "--db", str(path)], capsys)
    assert code == 2 and "rounded" in err and err.count("\n") == 1, err
