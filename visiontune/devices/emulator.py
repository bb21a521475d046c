"""A SIMULATED Topcon CV-5000 on a pseudo-terminal, for tests and demos.

:class:`CV5000Emulator` opens a pty (``os.openpty``) whose other end, ``port`` (``/dev/pts/N``),
a driver opens like a serial port. It parses the same frames as the driver
(:mod:`visiontune.devices.cv5000_frames`, after the public reverse-engineering notes cited
there), keeps the lenses of both eyes, and answers as the notes say: ``r`` -> ``er 01``,
``v PS`` and ``v CV`` -> the captured versions, nothing to ``B``. A lens command that changes a lens takes
``change_seconds`` (stated timing, 0.5 s by default: assumed, no maker's figure found; none for
the lenses already in place) during which the emulator reads nothing else, as a device busy
moving its lenses would. Every lens state it takes is
appended to :attr:`log` (and to ``log_path`` as JSON lines, mode 0600, when given).

Faults on demand: :meth:`drop_next` (replies not sent), :meth:`delay_next` (replies held for a
time, the emulator busy meanwhile; :meth:`clear_faults` ends a delay early and drops its reply),
:meth:`corrupt_next` (replies garbled), :meth:`close_after` (the port closes on taking the n-th
lens command from now, before its reply: a cable pulled mid-session), and ``limits``: a lens
command outside them is not taken (:attr:`refused`; the notes show no error reply).

``python -m visiontune.devices.emulator [--change-seconds S] [--log FILE]`` prints its port and
serves until interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import threading
import time
import tty

from visiontune.devices.base import DeviceError, DeviceLimits, LensState
from visiontune.devices.cv5000 import CV5000_CHANGE_SECONDS, CV5000_LIMITS
from visiontune.devices.cv5000_frames import (
    CONTROLLER_REPLY,
    INIT_REPLY,
    VERSION_REPLY,
    FrameReader,
    decode_frame,
    encode_frame,
    parse_lens_command,
)
from visiontune.optics import Prescription
from visiontune.private_files import open_private_append

SIMULATED_BANNER = "SIMULATED CV-5000 (emulator)"


class CV5000Emulator:
    """A simulated CV-5000 serving on :attr:`port` from a background thread; use as a context
    manager or call :meth:`close`."""

    def __init__(
        self,
        *,
        change_seconds: float = CV5000_CHANGE_SECONDS,
        limits: DeviceLimits = CV5000_LIMITS,
        log_path: str | None = None,
    ):
        self.change_seconds = float(change_seconds)
        self.limits = limits
        plano = Prescription(0.0, 0.0, 180.0)
        self.state = LensState(plano, plano)
        self.log: list[LensState] = []
        self.refused: list[tuple[tuple[str, ...], str]] = []
        self.frames_seen: list[tuple[str, ...]] = []
        self._log_fd = (
            None if log_path is None else open_private_append(log_path, name="emulator log", error=DeviceError)
        )
        self._lock = threading.Lock()
        self._drop = self._corrupt = 0
        self._delay_s, self._delay_n = 0.0, 0
        self._close_in: int | None = None
        self._cleared = threading.Event()
        self._stop = threading.Event()
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self.closed = False
        self._thread = threading.Thread(target=self._serve, name="cv5000-emulator", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ faults
    def drop_next(self, n: int = 1) -> None:
        with self._lock:
            self._drop += n

    def corrupt_next(self, n: int = 1) -> None:
        with self._lock:
            self._corrupt += n

    def delay_next(self, seconds: float, n: int = 1) -> None:
        with self._lock:
            self._delay_s, self._delay_n = float(seconds), n
            self._cleared.clear()

    def close_after(self, lenses: int) -> None:
        """Close the port on taking the ``lenses``-th lens command from now (1: the next one)."""
        with self._lock:
            self._close_in = lenses

    def clear_faults(self) -> None:
        with self._lock:
            self._drop = self._corrupt = self._delay_n = 0
            self._close_in = None
        self._cleared.set()

    # ------------------------------------------------------------------ serving
    def _serve(self) -> None:
        reader = FrameReader()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._master], [], [], 0.05)
                if not ready:
                    continue
                data = os.read(self._master, 4096)
            except OSError:
                return
            for frame in reader.feed(data):
                self._handle(frame)
                if self.closed:
                    return

    def _handle(self, frame: bytes) -> None:
        try:
            fields = decode_frame(frame)
        except DeviceError:
            return  # noise on the line: a device ignores it
        self.frames_seen.append(fields)
        if not fields:
            return
        if fields[0] == "r":
            self._reply(INIT_REPLY)
        elif fields[:2] in (VERSION_REPLY[:2], CONTROLLER_REPLY[:2]):
            self._reply(VERSION_REPLY if fields[:2] == VERSION_REPLY[:2] else CONTROLLER_REPLY)
        elif fields[0] == "B":
            self._take_lenses(fields)

    def _take_lenses(self, fields: tuple[str, ...]) -> None:
        try:
            state = self.limits.check_state(parse_lens_command(fields))
        except DeviceError as exc:  # DeviceRangeError or an unreadable field: not taken
            self.refused.append((fields, str(exc)))
            return
        with self._lock:
            if self._close_in is not None:
                self._close_in -= 1
                if self._close_in <= 0:
                    self._close_port()
                    return
        moved, self.state = state != self.state, state
        self.log.append(state)
        if self._log_fd is not None:
            os.write(self._log_fd, (json.dumps({"time": time.time(), "lenses": state.to_dict()}) + "\n").encode())
        if moved:  # the lenses already in place take no time
            self._stop.wait(self.change_seconds)

    def _reply(self, fields: tuple[str, ...]) -> None:
        with self._lock:
            delay = self._delay_s if self._delay_n > 0 else 0.0
            self._delay_n = max(0, self._delay_n - 1)
            drop, self._drop = self._drop > 0, max(0, self._drop - 1)
            corrupt = self._corrupt > 0 and not drop
            if corrupt:
                self._corrupt -= 1
        if delay and self._cleared.wait(delay):
            return  # the delay was cleared: its reply is dropped
        if drop:
            return
        data = encode_frame(fields)
        if corrupt:
            data = data[:2] + b"\xff?" + data[4:]  # two bytes changed inside the frame
        try:
            os.write(self._master, data)
        except OSError:
            pass

    def _close_port(self) -> None:
        self.closed = True
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._cleared.set()
        self._thread.join(timeout=5)
        if not self.closed:
            self._close_port()
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None

    def __enter__(self) -> CV5000Emulator:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m visiontune.devices.emulator", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--change-seconds",
        type=float,
        default=CV5000_CHANGE_SECONDS,
        help=f"stated time of a lens change, s (default {CV5000_CHANGE_SECONDS}, assumed)",
    )
    parser.add_argument("--log", metavar="FILE", help="append every lens state taken to FILE (JSON lines, mode 0600)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.change_seconds <= 60.0:
        parser.error(f"--change-seconds: expected 0 to 60 s, got {args.change_seconds}")
    try:
        emulator = CV5000Emulator(change_seconds=args.change_seconds, log_path=args.log)
    except DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(f"{SIMULATED_BANNER} on {emulator.port}", flush=True)
    print(f"  run: visiontune session run --simulate --device cv5000:{emulator.port}", flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emulator.close()
        print(f"{SIMULATED_BANNER}: {len(emulator.log)} lens states taken", flush=True)
    return 0


__all__ = ["CV5000Emulator", "SIMULATED_BANNER", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
