"""Send a visit's records to the clinic's archive: the DICOM objects to its PACS, the FHIR
resources to its FHIR server; every step recorded in the trial log.

Used by ``visiontune visit send`` and the app's "Send to archive" (Qt-free). Order:

1. the destinations come from the clinic's settings only
   (:func:`~visiontune.report.archive_config.load_archive_config`); a kind asked for without its
   destination is refused before anything is done;
2. the visit is read from the trial log and every object rendered in memory (the same bytes
   ``visit export`` writes: :func:`~visiontune.report.dicom_visit.export_dicom_files`, and the
   FHIR Bundle of :func:`~visiontune.report.fhir_visit.visit_bundle_json`), so a visit that cannot
   be recorded is refused before anything is sent;
3. per kind, a ``started`` row in ``visit_archive_sends`` (:mod:`visiontune.session.archive_sends`:
   what, where, when) is committed *before* the network is touched; then the send; then a
   ``sent`` row (the SOP Instance UIDs, the FHIR ``Type/id``) or a ``failed`` row (the error).

A failed kind does not stop the other one; nothing local is changed or deleted by a failure
(no file is read or written; the log only gains rows). A simulated visit's objects carry its
SIMULATED marks (DICOM descriptions and Patient Comments, FHIR ``HTEST`` tags), its log rows
``"simulated": true`` and its printed lines the word SIMULATED.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import ConfigurationError, InvalidInputError, StoreError, VisionTuneError, one_line
from visiontune.report.archive_config import ArchiveConfig, ArchiveSendError
from visiontune.report.dicom_send import send_dicom
from visiontune.report.dicom_visit import export_dicom_files
from visiontune.report.fhir_send import post_transaction, transaction_bundle
from visiontune.report.fhir_visit import visit_bundle_json
from visiontune.report.visit_export import load_visit
from visiontune.session.archive_sends import record_archive_send
from visiontune.session.store import TrialStore, default_database_path

__all__ = ["SendOutcome", "send_visit"]

PathLike = str | os.PathLike


@dataclass(frozen=True)
class SendOutcome:
    """One kind's send: ``what`` (``dicom``/``fhir``), ``destination``, ``ok``, the ``lines`` to
    show (what is where now), ``error`` (the message) when it failed, ``items``: the lines
    without the destination."""

    what: str
    destination: str
    ok: bool
    lines: tuple[str, ...]
    error: str | None = None
    items: tuple[str, ...] = ()  # the lines without the destination (shown under it in the app)

    def text(self) -> str:
        return "\n".join(self.lines) if self.ok else f"{self.what.upper()} not sent: {self.error}"


def _kinds(config: ArchiveConfig, dicom: bool, fhir: bool) -> list[str]:
    if not (dicom or fhir):
        raise InvalidInputError("nothing to send: give --dicom and/or --fhir")
    missing = [k for k, wanted in (("dicom", dicom), ("fhir", fhir)) if wanted and getattr(config, k) is None]
    if missing:
        raise ConfigurationError(
            f"{one_line(config.source)} has no [{'] or ['.join(missing)}] destination; the clinic "
            "configures where records go; nothing was sent"
        )
    return [k for k, wanted in (("dicom", dicom), ("fhir", fhir)) if wanted]


def send_visit(
    db_path: PathLike | None, visit_id: int, config: ArchiveConfig, *, dicom: bool = True, fhir: bool = False
) -> list[SendOutcome]:
    """Send visit ``visit_id`` of the trial log at ``db_path`` (default location if ``None``) to
    the destinations of ``config`` (module docstring); one :class:`SendOutcome` per kind, in the
    order DICOM, FHIR. Raises (before anything is sent) for a missing destination, log or visit,
    or a visit that cannot be recorded."""
    if not isinstance(config, ArchiveConfig):
        raise InvalidInputError(f"config: expected an ArchiveConfig, got {type(config).__name__}")
    kinds = _kinds(config, dicom, fhir)
    path = Path(default_database_path() if db_path is None else db_path).expanduser().absolute()
    if not path.is_file():
        raise StoreError(f"no trial log at {one_line(path)}; nothing was sent")
    outcomes: list[SendOutcome] = []
    with TrialStore.open(path) as store:
        record = load_visit(store, visit_id).record
        vid = int(record.visit_id)
        mark = "SIMULATED " if record.simulated else ""
        payload = {
            "dicom": export_dicom_files(record) if "dicom" in kinds else None,
            "fhir": json.loads(visit_bundle_json(record)) if "fhir" in kinds else None,
        }
        for kind in kinds:
            dest = getattr(config, kind)
            where = dest.where()
            base = {"simulated": record.simulated, "config": str(config.source)}
            if kind == "dicom":
                started = {**base, "objects": sorted(payload["dicom"]), "calling_ae_title": dest.calling_ae_title}
            else:
                started = {**base, "resources": [e["resource"]["resourceType"] for e in payload["fhir"]["entry"]]}
            record_archive_send(store, vid, kind, where, "started", started)
            try:
                if kind == "dicom":
                    result = send_dicom(payload["dicom"], dest)
                    done = [o.to_dict() for o in result.stored]
                    lines = tuple(
                        f"{mark}DICOM {o.sop_class_name} -> {where} as {dest.calling_ae_title}: "
                        f"SOP Instance UID {o.sop_instance_uid}"
                        + ("" if o.status == 0 else f" (warning 0x{o.status:04X})")
                        for o in result.stored
                    )
                    items = tuple(
                        f"{mark}{o.sop_class_name}: SOP Instance UID {o.sop_instance_uid}" for o in result.stored
                    )
                    detail = {**base, "stored": done}
                else:
                    result = post_transaction(transaction_bundle(payload["fhir"]), dest)
                    lines = tuple(
                        f"{mark}FHIR {r.resource_type} -> {where}/{r.location} ({r.status})" for r in result.resources
                    )
                    items = tuple(f"{mark}{r.location} ({r.status})" for r in result.resources)
                    detail = {**base, "resources": [r.to_dict() for r in result.resources]}
            except ArchiveSendError as exc:
                sent = [o.to_dict() for o in getattr(exc, "sent", ())]
                record_archive_send(store, vid, kind, where, "failed", {**base, "error": str(exc), "stored": sent})
                outcomes.append(SendOutcome(kind, where, False, (), str(exc)))
                continue
            except VisionTuneError as exc:  # e.g. a Bundle the library refuses: recorded, then raised
                record_archive_send(store, vid, kind, where, "failed", {**base, "error": str(exc)})
                raise
            record_archive_send(store, vid, kind, where, "sent", detail)
            outcomes.append(SendOutcome(kind, where, True, lines, items=items))
    return outcomes
