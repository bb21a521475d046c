"""CSV and JSON of a visit: both eyes, S/C/axis beside the Thibos power vector M, J0, J45.

**CSV, schema** ``visit-6`` (:data:`VISIT_CSV_COLUMNS`): one row per eye, OD first. Numbers in
Python's shortest round-trip form, an absent value is an empty field, booleans ``1``/``0``,
times ISO 8601. Prescriptions are written in the clinic's cylinder form (``cylinder_form``):

=========================== =================================================================
found_*                     the prescription VisionTune found (sphere_d, cylinder_d, axis_deg)
found_m_d / _j0_d / _j45_d  its power vector (D; the same in either cylinder form)
signed_*                    the clinician's edited prescription, who and when (empty if none)
rx_*                        the prescription to dispense: final (signed or found) + balance
rx_m_d / rx_j0_d / rx_j45_d its power vector
*_pm_*                      95% credible half-widths (±) of sphere, cylinder (D), axis (deg),
                            M, J0, J45 (D)
answers_used                the answers the eye's refraction used; ``comparisons_used``,
                            ``sliders_used`` and ``lines_used`` how many of them were comparisons
                            of two lenses, slider answers and chart lines (empty: not recorded)
balance_plus_change_d       the binocular balance's plus change on this eye's sphere
simulated                   1 if a simulated patient answered (**SIMULATED** data)
mark                        ``SIMULATED`` for a simulated patient (as the JSON's ``mark``), else empty
near_add_d                  the near (reading) addition filed for the eye (D, over rx_*), empty if none;
                            ``near_add_lower_d``/``_upper_d`` its 95% credible region,
                            ``near_tentative_add_d`` the add by age, ``near_point_cm`` and
                            ``far_point_cm`` the range of clear vision through it (far empty:
                            infinite), ``near_va_logmar`` the near acuity through it and
                            ``near_distance_cm`` the near chart's distance
examiner                    who ran the refraction (the signing clinician is ``signed_by``)
pd_mm / pd_eye_mm           the pupillary distance (mm): binocular, and this eye's monocular one
                            (empty when measured binocularly only)
start_*                     the eye's starting prescription (sphere_d, cylinder_d, axis_deg) and
                            ``start_source`` (autorefraction, retinoscopy, habitual spectacles,
                            typed; ``none``: the refraction started without one)
habitual_*                  the habitual prescription (spectacles worn) and ``habitual_source``
                            (lensmeter, spectacle prescription, typed)
=========================== =================================================================

``recorded_at`` and ``signed_at`` are local times with their UTC offset (ISO 8601,
``2026-11-28T10:42:00+01:00``).

Schema ``visit-5`` had no ``lines_used`` column; ``visit-4`` no ``examiner``, ``pd_*``, ``start_*``
nor ``habitual_*`` columns; ``visit-3`` had no ``near_*`` columns; ``visit-2`` no ``mark``;
``visit-1`` (before sliders) neither ``comparisons_used`` nor ``sliders_used``. JSON version 2 had
record schema 3 and rows of CSV schema visit-4.

**JSON**: ``{"schema": "visiontune.visit-export", "schema_version": 4, "simulated", "mark":
"SIMULATED" | null, "record": VisitRecord.to_dict(), "eyes": [{...the CSV row as typed
values...}]}``; ``record`` reads back with :meth:`VisitRecord.from_dict` (version 1: the eyes
without ``comparisons_used`` and ``sliders_used``; before 5, without ``lines_used``). JSON version 3
had record schema 4 and rows of CSV schema visit-5.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.report.files import check_output_path, write_private
from visiontune.report.visit_record import VisitRecord

__all__ = ["VISIT_CSV_COLUMNS", "VISIT_JSON_SCHEMA", "visit_csv", "visit_json", "visit_rows", "write_visit_tabular"]

VISIT_CSV_SCHEMA = "visit-6"
VISIT_JSON_SCHEMA_VERSION = 4
VISIT_JSON_SCHEMA = "visiontune.visit-export"
_LENS = ("sphere_d", "cylinder_d", "axis_deg")
_PV = ("m_d", "j0_d", "j45_d")
#: The near addition's columns (schema visit-4 on) and the NearAddition field of each.
_NEAR_FIELDS = {
    "near_add_d": "add_d",
    "near_add_lower_d": "lower_d",
    "near_add_upper_d": "upper_d",
    "near_tentative_add_d": "tentative_add_d",
    "near_point_cm": "near_point_cm",
    "far_point_cm": "far_point_cm",
    "near_va_logmar": "near_va_logmar",
    "near_distance_cm": "distance_cm",
}
NEAR_COLUMNS = tuple(_NEAR_FIELDS)
VISIT_CSV_COLUMNS = (
    "visit_id",
    "patient_id",
    "recorded_at",
    "clinician",
    "cylinder_form",
    "eye",
    "status",
    "skip_reason",
    *(f"found_{k}" for k in _LENS + _PV),
    *(f"signed_{k}" for k in _LENS),
    "signed_by",
    "signed_at",
    *(f"rx_{k}" for k in _LENS + _PV),
    "sphere_pm_d",
    "cylinder_pm_d",
    "axis_pm_deg",
    "m_pm_d",
    "j0_pm_d",
    "j45_pm_d",
    "predicted_va_logmar",
    "measured_va_logmar",
    "answers_used",
    "comparisons_used",
    "sliders_used",
    "stopped_by",
    "session_id",
    "balance_method",
    "balance_plus_change_d",
    "binocular_va_logmar",
    "simulated",
    "software_version",
    "schema",
    "mark",
    *NEAR_COLUMNS,
    "examiner",
    "pd_mm",
    "pd_eye_mm",
    *(f"start_{k}" for k in _LENS),
    "start_source",
    *(f"habitual_{k}" for k in _LENS),
    "habitual_source",
    "lines_used",
)


def _lens(prefix: str, p: Prescription | None, with_vector: bool) -> dict[str, Any]:
    keys = _LENS + (_PV if with_vector else ())
    if p is None:
        return {f"{prefix}_{k}": None for k in keys}
    out = {f"{prefix}_sphere_d": p.sphere_d, f"{prefix}_cylinder_d": p.cylinder_d, f"{prefix}_axis_deg": p.axis_deg}
    if with_vector:
        m, j0, j45 = (float(v) for v in p.power_vector_array())
        out.update({f"{prefix}_m_d": m, f"{prefix}_j0_d": j0, f"{prefix}_j45_d": j45})
    return out


def visit_rows(record: VisitRecord) -> list[dict[str, Any]]:
    """One dict per eye (OD, OS) with the keys of :data:`VISIT_CSV_COLUMNS`, typed values."""
    if not isinstance(record, VisitRecord):
        raise InvalidInputError(f"record: expected a VisitRecord, got {type(record).__name__}")
    record.check_recordable()
    rows = []
    for e in record.eyes:
        s = e.signed_off
        change = None
        if record.balance is not None and e.measured:
            change = record.balance.plus_change_od_d if e.eye == "OD" else record.balance.plus_change_os_d
        row = {
            "visit_id": record.visit_id,
            "patient_id": record.patient_id,
            "recorded_at": record.recorded_at.isoformat(),
            "clinician": record.clinician,
            "cylinder_form": record.cylinder_form,
            "eye": e.eye,
            "status": e.status,
            "skip_reason": e.skip_reason,
            **_lens("found", record.shown(e.prescription), True),
            **_lens("signed", None if s is None else record.shown(s.prescription), False),
            "signed_by": None if s is None else s.by,
            "signed_at": None if s is None else s.at.isoformat(),
            **_lens("rx", record.balanced_prescription(e.eye), True),
            "sphere_pm_d": e.sphere_pm_d,
            "cylinder_pm_d": e.cylinder_pm_d,
            "axis_pm_deg": e.axis_pm_deg,
            "m_pm_d": e.m_pm_d,
            "j0_pm_d": e.j0_pm_d,
            "j45_pm_d": e.j45_pm_d,
            "predicted_va_logmar": e.predicted_va_logmar,
            "measured_va_logmar": e.measured_va_logmar,
            "answers_used": e.answers_used,
            "comparisons_used": e.comparisons_used,
            "sliders_used": e.sliders_used,
            "lines_used": e.lines_used,
            "stopped_by": e.stopped_by,
            "session_id": e.session_id,
            "balance_method": None if record.balance is None else record.balance.method,
            "balance_plus_change_d": change,
            "binocular_va_logmar": record.binocular_va_logmar,
            "simulated": record.simulated,
            "software_version": record.software_version,
            "schema": VISIT_CSV_SCHEMA,
            "mark": "SIMULATED" if record.simulated else None,
        }
        near = record.near_add(e.eye)
        row.update({c: None if near is None else getattr(near, f) for c, f in _NEAR_FIELDS.items()})
        row.update(
            {
                "examiner": record.examiner_or_clinician,
                "pd_mm": record.pd_mm,
                "pd_eye_mm": record.pd_od_mm if e.eye == "OD" else record.pd_os_mm,
                **_lens("start", record.shown(record.start(e.eye)), False),
                "start_source": record.start_source(e.eye),
                **_lens("habitual", record.shown(record.habitual(e.eye)), False),
                "habitual_source": None if record.habitual(e.eye) is None else record.habitual_source,
            }
        )
        rows.append(row)
    return rows


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def visit_csv(record: VisitRecord) -> str:
    """CSV text (schema ``visit-5``): a header and one row per eye."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(VISIT_CSV_COLUMNS)
    for row in visit_rows(record):
        writer.writerow([_cell(row[c]) for c in VISIT_CSV_COLUMNS])
    return buf.getvalue()


