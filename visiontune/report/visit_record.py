"""The record of a visit: both eyes, binocular balance, who signed what (independent of the trial log).

A refraction in a clinic is a visit: the right eye (OD), the left eye (OS), then a binocular
balance. :class:`VisitRecord` holds what the visit's records (PDF, FHIR, DICOM, CSV/JSON)
file, as plain frozen values, so every export reads one validated object and none of them
touches the trial log. The store builds it from the visit's sessions; tests build it directly.

Conventions:

* Powers in diopters (D), axes in degrees in ``(0, 180]`` (:class:`~visiontune.optics.Prescription`),
  acuity in logMAR, times timezone-aware.
* The *found* prescription of an eye is what the refraction estimated (the Rx to file, e.g. the
  0.25 D rounded estimate); it is kept whatever the clinician does. A clinician who edits it
  signs off a :class:`SignOff` kept **beside** it (:attr:`EyeRecord.final_prescription` is the
  signed one when there is one).
* The clinic writes prescriptions in one cylinder form (``cylinder_form``: ``"minus"`` or
  ``"plus"``); records *show* every prescription in that form (:meth:`VisitRecord.shown`,
  via ``Prescription.to_minus_cylinder()`` / ``to_plus_cylinder()``). A found or habitual
  prescription may be stored in either form (the engine's or the old glasses'); a prescription
  the clinician signs off must be typed in the clinic's form, otherwise a sign error is likely
  and the record is refused.
* Credible regions are the 95% central intervals' half-widths (``±``) on sphere, cylinder and
  axis, and on the Thibos power vector components ``M``, ``J0``, ``J45``
  (``Prescription.power_vector()``).
* ``simulated``: answers came from a simulated patient; every record then carries the SIMULATED
  marks, and records of real patients never do.

:meth:`VisitRecord.to_dict` / :meth:`VisitRecord.from_dict` give a JSON-safe dict (schema
``visiontune.visit-record`` version 5; version 1, whose eyes have no ``comparisons_used`` nor
``sliders_used``, version 2, without ``near``, version 3, without the visit's inputs, and version 4,
whose eyes have no ``lines_used``, are read too); errors name the field
(``visit.OD.signed_off.prescription``...).

* ``near``: the near (reading) addition filed per eye (:class:`NearAddition`: the add over the
  distance prescription, its 95% credible region, the tentative add by age, the range of clear
  vision through it, the near acuity and the near distance), empty when no near step was done.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from visiontune._validate import check_int, check_number
from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.session.trial_text import answer_kinds_text
from visiontune.session.visit_records import HABITUAL_SOURCES, START_SOURCES, check_clinic_form, check_pd

__all__ = [
    "CYLINDER_FORMS",
    "EYES",
    "RECORD_SCHEMA",
    "RECORD_SCHEMA_VERSION",
    "STOPPED_BY",
    "BinocularBalance",
    "EyeRecord",
    "NearAddition",
    "SignOff",
    "VisitRecord",
    "time_text",
]

RECORD_SCHEMA = "visiontune.visit-record"
RECORD_SCHEMA_VERSION = 5
#: The first record schema version whose eyes count their chart lines (``lines_used``).
LINES_SINCE_VERSION = 5
#: The first record schema version with the near additions (``near``).
NEAR_SINCE_VERSION = 3
#: The first record schema version with the visit's inputs (pupillary distance, examiner, starting
#: prescriptions and the sources of the starting and habitual ones): :data:`_INPUT_KEYS`.
INPUTS_SINCE_VERSION = 4
_INPUT_KEYS = (
    "pd_mm",
    "pd_od_mm",
    "pd_os_mm",
    "examiner",
    "start_od",
    "start_os",
    "start_source_od",
    "start_source_os",
    "habitual_source",
)
#: The keys an eye has only from schema version 2 on.
_EYE_KEYS_SINCE_2 = ("comparisons_used", "sliders_used")
#: The counts of an eye's answers by kind besides letters (``lines_used`` from schema version 5 on).
_EYE_COUNT_KEYS = (*_EYE_KEYS_SINCE_2, "lines_used")
EYES = ("OD", "OS")
EYE_NAMES = {"OD": "right eye (OD)", "OS": "left eye (OS)"}
CYLINDER_FORMS = ("minus", "plus")
STATUSES = ("measured", "skipped")
STOPPED_BY = ("budget", "precision", "information", "clinician")
_HALF_WIDTHS = ("sphere_pm_d", "cylinder_pm_d", "axis_pm_deg", "m_pm_d", "j0_pm_d", "j45_pm_d")
#: A measured eye's results (a skipped eye has none), besides the counts of :data:`_EYE_COUNT_KEYS`.
_EYE_RESULT_KEYS = (
    "prescription",
    "signed_off",
    *_HALF_WIDTHS,
    "predicted_va_logmar",
    "measured_va_logmar",
    "answers_used",
    "stopped_by",
    "session_id",
)


def time_text(value: datetime) -> str:
    """``"2026-11-28 10:42 +01:00"``: a record's date and time as it was given (the records show
    local time; :func:`~visiontune.report.visit_export.load_visit` gives them in the clinic's zone)
    with its offset from UTC."""
    offset = value.strftime("%z") or "+0000"
    return f"{value:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:5]}"


# --- field checks ------------------------------------------------------------------------
def _optional_number(where: str, value: Any, **bounds) -> float | None:
    return None if value is None else check_number(where, value, **bounds)


def _text(where: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{where}: expected a non-empty text, got {value!r}")
    return value.strip()


def _time(where: str, value: Any) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInputError(f"{where}: expected an ISO 8601 date and time, got {value!r}") from None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{where}: expected a date and time, got {type(value).__name__}")
    if value.tzinfo is None:
        raise InvalidInputError(f"{where}: expected a time with a time zone (e.g. UTC), got {value.isoformat()}")
    return value


def _prescription(where: str, value: Any) -> Prescription:
    """A Prescription from a Prescription or a ``{"sphere_d", "cylinder_d", "axis_deg"}`` dict;
    errors name the field (an axis outside 0-180 is refused here)."""
    if isinstance(value, Prescription):
        return value
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}: expected a prescription (sphere, cylinder, axis), got {value!r}")
    missing = [k for k in ("sphere_d", "cylinder_d", "axis_deg") if k not in value]
    if missing:
        raise InvalidInputError(f"{where}: missing {', '.join(missing)}")
    sphere = check_number(f"{where}.sphere_d", value["sphere_d"])
    cylinder = check_number(f"{where}.cylinder_d", value["cylinder_d"])
    axis = check_number(f"{where}.axis_deg", value["axis_deg"])
    if not 0.0 <= axis <= 180.0:
        raise InvalidInputError(f"{where}.axis_deg: expected degrees in [0, 180], got {axis:g}")
    return Prescription(sphere, cylinder, axis)


def _rx_dict(p: Prescription | None) -> dict[str, float] | None:
    return None if p is None else {"sphere_d": p.sphere_d, "cylinder_d": p.cylinder_d, "axis_deg": p.axis_deg}


def _keys(
    where: str, d: Any, allowed: tuple[str, ...], required: tuple[str, ...], version: int = RECORD_SCHEMA_VERSION
) -> dict:
    if not isinstance(d, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {type(d).__name__}")
    missing = [k for k in required if k not in d]
    if missing:
        raise InvalidInputError(f"{where}: missing key(s) {', '.join(missing)}")
    extra = sorted(set(d) - set(allowed))
    if extra:
        raise InvalidInputError(f"{where}: unknown key(s) {', '.join(extra)} ({RECORD_SCHEMA} v{version})")
    return d


# --- values ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignOff:
    """A prescription the clinician edited and signed: the lens, who (``by``) and when (``at``, aware)."""

    prescription: Prescription
    by: str
    at: datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "prescription", _prescription("signed_off.prescription", self.prescription))
        object.__setattr__(self, "by", _text("signed_off.by", self.by))
        object.__setattr__(self, "at", _time("signed_off.at", self.at))

    def to_dict(self) -> dict[str, Any]:
        return {"prescription": _rx_dict(self.prescription), "by": self.by, "at": self.at.isoformat()}


@dataclass(frozen=True)
class BinocularBalance:
    """The binocular balance done after both eyes: ``method`` (name of the clinical method, e.g.
    ``"alternate occlusion, equal-plus comparison"``) and the plus change applied to each eye's
    found sphere (D, positive = more plus, 0 when the balance left the eye unchanged)."""

    method: str
    plus_change_od_d: float = 0.0
    plus_change_os_d: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", _text("balance.method", self.method))
        for name in ("plus_change_od_d", "plus_change_os_d"):
            object.__setattr__(self, name, check_number(f"balance.{name}", getattr(self, name), -4, 4))

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "plus_change_od_d": self.plus_change_od_d,
            "plus_change_os_d": self.plus_change_os_d,
        }


@dataclass(frozen=True)
class NearAddition:
    """The near (reading) addition of one eye: ``add_d`` (D, >= 0, over the distance prescription),
    its 95% credible region ``lower_d``-``upper_d`` (D), ``tentative_add_d`` (the add by age, D),
    the range of clear vision through it, ``near_point_cm`` to ``far_point_cm`` (cm; ``None``:
    infinite far point, or no near point), ``near_va_logmar`` (near acuity through the add),
    ``distance_cm`` (the near chart's distance) and ``method``."""

    eye: str
    add_d: float
    lower_d: float
    upper_d: float
    tentative_add_d: float
    near_va_logmar: float
    distance_cm: float
    method: str
    near_point_cm: float | None = None
    far_point_cm: float | None = None

    def __post_init__(self) -> None:
        if self.eye not in EYES:
            raise InvalidInputError(f"near.eye: expected 'OD' or 'OS', got {self.eye!r}")
        w = f"visit.near.{self.eye}"
        for name in ("add_d", "lower_d", "upper_d", "tentative_add_d"):
            object.__setattr__(self, name, check_number(f"{w}.{name}", getattr(self, name), 0, 4))
        if not self.lower_d <= self.add_d <= self.upper_d:
            raise InvalidInputError(
                f"{w}: the credible region {self.lower_d:+.2f} to {self.upper_d:+.2f} D does not "
                f"hold the add {self.add_d:+.2f} D"
            )
        object.__setattr__(self, "near_va_logmar", check_number(f"{w}.near_va_logmar", self.near_va_logmar, -1, 3))
        object.__setattr__(self, "distance_cm", check_number(f"{w}.distance_cm", self.distance_cm, 20, 100))
        object.__setattr__(self, "method", _text(f"{w}.method", self.method))
        for name in ("near_point_cm", "far_point_cm"):
            v = _optional_number(f"{w}.{name}", getattr(self, name), lo=0)
            if v is not None and v <= 0:
                raise InvalidInputError(f"{w}.{name}: expected a distance > 0 cm (or none), got {v:g}")
            object.__setattr__(self, name, v)

    @property
    def range_text(self) -> str:
        """``"33.3 cm to 50 cm"``, the far point ``infinity`` when there is none."""
        near = "-" if self.near_point_cm is None else f"{self.near_point_cm:g} cm"
        far = "infinity" if self.far_point_cm is None else f"{self.far_point_cm:g} cm"
        return f"{near} to {far}"

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _NEAR_KEYS}

    @classmethod
    def from_dict(cls, d: Any, where: str = "visit.near") -> NearAddition:
        d = _keys(where, d, _NEAR_KEYS, _NEAR_KEYS[:8])
        return cls(**d)


