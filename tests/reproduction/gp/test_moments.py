"""Observation-space moments against adaptive quadrature of the Gaussian expectation,
their gradients against finite differences, and stability at the extremes."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr, ndtr

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp import aleatoric_variance, bald, epistemic_variance, predictive_probability
from visiontune.reproduction.gp.moments import BALD_C

MUS = np.linspace(-6.0, 6.0, 13)
VARS = np.logspace(-6, 3, 10)


def _expect(fn, mu, var):
    """E[fn(f)] for f ~ N(mu, var), by adaptive quadrature over the standardised variable t
    (f = mu + σ t, t in [-12, 12]) with breakpoints where Φ(f) changes (f in [-8, 8])."""
    sd = math.sqrt(var)
    pts = sorted({float(np.clip((b - mu) / sd, -12, 12)) for b in (-8.0, -2.0, 0.0, 2.0, 8.0)} - {-12.0, 12.0})

    def dens(t):
        return math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)

    val, _ = integrate.quad(
        lambda t: fn(mu + sd * t) * dens(t), -12, 12, points=pts, epsabs=1e-12, epsrel=1e-10, limit=400
    )
    return val


def _entropy_bits(f):
    p, q = ndtr(f), ndtr(-f)
    return -(p * log_ndtr(f) + q * log_ndtr(-f)) / math.log(2)


@pytest.fixture(scope="module")
def oracle():
    """Quadrature moments on the (mu, var) grid: E[Φ], E[Φ²], E[exp(-f²/(π ln 2))], E[H₂(Φ)]."""
    out = {k: np.empty((MUS.size, VARS.size)) for k in ("m1", "m2", "houlsby", "entropy")}
    for i, mu in enumerate(MUS):
        for j, var in enumerate(VARS):
            out["m1"][i, j] = _expect(lambda f: ndtr(f), mu, var)
            out["m2"][i, j] = _expect(lambda f: ndtr(f) ** 2, mu, var)
            out["houlsby"][i, j] = _expect(lambda f: math.exp(-f * f / (math.pi * math.log(2))), mu, var)
            out["entropy"][i, j] = _expect(_entropy_bits, mu, var)
    return out


def _grid():
    return np.meshgrid(MUS, VARS, indexing="ij")


def test_predictive_probability_matches_quadrature(oracle):
    mu, var = _grid()
    np.testing.assert_allclose(predictive_probability(mu, var), oracle["m1"], atol=1e-6)


def test_epistemic_variance_matches_quadrature(oracle):
    mu, var = _grid()
    expected = oracle["m2"] - oracle["m1"] ** 2
    np.testing.assert_allclose(epistemic_variance(mu, var), expected, atol=1e-6)


def test_aleatoric_variance_matches_quadrature(oracle):
    mu, var = _grid()
    expected = oracle["m1"] - oracle["m2"]  # E[Φ(1-Φ)]
    np.testing.assert_allclose(aleatoric_variance(mu, var), expected, atol=1e-6)


def test_bald_matches_quadrature_of_houlsby_integrand(oracle):
    """Houlsby's closed form is the exact Gaussian expectation of exp(-f²/(π ln 2))."""
    mu, var = _grid()
    p = predictive_probability(mu, var)
    expected = np.maximum(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)) - oracle["houlsby"], 0.0)
    np.testing.assert_allclose(bald(mu, var), expected, atol=1e-6)


def test_bald_is_close_to_the_exact_mutual_information(oracle):
    """The approximation H₂(Φ(x)) ≈ exp(-x²/(π ln 2)) costs at most ~2.5e-3 bits on this grid (measured)."""
    mu, var = _grid()
    p = predictive_probability(mu, var)
    exact = -(p * np.log2(p) + (1 - p) * np.log2(1 - p)) - oracle["entropy"]
    assert np.all(exact > -1e-9)
    err = np.abs(bald(mu, var) - exact)
    assert err.max() < 0.005
    # where the answer is well informative the relative error is small too
    assert np.all(err[exact > 0.1] / exact[exact > 0.1] < 0.05)


def test_bald_is_close_to_monte_carlo_mutual_information():
    rng = np.random.default_rng(0)
    mu, var = 0.7, 2.5
    f = mu + math.sqrt(var) * rng.standard_normal(1_000_000)
    p = ndtr(f).mean()
    mc = -(p * math.log2(p) + (1 - p) * math.log2(1 - p)) - _entropy_bits(f).mean()
    assert bald(mu, var) == pytest.approx(mc, abs=0.012)


