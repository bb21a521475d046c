"""The "evr-stop" criterion (visiontune.refraction.mixed_rules, "Towards the stop that is left"):
the questions of "evr" until the region is within the precision and the stop waits only for the
patient's comparison sensitivity κ, then those of "evr-precision", which value learning κ. Checked
on a simulated presbyope (no accommodation to hide the correction, so the region is met before κ
is learned): the same questions as "evr" up to that answer and others after it, the phase read
from the region and κ's spread the stop reads, a question after it that learns more of κ than
the one "evr" asks, a log rebuilt asks the same, the progress shown waits for κ as the stop does,
the stored validation replays; and the settings it needs."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from tests.stored_runs import assert_holds, same_but_criterion
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.refraction.comparisons import comparison_probabilities, with_sensitivity
from visiontune.refraction.estimate import region_from_samples
from visiontune.refraction.loop import COMPARISON_STREAM, POLICY_STREAM, SLIDER_STREAM
from visiontune.refraction.mixed_engine import MixedOpticsEngine, sensitivity_sd_ratio
from visiontune.refraction.mixed_rules import MixedSettings, expected_posterior_variance, propose_mixed
from visiontune.refraction.optics_model import LOG_SENSITIVITY, probability_correct
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case

SHIPPED = load_protocol("clinical-sloan-compare")
#: Adult-clinic case 2 of the validation (population seed 1): aged 69, an eye that no longer accommodates.
CASE = validation_case("adult-clinic", 2, 1)


def _with_criterion(criterion: str):
    return dataclasses.replace(SHIPPED, comparisons=dataclasses.replace(SHIPPED.comparisons, criterion=criterion))


def _session(protocol):
    refraction = case_refraction(protocol, CASE)
    refraction.run(TimedPresenter(CASE.patient(protocol.n_alternatives)))
    return refraction


@pytest.fixture(scope="module")
def sessions():
    stop = _session(SHIPPED)
    return stop, _session(_with_criterion("evr")), stop.trials()


def _question(trial) -> tuple:
    lens2 = None if trial.lens2 is None else trial.lens2.power_vector_array().round(9).tolist()
    return (round(float(trial.s_logmar), 9), trial.lens.power_vector_array().round(9).tolist(), lens2)


def _first_wait(engine, trials) -> int:
    return next(k for k in range(len(trials) + 1) if engine.waits_only_for_sensitivity(trials[:k]))


def test_the_questions_are_evrs_until_the_stop_waits_only_for_kappa(sessions):
    stop, evr, trials = sessions
    asked, evr_asked = [_question(t) for t in trials], [_question(t) for t in evr.trials()]
    differ = next(i for i, (a, b) in enumerate(zip(asked, evr_asked)) if a != b)
    # the first question that differs was valued in the κ phase, and none before it was chosen
    # otherwise than "evr" would have (a phase may ask "evr"'s question too)
    assert stop.engine.waits_only_for_sensitivity(trials[:differ])
    assert 0 < _first_wait(stop.engine, trials) <= differ
    # and this session, waiting for κ, learned it and stopped sooner than with "evr"
    assert len(trials) < len(evr.trials())


def test_the_phase_is_the_stops_region_met_and_kappa_not_yet_learned(sessions):
    stop, _, trials = sessions
    engine = MixedOpticsEngine(SHIPPED, stop.engine.start, CASE.seed, SHIPPED.comparisons)
    first = _first_wait(stop.engine, trials)
    seen = set()
    for k in (0, 5, first, first + 1, len(trials)):
        post = engine.posterior(trials[:k])
        region = region_from_samples(post.theta[:, :3], post.weights, post.best_correction(), 0.95, "minus")
        ratio = sensitivity_sd_ratio(post)
        met = region.m_pm_d <= 0.25 and region.cylinder_vector_pm_d <= 0.25
        expected = ratio is not None and met and ratio > 0.5
        assert engine.waits_only_for_sensitivity(trials[:k]) is expected
        seen.add(expected)
        settings, units = engine.question_settings(trials[:k])
        assert settings.criterion == ("evr-precision" if expected else "evr")
        assert (units is not None) is expected
        if expected:
            assert units.log_sensitivity_sd == pytest.approx(0.5 * SHIPPED.comparisons.comparison.sensitivity_sigma)
    assert seen == {True, False}
    # the session stopped when κ was learned: no longer waiting at its last answer
    assert sensitivity_sd_ratio(engine.posterior(trials)) <= 0.5


def _kappa_variance_reduction(post, trial) -> float:
    """The expected reduction of Var(ln κ) by the question of a logged ``trial`` (law of total
    variance over its answers), per second of the patient's time."""
    settings = SHIPPED.comparisons
    particles = with_sensitivity(
        post.subsample(2000, np.random.default_rng(7)), settings.comparison, np.random.default_rng(8)
    )
    column = particles[:, LOG_SENSITIVITY : LOG_SENSITIVITY + 1]
    lens = trial.lens.power_vector_array()[None, :]
    if trial.lens2 is not None:
        probs = comparison_probabilities(
            particles,
            float(trial.s_logmar),
            lens,
            trial.lens2.power_vector_array()[None, :],
            settings.comparison,
            post.spec,
        )
        seconds = settings.comparison_seconds
    else:
        p = probability_correct(particles, np.array([float(trial.s_logmar)]), lens, post.spec)
        probs, seconds = np.stack([p, 1.0 - p], axis=-1), settings.letter_seconds
    return (float(column.var()) - float(expected_posterior_variance(column, probs)[0])) / seconds


