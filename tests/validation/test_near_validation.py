"""The near-addition validation (validation/near_validation.py) on a handful of simulated presbyopes:
its rows are computed from the step's adds and the truths, and the report prints them."""

from __future__ import annotations

import io

from visiontune.refraction.near_population import draw_near_patients
from visiontune.validation.near_validation import near_validation, run_patient


def test_run_patient_reports_both_eyes_against_the_truth():
    od, os_ = draw_near_patients(1, 3)[0]
    rows = run_patient(od, os_)
    assert len(rows) == 2
    for case, row in zip((od, os_), rows, strict=True):
        assert row["true_add"] == case.true_add(2.5) and row["age"] == case.age_years
        assert row["va"] == case.acuity_logmar(row["add"], 2.5)
        assert row["seconds"] >= 3 * row["letters"] + 4


def test_the_report_prints_both_rows_of_each_population():
    out = io.StringIO()
    results = near_validation(3, 4, ("hofstetter",), out=out)
    text = out.getvalue()
    assert "SIMULATED presbyopes, 3 patients" in text
    assert "| hofstetter | Bayesian step |" in text and "| hofstetter | table by age |" in text
    eyes, seconds = results["hofstetter"]
    assert len(eyes) == 6 and len(seconds) == 3
