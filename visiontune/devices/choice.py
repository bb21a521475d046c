"""A lens device from its setting: ``manual`` (the clinician's, the default) or ``cv5000:PORT``
(``cv5000:/dev/ttyUSB0``, ``cv5000:COM4``, an emulator's ``cv5000:/dev/pts/N``)."""

from __future__ import annotations

from collections.abc import Callable

from visiontune.devices.base import LensDevice
from visiontune.errors import InvalidInputError

DEVICE_KINDS = ("manual", "cv5000")


def parse_device_spec(text: str) -> tuple[str, str | None]:
    """``(kind, port)`` of a device setting; :class:`InvalidInputError` saying what is expected."""
    kind, sep, port = str(text).strip().partition(":")
    kind = kind.lower()
    if kind == "manual" and not sep:
        return "manual", None
    if kind == "cv5000" and port.strip():
        return "cv5000", port.strip()
    raise InvalidInputError(f"device: expected 'manual' or 'cv5000:PORT' (e.g. cv5000:/dev/ttyUSB0), got {text!r}")


def open_device(text: str, *, confirm: Callable[[str], bool] | None = None, **options) -> LensDevice:
    """The device a setting names, opened. ``confirm``: the clinician's confirmation for
    ``manual`` (required there); ``options`` go to the serial driver (``reply_timeout_s``,
    ``change_seconds``, ``limits``)."""
    kind, port = parse_device_spec(text)
    if kind == "manual":
        from visiontune.devices.manual import ManualDevice

        if confirm is None:
            raise InvalidInputError("device: 'manual' needs the clinician's confirmation (the app's prompt)")
        return ManualDevice(confirm)
    from visiontune.devices.cv5000 import CV5000

    return CV5000(port, **options)
