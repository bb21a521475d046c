"""Lens changes priced (``[comparisons] lens_change_seconds``, a trial frame): each question is
valued per second of its duration plus its changes of lens from the lens in place."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tests.stored_runs import assert_holds
from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import changes_along, lens_changes, lenses_shown
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter, is_comparison, is_slider
from visiontune.refraction.mixed_rules import MixedSettings, _in_place_first, _with_lens_in_place, propose_mixed
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.validation.validate_cli import _comparisons_note

PROTOCOLS = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols"
SHIPPED = load_protocol("clinical-sloan-compare")
#: The former default, each change of lens free (a phoropter).
FREE = load_protocol(str(PROTOCOLS / "clinical-sloan-compare-phoropter.toml"))
TRIAL_FRAME = PROTOCOLS / "clinical-sloan-compare-trial-frame.toml"
A, A_PLUS, B = Prescription(-1.0, -0.5, 90.0), Prescription(-1.5, 0.5, 180.0), Prescription(-0.75, -0.5, 90.0)


def _priced(seconds: float):
    text = FREE.source_text.replace(
        "comparison_seconds = 5.0", f"comparison_seconds = 5.0\nlens_change_seconds = {seconds}"
    )
    return parse_protocol(text, f"clinical-sloan-compare, lens changes at {seconds} s")


def test_the_setting_is_read_and_defaults_to_a_phoropter():
    assert FREE.comparisons.lens_change_seconds == 0.0 == MixedSettings().lens_change_seconds
    assert SHIPPED.comparisons.lens_change_seconds == 4.0
    assert _priced(4.5).comparisons.lens_change_seconds == 4.5
    assert dataclasses.replace(_priced(4.5).comparisons, lens_change_seconds=0.0) == FREE.comparisons


def _same_but(variant, base, **fields) -> bool:
    """``variant`` with ``fields`` replaced is ``base``, its name, description and source aside."""
    return (
        dataclasses.replace(
            variant,
            **fields,
            name=base.name,
            description=base.description,
            source=base.source,
            source_text=base.source_text,
        )
        == base
    )


def test_the_measured_trial_frame_protocol_is_the_former_one_with_lens_changes_priced_and_the_shipped_one_waits():
    """The trial-frame variant: the former default with lens changes at 4 s; the shipped default: the
    trial-frame variant with the stop's over-minus wait."""
    variant = load_protocol(str(TRIAL_FRAME))
    assert variant.comparisons.lens_change_seconds == 4.0
    assert _same_but(variant, FREE, comparisons=dataclasses.replace(variant.comparisons, lens_change_seconds=0.0))
    assert SHIPPED.stopping.precision.over_minus_risk == 0.001 and variant.stopping.precision.over_minus_risk is None
    precision = dataclasses.replace(SHIPPED.stopping.precision, over_minus_risk=None)
    assert _same_but(SHIPPED, variant, stopping=dataclasses.replace(SHIPPED.stopping, precision=precision))


@pytest.mark.parametrize("value", ["-1.0", "601", '"4"', "nan", "true"])
def test_a_bad_lens_change_time_is_refused_naming_the_key(value):
    with pytest.raises(
        ProtocolError, match=r"comparisons.lens_change_seconds: expected a number in \[0, 600\], found "
    ):
        _priced(value)
    with pytest.raises(InvalidInputError, match="lens_change_seconds"):
        MixedSettings(lens_change_seconds=-1.0)


def test_changes_are_counted_from_the_lens_in_place():
    assert changes_along([A, B], None) == 2 and changes_along([A, B], A) == 1 and changes_along([A_PLUS, B], A) == 1
    assert changes_along([B, A, A], A) == 2 and changes_along([], A) == 0


def test_a_pair_holding_the_lens_in_place_shows_it_first():
    pv = Prescription.power_vector_array
    c = Prescription(-1.25, -0.5, 90.0)
    pairs = np.array([[pv(A), pv(B)], [pv(B), pv(A)], [pv(B), pv(c)]])
    ordered, changes = _in_place_first(pairs, A_PLUS)  # A in the other cylinder form
    assert np.array_equal(ordered, np.array([[pv(A), pv(B)], [pv(A), pv(B)], [pv(B), pv(c)]]))
    assert changes.tolist() == [1.0, 1.0, 2.0]
    ordered, changes = _in_place_first(pairs, None)
    assert np.array_equal(ordered, pairs) and changes.tolist() == [2.0, 2.0, 2.0]


def test_the_lens_in_place_is_paired_with_every_other_lens_once():
    pv = Prescription.power_vector_array
    c, d = Prescription(-1.25, -0.5, 90.0), Prescription(-1.0, -1.0, 90.0)
    pairs = np.array([[pv(B), pv(A)], [pv(B), pv(c)], [pv(d), pv(c)]])
    out = _with_lens_in_place(pairs, A_PLUS)
    assert np.array_equal(out[:3], pairs)  # the candidates first, as they were
    added = {tuple(np.round(p, 6).ravel()) for p in out[3:]}
    assert added == {tuple(np.round(np.stack([pv(A), pv(x)]), 6).ravel()) for x in (c, d)}  # (A, B) was held
    assert _with_lens_in_place(pairs, None) is pairs


