"""A visit read from the trial log as a :class:`VisitRecord`, and its records written to files.

:func:`load_visit` only reads the log (the visit's rows and its sessions through
:func:`~visiontune.report.finished_session.load_session`). Per eye:

* ``prescription``: the *found* lens (the session result's ``rounded``), kept whatever the
  clinician signs off; ``signed_off``: the latest sign-off of that eye, if any;
* 95% credible half-widths: half the widths of the result's sphere and cylinder intervals, its
  axis ``±`` (90° when the estimate has no cylinder: any axis), ``M ±`` and, for both ``J0`` and
  ``J45``, the radius of the cylinder vector ``J = (J0, J45)`` (a bound on each). A result
  without the power-vector radii (the GP model's schema v1) gets ``M ± = S± + C±/2`` and
  ``J ± = C±/2``, bounds that follow from ``M = S + C/2`` and ``|J| = |C|/2``;
* ``measured_va_logmar``: the latest acuity of the eye recorded through a lens equal (as a
  power vector) to its final prescription now; an acuity read through another lens (before a
  later sign-off) is not reported as the acuity through the final one. ``binocular_va_logmar``
  likewise, with both final lenses;
* the balance: its method and outcome, and the plus changes; a balance *not done* is no
  balance in the record.

A visit is recordable once every eye is finished or skipped and at least one is finished;
otherwise :class:`~visiontune.errors.InvalidInputError` says which eye is where.

:func:`export_visit` renders every requested file in memory first (PDF, FHIR Bundle, both
DICOM objects, CSV, JSON), so a refused export (a DICOM export without a patient id, a bad
path) writes nothing; then writes each file user-only (0600) and atomically. The log is only
read, never created or migrated.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.report.dicom_visit import export_dicom_files
from visiontune.report.export import _check_log_read_only
from visiontune.report.fhir_visit import visit_bundle_json
from visiontune.report.files import check_output_path, write_private
from visiontune.report.finished_session import SessionRecord, load_session
from visiontune.report.tabular_visit import visit_csv, visit_json
from visiontune.report.visit_pdf import visit_pdf_bytes
from visiontune.report.visit_record import (
    BinocularBalance,
    EyeRecord,
    NearAddition,
    SignOff,
    VisitRecord,
)
from visiontune.session.near_store import near_add_records
from visiontune.session.store import TrialStore, default_database_path
from visiontune.session.visit import eye_statuses, final_prescription
from visiontune.session.visit_records import START_SOURCE_OF_STARTING_POINT, VISIT_EYES, visit_inputs

__all__ = ["LoadedVisit", "VisitExportPaths", "export_visit", "load_visit", "render_visit"]

PathLike = str | os.PathLike


@dataclass(frozen=True)
class LoadedVisit:
    """The visit's record and the session records of its measured eyes (``{"OD": ...}``)."""

    record: VisitRecord
    sessions: dict[str, SessionRecord]


def _eye_record(eye: str, session: SessionRecord, signed, measured_va: float | None) -> EyeRecord:
    r = session.result
    sphere_pm = (r.sphere_interval_d[1] - r.sphere_interval_d[0]) / 2.0
    cylinder_pm = (r.cylinder_interval_d[1] - r.cylinder_interval_d[0]) / 2.0
    radii = r.region_radii_d or {}
    m_pm = radii.get("m_pm_d", sphere_pm + cylinder_pm / 2.0)
    j_pm = radii.get("cylinder_vector_pm_d", cylinder_pm / 2.0)
    axis_pm = 90.0 if r.axis_pm_deg is None else min(90.0, r.axis_pm_deg)
    return EyeRecord(
        eye=eye,
        prescription=Prescription(r.rounded.sphere_d, r.rounded.cylinder_d, r.rounded.axis_deg),
        signed_off=None if signed is None else SignOff(signed.prescription, signed.by, signed.at.astimezone()),
        sphere_pm_d=sphere_pm,
        cylinder_pm_d=cylinder_pm,
        axis_pm_deg=axis_pm,
        m_pm_d=m_pm,
        j0_pm_d=j_pm,
        j45_pm_d=j_pm,
        predicted_va_logmar=r.predicted_va_logmar,
        measured_va_logmar=measured_va,
        answers_used=r.trials_used,
        stopped_by=r.stopped_by,
        session_id=session.session_id,
        comparisons_used=r.comparisons_used,
        sliders_used=r.sliders_used,
        lines_used=r.lines_used,
    )


