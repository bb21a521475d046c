"""A finished session read from the trial log, everything an export needs (read-only).

:func:`load_session` only reads: ``TrialStore.get_session``, ``trials(include_void=True)``
and ``events``. It never opens the session for writing, so an export cannot change the log.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune._validate import check_int
from visiontune.errors import SessionError, StoreError
from visiontune.refraction.result import SessionResult, parse_result
from visiontune.refraction.trial import Trial
from visiontune.session.records import Event, SessionInfo, SessionState
from visiontune.session.store import TrialStore

__all__ = ["SessionRecord", "load_session"]


@dataclass(frozen=True)
class SessionRecord:
    """A finished session: its row, every trial (voided ones included, ``Trial.void``), its
    events, and the validated result."""

    info: SessionInfo
    trials: tuple[Trial, ...]
    events: tuple[Event, ...]
    result: SessionResult

    @property
    def session_id(self) -> int:
        return self.info.session_id

    @property
    def simulated(self) -> bool:
        return self.info.simulated

    @property
    def valid_trials(self) -> tuple[Trial, ...]:
        """The answers the model used (voided answers left out)."""
        return tuple(t for t in self.trials if not t.void)


def load_session(store: TrialStore, session_id: int) -> SessionRecord:
    """Read session ``session_id`` for export.

    Raises :class:`~visiontune.errors.SessionError` if there is no such session or it is not
    finished (open or paused sessions have no result to file), and
    :class:`~visiontune.errors.StoreError` if its stored result does not follow schema v1
    (:mod:`visiontune.refraction.result`) or contradicts the log (the ``simulated`` flag, the
    number of valid answers).
    """
    session_id = check_int("session_id", session_id, error=SessionError)
    info = store.get_session(session_id)
    if info.discarded:
        raise SessionError(
            f"session {session_id} was discarded without answers ({info.discard_reason}): it has no result to export"
        )
    if info.state != SessionState.FINISHED:
        raise SessionError(
            f"session {session_id} is {info.state.value}: only a finished session can be exported "
            "(finish or resume it first)"
        )
    where = f"session {session_id} in {store.path}"
    result = parse_result(info.result, where=where)
    if result.simulated is not None and result.simulated != info.simulated:
        raise StoreError(
            f"{where}: result.simulated is {result.simulated} but the session is "
            f"{'simulated' if info.simulated else 'not simulated'}"
        )
    trials = tuple(store.trials(session_id, include_void=True))
    n_valid = sum(not t.void for t in trials)
    if result.trials_used != n_valid:
        raise StoreError(
            f"{where}: result.trials_used is {result.trials_used} but the log holds {n_valid} valid answers"
        )
    events = tuple(store.events(session_id))
    return SessionRecord(info=info, trials=trials, events=events, result=result)
