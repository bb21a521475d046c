"""The optics model (visiontune.refraction.optics_model) against independent oracles: the
psychometric formula written out per scalar, scipy's entropy, counting for systematic
resampling, importance weights recomputed by hand, grid quadrature of the posterior of M,
and a simulated accommodating patient (visiontune.optics.SimulatedPatient)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from numpy.polynomial.legendre import leggauss
from scipy.special import ndtr
from scipy.stats import entropy

from tests.refraction.particles import random_theta
from visiontune.optics import PowerVector, Prescription, SimulatedPatient
from visiontune.refraction.optics_model import (
    OpticsModelSpec,
    ParticlePosterior,
    binary_entropy_bits,
    probability_correct,
    probability_grid,
    systematic_resample,
)
from visiontune.refraction.start import StartingPoint


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def p_scalar(theta, s: float, lens, chance: float, lapse: float) -> float:
    """gamma + (1 - gamma - lambda) Phi(a (s - VA)), VA = VA0 + log10(1 + |r|^2), with
    r = L - P*, r_M += min(A, max(-r_M, 0)) (one particle, one trial)."""
    m, j0, j45, va0, log_a, amp = (float(v) for v in theta)
    r_m = lens[0] - m
    r_m = r_m + min(amp, max(-r_m, 0.0))
    blur2 = r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2
    va = va0 + math.log10(1.0 + blur2)
    return chance + (1.0 - chance - lapse) * phi(math.exp(log_a) * (s - va))


SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04)


# ------------------------------------------------------------------ the psychometric model
def test_probability_correct_matches_the_scalar_formula():
    rng = np.random.default_rng(1)
    theta = random_theta(rng, 40)
    s = rng.uniform(-0.3, 1.3, 9)
    lenses = np.column_stack([rng.uniform(-6, 4, 9), rng.normal(0, 0.6, 9), rng.normal(0, 0.6, 9)])
    spec = OpticsModelSpec(n_alternatives=4, lapse=0.1)
    p = probability_correct(theta, s, lenses, spec)
    assert p.shape == (40, 9)
    ref = np.array([[p_scalar(t, s[j], lenses[j], 0.25, 0.1) for j in range(9)] for t in theta])
    np.testing.assert_allclose(p, ref, rtol=1e-12, atol=1e-13)
    # the accommodation term mattered for some pairs (lens more minus than P*) and not for others
    r_m = lenses[None, :, 0] - theta[:, None, 0]
    assert np.any(r_m < -0.5) and np.any(r_m > 0.5)


def test_accommodation_flattens_acuity_on_the_minus_side_only():
    theta = np.array([[-2.0, 0.1, -0.2, 0.0, np.log(5.0), 1.5]])
    centre = theta[0, :3]
    lenses = np.array([centre, centre - [1.0, 0, 0], centre - [1.5, 0, 0], centre - [2.0, 0, 0], centre + [0.5, 0, 0]])
    p = probability_correct(theta, np.full(5, 0.1), lenses, SPEC)[0]
    # up to A = 1.5 D of over-minus reads as the correction; beyond, blur of the excess 0.5 D,
    # the same as 0.5 D under-minus
    np.testing.assert_allclose(p[1:3], p[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(p[3], p[4], rtol=0, atol=1e-15)
    assert p[3] < p[0] - 0.05


def test_model_equals_the_simulated_patient_at_the_true_parameters():
    true_rx = Prescription(-1.75, -1.0, 25.0)
    patient = SimulatedPatient(
        true_rx, best_corrected_logmar=0.05, slope=4.0, n_alternatives=10, lapse=0.04, seed=0, age_years=30
    )
    theta = np.array([[*true_rx.power_vector_array(), 0.05, np.log(4.0), patient.usable_accommodation_d]])
    rng = np.random.default_rng(2)
    pvs = true_rx.power_vector_array() + np.column_stack([rng.uniform(-8, 2, 25), rng.normal(0, 0.5, (25, 2))])
    s = rng.uniform(-0.3, 1.3, 25)
    model = probability_correct(theta, s, pvs, SPEC)[0]
    ref = [patient.probability_correct(s[j], PowerVector(*pvs[j]).to_prescription()) for j in range(25)]
    np.testing.assert_allclose(model, ref, rtol=1e-10, atol=1e-12)


def test_probability_grid_equals_probability_correct_pointwise():
    rng = np.random.default_rng(3)
    theta = random_theta(rng, 30)
    s_grid = np.linspace(-0.3, 1.3, 7)
    lenses = np.column_stack([rng.uniform(-5, 3, 5), rng.normal(0, 0.5, 5), rng.normal(0, 0.5, 5)])
    grid = probability_grid(theta, s_grid, lenses, SPEC)
    assert grid.shape == (30, 7, 5)
    for i, s in enumerate(s_grid):
        for j in range(5):
            np.testing.assert_allclose(
                grid[:, i, j], probability_correct(theta, [s], lenses[j : j + 1], SPEC)[:, 0], rtol=1e-13, atol=1e-15
            )


def test_binary_entropy_bits_closed_form():
    p = np.array([1e-6, 0.01, 0.1, 0.25, 0.5, 0.7, 0.9, 0.999])
    ref = np.array([entropy([q, 1 - q], base=2) for q in p])
    np.testing.assert_allclose(binary_entropy_bits(p), ref, rtol=1e-10)
    np.testing.assert_allclose(binary_entropy_bits(np.array([0.0, 1.0])), 0.0, atol=1e-9)
    assert binary_entropy_bits(np.array([0.5]))[0] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(binary_entropy_bits(p), binary_entropy_bits(1 - p), rtol=1e-9)


@pytest.mark.parametrize("n_weights, n, seed", [(10, 1000, 0), (50, 50, 1), (7, 37, 2), (500, 4000, 3)])
def test_systematic_resample_counts_within_one_of_n_w(n_weights, n, seed):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(n_weights, 0.3))
    for k in range(5):
        idx = systematic_resample(w, n, np.random.default_rng([seed, k]))
        assert idx.shape == (n,) and idx.min() >= 0 and idx.max() < n_weights
        counts = np.bincount(idx, minlength=n_weights)
        assert np.all(np.abs(counts - n * w) < 1.0 + 1e-9)
        assert counts.sum() == n


# ------------------------------------------------------------------ the particle posterior
def _answers(seed: int, n: int, centre: np.ndarray):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lens = centre + np.array([rng.choice(np.arange(-4, 5) * 0.25), rng.choice([-0.25, 0, 0.25]), 0.0])
        out.append((float(rng.choice(np.arange(-0.2, 0.8, 0.1))), lens, bool(rng.random() < 0.6)))
    return out


START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 30)


def test_update_is_a_pure_function_of_answers_and_seed():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=2000)
    answers = _answers(4, 40, START.centre)
    a, b = ParticlePosterior(spec, START, 17), ParticlePosterior(spec, START, 17)
    np.testing.assert_array_equal(a.theta, b.theta)
    for s, lens, y in answers:
        moves = a.n_moves
        a.update(s, lens, y)
        b.update(s, lens, y)
        np.testing.assert_array_equal(a.theta, b.theta)
        np.testing.assert_array_equal(a.log_w, b.log_w)
        if a.n_moves > moves:
            # resampled and moved: equal weights, and the Metropolis moves re-diversified the
            # duplicates of resampling (resampling alone leaves about ESS distinct particles)
            np.testing.assert_array_equal(a.log_w, 0.0)
            assert len(np.unique(a.theta, axis=0)) > 0.75 * spec.n_particles
    assert a.n_moves >= 2  # the resample-move step ran
    assert a.n_moves == b.n_moves
    np.testing.assert_array_equal(a.best_correction(), b.best_correction())
    # another seed gives other particles (the check above is not vacuous)
    c = ParticlePosterior(spec, START, 18)
    for s, lens, y in answers:
        c.update(s, lens, y)
    assert not np.array_equal(a.theta, c.theta)


def test_without_resampling_the_weights_are_the_likelihood_of_the_prior_draws():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=1000)
    post = ParticlePosterior(spec, START, 5)
    theta0 = post.theta.copy()
    # the initial particles are prior draws, equally weighted
    np.testing.assert_allclose(post.weights, 1.0 / 1000)
    answers = [
        (0.3, START.centre + [0.5, 0.0, 0.0], False),
        (0.1, START.centre, True),
        (0.6, START.centre - [0.75, 0.1, 0.0], True),
    ]
    for s, lens, y in answers:
        post.update(s, lens, y)
    assert post.n_moves == 0 and post.effective_sample_size() > 500
    np.testing.assert_array_equal(post.theta, theta0)
    like = np.array(
        [
            math.prod(
                p_scalar(t, s, lens, 0.1, 0.04) if y else 1 - p_scalar(t, s, lens, 0.1, 0.04) for s, lens, y in answers
            )
            for t in theta0
        ]
    )
    np.testing.assert_allclose(post.weights, like / like.sum(), rtol=1e-10)
    # the posterior mean is the self-normalised importance estimate
    np.testing.assert_allclose(post.mean(), (like / like.sum()) @ theta0, rtol=1e-10, atol=1e-12)


def test_initial_particles_follow_the_prior():
    spec = OpticsModelSpec(
        10, lapse=0.04, va0_mean=0.05, va0_sd=0.1, slope_median=4.0, slope_sigma=0.3, n_particles=20_000
    )
    post = ParticlePosterior(spec, StartingPoint(Prescription(-3.0), "retinoscopy", 50), 0)
    t = post.theta
    n = len(t)
    np.testing.assert_allclose(t[:, :3].mean(axis=0), [-3.0, 0, 0], atol=5 * 0.5 / math.sqrt(n))
    np.testing.assert_allclose(t[:, :3].std(axis=0), [0.5, 0.3, 0.3], rtol=0.03)
    assert abs(t[:, 3].mean() - 0.05) < 5 * 0.1 / math.sqrt(n)
    assert abs(t[:, 4].mean() - math.log(4.0)) < 5 * 0.3 / math.sqrt(n)
    assert abs(t[:, 4].std() - 0.3) < 0.01
    # A uniform on [0, Hofstetter's maximum at 50 = 25 - 0.4 * 50 = 5 D]
    assert t[:, 5].min() >= 0 and t[:, 5].max() <= 5.0
    assert abs(t[:, 5].mean() - 2.5) < 5 * (5 / math.sqrt(12)) / math.sqrt(n)
    # unknown age: A up to 10 D; presbyope: at least 0.25 D
    assert ParticlePosterior(spec, StartingPoint(), 0).amplitude_max == 10.0
    assert ParticlePosterior(spec, StartingPoint(Prescription(1.0), "spectacles", 90), 0).amplitude_max == 0.25


def test_posterior_mean_of_m_matches_grid_quadrature():
    """Nuisances nearly fixed (VA* sd 1e-3, log-slope sd 1e-3, age 110 -> A in [0, 0.25]); the
    posterior of (M, J0, J45, A) integrated on a grid: M on a fine uniform grid, J0 and J45 by
    Gauss-Hermite (their prior is normal), A by Gauss-Legendre (uniform prior)."""
    start = StartingPoint(Prescription(-1.5, -0.5, 20.0), "autorefraction", 110)
    c, sig_m, sig_j = start.centre, 0.5, 0.2
    np.testing.assert_allclose(start.sigma, [sig_m, sig_j, sig_j])
    truth = c + np.array([0.3, 0.05, -0.05])
    rng = np.random.default_rng(123)
    trials = []
    for _ in range(30):
        lens = c + np.array([rng.choice(np.arange(-4, 5) * 0.25), 0.0, 0.0])
        s = float(rng.choice([0.0, 0.1, 0.2, 0.3, 0.4]))
        r = lens - truth
        trials.append((s, lens, bool(rng.random() < 0.1 + 0.86 * ndtr(5 * (s - np.log10(1 + r @ r))))))
    # quadrature
    xm = np.linspace(c[0] - 2.5, c[0] + 2.5, 501)
    zj, wj = hermegauss(12)
    wj = wj / wj.sum()
    za, wa = leggauss(6)
    wa = wa / wa.sum()
    m_ = xm[:, None, None, None]
    j0 = (c[1] + sig_j * zj)[None, :, None, None]
    j45 = (c[2] + sig_j * zj)[None, None, :, None]
    amp = (0.125 * (za + 1.0))[None, None, None, :]
    ll = 0.0
    for s, lens, y in trials:
        r_m = lens[0] - m_
        r_m = r_m + np.minimum(amp, np.maximum(-r_m, 0.0))
        p = 0.1 + 0.86 * ndtr(5.0 * (s - np.log10(1.0 + r_m**2 + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)))
        ll = ll + np.log(p if y else 1.0 - p)
    post = np.exp(ll - np.max(ll)) * wj[:, None, None] * wj[None, :, None] * wa[None, None, :]
    marg = post.sum(axis=(1, 2, 3)) * np.exp(-0.5 * ((xm - c[0]) / sig_m) ** 2)
    marg /= marg.sum()
    q_mean = marg @ xm
    q_sd = math.sqrt(marg @ (xm - q_mean) ** 2)
    # particles
    spec = OpticsModelSpec(10, lapse=0.04, va0_sd=1e-3, slope_sigma=1e-3, n_particles=20_000)
    pp = ParticlePosterior(spec, start, 1)
    for s, lens, y in trials:
        pp.update(s, lens, y)
    assert pp.n_moves >= 1  # the comparison covers the resample-move step
    w = pp.weights
    p_mean = w @ pp.theta[:, 0]
    p_sd = math.sqrt(w @ (pp.theta[:, 0] - p_mean) ** 2)
    # Monte Carlo error of the mean ~ q_sd / sqrt(ESS) ~ 0.19 / sqrt(8000) ~ 0.002 D; 0.015 D is
    # ~7 standard errors, and far below the posterior sd (a wrong likelihood shifts it by ~0.1 D)
    assert q_sd < 0.3
    assert abs(p_mean - q_mean) < 0.015, (p_mean, q_mean)
    assert abs(p_sd - q_sd) < 0.015, (p_sd, q_sd)
    # the data moved the posterior away from the prior (the check is not the prior's)
    assert abs(q_mean - c[0]) > 0.05 and q_sd < 0.8 * sig_m


def test_best_correction_is_the_weighted_two_thirds_quantile_of_m():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=3000)
    post = ParticlePosterior(spec, START, 9)
    for s, lens, y in _answers(9, 12, START.centre):
        post.update(s, lens, y)
    w, m = post.weights, post.theta[:, 0]
    assert post.effective_sample_size() < 0.99 * len(w)  # weights are not uniform
    order = np.argsort(m)
    cum = np.cumsum(w[order])
    expected_m = m[order][np.nonzero(cum >= 2.0 / 3.0 - 1e-12)[0][0]]
    est = post.best_correction()
    assert est[0] == expected_m
    # weight of particles strictly below the estimate < 2/3 <= weight at or below it
    assert w[m < est[0]].sum() < 2 / 3 <= w[m <= est[0]].sum() + 1e-12
    np.testing.assert_allclose(est[1:], [np.sum(w * post.theta[:, 1]), np.sum(w * post.theta[:, 2])], rtol=1e-12)


CONCENTRATION_CASES = [
    (Prescription(-2.0, -0.75, 30.0), 25, 0),
    (Prescription(1.25, -1.5, 165.0), 35, 1),
    (Prescription(-5.5, -0.5, 90.0), 18, 2),
]


@pytest.mark.parametrize("true_rx, age, seed", CONCENTRATION_CASES)
def test_posterior_concentrates_near_an_accommodating_patients_correction(true_rx, age, seed):
    truth = true_rx.power_vector_array()
    # an autorefraction 1 D too minus (accommodation during the measurement) and 0.18 D off in J
    start = StartingPoint(PowerVector(*(truth + [-1.0, 0.15, -0.1])).to_prescription(), "autorefraction", age)
    patient = SimulatedPatient(true_rx, slope=5.0, n_alternatives=10, lapse=0.02, seed=seed, age_years=age)
    assert patient.usable_accommodation_d > 5.0
    post = ParticlePosterior(OpticsModelSpec(10, lapse=0.04), start, seed)
    # lenses at the truth +- steps (more on the plus side, where an accommodating eye sees blur),
    # letters 0.05 logMAR either side of the patient's threshold through the lens
    offsets = [(d, 0, 0) for d in (-1.0, 0.0, 0.5, 1.0, 1.5)] + [(0, 1.0, 0), (0, 0, 1.0), (0, -1.0, 0), (0, 0, -1.0)]
    for k in range(100):
        lens_pv = truth + np.array(offsets[k % len(offsets)], dtype=float)
        lens = PowerVector(*lens_pv).to_prescription()
        s = float(patient.acuity_logmar(lens)) + (-0.05, 0.05)[(k // len(offsets)) % 2]
        post.update(s, lens_pv, patient.answer_trial(k, s, lens))
    w = post.weights
    mean = post.mean()[:3]
    sd = np.sqrt(w @ (post.theta[:, :3] - mean) ** 2)
    est = post.best_correction()
    # Tolerances. Over 20 seeds of this design the posterior sd after 100 answers is 0.22-0.34 D
    # for M and 0.12-0.17 D for J0, J45 (prior: 0.8 and 0.2). (1) concentration: sd(M) at most
    # 0.45 D, under 0.6 of the prior's. (2) calibration: the posterior mean within 3 posterior sd
    # of the truth in each coordinate (|z| > 3 has probability 0.3% for a calibrated, roughly
    # normal posterior; the 20 seeds gave |z| <= 1.95). (3) the estimate, the 2/3 quantile of M,
    # within 0.6 D of M* (2 sd of M; the start was 1.0 D off) and the cylinder vector within
    # 0.4 D (the 95% radius of a 2-D normal with sd 0.16 is 2.45 sd = 0.39 D).
    assert sd[0] < 0.45
    assert np.all(np.abs(mean - truth) <= 3.0 * sd), (mean - truth) / sd
    assert abs(est[0] - truth[0]) < 0.6
    assert abs(est[0] - truth[0]) < abs(start.centre[0] - truth[0])
    assert math.hypot(*(est[1:] - truth[1:])) < 0.4
    # the patient's amplitude is learned as large (usable 5.3-10.3 D here; prior mean A_max/2)
    assert post.mean()[5] > 4.0
