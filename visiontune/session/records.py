"""Values of the trial log: lenses, trial inputs, trials, sessions, events (frozen dataclasses).

Units: sphere and cylinder in diopters (D), axis in degrees in ``[0, 180)``, letter size
``s`` in logMAR. Timestamps are timezone-aware :class:`datetime.datetime` values; the store
writes them as ISO 8601 text in UTC.

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

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError, StoreError
from visiontune.refraction.chart_line import check_line_trial
from visiontune.refraction.protocol import parse_protocol
from visiontune.refraction.slider import check_slider_trial

#: The answers of a comparison trial, as stored ("1": lens 1 clearer, "2", "=": no difference).
COMPARISON_ANSWERS = ("1", "2", "=")
#: The kinds of trial (:func:`trial_kind`): a letter read through one lens, a comparison of two
#: lenses, a slider (the clearest lens on a knob's path).
TRIAL_KINDS = ("letter", "comparison", "slider")


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


def _aware(name: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name}: expected a datetime, got {type(value).__name__} {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{name}: expected a timezone-aware datetime, got naive {value.isoformat()}")
    return value


@dataclass(frozen=True)
class Lens:
    """A trial lens: sphere and cylinder in diopters, axis in degrees, ``0 <= axis_deg < 180``."""

    sphere_d: float
    cylinder_d: float
    axis_deg: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sphere_d", check_number("lens.sphere_d", self.sphere_d))
        object.__setattr__(self, "cylinder_d", check_number("lens.cylinder_d", self.cylinder_d))
        axis = check_number("lens.axis_deg", self.axis_deg)
        if not 0.0 <= axis < 180.0:
            raise InvalidInputError(f"lens.axis_deg: expected a value in [0, 180) degrees, got {axis}")
        object.__setattr__(self, "axis_deg", axis)


@dataclass(frozen=True)
class TrialInput:
    """One answered presentation, as the session engine hands it to the store.

    ``lens2`` is the second lens of a duel (preferential protocols) or of a comparison, else
    ``None``; ``comparison`` the answer to a comparison (``"1"``, ``"2"`` or ``"="``; it needs
    ``lens2``), else ``None``. ``letter_named`` is ``None`` when the patient gave no letter
    ("don't know").
    A slider answer (:mod:`visiontune.refraction.slider`) has ``slider_knob`` (one of
    ``"sphere"``, ``"cylinder"``, ``"axis"``), ``slider_lenses`` (its path, at least two
    :class:`Lens`, in knob order) and ``slider_choice`` (the index of the clearest), all three
    or none; ``lens`` is then the lens chosen and it has no ``lens2``.
    A chart line (:mod:`visiontune.refraction.chart_line`) has ``letter_shown`` the line's letters
    and ``line_correct`` a ``"1"`` or ``"0"`` per letter, one lens, no comparison, no slider.
    ``presented_at`` / ``answered_at`` default to the store clock at recording time.
    """

    s_logmar: float
    lens: Lens
    letter_shown: str
    correct: bool
    letter_named: str | None = None
    lens2: Lens | None = None
    presented_at: datetime | None = None
    answered_at: datetime | None = None
    comparison: str | None = None
    slider_knob: str | None = None
    slider_lenses: tuple[Lens, ...] | None = None
    slider_choice: int | None = None
    line_correct: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "s_logmar", check_number("s_logmar", self.s_logmar))
        _check_slider(self)
        check_line_trial(self.letter_shown, self.line_correct, self.lens2, self.comparison, self.slider_choice)
        if not isinstance(self.lens, Lens):
            raise InvalidInputError(f"lens: expected a Lens, got {type(self.lens).__name__}")
        if self.lens2 is not None and not isinstance(self.lens2, Lens):
            raise InvalidInputError(f"lens2: expected a Lens or None, got {type(self.lens2).__name__}")
        if self.comparison is not None and (self.comparison not in COMPARISON_ANSWERS or self.lens2 is None):
            raise InvalidInputError(
                f"comparison: expected one of {', '.join(COMPARISON_ANSWERS)} with a second lens "
                f"(lens2), got {self.comparison!r} with lens2 {self.lens2}"
            )
        if not isinstance(self.letter_shown, str) or not self.letter_shown.strip():
            raise InvalidInputError(f"letter_shown: expected a non-empty string, got {self.letter_shown!r}")
        if self.letter_named is not None and not isinstance(self.letter_named, str):
            raise InvalidInputError(f"letter_named: expected a string or None, got {self.letter_named!r}")
        if isinstance(self.correct, bool):
            pass
        elif isinstance(self.correct, int) and self.correct in (0, 1):
            object.__setattr__(self, "correct", bool(self.correct))
        else:
            raise InvalidInputError(f"correct: expected True/False (or 0/1), got {self.correct!r}")
        presented = _aware("presented_at", self.presented_at)
        answered = _aware("answered_at", self.answered_at)
        if presented is not None and answered is not None and answered < presented:
            raise InvalidInputError(
                f"answered_at: must not precede presented_at ({answered.isoformat()} < {presented.isoformat()})"
            )


def _check_slider(trial) -> None:
    """The slider fields of a :class:`TrialInput` or :class:`Trial` (all three or none;
    :func:`~visiontune.refraction.slider.check_slider_trial`), the lenses kept as a tuple."""
    checked = check_slider_trial(
        trial.slider_knob, trial.slider_lenses, trial.slider_choice, trial.lens2, trial.comparison, lens_type=Lens
    )
    if checked is not None:
        object.__setattr__(trial, "slider_lenses", checked[1])


def slider_path_json(lenses) -> str:
    """The ``trials.slider_path`` text of a slider's lenses: ``[{"sphere_d", "cylinder_d", "axis_deg"}, ...]``."""
    return json.dumps([{"sphere_d": x.sphere_d, "cylinder_d": x.cylinder_d, "axis_deg": x.axis_deg} for x in lenses])


