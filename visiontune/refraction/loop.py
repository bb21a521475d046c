"""The one trial loop: propose -> present -> record -> refit, for the clinic and the bench.

:class:`Refraction` runs a protocol over a **trial log**: the SQLite store in a clinical
session (:mod:`visiontune.session.engine` adapts it), a :class:`MemoryLog` in the bench and in
``visiontune simulate``. The log is the source of truth. Every answer is committed to it
before anything else happens; the model is a pure function of the log's valid (non-void)
trials, the protocol and the starting point, and every random choice for trial ``k`` (``k`` =
trials recorded so far, void ones included) draws from ``default_rng([seed, k, purpose])``. So
a session resumed after a crash proposes exactly the query the uninterrupted one would have,
and the bench measures exactly what a patient meets.

A trial log is a :class:`~visiontune.refraction.trial.TrialLog`: ``trials(include_void=False)`` (the log's
:class:`~visiontune.refraction.trial.Trial` values, in index order), ``record(trial)`` (one
:class:`~visiontune.refraction.trial.Trial`, index the log's next, stamped ``answered_at``;
returns the trial as recorded), ``undo()``, ``pause()``,
``resume()``, ``finish(result)`` and ``state`` (``"open"``, ``"paused"`` or ``"finished"``).

**Comparisons.** A protocol with a ``[comparisons]`` table (optics model only) may ask, instead
of a letter, "which is clearer, 1 or 2?" (:mod:`visiontune.refraction.mixed_rules` chooses by
value per second of the patient's time): :meth:`Refraction.next_query` then returns a
:class:`PendingComparison` and :meth:`Refraction.record` takes a :class:`ComparisonReply`
(``"1"``, ``"2"`` or ``"="``). The log records it as a trial with a second lens (``lens2``) and
its answer (``comparison``); ``letter_shown`` is the letter kept in view, ``correct`` is True when
lens 1 was the clearer. Its candidates draw from the stream of purpose
:data:`COMPARISON_STREAM`. The budget counts answers of both kinds.

**Sliders.** A protocol with a ``[sliders]`` table (optics model only) may also ask "turn the
knob; where is it clearest?" (:mod:`visiontune.refraction.slider`): :meth:`Refraction.next_query`
then returns a :class:`PendingSlider` (the knob, the lenses of its path in the clinic's cylinder
form, the position it starts at) and :meth:`Refraction.record` takes a :class:`SliderReply` (the
index of the clearest lens). The log records it as a trial with the path (``slider_knob``,
``slider_lenses``) and the choice (``slider_choice``); ``lens`` is the lens chosen, ``letter_shown``
the letter kept in view and ``correct`` is True when the knob's starting lens was the clearest.
Its draws come from the stream of purpose :data:`SLIDER_STREAM`; the budget counts it as one
answer, :meth:`Refraction.patient_seconds` at the protocol's ``slider_seconds``.

**Chart lines.** A protocol with a ``[chart_line]`` table may also ask a line of ``n`` letters of
one size read aloud through one lens (:mod:`visiontune.refraction.chart_line`):
:meth:`Refraction.next_query` then returns a :class:`PendingLine` (its letters, distinct, drawn from
the stream of purpose :data:`LINE_STREAM`) and :meth:`Refraction.record` takes a :class:`LineReply`
(each letter right or wrong, in reading order). The log records it as one trial with the line's
letters in ``letter_shown`` and ``line_correct`` (``"1"``/``"0"`` per letter); ``correct`` is True
when more than half the line was read (a chart's line criterion). The budget counts it as one
question; :meth:`Refraction.patient_seconds` at the protocol's ``line_seconds``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from visiontune import __version__
from visiontune.display.optotypes import load_letter_set
from visiontune.errors import InvalidInputError, SessionError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import COMPARISON_ANSWERS, ComparisonModel, answer_comparison_trial
from visiontune.optics.patient import TRIAL_KEY
from visiontune.refraction.chart_line import line_correct_text
from visiontune.refraction.engine_registry import engine_model_types, make_engine
from visiontune.refraction.estimate import CurrentEstimate
from visiontune.refraction.lenses import LensSteps, in_form, lens_changes, lens_power_vector
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.slider import SliderModel, simulated_slider_choice
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial, TrialLog, check_next, is_comparison, is_line, is_slider

__all__ = [
    "STOP_REASONS",
    "Answer",
    "ComparisonReply",
    "LineReply",
    "MemoryLog",
    "PendingComparison",
    "PendingLine",
    "PendingQuery",
    "PendingSlider",
    "Question",
    "Refraction",
    "SimulatedPresenter",
    "SliderReply",
    "engine_model_types",
    "make_engine",
]

#: The ``purpose`` of each random stream of trial ``k``: ``default_rng([seed, k, purpose])``.
POLICY_STREAM, LETTER_STREAM, ESTIMATE_STREAM, REGION_STREAM, COMPARISON_STREAM, SLIDER_STREAM = 0, 1, 2, 3, 4, 5
#: The stream of a chart line's letters (:class:`PendingLine`).
LINE_STREAM = 6
#: Sub-key of a simulated patient's slider answers (after ``[seed, k, TRIAL_KEY]``; 1: duels, 2: comparisons).
SIMULATED_SLIDER_KEY = 3
#: Why a session ended: the budget, the precision reached, nothing left to learn, the clinician.
STOP_REASONS = ("budget", "precision", "information", "clinician")


@dataclass(frozen=True)
class PendingQuery:
    """The next presentation: trial ``index`` (0-based, void trials counted), letter size
    ``s_logmar``, the trial ``lens`` to set (clinical form), the ``letter`` to show and the
    expected information of the answer (bits; ``None`` for the GP model)."""

    index: int
    s_logmar: float
    lens: Prescription
    letter: str
    information_bits: float | None = None


@dataclass(frozen=True)
class PendingComparison:
    """The next comparison: trial ``index`` (void trials counted), the letter size ``s_logmar``
    kept in view, the two lenses (clinical form), the ``letter`` shown through them, the
    expected information of the answer (bits) and, when a lens is held before a trial lens (a
    flipper, a cross-cylinder, a sphere "with or without"), that ``frame_lens``
    (:class:`~visiontune.refraction.trial.Trial`)."""

    index: int
    s_logmar: float
    lens1: Prescription
    lens2: Prescription
    letter: str
    information_bits: float | None = None
    frame_lens: Prescription | None = None


@dataclass(frozen=True)
class ComparisonReply:
    """The patient's comparison answer: ``"1"`` (lens 1 clearer), ``"2"`` or ``"="`` (no difference)."""

    choice: str

    def __post_init__(self) -> None:
        if self.choice not in COMPARISON_ANSWERS:
            raise InvalidInputError(f"choice: expected one of {', '.join(COMPARISON_ANSWERS)}, got {self.choice!r}")


