"""The clinical validation benchmark: its scores, its resumable store, its command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.validation.short_protocols import short_protocol
from visiontune.cli import main
from visiontune.errors import InvalidInputError, StoreError
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import CaseResult, ClinicStore, RunKeyLike, plan, stored_metrics, summarise


def _run(
    error,
    *,
    start_error=None,
    answers=120,
    stopped_by="budget",
    covered=True,
    age=50.0,
    signed_m=0.0,
    axis=None,
    start_axis=None,
    decision_ms=(5.0, 7.0),
):
    m = {
        "answers": answers,
        "stopped_by": stopped_by,
        "error_d": error,
        "error_m_d": error / 2,
        "error_j_d": error / 3,
        "signed_error_m_d": signed_m,
        "exact_error_d": error,
        "axis_error_deg": axis,
        "va_loss_logmar": error / 10,
        "age_years": age,
        "true_cylinder_d": -1.0,
        "decision_ms": list(decision_ms),
        "covered_50": covered,
        "covered_80": covered,
        "covered_95": True,
    }
    if start_error is not None:
        m.update(
            {
                "start_error_d": start_error,
                "start_error_m_d": start_error,
                "start_error_j_d": 0.0,
                "start_signed_error_m_d": -start_error,
                "start_axis_error_deg": start_axis,
                "start_va_loss_logmar": start_error / 10,
            }
        )
    return m


def test_summary_shares_quantiles_and_counts_are_those_of_the_runs():
    errors = [0.1, 0.25, 0.3, 0.5, 0.7]
    runs = [
        _run(
            e,
            start_error=0.2 if i < 2 else 0.6,
            covered=i % 2 == 0,
            stopped_by="precision" if i == 4 else "budget",
            answers=100 + i,
            axis=10.0 if i == 0 else 2.0,
            start_axis=5.0,
            age=20.0 if i < 3 else 60.0,
            signed_m=-0.5 if i == 1 else 0.0,
            decision_ms=(float(i), 10.0 * i),
        )
        for i, e in enumerate(errors)
    ]
    s = summarise("evr", runs)
    assert (s.n, s.within_025, s.within_050) == (5, 0.4, 0.8)
    assert s.median_error_d == 0.3 and s.p90_error_d == pytest.approx(np.percentile(errors, 90))
    assert s.median_error_m_d == 0.15 and s.median_answers == 102
    assert s.stops == {"budget": 4, "precision": 1}
    assert s.coverage == {"covered_50": 0.6, "covered_80": 0.6, "covered_95": 1.0}
    times = [float(i) for i in range(5)] + [10.0 * i for i in range(5)]
    assert s.decision_ms_median == np.median(times) and s.decision_ms_p99 == pytest.approx(np.percentile(times, 99))
    # case 0 started within 0.25 D and ended with a worse axis (10 > 5); case 1 did not (2 < 5)
    assert s.worse_axis_near == 1
    assert s.worse_than_start == 0.4  # case 1 (0.25 > 0.2) and case 4 (0.7 > 0.6)
    assert s.over_minus_young == 1  # case 1: aged 20, 0.5 D too much minus
    start = summarise("start", runs, start=True)
    assert (start.within_025, start.within_050, start.median_error_d) == (0.4, 0.4, 0.6)
    assert start.over_minus_young == 1 and start.median_answers is None  # case 2: -0.6 D; cases 0, 1: -0.2 D
    assert start.worse_than_start is None


def test_refused_patients_are_counted_and_left_out_of_the_scores():
    runs = [
        _run(0.1, start_error=0.3),
        {"refused": "starting prescription: ... outside the range"},
        _run(0.4, start_error=0.3),
    ]
    s = summarise("evr", runs)
    assert s.n == 2 and s.within_025 == 0.5 and s.stops == {"budget": 2, "refused, outside the range": 1}


def test_a_start_outside_the_range_is_refused_not_clipped():
    import dataclasses

    from visiontune.optics import Prescription
    from visiontune.refraction.population import draw_cases
    from visiontune.validation.clinic import CaseSpec, run_case

    protocol = load_protocol("clinical-sloan")
    case = dataclasses.replace(draw_cases("high-myopia", 1, 1)[0], start_rx=Prescription(-12.5, -1.0, 10.0))
    result = run_case(CaseSpec("e", protocol.source_text, protocol.source, "evr", "high-myopia", case))
    assert result.n_decisions == 0 and "outside the range" in result.metrics["refused"]


def test_no_runs_is_a_clear_error():
    with pytest.raises(Exception, match="evr: no finished runs"):
        summarise("evr", [])


def test_the_store_keeps_each_run_once_and_reopens(tmp_path):
    key = RunKeyLike("e", "adult-clinic", "evr", 3)
    with ClinicStore(tmp_path / "v.sqlite") as store:
        store.add(CaseResult(key, _run(0.2), 120, 1.5))
        store.add(CaseResult(key, _run(0.9), 120, 1.5))  # a repeated run does not overwrite the first
    with ClinicStore(tmp_path / "v.sqlite") as store:
        assert store.finished_keys("e") == {key} and store.finished_keys("other") == set()
        assert [m["error_d"] for m in store.metrics("e", "adult-clinic", "evr", 10)] == [0.2]
        assert store.metrics("e", "adult-clinic", "evr", 3) == []  # case ids below n_cases only


def test_the_store_runs_what_is_left_and_a_stop_keeps_what_finished(tmp_path, capsys):
    """``ClinicStore.run``: Ctrl-C in the third run returns None, says the same command resumes (naming
    the store) and keeps the two finished runs; run again, it runs only the specs not finished under
    any of the experiments named, and returns their summary."""
    from types import SimpleNamespace

    specs = [SimpleNamespace(key=RunKeyLike("e", "adult-clinic", "evr", i)) for i in range(4)]
    specs.append(SimpleNamespace(key=RunKeyLike("f", "adult-clinic", "evr", 0)))
    calls = []

    def run(spec, stop_at=2):
        calls.append(spec.key)
        if len(calls) == stop_at + 1:
            raise KeyboardInterrupt
        return CaseResult(spec.key, _run(0.1), 10, 0.01)

    path = tmp_path / "v.sqlite"
    with ClinicStore(path) as store:
        store.add(CaseResult(specs[4].key, _run(0.3), 10, 0.01))  # "f" finished before
        assert store.run(specs[:4], ["e"], run, jobs=1, scheduler=None, progress=False) is None
        assert f"the same command resumes ({path})" in capsys.readouterr().err
        assert store.finished_keys("e") == {specs[0].key, specs[1].key}
        calls.clear()
        summary = store.run(specs, ["e", "f"], lambda s: run(s, stop_at=99), jobs=1, scheduler=None, progress=False)
    assert calls == [specs[2].key, specs[3].key] and summary.ran == 2 and summary.planned == 5


def test_a_finished_store_is_read_by_case_without_writing_beside_it(tmp_path):
    path = tmp_path / "v.sqlite"
    with ClinicStore(path) as store:
        store.add(CaseResult(RunKeyLike("e", "adult-clinic", "evr", 3), _run(0.2), 120, 1.5))
        store.add(CaseResult(RunKeyLike("e", "adult-clinic", "bald", 3), _run(0.4), 120, 1.5))
        store.add(CaseResult(RunKeyLike("e", "young", "evr", 1), _run(0.3), 120, 1.5))
        store.add(CaseResult(RunKeyLike("f", "young", "evr", 1), _run(0.6), 120, 1.5))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert {c: m["error_d"] for c, m in stored_metrics(path, "adult-clinic", "evr").items()} == {3: 0.2}
    assert {c: m["error_d"] for c, m in stored_metrics(path, "young", "evr", "f").items()} == {1: 0.6}
    assert stored_metrics(path, "adult-clinic", "ucb-ald") == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no -wal / -shm left beside it
    with pytest.raises(InvalidInputError, match=r"name the experiment; the store has \['e', 'f'\] for young"):
        stored_metrics(path, "young", "evr")
    with pytest.raises(StoreError, match="no such validation store"):
        stored_metrics(tmp_path / "missing.sqlite", "young", "evr")
    (tmp_path / "junk.sqlite").write_bytes(b"not a database")
    with pytest.raises(StoreError, match="junk.sqlite: cannot read the validation store"):
        stored_metrics(tmp_path / "junk.sqlite", "young", "evr")


def test_the_plan_runs_every_policy_on_the_same_patients():
    protocol = load_protocol("clinical-sloan")
    specs = plan("e", protocol, ["evr", "bald"], "young", 3, seed=1)
    assert [(s.policy, s.case.case_id) for s in specs] == [
        ("evr", 0),
        ("evr", 1),
        ("evr", 2),
        ("bald", 0),
        ("bald", 1),
        ("bald", 2),
    ]
    assert [s.case for s in specs[:3]] == [s.case for s in specs[3:]]
    assert 'policy = "bald"' in specs[3].protocol_text and all(s.case.age_years <= 35 for s in specs)


def test_validate_writes_a_simulated_page_and_resumes(tmp_path, capsys):
    args = [
        "validate",
        "--protocol",
        str(short_protocol(tmp_path, "clinical-sloan", 12)),
        "--populations",
        "adult-clinic,no-start",
        "--cases",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--name",
        "v",
        "--no-progress",
    ]
    assert main(args) == 0
    assert "4 runs now, 4 in all" in capsys.readouterr().out
    page = (tmp_path / "v.md").read_text()
    assert "SIMULATED" in page and "## adult-clinic" in page and "## no-start" in page
    assert "starting prescription as it is" in page.split("## no-start")[0]
    assert "starting prescription as it is" not in page.split("## no-start")[1]  # no start to score
    summary = json.loads((tmp_path / "v.json").read_text())
    assert (
        summary["tables"]["adult-clinic"][0]["n"] == 2 and summary["tables"]["adult-clinic"][0]["median_answers"] == 12
    )
    assert main(args) == 0
    assert "0 runs now, 4 in all" in capsys.readouterr().out


def test_validate_refuses_unknown_names(tmp_path, capsys):
    code = main(["validate", "--populations", "adult-clinic,martians", "--out", str(tmp_path)])
    assert code != 0 and "martians" in capsys.readouterr().err
    code = main(["validate", "--policies", "kss-ald", "--out", str(tmp_path)])
    assert code != 0 and "kss-ald" in capsys.readouterr().err


def test_validate_with_comparisons_counts_them_and_the_patients_time(tmp_path, capsys):
    """A protocol that asks comparisons: each run records how many were asked and the patient's
    time (3 s a letter, 5 s a comparison, 4 s a change of lens), the page adds both columns and says
    how the simulated patients answer comparisons."""
    text = load_protocol("clinical-sloan-compare").source_text.replace("max_trials = 120", "max_trials = 10")
    text = text.replace("min_trials = 20", "min_trials = 0").replace(
        'name = "clinical-sloan-compare"', 'name = "short-compare"'
    )
    (tmp_path / "short-compare.toml").write_text(text)
    args = [
        "validate",
        "--protocol",
        str(tmp_path / "short-compare.toml"),
        "--populations",
        "adult-clinic",
        "--cases",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(args) == 0
    page = (tmp_path / "clinical-validation-short-compare.md").read_text()  # the letters-only page is not overwritten
    assert "comparisons (median) | patient time (median, s) |" in page
    assert "the patient's sensitivity to a comparison inferred (lognormal prior, median 4, σ 1)" in page
    with ClinicStore(tmp_path / "clinical-validation-short-compare.sqlite") as store:
        runs = store.metrics("short-compare-seed1", "adult-clinic", "evr", 2)
    for r in runs:
        assert r["answers"] == 10 and 0 < r["comparisons"] <= 10
        assert r["patient_s"] == 5.0 * r["comparisons"] + 3.0 * (10 - r["comparisons"]) + 4.0 * r["lens_changes"]
        assert r["lens_changes"] >= 1
    row = json.loads((tmp_path / "clinical-validation-short-compare.json").read_text())["tables"]["adult-clinic"][0]
    assert row["median_comparisons"] == float(np.median([r["comparisons"] for r in runs]))


def test_validate_with_sliders_counts_them_and_the_patients_time(tmp_path):
    """A protocol that asks sliders too (the test protocol, 10 answers): each run records the
    sliders asked, the patient's time counts them at 8 s, the page adds a sliders column."""
    source = Path(__file__).resolve().parent.parent / "protocols" / "sloan-compare-sliders.toml"
    text = (
        source.read_text().replace("max_trials = 120", "max_trials = 10").replace("min_trials = 20", "min_trials = 0")
    )
    text = text.replace('name = "test-sloan-compare-sliders"', 'name = "short-sliders"')
    (tmp_path / "short-sliders.toml").write_text(text)
    args = [
        "validate",
        "--protocol",
        str(tmp_path / "short-sliders.toml"),
        "--populations",
        "adult-clinic",
        "--cases",
        "2",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(args) == 0
    page = (tmp_path / "clinical-validation-short-sliders.md").read_text()
    assert "comparisons (median) | patient time (median, s) | sliders (median) |" in page
    assert (
        "a slider counted at 8 s; its model of the choice: a logit over the knob's lenses with lapse 0.05 and noise "
        "0.03 logMAR. The simulated patients choose by the stated model (noise 0.03 logMAR, lapse 0.05)"
    ) in page
    with ClinicStore(tmp_path / "clinical-validation-short-sliders.sqlite") as store:
        runs = store.metrics("short-sliders-seed1", "adult-clinic", "evr", 2)
    for r in runs:
        assert r["answers"] == 10 and r["comparisons"] + r["sliders"] <= 10
        letters = 10 - r["comparisons"] - r["sliders"]
        assert r["patient_s"] == 5.0 * r["comparisons"] + 8.0 * r["sliders"] + 3.0 * letters


def test_the_validation_page_says_when_the_slider_noise_is_inferred():
    from visiontune.refraction.protocol import load_protocol
    from visiontune.validation.validate_cli import _sliders_note

    root = Path(__file__).resolve().parents[2]
    note = _sliders_note(load_protocol(str(root / "docs/results/protocols/clinical-sloan-compare-sliders.toml")))[0]
    assert "noise inferred per patient (lognormal prior, median 0.03 logMAR, σ 0.8)" in note
    assert "The simulated patients choose by the stated model (noise 0.03 logMAR, lapse 0.05)" in note
