"""Chart lines (visiontune.refraction.chart_line and their place in the mixed rule, the loop and
the protocol) against independent oracles: the line's likelihood is its letters' at the crowded
size, its expected variance reduction over the n + 1 counts is the one over all 2^n right/wrong
sequences and a Monte Carlo estimate of it, the simulated patient reads each letter as its own
psychometric function says, and a session with lines replays from its log bit for bit."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction.chart_line import (
    ChartLineAnswer,
    ChartLineSettings,
    line_count_probabilities,
    line_outcome_probabilities,
)
from visiontune.refraction.loop import LineReply, MemoryLog, PendingLine, Refraction, SimulatedPresenter, is_line
from visiontune.refraction.mixed_rules import best_line, expected_posterior_variance
from visiontune.refraction.optics_model import LetterAnswer, OpticsModelSpec, ParticlePosterior, probability_correct
from visiontune.refraction.protocol import list_protocols, load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial

LINES = "docs/results/protocols/clinical-sloan-lines.toml"
SPEC = OpticsModelSpec(n_alternatives=10, lapse=0.04, n_particles=500)
START = StartingPoint(Prescription(-1.0, -0.75, 20.0), "autorefraction", 45)


def _particles(n=400, seed=0):
    return ParticlePosterior(dataclasses.replace(SPEC, n_particles=n), START, seed).theta


def test_a_line_is_its_letters_at_the_crowded_size():
    theta = _particles()
    lens = (-0.5, 0.1, -0.2)
    correct = (True, False, True, True, False)
    line = ChartLineAnswer(0.2, lens, correct, crowding_logmar=0.1)
    letters = sum(LetterAnswer(0.1, lens, c).log_likelihood(theta, SPEC) for c in correct)
    np.testing.assert_allclose(line.log_likelihood(theta, SPEC), letters, rtol=1e-12)
    other = ChartLineAnswer(0.0, (0.0, 0.0, 0.0), (False, False, True), 0.1)
    np.testing.assert_allclose(
        ChartLineAnswer.batch_log_likelihood([line, other], theta, SPEC),
        line.log_likelihood(theta, SPEC) + other.log_likelihood(theta, SPEC),
        rtol=1e-12,
    )


def test_the_count_distribution_is_binomial_and_matches_simulation():
    p = np.array([0.1, 0.5, 0.93])
    probs = line_outcome_probabilities(p, 5)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-12)
    draws = (np.random.default_rng(3).random((200_000, 3, 5)) < p[None, :, None]).sum(axis=-1)
    for j in range(3):
        freq = np.bincount(draws[:, j], minlength=6) / len(draws)
        np.testing.assert_allclose(freq, probs[j], atol=4e-3)


def _evr_over_sequences(pv, p, n):
    """E_y[tr Cov(P* | y)] over all 2^n right/wrong sequences of a line (no sufficiency used)."""
    out = 0.0
    for seq in itertools.product((0, 1), repeat=n):
        k = sum(seq)
        like = p**k * (1.0 - p) ** (n - k)
        mass = like.mean()
        w = like / like.sum()
        mean = w @ pv
        out += mass * float(np.sum(w @ (pv - mean) ** 2))
    return out


def test_the_expected_variance_of_a_line_over_counts_is_the_one_over_sequences_and_monte_carlo():
    theta = _particles(600, seed=4)
    pv = theta[:, :3]
    lens = np.array([[-1.0, 0.3, 0.0]])
    p = probability_correct(theta, np.array([0.15]), lens, SPEC)[:, 0]
    exact = expected_posterior_variance(pv, line_outcome_probabilities(p, 5)[:, None, :])[0]
    assert exact == pytest.approx(_evr_over_sequences(pv, p, 5), rel=1e-10)
    # Monte Carlo: draw the truth from the particles, the line from the truth, the posterior from the line.
    rng = np.random.default_rng(5)
    m = 4000
    truth = rng.integers(len(pv), size=m)
    counts = (rng.random((m, 5)) < p[truth, None]).sum(axis=1)
    post_var = []
    for k in range(6):
        like = p**k * (1.0 - p) ** (5 - k)
        w = like / like.sum()
        post_var.append(float(np.sum(w @ (pv - w @ pv) ** 2)))
    mc = np.array(post_var)[counts]
    assert exact == pytest.approx(mc.mean(), abs=4 * mc.std() / np.sqrt(m))
    assert exact < float(np.sum(pv.var(axis=0)))  # a line teaches something


def test_best_line_is_the_argmax_over_lenses_and_sizes_per_second():
    theta = _particles(300, seed=6)
    pv = theta[:, :3]
    lenses = [Prescription(-1.0, -0.75, 20.0), Prescription(-0.5, -0.5, 20.0), Prescription(-1.0, -0.75, 20.0)]
    s_grid = np.round(np.arange(-0.2, 0.81, 0.05), 2)
    lines = ChartLineSettings(5, 6.0, 0.05)
    settings = load_protocol(LINES).comparisons
    settings = dataclasses.replace(settings, criterion="evr", sensitivity_to_stop=None, lens_change_seconds=0.0)
    line, value = best_line(theta, pv, lenses, s_grid, lines, settings, SPEC, None)
    now = float(np.sum(pv.var(axis=0)))
    values = {}
    for lens in lenses[:2]:
        for s in s_grid:
            p = probability_correct(theta, np.array([s - 0.05]), lens.power_vector_array()[None, :], SPEC)[:, 0]
            values[(lens, float(s))] = (now - _evr_over_sequences(pv, p, 5)) / 6.0
    best = max(values, key=values.get)
    assert (line.lens, line.s_logmar) == best and line.n_letters == 5
    assert value == pytest.approx(values[best], rel=1e-9)
    # twice the seconds, half the value; the lens in place priced only when it changes
    assert best_line(theta, pv, lenses, s_grid, ChartLineSettings(5, 12.0, 0.05), settings, SPEC, None)[
        1
    ] == pytest.approx(value / 2, rel=1e-12)


def test_the_simulated_patient_reads_each_letter_by_its_own_psychometric_function():
    patient = SimulatedPatient(
        Prescription(-1.0, -0.5, 90.0),
        slope=5.0,
        n_alternatives=10,
        lapse=0.03,
        seed=11,
        letter_offsets_logmar={c: 0.02 * i for i, c in enumerate("CDHKNORSVZ")},
    )
    lens = Prescription(-0.5, -0.5, 90.0)
    letters = ("C", "H", "O", "S", "Z")
    reads = np.array([patient.answer_line_trial(k, 0.25, lens, letters, crowding_logmar=0.1) for k in range(20_000)])
    expected = [patient.probability_correct(0.15, lens, c) for c in letters]
    np.testing.assert_allclose(reads.mean(axis=0), expected, atol=0.012)
    assert patient.answer_line_trial(7, 0.25, lens, letters, 0.1) == tuple(reads[7])  # keyed by the trial
    with pytest.raises(InvalidInputError, match="crowding_logmar"):
        patient.answer_line_trial(0, 0.25, lens, letters, crowding_logmar=-0.1)


def test_the_protocol_table_is_checked_and_off_in_every_shipped_protocol():
    text = load_protocol(LINES).source_text
    lines = load_protocol(LINES).chart_line
    assert lines == ChartLineSettings(5, 6.0, 0.0)
    for name in list_protocols():  # lines only in the shipped line protocols (the default among them)
        shipped_lines = ("clinical-sloan-held", "clinical-sloan-lines-filed", "clinical-sloan-lines-two-formulas")
        expected = lines if name in shipped_lines else None
        assert load_protocol(name).chart_line == expected
    for good, bad, where in (
        ("letters_per_line = 5", "letters_per_line = 11", "chart_line.letters_per_line"),
        ("crowding_logmar = 0.0", "crowding_logmar = 0.8", "chart_line.crowding_logmar"),
        ("line_seconds = 6.0", "line_seconds = 0", "chart_line.line_seconds"),
        ("letters_per_line = 5", "words = 3", "chart_line.words"),
    ):
        with pytest.raises(ProtocolError, match=where):
            parse_protocol(text.replace(good, bad), "lines.toml")
    with pytest.raises(ProtocolError, match="letters.set"):
        parse_protocol(
            text.replace('set = "sloan"', 'set = "tumbling_e"')
            .replace("n_alternatives = 10", "n_alternatives = 4")
            .replace("letters_per_line = 5", "letters_per_line = 4"),
            "e.toml",
        )
    no_comparisons = text[: text.index("[comparisons]")] + text[text.index("[chart_line]") :]
    with pytest.raises(ProtocolError, match=r"chart_line.*\[comparisons\]"):
        parse_protocol(no_comparisons, "lines.toml")
    assert parse_protocol(text.replace("crowding_logmar = 0.0", "enabled = false"), "off.toml").chart_line is None


def _session(log, protocol, seed=5):
    return Refraction(log, protocol, seed=seed, start=START, simulated=True)


def test_a_session_asks_lines_and_rebuilt_from_its_log_asks_the_same_next_question():
    protocol = load_protocol(LINES)
    patient = SimulatedPatient(Prescription(-1.25, -1.0, 30.0), n_alternatives=10, lapse=0.02, seed=9)
    log = MemoryLog()
    session = _session(log, protocol)
    session.run(SimulatedPresenter(patient), max_steps=30)
    lines = [t for t in log.trials() if is_line(t)]
    assert lines, "no chart line was asked"
    for t in lines:
        assert len(t.letter_shown) == 5 == len(set(t.letter_shown)) and set(t.line_correct) <= {"0", "1"}
        assert t.correct == (2 * t.line_correct.count("1") > 5)
    rebuilt = _session(log, protocol)
    assert rebuilt.next_query() == session.next_query()
    np.testing.assert_array_equal(
        rebuilt.engine.posterior(log.trials()).theta, session.engine.posterior(log.trials()).theta
    )
    seconds = sum(6.0 if is_line(t) else 5.0 if t.comparison else 3.0 for t in log.trials())
    assert session.patient_seconds() >= seconds  # lens changes at 4 s on top
    result = session.finish("clinician")
    assert result["lines_used"] == len(lines) and result["line_letters_used"] == 5 * len(lines)


def test_a_line_answer_must_fit_the_pending_line():
    protocol = load_protocol(LINES)
    log = MemoryLog()
    session = _session(log, protocol)
    line = PendingLine(0, 0.2, Prescription(-1.0, -0.75, 20.0), tuple("CDHKN"), 0.0, 1.0)
    session._pending = line
    with pytest.raises(InvalidInputError, match="expected 5 answers"):
        session.record(LineReply((True, False)))
    assert log.trials(include_void=True) == []
    trial = session.record(LineReply.from_count(3, 5))
    assert (trial.letter_shown, trial.line_correct, trial.correct) == ("CDHKN", "11100", True)
    with pytest.raises(InvalidInputError, match="line_correct"):
        log.record(Trial(1, 0.1, Prescription(0, 0, 180), "CDH", False, line_correct="1020"))


def test_without_the_table_the_shipped_default_asks_what_it_asked():
    """The shipped default and the same text with [chart_line] turned off ask the same questions:
    the line code is off their path (the stored-run replays pin them further)."""
    shipped = load_protocol("clinical-sloan-compare")
    text = load_protocol(LINES).source_text.replace("crowding_logmar = 0.0", "enabled = false")
    off = parse_protocol(text, "off.toml")
    patient = SimulatedPatient(Prescription(-1.25, -1.0, 30.0), n_alternatives=10, lapse=0.02, seed=9)
    a, b = MemoryLog(), MemoryLog()
    _session(a, shipped).run(SimulatedPresenter(patient), max_steps=12)
    _session(b, off).run(SimulatedPresenter(patient), max_steps=12)
    key = [(t.s_logmar, t.lens, t.lens2, t.comparison, t.letter_shown, t.correct) for t in a.trials()]
    assert key == [(t.s_logmar, t.lens, t.lens2, t.comparison, t.letter_shown, t.correct) for t in b.trials()]


def test_a_shared_threshold_averages_the_line_over_its_shift():
    """σ > 0: the likelihood and the count probabilities are the binomial's averaged over a normal
    shift of the line's threshold (checked by a fine grid over the shift and by simulation)."""
    theta = _particles(200, seed=8)
    lens = (-0.75, 0.2, 0.0)
    line = ChartLineAnswer(0.1, lens, (True, True, False, True, False), 0.05, line_sd_logmar=0.1)
    delta = np.linspace(-0.6, 0.6, 4001)
    dens = np.exp(-0.5 * (delta / 0.1) ** 2)
    dens /= dens.sum()
    p = probability_correct(theta, 0.05 - delta, np.repeat([lens], len(delta), axis=0), SPEC)
    grid = np.log((p**3 * (1 - p) ** 2) @ dens)
    np.testing.assert_allclose(line.log_likelihood(theta, SPEC), grid, rtol=2e-3)  # 15-node quadrature
    settings = ChartLineSettings(5, 6.0, 0.05, 0.1)
    probs = line_count_probabilities(theta[:3], np.array([0.1]), np.array([lens]), 5, settings, SPEC)[:, 0]
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-12)
    rng = np.random.default_rng(9)
    shift = rng.normal(0, 0.1, 100_000)
    p_sim = probability_correct(theta[:1], 0.05 - shift, np.repeat([lens], len(shift), axis=0), SPEC)[0]
    counts = (rng.random((len(shift), 5)) < p_sim[:, None]).sum(axis=1)
    np.testing.assert_allclose(np.bincount(counts, minlength=6) / len(counts), probs[0], atol=5e-3)
    k = np.arange(6)
    mean = probs @ k / 5
    variance = probs @ k**2 - (5 * mean) ** 2
    assert np.all(variance > 5 * mean * (1 - mean))  # over-dispersed against the binomial of the same mean
