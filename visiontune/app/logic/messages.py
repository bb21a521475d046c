"""The typed messages between the window and the session engine's process (Qt-free).

Every command the window sends the engine (:class:`~visiontune.app.logic.session_host.SessionHost`,
:class:`~visiontune.app.logic.visit_host.VisitHost`) and every event the engine sends back is one
frozen dataclass here. The sender builds it; the receiver dispatches on its *type* (a dict
from type to handler), never on a name; a message of a type the receiver does not know is
refused with an error naming that type, and nothing already recorded is touched. The pipe
between the two processes (:mod:`visiontune.app.logic.worker_process`) carries these objects as
they are (they pickle: plain fields of frozen values).

Commands answer with events: every command ends with exactly one :class:`Idle`; a failure is
one :class:`Failed` before it. After an answer (:class:`RecordAnswer`) the order is
:class:`Recorded` (the trial as committed to the trial log), then :class:`Updated` (the next
query or the stop), then :class:`EstimateReady`.

Field types are named as strings (``from __future__ import annotations``): this module imports
nothing of the engine, so the window can import it without loading the session stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the field types, for readers and type checkers only
    from visiontune.app.logic.visit_flow import NewVisit, VisitView
    from visiontune.app.logic.worker_device import DeviceView
    from visiontune.app.logic.worker_values import EstimateView, FinishedView, NewSession, SessionSummary, Snapshot
    from visiontune.optics import Prescription
    from visiontune.refraction.loop import Answer, ComparisonReply, LineReply, SliderReply
    from visiontune.refraction.trial import Trial

__all__ = [
    "COMMAND_TYPES",
    "EVENT_TYPES",
    "BalanceAnswer",
    "Busy",
    "Close",
    "Closed",
    "Command",
    "CreateVisit",
    "DeviceFault",
    "DeviceShown",
    "EngineEvent",
    "EstimateReady",
    "ExportSession",
    "ExportVisit",
    "Failed",
    "Finish",
    "Finished",
    "Idle",
    "ListSessions",
    "LogRecord",
    "NearAnswer",
    "NearBegin",
    "NearSkip",
    "NextEye",
    "OpenStore",
    "Opened",
    "Pause",
    "Present",
    "Presented",
    "RecordAcuity",
    "RecordAnswer",
    "Recorded",
    "ResumePaused",
    "ResumeSession",
    "RetryDevice",
    "SessionChanged",
    "SessionsListed",
    "SetDevice",
    "ShowLens",
    "ShowVisit",
    "SignOff",
    "SkipEye",
    "StartSession",
    "StoreOpened",
    "Undo",
    "Updated",
    "ViewSession",
    "VisitInputs",
    "VisitViewed",
    "refuse_unknown",
]


# ====================================================================== commands: window -> engine
@dataclass(frozen=True)
class Command:
    """A command for the engine."""

    @property
    def label(self) -> str:
        """The command's name in messages and the log (its class name)."""
        return type(self).__name__


# ------------------------------------------------------------------ the trial log and sessions
@dataclass(frozen=True)
class OpenStore(Command):
    """Open the trial log at ``db_path`` (None: the default place) and list its sessions."""

    db_path: str | None = None


@dataclass(frozen=True)
class ListSessions(Command):
    """List the trial log's sessions (:class:`SessionsListed`)."""


@dataclass(frozen=True)
class StartSession(Command):
    """Start a new session (closing the open one)."""

    request: NewSession


@dataclass(frozen=True)
class ResumeSession(Command):
    """Reopen session ``session_id`` from the trial log (its answers replayed)."""

    session_id: int


@dataclass(frozen=True)
class ViewSession(Command):
    """Show the result of finished session ``session_id`` (:class:`Finished`); opens nothing."""

    session_id: int


@dataclass(frozen=True)
class Present(Command):
    """The open question's lenses are before the eye: mark it presented (set them on a lens
    device first, confirmed by :class:`Presented`)."""


@dataclass(frozen=True)
class RecordAnswer(Command):
    """Record the answer to the open question (committed before anything else happens)."""

    answer: Answer | ComparisonReply | SliderReply | LineReply


