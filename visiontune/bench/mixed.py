"""Mixed sessions in the bench: letters and comparisons through one model, headless.

A session that may ask "which is clearer, 1 or 2?" as well as a letter (issue 24), run
headless on simulated patients. It is the one trial loop (:class:`~visiontune.refraction.loop.
Refraction`: the same stopping rules, estimates, result and keyed random streams) over a
:class:`MixedLog`, a :class:`~visiontune.refraction.loop.MemoryLog` that also holds
:class:`LoggedComparison` entries; only the proposal and the recording of a comparison are
new (:class:`MixedRefraction`). The budget counts answers of both kinds. Nothing here touches
the SQLite session store or the app: the clinic's sessions are letter-only, as before.

The choice of question is :func:`visiontune.refraction.mixed_rules.propose_mixed` (value per
second of the patient's time); the posterior takes both kinds of answers
(:meth:`ParticlePosterior.observe <visiontune.refraction.optics_model.ParticlePosterior.observe>`);
the simulated patient answers comparisons with
:func:`visiontune.optics.comparison.answer_comparison_trial`, keyed by ``(seed, k)`` like its
letters. Every random choice of trial ``k`` draws from ``default_rng([seed, k, purpose])``: the
loop's purposes, and :data:`COMPARISON_PURPOSE` for the comparison's candidates.

:func:`run_mixed_case` refracts one case of a population and scores it as
:func:`visiontune.bench.clinic.run_case` does, plus the number of letters and comparisons,
the patient's time (each answer counted at its setting's duration) and the error of the filed
lens after every answer (to compare sessions at equal answers or equal time).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from visiontune.bench.clinic import CaseResult, RunKeyLike, TimedPresenter, case_metrics
from visiontune.errors import InvalidInputError, SessionError
from visiontune.optics import Prescription
from visiontune.optics.comparison import (
    COMPARISON_ANSWERS,
    ComparisonModel,
    answer_comparison_trial,
)
from visiontune.refraction.comparisons import ComparisonAnswer
from visiontune.refraction.lenses import lens_power_vector
from visiontune.refraction.loop import (
    LETTER_STREAM,
    POLICY_STREAM,
    MemoryLog,
    PendingQuery,
    Refraction,
)
from visiontune.refraction.mixed_rules import MixedChoice, MixedSettings, propose_mixed
from visiontune.refraction.optics_engine import OpticsEngine
from visiontune.refraction.optics_rules import OpticsQuery
from visiontune.refraction.population import PatientCase
from visiontune.refraction.protocol import parse_protocol
from visiontune.refraction.start import StartingPoint

__all__ = [
    "COMPARISON_PURPOSE",
    "ComparisonReply",
    "LoggedComparison",
    "MixedCaseSpec",
    "MixedLog",
    "MixedOpticsEngine",
    "MixedPresenter",
    "MixedRefraction",
    "PendingComparison",
    "run_mixed_case",
]

#: Purpose of the comparison candidates' stream ``default_rng([seed, k, COMPARISON_PURPOSE])``.
COMPARISON_PURPOSE = 4


@dataclass(frozen=True)
class PendingComparison:
    """The next comparison: trial ``index`` (void trials counted), letter size ``s_logmar``, the
    two trial lenses (clinical form) and the expected information of the answer (bits)."""

    index: int
    s_logmar: float
    lens1: Prescription
    lens2: Prescription
    information_bits: float | None = None


@dataclass(frozen=True)
class ComparisonReply:
    """The patient's comparison answer: ``"1"``, ``"2"`` or ``"="``."""

    choice: str

    def __post_init__(self) -> None:
        if self.choice not in COMPARISON_ANSWERS:
            raise InvalidInputError(f"choice: expected one of {', '.join(COMPARISON_ANSWERS)}, got {self.choice!r}")


@dataclass(frozen=True)
class LoggedComparison:
    """One comparison in a :class:`MixedLog`."""

    index: int
    s_logmar: float
    lens1: Prescription
    lens2: Prescription
    answer: str
    presented_at: datetime | None = None
    answered_at: datetime | None = None
    void: bool = False


