"""The near addition of a visit in the trial log: write and read (tables: :mod:`visiontune.session.near_schema`).

Functions over an open :class:`~visiontune.session.store.TrialStore`, each write one committed
transaction, durable when it returns, checked before anything is written
(:class:`~visiontune.errors.InvalidInputError` naming what is wrong); a row that cannot be read
back raises :class:`~visiontune.errors.StoreError` naming the visit and the column.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.refraction.near_add import check_near_distance_cm
from visiontune.session.visit_records import check_eye, check_name

__all__ = [
    "NearAddRecord",
    "NearAnswerRecord",
    "NearSetup",
    "near_add_records",
    "near_answers",
    "near_setup",
    "record_near_add",
    "record_near_answer",
    "start_near",
]

NEAR_PHASES = ("refine", "check")


def _ts(store) -> str:
    return store.now().astimezone(UTC).isoformat()


def _time(where: str, column: str, text: Any) -> datetime:
    try:
        ts = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise StoreError(f"{where} is damaged: {column}: {str(text)[:40]!r} is not an ISO 8601 timestamp") from None
    if ts.tzinfo is None:
        raise StoreError(f"{where} is damaged: {column}: {text[:40]!r} has no time zone")
    return ts


def _json(where: str, column: str, text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"{where} is damaged: {column}: not valid JSON ({exc})") from None


@dataclass(frozen=True)
class NearSetup:
    """The visit's near step: distance (cm), method, the simulated eyes (``None`` for a real patient)."""

    visit_id: int
    distance_cm: float
    method: str
    simulated: dict | None
    at: datetime

    @property
    def demand_d(self) -> float:
        return 100.0 / self.distance_cm


@dataclass(frozen=True)
class NearAnswerRecord:
    visit_id: int
    eye: str
    index: int
    phase: str
    add_d: float
    size_logmar: float
    letter: str | None
    correct: bool
    at: datetime


@dataclass(frozen=True)
class NearAddRecord:
    """The add filed for one eye (D), its 95% credible region, the tentative add by age, the
    near-usable amplitude (D), the range of clear vision (cm; far ``None`` = infinite), the near
    acuity through the add (logMAR), the near distance (cm), the method and its details."""

    visit_id: int
    eye: str
    add_d: float
    lower_d: float
    upper_d: float
    tentative_add_d: float
    amplitude_d: float
    near_point_cm: float | None
    far_point_cm: float | None
    near_va_logmar: float
    distance_cm: float
    method: str
    detail: Any
    at: datetime


def _visit_id(store, visit_id: int) -> int:
    return store.get_visit(visit_id).visit_id


def start_near(store, visit_id: int, *, distance_cm: float, method: str, simulated: dict | None = None) -> NearSetup:
    """Record the visit's near step (once): distance (cm, 20-100), method, the simulated eyes
    (JSON-able, each marked SIMULATED). SessionError if the visit has one already."""
    vid = _visit_id(store, visit_id)
    distance = check_near_distance_cm(distance_cm)
    method = check_name("method", method)
    visit = store.get_visit(vid)
    if (simulated is not None) != visit.simulated:
        raise InvalidInputError(f"visit {vid}: simulated eyes are recorded for a simulated patient only, and always")
    text = None if simulated is None else json.dumps(simulated, sort_keys=True, allow_nan=False)
    with store._write() as conn:
        if conn.execute("SELECT 1 FROM visit_near WHERE visit_id = ?", (vid,)).fetchone():
            raise SessionError(f"visit {vid}: the near step has begun already")
        conn.execute(
            "INSERT INTO visit_near (visit_id, distance_cm, method, simulated_json, at) VALUES (?, ?, ?, ?, ?)",
            (vid, distance, method, text, _ts(store)),
        )
    return near_setup(store, vid)


def near_setup(store, visit_id: int) -> NearSetup | None:
    vid = _visit_id(store, visit_id)
    r = store.conn.execute(
        "SELECT visit_id, distance_cm, method, simulated_json, at FROM visit_near WHERE visit_id = ?", (vid,)
    ).fetchone()
    if r is None:
        return None
    where = f"visit {vid}'s near step"
    distance = check_number(f"{where} is damaged: distance_cm", r[1], 20, 100, error=StoreError)
    return NearSetup(vid, distance, str(r[2]), _json(where, "simulated_json", r[3]), _time(where, "at", r[4]))


def record_near_answer(
    store,
    visit_id: int,
    eye: str,
    index: int,
    *,
    phase: str,
    add_d: float,
    size_logmar: float,
    letter: str | None,
    correct: bool,
) -> NearAnswerRecord:
    """Append near answer ``index`` (the next of ``eye``): the phase (``refine``/``check``), the
    lens over the distance correction (D, -4 to 4; negative: a minus lens), the letter size
    (logMAR), the letter and whether it was named right."""
    vid = _visit_id(store, visit_id)
    eye = check_eye(eye)
    if phase not in NEAR_PHASES:
        raise InvalidInputError(f"phase: expected one of {', '.join(NEAR_PHASES)}, got {phase!r}")
    add = check_number("add_d", add_d, -4, 4)
    size = check_number("size_logmar", size_logmar, -0.5, 2)
    if letter is not None and (not isinstance(letter, str) or len(letter) != 1):
        raise InvalidInputError(f"letter: expected one character, got {letter!r}")
    if not isinstance(correct, bool):
        raise InvalidInputError(f"correct: expected True or False, got {correct!r}")
    with store._write() as conn:
        if not conn.execute("SELECT 1 FROM visit_near WHERE visit_id = ?", (vid,)).fetchone():
            raise SessionError(f"visit {vid}: the near step has not begun (no near distance recorded)")
        if conn.execute("SELECT 1 FROM visit_near_adds WHERE visit_id = ? AND eye = ?", (vid, eye)).fetchone():
            raise SessionError(f"visit {vid}: the add of {eye} is filed; no more near answers")
        expected = conn.execute(
            "SELECT count(*) FROM visit_near_answers WHERE visit_id = ? AND eye = ?", (vid, eye)
        ).fetchone()[0]
        if index != expected:
            raise SessionError(f"visit {vid}: near answer {index} of {eye} is not the next one ({expected} is)")
        conn.execute(
            "INSERT INTO visit_near_answers "
            "(visit_id, eye, idx, phase, add_d, size_logmar, letter, correct, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (vid, eye, index, phase, add, size, letter, int(correct), _ts(store)),
        )
    return near_answers(store, vid, eye)[index]


