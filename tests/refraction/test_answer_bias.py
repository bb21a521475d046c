"""A patient's bias toward the more minus lens ``β_minus`` and own "equal" band ``τ`` as unknowns of
the comparison model (ComparisonModel.minus_bias_sigma / indifference_sigma): the likelihood against
the formula written out per scalar, against the simulated answer model it is meant to capture
(exactly and by a Monte Carlo of its keyed answers), the keys off as before, the protocol keys, and
the posterior learning ``β`` and ``τ`` from simulated answers at a fixed pair of lenses."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.refraction.particles import random_theta as six_columns
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.optics.patient import SimulatedPatient
from visiontune.refraction.answer_models import AnswerModel, AnswerModelAnswers, answer_probabilities
from visiontune.refraction.comparisons import (
    ComparisonAnswer,
    comparison_probabilities,
    minus_sign,
    with_sensitivity,
)
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.optics_model import (
    LOG_INDIFFERENCE,
    MINUS_BIAS,
    OpticsModelSpec,
    ParticlePosterior,
)
from visiontune.refraction.protocol import ProtocolError, parse_protocol
from visiontune.refraction.start import StartingPoint

SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04)
BOTH = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0, minus_bias_sigma=0.5, indifference_sigma=0.7)


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def probs_scalar(theta, l1, l2, model: ComparisonModel) -> list[float]:
    """One particle ``(M, J0, J45, VA*, ln a, A, ln κ, -, β, ln τ)`` and one comparison, written out:
    Eq. 11 with accommodation, ``κ δ + β m`` and the band ``τ``."""
    m, j0, j45, va0, log_a, amp = (float(v) for v in theta[:6])

    def va(lens):
        r_m = lens[0] - m
        r_m = r_m + min(amp, max(-r_m, 0.0))
        return va0 + math.log10(1.0 + r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)

    delta = math.exp(float(theta[6])) * math.exp(log_a) * (va(l2) - va(l1))
    if abs(l1[0] - l2[0]) > 1e-9 and m - min(l1[0], l2[0]) <= amp:
        delta += float(theta[8]) * (1.0 if l1[0] < l2[0] else -1.0)
    t, e = math.exp(float(theta[9])), model.lapse
    q1, q2 = phi(delta - t), phi(-delta - t)
    return [(1 - e) * q + e / 3 for q in (q1, q2, 1 - q1 - q2)]


def random_theta(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.column_stack(
        [
            six_columns(rng, n),
            rng.normal(np.log(4.0), 1.0, n),
            np.full(n, np.nan),  # the slider's ln τ: not inferred here
            rng.normal(0.0, 0.8, n),
            rng.normal(np.log(0.5), 0.7, n),
        ]
    )


# ---------------------------------------------------------------- settings and protocol keys
def test_the_keys_are_off_by_default_and_validated():
    m = ComparisonModel()
    assert (m.minus_bias_sigma, m.indifference_sigma, m.infers_minus_bias, m.infers_indifference) == (
        0,
        0,
        False,
        False,
    )
    assert m.column_priors == ()
    # κ alone reads the one column it read before
    assert ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0).column_priors == (
        ("log_sensitivity", 4.0, 1.0),
    )
    assert BOTH.column_priors == (
        ("log_sensitivity", 4.0, 1.0),
        ("minus_bias", 0.0, 0.5),
        ("log_indifference", 0.5, 0.7),
    )
    for bad in (
        {"minus_bias_sigma": -0.1},
        {"indifference_sigma": 4.0},
        {"indifference": 0.0, "indifference_sigma": 0.5},
    ):
        with pytest.raises(InvalidInputError):
            ComparisonModel(**bad)


#: A protocol with comparisons (the measured one of docs/results), the keys added to its comparison model.
PROTOCOL = (Path(__file__).parents[2] / "docs/results/protocols/clinical-sloan-lines-filed.toml").read_text()


def _with(extra: str):
    text = PROTOCOL.replace("sensitivity_sigma = 1.0\n", "sensitivity_sigma = 1.0\n" + extra + "\n", 1)
    assert extra in text
    return parse_protocol(text, "t.toml")


def test_the_protocol_keys_turn_each_unknown_on_and_a_bad_value_is_refused_with_its_key():
    p = _with("minus_bias_sigma = 0.5\nindifference_sigma = 0.7")
    model = p.comparisons.comparison
    assert model.infers_minus_bias and model.infers_indifference
    assert not _with("").comparisons.comparison.infers_minus_bias
    for extra, key in (
        ("minus_bias_sigma = -1.0", "comparisons.model.minus_bias_sigma"),
        ('minus_bias_sigma = "wide"', "comparisons.model.minus_bias_sigma"),
        ("indifference_sigma = 9.0", "comparisons.model.indifference_sigma"),
    ):
        with pytest.raises(ProtocolError, match=key.replace(".", r"\.")):
            _with(extra)


# ---------------------------------------------------------------- the likelihood
def test_probabilities_with_beta_and_tau_match_the_scalar_formula():
    rng = np.random.default_rng(41)
    theta = random_theta(rng, 25)
    l1 = np.column_stack([rng.uniform(-4, 2, 8), rng.normal(0, 0.5, 8), rng.normal(0, 0.5, 8)])
    l2 = l1 + np.column_stack([rng.choice([-0.5, -0.25, 0.25, 0.5], 8), rng.normal(0, 0.2, (8, 2))])
    l2[0, 0] = l1[0, 0]  # equal M: no minus sign
    p = comparison_probabilities(theta, 0.1, l1, l2, BOTH, SPEC)
    ref = np.array([[probs_scalar(t, l1[j], l2[j], BOTH) for j in range(8)] for t in theta])
    np.testing.assert_allclose(p, ref, rtol=1e-8, atol=1e-12)
    # both signs and the gate all occur among these particles and pairs
    m = minus_sign(theta, l1, l2)
    assert {-1.0, 0.0, 1.0} <= set(np.unique(m)) and np.all(m[:, 0] == 0.0)
    # a batch of answers is the sum of their single log-likelihoods
    answers = [ComparisonAnswer(0.1, tuple(l1[j]), tuple(l2[j]), "12="[j % 3], BOTH) for j in range(8)]
    single = sum(a.log_likelihood(theta, SPEC) for a in answers)
    np.testing.assert_allclose(ComparisonAnswer.batch_log_likelihood(answers, theta, SPEC), single, rtol=1e-12)


PATIENT_RX = Prescription(-2.0, -0.5, 90.0)


def _patient(seed: int = 7, accommodation_d: float = 1.0) -> SimulatedPatient:
    return SimulatedPatient(
        PATIENT_RX, 0.0, slope=5.0, n_alternatives=10, lapse=0.04, seed=seed, accommodation_d=accommodation_d
    )


def _truth(patient: SimulatedPatient, beta: float, tau: float) -> np.ndarray:
    """The patient as one particle with ``κ = 1``, the given ``β`` and ``τ``."""
    pv = patient.true_rx.power_vector_array()
    row = [*pv, 0.0, np.log(5.0), patient.usable_accommodation_d, 0.0, np.nan, beta, np.log(tau)]
    return np.array([row])


@pytest.mark.parametrize(
    ("sphere1", "sphere2"),
    [(-2.0, -2.25), (-2.25, -2.0), (-2.25, -2.5), (-1.5, -1.75), (-2.0, -3.5), (-3.5, -1.75), (-2.0, -2.0)],
)
def test_the_model_at_the_patients_truth_gives_the_simulated_minus_biased_patients_probabilities(sphere1, sphere2):
    """The ``minus-bias`` answer model (0.5 toward the more minus lens the eye clears) with a band of
    0.1, and the comparison model with ``κ = 1``, ``β = 0.5``, ``τ = 0.1`` at the patient's own
    parameters: the same three probabilities, the gate included (-3.50 is beyond the eye's
    accommodation, so no bias)."""
    patient = _patient()
    answer_model = AnswerModel("t", "t", minus_bias=0.5, indifference=0.1)
    lens1, lens2 = Prescription(sphere1, -0.5, 90.0), Prescription(sphere2, -0.5, 90.0)
    expected = answer_probabilities(patient, 3, 0.1, lens1, lens2, answer_model)
    got = comparison_probabilities(
        _truth(patient, 0.5, 0.1),
        0.1,
        [lens1.power_vector_array()],
        [lens2.power_vector_array()],
        ComparisonModel(
            lapse=0.04,
            sensitivity_median=1.0,
            sensitivity_sigma=1.0,
            minus_bias_sigma=0.5,
            indifference=0.1,
            indifference_sigma=0.5,
        ),
        SPEC,
    )[0, 0]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_the_model_matches_a_monte_carlo_of_the_patients_keyed_answers():
    """20000 keyed answers of the ``minus-bias`` patient at one pair that the eye clears (both lenses
    more minus than the correction, so Eq. 11's signal is 0 and the answer is the bias alone): the
    frequencies of "1", "2", "=" within 4 standard errors of the model's probabilities."""
    patient = _patient(11)
    answers = AnswerModelAnswers(patient, AnswerModel("t", "t", minus_bias=0.5))
    lens1, lens2 = Prescription(-2.5, -0.5, 90.0), Prescription(-2.25, -0.5, 90.0)
    n = 20_000
    counts = np.zeros(3)
    for k in range(n):
        counts["12=".index(answers.comparison(k, 0.1, lens1, lens2))] += 1
    model = ComparisonModel(
        lapse=0.04, sensitivity_median=1.0, sensitivity_sigma=1.0, minus_bias_sigma=0.5, indifference_sigma=0.5
    )
    p = comparison_probabilities(
        _truth(patient, 0.5, 0.5), 0.1, [lens1.power_vector_array()], [lens2.power_vector_array()], model, SPEC
    )[0, 0]
    freq = counts / n
    assert np.all(np.abs(freq - p) < 4.0 * np.sqrt(p * (1 - p) / n))
    assert p[0] > 2 * p[1]  # lens 1, the more minus, is named far more often: the bias is visible


def test_keys_off_the_columns_are_not_read_and_with_sensitivity_adds_only_what_is_inferred():
    rng = np.random.default_rng(43)
    theta = random_theta(rng, 30)
    l1, l2 = np.array([[-1.0, 0.0, 0.0]]), np.array([[-1.25, 0.1, 0.0]])
    kappa_only = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)
    np.testing.assert_array_equal(
        comparison_probabilities(theta, 0.0, l1, l2, kappa_only, SPEC),
        comparison_probabilities(theta[:, :7], 0.0, l1, l2, kappa_only, SPEC),
    )
    six = theta[:, :6]
    seven = with_sensitivity(six, kappa_only, np.random.default_rng(1))
    assert seven.shape == (30, 7)
    # the same draws as before the new columns existed: one normal per particle for ln κ
    np.testing.assert_array_equal(seven[:, 6], np.random.default_rng(1).normal(np.log(4.0), 1.0, 30))
    ten = with_sensitivity(six, BOTH, np.random.default_rng(1))
    assert ten.shape == (30, 10) and np.all(np.isnan(ten[:, 7]))
    np.testing.assert_array_equal(ten[:, 6], seven[:, 6])
    with pytest.raises(InvalidInputError, match="β_minus"):
        comparison_probabilities(seven, 0.0, l1, l2, ComparisonModel(minus_bias_sigma=0.5), SPEC)


