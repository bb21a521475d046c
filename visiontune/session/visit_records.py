"""Values of a visit in the trial log (schema v2, :mod:`visiontune.session.visit_schema`).

Frozen dataclasses read back by the :class:`~visiontune.session.store.TrialStore` visit
methods, and the checks those methods apply before writing. Units: diopters (D), degrees in
``(0, 180]`` (:class:`~visiontune.optics.Prescription`), logMAR, aware datetimes.

A row that cannot be read back (text that is not UTF-8, JSON that does not parse, a timestamp
that is not one) raises :class:`~visiontune.errors.StoreError` naming the visit and the column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.refraction.start import check_in_range
from visiontune.session.records import DamagedText

__all__ = [
    "BALANCE_ANSWERS",
    "BALANCE_OUTCOMES",
    "VISIT_EYES",
    "BalanceAnswer",
    "BalanceOutcome",
    "VisitAcuity",
    "VisitEye",
    "VisitInfo",
    "VisitSignOff",
    "check_clinic_form",
    "check_name",
    "check_prescription",
    "check_signed_prescription",
]

VISIT_EYES = ("OD", "OS")
#: Which eye the patient found clearer in a balance question.
BALANCE_ANSWERS = ("OD", "OS", "equal")
BALANCE_OUTCOMES = ("equal", "right eye clearer", "not balanced", "not done")
CYLINDER_FORMS = ("minus", "plus")
#: Step of the sphere and cylinder a clinician may sign off (diopters): a trial lens.
SIGNOFF_STEP_D = 0.25
#: Longest clinician name or reason kept (characters).
MAX_TEXT = 200


# --- checks before writing ---------------------------------------------------------------
def check_eye(eye: Any, allowed: tuple[str, ...] = VISIT_EYES) -> str:
    if eye not in allowed:
        raise InvalidInputError(f"eye: expected one of {', '.join(allowed)}, got {eye!r}")
    return str(eye)


def check_name(name: str, value: Any, *, optional: bool = False) -> str | None:
    """A printable one-line text of 1-200 characters (``None`` allowed when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name}: expected a non-empty text, got {value!r}")
    text = value.strip()
    if len(text) > MAX_TEXT:
        raise InvalidInputError(f"{name}: at most {MAX_TEXT} characters, got {len(text)}")
    if not text.isprintable():
        raise InvalidInputError(f"{name}: expected printable text on one line, got {text!r}")
    return text


def check_prescription(name: str, value: Any) -> Prescription:
    if not isinstance(value, Prescription):
        raise InvalidInputError(f"{name}: expected a Prescription, got {type(value).__name__}")
    return value


def check_clinic_form(name: str, rx: Prescription, form: str) -> None:
    """Refuse a cylinder typed in the other form than the clinic's: a sign error is likely."""
    if form == "minus" and rx.cylinder_d > 0:
        raise InvalidInputError(
            f"{name}: cylinder {rx.cylinder_d:+.2f} D is in plus-cylinder form but this visit writes minus "
            f"cylinders; enter {rx.to_minus_cylinder().format()} (the same lens) or change the setting"
        )
    if form == "plus" and rx.cylinder_d < 0:
        raise InvalidInputError(
            f"{name}: cylinder {rx.cylinder_d:+.2f} D is in minus-cylinder form but this visit writes plus "
            f"cylinders; enter {rx.to_plus_cylinder().format()} (the same lens) or change the setting"
        )


def check_signed_prescription(name: str, value: Any, form: str) -> Prescription:
    """The checks of a prescription a clinician signs off, the same as a session's lenses: a
    :class:`Prescription` in the range a refraction covers
    (:func:`~visiontune.refraction.start.check_in_range`: ``M`` in [-12, +8] D, ``|C|`` <= 6 D),
    sphere and cylinder in :data:`SIGNOFF_STEP_D` steps, the axis a whole degree (1-180), the
    cylinder in the clinic's ``form`` (:func:`check_clinic_form`). InvalidInputError naming
    what is wrong."""
    rx = check_prescription(name, value)
    for part, power in (("sphere", rx.sphere_d), ("cylinder", rx.cylinder_d)):
        if abs(power / SIGNOFF_STEP_D - round(power / SIGNOFF_STEP_D)) > 1e-9:
            raise InvalidInputError(f"{name}: {part} {power:+g} D is not a trial lens (steps of {SIGNOFF_STEP_D} D)")
    if rx.cylinder_d != 0.0 and rx.axis_deg != round(rx.axis_deg):
        raise InvalidInputError(f"{name}: axis {rx.axis_deg:g} is not a whole degree (1 to 180)")
    check_in_range(rx, name)
    check_clinic_form(name, rx, form)
    return rx


