"""The JOIA "Ophthalmology XML" of refractometers (REF) and lensmeters (LM).

The Japan Ophthalmic Instruments Association's data-exchange format (JOIA, *Standardized XML for
ophthalmic instruments*, version 1.2; the refraction part became ISO/TS 22218-1): one root
``Ophthalmology`` holding a ``Common`` block (namespace ``http://www.joia.or.jp/standardized/
namespaces/Common``: ``Company``, ``ModelName``, ``MachineNo``, ``Date``, ``Time``, ``Patient``)
and one ``Measure`` element per instrument with a ``type`` attribute (``REF``, ``LM``, ``KM``,
``SBJ``...) in that instrument's namespace (``.../namespaces/REF``, ``.../namespaces/LM``).

* **REF** (autorefractor): ``CylinderMode`` (``-`` or ``+``), ``VD`` (vertex distance), then per eye
  an ``R`` / ``L`` element (directly in ``Measure`` or in a ``REF`` block) with the single
  measurements ``List No="1"``, ``"2"``, ... and the device's representative value ``Median``, each
  of ``Sphere`` (``unit="D"``), ``Cylinder`` (D), ``Axis`` (``unit="deg"``); ``PD`` with
  ``Distance`` (mm). The start of a refraction is the ``Median``; without one, the median of the
  single measurements in power-vector space (component by component of ``(M, J0, J45)``: Thibos,
  Wheeler & Horner 1997, Optom. Vis. Sci. 74:367-375, where averaging refractions is done on power
  vectors), written in the file's cylinder form.
* **LM** (lensmeter): ``CylinderMode``, ``LM`` with ``R`` / ``L`` (and ``S``, a single lens, ignored)
  each of ``Sphere``, ``Cylinder``, ``Axis`` and the near addition ``ADD`` (also seen as ``Add1``),
  and ``PD`` with ``Distance``, ``DistanceR``, ``DistanceL`` (mm).

Sources for the structure (examples read, not copied): the sample REF/LM/SBJ files of Topcon
(CV-5000, CL-300) and the JOIA LM ``Measure`` quoted in the device readers of the open-source
ophthalmology practice software ``ukinoki/Rufus`` (its Topcon reader), which also shows that real
files may write a decimal comma (``-1,50``); the namespaces and ``Measure/REF/R/Median`` /
``Measure/LM/R/Sphere`` paths as parsed by open Topcon KR-1 / CL-300 importers on GitHub. The
JOIA schema files themselves (``Common_schema.xsd``, ``REF_schema.xsd``, ``LM_schema.xsd``) are
distributed by JOIA to its members and were not available here: elements are matched by local
name, whatever their namespace prefix, and the ``Measure`` by its ``type``.

Every value is read strictly (a decimal point or comma, an optional sign; ``NaN``, text, units
other than the element's are refused) and checked (:mod:`visiontune.instrument_files.reading`);
a refusal names the file and the element path, e.g. ``ref.xml: Measure(REF)/R/Median/Sphere:
'abc' is not a number``. A DOCTYPE or entity declaration (never in a device file, and the way to
an entity-expansion attack) is refused.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import datetime

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.instrument_files.reading import InstrumentReading, check_add, check_lens, check_pd_mm
from visiontune.optics import Prescription
from visiontune.optics.prescription import PowerVector

__all__ = ["JOIA_NAMESPACE_ROOT", "looks_like_xml", "read_joia"]

JOIA_NAMESPACE_ROOT = "http://www.joia.or.jp/standardized/namespaces/"
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)$")
_ENCODING = re.compile(rb"^\s*<\?xml[^>]*\bencoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
_EYE_NAMES = {"OD": "R", "OS": "L"}
_UNITS = {
    "Sphere": "D",
    "Cylinder": "D",
    "Axis": "deg",
    "ADD": "D",
    "Add1": "D",
    "Add": "D",
    "Distance": "mm",
    "DistanceR": "mm",
    "DistanceL": "mm",
}


def looks_like_xml(data: bytes) -> bool:
    """True when ``data`` starts (after a byte-order mark and blanks) with ``<``."""
    return data.lstrip(b"\xef\xbb\xbf").lstrip()[:1] == b"<"


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _children(el, name: str) -> list:
    return [c for c in el if _local(c.tag) == name]


def _child(el, name: str):
    found = _children(el, name)
    return found[0] if found else None


class _File:
    """The file's name and the path of the element being read, for messages."""

    def __init__(self, name: str):
        self.name = name

    def error(self, path: str, what: str) -> InvalidInputError:
        return InvalidInputError(f"{self.name}: {path}: {what}" if path else f"{self.name}: {what}")

    def text(self, el) -> str | None:
        if el is None or el.text is None or not el.text.strip():
            return None
        return el.text.strip()

    def number(self, el, path: str) -> float | None:
        """The element's number (``None`` when absent or empty), its unit checked."""
        text = self.text(el)
        if text is None:
            return None
        unit = el.get("unit")
        want = _UNITS.get(_local(el.tag))
        if unit is not None and want is not None and unit.strip() and unit.strip() != want:
            raise self.error(path, f"unit {unit!r}, expected {want!r}")
        if not _NUMBER.match(text):
            raise self.error(path, f"{text[:40]!r} is not a number")
        return float(text.replace(",", "."))


