"""A visit in the app: its steps, its keys, its values and texts (Qt-free).

A visit (:mod:`visiontune.session.visit`) runs in the app in this order:

1. **refract**: the right eye (OD), then the left eye (OS), each an ordinary session of the
   session view (an eye may be skipped with its reason). Both sessions are created with the
   visit, each with its own starting prescription, so what was typed on the start page is in
   the trial log at once; the left eye's waits, open, until the right eye is finished.
2. **balance**: the fogged alternate-occlusion binocular balance
   (:mod:`visiontune.session.balance`), one question at a time: "which eye sees the line
   more clearly?", answered R, L or = (equal). Each answer is written to the trial log before
   the next question is computed, so a visit interrupted mid-balance resumes at its question.
   When a balance is not possible (an eye skipped, acuities too different) it is recorded as
   not done, with the reason.
3. **near addition** (a patient aged 40 or more, or when the clinician asks from the finish page;
   skippable with a reason): near letters at the clinic's near distance through candidate adds
   over each eye's final prescription (:mod:`visiontune.app.logic.visit_near_host`), answered ``+``
   (read right) or ``-`` (wrong), each answer in the trial log before the next letter; the add
   filed per eye with its 95% region, range of clear vision and near acuity.
4. **finish**: both eyes side by side; the clinician accepts, or edits an eye and signs it off
   (recorded beside the found prescription), then exports the visit's records.

The engine (:mod:`visiontune.app.logic.visit_host`) owns the trial log and sends a
:class:`VisitView` after every step; the visit's controller
(:mod:`visiontune.app.logic.visit_flow_controller`, Qt-free) sends the pages' commands and the window
(:mod:`visiontune.app.visit_controller`) shows its page. :func:`next_step` decides the step
from the eyes' states; :func:`interpret_visit_key` maps a key of the visit pages to a
:class:`VisitCommand`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from visiontune.app.logic.keys import ADVANCE_KEYS, Rejected
from visiontune.app.logic.start_form import parse_power
from visiontune.app.logic.texts import MINUS, lens_text
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.acuity_units import format_snellen, logmar_to_decimal, parse_snellen
from visiontune.session.visit_records import VISIT_EYES, check_clinic_form, check_name

__all__ = [
    "ANSWER_WORDS",
    "BalanceQuestionView",
    "BalanceSummary",
    "EYE_NAMES",
    "EyeSummary",
    "NewVisit",
    "Step",
    "VisitCommand",
    "VisitView",
    "NearQuestionView",
    "NearSummary",
    "acuity_line",
    "eye_title",
    "inputs_text",
    "interpret_near_key",
    "interpret_visit_key",
    "near_add_line",
    "next_step",
    "parse_acuity",
]


class Step(StrEnum):
    REFRACT = "refract"
    BALANCE = "balance"
    NEAR = "near"  # the near (reading) addition: after the balance and the acuities, before the finish
    FINISH = "finish"


#: The eye as a clinician says it, and the other eye (the one occluded).
EYE_NAMES = {"OD": "RIGHT EYE", "OS": "LEFT EYE", "OU": "BOTH EYES"}
OTHER_EYE = {"OD": "OS", "OS": "OD"}
#: A balance answer as the page says it.
ANSWER_WORDS = {"OD": "right eye clearer", "OS": "left eye clearer", "equal": "both equal"}
#: States of an eye that still need its refraction (a discarded session is started again).
TO_REFRACT = ("not started", "open", "paused", "discarded")


def eye_title(eye: str) -> str:
    """``RIGHT EYE (OD)``."""
    return f"{EYE_NAMES.get(eye, eye)} ({eye})"


def next_step(states: Mapping[str, str], balance_recorded: bool) -> tuple[Step, str | None]:
    """``(step, eye)``: the first eye (OD, then OS) whose refraction is not done, else the
    balance until its outcome is recorded, else the finish. ``states``: ``{"OD": state, ...}``
    (:class:`~visiontune.session.visit.EyeStatus` states)."""
    for eye in VISIT_EYES:
        if states[eye] in TO_REFRACT:
            return Step.REFRACT, eye
    if not balance_recorded:
        return Step.BALANCE, None
    return Step.FINISH, None


# --- values crossing the pipe (frozen, picklable) -----------------------------------------
@dataclass(frozen=True)
class NewVisit:
    """What the start page asks for: the patient, the protocol, whether a simulated patient
    answers, each eye's typed starting prescription (``starts``: ``{"OD": rx or None}``; a
    simulated eye left empty starts from its own autorefraction unless ``start_source`` is
    ``"none"``), the eyes not refracted with their reason (``skip``), the patient's age, the
    clinic's cylinder form, an optional seed and the screen calibration (real patients)."""

    patient_id: str
    protocol: str
    simulated: bool
    starts: dict = field(default_factory=dict)
    start_source: str = "autorefraction"
    age_years: float | None = None
    skip: dict = field(default_factory=dict)
    cylinder_form: str = "minus"
    seed: int | None = None
    calibration: dict | None = None
    #: the pupillary distance as typed (``"63"`` or ``"31.5/31.5"``, mm) and who runs the refraction
    pd: str | None = None
    examiner: str | None = None
    #: the instrument file the form was filled from (:class:`~visiontune.app.logic.visit_imports.ImportedStart`:
    #: its name and kind, the eyes and PD still the file's); None: typed
    imported: object | None = None