def rx_json(rx: Prescription | None) -> str | None:
    if rx is None:
        return None
    return json.dumps({"sphere_d": rx.sphere_d, "cylinder_d": rx.cylinder_d, "axis_deg": rx.axis_deg}, sort_keys=True)


# --- reading rows ------------------------------------------------------------------------
class _Reader:
    """Parses one stored row; the first problem raises StoreError naming ``where``."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, column: str, problem: str) -> StoreError:
        return StoreError(f"{self.where} is damaged: {column}: {problem}")

    def text(self, column: str, value: Any, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if isinstance(value, DamagedText):
            raise self.fail(column, "not valid UTF-8 text")
        if not isinstance(value, str):
            raise self.fail(column, f"expected text, found {type(value).__name__}")
        return value

    def time(self, column: str, value: Any) -> datetime:
        text = self.text(column, value)
        try:
            ts = datetime.fromisoformat(text)
        except ValueError:
            raise self.fail(column, f"{text[:40]!r} is not an ISO 8601 timestamp") from None
        if ts.tzinfo is None:
            raise self.fail(column, f"{text[:40]!r} has no time zone")
        return ts

    def json(self, column: str, value: Any, optional: bool = True) -> Any:
        text = self.text(column, value, optional=optional)
        if text is None:
            return None
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise self.fail(column, f"not valid JSON ({exc})") from None

    def rx(self, column: str, value: Any) -> Prescription | None:
        if value is None:
            return None
        try:
            return Prescription(value["sphere_d"], value["cylinder_d"], value["axis_deg"])
        except (KeyError, TypeError, InvalidInputError) as exc:
            raise self.fail(column, f"not a prescription ({exc})") from None

    def number(self, column: str, value: Any) -> float:
        return check_number(f"{self.where} is damaged: {column}", value, error=StoreError)


# --- values ------------------------------------------------------------------------------
@dataclass(frozen=True)
class VisitInfo:
    """One row of ``visits``: the patient (pseudonymous id, optional age in whole years and
    habitual prescription per eye), the clinic's ``cylinder_form``, the ``clinician`` who
    refracted (optional), whether a simulated patient answered, and when it began."""

    visit_id: int
    patient_id: str
    age_years: int | None
    habitual_od: Prescription | None
    habitual_os: Prescription | None
    cylinder_form: str
    clinician: str | None
    simulated: bool
    software_version: str
    created_at: datetime

    def habitual(self, eye: str) -> Prescription | None:
        return {"OD": self.habitual_od, "OS": self.habitual_os}[eye]

    @classmethod
    def from_row(cls, r) -> VisitInfo:
        read = _Reader(f"visit {r[0]}")
        if r[7] not in (0, 1):
            raise read.fail("simulated", f"expected 0 or 1, found {str(r[7])[:40]!r}")
        if r[5] not in CYLINDER_FORMS:
            raise read.fail("cylinder_form", f"expected minus or plus, found {str(r[5])[:40]!r}")
        return cls(
            visit_id=r[0], patient_id=read.text("patient_id", r[1]), age_years=r[2],
            habitual_od=read.rx("habitual_od_json", read.json("habitual_od_json", r[3])),
            habitual_os=read.rx("habitual_os_json", read.json("habitual_os_json", r[4])),
            cylinder_form=r[5], clinician=read.text("clinician", r[6], optional=True), simulated=r[7] == 1,
            software_version=read.text("software_version", r[8]), created_at=read.time("created_at", r[9]),
        )  # fmt: skip


@dataclass(frozen=True)
class VisitEye:
    """What happened to one eye of a visit: its refraction ``session_id``, or ``skip_reason``."""

    visit_id: int
    eye: str
    session_id: int | None
    skip_reason: str | None
    at: datetime

    @property
    def skipped(self) -> bool:
        return self.skip_reason is not None

    @classmethod
    def from_row(cls, r) -> VisitEye:
        read = _Reader(f"visit {r[0]} eye {r[1]}")
        return cls(r[0], read.text("eye", r[1]), r[2], read.text("skip_reason", r[3], optional=True),
                   read.time("at", r[4]))  # fmt: skip


@dataclass(frozen=True)
class BalanceAnswer:
    """Balance question ``index`` (from 0): the lenses before each eye (end point + fog +
    adjustments), the plus over each eye's end point (D), and which eye looked clearer."""

    visit_id: int
    index: int
    lens_od: Prescription
    lens_os: Prescription
    plus_od_d: float
    plus_os_d: float
    clearer: str
    at: datetime

    @classmethod
    def from_row(cls, r) -> BalanceAnswer:
        read = _Reader(f"visit {r[0]} balance answer {r[1]}")
        try:
            od, os_ = Prescription(r[2], r[3], r[4]), Prescription(r[5], r[6], r[7])
        except InvalidInputError as exc:
            raise read.fail("lens", str(exc)) from None
        return cls(r[0], r[1], od, os_, read.number("plus_od_d", r[8]), read.number("plus_os_d", r[9]),
                   read.text("clearer", r[10]), read.time("at", r[11]))  # fmt: skip


