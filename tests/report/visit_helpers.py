"""Builders of the visit-record tests: a two-eye visit with known values."""

from __future__ import annotations

from datetime import UTC, datetime

from visiontune.optics.prescription import Prescription
from visiontune.report.visit_record import (
    BinocularBalance,
    EyeRecord,
    SignOff,
    VisitRecord,
)

VISIT_AT = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)


def measured_eye(eye: str = "OD", **overrides) -> EyeRecord:
    """OD: S -1.25 / C -0.50 x 90 (VA 0.10 predicted); OS: S -2.00 / C -0.75 x 175 (VA 0.00)."""
    values = {
        "OD": {"prescription": Prescription(-1.25, -0.5, 90.0), "predicted_va_logmar": 0.1, "session_id": 7},
        "OS": {"prescription": Prescription(-2.0, -0.75, 175.0), "predicted_va_logmar": 0.0, "session_id": 8},
    }[eye]
    kwargs = dict(
        eye=eye,
        status="measured",
        sphere_pm_d=0.25,
        cylinder_pm_d=0.375,
        axis_pm_deg=12.0,
        m_pm_d=0.2,
        j0_pm_d=0.15,
        j45_pm_d=0.1,
        answers_used=64,
        stopped_by="precision",
        **values,
    )
    kwargs.update(overrides)
    return EyeRecord(**kwargs)


def skipped_eye(eye: str = "OS", reason: str = "prosthetic eye") -> EyeRecord:
    return EyeRecord(eye=eye, status="skipped", skip_reason=reason)


def make_visit(simulated: bool = False, **overrides) -> VisitRecord:
    """A finished visit of patient P-0042: both eyes measured, OS signed off with an edit,
    a binocular balance of +0.25 D on OD, binocular acuity -0.04 logMAR."""
    kwargs = {
        "visit_id": "V-0001",
        "patient_id": "P-0042",
        "recorded_at": VISIT_AT,
        "software_version": "0.1.0",
        "simulated": simulated,
        "cylinder_form": "minus",
        "clinician": "Dr A. Optom",
        "age_years": 47,
        "habitual_od": Prescription(-1.0, -0.25, 85.0),
        "habitual_os": None,
        "od": measured_eye("OD", measured_va_logmar=0.02),
        "os": measured_eye("OS", signed_off=SignOff(Prescription(-1.75, -0.75, 175.0), "Dr A. Optom", VISIT_AT)),
        "balance": BinocularBalance("alternate occlusion, equal-plus comparison", 0.25, 0.0),
        "binocular_va_logmar": -0.04,
    }
    kwargs.update(overrides)
    return VisitRecord(**kwargs)