def test_once_waiting_its_question_learns_more_of_kappa_than_evrs(sessions):
    stop, evr, trials = sessions
    differ = next(i for i, (a, b) in enumerate(zip(trials, evr.trials())) if _question(a) != _question(b))
    post = stop.engine.posterior(trials[:differ])  # the same answers so far in both sessions
    assert _kappa_variance_reduction(post, trials[differ]) > 1.5 * _kappa_variance_reduction(post, evr.trials()[differ])


def test_a_log_rebuilt_asks_the_same_questions(sessions):
    stop, _, trials = sessions
    k = _first_wait(stop.engine, trials) + 2
    fresh = MixedOpticsEngine(SHIPPED, stop.engine.start, CASE.seed, SHIPPED.comparisons)
    rngs = [np.random.default_rng([9, k, s]) for s in (POLICY_STREAM, COMPARISON_STREAM, SLIDER_STREAM)]
    again = [np.random.default_rng([9, k, s]) for s in (POLICY_STREAM, COMPARISON_STREAM, SLIDER_STREAM)]
    stop.engine.posterior(trials)  # the running engine's particles are past k: it rebuilds
    assert fresh.propose_mixed(trials[:k], *rngs) == stop.engine.propose_mixed(trials[:k], *again)


def test_it_needs_a_stop_that_waits_for_kappa():
    with pytest.raises(InvalidInputError, match="'evr-stop'.*sensitivity_to_stop"):
        MixedSettings(criterion="evr-stop")
    with pytest.raises(InvalidInputError, match="'evr-stop'.*sensitivity_to_stop"):
        dataclasses.replace(SHIPPED.comparisons, sensitivity_to_stop=None)
    assert dataclasses.replace(SHIPPED.comparisons, criterion="evr").sensitivity_to_stop == 0.5
    text = SHIPPED.source_text
    no_wait = text.replace("sensitivity_to_stop = 0.5", "")
    with pytest.raises(
        ProtocolError, match=r'comparisons\.criterion: expected a sensitivity_to_stop .*found "evr-stop"'
    ):
        parse_protocol(no_wait, "no-wait.toml")
    no_kappa = text.replace("sensitivity_sigma = 1.0", "sensitivity_sigma = 0.0")
    with pytest.raises(ProtocolError, match=r"comparisons\.criterion: expected a sensitivity_to_stop"):
        parse_protocol(no_kappa, "no-kappa.toml")
    no_precision = re.sub(r"\[stopping\.precision\]\n.*?\n\n", "", text, count=1, flags=re.S)
    with pytest.raises(ProtocolError, match=r'comparisons\.criterion: expected a precision stop .* for "evr-stop"'):
        parse_protocol(no_precision, "no-precision.toml")


def test_propose_mixed_refuses_the_criterion_unresolved():
    engine = MixedOpticsEngine(SHIPPED, case_refraction(SHIPPED, CASE).engine.start, 1, SHIPPED.comparisons)
    post = engine.posterior([])
    with pytest.raises(InvalidInputError, match="resolve it"):
        propose_mixed(
            post,
            "evr",
            SHIPPED.comparisons,
            steps=engine.protocol.lenses,
            s_grid=engine.s_grid,
            radius=1.0,
            rng_letter=np.random.default_rng(0),
            rng_comparison=np.random.default_rng(1),
        )


