"""The session engine's command executor: owns the trial log and the open session (Qt-free).

A :class:`SessionHost` runs in the engine process (:mod:`visiontune.app.logic.worker_process`): it
opens the :class:`TrialStore`, starts or resumes the :class:`RefractionSession`, records
answers, refits, proposes, estimates, finishes and exports. Its commands and events are the
typed messages of :mod:`visiontune.app.logic.messages`: :meth:`SessionHost.handle` takes one command
and dispatches on its type; the host answers through one callback, ``emit(event)``, with event
objects carrying the frozen values of :mod:`visiontune.app.logic.worker_values`; the GUI side
(:class:`visiontune.app.worker.SessionWorker`) turns each event type into its Qt signal.

Every command runs inside one ``try``: a failure becomes one :class:`Failed` event, and every
command, failed or not, ends with exactly one :class:`Idle`. Order after an answer
(:class:`RecordAnswer`): the answer is committed to the trial log and confirmed
(:class:`Recorded`) before anything else happens; then the stopping rule and the next query
(:class:`Updated`); then the estimate and the plot data (:class:`EstimateReady`: posterior
acuity map, acuity curve, psychometric curve at the best lens).

The lens device (:mod:`visiontune.app.logic.worker_device`): :class:`SetDevice` (a setting, ``manual``
or ``cv5000:PORT``) sets it for the sessions opened from then on (and the open one); every session
the host opens is attached to it (noted in its trial log). :class:`Present` sets the question's
lenses on the device and marks the question presented only once the device confirmed them
(:class:`Presented`); a :class:`~visiontune.errors.DeviceError` pauses the session, keeps every
answer and says so (:class:`DeviceFault`, then :class:`Updated` with the session paused).
:class:`RetryDevice` opens the device again and resumes the paused session (:class:`Updated`:
the lens to set again).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from visiontune import private_files
from visiontune.app.logic.messages import (
    Busy,
    Close,
    Closed,
    Command,
    DeviceFault,
    DeviceShown,
    EngineEvent,
    EstimateReady,
    ExportSession,
    Failed,
    Finish,
    Finished,
    Idle,
    ListSessions,
    Opened,
    OpenStore,
    Pause,
    Present,
    Presented,
    RecordAnswer,
    Recorded,
    ResumePaused,
    ResumeSession,
    RetryDevice,
    SessionChanged,
    SessionsListed,
    SetDevice,
    ShowLens,
    StartSession,
    StoreOpened,
    Undo,
    Updated,
    ViewSession,
    refuse_unknown,
)
from visiontune.app.logic.plot_frames import build_view_frame
from visiontune.app.logic.simulation import (
    SIMULATED_PATIENT_NOTE,
    case_around_start,
    case_patient,
    new_case,
    simulated_reply,
)
from visiontune.app.logic.texts import attention_text, progress_text
from visiontune.app.logic.visit_host import VisitHost
from visiontune.app.logic.worker_device import LENS_SHOWN_NOTE, DeviceLink
from visiontune.app.logic.worker_values import (
    EstimateView,
    FinishedView,
    NewSession,
    SessionSummary,
    Snapshot,
    export_basename,
)
from visiontune.devices.base import LensState
from visiontune.errors import DeviceError, InvalidInputError, SessionError, StoreError, VisionTuneError
from visiontune.refraction.lens_devices import protocol_for_device
from visiontune.refraction.lenses import in_form
from visiontune.refraction.loop import (
    PendingLine,
    is_line,
    is_slider,
    simulated_comparison,
    simulated_line,
    simulated_slider,
)
from visiontune.refraction.policies import PARTICLE_MODEL_TYPES
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.report import export_record, load_session
from visiontune.report.export import ExportPaths
from visiontune.report.map_marks import letter_marks, slider_marks
from visiontune.session.engine import (
    Answer,
    ComparisonReply,
    PendingComparison,
    PendingSlider,
    RefractionSession,
    SliderReply,
)
from visiontune.session.lens_device import protocol_with_lens_change_seconds, question_lenses
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore
from visiontune.session.trial_text import held_text, slider_text

log = logging.getLogger("visiontune.app.worker")


class SessionHost:
    """Executes commands in order on the trial log and the open session.

    Commands (``handle(command)``): the session and device commands of
    :mod:`visiontune.app.logic.messages` (:class:`OpenStore`, :class:`StartSession`,
    :class:`RecordAnswer`, :class:`Finish`, :class:`SetDevice`, ...) and the visit commands of
    :class:`~visiontune.app.logic.visit_host.VisitHost` (:class:`~visiontune.app.logic.messages.CreateVisit`, ...);
    ``emit``: called with each event.
    ``device_options``: the serial driver's options (tests: a short ``reply_timeout_s``).
    """

    def __init__(self, emit: Callable[[EngineEvent], None], **device_options) -> None:
        self._emit = emit
        self.device = DeviceLink("manual", **device_options)
        self.store: TrialStore | None = None
        self.session: RefractionSession | None = None
        self._curve: dict[int, float] = {}
        self._prior_duration = 0.0
        self._sim_patient = None
        self._sim_case: dict | None = None
        self._visit_id: int | None = None
        self.visits = VisitHost(self)
        #: The handler of each command type (the visit commands: :attr:`VisitHost.handlers`).
        self.handlers: dict[type, Callable[[Any], None]] = {
            OpenStore: self._open_store,
            ListSessions: self._list,
            StartSession: self._start,
            ResumeSession: self._resume,
            ViewSession: self._view,
            Present: self._present,
            RecordAnswer: self._record,
            Undo: self._undo,
            Pause: self._pause,
            ResumePaused: self._resume_paused,
            Finish: self._finish,
            ExportSession: self._export_session,
            Close: self._close,
            SetDevice: self._set_device,
            RetryDevice: self._retry_device,
            ShowLens: self._show_lens,
            **self.visits.handlers,
        }

    # ------------------------------------------------------------------ dispatch
    def handle(self, command: Command) -> None:
        """Run one command (dispatched on its type, :attr:`handlers`); any failure becomes one
        :class:`Failed` event, a command of an unknown type too (nothing is done); always ends
        with one :class:`Idle`."""
        t0 = time.perf_counter()
        name = type(command).__name__
        try:
            handler = self.handlers.get(type(command))
            if handler is None:
                raise InvalidInputError(refuse_unknown(command, self.handlers, "session engine command"))
            handler(command)
        except Exception as exc:  # every failure reaches the user as one message
            if isinstance(exc, VisionTuneError):
                log.error("%s failed: %s", name, exc)
                self._emit(Failed(str(exc)))
            else:
                log.exception("%s failed unexpectedly", name)
                self._emit(
                    Failed(
                        f"Unexpected error while doing '{name}': {type(exc).__name__}: {exc}. "
                        "Every answer typed so far is saved; details are in the log.",
                    )
                )
        finally:
            log.debug("%s took %.3f s", name, time.perf_counter() - t0)
            self._emit(Idle())

    def shutdown(self) -> None:
        """Close the session (releasing its lock), the device and the store; never raises (the parent may be gone)."""
        try:
            self._close_session()
        except Exception:  # shutting down: log and go on closing
            log.exception("closing the session failed")
        try:
            self.device.close()
        except Exception:
            log.exception("closing the lens device failed")
        if self.store is not None:
            try:
                self.store.close()
            except Exception:
                log.exception("closing the trial log failed")
            self.store = None

    def _require_session(self) -> RefractionSession:
        if self.session is None:
            raise SessionError("no session is open")
        return self.session

    def _store(self) -> TrialStore:
        if self.store is None:
            raise SessionError("the trial log is not open")
        return self.store

    # ------------------------------------------------------------------ store
    def _open_store(self, command: OpenStore) -> None:
        if self.store is not None:
            self._close_session()
            self.store.close()
            self.store = None
        self.store = TrialStore.open(command.db_path)
        log.info("trial log %s", self.store.path)
        self._emit(StoreOpened(str(self.store.path)))
        self._list(ListSessions())

    def _list(self, _command: ListSessions) -> None:
        store = self._store()
        rows = []
        for info in store.list_sessions():  # discarded sessions are left out: never offered for resume
            if info.damaged:  # confined to its row: the others still list
                log.warning("session %d is damaged and not listed: %s", info.session_id, "; ".join(info.damage))
                continue
            try:
                name = info.protocol.name
            except Exception:  # an unreadable snapshot still lists
                name = "?"
            rows.append(
                SessionSummary(
                    info.session_id,
                    info.patient_id,
                    info.eye.value,
                    info.state,
                    store.trial_count(info.session_id),
                    info.created_at,
                    info.simulated,
                    name,
                )
            )
        self._emit(SessionsListed(rows))

    # ------------------------------------------------------------------ sessions
    def _start(self, command: StartSession) -> None:
        request = command.request
        store = self._store()
        self._close_session()
        self._emit(Busy(f"Preparing the model for protocol {request.protocol} (the first time can take a while)"))
        protocol = load_protocol(request.protocol)
        if self.device.kind != "manual":  # the device's change time prices a change of lens
            protocol = protocol_with_lens_change_seconds(protocol, self._device_change_seconds(), self.device.kind)
        else:  # the manual device's kind (trial frame or manual phoropter) prices it
            protocol = self._manual_kind_protocol(protocol)
        seed = protocol.seed if request.seed is None else int(request.seed)
        case = new_case(seed, protocol, age_years=request.age_years) if request.simulated else None
        start = starting_point(request, case)
        if case is not None and request.starting_rx is not None:  # the typed start is the patient's reading
            case = case_around_start(case, start)
        session = RefractionSession.start(
            store,
            patient_id=request.patient_id,
            eye=request.eye,
            protocol=protocol,
            simulated=request.simulated,
            seed=seed,
            calibration=request.calibration,
            start=start,
            cylinder_form=request.cylinder_form,
        )
        if case is not None:  # recorded at once: a resumed session answers as this one would
            session.note(SIMULATED_PATIENT_NOTE, case.to_dict())
        log.info(
            "started session %d: patient %s %s, protocol %s, start %s (%s), %s cylinder%s",
            session.session_id,
            request.patient_id,
            request.eye,
            protocol.name,
            start.rx.format() if start.rx else "none",
            start.source,
            session.protocol.lenses.cylinder_form,
            ", SIMULATED" if request.simulated else "",
        )
        self._adopt(session)

    def _resume(self, command: ResumeSession) -> None:
        session_id = command.session_id
        store = self._store()
        self._close_session()
        self._emit(Busy(f"Reopening session {session_id}"))
        session = RefractionSession.resume(store, int(session_id))
        log.info("resumed session %d with %d answers", session.session_id, len(session.trials()))
        self._adopt(session)

    def _adopt(self, session: RefractionSession) -> None:
        self.session = session
        self._sim_patient = self._sim_case = None
        link = self._store().visit_of_session(session.session_id)
        self._visit_id = None if link is None else link.visit_id
        if session.simulated:  # the patient recorded with the session (the GUI answers as it), for its true curve
            self._sim_case = session.recorded_note(SIMULATED_PATIENT_NOTE)
            if self._sim_case is None:  # a session of an older version: the case its seed draws
                self._sim_case = new_case(session.seed, session.protocol).to_dict()
                session.note(SIMULATED_PATIENT_NOTE, self._sim_case)
            self._sim_patient = case_patient(self._sim_case, session.protocol.n_alternatives)
        self._emit(SessionChanged(session.session_id))
        self._attach_device(session)
        valid = session.trials()
        times = [t for tr in valid for t in (tr.presented_at, tr.answered_at) if t is not None]
        self._prior_duration = (max(times) - min(times)).total_seconds() if times else 0.0
        self._curve = {}
        if valid:
            self._emit(Busy("Replaying the trial log"))
            self._curve = {int(n): float(v) for n, v in session.acuity_curve(max_points=30)}
        self._emit(Opened(self._snapshot(propose=True)))
        self._emit_estimate()

    def _view(self, command: ViewSession) -> None:
        session_id = command.session_id
        info = self._store().get_session(int(session_id))
        if info.state != SessionState.FINISHED:
            raise SessionError(f"session {session_id} is {info.state.value}: resume it to continue")
        self._emit(Finished(self._finished_view(info, info.result)))

    def _finished_view(self, info, result: dict, **extra) -> FinishedView:
        """The finished session ``info`` as the view shows it, with ``result`` and ``extra`` fields
        (``exports``) and the visit it belongs to."""
        return FinishedView(
            info.session_id,
            info.patient_id,
            info.eye.value,
            info.simulated,
            result,
            visit_id=self._visit_of(info.session_id),
            **extra,
        )

    def _visit_of(self, session_id: int) -> int | None:
        link = self._store().visit_of_session(session_id)
        return None if link is None else link.visit_id

    def _snapshot(self, *, propose: bool) -> Snapshot:
        s = self._require_session()
        p = s.protocol
        state = s.state
        query = reason = None
        if state == SessionState.OPEN:
            reason = s.stop_reason()
            if reason is None and propose:
                query = s.next_query()
        valid = s.trials()
        info = self._store().get_session(s.session_id)
        return Snapshot(
            session_id=s.session_id,
            patient_id=info.patient_id,
            eye=info.eye.value,
            simulated=s.simulated,
            seed=s.seed,
            protocol_name=p.name,
            state=state,
            n_trials=len(valid),
            max_trials=p.stopping.max_trials,
            query=query,
            stop_reason=reason,
            letters=tuple(s.letters),
            letter_set=p.letter_set,
            n_alternatives=p.n_alternatives,
            cylinder_form=p.lenses.cylinder_form,
            context_box=(float(p.logmar_range[0]), float(p.logmar_range[1])),
            prior_duration_s=self._prior_duration,
            start=s.start_point,
            model_type=p.model.type,
            simulated_case=self._sim_case,
            last_trial=valid[-1] if valid else None,
            visit_id=self._visit_id,
        )

    def _emit_estimate(self) -> None:
        """``estimate_ready``: the estimate, its plot data and the ready-to-draw :class:`ViewFrame`
        (acuity map, curves, band, texts computed here, so the GUI thread only draws). Before
        the first answer only for the models of particles (the optics model and the GP on its
        prediction), whose prior is centred on the start; a GP's alone knows nothing yet."""
        s = self._require_session()
        valid = s.trials()
        if not valid and s.protocol.model.type not in PARTICLE_MODEL_TYPES:
            return
        est = s.current_estimate()
        p = s.protocol
        self._curve = {n: v for n, v in self._curve.items() if n < len(valid)}
        self._curve[len(valid)] = est.va_logmar
        psychometric = s.psychometric(est.lens)
        amap = s.acuity_map()
        axis = amap.get("axis_deg")
        # letters and sliders are marked by the rule of the PDF's map; comparisons (two lenses) are not
        trials = np.array([[*m.at, float(m.correct)] for m in letter_marks(valid, axis)]).reshape(-1, 3)
        curve = tuple(sorted(self._curve.items()))
        progress = s.progress()
        waits = bool(p.comparisons and p.comparisons.stop_waits_for_sensitivity)
        line = progress_text(
            progress, p.stopping.precision, waits_for_sensitivity=waits, waits_for_over_minus=s.waits_for_over_minus()
        )
        attention = attention_text(s.lapsed_probability())
        line = f"{line}\n{attention}" if attention else line
        true_p = None
        if self._sim_patient is not None:
            true_p = self._sim_patient.probability_correct(psychometric[0], est.lens)
        frame = build_view_frame(
            estimate=est,
            acuity_map=amap,
            trials=trials,
            curve=curve,
            psychometric=psychometric,
            chart_range=p.logmar_range,
            true_p=true_p,
            progress=progress,
            progress_line=line,
            sliders=tuple(slider_marks(valid, axis)),
        )
        self._emit(
            EstimateReady(
                EstimateView(len(valid), est, amap, trials, curve, *psychometric, frame=frame, progress=progress),
            )
        )

    # ------------------------------------------------------------------ trials
    def _present(self, _command: Present) -> None:
        """The question's lenses set and confirmed by the device, then the question marked
        presented (``presented``); a device fault pauses the session (``device_fault``)."""
        s = self._require_session()
        if s.state != SessionState.OPEN:
            raise SessionError(f"session {s.session_id} is {s.state.value}: resume it before showing a letter")
        index = s.next_query().index
        manual = self.device.kind == "manual"  # the letter is on screen already: the Enter key confirmed the lens
        try:
            self._attach_device(s, raise_fault=True, say=not manual)
            s.mark_presented()
        except DeviceError as exc:
            self._device_fault(s, exc)
            return
        self.device.confirmed(index)
        if not manual:
            self._emit(DeviceShown(self.device.view()))
            self._emit(Presented(index))

    def _attach_device(self, session: RefractionSession, *, raise_fault: bool = False, say: bool = True) -> None:
        """Attach the device to ``session`` (opening it if needed); a device that does not open
        is said on the device panel (and raised with ``raise_fault``). ``say``: send the panel."""
        try:
            self.device.attach(session)
        except DeviceError as exc:
            log.error("lens device %s: %s", self.device.spec, exc)
            if raise_fault:
                raise
        if say:
            self._emit(DeviceShown(self.device.view()))

    def _device_fault(self, s: RefractionSession, exc: DeviceError) -> None:
        """A device fault while setting a question's lenses: the session paused (if the engine
        has not paused it already), every answer kept, the clinician told."""
        if s.state == SessionState.OPEN:
            s.pause()
        message = str(exc)
        if not message.startswith(f"session {s.session_id} paused"):
            message = (
                f"session {s.session_id} paused, {len(s.trials())} answers kept: {message}; "
                "resume when the device is back"
            )
        self.device.failed(str(exc))
        log.error("lens device fault: %s", message)
        self._emit(DeviceShown(self.device.view()))
        self._emit(DeviceFault(message))
        self._emit(Updated(self._snapshot(propose=False)))

    def _device_change_seconds(self) -> float:
        try:
            return float(self.device.ensure_open().change_seconds)
        except DeviceError:
            from visiontune.devices.cv5000 import CV5000_CHANGE_SECONDS

            return self.device.options.get("change_seconds", CV5000_CHANGE_SECONDS)

    def _manual_kind_protocol(self, protocol):
        """``protocol`` priced at the manual device's kind (trial frame or manual phoropter:
        :func:`~visiontune.refraction.lens_devices.protocol_for_device`); a protocol without
        ``[comparisons]`` prices no change of lens and is returned as it is."""
        if protocol.comparisons is None:
            return protocol
        return protocol_for_device(protocol, self.device.lens_kind)

    def _set_device(self, command: SetDevice) -> None:
        """Set the lens device (``manual`` or ``cv5000:PORT``; with the manual device's kind,
        ``trial-frame`` or ``manual-phoropter``, if given) and open it, for the open session too
        (whose stored protocol keeps the change time it was started with)."""
        if command.lens_kind is not None:
            self.device.set_lens_kind(str(command.lens_kind))
        self.device.configure(str(command.setting))
        log.info("lens device: %s", self.device.spec)
        if self.session is not None:
            self._attach_device(self.session)
            return
        try:
            self.device.ensure_open()
        except DeviceError as exc:
            log.error("lens device %s: %s", self.device.spec, exc)
        self._emit(DeviceShown(self.device.view()))

    def _show_lens(self, command: ShowLens) -> None:
        """Put lens ``position`` of the question on screen before the eye, confirmed by the device
        (a comparison's lens 1 or 2, a slider's knob position), and note it in the trial log
        (:data:`~visiontune.app.logic.worker_device.LENS_SHOWN_NOTE`); a fault pauses the session."""
        s = self._require_session()
        if s.state != SessionState.OPEN:
            raise SessionError(f"session {s.session_id} is {s.state.value}: resume it before moving the lenses")
        query = s.next_query()
        lenses = question_lenses(query)
        position = command.position
        k = int(position)
        if not 0 <= k < len(lenses):
            raise InvalidInputError(
                f"lens position: expected 0 to {len(lenses) - 1} for trial {query.index + 1}, got {position}"
            )
        eye = self._store().get_session(s.session_id).eye.value
        try:
            device = self.device.attach(s)
            state = device.set_lenses(LensState.monocular(eye, lenses[k]))
        except DeviceError as exc:
            self._device_fault(s, exc)
            return
        s.note(
            LENS_SHOWN_NOTE,
            {"trial": query.index, "eye": eye, "position": k, "lens": state.to_dict()[eye], **device.describe()},
        )
        self.device.confirmed(query.index)
        self._emit(DeviceShown(self.device.view()))

    def _retry_device(self, _command: RetryDevice) -> None:
        """Open the device again (a new driver, the device re-initialised) and resume the
        session it paused; a device still at fault keeps it paused and says why again."""
        s = self._require_session()
        try:
            self.device.reconnect()
            self.device.attach(s)
        except DeviceError as exc:
            self._device_fault(s, exc)
            return
        if s.state == SessionState.PAUSED:
            s.resume_paused()
        log.info("session %d: lens device %s back, session resumed", s.session_id, self.device.spec)
        self._emit(DeviceShown(self.device.view()))
        self._emit(Updated(self._snapshot(propose=True)))

    def _record(self, command: RecordAnswer) -> None:
        s = self._require_session()
        trial = s.record(command.answer)  # committed to the trial log when this returns
        self._emit(Recorded(trial))
        form = s.protocol.lenses.cylinder_form
        if is_slider(trial):
            log.info(
                "session %d trial %d: s=%+.2f logMAR, %s",
                s.session_id,
                trial.index,
                trial.s_logmar,
                slider_text(trial, lambda lens: in_form(lens, form).format()),
            )
        elif is_line(trial):
            log.info(
                "session %d trial %d: chart line s=%+.2f logMAR, lens %s, letters %s, read %s (%d of %d right)",
                s.session_id,
                trial.index,
                trial.s_logmar,
                in_form(trial.lens, form).format(),
                trial.letter_shown,
                trial.line_correct,
                trial.line_correct.count("1"),
                len(trial.line_correct),
            )
        elif trial.frame_lens is not None:
            log.info(
                "session %d trial %d: s=%+.2f logMAR, %s, clearer: %s",
                s.session_id,
                trial.index,
                trial.s_logmar,
                held_text(trial.lens, trial.lens2, trial.frame_lens, lambda lens: in_form(lens, form).format()),
                trial.comparison,
            )
        elif trial.comparison is not None:
            log.info(
                "session %d trial %d: s=%+.2f logMAR, lens 1 %s vs lens 2 %s, clearer: %s",
                s.session_id,
                trial.index,
                trial.s_logmar,
                in_form(trial.lens, form).format(),
                in_form(trial.lens2, form).format(),
                trial.comparison,
            )
        else:
            log.info(
                "session %d trial %d: s=%+.2f logMAR, lens %s, shown %s, named %s, %s",
                s.session_id,
                trial.index,
                trial.s_logmar,
                in_form(trial.lens, form).format(),
                trial.letter_shown,
                trial.letter_named or "-",
                "correct" if trial.correct else "wrong",
            )
        self._emit(Updated(self._snapshot(propose=True)))
        self._emit_estimate()

    def _undo(self, _command: Undo) -> None:
        s = self._require_session()
        trial = s.undo()
        log.info("session %d: undo %s", s.session_id, "nothing to undo" if trial is None else f"trial {trial.index}")
        self._emit(Updated(self._snapshot(propose=True)))
        self._emit_estimate()

    def _pause(self, _command: Pause) -> None:
        s = self._require_session()
        s.pause()
        log.info("session %d paused", s.session_id)
        self._emit(Updated(self._snapshot(propose=False)))

    def _resume_paused(self, _command: ResumePaused) -> None:
        s = self._require_session()
        s.resume_paused()
        log.info("session %d resumed", s.session_id)
        self._emit(Updated(self._snapshot(propose=True)))

    def _finish(self, command: Finish) -> None:
        stopped_by, export_dir = command.stopped_by, command.export_dir
        s = self._require_session()
        self._emit(Busy("Computing the result"))
        result = s.finish(stopped_by)
        info = self._store().get_session(s.session_id)
        log.info("session %d finished (%s): %s", s.session_id, stopped_by, result["rounded"])
        self._close_session()
        view = self._finished_view(info, result)
        if export_dir is not None:
            self._emit(Busy("Exporting the report"))
            try:
                view = dataclasses.replace(view, exports=self._export(info, Path(export_dir)))
            except Exception as exc:  # the session is safe in the log; say why export failed
                log.exception("export of session %d failed", info.session_id)
                view = dataclasses.replace(view, export_error=str(exc))
        self._emit(Finished(view))

    def _export(self, info, folder: Path) -> dict:
        """PDF, CSV and JSON of the finished session through :mod:`visiontune.report`."""

        folder = private_files.private_dir(folder, error=StoreError)  # new folders 0700, whatever the umask
        base = folder / export_basename(info.session_id, info.patient_id, info.eye.value, info.simulated)
        paths = ExportPaths(pdf=f"{base}.pdf", csv=f"{base}.csv", json=f"{base}.json")
        written = export_record(load_session(self._store(), info.session_id), paths, protected=(self._store().path,))
        log.info("session %d exported: %s", info.session_id, ", ".join(str(p) for p in written.values()))
        return {k: str(v) for k, v in written.items()}

    def _export_session(self, command: ExportSession) -> None:
        session_id, export_dir = command.session_id, command.folder
        info = self._store().get_session(int(session_id))
        exports = self._export(info, Path(export_dir))
        self._emit(Finished(self._finished_view(info, info.result, exports=exports)))

    def _close_session(self) -> None:
        if self.session is not None:
            log.info("session %d closed (%s)", self.session.session_id, self.session.state.value)
            self.session.close()
            self.session = None
            self._emit(SessionChanged(None))

    def _close(self, _command: Close) -> None:
        self.shutdown()
        self._emit(Closed())


