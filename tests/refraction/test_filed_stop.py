"""The stop on the lens to file (``stopping.precision.filed_within_probability``): the probability
it reads against a closed form, the session that stops on it, and the setting and its errors."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from visiontune.errors import ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.mixed_engine import MixedOpticsEngine, filed_within_probability
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case

SHIPPED = load_protocol("clinical-sloan-compare")
FILED = load_protocol("docs/results/protocols/clinical-sloan-lines-filed.toml")
#: Adult-clinic case 4 of the validation (population seed 1): aged 56, an eye that hardly accommodates.
CASE = validation_case("adult-clinic", 4, 1)
#: The stop's level in the session below: met at answer 45, where the region stop (answer 48) is not.
LEVEL = 0.8


@pytest.mark.parametrize("offset, sd", [(0.0, 0.1), (0.15, 0.12), (0.3, 0.2)])
def test_the_probability_is_the_noncentral_chi_square_of_a_normal_posterior(offset, sd):
    # draws N(mu, sd^2 I) in (M, J0, J45): |P(L) - P*|^2 / sd^2 is noncentral chi-square with 3
    # degrees of freedom and noncentrality |mu - P(L)|^2 / sd^2 (Johnson, Kotz & Balakrishnan 1995, ch. 29)
    lens = Prescription(-1.0, -0.5, 30.0)
    mu = lens.power_vector_array() + offset * np.array([0.6, 0.0, 0.8])
    rng = np.random.default_rng(4)
    theta = rng.normal(mu, sd, size=(200_000, 3))
    expected = stats.ncx2.cdf(0.25**2 / sd**2, 3, offset**2 / sd**2)
    got = filed_within_probability(SimpleNamespace(theta=theta, weights=np.full(len(theta), 2.0)), lens)
    assert got == pytest.approx(expected, abs=0.005)
    # importance weights: draws of a wider normal weighted to the target give the same probability
    wide = rng.normal(mu, 2 * sd, size=(400_000, 3))
    w = np.exp(-0.5 * np.sum((wide - mu) ** 2, axis=1) * (1 / sd**2 - 1 / (2 * sd) ** 2))
    assert filed_within_probability(SimpleNamespace(theta=wide, weights=w), lens) == pytest.approx(expected, abs=0.01)


def _variant(filed: float | None):
    """The shipped protocol asking as ``"evr"`` (no wait for κ), stopping on its region or, with
    ``filed``, on the lens to file: the same questions until the first of the two stops."""
    text = SHIPPED.source_text.replace('criterion = "evr-stop"', 'criterion = "evr"')
    text = text.replace("sensitivity_to_stop = 0.5\n", "")
    if filed is not None:
        text = text.replace(
            "over_minus_risk = 0.001\n", f"over_minus_risk = 0.001\nfiled_within_probability = {filed}\n"
        )
    return parse_protocol(text, f"filed-{filed}.toml")


@pytest.fixture(scope="module")
def sessions():
    out = []
    for filed in (None, LEVEL):
        protocol = _variant(filed)
        refraction = case_refraction(protocol, CASE)
        result = refraction.run(TimedPresenter(CASE.patient(protocol.n_alternatives)))
        out.append((protocol, refraction, result))
    return out


def test_the_session_stops_at_the_first_answer_the_lens_to_file_is_probable_enough(sessions):
    (_, region, _), (protocol, filed, result) = sessions
    assert result["stopped_by"] == "precision"
    trials = filed.trials()
    # the same answers as the session that waits for the region, up to the earlier stop
    assert len(trials) < len(region.trials())
    assert [(t.s_logmar, str(t.lens), str(t.lens2)) for t in trials] == [
        (t.s_logmar, str(t.lens), str(t.lens2)) for t in region.trials()[: len(trials)]
    ]
    # recomputed from the log by a fresh engine: below the level before the last answer, at or above it after
    engine = MixedOpticsEngine(protocol, filed.engine.start, CASE.seed, protocol.comparisons)
    probabilities = []
    for k in range(protocol.stopping.min_trials, len(trials) + 1):
        est = engine.estimate(trials[:k], np.random.default_rng(0), np.random.default_rng(1), 0.95)
        probabilities.append(filed_within_probability(engine.correction_draws(trials[:k]), est.rounded))
        assert engine.filed_within_met() is (probabilities[-1] >= LEVEL)
        assert engine.precision_met(est.region) is (probabilities[-1] >= LEVEL)
    assert probabilities[-1] >= LEVEL and max(probabilities[:-1]) < LEVEL
    # the region stop had not fired there: the 95% region was still wider than +-0.25 D
    assert not region.engine.region_within_precision(est.region)


def test_the_progress_shown_is_the_stops_own(sessions):
    """The progress the app shows (``Refraction.progress``) reads the stop on the lens to file: the
    probability that it lies within 0.25 D over the stop's level, 1 where the session stopped; the
    session that waits for the region reads the region's radii, below 1 at the same answers."""
    (_, region, _), (protocol, filed, _) = sessions
    assert filed.progress() == 1.0
    before = filed.trials()[:-1]
    rebuilt = case_refraction(protocol, CASE)
    for t in before:
        rebuilt.log.record(dataclasses.replace(t, presented_at=None, answered_at=None, session_id=None))
    est = rebuilt.current_estimate()
    probability = filed_within_probability(rebuilt.engine.correction_draws(before), est.rounded)
    assert probability < LEVEL and rebuilt.progress() == pytest.approx(probability / LEVEL, abs=1e-12)
    shipped = case_refraction(_variant(None), CASE)
    for t in filed.trials():
        shipped.log.record(dataclasses.replace(t, presented_at=None, answered_at=None, session_id=None))
    assert shipped.progress() < 1.0 and not shipped.engine.region_within_precision(shipped.current_estimate().region)