def near_answers(store, visit_id: int, eye: str) -> list[NearAnswerRecord]:
    vid = _visit_id(store, visit_id)
    eye = check_eye(eye)
    rows = store.conn.execute(
        "SELECT visit_id, eye, idx, phase, add_d, size_logmar, letter, correct, at "
        "FROM visit_near_answers WHERE visit_id = ? AND eye = ? ORDER BY idx",
        (vid, eye),
    ).fetchall()
    out = []
    for r in rows:
        where = f"visit {vid}'s near answer {r[2]} of {eye}"
        if r[3] not in NEAR_PHASES or r[7] not in (0, 1):
            raise StoreError(f"{where} is damaged: phase/correct {r[3]!r}/{r[7]!r}")
        out.append(
            NearAnswerRecord(vid, eye, r[2], r[3], float(r[4]), float(r[5]), r[6], r[7] == 1, _time(where, "at", r[8]))
        )
    return out


def record_near_add(store, visit_id: int, eye: str, result, *, method: str, detail: Any = None) -> NearAddRecord:
    """File the add of ``eye`` (once): ``result`` a
    :class:`~visiontune.refraction.near_add.NearAddResult`; the near distance is the step's."""
    vid = _visit_id(store, visit_id)
    eye = check_eye(eye)
    setup = near_setup(store, vid)
    if setup is None:
        raise SessionError(f"visit {vid}: the near step has not begun (no near distance recorded)")
    values = {}
    for name in ("add_d", "lower_d", "upper_d", "tentative_add_d"):
        values[name] = check_number(name, getattr(result, name), 0, 4)
    if not values["lower_d"] <= values["add_d"] <= values["upper_d"]:
        raise InvalidInputError(
            f"near add of {eye}: the credible region [{values['lower_d']}, {values['upper_d']}] D "
            f"does not hold the add {values['add_d']} D"
        )
    amplitude = check_number("amplitude_d", result.amplitude_d, 0, 20)
    near_va = check_number("near_va_logmar", result.near_va_logmar, -1, 3)
    points = []
    for name in ("near_point_cm", "far_point_cm"):
        v = getattr(result, name)
        if v is not None and (not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0):
            raise InvalidInputError(f"{name}: expected a distance > 0 cm or None (infinite), got {v!r}")
        points.append(None if v is None else float(v))
    method = check_name("method", method)
    detail_json = None if detail is None else json.dumps(detail, sort_keys=True, allow_nan=False)
    with store._write() as conn:
        if conn.execute("SELECT 1 FROM visit_near_adds WHERE visit_id = ? AND eye = ?", (vid, eye)).fetchone():
            raise SessionError(f"visit {vid}: the add of {eye} is filed already")
        conn.execute(
            "INSERT INTO visit_near_adds (visit_id, eye, add_d, lower_d, upper_d, tentative_add_d, amplitude_d, "
            "near_point_cm, far_point_cm, near_va_logmar, distance_cm, method, detail_json, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                vid,
                eye,
                values["add_d"],
                values["lower_d"],
                values["upper_d"],
                values["tentative_add_d"],
                amplitude,
                points[0],
                points[1],
                near_va,
                setup.distance_cm,
                method,
                detail_json,
                _ts(store),
            ),
        )
    return near_add_records(store, vid)[eye]


def near_add_records(store, visit_id: int) -> dict[str, NearAddRecord]:
    """``{eye: NearAddRecord}`` of the adds filed in the visit (empty before the near step, or in
    a trial log older than the near tables)."""
    vid = _visit_id(store, visit_id)
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "visit_near_adds" not in tables:
        return {}
    rows = store.conn.execute(
        "SELECT visit_id, eye, add_d, lower_d, upper_d, tentative_add_d, amplitude_d, near_point_cm, far_point_cm, "
        "near_va_logmar, distance_cm, method, detail_json, at FROM visit_near_adds WHERE visit_id = ? ORDER BY eye",
        (vid,),
    ).fetchall()
    out = {}
    for r in rows:
        where = f"visit {vid}'s near add of {r[1]}"
        points = (None if x is None else float(x) for x in r[7:9])
        out[r[1]] = NearAddRecord(
            vid,
            r[1],
            *(float(x) for x in r[2:7]),
            *points,
            float(r[9]),
            float(r[10]),
            str(r[11]),
            _json(where, "detail_json", r[12]),
            _time(where, "at", r[13]),
        )
    return out