def starting_point(request: NewSession, case=None) -> StartingPoint:
    """The :class:`StartingPoint` of a new session, as ``visiontune session run --simulate``
    builds it: the typed prescription with its source; without one, a simulated session's
    ``case`` starts from its own reading unless the source is "none", a real one from nothing.
    The age is the typed one (a simulated patient's: the case's, which it replaced).
    InvalidInputError (naming the field) for a start the engine refuses."""
    age = request.age_years if case is None else case.age_years
    if request.starting_rx is not None:
        if request.start_source == "none":
            raise InvalidInputError(
                "Source: say where the starting prescription comes from (autorefraction, "
                "retinoscopy or habitual spectacles), or clear it to start from nothing"
            )
        return StartingPoint(request.starting_rx, request.start_source, age)
    if case is not None and request.start_source != "none" and case.start_rx is not None:
        return StartingPoint(case.start_rx, case.start_source, age)
    return StartingPoint(None, "none", age)


def record_simulated_session(
    db_path, protocol: str, answers: int, *, seed: int = 3, finish: bool = True
) -> list[EngineEvent]:
    """The events (:mod:`visiontune.app.logic.messages`) a GUI receives during a simulated session, run
    here by a :class:`SessionHost` in this process (benchmarks and tests feed them to the Qt side).

    Opens the trial log ``db_path``, starts a simulated session of ``protocol`` with ``seed``,
    answers up to ``answers`` queries as the app's simulated patient would
    (:func:`~visiontune.app.logic.simulation.simulated_reply`; each :class:`Present` and
    :class:`RecordAnswer` with its :class:`Idle`), then finishes (:class:`Finish`, without export)
    and closes. Engine log records are not included.
    """
    if int(answers) < 0:
        raise InvalidInputError(f"answers: expected a count >= 0, got {answers}")
    events: list[EngineEvent] = []
    host = SessionHost(events.append)
    try:
        host.handle(OpenStore(str(db_path)))
        host.handle(
            StartSession(
                NewSession(patient_id="SIM-REPLAY", eye="OD", protocol=str(protocol), simulated=True, seed=int(seed))
            )
        )
        failures = [e.message for e in events if isinstance(e, Failed)]
        if failures:
            raise SessionError(f"protocol: the simulated session did not start: {failures[0]}")
        snap = next(e.snapshot for e in events if isinstance(e, Opened))
        patient = case_patient(snap.simulated_case, snap.n_alternatives)
        for _ in range(int(answers)):
            if snap.query is None:
                break
            q = snap.query
            host.handle(Present())
            if isinstance(q, PendingSlider):
                answer = SliderReply(simulated_slider(patient, q))
            elif isinstance(q, PendingLine):
                answer = simulated_line(patient, q)
            elif isinstance(q, PendingComparison):
                answer = ComparisonReply(simulated_comparison(patient, q))
            else:
                reply = simulated_reply(
                    patient,
                    s_logmar=q.s_logmar,
                    lens=q.lens,
                    letter_shown=q.letter,
                    letters=snap.letters,
                    seed=snap.seed,
                    trial_index=q.index,
                )
                answer = Answer(letter_named=reply.letter_named)
            host.handle(RecordAnswer(answer))
            snap = next(e.snapshot for e in reversed(events) if isinstance(e, Opened | Updated))
        if finish:
            host.handle(Finish("clinician", None))
        host.handle(Close())
    finally:
        host.shutdown()
    return events