@dataclass(frozen=True)
class PendingSlider:
    """The next slider question: trial ``index`` (void trials counted), the letter size
    ``s_logmar`` the patient reads, the ``knob`` turned (``"sphere"``, ``"cylinder"`` or
    ``"axis"``), the ``lenses`` of its path (trial lenses in the clinic's cylinder form, in knob
    order), ``start`` (the index of the lens the knob starts at: the current estimate), the
    ``letter`` line shown and the expected information of the answer (bits)."""

    index: int
    s_logmar: float
    knob: str
    lenses: tuple[Prescription, ...]
    start: int
    letter: str
    information_bits: float | None = None

    @property
    def start_lens(self) -> Prescription:
        return self.lenses[self.start]


@dataclass(frozen=True)
class SliderReply:
    """The patient's slider answer: ``choice``, the index on the path of the lens where the
    letters were clearest (checked against the pending path when recorded)."""

    choice: int

    def __post_init__(self) -> None:
        if isinstance(self.choice, bool) or not isinstance(self.choice, (int, np.integer)) or self.choice < 0:
            raise InvalidInputError(
                f"choice: expected the index of a lens on the path (an integer >= 0), got {self.choice!r}"
            )
        object.__setattr__(self, "choice", int(self.choice))


@dataclass(frozen=True)
class PendingLine:
    """The next chart line: trial ``index`` (void trials counted), the letter size ``s_logmar``, the
    trial ``lens`` to set (clinical form), the line's ``letters`` (distinct, in reading order, drawn
    at chart spacing), ``crowding_logmar`` (how much harder they are than one letter alone, the
    protocol's) and the expected information of the answer (bits)."""

    index: int
    s_logmar: float
    lens: Prescription
    letters: tuple[str, ...]
    crowding_logmar: float = 0.0
    information_bits: float | None = None

    @property
    def letter(self) -> str:
        """The line as the log stores it in ``letter_shown``."""
        return "".join(self.letters)


