"""Binocular acuity of a simulated patient: the better eye's threshold minus binocular summation
(Cagenello, Arditi & Halpern 1993), its chart reading, and the visit's OU acuity."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.simulated import simulated_case
from visiontune.session.binocular_acuity import (
    BINOCULAR_CHART_METHOD,
    BinocularPatient,
    binocular_summation_logmar,
    binocular_va_logmar,
)
from visiontune.session.chart import read_chart_simulated
from visiontune.session.store import TrialStore
from visiontune.session.visit import final_prescription

LETTERS = tuple("CDHKNORSVZ")


@pytest.mark.parametrize(
    ("od", "os_", "expected"),
    [
        (0.0, 0.0, -0.045),  # equal eyes: the full 0.045 logMAR of Cagenello et al. (1993)
        (0.1, 0.1, 0.055),
        (0.0, 0.15, -0.0225),  # half-way to the 0.30 logMAR where summation is gone
        (0.2, 0.05, 0.05 - 0.0225),
        (0.0, 0.30, 0.0),  # eyes three lines apart: the better eye's acuity
        (0.6, -0.1, -0.1),
    ],
)
def test_binocular_va_formula(od, os_, expected):
    assert binocular_va_logmar(od, os_) == pytest.approx(expected, abs=1e-12)
    assert binocular_va_logmar(os_, od) == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= binocular_summation_logmar(od, os_) <= 0.045


@pytest.mark.parametrize("bad", [float("nan"), "0.1", None, 5.0])
def test_summation_refuses_a_non_acuity(bad):
    with pytest.raises(InvalidInputError, match="va_os"):
        binocular_summation_logmar(0.0, bad)


def _eyes(n=10):
    od = simulated_case(seed=11, true_rx=Prescription(-2.0, -0.5, 90.0), best_va=0.0, slope=None)
    os_ = simulated_case(seed=11, true_rx=Prescription(-1.5, -0.75, 80.0), best_va=0.0)
    return od.patient(n), os_.patient(n)


def test_probability_is_the_better_eye_shifted_by_the_summation():
    od, os_ = _eyes()
    both = BinocularPatient(od, os_)
    for lenses in (
        {"OD": od.true_rx, "OS": os_.true_rx},  # both corrected: equal eyes
        {"OD": od.true_rx, "OS": Prescription(-1.0, -0.75, 80.0)},  # OS blurred by 0.5 D
        {"OD": Prescription(-1.25, -0.5, 90.0), "OS": os_.true_rx},
    ):  # OD blurred by 0.75 D
        va = {"OD": float(od.acuity_logmar(lenses["OD"])), "OS": float(os_.acuity_logmar(lenses["OS"]))}
        better, other = ("OD", "OS") if va["OD"] <= va["OS"] else ("OS", "OD")
        s0 = 0.045 * max(0.0, 1 - abs(va["OD"] - va["OS"]) / 0.30)
        assert both.acuity_logmar(lenses) == pytest.approx(va[better] - s0, abs=1e-12)
        eye = {"OD": od, "OS": os_}[better]
        for size in (-0.2, 0.0, 0.1, 0.3):
            for letter in (None, "C", "Z"):
                # Φ(a (s - (VA - S) - δ)) = Φ(a ((s + S) - VA - δ)): the better eye at a letter S larger
                assert both.probability_correct(size, lenses, letter) == pytest.approx(
                    float(eye.probability_correct(size + s0, lenses[better], letter)), abs=1e-12
                )


def test_lenses_of_both_eyes_needed():
    both = BinocularPatient(*_eyes())
    with pytest.raises(InvalidInputError, match="lenses: expected the lens of OD and OS"):
        both.probability_correct(0.0, {"OD": Prescription(-2, 0, 180)})


def _mean_chart(patient, lens, seeds):
    return float(np.mean([read_chart_simulated(patient, lens, LETTERS, s).va_logmar for s in seeds]))


def test_chart_read_with_both_eyes_beats_the_better_eye_by_the_summation_only_when_similar():
    od, os_ = _eyes()
    both = BinocularPatient(od, os_)
    seeds = range(400)
    similar = {"OD": od.true_rx, "OS": os_.true_rx}
    gain = _mean_chart(both, similar, seeds) - min(
        _mean_chart(od, similar["OD"], seeds), _mean_chart(os_, similar["OS"], seeds)
    )
    assert gain == pytest.approx(-0.045, abs=0.015)
    different = {"OD": od.true_rx, "OS": Prescription(-0.25, -0.75, 80.0)}  # OS 1.25 D myopic blur
    assert float(os_.acuity_logmar(different["OS"])) - float(od.acuity_logmar(od.true_rx)) > 0.3
    gain = _mean_chart(both, different, seeds) - _mean_chart(od, different["OD"], seeds)
    assert gain == pytest.approx(0.0, abs=0.015)


def test_simulated_visit_records_the_acuity_with_both_eyes_open(tmp_path):
    db = tmp_path / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--seed", "5", "--quiet", "--db", str(db)]) == 0
    with TrialStore.open(db) as store:
        ou = [a for a in store.visit_acuities(1) if a.eye == "OU"]
        assert len(ou) == 1
        assert ou[0].method == BINOCULAR_CHART_METHOD
        for eye in ("OD", "OS"):
            assert ou[0].lenses[eye].is_equivalent(final_prescription(store, 1, eye), 1e-9)
        model = ou[0].detail["model"]
        assert model["threshold_ou_logmar"] == pytest.approx(
            binocular_va_logmar(model["va_od_logmar"], model["va_os_logmar"]), abs=1e-12
        )
        assert ou[0].va_logmar == pytest.approx(1.1 - 0.02 * ou[0].detail["letters_correct"], abs=1e-9)
    # a resumed run reads no second chart
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    with TrialStore.open(db) as store:
        assert [a.eye for a in store.visit_acuities(1)].count("OU") == 1


def test_no_binocular_acuity_when_an_eye_is_skipped(tmp_path):
    db = tmp_path / "log.sqlite3"
    assert (
        main(["visit", "run", "--simulate", "--seed", "5", "--quiet", "--db", str(db), "--skip-os", "prosthesis"]) == 0
    )
    with TrialStore.open(db) as store:
        assert [a.eye for a in store.visit_acuities(1)] == ["OD"]