def visit_json(record: VisitRecord) -> str:
    """JSON text of the visit (see the module docstring)."""
    doc = {
        "schema": VISIT_JSON_SCHEMA,
        "schema_version": VISIT_JSON_SCHEMA_VERSION,
        "simulated": record.simulated,
        "mark": "SIMULATED" if record.simulated else None,
        "record": record.to_dict(),
        "eyes": visit_rows(record),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_visit_tabular(
    record: VisitRecord,
    csv_path: str | os.PathLike | None = None,
    json_path: str | os.PathLike | None = None,
    protected: tuple[Path, ...] = (),
) -> dict[str, Path]:
    """Write the CSV and/or JSON (mode 0600, atomic); both rendered before either is written.
    Returns ``{"csv": path, "json": path}`` for those written."""
    targets = {k: p for k, p in (("csv", csv_path), ("json", json_path)) if p is not None}
    if not targets:
        raise InvalidInputError("write_visit_tabular: give csv_path and/or json_path")
    checked = {k: check_output_path(k, p, protected) for k, p in targets.items()}
    if len(set(checked.values())) != len(checked):
        raise InvalidInputError(f"csv and json outputs are the same file: {checked['csv']}")
    rendered = {"csv": visit_csv, "json": visit_json}
    data = {k: rendered[k](record).encode("utf-8") for k in checked}
    for k, p in checked.items():
        write_private(p, data[k])
    return checked
