"""How long the patients of a trial log took per answer, by kind of question: to refit durations.

The mixed rule weighs a letter, a comparison, a slider and a chart line by value per second of the
patient's time, at the protocol's ``letter_seconds``, ``comparison_seconds``, ``slider_seconds``
and ``line_seconds``
(defaults and their sources: :mod:`visiontune.refraction.durations`). This module measures them
in a clinic's own sessions: the answer time of a trial is ``answered_at - presented_at`` (the
lens in place and the question on screen, to the answer recorded), in seconds, and for each kind
of question it reports the number of answers, the median, the quartiles (IQR ``Q3 - Q1``) and
the mean (``numpy.percentile``, linear interpolation). The median is the robust value to put in
a protocol (an interruption lengthens one answer, not the median); the mean is what the
patient's total time grows by per question.

Left out, each counted: void answers (undone: the patient's answer was withdrawn); answers whose
time spans a ``pause`` or ``resume`` event (the clock ran while the session stood); untimed
answers (``answered_at == presented_at``: recorded without a ``presented_at``, so the store's
clock gave both); damaged sessions (the store reports them). Simulated sessions are left out
unless asked for, since their clock is the computer's, not a patient's; asked for, they are
summarised apart and marked SIMULATED, never mixed with real patients' answers.

Kinds: ``letter`` (one letter, no second lens), ``comparison`` (a "1 or 2" answer), ``slider`` (a
knob position), ``line`` (a chart line read aloud, its letters keyed: one answer of several letters,
timed as one, from the line on screen to the line recorded), ``duel`` (a second lens without a
comparison answer: the preferential protocols).

**Between answers: the lens change.** The question is on screen (``presented_at``) once the
clinician has confirmed the lens is in place, so an answer time holds no change of lens before it
(a comparison's switch to lens 2 and a slider's clicks are inside it). The change is in the gap
from one answer to the next question on screen (``presented_at`` of trial ``k+1`` minus
``answered_at`` of trial ``k``): the clinician reading the next lens, setting it and confirming.
:func:`gap_seconds` sorts those gaps by whether the next question's first lens has the power of
the last lens shown (:func:`~visiontune.refraction.lenses.same_lens`): ``lens kept`` or ``lens
changed``. The difference of their medians is what a change of lens costs in this clinic (a
phoropter's dial or a trial frame's swap), the number to weigh against the lens changes a protocol
asks (the validation's *lens changes*). Void trials count (their lens was placed); a gap around
an untimed answer, or spanning a ``pause`` or ``resume``, is left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from visiontune.errors import StoreError
from visiontune.refraction.lenses import lens_left_in_place, lenses_shown, same_lens
from visiontune.refraction.trial import Trial, is_line, trial_kind
from visiontune.session.records import EventKind

__all__ = [
    "GAPS",
    "KINDS",
    "AnswerTimes",
    "KindTimes",
    "answer_seconds",
    "answer_times",
    "gap_seconds",
    "question_kind",
]

#: Kinds of question, in report order.
KINDS = ("letter", "comparison", "slider", "line", "duel")
#: The gaps between an answer and the next question on screen (module docstring), in report order.
GAPS = ("lens kept", "lens changed")


def question_kind(trial: Trial) -> str:
    """The kind of question a stored trial answered (one of :data:`KINDS`): its
    :func:`~visiontune.refraction.trial.trial_kind`, except that a chart line (several letters read
    aloud, one answer) and a duel (two lenses without a comparison answer, the preferential
    protocols) are timed apart from a letter."""
    if is_line(trial):
        return "line"
    kind = trial_kind(trial)
    return "duel" if kind == "letter" and trial.lens2 is not None else kind


@dataclass(frozen=True)
class KindTimes:
    """Answer times of one kind of question (s): ``n`` answers from ``sessions`` sessions, the
    median and quartiles, the mean; ``simulated`` when they come from simulated sessions."""

    kind: str
    n: int
    sessions: int
    median_s: float
    q1_s: float
    q3_s: float
    mean_s: float
    simulated: bool = False

    @property
    def iqr_s(self) -> float:
        """The interquartile range ``Q3 - Q1`` (s)."""
        return self.q3_s - self.q1_s


@dataclass(frozen=True)
class AnswerTimes:
    """What :func:`answer_times` found: ``rows`` (one :class:`KindTimes` per kind with answers,
    real patients' first, then the simulated ones if asked for), the sessions used (real and
    simulated) and what was left out, each counted (``left_out``: reason -> count)."""

    rows: tuple[KindTimes, ...]
    real_sessions: int
    simulated_sessions: int
    left_out: dict[str, int] = field(default_factory=dict)
    gaps: tuple[KindTimes, ...] = ()

    def lens_change_s(self, *, simulated: bool = False) -> float | None:
        """What a change of lens adds between answers (s): the median gap with the lens changed
        minus the median gap with it kept (module docstring), or ``None`` without both."""
        kept, changed = (next((r for r in self.gaps if r.kind == g and r.simulated == simulated), None) for g in GAPS)
        return None if kept is None or changed is None else changed.median_s - kept.median_s

    def row(self, kind: str, *, simulated: bool = False) -> KindTimes | None:
        """The row of ``kind`` (real patients', or the simulated one), or ``None`` if no answers."""
        return next((r for r in self.rows if r.kind == kind and r.simulated == simulated), None)


def answer_seconds(trials, pauses=()) -> tuple[dict[str, list[float]], dict[str, int]]:
    """``({kind: [answer seconds, ...]}, {reason left out: count})`` of one session's stored
    ``trials`` (void ones included in the list, then left out), ``pauses`` the times of its
    ``pause`` and ``resume`` events (module docstring)."""
    seconds: dict[str, list[float]] = {}
    left: dict[str, int] = {}
    for t in trials:
        gap = (t.answered_at - t.presented_at).total_seconds()
        if t.void:
            reason = "void (undone) answers"
        elif gap <= 0.0:
            reason = "untimed answers (no presented_at)"
        elif any(t.presented_at <= at <= t.answered_at for at in pauses):
            reason = "answers spanning a pause"
        else:
            seconds.setdefault(question_kind(t), []).append(gap)
            continue
        left[reason] = left.get(reason, 0) + 1
    return seconds, left


def gap_seconds(trials, pauses=()) -> tuple[dict[str, list[float]], dict[str, int]]:
    """``({"lens kept" | "lens changed": [gap seconds, ...]}, {reason left out: count})`` of one
    session's stored ``trials`` in order, void ones included, ``pauses`` the times of its ``pause``
    and ``resume`` events (module docstring)."""
    gaps: dict[str, list[float]] = {}
    left: dict[str, int] = {}
    for before, after in zip(trials, trials[1:]):
        gap = (after.presented_at - before.answered_at).total_seconds()
        untimed = before.answered_at <= before.presented_at or after.answered_at <= after.presented_at
        if untimed or gap <= 0.0:
            reason = "gaps between answers around an untimed one"
        elif any(before.answered_at <= at <= after.presented_at for at in pauses):
            reason = "gaps between answers spanning a pause"
        else:
            kept = same_lens(lens_left_in_place(before), lenses_shown(after)[0])
            gaps.setdefault(GAPS[0] if kept else GAPS[1], []).append(gap)
            continue
        left[reason] = left.get(reason, 0) + 1
    return gaps, left


def _rows(
    seconds: dict[str, list[float]], sessions: dict[str, set[int]], simulated: bool, kinds: tuple[str, ...] = KINDS
) -> list[KindTimes]:
    rows = []
    for kind in kinds:
        values = np.asarray(seconds.get(kind, ()), dtype=float)
        if values.size:
            q1, med, q3 = np.percentile(values, [25.0, 50.0, 75.0])
            rows.append(
                KindTimes(
                    kind,
                    int(values.size),
                    len(sessions[kind]),
                    float(med),
                    float(q1),
                    float(q3),
                    float(values.mean()),
                    simulated,
                )
            )
    return rows


def answer_times(store, *, include_simulated: bool = False) -> AnswerTimes:
    """Answer times per kind of question over the sessions of ``store`` (a
    :class:`~visiontune.session.store.TrialStore`), real patients' only unless
    ``include_simulated`` (then summarised apart, marked SIMULATED; module docstring)."""
    seconds: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    kind_sessions: dict[bool, dict[str, set[int]]] = {False: {}, True: {}}
    gap_values: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    gap_sessions: dict[bool, dict[str, set[int]]] = {False: {}, True: {}}
    used = {False: 0, True: 0}
    left: dict[str, int] = {}

    def leave(reason: str, count: int = 1) -> None:
        left[reason] = left.get(reason, 0) + count

    for info in store.list_sessions():
        if info.damaged:
            leave("damaged sessions")
            continue
        if info.simulated and not include_simulated:
            leave("SIMULATED sessions (the computer's clock)")
            continue
        try:
            trials = store.trials(info.session_id, include_void=True)
            pauses = [e.at for e in store.events(info.session_id) if e.kind in (EventKind.PAUSE, EventKind.RESUME)]
        except StoreError:
            leave("damaged sessions")
            continue
        found, skipped = answer_seconds(trials, pauses)
        between, skipped_gaps = gap_seconds(trials, pauses)
        for reason, count in (skipped | skipped_gaps).items():
            leave(reason, count)
        for kind, values in between.items():
            gap_values[info.simulated].setdefault(kind, []).extend(values)
            gap_sessions[info.simulated].setdefault(kind, set()).add(info.session_id)
        if not found:
            continue
        used[info.simulated] += 1
        for kind, values in found.items():
            seconds[info.simulated].setdefault(kind, []).extend(values)
            kind_sessions[info.simulated].setdefault(kind, set()).add(info.session_id)
    rows = _rows(seconds[False], kind_sessions[False], False) + _rows(seconds[True], kind_sessions[True], True)
    gaps = _rows(gap_values[False], gap_sessions[False], False, GAPS) + _rows(
        gap_values[True], gap_sessions[True], True, GAPS
    )
    return AnswerTimes(tuple(rows), used[False], used[True], left, tuple(gaps))
