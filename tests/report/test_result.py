"""The result schema v1: what the engine writes is accepted, anything else is a clear error."""

from __future__ import annotations

import copy

import pytest
from report_helpers import make_result

from visiontune.errors import StoreError
from visiontune.refraction.result import parse_result


def test_valid_result_parses_to_typed_values():
    r = parse_result(make_result(trials_used=20))
    assert r.rounded.as_dict() == {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0}
    assert r.estimate.sphere_d == -1.3125
    assert r.sphere_interval_d == (-1.75, -0.875)
    assert r.interval_level == 0.95
    assert r.trials_used == 20 and r.stopped_by == "budget"
    assert r.acuity_curve[-1] == (20, 0.12)
    assert len(r.map_va_logmar) == 5 and all(len(row) == 4 for row in r.map_va_logmar)
    assert r.simulated is None


def test_engine_extras_level_and_simulated_are_accepted():
    raw = make_result(simulated=True)
    raw["credible_interval"]["level"] = 0.9
    r = parse_result(raw)
    assert r.interval_level == 0.9 and r.simulated is True


def test_the_over_minus_risk_is_optional():
    assert parse_result(make_result()).over_minus_risk is None
    assert parse_result({**make_result(), "over_minus_risk": 0.0004}).over_minus_risk == 0.0004


def _drop(key):
    def edit(d):
        del d[key]

    return edit


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (_drop("rounded"), "result: missing key(s) rounded"),
        (lambda d: d.update(confidence=1), "unknown key(s) confidence"),
        (lambda d: d["estimate"].update(sphere_d=float("nan")), "result.estimate.sphere_d: expected a finite number"),
        (lambda d: d["rounded"].pop("axis_deg"), "result.rounded: missing key(s) axis_deg"),
        (lambda d: d["rounded"].update(axis_deg=200.0), "result.rounded.axis_deg"),
        (
            lambda d: d.update(stopped_by="boredom"),
            "result.stopped_by: expected one of budget, precision, information, clinician",
        ),
        (lambda d: d.update(trials_used=2.5), "result.trials_used"),
        (lambda d: d.update(duration_s=-1), "result.duration_s"),
        (lambda d: d.update(predicted_va_interval=[0.3, 0.1]), "result.predicted_va_interval: expected lo <= hi"),
        (lambda d: d["credible_interval"].update(sphere_d=[1.0]), "result.credible_interval.sphere_d"),
        (lambda d: d.update(acuity_curve=[[5, 0.1], [2, 0.2]]), "acuity_curve[1]: trial numbers must not decrease"),
        (lambda d: d.update(acuity_curve=[[1.5, 0.1]]), "result.acuity_curve[0][0]"),
        (lambda d: d["posterior_map"]["va_logmar"].pop(), "result.posterior_map.va_logmar: expected 5 rows"),
        (lambda d: d["posterior_map"]["va_logmar"][2].pop(), "expected rows of 4 values"),
        (lambda d: d.update(simulated="yes"), "result.simulated"),
        (lambda d: d["posterior_map"]["sphere_d"].reverse(), "posterior_map.sphere_d: expected a non-empty, strictly"),
        (lambda d: d.update(over_minus_risk=1.5), "result.over_minus_risk: expected a probability in [0, 1], got 1.5"),
        (lambda d: d.update(over_minus_risk=float("nan")), "result.over_minus_risk: expected a finite number"),
    ],
)
def test_bad_results_name_the_key(edit, fragment):
    raw = copy.deepcopy(make_result())
    edit(raw)
    with pytest.raises(StoreError) as info:
        parse_result(raw, where="session 9")
    assert "session 9" in str(info.value) and fragment in str(info.value)


def test_no_result_or_not_an_object():
    with pytest.raises(StoreError, match="has no result"):
        parse_result(None)
    with pytest.raises(StoreError, match="expected a JSON object"):
        parse_result([1, 2])
