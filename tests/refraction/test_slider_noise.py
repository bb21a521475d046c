"""The slider's choice noise ``τ`` inferred per patient (visiontune.refraction.slider, the ``ln τ``
column of visiontune.refraction.optics_model) against independent oracles: the prior draws against
the lognormal (Kolmogorov-Smirnov), the likelihood against the choice probabilities written out per
particle and per scalar, the posterior of ``ln τ`` at a fixed ``θ`` against a brute-force grid
posterior; the moves keep the prior without data; the optional columns ``ln κ`` and ``ln τ`` come in
either order to the same particles; a session log with inferred noise rebuilds its posterior bit
for bit; ``noise_sigma = 0`` is the fixed model."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kstest, norm

from tests.refraction.letters import random_letters
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.comparisons import ComparisonAnswer, sensitivity, with_sensitivity
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.loop import MemoryLog, PendingSlider, Refraction, SimulatedPresenter, is_slider
from visiontune.refraction.mixed_engine import MixedOpticsEngine
from visiontune.refraction.optics_model import (
    LOG_NOISE,
    LOG_SENSITIVITY,
    OPTIONAL_COLUMNS,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
    has_column,
)
from visiontune.refraction.protocol import parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.slider import (
    KNOBS,
    SliderAnswer,
    SliderModel,
    choice_probabilities,
    knob_path,
    slider_noise,
    slider_probabilities,
    slider_value,
    with_noise,
)
from visiontune.refraction.start import StartingPoint

SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04, n_particles=2000)
INFERRED = SliderModel(noise_logmar=0.055, lapse=0.05, noise_sigma=0.5)
KAPPA = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)
START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 35)
CENTRE = Prescription(-1.25, -0.75, 30.0)
ROOT = Path(__file__).resolve().parents[2]


def particles(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            rng.normal(-1.0, 0.5, n),
            rng.normal(0.0, 0.3, n),
            rng.normal(0.0, 0.3, n),
            rng.normal(0.0, 0.1, n),
            rng.normal(np.log(5.0), 0.3, n),
            rng.uniform(0.0, 4.0, n),
        ]
    )


def slider_answers(lenses_list, choices, model=INFERRED) -> list[SliderAnswer]:
    return [SliderAnswer(lenses, 0.1, int(c), model) for lenses, c in zip(lenses_list, choices)]


# ---------------------------------------------------------------- the model
def test_noise_sigma_zero_is_the_fixed_model():
    assert SliderModel().noise_sigma == 0.0 and not SliderModel().infers_noise
    assert SliderModel(0.03, 0.05) == SliderModel(0.03, 0.05, 0.0) and INFERRED.infers_noise
    theta = particles(300)
    assert slider_noise(theta, SliderModel()) == 0.03
    assert with_noise(theta, SliderModel(), np.random.default_rng(0)) is theta
    answer = SliderAnswer(knob_path("sphere", CENTRE).lenses, 0.1, 3)
    assert answer.column_priors == ()
    for bad in (-0.1, 3.5, float("nan"), True, "0.5"):
        with pytest.raises(InvalidInputError, match="noise_sigma"):
            SliderModel(noise_sigma=bad)


def test_the_noise_column_is_added_at_the_first_slider_from_its_own_stream():
    """Letters leave six columns; the first slider of an inferring model adds ``ln τ`` at column 7
    (column 6, ``ln κ``, not inferred: NaN), drawn from ``default_rng([seed, 0, 0x7A0])``, the
    letters' particles kept as they were; its draws follow the lognormal prior."""
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=5000)
    a, b = ParticlePosterior(spec, START, 41), ParticlePosterior(spec, START, 41)
    for s, lens, y in random_letters(np.random.default_rng(2), START.centre, 12):
        a.update(s, lens, y)
        b.update(s, lens, y)
    assert a.theta.shape[1] == 6 and a.noise_prior is None
    a.observe(SliderAnswer(knob_path("sphere", CENTRE).lenses, 0.1, 4, INFERRED))
    assert a.theta.shape[1] == 8 and a.noise_prior == (0.055, 0.5) and a.sensitivity_prior is None
    assert np.all(np.isnan(a.theta[:, LOG_SENSITIVITY])) and not has_column(a.theta, "log_sensitivity")
    assert has_column(a.theta, "log_noise")
    draws = np.random.default_rng([41, 0, OPTIONAL_COLUMNS["log_noise"].purpose]).normal(np.log(0.055), 0.5, 5000)
    assert a.n_moves == b.n_moves  # no move at this answer: the columns as they were drawn
    np.testing.assert_array_equal(a.theta[:, :6], b.theta)
    np.testing.assert_array_equal(a.theta[:, LOG_NOISE], draws)
    assert kstest(draws, norm(np.log(0.055), 0.5).cdf).pvalue > 1e-3
    # one prior of τ per session
    with pytest.raises(InvalidInputError, match="log_noise prior"):
        a.observe(SliderAnswer(knob_path("sphere", CENTRE).lenses, 0.1, 4, SliderModel(0.03, 0.05, 0.5)))


