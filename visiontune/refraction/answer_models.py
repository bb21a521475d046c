"""Simulated patients whose answers do not follow the session's model (validation only).

The session's model of a comparison ("which is clearer, 1 or 2?") is Fauvel & Chalk's Eq. 11
with an "equal" band ``τ`` and lapses (:mod:`visiontune.optics.comparison_answers`): a signal ``δ``
(positive when lens 1 is the clearer) and::

    P("1") = Φ(δ - τ)      P("2") = Φ(-δ - τ)      P("=") = Φ(δ + τ) - Φ(δ - τ)
    P <- (1 - ε) P + ε / 3

(Glenn & David 1960, ties in the Thurstone model). An :class:`AnswerModel` is a patient who
answers otherwise, in one respect at a time, so that a validation can say which departure
breaks what. The patient's signal is::

    δ_patient = κ_p δ_0 + β_minus m - β_last

with ``δ_0`` the signal of the patient's own formula (``kind``: ``"thurstone"``, Eq. 11 from the
patient's letter task, or ``"blur"``, blur discrimination; :mod:`visiontune.optics.comparison_answers`),
and then the band ``τ_p`` and the patient's own lapse ``ε``:

* **Discrimination threshold** (``signal_scale`` ``κ_p``): the difference of lenses a patient
  tells apart 75% of the time scales as ``1 / κ_p`` (the signal is in units of the judgement's
  noise), so ``κ_p = 0.5`` doubles the threshold (``wide-threshold``) and ``κ_p = 2`` halves it
  (``narrow-threshold``). Patients differ this much: a clinician's repeat subjective refraction
  agrees within 0.25 D only about 80% of the time (Bullimore, Fusaro & Adams 1998, *The
  repeatability of automated and clinician refraction*, Optom. Vis. Sci. 75:617; Goss &
  Grosvenor 1996, *Reliability of refraction: a literature review*, J. Am. Optom. Assoc. 67:619,
  95% limits of about +-0.50 D), and blur-detection thresholds range 0.10-0.18 D between
  observers (Jacobs, Smith & Chan 1989). The factor 2 either way is **assumed**.
* **"No difference" more or less often** (``indifference`` ``τ_p``): the session's model has
  ``τ = 0.5`` ("=" at ``δ = 0`` 38% of the time: ``2 Φ(τ) - 1``). ``τ_p = 1.0`` (68%,
  ``more-equal``) or ``0.1`` (8%, ``less-equal``, nearly a forced choice). The three-answer format
  and its "undecided" answers: Kaernbach 2001 (*Adaptive threshold estimation with unforced-choice
  tasks*, Percept. Psychophys. 63:1377), García-Pérez & Alcalá-Quintana 2011 (*Interval bias in
  2AFC detection tasks: sorting out the artifacts*, Atten. Percept. Psychophys. 73:2332, the
  "indecision" model); how often a patient says it is a trait of the patient (**assumed** values).
* **Toward the lens shown last** (``last_bias`` ``β_last``, in units of the judgement's noise):
  the order of two presentations biases a comparison (Fechner's "time-order error"; 2-IFC is
  not unbiased: Yeshurun, Carrasco & Maloney 2008, *Bias and sensitivity in two-interval forced
  choice procedures*, Vision Res. 48:1837; García-Pérez & Alcalá-Quintana 2011). Lens 2 is the
  one shown last, so the bias lowers ``δ``. ``β_last = 0.5`` (**assumed**: at ``δ = 0`` lens 2
  is named 50% of the time and lens 1 16%).
* **Toward the more minus lens** (``minus_bias`` ``β_minus``): through more minus an eye that can
  accommodate sees the letters smaller and blacker and often prefers them (the reason for the
  clinician's "most plus to best acuity" rule and the duochrome/fogging checks; e.g. Benjamin
  2006, *Borish's Clinical Refraction*, 2nd ed., ch. 20). ``m = +1`` when lens 1 has the lower
  (more minus) spherical equivalent, ``-1`` when lens 2 has, 0 when equal, and only when the
  patient's usable accommodation ``A_s`` clears the more minus lens (``M_true - M_minus <= A_s``:
  the lens over-minuses by no more than the eye can accommodate). ``β_minus = 0.5`` (**assumed**).
* **Lapses that come in runs** (``lapse_onset`` ``a``, ``lapse_recovery`` ``b``): attention is a
  two-state Markov chain over the trials, attentive -> lapsed with probability ``a``, lapsed ->
  attentive with ``b`` (the NEMA model of mind wandering, Killeen 2013, *Absent without leave; a
  neuroenergetic theory of mind wandering*, Front. Psychol. 4:373: ``λ`` and ``α`` there). The
  chain's stationary share of lapsed trials is ``a / (a + b)`` and a run of lapses lasts
  ``1 / b`` trials on average (geometric). Trial 0 starts lapsed with the stationary probability.
  A lapsed patient answers at random: a comparison uniformly among the three answers, a letter
  right with the guess rate ``1 / n``, each letter of a chart line likewise. Independent
  lapses are the usual model (Wichmann & Hill 2001, *The psychometric function: I. Fitting,
  sampling, and goodness of fit*, Percept. Psychophys. 63:1293, who show that unmodelled lapses
  bias the fitted slope); runs are what a tired or distracted patient gives. ``a = 0.02``,
  ``b = 0.25`` (**assumed**: 7.4% of trials lapsed, in runs of 4 on average), on top of the
  patient's own independent lapse.

Every answer is keyed by the trial index, as :class:`~visiontune.optics.SimulatedPatient`'s
(a resumed session answers as the uninterrupted one): a comparison draws the same uniform as the
default patient (``default_rng([seed, k, 0x5EED, 2])``, so the ``model`` answer model gives exactly
the default patient's answers), the attention chain one uniform per trial from
``default_rng([seed, j, 0x5EED, 11])`` (state at ``k`` from the states at ``0..k``), a lapsed
letter or line its guesses from ``default_rng([seed, k, 0x5EED, 12])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics.comparison_answers import (
    COMPARISON_ANSWERS,
    COMPARISON_KINDS,
    COMPARISON_STREAM,
    ComparisonModel,
    blur_discrimination_signal,
    ternary_probabilities,
)
from visiontune.optics.patient import TRIAL_KEY, SimulatedPatient
from visiontune.refraction.lenses import lens_power_vector
from visiontune.refraction.loop import (
    Answer,
    ComparisonReply,
    LineReply,
    PendingComparison,
    PendingLine,
    PendingSlider,
    SimulatedPresenter,
)

__all__ = [
    "ANSWER_MODELS",
    "AnswerModel",
    "AnswerModelAnswers",
    "AnswerModelPresenter",
    "AttentionChain",
    "answer_model_by_name",
    "answer_probabilities",
    "minus_preference_sign",
    "patient_signal",
]

#: Sub-key of the attention chain's uniforms (after ``[seed, j, TRIAL_KEY]``).
ATTENTION_STREAM = 11
#: Sub-key of a lapsed letter's or line's guesses.
GUESS_STREAM = 12


@dataclass(frozen=True)
class AnswerModel:
    """How a simulated patient answers (module docstring for each field and its source).

    ``kind``: the patient's comparison formula (``"thurstone"`` or ``"blur"``). ``signal_scale``
    ``κ_p`` (> 0): the signal's scale, ``1 / κ_p`` the discrimination threshold's. ``indifference``
    ``τ_p`` >= 0: the "equal" band. ``last_bias`` ``β_last``: toward lens 2 (shown last).
    ``minus_bias`` ``β_minus``: toward the more minus lens, for an eye that can accommodate.
    ``lapse_onset`` ``a`` and ``lapse_recovery`` ``b``: the two-state attention chain (``a = 0``:
    no runs of lapses)."""

    name: str
    description: str
    kind: str = "thurstone"
    signal_scale: float = 1.0
    indifference: float = 0.5
    last_bias: float = 0.0
    minus_bias: float = 0.0
    lapse_onset: float = 0.0
    lapse_recovery: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in COMPARISON_KINDS:
            raise InvalidInputError(
                f"answer model {self.name!r}: kind: expected one of {', '.join(COMPARISON_KINDS)}, got {self.kind!r}"
            )
        for field, lo, hi in (
            ("signal_scale", 0.01, 100.0),
            ("indifference", 0.0, 5.0),
            ("last_bias", -5.0, 5.0),
            ("minus_bias", -5.0, 5.0),
            ("lapse_onset", 0.0, 1.0),
            ("lapse_recovery", 0.001, 1.0),
        ):
            check_number(f"answer model {self.name!r}: {field}", getattr(self, field), lo, hi)

    @property
    def has_lapse_runs(self) -> bool:
        return self.lapse_onset > 0.0

    @property
    def stationary_lapse_share(self) -> float:
        """``a / (a + b)``: the share of trials the chain spends lapsed in the long run."""
        return self.lapse_onset / (self.lapse_onset + self.lapse_recovery)

    @property
    def mean_run_trials(self) -> float:
        """``1 / b``: the mean length of a run of lapsed trials."""
        return 1.0 / self.lapse_recovery


def _models() -> dict[str, AnswerModel]:
    models = [
        AnswerModel("model", "Eq. 11 of the patient's own letter task, \"equal\" band 0.5 (the session's model)"),
        AnswerModel("blur", 'blur discrimination (Watson & Ahumada 2011 dipper), "equal" band 0.5', kind="blur"),
        AnswerModel(
            "wide-threshold",
            "Eq. 11 with half the signal: the discrimination threshold twice the model's",
            signal_scale=0.5,
        ),
        AnswerModel(
            "narrow-threshold", "Eq. 11 with twice the signal: the threshold half the model's", signal_scale=2.0
        ),
        AnswerModel(
            "more-equal", 'Eq. 11, "no difference" band 1.0 (68% at equal lenses, the model 38%)', indifference=1.0
        ),
        AnswerModel(
            "less-equal", 'Eq. 11, "no difference" band 0.1 (8% at equal lenses): nearly forced', indifference=0.1
        ),
        AnswerModel(
            "last-lens-bias", "Eq. 11 biased toward lens 2, the one shown last (0.5 noise units)", last_bias=0.5
        ),
        AnswerModel(
            "minus-bias",
            "Eq. 11 biased toward the more minus lens when the eye can accommodate to clear it (0.5 noise units)",
            minus_bias=0.5,
        ),
        AnswerModel(
            "lapse-runs",
            "Eq. 11; attention a two-state Markov chain (onset 0.02, recovery 0.25 a trial: "
            "7.4% of trials lapsed, runs of 4), answers at random while lapsed",
            lapse_onset=0.02,
            lapse_recovery=0.25,
        ),
    ]
    return {m.name: m for m in models}


#: The answer models a validation runs, by name (``visiontune validate --answer-model``).
ANSWER_MODELS: dict[str, AnswerModel] = _models()


def answer_model_by_name(name: str) -> AnswerModel:
    """The registered answer model ``name``, or an error listing the names."""
    if name not in ANSWER_MODELS:
        raise InvalidInputError(f"answer model: expected one of {', '.join(ANSWER_MODELS)}, got {name!r}")
    return ANSWER_MODELS[name]


def minus_preference_sign(patient: SimulatedPatient, lens1, lens2) -> int:
    """``m``: +1 when lens 1 is the more minus (lower ``M``), -1 when lens 2 is, 0 when their ``M``
    are equal (to 1e-9 D) or when the patient's usable accommodation cannot clear the more minus
    lens (``M_true - M_minus > A_s``)."""
    m1, m2 = float(lens_power_vector(lens1)[0]), float(lens_power_vector(lens2)[0])
    if abs(m1 - m2) <= 1e-9:
        return 0
    m_true = float(patient.true_rx.power_vector_array()[0])
    if m_true - min(m1, m2) > patient.usable_accommodation_d + 1e-12:
        return 0
    return 1 if m1 < m2 else -1


def patient_signal(patient: SimulatedPatient, k: int, s: float, lens1, lens2, model: AnswerModel) -> float:
    """``δ_patient = κ_p δ_0 + β_minus m - β_last`` (module docstring); ``δ_0`` of the patient's
    ``kind`` as :func:`visiontune.optics.comparison_answers.patient_comparison_probabilities` computes it."""
    if model.kind == "thurstone":
        p = float(patient.preference_probability_at_trial(k, s, lens1, lens2))
        delta0 = float(ndtri(min(max(p, 1e-15), 1.0 - 1e-15)))
    else:
        delta0 = float(
            blur_discrimination_signal(
                patient.blur_diopters(lens1), patient.blur_diopters(lens2), ComparisonModel(kind="blur")
            )
        )
    bias = model.minus_bias * minus_preference_sign(patient, lens1, lens2) if model.minus_bias else 0.0
    return model.signal_scale * delta0 + bias - model.last_bias


def answer_probabilities(
    patient: SimulatedPatient, k: int, s: float, lens1, lens2, model: AnswerModel, *, lapsed: bool = False
) -> np.ndarray:
    """``(3,)`` probabilities of ``"1"``, ``"2"``, ``"="``: uniform when ``lapsed``, else the
    ternary model at :func:`patient_signal` with the band ``τ_p`` and the patient's own lapse."""
    if lapsed:
        return np.full(3, 1.0 / 3.0)
    delta = patient_signal(patient, k, s, lens1, lens2, model)
    return ternary_probabilities(delta, model.indifference, patient.psychometric.lapse)