@dataclass(frozen=True)
class EyeSummary:
    """One eye of the visit as the pages show it; prescriptions in the visit's cylinder form.

    ``found``: what the refraction found; ``signed``/``signed_by``/``signed_at``: the latest
    sign-off (kept beside ``found``); ``end_point``: the sign-off, else the found one;
    ``final``: the end point plus the balance's change; ``region``: the result's credible
    region (``credible_interval``); ``measured_va_logmar``: the acuity read through ``final``
    (None if none was); ``true_rx``: a simulated eye's true correction."""

    eye: str
    state: str
    session_id: int | None = None
    answers: int = 0
    skip_reason: str | None = None
    found: Prescription | None = None
    signed: Prescription | None = None
    signed_by: str | None = None
    signed_at: datetime | None = None
    end_point: Prescription | None = None
    final: Prescription | None = None
    region: dict | None = None
    predicted_va_logmar: float | None = None
    measured_va_logmar: float | None = None
    stopped_by: str | None = None
    true_rx: Prescription | None = None

    @property
    def finished(self) -> bool:
        return self.state == "finished"


@dataclass(frozen=True)
class BalanceQuestionView:
    """Balance question ``index``: the plus over each end point (fog included) and the lenses
    before each eye; ``simulated_answer``: what the simulated patient says (None for a real one)."""

    index: int
    plus_od_d: float
    plus_os_d: float
    lens_od: Prescription
    lens_os: Prescription
    simulated_answer: str | None = None


@dataclass(frozen=True)
class BalanceSummary:
    """The balance so far: its ``answers`` (``(plus OD, plus OS, clearer)`` per question), and
    once over its ``outcome``, the plus change of each eye, ``reason`` (not done / not balanced)."""

    method: str
    answers: tuple = ()
    outcome: str | None = None
    plus_change_od_d: float = 0.0
    plus_change_os_d: float = 0.0
    reason: str | None = None

    @property
    def done(self) -> bool:
        return self.outcome is not None and self.outcome != "not done"


@dataclass(frozen=True)
class NearQuestionView:
    """Near letter ``index`` of ``eye``: the lens over the eye's distance prescription
    (``add_d``, D; negative: a minus lens), the letter and its size (logMAR at ``distance_cm``),
    its height on the patient screen (mm; ``height_px`` None without a calibration) and how it is
    drawn (``geometry``); ``simulated_correct``: what the simulated patient answers (None: a real one)."""

    eye: str
    index: int
    phase: str
    add_d: float
    size_logmar: float
    distance_cm: float
    letter: str
    height_mm: float
    height_px: float | None
    geometry: str
    distance_rx: Prescription | None = None
    simulated_correct: bool | None = None


@dataclass(frozen=True)
class NearSummary:
    """The visit's near step: ``begun`` (its distance recorded), the distance (cm: the step's, or
    the clinic's before it begins), the adds filed (``{eye: NearAddRecord}``), the answers so far
    per eye, the reason it is not done (``skip_reason``) and the method."""

    begun: bool
    distance_cm: float
    adds: dict = field(default_factory=dict)
    answers: dict = field(default_factory=dict)
    skip_reason: str | None = None
    method: str = ""


@dataclass(frozen=True)
class VisitView:
    """The visit after a step: where it is (``step``, the ``eye`` to refract, the balance
    ``question``), both eyes, the balance, and the files of the last export. ``opening``:
    the engine opens that eye's session next (the session view follows)."""

    visit_id: int
    patient_id: str
    simulated: bool
    cylinder_form: str
    age_years: int | None
    step: Step
    eyes: dict
    balance: BalanceSummary
    eye: str | None = None
    question: BalanceQuestionView | None = None
    opening: bool = False
    exports: dict = field(default_factory=dict)
    message: str = ""
    #: the acuity with both eyes open through both final prescriptions (logMAR), the pupillary
    #: distance as the records show it, the examiner and the clinicians who signed off
    binocular_va_logmar: float | None = None
    pd_text: str | None = None
    examiner: str | None = None
    signed_by: tuple = ()
    #: the near addition (None: not for this visit, e.g. a patient under 40 who was not asked) and
    #: its next letter (step NEAR, once begun)
    near: NearSummary | None = None
    near_question: NearQuestionView | None = None

    @property
    def kind(self) -> str:
        return "SIMULATED patient" if self.simulated else "patient"