def test_the_prior_of_beta_is_normal_around_zero_not_lognormal():
    start = StartingPoint(PATIENT_RX, "autorefraction", 30)
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), start, 1)
    post.add_column("minus_bias", 0.0, 0.5)
    np.testing.assert_array_equal(post.theta[:, MINUS_BIAS], np.random.default_rng([1, 0, 0xB1A]).normal(0.0, 0.5, 200))
    theta = np.repeat(post.theta[:1], 3, axis=0)
    theta[:, MINUS_BIAS] = [0.0, 0.5, -0.5]
    lp = post._log_prior(theta)
    assert lp[0] - lp[1] == pytest.approx(0.5, rel=1e-12) and lp[1] == pytest.approx(lp[2], rel=1e-12)
    with pytest.raises(InvalidInputError, match="minus_bias prior"):
        post.add_column("minus_bias", 0.0, 0.4)


# ---------------------------------------------------------------- the posterior learns β and τ
N_LETTERS = 100


def _posterior_after(answer_model: AnswerModel, model: ComparisonModel, seed: int, n_comparisons: int = 300):
    """Letters through lenses around the patient's correction, then ``n_comparisons`` answers of the
    simulated patient (correction ``M`` = -2.25 D, usable accommodation 2 D) to one pair the eye
    clears, spheres -3.00 and -2.75 (``M`` -3.25 and -3.00, both more minus than the correction), in
    alternating order."""
    patient = _patient(seed, accommodation_d=3.0)
    answers = AnswerModelAnswers(patient, answer_model)
    start = StartingPoint(Prescription(-1.75, -0.5, 90.0), "autorefraction", 30)
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04, n_particles=2000), start, seed)
    rng = np.random.default_rng(seed)
    k = 0
    for _ in range(N_LETTERS):
        lens = Prescription(float(rng.choice([-2.25, -1.75, -1.25, -0.75])), -0.5, 90.0)
        s = float(rng.uniform(-0.1, 0.5))
        post.update(s, lens.power_vector_array(), answers.letter(k, s, lens, None))
        k += 1
    minus, plus = Prescription(-3.0, -0.5, 90.0), Prescription(-2.75, -0.5, 90.0)
    for j in range(n_comparisons):
        l1, l2 = (minus, plus) if j % 2 == 0 else (plus, minus)
        y = answers.comparison(k, 0.1, l1, l2)
        post.observe(ComparisonAnswer(0.1, tuple(l1.power_vector_array()), tuple(l2.power_vector_array()), y, model))
        k += 1
    return post