class MixedLog(MemoryLog):
    """A :class:`MemoryLog` that also records comparisons: ``trials()`` lists both kinds in the
    order they were answered; :meth:`undo` voids the last valid entry of either kind."""

    def record_comparison(self, s_logmar, lens1, lens2, answer, presented_at=None) -> LoggedComparison:
        self._require("record an answer", "open")
        if answer not in COMPARISON_ANSWERS:
            raise InvalidInputError(f"answer: expected one of {', '.join(COMPARISON_ANSWERS)}, got {answer!r}")
        entry = LoggedComparison(len(self._trials), float(s_logmar), lens1, lens2, answer, presented_at,
                                 datetime.now(UTC))  # fmt: skip
        self._trials.append(entry)
        return entry

    def undo(self):
        self._require("undo", "open")
        for i in range(len(self._trials) - 1, -1, -1):
            if not self._trials[i].void:
                self._trials[i] = dataclasses.replace(self._trials[i], void=True)
                return self._trials[i]
        return None


def _rx_key(lens) -> tuple:
    return (float(lens.sphere_d), float(lens.cylinder_d), float(lens.axis_deg))


class MixedOpticsEngine(OpticsEngine):
    """The optics engine over a log of letters and comparisons (``settings.comparison`` gives
    the comparisons' likelihood); proposes with :func:`propose_mixed`."""

    def __init__(self, protocol, start: StartingPoint, seed: int, settings: MixedSettings) -> None:
        super().__init__(protocol, start, seed)
        self.settings = settings

    @staticmethod
    def _trial_key(t) -> tuple:
        if isinstance(t, LoggedComparison):
            return ("comparison", float(t.s_logmar), _rx_key(t.lens1), _rx_key(t.lens2), t.answer)
        return OpticsEngine._trial_key(t)

    def _observe(self, t) -> None:
        """A comparison through its likelihood (``settings.comparison``); a letter as the optics engine does."""
        if not isinstance(t, LoggedComparison):
            return super()._observe(t)
        l1, l2 = lens_power_vector(t.lens1), lens_power_vector(t.lens2)
        self._posterior.observe(ComparisonAnswer(float(t.s_logmar), tuple(map(float, l1)), tuple(map(float, l2)),
                                                 t.answer, self.settings.comparison))  # fmt: skip

    def propose_mixed(self, trials, rng_letter: np.random.Generator, rng_comparison: np.random.Generator) -> MixedChoice:
        """The next question; the protocol's initial random trials are letters, as in :meth:`propose`."""
        if len(trials) < self.protocol.initial_random_trials:
            s, lens, info = self.propose(trials, rng_letter)
            return MixedChoice("letter", OpticsQuery(s, lens, info))
        post = self.posterior(trials)
        return propose_mixed(post, self.protocol.policy, self.settings, steps=self.protocol.lenses, s_grid=self.s_grid,
                             radius=self.radius(post), rng_letter=rng_letter, rng_comparison=rng_comparison)  # fmt: skip


class MixedRefraction(Refraction):
    """:class:`Refraction` over a :class:`MixedLog` with the optics model; ``settings`` (a
    :class:`MixedSettings`) say whether and how comparisons are asked. With
    ``settings.comparisons`` False it asks exactly the letters of :class:`Refraction`."""

    def __init__(self, log: MixedLog, protocol, *, seed: int, settings: MixedSettings,
                 start: StartingPoint | None = None, simulated: bool = False) -> None:
        if protocol.model.type != "optics":
            raise InvalidInputError(f"protocol: mixed sessions need the optics model, got model.type = {protocol.model.type!r}")
        super().__init__(log, protocol, seed=seed, start=start, simulated=simulated)
        self.settings = settings
        self.engine = MixedOpticsEngine(self.protocol, self.start_point, self.seed, settings)
        self.last_choice: MixedChoice | None = None

    def next_query(self):
        """The next presentation: a :class:`PendingQuery` (a letter) or a :class:`PendingComparison`."""
        self._require_open("propose a query")
        if self._pending is None:
            k = len(self.trials(include_void=True))
            choice = self.engine.propose_mixed(self.trials(), self._rng(k, POLICY_STREAM), self._rng(k, COMPARISON_PURPOSE))
            self.last_choice = choice
            if choice.kind == "comparison":
                c = choice.comparison
                self._pending = PendingComparison(k, c.s_logmar, c.lens1, c.lens2, c.information_bits)
            else:
                q = choice.letter
                letter = self.letters[int(self._rng(k, LETTER_STREAM).integers(len(self.letters)))]
                self._pending = PendingQuery(k, float(q.s_logmar), q.lens, letter, q.information_bits)
        return self._pending

    def record(self, answer):
        """Commit the answer to the pending question (a :class:`ComparisonReply` to a comparison,
        an :class:`~visiontune.refraction.loop.Answer` to a letter)."""
        q = self.next_query()
        if isinstance(q, PendingComparison):
            if not isinstance(answer, ComparisonReply):
                raise InvalidInputError(f"answer: a comparison is pending; expected 1, 2 or =, got {answer!r}")
            entry = self.log.record_comparison(q.s_logmar, q.lens1, q.lens2, answer.choice, self._presented_at)
            self._invalidate()
            return entry
        if isinstance(answer, ComparisonReply):
            raise InvalidInputError("answer: a letter is pending; a comparison answer was given")
        return super().record(answer)

    def patient_seconds(self) -> float:
        """The patient's time so far: each valid answer at its setting's duration (s)."""
        return float(sum(self.settings.comparison_seconds if isinstance(t, LoggedComparison)
                         else self.settings.letter_seconds for t in self.trials()))  # fmt: skip