class AttentionChain:
    """The attention of one patient over the trials (module docstring): state ``k`` (True =
    lapsed) from the keyed uniforms of trials ``0..k``; computed states are kept, so asking for
    trial ``k`` costs ``O(k)`` once. Every instance with the same seed and model agrees."""

    def __init__(self, seed: int, model: AnswerModel):
        if model.lapse_onset <= 0.0:
            raise InvalidInputError(f"answer model {model.name!r}: no runs of lapses (lapse_onset 0)")
        self.seed = int(seed)
        self.model = model
        self._states: list[bool] = []

    def _uniform(self, j: int) -> float:
        return float(np.random.default_rng([self.seed, j, TRIAL_KEY, ATTENTION_STREAM]).random())

    def lapsed(self, k: int) -> bool:
        if not isinstance(k, (int, np.integer)) or k < 0:
            raise InvalidInputError(f"trial index: expected an integer >= 0, got {k!r}")
        a, b = self.model.lapse_onset, self.model.lapse_recovery
        while len(self._states) <= k:
            j = len(self._states)
            u = self._uniform(j)
            if j == 0:
                state = u < self.model.stationary_lapse_share
            else:
                state = (u >= b) if self._states[-1] else (u < a)
            self._states.append(bool(state))
        return self._states[int(k)]


