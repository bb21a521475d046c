"""``visiontune validate --answer-model`` and ``--lens-device``: the runs, their store and page."""

from __future__ import annotations

import json

import pytest

from tests.validation.short_protocols import short_protocol
from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.answer_validation import answer_row, plan_answers
from visiontune.validation.clinic import ClinicStore


def test_answer_models_page_store_and_resume(tmp_path, capsys):
    args = [
        "validate",
        "--protocol",
        str(short_protocol(tmp_path, "clinical-sloan-compare", 8)),
        "--answer-model",
        "model,last-lens-bias",
        "--lens-device",
        "motorized-phoropter",
        "--populations",
        "young",
        "--cases",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(args) == 0
    assert "4 runs now, 4 in all" in capsys.readouterr().out
    page = (tmp_path / "answer-models-short-motorized-phoropter.md").read_text()
    assert "SIMULATED" in page and "## young" in page and "| last-lens-bias | 2 |" in page
    assert "starting prescription as it is" in page and "motorized-phoropter" in page
    with ClinicStore(tmp_path / "answer-models-short-motorized-phoropter.sqlite") as store:
        runs = store.metrics("short-seed1-answers-last-lens-bias-device-motorized-phoropter", "young", "evr", 2)
    assert len(runs) == 2
    for r in runs:  # 3 s a letter, 5 s a comparison, 0.5 s a change: the device's price
        assert r["patient_s"] == pytest.approx(
            5.0 * r["comparisons"] + 3.0 * (8 - r["comparisons"]) + 0.5 * r["lens_changes"]
        )
    summary = json.loads((tmp_path / "answer-models-short-motorized-phoropter.json").read_text())
    assert [r["label"] for r in summary["tables"]["young"]] == [
        "model",
        "last-lens-bias",
        "starting prescription as it is",
    ]
    assert main(args) == 0
    assert "0 runs now, 4 in all" in capsys.readouterr().out


def test_unknown_answer_model_is_refused(tmp_path, capsys):
    assert main(["validate", "--answer-model", "model,stubborn", "--out", str(tmp_path)]) != 0
    assert "stubborn" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_rows_are_the_shares_of_the_runs():
    def run(err, start, cov, stop, age, signed, t):
        return {
            "error_d": err,
            "start_error_d": start,
            "covered_95": cov,
            "stopped_by": stop,
            "age_years": age,
            "signed_error_m_d": signed,
            "start_signed_error_m_d": 0.0,
            "answers": 40,
            "lens_changes": 10,
            "patient_s": t,
        }

    runs = [
        run(0.1, 0.3, True, "precision", 20.0, -0.5, 100.0),
        run(0.4, 0.3, False, "budget", 50.0, 0.0, 200.0),
        run(0.6, 0.7, True, "precision", 30.0, 0.0, 300.0),
        {"refused": "outside"},
    ]
    row = answer_row("m", runs)
    assert (row.n, row.within_025, row.within_050) == (3, 1 / 3, 2 / 3)
    assert (row.coverage_95, row.precision_stops) == (2 / 3, 2 / 3)
    assert (row.worse_than_start, row.over_minus_young, row.young, row.median_patient_s) == (1 / 3, 1, 2, 200.0)
    assert row.p90_patient_s == pytest.approx(280.0)
    start = answer_row("start", runs, start=True)
    assert (start.within_025, start.within_050, start.over_minus_young) == (0.0, 2 / 3, 0)
    with pytest.raises(InvalidInputError, match="no finished runs"):
        answer_row("none", [{"refused": "x"}])


def test_the_plan_refuses_an_unknown_model_and_keeps_the_cases():
    protocol = load_protocol("clinical-sloan-compare")
    specs = plan_answers("e", protocol, "evr", "young", 3, 1, "blur")
    assert [s.case.case_id for s in specs] == [0, 1, 2] and {s.answer_model for s in specs} == {"blur"}
    with pytest.raises(InvalidInputError, match="answer model"):
        plan_answers("e", protocol, "evr", "young", 3, 1, "nope")