@dataclass(frozen=True)
class BalanceOutcome:
    """The balance's ``outcome`` (:data:`BALANCE_OUTCOMES`), its ``method``, the plus change
    applied to each eye's sphere (D; 0 unless balanced) and, when not done, the ``reason``."""

    visit_id: int
    outcome: str
    method: str
    plus_change_od_d: float
    plus_change_os_d: float
    reason: str | None
    at: datetime

    @property
    def done(self) -> bool:
        return self.outcome != "not done"

    @classmethod
    def from_row(cls, r) -> BalanceOutcome:
        read = _Reader(f"visit {r[0]} balance")
        return cls(r[0], read.text("outcome", r[1]), read.text("method", r[2]), read.number("plus_change_od_d", r[3]),
                   read.number("plus_change_os_d", r[4]), read.text("reason", r[5], optional=True),
                   read.time("at", r[6]))  # fmt: skip


@dataclass(frozen=True)
class VisitSignOff:
    """A prescription of one eye edited and signed by the clinician ``by`` at ``at``; kept
    beside the found one (the latest sign-off of an eye is the one in force)."""

    signoff_id: int
    visit_id: int
    eye: str
    prescription: Prescription
    by: str
    at: datetime

    @classmethod
    def from_row(cls, r) -> VisitSignOff:
        read = _Reader(f"visit {r[1]} sign-off {r[0]}")
        try:
            rx = Prescription(r[3], r[4], r[5])
        except InvalidInputError as exc:
            raise read.fail("prescription", str(exc)) from None
        return cls(r[0], r[1], read.text("eye", r[2]), rx, read.text("by_name", r[6]), read.time("at", r[7]))


@dataclass(frozen=True)
class VisitAcuity:
    """An acuity (logMAR) of ``eye`` (``OD``, ``OS`` or ``OU`` for both eyes open) read through
    ``lenses`` (``{"OD": rx, "OS": rx}``, the eyes that were open), ``method`` in words and
    ``detail`` (JSON-able, e.g. letters read per line)."""

    acuity_id: int
    visit_id: int
    eye: str
    va_logmar: float
    lenses: dict[str, Prescription]
    method: str
    detail: Any
    at: datetime

    @classmethod
    def from_row(cls, r) -> VisitAcuity:
        read = _Reader(f"visit {r[1]} acuity {r[0]}")
        lenses = read.json("lenses_json", r[4], optional=False)
        if not isinstance(lenses, dict) or not set(lenses) <= set(VISIT_EYES):
            raise read.fail("lenses_json", "expected {\"OD\": rx, \"OS\": rx}")
        return cls(r[0], r[1], read.text("eye", r[2]), read.number("va_logmar", r[3]),
                   {e: read.rx("lenses_json", v) for e, v in lenses.items()}, read.text("method", r[5]),
                   read.json("detail_json", r[6]), read.time("at", r[7]))  # fmt: skip
