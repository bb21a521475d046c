"""``visiontune visit ...``: the session layer's visit commands (:mod:`visiontune.session.visit_cli`)
and ``visit export``, which writes the visit's records (PDF, FHIR R4 Bundle, DICOM, CSV, JSON;
each file mode 0600) with :mod:`visiontune.report.visit_export`.
"""

from __future__ import annotations

import argparse
import sys

from visiontune._argparse import INT64_MAX, bounded_int, db_argument
from visiontune.errors import InvalidInputError, one_line
from visiontune.report.tabular_visit import VISIT_JSON_SCHEMA, VISIT_JSON_SCHEMA_VERSION
from visiontune.report.visit_export import VisitExportPaths, export_visit
from visiontune.session import visit_cli

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = visit_cli.add_arguments(parser)
    export = sub.add_parser("export", help="write the visit's records (each file mode 0600)")
    export.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    export.add_argument("--pdf", metavar="PATH", help="printable record, both eyes (PDF)")
    export.add_argument("--fhir", metavar="PATH", help="FHIR R4 Bundle: VisionPrescription and Observations (JSON)")
    export.add_argument(
        "--dicom-dir",
        metavar="DIR",
        help="existing folder for the DICOM Subjective Refraction and Visual Acuity "
        "objects, and the Lensometry (habitual spectacles) and Autorefraction (the start) "
        "objects when the visit has them",
    )
    export.add_argument("--csv", metavar="PATH", help="one row per eye, S/C/axis with M, J0, J45 (CSV)")
    export.add_argument(
        "--json",
        metavar="PATH",
        help=f"the visit record (JSON, {VISIT_JSON_SCHEMA} version {VISIT_JSON_SCHEMA_VERSION}, the file's "
        "schema_version)",
    )
    export.add_argument(
        "--omit-patient-id",
        action="store_true",
        help="leave the pseudonymous patient id out (not possible with --dicom-dir)",
    )
    db_argument(export)
    send = sub.add_parser(
        "send",
        help="send the visit's records to the clinic's archive (PACS by DICOM C-STORE, "
        "FHIR server by a transaction Bundle)",
    )
    send.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    send.add_argument("--dicom", action="store_true", help="the DICOM objects to the configured PACS ([dicom])")
    send.add_argument("--fhir", action="store_true", help="the FHIR resources to the configured server ([fhir])")
    send.add_argument(
        "--archive-config",
        metavar="FILE",
        help="the clinic's archive settings, TOML or .json (default: archive.toml beside the app's "
        "settings); nothing is sent without one",
    )
    db_argument(send)


def run(args: argparse.Namespace) -> int:
    if args.action == "export":
        return _export(args)
    if args.action == "send":
        return _send(args)
    return visit_cli.run(args)


def _send(args) -> int:
    from visiontune.report.archive_config import load_archive_config
    from visiontune.report.archive_send import send_visit

    if not (args.dicom or args.fhir):
        raise InvalidInputError("nothing to send: give --dicom and/or --fhir")
    config = load_archive_config(args.archive_config)
    failed = 0
    for outcome in send_visit(args.db, args.visit_id, config, dicom=args.dicom, fhir=args.fhir):
        for line in outcome.text().splitlines():
            print(one_line(line), file=sys.stdout if outcome.ok else sys.stderr)
        failed += not outcome.ok
    return 1 if failed else 0


def _export(args) -> int:
    paths = VisitExportPaths(pdf=args.pdf, fhir=args.fhir, dicom_dir=args.dicom_dir, csv=args.csv, json=args.json)
    if not paths.kinds():
        raise InvalidInputError("nothing to export: give at least one of --pdf, --fhir, --dicom-dir, --csv, --json")
    if args.omit_patient_id and args.dicom_dir is not None:
        raise InvalidInputError(
            "--dicom-dir with --omit-patient-id: a DICOM object needs a Patient ID; export DICOM "
            "with the pseudonymous id, or leave --dicom-dir out; nothing was written"
        )
    written = export_visit(args.db, args.visit_id, paths, omit_patient_id=args.omit_patient_id)
    for kind, files in written.items():
        for path in files:
            print(f"{kind}: {one_line(str(path))}")
    return 0
