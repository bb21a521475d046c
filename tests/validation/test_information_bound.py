"""The Cramér-Rao bound of the precision stop: closed forms, scipy's optimiser and quantiles as oracles."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import chi2, norm

from visiontune.errors import InvalidInputError
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.validation.information_bound import (
    Z_J,
    Z_M,
    answers_needed,
    comparison_information,
    efficient_information,
    letter_information,
    pair_information,
    patient_bound,
)


def _ternary_information_per_signal(delta: float, tau: float, eps: float) -> float:
    """``Σ_k (dP_k/dδ)² / P_k`` of the ternary Thurstone answer, written out by hand."""
    p1 = (1 - eps) * norm.cdf(delta - tau) + eps / 3
    p2 = (1 - eps) * norm.cdf(-delta - tau) + eps / 3
    pe = 1 - p1 - p2
    d1 = (1 - eps) * norm.pdf(delta - tau)
    d2 = -(1 - eps) * norm.pdf(-delta - tau)
    return d1**2 / p1 + d2**2 / p2 + (d1 + d2) ** 2 / pe


def _acuity_slope(d: float) -> float:
    """``d VA / d d`` of ``VA = log10(1 + d²)``."""
    return 2 * d / (math.log(10) * (1 + d * d))


def test_comparison_straddling_the_correction_matches_the_closed_form():
    slope, model = 5.0, ComparisonModel()
    info, d1, d2 = comparison_information(slope, model=model)
    assert sorted((d1, d2)) == [-1.0, 1.0]
    # δ = a (VA(1) - VA(-1)) = 0; dδ/dx = a (VA'(d1) - VA'(d2)) = -2 a VA'(1).
    expected = (2 * slope * _acuity_slope(1.0)) ** 2 * _ternary_information_per_signal(0.0, 0.5, 0.04)
    assert info == pytest.approx(expected, rel=1e-6)


def test_comparison_in_an_accommodating_eye_matches_the_closed_form_at_its_optimum():
    slope, model = 5.0, ComparisonModel()
    info, d1, d2 = comparison_information(slope, amplitude=8.0, model=model)
    minus, plus = min(d1, d2), max(d1, d2)
    assert minus < 0.0 < plus  # one lens read through accommodation, one blurred
    # Only the plus lens is blurred: |δ| = a VA(plus), |dδ/dx| = a VA'(plus).
    signal = slope * math.log10(1 + plus**2)
    expected = (slope * _acuity_slope(plus)) ** 2 * _ternary_information_per_signal(signal, 0.5, 0.04)
    assert info == pytest.approx(expected, rel=1e-6)
    assert info < comparison_information(slope, model=model)[0] / 4


def test_letter_information_matches_a_continuous_optimum_over_the_size():
    slope, chance, lapse = 5.0, 0.1, 0.04

    def negative(z: float) -> float:
        p = chance + (1 - chance - lapse) * norm.cdf(z)
        dp = (1 - chance - lapse) * norm.pdf(z) * slope * _acuity_slope(1.0)
        return -(dp**2) / (p * (1 - p))

    best = -minimize_scalar(negative, bounds=(-4, 4), method="bounded").fun
    info, offset = letter_information(slope, chance=chance, lapse=lapse)
    assert abs(offset) == 1.0
    assert info == pytest.approx(best, rel=1e-4)


def test_accommodation_leaves_the_letter_its_plus_side():
    free = letter_information(5.0)[0]
    info, offset = letter_information(5.0, amplitude=8.0)
    assert offset > 0.0
    assert info == pytest.approx(free, rel=1e-9)


def test_answers_needed_against_scipy_quantiles():
    assert Z_M == pytest.approx(norm.ppf(0.975), rel=1e-12)
    assert Z_J == pytest.approx(math.sqrt(chi2.ppf(0.95, 2)), rel=1e-12)
    info_m, info_j, sm, sj = 2.0, 10.0, 0.5, 0.15
    need = (norm.ppf(0.975) ** 2 / 0.0625 - 1 / sm**2) / info_m + 2 * (chi2.ppf(0.95, 2) / 0.0625 - 1 / sj**2) / info_j
    assert answers_needed(info_m, info_j, sm, sj) == math.ceil(need)
    # A start already inside the region needs no answer; an infinitely wide one needs the most.
    assert answers_needed(info_m, info_j, 0.05, 0.05) == 0
    assert answers_needed(info_m, info_j, np.inf, np.inf) > answers_needed(info_m, info_j, sm, sj)


def test_patient_bound_orders_patients_as_the_optics_says():
    presbyope = patient_bound(5.0, 0.0, 0.5, 0.15)
    young = patient_bound(5.0, 8.0, 0.8, 0.15)
    shallow = patient_bound(3.0, 0.0, 0.5, 0.15)
    assert presbyope.answers < young.answers < young.answers_letters_only
    assert presbyope.answers < shallow.answers
    assert young.info_j == pytest.approx(presbyope.info_j)
    assert young.info_m < presbyope.info_m


@pytest.mark.parametrize(
    "kwargs", [{"slope": 0.0}, {"slope": float("nan")}, {"slope": 5.0, "amplitude": -1.0}, {"slope": 5.0, "reach": 0.0}]
)
def test_bad_input_is_refused(kwargs):
    with pytest.raises(InvalidInputError, match="slope, amplitude, reach"):
        letter_information(**kwargs)
    with pytest.raises(InvalidInputError, match="slope, amplitude, reach"):
        comparison_information(**kwargs)


def test_only_eq11_comparisons_are_bounded():
    with pytest.raises(InvalidInputError, match="Eq. 11"):
        comparison_information(5.0, model=ComparisonModel("blur"))
    with pytest.raises(InvalidInputError, match="positive"):
        answers_needed(0.0, 1.0, 0.5, 0.15)


def test_efficient_comparison_information_against_the_spread_of_maximum_likelihood_estimates():
    """Monte Carlo oracle: at the design found for an eye that accommodates, the MLE of the
    correction with the signal's scale unknown has variance ``1 / (n I_eff)``."""
    from scipy.optimize import minimize

    slope, amplitude, tau, eps = 5.0, 8.0, 0.5, 0.04
    efficient, (q_a, q_b, share) = efficient_information("comparison", slope, amplitude=amplitude)
    assert 0.0 < efficient < comparison_information(slope, amplitude=amplitude)[0] / 2

    def probs(pair, e, log_scale):
        blurs = ((d - e) + min(amplitude, max(e - d, 0.0)) for d in pair)  # after accommodation
        va1, va2 = (math.log10(1 + b * b) for b in blurs)
        delta = slope * math.exp(log_scale) * (va2 - va1)
        p1 = (1 - eps) * norm.cdf(delta - tau) + eps / 3
        p2 = (1 - eps) * norm.cdf(-delta - tau) + eps / 3
        return np.array([p1, p2, 1 - p1 - p2])

    n, rng, estimates = 4000, np.random.default_rng(7), []
    n_a = int(round(share * n))
    for _ in range(200):
        counts = [rng.multinomial(n_a, probs(q_a, 0.0, 0.0)), rng.multinomial(n - n_a, probs(q_b, 0.0, 0.0))]

        def nll(x):
            return -sum(c @ np.log(probs(q, x[0], x[1])) for c, q in zip(counts, (q_a, q_b), strict=True))

        estimates.append(minimize(nll, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9}).x[0])
    assert np.var(estimates) * n * efficient == pytest.approx(1.0, abs=0.3)


