"""Lens changes: how many times the lens before the eye changed over a session (a trial frame's
lens swaps), in the trial loop and in the validation's metrics and tables."""

from __future__ import annotations

from visiontune.optics import Prescription
from visiontune.refraction.lenses import lens_changes, lens_left_in_place, lenses_shown
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.validation.clinic import TimedPresenter, case_refraction, plan, run_case, summarise, validation_case
from visiontune.validation.validate_cli import table_markdown

L1 = Prescription(-1.0, -0.5, 90.0)
L1_PLUS = Prescription(-1.5, 0.5, 180.0)  # L1 in plus-cylinder form: the same lens
L2 = Prescription(-0.75, -0.5, 90.0)
L3 = Prescription(-1.0, -0.5, 95.0)
PLANO_0, PLANO_90 = Prescription(0.0, 0.0, 0.0), Prescription(0.0, 0.0, 90.0)


def _letter(i: int, lens: Prescription) -> Trial:
    return Trial(i, 0.3, lens, "C", True)


def _comparison(i: int, first: Prescription, second: Prescription) -> Trial:
    return Trial(i, 0.3, first, "C", True, lens2=second, comparison="1")


def _slider(i: int, path: tuple[Prescription, ...], choice: int) -> Trial:
    return Trial(i, 0.3, path[choice], "C", True, slider_knob="sphere", slider_lenses=path, slider_choice=choice)


def test_each_kind_of_trial_shows_its_lenses_in_order():
    assert lenses_shown(_letter(0, L1)) == [L1]
    assert lenses_shown(_comparison(0, L2, L3)) == [L2, L3]
    assert lenses_shown(_slider(0, (L1, L2, L3), 1)) == [L1, L2, L3]


def test_a_trial_leaves_in_place_the_last_lens_it_showed():
    assert lens_left_in_place(_letter(0, L1)) == L1
    assert lens_left_in_place(_comparison(0, L2, L3)) == L3  # lens 2, shown second, whatever the answer
    assert lens_left_in_place(_slider(0, (L1, L2, L3), 1)) == L3  # the path's end, not the lens chosen


def test_a_change_is_a_new_power_counted_from_the_first_lens_placed():
    trials = [
        _letter(0, L1),  # 1: the first lens placed
        _letter(1, L1),  # the same lens
        _letter(2, L1_PLUS),  # the same lens written in plus-cylinder form
        _comparison(3, L1, L2),  # L1 is in place; 2: L2
        _letter(4, L2),  # in place
        _comparison(5, L3, L1),  # 3: L3, 4: L1
        _slider(6, (L1, L2, L3), 2),  # L1 in place; 5: L2, 6: L3
        _letter(7, L1),  # 7
        _letter(8, PLANO_0),  # 8
        _letter(9, PLANO_90),  # plano at another axis: the same lens
    ]
    assert lens_changes(trials) == 8
    assert lens_changes(trials[:1]) == 1 and lens_changes([]) == 0
    # every trial on a new lens: one change per lens shown
    alternating = [_letter(i, (L1, L2)[i % 2]) for i in range(6)]
    assert lens_changes(alternating) == 6


def _run(answers: int, changes: int | None, comparisons: int | None = None) -> dict:
    run = {
        "answers": answers,
        "stopped_by": "precision",
        "error_d": 0.1,
        "error_m_d": 0.1,
        "error_j_d": 0.0,
        "signed_error_m_d": 0.1,
        "va_loss_logmar": 0.0,
        "decision_ms": [1.0],
        "axis_error_deg": None,
    }
    if changes is not None:
        run["lens_changes"] = changes
    if comparisons is not None:
        run.update(comparisons=comparisons, patient_s=3.0 * answers)
    return run


def test_the_validation_table_gives_the_median_of_the_runs_that_kept_the_count():
    row = summarise("evr", [_run(20, 12), _run(30, 25), _run(40, 9)])
    assert row.median_lens_changes == 12.0
    older = summarise("evr", [_run(20, 12), _run(30, None)])  # a store written before the count was kept
    assert older.median_lens_changes is None
    table = table_markdown([row, older])
    header, rule, first, second = table.splitlines()
    columns = [c.strip() for c in header.strip("|").split("|")]
    at = columns.index("lens changes (median)")
    assert len(rule.strip("|").split("|")) == len(columns)
    assert [c.strip() for c in first.strip("|").split("|")][at] == "12"
    assert [c.strip() for c in second.strip("|").split("|")][at] == "-"
    assert [c.strip() for c in first.strip("|").split("|")][columns.index("worse than start")] == "-"  # no start
    mixed = table_markdown([summarise("evr", [_run(20, 14, comparisons=5)])]).splitlines()
    assert len(mixed[1].strip("|").split("|")) == len(mixed[0].strip("|").split("|"))
    assert [c.strip() for c in mixed[2].strip("|").split("|")][at] == "14"


def test_a_validation_run_keeps_the_lens_changes_of_its_session():
    """``visiontune validate``'s metric is the count over the session's trials, rerun here through
    the same loop, and lies between one and every lens shown."""
    protocol = load_protocol("clinical-sloan-compare")
    metrics = run_case(plan("lens-changes", protocol, ["evr"], "adult-clinic", 1, 1)[0]).metrics
    case = validation_case("adult-clinic", 0, 1)
    refraction = case_refraction(protocol, case)
    refraction.run(TimedPresenter(case.patient(protocol.n_alternatives)))
    trials = refraction.trials()
    assert len(trials) == metrics["answers"]
    assert metrics["lens_changes"] == lens_changes(trials)
    assert 1 <= metrics["lens_changes"] <= sum(len(lenses_shown(t)) for t in trials)
