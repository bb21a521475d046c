"""Sends of a visit's records to the clinic's archive, in the trial log (``visit_archive_sends``).

One row per step of a send, append-only like every visit table (triggers abort ``UPDATE`` and
``DELETE``): ``started`` is written *before* anything goes over the network (what, where), then
``sent`` (with what the archive holds now: SOP Instance UIDs, FHIR ids) or ``failed`` (why). A
send whose process died between the two keeps its ``started`` row alone, so an audit sees it.

Columns: ``visit_id``; ``what`` (``dicom`` or ``fhir``); ``destination`` (``AE@host:port`` or the
FHIR base URL); ``status`` (``started``, ``sent``, ``failed``); ``detail_json`` (a JSON object:
the objects and ids, or the error text; a simulated visit's rows say ``"simulated": true``);
``at`` (ISO 8601, UTC, as every time in the log).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from visiontune.errors import InvalidInputError, StoreError
from visiontune.session.archive_sends_schema import SCHEMA_ARCHIVE_SENDS
from visiontune.session.store_columns import parse_ts, ts_text

__all__ = [
    "ARCHIVE_SEND_KINDS",
    "ARCHIVE_SEND_STATUSES",
    "SCHEMA_ARCHIVE_SENDS",
    "ArchiveSend",
    "archive_sends",
    "record_archive_send",
]

ARCHIVE_SEND_KINDS = ("dicom", "fhir")
ARCHIVE_SEND_STATUSES = ("started", "sent", "failed")


@dataclass(frozen=True)
class ArchiveSend:
    """One row of ``visit_archive_sends``; ``detail``: the parsed JSON object (or ``None``)."""

    send_id: int
    visit_id: int
    what: str
    destination: str
    status: str
    detail: dict[str, Any] | None
    at: datetime


def record_archive_send(
    store, visit_id: int, what: str, destination: str, status: str, detail: dict[str, Any] | None = None
) -> ArchiveSend:
    """Append one row (committed and durable when this returns) and return it."""
    vid = store.get_visit(visit_id).visit_id
    if what not in ARCHIVE_SEND_KINDS:
        raise InvalidInputError(f"what: expected one of {', '.join(ARCHIVE_SEND_KINDS)}, got {what!r}")
    if status not in ARCHIVE_SEND_STATUSES:
        raise InvalidInputError(f"status: expected one of {', '.join(ARCHIVE_SEND_STATUSES)}, got {status!r}")
    if not isinstance(destination, str) or not destination.strip():
        raise InvalidInputError(f"destination: expected a non-empty text, got {destination!r}")
    if detail is not None and not isinstance(detail, dict):
        raise InvalidInputError(f"detail: expected a JSON object (dict), got {type(detail).__name__}")
    detail_json = None if detail is None else json.dumps(detail, sort_keys=True, ensure_ascii=False)
    with store._write() as conn:
        cur = conn.execute(
            "INSERT INTO visit_archive_sends (visit_id, what, destination, status, detail_json, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (vid, what, destination, status, detail_json, ts_text(store.now())),
        )
        row_id = int(cur.lastrowid)
    return next(s for s in archive_sends(store, vid) if s.send_id == row_id)


def archive_sends(store, visit_id: int) -> list[ArchiveSend]:
    """Every archive-send row of the visit, in the order written (StoreError if one is damaged;
    an empty list for a log older than this table)."""
    vid = store.get_visit(visit_id).visit_id
    if (
        store.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'visit_archive_sends'"
        ).fetchone()
        is None
    ):
        return []
    rows = store.conn.execute(
        "SELECT id, visit_id, what, destination, status, detail_json, at "
        "FROM visit_archive_sends WHERE visit_id = ? ORDER BY id",
        (vid,),
    ).fetchall()
    out = []
    for r in rows:
        try:
            detail = None if r[5] is None else json.loads(r[5])
            at = parse_ts(r[6])
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{store.path}: visit_archive_sends row {r[0]} is damaged: {exc}") from None
        out.append(ArchiveSend(r[0], r[1], r[2], r[3], r[4], detail, at))
    return out
