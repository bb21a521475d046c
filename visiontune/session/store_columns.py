"""The text forms of the trial log's columns, shared by the store's parts: timestamps (ISO 8601
in UTC), JSON text, session ids (SQLite's signed 64-bit integers), text that may be damaged,
and a lens's three columns.

What is read back is checked: a damaged value is named (``checked_ts``, ``text_problem``) so the
part reading a row can say what is wrong with it and confine the damage to its row.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from datetime import UTC, datetime
from typing import Any

from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.session.records import DamagedText, lens_fields

#: SQLite integers are signed 64-bit: the largest session id there can be.
MAX_SESSION_ID = 2**63 - 1


def utc_now() -> datetime:
    return datetime.now(UTC)


def ts_text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def parse_ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def check_session_id(value: Any) -> int:
    """``value`` as a session id SQLite can hold; StoreError if it is outside int64."""
    if isinstance(value, bool):
        raise InvalidInputError(f"session_id: expected an integer session id, got {value!r}")
    try:
        sid = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"session_id: expected an integer session id, got {value!r}") from None
    if not -MAX_SESSION_ID - 1 <= sid <= MAX_SESSION_ID:
        raise StoreError(f"session id {sid} is out of range: trial log session ids are 1 to {MAX_SESSION_ID}")
    return sid


def text_problem(value: Any) -> str | None:
    if isinstance(value, DamagedText):
        return "not valid UTF-8 text"
    if not isinstance(value, str):
        return f"expected text, found {type(value).__name__} {repr(value)[:40]}"
    return None


def checked_ts(column: str, value: Any, damage: list[str], *, optional: bool = False) -> datetime | None:
    """``value`` parsed as an aware ISO 8601 timestamp, or ``None`` with a line in ``damage``."""
    if value is None and optional:
        return None
    problem = text_problem(value)
    if problem is None:
        try:
            ts = datetime.fromisoformat(value)
        except ValueError:
            problem = f"{value[:40]!r} is not an ISO 8601 timestamp"
        else:
            if ts.tzinfo is not None and ts.utcoffset() is not None:
                return ts
            problem = f"{value[:40]!r} has no time zone"
    damage.append(f"{column}: {problem}")
    return None


def to_json(name: str, value: Any) -> str | None:
    """JSON text of a mapping / dataclass / JSON string (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError as exc:
            raise InvalidInputError(f"{name}: not valid JSON text ({exc})") from None
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: cannot be stored as JSON ({exc})") from None


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def lens_from_columns(s, c, a) -> Prescription | None:
    """A lens read from its three columns (``None`` where the sphere is NULL)."""
    return None if s is None else Prescription(s, c, a)


def lens_columns(lens: Prescription | None) -> tuple:
    """A lens's three columns (:func:`~visiontune.session.records.lens_fields`), NULLs for none."""
    return (None, None, None) if lens is None else tuple(lens_fields(lens).values())