@dataclass(frozen=True)
class LineReply:
    """The answer to a chart line: ``correct``, each letter right (True) or wrong, in reading order
    (checked against the pending line's length when recorded)."""

    correct: tuple[bool, ...]

    def __post_init__(self) -> None:
        values = tuple(self.correct) if isinstance(self.correct, (tuple, list)) else None
        if not values or any(not isinstance(c, (bool, np.bool_)) for c in values):
            raise InvalidInputError(
                f"correct: expected each letter's True or False, in reading order, got {self.correct!r}"
            )
        object.__setattr__(self, "correct", tuple(bool(c) for c in values))

    @classmethod
    def from_count(cls, n_correct: int, n_letters: int) -> LineReply:
        """The line read to its ``n_correct``-th letter (the clinician keyed the number read): the
        first ``n_correct`` right, the rest wrong. The likelihood depends on the count alone."""
        is_count = not isinstance(n_correct, bool) and isinstance(n_correct, (int, np.integer))
        if not is_count or not 0 <= n_correct <= n_letters:
            raise InvalidInputError(f"n_correct: expected a count in [0, {n_letters}], got {n_correct!r}")
        return cls(tuple(j < n_correct for j in range(n_letters)))


#: Any question the loop may ask next (:meth:`Refraction.next_query`): a letter, a comparison, a slider or a
#: chart line.
Question = PendingQuery | PendingComparison | PendingSlider | PendingLine


@dataclass(frozen=True)
class Answer:
    """What the patient did: ``letter_named`` (scored against the letter shown; ``None`` for
    "don't know", scored wrong) or, without a letter, ``correct`` as typed by the clinician."""

    correct: bool | None = None
    letter_named: str | None = None


class MemoryLog:
    """A trial log in memory (the bench, ``visiontune simulate``): same interface as the
    SQLite store's session handle, nothing written to disk."""

    def __init__(self) -> None:
        self._trials: list[Trial] = []
        self.state = "open"
        self.result: dict | None = None

    def trials(self, include_void: bool = False) -> list[Trial]:
        return list(self._trials) if include_void else [t for t in self._trials if not t.void]

    def record(self, trial: Trial) -> Trial:
        """Append ``trial`` (its ``index`` the next, void or not), stamped ``answered_at`` now."""
        self._require("record an answer", "open")
        check_next(trial, len(self._trials))
        trial = dataclasses.replace(trial, answered_at=datetime.now(UTC))
        self._trials.append(trial)
        return trial

    def undo(self) -> Trial | None:
        self._require("undo", "open")
        for i in range(len(self._trials) - 1, -1, -1):
            if not self._trials[i].void:
                self._trials[i] = dataclasses.replace(self._trials[i], void=True)
                return self._trials[i]
        return None

    def pause(self) -> None:
        self._require("pause", "open")
        self.state = "paused"

    def resume(self) -> None:
        self._require("resume", "paused")
        self.state = "open"

    def finish(self, result: dict) -> None:
        self._require("finish", "open", "paused")
        self.state, self.result = "finished", result

    def _require(self, action: str, *states: str) -> None:
        if self.state not in states:
            raise SessionError(f"cannot {action}: the session is {self.state}")


def _letters(protocol: Protocol) -> tuple[str, ...]:
    return tuple(load_letter_set(protocol.letter_set).letters)