@dataclass(frozen=True)
class Undo(Command):
    """Void the last answer (kept in the log, marked voided)."""


@dataclass(frozen=True)
class Pause(Command):
    """Pause the open session."""


@dataclass(frozen=True)
class ResumePaused(Command):
    """Resume the paused session."""


@dataclass(frozen=True)
class Finish(Command):
    """Finish the open session (``stopped_by``: the stopping rule or ``clinician``) and export
    its report into ``export_dir`` (None: no export, a visit's eye)."""

    stopped_by: str
    export_dir: str | None = None


@dataclass(frozen=True)
class ExportSession(Command):
    """Export finished session ``session_id`` into ``folder`` (PDF, CSV, JSON)."""

    session_id: int
    folder: str


@dataclass(frozen=True)
class Close(Command):
    """Close the session, the lens device and the trial log; the engine then exits."""


# ------------------------------------------------------------------ the lens device
@dataclass(frozen=True)
class SetDevice(Command):
    """Set the lens device: ``setting`` is ``manual`` or ``cv5000:PORT``; ``lens_kind`` the manual
    device's kind (``trial-frame`` or ``manual-phoropter``; None: left as it is)."""

    setting: str
    lens_kind: str | None = None


@dataclass(frozen=True)
class RetryDevice(Command):
    """Open the lens device again and resume the session its fault paused."""


@dataclass(frozen=True)
class ShowLens(Command):
    """Put lens ``position`` of the open question before the eye (a comparison's lens 1 or 2, a
    slider's knob position), confirmed by the device."""

    position: int


# ------------------------------------------------------------------ visits (each answered by VisitViewed)
@dataclass(frozen=True)
class CreateVisit(Command):
    """Create a visit and open its first eye."""

    request: NewVisit


@dataclass(frozen=True)
class NextEye(Command):
    """Open the visit's next eye to refract (or show the balance or the finish)."""

    visit_id: int


@dataclass(frozen=True)
class ShowVisit(Command):
    """The visit as it stands; opens nothing."""

    visit_id: int


@dataclass(frozen=True)
class SkipEye(Command):
    """``eye`` is not refracted in the visit, for ``reason``."""

    visit_id: int
    eye: str
    reason: str


@dataclass(frozen=True)
class BalanceAnswer(Command):
    """One binocular balance answer to question ``index``: ``clearer`` is ``OD``, ``OS`` or
    ``equal``; ``clearer`` None: no balance (recorded as not done, not requested)."""

    visit_id: int
    index: int | None
    clearer: str | None


@dataclass(frozen=True)
class SignOff(Command):
    """The clinician's prescription ``prescription`` for ``eye``, signed by ``by``."""

    visit_id: int
    eye: str
    prescription: Prescription
    by: str


@dataclass(frozen=True)
class RecordAcuity(Command):
    """The acuity (logMAR) the clinician read through ``eye``'s final prescription (``OU``: both eyes)."""

    visit_id: int
    eye: str
    logmar: float


@dataclass(frozen=True)
class VisitInputs(Command):
    """The pupillary distance (as typed, ``63`` or ``31.5/31.5``) and the examiner, from the finish page."""

    visit_id: int
    pd: str | None
    examiner: str | None


@dataclass(frozen=True)
class ExportVisit(Command):
    """Export the visit's records into a new folder under ``folder``."""

    visit_id: int
    folder: str


@dataclass(frozen=True)
class NearBegin(Command):
    """Begin the near addition at ``distance_cm``."""

    visit_id: int
    distance_cm: float


@dataclass(frozen=True)
class NearAnswer(Command):
    """One near letter of ``eye``: question ``index`` read right (``correct``) or not."""

    visit_id: int
    eye: str
    index: int
    correct: bool


@dataclass(frozen=True)
class NearSkip(Command):
    """The near addition not done, for ``reason``."""

    visit_id: int
    reason: str


# ====================================================================== events: engine -> window
@dataclass(frozen=True)
class EngineEvent:
    """An event from the engine. :attr:`value` is the one thing it carries (None for an event
    that carries nothing), which the window's Qt signal of the event passes on."""

    @property
    def value(self) -> object:
        fields = dataclasses.fields(self)
        return getattr(self, fields[0].name) if fields else None


