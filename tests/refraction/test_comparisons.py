"""Comparisons in the optics model (visiontune.refraction.comparisons, ParticlePosterior.observe)
against independent oracles: the likelihood written out per scalar, the simulated patient at
the true parameters, importance weights by hand, and grid quadrature of the posterior of M
after letters and comparisons (with the resample-move step run)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.polynomial.legendre import leggauss
from scipy.special import ndtr

from tests.refraction.letters import random_letters
from tests.refraction.particles import random_theta
from visiontune.errors import InvalidInputError
from visiontune.optics import PowerVector, Prescription, SimulatedPatient
from visiontune.optics.comparison_answers import (
    ComparisonModel,
    patient_comparison_probabilities,
)
from visiontune.refraction.comparisons import (
    ComparisonAnswer,
    comparison_probabilities,
    comparison_signal,
)
from visiontune.refraction.optics_model import (
    LetterAnswer,
    OpticsModelSpec,
    ParticlePosterior,
)
from visiontune.refraction.start import StartingPoint

SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04)


def phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def phi_inv(p: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if phi(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def blur_scalar(theta, lens) -> float:
    m, j0, j45, _va0, _log_a, amp = (float(v) for v in theta)
    r_m = lens[0] - m
    r_m = r_m + min(amp, max(-r_m, 0.0))
    return math.sqrt(r_m * r_m + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2)


def probs_scalar(theta, s, l1, l2, model: ComparisonModel, chance=0.1, lapse=0.04) -> list[float]:
    """The three answers' probabilities for one particle and one comparison, from the formulas."""
    va0, a = float(theta[3]), math.exp(float(theta[4]))
    va1, va2 = va0 + math.log10(1 + blur_scalar(theta, l1) ** 2), va0 + math.log10(1 + blur_scalar(theta, l2) ** 2)
    if model.kind == "blur":
        bi, w = model.intrinsic_blur_d, model.log_blur_noise
        rho1, rho2 = math.hypot(blur_scalar(theta, l1), bi), math.hypot(blur_scalar(theta, l2), bi)
        delta = math.log(rho2 / rho1) / w
    elif model.latent == "linear":
        delta = a * (va2 - va1)
    else:
        p1 = chance + (1 - chance - lapse) * phi(a * (s - va1))
        p2 = chance + (1 - chance - lapse) * phi(a * (s - va2))
        delta = phi_inv(p1) - phi_inv(p2)
    t, e = model.indifference, model.lapse
    q1, q2 = phi(delta - t), phi(-delta - t)
    return [(1 - e) * q + e / 3 for q in (q1, q2, 1 - q1 - q2)]


MODELS = [
    ComparisonModel(),
    ComparisonModel(latent="probit", indifference=0.8, lapse=0.1),
    ComparisonModel("blur", indifference=0.3, lapse=0.02),
]


@pytest.mark.parametrize("model", MODELS, ids=["eq11-linear", "eq11-probit", "blur"])
def test_comparison_probabilities_match_the_scalar_formulas(model):
    rng = np.random.default_rng(1)
    theta = random_theta(rng, 25)
    s = rng.uniform(-0.3, 1.0, 7)
    l1 = np.column_stack([rng.uniform(-5, 3, 7), rng.normal(0, 0.5, 7), rng.normal(0, 0.5, 7)])
    l2 = l1 + rng.normal(0, 0.4, (7, 3))
    p = comparison_probabilities(theta, s, l1, l2, model, SPEC)
    assert p.shape == (25, 7, 3)
    ref = np.array([[probs_scalar(t, s[j], l1[j], l2[j], model) for j in range(7)] for t in theta])
    np.testing.assert_allclose(p, ref, rtol=1e-8, atol=1e-12)
    # lens 1 clearer (smaller blur) -> positive signal, for every model
    d = comparison_signal(theta, s, l1, l2, model, SPEC)
    b1 = np.array([[blur_scalar(t, l1[j]) for j in range(7)] for t in theta])
    b2 = np.array([[blur_scalar(t, l2[j]) for j in range(7)] for t in theta])
    apart = np.abs(b1 - b2) > 1e-6
    same_sign = np.sign(d[apart]) == np.sign(b2 - b1)[apart]
    if model.uses_size:  # both letters at chance, or both read: the probit latents saturate to δ = 0
        assert np.all(same_sign | (np.abs(d[apart]) < 1e-9)) and same_sign.mean() > 0.5
    else:
        assert np.all(same_sign)


