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
from datetime import UTC, datetime
from typing import Any

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.refraction.start import check_in_range
from visiontune.session.records import DamagedText

__all__ = [
    "BALANCE_ANSWERS",
    "BALANCE_OUTCOMES",
    "HABITUAL_SOURCES",
    "PD_RANGE_MM",
    "START_SOURCES",
    "VISIT_EYES",
    "BalanceAnswer",
    "BalanceOutcome",
    "VisitAcuity",
    "VisitEye",
    "VisitInfo",
    "VisitInputs",
    "VisitSignOff",
    "check_clinic_form",
    "check_name",
    "check_pd",
    "parse_pd",
    "check_prescription",
    "check_signed_prescription",
    "record_visit_inputs",
    "visit_inputs",
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
            visit_id=r[0],
            patient_id=read.text("patient_id", r[1]),
            age_years=r[2],
            habitual_od=read.rx("habitual_od_json", read.json("habitual_od_json", r[3])),
            habitual_os=read.rx("habitual_os_json", read.json("habitual_os_json", r[4])),
            cylinder_form=r[5],
            clinician=read.text("clinician", r[6], optional=True),
            simulated=r[7] == 1,
            software_version=read.text("software_version", r[8]),
            created_at=read.time("created_at", r[9]),
        )


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
        return cls(
            r[0], read.text("eye", r[1]), r[2], read.text("skip_reason", r[3], optional=True), read.time("at", r[4])
        )


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
        return cls(
            r[0],
            r[1],
            od,
            os_,
            read.number("plus_od_d", r[8]),
            read.number("plus_os_d", r[9]),
            read.text("clearer", r[10]),
            read.time("at", r[11]),
        )


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
        return cls(
            r[0],
            read.text("outcome", r[1]),
            read.text("method", r[2]),
            read.number("plus_change_od_d", r[3]),
            read.number("plus_change_os_d", r[4]),
            read.text("reason", r[5], optional=True),
            read.time("at", r[6]),
        )


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
            raise read.fail("lenses_json", 'expected {"OD": rx, "OS": rx}')
        return cls(
            r[0],
            r[1],
            read.text("eye", r[2]),
            read.number("va_logmar", r[3]),
            {e: read.rx("lenses_json", v) for e, v in lenses.items()},
            read.text("method", r[5]),
            read.json("detail_json", r[6]),
            read.time("at", r[7]),
        )


# --- a visit's inputs (the visit_inputs table, visiontune.session.visit_inputs_schema) ----------
#: Where a starting prescription came from: measured by an autorefractor, by retinoscopy, the
#: habitual spectacles, typed by hand with no stated origin, or no start at all.
START_SOURCES = ("autorefraction", "retinoscopy", "habitual spectacles", "typed", "none")
#: Where the habitual prescription came from: the spectacles read on a lensmeter, their written
#: prescription, or typed by hand.
HABITUAL_SOURCES = ("lensmeter", "spectacle prescription", "typed")
#: The :class:`~visiontune.refraction.start.StartingPoint` source named as a record names it.
START_SOURCE_OF_STARTING_POINT = {
    "autorefraction": "autorefraction",
    "retinoscopy": "retinoscopy",
    "spectacles": "habitual spectacles",
    "none": "none",
}
#: Plausible binocular pupillary distance (mm) and monocular (centre of the bridge to one pupil).
#: Dodgson (2004, "Variation and extrema of human interpupillary distance", Proc. SPIE 5291:36-46,
#: abstract and section 4): mean adult PD about 63 mm, most adults 50-75 mm, 45-80 mm (almost) all
#: adults, and children down to five years old from about 40 mm. The monocular range is half of it,
#: with room for a face's asymmetry.
PD_RANGE_MM = (40.0, 80.0)
MONOCULAR_PD_RANGE_MM = (20.0, 40.0)