def _run(protocol, seed: int):
    case = simulated_case(seed=seed, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
    return refraction


def _posterior_after(protocol, seed: int, answers: int):
    refraction = _run(
        dataclasses.replace(
            protocol, stopping=dataclasses.replace(protocol.stopping, max_trials=answers, min_trials=answers)
        ),
        seed,
    )
    trials = refraction.trials()
    last = lenses_shown(trials[-1])[-1]
    return refraction.engine, trials, Prescription(last.sphere_d, last.cylinder_d, last.axis_deg)


def _choice(engine, trials, in_place, price: float = 0.0, seed: int = 3):
    """The next question after ``trials`` with the session's settings (``"evr-stop"`` resolved)
    and lens changes at ``price`` s."""
    post = engine.posterior(trials)
    settings, units = engine.question_settings(trials)
    settings = dataclasses.replace(settings, lens_change_seconds=price)
    return propose_mixed(
        post,
        "evr",
        settings,
        steps=FREE.lenses,
        s_grid=engine.s_grid,
        radius=engine.radius(post),
        rng_letter=np.random.default_rng(seed),
        rng_comparison=np.random.default_rng(seed + 1),
        units=units,
        in_place=in_place,
    )


def test_priced_at_zero_the_lens_in_place_changes_nothing():
    engine, trials, in_place = _posterior_after(FREE, 5, 12)
    assert _choice(engine, trials, in_place) == _choice(engine, trials, None)


def test_each_question_is_valued_per_second_of_its_duration_and_its_lens_changes():
    """The values per second of the choice, recomputed from the unpriced choice: a comparison's
    value over 5 s, then over 5 s + c per change; the letter's likewise, or the letter through the
    lens in place when that is worth more; a high enough price asks the lens in place."""
    engine, trials, in_place = _posterior_after(FREE, 5, 12)
    free = _choice(engine, trials, in_place)
    for c in (0.5, 3.0):
        priced = _choice(engine, trials, in_place, c)
        letter_changes = changes_along([priced.letter.lens], in_place)
        if priced.letter == free.letter:
            assert priced.letter_value_per_s == pytest.approx(
                free.letter_value_per_s * 3.0 / (3.0 + c * letter_changes)
            )
        else:  # the letter through the lens in place, worth more than the rule's at its price
            assert priced.letter.lens == in_place and letter_changes == 0
            assert priced.letter_value_per_s > free.letter_value_per_s * 3.0 / (3.0 + c)
        changes = changes_along([priced.comparison.lens1, priced.comparison.lens2], in_place)
        assert priced.comparison_value_per_s >= free.comparison_value_per_s * 5.0 / (5.0 + 2.0 * c) - 1e-12
        assert priced.kind == ("comparison" if priced.comparison_value_per_s > priced.letter_value_per_s else "letter")
        assert changes in (1, 2)
    dear = _choice(engine, trials, in_place, 600.0)
    assert dear.kind == "letter" and dear.letter.lens == in_place


def test_a_session_with_lens_changes_priced_changes_lenses_less_and_counts_them_in_its_time():
    protocol = _priced(6.0)
    fewer = 0
    for seed in (1, 2, 3):
        free, priced = _run(FREE, seed), _run(protocol, seed)
        per_answer = [lens_changes(r.trials()) / len(r.trials()) for r in (free, priced)]
        fewer += per_answer[1] < per_answer[0]
        trials = priced.trials()
        answers = sum(8.0 if is_slider(t) else 5.0 if is_comparison(t) else 3.0 for t in trials)
        assert priced.patient_seconds() == pytest.approx(answers + 6.0 * lens_changes(trials))
        assert free.patient_seconds() == sum(5.0 if is_comparison(t) else 3.0 for t in free.trials())
    assert fewer == 3


def test_the_validation_page_says_when_lens_changes_are_priced():
    assert "each change of lens from the lens in place at 4 s" in _comparisons_note(load_protocol(str(TRIAL_FRAME)))[0]
    assert "change of lens" not in _comparisons_note(FREE)[0]
    assert "each change of lens from the lens in place at 4 s" in _comparisons_note(SHIPPED)[0]


@pytest.mark.replay
@pytest.mark.parametrize("population, case_id", [("adult-clinic", 0), ("young", 1)])
def test_the_stored_trial_frame_validation_holds_on_any_machine(population, case_id):
    """docs/results/clinical-validation-clinical-sloan-compare-trial-frame.md: the recorded
    answers give the stored lens changes and the patient's time with them exactly (and the rest
    tests/stored_runs.py's assert_holds checks)."""
    store = TRIAL_FRAME.parents[1] / "clinical-validation-clinical-sloan-compare-trial-frame.sqlite"
    stored = assert_holds(
        store, "clinical-sloan-compare-trial-frame-seed1", load_protocol(str(TRIAL_FRAME)), population, case_id
    )
    assert stored["lens_changes"] >= 1 and stored["patient_s"] > 3.0 * stored["answers"]
