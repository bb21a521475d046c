"""The "evr-precision" criterion (visiontune.refraction.mixed_rules.PrecisionUnits): its units are
the standard deviations at which the precision stop's conditions are met (checked against scipy's
quantiles and against the region the stop reads, by Monte Carlo); in uniform units it is the
"evr" criterion scaled; weighting a direction heavily turns the comparison along it; ``ln κ`` in
the units only adds value; the slider's value takes the same columns; the protocol asks a
precision stop for it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2, norm

from tests.refraction.test_mixed_rules import _posterior  # a posterior after 15 random letters
from tests.stored_runs import assert_holds, same_but_criterion
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.estimate import region_from_samples
from visiontune.refraction.mixed_rules import MixedSettings, PrecisionUnits, criterion_columns, propose_mixed
from visiontune.refraction.optics_model import LOG_SENSITIVITY
from visiontune.refraction.protocol import Precision, load_protocol, parse_protocol
from visiontune.refraction.slider import SliderModel, knob_path, slider_value
from visiontune.refraction.start import StartingPoint

ROOT = Path(__file__).resolve().parents[2]
SENSITIVE = ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0)


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_units_are_the_sds_at_which_the_stop_is_met(level):
    units = PrecisionUnits.of_stop(Precision(m_d=0.25, cylinder_vector_d=0.25, level=level), MixedSettings())
    assert units.m_sd == pytest.approx(0.25 / norm.ppf(0.5 * (1 + level)), rel=1e-12)
    assert units.j_sd == pytest.approx(0.25 / np.sqrt(chi2.ppf(level, 2)), rel=1e-12)
    assert units.log_sensitivity_sd is None  # the default comparison model does not infer κ
    # A normal posterior with exactly these SDs has the stop's radii at the precision (Monte Carlo).
    rng = np.random.default_rng(0)
    pv = rng.normal(0.0, [units.m_sd, units.j_sd, units.j_sd], (400_000, 3))
    region = region_from_samples(pv, np.ones(len(pv)), np.zeros(3), level, "minus")
    assert region.m_pm_d == pytest.approx(0.25, rel=0.01)
    assert region.cylinder_vector_pm_d == pytest.approx(0.25, rel=0.01)


def test_ln_kappa_is_scored_only_when_the_stop_waits_for_it():
    stop = Precision(m_d=0.25, cylinder_vector_d=0.25)
    waits = MixedSettings(comparison=SENSITIVE, sensitivity_to_stop=0.5)
    assert PrecisionUnits.of_stop(stop, waits).log_sensitivity_sd == pytest.approx(0.5)
    for settings in (
        MixedSettings(comparison=SENSITIVE),
        dataclasses.replace(waits, comparisons=False),
        MixedSettings(sensitivity_to_stop=0.5),
    ):
        assert PrecisionUnits.of_stop(stop, settings).log_sensitivity_sd is None
    with pytest.raises(InvalidInputError, match="precision stop"):
        PrecisionUnits.of_stop(None, waits)
    with pytest.raises(InvalidInputError, match="m_sd"):
        PrecisionUnits(float("nan"), 0.1)


def test_columns_scale_and_leave_out_a_sensitivity_not_yet_drawn():
    theta = np.array([[1.0, 0.2, -0.4, 0.0, 1.6, 3.0, 0.7], [2.0, 0.4, 0.8, 0.0, 1.6, 3.0, -0.3]])
    units = PrecisionUnits(0.5, 0.1, 0.25)
    np.testing.assert_allclose(units.columns(theta), [[2.0, 2.0, -4.0, 2.8], [4.0, 4.0, 8.0, -1.2]])
    unlearned = theta.copy()
    unlearned[:, LOG_SENSITIVITY] = np.nan
    assert units.columns(unlearned).shape == (2, 3)
    assert units.columns(theta[:, :6]).shape == (2, 3)
    np.testing.assert_array_equal(criterion_columns(theta, None), theta[:, :3])


def _propose(settings, units, k=0):
    engine, post = _posterior()
    return propose_mixed(
        post,
        "evr",
        settings,
        steps=engine.protocol.lenses,
        s_grid=engine.s_grid,
        radius=1.0,
        rng_letter=np.random.default_rng([9, k, 0]),
        rng_comparison=np.random.default_rng([9, k, 4]),
        units=units,
    )


def test_in_uniform_units_it_is_evr_scaled():
    evr = _propose(MixedSettings(), None)
    scaled = _propose(MixedSettings(criterion="evr-precision"), PrecisionUnits(0.5, 0.5))
    assert scaled.kind == evr.kind and scaled.comparison == evr.comparison and scaled.letter == evr.letter
    assert scaled.letter_value_per_s == pytest.approx(evr.letter_value_per_s / 0.25, rel=1e-9)
    assert scaled.comparison_value_per_s == pytest.approx(evr.comparison_value_per_s / 0.25, rel=1e-9)


def test_a_heavily_weighted_direction_turns_the_comparison_along_it():
    settings = MixedSettings(criterion="evr-precision")
    along_m = _propose(settings, PrecisionUnits(0.01, 10.0)).comparison
    along_j = _propose(settings, PrecisionUnits(10.0, 0.01)).comparison
    d_m = along_m.lens1.power_vector_array() - along_m.lens2.power_vector_array()
    d_j = along_j.lens1.power_vector_array() - along_j.lens2.power_vector_array()
    assert abs(d_m[0]) > np.hypot(d_m[1], d_m[2])
    assert np.hypot(d_j[1], d_j[2]) > abs(d_j[0])


def test_ln_kappa_in_the_units_only_adds_value():
    settings = MixedSettings(comparison=SENSITIVE, criterion="evr-precision", sensitivity_to_stop=0.5)
    without = _propose(settings, PrecisionUnits(0.13, 0.1))
    with_kappa = _propose(settings, PrecisionUnits(0.13, 0.1, 0.5))
    # the law of total variance: the expected reduction of Var(ln κ) is >= 0 for every question
    assert with_kappa.comparison_value_per_s > without.comparison_value_per_s
    assert with_kappa.letter_value_per_s >= without.letter_value_per_s - 1e-12


def test_the_criterion_and_its_units_come_together():
    with pytest.raises(InvalidInputError, match="units"):
        _propose(MixedSettings(criterion="evr-precision"), None)
    with pytest.raises(InvalidInputError, match="units"):
        _propose(MixedSettings(), PrecisionUnits(0.1, 0.1))


def test_a_slider_is_valued_in_the_same_units():
    from visiontune.refraction.slider import SliderSettings

    engine, post = _posterior()
    settings = MixedSettings(criterion="evr-precision")
    choice = propose_mixed(
        post,
        "evr",
        settings,
        steps=engine.protocol.lenses,
        s_grid=engine.s_grid,
        radius=1.0,
        rng_letter=np.random.default_rng([9, 0, 0]),
        rng_comparison=np.random.default_rng([9, 0, 4]),
        sliders=SliderSettings(),
        rng_slider=np.random.default_rng([9, 0, 5]),
        units=PrecisionUnits(0.13, 0.1),
    )
    assert choice.slider is not None
    # the slider's expected variance reduction in the stop's units, not its information in bits
    assert choice.slider_value_per_s == pytest.approx(choice.slider.value / SliderSettings().slider_seconds)
    assert choice.slider.value > choice.slider.information_bits * 10


def test_slider_value_in_scaled_columns():
    _, post = _posterior()
    particles = post.subsample(500, np.random.default_rng(6))
    path = knob_path("sphere", Prescription(-2.0, -1.25, 37.0), half_range=0.75, step=0.25)
    model = SliderModel()
    plain = slider_value(particles, path.lenses, model)
    scaled = slider_value(particles, path.lenses, model, criterion_columns=lambda t: t[:, :3] / 0.2)
    assert plain > 0 and scaled == pytest.approx(plain / 0.04, rel=1e-9)
    m_only = slider_value(particles, path.lenses, model, criterion_columns=lambda t: t[:, :1])
    assert 0 < m_only < plain  # the sphere knob mostly, not only, informs M


def test_the_protocol_asks_a_precision_stop_for_it():
    protocol = load_protocol(str(ROOT / "docs" / "results" / "protocols" / "clinical-sloan-compare-evr-precision.toml"))
    assert protocol.comparisons.criterion == "evr-precision"
    text = protocol.source_text
    start, end = text.index("[stopping.precision]"), text.index("[psychometric.slope_prior]")
    with pytest.raises(ProtocolError, match="comparisons.criterion"):
        parse_protocol(text[:start] + text[end:], "no-precision.toml")


def test_the_sliders_variant_differs_from_the_sliders_protocol_only_in_its_criterion():
    """docs/results/protocols: the measured sliders protocol valued in the stop's units is the
    sliders protocol with ``criterion = "evr-precision"`` and nothing else."""
    folder = ROOT / "docs" / "results" / "protocols"
    sliders = load_protocol(str(folder / "clinical-sloan-compare-sliders.toml"))
    variant = load_protocol(str(folder / "clinical-sloan-compare-sliders-evr-precision.toml"))
    assert variant.comparisons.criterion == "evr-precision" and sliders.comparisons.criterion == "evr"
    assert same_but_criterion(variant, sliders)


def test_a_session_valued_in_precision_units_is_reproducible_and_asks_comparisons():
    from visiontune.refraction.loop import MemoryLog, PendingComparison, Refraction
    from visiontune.refraction.simulated import simulated_case
    from visiontune.session.engine import SimulatedPresenter

    protocol = load_protocol(str(ROOT / "docs" / "results" / "protocols" / "clinical-sloan-compare-evr-precision.toml"))

    def asked(n=25):
        case = simulated_case(seed=3, protocol=protocol)
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
        refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
        presenter = SimulatedPresenter(case.patient(protocol.n_alternatives))
        out = []
        for _ in range(n):
            q = refraction.next_query()
            out.append((type(q).__name__, repr(q)))
            refraction.record(presenter.present(q))
        return out

    first = asked()
    assert first == asked()
    assert sum(kind == PendingComparison.__name__ for kind, *_ in first) >= 5


#: Names the runs held; their figures and answers are read from tests/fixtures/stored_runs.json.
SLIDERS_STORE = ROOT / "docs" / "results" / "clinical-validation-clinical-sloan-compare-sliders-evr-precision.sqlite"


@pytest.mark.replay
def test_the_stored_sliders_run_holds_on_any_machine():
    """Case 0 of adult-clinic and of young in the sliders variant's validation page: recomputed
    from their recorded answers and rerun, what tests/stored_runs.py's assert_holds checks."""
    protocol = load_protocol(
        str(ROOT / "docs" / "results" / "protocols" / "clinical-sloan-compare-sliders-evr-precision.toml")
    )
    for population in ("adult-clinic", "young"):
        stored = assert_holds(
            SLIDERS_STORE, "clinical-sloan-compare-sliders-evr-precision-seed1", protocol, population, 0
        )
        assert stored["sliders"] > 0
