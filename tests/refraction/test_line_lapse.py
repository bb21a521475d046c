"""A chart line read at random (``[chart_line] line_lapse``, ``visiontune.refraction.chart_line``):
the line's likelihood against the mixture written out per particle, its count probabilities
against a Monte Carlo of lines with lapses, the key off being the letters' own model to the last
bit, and a line of guesses through a lens the eye sees well no longer moving the posterior by
diopters."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.refraction.test_chart_line import SPEC, START, _particles
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.refraction.chart_line import ChartLineAnswer, ChartLineSettings, line_count_probabilities
from visiontune.refraction.optics_model import ParticlePosterior, probability_correct
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.validation.validate_cli import _chart_line_note

LAPSE = 0.04


@pytest.mark.parametrize("line_sd", [0.0, 0.1])
def test_the_likelihood_is_the_mixture_with_a_line_of_guesses(line_sd):
    """Per particle ``log((1 - λ_L) P_θ(line) + λ_L γ^K (1 - γ)^(n - K))``, ``P_θ`` the line's likelihood
    without the lapse (the letters' own, or averaged over the shared threshold), written out in floats."""
    theta = _particles(100, seed=3)[:60]
    lens = (-0.75, 0.2, 0.0)
    correct = (True, False, False, True, False)
    plain = ChartLineAnswer(0.1, lens, correct, 0.05, line_sd).log_likelihood(theta, SPEC)
    mixed = ChartLineAnswer(0.1, lens, correct, 0.05, line_sd, LAPSE).log_likelihood(theta, SPEC)
    guess = 0.1**2 * 0.9**3
    oracle = [math.log((1 - LAPSE) * math.exp(a) + LAPSE * guess) for a in plain]
    np.testing.assert_allclose(mixed, oracle, rtol=1e-12)
    if line_sd == 0.0:
        p = probability_correct(theta, np.array([0.05]), np.array([lens]), SPEC)[:, 0]
        letters = [math.log((1 - LAPSE) * q**2 * (1 - q) ** 3 + LAPSE * guess) for q in p]
        np.testing.assert_allclose(mixed, letters, rtol=1e-12)
    other = ChartLineAnswer(0.3, (0.0, 0.0, 0.0), (True,) * 5, 0.05, line_sd, LAPSE)
    both = ChartLineAnswer.batch_log_likelihood(
        [ChartLineAnswer(0.1, lens, correct, 0.05, line_sd, LAPSE), other], theta, SPEC
    )
    np.testing.assert_allclose(both, mixed + other.log_likelihood(theta, SPEC), rtol=1e-12)


def test_the_key_off_is_the_letters_own_model_to_the_last_bit():
    theta = _particles(200, seed=4)
    line = ChartLineAnswer(0.2, (-0.5, 0.1, -0.2), (True, False, True, True, False), 0.1)
    assert line.batch_key == ("chart_line", 0.1, 0.0, 0.0)
    off = ChartLineAnswer(0.2, (-0.5, 0.1, -0.2), (True, False, True, True, False), 0.1, 0.0, 0.0)
    np.testing.assert_array_equal(off.log_likelihood(theta, SPEC), line.log_likelihood(theta, SPEC))
    settings = ChartLineSettings(5, 6.0, 0.1)
    probs = line_count_probabilities(theta[:4], np.array([0.2]), np.array([[-0.5, 0.1, -0.2]]), 5, settings, SPEC)
    again = line_count_probabilities(
        theta[:4],
        np.array([0.2]),
        np.array([[-0.5, 0.1, -0.2]]),
        5,
        dataclasses.replace(settings, line_lapse=0.0),
        SPEC,
    )
    np.testing.assert_array_equal(probs, again)


def test_the_count_probabilities_match_a_monte_carlo_of_lines_with_lapses():
    """Lines drawn as the model says (lapsed with probability ``λ_L``, then every letter a guess at
    ``γ = 0.1``; else each letter right with the particle's ``p``): the frequencies of 0-5 right
    match :func:`line_count_probabilities`, which sum to 1."""
    theta = _particles(100, seed=5)
    lens = np.array([[-1.25, 0.3, 0.0]])
    settings = ChartLineSettings(5, 6.0, 0.0, 0.0, 0.2)
    probs = line_count_probabilities(theta[:2], np.array([0.0]), lens, 5, settings, SPEC)[:, 0]
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-12)
    p = probability_correct(theta[:2], np.array([0.0]), lens, SPEC)[:, 0]
    rng = np.random.default_rng(6)
    m = 200_000
    for i in range(2):
        lapsed = rng.random(m) < 0.2
        q = np.where(lapsed, 0.1, p[i])
        counts = (rng.random((m, 5)) < q[:, None]).sum(axis=1)
        np.testing.assert_allclose(np.bincount(counts, minlength=6) / m, probs[i], atol=4e-3)


