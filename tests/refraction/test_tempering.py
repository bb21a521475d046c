"""Answers tempered in (``model.tempered``): the posterior after chart lines against importance
sampling from the prior with many more particles (a Monte Carlo oracle), the stages the moves take,
the same particles from the same answers, and the protocol key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from visiontune.optics import Prescription
from visiontune.refraction.chart_line import ChartLineAnswer
from visiontune.refraction.optics_model import OpticsModelSpec, ParticlePosterior
from visiontune.refraction.protocol import ProtocolError, parse_protocol
from visiontune.refraction.start import StartingPoint

START = StartingPoint(Prescription(-2.0, -0.75, 90.0), "autorefraction", 24.0)


def _lines() -> list[ChartLineAnswer]:
    """Chart lines of a 24-year-old whose correction is 0.5 D more plus than the start: read through
    the start (too minus, accommodated) and through lenses on the plus side, where the letters fail."""
    start = START.rx.power_vector_array()
    rows = [
        (0.1, 0.0, (True, True, True, True, True)),
        (0.0, 0.0, (True, True, True, False, True)),
        (0.2, 1.0, (True, False, True, False, False)),
        (0.4, 1.5, (True, True, False, True, False)),
        (0.1, 0.75, (True, True, False, True, True)),
        (0.0, 0.5, (True, True, True, False, True)),
    ]
    return [ChartLineAnswer(s, tuple(start + [dm, 0.0, 0.0]), c, crowding_logmar=0.0) for s, dm, c in rows]


def _moments(theta, w):
    mean = w @ theta[:, :3]
    return mean, np.sqrt(w @ (theta[:, :3] - mean) ** 2)


def test_the_tempered_posterior_matches_importance_sampling_from_the_prior():
    answers = _lines()
    big = ParticlePosterior(OpticsModelSpec(10, n_particles=200_000), START, seed=5)
    log_w = sum(a.log_likelihood(big.theta, big.spec) for a in answers)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    assert 1.0 / np.sum(w**2) > 2000, "the oracle needs enough effective draws"
    mean, sd = _moments(big.theta, w)
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=4000, tempered=True), START, seed=6)
    for a in answers:
        post.observe(a)
    got_mean, got_sd = _moments(post.theta, post.weights)
    np.testing.assert_allclose(got_mean, mean, atol=0.25 * sd.max())
    np.testing.assert_allclose(got_sd, sd, rtol=0.3)
    assert post.n_moves > 0


def test_a_line_that_would_collapse_the_weights_enters_in_stages():
    """Each line read twice over (ten letters): untempered, some answer leaves under a quarter of the
    particles' weight before the move; tempered, no stage leaves less than half, at more moves."""
    answers = [ChartLineAnswer(a.s, a.lens, a.correct * 2, crowding_logmar=0.0) for a in _lines()]
    plain = ParticlePosterior(OpticsModelSpec(10, n_particles=2000), START, seed=3)
    staged = ParticlePosterior(OpticsModelSpec(10, n_particles=2000, tempered=True), START, seed=3)
    lowest = []
    for a in answers:
        log_w = plain.log_w + a.log_likelihood(plain.theta, plain.spec)
        w = np.exp(log_w - log_w.max())
        lowest.append(float(w.sum() ** 2 / np.sum(w**2)))
        plain.observe(a)
        staged.observe(a)
        assert staged.effective_sample_size() >= 0.5 * 2000 - 1e-6
    assert min(lowest) < 500
    assert staged.n_moves > plain.n_moves


def test_the_tempered_posterior_is_a_pure_function_of_the_answers():
    spec = OpticsModelSpec(10, n_particles=1500, tempered=True)
    a, b = ParticlePosterior(spec, START, seed=9), ParticlePosterior(spec, START, seed=9)
    for x in _lines():
        a.observe(x)
        b.observe(x)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.log_w, b.log_w)


PROTOCOL = (Path(__file__).parents[2] / "visiontune/data/protocols/clinical-sloan-lines-two-formulas.toml").read_text()


def test_the_protocol_key_is_off_by_default_and_must_be_true_or_false():
    with_key = PROTOCOL.replace("n_particles = 4000\n", "n_particles = 4000\ntempered = true\n", 1)
    assert parse_protocol(with_key, "t.toml").model.tempered is True
    assert parse_protocol(PROTOCOL, "t.toml").model.tempered is False
    with pytest.raises(ProtocolError, match=r"model\.tempered"):
        parse_protocol(with_key.replace("tempered = true", 'tempered = "yes"'), "t.toml")
