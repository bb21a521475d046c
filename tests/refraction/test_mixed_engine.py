"""The mixed engine's precision stop waits, when the protocol asks, until the patient's
comparison sensitivity is learned: the posterior spread of ln κ against its prior's."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.mixed_engine import MixedOpticsEngine
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.optics_model import LOG_SENSITIVITY
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial

PROTOCOL = load_protocol("clinical-sloan-compare")
START = StartingPoint(Prescription(-2.0, -0.5, 90.0), "autorefraction", 45.0)
NARROW = SimpleNamespace(m_pm_d=0.01, cylinder_vector_pm_d=0.01)  # a region that meets any precision


def _comparisons(n: int, answer: str = "=") -> list[Trial]:
    """``n`` answers to the start (lens 1) against 0.5 D more plus (lens 2)."""
    a, b = Prescription(-2.0, -0.5, 90.0), Prescription(-1.5, -0.5, 90.0)
    return [Trial(i, 0.1, a, "H", answer == "1", lens2=b, comparison=answer) for i in range(n)]


def _engine(ratio):
    criterion = PROTOCOL.comparisons.criterion if ratio is not None else "evr"  # "evr-stop" turns to the wait
    settings = dataclasses.replace(PROTOCOL.comparisons, sensitivity_to_stop=ratio, criterion=criterion)
    return MixedOpticsEngine(PROTOCOL, START, 3, settings)


def test_the_stop_waits_while_the_sensitivity_is_as_uncertain_as_its_prior():
    trials = _comparisons(1)
    waiting, plain = _engine(0.5), _engine(None)
    for engine in (waiting, plain):
        engine.estimate(trials, np.random.default_rng(1), None, 0.95)
    post = waiting.posterior(trials)
    w, lk = post.weights, post.theta[:, LOG_SENSITIVITY]
    ratio = float(np.sqrt(w @ (lk - w @ lk) ** 2)) / PROTOCOL.comparisons.comparison.sensitivity_sigma
    assert ratio == pytest.approx(_ratio(waiting, trials)) and ratio > 0.5  # one answer teaches little about κ
    assert not waiting.precision_met(NARROW) and plain.precision_met(NARROW)
    assert not waiting.precision_met(SimpleNamespace(m_pm_d=1.0, cylinder_vector_pm_d=1.0))  # the region itself too


def _ratio(engine, trials) -> float:
    post = engine.posterior(trials)
    w, lk = post.weights, post.theta[:, LOG_SENSITIVITY]
    return float(np.sqrt(w @ (lk - w @ lk) ** 2)) / post.sensitivity_prior[1]


def test_the_stop_compares_the_spread_of_ln_kappa_with_the_fraction():
    """Met just above the posterior's spread ratio, not just below; before any comparison (no
    ln κ column) the rule adds nothing."""
    trials = _comparisons(24, "1")  # the start is clearer, every time: a sensitive patient near it
    ratio = _ratio(_engine(None), trials)
    assert 0.0 < ratio < 0.99
    for fraction, met in ((ratio * 1.01, True), (ratio * 0.99, False)):
        engine = _engine(fraction)
        engine.estimate(trials, np.random.default_rng(1), None, 0.95)
        assert engine.precision_met(NARROW) is met
    letters = [Trial(0, 0.2, Prescription(-2.0, -0.5, 90.0), "H", True)]
    fresh = _engine(0.01)
    fresh.estimate(letters, np.random.default_rng(1), None, 0.95)
    assert fresh.posterior(letters).sensitivity_prior is None and fresh.precision_met(NARROW)


@pytest.mark.parametrize("ratio", [0.0, 1.5, True, "half"])
def test_a_bad_fraction_is_refused(ratio):
    with pytest.raises(InvalidInputError, match="sensitivity_to_stop: expected None or a fraction in"):
        MixedSettings(sensitivity_to_stop=ratio)