def _guesses(patient: SimulatedPatient, k: int, n: int) -> tuple[bool, ...]:
    u = np.random.default_rng([patient.seed, k, TRIAL_KEY, GUESS_STREAM]).random(n)
    return tuple(bool(x) for x in u < patient.psychometric.guess_rate)


class AnswerModelAnswers:
    """The keyed answers of one simulated patient under an :class:`AnswerModel` (module docstring)."""

    def __init__(self, patient: SimulatedPatient, model: AnswerModel):
        if not isinstance(patient, SimulatedPatient) or patient.seed is None:
            raise InvalidInputError("patient: an answer model needs a SimulatedPatient with an integer seed")
        self.patient = patient
        self.model = model
        self.chain = AttentionChain(patient.seed, model) if model.has_lapse_runs else None

    def lapsed(self, k: int) -> bool:
        return self.chain is not None and self.chain.lapsed(k)

    def comparison(self, k: int, s: float, lens1, lens2) -> str:
        """``"1"``, ``"2"`` or ``"="``: the first answer whose cumulative probability exceeds the
        trial's uniform (``default_rng([seed, k, 0x5EED, 2])``, the default patient's)."""
        p = answer_probabilities(self.patient, k, s, lens1, lens2, self.model, lapsed=self.lapsed(k))
        u = float(np.random.default_rng([self.patient.seed, k, TRIAL_KEY, COMPARISON_STREAM]).random())
        return COMPARISON_ANSWERS[int(np.searchsorted(np.cumsum(p)[:2], u, side="right"))]

    def letter(self, k: int, s: float, lens, letter: str | None) -> bool:
        if self.lapsed(k):
            return _guesses(self.patient, k, 1)[0]
        return bool(self.patient.answer_trial(k, s, lens, letter))

    def line(self, k: int, s: float, lens, letters, crowding_logmar: float) -> tuple[bool, ...]:
        if self.lapsed(k):
            return _guesses(self.patient, k, len(letters))
        return self.patient.answer_line_trial(k, s, lens, letters, crowding_logmar)


class AnswerModelPresenter(SimulatedPresenter):
    """A :class:`~visiontune.refraction.loop.SimulatedPresenter` whose patient answers by ``model``:
    comparisons by :meth:`AnswerModelAnswers.comparison`, letters and chart lines as the patient's
    own unless lapsed in a run; sliders as the default patient's (the answer models here are of
    comparisons and attention)."""

    def __init__(self, patient: SimulatedPatient, model: AnswerModel, **kwargs):
        super().__init__(patient, **kwargs)
        self.answer_model = model
        self.answers = AnswerModelAnswers(patient, model)

    def present(self, query):
        if isinstance(query, PendingSlider):
            return super().present(query)
        if isinstance(query, PendingComparison):
            return ComparisonReply(self.answers.comparison(query.index, query.s_logmar, query.lens1, query.lens2))
        if isinstance(query, PendingLine):
            return LineReply(
                self.answers.line(query.index, query.s_logmar, query.lens, query.letters, query.crowding_logmar)
            )
        return Answer(correct=self.answers.letter(query.index, query.s_logmar, query.lens, query.letter))