class MixedPresenter(TimedPresenter):
    """Presents letters (as :class:`SimulatedPresenter`) and comparisons (answered with the
    patient's ``comparison_model``, keyed by the trial index) and times each decision."""

    def __init__(self, patient, comparison_model: ComparisonModel) -> None:
        super().__init__(patient)
        self.comparison_model = comparison_model

    def answer(self, query):
        if isinstance(query, PendingComparison):
            return ComparisonReply(answer_comparison_trial(self.patient, query.index, query.s_logmar, query.lens1,
                                                           query.lens2, self.comparison_model))  # fmt: skip
        return super().answer(query)


@dataclass(frozen=True)
class MixedCaseSpec:
    """One run: ``experiment``, the protocol (TOML text and name), a ``label`` for the variant
    (stored as the run's policy), the ``population`` and ``case``, the session's ``settings`` and
    the ``patient_comparison`` model the simulated patient answers with (default: the
    settings' model with the patient's own lapse rate)."""

    experiment: str
    protocol_text: str
    protocol_source: str
    label: str
    population: str
    case: PatientCase
    settings: MixedSettings
    patient_comparison: ComparisonModel | None = None

    @property
    def key(self) -> RunKeyLike:
        return RunKeyLike(self.experiment, self.population, self.label, self.case.case_id)


def run_mixed_case(spec: MixedCaseSpec) -> CaseResult:
    """Refract one simulated patient in a mixed session; the metrics of
    :func:`visiontune.bench.clinic.case_metrics` plus ``letters``, ``comparisons``,
    ``equal_answers``, ``patient_s`` and, after every answer, the error of the filed lens
    (``error_by_answer``, D) and the patient's time (``seconds_by_answer``, s)."""
    t0 = time.perf_counter()
    protocol = parse_protocol(spec.protocol_text, spec.protocol_source)
    case = spec.case
    try:
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    except InvalidInputError as exc:
        return CaseResult(spec.key, {"refused": str(exc)}, 0, time.perf_counter() - t0)
    refraction = MixedRefraction(MixedLog(), protocol, seed=case.seed, settings=spec.settings, start=start, simulated=True)
    patient = case.patient(protocol.n_alternatives)
    model = spec.patient_comparison or dataclasses.replace(spec.settings.comparison, lapse=patient.psychometric.lapse)
    presenter = MixedPresenter(patient, model)
    truth = case.true_rx.power_vector_array()
    errors: list[float] = []
    seconds: list[float] = []

    def track(_entry, r: MixedRefraction) -> None:
        found = r.engine.filed_lens(r.engine.posterior(r.trials()))
        errors.append(float(np.linalg.norm(found.power_vector_array() - truth)))
        seconds.append(r.patient_seconds())

    result = refraction.run(presenter, progress=track)
    if result is None:  # pragma: no cover - run() without max_steps always finishes
        raise SessionError("the mixed session did not finish")
    m = case_metrics(refraction, result, case, patient, presenter.decision_s)
    valid = refraction.trials()
    n_comp = sum(isinstance(t, LoggedComparison) for t in valid)
    m.update({"letters": len(valid) - n_comp, "comparisons": n_comp,
              "equal_answers": sum(isinstance(t, LoggedComparison) and t.answer == "=" for t in valid),
              "patient_s": refraction.patient_seconds(), "error_by_answer": errors, "seconds_by_answer": seconds})  # fmt: skip
    return CaseResult(spec.key, m, int(result["trials_used"]), time.perf_counter() - t0)
