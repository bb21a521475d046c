"""The patient's lapse rate as an unknown (``model.lapse_sigma``): the letters' and the comparisons'
likelihoods against the formulas written out per particle, the logit-normal prior against scipy, the
posterior of ``λ`` against numerical integration, the key off as before, and the protocol key."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from tests.refraction.particles import random_theta as six_columns
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.chart_line import ChartLineAnswer
from visiontune.refraction.comparisons import ComparisonAnswer, comparison_probabilities
from visiontune.refraction.optics_model import (
    LAPSE_LOGIT,
    LetterAnswer,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
    has_column,
    lapse_rate,
    probability_correct,
    probability_grid,
)
from visiontune.refraction.protocol import ProtocolError, parse_protocol
from visiontune.refraction.start import StartingPoint

FIXED = OpticsModelSpec(n_alternatives=10, lapse=0.04)
INFERRED = OpticsModelSpec(n_alternatives=10, lapse=0.04, lapse_sigma=0.7, n_particles=4000)
START = StartingPoint(Prescription(-1.0, -0.5, 90.0), "autorefraction", 50.0)


def expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def random_theta(rng: np.random.Generator, n: int, lapse: bool = True) -> np.ndarray:
    """Six columns, and with ``lapse`` the ``logit λ`` column (10) after four not inferred."""
    theta = six_columns(rng, n)
    return np.column_stack([theta, np.full((n, 4), np.nan), rng.normal(-2.0, 1.0, n)]) if lapse else theta


def va_scalar(t, lens) -> float:
    m, j0, j45, va0, _, amp = (float(v) for v in t[:6])
    r_m = lens[0] - m
    r_m = r_m + min(amp, max(-r_m, 0.0))
    return va0 + math.log10(1.0 + r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)


# ---------------------------------------------------------------- the likelihoods
def test_a_letter_reads_each_particles_own_lapse_rate():
    rng = np.random.default_rng(3)
    theta = random_theta(rng, 30)
    s = rng.uniform(-0.2, 1.0, 7)
    lenses = np.column_stack([rng.uniform(-4, 2, 7), rng.normal(0, 0.5, 7), rng.normal(0, 0.5, 7)])
    p = probability_correct(theta, s, lenses, FIXED)
    ref = [
        [
            0.1
            + (0.9 - 1.0 / (1.0 + math.exp(-t[LAPSE_LOGIT]))) * phi(math.exp(t[4]) * (s[j] - va_scalar(t, lenses[j])))
            for j in range(7)
        ]
        for t in theta
    ]
    np.testing.assert_allclose(p, ref, rtol=1e-10)
    # the grid is the same numbers, size by lens
    grid = probability_grid(theta, s, lenses, FIXED)
    np.testing.assert_allclose(grid[:, np.arange(7), np.arange(7)], p, rtol=1e-12)
    # a chart line's letters each take the particle's lapse (chart_line's per-letter model)
    line = ChartLineAnswer(0.2, tuple(lenses[0]), (True, False, True, True, False), crowding_logmar=0.0)
    one = np.log(probability_correct(theta, [0.2], lenses[:1], FIXED)[:, 0])
    none = np.log(1.0 - probability_correct(theta, [0.2], lenses[:1], FIXED)[:, 0])
    np.testing.assert_allclose(line.log_likelihood(theta, FIXED), 3 * one + 2 * none, rtol=1e-10)


def test_a_comparison_reads_the_same_lapse_rate():
    model = ComparisonModel()
    rng = np.random.default_rng(5)
    theta = random_theta(rng, 20)
    l1 = np.column_stack([rng.uniform(-4, 2, 6), rng.normal(0, 0.5, 6), rng.normal(0, 0.5, 6)])
    l2 = l1 + rng.normal(0, 0.5, (6, 3))
    p = comparison_probabilities(theta, np.full(6, 0.1), l1, l2, model, FIXED)
    for i, t in enumerate(theta):
        lam = 1.0 / (1.0 + math.exp(-t[LAPSE_LOGIT]))
        for j in range(6):
            delta = math.exp(t[4]) * (va_scalar(t, l2[j]) - va_scalar(t, l1[j]))
            q1, q2 = phi(delta - model.indifference), phi(-delta - model.indifference)
            ref = [(1 - lam) * q + lam / 3 for q in (q1, q2, 1 - q1 - q2)]
            np.testing.assert_allclose(p[i, j], ref, rtol=1e-9, atol=1e-14)
    answers = [ComparisonAnswer(0.1, tuple(l1[j]), tuple(l2[j]), "12="[j % 3], model) for j in range(6)]
    single = sum(a.log_likelihood(theta, FIXED) for a in answers)
    np.testing.assert_allclose(ComparisonAnswer.batch_log_likelihood(answers, theta, FIXED), single, rtol=1e-12)


def test_without_the_column_the_protocols_constant_is_read():
    rng = np.random.default_rng(8)
    theta = random_theta(rng, 10, lapse=False)
    assert lapse_rate(theta, 0.04) == 0.04
    s, lenses = np.array([0.3]), np.array([[-1.0, 0.1, 0.0]])
    expected = 0.1 + 0.86 * np.array([phi(math.exp(t[4]) * (0.3 - va_scalar(t, lenses[0]))) for t in theta])
    np.testing.assert_allclose(probability_correct(theta, s, lenses, FIXED)[:, 0], expected, rtol=1e-10)
    post = ParticlePosterior(FIXED, START, seed=4)
    assert post.theta.shape[1] == 6 and post.column_priors == {}


# ---------------------------------------------------------------- the prior and the posterior
def test_the_prior_of_the_lapse_is_logit_normal_around_the_protocols_rate():
    post = ParticlePosterior(INFERRED, START, seed=11)
    assert has_column(post.theta, "lapse_logit")
    logit = post.theta[:, LAPSE_LOGIT]
    centre = math.log(0.04 / 0.96)
    assert stats.kstest(logit, stats.norm(centre, 0.7).cdf).pvalue > 0.01
    assert post.column_priors["lapse_logit"] == (pytest.approx(centre), 0.7)
    # the other columns are drawn as without it: the same particles in the first six columns
    np.testing.assert_array_equal(post.theta[:, :6], ParticlePosterior(FIXED, START, seed=11).theta)


def _posterior_of_lapse_by_quadrature(wrong: int, right: int) -> tuple[float, float]:
    """Mean and sd of ``λ`` for ``logit λ ~ N(logit 0.04, 0.7²)`` after ``wrong`` misses of ``right + wrong``
    letters each read with probability ``1 - λ`` (letters far above threshold)."""
    centre = math.log(0.04 / 0.96)

    def density(x):
        lam = 1.0 / (1.0 + math.exp(-x))
        return math.exp(-0.5 * ((x - centre) / 0.7) ** 2 + wrong * math.log(lam) + right * math.log1p(-lam))

    z = integrate.quad(density, -12, 4, limit=200)[0]
    mean = integrate.quad(lambda x: density(x) / (1 + math.exp(-x)), -12, 4, limit=200)[0] / z
    second = integrate.quad(lambda x: density(x) / (1 + math.exp(-x)) ** 2, -12, 4, limit=200)[0] / z
    return mean, math.sqrt(second - mean**2)


@pytest.mark.parametrize(("wrong", "total"), [(2, 60), (9, 60)])
def test_the_posterior_of_the_lapse_matches_numerical_integration(wrong, total):
    """Letters at 1.3 logMAR through the start lens: every particle reads them but for a lapse
    (``Φ ≈ 1``), so the answers inform ``λ`` alone and its posterior is the one-dimensional integral."""
    spec = OpticsModelSpec(10, lapse=0.04, lapse_sigma=0.7, va0_sd=0.05, slope_median=10.0, slope_sigma=0.2)
    start = StartingPoint(Prescription(-1.0, 0.0, 0.0), "autorefraction", 60.0)
    post = ParticlePosterior(spec, start, seed=21)
    lens = tuple(start.rx.power_vector_array())
    seen = probability_correct(post.theta[:, :6], [1.3], np.array([lens]), OpticsModelSpec(10, lapse=0.0))
    assert np.min(seen) > 0.9999
    for k in range(total):
        post.observe(LetterAnswer(1.3, lens, k % (total // wrong) != 0 or k >= wrong * (total // wrong)))
    assert sum(not a.correct for a in post.answers) == wrong
    lam = lapse_rate(post.theta, 0.04)[:, 0]
    mean, sd = _posterior_of_lapse_by_quadrature(wrong, total - wrong)
    w = post.weights
    got_mean = float(w @ lam)
    got_sd = float(np.sqrt(w @ (lam - got_mean) ** 2))
    assert got_mean == pytest.approx(mean, abs=0.15 * sd + 0.002)
    assert got_sd == pytest.approx(sd, rel=0.2)


def test_the_posterior_with_the_lapse_is_a_pure_function_of_the_answers():
    rng = np.random.default_rng(2)
    answers = [
        LetterAnswer(float(rng.uniform(-0.1, 0.6)), (-1.0 + rng.normal(0, 0.5), 0.1, 0.0), bool(rng.random() < 0.7))
        for _ in range(40)
    ]
    a, b = ParticlePosterior(INFERRED, START, seed=9), ParticlePosterior(INFERRED, START, seed=9)
    for x in answers:
        a.observe(x)
        b.observe(x)
    assert a.n_moves > 0
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.log_w, b.log_w)


# ---------------------------------------------------------------- settings and the protocol key
PROTOCOL = (Path(__file__).parents[2] / "visiontune/data/protocols/clinical-sloan-lines-two-formulas.toml").read_text()


def _with(extra: str):
    text = PROTOCOL.replace("n_particles = 4000\n", "n_particles = 4000\n" + extra + "\n", 1)
    assert extra in text
    return parse_protocol(text, "t.toml")


def test_the_protocol_key_turns_the_unknown_on_and_bad_values_are_refused_with_the_key():
    assert _with("").model.lapse_sigma == 0.0
    assert _with("lapse_sigma = 0.7").model.lapse_sigma == 0.7
    for extra in ("lapse_sigma = -0.1", "lapse_sigma = 4.0", 'lapse_sigma = "wide"'):
        with pytest.raises(ProtocolError, match=r"model\.lapse_sigma"):
            _with(extra)
    with pytest.raises(ProtocolError, match=r"model\.lapse_sigma.*positive model\.lapse"):
        parse_protocol(
            PROTOCOL.replace(
                "lapse = 0.04\nn_particles = 4000\n", "lapse = 0.0\nn_particles = 4000\nlapse_sigma = 0.5\n", 1
            ),
            "t.toml",
        )
    for bad in ({"lapse_sigma": -1.0}, {"lapse_sigma": 3.5}, {"lapse": 0.0, "lapse_sigma": 0.5}):
        with pytest.raises(InvalidInputError, match="lapse_sigma"):
            OpticsModelSpec(n_alternatives=10, **{"lapse": 0.04, **bad})


def test_acuity_is_not_changed_by_the_lapse_column():
    rng = np.random.default_rng(1)
    theta = random_theta(rng, 5)
    lenses = np.array([[-1.0, 0.0, 0.0], [0.5, 0.2, -0.1]])
    np.testing.assert_array_equal(acuity_logmar(theta, lenses), acuity_logmar(theta[:, :6], lenses))
