"""The one private-file writer: atomic, 0600, folders 0700 whatever the umask, never over a
device, folder or FIFO, nothing left behind on a full disk."""

from __future__ import annotations

import ast
import errno
import os
import stat
from pathlib import Path

import pytest

from visiontune import private_files
from visiontune.errors import CalibrationError, VisionTuneError
from visiontune.private_files import (
    check_destination,
    create_private,
    make_private,
    open_private_append,
    open_private_fd,
    private_dir,
    read_regular_file,
    write_private,
)


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_new_file_is_0600_under_umask_000(tmp_path, umask_000):
    out = write_private(tmp_path / "a.json", "{}\n")
    assert out == tmp_path / "a.json" and out.read_text() == "{}\n"
    assert _mode(out) == 0o600
    assert _leftovers(tmp_path) == []


def test_existing_looser_file_is_replaced_by_a_0600_one(tmp_path, umask_000):
    path = tmp_path / "a.csv"
    path.write_text("old")
    os.chmod(path, 0o666)
    write_private(path, b"new")
    assert path.read_bytes() == b"new" and _mode(path) == 0o600


def test_symlink_to_a_regular_file_is_allowed(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_private(link, b"new")
    assert link.read_bytes() == b"new"


def test_folder_is_refused_and_nothing_is_left(tmp_path):
    folder = tmp_path / "DIR"
    folder.mkdir()
    with pytest.raises(CalibrationError, match="is a folder"):
        write_private(folder, b"x", name="calibration file", error=CalibrationError)
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR"]


def test_fifo_and_symlink_to_fifo_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for path in (fifo, link):
        with pytest.raises(VisionTuneError, match="FIFO"):
            write_private(path, b"x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and link.is_symlink()
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_device_is_refused_and_untouched():
    before = os.stat("/dev/full")
    with pytest.raises(VisionTuneError, match="character device"):
        write_private("/dev/full", b"x")
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_full_disk_leaves_nothing_behind(tmp_path, monkeypatch, failing):
    path = tmp_path / "cal.json"
    path.write_text("old")

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(private_files.os, failing, no_space)
    with pytest.raises(VisionTuneError, match="no space left"):
        write_private(path, b"new")
    monkeypatch.undo()
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(VisionTuneError, match="does not exist"):
        write_private(tmp_path / "nope" / "a.txt", b"x")


def test_check_destination_names_the_argument(tmp_path):
    assert check_destination(tmp_path / "new.txt") == tmp_path / "new.txt"
    with pytest.raises(VisionTuneError, match="^--csv: .* is a folder"):
        check_destination(tmp_path, name="--csv")
    with pytest.raises(VisionTuneError, match="not a folder"):
        (tmp_path / "f").write_text("")
        check_destination(tmp_path / "f" / "x.csv")


def test_private_dir_is_0700_whatever_the_umask(tmp_path, umask_000):
    made = private_dir(tmp_path / "a" / "b" / "c")
    for p in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert _mode(p) == 0o700, p


def test_private_dir_tightens_only_when_asked_and_only_the_leaf(tmp_path):
    loose = tmp_path / "visiontune"
    loose.mkdir()
    os.chmod(loose, 0o755)
    os.chmod(tmp_path, 0o755)
    private_dir(loose)
    assert _mode(loose) == 0o755  # a folder the user named is not changed
    private_dir(loose, tighten=True)
    assert _mode(loose) == 0o700 and _mode(tmp_path) == 0o755


def test_private_dir_refuses_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(VisionTuneError, match="expected a folder"):
        private_dir(tmp_path / "f")


def test_read_regular_file(tmp_path):
    path = tmp_path / "a"
    path.write_bytes(b"abc")
    assert read_regular_file(path) == b"abc"
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing")
    with pytest.raises(VisionTuneError, match="more than the 2"):
        read_regular_file(path, max_bytes=2)
    with pytest.raises(VisionTuneError, match="folder"):
        read_regular_file(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(VisionTuneError, match="FIFO"):  # refused at once, never blocks
        read_regular_file(fifo)


def _append(path, text: str, **kw) -> None:
    fd = open_private_append(path, **kw)
    with open(fd, "a", encoding="utf-8") as f:
        f.write(text)


def test_append_creates_0600_under_umask_000_and_appends(tmp_path, umask_000):
    log = tmp_path / "app.log"
    _append(log, "one\n")
    _append(log, "two\n")
    assert log.read_text() == "one\ntwo\n" and _mode(log) == 0o600


def test_append_tightens_an_existing_looser_file(tmp_path):
    log = tmp_path / "app.log"
    log.write_text("old\n")
    os.chmod(log, 0o644)
    _append(log, "new\n")
    assert log.read_text() == "old\nnew\n" and _mode(log) == 0o600


def test_append_refuses_a_fifo_and_names_a_missing_folder(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CalibrationError, match="^log file: .*FIFO"):
        open_private_append(fifo, name="log file", error=CalibrationError)
    missing = tmp_path / "nowhere" / "app.log"
    with pytest.raises(VisionTuneError, match=f"^log file: cannot open {missing} "):
        open_private_append(missing, name="log file")


def test_create_private_is_0600_under_umask_000_and_never_over_a_file(tmp_path, umask_000):
    path = tmp_path / "log.sqlite3"
    create_private(path)
    assert path.read_bytes() == b"" and _mode(path) == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(FileExistsError):
        create_private(path)
    assert _mode(path) == 0o644
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        create_private(tmp_path / "link")
    assert not (tmp_path / "nowhere").exists()


def test_create_private_removes_what_it_created_when_the_mode_cannot_be_set(tmp_path, monkeypatch):
    def refused(fd, mode):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(private_files.os, "fchmod", refused)
    with pytest.raises(PermissionError):
        create_private(tmp_path / "log.sqlite3")
    assert list(tmp_path.iterdir()) == []


def test_open_private_fd_creates_0600_and_tightens_an_existing_file(tmp_path, umask_000):
    new, old = tmp_path / "new.lock", tmp_path / "old.lock"
    old.write_text("1\n")
    os.chmod(old, 0o666)
    for path in (new, old):
        fd = open_private_fd(path, os.O_RDWR | os.O_CREAT)
        try:
            assert os.get_inheritable(fd) is False
        finally:
            os.close(fd)
        assert _mode(path) == 0o600
    assert old.read_text() == "1\n"
    with pytest.raises(FileNotFoundError):
        open_private_fd(tmp_path / "missing", os.O_RDWR)


def test_make_private_tightens_a_regular_file_only(tmp_path, umask_000):
    path, target = tmp_path / "log.sqlite3-wal", tmp_path / "target"
    path.write_bytes(b"x")
    target.write_bytes(b"y")
    os.chmod(path, 0o664)
    os.chmod(target, 0o644)
    (tmp_path / "link").symlink_to(target)
    for p in (path, tmp_path / "link", tmp_path / "missing"):
        make_private(p)
    assert (_mode(path), _mode(target), path.read_bytes()) == (0o600, 0o644, b"x")
    assert not (tmp_path / "missing").exists()


def test_the_private_writers_of_the_package_use_it():
    """Every place that writes a user-only file goes through write_private (no second
    hand-made ``os.replace`` writer in the package)."""
    root = Path(private_files.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "private_files.py" or "experiments" in path.parts or "refraction" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if "os.replace(" in text and "0o600" in text:
            offenders.append(str(path.relative_to(root)))
    assert offenders == []


def _mode_calls(source: str) -> list[str]:
    """``os.open`` (which creates a file with a mode the umask loosens) and ``chmod``-like calls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (
            node.attr in ("chmod", "fchmod", "lchmod")
            or (node.attr == "open" and isinstance(node.value, ast.Name) and node.value.id == "os")
        ):
            found.append(f"{node.attr} (line {node.lineno})")
    return found


def test_only_private_files_opens_a_file_descriptor_or_sets_a_mode():
    root = Path(private_files.__file__).parent
    offenders = [
        f"{path.relative_to(root)}: {call}"
        for path in root.rglob("*.py")
        if path.name != "private_files.py"
        for call in _mode_calls(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert _mode_calls("def f(p):\n    fd = os.open(p, 0)\n    Path(p).chmod(0o600)\n") == [
        "open (line 2)",
        "chmod (line 3)",
    ]
    assert _mode_calls("open(p).read()\nf.open()\n") == []
