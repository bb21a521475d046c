"""RefractionSession: one eye of one patient, the one trial loop over the SQLite trial log.

The loop itself (propose -> present -> record -> refit, estimates, stopping) is
:class:`visiontune.refraction.loop.Refraction`, the same loop the bench runs over an in-memory
log. This module adds what a clinical session needs around it: the session row in the trial
log (patient, eye, protocol snapshot, seed, starting prescription, calibration), its lock, and
resuming it. Every answer is committed to the log before anything else happens.
"""

from __future__ import annotations

from visiontune import __version__
from visiontune.errors import DeviceError, SessionError
from visiontune.optics import Prescription
from visiontune.refraction.loop import (
    Answer,
    ComparisonReply,
    LineReply,
    PendingComparison,
    PendingLine,
    PendingQuery,
    PendingSlider,
    Refraction,
    SimulatedPresenter,
    SliderReply,
)
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial
from visiontune.session.lens_device import DEVICE_ATTACHED_NOTE, LENSES_SET_NOTE, lenses_set_record, set_question_lenses
from visiontune.session.records import SessionState
from visiontune.session.store import SessionHandle, TrialStore

__all__ = [
    "Answer",
    "ComparisonReply",
    "LineReply",
    "PendingComparison",
    "PendingLine",
    "PendingQuery",
    "PendingSlider",
    "RefractionSession",
    "SimulatedPresenter",
    "SliderReply",
    "StoreLog",
]


class StoreLog:
    """The trial-log interface of :mod:`visiontune.refraction.loop` on a store session handle.

    The session's trials are read from the store once, then kept: a recorded trial is appended
    as :meth:`SessionHandle.record_trial` committed it, an undo reads them again. The handle
    holds the session's exclusive lock, so nobody else can add to them meanwhile. (The loop
    asks for the trials several times per answer; reading n rows each time made a long
    session's answers cost O(n) in the store alone.)"""

    def __init__(self, handle: SessionHandle) -> None:
        self.handle = handle
        self._trials: list | None = None  # every trial, void ones included, in index order

    @property
    def state(self) -> str:
        return self.handle.info.state.value

    def trials(self, include_void: bool = False):
        if self._trials is None:
            self._trials = self.handle.trials(include_void=True)
        return list(self._trials) if include_void else [t for t in self._trials if not t.void]

    def record(self, trial: Trial) -> Trial:
        known, self._trials = self._trials, None  # read again if anything below fails
        trial = self.handle.record_trial(trial)
        if known is not None and trial.index == len(known):
            known.append(trial)
            self._trials = known
        return trial

    def undo(self):
        self._trials = None
        return self.handle.undo()

    def pause(self) -> None:
        self.handle.pause()

    def resume(self) -> None:
        self.handle.resume()

    def finish(self, result: dict) -> None:
        self.handle.finish(result)