def test_it_still_waits_for_kappa_when_the_protocol_says_so(sessions):
    (_, _, _), (protocol, filed, _) = sessions
    waiting = dataclasses.replace(
        protocol, comparisons=dataclasses.replace(protocol.comparisons, sensitivity_to_stop=1e-3)
    )
    engine = MixedOpticsEngine(waiting, filed.engine.start, CASE.seed, waiting.comparisons)
    est = engine.estimate(filed.trials(), np.random.default_rng(0), np.random.default_rng(1), 0.95)
    assert engine.filed_within_met() and not engine.precision_met(est.region)


def test_the_shipped_variants_parse_and_the_default_is_unchanged():
    assert SHIPPED.stopping.precision.filed_within_probability is None
    assert FILED.stopping.precision.filed_within_probability == 0.85
    assert FILED.stopping.precision.over_minus_risk == 0.01 and FILED.comparisons.sensitivity_to_stop is None
    assert FILED.chart_line is not None and FILED.comparisons.lens_change_seconds == 4.0
    phoropter = load_protocol("docs/results/protocols/clinical-sloan-lines-filed-phoropter.toml")
    assert phoropter.comparisons.lens_change_seconds == 1.0
    assert (
        dataclasses.replace(
            phoropter,
            comparisons=FILED.comparisons,
            name=FILED.name,
            description=FILED.description,
            source=FILED.source,
            source_text=FILED.source_text,
        )
        == FILED
    )


@pytest.mark.parametrize("value, found", [("0.3", "0.3"), ("1.0", "1.0"), ('"high"', '"high"')])
def test_the_setting_is_refused_out_of_range_naming_the_key(value, found):
    text = FILED.source_text.replace("filed_within_probability = 0.85", f"filed_within_probability = {value}")
    with pytest.raises(
        ProtocolError,
        match=rf"x.toml: stopping.precision.filed_within_probability: expected a number "
        rf"in \[0.5, 0.999\], found {found}",
    ):
        parse_protocol(text, "x.toml")


def test_the_setting_needs_comparisons_and_the_optics_model():
    letters = load_protocol("clinical-sloan").source_text.replace(
        "[stopping.precision]\n", "[stopping.precision]\nfiled_within_probability = 0.9\n"
    )
    assert "filed_within_probability = 0.9" in letters
    with pytest.raises(ProtocolError, match=r"stopping.precision.filed_within_probability: expected a \[comparisons\]"):
        parse_protocol(letters, "letters.toml")
    gp = load_protocol("paper-ucb-ald").source_text.replace(
        "max_trials = 260\n",
        "max_trials = 260\n[stopping.precision]\nsphere_d = 0.5\ncylinder_d = 0.5\nfiled_within_probability = 0.9\n",
    )
    with pytest.raises(ProtocolError, match="stopping.precision.filed_within_probability"):
        parse_protocol(gp, "gp.toml")