def test_two_question_search_finds_the_best_pair_on_a_coarse_grid():
    """Coordinate ascent against every pair of questions and every share (brute force)."""
    from visiontune.validation.information_bound import _fisher, _two_point_efficient

    offsets = np.linspace(-1.0, 1.0, 21)
    d1, d2 = (g.ravel() for g in np.meshgrid(offsets, offsets, indexing="ij"))
    amplitude = 8.0

    def va(d):
        return np.log10(1 + np.maximum(d, 0.0) ** 2)

    def probs(e, log_scale):
        delta = 5.0 * np.exp(log_scale) * (va(d2 - e) - va(d1 - e))
        p1 = 0.96 * norm.cdf(delta - 0.5) + 0.04 / 3
        p2 = 0.96 * norm.cdf(-delta - 0.5) + 0.04 / 3
        return np.stack([p1, p2, 1 - p1 - p2], axis=-1)

    assert amplitude > 1.0  # every lens on the minus side within the reach is read through accommodation
    i_ee, i_en, i_nn = _fisher(probs)
    found = _two_point_efficient(i_ee, i_en, i_nn)[0]
    best = max(
        float(
            np.max(
                w * i_ee[:, None]
                + (1 - w) * i_ee[None, :]
                - (w * i_en[:, None] + (1 - w) * i_en[None, :]) ** 2
                / np.maximum(w * i_nn[:, None] + (1 - w) * i_nn[None, :], 1e-300)
            )
        )
        for w in np.linspace(0.0, 1.0, 51)
    )
    assert found == pytest.approx(best, rel=1e-9)