def check_pd(
    pd_mm: Any = None, pd_od_mm: Any = None, pd_os_mm: Any = None, where: str = "pupillary distance"
) -> tuple[float | None, float | None, float | None]:
    """``(pd_mm, pd_od_mm, pd_os_mm)`` checked: the binocular distance in :data:`PD_RANGE_MM`,
    the monocular ones both or neither, each in :data:`MONOCULAR_PD_RANGE_MM`; given both ways,
    the binocular must be their sum (within 0.1 mm); given monocular only, the binocular is their
    sum. InvalidInputError naming ``where`` and the value otherwise."""
    if (pd_od_mm is None) != (pd_os_mm is None):
        raise InvalidInputError(
            f"{where}: give both monocular distances (right and left) or neither, got OD {pd_od_mm!r}, OS {pd_os_mm!r}"
        )
    lo, hi = MONOCULAR_PD_RANGE_MM
    mono = []
    for eye, value in (("OD", pd_od_mm), ("OS", pd_os_mm)):
        if value is not None:
            value = check_number(f"{where} {eye}", value)
            if not lo <= value <= hi:
                raise InvalidInputError(
                    f"{where} {eye}: {value:g} mm is not a monocular pupillary distance "
                    f"(expected {lo:g} to {hi:g} mm, from the bridge of the nose to the "
                    "pupil)"
                )
            mono.append(float(value))
    if pd_mm is not None:
        pd_mm = float(check_number(where, pd_mm))
        lo, hi = PD_RANGE_MM
        if not lo <= pd_mm <= hi:
            raise InvalidInputError(
                f"{where}: {pd_mm:g} mm is not a pupillary distance (expected {lo:g} to {hi:g} mm "
                "between the pupils; a monocular one is written OD/OS, e.g. "
                "31.5/31.5)"
            )
        if mono and abs(pd_mm - sum(mono)) > 0.1:
            raise InvalidInputError(
                f"{where}: {pd_mm:g} mm is not the sum of the monocular distances {mono[0]:g} + {mono[1]:g} mm"
            )
    elif mono:
        pd_mm = round(sum(mono), 2)
        lo, hi = PD_RANGE_MM
        if not lo <= pd_mm <= hi:
            raise InvalidInputError(
                f"{where}: {mono[0]:g}/{mono[1]:g} mm add up to {pd_mm:g} mm, outside {lo:g} to {hi:g} mm"
            )
    return pd_mm, (mono[0] if mono else None), (mono[1] if mono else None)


