"""FHIR VisionPrescription: validated by the FHIR model library, values equal the result's."""

from __future__ import annotations

import json

import pytest
from fhir.resources.R4B.visionprescription import VisionPrescription

from visiontune.report import load_session
from visiontune.report.fhir import PATIENT_ID_SYSTEM, vision_prescription_json


def _resource(store, sid) -> tuple[VisionPrescription, dict]:
    text = vision_prescription_json(load_session(store, sid))
    return VisionPrescription.model_validate_json(text), json.loads(text)


@pytest.mark.parametrize(("eye", "fhir_eyes"), [("OD", ["right"]), ("OS", ["left"]), ("OU", ["right", "left"])])
def test_resource_validates_and_equals_the_result(store, make_session, eye, fhir_eyes):
    sid = make_session(eye=eye)
    model, doc = _resource(store, sid)
    rounded = store.get_session(sid).result["rounded"]
    assert doc["resourceType"] == "VisionPrescription" and doc["status"] == "draft"
    assert [s.eye for s in model.lensSpecification] == fhir_eyes
    for spec in model.lensSpecification:
        assert float(spec.sphere) == rounded["sphere_d"] == -1.25
        assert float(spec.cylinder) == rounded["cylinder_d"] == -0.5
        assert spec.axis == rounded["axis_deg"] == 90
        assert spec.product.coding[0].code == "lens"
    assert doc["patient"]["identifier"] == {"system": PATIENT_ID_SYSTEM, "value": "P-0042"}
    assert doc["created"].startswith("2026-03-04")
    assert "SIMULATED" not in json.dumps(doc) and "meta" not in doc


def test_simulated_session_is_tagged_and_noted(store, make_session):
    model, doc = _resource(store, make_session(simulated=True))
    act_reason = "http://terminology.hl7.org/CodeSystem/v3-ActReason"
    assert [(t.system, t.code) for t in model.meta.tag] == [(act_reason, "HTEST")]
    for spec in model.lensSpecification:
        assert spec.note[0].text.startswith("SIMULATED")


def test_exact_estimate_and_interval_in_the_note(store, make_session):
    model, _ = _resource(store, make_session())
    note = model.lensSpecification[0].note[-1].text
    assert "sphere -1.312 D" in note and "cylinder -0.562 D" in note
    assert "predicted acuity 0.12 logMAR (20/26)" in note


def test_the_note_counts_the_answers_of_each_kind(store, make_session, slider_session):
    """Letters, comparisons and sliders are named in the note (the SIMULATED engine session);
    a session of letters only says how many answers, no kinds."""
    model, doc = _resource(store, slider_session)
    r = store.get_session(slider_session).result
    letters = r["trials_used"] - r["comparisons_used"] - r["sliders_used"]
    assert r["sliders_used"] >= 2 and r["comparisons_used"] >= 2 and letters >= 2
    note = model.lensSpecification[0].note[-1].text
    assert note.endswith(
        f"; {r['trials_used']} answers ({letters} letters, {r['comparisons_used']} comparisons, "
        f"{r['sliders_used']} sliders)."
    )
    assert model.lensSpecification[0].note[0].text.startswith("SIMULATED")
    letters_only = _resource(store, make_session(n_trials=5, undo_at=(), comparisons=False))[0]
    assert letters_only.lensSpecification[0].note[-1].text.endswith("; 5 answers.")


def test_the_note_gives_the_over_minus_check_where_the_result_holds_it(store, make_session):
    model, _ = _resource(store, make_session(over_minus_risk=0.0123))
    assert (
        model.lensSpecification[0]
        .note[-1]
        .text.endswith(
            "Over-minus check (a patient who may accommodate): more minus than the correction by over 0.25 D 1.2% "
            "likely."
        )
    )
    model, _ = _resource(store, make_session())
    assert "Over-minus" not in model.lensSpecification[0].note[-1].text


def test_spherical_result_has_no_axis(store, make_session):
    sid = make_session(rounded={"sphere_d": 2.0, "cylinder_d": 0.0, "axis_deg": 180.0})
    model, doc = _resource(store, sid)
    assert float(model.lensSpecification[0].sphere) == 2.0 and float(model.lensSpecification[0].cylinder) == 0.0
    assert "axis" not in doc["lensSpecification"][0]


def test_library_rejects_what_fhir_forbids():
    """The oracle itself: the model library refuses a fractional axis and a missing status."""
    base = {
        "resourceType": "VisionPrescription",
        "status": "draft",
        "created": "2026-01-01T00:00:00Z",
        "dateWritten": "2026-01-01T00:00:00Z",
        "patient": {"display": "x"},
        "prescriber": {"display": "y"},
        "lensSpecification": [{"product": {"text": "lens"}, "eye": "right", "axis": 90.5}],
    }
    with pytest.raises(ValueError):
        VisionPrescription(**base)
    base["lensSpecification"][0]["axis"] = 90
    VisionPrescription(**base)
    del base["status"]
    with pytest.raises(ValueError):
        VisionPrescription(**base)