class Refraction:
    """A refraction driven through a trial ``log``: ``protocol``, ``seed``, ``start`` (the
    :class:`StartingPoint`), ``simulated`` (marks every result), ``cylinder_form`` (the clinic's
    ``"minus"`` or ``"plus"``; default the protocol's): how lenses are shown and recorded (the
    search itself runs in power vectors, the same in both forms)."""

    def __init__(
        self,
        log: TrialLog,
        protocol: Protocol,
        *,
        seed: int,
        start: StartingPoint | None = None,
        simulated: bool = False,
        cylinder_form: str | None = None,
    ) -> None:
        if cylinder_form is not None and cylinder_form != protocol.lenses.cylinder_form:
            steps = protocol.lenses
            protocol = dataclasses.replace(protocol, lenses=LensSteps(steps.step_d, steps.axis_step_deg, cylinder_form))
        self.log = log
        self.protocol = protocol
        self.seed = int(seed)
        self.start_point = start or StartingPoint()
        self.simulated = bool(simulated)
        self.engine = make_engine(protocol, self.start_point, self.seed)
        self.letters = _letters(protocol)
        self._pending: PendingQuery | None = None
        self._estimate: CurrentEstimate | None = None
        self._presented_at: datetime | None = None

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> str:
        return str(getattr(self.log.state, "value", self.log.state))

    def trials(self, include_void: bool = False) -> list:
        return self.log.trials(include_void)

    def _rng(self, k: int, purpose: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, k, purpose])

    def _invalidate(self) -> None:
        self._pending = self._estimate = None
        self._presented_at = None

    def _require_open(self, action: str) -> None:
        if self.state != "open":
            raise SessionError(f"cannot {action}: the session is {self.state}")

    # ------------------------------------------------------------------ trials
    def next_query(self) -> Question:
        """The next presentation (computed once, then cached until the log changes): a letter
        (:class:`PendingQuery`) or, when the protocol asks comparisons or sliders, maybe a
        :class:`PendingComparison`, a :class:`PendingSlider` or a :class:`PendingLine`."""
        self._require_open("propose a query")
        if self._pending is None:
            k = len(self.trials(include_void=True))
            letter = self.letters[int(self._rng(k, LETTER_STREAM).integers(len(self.letters)))]
            choice = self.engine.propose_question(
                self.trials(), self._rng(k, POLICY_STREAM), self._rng(k, COMPARISON_STREAM), self._rng(k, SLIDER_STREAM)
            )
            if choice.kind == "slider":
                self._pending = self._pending_slider(k, choice.slider, letter)
                return self._pending
            if choice.kind == "line":
                self._pending = self._pending_line(k, choice.line)
                return self._pending
            if choice.kind == "comparison":
                c = choice.comparison
                self._pending = PendingComparison(
                    k, c.s_logmar, c.lens1, c.lens2, letter, c.information_bits, c.frame_lens
                )
                return self._pending
            s, lens, info = choice.letter.s_logmar, choice.letter.lens, choice.letter.information_bits
            self._pending = PendingQuery(k, float(s), lens, letter, info)
        return self._pending

    def _pending_slider(self, k: int, q, letter: str) -> PendingSlider:
        """A :class:`PendingSlider` from a :class:`~visiontune.refraction.slider.SliderQuery`: the
        settings the knob clicks through in the clinic's cylinder form; the knob starts at ``t = 0``."""
        form = self.protocol.lenses.cylinder_form
        lenses = tuple(in_form(rx, form) for rx in q.path.settings)
        start = int(np.argmin(np.abs(np.asarray(q.path.t))))
        return PendingSlider(k, float(q.s_logmar), q.knob, lenses, start, letter, q.information_bits)

    def _pending_line(self, k: int, q) -> PendingLine:
        """A :class:`PendingLine` from a :class:`~visiontune.refraction.chart_line.LineQuery`: its
        letters distinct, drawn from ``default_rng([seed, k, LINE_STREAM])``."""
        pick = self._rng(k, LINE_STREAM).choice(len(self.letters), size=q.n_letters, replace=False)
        letters = tuple(self.letters[int(i)] for i in pick)
        crowding = self.protocol.chart_line.crowding_logmar
        return PendingLine(k, float(q.s_logmar), q.lens, letters, crowding, q.information_bits)

    def mark_presented(self) -> None:
        """The clinician confirmed the lens and the letter is on screen (timestamp)."""
        self._presented_at = datetime.now(UTC)

    def score(self, answer: Answer, letter_shown: str) -> tuple[bool, str | None]:
        """``(correct, letter_named)`` for an answer; a letter outside the set is an error."""
        if answer.letter_named is not None:
            named = str(answer.letter_named).strip().upper()
            if named not in self.letters:
                raise InvalidInputError(
                    f"letter_named: {answer.letter_named!r} is not a letter of the {self.protocol.letter_set} set "
                    f"({' '.join(self.letters)}); nothing was recorded"
                )
            return named == letter_shown, named
        if answer.correct is None:
            return False, None
        if not isinstance(answer.correct, (bool, np.bool_)):
            raise InvalidInputError(f"correct: expected True or False, got {answer.correct!r}")
        return bool(answer.correct), None

    def record(self, answer: Answer | ComparisonReply | SliderReply | LineReply):
        """Commit the answer to the pending query to the log, then invalidate the model: an
        :class:`Answer` to a letter, a :class:`ComparisonReply` to a comparison, a
        :class:`SliderReply` to a slider, a :class:`LineReply` to a chart line (any other kind is
        refused, nothing recorded)."""
        q = self.next_query()
        if isinstance(q, PendingLine) or isinstance(answer, LineReply):
            trial = self._record_line(q, answer)
        elif isinstance(q, PendingSlider):
            if not isinstance(answer, SliderReply):
                raise InvalidInputError(
                    f"answer: a slider is pending; expected the index of the clearest lens, "
                    f"got {answer!r}; nothing was recorded"
                )
            if answer.choice >= len(q.lenses):
                raise InvalidInputError(
                    f"choice: expected an index in [0, {len(q.lenses) - 1}] on the {q.knob} path, "
                    f"got {answer.choice}; nothing was recorded"
                )
            trial = self._commit(
                q,
                q.lenses[answer.choice],
                answer.choice == q.start,
                slider_knob=q.knob,
                slider_lenses=q.lenses,
                slider_choice=answer.choice,
            )
        elif isinstance(answer, SliderReply):
            raise InvalidInputError("answer: a slider answer was given, but no slider is pending; nothing was recorded")
        elif isinstance(q, PendingComparison):
            if not isinstance(answer, ComparisonReply):
                raise InvalidInputError(
                    f"answer: a comparison is pending; expected 1, 2 or =, got {answer!r}; nothing was recorded"
                )
            trial = self._commit(
                q, q.lens1, answer.choice == "1", lens2=q.lens2, comparison=answer.choice, frame_lens=q.frame_lens
            )
        else:
            if isinstance(answer, ComparisonReply):
                raise InvalidInputError(
                    "answer: a letter is pending; a comparison answer was given; nothing was recorded"
                )
            correct, named = self.score(answer, q.letter)
            trial = self._commit(q, q.lens, correct, letter_named=named)
        self._invalidate()
        return trial

    def _record_line(self, q, answer):
        """Commit a :class:`LineReply` to the pending :class:`PendingLine` (anything else refused)."""
        if not isinstance(q, PendingLine):
            raise InvalidInputError(
                "answer: a chart line's answer was given, but no line is pending; nothing was recorded"
            )
        if not isinstance(answer, LineReply):
            raise InvalidInputError(
                f"answer: a chart line is pending; expected each letter's right or wrong "
                f"(LineReply), got {answer!r}; nothing was recorded"
            )
        if len(answer.correct) != len(q.letters):
            raise InvalidInputError(
                f"correct: expected {len(q.letters)} answers, one per letter of the line "
                f"{q.letter}, got {len(answer.correct)}; nothing was recorded"
            )
        majority = 2 * sum(answer.correct) > len(answer.correct)
        return self._commit(q, q.lens, majority, line_correct=line_correct_text(answer.correct))

    def _commit(self, q, lens: Prescription, correct: bool, **answer):
        """Record the answer to the pending question ``q`` as one :class:`Trial` (its index, letter
        size and letter, the time it was presented; ``answer``: the kind's own fields)."""
        trial = Trial(q.index, q.s_logmar, lens, q.letter, correct, presented_at=self._presented_at, **answer)
        return self.log.record(trial)

    def undo(self):
        """Void the last valid answer (kept in the log, marked void)."""
        trial = self.log.undo()
        self._invalidate()
        return trial

    def pause(self) -> None:
        self.log.pause()
        self._pending = None

    def resume_paused(self) -> None:
        self.log.resume()

    # ------------------------------------------------------------------ estimates
    @property
    def level(self) -> float:
        p = self.protocol.stopping.precision
        return p.level if p is not None else 0.95

    def current_estimate(self, *, with_region: bool = True) -> CurrentEstimate:
        """Best lens, credible region and predicted acuity for the log as it is now."""
        if self._estimate is None or (with_region and self._estimate.region is None):
            k = len(self.trials(include_void=True))
            rng_region = self._rng(k, REGION_STREAM) if with_region else None
            self._estimate = self.engine.estimate(self.trials(), self._rng(k, ESTIMATE_STREAM), rng_region, self.level)
        return self._estimate

    def stop_reason(self) -> str | None:
        """``"budget"`` when the trial budget is spent; after ``min_trials`` (and the initial
        random trials), ``"precision"`` when the credible region is within the protocol's
        precision, ``"information"`` when the next answer is expected to bring less than
        ``min_information_bits``; else ``None``."""
        stopping = self.protocol.stopping
        n = len(self.trials())
        if n >= stopping.max_trials:
            return "budget"
        if n < max(stopping.min_trials, self.protocol.initial_random_trials):
            return None
        if stopping.precision is not None and self.engine.precision_met(self.current_estimate().region):
            return "precision"
        if stopping.min_information_bits is not None and self.state == "open":
            info = self.next_query().information_bits
            if info is not None and info < stopping.min_information_bits:
                return "information"
        return None

    def progress(self) -> float:
        """How far the session is from its precision stop, in [0, 1] (1 = met): the worst
        ratio of the precision limits to the current region's radii (optics model) or widths
        (GP model), or, with a stop on the lens to file, the probability that it lies within 0.25 D
        over the stop's (:meth:`Engine.filed_progress`), and, when the stop also waits for the
        comparison sensitivity ``κ``, of its
        limit to the spread of ``ln κ`` (:meth:`Engine.sensitivity_progress`), and for
        the over-minus risk, :meth:`Engine.over_minus_progress`; the share
        of the budget used when the protocol has no precision stop."""
        stopping = self.protocol.stopping
        p = stopping.precision
        if p is None:
            return min(1.0, len(self.trials()) / stopping.max_trials)
        region = self.current_estimate().region
        filed = self.engine.filed_progress()
        if filed is not None:
            ratios = (filed,)
        elif p.m_d is not None:
            ratios = (p.m_d / max(region.m_pm_d, 1e-9), p.cylinder_vector_d / max(region.cylinder_vector_pm_d, 1e-9))
        else:
            ws, wc = region.widths_d
            ratios = (p.sphere_d / max(ws, 1e-9), p.cylinder_d / max(wc, 1e-9))
        kappa = self.engine.sensitivity_progress(self.trials())
        ratios = ratios if kappa is None else (*ratios, kappa)
        over_minus = self.engine.over_minus_progress()
        ratios = ratios if over_minus is None else (*ratios, over_minus)
        return float(min(1.0, *ratios))

    def waits_for_over_minus(self) -> bool:
        """Whether this session's precision stop waits until the lens to file is safe from
        over-minus (``stopping.precision.over_minus_risk``, a session the over-minus guard covers)."""
        return self.engine.waits_for_over_minus()

    def lapsed_probability(self) -> float | None:
        """The posterior probability that the patient's attention had lapsed at the last answer, when
        the protocol reads lapses as runs (``model.lapse_run_onset``); else None."""
        return self.engine.lapsed_probability(self.trials())

    def patient_seconds(self) -> float:
        """The patient's time so far by the protocol's durations (s): each valid letter at
        ``comparisons.letter_seconds``, each comparison at ``comparisons.comparison_seconds``
        (the defaults of :class:`~visiontune.refraction.mixed_rules.MixedSettings` without them),
        each slider at ``sliders.slider_seconds``, each chart line at ``chart_line.line_seconds``,
        and each change of lens
        (:func:`~visiontune.refraction.lenses.lens_changes`) at ``comparisons.lens_change_seconds``
        (0 at a phoropter, the default)."""
        settings = self.protocol.comparisons or MixedSettings()
        slider_s = self.protocol.sliders.slider_seconds if self.protocol.sliders is not None else 0.0
        line_s = self.protocol.chart_line.line_seconds if self.protocol.chart_line is not None else 0.0

        def seconds(t) -> float:
            if is_slider(t):
                return slider_s
            if is_line(t):
                return line_s
            return settings.comparison_seconds if is_comparison(t) else settings.letter_seconds

        trials = self.trials()
        answers = float(sum(seconds(t) for t in trials))
        if settings.lens_change_seconds == 0.0:
            return answers
        return answers + settings.lens_change_seconds * lens_changes(trials)

    def psychometric(self, lens: Prescription, n: int = 61):
        """``(s (n,), p, lo, hi)``: the model's ``P(correct)`` against letter size (logMAR)
        through ``lens``, with its credible band at the protocol's level."""
        return self.engine.psychometric(self.trials(), lens, self.level, n)

    def acuity_map(self) -> dict:
        """Predicted acuity (logMAR) on a sphere × cylinder grid (rows: sphere), with the
        grid's ``axis_deg`` (the estimate's axis for the optics model, the fixed one for the GP)."""
        amap = self.engine.acuity_map(self.trials(), self.current_estimate(with_region=False))
        return {"axis_deg": self.engine.axis_deg, **amap}

    def acuity_curve(self, max_points: int = 60) -> list[list[float]]:
        """``[[n_trials, predicted logMAR through the estimate], ...]`` replayed from the log
        at up to ``max_points`` evenly spaced trial counts."""
        valid = self.trials()
        if not valid:
            return []
        counts = np.unique(np.linspace(1, len(valid), min(max_points, len(valid))).round().astype(int))
        curve = [[int(n), self.engine.predicted_acuity(valid[:n], self._rng(int(n), ESTIMATE_STREAM))] for n in counts]
        self.engine.predicted_acuity(valid, self._rng(len(valid), ESTIMATE_STREAM))  # leave the model on the whole log
        return curve

    def result(self, stopped_by: str) -> dict:
        """The session result (the schema :mod:`visiontune.refraction.result` documents)."""
        est = self.current_estimate()
        valid = self.trials()
        times = [t for tr in valid for t in (tr.presented_at, tr.answered_at) if t is not None]
        duration = (max(times) - min(times)).total_seconds() if times else 0.0
        curve = self.acuity_curve()
        region = est.region
        pv = est.rounded.power_vector_array()
        start = self.start_point
        out = {
            "estimate": _rx_dict(est.lens),
            "rounded": _rx_dict(est.rounded),
            "power_vector": {"m_d": float(pv[0]), "j0_d": float(pv[1]), "j45_d": float(pv[2])},
            "credible_interval": {
                "sphere_d": list(region.sphere_d),
                "cylinder_d": list(region.cylinder_d),
                "level": region.level,
                "axis_pm_deg": region.axis_pm_deg,
                "m_pm_d": region.m_pm_d,
                "cylinder_vector_pm_d": region.cylinder_vector_pm_d,
                "distance_d": region.distance_d,
            },
            "predicted_va_logmar": est.va_logmar,
            "predicted_va_interval": list(est.va_interval),
            "trials_used": len(valid),
            "duration_s": duration,
            "stopped_by": stopped_by,
            "acuity_curve": curve,
            "posterior_map": self.engine.acuity_map(valid, est),
            "model": self.protocol.model.type,
            "policy": self.protocol.policy,
            "cylinder_form": self.protocol.lenses.cylinder_form,
            "starting_rx": None if start.rx is None else {**_rx_dict(start.rx), "source": start.source},
            "software_version": __version__,
            "simulated": self.simulated,
        }
        if self.protocol.comparisons is not None:
            out["comparisons_used"] = sum(is_comparison(t) for t in valid)
        if self.protocol.sliders is not None:
            out["sliders_used"] = sum(is_slider(t) for t in valid)
        if self.protocol.chart_line is not None:
            out["lines_used"] = sum(is_line(t) for t in valid)
            out["line_letters_used"] = sum(len(t.line_correct) for t in valid if is_line(t))
        over_minus_risk = self.engine.filed_over_minus_risk(valid, est.rounded)
        if over_minus_risk is not None:
            out["over_minus_risk"] = over_minus_risk
        return out

    def finish(self, stopped_by: str = "clinician") -> dict:
        """Compute the result, store it and close the session for good."""
        if self.state == "finished":
            raise SessionError("the session is already finished")
        if stopped_by not in STOP_REASONS:
            raise InvalidInputError(f"stopped_by: expected one of {', '.join(STOP_REASONS)}, got {stopped_by!r}")
        result = self.result(stopped_by)
        self.log.finish(result)
        self._invalidate()
        return result

    # ------------------------------------------------------------------ headless loop
    def run(self, presenter, *, progress=None, max_steps: int | None = None) -> dict | None:
        """Propose, present, record until a stopping rule fires (then finish and return the
        result) or ``max_steps`` answers were recorded (return ``None``, session left open).
        ``progress(trial, refraction)`` is called after each recorded answer."""
        steps = 0
        while (reason := self.stop_reason()) is None:
            if max_steps is not None and steps >= max_steps:
                return None
            query = self.next_query()
            self.mark_presented()
            trial = self.record(presenter.present(query))
            steps += 1
            if progress is not None:
                progress(trial, self)
        return self.finish(reason)