@pytest.mark.parametrize(("bias", "seed"), [(0.5, 5), (0.0, 6)])
def test_the_posterior_learns_the_bias_toward_the_more_minus_lens(bias, seed):
    """300 answers of a simulated patient with ``β = bias`` at a fixed pair the eye clears: the
    posterior mean of ``β`` within 0.15 of the truth (its prior is N(0, 0.5²)). Measured on other
    seeds: posterior sd about 0.07 at ``β = 0.5`` (means 0.39-0.51), 0.16-0.20 at ``β = 0`` (answers
    mostly "=", and ``M*`` loosely held by the letters); a biased patient's posterior also excludes 0."""
    model = ComparisonModel(lapse=0.04, sensitivity_median=4.0, sensitivity_sigma=1.0, minus_bias_sigma=0.5)
    post = _posterior_after(AnswerModel("t", "t", minus_bias=bias), model, seed)
    beta = post.theta[:, MINUS_BIAS]
    mean = float(post.weights @ beta)
    assert abs(mean - bias) < 0.15, mean
    if bias > 0:
        assert weighted_quantile(beta, post.weights, 0.025) > 0.1
    assert post.n_moves >= 1


def test_the_posterior_learns_a_patients_narrow_equal_band():
    """The ``less-equal`` patient (band 0.1, "=" 8% at equal lenses) against the model's prior
    median 0.5: after 300 answers the posterior median of ``τ`` is below 0.25, and a patient with
    the model's band 0.5 stays above 0.35."""
    model = ComparisonModel(lapse=0.04, sensitivity_median=4.0, sensitivity_sigma=1.0, indifference_sigma=0.7)
    for tau, seed, check in ((0.1, 8, lambda t: t < 0.25), (0.5, 9, lambda t: t > 0.35)):
        post = _posterior_after(AnswerModel("t", "t", indifference=tau), model, seed)
        med = float(np.exp(weighted_quantile(post.theta[:, LOG_INDIFFERENCE], post.weights, 0.5)))
        assert check(med), (tau, med)


