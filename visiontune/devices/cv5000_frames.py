"""The Topcon CV-5000's serial frames, as the public reverse-engineering notes describe them.

Source (reverse-engineered from serial captures with a port monitor, not from the maker):
tejasnafde/windows_controller_poc, ``cv5000-controller/data/protocol_spec.json`` and
``src/commands.py`` (captured on a CV-5000 with software 1.02.02, controller 4.00.50LP). What the
maker documents publicly (the CV-5000 user manual) is that the device takes a personal computer's
control; the frames, the fields and their formats below are the notes' reading of captures,
**not** a maker's specification: a clinic must verify the driver on its own device before
clinical use (docs/devices.md).

- Line: 9600 baud, 8 data bits, no parity, 1 stop bit (8N1).
- Frame: ``SOH`` (0x01), then each field followed by ``CR`` (0x0D), then ``EOT`` (0x04):
  ``SOH f1 CR f2 CR ... EOT``.
- Lens command ``B``: ``B, R, sph, cyl, axis, L, sph, cyl, axis, chart, mode, display``; a power
  is 6 characters, sign then magnitude (``"  0.00"``, ``"  1.25"``, ``"- 1.25"``; how a power of
  10 D or more is padded the notes do not show: we send ``" 10.25"`` and ``"- 10.25"``), minus cylinder (``-6.00`` to
  ``0.00``), sphere ``-20.00`` to ``+20.00`` in 0.25 D, axis 4 characters right-aligned (``"   0"`` to ``" 180"``, by
  1 deg); chart ``"01"``, mode ``"01"``, display ``"0"`` as captured. The notes show no reply to ``B``.
- Initialise ``r``: reply ``er, 01``. Version ``v, PS``: reply ``v, PS, " 1.02.02  "``;
  ``v, CV``: reply ``v, CV, " 4.00.50LP"``.

Our own code; only the facts above come from the notes.
"""

from __future__ import annotations

from visiontune.devices.base import DeviceReplyError, LensState
from visiontune.optics import Prescription

SOH, CR, EOT = b"\x01", b"\r", b"\x04"
BAUD_RATE = 9600
#: The B command's trailing fields as captured (chart, mode, display).
LENS_TRAILER = ("01", "01", "0")
INIT_REPLY = ("er", "01")
VERSION_QUERY = ("v", "PS")
#: The notes' captured replies to ``v PS`` and ``v CV``; the emulator answers them.
VERSION_REPLY = ("v", "PS", " 1.02.02  ")
CONTROLLER_REPLY = ("v", "CV", " 4.00.50LP")
#: Longest frame we accept, bytes (a B frame is 64): longer is garbage.
MAX_FRAME_BYTES = 256


def encode_frame(fields: tuple[str, ...]) -> bytes:
    """``SOH f1 CR f2 CR ... EOT`` (ASCII)."""
    return SOH + b"".join(f.encode("ascii") + CR for f in fields) + EOT


def decode_frame(frame: bytes) -> tuple[str, ...]:
    """The fields of one frame ``SOH ... EOT``; :class:`DeviceReplyError` if it is not one."""
    if len(frame) < 2 or frame[:1] != SOH or frame[-1:] != EOT:
        raise DeviceReplyError(f"not a frame (SOH ... EOT): {frame!r}")
    body = frame[1:-1]
    if body and not body.endswith(CR):
        raise DeviceReplyError(f"a field without its CR: {frame!r}")
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise DeviceReplyError(f"non-ASCII bytes in a frame: {frame!r}") from None
    fields = tuple(text.split("\r")[:-1]) if text else ()
    if any(not f.isprintable() or SOH.decode() in f or EOT.decode() in f for f in fields):
        raise DeviceReplyError(f"control bytes inside a field: {frame!r}")
    return fields


class FrameReader:
    """Splits a byte stream into frames: :meth:`feed` returns the complete frames
    (``SOH ... EOT``) seen so far; bytes before an SOH are returned as ``noise`` frames-to-be
    rejected by the caller (``decode_frame`` raises on them)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while self._buffer:
            start = self._buffer.find(SOH)
            if start != 0:
                junk_end = start if start > 0 else len(self._buffer)
                frames.append(bytes(self._buffer[:junk_end]))
                del self._buffer[:junk_end]
                continue
            end = self._buffer.find(EOT)
            if end < 0:
                if len(self._buffer) > MAX_FRAME_BYTES:
                    frames.append(bytes(self._buffer))
                    self._buffer.clear()
                break
            frames.append(bytes(self._buffer[: end + 1]))
            del self._buffer[: end + 1]
        return frames


def format_power(value_d: float) -> str:
    """A sphere or cylinder as the notes' 6 characters: ``"  0.00"``, ``"  1.25"``, ``"- 1.25"``."""
    return f"- {abs(value_d):.2f}".rjust(6) if value_d < 0 else f"{value_d:.2f}".rjust(6)


def parse_power(text: str, key: str) -> float:
    stripped = text.replace(" ", "")
    try:
        return float(stripped)
    except ValueError:
        raise DeviceReplyError(f"{key}: expected a power like '- 1.25', got {text!r}") from None


def format_axis(axis_deg: float) -> str:
    """An axis as the notes' 4 characters, right-aligned whole degrees: ``"  90"``, ``" 180"``."""
    return f"{round(axis_deg):4d}"


def lens_command(state: LensState) -> tuple[str, ...]:
    """The ``B`` command's fields for ``state`` (lenses already in minus-cylinder form, on the
    device's steps). An occluded eye is sent as plano: the notes document no occluder field."""
    fields = ["B"]
    for side, rx in (("R", state.od), ("L", state.os)):
        rx = rx or Prescription(0.0, 0.0, 180.0)
        fields += [side, format_power(rx.sphere_d), format_power(rx.cylinder_d), format_axis(rx.axis_deg)]
    return (*fields, *LENS_TRAILER)


def parse_lens_command(fields: tuple[str, ...]) -> LensState:
    """The lenses of a ``B`` command's fields (:func:`lens_command`'s inverse);
    :class:`DeviceReplyError` naming the field that is wrong."""
    if len(fields) != 9 + len(LENS_TRAILER) or fields[0] != "B" or fields[1] != "R" or fields[5] != "L":
        raise DeviceReplyError(f"not a lens command (B, R, sph, cyl, axis, L, sph, cyl, axis, ...): {fields!r}")
    eyes = []
    for at, eye in ((2, "R"), (6, "L")):
        sph = parse_power(fields[at], f"{eye} sphere")
        cyl = parse_power(fields[at + 1], f"{eye} cylinder")
        try:
            axis = int(fields[at + 2])
        except ValueError:
            raise DeviceReplyError(f"{eye} axis: expected whole degrees, got {fields[at + 2]!r}") from None
        if not 0 <= axis <= 180:
            raise DeviceReplyError(f"{eye} axis: expected 0 to 180, got {axis}")
        eyes.append(Prescription(sph, cyl, float(axis)))
    return LensState(*eyes)
