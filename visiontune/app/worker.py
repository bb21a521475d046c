"""The session worker: one thread owns the trial log and the session; the GUI talks by signals.

SQLite connections and the session lock belong to the thread that opened them, and the model
refit plus the next-query search take from tens of milliseconds to seconds. So a
:class:`SessionWorker` lives in its own ``QThread``: it opens the :class:`TrialStore`, starts or
resumes the :class:`RefractionSession`, records answers, refits, proposes, estimates, finishes
and exports, all in that thread. The GUI sends :meth:`SessionWorker.submit` commands (queued
signal) and receives plain frozen values (:class:`Snapshot`, :class:`EstimateView`, ...).
Every command runs inside one ``try``: a failure becomes the ``failed`` signal, never a dead
thread.

Order after an answer: the stopping rule, then the next query (the clinician can set the
next lens), then the estimate and the plot data (posterior acuity map, acuity curve,
psychometric curve at the best lens).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot
from scipy.stats import norm

from visiontune.errors import InvalidInputError, SessionError, VisionTuneError
from visiontune.optics import Prescription
from visiontune.session import estimate
from visiontune.session.engine import Answer, CurrentEstimate, PendingQuery, RefractionSession
from visiontune.session.protocol import load_protocol
from visiontune.session.records import SessionState, Trial
from visiontune.session.store import TrialStore

log = logging.getLogger("visiontune.app.worker")


@dataclass(frozen=True)
class NewSession:
    """What the start screen asks for: pseudonymous ``patient_id``, ``eye`` (OD/OS/OU),
    ``protocol`` (shipped name or .toml path), ``simulated``, optional ``seed``, optional
    ``starting_rx`` and ``calibration`` (a mapping, stored with the session)."""

    patient_id: str
    eye: str
    protocol: str
    simulated: bool
    seed: int | None = None
    starting_rx: Prescription | None = None
    calibration: dict | None = None


@dataclass(frozen=True)
class SessionSummary:
    """One row of the session list."""

    session_id: int
    patient_id: str
    eye: str
    state: SessionState
    n_trials: int
    created_at: datetime
    simulated: bool
    protocol_name: str

    @property
    def kind(self) -> str:
        return "SIMULATED" if self.simulated else "patient"


@dataclass(frozen=True)
class Snapshot:
    """The session as the view needs it after every change. ``query`` is the lens to set (None
    while paused or once a stopping rule is met, named by ``stop_reason``). ``box (2, 2)``:
    sphere and cylinder ranges, diopters; ``context_box (2,)``: logMAR range.
    ``prior_duration_s``: time spent in the session before it was opened here, seconds."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    seed: int
    protocol_name: str
    state: SessionState
    n_trials: int
    max_trials: int
    query: PendingQuery | None
    stop_reason: str | None
    letters: tuple[str, ...]
    letter_set: str
    n_alternatives: int
    axis_deg: float
    box: tuple[tuple[float, float], tuple[float, float]]
    context_box: tuple[float, float]
    prior_duration_s: float
    last_trial: Trial | None = None


@dataclass(frozen=True)
class EstimateView:
    """Estimate and plot data for ``n_trials`` answers.

    ``acuity_map``: :func:`visiontune.session.estimate.acuity_map` (predicted logMAR on the lens
    grid). ``trials (n, 3)``: sphere, cylinder (D) and answer (1 correct, 0 wrong) of the valid
    trials. ``curve``: ``(trial count, predicted logMAR at the estimate)`` pairs.
    ``psychometric``: letter sizes ``s (m,)`` logMAR and the model's ``P(correct) = Φ(μ_f/√(1+σ_f²))``
    (seed 000, Eq. 3) at the best lens, with a ``level`` band from ``Φ(μ_f ± z σ_f)``.
    """

    n_trials: int
    estimate: CurrentEstimate
    acuity_map: dict
    trials: np.ndarray
    curve: tuple[tuple[int, float], ...]
    psychometric_s: np.ndarray
    psychometric_p: np.ndarray
    psychometric_lo: np.ndarray
    psychometric_hi: np.ndarray


