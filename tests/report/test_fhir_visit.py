"""FHIR Bundle of a visit: validated by fhir.resources, values equal the record's, marks right."""

from __future__ import annotations

import json
import stat

import pytest
from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.observation import Observation
from fhir.resources.R4B.patient import Patient
from fhir.resources.R4B.practitioner import Practitioner
from fhir.resources.R4B.visionprescription import VisionPrescription
from visit_helpers import make_visit, measured_eye, skipped_eye

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.report.fhir_visit import (
    LOINC,
    PATIENT_ID_SYSTEM,
    SNOMED,
    visit_bundle,
    visit_bundle_dict,
    visit_bundle_json,
    write_visit_fhir,
)

HTEST = ("http://terminology.hl7.org/CodeSystem/v3-ActReason", "HTEST")


def _parsed(record):
    text = visit_bundle_json(record)
    return Bundle.model_validate_json(text), json.loads(text)


def _refractions(doc):
    """The subjective refraction Observations (LOINC 79895-9), not the starting or habitual ones."""
    return [
        o
        for o in _resources(doc, "Observation")
        if any(c.get("code") == "79895-9" for c in o["code"].get("coding", []))
    ]


def _resources(doc, kind):
    return [e["resource"] for e in doc["entry"] if e["resource"]["resourceType"] == kind]


def _component(obs, snomed_code):
    (c,) = [c for c in obs["component"] if any(k["code"] == snomed_code for k in c["code"]["coding"])]
    return c


def test_bundle_validates_and_every_entry_validates_as_its_own_type():
    _model, doc = _parsed(make_visit())
    assert doc["type"] == "collection"
    kinds = [e["resource"]["resourceType"] for e in doc["entry"]]
    # 2 refractions, 2 + 1 acuities; the examiner (who also signed off); the habitual prescription of OD
    assert kinds == ["Patient", "VisionPrescription"] + ["Observation"] * 5 + ["Practitioner", "Observation"]
    classes = {
        "Patient": Patient,
        "VisionPrescription": VisionPrescription,
        "Observation": Observation,
        "Practitioner": Practitioner,
    }
    for entry in doc["entry"]:
        classes[entry["resource"]["resourceType"]].model_validate(entry["resource"])
        assert entry["fullUrl"] == f"urn:uuid:{entry['resource']['id']}"
    # the library does not enforce required value sets on codes: check the ones we write
    assert {o["status"] for o in _resources(doc, "Observation")} == {"final"}
    assert _resources(doc, "VisionPrescription")[0]["status"] == "draft"


def test_references_resolve_inside_the_bundle():
    _, doc = _parsed(make_visit())
    urls = {e["fullUrl"] for e in doc["entry"]}
    (patient,) = _resources(doc, "Patient")
    assert patient["identifier"] == [{"system": PATIENT_ID_SYSTEM, "value": "P-0042"}]
    for r in _resources(doc, "Observation"):
        assert r["subject"]["reference"] in urls
    assert _resources(doc, "VisionPrescription")[0]["patient"]["reference"] == f"urn:uuid:{patient['id']}"


def test_vision_prescription_holds_both_eyes_final_and_balanced_in_clinic_form():
    _, doc = _parsed(make_visit())
    specs = {s["eye"]: s for s in _resources(doc, "VisionPrescription")[0]["lensSpecification"]}
    # OD found -1.25/-0.50x90, balance +0.25 -> -1.00/-0.50x90; OS signed off -1.75/-0.75x175, no change
    assert (specs["right"]["sphere"], specs["right"]["cylinder"], specs["right"]["axis"]) == (-1.0, -0.5, 90)
    assert (specs["left"]["sphere"], specs["left"]["cylinder"], specs["left"]["axis"]) == (-1.75, -0.75, 175)
    assert all(s["product"]["coding"][0]["code"] == "lens" for s in specs.values())
    left_note = specs["left"]["note"][-1]["text"]
    assert "Found by VisionTune: S -2.00 / C -0.75 x 175" in left_note  # the found one is kept
    assert "signed off by Dr A. Optom" in left_note and "S -1.75 / C -0.75 x 175" in left_note
    assert "sphere ±0.25 D" in left_note and "J45 ±0.10 D" in left_note


def test_plus_cylinder_clinic_gets_plus_cylinder_lenses():
    visit = make_visit(cylinder_form="plus", os=skipped_eye(), balance=None)
    _, doc = _parsed(visit)
    (spec,) = _resources(doc, "VisionPrescription")[0]["lensSpecification"]
    assert (spec["sphere"], spec["cylinder"], spec["axis"]) == (-1.75, 0.5, 180)
    (refraction,) = _refractions(doc)
    assert _component(refraction, "251797004")["valueQuantity"]["value"] == 0.5