def test_size_matters_only_with_the_probit_latent():
    rng = np.random.default_rng(2)
    theta = random_theta(rng, 10)
    l1, l2 = np.array([[-1.0, 0.1, 0.0]]), np.array([[-0.5, 0.0, 0.2]])
    for model in MODELS:
        a = comparison_probabilities(theta, 0.0, l1, l2, model, SPEC)
        b = comparison_probabilities(theta, 0.8, l1, l2, model, SPEC)
        assert np.array_equal(a, b) != model.uses_size


@pytest.mark.parametrize(
    "model",
    [ComparisonModel(indifference=0.4, lapse=0.03), ComparisonModel("blur", indifference=0.6, lapse=0.01)],
    ids=["eq11", "blur"],
)
def test_model_equals_the_simulated_patient_at_the_true_parameters(model):
    true_rx = Prescription(-1.75, -1.0, 25.0)
    patient = SimulatedPatient(
        true_rx, best_corrected_logmar=0.05, slope=4.0, n_alternatives=10, lapse=0.04, seed=0, age_years=30
    )
    theta = np.array([[*true_rx.power_vector_array(), 0.05, np.log(4.0), patient.usable_accommodation_d]])
    rng = np.random.default_rng(3)
    base = true_rx.power_vector_array()
    l1 = base + np.column_stack([rng.uniform(-6, 1.5, 12), rng.normal(0, 0.4, (12, 2))])
    l2 = l1 + rng.normal(0, 0.5, (12, 3))
    p = comparison_probabilities(theta, 0.2, l1, l2, model, SPEC)[0]
    ref = [
        patient_comparison_probabilities(
            patient, 0, 0.2, PowerVector(*l1[j]).to_prescription(), PowerVector(*l2[j]).to_prescription(), model
        )
        for j in range(12)
    ]
    np.testing.assert_allclose(p, ref, rtol=1e-8, atol=1e-12)


START = StartingPoint(Prescription(-1.5, -0.75, 20.0), "autorefraction", 30)


def test_observe_letter_is_update():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=1500)
    a, b = ParticlePosterior(spec, START, 4), ParticlePosterior(spec, START, 4)
    for s, lens, y in random_letters(np.random.default_rng(4), START.centre, 40):
        a.update(s, lens, y)
        b.observe(LetterAnswer(s, tuple(map(float, lens)), y))
    assert a.n_moves >= 1
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.log_w, b.log_w)
    assert a.n == b.n == len(a.s) == 40


