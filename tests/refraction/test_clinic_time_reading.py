"""benchmarks/clinic_time.py: a session's trace adds up to the session's own time and changes, and
the stops read from it end each session where they say (docs/results/clinic-time.md reads them)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from visiontune.refraction.protocol import load_protocol

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "clinic_time.py"
_SPEC = importlib.util.spec_from_file_location("clinic_time", _PATH)
clinic_time = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(clinic_time)


def _step(p_within: float, error: float, seconds: float = 5.0, changes: int = 1, om_risk=None) -> dict:
    return {
        "kind": "comparison",
        "seconds": seconds,
        "changes": changes,
        "error": error,
        "error_m": -error,
        "p_within": p_within,
        "m_pm": 0.3,
        "j_pm": 0.3,
        "covered": True,
        "kappa_ratio": None,
        "om_risk": om_risk,
    }


def _row(steps, stopped_by="precision", young=False) -> dict:
    return {
        "population": "p",
        "case_id": 0,
        "age": 60,
        "stopped_by": stopped_by,
        "young": young,
        "start_error": 0.5,
        "patient_s": 0.0,
        "steps": steps,
        "min_trials": 2,
        "max_trials": 120,
    }


def test_a_stop_ends_the_session_at_the_first_answer_it_is_met_after_min_trials():
    row = _row([_step(0.9, 0.5), _step(0.5, 0.4), _step(0.86, 0.2), _step(0.95, 0.1)])
    assert clinic_time.ended(row, clinic_time.stop_probability(0.85)) == 3  # answer 1 is before min_trials
    assert clinic_time.ended(row, clinic_time.stop_probability(0.9)) == 4
    assert clinic_time.ended(row, clinic_time.stop_probability(0.99)) == 4  # never first: as run
    at = clinic_time.session_at(row, 3, 4.0, 1.0)
    assert at == {
        "answers": 3,
        "changes": 3,
        "frame_s": 27.0,
        "phoropter_s": 18.0,
        "error": 0.2,
        "error_m": -0.2,
        "covered": True,
        "precision": True,
    }
    risky = _row([_step(0.9, 0.3, om_risk=0.05), _step(0.9, 0.3, om_risk=0.02), _step(0.9, 0.2, om_risk=0.005)])
    assert clinic_time.ended(risky, clinic_time.stop_probability(0.85, over_minus=0.01)) == 3
    assert clinic_time.ended(risky, clinic_time.stop_probability(0.85, over_minus=None)) == 2


def test_a_time_budget_ends_the_session_and_is_no_precision_stop():
    row = _row([_step(0.1, 0.5) for _ in range(10)], stopped_by="budget")
    budget = clinic_time.stop_or_time_budget(clinic_time.stop_as_run, 40.0)  # 9 s an answer at 4 s a change
    s = clinic_time.summary([row], budget, 4.0, 1.0)
    assert s["answers"] == 5 and s["frame_median"] == 45.0 and s["precision"] == 0.0
    assert clinic_time.summary([row], clinic_time.stop_as_run, 4.0, 1.0)["precision"] == 0.0


def test_a_trace_adds_up_to_the_sessions_own_time_and_changes():
    protocol = load_protocol("clinical-sloan-compare")
    row = clinic_time.trace_case(protocol, "adult-clinic", 2, 1)
    at = clinic_time.session_at(row, len(row["steps"]), 4.0, 1.0)
    assert at["frame_s"] == pytest.approx(row["patient_s"])
    assert clinic_time.ended(row, clinic_time.stop_as_run) == len(row["steps"]) >= protocol.stopping.min_trials
    # the last answer's state is the session's: it stopped on the region, so the stop's radii are met there
    last = row["steps"][-1]
    assert row["stopped_by"] == "precision" and last["m_pm"] <= 0.25 and last["j_pm"] <= 0.25
    assert 0.0 <= min(s["p_within"] for s in row["steps"]) <= max(s["p_within"] for s in row["steps"]) <= 1.0


def test_traces_in_parallel_are_the_traces_one_at_a_time(tmp_path):
    common = ["trace", "--protocol", "clinical-sloan-lines-two-formulas", "--populations", "adult-clinic,young"]
    common += ["--cases", "1", "--first", "2"]
    assert clinic_time.main([*common, "--out", str(tmp_path / "one.json")]) == 0
    assert clinic_time.main([*common, "--jobs", "2", "--out", str(tmp_path / "two.json")]) == 0
    one, two = (json.loads((tmp_path / name).read_text()) for name in ("one.json", "two.json"))
    for row in one + two:
        row.pop("wall_s")
    assert [(r["population"], r["case_id"]) for r in two] == [("adult-clinic", 2), ("young", 2)]
    assert two == one


def test_trace_refuses_no_jobs_and_an_existing_out(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        clinic_time.main(["trace", "--jobs", "0", "--out", str(tmp_path / "t.json")])
    assert exit_.value.code == 2 and "--jobs" in capsys.readouterr().err
    taken = tmp_path / "taken.json"
    taken.write_text("[]")
    assert clinic_time.main(["trace", "--cases", "1", "--out", str(taken)]) == 2
    assert taken.read_text() == "[]" and "exists" in capsys.readouterr().err
