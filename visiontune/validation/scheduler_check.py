"""Is the ``--scheduler`` address a Dask scheduler? Asked before Dask is given it.

Dask's TCP comm reads a message as an 8-byte frame length, then that many bytes
(``distributed.comm.tcp.TCP.read``), and a server sends its handshake message first, as soon
as a connection is accepted (``distributed.comm.core.Listener.on_connection``). Given an
address where something else listens, Dask takes the first 8 bytes of whatever comes back
(``HTTP/1.1`` is 3.5e18 as a length) for that length and tries to allocate it: a
"MemoryError: Unable to allocate 3.07 EiB" traceback, or a hang when the server waits for a
request first. :func:`check_dask_scheduler` reads those first bytes itself, with a timeout,
and refuses an address that sends nothing within :data:`HANDSHAKE_SECONDS` or a length no
handshake has (over :data:`MAX_HANDSHAKE_BYTES`).
"""

from __future__ import annotations

import socket
import struct

from visiontune.errors import ConfigurationError

#: Seconds a scheduler may take to send its handshake once connected (it sends it at once).
HANDSHAKE_SECONDS = 5.0
#: A handshake message (a small dict of versions and options) is far below this (bytes).
MAX_HANDSHAKE_BYTES = 1 << 20
DEFAULT_PORT = 8786


def _host_port(address: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a ``tcp://`` (or scheme-less) address; ``None`` for another scheme."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme != "tcp":
        return None
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):  # [IPv6]:port
        host, _, port = rest[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    try:
        return scheme, host, int(port) if port else DEFAULT_PORT
    except ValueError:
        raise ConfigurationError(
            f"scheduler: {address!r}: expected tcp://HOST:PORT, the port is not a number"
        ) from None


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def check_dask_scheduler(address: str, connect_timeout: float, handshake_timeout: float = HANDSHAKE_SECONDS) -> None:
    """ConfigurationError unless something at ``address`` answers as a Dask scheduler does:
    a first message of a plausible length within ``handshake_timeout`` seconds. Addresses of
    other schemes (``tls://``, ``ws://``, ``inproc://``) are left to Dask."""
    parts = _host_port(address)
    if parts is None:
        return
    _, host, port = parts
    try:
        sock = socket.create_connection((host, port), timeout=connect_timeout)
    except OSError as exc:
        raise ConfigurationError(f"scheduler: cannot connect to {address!r} ({exc.strerror or exc})") from None
    with sock:
        sock.settimeout(handshake_timeout)
        try:
            head = _read(sock, 16)
        except TimeoutError:
            raise ConfigurationError(
                f"scheduler: {address!r} is not a Dask scheduler: it sent nothing in {handshake_timeout:g} s after "
                "the connection (a Dask scheduler sends its handshake at once; is this another service's port?)"
            ) from None
        except OSError as exc:
            raise ConfigurationError(f"scheduler: {address!r}: the connection failed ({exc.strerror or exc})") from None
    if len(head) < 16:
        raise ConfigurationError(
            f"scheduler: {address!r} is not a Dask scheduler: it closed the connection "
            f"after {len(head)} bytes ({head[:16]!r})"
        )
    (length,) = struct.unpack("Q", head[:8])
    (n_frames,) = struct.unpack("Q", head[8:16])
    if not 16 <= length <= MAX_HANDSHAKE_BYTES or not 1 <= n_frames <= 64:
        raise ConfigurationError(
            f"scheduler: {address!r} is not a Dask scheduler: it answered {head!r}, not a Dask handshake"
        )