def load_visit(store: TrialStore, visit_id: int, *, omit_patient_id: bool = False) -> LoadedVisit:
    """Read visit ``visit_id`` (module docstring). ``omit_patient_id``: leave the pseudonymous
    id out of the record (a DICOM export then refuses: DICOM needs a Patient ID)."""
    visit = store.get_visit(visit_id)
    vid = visit.visit_id
    statuses = eye_statuses(store, vid)
    where = ", ".join(
        f"{e} {s.state}" + (f" (session {s.session_id})" if s.session_id else "") for e, s in statuses.items()
    )
    if not any(s.finished for s in statuses.values()):
        raise InvalidInputError(f"visit {vid}: no eye has a finished refraction ({where}); there is nothing to record")
    pending = [e for e, s in statuses.items() if s.state not in ("finished", "skipped")]
    if pending:
        raise InvalidInputError(
            f"visit {vid}: {' and '.join(pending)} not done ({where}); finish that refraction "
            "(or skip an eye not started) before the visit is recorded"
        )
    signoffs = {s.eye: s for s in store.visit_signoffs(vid)}  # the latest of each eye
    acuities = store.visit_acuities(vid)
    finals = {e: final_prescription(store, vid, e) for e in VISIT_EYES}

    def through_final(eye: str) -> float | None:
        eyes = ("OD", "OS") if eye == "OU" else (eye,)
        if any(finals[e] is None for e in eyes):
            return None
        found = [
            a.va_logmar
            for a in acuities
            if a.eye == eye and all(e in a.lenses and a.lenses[e].is_equivalent(finals[e], 1e-6) for e in eyes)
        ]
        return found[-1] if found else None

    sessions: dict[str, SessionRecord] = {}
    eyes = {}
    for eye, status in statuses.items():
        if status.state == "skipped":
            eyes[eye] = EyeRecord(eye=eye, status="skipped", skip_reason=status.skip_reason)
            continue
        sessions[eye] = load_session(store, status.session_id)
        eyes[eye] = _eye_record(eye, sessions[eye], signoffs.get(eye), through_final(eye))
    outcome = store.visit_balance(vid)
    balance = None
    if outcome is not None and outcome.done:
        method = f"{outcome.method}: {outcome.outcome}" + (f" ({outcome.reason})" if outcome.reason else "")
        balance = BinocularBalance(method, outcome.plus_change_od_d, outcome.plus_change_os_d)
    record = VisitRecord(
        visit_id=str(vid),
        patient_id=None if omit_patient_id else visit.patient_id,
        recorded_at=visit.created_at.astimezone(),
        od=eyes["OD"],
        os=eyes["OS"],
        software_version=visit.software_version,
        simulated=visit.simulated,
        cylinder_form=visit.cylinder_form,
        clinician=visit.clinician,
        age_years=visit.age_years,
        habitual_od=visit.habitual_od,
        habitual_os=visit.habitual_os,
        balance=balance,
        binocular_va_logmar=through_final("OU"),
        near=_near_additions(store, vid),
        **_inputs(store, vid, sessions),
    )
    return LoadedVisit(record, sessions)


def _inputs(store: TrialStore, vid: int, sessions: dict[str, SessionRecord]) -> dict:
    """The record's visit inputs: pupillary distance, examiner and the habitual prescription's
    source as entered (:func:`~visiontune.session.visit_records.visit_inputs`); each measured eye's
    starting prescription from its session, its source as entered at the visit, else the
    session's own (:data:`~visiontune.session.visit_records.START_SOURCE_OF_STARTING_POINT`)."""
    given = visit_inputs(store, vid)
    out = {
        "pd_mm": given.pd_mm,
        "pd_od_mm": given.pd_od_mm,
        "pd_os_mm": given.pd_os_mm,
        "examiner": given.examiner,
        "habitual_source": given.habitual_source,
    }
    visit = store.get_visit(vid)
    if visit.habitual_od is None and visit.habitual_os is None:
        out["habitual_source"] = None
    for eye, rec in sessions.items():
        e = eye.lower()
        start = rec.result.starting_rx
        source = given.start_source(eye) or START_SOURCE_OF_STARTING_POINT.get(rec.result.starting_source or "none")
        if start is not None:
            out[f"start_{e}"] = Prescription(start.sphere_d, start.cylinder_d, start.axis_deg)
            out[f"start_source_{e}"] = source if source not in (None, "none") else "typed"
        else:
            out[f"start_source_{e}"] = "none"
    return out