# --- keys of the visit pages --------------------------------------------------------------
class VisitAction(StrEnum):
    CONTINUE = "continue"  # the next eye: start it
    ANSWER = "balance-answer"  # answer: "OD", "OS" or "equal"
    NO_BALANCE = "no-balance"
    NEAR_BEGIN = "near-begin"  # begin the near step at the clinic's distance
    NEAR_ANSWER = "near-answer"  # answer: "+" read right, "-" wrong


@dataclass(frozen=True)
class VisitCommand:
    action: VisitAction
    answer: str | None = None


def interpret_visit_key(
    name: str,
    text: str,
    *,
    step: Step,
    simulated_answer: str | None = None,
    near_begun: bool = False,
    simulated_correct: bool | None = None,
) -> VisitCommand | Rejected:
    """The command for one key on a visit page. Between eyes: Enter / Space starts the next
    eye. In the balance: ``R`` right eye clearer, ``L`` left eye clearer, ``=`` (or ``E``)
    both equal; Enter / Space types the simulated patient's answer; ``N`` ends the balance
    without it (recorded as not done)."""
    char = text.upper() if len(text) == 1 and text.isprintable() else ""
    if step == Step.REFRACT:
        if name in ADVANCE_KEYS:
            return VisitCommand(VisitAction.CONTINUE)
        return Rejected("Press Enter to start the next eye.")
    if step == Step.NEAR:
        return interpret_near_key(name, text, begun=near_begun, simulated_correct=simulated_correct)
    if step != Step.BALANCE:
        return Rejected("The visit is at its finish: accept, or edit and sign off, then export.")
    if char == "R" or name == "R" and not char:
        return VisitCommand(VisitAction.ANSWER, "OD")
    if char == "L" or name == "L" and not char:
        return VisitCommand(VisitAction.ANSWER, "OS")
    if char in ("=", "E") or name == "Equal":
        return VisitCommand(VisitAction.ANSWER, "equal")
    if char == "N":
        return VisitCommand(VisitAction.NO_BALANCE)
    if name in ADVANCE_KEYS:
        if simulated_answer is not None:
            return VisitCommand(VisitAction.ANSWER, simulated_answer)
        return Rejected("Type the patient's answer: R (right eye clearer), L (left eye clearer) or = (equal).")
    if name == "Backspace":
        return Rejected("A balance answer cannot be undone: each one is already in the trial log.")
    return Rejected("Which eye sees the line more clearly? R = right, L = left, = = equal (N: no balance).")


def interpret_near_key(
    name: str, text: str, *, begun: bool, simulated_correct: bool | None = None
) -> VisitCommand | Rejected:
    """A key on the near page. Before the step: Enter / Space begins it. A letter: ``+`` read
    right, ``-`` wrong (as in the session); Enter / Space types the simulated patient's answer."""
    char = text if len(text) == 1 and text.isprintable() else ""
    if not begun:
        if name in ADVANCE_KEYS:
            return VisitCommand(VisitAction.NEAR_BEGIN)
        return Rejected("Press Enter to begin the near addition, or type why it is not done and skip it.")
    if char == "+" or name == "Plus":
        return VisitCommand(VisitAction.NEAR_ANSWER, "+")
    if char == "-" or name == "Minus" or char == MINUS:
        return VisitCommand(VisitAction.NEAR_ANSWER, "-")
    if name in ADVANCE_KEYS:
        if simulated_correct is not None:
            return VisitCommand(VisitAction.NEAR_ANSWER, "+" if simulated_correct else "-")
        return Rejected("Type the patient's answer: + (read right) or - (wrong).")
    if name == "Backspace":
        return Rejected("A near answer cannot be undone: each one is already in the trial log.")
    return Rejected("Did the patient read the letter? + = right, - = wrong.")


def near_add_line(add) -> str:
    """One eye's add as the pages show it: ``Add +2.00 D (95% +1.75 to +2.25 D; by age +2.00 D) ·
    clear from 33 to 67 cm · near acuity +0.10 logMAR at 40 cm`` (``add``: a NearAddRecord)."""
    far = "infinity" if add.far_point_cm is None else f"{add.far_point_cm:.0f} cm"
    near = "\u2014" if add.near_point_cm is None else f"{add.near_point_cm:.0f} cm"
    return (
        f"Add {add.add_d:+.2f} D (95% {add.lower_d:+.2f} to {add.upper_d:+.2f} D; by age "
        f"{add.tentative_add_d:+.2f} D) \u00b7 clear from {near} to {far} \u00b7 near acuity "
        f"{add.near_va_logmar:+.2f} logMAR at {add.distance_cm:g} cm"
    ).replace("-", MINUS)


