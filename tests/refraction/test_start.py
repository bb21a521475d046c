"""StartingPoint (visiontune.refraction.start): validation, the prior's spread by source, its
samples (Monte Carlo moments) and its log density (against scipy's multivariate normal)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.start import StartingPoint

RX = Prescription(-2.25, -0.75, 30.0)


def thibos(rx: Prescription) -> np.ndarray:
    a = math.radians(rx.axis_deg)
    return np.array(
        [rx.sphere_d + rx.cylinder_d / 2, -rx.cylinder_d / 2 * math.cos(2 * a), -rx.cylinder_d / 2 * math.sin(2 * a)]
    )


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"rx": RX, "source": "lensmeter"}, r"^source: expected one of autorefraction, retinoscopy, spectacles, none"),
        ({"rx": RX, "source": "none"}, r"^source: .*source 'none' takes no prescription"),
        ({"rx": RX}, r"^source: .*needs its source"),
        ({"rx": None, "source": "autorefraction"}, r"^source: .*needs its source"),
        ({"rx": None, "source": "spectacles"}, r"source='spectacles'"),
        ({"rx": Prescription(-13.0), "source": "autorefraction"}, r"starting prescription: .*outside the range"),
        ({"rx": Prescription(8.25), "source": "retinoscopy"}, r"starting prescription: .*spherical equivalent \+8\.25"),
        ({"rx": Prescription(-1.0, -6.25, 90.0), "source": "spectacles"}, r"starting prescription: .*cylinder up to 6"),
        ({"rx": Prescription(2.0, 6.25, 90.0), "source": "spectacles"}, r"starting prescription: .*outside the range"),
        ({"rx": (-1.0, 0.0, 180.0), "source": "autorefraction"}, r"^rx: expected a Prescription, got tuple"),
        (
            {"rx": RX, "source": "autorefraction", "age_years": 2.9},
            r"^age_years: expected a finite number in \[3, 110\]",
        ),
        ({"rx": RX, "source": "autorefraction", "age_years": 110.5}, r"^age_years"),
        ({"rx": RX, "source": "autorefraction", "age_years": float("nan")}, r"^age_years"),
        ({"rx": RX, "source": "autorefraction", "age_years": True}, r"^age_years"),
        ({"age_years": "40"}, r"^age_years"),
    ],
)
def test_invalid_starting_points_are_refused_with_a_message(kwargs, pattern):
    with pytest.raises(InvalidInputError, match=pattern):
        StartingPoint(**kwargs)


@pytest.mark.parametrize(
    "rx", [Prescription(-12.0), Prescription(8.0), Prescription(-9.0, -6.0, 10.0), Prescription(7.0, 2.0, 45.0)]
)
def test_range_limits_are_inclusive(rx):
    # M = -12 and +8 exactly, |C| = 6 exactly, are inside the clinical range
    assert StartingPoint(rx, "autorefraction", 3).rx == rx
    StartingPoint(rx, "spectacles", 110)


# ------------------------------------------------------------------ centre and sigma
@pytest.mark.parametrize(
    "source, age, expected",
    [
        ("autorefraction", None, (0.8, 0.20)),  # unknown age: may accommodate
        ("autorefraction", 40, (0.8, 0.20)),  # aged 40 or less
        ("autorefraction", 12.5, (0.8, 0.20)),
        ("autorefraction", 40.5, (0.50, 0.20)),
        ("autorefraction", 70, (0.50, 0.20)),
        ("retinoscopy", None, (0.50, 0.30)),  # the young rule is for autorefraction only
        ("retinoscopy", 20, (0.50, 0.30)),
        ("spectacles", None, (0.60, 0.25)),
        ("spectacles", 25, (0.60, 0.25)),
    ],
)
def test_sigma_per_source(source, age, expected):
    sp = StartingPoint(RX, source, age)
    np.testing.assert_allclose(sp.sigma, [expected[0], expected[1], expected[1]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(sp.centre, thibos(RX), atol=1e-12)


def test_no_start_has_no_sigma_and_the_middle_of_the_range():
    sp = StartingPoint()
    assert sp.sigma is None
    np.testing.assert_allclose(sp.centre, [-2.0, 0.0, 0.0])


# ------------------------------------------------------------------ samples
@pytest.mark.parametrize(
    "source, age", [("autorefraction", 30), ("autorefraction", 60), ("retinoscopy", None), ("spectacles", 45)]
)
def test_sample_prior_moments_match_centre_and_sigma(source, age):
    sp = StartingPoint(RX, source, age)
    n = 100_000
    x = sp.sample_prior(np.random.default_rng(11), n)
    assert x.shape == (n, 3)
    sigma = sp.sigma
    # sample mean: standard error sigma/sqrt(n); 5 SE (p ~ 6e-7 per coordinate)
    np.testing.assert_array_less(np.abs(x.mean(axis=0) - sp.centre), 5 * sigma / math.sqrt(n))
    # sample sd: standard error ~ sigma/sqrt(2n); 5 SE
    np.testing.assert_array_less(np.abs(x.std(axis=0) - sigma), 5 * sigma / math.sqrt(2 * n))
    # independent coordinates: correlations ~ N(0, 1/n); 5 SE
    corr = np.corrcoef(x.T)
    assert np.max(np.abs(corr[np.triu_indices(3, 1)])) < 5 / math.sqrt(n)


def test_sample_prior_without_start_is_uniform_m_and_wide_j():
    n = 100_000
    x = StartingPoint().sample_prior(np.random.default_rng(5), n)
    assert x[:, 0].min() >= -12.0 and x[:, 0].max() <= 8.0
    # uniform on [-12, 8]: mean -2, sd 20/sqrt(12); J ~ N(0, 0.6)
    assert abs(x[:, 0].mean() + 2.0) < 5 * (20 / math.sqrt(12)) / math.sqrt(n)
    assert abs(x[:, 0].std() - 20 / math.sqrt(12)) < 0.05
    np.testing.assert_array_less(np.abs(x[:, 1:].mean(axis=0)), 5 * 0.6 / math.sqrt(n))
    np.testing.assert_array_less(np.abs(x[:, 1:].std(axis=0) - 0.6), 5 * 0.6 / math.sqrt(2 * n))
    # deciles of M close to the uniform's (Kolmogorov-type tolerance, 0.01 >> 1/sqrt(n))
    q = np.quantile(x[:, 0], np.linspace(0.1, 0.9, 9))
    np.testing.assert_allclose((q + 12.0) / 20.0, np.linspace(0.1, 0.9, 9), atol=0.01)


def test_sample_prior_stays_in_the_m_range_near_the_edge():
    sp = StartingPoint(Prescription(-11.75), "spectacles", 50)
    x = sp.sample_prior(np.random.default_rng(2), 20_000)
    assert x[:, 0].min() >= -12.0 and x[:, 0].max() <= 8.0
    # the normal N(-11.75, 0.6) truncated at -12: P(M > -11.75) = (1/2) / (1 - Phi(-0.25 / 0.6))
    expected = 0.5 / (1.0 - norm.cdf(-0.25 / 0.6))
    assert abs(np.mean(x[:, 0] > -11.75) - expected) < 5 * math.sqrt(expected * (1 - expected) / 20_000)


def test_sample_prior_is_reproducible_from_the_generator():
    sp = StartingPoint(RX, "autorefraction", 30)
    a = sp.sample_prior(np.random.default_rng(3), 50)
    b = sp.sample_prior(np.random.default_rng(3), 50)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ log density
@pytest.mark.parametrize(
    "source, age", [("autorefraction", None), ("autorefraction", 55), ("retinoscopy", 30), ("spectacles", None)]
)
def test_log_prior_is_the_gaussian_log_density_up_to_a_constant(source, age):
    sp = StartingPoint(RX, source, age)
    rng = np.random.default_rng(7)
    pv = sp.centre + rng.normal(size=(200, 3)) * np.array([1.5, 0.5, 0.5])
    lp = sp.log_prior(pv)
    assert np.all(np.isfinite(lp))
    sigma = {
        "autorefraction": (0.8 if age is None or age <= 40 else 0.5, 0.2),
        "retinoscopy": (0.5, 0.3),
        "spectacles": (0.6, 0.25),
    }[source]
    mvn = multivariate_normal(mean=thibos(RX), cov=np.diag([sigma[0] ** 2, sigma[1] ** 2, sigma[1] ** 2]))
    ref = mvn.logpdf(pv)
    np.testing.assert_allclose(lp - lp[0], ref - ref[0], rtol=0, atol=1e-9)


def test_log_prior_without_start_is_flat_in_m_and_gaussian_in_j():
    sp = StartingPoint()
    rng = np.random.default_rng(8)
    pv = np.column_stack([rng.uniform(-12, 8, 100), rng.normal(0, 0.8, (100, 2))])
    lp = sp.log_prior(pv)
    ref = norm(0, 0.6).logpdf(pv[:, 1]) + norm(0, 0.6).logpdf(pv[:, 2])
    np.testing.assert_allclose(lp - lp[0], ref - ref[0], atol=1e-9)


@pytest.mark.parametrize("start", [StartingPoint(), StartingPoint(RX, "autorefraction", 30)])
def test_log_prior_is_minus_infinity_outside_the_range(start):
    pv = np.array(
        [
            [-12.01, 0.0, 0.0],
            [8.01, 0.0, 0.0],
            [-1.0, 3.01, 0.0],
            [-1.0, 2.2, -2.2],
            [-12.0, 0.0, 0.0],
            [8.0, 0.0, 0.0],
            [-1.0, 0.0, 3.0],
        ]
    )
    lp = start.log_prior(pv)
    assert np.all(lp[:4] == -np.inf)
    assert np.all(np.isfinite(lp[4:]))


# ------------------------------------------------------------------ dict round trip
@pytest.mark.parametrize(
    "sp",
    [
        StartingPoint(),
        StartingPoint(RX, "autorefraction"),
        StartingPoint(Prescription(1.5, 0.75, 95.0), "spectacles", 67.5),
        StartingPoint(Prescription(-3.0), "retinoscopy", 8),
    ],
)
def test_to_dict_from_dict_round_trip(sp):
    d = sp.to_dict()
    assert set(d) == {"rx", "source", "age_years"}
    back = StartingPoint.from_dict(d)
    assert back == sp
    np.testing.assert_array_equal(back.centre, sp.centre)
    if sp.sigma is not None:
        np.testing.assert_array_equal(back.sigma, sp.sigma)


def test_from_dict_legacy_bare_prescription_is_an_autorefraction():
    sp = StartingPoint.from_dict({"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0})
    assert sp.source == "autorefraction" and sp.age_years is None
    assert sp.rx == Prescription(-1.25, -0.5, 90.0)
    np.testing.assert_allclose(sp.sigma, [0.8, 0.2, 0.2])  # unknown age -> the young sigma_M


@pytest.mark.parametrize("empty", [None, {}])
def test_from_dict_empty_is_no_start(empty):
    sp = StartingPoint.from_dict(empty)
    assert sp == StartingPoint() and sp.source == "none" and sp.rx is None


def test_from_dict_validates():
    with pytest.raises(InvalidInputError, match="starting prescription"):
        StartingPoint.from_dict({"sphere_d": -14.0, "cylinder_d": 0.0, "axis_deg": 180.0})
    with pytest.raises(InvalidInputError, match="source"):
        StartingPoint.from_dict({"rx": None, "source": "autorefraction", "age_years": None})


# ------------------------------------------------------------------ samples vs density
@pytest.mark.parametrize(
    "rx", [Prescription(-1.0, -6.0, 90.0), Prescription(-9.0, -5.9, 10.0), Prescription(7.9, 0.0, 180.0)]
)
def test_every_prior_draw_has_a_finite_log_prior(rx):
    # starts on the edges of the range: about half the raw normal draws fall outside it
    sp = StartingPoint(rx, "spectacles", 50)
    x = sp.sample_prior(np.random.default_rng(0), 2000)
    assert np.all(np.isfinite(sp.log_prior(x)))
    assert np.all(np.hypot(x[:, 1], x[:, 2]) <= 3.0) and np.all((x[:, 0] >= -12.0) & (x[:, 0] <= 8.0))


def test_prior_draws_near_the_edge_follow_the_truncated_density():
    sp = StartingPoint(Prescription(-11.75), "spectacles", 50)
    x = sp.sample_prior(np.random.default_rng(1), 20_000)
    # truncated normal N(-11.75, 0.6) on [-12, 8]: P(M < -11.9) = (Phi(-0.25) - Phi(-0.4167)) / (1 - Phi(-0.4167))
    lo = norm.cdf((-12.0 + 11.75) / 0.6)
    expected = (norm.cdf((-11.9 + 11.75) / 0.6) - lo) / (1.0 - lo)
    assert abs(np.mean(x[:, 0] < -11.9) - expected) < 5 * math.sqrt(expected * (1 - expected) / len(x))
