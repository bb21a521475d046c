"""The trial log under hostile file systems: a name too long, a typo in a folder,
a full disk, a read-only mount. Every case is a clear error or a read that works, and no file
changes that the command did not set out to write (hashed before and after)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.test_fuzz_inputs import _make_log
from visiontune.cli import main
from visiontune.errors import StoreError
from visiontune.session.migrations import apply_migrations
from visiontune.session.store import TrialStore
from visiontune.session.visit import create_visit

LONG = "a" * 300  # longer than any file system's NAME_MAX (255 bytes): ENAMETOOLONG


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _log_with_visit(path: Path) -> None:
    """Sessions 1 (finished), 2 (open), 3 (finished) and visit 1 (OS skipped)."""
    _make_log(path)
    with TrialStore.open(path) as store:
        vid = create_visit(store, "P-0042", simulated=True)
        store.skip_visit_eye(vid, "OS", "prosthetic eye")


# --- a file name too long: a clear error naming the path ------------------------------------


@pytest.mark.parametrize(
    "argv, env",
    [
        (["sessions", "list", "--db", "{tmp}/" + LONG + "/x.db"], False),
        (["visit", "list"], True),
        (["session", "run", "--simulate", "--max-steps", "1", "--quiet"], True),
        (["session", "run", "--simulate", "--max-steps", "1", "--quiet", "--db", "{tmp}/" + LONG], False),
    ],
)
def test_a_name_too_long_is_a_clear_error(argv, env, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(tmp_path / LONG) if env else str(tmp_path / "data"))
    code, _, err = _run([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2, err
    assert "too long" in err and LONG in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []


# --- reading creates nothing ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list"],
        ["sessions", "show", "1"],
        ["sessions", "durations"],
        ["visit", "list"],
        ["visit", "show", "1"],
    ],
)
def test_reading_a_missing_log_creates_nothing(argv, tmp_path, capsys):
    db = tmp_path / "a" / "typo" / "dir" / "x.db"
    code, _, err = _run([*argv, "--db", str(db)], capsys)
    assert code == 2 and f"no such trial log: {db}" in err, err
    assert list(tmp_path.iterdir()) == []


def test_reading_an_existing_log_writes_nothing_beside_it(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    _log_with_visit(db)
    before = _hashes(tmp_path)
    for argv in (["sessions", "list"], ["sessions", "show", "1"], ["visit", "show", "1"], ["visit", "list"]):
        code, out, err = _run([*argv, "--db", str(db)], capsys)
        assert code == 0, err
    assert _hashes(tmp_path) == before  # no -wal, no -shm, the log byte-identical


# --- skip reasons are checked before a visit is created ------------------------------------


@pytest.mark.parametrize("flag", ["--skip-od", "--skip-os"])
@pytest.mark.parametrize("reason", ["", "   ", "amblyopic\x1b[31m eye", "line\nbreak", "x" * 100_000])
def test_a_refused_skip_reason_leaves_no_visit(flag, reason, tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    _log_with_visit(db)
    before = _hashes(tmp_path)
    code, _, err = _run(["visit", "run", "--simulate", flag, reason, "--db", str(db)], capsys)
    assert code == 2 and flag in err, err
    assert len(err) < 600  # the 100,000-character reason is not echoed back
    assert _hashes(tmp_path) == before
    with TrialStore.open(db, read_only=True) as store:
        assert [v.visit_id for v in store.list_visits()] == [1]


def test_a_refused_skip_reason_creates_no_log(tmp_path, capsys):
    code, _, err = _run(["visit", "run", "--simulate", "--skip-od", "", "--db", str(tmp_path / "O")], capsys)
    assert code == 2, err
    assert list(tmp_path.iterdir()) == []


# --- a full disk ---------------------------------------------------------------------------


def _mount(*args: str) -> None:
    out = subprocess.run(["mount", *args], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(args)}): {out.stderr.strip() or out.returncode}; needs root")


def _umount(folder: Path) -> None:
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], check=False)  # still busy: detach it


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs at ``tmp_path/disk``, unmounted after the test."""
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount("-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(disk))
    yield disk
    _umount(disk)


def _fill(disk: Path, leave: int = 0) -> None:
    """Fill ``disk`` until at most ``leave`` bytes are free."""
    with open(disk / "filler", "wb") as fh:
        try:
            while shutil.disk_usage(disk).free > leave:
                fh.write(b"\0" * 4096)
                fh.flush()
        except OSError:
            pass


def test_full_disk_reads_work_and_writes_say_disk_full(small_disk, tmp_path, capsys):
    db = small_disk / "log.sqlite3"
    _log_with_visit(db)
    _fill(small_disk)
    assert shutil.disk_usage(small_disk).free == 0
    before = _hashes(small_disk)
    code, out, err = _run(["sessions", "list", "--db", str(db)], capsys)
    assert code == 0 and "P-0042" in out, err
    code, out, err = _run(["visit", "show", "1", "--db", str(db)], capsys)
    assert code == 0 and "prosthetic eye" in out, err
    code, _, err = _run(["report", "1", "--json", str(tmp_path / "s1.json"), "--db", str(db)], capsys)
    assert code == 0 and (tmp_path / "s1.json").stat().st_size > 0, err
    for argv in (["session", "resume", "2", "--simulate", "--quiet"], ["sessions", "discard", "2", "--reason", "x"]):
        code, _, err = _run([*argv, "--db", str(db)], capsys)
        assert code == 2 and "the disk is full" in err and "nothing already in the trial log is lost" in err, err
        assert "damaged" not in err
    assert _hashes(small_disk) == before  # no -wal/-shm left behind, nothing changed


def test_new_log_on_a_full_disk_says_disk_full_and_leaves_nothing(small_disk, capsys):
    _fill(small_disk)
    code, _, err = _run(["session", "run", "--simulate", "--quiet", "--db", str(small_disk / "new.db")], capsys)
    assert code == 2 and "the disk is full" in err and "rollback" not in err, err
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_migration_on_a_disk_that_fills_says_disk_full(small_disk):
    """The disk fills during the migration's transaction: SQLite rolls it back itself (no
    'cannot rollback - no transaction is active'), and the error is a full disk."""
    db = small_disk / "log.sqlite3"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    _fill(small_disk, leave=4096)
    with pytest.raises(StoreError, match="the disk is full") as info:
        apply_migrations(conn, db)
    conn.close()
    assert "rollback" not in str(info.value)


# --- a read-only log -------------------------------------------------------------------------


@pytest.fixture
def read_only_log(tmp_path):
    """A log (0444) in a folder (0555) bind-mounted read-only, so root cannot write it either."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "log.sqlite3"
    _log_with_visit(db)
    db.chmod(0o444)
    folder.chmod(0o555)
    _mount("--bind", str(folder), str(folder))
    try:
        _mount("-o", "remount,ro,bind", str(folder))
        with pytest.raises(OSError):
            (folder / "probe").write_bytes(b"")
        yield db
    finally:
        _umount(folder)
        folder.chmod(0o755)


def test_read_only_log_can_be_listed_shown_and_exported(read_only_log, tmp_path, capsys):
    db = read_only_log
    before = _hashes(db.parent)
    code, out, err = _run(["sessions", "list", "--db", str(db)], capsys)
    assert code == 0 and out.count("P-0042") == 3, err
    code, out, err = _run(["sessions", "show", "1", "--db", str(db)], capsys)
    assert code == 0 and "session 1 " in out and "S -1.25" in out, err
    code, out, err = _run(["visit", "show", "1", "--db", str(db)], capsys)
    assert code == 0 and "prosthetic eye" in out, err
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    code, _, err = _run(
        ["report", "1", "--json", str(out_dir / "s.json"), "--csv", str(out_dir / "s.csv"), "--db", str(db)], capsys
    )
    assert code == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == ["s.csv", "s.json"]
    code, _, err = _run(["sessions", "discard", "2", "--reason", "test", "--db", str(db)], capsys)
    assert code == 2 and "Traceback" not in err, err  # a write is refused with a clear error
    assert _hashes(db.parent) == before


def test_read_only_folder_with_pending_wal_is_a_clear_error(tmp_path):
    """A -wal file beside the log (a writer open, or a crash) in a folder that cannot be
    written: an error saying so, not a silently older view of the log."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "log.sqlite3"
    _log_with_visit(db)
    (folder / "log.sqlite3-wal").write_bytes(b"")
    folder.chmod(0o555)
    _mount("--bind", str(folder), str(folder))
    try:
        _mount("-o", "remount,ro,bind", str(folder))
        try:
            with TrialStore.open(db, read_only=True) as store:
                assert len(store.list_sessions()) == 3  # SQLite could read it after all
        except StoreError as exc:
            assert "-wal" in str(exc) and "read-only" in str(exc), exc
    finally:
        _umount(folder)
        folder.chmod(0o755)


def test_os_failure_words():
    from visiontune.session import store_open

    err = store_open.os_failure(Path("/x") / LONG, OSError(36, os.strerror(36)), "cannot open the trial log")
    assert "too long" in str(err) and "300 characters" in str(err)
    err = store_open.os_failure(Path("/x/log"), OSError(28, os.strerror(28)), "cannot create the trial log")
    assert "the disk is full" in str(err)