def test_with_noise_adds_prior_draws_and_the_likelihood_needs_the_column():
    rng = np.random.default_rng(3)
    theta6 = particles(6000, 1)
    lenses = knob_path("cylinder", CENTRE).lenses
    with pytest.raises(InvalidInputError, match="no ln τ column"):
        slider_probabilities(theta6, lenses, INFERRED)
    theta8 = with_noise(theta6, INFERRED, rng)
    assert theta8.shape == (6000, 8) and np.array_equal(theta8[:, :6], theta6)
    assert np.all(np.isnan(theta8[:, LOG_SENSITIVITY])) and with_noise(theta8, INFERRED, rng) is theta8
    assert kstest(theta8[:, LOG_NOISE], norm(np.log(0.055), 0.5).cdf).pvalue > 1e-3
    # with a ln κ column already there, τ is appended after it and κ kept
    theta7 = with_sensitivity(theta6, KAPPA, rng)
    both = with_noise(theta7, INFERRED, rng)
    assert both.shape == (6000, 8) and np.array_equal(both[:, :7], theta7)
    # and a ln κ added after ln τ fills column 6 (a comparison chosen after a slider)
    filled = with_sensitivity(theta8, KAPPA, rng)
    assert np.array_equal(filled[:, LOG_NOISE], theta8[:, LOG_NOISE]) and has_column(filled, "log_sensitivity")
    assert np.isnan(theta8[0, LOG_SENSITIVITY])  # the input is not changed
    with pytest.raises(InvalidInputError, match="no ln κ column"):
        sensitivity(theta8, KAPPA)


