"""A visit: one patient's right eye (OD), left eye (OS), binocular balance and final prescriptions.

Each eye's refraction is an ordinary :class:`~visiontune.session.engine.RefractionSession`
linked to the visit in the trial log (schema v2, :mod:`visiontune.session.visit_schema`), so
the sessions of a visit pause and resume in any order exactly as single sessions do, and an
eye may be skipped with its reason instead. The visit adds what only makes sense for both
eyes: the binocular balance (:mod:`visiontune.session.balance`), the clinician's sign-off of
an edited prescription (kept beside the found one, never replacing it) and the acuity read
through the final prescription.

The *end point* of an eye is its monocular result: the latest signed-off prescription if the
clinician edited one, else the one the refraction found (the session result's ``rounded``
lens); the *final* prescription adds the balance's plus change to its sphere. Both are given
in the visit's cylinder form.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.optics import Prescription
from visiontune.refraction.fellow_eye import fellow_eye_protocol
from visiontune.refraction.loop import make_engine
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.balance import BALANCE_METHOD, BalanceEnd, BalanceQuestion, balance_step, reason_not_to_balance
from visiontune.session.engine import RefractionSession
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore
from visiontune.session.visit_records import VISIT_EYES, VisitInfo

__all__ = [
    "EyeStatus",
    "balance_answers",
    "create_visit",
    "end_point",
    "eye_protocol",
    "eye_statuses",
    "final_prescription",
    "found_prescription",
    "in_form",
    "os_seed",
    "reason_not_balanced",
    "record_balance_answer",
    "record_balance_end",
    "resume_eye",
    "start_eye",
]


def os_seed(seed: int) -> int:
    """The left eye's session seed from the visit's (the right eye's) seed: ``seed ^ 1``, so
    the two eyes see different letter sequences; its own inverse."""
    return int(seed) ^ 1


def in_form(rx: Prescription | None, form: str) -> Prescription | None:
    """``rx`` written in cylinder ``form`` (``"minus"`` or ``"plus"``)."""
    if rx is None:
        return None
    return rx.to_minus_cylinder() if form == "minus" else rx.to_plus_cylinder()


def create_visit(
    store: TrialStore,
    patient_id: str,
    *,
    simulated: bool,
    age_years: int | None = None,
    habitual_od: Prescription | None = None,
    habitual_os: Prescription | None = None,
    cylinder_form: str = "minus",
    clinician: str | None = None,
) -> int:
    """Create the visit (and the pseudonymous patient, if new); return the visit id."""
    try:
        store.get_patient(patient_id)
    except InvalidInputError:
        store.create_patient(patient_id)
    return store.create_visit(
        patient_id,
        age_years=age_years,
        habitual_od=habitual_od,
        habitual_os=habitual_os,
        cylinder_form=cylinder_form,
        clinician=clinician,
        simulated=simulated,
    )


def start_eye(
    store: TrialStore,
    visit_id: int,
    eye: str,
    *,
    protocol: Protocol,
    seed: int | None = None,
    start: StartingPoint | None = None,
    calibration=None,
) -> RefractionSession:
    """Start the refraction of ``eye`` in the visit: a new session of the visit's patient, kind
    and cylinder form, linked to the visit; returned open (its lock held).

    Everything the link needs is checked before the session is created. Should the link still
    fail (another process started the same eye at the same moment), the new session, which
    has no answers, is left with a note saying so and the error is raised.
    """
    visit = store.get_visit(visit_id)
    if eye not in VISIT_EYES:
        raise InvalidInputError(f"eye: expected OD or OS, got {eye!r}")
    store.check_visit_eye_free(visit.visit_id, eye)
    protocol = eye_protocol(store, visit.visit_id, eye, protocol)
    session = RefractionSession.start(
        store,
        patient_id=visit.patient_id,
        eye=eye,
        protocol=protocol,
        simulated=visit.simulated,
        seed=seed,
        calibration=calibration,
        start=start,
        cylinder_form=visit.cylinder_form,
    )
    try:
        store.link_visit_session(visit.visit_id, eye, session.session_id)
    except Exception as exc:
        session.note(f"not linked to visit {visit.visit_id}: {exc}")
        session.close()
        raise
    return session


def eye_protocol(store: TrialStore, visit_id: int, eye: str, protocol: Protocol) -> Protocol:
    """The protocol ``eye`` starts with: with ``model.fellow_eye_prior``, once the other eye's refraction
    is finished, ``protocol`` with the patient's priors from that eye's posterior
    (:func:`~visiontune.refraction.fellow_eye.fellow_eye_protocol`); else ``protocol`` as it is."""
    if protocol.model.type != "optics" or not protocol.model.fellow_eye_prior:
        return protocol
    other = next(e for e in VISIT_EYES if e != eye)
    status = eye_statuses(store, visit_id)[other]
    if not status.finished:
        return protocol
    info = store.get_session(status.session_id)
    engine = make_engine(info.protocol, StartingPoint.from_dict(info.starting_rx), int(info.seed))
    if not hasattr(engine, "posterior"):
        return protocol
    posterior = engine.posterior(store.trials(info.session_id))
    return fellow_eye_protocol(protocol, posterior, f"{other}, session {info.session_id}")


def resume_eye(store: TrialStore, visit_id: int, eye: str) -> RefractionSession:
    """Reopen the unfinished refraction of ``eye`` (a paused one is resumed)."""
    link = store.visit_eyes(visit_id).get(eye)
    if link is None:
        raise SessionError(f"visit {visit_id}: {eye} has not been started")
    if link.skipped:
        raise SessionError(f"visit {visit_id}: {eye} was skipped ({link.skip_reason})")
    return RefractionSession.resume(store, link.session_id)


@dataclass(frozen=True)
class EyeStatus:
    """Where one eye of a visit is: ``state`` one of ``"not started"``, ``"skipped"``,
    ``"open"``, ``"paused"``, ``"finished"``, ``"discarded"``; the ``session_id``, the
    answers recorded, the ``found`` prescription (finished only, the visit's form), the acuity
    the refraction predicts through it and the skip reason."""

    eye: str
    state: str
    session_id: int | None = None
    answers: int = 0
    found: Prescription | None = None
    predicted_va_logmar: float | None = None
    skip_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.state == "finished"


def eye_statuses(store: TrialStore, visit_id: int) -> dict[str, EyeStatus]:
    """``{"OD": EyeStatus, "OS": EyeStatus}``."""
    visit = store.get_visit(visit_id)
    links = store.visit_eyes(visit.visit_id)
    out = {}
    for eye in VISIT_EYES:
        link = links.get(eye)
        if link is None:
            out[eye] = EyeStatus(eye, "not started")
            continue
        if link.skipped:
            out[eye] = EyeStatus(eye, "skipped", skip_reason=link.skip_reason)
            continue
        info = store.get_session(link.session_id)
        answers = store.trial_count(info.session_id)
        if info.discarded:
            out[eye] = EyeStatus(eye, "discarded", info.session_id, answers)
        elif info.state != SessionState.FINISHED:
            out[eye] = EyeStatus(eye, info.state.value, info.session_id, answers)
        else:
            found, va = _found(info, visit)
            out[eye] = EyeStatus(eye, "finished", info.session_id, answers, found, va)
    return out


def _found(info, visit: VisitInfo) -> tuple[Prescription, float]:
    result = info.result
    try:
        r = result["rounded"]
        rx = Prescription(r["sphere_d"], r["cylinder_d"], r["axis_deg"])
        va = float(result["predicted_va_logmar"])
    except (KeyError, TypeError, ValueError, InvalidInputError) as exc:
        raise StoreError(f"session {info.session_id}: its result has no readable found prescription ({exc})") from None
    return in_form(rx, visit.cylinder_form), va


def found_prescription(store: TrialStore, visit_id: int, eye: str) -> Prescription | None:
    """The prescription the refraction of ``eye`` found (the visit's form), ``None`` unless finished."""
    return eye_statuses(store, visit_id)[eye].found


def end_point(store: TrialStore, visit_id: int, eye: str) -> Prescription | None:
    """The eye's monocular end point: the latest sign-off, else the found prescription."""
    visit = store.get_visit(visit_id)
    signed = [s for s in store.visit_signoffs(visit.visit_id) if s.eye == eye]
    if signed:
        return in_form(signed[-1].prescription, visit.cylinder_form)
    return found_prescription(store, visit.visit_id, eye)


def final_prescription(store: TrialStore, visit_id: int, eye: str) -> Prescription | None:
    """The end point plus the balance's plus change on its sphere (the visit's form)."""
    rx = end_point(store, visit_id, eye)
    if rx is None:
        return None
    balance = store.visit_balance(visit_id)
    change = 0.0 if balance is None else (balance.plus_change_od_d if eye == "OD" else balance.plus_change_os_d)
    return Prescription(rx.sphere_d + change, rx.cylinder_d, rx.axis_deg)


def reason_not_balanced(statuses: dict[str, EyeStatus]) -> str | None:
    """Why the eyes of a visit (their :func:`eye_statuses`) cannot be balanced: an eye skipped, or
    acuities too far apart (:func:`~visiontune.session.balance.reason_not_to_balance`); ``None`` if they can."""
    skipped = [f"{e} skipped ({s.skip_reason})" for e, s in statuses.items() if s.state == "skipped"]
    if skipped:
        return "; ".join(skipped) + ": a balance needs both eyes"
    return reason_not_to_balance(statuses["OD"].predicted_va_logmar, statuses["OS"].predicted_va_logmar)


def balance_answers(store: TrialStore, visit_id: int, end_od: Prescription, end_os: Prescription) -> list[str]:
    """The eye found clearer in each balance answer on record, each checked to answer the question
    :func:`~visiontune.session.balance.balance_step` asks after the ones before it from the end points
    ``end_od`` / ``end_os``. SessionError when one does not."""
    answers: list[str] = []
    for a in store.balance_answers(visit_id):
        expected = balance_step(end_od, end_os, answers)
        if not isinstance(expected, BalanceQuestion) or (expected.plus_od_d, expected.plus_os_d) != (
            a.plus_od_d,
            a.plus_os_d,
        ):
            raise SessionError(
                f"visit {visit_id}: balance answer {a.index} does not follow from the answers before it "
                "and the end points (was a prescription signed off meanwhile?)"
            )
        answers.append(a.clearer)
    return answers


def record_balance_answer(store: TrialStore, visit_id: int, question: BalanceQuestion, clearer: str) -> None:
    """Record ``clearer`` (``"OD"``, ``"OS"`` or ``"equal"``) as the answer to balance ``question``."""
    store.record_balance_answer(
        visit_id,
        question.index,
        lens_od=question.lens_od,
        lens_os=question.lens_os,
        plus_od_d=question.plus_od_d,
        plus_os_d=question.plus_os_d,
        clearer=clearer,
    )


def record_balance_end(store: TrialStore, visit_id: int, end: BalanceEnd) -> None:
    """Record the balance's outcome ``end``, by :data:`~visiontune.session.balance.BALANCE_METHOD`."""
    store.record_balance(
        visit_id,
        outcome=end.outcome,
        method=BALANCE_METHOD,
        plus_change_od_d=end.plus_change_od_d,
        plus_change_os_d=end.plus_change_os_d,
        reason=end.reason,
    )
