"""The engine's side of a visit: create it, open its eyes, the balance, sign-off, export (Qt-free).

Runs in the engine process beside the :class:`~visiontune.app.logic.session_host.SessionHost` that
owns the trial log and the open session; every change goes through the session layer
(:mod:`visiontune.session.visit`, the :class:`~visiontune.session.store.TrialStore` visit
methods), and every command ends by sending the visit as it now stands (a
:class:`~visiontune.app.logic.messages.VisitViewed` event carrying a
:class:`~visiontune.app.logic.visit_flow.VisitView`).

Commands (the typed messages of :mod:`visiontune.app.logic.messages`, dispatched on their type by
:attr:`VisitHost.handlers`):

- :class:`~visiontune.app.logic.messages.CreateVisit` (a :class:`~visiontune.app.logic.visit_flow.NewVisit`):
  the visit (a starting prescription read from the habitual spectacles is also the visit's habitual one), its skipped
  eyes, and one session per eye to refract, each with its starting prescription (and, simulated, its
  simulated patient: both eyes of one person, :func:`~visiontune.session.simulated_visit.visit_cases`,
  recorded with the session); then opens the right eye (the left one if the right is skipped).
  What the form took from an instrument file (``NewVisit.imported``) goes into the visit's inputs
  with the file's name, what was typed without (:mod:`visiontune.app.logic.visit_imports`); with a lens
  device set, each eye's protocol prices a change of lens at the device's change time, as a session does.
- ``NextEye``: opens the next eye to refract (or shows the balance / the finish).
- ``ShowVisit``: the visit as it stands; opens nothing.
- ``SkipEye``: the eye is not refracted (its session, if it has no answer yet, is discarded
  with the reason).
- ``BalanceAnswer`` (question index, ``"OD" | "OS" | "equal" | None``): one balance answer,
  recorded before the next question is computed; ``None``: no balance (recorded as not done,
  not requested).
- ``SignOff`` (eye, Prescription, name): the clinician's edit of an eye, recorded beside the
  found prescription (:meth:`~visiontune.session.store.TrialStore.sign_off`).
- ``RecordAcuity`` (eye, logMAR): the acuity the clinician read through the eye's final
  prescription (a simulated visit reads its own, as the headless run does).
- ``VisitInputs``: the pupillary distance as typed and the examiner.
- ``ExportVisit`` (folder): PDF, FHIR R4 Bundle, the DICOM objects
  (:func:`~visiontune.report.dicom_visit.export_dicom_files`), CSV and JSON of the visit, each file
  0600 in a new 0700 folder ``visiontune-visit-<id>-<patient>``.
- ``NearBegin`` (distance cm), ``NearAnswer`` (eye, index, correct), ``NearSkip`` (reason): the
  near addition (:mod:`visiontune.app.logic.visit_near_host`), each answer written before the next
  letter is computed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from visiontune import private_files
from visiontune.app.logic import visit_near_host
from visiontune.app.logic.messages import (
    BalanceAnswer,
    Busy,
    CreateVisit,
    ExportVisit,
    NearAnswer,
    NearBegin,
    NearSkip,
    NextEye,
    RecordAcuity,
    ShowVisit,
    SignOff,
    SkipEye,
    VisitInputs,
    VisitViewed,
)
from visiontune.app.logic.simulation import SIMULATED_PATIENT_NOTE, case_around_start
from visiontune.app.logic.visit_flow import (
    BalanceQuestionView,
    BalanceSummary,
    EyeSummary,
    NewVisit,
    Step,
    VisitView,
    next_step,
)
from visiontune.app.logic.visit_imports import ImportedStart, input_entries
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.report.visit_export import VisitExportPaths, load_visit, render_visit
from visiontune.session import near_store
from visiontune.session.balance import BALANCE_METHOD, BalanceQuestion, balance_step, simulated_clearer
from visiontune.session.lens_device import protocol_with_lens_change_seconds
from visiontune.session.simulated_visit import drive_simulated_visit, fellow_eye_case, recorded_case, visit_cases
from visiontune.session.visit import (
    balance_answers,
    create_visit,
    end_point,
    eye_statuses,
    final_prescription,
    in_form,
    os_seed,
    reason_not_balanced,
    record_balance_answer,
    record_balance_end,
    resume_eye,
    start_eye,
)
from visiontune.session.visit_records import (
    START_SOURCE_OF_STARTING_POINT,
    VISIT_EYES,
    check_name,
    parse_pd,
    record_visit_inputs,
    visit_inputs,
)

log = logging.getLogger("visiontune.app.worker")


def _inputs(pd: str | None, examiner: str | None) -> dict:
    """:func:`~visiontune.session.visit_records.record_visit_inputs`' arguments of a typed
    pupillary distance (``"63"`` or ``"31.5/31.5"``) and examiner; empty texts are not given."""
    out: dict = {}
    if pd is not None and pd.strip():
        out.update(zip(("pd_mm", "pd_od_mm", "pd_os_mm"), parse_pd(pd, "PD"), strict=True))
    if examiner is not None and examiner.strip():
        out["examiner"] = check_name("Examiner", examiner)
    return out


#: How the app records the acuity the clinician read with both eyes open (``visit_acuity`` of ``OU``).
CLINICIAN_BINOCULAR_METHOD = "letter chart read by the clinician, both eyes open through both final prescriptions"
#: How the app records an acuity the clinician read (``visit_acuity``).
CLINICIAN_CHART_METHOD = "letter chart read by the clinician through the final prescription"


def visit_basename(visit_id: int, patient_id: str, simulated: bool) -> str:
    """``visiontune-visit-3-P001`` (``-SIMULATED`` appended for a simulated visit)."""
    return f"visiontune-visit-{visit_id}-{patient_id}" + ("-SIMULATED" if simulated else "")


def simulated_eyes(seed: int, protocol, age_years: float | None = None) -> dict:
    """Both eyes of the simulated patient of a visit (``{"OD": case, "OS": case}``), as
    ``visiontune visit run --simulate`` draws them; ``age_years`` replaces the person's age."""
    if age_years is None:
        return visit_cases(seed, protocol)
    od = simulated_case(seed=int(seed), protocol=protocol, age_years=age_years)
    if protocol.model.type == "gp":  # the paper's patient for the left eye's seed, of this age
        return {"OD": od, "OS": simulated_case(seed=os_seed(seed), protocol=protocol, age_years=age_years)}
    return {"OD": od, "OS": fellow_eye_case(od, seed, protocol)}


