"""report layer (docs/design.md, "Layers"): a finished session -> PDF report, CSV trial log, JSON
session document, FHIR VisionPrescription. Reads the trial log only.

Result schema: :mod:`visiontune.refraction.result` (the loop writes it); CSV/JSON schemas:
:mod:`visiontune.report.tabular`.
"""

from visiontune.refraction.result import SessionResult, parse_result
from visiontune.report.export import ExportPaths, export_record, export_session, render
from visiontune.report.finished_session import SessionRecord, load_session

__all__ = [
    "ExportPaths",
    "SessionRecord",
    "SessionResult",
    "export_record",
    "export_session",
    "load_session",
    "parse_result",
    "render",
]