def test_the_likelihood_uses_each_particles_noise():
    """``log P(choice | θ_i)`` with each particle's ``τ_i`` equals the choice probabilities of the
    fixed model at ``τ = τ_i``, computed per particle and, for a few, per scalar from the formula."""
    rng = np.random.default_rng(5)
    theta = with_noise(particles(400, 2), INFERRED, rng)
    paths = [knob_path(k, CENTRE) for k in KNOBS] + [knob_path("sphere", CENTRE, half_range=0.5)]
    # paths of different lengths, some asked again (the normaliser is computed once per distinct path)
    answers = slider_answers([p.lenses for p in paths + paths[:1] + paths[3:] + paths[:1]], [2, 0, 8, 4, 5, 1, 2])
    got = SliderAnswer.batch_log_likelihood(answers, theta, SPEC)
    tau = np.exp(theta[:, LOG_NOISE])
    expected = np.zeros(len(theta))
    for a in answers:
        va = acuity_logmar(theta, np.array(a.lenses))
        for i in range(len(theta)):
            p = choice_probabilities(va[i], SliderModel(tau[i], INFERRED.lapse))
            expected[i] += math.log(p[a.choice])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # written out: (1 - ε) e^{-VA_j/τ} / Σ_k e^{-VA_k/τ} + ε/n
    for i in range(3):
        total = 0.0
        for a in answers:
            va = acuity_logmar(theta[i : i + 1], np.array(a.lenses))[0]
            e = [math.exp(-v / tau[i]) for v in va]
            total += math.log((1 - 0.05) * e[a.choice] / sum(e) + 0.05 / len(va))
        assert got[i] == pytest.approx(total, rel=1e-11)
    # the fixed model, the same answers: τ = 0.03 for every particle
    fixed = SliderModel(0.03, 0.05)
    got_fixed = SliderAnswer.batch_log_likelihood(
        slider_answers([a.lenses for a in answers], [a.choice for a in answers], fixed), theta, SPEC
    )
    expected_fixed = sum(
        np.log(choice_probabilities(acuity_logmar(theta, np.array(a.lenses)), fixed)[:, a.choice]) for a in answers
    )
    np.testing.assert_allclose(got_fixed, expected_fixed, rtol=1e-12)
    # each answer alone sums to the batch
    single = sum(a.log_likelihood(theta, SPEC) for a in answers)
    np.testing.assert_allclose(single, got, rtol=1e-12)
    # the value of a slider reads the particles' τ: a prior concentrated at τ = 0.03 scores as the fixed model
    sharp = SliderModel(0.03, 0.05, 1e-9)
    theta_sharp = with_noise(particles(400, 2), sharp, rng)
    lenses = paths[0].lenses
    assert slider_value(theta_sharp, lenses, sharp) == pytest.approx(
        slider_value(particles(400, 2), lenses, SliderModel(0.03, 0.05)), rel=1e-6
    )
    assert slider_value(theta, lenses, INFERRED) != pytest.approx(
        slider_value(theta[:, :6], lenses, SliderModel(0.055, 0.05)), rel=1e-3
    )


@pytest.mark.parametrize("tau_true", [0.02, 0.12])
def test_the_posterior_of_ln_tau_at_a_fixed_theta_is_the_grid_posterior(tau_true):
    """At one fixed ``θ`` (every particle the same) and many choices drawn by the model at
    ``tau_true``, the particles' ``ln τ`` (prior draws of the column, weighted by the batch
    likelihood) have the posterior of a brute-force grid over ``ln τ`` (prior density times the
    product of the choice probabilities at each grid point, scalar τ): its mean, SD and quantiles."""
    theta0 = np.array([[-1.0, 0.1, -0.05, 0.0, np.log(5.0), 0.5]])
    rng = np.random.default_rng(int(1000 * tau_true))
    paths = [knob_path(k, Prescription(-0.75, -0.5, 10.0)) for k in KNOBS]
    truth = SliderModel(tau_true, INFERRED.lapse)
    lenses_list, choices = [], []
    for k in range(40):
        lenses = paths[k % 3].lenses
        p = choice_probabilities(acuity_logmar(theta0, np.array(lenses))[0], truth)
        lenses_list.append(lenses)
        choices.append(int(rng.choice(len(p), p=p)))
    answers = slider_answers(lenses_list, choices)
    n = 50_000
    theta = with_noise(np.repeat(theta0, n, axis=0), INFERRED, np.random.default_rng(7))
    log_w = SliderAnswer.batch_log_likelihood(answers, theta, SPEC)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    u = theta[:, LOG_NOISE]
    # the grid oracle: (1 - ε) e^{-VA_j/τ} / Σ_k e^{-VA_k/τ} + ε/n at each grid point, written out
    grid = np.linspace(np.log(0.055) - 6 * 0.5, np.log(0.055) + 6 * 0.5, 6001)
    tau = np.exp(grid)[:, None]
    log_post = norm.logpdf(grid, np.log(0.055), 0.5)
    for lenses, c in zip(lenses_list, choices):
        va = acuity_logmar(theta0, np.array(lenses))[0]
        z = -va[None, :] / tau  # (grid, n)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        log_post = log_post + np.log((1.0 - INFERRED.lapse) * e[:, c] / e.sum(axis=1) + INFERRED.lapse / len(va))
    pg = np.exp(log_post - log_post.max())
    pg /= pg.sum()
    mean_g = float(pg @ grid)
    sd_g = float(np.sqrt(pg @ (grid - mean_g) ** 2))
    ess = 1.0 / np.sum(w**2)
    assert ess > 1000
    tol = 5.0 * sd_g / math.sqrt(ess)
    assert float(w @ u) == pytest.approx(mean_g, abs=tol)
    assert math.sqrt(float(w @ (u - w @ u) ** 2)) == pytest.approx(sd_g, rel=0.05)
    cdf = np.cumsum(pg)
    for q in (0.1, 0.5, 0.9):
        assert weighted_quantile(u, w, q) == pytest.approx(float(np.interp(q, cdf, grid)), abs=2 * tol)
    # the answers are informative: the posterior is narrower than the prior and holds the truth
    assert sd_g < 0.5 and abs(mean_g - math.log(tau_true)) < 2.5 * sd_g


