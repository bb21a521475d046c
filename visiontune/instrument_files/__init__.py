"""The clinic's instruments, read: the starting prescription, PD and habitual spectacles from their files.

:func:`read_instrument_file` reads the file an autorefractor (REF) or a lensmeter (LM) wrote, in
either of the formats they write, told apart by the file's first bytes:

* JOIA "Ophthalmology XML" (:mod:`visiontune.instrument_files.joia`);
* DICOM Autorefraction / Lensometry Measurements (:mod:`visiontune.instrument_files.dicom_measurements`).

It returns one :class:`~visiontune.instrument_files.reading.InstrumentReading`, or refuses the file
with :class:`~visiontune.errors.InvalidInputError` naming the file, the element and what is wrong.
Nothing here writes anything or opens a network connection: the file is only read.
"""

from __future__ import annotations

import os
from pathlib import Path

from visiontune.errors import InvalidInputError, one_line
from visiontune.instrument_files.dicom_measurements import looks_like_dicom, read_dicom_measurements
from visiontune.instrument_files.joia import looks_like_xml, read_joia
from visiontune.instrument_files.reading import InstrumentReading

__all__ = ["InstrumentReading", "MAX_FILE_BYTES", "read_instrument_file"]

#: An instrument's file is a few kilobytes; anything larger than this is not one.
MAX_FILE_BYTES = 8 * 1024 * 1024


def read_instrument_file(path, *, require_eyes=()) -> InstrumentReading:
    """Read the instrument file at ``path`` (JOIA XML or DICOM, sniffed from its first bytes) and
    return its :class:`InstrumentReading`; ``require_eyes`` (``"OD"``, ``"OS"``) refuses a file
    without a reading of those eyes."""
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise InvalidInputError(f"instrument file: expected a path, got {type(path).__name__}") from None
    name = one_line(p.name)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InvalidInputError(f"{one_line(p)}: no such file") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{one_line(p)}: a directory, not an instrument's file") from None
    except OSError as exc:
        raise InvalidInputError(f"{one_line(p)}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInputError(f"{name}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; not an instrument's file")
    if not data:
        raise InvalidInputError(f"{name}: the file is empty")
    if looks_like_dicom(data):
        reading = read_dicom_measurements(data, name)
    elif looks_like_xml(data):
        reading = read_joia(data, name)
    elif data[:8].startswith(b"\x00" * 8) and len(data) < 132:
        raise InvalidInputError(f"{name}: a truncated file (a DICOM preamble without its 'DICM' mark)")
    else:
        raise InvalidInputError(
            f"{name}: neither a JOIA XML file (it does not start with '<') nor a DICOM Part 10 "
            "file (no 'DICM' after its 128-byte preamble)"
        )
    reading.require_eyes(require_eyes)
    return reading
