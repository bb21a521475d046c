"""The comparison sensitivity's prior of two formulas (``ComparisonModel.sensitivity_second_median``):
the key, its draws and log density against scipy's normal mixture, the moves keeping it without
data, its standard deviation against a Monte Carlo, and the posterior choosing the formula that made
the answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.refraction.scaled_comparisons import observe_scaled_comparisons
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.comparisons import ComparisonAnswer, with_sensitivity
from visiontune.refraction.mixed_engine import sensitivity_sd_ratio
from visiontune.refraction.optics_model import (
    LOG_SENSITIVITY,
    OPTIONAL_COLUMNS,
    OpticsModelSpec,
    ParticlePosterior,
)
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint

START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 30)
SIGMA, LOW, HIGH = 0.5, 1.0, 15.5
TWO = ComparisonModel(sensitivity_median=LOW, sensitivity_sigma=SIGMA, sensitivity_second_median=HIGH)


def mixture_cdf(x):
    """The equal mixture of ``N(ln 1, σ²)`` and ``N(ln 15.5, σ²)``, written with scipy."""
    return 0.5 * stats.norm.cdf(x, math.log(LOW), SIGMA) + 0.5 * stats.norm.cdf(x, math.log(HIGH), SIGMA)


def test_the_key_is_off_by_default_checked_and_read_from_the_protocol():
    assert ComparisonModel().sensitivity_second_median == 0.0
    assert ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0).column_priors == (
        ("log_sensitivity", 4.0, 1.0),
    )
    assert TWO.column_priors == (("log_sensitivity", LOW, SIGMA, "mixture", HIGH),)
    with pytest.raises(InvalidInputError, match="sensitivity_second_median: .*sensitivity_sigma > 0"):
        ComparisonModel(sensitivity_second_median=15.5)
    with pytest.raises(InvalidInputError, match="sensitivity_second_median"):
        ComparisonModel(sensitivity_sigma=0.5, sensitivity_second_median=-1.0)
    text = load_protocol("clinical-sloan-compare").source_text
    two = text.replace("sensitivity_sigma = 1.0", "sensitivity_sigma = 0.5\nsensitivity_second_median = 15.5")
    assert parse_protocol(two, "two.toml").comparisons.comparison.column_priors == (
        ("log_sensitivity", 4.0, 0.5, "mixture", 15.5),
    )
    with pytest.raises(ProtocolError, match=r"comparisons\.model\.sensitivity_second_median"):
        parse_protocol(text.replace("sensitivity_sigma = 1.0", 'sensitivity_second_median = "15"'), "bad.toml")


def test_the_draws_follow_the_mixture_and_its_sd_is_the_closed_form():
    """``add_column`` and ``with_sensitivity`` (a question before the first comparison) both draw the
    mixture (Kolmogorov-Smirnov against scipy, seeded); a lognormal of the same spread does not pass;
    ``prior_sd`` is ``√(σ² + (Δ/2)²)`` and matches the draws' SD."""
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=4000), START, 11)
    post.add_column("log_sensitivity", LOW, SIGMA, "mixture", HIGH)
    drawn = post.theta[:, LOG_SENSITIVITY]
    assert stats.kstest(drawn, mixture_cdf).pvalue > 0.01
    before = with_sensitivity(post.theta[:, :6], TWO, np.random.default_rng(12))[:, LOG_SENSITIVITY]
    assert stats.kstest(before, mixture_cdf).pvalue > 0.01
    sd = OPTIONAL_COLUMNS["log_sensitivity"].prior_sd(post.sensitivity_prior)
    assert sd == pytest.approx(math.hypot(SIGMA, 0.5 * math.log(HIGH / LOW)), rel=1e-12)
    assert np.std(drawn) == pytest.approx(sd, rel=0.03)
    one = stats.norm(0.5 * math.log(LOW * HIGH), sd).cdf
    assert stats.kstest(drawn, one).pvalue < 1e-6
    assert sensitivity_sd_ratio(post) == pytest.approx(1.0, abs=0.03)


def test_the_log_prior_is_the_mixtures_log_density_and_the_prior_is_one_per_session():
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    post.add_column("log_sensitivity", LOW, SIGMA, "mixture", HIGH)
    theta = np.repeat(post.theta[:1], 5, axis=0)
    x = np.array([-1.0, 0.0, 1.4, 2.74, 4.0])
    theta[:, LOG_SENSITIVITY] = x
    lp = post._log_prior(theta)
    oracle = np.log(0.5 * stats.norm.pdf(x, math.log(LOW), SIGMA) + 0.5 * stats.norm.pdf(x, math.log(HIGH), SIGMA))
    np.testing.assert_allclose(lp - lp[0], oracle - oracle[0], rtol=1e-10)
    with pytest.raises(InvalidInputError, match="log_sensitivity prior"):
        post.add_column("log_sensitivity", LOW, SIGMA)
    fresh = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    for bad in ((LOW, SIGMA, "mixture"), (LOW, SIGMA, "mixture", 0.0)):
        with pytest.raises(InvalidInputError, match="positive second median"):
            fresh.add_column("log_sensitivity", *bad)
    with pytest.raises(InvalidInputError, match="minus_bias prior: a mixture prior is for a column on a log scale"):
        fresh.add_column("minus_bias", 0.0, 0.5, "mixture", 2.0)