def test_the_moves_keep_the_priors_of_both_columns_without_data():
    """Sliders along a path of one lens repeated and comparisons of a lens with itself carry no
    information: the weights stay equal, both columns are added (τ first), and repeated
    resample-move steps leave ``ln τ`` and ``ln κ`` distributed as their priors."""
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04, n_particles=4000), START, 43)
    lens = tuple(map(float, START.centre))
    post.observe(SliderAnswer((lens, lens, lens), 0.1, 1, INFERRED))
    assert post.theta.shape[1] == 8 and np.isnan(post.theta[:, LOG_SENSITIVITY]).all()
    post._resample_move(np.random.default_rng([43, 0, 99]))
    assert np.isnan(post.theta[:, LOG_SENSITIVITY]).all() and np.isfinite(post.theta[:, [0, 1, 2, 3, 4, 5, 7]]).all()
    post.observe(ComparisonAnswer(0.2, lens, lens, "=", KAPPA))
    assert list(post.column_priors) == ["log_sensitivity", "log_noise"]
    assert post.effective_sample_size() == pytest.approx(4000)
    for k in range(1, 9):
        post._resample_move(np.random.default_rng([43, k, 99]))
    for col, (median, sigma) in ((LOG_NOISE, (0.055, 0.5)), (LOG_SENSITIVITY, (4.0, 1.0))):
        x = post.theta[:, col]
        for q in (0.05, 0.25, 0.5, 0.75, 0.95):
            assert abs(np.quantile(x, q) - norm.ppf(q, np.log(median), sigma)) < 0.12 * sigma
        assert abs(np.std(x) - sigma) < 0.08 * sigma
    first = np.random.default_rng([43, 0, OPTIONAL_COLUMNS["log_noise"].purpose]).normal(np.log(0.055), 0.5, 4000)
    assert np.mean(post.theta[:, LOG_NOISE] != first) > 0.9  # the moves do move τ


def test_the_log_prior_has_the_lognormal_term_of_tau():
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=200), START, 1)
    post.add_column("log_noise", 0.055, 0.5)
    theta = np.repeat(post.theta[:1], 2, axis=0)
    theta[0, LOG_NOISE], theta[1, LOG_NOISE] = np.log(0.055), np.log(0.055) + 1.0
    lp = post._log_prior(theta)
    assert lp[0] - lp[1] == pytest.approx(0.5 * (1.0 / 0.5) ** 2, rel=1e-12)
    with pytest.raises(InvalidInputError, match="column: expected one of log_sensitivity, log_noise"):
        post.add_column("log_lapse", 0.05, 0.5)
    with pytest.raises(InvalidInputError, match="positive median and sigma"):
        post.add_column("log_sensitivity", 4.0, 0.0)


