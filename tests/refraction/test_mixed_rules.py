"""Letters or comparisons (visiontune.refraction.mixed_rules) against independent oracles: the
expected posterior variance by explicit reweighting, the mutual information with scipy's
entropy, the binary EVR of optics_rules, and the rule's invariances (the letter is the
protocol's, durations scale the values, comparisons are trial lenses near the estimate)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import entropy

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction import optics_rules
from visiontune.refraction.lenses import LensSteps, trial_lens_power_vectors
from visiontune.refraction.mixed_rules import (
    MixedSettings,
    clinical_directions,
    comparison_candidates,
    expected_posterior_variance,
    mutual_information_bits,
    propose_mixed,
)
from visiontune.refraction.optics_engine import OpticsEngine
from visiontune.refraction.optics_rules import expected_correction_variance
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint

PROTOCOL = load_protocol("clinical-sloan")
START = StartingPoint(Prescription(-2.0, -1.25, 37.0), "autorefraction", 30)


def test_expected_posterior_variance_by_explicit_reweighting():
    rng = np.random.default_rng(0)
    pv = rng.normal(0, [0.5, 0.2, 0.2], (300, 3))
    probs = rng.dirichlet(np.ones(3), size=(300, 4))  # (N, Q, K = 3)
    got = expected_posterior_variance(pv, probs)
    for q in range(4):
        ref = 0.0
        for k in range(3):
            w = probs[:, q, k]
            p_y = w.mean()  # P(y) under the equally weighted particles
            wn = w / w.sum()
            mean = wn @ pv
            ref += p_y * float(np.sum(wn @ (pv - mean) ** 2))  # tr Cov(P* | y)
        assert got[q] == pytest.approx(ref, rel=1e-10)
    # law of total variance: 0 <= E[tr Cov | y] <= tr Cov
    now = float(np.sum(pv.var(axis=0)))
    assert np.all(got <= now + 1e-12) and np.all(got >= 0)


def test_two_outcomes_are_the_binary_evr_of_optics_rules():
    rng = np.random.default_rng(1)
    pv = rng.normal(0, 0.4, (200, 3))
    p = rng.uniform(0.05, 0.95, (200, 6))
    np.testing.assert_allclose(
        expected_posterior_variance(pv, np.stack([p, 1 - p], axis=-1)), expected_correction_variance(pv, p), rtol=1e-12
    )


def test_mutual_information_matches_scipy_entropy():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=(50, 5))
    got = mutual_information_bits(probs)
    for q in range(5):
        ref = entropy(probs[:, q].mean(axis=0), base=2) - np.mean([entropy(row, base=2) for row in probs[:, q]])
        assert got[q] == pytest.approx(ref, rel=1e-10)
    # identical particles carry no information; and K = 2 is optics_rules' binary formula
    assert np.allclose(mutual_information_bits(np.repeat(probs[:1], 50, axis=0)), 0.0, atol=1e-12)
    p = rng.uniform(0.05, 0.95, (50, 4))
    np.testing.assert_allclose(
        mutual_information_bits(np.stack([p, 1 - p], -1)), optics_rules.mutual_information_bits(p), rtol=1e-9
    )


def _posterior(n_answers: int = 15):
    engine = OpticsEngine(PROTOCOL, START, 5)
    post = engine.posterior([])
    rng = np.random.default_rng(3)
    for _ in range(n_answers):
        post.update(float(rng.uniform(0.0, 0.4)), START.centre + rng.normal(0, 0.3, 3), bool(rng.random() < 0.7))
    return engine, post


def test_candidates_are_distinct_pairs_of_trial_lenses_near_the_estimate():
    engine, post = _posterior()
    steps = engine.protocol.lenses
    centre = post.best_correction()
    particles = post.subsample(600, np.random.default_rng(4))
    pairs = comparison_candidates(particles, centre, 1.0, steps, np.random.default_rng(5))
    assert pairs.ndim == 3 and pairs.shape[1:] == (2, 3) and len(pairs) > 30
    flat = pairs.reshape(-1, 3)
    np.testing.assert_allclose(trial_lens_power_vectors(flat, steps), flat, atol=1e-9)  # already trial lenses
    assert np.all(np.linalg.norm(flat - centre, axis=1) <= 1.0 + 0.4)  # radius + rounding of one trial lens
    assert np.all(np.linalg.norm(pairs[:, 0] - pairs[:, 1], axis=1) > 1e-6)
    keys = {tuple(sorted((tuple(np.round(a, 6)), tuple(np.round(b, 6))))) for a, b in pairs}
    assert len(keys) == len(pairs)


def test_clinical_pairs_differ_along_one_clinical_direction():
    """``pairs = "clinical"``: before rounding to trial lenses every pair differs along the sphere
    (M), the cylinder's own J direction (its power, spherical equivalent kept) or across it (its
    axis); no pair of posterior draws; the generator is not used."""
    engine, post = _posterior()
    centre = np.array([-1.0, 0.3, -0.4])  # a cylinder of 1 D at axis 63.4°
    particles = post.subsample(600, np.random.default_rng(4))
    rng = np.random.default_rng(5)
    pairs = comparison_candidates(particles, centre, 1.0, LensSteps(0.0), rng, "clinical")
    directions = clinical_directions(centre)
    np.testing.assert_allclose(directions[1], [0.0, 0.6, -0.8])  # along J = (0.3, -0.4)
    np.testing.assert_allclose([d @ e for d in directions for e in directions], np.eye(3).ravel(), atol=1e-12)
    for a, b in pairs:
        step = (b - a) / np.linalg.norm(b - a)
        assert max(abs(step @ d) for d in directions) == pytest.approx(1.0), (a, b)
    assert (
        30 <= len(pairs) <= 3 * 5 * 3
    )  # 3 directions x 5 separations x (symmetric, two one-sided), less the clipped twins
    assert rng.integers(1 << 30) == np.random.default_rng(5).integers(1 << 30)  # no draws taken
    np.testing.assert_allclose(clinical_directions(np.array([0.5, 0.01, 0.0]))[1], [0.0, 1.0, 0.0])  # no axis: J0


def _propose(post, engine, settings, k=0):
    return propose_mixed(
        post,
        "evr",
        settings,
        steps=engine.protocol.lenses,
        s_grid=engine.s_grid,
        radius=1.0,
        rng_letter=np.random.default_rng([9, k, 0]),
        rng_comparison=np.random.default_rng([9, k, 4]),
    )


def test_the_letter_is_the_protocols_rule_whether_or_not_comparisons_are_on():
    engine, post = _posterior()
    letter = optics_rules.propose(
        post,
        "evr",
        steps=engine.protocol.lenses,
        s_grid=engine.s_grid,
        radius=1.0,
        rng=np.random.default_rng([9, 0, 0]),
    )
    off = _propose(post, engine, MixedSettings(comparisons=False))
    on = _propose(post, engine, MixedSettings())
    assert off.kind == "letter" and off.comparison is None and off.letter == letter
    assert on.letter == letter and on.comparison is not None
    assert on.comparison.lens1 != on.comparison.lens2


def test_durations_divide_the_values_and_decide_the_kind():
    engine, post = _posterior()
    base = _propose(post, engine, MixedSettings())
    slow = _propose(post, engine, MixedSettings(comparison_seconds=10.0, letter_seconds=6.0))
    assert slow.letter_value_per_s == pytest.approx(base.letter_value_per_s / 2, rel=1e-12)
    assert slow.comparison_value_per_s == pytest.approx(base.comparison_value_per_s / 2, rel=1e-12)
    ratio = base.comparison_value_per_s * 5.0 / (base.letter_value_per_s * 3.0)  # value per answer, comparison / letter
    assert _propose(post, engine, MixedSettings(comparison_seconds=3.0 * ratio * 0.9)).kind == "comparison"
    assert _propose(post, engine, MixedSettings(comparison_seconds=3.0 * ratio * 1.1)).kind == "letter"


@pytest.mark.parametrize(
    "model",
    [ComparisonModel(), ComparisonModel("blur"), ComparisonModel(latent="probit")],
    ids=["eq11", "blur", "eq11-probit"],
)
def test_comparison_size_and_information(model):
    engine, post = _posterior()
    choice = _propose(post, engine, MixedSettings(comparison=model))
    c = choice.comparison
    assert engine.s_grid.min() - 1e-9 <= c.s_logmar <= engine.s_grid.max() + 1e-9
    assert 0.0 < c.information_bits <= np.log2(3) + 1e-12
    if not model.uses_size:  # the predicted best acuity + 0.1 logMAR, on the chart's grid
        target = post.mean()[3] + 0.1
        assert abs(c.s_logmar - target) <= 0.025 + 0.01
    # same inputs, same choice
    assert _propose(post, engine, MixedSettings(comparison=model)) == choice
    # the information criterion runs too and values are in bits per second
    info = _propose(post, engine, MixedSettings(comparison=model, criterion="information"))
    assert 0.0 < info.comparison_value_per_s <= np.log2(3) / 5.0 + 1e-12


def test_settings_are_validated():
    with pytest.raises(InvalidInputError, match="comparison_seconds"):
        MixedSettings(comparison_seconds=0.0)
    with pytest.raises(InvalidInputError, match="criterion"):
        MixedSettings(criterion="bald")
    with pytest.raises(InvalidInputError, match="comparison"):
        MixedSettings(comparison="blur")
    assert dataclasses.replace(MixedSettings(), letter_seconds=4.0).letter_seconds == 4.0
