"""``[comparisons] lens_change_weight`` (visiontune.refraction.mixed_rules): the choice charges a change
of lens ``w × lens_change_seconds``, the patient's time counts it once. A session with ``(c, w)`` asks
what a session charging ``w c`` at weight 1 asks, question for question, and its patient time is the
other's less ``(w - 1) c`` a change; the charge itself; the setting and its errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction.lenses import changes_along, lens_changes
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.mixed_rules import MixedSettings, _changes_priced
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint

DEFAULT = load_protocol("clinical-sloan-lines-two-formulas")
WEIGHTED = load_protocol(
    Path(__file__).resolve().parents[2] / "docs/results/protocols/clinical-sloan-lines-two-formulas-weight5.toml"
)


def _with(protocol, seconds: float, weight: float):
    comparisons = dataclasses.replace(protocol.comparisons, lens_change_seconds=seconds, lens_change_weight=weight)
    return dataclasses.replace(protocol, comparisons=comparisons)


def _session(protocol, answers: int = 14):
    patient = SimulatedPatient(Prescription(-1.75, -0.75, 20.0), n_alternatives=10, lapse=0.02, seed=4, age_years=50)
    start = StartingPoint(Prescription(-1.25, -0.5, 30.0), "autorefraction", 50)
    refraction = Refraction(MemoryLog(), protocol, seed=2, start=start, simulated=True)
    refraction.run(SimulatedPresenter(patient), max_steps=answers)
    return refraction


def test_the_default_charges_a_change_its_seconds_and_the_measured_variant_five_times_them():
    assert (DEFAULT.comparisons.lens_change_seconds, DEFAULT.comparisons.lens_change_weight) == (4.0, 1.0)
    assert (WEIGHTED.comparisons.lens_change_weight, WEIGHTED.comparisons.change_price_seconds) == (5.0, 20.0)
    assert dataclasses.replace(WEIGHTED.comparisons, lens_change_weight=1.0) == DEFAULT.comparisons
    assert MixedSettings().lens_change_weight == 1.0


@pytest.mark.parametrize("weight", [0.5, 3.0])
def test_a_question_is_charged_weight_times_the_seconds_of_its_changes(weight):
    settings = MixedSettings(lens_change_seconds=4.0, lens_change_weight=weight)
    here, there = Prescription(-1.0, -0.5, 90.0), Prescription(-0.75, -0.5, 90.0)
    assert _changes_priced(settings, [there], here) == pytest.approx(weight * 4.0 * changes_along([there], here))
    assert _changes_priced(settings, [here], here) == 0.0
    assert _changes_priced(settings, [there, here], here) == pytest.approx(weight * 4.0 * 2)


def test_a_session_charging_w_c_asks_what_one_charging_it_at_weight_one_asks_and_counts_c():
    """``(c, w) = (4 s, 5)`` against ``(20 s, 1)``: the same trials, lens for lens and size for size;
    the patient's time of the first is the second's less 16 s a change of lens."""
    weighted, plain = _session(_with(DEFAULT, 4.0, 5.0)), _session(_with(DEFAULT, 20.0, 1.0))
    a, b = weighted.trials(), plain.trials()
    assert [(t.s_logmar, t.lens, t.lens2) for t in a] == [(t.s_logmar, t.lens, t.lens2) for t in b]
    changes = lens_changes(a)
    assert changes > 1
    assert weighted.patient_seconds() == pytest.approx(plain.patient_seconds() - 16.0 * changes)


def test_the_weight_changes_the_questions():
    """At weight 1 the same session asks other questions than at weight 5 (the charge is read)."""
    one, five = _session(_with(DEFAULT, 4.0, 1.0)), _session(_with(DEFAULT, 4.0, 5.0))
    assert [(t.s_logmar, t.lens, t.lens2) for t in one.trials()] != [
        (t.s_logmar, t.lens, t.lens2) for t in five.trials()
    ]


def test_the_setting_is_read():
    text = WEIGHTED.source_text.replace("lens_change_weight = 5.0", "lens_change_weight = 2.5")
    assert parse_protocol(text, "w.toml").comparisons.lens_change_weight == 2.5
    text = WEIGHTED.source_text.replace("lens_change_weight = 5.0", "")
    assert parse_protocol(text, "w.toml").comparisons.lens_change_weight == 1.0


@pytest.mark.parametrize("value", ["0", "25", '"five"', "nan"])
def test_a_bad_setting_is_refused_naming_it(value):
    text = WEIGHTED.source_text.replace("lens_change_weight = 5.0", f"lens_change_weight = {value}")
    with pytest.raises(
        ProtocolError, match=r"bad\.toml: comparisons\.lens_change_weight: expected a number in \[0\.1, 20\]"
    ):
        parse_protocol(text, "bad.toml")
    with pytest.raises(InvalidInputError, match="lens_change_weight"):
        MixedSettings(lens_change_weight=0.0)