def test_epistemic_plus_aleatoric_is_bernoulli_variance():
    mu, var = _grid()
    p = predictive_probability(mu, var)
    np.testing.assert_allclose(epistemic_variance(mu, var) + aleatoric_variance(mu, var), p * (1 - p), atol=1e-15)


@pytest.mark.parametrize("fn", [predictive_probability, epistemic_variance, aleatoric_variance, bald])
def test_gradients_match_central_finite_differences(fn):
    mu, var = _grid()
    value, d_mu, d_var = fn(mu, var, grad=True)
    np.testing.assert_array_equal(value, fn(mu, var))
    hm = 1e-6
    fd_mu = (fn(mu + hm, var) - fn(mu - hm, var)) / (2 * hm)
    hv = 1e-4 * var  # relative step: var spans 1e-6 .. 1e3
    fd_var = (fn(mu, var + hv) - fn(mu, var - hv)) / (2 * hv)
    # skip points where clipping at 0 puts a kink between the two FD evaluations
    value_lo, value_hi = fn(mu, var - hv), fn(mu, var + hv)
    smooth = (value_lo > 0) == (value_hi > 0)
    smooth &= (fn(mu - hm, var) > 0) == (fn(mu + hm, var) > 0)
    scale_mu = np.maximum(np.abs(d_mu), 1e-6)
    scale_var = np.maximum(np.abs(d_var), 1e-6 / var)
    assert np.all((np.abs(d_mu - fd_mu) / scale_mu)[smooth] < 1e-4)
    assert np.all((np.abs(d_var - fd_var) / scale_var)[smooth] < 1e-4)


@pytest.mark.parametrize("fn", [predictive_probability, epistemic_variance, aleatoric_variance, bald])
def test_extremes_are_finite_and_non_negative(fn):
    mu = np.array([-6.0, 6.0, -6.0, 6.0, 0.0, 0.0, -50.0, 50.0, 3.0])
    var = np.array([1e-6, 1e-6, 1e3, 1e3, 1e-6, 1e3, 1e-6, 1e6, 0.0])
    value, d_mu, d_var = fn(mu, var, grad=True)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(d_mu)) and np.all(np.isfinite(d_var))
    assert np.all(value >= 0.0)
    if fn is predictive_probability:
        assert np.all(value <= 1.0)
    if fn in (epistemic_variance, aleatoric_variance):
        assert np.all(value <= 0.25)


def test_zero_variance_has_no_epistemic_uncertainty():
    mu = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(epistemic_variance(mu, 0.0), 0.0, atol=1e-15)
    np.testing.assert_allclose(bald(0.0, 0.0), 0.0, atol=1e-12)
    np.testing.assert_allclose(aleatoric_variance(mu, 0.0), ndtr(mu) * ndtr(-mu), atol=1e-15)


def test_small_variance_matches_delta_method():
    """V[Φ(f)] ≈ φ(μ)² σ² for small σ²."""
    mu, var = np.array([-1.0, 0.0, 0.5, 2.0]), 1e-4
    phi = np.exp(-0.5 * mu**2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(epistemic_variance(mu, var), phi**2 * var, rtol=2e-3)


def test_broadcasting_and_scalars():
    assert np.shape(predictive_probability(0.0, 1.0)) == ()
    assert predictive_probability(0.0, 1.0) == pytest.approx(0.5)
    assert epistemic_variance(np.zeros((2, 3)), np.ones(3)).shape == (2, 3)
    assert BALD_C == pytest.approx(math.sqrt(math.pi * math.log(2) / 2))


@pytest.mark.parametrize("fn", [predictive_probability, epistemic_variance, aleatoric_variance, bald])
def test_bad_input_raises_naming_the_argument(fn):
    with pytest.raises(InvalidInputError, match="mu"):
        fn(np.nan, 1.0)
    with pytest.raises(InvalidInputError, match="var"):
        fn(0.0, -1.0)
    with pytest.raises(InvalidInputError, match="var"):
        fn(0.0, np.inf)
    with pytest.raises(InvalidInputError, match="var"):
        fn(np.zeros(3), np.ones(2))