@dataclass(frozen=True)
class StoreOpened(EngineEvent):
    """The trial log is open at ``path``."""

    path: str


@dataclass(frozen=True)
class SessionsListed(EngineEvent):
    """The trial log's sessions (discarded and damaged ones left out)."""

    sessions: list[SessionSummary]


@dataclass(frozen=True)
class SessionChanged(EngineEvent):
    """The engine's open session is now ``session_id`` (None: none)."""

    session_id: int | None


@dataclass(frozen=True)
class Opened(EngineEvent):
    """A session was started or resumed: where it stands."""

    snapshot: Snapshot


@dataclass(frozen=True)
class Updated(EngineEvent):
    """The open session after a command: the next query, or why it stopped, or paused."""

    snapshot: Snapshot


@dataclass(frozen=True)
class Recorded(EngineEvent):
    """The answer as committed to the trial log (sent before the refit)."""

    trial: Trial


@dataclass(frozen=True)
class EstimateReady(EngineEvent):
    """The estimate and the plots' data after a refit."""

    estimate: EstimateView


@dataclass(frozen=True)
class Finished(EngineEvent):
    """A finished session's result (and its exports)."""

    view: FinishedView


@dataclass(frozen=True)
class Failed(EngineEvent):
    """A command failed: what to tell the clinician (every confirmed answer is kept)."""

    message: str


@dataclass(frozen=True)
class Busy(EngineEvent):
    """The engine is doing something that takes a while: what."""

    message: str


@dataclass(frozen=True)
class Idle(EngineEvent):
    """A command is done (exactly one per command, failed or not)."""


@dataclass(frozen=True)
class Closed(EngineEvent):
    """The session and the trial log are closed; the engine exits."""


@dataclass(frozen=True)
class VisitViewed(EngineEvent):
    """The visit as it stands after a visit command."""

    view: VisitView


@dataclass(frozen=True)
class DeviceShown(EngineEvent):
    """The lens device as it stands (its panel)."""

    view: DeviceView


@dataclass(frozen=True)
class Presented(EngineEvent):
    """The device confirmed the lenses of trial ``index``: its letter may be shown."""

    index: int


@dataclass(frozen=True)
class DeviceFault(EngineEvent):
    """The lens device failed; the session is paused, every answer kept: ``message`` says so."""

    message: str


@dataclass(frozen=True)
class LogRecord(EngineEvent):
    """One of the engine's log records, re-logged in the window's process (``fields``: the
    record's attributes, message formatted, traceback as text)."""

    fields: dict


#: Every command type the engine handles, and every event type it sends.
COMMAND_TYPES: tuple[type[Command], ...] = (
    OpenStore,
    ListSessions,
    StartSession,
    ResumeSession,
    ViewSession,
    Present,
    RecordAnswer,
    Undo,
    Pause,
    ResumePaused,
    Finish,
    ExportSession,
    Close,
    SetDevice,
    RetryDevice,
    ShowLens,
    CreateVisit,
    NextEye,
    ShowVisit,
    SkipEye,
    BalanceAnswer,
    SignOff,
    RecordAcuity,
    VisitInputs,
    ExportVisit,
    NearBegin,
    NearAnswer,
    NearSkip,
)
EVENT_TYPES: tuple[type[EngineEvent], ...] = (
    StoreOpened,
    SessionsListed,
    SessionChanged,
    Opened,
    Updated,
    Recorded,
    EstimateReady,
    Finished,
    Failed,
    Busy,
    Idle,
    Closed,
    VisitViewed,
    DeviceShown,
    Presented,
    DeviceFault,
    LogRecord,
)


def refuse_unknown(message: object, handlers: Mapping[type, object], where: str) -> str:
    """The sentence refusing ``message``, whose type is not a key of ``handlers`` (``where``: the receiver)."""
    kind = type(message)
    known = ", ".join(sorted(t.__name__ for t in handlers))
    return f"{where}: unknown message of type {kind.__module__}.{kind.__qualname__}; expected one of {known}"
