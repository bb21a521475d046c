"""One answered question of a refraction: the trial, from the loop to the trial log and the exports.

A :class:`Trial` is what :class:`~visiontune.refraction.loop.Refraction` hands its trial log
(``log.record(trial)``), what the log gives back (``log.trials()``), what the SQLite store reads
(:mod:`visiontune.session.store`, which adds ``session_id``) and what the exports write
(:mod:`visiontune.report.tabular`). Its lenses are :class:`~visiontune.optics.Prescription` values
all the way; the store converts them to and from its columns at the SQL boundary only.

Kinds of trial (:func:`trial_kind`):

- a **letter** read through one lens (``lens``); a *duel* also shows a second lens (``lens2``)
  without a comparison answer and is a letter trial;
- a **comparison** of two lenses, "which is clearer, 1 or 2?": ``lens2`` and ``comparison``
  (:data:`COMPARISON_ANSWERS`: ``"1"``, ``"2"`` or ``"="``); ``correct`` is True when lens 1 was
  the clearer; ``frame_lens`` when a lens was held before that trial lens: a flipper's or
  cross-cylinder's two sides (their mean power vector is the frame lens's) or "with or without"
  (lens 1 is the frame lens);
- a **slider** (:mod:`visiontune.refraction.slider`): ``slider_knob``, ``slider_lenses`` (its path,
  two or more lenses in knob order) and ``slider_choice`` (the index of the clearest), all three or
  none; ``lens`` is the lens chosen, no ``lens2``;
- a **chart line** (:mod:`visiontune.refraction.chart_line`): ``letter_shown`` the line's letters
  and ``line_correct`` a ``"1"`` or ``"0"`` per letter, one lens, no comparison, no slider.

``index`` counts every trial of the session from 0, void or not; ``void`` is True once an undo
voided it (a log never deletes an answer). ``letter_named`` is ``None`` when the patient named no
letter ("don't know", or a question that asks none). ``presented_at`` / ``answered_at`` are
timezone-aware; ``None`` in a trial handed to a log, which stamps them when it records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import COMPARISON_ANSWERS
from visiontune.refraction.chart_line import check_line_trial
from visiontune.refraction.slider import check_slider_trial

__all__ = [
    "COMPARISON_ANSWERS",
    "TRIAL_KINDS",
    "Trial",
    "TrialLog",
    "check_next",
    "is_comparison",
    "is_line",
    "is_slider",
    "trial_kind",
]

#: The kinds of trial (:func:`trial_kind`): a letter read through one lens, a comparison of two
#: lenses, a slider (the clearest lens on a knob's path).
TRIAL_KINDS = ("letter", "comparison", "slider")


def _aware(name: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name}: expected a datetime, got {type(value).__name__} {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{name}: expected a timezone-aware datetime, got naive {value.isoformat()}")
    return value


def _index(name: str, value: Any, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidInputError(f"{name}: expected a whole number >= 0, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Trial:
    """One answered question (module docstring). Checked when built: ``InvalidInputError`` names
    the field that is wrong, so a log records nothing it could not read back.

    ``session_id``: the stored session it belongs to (set by the SQLite store; ``None`` in a log
    held in memory)."""

    index: int
    s_logmar: float
    lens: Prescription
    letter_shown: str
    correct: bool
    letter_named: str | None = None
    presented_at: datetime | None = None
    answered_at: datetime | None = None
    void: bool = False
    lens2: Prescription | None = None
    comparison: str | None = None
    slider_knob: str | None = None
    slider_lenses: tuple[Prescription, ...] | None = None
    slider_choice: int | None = None
    line_correct: str | None = None
    frame_lens: Prescription | None = None
    session_id: int | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "index", _index("index", self.index))
        set_(self, "session_id", _index("session_id", self.session_id, optional=True))
        set_(self, "s_logmar", check_number("s_logmar", self.s_logmar))
        if not isinstance(self.lens, Prescription):
            raise InvalidInputError(f"lens: expected a Prescription, got {type(self.lens).__name__}")
        if self.lens2 is not None and not isinstance(self.lens2, Prescription):
            raise InvalidInputError(f"lens2: expected a Prescription or None, got {type(self.lens2).__name__}")
        slider = check_slider_trial(
            self.slider_knob, self.slider_lenses, self.slider_choice, self.lens2, self.comparison
        )
        if slider is not None:
            set_(self, "slider_lenses", slider[1])
        if self.comparison is not None and (self.comparison not in COMPARISON_ANSWERS or self.lens2 is None):
            raise InvalidInputError(
                f"comparison: expected one of {', '.join(COMPARISON_ANSWERS)} with a second lens "
                f"(lens2), got {self.comparison!r} with lens2 {self.lens2}"
            )
        check_line_trial(self.letter_shown, self.line_correct, self.lens2, self.comparison, self.slider_choice)
        _check_frame_lens(self.frame_lens, self.lens, self.lens2, self.comparison)
        if not isinstance(self.letter_shown, str) or not self.letter_shown.strip():
            raise InvalidInputError(f"letter_shown: expected a non-empty string, got {self.letter_shown!r}")
        if self.letter_named is not None and not isinstance(self.letter_named, str):
            raise InvalidInputError(f"letter_named: expected a string or None, got {self.letter_named!r}")
        if isinstance(self.correct, (bool, np.bool_)) or (
            isinstance(self.correct, (int, np.integer)) and self.correct in (0, 1)
        ):
            set_(self, "correct", bool(self.correct))
        else:
            raise InvalidInputError(f"correct: expected True/False (or 0/1), got {self.correct!r}")
        if not isinstance(self.void, (bool, np.bool_)):
            raise InvalidInputError(f"void: expected True or False, got {self.void!r}")
        set_(self, "void", bool(self.void))
        presented = _aware("presented_at", self.presented_at)
        answered = _aware("answered_at", self.answered_at)
        if presented is not None and answered is not None and answered < presented:
            raise InvalidInputError(
                f"answered_at: must not precede presented_at ({answered.isoformat()} < {presented.isoformat()})"
            )


def _check_frame_lens(frame, lens, lens2, comparison) -> None:
    """A ``frame_lens`` only on a comparison, lens 1 itself ("with or without") or straddled by its
    two lenses, ``(P(lens) + P(lens2)) / 2 = P(frame)``, to 1e-6 D (power vectors, Thibos et al. 1997)."""
    if frame is None:
        return
    if not isinstance(frame, Prescription):
        raise InvalidInputError(f"frame_lens: expected a Prescription or None, got {type(frame).__name__}")
    if comparison is None:
        raise InvalidInputError(f"frame_lens: only a comparison holds a lens before a frame lens, got {frame}")
    mean = (lens.power_vector_array() + lens2.power_vector_array()) / 2.0
    at = frame.power_vector_array()
    if min(np.abs(mean - at).max(), np.abs(lens.power_vector_array() - at).max()) > 1e-6:
        raise InvalidInputError(
            f"frame_lens: expected lens 1 ({lens}) or the mean of lens 1 and lens 2 ({lens2}), "
            f"{np.round(mean, 4).tolist()} D in power vectors: the lens a hand-held lens was held before; got {frame}"
        )


def is_comparison(trial: Trial) -> bool:
    """Whether ``trial`` is a comparison (it has a comparison answer)."""
    return trial.comparison is not None


def is_slider(trial: Trial) -> bool:
    """Whether ``trial`` is a slider answer."""
    return trial.slider_choice is not None


def is_line(trial: Trial) -> bool:
    """Whether ``trial`` is a chart line."""
    return trial.line_correct is not None


def trial_kind(trial: Trial) -> str:
    """``"slider"``, ``"comparison"`` or ``"letter"`` (:data:`TRIAL_KINDS`; a duel, two lenses
    without a comparison answer, and a chart line are letter trials)."""
    if is_slider(trial):
        return "slider"
    return "comparison" if is_comparison(trial) else "letter"


def check_next(trial: Any, index: int) -> Trial:
    """``trial`` if a log may record it as its trial ``index`` (the next, void ones counted): a
    :class:`Trial`, of that index, not void; else ``InvalidInputError`` (nothing is recorded). An
    answer given to an older question (another index) is refused, not filed under the next."""
    if not isinstance(trial, Trial):
        raise InvalidInputError(f"trial: expected a Trial, got {type(trial).__name__}; nothing was recorded")
    if trial.index != index:
        raise InvalidInputError(
            f"trial.index: expected {index}, the log's next trial, got {trial.index}; nothing was recorded"
        )
    if trial.void:
        raise InvalidInputError("trial.void: an answer is recorded valid (an undo voids it); nothing was recorded")
    return trial


@runtime_checkable
class TrialLog(Protocol):
    """The one trial-log interface :class:`~visiontune.refraction.loop.Refraction` runs over: the
    log in memory (:class:`~visiontune.refraction.loop.MemoryLog`) and the SQLite trial log
    (:class:`~visiontune.session.engine.StoreLog`). ``state``: ``"open"``, ``"paused"`` or
    ``"finished"``."""

    @property
    def state(self) -> str: ...

    def trials(self, include_void: bool = False) -> list[Trial]:
        """The log's trials in index order (void ones only when ``include_void``)."""

    def record(self, trial: Trial) -> Trial:
        """Append ``trial``, the log's next (:func:`check_next`), before anything else happens;
        return it as recorded (``answered_at`` stamped; the SQLite log also stamps a missing
        ``presented_at`` and sets ``session_id``)."""

    def undo(self) -> Trial | None:
        """Void the last valid trial (kept, marked void) and return it; ``None`` if none is left."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def finish(self, result: dict) -> None: ...
