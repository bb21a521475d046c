"""Values of the trial log: patients, sessions, events (frozen dataclasses), and the text forms
of what the store keeps in a column (a slider's path, damaged text).

A trial is :class:`visiontune.refraction.trial.Trial`, the loop's own, its lenses
:class:`~visiontune.optics.Prescription` values. Timestamps are timezone-aware
:class:`datetime.datetime` values; the store writes them as ISO 8601 text in UTC.

JSON columns (calibration, starting prescription, result, event payload) are kept as text
(``*_json`` fields, so the values stay immutable and hashable) with a parsing property.

Damaged text (bytes that are not UTF-8, JSON that does not parse, a timestamp that is not
ISO 8601: damage SQLite's own checks do not see) is read as :class:`DamagedText` and reported
in :attr:`SessionInfo.damage`; the parsing properties raise
:class:`~visiontune.errors.StoreError` naming the session and the column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.refraction.protocol import parse_protocol


class DamagedText(str):
    """Text read from the trial log that is not valid UTF-8: the bytes decoded with
    U+FFFD replacement characters (printable), ``raw`` the bytes as stored."""

    raw: bytes

    def __new__(cls, raw: bytes) -> DamagedText:
        self = super().__new__(cls, raw.decode("utf-8", "replace"))
        self.raw = bytes(raw)
        return self


def decode_text(raw: bytes) -> str:
    """The trial log's ``text_factory``: UTF-8 text, or :class:`DamagedText` if it is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return DamagedText(raw)


def json_problem(text: str | None) -> str | None:
    """What is wrong with stored JSON text (``None`` if nothing is)."""
    if text is None:
        return None
    if isinstance(text, DamagedText):
        return "not valid UTF-8 text"
    try:
        json.loads(text)
    except RecursionError:
        return "JSON nested too deeply"
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    return None


class Eye(StrEnum):
    """Which eye a session corrects: right (OD), left (OS) or both (OU)."""

    OD = "OD"
    OS = "OS"
    OU = "OU"


class SessionState(StrEnum):
    """``open`` accepts trials; ``paused`` waits for :meth:`resume`; ``finished`` is final."""

    OPEN = "open"
    PAUSED = "paused"
    FINISHED = "finished"


class EventKind(StrEnum):
    """Kinds of rows in the ``events`` table (an ``undo`` references the trial it voids)."""

    UNDO = "undo"
    PAUSE = "pause"
    RESUME = "resume"
    FINISH = "finish"
    NOTE = "note"


def lens_fields(lens: Prescription) -> dict[str, float]:
    """``{"sphere_d", "cylinder_d", "axis_deg"}`` of a lens as the trial log and its exports write it:
    the axis in ``[0, 180)`` (180 written as 0; :class:`~visiontune.optics.Prescription` reads 0
    back as 180, the same lens)."""
    return {"sphere_d": lens.sphere_d, "cylinder_d": lens.cylinder_d, "axis_deg": lens.axis_deg % 180.0}


def slider_path_json(lenses) -> str:
    """The ``trials.slider_path`` text of a slider's lenses: ``[{"sphere_d", "cylinder_d", "axis_deg"}, ...]``
    (:func:`lens_fields`)."""
    return json.dumps([lens_fields(x) for x in lenses])


def slider_path_from_json(text: str) -> tuple[Prescription, ...]:
    """The lenses of a stored ``trials.slider_path`` (InvalidInputError if it is not one)."""
    try:
        items = json.loads(text)
        return tuple(Prescription(float(x["sphere_d"]), float(x["cylinder_d"]), float(x["axis_deg"])) for x in items)
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidInputError(f"slider_path: expected a list of lenses, got {str(text)[:60]!r} ({exc})") from None


def _loads(text: str | None, where: str = "trial log", column: str = "json") -> Any:
    problem = json_problem(text)
    if problem is not None:
        raise StoreError(f"{where}: {column} is damaged: {problem}")
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class Patient:
    """A pseudonymous patient: no name, no birth date, only an identifier chosen by the clinic."""

    patient_id: str
    created_at: datetime


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``sessions``: everything needed to replay the session from its trials.

    ``protocol_toml`` is the protocol file's text at creation (a snapshot; later edits of the
    file do not change a recorded session). ``result_json`` is set by ``finish``.

    ``damage``: what is wrong with the stored row, one ``"column: problem"`` per damaged
    column (empty for a sound row). Only :meth:`TrialStore.list_sessions` and
    ``get_session(..., allow_damaged=True)`` return a damaged row; a column that could not
    be read is ``None`` there (``eye``, ``state``, ``created_at``...).
    """

    session_id: int
    patient_id: str
    eye: Eye
    protocol_toml: str
    software_version: str
    seed: int
    simulated: bool
    state: SessionState
    created_at: datetime
    finished_at: datetime | None
    calibration_json: str | None
    starting_rx_json: str | None
    result_json: str | None
    damage: tuple[str, ...] = ()

    @property
    def damaged(self) -> bool:
        """True when some column of the stored row is damaged (see :attr:`damage`)."""
        return bool(self.damage)

    @property
    def discarded(self) -> bool:
        """True for a session closed without answers by ``SessionHandle.discard`` (state
        ``finished``, ``result_json`` ``{"discarded": true, "reason": ...}``): it has no result,
        is never resumed and is not listed unless asked for."""
        return self.discard_reason is not None

    @property
    def discard_reason(self) -> str | None:
        """Why the session was discarded, or ``None`` if it was not (or its result is damaged)."""
        if self.state != SessionState.FINISHED or not isinstance(self.result_json, str) or self.damage:
            return None
        try:
            doc = json.loads(self.result_json)
        except ValueError:
            return None
        if isinstance(doc, dict) and doc.get("discarded") is True:
            return str(doc.get("reason", ""))
        return None

    @property
    def calibration(self) -> Any:
        """The calibration snapshot, parsed (``None`` for simulated sessions without one)."""
        return _loads(self.calibration_json, f"session {self.session_id}", "calibration_json")

    @property
    def starting_rx(self) -> Any:
        """The starting prescription, parsed, or ``None``."""
        return _loads(self.starting_rx_json, f"session {self.session_id}", "starting_rx_json")

    @property
    def result(self) -> Any:
        """The result recorded by ``finish``, parsed, or ``None`` while not finished."""
        return _loads(self.result_json, f"session {self.session_id}", "result_json")

    @property
    def protocol(self):
        """The protocol snapshot parsed into a :class:`~visiontune.refraction.protocol.Protocol`."""
        if isinstance(self.protocol_toml, DamagedText) or not isinstance(self.protocol_toml, str):
            raise StoreError(f"session {self.session_id}: protocol_toml is damaged: not valid UTF-8 text")
        return parse_protocol(self.protocol_toml, source=f"session {self.session_id} protocol snapshot")


@dataclass(frozen=True)
class Event:
    """One row of ``events``. ``trial_index`` is set for ``undo`` (the voided trial) only."""

    event_id: int
    session_id: int
    kind: EventKind
    at: datetime
    trial_index: int | None = None
    payload_json: str | None = None

    @property
    def payload(self) -> Any:
        """The event payload, parsed, or ``None``."""
        return _loads(self.payload_json, f"session {self.session_id} event {self.event_id}", "payload_json")
