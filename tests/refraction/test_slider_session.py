"""Slider (knob) questions in the one trial loop: the protocol's ``[sliders]`` table, the mixed
engine weighing a slider against a letter and a comparison, the memory log carrying the path
and the choice so the posterior is rebuilt from the log bit for bit, and the protocols without
sliders asking exactly what they asked before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from tests.simulated_sessions import answer_until
from visiontune.cli import main
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.loop import (
    Answer,
    ComparisonReply,
    MemoryLog,
    PendingComparison,
    PendingQuery,
    PendingSlider,
    Refraction,
    SimulatedPresenter,
    SliderReply,
    is_slider,
    simulated_slider,
)
from visiontune.refraction.mixed_engine import MixedOpticsEngine
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.slider import KNOBS, SliderModel, SliderSettings
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial

HERE = Path(__file__).resolve().parent
SLIDER_PROTOCOL = HERE.parent / "protocols" / "sloan-compare-sliders.toml"
BEFORE = HERE / "queries_before_sliders.json"
ROOT = HERE.parent.parent


def _letters_and_sliders(table: str = "[sliders]\n"):
    text = (ROOT / "protocols" / "clinical-sloan.toml").read_text() + "\n" + table
    return parse_protocol(text, "clinical-sloan + [sliders]")


def _session(protocol, seed: int):
    case = simulated_case(seed=seed, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    return refraction, SimulatedPresenter(case.patient(protocol.n_alternatives)), start, case


def _until_slider(refraction, presenter) -> PendingSlider:
    return answer_until(refraction, presenter, PendingSlider)


# ------------------------------------------------------------------------------ the protocol
def test_the_sliders_table_parses_with_its_defaults():
    p = _letters_and_sliders()
    assert p.sliders == SliderSettings(8.0, SliderModel(), KNOBS) and p.comparisons is None
    table = '[sliders]\nslider_seconds = 6\nnoise_logmar = 0.05\nlapse = 0.1\nknobs = ["axis", "sphere"]\n'
    p = _letters_and_sliders(table)
    assert p.sliders == SliderSettings(6.0, SliderModel(0.05, 0.1), ("sphere", "axis"))
    assert _letters_and_sliders("[sliders]\nenabled = false\nslider_seconds = 9\n").sliders is None
    assert load_protocol(SLIDER_PROTOCOL).sliders == SliderSettings()
    for name in ("clinical-sloan", "clinical-sloan-compare"):
        assert load_protocol(name).sliders is None  # no shipped protocol turns sliders on


@pytest.mark.parametrize(
    "table, message",
    [
        ("enabled = 1", "sliders.enabled: expected true or false, found 1"),
        ("slider_seconds = 0", r"sliders.slider_seconds: expected a number in \[0.1, 600\], found 0"),
        ('slider_seconds = "8"', r'sliders.slider_seconds: expected a number in \[0.1, 600\], found "8"'),
        ("noise_logmar = 0.0", r"sliders.noise_logmar: expected a number in \[0.0001, 1\], found 0.0"),
        ("lapse = 1.0", r"sliders.lapse: expected a number in \[0, 0.99\], found 1.0"),
        ("noise_sigma = -0.1", r"sliders.noise_sigma: expected a number in \[0, 3\], found -0.1"),
        ("noise_sigma = 3.5", r"sliders.noise_sigma: expected a number in \[0, 3\], found 3.5"),
        ('noise_sigma = "0.5"', r'sliders.noise_sigma: expected a number in \[0, 3\], found "0.5"'),
        ("noise_sigma = true", r"sliders.noise_sigma: expected a number in \[0, 3\], found true"),
        ('knobs = ["sphere", "power"]', r'sliders.knobs: expected a non-empty list of "sphere", "cylinder", "axis"'),
        ("knobs = []", "sliders.knobs: expected a non-empty list"),
        ('knobs = ["axis", "axis"]', "each at most once, found"),
        ('knobs = "sphere"', r'sliders.knobs: expected .* found "sphere"'),
        (
            "half_range = 1.0",
            r"sliders.half_range: unknown key \(allowed here: enabled, knobs, lapse, noise_logmar, noise_sigma",
        ),
    ],
)
def test_a_bad_sliders_table_is_refused_naming_the_key(table, message):
    with pytest.raises(ProtocolError, match=message):
        _letters_and_sliders("[sliders]\n" + table + "\n")


def test_sliders_need_the_optics_model():
    text = (ROOT / "protocols" / "paper-ucb-ald.toml").read_text() + "\n[sliders]\n"
    with pytest.raises(ProtocolError, match=r"sliders: expected no such table for the GP model"):
        parse_protocol(text, "gp + sliders")
    with pytest.raises(ProtocolError, match="sliders: expected a table"):
        parse_protocol("sliders = 1\n" + (ROOT / "protocols" / "clinical-sloan.toml").read_text(), "x")


@pytest.mark.parametrize("knobs", [(), ("power",), ("axis", "axis"), "sphere"])
def test_slider_settings_refuse_bad_knobs(knobs):
    with pytest.raises(InvalidInputError, match="knobs: expected some of sphere, cylinder, axis"):
        SliderSettings(knobs=knobs)


# ------------------------------------------------------------------------------ the session
def _same_query(asked: list, expected: list) -> bool:
    """The same question: kind, index, lenses and letter exact; the letter size and the expected
    information (float sums whose last bits follow the CPU's kernels) to 1e-9."""
    exact = [x for i, x in enumerate(asked) if i not in (2, len(asked) - 1)]
    wanted = [x for i, x in enumerate(expected) if i not in (2, len(expected) - 1)]
    return (
        exact == wanted
        and asked[2] == pytest.approx(expected[2], abs=1e-9)
        and asked[-1] == pytest.approx(expected[-1], rel=1e-9)
    )


@pytest.mark.replay
def test_protocols_without_sliders_ask_exactly_what_they_asked_before():
    """The queries of clinical-sloan and clinical-sloan-compare (10 answers, two patients each)
    recorded before sliders existed: the same lenses, letters and answers, the sizes and the
    information they were expected to bring to 1e-9 (their last bits are the CPU's); the latter
    as it then was (docs/results/protocols/clinical-sloan-compare-phoropter.toml)."""
    before = json.loads(BEFORE.read_text())
    for key, expected in before.items():
        name, seed = key.split("/")
        # clinical-sloan-compare as it was then: lens changes free (the former default, kept)
        former = ROOT / "docs" / "results" / "protocols" / "clinical-sloan-compare-phoropter.toml"
        protocol = load_protocol(str(former) if name == "clinical-sloan-compare" else name)
        if protocol.comparisons is not None:  # recorded when it valued every question by "evr"
            protocol = dataclasses.replace(
                protocol, comparisons=dataclasses.replace(protocol.comparisons, criterion="evr")
            )
        refraction, presenter, _, _ = _session(protocol, int(seed))
        asked = []
        for _ in range(len(expected)):
            q = refraction.next_query()
            if isinstance(q, PendingComparison):
                rx1, rx2 = ([x.sphere_d, x.cylinder_d, x.axis_deg] for x in (q.lens1, q.lens2))
                asked.append(["comparison", q.index, q.s_logmar, rx1, rx2, q.letter, q.information_bits])
            else:
                assert isinstance(q, PendingQuery)
                rx = [q.lens.sphere_d, q.lens.cylinder_d, q.lens.axis_deg]
                asked.append(["letter", q.index, q.s_logmar, rx, q.letter, q.information_bits])
            refraction.record(presenter.present(q))
        assert len(asked) == len(expected) and all(map(_same_query, asked, expected)), key


@pytest.mark.parametrize("which", ["compare-sliders", "letters-sliders"])
def test_a_session_with_sliders_runs_to_its_end_and_asks_sliders(which):
    protocol = load_protocol(SLIDER_PROTOCOL) if which == "compare-sliders" else _letters_and_sliders()
    refraction, presenter, _, _ = _session(protocol, 2)
    result = refraction.run(presenter)
    valid = refraction.trials()
    sliders = [t for t in valid if is_slider(t)]
    assert result["stopped_by"] in ("precision", "information", "budget") and refraction.state == "finished"
    assert result["sliders_used"] == len(sliders) >= 1
    assert ("comparisons_used" in result) is (which == "compare-sliders")
    for t in sliders:
        assert t.slider_knob in KNOBS and t.lens == t.slider_lenses[t.slider_choice] and t.comparison is None
        assert all(x.cylinder_d <= 0.0 for x in t.slider_lenses)  # the clinic's minus-cylinder form
    settings = protocol.comparisons.letter_seconds if protocol.comparisons else 3.0
    expected = sum(8.0 if is_slider(t) else 5.0 if t.comparison else settings for t in valid)
    assert refraction.patient_seconds() == pytest.approx(expected)


def test_a_pending_slider_is_a_knob_path_through_the_estimate():
    refraction, presenter, _, _ = _session(_letters_and_sliders(), 2)
    q = _until_slider(refraction, presenter)
    assert q.knob in KNOBS and len(q.lenses) >= 2 and 0 <= q.start < len(q.lenses)
    assert q.start_lens == q.lenses[q.start] and isinstance(q.information_bits, float)
    assert q.letter in refraction.letters
    changes = {
        name
        for name in ("sphere_d", "cylinder_d", "axis_deg")
        if len({getattr(x, name) for x in q.lenses if x.cylinder_d != 0.0 or name != "axis_deg"}) > 1
    }
    assert len(changes) == 1  # one knob turns


def test_the_kind_of_reply_must_match_the_pending_question():
    refraction, presenter, _, _ = _session(_letters_and_sliders(), 2)
    q = refraction.next_query()
    assert isinstance(q, PendingQuery)
    with pytest.raises(InvalidInputError, match="no slider is pending; nothing was recorded"):
        refraction.record(SliderReply(0))
    q = _until_slider(refraction, presenter)
    n = len(refraction.trials(include_void=True))
    for wrong, message in (
        (Answer(correct=True), "a slider is pending"),
        (ComparisonReply("1"), "a slider is pending"),
        (SliderReply(len(q.lenses)), r"choice: expected an index in \[0, "),
    ):
        with pytest.raises(InvalidInputError, match=message):
            refraction.record(wrong)
    assert len(refraction.trials(include_void=True)) == n and refraction.next_query() == q
    for bad in (-1, True, 1.0, "2"):
        with pytest.raises(InvalidInputError, match="choice: expected the index of a lens on the path"):
            SliderReply(bad)


def test_the_memory_log_refuses_half_a_slider():
    log, rx = MemoryLog(), Prescription(-1.0, 0.0, 180.0)
    with pytest.raises(InvalidInputError, match="slider: expected the knob, its lenses and the choice together"):
        log.record(Trial(0, 0.1, rx, "H", True, slider_knob="sphere", slider_choice=0))
    with pytest.raises(InvalidInputError, match="slider_choice: expected an index in"):
        log.record(Trial(0, 0.1, rx, "H", True, slider_knob="sphere", slider_lenses=(rx, rx), slider_choice=2))
    with pytest.raises(InvalidInputError, match="a slider or a comparison, not both"):
        log.record(
            Trial(
                0,
                0.1,
                rx,
                "H",
                True,
                lens2=rx,
                comparison="1",
                slider_knob="sphere",
                slider_lenses=(rx, rx),
                slider_choice=0,
            )
        )
    assert log.trials() == []


def _particles(engine, trials):
    post = engine.posterior(trials)
    return post.theta.copy(), post.weights.copy()


def test_undo_and_a_rebuild_from_the_log_give_the_same_particles_bit_for_bit():
    protocol = load_protocol(SLIDER_PROTOCOL)
    refraction, presenter, start, case = _session(protocol, 3)
    _until_slider(refraction, presenter)
    refraction.record(presenter.present(refraction.next_query()))  # the slider
    for _ in range(3):
        refraction.record(presenter.present(refraction.next_query()))
    trials = refraction.trials()
    assert any(is_slider(t) for t in trials)
    fresh = MixedOpticsEngine(protocol, start, case.seed, protocol.comparisons, protocol.sliders)
    theta, w = _particles(refraction.engine, trials)
    theta2, w2 = _particles(fresh, trials)
    assert np.array_equal(theta, theta2) and np.array_equal(w, w2)
    # a resumed session over the same log proposes the same next question
    resumed = Refraction(refraction.log, protocol, seed=case.seed, start=start, simulated=True)
    assert resumed.next_query() == refraction.next_query()
    # undo the last slider: the posterior is the one of the log without it
    q = _until_slider(refraction, presenter)
    before = _particles(refraction.engine, refraction.trials())
    refraction.record(presenter.present(q))
    assert is_slider(refraction.trials()[-1])
    undone = refraction.undo()
    assert undone.void and is_slider(undone)
    after = _particles(refraction.engine, refraction.trials())
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert refraction.next_query().index == q.index + 1  # void trials are counted: the index moves on


def test_the_simulated_slider_answer_is_keyed_by_the_trial_index():
    refraction, presenter, _, case = _session(_letters_and_sliders(), 2)
    q = _until_slider(refraction, presenter)
    patient = case.patient(10)
    answers = {simulated_slider(patient, q) for _ in range(3)}
    assert len(answers) == 1 and 0 <= answers.pop() < len(q.lenses)
    many = {simulated_slider(patient, dataclasses.replace(q, index=k)) for k in range(40)}
    assert len(many) > 1  # a fresh draw per trial index


def test_visiontune_simulate_runs_a_protocol_with_sliders(capsys):
    assert main(["simulate", "--protocol", str(SLIDER_PROTOCOL), "--seed", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED session (test-sloan-compare-sliders" in out and " sliders)" in out
