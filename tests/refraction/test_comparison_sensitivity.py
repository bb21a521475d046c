"""The comparison sensitivity ``κ`` (ComparisonModel.sensitivity_median / sensitivity_sigma): the
likelihood with ``κ`` against the formula written out per scalar and against a Monte Carlo of the
answer model, ``σ = 0`` as before, the small-blur ratio of the two formulas, the posterior of ``κ``
on synthetic answers of a known scale, and the moves keeping the prior without data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kstest, norm

from tests.refraction.letters import random_letters
from tests.refraction.particles import random_theta as six_columns
from tests.refraction.scaled_comparisons import observe_scaled_comparisons
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import (
    SPANNING_SENSITIVITY_MEDIAN,
    SPANNING_SENSITIVITY_SIGMA,
    ComparisonModel,
    blur_discrimination_signal,
    focus_sensitivity_ratio,
)
from visiontune.refraction.comparisons import (
    ComparisonAnswer,
    comparison_probabilities,
    comparison_signal,
    with_sensitivity,
)
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.optics_model import (
    LOG_SENSITIVITY,
    LOG_SLOPE,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
)
from visiontune.refraction.start import StartingPoint

SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04)
START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 30)
INFERRED = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def blur_scalar(theta, lens) -> float:
    m, j0, j45, _va0, _log_a, amp = (float(v) for v in theta[:6])
    r_m = lens[0] - m
    r_m = r_m + min(amp, max(-r_m, 0.0))
    return math.sqrt(r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)


def probs_scalar(theta, l1, l2, model: ComparisonModel) -> list[float]:
    """One particle ``(M, J0, J45, VA*, ln a, A, ln κ)``, one comparison: the formulas, ``κ`` from the 7th entry."""
    a, kappa = math.exp(float(theta[4])), math.exp(float(theta[6]))
    b1, b2 = blur_scalar(theta, l1), blur_scalar(theta, l2)
    if model.kind == "blur":
        delta = (
            math.log(math.hypot(b2, model.intrinsic_blur_d) / math.hypot(b1, model.intrinsic_blur_d))
            / model.log_blur_noise
        )
    else:
        delta = a * (math.log10(1 + b2 * b2) - math.log10(1 + b1 * b1))
    d, t, e = kappa * delta, model.indifference, model.lapse
    q1, q2 = phi(d - t), phi(-d - t)
    return [(1 - e) * q + e / 3 for q in (q1, q2, 1 - q1 - q2)]


def random_theta(rng: np.random.Generator, n: int, kappa: bool = True) -> np.ndarray:
    theta = six_columns(rng, n)
    return np.column_stack([theta, rng.normal(np.log(4.0), 1.0, n)]) if kappa else theta


def pairs(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    l1 = np.column_stack([rng.uniform(-5, 3, m), rng.normal(0, 0.5, m), rng.normal(0, 0.5, m)])
    return l1, l1 + rng.normal(0, 0.4, (m, 3))


# ---------------------------------------------------------------- the model's settings
def test_sensitivity_settings_are_validated_and_default_to_the_formula():
    m = ComparisonModel()
    assert (m.sensitivity_median, m.sensitivity_sigma, m.infers_sensitivity) == (1.0, 0.0, False)
    assert INFERRED.infers_sensitivity
    for bad in (
        {"sensitivity_sigma": -0.1},
        {"sensitivity_sigma": 6.0},
        {"sensitivity_median": 0.0},
        {"sensitivity_median": True},
        {"sensitivity_sigma": "1"},
    ):
        with pytest.raises(InvalidInputError):
            ComparisonModel(**bad)


def test_the_spanning_prior_follows_from_the_small_blur_ratio_of_the_two_formulas():
    blur = ComparisonModel("blur")
    ratio = focus_sensitivity_ratio(blur, 5.0)
    # the two signals for a tiny blur difference near focus, from their definitions
    b1, b2 = 0.0005, 0.001
    eq11 = 5.0 * (math.log10(1 + b2**2) - math.log10(1 + b1**2))
    assert float(blur_discrimination_signal(b1, b2, blur)) / eq11 == pytest.approx(ratio, rel=1e-4)
    assert ratio == pytest.approx(15.5, abs=0.05)
    # the prior's median is the geometric middle of κ = 1 and the ratio, both within 1.4 σ
    assert SPANNING_SENSITIVITY_MEDIAN == pytest.approx(math.sqrt(ratio), rel=0.02)
    for kappa in (1.0, ratio):
        assert abs(math.log(kappa / SPANNING_SENSITIVITY_MEDIAN)) / SPANNING_SENSITIVITY_SIGMA < 1.4


# ---------------------------------------------------------------- the likelihood
@pytest.mark.parametrize("kind", ["thurstone", "blur"])
def test_probabilities_with_kappa_match_the_scalar_formula(kind):
    model = ComparisonModel(kind, indifference=0.4, lapse=0.03, sensitivity_median=2.0, sensitivity_sigma=0.8)
    rng = np.random.default_rng(11)
    theta = random_theta(rng, 20)
    l1, l2 = pairs(rng, 6)
    p = comparison_probabilities(theta, 0.1, l1, l2, model, SPEC)
    ref = np.array([[probs_scalar(t, l1[j], l2[j], model) for j in range(6)] for t in theta])
    np.testing.assert_allclose(p, ref, rtol=1e-8, atol=1e-12)
    # κ multiplies the signal of the fixed formula, particle by particle
    base = comparison_signal(theta[:, :6], 0.1, l1, l2, ComparisonModel(kind), SPEC)
    np.testing.assert_allclose(
        comparison_signal(theta, 0.1, l1, l2, model, SPEC), np.exp(theta[:, LOG_SENSITIVITY, None]) * base, rtol=1e-13
    )


def test_probabilities_with_kappa_match_a_monte_carlo_of_the_answer_model():
    """The answer model simulated: judged difference ``κ δ + z``, ``z ~ N(0, 1)``; "1" above ``τ``,
    "2" below ``-τ``, else "="; with probability ``ε`` an answer at random."""
    model = ComparisonModel(indifference=0.5, lapse=0.04, sensitivity_median=4.0, sensitivity_sigma=1.0)
    theta = np.array([[-1.0, 0.2, -0.1, 0.0, np.log(4.0), 2.0, np.log(6.0)]])
    l1, l2 = np.array([[-0.75, 0.2, -0.1]]), np.array([[-1.25, 0.3, -0.1]])  # lens 2 more minus: accommodated
    p = comparison_probabilities(theta, 0.0, l1, l2, model, SPEC)[0, 0]
    delta = 6.0 * 4.0 * (acuity_logmar(theta[:, :6], l2) - acuity_logmar(theta[:, :6], l1))[0, 0]
    rng = np.random.default_rng(12)
    n = 400_000
    judged = delta + rng.standard_normal(n)
    answer = np.where(judged > model.indifference, 0, np.where(judged < -model.indifference, 1, 2))
    lapse = rng.random(n) < model.lapse
    answer[lapse] = rng.integers(0, 3, int(lapse.sum()))
    freq = np.bincount(answer, minlength=3) / n
    assert np.all(np.abs(freq - p) < 4.0 * np.sqrt(p * (1 - p) / n))
    assert p[0] > 0.02 and p[1] > 0.3  # the answer is not trivial: lens 1 blurred, lens 2 not


def test_sigma_zero_is_the_formula_as_before_bit_for_bit():
    rng = np.random.default_rng(13)
    theta6 = random_theta(rng, 30, kappa=False)
    theta7 = np.column_stack([theta6, rng.normal(0, 2, 30)])
    l1, l2 = pairs(rng, 5)
    for kind in ("thurstone", "blur"):
        model = ComparisonModel(kind)
        p = comparison_probabilities(theta6, 0.2, l1, l2, model, SPEC)
        # the ln κ column is ignored when κ is not inferred
        assert np.array_equal(p, comparison_probabilities(theta7, 0.2, l1, l2, model, SPEC))
        if kind == "thurstone":  # the formula as written before κ existed
            old = np.exp(theta6[:, LOG_SLOPE, None]) * (acuity_logmar(theta6, l2) - acuity_logmar(theta6, l1))
            assert np.array_equal(comparison_signal(theta6, 0.2, l1, l2, model, SPEC), old)
        # a fixed κ other than 1 scales the signal
        fixed = ComparisonModel(kind, sensitivity_median=3.0)
        np.testing.assert_allclose(
            comparison_signal(theta6, 0.2, l1, l2, fixed, SPEC),
            3.0 * comparison_signal(theta6, 0.2, l1, l2, model, SPEC),
            rtol=1e-14,
        )


def test_an_inferring_model_needs_the_column_and_with_sensitivity_adds_prior_draws():
    rng = np.random.default_rng(14)
    theta6 = random_theta(rng, 5000, kappa=False)
    l1, l2 = pairs(rng, 2)
    with pytest.raises(InvalidInputError):
        comparison_probabilities(theta6, 0.0, l1, l2, INFERRED, SPEC)
    assert with_sensitivity(theta6, ComparisonModel(), rng) is theta6
    theta7 = with_sensitivity(theta6, INFERRED, rng)
    assert theta7.shape == (5000, 7) and np.array_equal(theta7[:, :6], theta6)
    assert with_sensitivity(theta7, INFERRED, rng) is theta7
    assert kstest(theta7[:, 6], norm(np.log(4.0), 1.0).cdf).pvalue > 1e-3


# ---------------------------------------------------------------- the posterior
def _letters_and_comparisons(post: ParticlePosterior, model: ComparisonModel, seed: int, n: int = 30) -> None:
    rng = np.random.default_rng(seed)
    c = START.centre
    for k in range(n):
        if k % 2:
            post.update(float(rng.uniform(-0.1, 0.6)), c + rng.normal(0, 0.4, 3), bool(rng.random() < 0.6))
        else:
            l1, l2 = c + rng.normal(0, 0.3, 3), c + rng.normal(0, 0.3, 3)
            post.observe(ComparisonAnswer(0.2, tuple(map(float, l1)), tuple(map(float, l2)), "12="[k % 3], model))


def test_sigma_zero_keeps_six_columns_and_the_same_particles():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=1500)
    a, b = ParticlePosterior(spec, START, 21), ParticlePosterior(spec, START, 21)
    _letters_and_comparisons(a, ComparisonModel(), 5)
    _letters_and_comparisons(b, ComparisonModel(sensitivity_median=1.0, sensitivity_sigma=0.0), 5)
    assert a.theta.shape[1] == 6 and a.sensitivity_prior is None and a.n_moves >= 1
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.log_w, b.log_w)


def test_letters_alone_never_add_the_column_and_it_comes_with_the_first_inferring_comparison():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=1500)
    a, b = ParticlePosterior(spec, START, 22), ParticlePosterior(spec, START, 22)
    for s, lens, y in random_letters(np.random.default_rng(6), START.centre, 25):
        a.update(s, lens, y)
        b.update(s, lens, y)
    assert a.theta.shape[1] == 6
    c = START.centre
    answer = ComparisonAnswer(
        0.2, tuple(map(float, c + [0.25, 0, 0])), tuple(map(float, c - [0.25, 0, 0])), "2", INFERRED
    )
    a.observe(answer)
    assert a.theta.shape[1] == 7 and a.sensitivity_prior == (4.0, 1.0)
    # the column is appended to the letters' particles as they were, from its own keyed stream
    np.testing.assert_array_equal(a.theta[:, :6], b.theta)
    draws = np.random.default_rng([22, 0, 0x5E5]).normal(np.log(4.0), 1.0, 1500)
    np.testing.assert_array_equal(a.theta[:, 6], draws)
    with pytest.raises(InvalidInputError):
        a.observe(
            ComparisonAnswer(
                0.2, answer.lens1, answer.lens2, "1", ComparisonModel(sensitivity_median=2.0, sensitivity_sigma=1.0)
            )
        )


def test_log_prior_has_the_lognormal_term_of_kappa():
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    post.add_sensitivity(4.0, 0.5)
    theta = np.repeat(post.theta[:1], 2, axis=0)
    theta[0, 6], theta[1, 6] = np.log(4.0), np.log(4.0) + 1.0
    lp = post._log_prior(theta)
    assert lp[0] - lp[1] == pytest.approx(0.5 * (1.0 / 0.5) ** 2, rel=1e-12)


def test_the_moves_keep_the_prior_of_kappa_without_data():
    """Comparisons of a lens with itself carry no information (``δ = 0`` for every particle): the
    weights stay equal, the column is added, and repeated resample-move steps must leave ``ln κ``
    distributed as its prior (and ``M`` as its own)."""
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=4000)
    post = ParticlePosterior(spec, START, 23)
    m0 = post.theta[:, 0].copy()
    lens = tuple(map(float, START.centre))
    for y in "1=2":
        post.observe(ComparisonAnswer(0.2, lens, lens, y, INFERRED))
    assert post.theta.shape[1] == 7 and post.effective_sample_size() == pytest.approx(4000)
    for k in range(8):
        post._resample_move(np.random.default_rng([23, k, 99]))
    assert post.n_moves == 8
    log_k = post.theta[:, LOG_SENSITIVITY]
    moved = np.mean(log_k != np.random.default_rng([23, 0, 0x5E5]).normal(np.log(4.0), 1.0, 4000))
    assert moved > 0.9  # the moves do move κ
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert abs(np.quantile(log_k, q) - norm.ppf(q, np.log(4.0), 1.0)) < 0.12
    assert abs(np.std(log_k) - 1.0) < 0.08
    for q in (0.1, 0.5, 0.9):
        assert abs(np.quantile(post.theta[:, 0], q) - np.quantile(m0, q)) < 0.08


@pytest.mark.parametrize("kappa_true", [1.0, 12.0])
def test_the_posterior_of_kappa_moves_towards_the_scale_that_made_the_answers(kappa_true):
    """Answers drawn from the Eq. 11 model at known true parameters with ``κ = kappa_true`` (the
    prior's median is 4): the posterior median of ``κ`` moves from 4 towards the truth, at least a
    third of the way on the log scale (answers saturate at large ``κ``, and ``κ a`` is what they
    identify, so not all the way), and the central 90% interval holds it."""
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=4000)
    post = ParticlePosterior(spec, START, 31)
    truth = np.array([[*START.centre + [0.2, -0.1, 0.05], 0.0, np.log(5.0), 1.0]])
    model = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)
    observe_scaled_comparisons(post, truth, kappa_true, model, np.random.default_rng(int(kappa_true)))
    w = post.weights
    lo, med, hi = (float(np.exp(weighted_quantile(post.theta[:, LOG_SENSITIVITY], w, q))) for q in (0.05, 0.5, 0.95))
    assert lo <= kappa_true <= hi
    assert math.log(med / 4.0) / math.log(kappa_true / 4.0) > 1.0 / 3.0
    assert post.n_moves >= 1


# ---------------------------------------------------------------- the choice of question
def _mixed_posterior():
    from visiontune.refraction.optics_engine import OpticsEngine
    from visiontune.refraction.protocol import load_protocol

    start = StartingPoint(Prescription(-2.0, -1.25, 37.0), "autorefraction", 30)
    engine = OpticsEngine(load_protocol("clinical-sloan"), start, 5)
    post = engine.posterior([])
    rng = np.random.default_rng(3)
    for _ in range(15):
        post.update(float(rng.uniform(0.0, 0.4)), start.centre + rng.normal(0, 0.3, 3), bool(rng.random() < 0.7))
    return engine, post


@pytest.mark.parametrize("median", [1.0, 5.0])
def test_the_choice_scores_comparisons_with_each_particles_kappa(median):
    """A prior of ``κ`` concentrated at ``median`` (σ 1e-9) chooses as the fixed ``κ = median`` does:
    the candidates are the same and each particle's ``κ`` is the median to 1e-9; and before the
    first comparison the posterior itself keeps its six columns."""
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

    inferred = propose(ComparisonModel(sensitivity_median=median, sensitivity_sigma=1e-9))
    fixed = propose(ComparisonModel(sensitivity_median=median))
    assert post.theta.shape[1] == 6
    assert (inferred.comparison.lens1, inferred.comparison.lens2) == (fixed.comparison.lens1, fixed.comparison.lens2)
    assert inferred.comparison_value_per_s == pytest.approx(fixed.comparison_value_per_s, rel=1e-6)
    assert inferred.letter == fixed.letter
    # a wide prior of κ changes the value of the comparisons (the particles' κ enter the scoring)
    wide = propose(INFERRED)
    assert wide.comparison_value_per_s != pytest.approx(fixed.comparison_value_per_s, rel=1e-3)