def _near_additions(store: TrialStore, vid: int) -> tuple[NearAddition, ...]:
    """The near addition filed per eye (:mod:`visiontune.session.near_store`), none before the near step."""
    return tuple(
        NearAddition(
            eye=e,
            add_d=n.add_d,
            lower_d=n.lower_d,
            upper_d=n.upper_d,
            tentative_add_d=n.tentative_add_d,
            near_va_logmar=n.near_va_logmar,
            distance_cm=n.distance_cm,
            method=n.method,
            near_point_cm=n.near_point_cm,
            far_point_cm=n.far_point_cm,
        )
        for e, n in near_add_records(store, vid).items()
    )


@dataclass(frozen=True)
class VisitExportPaths:
    """Where to write each record; ``None`` skips it. ``dicom_dir``: an existing folder that
    receives the DICOM objects (refraction and acuity, and the lensometry / autorefraction of what
    the visit started from, when it has them)."""

    pdf: PathLike | None = None
    fhir: PathLike | None = None
    dicom_dir: PathLike | None = None
    csv: PathLike | None = None
    json: PathLike | None = None

    def kinds(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]


def render_visit(
    loaded: LoadedVisit, paths: VisitExportPaths, protected: tuple[Path, ...] = ()
) -> list[tuple[str, Path, bytes]]:
    """Check every destination and render every requested record in memory:
    ``[(kind, path, bytes), ...]``. Nothing is written; any error is raised here."""
    record = loaded.record
    if not paths.kinds():
        raise InvalidInputError("nothing to export: give at least one of --pdf, --fhir, --dicom-dir, --csv, --json")
    record.check_recordable()
    out: list[tuple[str, Path, bytes]] = []
    flag = {"dicom_dir": "--dicom-dir"}
    if paths.dicom_dir is not None:
        folder = Path(os.fsdecode(paths.dicom_dir)).expanduser().absolute()
        if not folder.is_dir():
            raise InvalidInputError(f"--dicom-dir: {folder} is not an existing folder")
        for name, data in export_dicom_files(record).items():
            out.append(("dicom", check_output_path("--dicom-dir", folder / name, protected), data))
    renderers = {
        "pdf": lambda: _pdf(loaded),
        "fhir": lambda: _fhir(record),
        "csv": lambda: _csv(record),
        "json": lambda: _json(record),
    }
    for kind, render in renderers.items():
        target = getattr(paths, kind)
        if target is not None:
            out.append((kind, check_output_path(flag.get(kind, f"--{kind}"), target, protected), render()))
    seen: dict[Path, str] = {}
    for kind, path, _ in out:
        if path in seen:
            raise InvalidInputError(f"--{kind}: {path} is also the {seen[path]} output")
        seen[path] = kind
    return out


def _pdf(loaded: LoadedVisit) -> bytes:
    return visit_pdf_bytes(loaded.record, loaded.sessions)


def _fhir(record: VisitRecord) -> bytes:
    return visit_bundle_json(record).encode("utf-8")


def _csv(record: VisitRecord) -> bytes:
    return visit_csv(record).encode("utf-8")


def _json(record: VisitRecord) -> bytes:
    return visit_json(record).encode("utf-8")


def export_visit(
    db_path: PathLike | None, visit_id: int, paths: VisitExportPaths, *, omit_patient_id: bool = False
) -> dict[str, list[Path]]:
    """Read visit ``visit_id`` from the trial log at ``db_path`` (default location if ``None``)
    and write the requested records; return ``{kind: [paths written]}``. Everything is checked
    and rendered before the first file is written."""
    path = Path(default_database_path() if db_path is None else db_path).expanduser().absolute()
    _check_log_read_only(path)
    with TrialStore.open(path, read_only=True) as store:
        loaded = load_visit(store, visit_id, omit_patient_id=omit_patient_id)
        rendered = render_visit(loaded, paths, protected=(store.path,))
    written: dict[str, list[Path]] = {}
    for kind, target, data in rendered:
        write_private(target, data, name=f"--{kind}")
        written.setdefault(kind, []).append(target)
    return written