# ---------------------------------------------------------------- the session's use of them
def test_the_posterior_with_beta_and_tau_is_a_pure_function_of_the_answers():
    """Two posteriors fed the same answers (letters, then comparisons that add ``ln κ``, ``β``, ``ln τ``
    at the first) hold the same particles to the last bit: a session rebuilt from its log is the
    uninterrupted one."""
    a = _posterior_after(AnswerModel("t", "t", minus_bias=0.5), BOTH, 3, n_comparisons=40)
    b = _posterior_after(AnswerModel("t", "t", minus_bias=0.5), BOTH, 3, n_comparisons=40)
    assert a.theta.shape[1] == 10 and a.n_moves >= 1
    assert list(a.column_priors) == ["log_sensitivity", "minus_bias", "log_indifference"]
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.log_w, b.log_w)


def test_the_choice_with_priors_concentrated_at_beta_0_and_the_models_band_is_the_keys_off_choice():
    """The question rule scores comparisons with each particle's ``β`` and ``τ`` (prior draws before
    the first comparison): with both priors concentrated (σ 1e-9) at ``β = 0`` and ``τ = 0.5`` it
    chooses as the model without them, and with the stated priors the comparisons' value changes."""
    from tests.refraction.test_comparison_sensitivity import _mixed_posterior
    from visiontune.refraction.mixed_rules import MixedSettings, propose_mixed

    engine, post = _mixed_posterior()

    def propose(model):
        return propose_mixed(
            post,
            "evr",
            MixedSettings(comparison=model),
            steps=engine.protocol.lenses,
            s_grid=engine.s_grid,
            radius=1.0,
            rng_letter=np.random.default_rng([9, 0, 0]),
            rng_comparison=np.random.default_rng([9, 0, 4]),
        )

    off = propose(ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1e-9))
    tight = propose(
        ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1e-9, minus_bias_sigma=1e-9, indifference_sigma=1e-9)
    )
    assert (tight.comparison.lens1, tight.comparison.lens2) == (off.comparison.lens1, off.comparison.lens2)
    assert tight.comparison_value_per_s == pytest.approx(off.comparison_value_per_s, rel=1e-6)
    assert post.theta.shape[1] == 6
    wide = propose(BOTH)
    assert wide.comparison_value_per_s != pytest.approx(
        propose(ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)).comparison_value_per_s, rel=1e-3
    )


