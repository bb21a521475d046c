"""``--scheduler`` at an address where something other than Dask listens: a clear error within
seconds (Dask once read 'HTTP/1.1' as a frame length and tried to allocate 3.07 EiB), and
``bench --out`` that is not a folder: a clear error, not a FileExistsError traceback."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from visiontune.cli import main
from visiontune.errors import ConfigurationError
from visiontune.validation.scheduler_check import check_dask_scheduler


class _Server:
    """A TCP server on 127.0.0.1 answering every connection with ``reply`` (``None``: says
    nothing, as an HTTP server waiting for a request) and then closing it."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self._conns.append(conn)
            if self.reply is not None:
                try:
                    conn.sendall(self.reply)
                    conn.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        for conn in self._conns:
            conn.close()
        self.sock.close()


REPLIES = {
    "http": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    "garbage": bytes(range(256)) * 4,
    "silent": None,
    "short": b"hi",
}


@pytest.fixture(params=sorted(REPLIES))
def not_dask(request):
    server = _Server(REPLIES[request.param])
    yield f"tcp://127.0.0.1:{server.port}"
    server.close()


def test_check_refuses_what_is_not_dask(not_dask):
    start = time.monotonic()
    with pytest.raises(ConfigurationError, match="is not a Dask scheduler"):
        check_dask_scheduler(not_dask, connect_timeout=5.0, handshake_timeout=1.0)
    assert time.monotonic() - start < 3.0


def test_check_accepts_a_real_scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        check_dask_scheduler(cluster.scheduler_address, connect_timeout=5.0)


def test_nothing_listening_is_a_clear_error():
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ConfigurationError, match="cannot connect"):
        check_dask_scheduler(f"127.0.0.1:{port}", connect_timeout=2.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--quick", "--jobs", "1", "--no-progress", "--scheduler", "{addr}", "--out", "{tmp}"],
        ["bench", "refraction", "--quick", "--no-progress", "--scheduler", "{addr}", "--out", "{tmp}"],
    ],
)
def test_commands_refuse_a_scheduler_that_is_not_dask(argv, tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(tmp_path / "data"))
    server = _Server(REPLIES["http"])
    try:
        start = time.monotonic()
        code = main([a.format(addr=f"tcp://127.0.0.1:{server.port}", tmp=tmp_path / "out") for a in argv])
        elapsed = time.monotonic() - start
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2 and "is not a Dask scheduler" in err and "Traceback" not in err, err
    assert elapsed < 30.0


@pytest.mark.parametrize("out", ["/dev/full", "/dev/full/x", "{file}", "{file}/sub"])
def test_bench_out_that_is_not_a_folder_is_a_clear_error(out, tmp_path, capsys):
    file = tmp_path / "a-file"
    file.write_text("keep me\n")
    try:
        code = main(["bench", "refraction", "--quick", "--no-progress", "--out", out.format(file=file)])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "--out" in err and "Traceback" not in err, err
    assert file.read_text() == "keep me\n"