class RefractionSession(Refraction):
    """A refraction session driven through the trial log. Create with :meth:`start` or
    :meth:`resume`; use as a context manager (releases the session lock)."""

    def __init__(self, store: TrialStore, handle: SessionHandle):
        info = handle.info
        self._store = store
        self._handle = handle
        self.session_id = info.session_id
        self.lens_device = None
        stored = info.starting_rx or {}
        super().__init__(
            StoreLog(handle),
            info.protocol,
            seed=int(info.seed),
            start=StartingPoint.from_dict(info.starting_rx),
            simulated=bool(info.simulated),
            cylinder_form=stored.get("cylinder_form"),
        )

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def start(
        cls,
        store: TrialStore,
        *,
        patient_id: str,
        eye: str,
        protocol: Protocol,
        simulated: bool,
        seed: int | None = None,
        calibration=None,
        starting_rx: Prescription | None = None,
        start: StartingPoint | None = None,
        cylinder_form: str | None = None,
    ) -> RefractionSession:
        """Create the session in the log (patient created if new) and open it. ``start``: the
        :class:`StartingPoint` (starting prescription, its source, the patient's age);
        ``starting_rx`` alone is read as an autorefraction. ``cylinder_form``: the clinic's
        setting (default the protocol's). Everything the engine needs is checked before the
        session row is written."""
        if start is None:
            start = StartingPoint() if starting_rx is None else StartingPoint(starting_rx, "autorefraction")
        Refraction(
            _NoLog(), protocol, seed=protocol.seed if seed is None else seed, start=start, cylinder_form=cylinder_form
        )
        stored_start = start.to_dict() | ({} if cylinder_form is None else {"cylinder_form": cylinder_form})
        try:
            store.get_patient(patient_id)
        except Exception:  # unknown patient: create it
            store.create_patient(patient_id)
        sid = store.create_session(
            patient_id,
            eye=eye,
            protocol=protocol,
            seed=seed,
            calibration=calibration,
            simulated=simulated,
            starting_rx=stored_start,
            software_version=__version__,
        )
        return cls(store, store.open_session(sid))

    @classmethod
    def resume(cls, store: TrialStore, session_id: int) -> RefractionSession:
        """Reopen an unfinished session where it stopped (a paused one is resumed)."""
        info = store.get_session(session_id)
        if info.discarded:
            raise SessionError(f"session {session_id} was discarded ({info.discard_reason}); it cannot be resumed")
        if info.state == SessionState.FINISHED:
            raise SessionError(f"session {session_id} is finished; it can be exported, not resumed")
        handle = store.open_session(session_id)
        if info.state == SessionState.PAUSED:
            handle.resume()
        return cls(store, handle)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> RefractionSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def state(self) -> SessionState:
        return self._handle.info.state

    def _require_open(self, action: str) -> None:
        state = self.state
        if state != SessionState.OPEN:
            raise SessionError(f"cannot {action}: session {self.session_id} is {state.value}")

    def note(self, text: str, data=None) -> None:
        """Append a note to the session's events (e.g. the simulated patient it runs with)."""
        self._handle.note(text, data)

    def recorded_note(self, text: str):
        """The data of the last note called ``text``, or ``None``."""
        found = None
        for event in self._handle.events():
            payload = event.payload
            if event.kind.value == "note" and isinstance(payload, dict) and payload.get("text") == text:
                found = payload.get("data")
        return found

    def attach_device(self, device) -> None:
        """Let ``device`` (:class:`~visiontune.devices.base.LensDevice`) set every lens from now on
        (:meth:`mark_presented`); the attachment is noted in the trial log."""
        self.lens_device = device
        self.note(DEVICE_ATTACHED_NOTE, {"from_trial": len(self.log.trials(include_void=True)), **device.describe()})

    def mark_presented(self) -> None:
        """With a lens device: the pending question's lenses are set and confirmed first, and
        noted with the device (:mod:`visiontune.session.lens_device`); a device fault pauses the
        session (every answer kept) and is raised again saying so. Then the question is shown."""
        if self.lens_device is not None:
            query, eye = self.next_query(), self._handle.info.eye.value
            try:
                states = set_question_lenses(self.lens_device, eye, query)
            except DeviceError as exc:
                self.pause()
                kept = len(self.log.trials())
                raise DeviceError(
                    f"session {self.session_id} paused, {kept} answers kept: {exc}; resume when the device is back"
                ) from exc
            self.note(LENSES_SET_NOTE, lenses_set_record(self.lens_device, eye, query.index, states))
        super().mark_presented()

    def finish(self, stopped_by: str = "clinician") -> dict:
        if self.state == SessionState.FINISHED:
            raise SessionError(f"session {self.session_id} is already finished")
        return super().finish(stopped_by)


class _NoLog:
    """A log with no trials: builds the engine once to check a protocol before a session exists."""

    state = "open"

    def trials(self, include_void: bool = False) -> list:
        return []
