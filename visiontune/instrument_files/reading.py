"""What an instrument's file says: one objective refraction (REF) or one pair of spectacles (LM).

An :class:`InstrumentReading` is what :func:`visiontune.instrument_files.read_instrument_file`
returns for a refractometer's (``kind="REF"``) or a lensmeter's (``kind="LM"``) file, whatever
its format (JOIA XML, :mod:`visiontune.instrument_files.joia`; DICOM Autorefraction or
Lensometry Measurements, :mod:`visiontune.instrument_files.dicom_measurements`). Each value is
checked where it is read (:func:`check_lens`, :func:`check_add`, the pupillary distance by
:func:`check_pd_mm`), so a reading that exists is plausible: a
message naming the file, the element and what is wrong refuses anything else.

Plausible ranges (wider than what a refraction starts from, so that a real reading is never
refused here; the visit's own range, :func:`visiontune.refraction.start.check_in_range`, decides
whether it can start a refraction):

* sphere: :data:`SPHERE_RANGE_D`, -30 to +30 D (refractometers measure about -25 to +22 D; lensmeters
  ±25 D);
* cylinder: magnitude up to :data:`MAX_CYLINDER_D`, 12 D, either sign (the file's cylinder form is kept: the
  :class:`~visiontune.optics.prescription.Prescription` holds either form, and the visit writes it
  in its own);
* axis: 0 to 180 degrees (0 is stored as 180, the clinical convention);
* near addition: :data:`ADD_RANGE_D`, 0 to 5 D (spectacle adds are 0.75 to 3.50 D; a single-vision
  lens reads 0 or nothing);
* pupillary distance (:func:`check_pd_mm`): :data:`PD_RANGE_MM`, 40-80 mm binocular, and
  :data:`MONOCULAR_PD_RANGE_MM`, 20-40 mm monocular (Dodgson 2004, "Variation and extrema of human
  interpupillary distance", Proc. SPIE 5291:36-46: adults about 63 mm, almost all within 45-80 mm,
  children from five years old from about 40 mm). The trial log checks the same ranges again
  (:func:`visiontune.session.visit_records.check_pd`, a layer above this one; the tests hold the two equal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from visiontune.errors import InvalidInputError, one_line
from visiontune.optics import Prescription

__all__ = [
    "ADD_RANGE_D",
    "EYES",
    "KINDS",
    "MAX_CYLINDER_D",
    "MONOCULAR_PD_RANGE_MM",
    "PD_RANGE_MM",
    "SPHERE_RANGE_D",
    "InstrumentReading",
    "check_add",
    "check_lens",
    "check_pd_mm",
    "device_text",
]

#: REF: an objective refraction (autorefractor); LM: the habitual spectacles read on a lensmeter.
KINDS = ("REF", "LM")
EYES = ("OD", "OS")
SPHERE_RANGE_D = (-30.0, 30.0)
MAX_CYLINDER_D = 12.0
ADD_RANGE_D = (0.0, 5.0)
PD_RANGE_MM = (40.0, 80.0)
MONOCULAR_PD_RANGE_MM = (20.0, 40.0)


def _finite(where: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidInputError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def check_lens(where: str, sphere_d: float, cylinder_d: float | None, axis_deg: float | None) -> Prescription:
    """A measured lens as a :class:`Prescription`, its values checked (module docstring); ``where``
    names the file and element in the message. A missing cylinder reads as 0 D (a spherical lens, axis
    180); a cylinder other than 0 needs its axis."""
    s = _finite(f"{where} sphere", sphere_d)
    if not SPHERE_RANGE_D[0] <= s <= SPHERE_RANGE_D[1]:
        raise InvalidInputError(
            f"{where} sphere: {s:+.2f} D is not a plausible measurement "
            f"(expected {SPHERE_RANGE_D[0]:+.0f} to {SPHERE_RANGE_D[1]:+.0f} D)"
        )
    c = 0.0 if cylinder_d is None else _finite(f"{where} cylinder", cylinder_d)
    if abs(c) > MAX_CYLINDER_D:
        raise InvalidInputError(
            f"{where} cylinder: {c:+.2f} D is not a plausible measurement "
            f"(expected at most {MAX_CYLINDER_D:g} D either sign)"
        )
    if axis_deg is None:
        if c != 0.0:
            raise InvalidInputError(f"{where} axis: a cylinder of {c:+.2f} D needs its axis, and the file gives none")
        a = 180.0
    else:
        a = _finite(f"{where} axis", axis_deg)
        if not 0.0 <= a <= 180.0:
            raise InvalidInputError(f"{where} axis: {a:g} degrees is not an axis (expected 0 to 180)")
    return Prescription(s, c, a)


def check_add(where: str, add_d: float | None) -> float | None:
    """A near addition (D) in :data:`ADD_RANGE_D`; ``None`` stays ``None``."""
    if add_d is None:
        return None
    add = _finite(where, add_d)
    if not ADD_RANGE_D[0] <= add <= ADD_RANGE_D[1]:
        raise InvalidInputError(
            f"{where}: {add:+.2f} D is not a near addition (expected {ADD_RANGE_D[0]:g} to {ADD_RANGE_D[1]:g} D)"
        )
    return add


def check_pd_mm(
    where: str, pd_mm: float | None, pd_od_mm: float | None = None, pd_os_mm: float | None = None
) -> tuple[float | None, float | None, float | None]:
    """``(pd_mm, pd_od_mm, pd_os_mm)`` of a file checked (module docstring): each finite and in its range,
    the monocular ones both or neither, the binocular their sum (within 0.1 mm) when both are given, and
    their sum when only they are."""
    if (pd_od_mm is None) != (pd_os_mm is None):
        raise InvalidInputError(f"{where}: give both monocular distances or neither, got {pd_od_mm!r}, {pd_os_mm!r}")
    mono = []
    for eye, value in (("right", pd_od_mm), ("left", pd_os_mm)):
        if value is not None:
            v = _finite(f"{where} ({eye})", value)
            lo, hi = MONOCULAR_PD_RANGE_MM
            if not lo <= v <= hi:
                raise InvalidInputError(
                    f"{where} ({eye}): {v:g} mm is not a monocular pupillary distance (expected {lo:g} to {hi:g} mm)"
                )
            mono.append(v)
    lo, hi = PD_RANGE_MM
    if pd_mm is None:
        if not mono:
            return None, None, None
        pd_mm = round(sum(mono), 2)
    pd = _finite(where, pd_mm)
    if not lo <= pd <= hi:
        raise InvalidInputError(f"{where}: {pd:g} mm is not a pupillary distance (expected {lo:g} to {hi:g} mm)")
    if mono and abs(pd - sum(mono)) > 0.1:
        raise InvalidInputError(
            f"{where}: {pd:g} mm is not the sum of the monocular distances {mono[0]:g} + {mono[1]:g} mm"
        )
    return pd, (mono[0] if mono else None), (mono[1] if mono else None)


def device_text(maker: str | None, model: str | None) -> str:
    """``"NIDEK ARK-1"``: the maker and model as one name (``"unknown device"`` without either)."""
    name = " ".join(p for p in (maker, model) if p)
    return name or "unknown device"


@dataclass(frozen=True)
class InstrumentReading:
    """One instrument file's reading.

    ``kind``: ``"REF"`` (objective refraction) or ``"LM"`` (lensmeter: the habitual spectacles);
    ``lenses``: ``{"OD": Prescription, "OS": Prescription}`` for the eyes the file measured (for a REF
    the device's representative value of each eye, :mod:`~visiontune.instrument_files.joia`);
    ``adds``: ``{"OD": D, "OS": D}`` the near addition of each lens (LM, when the lens has one);
    ``pd_mm`` / ``pd_od_mm`` / ``pd_os_mm``: pupillary distances (mm; an LM's is that of the
    spectacles' optical centres); ``maker``, ``model``: the device; ``measured_at``: the device's
    clock (naive: the files carry no time zone); ``source_file``: the file's name (not its path);
    ``file_format``: ``"JOIA XML"`` or ``"DICOM"``; ``readings``: how many single measurements
    each eye's value summarises (1 when the file gives only one).
    """

    kind: str
    lenses: dict
    source_file: str
    file_format: str
    adds: dict = field(default_factory=dict)
    pd_mm: float | None = None
    pd_od_mm: float | None = None
    pd_os_mm: float | None = None
    maker: str | None = None
    model: str | None = None
    measured_at: datetime | None = None
    readings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInputError(f"kind: expected REF or LM, got {self.kind!r}")
        if not self.lenses or set(self.lenses) - set(EYES):
            raise InvalidInputError(f"{self.source_file}: expected a lens for OD and/or OS, got {sorted(self.lenses)}")
        for eye, rx in self.lenses.items():
            if not isinstance(rx, Prescription):
                raise InvalidInputError(f"{self.source_file} {eye}: expected a Prescription, got {type(rx).__name__}")
        if set(self.adds) - set(self.lenses):
            raise InvalidInputError(f"{self.source_file}: a near addition for an eye without a lens")
        for name in ("maker", "model"):  # device text from a file: one printable line, 64 characters
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, one_line(value).strip()[:64] or None)

    @property
    def device(self) -> str:
        """The device's maker and model (:func:`device_text`)."""
        return device_text(self.maker, self.model)

    @property
    def source(self) -> str:
        """Where the values come from, as a record says it: ``"autorefraction (NIDEK ARK-1, ref.xml)"``
        or ``"lensmeter (TOPCON CL-300, lm.xml)"``."""
        what = "autorefraction" if self.kind == "REF" else "lensmeter"
        return f"{what} ({self.device}, {self.source_file})"

    def lens(self, eye: str) -> Prescription | None:
        return self.lenses.get(eye)

    def require_eyes(self, eyes) -> None:
        """Refuse a reading without a lens for each of ``eyes`` (``"OD"`` / ``"OS"``)."""
        names = {"OD": "right eye (R)", "OS": "left eye (L)"}
        for eye in eyes:
            if eye not in self.lenses:
                raise InvalidInputError(f"{self.source_file}: the file has no {self.kind} reading of the {names[eye]}")

    def summary(self) -> str:
        """One line per eye and the PD, as the command line prints them."""
        lines = [f"{self.source}{'' if self.measured_at is None else f', measured {self.measured_at:%Y-%m-%d %H:%M}'}"]
        for eye in EYES:
            rx = self.lenses.get(eye)
            if rx is None:
                continue
            add = self.adds.get(eye)
            n = self.readings.get(eye, 1)
            extra = "" if add is None else f", add {add:+.2f} D"
            extra += "" if n <= 1 else f" (representative of {n} readings)"
            lines.append(f"  {eye}  {rx.format()}{extra}")
        if self.pd_mm is not None:
            mono = "" if self.pd_od_mm is None else f" ({self.pd_od_mm:g}/{self.pd_os_mm:g})"
            lines.append(f"  PD  {self.pd_mm:g} mm{mono}")
        return "\n".join(lines)