def test_without_resampling_the_weights_are_the_likelihood_of_letters_and_comparisons():
    spec = OpticsModelSpec(10, lapse=0.04, n_particles=1000)
    post = ParticlePosterior(spec, START, 6)
    theta0 = post.theta.copy()
    c = START.centre
    eq11, blur = ComparisonModel(), ComparisonModel("blur", indifference=0.3)
    letters = [(0.3, c + [0.5, 0.0, 0.0], False), (0.1, c, True)]
    comparisons = [
        (0.2, c + [0.125, 0, 0], c - [0.125, 0, 0], "1", eq11),
        (0.2, c, c + [0, 0.125, 0], "=", eq11),
        (0.1, c + [0, 0, 0.125], c - [0, 0, 0.125], "=", blur),
    ]
    post.update(*letters[0])
    for s, l1, l2, y, model in comparisons[:2]:
        post.observe(ComparisonAnswer(s, tuple(map(float, l1)), tuple(map(float, l2)), y, model))
    post.update(*letters[1])
    s, l1, l2, y, model = comparisons[2]
    post.observe(ComparisonAnswer(s, tuple(map(float, l1)), tuple(map(float, l2)), y, model))
    assert post.n == 5 and len(post.s) == 2
    assert post.n_moves == 0 and post.effective_sample_size() > 500
    like = np.ones(len(theta0))
    for i, t in enumerate(theta0):
        for s, lens, y in letters:
            r = blur_scalar(t, lens)
            p = 0.1 + 0.86 * phi(math.exp(t[4]) * (s - t[3] - math.log10(1 + r * r)))
            like[i] *= p if y else 1 - p
        for s, l1, l2, y, model in comparisons:
            like[i] *= probs_scalar(t, s, l1, l2, model)["12=".index(y)]
    np.testing.assert_allclose(post.weights, like / like.sum(), rtol=1e-9)
    # the log-likelihood the moves target is that of all five answers (two batches of comparisons)
    np.testing.assert_allclose(post._log_likelihood(theta0), np.log(like), rtol=1e-10, atol=1e-10)


def test_a_comparison_answer_must_be_one_of_the_three():
    with pytest.raises(InvalidInputError, match="answer"):
        ComparisonAnswer(0.1, (0, 0, 0), (0.25, 0, 0), "3", ComparisonModel())


