"""The "equal" band's prior of two kinds of patient (``ComparisonModel.indifference_second_median``
and ``indifference_second_weight``): the keys, the weighted mixture's draws, log density and
standard deviation against scipy's normals, the moves keeping it without data, and the posterior
telling a patient who rarely says "no difference" from one who answers as the model does."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.refraction.test_answer_bias import _posterior_after
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.answer_models import AnswerModel
from visiontune.refraction.comparisons import with_sensitivity
from visiontune.refraction.optics_model import (
    LOG_INDIFFERENCE,
    OPTIONAL_COLUMNS,
    OpticsModelSpec,
    ParticlePosterior,
    mixture_weight,
)
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint

START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 30)
TAU, SIGMA, SECOND, WEIGHT = 0.5, 0.35, 0.19, 0.25
BAND = ComparisonModel(indifference_sigma=SIGMA, indifference_second_median=SECOND, indifference_second_weight=WEIGHT)
PRIOR = (TAU, SIGMA, "mixture", SECOND, WEIGHT)
MIDPOINT = 0.5 * math.log(TAU * SECOND)
#: The prior's share below the midpoint: ``(1 - w) Φ(-d/σ) + w Φ(d/σ)``, ``d`` half the distance of the centres.
BELOW = float((1 - WEIGHT) * stats.norm.cdf(-0.5 * math.log(TAU / SECOND) / SIGMA)) + float(
    WEIGHT * stats.norm.cdf(0.5 * math.log(TAU / SECOND) / SIGMA)
)


def mixture_cdf(x):
    """``(1 - w) N(ln 0.5, σ²) + w N(ln 0.19, σ²)``, written with scipy."""
    return (1 - WEIGHT) * stats.norm.cdf(x, math.log(TAU), SIGMA) + WEIGHT * stats.norm.cdf(x, math.log(SECOND), SIGMA)


def equal_mixture_cdf(x):
    """The same two components weighed equally (the draws must not follow it)."""
    return 0.5 * stats.norm.cdf(x, math.log(TAU), SIGMA) + 0.5 * stats.norm.cdf(x, math.log(SECOND), SIGMA)


def test_the_keys_are_off_by_default_checked_and_read_from_the_protocol():
    assert ComparisonModel().indifference_second_median == 0.0
    assert ComparisonModel(indifference_sigma=1.0).column_priors == (("log_indifference", 0.5, 1.0),)
    assert BAND.column_priors == (("log_indifference", *PRIOR),)
    equal = ComparisonModel(indifference_sigma=SIGMA, indifference_second_median=SECOND)
    assert equal.column_priors == (("log_indifference", TAU, SIGMA, "mixture", SECOND),)
    with pytest.raises(InvalidInputError, match="indifference_second_median: .*indifference_sigma > 0"):
        ComparisonModel(indifference_second_median=0.19)
    for weight in (0.0, 1.0, -0.2):
        with pytest.raises(InvalidInputError, match="indifference_second_weight"):
            ComparisonModel(
                indifference_sigma=SIGMA, indifference_second_median=SECOND, indifference_second_weight=weight
            )
    text = load_protocol("clinical-sloan-lines-two-formulas").source_text
    keys = "indifference = 0.5\nindifference_sigma = 0.35\nindifference_second_median = 0.19\n"
    on = text.replace("indifference = 0.5\n", keys + "indifference_second_weight = 0.25\n")
    assert parse_protocol(on, "on.toml").comparisons.comparison.column_priors[-1] == ("log_indifference", *PRIOR)
    bad = text.replace("indifference = 0.5\n", keys + "indifference_second_weight = 1.5\n")
    with pytest.raises(ProtocolError, match=r"comparisons\.model\.indifference_second_weight"):
        parse_protocol(bad, "bad.toml")


def test_the_draws_follow_the_weighted_mixture_and_its_sd_is_the_closed_form():
    """``add_column`` and ``with_sensitivity`` (a question before the first comparison) both draw the
    weighted mixture (Kolmogorov-Smirnov against scipy, seeded; the share below the midpoint of the
    centres in closed form), not the equal mixture; ``prior_sd`` is ``√(σ² + w (1 - w) Δ²)`` and matches the draws'."""
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=4000), START, 11)
    post.add_column("log_indifference", TAU, SIGMA, "mixture", SECOND, WEIGHT)
    assert post.column_priors["log_indifference"] == PRIOR and mixture_weight(PRIOR) == WEIGHT
    drawn = post.theta[:, LOG_INDIFFERENCE]
    assert stats.kstest(drawn, mixture_cdf).pvalue > 0.01
    assert abs(np.mean(drawn < MIDPOINT) - BELOW) < 0.03
    before = with_sensitivity(post.theta[:, :6], BAND, np.random.default_rng(12))[:, LOG_INDIFFERENCE]
    assert stats.kstest(before, mixture_cdf).pvalue > 0.01
    assert stats.kstest(drawn, equal_mixture_cdf).pvalue < 1e-6
    sd = OPTIONAL_COLUMNS["log_indifference"].prior_sd(PRIOR)
    assert sd == pytest.approx(math.sqrt(SIGMA**2 + WEIGHT * (1 - WEIGHT) * math.log(TAU / SECOND) ** 2), rel=1e-12)
    assert np.std(drawn) == pytest.approx(sd, rel=0.03)