def test_progress_waits_for_kappa_as_the_stop_does(sessions):
    """Where the region is within the precision but κ not yet learned, the progress shown to the
    clinician is the κ wait's: the stop's limit over the spread of ln κ against its prior's."""
    stop, _, trials = sessions
    differ = next(i for i, (a, b) in enumerate(zip(trials, sessions[1].trials())) if _question(a) != _question(b))
    refraction = case_refraction(SHIPPED, CASE)
    assert refraction.run(TimedPresenter(CASE.patient(SHIPPED.n_alternatives)), max_steps=differ) is None
    region = refraction.current_estimate().region
    assert region.m_pm_d <= 0.25 and region.cylinder_vector_pm_d <= 0.25 and refraction.stop_reason() is None
    post = refraction.engine.posterior(refraction.trials())
    w, log_kappa = post.weights, post.theta[:, LOG_SENSITIVITY]
    spread = float(np.sqrt(w @ (log_kappa - w @ log_kappa) ** 2)) / SHIPPED.comparisons.comparison.sensitivity_sigma
    assert spread > 0.5
    assert refraction.progress() == pytest.approx(0.5 / spread, rel=1e-9) and refraction.progress() < 1.0
    fresh = MixedOpticsEngine(SHIPPED, refraction.engine.start, CASE.seed, SHIPPED.comparisons)
    assert fresh.sensitivity_progress([]) is None  # no comparison yet: no ln κ to wait for


RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
#: The stores name the runs held; their figures and answers are read from tests/fixtures/stored_runs.json.
STORE = RESULTS / "clinical-validation-clinical-sloan-compare.sqlite"
SLIDERS_STORE = RESULTS / "clinical-validation-clinical-sloan-compare-sliders-evr-stop.sqlite"
#: The former default (lens changes free, no over-minus wait), the base of the variants measured then.
FORMER = load_protocol(str(RESULTS / "protocols" / "clinical-sloan-compare-phoropter.toml"))
FORMER_STORE = RESULTS / "clinical-validation-clinical-sloan-compare-phoropter.sqlite"


def test_the_measured_variants_differ_from_their_base_only_in_the_criterion():
    """docs/results/protocols: the former default with "evr" (as it shipped before, filing the
    rounded estimate), and the sliders protocol with the shipped "evr-stop"."""
    folder = RESULTS / "protocols"
    evr = load_protocol(str(folder / "clinical-sloan-compare-evr.toml"))
    assert evr.comparisons.criterion == "evr" != FORMER.comparisons.criterion
    assert evr.model.filed_lens == "rounded" != FORMER.model.filed_lens
    assert same_but_criterion(evr, FORMER, filed_lens=True)
    assert not same_but_criterion(evr, FORMER)
    sliders = load_protocol(str(folder / "clinical-sloan-compare-sliders.toml"))
    variant = load_protocol(str(folder / "clinical-sloan-compare-sliders-evr-stop.toml"))
    assert variant.comparisons.criterion == "evr-stop" != sliders.comparisons.criterion
    assert same_but_criterion(variant, sliders)


def test_the_measured_reach_variant_differs_from_the_former_default_only_in_its_reach():
    """docs/results/protocols: lenses up to 1.5 D from the estimate, everything else as the former default."""
    variant = load_protocol(str(RESULTS / "protocols" / "clinical-sloan-compare-reach-1.5.toml"))
    assert variant.search_space.max_step_d == 1.5 != FORMER.search_space.max_step_d
    assert (
        dataclasses.replace(
            variant,
            search_space=FORMER.search_space,
            name=FORMER.name,
            description=FORMER.description,
            source=FORMER.source,
            source_text=FORMER.source_text,
        )
        == FORMER
    )


@pytest.mark.replay
@pytest.mark.parametrize("population, case_id", [("adult-clinic", 2), ("young", 0)])
def test_the_stored_validation_of_the_shipped_protocol_holds_on_any_machine(population, case_id):
    """A presbyope whose questions turned to κ (adult-clinic case 2, the case above) and a young
    patient of the shipped protocol's validation page: their recorded answers give the stored
    stop, filed lens and coverage, the estimate within 1e-9 D; rerun, the stored questions up to
    the first near-tie (tests/stored_runs.py)."""
    assert_holds(STORE, "clinical-sloan-compare-seed1", SHIPPED, population, case_id)


@pytest.mark.replay
def test_the_stored_validation_of_the_former_default_holds_on_any_machine():
    """The former default's page, written when it shipped, held to its protocol file: a young patient."""
    assert_holds(FORMER_STORE, "clinical-sloan-compare-seed1", FORMER, "young", 0)


@pytest.mark.replay
def test_the_stored_sliders_validation_holds_on_any_machine():
    """Adult-clinic case 3 of the sliders protocol with "evr-stop" (its validation page: 8 sliders in
    39 answers), held to its store."""
    protocol = load_protocol(str(RESULTS / "protocols" / "clinical-sloan-compare-sliders-evr-stop.toml"))
    stored = assert_holds(SLIDERS_STORE, "clinical-sloan-compare-sliders-evr-stop-seed1", protocol, "adult-clinic", 3)
    assert stored["sliders"] > 0