# ---------------------------------------------------------------- a one-sided prior on β (half-normal)
ONE_SIDED = ComparisonModel(
    lapse=0.04, sensitivity_median=4.0, sensitivity_sigma=1.0, minus_bias_sigma=0.5, minus_bias_prior="half-normal"
)


def test_the_half_normal_key_is_off_by_default_validated_and_read_from_the_protocol():
    assert ComparisonModel().minus_bias_prior == "normal"
    # the normal prior's columns are as before; the half-normal names its shape as a fourth element
    assert ComparisonModel(minus_bias_sigma=0.5, minus_bias_prior="normal").column_priors == (("minus_bias", 0.0, 0.5),)
    assert ONE_SIDED.column_priors == (("log_sensitivity", 4.0, 1.0), ("minus_bias", 0.0, 0.5, "half-normal"))
    with pytest.raises(InvalidInputError, match="minus_bias_prior"):
        ComparisonModel(minus_bias_sigma=0.5, minus_bias_prior="folded")
    p = _with('minus_bias_sigma = 0.5\nminus_bias_prior = "half-normal"')
    assert p.comparisons.comparison.minus_bias_prior == "half-normal"
    assert _with("minus_bias_sigma = 0.5").comparisons.comparison.minus_bias_prior == "normal"
    for extra in ('minus_bias_prior = "folded"', "minus_bias_prior = 1.0"):
        with pytest.raises(ProtocolError, match=r"comparisons\.model\.minus_bias_prior"):
            _with(extra)
    measured = Path(__file__).parents[2] / "docs/results/protocols/clinical-sloan-lines-bias-one-sided.toml"
    model = parse_protocol(measured.read_text(), measured.name).comparisons.comparison
    assert (model.minus_bias_prior, model.minus_bias_sigma, model.indifference_sigma) == ("half-normal", 0.5, 1.0)


