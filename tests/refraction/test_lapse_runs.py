"""Lapses in runs (``[model] lapse_run_onset`` / ``lapse_run_recovery``, ``visiontune.refraction.attention``):
the forward algorithm against the sum over every hidden path written out, a chain without memory against
the product of independent mixtures, the particles' filter carried answer by answer against the forward
pass over the whole log, and a run of lines read at random no longer moving the correction."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from tests.refraction.test_chart_line import SPEC, START
from visiontune.app.logic.texts import ATTENTION_WARNING, attention_text
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.attention import AttentionChain, forward
from visiontune.refraction.chart_line import ChartLineAnswer
from visiontune.refraction.comparisons import ComparisonAnswer
from visiontune.refraction.mixed_engine import build_optics_engine
from visiontune.refraction.optics_engine import _model_spec
from visiontune.refraction.optics_model import LetterAnswer, ParticlePosterior
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.trial import Trial
from visiontune.validation.validate_cli import _lapse_runs_note

CHAIN = AttentionChain(0.02, 0.25)


def _every_path(chain: AttentionChain, f: np.ndarray, g: np.ndarray, last: int | None = None) -> np.ndarray:
    """``log Σ_z π(z_1) e_1(z_1) Π_t T(z_{t-1}, z_t) e_t(z_t)`` over all ``2^T`` paths (those ending in
    the state ``last`` when given), in floats."""
    a, b = chain.onset, chain.recovery
    trans = [[1 - a, a], [b, 1 - b]]
    start = [1 - a / (a + b), a / (a + b)]
    out = []
    for row in f:
        total = 0.0
        for path in itertools.product((0, 1), repeat=len(row)):
            if last is not None and path[-1] != last:
                continue
            p = start[path[0]]
            for t, z in enumerate(path):
                if t:
                    p *= trans[path[t - 1]][z]
                p *= math.exp(row[t]) if z == 0 else math.exp(g[t])
            total += p
        out.append(math.log(total))
    return np.array(out)


@pytest.mark.parametrize("chain", [CHAIN, AttentionChain(0.3, 0.6)])
def test_the_forward_pass_sums_every_hidden_path(chain):
    """The likelihood, and the filter at the last answer (the share of the paths' weight ending lapsed)."""
    rng = np.random.default_rng(1)
    f = np.log(rng.uniform(0.01, 1.0, (6, 8)))
    g = np.log(rng.uniform(0.05, 0.9, 8))
    total, alpha = forward(chain, f, g)
    every = _every_path(chain, f, g)
    np.testing.assert_allclose(total, every, rtol=1e-12)
    np.testing.assert_allclose(alpha[:, 1], np.exp(_every_path(chain, f, g, 1) - every), rtol=1e-10)
    none, no_state = forward(chain, f[:, :0], g[:0])
    assert no_state is None and not none.any()


def test_a_chain_without_memory_is_a_product_of_independent_mixtures():
    """With ``b = 1 - a`` the state before each answer is lapsed with probability ``a`` whatever came
    before, so the likelihood is ``Π_t ((1 - a) f_t + a g_t)``."""
    chain = AttentionChain(0.1, 0.9)
    rng = np.random.default_rng(2)
    f = np.log(rng.uniform(0.01, 1.0, (5, 30)))
    g = np.log(rng.uniform(0.05, 0.9, 30))
    oracle = np.sum(np.log(0.9 * np.exp(f) + 0.1 * np.exp(g)[None, :]), axis=1)
    np.testing.assert_allclose(forward(chain, f, g)[0], oracle, rtol=1e-12)
    assert chain.lapsed_share == pytest.approx(0.1) and CHAIN.mean_run == pytest.approx(4.0)


def _answers():
    """Letters, chart lines and comparisons in one order, with a run of lines read at random."""
    model = ComparisonModel()
    lens, other = (-1.0, 0.1, 0.0), (-0.5, 0.0, 0.1)
    out = [LetterAnswer(0.1, lens, True), ComparisonAnswer(0.0, lens, other, "1", model)]
    out += [ChartLineAnswer(0.1, lens, (True, True, False, True, True))]
    out += [ChartLineAnswer(0.3, other, (False,) * 5) for _ in range(3)]
    out += [LetterAnswer(0.2, other, False), ComparisonAnswer(0.1, other, lens, "=", model)]
    return out


def test_the_particles_filter_answer_by_answer_as_the_whole_log_does():
    """Before any resampling the weights are the forward likelihood of the whole log; after
    resampling and moves (more answers) the filter carried in :meth:`ParticlePosterior.observe` is the
    forward pass over the log for the particles as they are."""
    spec = dataclasses.replace(SPEC, n_particles=300, lapse_runs=CHAIN)
    post = ParticlePosterior(spec, START, 3)
    theta = post.theta.copy()
    answers = _answers()
    for answer in answers[:2]:
        post.observe(answer)
    assert post.n_moves == 0
    ll = post._log_likelihood(theta)
    np.testing.assert_allclose(post.weights, np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum(), rtol=1e-10)
    each = post._each_log_likelihood(theta)
    np.testing.assert_allclose(each[:, 1], answers[1].log_likelihood(theta, spec), rtol=1e-12)
    for answer in answers[2:]:
        post.observe(answer)
    assert post.n_moves > 0
    np.testing.assert_allclose(post._attention, post._attention_state(post.theta), atol=1e-10)
    assert post.lapsed_probability > 0.3


def test_tempered_answers_keep_the_filter():
    spec = dataclasses.replace(SPEC, n_particles=300, lapse_runs=CHAIN, tempered=True)
    post = ParticlePosterior(spec, START, 4)
    for answer in _answers():
        post.observe(answer)
    np.testing.assert_allclose(post._attention, post._attention_state(post.theta), atol=1e-10)


def _mean_m_after_a_run(chain) -> tuple[float, float, float | None]:
    """Posterior mean of ``M*`` after 12 lines read well through three lenses near a correction of ``M``
    -1.0 D, then after five lines of guesses in a row (0 of 5) at the most plus of them; and the
    probability that the patient was lapsed at the last of them."""
    post = ParticlePosterior(dataclasses.replace(SPEC, n_particles=4000, lapse_runs=chain), START, 7)
    lenses = [(-1.0, 0.0, 0.0), (-1.25, 0.0, 0.0), (-0.75, 0.0, 0.0)]
    for k in range(12):
        post.observe(ChartLineAnswer(0.1, lenses[k % 3], (True,) * 5))
    before = float(post.weights @ post.theta[:, 0])
    for _ in range(5):
        post.observe(ChartLineAnswer(0.1, lenses[2], (False,) * 5))
    return before, float(post.weights @ post.theta[:, 0]), post.lapsed_probability


def test_a_run_of_lines_read_at_random_moves_the_correction_little():
    """Five lines of guesses in a row through a lens twelve lines were read well through: the letters'
    own model takes them for blur and moves the mean of ``M*`` by more than 0.15 D; with the chain they
    are a run of lapses (probability above 0.9 at the last) and move it by less than 0.05 D."""
    before, after, lapsed = _mean_m_after_a_run(None)
    assert abs(after - before) > 0.15 and lapsed is None
    before, after, lapsed = _mean_m_after_a_run(CHAIN)
    assert abs(after - before) < 0.05, (before, after)
    assert lapsed > 0.9


def test_the_keys_are_read_validated_and_stated():
    protocol = load_protocol("clinical-sloan-lines-two-formulas")
    assert protocol.model.lapse_runs is None and _model_spec(protocol).lapse_runs is None
    assert _lapse_runs_note(protocol) == []
    text = protocol.source_text.replace(
        "keep_start_margin = 0.05\n", "keep_start_margin = 0.05\nlapse_run_onset = 0.01\nlapse_run_recovery = 0.25\n"
    )
    on = parse_protocol(text, "on.toml")
    assert on.model.lapse_runs == (0.01, 0.25)
    assert _model_spec(on).lapse_runs == AttentionChain(0.01, 0.25)
    note = " ".join(_lapse_runs_note(on))
    assert "0.01" in note and "0.25" in note and "runs of 4" in note
    with pytest.raises(ProtocolError, match="found no model.lapse_run_recovery"):
        parse_protocol(text.replace("lapse_run_recovery = 0.25\n", ""), "bad.toml")
    with pytest.raises(ProtocolError, match=r"model\.lapse_run_onset"):
        parse_protocol(text.replace("lapse_run_onset = 0.01", "lapse_run_onset = 0.5"), "bad.toml")
    with pytest.raises(ProtocolError, match=r"model\.lapse_run_recovery"):
        parse_protocol(text.replace("lapse_run_recovery = 0.25", "lapse_run_recovery = 0"), "bad.toml")
    with pytest.raises(InvalidInputError, match="onset"):
        AttentionChain(0.6, 0.2)
    with pytest.raises(InvalidInputError, match="recovery"):
        AttentionChain(0.1, float("nan"))


def test_the_clinician_is_told_when_the_last_answers_read_as_a_run_of_lapses():
    """Through the engine a session asks: lines read well through the start, then lines of guesses at the
    same size through the same lens. The engine's probability of a lapse at the last answer rises past
    :data:`ATTENTION_WARNING` and the session panel's warning appears; after a line read well it falls and
    the warning goes. The default protocol reads no runs: no probability, no warning."""
    text = load_protocol("clinical-sloan-lines-two-formulas").source_text.replace(
        "keep_start_margin = 0.05\n", "keep_start_margin = 0.05\nlapse_run_onset = 0.005\nlapse_run_recovery = 0.2\n"
    )
    protocol = parse_protocol(text, "runs.toml")
    lens = Prescription(-1.0, -0.75, 20.0)

    def line(i, read):
        return Trial(i, 0.1, lens, "CDHKN", read == "11111", line_correct=read)

    trials = [line(i, "11111") for i in range(8)] + [line(8 + i, "00000") for i in range(4)]
    engine = build_optics_engine(protocol, START, 0)
    before = engine.lapsed_probability(trials[:8])
    after = engine.lapsed_probability(trials)
    assert before < 0.05 and after > ATTENTION_WARNING, (before, after)
    assert attention_text(before) == ""
    assert attention_text(after).startswith("The last answers look random (")
    assert "re-instruct the patient" in attention_text(after)
    assert engine.lapsed_probability([*trials, line(12, "11111")]) < 0.05
    default = build_optics_engine(load_protocol("clinical-sloan-lines-two-formulas"), START, 0)
    assert default.lapsed_probability(trials) is None and attention_text(None) == ""
    assert engine.lapsed_probability([]) is None
