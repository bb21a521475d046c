"""One exception hierarchy for every failure a user can cause.

The app and the command line turn any :class:`VisionTuneError` into one clear message;
anything else is a bug. A message may quote what the user typed or a file holds (a path, a
protocol name): :func:`one_line` shows it on a terminal as one line, control characters and
line breaks escaped, so it can neither break the line nor drive the terminal.
"""


def one_line(text: object) -> str:
    """``text`` as one printable line: every non-printable character (control characters,
    newlines, escape sequences, lone surrogates of undecodable file names) as its Python
    escape (``\\x1b``, ``\\n``, ``\\udcff``)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))


class VisionTuneError(Exception):
    """Base class of every error VisionTune reports to a user."""


class InvalidInputError(VisionTuneError, ValueError):
    """An argument has the wrong shape, type or value (NaN, inf, out of range...).

    The message names the argument and says what was expected and what was found.
    """


class ConfigurationError(VisionTuneError):
    """A protocol, calibration or settings file is missing, malformed or out of range."""


class CalibrationError(ConfigurationError):
    """A screen calibration is impossible, or a letter cannot be shown faithfully on it."""


class ProtocolError(ConfigurationError):
    """A session protocol file is invalid (the message names file, key, expected, found)."""


class StoreError(VisionTuneError):
    """The trial log cannot be read or written (damaged, locked, newer schema...)."""


class SessionError(VisionTuneError):
    """A session operation is not allowed in the session's current state."""


class NumericalError(VisionTuneError):
    """A numerical procedure failed to converge or produced a non-finite result."""


class DeviceError(VisionTuneError):
    """A lens device (a motorized phoropter, its cable, the clinician's confirmation) did not
    set or confirm a lens: a timeout, a closed port, a garbled reply, a lens outside its range.
    The session pauses with every answer kept (:mod:`visiontune.devices`)."""