def _rx_dict(rx: Prescription) -> dict:
    return {"sphere_d": rx.sphere_d, "cylinder_d": rx.cylinder_d, "axis_deg": rx.axis_deg}


def simulated_comparison(patient, query: PendingComparison, model: ComparisonModel | None = None) -> str:
    """A simulated patient's answer to a comparison (``"1"``, ``"2"`` or ``"="``), keyed by the
    trial index; ``model`` default: the Thurstone model of the patient's letter task (Fauvel &
    Chalk's Eq. 11 with an "equal" band) at the patient's own lapse rate."""
    model = model or ComparisonModel(lapse=patient.psychometric.lapse)
    return answer_comparison_trial(patient, query.index, query.s_logmar, query.lens1, query.lens2, model)


def simulated_slider(patient, query: PendingSlider, model: SliderModel | None = None) -> int:
    """A simulated patient's answer to a slider (the index of the clearest lens),
    :func:`~visiontune.refraction.slider.simulated_slider_choice` keyed by the trial index: one
    stream ``default_rng([seed, k, 0x5EED, 3])``, so a resumed session gets the same answer."""
    if getattr(patient, "seed", None) is None:
        raise InvalidInputError("seed: keyed slider answers need the patient built with an integer seed")
    lenses = [tuple(map(float, lens_power_vector(x))) for x in query.lenses]
    rng = np.random.default_rng([patient.seed, query.index, TRIAL_KEY, SIMULATED_SLIDER_KEY])
    return simulated_slider_choice(patient, lenses, model or SliderModel(), rng)