_NEAR_KEYS = (
    "eye",
    "add_d",
    "lower_d",
    "upper_d",
    "tentative_add_d",
    "near_va_logmar",
    "distance_cm",
    "method",
    "near_point_cm",
    "far_point_cm",
)


@dataclass(frozen=True)
class EyeRecord:
    """One eye of a visit.

    ``eye``: ``"OD"`` or ``"OS"``. ``status``: ``"measured"`` (a finished refraction) or
    ``"skipped"`` (``skip_reason`` says why: prosthetic eye, amblyopia...; nothing else is set).

    A measured eye has: ``prescription`` (found, either cylinder form), the 95% credible
    half-widths ``sphere_pm_d``, ``cylinder_pm_d`` (D), ``axis_pm_deg`` (degrees), ``m_pm_d``,
    ``j0_pm_d``, ``j45_pm_d`` (D; all >= 0), ``predicted_va_logmar`` (acuity predicted through
    the found prescription), ``answers_used``, ``stopped_by`` (budget / precision / information / clinician)
    and ``session_id``. Optional: ``measured_va_logmar`` (acuity read through the final
    prescription), ``signed_off`` (an edited prescription, kept beside the found one),
    ``comparisons_used`` and ``sliders_used`` (how many of the answers were comparisons of two
    lenses and slider answers; ``None``: not recorded, a record of schema version 1) and
    ``lines_used`` (how many were chart lines; ``None``: not recorded, before schema version 5).
    """

    eye: str
    status: str = "measured"
    skip_reason: str | None = None
    prescription: Prescription | None = None
    signed_off: SignOff | None = None
    sphere_pm_d: float | None = None
    cylinder_pm_d: float | None = None
    axis_pm_deg: float | None = None
    m_pm_d: float | None = None
    j0_pm_d: float | None = None
    j45_pm_d: float | None = None
    predicted_va_logmar: float | None = None
    measured_va_logmar: float | None = None
    answers_used: int | None = None
    stopped_by: str | None = None
    session_id: int | None = None
    comparisons_used: int | None = None
    sliders_used: int | None = None
    lines_used: int | None = None

    def __post_init__(self) -> None:
        if self.eye not in EYES:
            raise InvalidInputError(f"eye: expected 'OD' or 'OS', got {self.eye!r}")
        w = f"visit.{self.eye}"
        if self.status not in STATUSES:
            raise InvalidInputError(f"{w}.status: expected 'measured' or 'skipped', got {self.status!r}")
        if self.status == "skipped":
            object.__setattr__(self, "skip_reason", _text(f"{w}.skip_reason", self.skip_reason))
            set_fields = [n for n in (*_EYE_RESULT_KEYS, *_EYE_COUNT_KEYS) if getattr(self, n) is not None]
            if set_fields:
                raise InvalidInputError(f"{w}: a skipped eye has no results, got {', '.join(set_fields)}")
            return
        if self.skip_reason is not None:
            raise InvalidInputError(f"{w}.skip_reason: only a skipped eye has a reason, got {self.skip_reason!r}")
        if self.prescription is None:
            raise InvalidInputError(f"{w}.prescription: a measured eye needs its found prescription")
        object.__setattr__(self, "prescription", _prescription(f"{w}.prescription", self.prescription))
        if self.signed_off is not None and not isinstance(self.signed_off, SignOff):
            raise InvalidInputError(f"{w}.signed_off: expected a SignOff, got {type(self.signed_off).__name__}")
        for name in _HALF_WIDTHS:
            value = getattr(self, name)
            if value is None:
                raise InvalidInputError(f"{w}.{name}: a measured eye needs its 95% credible half-width")
            object.__setattr__(self, name, check_number(f"{w}.{name}", value, 0, 90 if name == "axis_pm_deg" else None))
        object.__setattr__(
            self, "predicted_va_logmar", check_number(f"{w}.predicted_va_logmar", self.predicted_va_logmar, -1, 3)
        )
        object.__setattr__(
            self,
            "measured_va_logmar",
            _optional_number(f"{w}.measured_va_logmar", self.measured_va_logmar, lo=-1, hi=3),
        )
        n = self.answers_used
        check_int(f"{w}.answers_used", n, lo=0)
        rest = n
        for name in _EYE_COUNT_KEYS:
            if getattr(self, name) is not None:
                rest -= check_int(f"{w}.{name}", getattr(self, name), lo=0, hi=rest)
        if self.stopped_by not in STOPPED_BY:
            raise InvalidInputError(f"{w}.stopped_by: expected one of {', '.join(STOPPED_BY)}, got {self.stopped_by!r}")
        sid = self.session_id
        check_int(f"{w}.session_id", sid, lo=0)

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def answers_text(self) -> str:
        """``"64 answers (50 letters, 10 comparisons, 4 sliders)"``: the answers used, by kind when
        not all were letters (:func:`~visiontune.session.trial_text.answer_kinds_text`; chart lines
        too)."""
        kinds = answer_kinds_text(
            self.answers_used, self.comparisons_used or 0, self.sliders_used or 0, self.lines_used or 0
        )
        return f"{self.answers_used} answers" + (f" ({kinds})" if kinds else "")

    @property
    def final_prescription(self) -> Prescription | None:
        """The signed-off prescription if the clinician edited one, else the found one."""
        return self.signed_off.prescription if self.signed_off is not None else self.prescription

    @property
    def acuity_logmar(self) -> float | None:
        """The acuity to report: measured through the final Rx if it was, else the predicted one."""
        return self.measured_va_logmar if self.measured_va_logmar is not None else self.predicted_va_logmar

    def to_dict(self) -> dict[str, Any]:
        return {
            "eye": self.eye,
            "status": self.status,
            "skip_reason": self.skip_reason,
            "prescription": _rx_dict(self.prescription),
            "signed_off": None if self.signed_off is None else self.signed_off.to_dict(),
            **{n: getattr(self, n) for n in _HALF_WIDTHS},
            "predicted_va_logmar": self.predicted_va_logmar,
            "measured_va_logmar": self.measured_va_logmar,
            "answers_used": self.answers_used,
            "stopped_by": self.stopped_by,
            "session_id": self.session_id,
            "comparisons_used": self.comparisons_used,
            "sliders_used": self.sliders_used,
            "lines_used": self.lines_used,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "visit.eye", version: int = RECORD_SCHEMA_VERSION) -> EyeRecord:
        """Read :meth:`to_dict`'s output, of record schema ``version`` (1: no ``comparisons_used``
        nor ``sliders_used``; before 5: no ``lines_used``)."""
        allowed = (
            "eye",
            "status",
            "skip_reason",
            *_EYE_RESULT_KEYS,
            *(_EYE_KEYS_SINCE_2 if version >= 2 else ()),
            *(("lines_used",) if version >= LINES_SINCE_VERSION else ()),
        )
        d = _keys(where, d, allowed, ("eye", "status"), version)
        kwargs = dict(d)
        if d.get("prescription") is not None:
            kwargs["prescription"] = _prescription(f"{where}.prescription", d["prescription"])
        if d.get("signed_off") is not None:
            s = _keys(
                f"{where}.signed_off", d["signed_off"], ("prescription", "by", "at"), ("prescription", "by", "at")
            )
            kwargs["signed_off"] = SignOff(
                _prescription(f"{where}.signed_off.prescription", s["prescription"]),
                s["by"],
                _time(f"{where}.signed_off.at", s["at"]),
            )
        return cls(**kwargs)


