"""The start screen's starting prescription, read from what the clinician typed (Qt-free).

Sphere and cylinder in diopters, axis in degrees, each in its own field; every error names
the field it is about (``"Sphere: ..."``) so the form can outline it. A prescription outside
the range the refraction covers is refused with
:func:`visiontune.refraction.start.check_in_range`'s message, never clipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from visiontune.app.logic.worker_device import MANUAL_KINDS, check_manual_kind
from visiontune.devices.choice import parse_device_spec
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.lens_devices import DEVICE_KINDS
from visiontune.refraction.start import SOURCES, StartingPoint

__all__ = [
    "DEVICE_CHOICES",
    "FIELDS",
    "LENS_KIND_CHOICES",
    "SOURCE_LABELS",
    "TypedStart",
    "device_setting",
    "lens_kind_setting",
    "parse_age",
    "parse_power",
    "read_start",
]

#: The fields an error can name, in the order of the form.
FIELDS = ("Sphere", "Cylinder", "Axis", "Source", "Age")
#: The sources as the form lists them: ``(engine name, label)``.
SOURCE_LABELS = (
    ("autorefraction", "autorefraction"),
    ("retinoscopy", "retinoscopy"),
    ("spectacles", "habitual spectacles (lensmeter)"),
    ("none", "none (start from nothing)"),
)
#: The lens devices as the form lists them: ``(kind, label)``.
DEVICE_CHOICES = (
    ("manual", "manual trial frame or phoropter (you set each lens)"),
    ("cv5000", "Topcon CV-5000 motorized phoropter (serial port)"),
)
#: The manual device's kinds as the form lists them: ``(kind, label)``, each with its seconds a
#: change of lens (:mod:`visiontune.refraction.lens_devices`; a CV-5000 is the motorized phoropter).
LENS_KIND_CHOICES = tuple(
    (name, f"{DEVICE_KINDS[name].label} ({DEVICE_KINDS[name].change_seconds:g} s a lens change)")
    for name in MANUAL_KINDS
)


@dataclass(frozen=True)
class TypedStart:
    """The form's start: ``rx`` (None: not typed), its ``source``, ``age_years`` (None: not typed)."""

    rx: Prescription | None
    source: str
    age_years: float | None


def _number(field: str, text: str, example: str) -> float:
    clean = text.strip().replace("\u2212", "-").replace(",", ".").lower().removesuffix("d").strip()
    try:
        value = float(clean)
    except ValueError:
        raise InvalidInputError(f"{field}: expected a number, e.g. {example}; got {text.strip()!r}") from None
    if not math.isfinite(value):
        raise InvalidInputError(f"{field}: expected a finite number, got {text.strip()!r}")
    return value


def parse_power(field: str, text: str) -> float:
    """A sphere or cylinder in diopters (``-2``, ``−2.00``, ``+0,75``, ``plano``)."""
    if text.strip().lower() in ("pl", "plano"):
        return 0.0
    return _number(field, text, "\u22122.00")


def parse_age(text: str) -> float | None:
    """The patient's age in years, or None when the field is empty."""
    if not text.strip():
        return None
    age = _number("Age", text, "45")
    if not 3.0 <= age <= 110.0:
        raise InvalidInputError(f"Age: expected an age in [3, 110] years, got {text.strip()}")
    return age


def read_start(sphere: str, cylinder: str, axis: str, source: str, age: str, *, simulated: bool) -> TypedStart:
    """The start typed in the form. All three fields empty: no prescription (a simulated
    session then starts from its patient's own reading unless ``source`` is ``"none"``; a real
    one must say ``"none"``). An empty cylinder is 0; a cylinder needs an axis in [0, 180]."""
    if source not in SOURCES:
        raise InvalidInputError(f"Source: expected one of {', '.join(SOURCES)}, got {source!r}")
    age_years = parse_age(age)
    if not (sphere.strip() or cylinder.strip() or axis.strip()):
        if source != "none" and not simulated:
            raise InvalidInputError(
                f"Sphere: type the starting prescription from the {source}, "
                "or choose 'none' as its source to start from nothing"
            )
        return TypedStart(None, source, age_years)
    if not sphere.strip():
        raise InvalidInputError("Sphere: type the sphere of the starting prescription (diopters, e.g. \u22122.00)")
    s = parse_power("Sphere", sphere)
    c = parse_power("Cylinder", cylinder) if cylinder.strip() else 0.0
    if c == 0.0 and not axis.strip():
        a = 180.0
    elif not axis.strip():
        raise InvalidInputError(f"Axis: a cylinder of {c:+.2f} D needs its axis (degrees, 1 to 180)")
    else:
        a = _number("Axis", axis, "30")
        if not 0.0 <= a <= 180.0:
            raise InvalidInputError(f"Axis: expected degrees in [0, 180], got {axis.strip()}")
    if source == "none":
        raise InvalidInputError(
            "Source: say where the starting prescription comes from (autorefraction, "
            "retinoscopy or habitual spectacles), or clear it to start from nothing"
        )
    rx = Prescription(s, c, a)
    StartingPoint(rx, source, age_years)  # the engine's range check, its message as it is
    return TypedStart(rx, source, age_years)


def device_setting(kind: str, port: str) -> str:
    """The lens-device setting from the form: ``"manual"``, or ``"cv5000:PORT"`` for a CV-5000
    on the typed serial port. InvalidInputError naming the field (``"Lens device port: ..."``)
    for a CV-5000 without a port, or with characters no port name has (nothing is opened here)."""
    if kind == "manual":
        return "manual"
    if kind != "cv5000":
        raise InvalidInputError(f"Lens device: expected manual or cv5000, got {kind!r}")
    text = port.strip()
    if not text:
        raise InvalidInputError("Lens device port: type the CV-5000's serial port (e.g. /dev/ttyUSB0 or COM4)")
    if not text.isprintable():
        raise InvalidInputError(
            f"Lens device port: expected a serial port name such as /dev/ttyUSB0 or COM4, got {text!r}"
        )
    kind, port = parse_device_spec(f"cv5000:{text}")
    return f"{kind}:{port}"


def lens_kind_setting(kind: str) -> str:
    """The manual device's kind from the form (``trial-frame`` or ``manual-phoropter``);
    InvalidInputError naming the field (``"Lens device kind: ..."``) otherwise."""
    return check_manual_kind(kind, what="Lens device kind")