def test_the_half_normal_prior_draws_follow_scipys_halfnorm():
    """The column's prior draws (``add_column`` and, for a question before the first comparison,
    ``with_sensitivity``) against ``scipy.stats.halfnorm(scale=σ)`` by a Kolmogorov-Smirnov test
    (seeded); the normal draws of the same key fail it (the test can tell the two apart)."""
    from scipy import stats

    start = StartingPoint(PATIENT_RX, "autorefraction", 30)
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=4000), start, 11)
    post.add_column("minus_bias", 0.0, 0.5, "half-normal")
    beta = post.theta[:, MINUS_BIAS]
    assert beta.min() >= 0.0
    assert stats.kstest(beta, stats.halfnorm(scale=0.5).cdf).pvalue > 0.01
    drawn = with_sensitivity(post.theta[:, :6], ONE_SIDED, np.random.default_rng(12))[:, MINUS_BIAS]
    assert stats.kstest(drawn, stats.halfnorm(scale=0.5).cdf).pvalue > 0.01
    symmetric = with_sensitivity(post.theta[:, :6], BOTH, np.random.default_rng(12))[:, MINUS_BIAS]
    assert stats.kstest(symmetric, stats.halfnorm(scale=0.5).cdf).pvalue < 1e-6
    assert stats.kstest(drawn, stats.halfnorm(scale=0.25).cdf).pvalue < 1e-6


def test_the_half_normal_log_prior_is_minus_infinity_below_zero_and_halfnorm_above():
    from scipy import stats

    start = StartingPoint(PATIENT_RX, "autorefraction", 30)
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), start, 1)
    post.add_column("minus_bias", 0.0, 0.5, "half-normal")
    theta = np.repeat(post.theta[:1], 5, axis=0)
    values = np.array([0.0, 0.3, 1.1, -1e-9, -0.4])
    theta[:, MINUS_BIAS] = values
    lp = post._log_prior(theta)
    assert np.all(np.isneginf(lp[3:])) and np.all(np.isfinite(lp[:3]))
    # up to a constant, scipy's half-normal log density
    oracle = stats.halfnorm(scale=0.5).logpdf(values[:3])
    np.testing.assert_allclose(lp[:3] - lp[0], oracle - oracle[0], rtol=1e-12)
    # one prior per unknown and session: a normal prior asked of a half-normal column is refused
    with pytest.raises(InvalidInputError, match="minus_bias prior"):
        post.add_column("minus_bias", 0.0, 0.5)
    with pytest.raises(InvalidInputError, match="log_indifference prior"):
        post.add_column("log_indifference", 0.5, 1.0, "half-normal")
    with pytest.raises(InvalidInputError, match="minus_bias prior"):
        ParticlePosterior(OpticsModelSpec(10, n_particles=200), start, 1).add_column("minus_bias", 0.0, 0.5, "folded")


@pytest.mark.parametrize(("bias", "seed"), [(0.5, 5), (0.0, 6)])
def test_the_posterior_with_the_half_normal_prior_learns_the_bias_and_never_moves_below_zero(bias, seed):
    """As the normal prior's test: 300 answers of a simulated patient with ``β = bias`` at a fixed pair
    the eye clears. With the half-normal prior the posterior mean is within 0.15 of the truth, a
    biased patient's posterior excludes 0, and no particle lies below 0 after the moves."""
    post = _posterior_after(AnswerModel("t", "t", minus_bias=bias), ONE_SIDED, seed)
    beta = post.theta[:, MINUS_BIAS]
    assert post.n_moves >= 1 and beta.min() >= 0.0
    mean = float(post.weights @ beta)
    assert abs(mean - bias) < 0.15, mean
    if bias > 0:
        assert weighted_quantile(beta, post.weights, 0.025) > 0.1