def test_the_moves_keep_the_mixture_without_data():
    """Comparisons of a lens with itself carry no information: after repeated resample-move steps
    ``ln κ`` is still the mixture (half the particles on each side of the midpoint, the distribution
    of scipy's mixture), and the moves did move it."""
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04, n_particles=4000), START, 23)
    lens = tuple(map(float, START.centre))
    for y in "1=2":
        post.observe(ComparisonAnswer(0.2, lens, lens, y, TWO))
    for k in range(8):
        post._resample_move(np.random.default_rng([23, k, 99]))
    log_k = post.theta[:, LOG_SENSITIVITY]
    high = log_k > 0.5 * math.log(LOW * HIGH)
    assert abs(high.mean() - 0.5) < 0.04
    assert stats.kstest(log_k, mixture_cdf).statistic < 0.04
    drawn = ParticlePosterior(OpticsModelSpec(10, n_particles=4000), START, 23)
    drawn.add_column("log_sensitivity", LOW, SIGMA, "mixture", HIGH)
    assert post.n_moves == 8 and np.mean(log_k != drawn.theta[:, LOG_SENSITIVITY]) > 0.9


@pytest.mark.parametrize(("kappa_true", "high_side"), [(1.0, False), (15.5, True)])
def test_the_posterior_chooses_the_formula_that_made_the_answers(kappa_true, high_side):
    """80 comparisons drawn from the Eq. 11 model at known parameters scaled by ``kappa_true`` (the
    letter task's patient, 1, or the blur patient's focus ratio, 15.5): the posterior puts at least
    90% of its mass on that formula's side of the midpoint between the two medians."""
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=4000)
    post = ParticlePosterior(spec, START, 31)
    truth = np.array([[*START.centre + [0.2, -0.1, 0.05], 0.0, np.log(5.0), 1.0]])
    observe_scaled_comparisons(post, truth, kappa_true, TWO, np.random.default_rng(7))
    high = post.theta[:, LOG_SENSITIVITY] > 0.5 * math.log(LOW * HIGH)
    mass_high = float(post.weights @ high)
    assert (mass_high if high_side else 1.0 - mass_high) >= 0.9
    assert post.n_moves >= 1


def _mass_high_after(kappa_true: float, n: int, collapsed_to: float | None) -> float:
    """The posterior mass above the midpoint of the two medians after ``n`` answers at ``kappa_true``
    (``observe_scaled_comparisons``), every particle first put in the component at ``collapsed_to``
    (``ln κ`` ~ N(ln collapsed_to, σ²): the other component resampled away), or none (the prior's)."""
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04, n_particles=4000), START, 31)
    lens = tuple(map(float, START.centre))
    post.observe(ComparisonAnswer(0.2, lens, lens, "=", TWO))  # adds the column: no information
    if collapsed_to is not None:
        draws = np.random.default_rng(5).normal(math.log(collapsed_to), SIGMA, len(post.theta))
        post.theta[:, LOG_SENSITIVITY] = draws
    truth = np.array([[*START.centre + [0.2, -0.1, 0.05], 0.0, np.log(5.0), 1.0]])
    observe_scaled_comparisons(post, truth, kappa_true, TWO, np.random.default_rng(7), n=n)
    return float(post.weights @ (post.theta[:, LOG_SENSITIVITY] > 0.5 * math.log(LOW * HIGH)))


@pytest.mark.parametrize(("kappa_true", "collapsed_to"), [(HIGH, LOW), (LOW, HIGH)])
def test_a_formula_resampled_away_comes_back_when_the_answers_favour_it(kappa_true, collapsed_to):
    """Every particle in the other formula's component, then 10 answers of this formula's patient:
    the moves' reflection about the midpoint (``OptionalColumn.reflected``) carries the particles
    across, and the posterior's mass on each side is within 0.05 of a posterior that never lost the
    component (random-walk moves alone leave 0.11 of the 0.92 there, and 0.15 of the 0.003)."""
    whole = _mass_high_after(kappa_true, 10, None)
    assert (whole > 0.85) == (kappa_true == HIGH) and (whole < 0.05) == (kappa_true == LOW)
    assert abs(_mass_high_after(kappa_true, 10, collapsed_to) - whole) < 0.05


def test_the_reflection_is_its_own_inverse_and_only_for_a_mixture():
    col = OPTIONAL_COLUMNS["log_sensitivity"]
    x = np.array([-0.3, 0.0, 1.2, math.log(HIGH)])
    prior = (LOW, SIGMA, "mixture", HIGH)
    np.testing.assert_allclose(col.reflected(col.reflected(x, prior), prior), x, atol=1e-12)
    np.testing.assert_allclose(col.reflected(np.array([math.log(LOW)]), prior), [math.log(HIGH)], atol=1e-12)
    np.testing.assert_allclose(col.log_prior(col.reflected(x, prior), prior), col.log_prior(x, prior), atol=1e-12)
    assert col.reflected(x, (4.0, 1.0)) is None