def test_a_symmetric_design_is_blind_to_the_nuisance():
    """Without accommodation the best questions straddle the correction, where the nuisance
    (``VA*`` or the signal's scale) moves the answer the same way on both sides: nothing is lost."""
    assert efficient_information("comparison", 5.0)[0] == pytest.approx(comparison_information(5.0)[0], rel=1e-6)
    assert efficient_information("letter", 5.0)[0] == pytest.approx(letter_information(5.0)[0], rel=1e-3)
    # In an eye that accommodates, a letter keeps about a quarter of its information about M.
    ratio = efficient_information("letter", 5.0, amplitude=8.0)[0] / letter_information(5.0, amplitude=8.0)[0]
    assert 0.15 < ratio < 0.35
    with pytest.raises(InvalidInputError, match="kind"):
        efficient_information("slider", 5.0)


def test_patient_bound_with_nuisances_is_longer_where_the_eye_accommodates():
    presbyope = patient_bound(5.0, 0.0, 0.5, 0.15)
    young = patient_bound(5.0, 8.0, 0.8, 0.15)
    assert presbyope.answers_nuisance == presbyope.answers
    assert young.answers_nuisance > 2 * young.answers
    assert young.info_m_nuisance < young.info_m / 3


def test_a_symmetric_pairs_information_is_the_grids_at_the_same_pair():
    # Eq. 11: the grid of every pair of offsets (an independent code path) holds c ± 1 D
    best, d1, d2 = comparison_information(5.0)
    assert d1 == pytest.approx(-d2)
    assert pair_information(ComparisonModel(), 5.0, abs(d1)) == pytest.approx(best, rel=1e-4)


@pytest.mark.parametrize("kind", ["thurstone", "blur"])
def test_a_pairs_information_is_the_variance_of_the_score_by_monte_carlo(kind):
    model = ComparisonModel(kind=kind)
    h, slope, step = 0.3, 5.0, 1e-5

    def probs(e):
        b1, b2 = abs(h - e), abs(-h - e)
        if kind == "blur":
            bi2 = model.intrinsic_blur_d**2
            delta = 0.5 * (np.log(b2**2 + bi2) - np.log(b1**2 + bi2)) / model.log_blur_noise
        else:
            delta = slope * (np.log10(1 + b2**2) - np.log10(1 + b1**2))
        d = np.clip(delta, -50, 50)
        p1, p2 = norm.cdf(d - model.indifference), norm.cdf(-d - model.indifference)
        p = np.array([p1, p2, 1.0 - p1 - p2])
        return (1 - model.lapse) * p + model.lapse / 3.0

    p0 = probs(0.0)
    score = (np.log(probs(step)) - np.log(probs(-step))) / (2 * step)
    answers = np.random.default_rng(7).choice(3, size=400_000, p=p0)
    estimate = float(np.mean(score[answers] ** 2))
    assert pair_information(model, slope, h) == pytest.approx(estimate, rel=0.02)