def _mean_m_after_a_line_of_guesses(line_lapse: float) -> tuple[float, float]:
    """Posterior mean of ``M*`` after 12 lines read well through three lenses near a correction of
    ``M`` -1.0 D (sizes 0.1 logMAR, all five right), then one line of guesses (0 of 5) at the most
    plus of them: ``(before, after)``."""
    post = ParticlePosterior(dataclasses.replace(SPEC, n_particles=4000), START, 7)
    lenses = [(-1.0, 0.0, 0.0), (-1.25, 0.0, 0.0), (-0.75, 0.0, 0.0)]
    for k in range(12):
        post.observe(ChartLineAnswer(0.1, lenses[k % 3], (True,) * 5, 0.0, 0.0, line_lapse))
    before = float(post.weights @ post.theta[:, 0])
    post.observe(ChartLineAnswer(0.1, lenses[2], (False,) * 5, 0.0, 0.0, line_lapse))
    return before, float(post.weights @ post.theta[:, 0])


def test_a_line_of_guesses_through_a_clear_lens_moves_the_correction_little():
    """After twelve lines read well, one line read at random through the most plus of those lenses:
    the letters' own model moves the posterior mean of ``M*`` by more than 0.15 D (five slips at 4%
    each are beyond belief, so the lens must blur; measured 0.32 D), the line lapse by less than 0.02 D
    (measured 0.0001 D: twelve lines against one)."""
    before, after = _mean_m_after_a_line_of_guesses(0.0)
    moved_plain = abs(after - before)
    before, after = _mean_m_after_a_line_of_guesses(LAPSE)
    moved_lapse = abs(after - before)
    assert moved_plain > 0.15, moved_plain
    assert moved_lapse < 0.02, (moved_lapse, moved_plain)


def test_the_key_is_read_validated_and_stated_on_the_validation_page():
    assert ChartLineSettings().line_lapse == 0.0
    with pytest.raises(InvalidInputError, match="line_lapse"):
        ChartLineSettings(line_lapse=0.6)
    protocol = load_protocol("clinical-sloan-lines-two-formulas")
    assert protocol.chart_line.line_lapse == 0.0
    assert "read at random" not in " ".join(_chart_line_note(protocol))
    text = protocol.source_text.replace("crowding_logmar = 0.0\n", "crowding_logmar = 0.0\nline_lapse = 0.04\n")
    on = parse_protocol(text, "on.toml")
    assert on.chart_line.line_lapse == 0.04
    assert "read at random (every letter a guess) with probability 0.04" in " ".join(_chart_line_note(on))
    with pytest.raises(ProtocolError, match=r"chart_line\.line_lapse"):
        parse_protocol(text.replace("line_lapse = 0.04", "line_lapse = 0.7"), "bad.toml")
    with pytest.raises(ProtocolError, match=r"chart_line\.line_lapse"):
        parse_protocol(text.replace("line_lapse = 0.04", 'line_lapse = "often"'), "bad.toml")