def simulated_line(patient, query: PendingLine) -> LineReply:
    """A simulated patient's chart line: each letter read with the patient's own psychometric
    function at the line's crowding (:meth:`~visiontune.optics.SimulatedPatient.answer_line_trial`,
    keyed by the trial index, so a resumed session gets the same answers)."""
    read = getattr(patient, "answer_line_trial", None)
    if read is None or getattr(patient, "seed", None) is None:
        raise InvalidInputError("patient: chart lines need a simulated patient with keyed answers (an integer seed)")
    return LineReply(read(query.index, query.s_logmar, query.lens, query.letters, query.crowding_logmar))


class SimulatedPresenter:
    """Presents queries to a :class:`visiontune.optics.SimulatedPatient`. The answer to trial
    ``k`` draws from the patient's stream keyed by ``k`` (``answer_trial``) when the patient
    has one, so a resumed session gets the same answers as an uninterrupted one. Comparisons
    are answered with ``comparison_model`` (default: the Thurstone model of the letter task,
    Fauvel & Chalk's Eq. 11 with ties, at the patient's own lapse rate;
    :mod:`visiontune.optics.comparison_answers`). Sliders are answered by :func:`simulated_slider` with
    ``slider_model`` (default :class:`~visiontune.refraction.slider.SliderModel`'s stated one), chart
    lines by :func:`simulated_line`."""

    def __init__(
        self,
        patient,
        *,
        pace_s: float = 0.0,
        comparison_model: ComparisonModel | None = None,
        slider_model: SliderModel | None = None,
    ):
        self.patient = patient
        self.pace_s = pace_s
        self.comparison_model = comparison_model
        self.slider_model = slider_model

    def present(self, query: Question) -> Answer | ComparisonReply | SliderReply | LineReply:
        if self.pace_s:
            time.sleep(self.pace_s)
        if isinstance(query, PendingSlider):
            return SliderReply(simulated_slider(self.patient, query, self.slider_model))
        if isinstance(query, PendingLine):
            return simulated_line(self.patient, query)
        if isinstance(query, PendingComparison):
            return ComparisonReply(simulated_comparison(self.patient, query, self.comparison_model))
        keyed = getattr(self.patient, "answer_trial", None)
        if keyed is not None:
            return Answer(correct=bool(keyed(query.index, query.s_logmar, query.lens, query.letter)))
        return Answer(correct=bool(self.patient.answer(query.s_logmar, query.lens)))
