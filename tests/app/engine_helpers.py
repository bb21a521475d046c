"""Helpers of the app tests that drive the session engine's host (:class:`SessionHost`) without
the window: a host on a trial log, its latest event, and an open eye answered letter by letter by
its simulated patient (the app's own simulated replies)."""

from __future__ import annotations

from visiontune.app.logic.messages import Finish, Finished, Opened, OpenStore, Present, RecordAnswer, Updated
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.simulation import case_patient, simulated_reply
from visiontune.session.engine import Answer


def engine_host(db):
    """``(host, events)``: a SessionHost on the trial log ``db``, every event it sends appended to
    ``events`` (the typed events of :mod:`visiontune.app.logic.messages`)."""
    events = []
    host = SessionHost(events.append)
    host.handle(OpenStore(str(db)))
    return host, events


def last_event(events, *kinds):
    """The value of the latest event of one of the event types ``kinds``."""
    return next(e.value for e in reversed(events) if isinstance(e, kinds))


def run_open_eye(host, events):
    """Answer the open eye's letters as its simulated patient would, until the session asks no
    more, then finish it; the ``finished`` event's value."""
    snap = last_event(events, Opened, Updated)
    patient = case_patient(snap.simulated_case, snap.n_alternatives)
    while snap.query is not None:
        q = snap.query
        host.handle(Present())
        reply = simulated_reply(
            patient,
            s_logmar=q.s_logmar,
            lens=q.lens,
            letter_shown=q.letter,
            letters=snap.letters,
            seed=snap.seed,
            trial_index=q.index,
        )
        host.handle(RecordAnswer(Answer(letter_named=reply.letter_named)))
        snap = last_event(events, Opened, Updated)
    host.handle(Finish("budget", None))
    return last_event(events, Finished)
