"""The trial log's app lock: one holder at a time, named when another asks; a dead holder's file
taken over; nothing at the lock's path written over unless it is a lock file."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from visiontune.errors import StoreError
from visiontune.session.instance_lock import InstanceLock, InstanceLockedError, LockHolder, lock_path


def test_a_held_lock_refuses_a_second_holder_naming_the_first(tmp_path):
    db = tmp_path / "log.sqlite3"
    with InstanceLock.acquire(db) as first:
        assert stat.S_IMODE(os.stat(first.path).st_mode) == 0o600 and first.taken_over is None
        with pytest.raises(InstanceLockedError) as caught:
            InstanceLock.acquire(db)  # another open file description: flock refuses it, even in this process
        assert caught.value.holder.pid == os.getpid() and caught.value.holder.host == socket.gethostname()
        assert f"pid {os.getpid()}, since " in str(caught.value) and str(db) in str(caught.value)
    assert not lock_path(db).exists()  # released: the file is gone
    InstanceLock.acquire(db).release()  # and the lock can be taken again


def test_a_file_left_by_a_dead_holder_is_taken_over_with_its_record(tmp_path):
    db = tmp_path / "log.sqlite3"
    lock_path(db).write_text('{"pid": 999999, "host": "clinic-3", "since": "2026-11-28T06:40:00+00:00"}\n')
    with InstanceLock.acquire(db) as lock:
        assert lock.taken_over.describe() == "host 'clinic-3', pid 999999, since 2026-11-28 06:40 UTC"
        assert f'"pid": {os.getpid()}' in lock.path.read_text()


@pytest.mark.parametrize("text", ["", "garbage", "[1, 2]", '{"pid": "x", "host": 3, "since": "yesterday"}'])
def test_an_unreadable_record_is_described_as_unknown(text):
    assert LockHolder.from_text(text).describe() == "host 'unknown host', pid unknown"


def test_a_symlink_or_a_folder_at_the_lock_path_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "log.sqlite3"
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    lock_path(db).symlink_to(target)
    with pytest.raises(StoreError, match="not a regular file"):
        InstanceLock.acquire(db)
    assert target.read_text() == "keep me"
    lock_path(db).unlink()
    lock_path(db).mkdir()
    with pytest.raises(StoreError, match="not a regular file"):
        InstanceLock.acquire(db)
