"""``visiontune report ID --pdf out.pdf --csv out.csv --json out.json --fhir out.json``.

Exports one finished session of the trial log; each file is written with mode 0600. Nothing
goes over the network. Without a display, the PDF is drawn on Qt's offscreen platform.
"""

from __future__ import annotations

import argparse

from visiontune.errors import InvalidInputError, one_line
from visiontune.report.export import ExportPaths, export_session

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session_id", type=int, metavar="ID", help="id of a finished session (see: visiontune sessions list)"
    )
    parser.add_argument("--pdf", metavar="PATH", help="printable report (PDF)")
    parser.add_argument("--csv", metavar="PATH", help="trial log, one row per answer (CSV, schema 1)")
    parser.add_argument("--json", metavar="PATH", help="the whole session (JSON, visiontune.session-export v4)")
    parser.add_argument("--fhir", metavar="PATH", help="final prescription as a FHIR R4 VisionPrescription (JSON)")
    parser.add_argument("--db", metavar="PATH", help="SQLite trial log (default: the user data directory)")


def run(args: argparse.Namespace) -> int:
    paths = ExportPaths(pdf=args.pdf, csv=args.csv, json=args.json, fhir=args.fhir)
    if not paths.items():
        raise InvalidInputError("nothing to export: give at least one of --pdf, --csv, --json, --fhir")
    written = export_session(args.db, args.session_id, paths)
    for kind, path in written.items():
        print(f"{kind}: {one_line(path)}")
    return 0