def slider_path_from_json(text: str) -> tuple[Lens, ...]:
    """The lenses of a stored ``trials.slider_path`` (InvalidInputError if it is not one)."""
    try:
        items = json.loads(text)
        return tuple(Lens(float(x["sphere_d"]), float(x["cylinder_d"]), float(x["axis_deg"])) for x in items)
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidInputError(f"slider_path: expected a list of lenses, got {str(text)[:60]!r} ({exc})") from None


@dataclass(frozen=True)
class Trial:
    """A trial as stored: ``index`` counts every trial of the session from 0, void or not.

    ``void`` is True when an ``undo`` event references this trial (trial rows never change).
    ``comparison``: the answer of a comparison trial (:class:`TrialInput`), else ``None``;
    ``slider_knob``, ``slider_lenses``, ``slider_choice``: a slider answer (:class:`TrialInput`);
    ``line_correct``: a chart line's answers (:class:`TrialInput`).
    """

    session_id: int
    index: int
    s_logmar: float
    lens: Lens
    letter_shown: str
    letter_named: str | None
    correct: bool
    presented_at: datetime
    answered_at: datetime
    lens2: Lens | None = None
    void: bool = False
    comparison: str | None = None
    slider_knob: str | None = None
    slider_lenses: tuple[Lens, ...] | None = None
    slider_choice: int | None = None
    line_correct: str | None = None

    def __post_init__(self) -> None:
        _check_slider(self)
        check_line_trial(self.letter_shown, self.line_correct, self.lens2, self.comparison, self.slider_choice)


def trial_kind(trial) -> str:
    """``"slider"``, ``"comparison"`` or ``"letter"`` (:data:`TRIAL_KINDS`): the kind of a
    :class:`Trial` or :class:`TrialInput` (a duel, two lenses without a comparison answer, is a
    letter trial)."""
    if trial.slider_choice is not None:
        return "slider"
    return "comparison" if trial.comparison is not None else "letter"


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