def _start(rx, source: str, case, age) -> StartingPoint:
    """An eye's starting point: the typed prescription; else a simulated eye's own reading
    (unless the source is "none"); else nothing."""
    if rx is not None:
        if source == "none":
            raise InvalidInputError("Source: say where the starting prescription comes from, or clear it")
        return StartingPoint(rx, source, age)
    if case is not None and source != "none" and case.start_rx is not None:
        return StartingPoint(case.start_rx, case.start_source, age)
    return StartingPoint(None, "none", age)


class VisitHost:
    """The visit commands of one :class:`~visiontune.app.logic.session_host.SessionHost` (``host``:
    its store, its open session, its ``emit``)."""

    def __init__(self, host) -> None:
        self.host = host
        #: The handler of each visit command type (merged into the host's :attr:`SessionHost.handlers`).
        self.handlers: dict[type, Callable[[Any], None]] = {
            CreateVisit: self._create,
            NextEye: self._next,
            ShowVisit: self._show,
            SkipEye: self._skip,
            BalanceAnswer: self._balance,
            SignOff: self._signoff,
            RecordAcuity: self._acuity,
            VisitInputs: self._record_inputs,
            ExportVisit: self._export,
            NearBegin: self._near_begin,
            NearAnswer: self._near_answer,
            NearSkip: self._near_skip,
        }

    @property
    def store(self):
        return self.host._store()

    # ------------------------------------------------------------------ commands
    def _create(self, command: CreateVisit) -> None:
        request: NewVisit = command.request
        store, host = self.store, self.host
        host._close_session()
        host._emit(Busy(f"Preparing the visit of {request.patient_id} (the first time can take a while)"))
        protocol = load_protocol(request.protocol)
        if host.device.kind != "manual":  # the device's change time prices a change of lens, as in a session
            protocol = protocol_with_lens_change_seconds(protocol, host._device_change_seconds(), host.device.kind)
        else:  # the manual device's kind (trial frame or manual phoropter) prices it, as in a session
            protocol = host._manual_kind_protocol(protocol)
        imported = request.imported
        if imported is not None and not isinstance(imported, ImportedStart):
            raise InvalidInputError(f"imported file: expected an ImportedStart, got {type(imported).__name__}")
        seed = protocol.seed if request.seed is None else int(request.seed)
        skip = {e: r for e, r in (request.skip or {}).items() if r}
        eyes = [e for e in VISIT_EYES if e not in skip]
        if not eyes:
            raise InvalidInputError("Not refracted: a visit refracts at least one eye; nothing was recorded")
        cases = simulated_eyes(seed, protocol, request.age_years) if request.simulated else {}
        age = cases["OD"].age_years if cases else request.age_years
        starts = {e: _start(request.starts.get(e), request.start_source, cases.get(e), age) for e in eyes}
        typed = {e for e in starts if request.starts.get(e) is not None}  # a typed start is the patient's reading
        cases = {e: case_around_start(c, starts[e]) if e in typed else c for e, c in cases.items()}
        habitual = {
            e: rx for e, rx in request.starts.items() if rx is not None and request.start_source == "spectacles"
        }
        inputs = _inputs(request.pd, request.examiner)  # checked before anything is written
        inputs.update(
            {f"start_source_{e.lower()}": START_SOURCE_OF_STARTING_POINT[request.start_source] for e in typed}
        )
        if habitual:
            inputs["habitual_source"] = "typed"
        vid = create_visit(
            store,
            request.patient_id,
            simulated=request.simulated,
            age_years=None if age is None else round(age),
            cylinder_form=request.cylinder_form,
            habitual_od=habitual.get("OD"),
            habitual_os=habitual.get("OS"),
        )
        for entry in input_entries(inputs, imported, request.pd):  # the file's values with its name, then the typed
            record_visit_inputs(store, vid, **entry)
        for eye, reason in skip.items():
            store.skip_visit_eye(vid, eye, reason)
        first = None
        for eye in eyes:
            session = start_eye(
                store,
                vid,
                eye,
                protocol=protocol,
                seed=seed if eye == "OD" else os_seed(seed),
                start=starts[eye],
                calibration=request.calibration,
            )
            if eye in cases:  # recorded at once: the resumed eye answers as this one would
                session.note(SIMULATED_PATIENT_NOTE, cases[eye].to_dict())
            log.info(
                "visit %d %s: session %d, start %s (%s)%s",
                vid,
                eye,
                session.session_id,
                starts[eye].rx.format() if starts[eye].rx else "none",
                starts[eye].source,
                ", SIMULATED" if request.simulated else "",
            )
            if first is None:
                first = session
            else:
                session.close()  # open, without answers, until its turn
        log.info(
            "visit %d created: patient %s, %s cylinder, skipped %s",
            vid,
            request.patient_id,
            request.cylinder_form,
            ", ".join(f"{e} ({r})" for e, r in skip.items()) or "none",
        )
        self._emit_view(vid, opening=True)
        host._adopt(first)

    def _next(self, command: NextEye) -> None:
        self._advance(int(command.visit_id), open_eye=True)

    def _show(self, command: ShowVisit) -> None:
        self._advance(int(command.visit_id), open_eye=False)

    def _skip(self, command: SkipEye) -> None:
        visit_id, eye, reason = command.visit_id, command.eye, command.reason
        store = self.store
        link = store.visit_eyes(int(visit_id)).get(eye)
        if link is not None and link.session_id is not None:
            info = store.get_session(link.session_id)
            if not info.discarded and info.state.value != "finished":
                if self.host.session is not None and self.host.session.session_id == info.session_id:
                    self.host._close_session()
                with store.open_session(info.session_id) as handle:  # refused if it holds an answer
                    handle.discard(f"{eye} not refracted in visit {visit_id}: {reason}")
        store.skip_visit_eye(int(visit_id), eye, reason)
        log.info("visit %s: %s skipped (%s)", visit_id, eye, reason)
        self._advance(int(visit_id), open_eye=False)

    def _balance(self, command: BalanceAnswer) -> None:
        visit_id, index, clearer = command.visit_id, command.index, command.clearer
        vid = int(visit_id)
        store = self.store
        if store.visit_balance(vid) is not None:
            raise SessionError(f"visit {vid}: the binocular balance is over; no more answers")
        if clearer is None:
            store.record_balance(
                vid, outcome="not done", method=BALANCE_METHOD, reason="not requested by the clinician"
            )
            log.info("visit %d: no binocular balance (the clinician's choice)", vid)
        else:
            q = self._question(vid)
            if not isinstance(q, BalanceQuestion) or q.index != index:
                raise SessionError(f"visit {vid}: balance question {index} is not the one asked; nothing recorded")
            record_balance_answer(store, vid, q, clearer)
            log.info(
                "visit %d balance question %d: OD +%.2f D, OS +%.2f D -> %s",
                vid,
                q.index + 1,
                q.plus_od_d,
                q.plus_os_d,
                clearer,
            )
        self._advance(vid, open_eye=False)

    def _signoff(self, command: SignOff) -> None:
        visit_id, eye, rx, by = command.visit_id, command.eye, command.prescription, command.by
        signed = self.store.sign_off(int(visit_id), eye, rx, by)
        log.info(
            "visit %s %s: signed off %s by %s (the found prescription is kept beside it)",
            visit_id,
            eye,
            signed.prescription.format(),
            signed.by,
        )
        self._advance(int(visit_id), open_eye=False, message=f"{eye} signed off by {signed.by}.")

    def _acuity(self, command: RecordAcuity) -> None:
        """An acuity the clinician read through the final prescription of ``eye``; ``OU``: with both
        eyes open through both final prescriptions."""
        visit_id, eye, logmar = command.visit_id, command.eye, command.logmar
        vid = int(visit_id)
        eyes = VISIT_EYES if eye == "OU" else (eye,)
        lenses = {e: final_prescription(self.store, vid, e) for e in eyes}
        missing = [e for e, rx in lenses.items() if rx is None]
        if missing:
            raise InvalidInputError(
                f"visit {vid}: {' and '.join(missing)} has no final prescription to read the acuity through"
            )
        method = CLINICIAN_BINOCULAR_METHOD if eye == "OU" else CLINICIAN_CHART_METHOD
        self.store.record_visit_acuity(vid, eye, float(logmar), lenses=lenses, method=method)
        log.info(
            "visit %d %s: acuity %+.2f logMAR through %s",
            vid,
            eye,
            logmar,
            ", ".join(f"{e} {rx.format()}" for e, rx in lenses.items()),
        )
        what = "both eyes open" if eye == "OU" else eye
        self._advance(vid, open_eye=False, message=f"{what}: acuity recorded.")

    def _record_inputs(self, command: VisitInputs) -> None:
        """The pupillary distance (as typed) and the examiner, entered on the finish page."""
        visit_id, pd, examiner = command.visit_id, command.pd, command.examiner
        vid = int(visit_id)
        inputs = _inputs(pd, examiner)
        if not inputs:
            raise InvalidInputError("PD and examiner: type the pupillary distance (63, or 31.5/31.5) or the examiner")
        given = record_visit_inputs(self.store, vid, **inputs)
        log.info("visit %d: inputs recorded (PD %s, examiner %s)", vid, given.pd_mm, given.examiner)
        self._advance(vid, open_eye=False, message="PD and examiner recorded.")

    def _export(self, command: ExportVisit) -> None:
        visit_id, folder = command.visit_id, command.folder
        store = self.store
        visit = store.get_visit(int(visit_id))
        self.host._emit(Busy("Exporting the visit's records"))
        loaded = load_visit(store, visit.visit_id)  # refuses a visit with an eye not done, before any folder
        base = visit_basename(visit.visit_id, visit.patient_id, visit.simulated)
        target = private_files.private_dir(Path(folder) / base, error=StoreError)  # 0700 whatever the umask
        paths = VisitExportPaths(
            pdf=target / f"{base}.pdf",
            fhir=target / f"{base}.fhir.json",
            dicom_dir=target,
            csv=target / f"{base}.csv",
            json=target / f"{base}.json",
        )
        written: dict[str, list[str]] = {}
        for kind, path, data in render_visit(loaded, paths, protected=(store.path,)):  # all rendered first
            private_files.write_private(path, data, name=kind, error=StoreError)
            written.setdefault(kind, []).append(str(path))
        log.info("visit %d exported to %s: %s", visit.visit_id, target, ", ".join(sorted(written)))
        self._advance(visit.visit_id, open_eye=False, exports=written, message=f"Exported to {target}.")

    def _near_begin(self, command: NearBegin) -> None:
        """Begin the near addition at a distance."""
        vid = int(command.visit_id)
        setup = visit_near_host.begin(self.store, vid, float(command.distance_cm))
        self._advance(vid, open_eye=False, message=f"Near addition at {setup.distance_cm:g} cm begun.")

    def _near_answer(self, command: NearAnswer) -> None:
        """One near letter, written before the next one is computed."""
        vid, eye = int(command.visit_id), command.eye
        add = visit_near_host.answer(self.store, vid, eye, int(command.index), command.correct)
        message = "" if add is None else f"{eye}: add {add.add_d:+.2f} D filed."
        self._advance(vid, open_eye=False, message=message)

    def _near_skip(self, command: NearSkip) -> None:
        """The near addition not done, with the reason."""
        vid = int(command.visit_id)
        visit_near_host.skip(self.store, vid, command.reason)
        self._advance(vid, open_eye=False, message="Near addition not done: reason recorded.")

    # ------------------------------------------------------------------ steps
    def _advance(self, vid: int, *, open_eye: bool, exports: dict | None = None, message: str = "") -> None:
        """Record what follows from the log alone (a balance not possible or over, a simulated
        patient's chart acuity), send the visit's view, and open the next eye if asked."""
        store = self.store
        visit = store.get_visit(vid)
        statuses = eye_statuses(store, vid)
        step, eye = next_step({e: s.state for e, s in statuses.items()}, store.visit_balance(vid) is not None)
        if step == Step.BALANCE and self._question(vid) is None:
            step = Step.FINISH
        if step == Step.FINISH and visit.simulated and near_store.near_setup(store, vid) is None:
            # both eyes done, balance recorded: reads the chart acuities (the near step is the near page's)
            drive_simulated_visit(store, vid, near=False)
        if step == Step.FINISH:
            visit_near_host.settle(store, vid)
        view = self._emit_view(vid, opening=open_eye and step == Step.REFRACT, exports=exports, message=message)
        if view.opening:
            self._open_eye(vid, eye, statuses[eye])

    def _question(self, vid: int) -> BalanceQuestion | None:
        """The balance's next question; None once its outcome is recorded (recording it here
        when the answers end it, or when the eyes cannot be balanced)."""
        store = self.store
        if store.visit_balance(vid) is not None:
            return None
        reason = reason_not_balanced(eye_statuses(store, vid))
        if reason is not None:
            store.record_balance(vid, outcome="not done", method=BALANCE_METHOD, reason=reason)
            log.info("visit %d: binocular balance not done: %s", vid, reason)
            return None
        end_od, end_os = end_point(store, vid, "OD"), end_point(store, vid, "OS")
        step = balance_step(end_od, end_os, balance_answers(store, vid, end_od, end_os))
        if isinstance(step, BalanceQuestion):
            return step
        record_balance_end(store, vid, step)
        log.info(
            "visit %d: binocular balance %s; OD %+.2f D, OS %+.2f D",
            vid,
            step.outcome,
            step.plus_change_od_d,
            step.plus_change_os_d,
        )
        return None

    def _simulated_answer(self, vid: int, q: BalanceQuestion) -> str:
        cases = {e: recorded_case(self.store, s.session_id) for e, s in eye_statuses(self.store, vid).items()}
        patients = {e: c.patient(26) for e, c in cases.items()}  # only their acuity through a lens is used
        return simulated_clearer(patients["OD"], patients["OS"], q, cases["OD"].seed, cases["OS"].seed)

    def _open_eye(self, vid: int, eye: str, status) -> None:
        """Resume the eye's session (created with the visit); a visit whose eye has none (made
        by ``visiontune visit``, or its session discarded) starts one like the other eye's."""
        store, host = self.store, self.host
        host._close_session()
        host._emit(Busy(f"Opening the {eye} refraction"))
        if status.state in ("open", "paused"):
            host._adopt(resume_eye(store, vid, eye))
            return
        other = [s for s in eye_statuses(store, vid).values() if s.session_id is not None and s.eye != eye]
        if not other:
            raise SessionError(f"visit {vid}: no eye has a session to take the protocol from; start a new visit")
        info = store.get_session(other[0].session_id)
        seed = os_seed(info.seed)  # OD's seed is the visit's, OS's its ^ 1: the other eye's ^ 1 either way
        visit = store.get_visit(vid)
        case = None
        if visit.simulated:
            visit_seed = info.seed if other[0].eye == "OD" else os_seed(info.seed)
            case = simulated_eyes(visit_seed, info.protocol)[eye]
        start = _start(
            None,
            "autorefraction" if case is not None else "none",
            case,
            case.age_years if case is not None else visit.age_years,
        )
        session = start_eye(
            store, vid, eye, protocol=info.protocol, seed=seed, start=start, calibration=info.calibration
        )
        if case is not None:
            session.note(SIMULATED_PATIENT_NOTE, case.to_dict())
        host._adopt(session)

    # ------------------------------------------------------------------ the view
    def _emit_view(self, vid: int, *, opening: bool, exports: dict | None = None, message: str = "") -> VisitView:
        view = self.view(vid, opening=opening, exports=exports, message=message)
        self.host._emit(VisitViewed(view))
        return view

    def view(self, vid: int, *, opening: bool = False, exports: dict | None = None, message: str = "") -> VisitView:
        """The visit as it stands (nothing recorded)."""
        store = self.store
        visit = store.get_visit(vid)
        statuses = eye_statuses(store, vid)
        outcome = store.visit_balance(vid)
        step, eye = next_step({e: s.state for e, s in statuses.items()}, outcome is not None)
        question = None
        if step == Step.BALANCE:
            q = self._question(vid)  # records nothing here: _advance has recorded what follows
            if q is None:
                step, outcome = Step.FINISH, store.visit_balance(vid)
            else:
                answer = self._simulated_answer(vid, q) if visit.simulated else None
                question = BalanceQuestionView(q.index, q.plus_od_d, q.plus_os_d, q.lens_od, q.lens_os, answer)
        near_question = None
        if step == Step.FINISH and visit_near_host.pending(store, vid):
            step, near_question = Step.NEAR, visit_near_host.question(store, vid)
        answers = tuple((a.plus_od_d, a.plus_os_d, a.clearer) for a in store.balance_answers(vid))
        balance = BalanceSummary(BALANCE_METHOD, answers)
        if outcome is not None:
            balance = BalanceSummary(
                outcome.method,
                answers,
                outcome.outcome,
                outcome.plus_change_od_d,
                outcome.plus_change_os_d,
                outcome.reason,
            )
        eyes = {e: self._eye(visit, s) for e, s in statuses.items()}
        finals = {e: s.final for e, s in eyes.items()}
        both = [
            a.va_logmar
            for a in store.visit_acuities(vid)
            if a.eye == "OU"
            and all(finals.values())
            and all(a.lenses[e].is_equivalent(finals[e], 1e-6) for e in VISIT_EYES)
        ]
        given = visit_inputs(store, vid)
        pd = None
        if given.pd_mm is not None:
            pd = f"{given.pd_mm:g} mm" + ("" if given.pd_od_mm is None else f" ({given.pd_od_mm:g}/{given.pd_os_mm:g})")
        signed = tuple(dict.fromkeys(s.by for s in store.visit_signoffs(vid)))
        return VisitView(
            visit.visit_id,
            visit.patient_id,
            visit.simulated,
            visit.cylinder_form,
            visit.age_years,
            step,
            eyes,
            balance,
            eye=eye,
            question=question,
            opening=opening,
            exports=dict(exports or {}),
            message=message,
            binocular_va_logmar=both[-1] if both else None,
            pd_text=pd,
            examiner=given.examiner or visit.clinician,
            signed_by=signed,
            near=visit_near_host.summary(store, vid),
            near_question=near_question,
        )

    def _eye(self, visit, status) -> EyeSummary:
        store, vid, eye = self.store, visit.visit_id, status.eye
        if not status.finished:
            return EyeSummary(eye, status.state, status.session_id, status.answers, status.skip_reason)
        signed = [s for s in store.visit_signoffs(vid) if s.eye == eye]
        last = signed[-1] if signed else None
        final = final_prescription(store, vid, eye)
        measured = [
            a.va_logmar
            for a in store.visit_acuities(vid)
            if a.eye == eye and eye in a.lenses and a.lenses[eye].is_equivalent(final, 1e-6)
        ]
        result = store.get_session(status.session_id).result or {}
        true_rx = None
        if visit.simulated:
            true_rx = in_form(recorded_case(store, status.session_id).true_rx, visit.cylinder_form)
        return EyeSummary(
            eye,
            status.state,
            status.session_id,
            status.answers,
            None,
            status.found,
            in_form(last.prescription, visit.cylinder_form) if last else None,
            last.by if last else None,
            last.at if last else None,
            end_point(store, vid, eye),
            final,
            result.get("credible_interval"),
            status.predicted_va_logmar,
            measured[-1] if measured else None,
            result.get("stopped_by"),
            true_rx,
        )