def _parse(data: bytes, f: _File):
    head = data[:4096]
    if b"<!DOCTYPE" in head.upper() or b"<!ENTITY" in data.upper():
        raise f.error("", "an XML file with a DOCTYPE or entity declarations is not an instrument's file; refused")
    m = _ENCODING.match(data.lstrip(b"\xef\xbb\xbf"))
    if m is not None and m.group(1).decode().lower().replace("_", "-") not in ("utf-8", "utf8", "us-ascii", "ascii"):
        encoding = m.group(1).decode()
        try:
            text = data.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise f.error("", f"cannot be read in its declared encoding {encoding!r} ({exc})") from None
        text = re.sub(r"^\s*<\?xml[^>]*\?>", '<?xml version="1.0" encoding="UTF-8"?>', text, count=1)
        data = text.encode("utf-8")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        line, col = exc.position
        reason = str(exc).split(":")[0]
        raise f.error(
            "", f"not well-formed XML (line {line}, column {col + 1}: {reason}); a truncated or damaged file?"
        ) from None


def _measure(root, f: _File):
    measures = [m for m in root if _local(m.tag) == "Measure"]
    types = [(m.get("type") or m.get("Type") or "").strip().upper() for m in measures]
    wanted = [(t, m) for t, m in zip(types, measures) if t in ("REF", "LM")]
    if not wanted:
        found = ", ".join(t or "(no type)" for t in types) or "none"
        raise f.error("Ophthalmology", f"no REF or LM Measure element (Measure types found: {found})")
    if len(wanted) > 1:
        raise f.error(
            "Ophthalmology",
            f"{len(wanted)} REF/LM Measure elements ({', '.join(t for t, _ in wanted)}); "
            "expected one instrument's measurement per file",
        )
    return wanted[0]


def _cylinder_mode(measure, kind: str, f: _File) -> str | None:
    text = f.text(_child(measure, "CylinderMode"))
    if text is None:
        return None
    mode = {"-": "-", "+": "+", "minus": "-", "plus": "+", "mix": None, "mixed": None}.get(text.lower(), "?")
    if mode == "?":
        raise f.error(f"Measure({kind})/CylinderMode", f"{text[:20]!r}, expected '-' or '+'")
    return mode


def _lens(el, path: str, mode: str | None, f: _File) -> Prescription | None:
    """The lens of an element holding Sphere / Cylinder / Axis; ``None`` when its Sphere is absent
    or empty (the eye was not measured)."""
    s = f.number(_child(el, "Sphere"), f"{path}/Sphere")
    c = f.number(_child(el, "Cylinder"), f"{path}/Cylinder")
    a = f.number(_child(el, "Axis"), f"{path}/Axis")
    if s is None:
        if c is not None or a is not None:
            raise f.error(f"{path}/Sphere", "missing, although the cylinder or axis is given")
        return None
    if mode is not None and c is not None and c != 0.0 and (c < 0) != (mode == "-"):
        raise f.error(f"{path}/Cylinder", f"{c:+.2f} D contradicts the file's CylinderMode {mode!r}")
    return check_lens(f"{f.name}: {path}", s, c, a)


def _median(lenses: list[Prescription], mode: str | None) -> Prescription:
    """Component-wise median of the power vectors (Thibos 1997), in the file's cylinder form."""
    pv = np.median(np.array([p.power_vector_array() for p in lenses]), axis=0)
    rx = PowerVector(*pv).to_prescription()
    all_plus = all(p.cylinder_d >= 0 for p in lenses) and any(p.cylinder_d for p in lenses)
    plus = mode == "+" or (mode is None and all_plus)
    return rx.to_plus_cylinder() if plus else rx


