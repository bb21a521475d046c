"""benchmarks/posterior_calibration.py and the trace of benchmarks/clinic_time.py: a refused start is
left out, and the PIT of ``M*`` is where the posterior's own quantiles put the truth."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from visiontune.optics import Prescription
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import case_refraction, validation_case

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


calibration, clinic_time = _load("posterior_calibration"), _load("clinic_time")
#: high-myopia, population seed 1: a start at M -12.88 D, outside the range the session refracts.
_REFUSED = ("high-myopia", 19, 1)
_SHORT = "docs/results/protocols/clinical-sloan-lines-filed.toml"


def test_a_start_the_session_refuses_is_left_out_of_the_trace_and_of_the_calibration(capsys):
    protocol = load_protocol(_SHORT)
    assert clinic_time.trace_case(protocol, *_REFUSED) is None
    assert calibration.session_end(protocol, validation_case(*_REFUSED)) is None
    assert "high-myopia 19: refused (starting prescription: S -11.50 / C -2.75 x 100" in capsys.readouterr().err


def test_the_pit_lies_between_the_posterior_quantiles_that_bracket_the_truth():
    """The PIT ``u`` of the truth, read by a weighted quantile: the truth lies between the posterior's
    quantiles just below and just above ``u`` (the same session rebuilt, its particles bit for bit)."""
    protocol = load_protocol(_SHORT)
    case = validation_case("adult-clinic", 2, 1)
    row = calibration.session_end(protocol, case)
    refraction = case_refraction(protocol, case)
    refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
    post = refraction.engine.correction_draws(refraction.trials())
    m, w, truth = post.theta[:, 0], post.weights, case.true_rx.spherical_equivalent_d
    u = row["pit"]
    assert 0.02 < u < 0.98, "pick a case whose truth is inside the posterior"
    assert weighted_quantile(m, w, u - 0.02) <= truth + 1e-9 <= weighted_quantile(m, w, u + 0.02) + 2e-9
    assert 0.0 <= row["p_within"] <= 1.0 and row["within"] == bool(
        np.linalg.norm(refraction.current_estimate().rounded.power_vector_array() - case.true_rx.power_vector_array())
        <= 0.25 + 1e-9
    )


def test_the_summary_counts_each_quartile_and_reads_the_stop_beside_the_outcome():
    rows = [{"pit": u, "p_within": 0.9, "within": k % 2 == 0} for k, u in enumerate((0.1, 0.2, 0.3, 0.6, 0.9, 0.95))]
    text = calibration.summary(rows)
    assert "PIT by quartile 2 / 1 / 1 / 2 (each 1.5 if calibrated)" in text
    assert "mean 0.51" in text and "mean 0.90" in text and "within 0.25 D 50%" in text


def test_ages_that_are_not_two_numbers_are_refused_with_the_flag_named(capsys):
    for bad in ("x", "20", "20,35,50", "twenty,35"):
        assert calibration.main(["--ages", bad]) == 2
        assert f"--ages: expected two numbers, youngest,oldest; got {bad!r}" in capsys.readouterr().err


def test_the_summary_is_by_acuity_curve_when_the_patients_have_several():
    rows = [
        {"pit": u, "p_within": 0.9, "within": u > 0.2, "acuity_model": curve, "signed_error_m": e}
        for u, curve, e in ((0.1, "linear-logmar", 0.3), (0.15, "linear-logmar", 0.2), (0.6, "pupil-geometric", -0.1))
    ]
    lines = calibration.summary_by_curve(rows).splitlines()
    assert len(lines) == 3 and "filed M - true M, mean +0.13 D" in lines[0]
    assert lines[1].startswith("  linear-logmar: n 2; PIT by quartile 2 / 0 / 0 / 0") and "mean +0.25 D" in lines[1]
    assert lines[2].startswith("  pupil-geometric: n 1;") and "within 0.25 D 100%" in lines[2]
    assert len(calibration.summary_by_curve(rows[:2]).splitlines()) == 1


def test_every_patient_takes_the_acuity_curve_asked_for(capsys):
    """``--acuity-model`` changes the curve and nothing else: the session's patient reads through a lens
    as that curve says (linear logMAR, Remón et al. 2017: ``VA* + 0.30 |r|``)."""
    case = validation_case("adult-clinic", 3, 1)
    linear = calibration.with_curve(case, "linear-logmar")
    assert calibration.with_curve(case, None) is case and case.acuity_model == "blendowske"
    t = case.true_rx
    rx = [
        t,
        Prescription(t.sphere_d + 1.0, t.cylinder_d, t.axis_deg),
        Prescription(t.sphere_d + 0.25, t.cylinder_d - 0.5, t.axis_deg),
    ]
    va = [linear.patient(10).acuity_logmar(r) for r in rx]
    blur = np.array([np.linalg.norm(r.power_vector_array() - t.power_vector_array()) for r in rx])
    assert blur[1] == pytest.approx(1.0) and blur[2] > 0.2
    np.testing.assert_allclose(va, case.best_corrected_logmar + 0.30 * blur, atol=1e-9)
    assert dataclasses.replace(linear, acuity_model="blendowske") == case
    assert calibration.main(["--protocol", _SHORT, "--cases", "1", "--acuity-model", "linear-logmar"]) == 0
    out = capsys.readouterr().out
    assert "adult-clinic aged 0-120 (seed 1), every patient with the linear-logmar acuity curve" in out
    assert "n 1;" in out and "filed M - true M" in out
    with pytest.raises(SystemExit):
        calibration.main(["--acuity-model", "parabolic"])
    assert "invalid choice: 'parabolic'" in capsys.readouterr().err