def test_the_log_prior_is_the_weighted_mixtures_log_density():
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    post.add_column("log_indifference", TAU, SIGMA, "mixture", SECOND, WEIGHT)
    theta = np.repeat(post.theta[:1], 5, axis=0)
    x = np.array([-3.0, -1.66, -1.2, -0.69, 0.3])
    theta[:, LOG_INDIFFERENCE] = x
    lp = post._log_prior(theta)
    density = (1 - WEIGHT) * stats.norm.pdf(x, math.log(TAU), SIGMA) + WEIGHT * stats.norm.pdf(
        x, math.log(SECOND), SIGMA
    )
    oracle = np.log(density)
    np.testing.assert_allclose(lp - lp[0], oracle - oracle[0], rtol=1e-10)
    fresh = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    with pytest.raises(InvalidInputError, match="second weight must lie in"):
        fresh.add_column("log_indifference", TAU, SIGMA, "mixture", SECOND, 1.0)


def test_the_moves_keep_the_weighted_mixture_without_data():
    """No answer reads the band: after repeated resample-move steps ``ln τ`` is still the weighted
    mixture (its share below the midpoint, scipy's distribution), and the moves did move it (the
    reflection between the components is accepted at the ratio of their weights)."""
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04, n_particles=4000), START, 23)
    post.add_column("log_indifference", TAU, SIGMA, "mixture", SECOND, WEIGHT)
    drawn = post.theta[:, LOG_INDIFFERENCE].copy()
    for k in range(8):
        post._resample_move(np.random.default_rng([23, k, 99]))
    log_tau = post.theta[:, LOG_INDIFFERENCE]
    assert abs(np.mean(log_tau < MIDPOINT) - BELOW) < 0.04
    assert stats.kstest(log_tau, mixture_cdf).statistic < 0.04
    assert post.n_moves == 8 and np.mean(log_tau != drawn) > 0.9


@pytest.mark.parametrize(("tau_true", "seed", "narrow"), [(0.1, 8, True), (0.5, 9, False)])
def test_the_posterior_tells_a_patient_who_rarely_says_equal(tau_true, seed, narrow):
    """120 comparisons at a pair the eye clears, from a simulated patient with the band ``tau_true``:
    the ``less-equal`` patient's (0.1, "=" 8% at equal lenses) posterior puts at least 90% of its mass in
    the second component (below the midpoint of the two centres, prior 25%), the model's patient's
    (0.5) at most 10%."""
    model = ComparisonModel(
        lapse=0.04,
        sensitivity_median=4.0,
        sensitivity_sigma=1.0,
        indifference_sigma=SIGMA,
        indifference_second_median=SECOND,
        indifference_second_weight=WEIGHT,
    )
    post = _posterior_after(AnswerModel("t", "t", indifference=tau_true), model, seed, n_comparisons=120)
    mass = float(post.weights @ (post.theta[:, LOG_INDIFFERENCE] < MIDPOINT))
    assert (mass >= 0.9) if narrow else (mass <= 0.1), mass