def parse_pd(text: Any, where: str = "--pd") -> tuple[float, float | None, float | None]:
    """A typed pupillary distance: ``"63"`` (binocular, mm) or ``"31.5/31.5"`` (right/left
    monocular, mm); returns ``(pd_mm, pd_od_mm, pd_os_mm)`` checked by :func:`check_pd`."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(
            f"{where}: expected a distance in mm such as 63, or OD/OS such as 31.5/31.5, got {text!r}"
        )
    parts = [p.strip().removesuffix("mm").strip() for p in text.split("/")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise InvalidInputError(
            f"{where}: {text.strip()[:40]!r} is not a distance in mm such as 63, or OD/OS such as 31.5/31.5"
        ) from None
    if len(values) == 1:
        pd_mm, od, os_ = check_pd(values[0], where=where)
        return pd_mm, od, os_
    if len(values) == 2:
        pd_mm, od, os_ = check_pd(None, values[0], values[1], where=where)
        return pd_mm, od, os_
    raise InvalidInputError(f"{where}: {text.strip()[:40]!r} has {len(values)} parts; expected 63 or 31.5/31.5")


@dataclass(frozen=True)
class VisitInputs:
    """A visit's inputs in force (field by field the latest entry that gave one; ``None``: never
    given): pupillary distances (mm), the source of each eye's starting prescription
    (:data:`START_SOURCES`) and of the habitual one (:data:`HABITUAL_SOURCES`), the instrument
    file each was read from (``None``: typed), and the ``examiner``."""

    visit_id: int
    pd_mm: float | None = None
    pd_od_mm: float | None = None
    pd_os_mm: float | None = None
    pd_file: str | None = None
    start_source_od: str | None = None
    start_source_os: str | None = None
    start_file_od: str | None = None
    start_file_os: str | None = None
    habitual_source: str | None = None
    habitual_file: str | None = None
    examiner: str | None = None

    def start_source(self, eye: str) -> str | None:
        return {"OD": self.start_source_od, "OS": self.start_source_os}[eye]

    def start_file(self, eye: str) -> str | None:
        return {"OD": self.start_file_od, "OS": self.start_file_os}[eye]


_INPUT_COLUMNS = (
    "id, visit_id, pd_mm, pd_od_mm, pd_os_mm, start_source_od, start_source_os, habitual_source, "
    "from_file, examiner, at"
)


def record_visit_inputs(
    store,
    visit_id: int,
    *,
    pd_mm: float | None = None,
    pd_od_mm: float | None = None,
    pd_os_mm: float | None = None,
    start_source_od: str | None = None,
    start_source_os: str | None = None,
    habitual_source: str | None = None,
    from_file: str | None = None,
    examiner: str | None = None,
) -> VisitInputs:
    """Append one entry of the visit's inputs to the trial log (one committed write; durable when
    this returns) and return the inputs now in force (:func:`visit_inputs`).

    ``pd_mm``: binocular pupillary distance (mm, :data:`PD_RANGE_MM`); ``pd_od_mm`` / ``pd_os_mm``:
    monocular ones (both or neither, :data:`MONOCULAR_PD_RANGE_MM`; the binocular is their sum);
    ``start_source_od`` / ``start_source_os``: :data:`START_SOURCES`; ``habitual_source``:
    :data:`HABITUAL_SOURCES`; ``from_file``: the instrument file these values were read from
    (``None`` when typed; a name, not a path the record would expose); ``examiner``: who ran the
    refraction. At least one value besides ``from_file``. InvalidInputError naming the argument,
    nothing written; SessionError if there is no such visit."""
    visit = store.get_visit(visit_id)
    pd = check_pd(pd_mm, pd_od_mm, pd_os_mm, where="pd_mm" if pd_od_mm is None else "pd_od_mm/pd_os_mm")
    for name, value, allowed in (
        ("start_source_od", start_source_od, START_SOURCES),
        ("start_source_os", start_source_os, START_SOURCES),
        ("habitual_source", habitual_source, HABITUAL_SOURCES),
    ):
        if value is not None and value not in allowed:
            raise InvalidInputError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
    examiner = check_name("examiner", examiner, optional=True)
    from_file = check_name("from_file", from_file, optional=True)
    if pd[0] is None and examiner is None and not any((start_source_od, start_source_os, habitual_source)):
        raise InvalidInputError("visit inputs: nothing to record (give a pupillary distance, a source or the examiner)")
    at = store.now().astimezone(UTC).isoformat()
    with store._write() as conn:  # the store's one committed transaction
        conn.execute(
            "INSERT INTO visit_inputs (visit_id, pd_mm, pd_od_mm, pd_os_mm, start_source_od, start_source_os, "
            "habitual_source, from_file, examiner, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (visit.visit_id, *pd, start_source_od, start_source_os, habitual_source, from_file, examiner, at),
        )
    return visit_inputs(store, visit.visit_id)


def visit_input_rows(store, visit_id: int) -> list[dict]:
    """Every entry of the visit's inputs in order, as dicts of the columns (``at`` parsed);
    StoreError naming the visit and column for a damaged row."""
    vid = store.get_visit(visit_id).visit_id
    rows = store.conn.execute(
        f"SELECT {_INPUT_COLUMNS} FROM visit_inputs WHERE visit_id = ? ORDER BY id", (vid,)
    ).fetchall()
    out = []
    for r in rows:
        read = _Reader(f"visit {vid} inputs {r[0]}")
        row = {
            "pd_mm": None if r[2] is None else read.number("pd_mm", r[2]),
            "pd_od_mm": None if r[3] is None else read.number("pd_od_mm", r[3]),
            "pd_os_mm": None if r[4] is None else read.number("pd_os_mm", r[4]),
        }
        for i, column in (
            (5, "start_source_od"),
            (6, "start_source_os"),
            (7, "habitual_source"),
            (8, "from_file"),
            (9, "examiner"),
        ):
            row[column] = read.text(column, r[i], optional=True)
        row["at"] = read.time("at", r[10])
        out.append(row)
    return out


def visit_inputs(store, visit_id: int) -> VisitInputs:
    """The visit's inputs in force: field by field the latest entry's non-``None`` value (the
    three pupillary distances as one group), with the file it came from."""
    vid = store.get_visit(visit_id).visit_id
    values: dict[str, Any] = {}
    for row in visit_input_rows(store, vid):
        if row["pd_mm"] is not None:
            values.update(
                pd_mm=row["pd_mm"], pd_od_mm=row["pd_od_mm"], pd_os_mm=row["pd_os_mm"], pd_file=row["from_file"]
            )
        for eye in ("od", "os"):
            if row[f"start_source_{eye}"] is not None:
                values[f"start_source_{eye}"] = row[f"start_source_{eye}"]
                values[f"start_file_{eye}"] = row["from_file"]
        if row["habitual_source"] is not None:
            values.update(habitual_source=row["habitual_source"], habitual_file=row["from_file"])
        if row["examiner"] is not None:
            values["examiner"] = row["examiner"]
    return VisitInputs(vid, **values)
