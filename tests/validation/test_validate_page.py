"""The validation page's header says what the protocol's model of a comparison infers and what its stop waits for."""

import dataclasses
from pathlib import Path

from visiontune.refraction.protocol import load_protocol
from visiontune.validation.validate_cli import _model_text, _stop_note

FILED = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-filed.toml"


def test_the_shipped_stop_is_the_region_and_the_sensitivity():
    protocol = load_protocol("clinical-sloan-compare")
    (text, _) = _stop_note(protocol)
    assert "95% credible region lies within ±0.25 D on M and ±0.25 D on J" in text
    assert "at most 0.5 of its prior's" in text
    assert "after at least 20 answers" in text
    assert "filed_within_probability" not in text


def test_the_stop_on_the_lens_to_file_is_named_with_its_level():
    (text, _) = _stop_note(load_protocol(FILED))
    assert "lies within 0.25 D of the correction is at least 0.85" in text
    assert "credible region" not in text and "sensitivity_to_stop" not in text


def test_a_gp_protocol_has_no_optics_stop_to_describe():
    assert _stop_note(load_protocol("paper-ucb-ald")) == []


def test_an_inferred_band_and_bias_are_described_not_a_fixed_band():
    model = load_protocol("clinical-sloan-compare").comparisons.comparison
    assert '"equal" band 0.5,' in _model_text(model)
    inferred = dataclasses.replace(model, indifference_sigma=0.7, minus_bias_sigma=0.3, minus_bias_prior="half-normal")
    text = _model_text(inferred)
    assert '"equal" band inferred per patient (lognormal prior, median 0.5, σ 0.7)' in text
    assert '"equal" band 0.5,' not in text
    assert "more minus lens inferred (half-normal prior, σ 0.3)" in text
    two = dataclasses.replace(
        model, indifference_sigma=0.35, indifference_second_median=0.19, indifference_second_weight=0.25
    )
    assert (
        "a prior of two kinds of patient: lognormals at medians 0.5 and 0.19, σ 0.35 each, 75% and 25% likely"
        in _model_text(two)
    )


def test_the_prior_of_two_formulas_is_described_as_such():
    model = load_protocol(FILED.with_name("clinical-sloan-lines-two-formulas.toml")).comparisons.comparison
    text = _model_text(model)
    assert "a prior of two formulas: lognormals at medians 1 and 15.5, σ 0.5 each, equally likely" in text
    assert "lognormal prior, median" not in text
    assert "lognormal prior, median 4, σ 1" in _model_text(load_protocol(FILED).comparisons.comparison)


def test_the_page_names_the_command_as_given_or_the_bare_subcommand(monkeypatch):
    from visiontune.validation.provenance import command_line

    monkeypatch.setattr("sys.argv", ["visiontune", "validate", "--cases", "3", "--seed", "2"])
    assert command_line("validate") == "visiontune validate --cases 3 --seed 2"
    monkeypatch.setattr("sys.argv", ["pytest", "tests/validation"])
    assert command_line("validate") == "visiontune validate"
