"""DICOM Autorefraction Measurements and Lensometry Measurements objects, read with pydicom.

The two ophthalmic refractive measurement objects of DICOM PS3.3 (section A.60, "Lensometry
Measurements IOD" and "Autorefraction Measurements IOD", and their modules in section C.8):

* **Autorefraction Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.2``, Modality ``AR``):
  Autorefraction Right Eye Sequence (0046,0050) and Left Eye Sequence (0046,0052), one item each
  of Sphere Power (0046,0146, D) and a Cylinder Sequence (0046,0018) item of Cylinder Power
  (0046,0147, D) and Cylinder Axis (0022,0009, degrees); Distance Pupillary Distance (0046,0060,
  mm).
* **Lensometry Measurements** (SOP Class ``1.2.840.10008.5.1.4.1.1.78.1``, Modality ``LEN``): Right
  Lens Sequence (0046,0014) and Left Lens Sequence (0046,0015), each item a lens of Sphere Power,
  Cylinder Sequence and an Add Near Sequence (0046,0100) item of Add Power (0046,0104, D).

The device: Manufacturer (0008,0070) and Manufacturer's Model Name (0008,1090); measured at
Content Date / Time (0008,0023 / 0008,0033). Either cylinder sign is accepted, kept as written
(:mod:`visiontune.instrument_files.reading`). A file that is not DICOM Part 10, a DICOM object of
another SOP Class, one whose Media Storage SOP Class (file meta) and SOP Class disagree, a
truncated file and any value out of range (or NaN) are refused, the message naming the file and
the attribute.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
from datetime import datetime

from visiontune.errors import InvalidInputError, one_line
from visiontune.instrument_files.reading import InstrumentReading, check_add, check_lens, check_pd_mm

__all__ = ["AUTOREFRACTION_SOP_CLASS", "LENSOMETRY_SOP_CLASS", "looks_like_dicom", "read_dicom_measurements"]

AUTOREFRACTION_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.2"
LENSOMETRY_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.78.1"
_KINDS = {AUTOREFRACTION_SOP_CLASS: "REF", LENSOMETRY_SOP_CLASS: "LM"}
_EYE_SEQUENCES = {
    "REF": {"OD": "AutorefractionRightEyeSequence", "OS": "AutorefractionLeftEyeSequence"},
    "LM": {"OD": "RightLensSequence", "OS": "LeftLensSequence"},
}


def looks_like_dicom(data: bytes) -> bool:
    """True for a DICOM Part 10 file: ``DICM`` after the 128-byte preamble."""
    return data[128:132] == b"DICM"


#: Explicit VRs with a 2-byte reserved field and a 4-byte length (PS3.5 7.1.2).
_LONG_VRS = {b"OB", b"OD", b"OF", b"OL", b"OV", b"OW", b"SQ", b"SV", b"UC", b"UN", b"UR", b"UT", b"UV"}
_IMPLICIT_LE, _EXPLICIT_BE, _DEFLATED = "1.2.840.10008.1.2", "1.2.840.10008.1.2.2", "1.2.840.10008.1.2.1.99"


def _truncation(data: bytes, transfer_syntax: str) -> str | None:
    """Where the element stream of a Part 10 file stops short, or ``None`` when every element's
    header and value fit in the file (PS3.5 section 7: a tag, an explicit VR or not, a 2- or 4-byte
    length; items and undefined lengths are walked through, their delimiters being elements too).
    pydicom stops reading silently at a truncated element; this says so. A deflated stream is
    not walked (its decompression fails on a truncated stream)."""
    if transfer_syntax == _DEFLATED:
        return None
    pos, end = 132, len(data)
    while pos < end:
        in_meta = data[pos : pos + 2] == b"\x02\x00"
        little = in_meta or transfer_syntax != _EXPLICIT_BE
        explicit = in_meta or transfer_syntax != _IMPLICIT_LE
        if pos + 8 > end:
            return f"an element header at byte {pos} is cut off (the file ends at byte {end})"
        group, elem = struct.unpack("<HH" if little else ">HH", data[pos : pos + 4])
        if group == 0xFFFE or not explicit:
            (length,), head = struct.unpack("<I" if little else ">I", data[pos + 4 : pos + 8]), 8
        elif data[pos + 4 : pos + 6] in _LONG_VRS:
            if pos + 12 > end:
                return f"an element header at byte {pos} is cut off (the file ends at byte {end})"
            (length,), head = struct.unpack("<I" if little else ">I", data[pos + 8 : pos + 12]), 12
        else:
            (length,), head = struct.unpack("<H" if little else ">H", data[pos + 6 : pos + 8]), 8
        if length == 0xFFFFFFFF or (group == 0xFFFE and elem == 0xE000):
            pos += head  # undefined length or an item: its contents follow as elements
            continue
        if pos + head + length > end:
            return (
                f"element ({group:04X},{elem:04X}) at byte {pos} needs {length} bytes of value, the file ends "
                f"{end - pos - head} bytes into it"
            )
        pos += head + length
    return None


def _sop_name(uid: str) -> str:
    try:
        from pydicom.uid import UID

        name = UID(uid).name
        return f"{uid} ({name})" if name and name != uid else uid
    except Exception:  # a name is only for the message
        return uid


def _number(ds, keyword: str, where: str):
    """The attribute's one number, ``None`` when absent or empty."""
    if keyword not in ds:
        return None
    value = ds[keyword].value
    if value is None or value == "" or (hasattr(value, "__len__") and not isinstance(value, str) and len(value) == 0):
        return None
    if hasattr(value, "__len__") and not isinstance(value, str):
        raise InvalidInputError(f"{where} {keyword}: expected one value, got {len(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{where} {keyword}: {str(value)[:40]!r} is not a number") from None


