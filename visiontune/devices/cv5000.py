"""Driver of the Topcon CV-5000 motorized phoropter over a serial port (pyserial).

The frames and field formats are those of public reverse-engineering notes
(:mod:`visiontune.devices.cv5000_frames` cites them), not a maker's specification: **a clinic
must verify this driver on its own device before clinical use** (docs/devices.md).

How a lens is confirmed. The notes show no reply to the lens command ``B``. After sending it the
driver asks the version (``v PS``, answered per the notes) and takes the reply as the device's
confirmation: a serial device answers its frames in order, so the reply comes after the ``B``
before it was read. Whether the CV-5000 answers ``v PS`` only once its lenses have finished
moving is **not** in the notes (assumed; the emulator behaves so); a clinic checks it on its
device (docs/devices.md). The line has no sequence numbers: a reply later than the timeout
cannot be told from a new one, so after any fault on the line the driver refuses to send more
(:attr:`CV5000.fault`) and a new one re-initialises (``r`` -> ``er 01``), discarding what was
on the line.

Faults become :class:`~visiontune.errors.DeviceError` subclasses: no reply within
``change_seconds + reply_timeout_s`` (:class:`DeviceTimeoutError`), the port closed or the cable
out (:class:`DeviceDisconnectedError`), bytes that are not the reply expected
(:class:`DeviceReplyError`), a lens outside the range or steps (:class:`DeviceRangeError`,
before anything is sent).

``change_seconds``: 0.5 s a change (assumed: no maker's figure for the CV-5000's lens change
time was found; the emulator states the same). The driver also measures each change (from
sending ``B`` to its confirmation): :attr:`CV5000.change_times`.
"""

from __future__ import annotations

import time

from visiontune.devices.base import (
    DeviceDisconnectedError,
    DeviceLimits,
    DeviceReplyError,
    DeviceTimeoutError,
    LensDevice,
    LensState,
)
from visiontune.devices.cv5000_frames import (
    BAUD_RATE,
    INIT_REPLY,
    VERSION_QUERY,
    FrameReader,
    decode_frame,
    encode_frame,
    lens_command,
)
from visiontune.errors import DeviceError

#: A lens change, s (assumed: no maker's figure found; the emulator's stated timing).
CV5000_CHANGE_SECONDS = 0.5
#: The notes' ranges: sphere -20 to +20 D and minus cylinder -6 to 0 D in 0.25 D, axis 0-180 by 1 deg.
CV5000_LIMITS = DeviceLimits(-20.0, 20.0, 0.25, -6.0, 0.0, 0.25, 0.0, 180.0, 1.0)
#: Time for a reply beyond the change itself, s.
REPLY_TIMEOUT_S = 2.0


def _termios_error() -> tuple[type[Exception], ...]:
    """``termios.error`` (a drain on a hung-up line; not an ``OSError``), where there is termios."""
    try:
        import termios
    except ImportError:  # Windows
        return ()
    return (termios.error,)


class CV5000(LensDevice):
    """A CV-5000 on ``port`` (``/dev/ttyUSB0``, ``COM4``, an emulator's ``/dev/pts/N``), opened
    at 9600 8N1 and initialised (``r``) at once. The occluder is not in the notes: the fellow
    eye gets plano and the clinician occludes it (``can_occlude = False``)."""

    name = "cv5000"
    confirmation = "device"
    can_occlude = False

    def __init__(
        self,
        port: str,
        *,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
        change_seconds: float = CV5000_CHANGE_SECONDS,
        limits: DeviceLimits = CV5000_LIMITS,
    ):
        import serial  # pyserial: only where a serial device is used

        self.port = port
        self.reply_timeout_s = float(reply_timeout_s)
        self.change_seconds = float(change_seconds)
        self.limits = limits
        self.change_times: list[float] = []
        self.fault: str | None = None  # the first fault on the line: the driver refuses to go on after it
        self._reader = FrameReader()
        self._serial_error = (serial.SerialException, OSError, *_termios_error())
        try:
            self._serial = serial.Serial(
                port,
                baudrate=BAUD_RATE,
                bytesize=serial.EIGHTBITS,
                parity=serial.PARITY_NONE,
                stopbits=serial.STOPBITS_ONE,
                timeout=0.05,
                write_timeout=self.reply_timeout_s,
            )
        except self._serial_error as exc:
            raise DeviceDisconnectedError(f"CV-5000: cannot open the port {port}: {exc}") from None
        try:
            self._request(("r",), INIT_REPLY, self.reply_timeout_s, skip_stale=True)
        except Exception:
            self.close()
            raise

    def describe(self) -> dict:
        return super().describe() | {"port": self.port}

    def set_lenses(self, state: LensState) -> LensState:
        """Send ``state`` (checked against the range and steps first) and return once the device
        confirmed it (module docstring)."""
        checked = self.limits.check_state(state)
        if self.fault is not None:
            raise DeviceError(
                f"{self._where()}: not used after a fault ({self.fault}); reconnect the device "
                f"(a new driver re-initialises it)"
            )
        started = time.monotonic()
        try:
            self._send(lens_command(checked))
            self._request(VERSION_QUERY, VERSION_QUERY, self.change_seconds + self.reply_timeout_s)
        except DeviceError as exc:
            self.fault = str(exc)
            raise
        self.change_times.append(time.monotonic() - started)
        self.confirmed = checked
        return checked

    def read_back(self) -> LensState | None:
        """``None``: the notes show no command reading the lenses back."""
        return None

    def close(self) -> None:
        serial_port = getattr(self, "_serial", None)
        if serial_port is not None:
            try:
                serial_port.close()
            except self._serial_error:
                pass

    # ------------------------------------------------------------------ the line
    def _where(self) -> str:
        return f"CV-5000 on {self.port}"

    def _send(self, fields: tuple[str, ...]) -> None:
        try:
            self._serial.write(encode_frame(fields))
            self._serial.flush()
        except self._serial_error as exc:
            raise DeviceDisconnectedError(f"{self._where()}: the port closed or the cable is out ({exc})") from None

    def _read(self, wait_s: float) -> bytes:
        try:
            self._serial.timeout = max(0.001, min(wait_s, 0.05))
            return self._serial.read(max(1, self._serial.in_waiting))
        except self._serial_error as exc:
            raise DeviceDisconnectedError(f"{self._where()}: the port closed or the cable is out ({exc})") from None

    def _request(
        self, fields: tuple[str, ...], expected: tuple[str, ...], timeout_s: float, *, skip_stale: bool = False
    ) -> tuple[str, ...]:
        """Send ``fields`` and return the reply starting with ``expected``. ``skip_stale``: frames
        before it that decode but are not it are discarded (a late reply left on the line)."""
        try:
            self._serial.reset_input_buffer()
        except self._serial_error as exc:
            raise DeviceDisconnectedError(f"{self._where()}: the port closed or the cable is out ({exc})") from None
        self._reader = FrameReader()
        self._send(fields)
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            for frame in self._reader.feed(self._read(remaining)):
                try:
                    reply = decode_frame(frame)
                except DeviceReplyError as exc:
                    if skip_stale:
                        continue
                    raise DeviceReplyError(f"{self._where()}: garbled reply to {fields[0]!r}: {exc}") from None
                if reply[: len(expected)] == expected:
                    return reply
                if not skip_stale:
                    raise DeviceReplyError(
                        f"{self._where()}: expected a reply starting {expected!r} to {fields[0]!r}, got {reply!r}"
                    )
        raise DeviceTimeoutError(
            f"{self._where()}: no reply to {fields[0]!r} within {timeout_s:.1f} s (device off, busy or the cable out)"
        )
