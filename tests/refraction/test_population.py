"""Simulated patient populations: the drawn cases follow the documented distributions."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import hofstetter_amplitude_d
from visiontune.optics.acuity import (
    BlendowskeAcuity,
    LinearLogmarAcuity,
    PupilBlurAcuity,
)
from visiontune.optics.patient import SimulatedPatient
from visiontune.optics.psychometric import PsychometricFunction
from visiontune.refraction.population import (
    DEFAULT_DRIFT,
    POPULATIONS,
    SLOAN_PERCENT_CORRECT,
    AxisMix,
    CylinderDistribution,
    PatientCase,
    Population,
    SphericalEquivalentMixture,
    axis_class,
    draw_cases,
    population_by_name,
    sloan_letter_offsets,
)

N = 5000


def within(sample_mean, expected, sd, n, k=4.0):
    return abs(sample_mean - expected) < k * sd / math.sqrt(n)


def proportion_ok(hits, p, n, k=4.0):
    return abs(hits / n - p) < k * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.fixture(scope="module")
def adult():
    return draw_cases("adult-clinic", N, 2026)


def arrays(cases):
    pv = np.array([c.true_rx.power_vector_array() for c in cases])
    return {
        "M": pv[:, 0],
        "J0": pv[:, 1],
        "J45": pv[:, 2],
        "C": np.array([c.true_rx.cylinder_d for c in cases]),
        "axis": np.array([c.true_rx.axis_deg for c in cases]),
        "age": np.array([c.age_years for c in cases]),
        "va": np.array([c.best_corrected_logmar for c in cases]),
        "slope": np.array([c.slope for c in cases]),
    }


def test_registry_has_the_documented_populations():
    assert {"adult-clinic", "adult-clinic-misspecified", "young", "high-myopia", "no-start"} <= set(POPULATIONS)
    for name, population in POPULATIONS.items():
        assert population.name == name and population.description
        assert population_by_name(name) is population
        json.dumps(population.to_dict())  # plain data
    with pytest.raises(InvalidInputError, match="population"):
        population_by_name("paediatric-ward")


def test_spherical_equivalent_matches_its_cdf_and_the_survey_figures(adult):
    m = arrays(adult)["M"]
    dist = POPULATIONS["adult-clinic"].spherical_equivalent
    for x in (-5.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0):
        assert proportion_ok(np.sum(m <= x), dist.cdf(x), N), x
    # Vitale et al. 2008 (US adults): myopia (M <= -1) 33.1%, hyperopia (M >= +3) 3.6%
    assert dist.cdf(-1.0) == pytest.approx(0.331, abs=0.01)
    assert 1 - dist.cdf(3.0) == pytest.approx(0.036, abs=0.005)
    assert -0.5 <= np.median(m) <= 0.0  # myopic skew around emmetropia
    assert -10.0 <= m.min() < -7.0 and 4.0 < m.max() <= 6.0  # long tails, truncated
    assert stats.skew(m) < -0.5


def test_cylinder_magnitude_and_form(adult):
    a = arrays(adult)
    c = -a["C"]
    dist = POPULATIONS["adult-clinic"].cylinder
    assert np.all(a["C"] <= 0)  # minus-cylinder form
    assert c.max() <= 4.0
    # Hashemi et al. 2018: 40.4% of adults have more than 0.5 D of astigmatism
    assert 1 - dist.cdf(0.5) == pytest.approx(0.404, abs=0.01)
    assert proportion_ok(np.sum(c > 0.5), 1 - dist.cdf(0.5), N)
    assert proportion_ok(np.sum(c <= 1.0), dist.cdf(1.0), N) and np.mean(c <= 1.0) > 0.8
    assert within(c.mean(), dist.mean(), c.std(), N)
    assert 0.5 <= dist.mean() <= 0.75


def test_axis_classes_by_age_and_uniform_within_a_class(adult):
    a = arrays(adult)
    classes = np.array([axis_class(x) for x in a["axis"]])
    population = POPULATIONS["adult-clinic"]
    for group, mix in ((a["age"] < 40, population.axis_under_40), (a["age"] >= 40, population.axis_from_40)):
        n = int(group.sum())
        assert n > 1000
        for name, p in (
            ("with-the-rule", mix.with_the_rule),
            ("against-the-rule", mix.against_the_rule),
            ("oblique", mix.oblique),
        ):
            assert proportion_ok(np.sum(classes[group] == name), p, n), (name, p)
    # about a quarter oblique overall; axes anywhere, not only 90 / 180
    assert np.mean(classes == "oblique") == pytest.approx(0.25, abs=0.03)
    assert len(np.unique(np.round(a["axis"]))) > 170
    # uniform within a class: with-the-rule offsets from 150° uniform on [0, 60), etc.
    wtr = (a["axis"][classes == "with-the-rule"] - 150.0) % 180.0
    atr = a["axis"][classes == "against-the-rule"] - 60.0
    obl = a["axis"][classes == "oblique"]
    obl = np.where(obl < 90, obl - 30.0, obl - 90.0)  # both arcs mapped onto [0, 60)
    for offsets in (wtr, atr, obl):
        assert stats.kstest(offsets / 60.0, "uniform").pvalue > 1e-3
    # J45 is as spread as J0 among oblique cases (the cylinder really is oblique)
    j45 = np.abs(a["J45"][classes == "oblique"])
    j0 = np.abs(a["J0"][classes == "oblique"])
    assert np.mean(j45 > j0) > 0.6


def test_acuity_slope_age_and_accommodation(adult):
    a = arrays(adult)
    population = POPULATIONS["adult-clinic"]
    lo, hi = (
        (population.va_lower - population.va_mean) / population.va_sd,
        (population.va_upper - population.va_mean) / population.va_sd,
    )
    truth = stats.truncnorm(lo, hi, loc=population.va_mean, scale=population.va_sd)
    assert within(a["va"].mean(), truth.mean(), truth.std(), N)
    assert a["va"].std() == pytest.approx(truth.std(), rel=0.05)
    assert a["va"].min() >= -0.2 and a["va"].max() <= 0.4
    log_slope = np.log(a["slope"])
    assert within(np.median(log_slope), math.log(5.0), 0.3 * 1.26, N)  # SE of a median ≈ 1.25 σ/√n
    assert log_slope.std() == pytest.approx(0.3, abs=0.015)
    assert a["slope"].min() >= 1.5 and a["slope"].max() <= 15.0
    assert a["age"].min() >= 18 and a["age"].max() < 80
    assert within(a["age"].mean(), 49.0, 62 / math.sqrt(12), N)
    assert stats.kstest((a["age"] - 18) / 62, "uniform").pvalue > 1e-3
    amplitudes = np.array([c.accommodation_d for c in adult])
    assert amplitudes == pytest.approx(hofstetter_amplitude_d(a["age"], "mean"))
    for c in adult[:200]:
        assert c.lapse == 0.02 and c.acuity_model == "blendowske" and not c.letter_difficulty and not c.drift
        assert c.start_source == "autorefraction" and c.pupil_mm is None and c.population == "adult-clinic"


def test_autorefraction_start_has_the_published_error(adult):
    error = np.array([c.start_rx.power_vector_array() - c.true_rx.power_vector_array() for c in adult])
    # M: N(-0.20, 0.35) D plus the printout's 0.25 D rounding: sd 0.360 (measured on 40,000
    # cases); the SE of an sd is about sd/√(2n) = 0.0036, so ±0.015 is 4 SE
    assert within(error[:, 0].mean(), -0.20, 0.36, N)
    assert error[:, 0].std() == pytest.approx(0.360, abs=0.015)
    for j in (1, 2):  # J0, J45: N(0, 0.15) plus rounding: sd 0.153 (40,000 cases); 4 SE = 0.0087
        assert within(error[:, j].mean(), 0.0, 0.153, N)
        assert error[:, j].std() == pytest.approx(0.153, abs=0.009)
    for c in adult[:300]:  # printed like an autorefractor: quarter diopters, whole degrees, minus cylinder
        s, cyl, axis = c.start_rx.sphere_d, c.start_rx.cylinder_d, c.start_rx.axis_deg
        assert (s * 4).is_integer() and (cyl * 4).is_integer() and float(axis).is_integer() and cyl <= 0


def test_reproducible_and_prefix_stable():
    a = draw_cases("adult-clinic", 40, 11)
    assert a == draw_cases("adult-clinic", 40, 11)
    assert draw_cases("adult-clinic", 15, 11) == a[:15]
    assert draw_cases("adult-clinic", 25, 11, start=15) == a[15:]
    assert [c.case_id for c in a] == list(range(40))
    assert draw_cases(POPULATIONS["adult-clinic"], 40, 12) != a
    assert len({c.seed for c in a}) == 40
    assert draw_cases("adult-clinic", 0, 11) == []
    # the misspecified population shares the refractive errors, ages, acuity and start
    mis = draw_cases("adult-clinic-misspecified", 40, 11)
    assert [c.true_rx for c in mis] == [c.true_rx for c in a]
    assert [c.start_rx for c in mis] == [c.start_rx for c in a]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"population": "nope", "n": 3, "seed": 1}, "population"),
        ({"population": 3, "n": 3, "seed": 1}, "population"),
        ({"population": "adult-clinic", "n": -1, "seed": 1}, "n:"),
        ({"population": "adult-clinic", "n": 2.0, "seed": 1}, "n:"),
        ({"population": "adult-clinic", "n": 3, "seed": -2}, "seed"),
        ({"population": "adult-clinic", "n": 3, "seed": 1.5}, "seed"),
        ({"population": "adult-clinic", "n": 3, "seed": True}, "seed"),
        ({"population": "adult-clinic", "n": 3, "seed": 1, "start": -1}, "start"),
    ],
)
def test_draw_cases_validates_its_arguments(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        draw_cases(**kwargs)


def test_distribution_parameters_are_validated():
    with pytest.raises(InvalidInputError, match="weights"):
        SphericalEquivalentMixture(0.5, 0, 1, 0.4, -0.5, 2, 0.2, 0.5, 1, -10, 6)
    with pytest.raises(InvalidInputError, match="axis mix"):
        AxisMix(0.5, 0.5, 0.5)
    with pytest.raises(InvalidInputError, match="scale_d"):
        CylinderDistribution(0.0, 4.0)
    base = POPULATIONS["adult-clinic"]
    with pytest.raises(InvalidInputError, match="acuity_models"):
        Population(**{**base.__dict__, "acuity_models": (("snellen", 1.0),)})
    with pytest.raises(InvalidInputError, match="age_range"):
        Population(**{**base.__dict__, "age_range": (50.0, 20.0)})


def test_misspecified_population():
    cases = draw_cases("adult-clinic-misspecified", 2000, 5)
    models = np.array([c.acuity_model for c in cases])
    assert set(models) == {"pupil-geometric", "linear-logmar"}
    assert proportion_ok(np.sum(models == "pupil-geometric"), 0.5, 2000)
    pupils = np.array([c.pupil_mm for c in cases if c.acuity_model == "pupil-geometric"])
    ages = np.array([c.age_years for c in cases if c.acuity_model == "pupil-geometric"])
    assert pupils.min() >= 2.0 and pupils.max() <= 8.0
    assert within(pupils.mean(), np.mean(4.8 - 0.025 * (ages - 20)), 0.5, len(pupils))
    assert np.corrcoef(ages, pupils)[0, 1] < -0.3  # pupils shrink with age (Winn et al. 1994)
    assert all(c.pupil_mm is None for c in cases if c.acuity_model == "linear-logmar")
    assert all(c.lapse == 0.05 and c.letter_difficulty and c.drift for c in cases)
    pupil_case = next(c for c in cases if c.acuity_model == "pupil-geometric")
    patient = pupil_case.patient(10)
    assert patient.acuity_model == PupilBlurAcuity(pupil_case.best_corrected_logmar, pupil_case.pupil_mm)
    assert patient.drift == DEFAULT_DRIFT and patient.psychometric.lapse == 0.05
    assert patient.letter_offset_logmar("Z") < 0 < patient.letter_offset_logmar("C")
    linear_case = next(c for c in cases if c.acuity_model == "linear-logmar")
    assert isinstance(linear_case.patient(26).acuity_model, LinearLogmarAcuity)
    assert linear_case.patient(26).letter_offset_logmar("A") == 0.0  # a non-Sloan letter


def test_young_high_myopia_and_no_start():
    young = draw_cases("young", 2000, 3)
    ages = np.array([c.age_years for c in young])
    assert ages.min() >= 8 and ages.max() < 35
    assert min(c.accommodation_d for c in young) >= 18.5 - 0.3 * 35 - 1e-9
    m_young = np.array([c.true_rx.spherical_equivalent_d for c in young])
    m_adult = np.array([c.true_rx.spherical_equivalent_d for c in draw_cases("adult-clinic", 2000, 3)])
    assert np.mean(m_young > 0.5) > np.mean(m_adult > 0.5) + 0.1  # hyperopes more frequent
    assert np.mean(m_young <= -5) < np.mean(m_adult <= -5)
    high = draw_cases("high-myopia", 2000, 3)
    m = np.array([c.true_rx.spherical_equivalent_d for c in high])
    assert m.min() >= -12 and m.max() <= -6
    assert within(m.mean(), -9.0, 6 / math.sqrt(12), 2000)
    assert np.mean([-c.true_rx.cylinder_d for c in high]) > 0.75
    none = draw_cases("no-start", 2000, 3)
    assert all(c.start_rx is None and c.start_source == "none" for c in none)
    m = np.array([c.true_rx.spherical_equivalent_d for c in none])
    assert m.min() >= -10 and m.max() <= 6 and m.min() < -9.5 and m.max() > 5.5
    assert np.mean(m < -6) == pytest.approx(4 / 16, abs=0.04)


def test_case_round_trip_and_patient():
    cases = (
        draw_cases("adult-clinic", 5, 8) + draw_cases("adult-clinic-misspecified", 5, 8) + draw_cases("no-start", 3, 8)
    )
    for case in cases:
        text = json.dumps(case.to_dict())
        back = PatientCase.from_dict(json.loads(text))
        assert back == case
        p1, p2 = case.patient(10), back.patient(10)
        assert isinstance(p1, SimulatedPatient) and p1.seed == case.seed
        lens = case.start_rx or case.true_rx
        assert [p1.answer_trial(k, 0.1, lens) for k in range(30)] == [p2.answer_trial(k, 0.1, lens) for k in range(30)]
        assert p1.accommodation_amplitude_d == pytest.approx(case.accommodation_d)
        assert p1.acuity_logmar(case.true_rx) == pytest.approx(case.best_corrected_logmar)
    well = cases[0].patient(26)
    assert well.acuity_model == BlendowskeAcuity(cases[0].best_corrected_logmar) and well.drift is None
    bad = cases[0].to_dict()
    del bad["seed"]
    with pytest.raises(InvalidInputError, match="seed"):
        PatientCase.from_dict(bad)
    with pytest.raises(InvalidInputError, match="true_rx"):
        PatientCase.from_dict({**cases[0].to_dict(), "true_rx": {"sphere_d": 1.0}})
    with pytest.raises(InvalidInputError, match="start_rx"):
        PatientCase(**{**cases[0].__dict__, "start_source": "none"})
    with pytest.raises(InvalidInputError, match="start_source"):
        PatientCase(**{**cases[0].__dict__, "start_source": "guess"})


def test_sloan_letter_offsets_follow_the_table():
    offsets = sloan_letter_offsets()
    reference = PsychometricFunction(5.0, 10, 0.0)
    mean_pct = np.mean(list(SLOAN_PERCENT_CORRECT.values()))
    for letter, pct in SLOAN_PERCENT_CORRECT.items():
        want = reference.threshold(mean_pct / 100, 0.0) - reference.threshold(pct / 100, 0.0)
        assert offsets[letter] == pytest.approx(want)
    assert offsets["C"] == offsets["O"] == offsets["S"] == max(offsets.values())
    assert offsets["Z"] == min(offsets.values())
    assert len(offsets) == 26 and offsets["A"] == 0.0


def test_from_dict_rejects_malformed_values_naming_the_key():
    data = draw_cases("adult-clinic", 1, 4)[0].to_dict()
    for key, value in (("case_id", "7"), ("seed", 1.5), ("slope", "steep"), ("age_years", True), ("lapse", None)):
        with pytest.raises(InvalidInputError, match=key):
            PatientCase.from_dict({**data, key: value})
    with pytest.raises(InvalidInputError, match="data"):
        PatientCase.from_dict([1, 2])