@dataclass(frozen=True)
class FinishedView:
    """A finished session: its stored result, the files exported (or why not) and its flags."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    result: dict
    exports: dict = field(default_factory=dict)
    export_error: str | None = None


def psychometric_at(model, lens_sc: np.ndarray, context_box, *, level: float = 0.95, n: int = 61):
    """``(s, p, lo, hi)``: model ``P(correct)`` against letter size at lens ``(S, C)``
    (``μ_c = Φ(μ_f / √(1 + σ_f²))``, seed 000 Eq. 3) and the band ``Φ(μ_f ± z σ_f)``."""
    s = np.linspace(float(context_box[0]), float(context_box[1]), n)
    inputs = np.column_stack([s, np.tile(np.asarray(lens_sc, dtype=float), (n, 1))])
    mu, var = model.predict(inputs)
    sd = np.sqrt(np.maximum(var, 0.0))
    z = norm.ppf(0.5 + level / 2.0)
    return s, norm.cdf(mu / np.sqrt(1.0 + var)), norm.cdf(mu - z * sd), norm.cdf(mu + z * sd)


def export_basename(session_id: int, patient_id: str, eye: str, simulated: bool) -> str:
    """``visiontune-session-12-P001-OD`` (``-SIMULATED`` appended for simulated sessions)."""
    return f"visiontune-session-{session_id}-{patient_id}-{eye}" + ("-SIMULATED" if simulated else "")


class SessionWorker(QObject):
    """Owns the trial log and the open session; lives in a worker thread (see module doc).

    Commands (``submit(name, payload)``): ``open_store`` (db path or None), ``list``,
    ``start`` (:class:`NewSession`), ``resume`` (session id), ``view`` (finished session id),
    ``present``, ``record`` (:class:`~visiontune.session.engine.Answer`), ``undo``, ``pause``,
    ``resume_paused``, ``finish`` (``(stopped_by, export folder or None)``), ``close``.
    """

    command = Signal(str, object)
    sessions_listed = Signal(object)
    opened = Signal(object)
    updated = Signal(object)
    estimate_ready = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    busy = Signal(str)
    idle = Signal()
    closed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.store: TrialStore | None = None
        self.session: RefractionSession | None = None
        self._curve: dict[int, float] = {}
        self._opened_at = 0.0
        self._prior_duration = 0.0
        self.command.connect(self._handle)

    def submit(self, name: str, payload=None) -> None:
        """Queue a command (thread-safe: the signal is delivered in the worker's thread)."""
        self.command.emit(name, payload)

    # ------------------------------------------------------------------ dispatch
    @Slot(str, object)
    def _handle(self, name: str, payload) -> None:
        handler = getattr(self, f"_do_{name}", None)
        t0 = time.perf_counter()
        try:
            if handler is None:
                raise InvalidInputError(f"command: unknown worker command {name!r}")
            handler(payload)
        except Exception as exc:  # noqa: BLE001 - every failure reaches the user as one message
            if isinstance(exc, VisionTuneError):
                log.error("%s failed: %s", name, exc)
                self.failed.emit(str(exc))
            else:
                log.exception("%s failed unexpectedly", name)
                self.failed.emit(f"Unexpected error while doing '{name}': {type(exc).__name__}: {exc}. "
                                 "Every answer typed so far is saved; details are in the log.")  # fmt: skip
        finally:
            log.debug("%s took %.3f s", name, time.perf_counter() - t0)
            self.idle.emit()

    def _require_session(self) -> RefractionSession:
        if self.session is None:
            raise SessionError("no session is open")
        return self.session

    # ------------------------------------------------------------------ store
    def _do_open_store(self, db_path) -> None:
        if self.store is not None:
            self._close_session()
            self.store.close()
        self.store = TrialStore.open(db_path)
        log.info("trial log %s", self.store.path)
        self._do_list(None)

    def _do_list(self, _payload) -> None:
        store = self._store()
        rows = []
        for info in store.list_sessions():
            try:
                name = info.protocol.name
            except Exception:  # noqa: BLE001 - an unreadable snapshot still lists
                name = "?"
            rows.append(SessionSummary(info.session_id, info.patient_id, info.eye.value, info.state,
                                       len(store.trials(info.session_id)), info.created_at, info.simulated, name))  # fmt: skip
        self.sessions_listed.emit(rows)

    def _store(self) -> TrialStore:
        if self.store is None:
            raise SessionError("the trial log is not open")
        return self.store

    # ------------------------------------------------------------------ sessions
    def _do_start(self, request: NewSession) -> None:
        store = self._store()
        self._close_session()
        self.busy.emit(f"Preparing the model for protocol {request.protocol} (the first time can take a while)")
        protocol = load_protocol(request.protocol)
        session = RefractionSession.start(
            store, patient_id=request.patient_id, eye=request.eye, protocol=protocol, simulated=request.simulated,
            seed=request.seed, calibration=request.calibration, starting_rx=request.starting_rx,
        )  # fmt: skip
        log.info("started session %d: patient %s %s, protocol %s%s", session.session_id, request.patient_id,
                 request.eye, protocol.name, ", SIMULATED" if request.simulated else "")  # fmt: skip
        self._adopt(session)

    def _do_resume(self, session_id: int) -> None:
        store = self._store()
        self._close_session()
        self.busy.emit(f"Reopening session {session_id}")
        session = RefractionSession.resume(store, int(session_id))
        log.info("resumed session %d with %d answers", session.session_id, len(session.trials()))
        self._adopt(session)

    def _adopt(self, session: RefractionSession) -> None:
        self.session = session
        self._opened_at = time.monotonic()
        valid = session.trials()
        times = [t for tr in valid for t in (tr.presented_at, tr.answered_at) if t is not None]
        self._prior_duration = (max(times) - min(times)).total_seconds() if times else 0.0
        self._curve = {}
        if valid:
            self.busy.emit("Replaying the trial log")
            self._curve = {int(n): float(v) for n, v in session.acuity_curve(max_points=30)}
        self.opened.emit(self._snapshot(propose=True))
        self._emit_estimate()

    def _do_view(self, session_id: int) -> None:
        info = self._store().get_session(int(session_id))
        if info.state != SessionState.FINISHED:
            raise SessionError(f"session {session_id} is {info.state.value}: resume it to continue")
        self.finished.emit(FinishedView(info.session_id, info.patient_id, info.eye.value, info.simulated, info.result))

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
        box = s.problem.box
        info = self._store().get_session(s.session_id)
        return Snapshot(
            session_id=s.session_id, patient_id=info.patient_id, eye=info.eye.value,
            simulated=s.simulated, seed=s.seed, protocol_name=p.name, state=state, n_trials=len(valid),
            max_trials=p.stopping.max_trials, query=query, stop_reason=reason, letters=tuple(s.letters),
            letter_set=p.letter_set, n_alternatives=p.n_alternatives, axis_deg=s.axis_deg,
            box=((float(box[0, 0]), float(box[0, 1])), (float(box[1, 0]), float(box[1, 1]))),
            context_box=(float(s.problem.context_box[0, 0]), float(s.problem.context_box[0, 1])),
            prior_duration_s=self._prior_duration, last_trial=valid[-1] if valid else None,
        )  # fmt: skip

    def _emit_estimate(self) -> None:
        s = self._require_session()
        valid = s.trials()
        if not valid:
            return
        est = s.current_estimate()
        self._curve = {n: v for n, v in self._curve.items() if n < len(valid)}
        self._curve[len(valid)] = est.va_logmar
        lens = np.array([est.lens.sphere_d, est.lens.cylinder_d])
        level = est.region.level if est.region is not None else 0.95
        ps, pp, plo, phi = psychometric_at(s.model, lens, s.problem.context_box[0], level=level)
        trials = np.array([[t.lens.sphere_d, t.lens.cylinder_d, float(t.correct)] for t in valid]).reshape(-1, 3)
        self.estimate_ready.emit(EstimateView(
            len(valid), est, estimate.acuity_map(s.model, s.problem, n=21), trials, tuple(sorted(self._curve.items())),
            ps, pp, plo, phi,
        ))  # fmt: skip

    # ------------------------------------------------------------------ trials
    def _do_present(self, _payload) -> None:
        self._require_session().mark_presented()

    def _do_record(self, answer: Answer) -> None:
        s = self._require_session()
        trial = s.record(answer)
        log.info("session %d trial %d: s=%+.2f logMAR, lens %s, shown %s, named %s, %s", s.session_id, trial.index,
                 trial.s_logmar, Prescription(trial.lens.sphere_d, trial.lens.cylinder_d, s.axis_deg).format(),
                 trial.letter_shown, trial.letter_named or "-", "correct" if trial.correct else "wrong")  # fmt: skip
        self.updated.emit(self._snapshot(propose=True))
        self._emit_estimate()

    def _do_undo(self, _payload) -> None:
        s = self._require_session()
        trial = s.undo()
        log.info("session %d: undo %s", s.session_id, "nothing to undo" if trial is None else f"trial {trial.index}")
        self.updated.emit(self._snapshot(propose=True))
        self._emit_estimate()

    def _do_pause(self, _payload) -> None:
        s = self._require_session()
        s.pause()
        log.info("session %d paused", s.session_id)
        self.updated.emit(self._snapshot(propose=False))

    def _do_resume_paused(self, _payload) -> None:
        s = self._require_session()
        s.resume_paused()
        log.info("session %d resumed", s.session_id)
        self.updated.emit(self._snapshot(propose=True))

    def _do_finish(self, payload) -> None:
        stopped_by, export_dir = payload
        s = self._require_session()
        self.busy.emit("Computing the result")
        result = s.finish(stopped_by)
        info = self._store().get_session(s.session_id)
        log.info("session %d finished (%s): %s", s.session_id, stopped_by, result["rounded"])
        self._close_session()
        view = FinishedView(info.session_id, info.patient_id, info.eye.value, info.simulated, result)
        if export_dir is not None:
            self.busy.emit("Exporting the report")
            try:
                view = dataclasses.replace(view, exports=self._export(info, Path(export_dir)))
            except Exception as exc:  # noqa: BLE001 - the session is safe in the log; say why export failed
                log.exception("export of session %d failed", info.session_id)
                view = dataclasses.replace(view, export_error=str(exc))
        self.finished.emit(view)

    def _export(self, info, folder: Path) -> dict:
        """PDF, CSV and JSON of the finished session through :mod:`visiontune.report`."""
        from visiontune.report import export_record, load_session
        from visiontune.report.export import ExportPaths

        folder.mkdir(parents=True, exist_ok=True)
        base = folder / export_basename(info.session_id, info.patient_id, info.eye.value, info.simulated)
        paths = ExportPaths(pdf=f"{base}.pdf", csv=f"{base}.csv", json=f"{base}.json")
        written = export_record(load_session(self._store(), info.session_id), paths, protected=(self._store().path,))
        log.info("session %d exported: %s", info.session_id, ", ".join(str(p) for p in written.values()))
        return {k: str(v) for k, v in written.items()}

    def _do_export(self, payload) -> None:
        session_id, export_dir = payload
        info = self._store().get_session(int(session_id))
        exports = self._export(info, Path(export_dir))
        self.finished.emit(FinishedView(info.session_id, info.patient_id, info.eye.value, info.simulated,
                                        info.result, exports))  # fmt: skip

    def _close_session(self) -> None:
        if self.session is not None:
            log.info("session %d closed (%s)", self.session.session_id, self.session.state.value)
            self.session.close()
            self.session = None

    def _do_close(self, _payload) -> None:
        self._close_session()
        if self.store is not None:
            self.store.close()
            self.store = None
        self.closed.emit()