def test_kappa_and_tau_in_either_order_give_the_same_particles():
    """From the same posterior, adding ``ln κ`` then ``ln τ`` or ``ln τ`` then ``ln κ`` (directly,
    through the first answers of each kind, or on bare particles) gives the same particles bit for
    bit and the same log-prior."""
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=3000)
    base = ParticlePosterior(spec, START, 44)
    for s, lens, y in random_letters(np.random.default_rng(8), START.centre, 10):
        base.update(s, lens, y)
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    a.add_column("log_sensitivity", 4.0, 1.0)
    a.add_column("log_noise", 0.055, 0.5)
    b.add_column("log_noise", 0.055, 0.5)
    b.add_column("log_sensitivity", 4.0, 1.0)
    assert np.array_equal(a.theta, b.theta) and a.column_priors == b.column_priors
    assert np.array_equal(a._log_prior(a.theta), b._log_prior(b.theta))
    # through observe: the first comparison and the first slider, in either order
    c = START.centre
    comparison = ComparisonAnswer(0.2, tuple(map(float, c + [0.25, 0, 0])), tuple(map(float, c)), "2", KAPPA)
    slider = SliderAnswer(knob_path("sphere", CENTRE).lenses, 0.1, 4, INFERRED)
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    for x in (comparison, slider):
        a.observe(x)
    for x in (slider, comparison):
        b.observe(x)
    assert a.n_moves == b.n_moves == base.n_moves  # no move between: the same particles, reweighted alike
    assert np.array_equal(a.theta, b.theta)
    np.testing.assert_allclose(a.log_w, b.log_w, rtol=1e-13, atol=1e-12)
    # on bare particles (choosing a question before the first answer of each kind)
    theta = particles(500, 3)
    ka = with_noise(with_sensitivity(theta, KAPPA, np.random.default_rng(1)), INFERRED, np.random.default_rng(2))
    tk = with_sensitivity(with_noise(theta, INFERRED, np.random.default_rng(2)), KAPPA, np.random.default_rng(1))
    assert np.array_equal(ka, tk)


def test_comparisons_alone_keep_seven_columns():
    """The slider's column changes nothing for a session without it: κ alone is column 6 of seven."""
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=500), START, 2)
    lens = tuple(map(float, START.centre))
    post.observe(ComparisonAnswer(0.2, lens, lens, "1", KAPPA))
    assert post.theta.shape == (500, 7) and post.noise_prior is None
    draws = np.random.default_rng([2, 0, 0x5E5]).normal(np.log(4.0), 1.0, 500)
    np.testing.assert_array_equal(post.theta[:, LOG_SENSITIVITY], draws)


# ---------------------------------------------------------------- the session
def _protocol(sigma: float):
    text = (ROOT / "tests" / "protocols" / "sloan-compare-sliders.toml").read_text()
    text = text.replace("noise_logmar = 0.03\n", f"noise_logmar = 0.03\nnoise_sigma = {sigma}\n")
    return parse_protocol(text, "sliders with the noise inferred")


def test_the_protocol_reads_noise_sigma():
    p = _protocol(0.5)
    assert p.sliders.model == SliderModel(0.03, 0.05, 0.5)
    assert _protocol(0).sliders.model == SliderModel(0.03, 0.05)


def test_a_session_with_inferred_noise_rebuilds_its_posterior_from_the_log_bit_for_bit():
    protocol = _protocol(0.5)
    case = simulated_case(seed=6, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    presenter = SimulatedPresenter(case.patient(protocol.n_alternatives), slider_model=SliderModel(0.1, 0.1))
    sliders = 0
    for _ in range(60):
        q = refraction.next_query()
        sliders += isinstance(q, PendingSlider)
        refraction.record(presenter.present(q))
        if sliders >= 3:
            break
    trials = refraction.trials()
    assert sum(is_slider(t) for t in trials) >= 3
    post = refraction.engine.posterior(trials)
    assert post.noise_prior == (0.03, 0.5) and post.theta.shape[1] == 8
    fresh = MixedOpticsEngine(protocol, start, case.seed, protocol.comparisons, protocol.sliders)
    again = fresh.posterior(trials)
    assert np.array_equal(post.theta, again.theta, equal_nan=True) and np.array_equal(post.log_w, again.log_w)
    resumed = Refraction(refraction.log, protocol, seed=case.seed, start=start, simulated=True)
    assert resumed.next_query() == refraction.next_query()
