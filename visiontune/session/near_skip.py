"""The near (reading) addition of a visit not done, and why: the clinician's reason in the trial log.

Table ``visit_near_skips`` (a schema migration of :mod:`visiontune.session.migrations`; append-only
like every visit table: triggers abort any ``UPDATE`` or ``DELETE``): one row per visit, the
reason the clinician typed and when. A visit whose near step has begun cannot skip it (the step
always finishes: :mod:`visiontune.session.near_visit`), and a skipped one cannot begin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.session.visit_records import check_name

__all__ = ["NearSkip", "SCHEMA_NEAR_SKIPS", "near_skip", "record_near_skip"]

SCHEMA_NEAR_SKIPS: tuple[str, ...] = (
    """CREATE TABLE visit_near_skips (
        visit_id  INTEGER PRIMARY KEY REFERENCES visits(id),
        reason    TEXT NOT NULL CHECK (length(trim(reason)) > 0),
        at        TEXT NOT NULL
    )""",
    """CREATE TRIGGER visit_near_skips_no_update BEFORE UPDATE ON visit_near_skips
       BEGIN SELECT RAISE(ABORT, 'visit_near_skips are append-only: UPDATE is forbidden'); END""",
    """CREATE TRIGGER visit_near_skips_no_delete BEFORE DELETE ON visit_near_skips
       BEGIN SELECT RAISE(ABORT, 'visit_near_skips are append-only: DELETE is forbidden'); END""",
)


@dataclass(frozen=True)
class NearSkip:
    """The near step of ``visit_id`` not done: the clinician's ``reason``, recorded ``at``."""

    visit_id: int
    reason: str
    at: datetime


def record_near_skip(store, visit_id: int, reason: str) -> NearSkip:
    """Record that visit ``visit_id`` has no near step, with the clinician's ``reason`` (one line).
    SessionError when its near step has begun or it is skipped already; nothing is written then."""
    vid = store.get_visit(visit_id).visit_id
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("Near addition: type why it is not done (e.g. reads without glasses, not wanted)")
    text = check_name("Near addition reason", reason)
    with store._write() as conn:
        if conn.execute("SELECT 1 FROM visit_near WHERE visit_id = ?", (vid,)).fetchone():
            raise SessionError(f"visit {vid}: the near step has begun; it is finished, not skipped")
        if conn.execute("SELECT 1 FROM visit_near_skips WHERE visit_id = ?", (vid,)).fetchone():
            raise SessionError(f"visit {vid}: the near step is skipped already")
        conn.execute(
            "INSERT INTO visit_near_skips (visit_id, reason, at) VALUES (?, ?, ?)",
            (vid, text, store.now().astimezone(UTC).isoformat()),
        )
    return near_skip(store, vid)


def near_skip(store, visit_id: int) -> NearSkip | None:
    """The visit's near step skipped (its reason), or ``None``."""
    vid = store.get_visit(visit_id).visit_id
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "visit_near_skips" not in tables:
        return None
    r = store.conn.execute("SELECT reason, at FROM visit_near_skips WHERE visit_id = ?", (vid,)).fetchone()
    if r is None:
        return None
    try:
        at = datetime.fromisoformat(r[1])
    except (TypeError, ValueError):
        raise StoreError(f"visit {vid}'s near skip is damaged: at: {str(r[1])[:40]!r} is not a timestamp") from None
    return NearSkip(vid, str(r[0]), at)