# --- texts --------------------------------------------------------------------------------
def acuity_line(logmar: float) -> str:
    """``+0.10 logMAR · 6/7.5 · 20/25 · decimal 0.79`` (U+2212 minus)."""
    dec = float(logmar_to_decimal(logmar))
    return (
        f"{logmar:+.2f} logMAR \u00b7 {format_snellen(logmar, 6, decimals=1)} \u00b7 "
        f"{format_snellen(logmar, 20)} \u00b7 decimal {dec:.2f}"
    ).replace("-", MINUS)


def parse_acuity(text: str) -> float:
    """An acuity typed by the clinician: logMAR (``0.1``, ``−0.08``) or Snellen (``6/9``,
    ``20/25``); InvalidInputError naming the field otherwise."""
    clean = text.strip().replace(MINUS, "-").replace(",", ".")
    if not clean:
        raise InvalidInputError("Acuity: type the acuity read through the final prescription (logMAR, or 6/9, 20/25)")
    try:
        value = parse_snellen(clean) if "/" in clean else float(clean)
    except (InvalidInputError, ValueError):
        raise InvalidInputError(
            f"Acuity: expected logMAR (e.g. 0.10) or Snellen (6/9, 20/25), got {text.strip()!r}"
        ) from None
    if not -0.5 <= value <= 2.0:
        raise InvalidInputError(f"Acuity: expected an acuity between \u22120.50 and 2.00 logMAR, got {value:+.2f}")
    return round(float(value), 2)


def change_text(plus_d: float) -> str:
    """A balance change: ``+0.25 D on the sphere`` / ``no change``."""
    return "no change" if abs(plus_d) < 1e-9 else f"{plus_d:+.2f} D on the sphere".replace("-", MINUS)


def balance_text(view: VisitView) -> str:
    """One line on the balance: its outcome and changes, or why it was not done."""
    b = view.balance
    if b.outcome is None:
        return f"Binocular balance: question {len(b.answers) + 1} ({b.method})"
    if b.outcome == "not done":
        return f"Binocular balance not done: {b.reason}."
    n = len(b.answers)
    text = (
        f"Binocular balance ({b.method}): {b.outcome} after {n} question{'s' if n != 1 else ''}; "
        f"OD {change_text(b.plus_change_od_d)}, OS {change_text(b.plus_change_os_d)}"
    )
    return text + (f" ({b.reason})" if b.reason else "") + "."


def inputs_text(view: VisitView) -> str:
    """One line on the acuity with both eyes open, the pupillary distance, the examiner and who
    signed off (what every record of the visit carries)."""
    both = "not measured" if view.binocular_va_logmar is None else acuity_line(view.binocular_va_logmar)
    return (
        f"Both eyes open: {both} \u00b7 PD {view.pd_text or 'not given'} \u00b7 examiner "
        f"{view.examiner or 'not given'} \u00b7 signed off by {', '.join(view.signed_by) or 'nobody yet'}"
    )


def lens_or_dash(rx: Prescription | None) -> str:
    return "\u2014" if rx is None else lens_text(rx)


def read_signoff(sphere: str, cylinder: str, axis: str, by: str, cylinder_form: str) -> tuple[Prescription, str]:
    """The prescription and name the clinician typed to sign an eye off: sphere (D), cylinder
    (D, empty = 0) in the visit's ``cylinder_form``, axis in [0, 180] degrees, a name. Every
    error names its field (``"Sphere: ..."``) and nothing is recorded."""

    if not sphere.strip():
        raise InvalidInputError("Sphere: type the sphere (diopters, e.g. \u22121.25)")
    s = parse_power("Sphere", sphere)
    c = parse_power("Cylinder", cylinder) if cylinder.strip() else 0.0
    if c != 0.0 and not axis.strip():
        raise InvalidInputError(f"Axis: a cylinder of {c:+.2f} D needs its axis (degrees, 1 to 180)")
    a = 180.0
    if axis.strip():
        try:
            a = float(axis.strip().removesuffix("\u00b0"))
        except ValueError:
            raise InvalidInputError(f"Axis: expected degrees, e.g. 90; got {axis.strip()!r}") from None
        if not 0.0 <= a <= 180.0:
            raise InvalidInputError(f"Axis: expected degrees in [0, 180], got {axis.strip()}")
    rx = Prescription(s, c, a)
    check_clinic_form("Cylinder", rx, cylinder_form)
    try:
        name = check_name("Name", by)
    except InvalidInputError:
        raise InvalidInputError("Name: type the name of the clinician who signs (one line)") from None
    return rx, name