def test_refraction_observations_carry_standard_codes_and_values():
    visit = make_visit()
    _, doc = _parsed(visit)
    refractions = _refractions(doc)
    assert [o["bodySite"]["text"] for o in refractions] == ["right eye (OD)", "left eye (OS)"]
    for obs, eye, loinc in zip(
        refractions,
        (visit.od, visit.os),
        (("65890-6", "65892-2", "65891-4"), ("65894-8", "65896-3", "65895-5")),
        strict=True,
    ):
        assert {(c["system"], c["code"]) for c in obs["code"]["coding"]} == {(LOINC, "79895-9"), (SNOMED, "251794006")}
        assert obs["method"]["coding"][0]["code"] == "397277005"
        p = eye.prescription  # the found prescription (already minus cylinder)
        for snomed, lc, value, unit in (
            ("251795007", loinc[0], p.sphere_d, "[diop]"),
            ("251797004", loinc[1], p.cylinder_d, "[diop]"),
            ("251799001", loinc[2], p.axis_deg, "deg"),
        ):
            c = _component(obs, snomed)
            assert (LOINC, lc) in {(k["system"], k["code"]) for k in c["code"]["coding"]}
            assert c["valueQuantity"]["value"] == value and c["valueQuantity"]["code"] == unit
        m, j0, j45 = p.power_vector_array()
        local = {
            c["code"]["coding"][0]["code"]: c["valueQuantity"]["value"]
            for c in obs["component"]
            if c["code"]["coding"][0]["system"] == "urn:visiontune:code"
        }
        assert local == pytest.approx({"power-vector-M": m, "power-vector-J0": j0, "power-vector-J45": j45}, abs=1e-4)


def test_acuity_observations_in_logmar_measured_or_predicted():
    _, doc = _parsed(make_visit())
    acuities = [o for o in _resources(doc, "Observation") if "valueQuantity" in o]
    assert [(o["bodySite"]["text"], o["valueQuantity"]["value"]) for o in acuities] == [
        ("right eye (OD)", 0.02),
        ("left eye (OS)", 0.0),
        ("both eyes (OU)", -0.04),
    ]
    assert all(
        o["code"]["coding"][0]["code"] == "251739003" and o["valueQuantity"]["unit"] == "logMAR" for o in acuities
    )
    assert acuities[0]["method"]["text"].startswith("measured")
    assert acuities[1]["method"]["text"].startswith("predicted")
    assert "6/6" in acuities[1]["note"][0]["text"] and "decimal 1.00" in acuities[1]["note"][0]["text"]


def test_the_notes_count_the_answers_of_each_kind():
    _, doc = _parsed(make_visit(od=measured_eye("OD", comparisons_used=10, sliders_used=4)))
    text = json.dumps(doc)
    assert "64 answers (50 letters, 10 comparisons, 4 sliders), stopped by precision; VisionTune session 7." in text
    assert "64 answers, stopped by precision; VisionTune session 8." in text


def test_zero_cylinder_has_no_axis():
    visit = make_visit(od=measured_eye("OD", prescription=Prescription(1.5, 0.0, 180.0)), balance=None)
    _, doc = _parsed(visit)
    right = _resources(doc, "VisionPrescription")[0]["lensSpecification"][0]
    assert right["eye"] == "right" and "axis" not in right


def test_simulated_visit_tags_every_resource_and_the_bundle():
    model, doc = _parsed(make_visit(simulated=True))
    assert [(t.system, t.code) for t in model.meta.tag] == [HTEST]
    for entry in doc["entry"]:
        tags = [(t["system"], t["code"]) for t in entry["resource"]["meta"]["tag"]]
        assert tags == [HTEST], entry["resource"]["resourceType"]
    for spec in _resources(doc, "VisionPrescription")[0]["lensSpecification"]:
        assert spec["note"][0]["text"].startswith("SIMULATED")


def test_real_visit_never_carries_the_simulated_marks():
    _, doc = _parsed(make_visit(simulated=False))
    text = json.dumps(doc)
    assert "HTEST" not in text and "SIMULATED" not in text and "meta" not in text


def test_skipped_eye_is_left_out_and_no_measured_eye_is_an_error():
    _, doc = _parsed(make_visit(os=skipped_eye(), balance=None, binocular_va_logmar=None))
    assert [s["eye"] for s in _resources(doc, "VisionPrescription")[0]["lensSpecification"]] == ["right"]
    assert len(_resources(doc, "Observation")) == 3  # the refraction, the acuity, the habitual prescription of OD
    assert len(_refractions(doc)) == 1
    with pytest.raises(InvalidInputError, match="no eye was measured"):
        visit_bundle(make_visit(od=skipped_eye("OD"), os=skipped_eye("OS"), balance=None))


def test_patient_without_id_still_gives_a_valid_bundle():
    _, doc = _parsed(make_visit(patient_id=None))
    assert "identifier" not in _resources(doc, "Patient")[0]


def test_ids_are_stable_across_exports():
    assert visit_bundle_dict(make_visit()) == visit_bundle_dict(make_visit())


def test_written_file_is_private_and_reads_back(tmp_path):
    out = write_visit_fhir(make_visit(), tmp_path / "visit.json")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert Bundle.model_validate_json(out.read_text()).type == "collection"


def test_error_leaves_no_file(tmp_path):
    bad = make_visit(od=skipped_eye("OD"), os=skipped_eye("OS"), balance=None)
    with pytest.raises(InvalidInputError):
        write_visit_fhir(bad, tmp_path / "visit.json")
    assert list(tmp_path.iterdir()) == []
