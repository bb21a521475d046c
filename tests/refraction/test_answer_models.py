"""Answer models the session does not assume: each against its closed form and its Monte Carlo frequency."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.optics.comparison_answers import COMPARISON_ANSWERS, ComparisonModel, answer_comparison_trial
from visiontune.refraction.answer_models import (
    ANSWER_MODELS,
    AnswerModel,
    AnswerModelAnswers,
    AnswerModelPresenter,
    AttentionChain,
    answer_model_by_name,
    answer_probabilities,
    minus_preference_sign,
    patient_signal,
)
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import (
    recorded_answer_model,
    simulated_case,
    simulated_presenter,
    with_answer_model,
)
from visiontune.refraction.start import StartingPoint

TRUE = Prescription(-1.0, -0.5, 90.0)
L1 = Prescription(-1.0, -0.5, 90.0)
L2 = Prescription(-0.5, -0.5, 90.0)
LAPSE = 0.02


def _patient(seed=7, **kw):
    return SimulatedPatient(TRUE, slope=5.0, n_alternatives=10, lapse=LAPSE, seed=seed, **kw)


def _ternary(delta, tau, eps):
    p1, p2 = ndtr(delta - tau), ndtr(-delta - tau)
    return (1 - eps) * np.array([p1, p2, 1 - p1 - p2]) + eps / 3


def test_the_model_answer_model_gives_the_default_patients_answers():
    """``model`` is the session's own: the same keyed answer as the default simulated patient's."""
    patient, answers = _patient(), AnswerModelAnswers(_patient(), answer_model_by_name("model"))
    default = ComparisonModel(lapse=LAPSE)
    got = [answers.comparison(k, 0.1, L1, L2) for k in range(200)]
    want = [answer_comparison_trial(patient, k, 0.1, L1, L2, default) for k in range(200)]
    assert got == want and {"1", "2"} <= set(got)


@pytest.mark.parametrize(
    "name", ["model", "wide-threshold", "narrow-threshold", "more-equal", "less-equal", "last-lens-bias", "minus-bias"]
)
def test_probabilities_are_the_closed_form(name):
    """``P = ternary(κ_p δ_0 + β_minus m - β_last; τ_p, ε)`` with ``δ_0 = Φ⁻¹(P(lens 1 preferred))``."""
    model, patient = ANSWER_MODELS[name], _patient(age_years=20.0)
    delta0 = float(ndtri(patient.preference_probability(0.1, L1, L2)))
    m = 1 if name == "minus-bias" else 0  # lens 1 is the more minus, a 20-year-old clears it
    assert minus_preference_sign(patient, L1, L2) == 1
    delta = model.signal_scale * delta0 + model.minus_bias * m - model.last_bias
    want = _ternary(delta, model.indifference, LAPSE)
    np.testing.assert_allclose(answer_probabilities(patient, 3, 0.1, L1, L2, model), want, atol=1e-12)


def test_thresholds_scale_the_signal_and_bands_the_ties():
    """Half the signal (threshold twice) and twice the signal; at equal lenses "=" is ``2Φ(τ)-1``
    (before the lapse): 38% for the model, 68% for more-equal, 8% for less-equal."""
    patient = _patient()
    wide, narrow, base = (
        patient_signal(patient, 0, 0.1, L1, L2, ANSWER_MODELS[n])
        for n in ("wide-threshold", "narrow-threshold", "model")
    )
    assert wide == pytest.approx(base / 2) and narrow == pytest.approx(2 * base) and base > 0
    for name, share in (("model", 0.3829), ("more-equal", 0.6827), ("less-equal", 0.0797)):
        p = answer_probabilities(patient, 0, 0.1, L1, L1, ANSWER_MODELS[name])
        assert (p[2] - LAPSE / 3) / (1 - LAPSE) == pytest.approx(share, abs=1e-4)


def test_the_lens_shown_last_is_preferred_at_equal_lenses():
    """β_last = τ = 0.5: at equal lenses "2" is named with ``Φ(β - τ) = 0.5``, "1" with ``Φ(-β - τ)``."""
    p = answer_probabilities(_patient(), 0, 0.1, L1, L1, ANSWER_MODELS["last-lens-bias"])
    assert (p[1] - LAPSE / 3) / (1 - LAPSE) == pytest.approx(0.5)
    assert (p[0] - LAPSE / 3) / (1 - LAPSE) == pytest.approx(float(ndtr(-1.0)))


def test_the_minus_bias_needs_an_eye_that_can_clear_the_minus_lens():
    young, old = _patient(age_years=20.0), _patient(age_years=70.0)
    over = Prescription(-2.0, -0.5, 90.0)  # 1 D more minus than the truth
    assert minus_preference_sign(young, over, L1) == 1 and minus_preference_sign(young, L1, over) == -1
    assert minus_preference_sign(old, over, L1) == 0  # 70 years: under 1 D usable, the minus lens blurs
    assert minus_preference_sign(old, L2, L1) == -1  # lens 2 over-minuses by nothing: cleared by any eye
    assert minus_preference_sign(young, L1, Prescription(-0.75, -1.0, 90.0)) == 0  # the same M


def test_keyed_answers_follow_their_probabilities_monte_carlo():
    """Over 3000 trials (one keyed uniform each) the answers' shares match the probabilities
    within 4 standard errors (the signal's formula, the band and a bias each once)."""
    n = 3000
    for name in ("blur", "more-equal", "minus-bias"):
        patient = _patient(seed=11, age_years=20.0)
        model = ANSWER_MODELS[name]
        answers = AnswerModelAnswers(patient, model)
        p = answer_probabilities(patient, 0, 0.1, L1, L2, model)
        got = [answers.comparison(k, 0.1, L1, L2) for k in range(n)]
        share = np.array([got.count(a) / n for a in COMPARISON_ANSWERS])
        assert np.all(np.abs(share - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-9), (name, share, p)


def test_the_attention_chain_has_its_stationary_share_and_run_length():
    """Two-state Markov chain: lapsed share ``a / (a + b)``, ``P(lapsed | lapsed before) = 1 - b``,
    ``P(lapsed | attentive before) = a`` (20 000 trials, 4 standard errors)."""
    model = AnswerModel("t", "test", lapse_onset=0.05, lapse_recovery=0.2)
    chain = AttentionChain(3, model)
    s = np.array([chain.lapsed(k) for k in range(20000)])
    share = model.stationary_lapse_share
    # a Markov chain's mean has variance inflated by (1 + ρ) / (1 - ρ), ρ = 1 - a - b
    rho = 1 - model.lapse_onset - model.lapse_recovery
    se = np.sqrt(share * (1 - share) / s.size * (1 + rho) / (1 - rho))
    assert abs(s.mean() - share) <= 4 * se
    stay = (s[1:] & s[:-1]).sum() / s[:-1].sum()
    start = (s[1:] & ~s[:-1]).sum() / (~s[:-1]).sum()
    assert abs(stay - 0.8) <= 4 * np.sqrt(0.16 / s[:-1].sum())
    assert abs(start - 0.05) <= 4 * np.sqrt(0.0475 / (~s[:-1]).sum())
    assert model.mean_run_trials == 5.0


def test_the_attention_chain_is_keyed_by_trial_not_by_order_asked():
    model = ANSWER_MODELS["lapse-runs"]
    late_first = AttentionChain(9, model)
    assert late_first.lapsed(300) == AttentionChain(9, model).lapsed(300)
    assert [late_first.lapsed(k) for k in range(301)] == [AttentionChain(9, model).lapsed(k) for k in range(301)]
    with pytest.raises(InvalidInputError, match="trial index"):
        late_first.lapsed(-1)


def test_lapsed_answers_are_at_random():
    """While lapsed a comparison is uniform among the three answers and a letter right at the guess
    rate 1/n, even through the correction at a large letter."""
    model = AnswerModel("t", "test", lapse_onset=1.0, lapse_recovery=0.001)  # lapsed nearly always
    answers = AnswerModelAnswers(_patient(seed=5), model)
    np.testing.assert_allclose(answer_probabilities(_patient(), 0, 0.1, L1, L2, model, lapsed=True), np.full(3, 1 / 3))
    ks = [k for k in range(4200) if answers.lapsed(k)]
    n = len(ks)
    assert n > 4000
    right = np.mean([answers.letter(k, 1.0, TRUE, "C") for k in ks])
    assert abs(right - 0.1) <= 4 * np.sqrt(0.09 / n)
    assert np.mean([answers.letter(k, 1.0, TRUE, "C") for k in range(4200) if not answers.lapsed(k)]) > 0.9
    line = answers.line(7, 1.0, TRUE, ("C", "D", "H", "K", "N"), 0.1)
    assert len(line) == 5 and line == answers.line(7, 1.0, TRUE, ("C", "D", "H", "K", "N"), 0.1)
    got = [answers.comparison(k, 0.1, L1, L2) for k in ks]
    for a in COMPARISON_ANSWERS:
        assert abs(got.count(a) / n - 1 / 3) <= 4 * np.sqrt(2 / 9 / n)


def test_unknown_or_bad_models_are_refused_by_name():
    with pytest.raises(InvalidInputError, match="answer model: expected one of model, blur"):
        answer_model_by_name("stubborn")
    with pytest.raises(InvalidInputError, match="'x': signal_scale"):
        AnswerModel("x", "bad", signal_scale=0.0)
    with pytest.raises(InvalidInputError, match="'x': kind"):
        AnswerModel("x", "bad", kind="psychic")


def test_a_session_runs_with_an_answer_model_and_records_it():
    """The presenter answers every kind of question; the simulated patient's note keeps the
    model's name, read back on resume; None is the session's own model."""
    protocol = load_protocol("clinical-sloan-compare")
    case = simulated_case(seed=4)
    presenter = simulated_presenter(case.patient(protocol.n_alternatives), "lapse-runs")
    assert isinstance(presenter, AnswerModelPresenter)
    assert type(simulated_presenter(case.patient(10))) is SimulatedPresenter
    refraction = Refraction(
        MemoryLog(),
        protocol,
        seed=case.seed,
        simulated=True,
        start=StartingPoint(case.start_rx, case.start_source, case.age_years),
    )
    assert refraction.run(presenter, max_steps=8) is None
    assert len(refraction.trials()) == 8
    note = with_answer_model(case.to_dict(), "minus-bias")
    assert recorded_answer_model(note) == "minus-bias" and recorded_answer_model(case.to_dict()) is None
    assert simulated_case(stored=note) == case
    with pytest.raises(InvalidInputError, match="answer model"):
        with_answer_model(case.to_dict(), "nope")