def _quadrature_case(model: ComparisonModel, seed: int) -> dict:
    """Nuisances nearly fixed (VA* sd 1e-3, log-slope sd 1e-3, age 110 -> A in [0, 0.25]); 8
    letters and 30 comparisons (symmetric pairs in M and J around the start); the posterior of
    (M, J0, J45, A) integrated on a grid (as in test_optics_model) and by the particles."""
    start = StartingPoint(Prescription(-1.5, -0.5, 20.0), "autorefraction", 110)
    c, sig_m, sig_j = start.centre, 0.5, 0.2
    truth = c + np.array([0.35, 0.05, -0.05])
    rng = np.random.default_rng(7)
    letters, comps = [], []
    for _ in range(8):
        lens = c + np.array([rng.choice(np.arange(-4, 5) * 0.25), 0.0, 0.0])
        s = float(rng.choice([0.0, 0.1, 0.2, 0.3]))
        r = lens - truth
        letters.append((s, lens, bool(rng.random() < 0.1 + 0.86 * ndtr(5 * (s - np.log10(1 + r @ r))))))
    theta_true = np.array([[*truth, 0.0, np.log(5.0), 0.0]])
    for _ in range(30):
        u = np.eye(3)[rng.integers(3)] * (1.0 if rng.random() < 0.6 else 0.5)
        centre = c + np.array([rng.choice([-0.5, -0.25, 0.0, 0.25, 0.5]), 0, 0])
        h = float(rng.choice([0.25, 0.5]))
        l1, l2 = centre + h * u, centre - h * u
        p = comparison_probabilities(theta_true, 0.2, l1, l2, model, SPEC)[0, 0]
        comps.append((l1, l2, "12="[int(np.searchsorted(np.cumsum(p)[:2], rng.random(), side="right"))]))
    # quadrature: M on a uniform grid (prior weight below), J0 and J45 on uniform grids with
    # their normal prior as weights (the comparisons make the likelihood in J too sharp for
    # Gauss-Hermite nodes 0.1 D apart), A by Gauss-Legendre (uniform prior)
    xm = np.linspace(c[0] - 2.5, c[0] + 2.5, 251)
    zj = np.linspace(-3.0, 3.0, 41)
    wj = np.exp(-0.5 * zj**2)
    wj = wj / wj.sum()
    za, wa = leggauss(6)
    wa = wa / wa.sum()
    m_ = xm[:, None, None, None]
    j0 = (c[1] + sig_j * zj)[None, :, None, None]
    j45 = (c[2] + sig_j * zj)[None, None, :, None]
    amp = (0.125 * (za + 1.0))[None, None, None, :]

    def blur2(lens):
        r_m = lens[0] - m_
        r_m = r_m + np.minimum(amp, np.maximum(-r_m, 0.0))
        return r_m**2 + (lens[1] - j0) ** 2 + (lens[2] - j45) ** 2

    ll_letters = 0.0
    for s, lens, y in letters:
        p = 0.1 + 0.86 * ndtr(5.0 * (s - np.log10(1.0 + blur2(lens))))
        ll_letters = ll_letters + np.log(p if y else 1.0 - p)
    ll_comps = 0.0
    for l1, l2, y in comps:
        if model.kind == "blur":
            bi2 = model.intrinsic_blur_d**2
            delta = 0.5 * (np.log(blur2(l2) + bi2) - np.log(blur2(l1) + bi2)) / model.log_blur_noise
        else:
            delta = 5.0 * (np.log10(1.0 + blur2(l2)) - np.log10(1.0 + blur2(l1)))
        q1, q2 = ndtr(delta - model.indifference), ndtr(-delta - model.indifference)
        p = {"1": q1, "2": q2, "=": 1.0 - q1 - q2}[y]
        ll_comps = ll_comps + np.log((1 - model.lapse) * p + model.lapse / 3)

    def moments(ll):
        post = np.exp(ll - np.max(ll)) * wj[:, None, None] * wj[None, :, None] * wa[None, None, :]
        marg = post.sum(axis=(1, 2, 3)) * np.exp(-0.5 * ((xm - c[0]) / sig_m) ** 2)
        marg /= marg.sum()
        mean = marg @ xm
        return mean, math.sqrt(marg @ (xm - mean) ** 2)

    q_mean, q_sd = moments(ll_letters + ll_comps)
    q_mean_letters, _ = moments(ll_letters + 0 * m_ + 0 * j0 + 0 * j45 + 0 * amp)
    # particles
    spec = OpticsModelSpec(10, lapse=0.04, va0_sd=1e-3, slope_sigma=1e-3, n_particles=20_000)
    pp = ParticlePosterior(spec, start, seed)
    for s, lens, y in letters:
        pp.update(s, lens, y)
    for l1, l2, y in comps:
        pp.observe(ComparisonAnswer(0.2, tuple(map(float, l1)), tuple(map(float, l2)), y, model))
    w = pp.weights
    p_mean = w @ pp.theta[:, 0]
    return {
        "q_mean": q_mean,
        "q_sd": q_sd,
        "q_mean_letters": q_mean_letters,
        "p_mean": p_mean,
        "p_sd": math.sqrt(w @ (pp.theta[:, 0] - p_mean) ** 2),
        "moves": pp.n_moves,
        "sig_m": sig_m,
    }


@pytest.mark.parametrize("model", [ComparisonModel(), ComparisonModel("blur")], ids=["eq11", "blur"])
def test_posterior_of_m_after_letters_and_comparisons_matches_grid_quadrature(model):
    """The particles are resampled and moved, so the moves must target the posterior of every
    answer: the quadrature without the comparisons lies far outside the tolerance."""
    r = _quadrature_case(model, 1)
    assert r["moves"] >= 1
    q_mean, q_sd, p_mean, p_sd, q_mean_letters = r["q_mean"], r["q_sd"], r["p_mean"], r["p_sd"], r["q_mean_letters"]
    sig_m = r["sig_m"]
    # Monte Carlo error of the mean ~ q_sd / sqrt(ESS) < 0.003 D; 0.02 D is many standard errors
    assert abs(p_mean - q_mean) < 0.02, (p_mean, q_mean)
    assert abs(p_sd - q_sd) < 0.02, (p_sd, q_sd)
    # the comparisons moved the posterior: without them the quadrature disagrees by far more
    assert abs(q_mean - q_mean_letters) > 0.08, (q_mean, q_mean_letters)
    assert q_sd < 0.6 * sig_m
