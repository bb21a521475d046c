"""`visiontune report` never writes over a device, folder or FIFO, says clearly
when a path cannot be written, leaves a damaged trial log alone (no -wal/-shm beside it)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat

import pytest

from visiontune import cli
from visiontune.errors import InvalidInputError, StoreError
from visiontune.report.export import ExportPaths, export_session
from visiontune.report.files import check_output_path


@pytest.fixture
def main(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "report", ("visiontune.report.cli", "export a finished session"))
    return cli.main


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err
    assert err.startswith("visiontune report: error:") and err.count("\n") == 1, err
    return err


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.mark.parametrize("kind", ["pdf", "csv", "json", "fhir"])
def test_fifo_and_folder_are_refused_before_anything_is_written(
    main, db_path, store, make_session, tmp_path, capsys, kind
):
    sid = make_session()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "DIR"
    folder.mkdir()
    good = tmp_path / "good.csv"
    for bad, what in ((fifo, "FIFO"), (folder, "folder")):
        argv = ["report", str(sid), "--db", str(db_path), f"--{kind}", str(bad)]
        if kind != "csv":
            argv += ["--csv", str(good)]
        assert main(argv) == 2
        err = _one_error_line(capsys)
        assert f"--{kind}:" in err and what in err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and list(folder.iterdir()) == []
    assert not good.exists()  # every path is checked before the first file is written
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_dev_full_is_refused_and_stays_a_device(main, db_path, store, make_session, capsys):
    sid = make_session()
    before = os.stat("/dev/full")
    assert main(["report", str(sid), "--db", str(db_path), "--fhir", "/dev/full"]) == 2
    assert "character device" in _one_error_line(capsys)
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_symlink_to_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "link.csv").symlink_to(fifo)
    with pytest.raises(InvalidInputError, match="FIFO"):
        check_output_path("--csv", tmp_path / "link.csv")


@pytest.mark.parametrize("target", ["/proc/self/x.csv", "/proc/nonexistent-dir/x.csv"])
def test_unwritable_place_is_a_clear_error(main, db_path, store, make_session, capsys, target):
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    sid = make_session()
    assert main(["report", str(sid), "--db", str(db_path), "--csv", target]) == 2
    err = _one_error_line(capsys)
    assert "--csv" in err and "/proc/" in err


def test_full_disk_during_export_leaves_nothing(db_path, store, make_session, tmp_path, monkeypatch):
    import errno

    from visiontune import private_files

    sid = make_session()

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(private_files.os, "fsync", no_space)
    with pytest.raises(StoreError, match="no space left"):
        export_session(db_path, sid, ExportPaths(csv=tmp_path / "t.csv"))
    assert not (tmp_path / "t.csv").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_session_id_beyond_int64_is_a_clear_error(main, db_path, store, make_session, tmp_path, capsys):
    make_session()
    assert main(["report", "9223372036854775808", "--db", str(db_path), "--csv", str(tmp_path / "t.csv")]) == 2
    assert "out of range" in _one_error_line(capsys)
    assert not (tmp_path / "t.csv").exists()


def _damage_a_page(path):
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for i in range(2 * page, 2 * page + 200):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_report_on_a_damaged_log_leaves_it_alone(main, db_path, store, make_session, tmp_path, capsys):
    sid = make_session()
    store.close()
    _damage_a_page(db_path)
    digest = _sha(db_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["report", str(sid), "--db", str(db_path), "--csv", str(tmp_path / "t.csv")]) == 2
    assert "damaged" in _one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no -wal, no -shm, no t.csv
    assert _sha(db_path) == digest


def test_report_of_a_session_with_damaged_text(main, db_path, store, make_session, tmp_path, capsys):
    good, bad = make_session(), make_session()
    store.close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TRIGGER sessions_finished_is_final")
    conn.execute("UPDATE sessions SET result_json = CAST(X'FF' AS TEXT) WHERE id = ?", (bad,))
    conn.commit()
    conn.close()
    assert main(["report", str(bad), "--db", str(db_path), "--csv", str(tmp_path / "bad.csv")]) == 2
    err = _one_error_line(capsys)
    assert f"session {bad}" in err and "damaged" in err and "result_json" in err
    assert main(["report", str(good), "--db", str(db_path), "--csv", str(tmp_path / "good.csv")]) == 0
    assert (tmp_path / "good.csv").is_file() and not (tmp_path / "bad.csv").exists()


def test_exports_are_user_only_under_umask_000(db_path, store, make_session, tmp_path):
    sid = make_session()
    old = os.umask(0)
    try:
        written = export_session(db_path, sid, ExportPaths(csv=tmp_path / "t.csv", fhir=tmp_path / "f.json"))
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in written.values()} == {0o600}


def test_unwritable_folder_is_refused_before_any_file_is_written(main, db_path, store, make_session, tmp_path, capsys):
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    sid = make_session()
    good = tmp_path / "good.pdf"
    assert main(["report", str(sid), "--db", str(db_path), "--pdf", str(good), "--csv", "/proc/self/x.csv"]) == 2
    assert "cannot write in folder /proc/self" in _one_error_line(capsys)
    assert not good.exists()