def _one_item(ds, keyword: str, where: str):
    if keyword not in ds or ds[keyword].value is None or len(ds[keyword].value) == 0:
        return None
    seq = ds[keyword].value
    if len(seq) != 1:
        raise InvalidInputError(f"{where} {keyword}: {len(seq)} items, expected one")
    return seq[0]


def _eye(ds, kind: str, eye: str, name: str):
    keyword = _EYE_SEQUENCES[kind][eye]
    item = _one_item(ds, keyword, name)
    if item is None:
        return None, None
    where = f"{name}: {keyword}"
    sphere = _number(item, "SpherePower", where)
    if sphere is None:
        raise InvalidInputError(f"{where}: the item has no Sphere Power (0046,0146)")
    cyl = _one_item(item, "CylinderSequence", where)
    c = a = None
    if cyl is not None:
        c = _number(cyl, "CylinderPower", f"{where} > CylinderSequence")
        a = _number(cyl, "CylinderAxis", f"{where} > CylinderSequence")
    rx = check_lens(where, sphere, c, a)
    add = None
    if kind == "LM":
        near = _one_item(item, "AddNearSequence", where)
        if near is not None:
            value = _number(near, "AddPower", f"{where} > AddNearSequence")
            add = check_add(f"{where} > AddNearSequence AddPower", value)
    return rx, (None if add == 0.0 else add)


def _when(ds, name: str) -> datetime | None:
    date = str(ds.get("ContentDate", "") or "").strip()
    time = str(ds.get("ContentTime", "") or "").strip()
    if not date:
        return None
    if not re.fullmatch(r"\d{8}", date):
        raise InvalidInputError(f"{name}: ContentDate {date[:20]!r} is not a DICOM date (YYYYMMDD)")
    m = re.fullmatch(r"(\d{2})(\d{2})?(\d{2})?(?:\.(\d{1,6}))?", time) if time else None
    if time and m is None:
        raise InvalidInputError(f"{name}: ContentTime {time[:20]!r} is not a DICOM time (HHMMSS)")
    try:
        parts = [int(date[:4]), int(date[4:6]), int(date[6:])]
        if m is not None:
            micro = int((m.group(4) or "0").ljust(6, "0"))
            parts += [int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0), micro]
        return datetime(*parts)
    except ValueError as exc:
        raise InvalidInputError(f"{name}: ContentDate/ContentTime {date} {time}: {exc}") from None


def _text(ds, keyword: str) -> str | None:
    value = ds.get(keyword)
    text = "" if value is None else str(value).strip()
    return text or None


def read_dicom_measurements(data: bytes, name: str) -> InstrumentReading:
    """The :class:`InstrumentReading` of a DICOM Part 10 file's bytes (module docstring)."""
    import pydicom
    from pydicom.errors import InvalidDicomError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydicom's warnings about a damaged file: the checks here refuse it
            ds = pydicom.dcmread(io.BytesIO(data))
            cut = _truncation(data, str(getattr(ds.file_meta, "TransferSyntaxUID", "") or ""))
            if cut is not None:
                raise InvalidInputError(f"{name}: a truncated DICOM file: {cut}")
            ds.remove_private_tags()
            for _ in ds.iterall():  # every element decoded now: a damaged value fails here, not later
                pass
    except InvalidInputError:
        raise
    except InvalidDicomError as exc:
        raise InvalidInputError(f"{name}: not a DICOM Part 10 file ({one_line(str(exc).splitlines()[0])})") from None
    except Exception as exc:  # pydicom raises many kinds on a damaged stream
        first = one_line((str(exc).splitlines() or [""])[0])[:200]
        raise InvalidInputError(f"{name}: a damaged or truncated DICOM file ({type(exc).__name__}: {first})") from None
    meta = getattr(ds, "file_meta", None)
    meta_class = str(getattr(meta, "MediaStorageSOPClassUID", "") or "") if meta is not None else ""
    sop_class = str(ds.get("SOPClassUID", "") or "")
    if not sop_class:
        raise InvalidInputError(
            f"{name}: no SOP Class UID (0008,0016); expected a DICOM Autorefraction or Lensometry Measurements object"
        )
    if meta_class and meta_class != sop_class:
        raise InvalidInputError(
            f"{name}: Media Storage SOP Class UID {meta_class} disagrees with SOP Class UID {sop_class}; a damaged file"
        )
    kind = _KINDS.get(sop_class)
    if kind is None:
        raise InvalidInputError(
            f"{name}: a DICOM object of SOP Class {_sop_name(sop_class)}; expected Autorefraction "
            f"Measurements ({AUTOREFRACTION_SOP_CLASS}) or Lensometry Measurements "
            f"({LENSOMETRY_SOP_CLASS})"
        )
    lenses, adds = {}, {}
    for eye in ("OD", "OS"):
        rx, add = _eye(ds, kind, eye, name)
        if rx is not None:
            lenses[eye] = rx
            if add is not None:
                adds[eye] = add
    if not lenses:
        seqs = " or ".join(_EYE_SEQUENCES[kind].values())
        raise InvalidInputError(
            f"{name}: no measurement of either eye (no item in {seqs}; an empty or truncated file?)"
        )
    pd = _number(ds, "DistancePupillaryDistance", name)
    pd_mm = check_pd_mm(f"{name}: DistancePupillaryDistance (0046,0060)", pd)[0]
    return InstrumentReading(
        kind=kind,
        lenses=lenses,
        adds=adds,
        source_file=name,
        file_format="DICOM",
        pd_mm=pd_mm,
        maker=_text(ds, "Manufacturer"),
        model=_text(ds, "ManufacturerModelName"),
        measured_at=_when(ds, name),
        readings={e: 1 for e in lenses},
    )