def _ref_eye(measure, eye: str, mode, f: _File):
    block = _child(measure, "REF")
    el = _child(block, _EYE_NAMES[eye]) if block is not None else None
    base = "Measure(REF)/REF" if el is not None else "Measure(REF)"
    if el is None:
        el = _child(measure, _EYE_NAMES[eye])
    if el is None:
        return None, 0
    path = f"{base}/{_EYE_NAMES[eye]}"
    singles = []
    for i, item in enumerate(_children(el, "List")):
        rx = _lens(item, f"{path}/List[No={item.get('No', i + 1)}]", mode, f)
        if rx is not None:
            singles.append(rx)
    median = _child(el, "Median")
    if median is not None:
        rx = _lens(median, f"{path}/Median", mode, f)
        if rx is not None:
            return rx, max(1, len(singles))
    direct = _lens(el, path, mode, f)
    if direct is not None:
        return direct, 1
    if singles:
        return _median(singles, mode), len(singles)
    return None, 0


def _lm_eye(measure, eye: str, mode, f: _File):
    block = _child(measure, "LM")
    el = _child(block, _EYE_NAMES[eye]) if block is not None else None
    base = "Measure(LM)/LM" if el is not None else "Measure(LM)"
    if el is None:
        el = _child(measure, _EYE_NAMES[eye])
    if el is None:
        return None, None
    path = f"{base}/{_EYE_NAMES[eye]}"
    rx = _lens(el, path, mode, f)
    if rx is None:
        return None, None
    add = None
    for name in ("ADD", "Add1", "Add"):
        add_el = _child(el, name)
        value = f.number(add_el, f"{path}/{name}")
        if value is not None:
            add = check_add(f"{f.name}: {path}/{name}", value)
            break
    return rx, (None if add == 0.0 else add)


def _pd(measure, kind: str, f: _File):
    pd = _child(measure, "PD")
    if pd is None:
        return None, None, None
    path = f"Measure({kind})/PD"
    b = f.number(_child(pd, "Distance"), f"{path}/Distance")
    r = f.number(_child(pd, "DistanceR"), f"{path}/DistanceR")
    left = f.number(_child(pd, "DistanceL"), f"{path}/DistanceL")
    if (r is None) != (left is None):
        r = left = None  # one monocular distance alone says nothing about the other
    if b is None and r is None:
        return None, None, None
    return check_pd_mm(f"{f.name}: {path}", b, r, left)


def _measured_at(root, f: _File) -> datetime | None:
    common = _child(root, "Common")
    if common is None:
        return None
    date = f.text(_child(common, "Date"))
    time = f.text(_child(common, "Time"))
    if date is None:
        return None
    m = re.match(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$", date)
    if m is None:
        raise f.error("Common/Date", f"{date[:40]!r} is not a date (expected YYYY-MM-DD or YYYY/MM/DD)")
    parts = [int(g) for g in m.groups()]
    if time is not None:
        t = re.match(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?$", time)
        if t is None:
            raise f.error("Common/Time", f"{time[:40]!r} is not a time (expected HH:MM:SS)")
        micro = int((t.group(4) or "0").ljust(6, "0"))
        parts += [int(t.group(1)), int(t.group(2)), int(t.group(3) or 0), micro]
    try:
        return datetime(*parts)
    except ValueError as exc:
        where = "Common/Date" if time is None else "Common/Date, Common/Time"
        raise f.error(where, f"{date} {time or ''}: {exc}") from None


def read_joia(data: bytes, name: str) -> InstrumentReading:
    """The :class:`InstrumentReading` of a JOIA XML file's bytes ``data``; ``name`` (the file's
    name) is quoted in every refusal (module docstring)."""
    f = _File(name)
    root = _parse(data, f)
    if _local(root.tag) != "Ophthalmology":
        raise f.error("", f"root element <{_local(root.tag)}>, expected <Ophthalmology> (a JOIA XML file)")
    kind, measure = _measure(root, f)
    mode = _cylinder_mode(measure, kind, f)
    lenses, adds, counts = {}, {}, {}
    for eye in ("OD", "OS"):
        if kind == "REF":
            rx, n = _ref_eye(measure, eye, mode, f)
            if rx is not None:
                lenses[eye], counts[eye] = rx, n
        else:
            rx, add = _lm_eye(measure, eye, mode, f)
            if rx is not None:
                lenses[eye], counts[eye] = rx, 1
                if add is not None:
                    adds[eye] = add
    if not lenses:
        raise f.error(f"Measure({kind})", "no measurement of either eye (R or L with a Sphere)")
    pd_mm, pd_od, pd_os = _pd(measure, kind, f)
    common = _child(root, "Common")
    maker = f.text(_child(common, "Company")) if common is not None else None
    model = f.text(_child(common, "ModelName")) if common is not None else None
    return InstrumentReading(
        kind=kind,
        lenses=lenses,
        adds=adds,
        source_file=name,
        file_format="JOIA XML",
        pd_mm=pd_mm,
        pd_od_mm=pd_od,
        pd_os_mm=pd_os,
        maker=maker,
        model=model,
        measured_at=_measured_at(root, f),
        readings=counts,
    )