@dataclass(frozen=True)
class VisitRecord:
    """A visit: patient, both eyes, balance, who and when.

    ``visit_id``: the visit's id (text). ``patient_id``: pseudonymous id, may be ``None`` (then
    the DICOM export refuses: DICOM needs a Patient ID). ``age_years``: optional. ``habitual_od``
    / ``habitual_os``: the patient's current spectacles, optional. ``recorded_at``: date and time
    of the visit (aware). ``clinician``: who refracted, optional. ``cylinder_form``: the clinic's
    ``"minus"`` or ``"plus"``. ``od`` / ``os``: the two :class:`EyeRecord` s (eyes ``OD``/``OS``).
    ``balance``: optional :class:`BinocularBalance`; ``binocular_va_logmar``: optional acuity with
    both eyes open. ``simulated``: a simulated patient answered. ``software_version``: VisionTune's.
    The visit's inputs (schema v4): ``pd_mm`` (binocular pupillary distance, mm) and ``pd_od_mm`` /
    ``pd_os_mm`` (monocular, both or neither), ``examiner`` (who ran the refraction; the signing
    clinicians are the eyes' sign-offs, :attr:`signed_by`), ``start_od`` / ``start_os`` (each eye's
    starting prescription) with ``start_source_od`` / ``start_source_os`` (:data:`START_SOURCES`),
    ``habitual_source`` (:data:`HABITUAL_SOURCES`). Times are shown as given, with their offset
    (:func:`time_text`).
    """

    visit_id: str
    patient_id: str | None
    recorded_at: datetime
    od: EyeRecord
    os: EyeRecord
    software_version: str
    simulated: bool = False
    cylinder_form: str = "minus"
    clinician: str | None = None
    age_years: int | None = None
    habitual_od: Prescription | None = None
    habitual_os: Prescription | None = None
    balance: BinocularBalance | None = None
    binocular_va_logmar: float | None = None
    near: tuple[NearAddition, ...] = ()
    pd_mm: float | None = None
    pd_od_mm: float | None = None
    pd_os_mm: float | None = None
    examiner: str | None = None
    start_od: Prescription | None = None
    start_os: Prescription | None = None
    start_source_od: str | None = None
    start_source_os: str | None = None
    habitual_source: str | None = None

    def __post_init__(self) -> None:
        self._check_near()
        self._check_inputs()
        if isinstance(self.visit_id, int) and not isinstance(self.visit_id, bool):
            object.__setattr__(self, "visit_id", str(self.visit_id))
        object.__setattr__(self, "visit_id", _text("visit.visit_id", self.visit_id))
        object.__setattr__(self, "patient_id", _text("visit.patient_id", self.patient_id, optional=True))
        object.__setattr__(self, "recorded_at", _time("visit.recorded_at", self.recorded_at))
        object.__setattr__(self, "software_version", _text("visit.software_version", self.software_version))
        object.__setattr__(self, "clinician", _text("visit.clinician", self.clinician, optional=True))
        if not isinstance(self.simulated, bool):
            raise InvalidInputError(f"visit.simulated: expected true or false, got {self.simulated!r}")
        if self.cylinder_form not in CYLINDER_FORMS:
            raise InvalidInputError(f"visit.cylinder_form: expected 'minus' or 'plus', got {self.cylinder_form!r}")
        if self.age_years is not None:
            object.__setattr__(self, "age_years", check_int("visit.age_years", self.age_years, 0, 130))
        for name, eye in (("od", "OD"), ("os", "OS")):
            rec = getattr(self, name)
            if not isinstance(rec, EyeRecord):
                raise InvalidInputError(f"visit.{eye}: expected an EyeRecord, got {type(rec).__name__}")
            if rec.eye != eye:
                raise InvalidInputError(f"visit.{name}: expected the record of eye {eye}, got eye {rec.eye}")
            if rec.signed_off is not None:
                check_clinic_form(
                    f"visit.{eye}.signed_off.prescription", rec.signed_off.prescription, self.cylinder_form
                )
            habitual = getattr(self, f"habitual_{name}")
            if habitual is not None:
                object.__setattr__(self, f"habitual_{name}", _prescription(f"visit.habitual_{name}", habitual))
        if self.balance is not None:
            if not isinstance(self.balance, BinocularBalance):
                raise InvalidInputError(
                    f"visit.balance: expected a BinocularBalance, got {type(self.balance).__name__}"
                )
            for name, eye in (("od", "OD"), ("os", "OS")):
                change = getattr(self.balance, f"plus_change_{name}_d")
                if change != 0.0 and not getattr(self, name).measured:
                    raise InvalidInputError(
                        f"visit.balance.plus_change_{name}_d: {change:+.2f} D applied to eye {eye}, which was skipped"
                    )
        object.__setattr__(
            self,
            "binocular_va_logmar",
            _optional_number("visit.binocular_va_logmar", self.binocular_va_logmar, lo=-1, hi=3),
        )

    def _check_near(self) -> None:
        near = tuple(self.near or ())
        for n in near:
            if not isinstance(n, NearAddition):
                raise InvalidInputError(f"visit.near: expected NearAdditions, got {type(n).__name__}")
        eyes = [n.eye for n in near]
        if len(set(eyes)) != len(eyes):
            raise InvalidInputError(f"visit.near: one add per eye, got {', '.join(eyes)}")
        object.__setattr__(self, "near", tuple(sorted(near, key=lambda n: EYES.index(n.eye))))

    def _check_inputs(self) -> None:
        """The visit's inputs: pupillary distances (:func:`~visiontune.session.visit_records.check_pd`),
        the examiner, each starting prescription with its source (:data:`START_SOURCES`; ``none``
        or no source without one) and the habitual one's source (:data:`HABITUAL_SOURCES`)."""
        pd = check_pd(self.pd_mm, self.pd_od_mm, self.pd_os_mm, where="visit.pd_mm")
        for name, value in zip(("pd_mm", "pd_od_mm", "pd_os_mm"), pd, strict=True):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "examiner", _text("visit.examiner", self.examiner, optional=True))
        for eye in ("od", "os"):
            start, source = getattr(self, f"start_{eye}"), getattr(self, f"start_source_{eye}")
            if start is not None:
                object.__setattr__(self, f"start_{eye}", _prescription(f"visit.start_{eye}", start))
            if source is not None and source not in START_SOURCES:
                raise InvalidInputError(
                    f"visit.start_source_{eye}: expected one of {', '.join(START_SOURCES)}, got {source!r}"
                )
            if start is not None and source in (None, "none"):
                raise InvalidInputError(
                    f"visit.start_source_{eye}: a starting prescription needs its source "
                    f"({', '.join(START_SOURCES[:-1])})"
                )
        if self.habitual_source is not None:
            if self.habitual_source not in HABITUAL_SOURCES:
                raise InvalidInputError(
                    f"visit.habitual_source: expected one of {', '.join(HABITUAL_SOURCES)}, "
                    f"got {self.habitual_source!r}"
                )
            if self.habitual_od is None and self.habitual_os is None:
                raise InvalidInputError("visit.habitual_source: there is no habitual prescription")

    def start(self, eye: str) -> Prescription | None:
        """The starting prescription of ``eye`` (the refraction's start), or ``None``."""
        return {"OD": self.start_od, "OS": self.start_os}[eye]

    def start_source(self, eye: str) -> str | None:
        return {"OD": self.start_source_od, "OS": self.start_source_os}[eye]

    @property
    def signed_by(self) -> tuple[str, ...]:
        """The clinicians who signed a prescription off, in eye order, each once."""
        names = [e.signed_off.by for e in self.eyes if e.signed_off is not None]
        return tuple(dict.fromkeys(names))

    @property
    def examiner_or_clinician(self) -> str | None:
        """Who ran the refraction: the examiner entered at the visit, else the visit's clinician."""
        return self.examiner or self.clinician

    @property
    def pd_text(self) -> str | None:
        """``"63.0 mm"`` or ``"63.5 mm (OD 31.5 / OS 32.0)"``; ``None`` when not given."""
        if self.pd_mm is None:
            return None
        mono = "" if self.pd_od_mm is None else f" (OD {self.pd_od_mm:.1f} / OS {self.pd_os_mm:.1f})"
        return f"{self.pd_mm:.1f} mm{mono}"

    def near_add(self, eye: str) -> NearAddition | None:
        """The near addition filed for ``eye``, or ``None``."""
        return next((n for n in self.near if n.eye == eye), None)

    # --- reading -------------------------------------------------------------------------
    @property
    def eyes(self) -> tuple[EyeRecord, EyeRecord]:
        """``(od, os)``, right eye first (clinical order)."""
        return (self.od, self.os)

    @property
    def measured_eyes(self) -> tuple[EyeRecord, ...]:
        return tuple(e for e in self.eyes if e.measured)

    def habitual(self, eye: str) -> Prescription | None:
        return {"OD": self.habitual_od, "OS": self.habitual_os}[eye]

    def shown(self, p: Prescription | None) -> Prescription | None:
        """``p`` written in the clinic's cylinder form (the same lens, transposed if needed)."""
        if p is None:
            return None
        return p.to_minus_cylinder() if self.cylinder_form == "minus" else p.to_plus_cylinder()

    def balanced_prescription(self, eye: str) -> Prescription | None:
        """The final prescription of ``eye`` with the balance's plus change added to its sphere,
        in the clinic's form (``None`` for a skipped eye). Without a balance: the final one."""
        rec = self.od if eye == "OD" else self.os
        p = rec.final_prescription
        if p is None:
            return None
        if self.balance is not None:
            change = self.balance.plus_change_od_d if eye == "OD" else self.balance.plus_change_os_d
            p = Prescription(p.sphere_d + change, p.cylinder_d, p.axis_deg)
        return self.shown(p)

    def check_recordable(self) -> None:
        """Raise InvalidInputError unless at least one eye was measured (a record needs a result)."""
        if not self.measured_eyes:
            reasons = "; ".join(f"{e.eye} skipped ({e.skip_reason})" for e in self.eyes)
            raise InvalidInputError(
                f"visit {self.visit_id}: no eye was measured ({reasons}); there is nothing to record"
            )

    # --- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (schema ``visiontune.visit-record`` v2); :meth:`from_dict` reads it back."""
        return {
            "schema": RECORD_SCHEMA,
            "schema_version": RECORD_SCHEMA_VERSION,
            "visit_id": self.visit_id,
            "patient_id": self.patient_id,
            "age_years": self.age_years,
            "recorded_at": self.recorded_at.isoformat(),
            "clinician": self.clinician,
            "cylinder_form": self.cylinder_form,
            "simulated": self.simulated,
            "software_version": self.software_version,
            "habitual_od": _rx_dict(self.habitual_od),
            "habitual_os": _rx_dict(self.habitual_os),
            "od": self.od.to_dict(),
            "os": self.os.to_dict(),
            "balance": None if self.balance is None else self.balance.to_dict(),
            "binocular_va_logmar": self.binocular_va_logmar,
            "near": [n.to_dict() for n in self.near],
            "pd_mm": self.pd_mm,
            "pd_od_mm": self.pd_od_mm,
            "pd_os_mm": self.pd_os_mm,
            "examiner": self.examiner,
            "start_od": _rx_dict(self.start_od),
            "start_os": _rx_dict(self.start_os),
            "start_source_od": self.start_source_od,
            "start_source_os": self.start_source_os,
            "habitual_source": self.habitual_source,
        }

    @classmethod
    def from_dict(cls, d: Any) -> VisitRecord:
        """Read :meth:`to_dict`'s output (schema version 2, or 1); InvalidInputError names the
        first bad field."""
        allowed = (
            "schema",
            "schema_version",
            "visit_id",
            "patient_id",
            "age_years",
            "recorded_at",
            "clinician",
            "cylinder_form",
            "simulated",
            "software_version",
            "habitual_od",
            "habitual_os",
            "od",
            "os",
            "balance",
            "binocular_va_logmar",
            "near",
            *_INPUT_KEYS,
        )
        d = _keys(
            "visit", d, allowed, ("schema", "schema_version", "visit_id", "recorded_at", "od", "os", "software_version")
        )
        version = d["schema_version"]
        if (
            d["schema"] != RECORD_SCHEMA
            or isinstance(version, bool)
            or version not in tuple(range(1, RECORD_SCHEMA_VERSION + 1))
        ):
            raise InvalidInputError(
                f"visit.schema: expected {RECORD_SCHEMA} version 1 to {RECORD_SCHEMA_VERSION}, "
                f"got {d['schema']!r} version {d['schema_version']!r}"
            )
        if "near" in d and version < NEAR_SINCE_VERSION:
            raise InvalidInputError(f"visit: unknown key(s) near ({RECORD_SCHEMA} v{version})")
        given = [k for k in _INPUT_KEYS if k in d]
        if given and version < INPUTS_SINCE_VERSION:
            raise InvalidInputError(f"visit: unknown key(s) {', '.join(given)} ({RECORD_SCHEMA} v{version})")
        inputs = {k: d.get(k) for k in _INPUT_KEYS}
        for e in ("od", "os"):
            if inputs[f"start_{e}"] is not None:
                inputs[f"start_{e}"] = _prescription(f"visit.start_{e}", inputs[f"start_{e}"])
        near = d.get("near") or []
        if not isinstance(near, list):
            raise InvalidInputError(f"visit.near: expected a list, got {type(near).__name__}")
        near = tuple(NearAddition.from_dict(n, f"visit.near[{i}]") for i, n in enumerate(near))
        balance = d.get("balance")
        if balance is not None:
            b = _keys("visit.balance", balance, ("method", "plus_change_od_d", "plus_change_os_d"), ("method",))
            balance = BinocularBalance(**b)
        habitual = {
            f"habitual_{e}": None
            if d.get(f"habitual_{e}") is None
            else _prescription(f"visit.habitual_{e}", d[f"habitual_{e}"])
            for e in ("od", "os")
        }
        return cls(
            visit_id=d["visit_id"],
            patient_id=d.get("patient_id"),
            recorded_at=_time("visit.recorded_at", d["recorded_at"]),
            od=EyeRecord.from_dict(d["od"], "visit.OD", version),
            os=EyeRecord.from_dict(d["os"], "visit.OS", version),
            software_version=d["software_version"],
            simulated=d.get("simulated", False),
            cylinder_form=d.get("cylinder_form", "minus"),
            clinician=d.get("clinician"),
            age_years=d.get("age_years"),
            balance=balance,
            binocular_va_logmar=d.get("binocular_va_logmar"),
            near=near,
            **habitual,
            **inputs,
        )
