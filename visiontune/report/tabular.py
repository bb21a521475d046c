"""CSV of the trial log and JSON of the whole session: documented, versioned, round-tripping.

**CSV, schema 6** (:data:`CSV_COLUMNS`): one row per answer, voided answers included and
marked, in trial order. Numbers are written in Python's shortest round-trip form, so reading
them back gives the same floats; timestamps are ISO 8601 in UTC; booleans are ``1``/``0``;
an absent value (second lens of a binary trial, "don't know" answer) is an empty field.

=============== ======================================================================
session_id      the session's id in the trial log
trial_index     position in the session, counting voided answers, from 0
void            1 if an ``undo`` voided this answer (the model ignores it)
kind            ``letter``, ``comparison`` or ``slider`` (:data:`~visiontune.session.records.TRIAL_KINDS`)
s_logmar        letter size (logMAR)
sphere_d ...    lens: sphere, cylinder (diopters), axis (degrees, [0, 180)); of a slider,
                the lens chosen
sphere2_d ...   second lens of a duel (preferential protocols) or of a comparison, else empty
letter_shown    the letter presented (for a comparison or a slider: the letter kept in view; for a
                chart line: the line's letters in reading order)
letter_named    the letter the patient named, empty for "don't know"
correct         1 if the answer was scored correct (comparison: 1 if lens 1 was the clearer;
                slider: 1 if the knob's starting lens was the clearest; chart line: 1 if most
                of its letters were read right)
comparison      a comparison's answer: 1 (lens 1 clearer), 2 or = (no difference); empty
                for a letter
slider_knob     a slider's knob: ``sphere``, ``cylinder`` or ``axis``; empty for another kind
slider_choice   the index of the lens chosen on the path, from 0 (the lens above is that one)
slider_path     the knob's path in knob order, JSON: ``[{"sphere_d", "cylinder_d",
                "axis_deg"}, ...]`` (at least 2 lenses; the trial log's ``slider_path`` text)
line_correct    a chart line's answers, one ``1`` (read right) or ``0`` (wrong) per letter of
                ``letter_shown``, in reading order (the trial log's ``line_correct``); empty for
                another kind (a line's ``kind`` is ``letter``: its letters are letter answers)
frame_sphere_d  a comparison shown by a lens held before a trial lens (a flipper, a cross-cylinder,
...             a plus sphere "with or without"): that trial lens, the lens in the frame (lens 1
                and lens 2 are its two sides, or lens 1 is it); empty otherwise
presented_at    when the letter appeared (UTC)
answered_at     when the answer was recorded (UTC)
simulated       1 if a simulated patient answered (**SIMULATED** data)
schema_version  6
mark            ``SIMULATED`` on every row of a simulated session (as the JSON's ``mark``),
                else empty: the file says what it is to whoever opens it
=============== ======================================================================

Schema 5 has the same columns without the three ``frame_*``; schema 4 neither those nor
``line_correct``; schema 3 neither those nor ``mark``; schema 2 (files written before sliders)
neither those nor ``kind`` and the three ``slider_*``; schema 1 (before comparisons) neither those
nor ``comparison``. :func:`trials_from_csv` reads all six.

**JSON, schema** ``visiontune.session-export`` **version 5** (:func:`session_to_json`; version 4,
without the trials' ``frame_lens``, version 3, without ``line_correct`` either, version 2, without
``kind`` and ``slider`` either, and version 1, without ``comparison`` either, are read too)::

    {"schema": "visiontune.session-export", "schema_version": 5,
     "simulated": bool, "mark": "SIMULATED" | null, "exported_by": "visiontune X.Y.Z",
     "session": {"session_id", "patient_id", "eye", "protocol_toml", "software_version", "seed",
                 "state", "created_at", "finished_at", "calibration", "starting_rx"},
     "trials": [{"index", "void", "s_logmar", "lens": {"sphere_d", "cylinder_d", "axis_deg"},
                 "lens2": null | {...}, "letter_shown", "letter_named", "correct",
                 "comparison": null | "1" | "2" | "=", "kind": "letter" | "comparison" | "slider",
                 "slider": null | {"knob", "choice", "path": [{"sphere_d", ...}, ...]},
                 "line_correct": null | "11010", "frame_lens": null | {"sphere_d", ...},
                 "presented_at", "answered_at"}, ...],
     "events": [{"event_id", "kind", "at", "trial_index", "payload"}, ...],
     "result": the result object as stored (schema: visiontune.refraction.result)}

A slider is checked as the trial log checks it
(:func:`~visiontune.refraction.slider.check_slider_trial`: knob, path and choice together, a
known knob, at least two lenses, the choice an index into them), and its lens must be the one
chosen on the path; a row's ``kind`` must be its trial's; a chart line's ``line_correct`` as the
trial log checks it (:func:`~visiontune.refraction.chart_line.check_line_trial`: one ``1`` or
``0`` per letter shown, two or more, one lens). Errors name the line (CSV) or the trial (JSON).
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime
from typing import Any

import visiontune
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.result import parse_result
from visiontune.refraction.trial import COMPARISON_ANSWERS, TRIAL_KINDS, Trial, trial_kind
from visiontune.report.finished_session import SessionRecord
from visiontune.session.records import (
    Event,
    EventKind,
    Eye,
    SessionInfo,
    SessionState,
    lens_fields,
    slider_path_from_json,
    slider_path_json,
)

__all__ = [
    "CSV_COLUMNS",
    "CSV_SCHEMA_VERSION",
    "JSON_SCHEMA",
    "JSON_SCHEMA_VERSION",
    "SIMULATED_MARK",
    "trials_to_csv",
    "trials_from_csv",
    "session_to_json",
    "session_json_text",
    "session_from_json",
]

CSV_SCHEMA_VERSION = 6
JSON_SCHEMA = "visiontune.session-export"
JSON_SCHEMA_VERSION = 5
SIMULATED_MARK = "SIMULATED"
CSV_COLUMNS = (
    "session_id",
    "trial_index",
    "void",
    "kind",
    "s_logmar",
    "sphere_d",
    "cylinder_d",
    "axis_deg",
    "sphere2_d",
    "cylinder2_d",
    "axis2_deg",
    "letter_shown",
    "letter_named",
    "correct",
    "comparison",
    "slider_knob",
    "slider_choice",
    "slider_path",
    "line_correct",
    "frame_sphere_d",
    "frame_cylinder_d",
    "frame_axis_deg",
    "presented_at",
    "answered_at",
    "simulated",
    "schema_version",
    "mark",
)
_SLIDER_COLUMNS = ("kind", "slider_knob", "slider_choice", "slider_path")
_FRAME_COLUMNS = ("frame_sphere_d", "frame_cylinder_d", "frame_axis_deg")
_V5_COLUMNS = tuple(c for c in CSV_COLUMNS if c not in _FRAME_COLUMNS)
_V4_COLUMNS = tuple(c for c in _V5_COLUMNS if c != "line_correct")
#: The columns of each CSV schema this VisionTune reads.
_CSV_COLUMNS_BY_VERSION = {
    1: tuple(c for c in _V4_COLUMNS if c not in (*_SLIDER_COLUMNS, "comparison", "mark")),
    2: tuple(c for c in _V4_COLUMNS if c not in (*_SLIDER_COLUMNS, "mark")),
    3: tuple(c for c in _V4_COLUMNS if c != "mark"),
    4: _V4_COLUMNS,
    5: _V5_COLUMNS,
    6: CSV_COLUMNS,
}


def _num(x: float | None) -> str:
    return "" if x is None else repr(float(x))


def _flag(b: bool) -> str:
    return "1" if b else "0"


def trials_to_csv(record: SessionRecord) -> str:
    """CSV text (schema 6) of every answer of ``record``, voided ones marked (``void=1``), each row
    of a simulated session marked SIMULATED."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for t in record.trials:
        l1, l2, frame = _lens_json(t.lens), _lens_json(t.lens2) or {}, _lens_json(t.frame_lens) or {}
        slider = t.slider_choice is not None
        writer.writerow(
            [
                t.session_id,
                t.index,
                _flag(t.void),
                trial_kind(t),
                _num(t.s_logmar),
                *(_num(l1[k]) for k in _LENS_KEYS),
                *(_num(l2.get(k)) for k in _LENS_KEYS),
                t.letter_shown,
                t.letter_named or "",
                _flag(t.correct),
                t.comparison or "",
                t.slider_knob or "",
                t.slider_choice if slider else "",
                slider_path_json(t.slider_lenses) if slider else "",
                t.line_correct or "",
                *(_num(frame.get(k)) for k in _LENS_KEYS),
                t.presented_at.isoformat(),
                t.answered_at.isoformat(),
                _flag(record.simulated),
                CSV_SCHEMA_VERSION,
                SIMULATED_MARK if record.simulated else "",
            ]
        )
    return buf.getvalue()


class _Row:
    """One CSV row with errors naming the line and the column."""

    def __init__(self, line: int, row: dict[str, str]) -> None:
        self.line, self.row = line, row

    def fail(self, col: str, msg: str) -> InvalidInputError:
        return InvalidInputError(f"csv line {self.line}, column {col}: {msg}, got {self.row.get(col)!r}")

    def int(self, col: str) -> int:
        try:
            return int(self.row[col])
        except ValueError:
            raise self.fail(col, "expected an integer") from None

    def optional_int(self, col: str) -> int | None:
        return None if self.row.get(col, "") == "" else self.int(col)

    def slider_path(self) -> tuple[Prescription, ...] | None:
        text = self.row.get("slider_path", "")
        if text == "":
            return None
        try:
            return slider_path_from_json(text)
        except InvalidInputError as exc:
            raise InvalidInputError(f"csv line {self.line}, column slider_path: {exc}") from None

    def float(self, col: str) -> float | None:
        text = self.row[col]
        if text == "":
            return None
        try:
            value = float(text)
        except ValueError:
            raise self.fail(col, "expected a number") from None
        if not math.isfinite(value):
            raise self.fail(col, "expected a finite number")
        return value

    def flag(self, col: str) -> bool:
        if self.row[col] not in ("0", "1"):
            raise self.fail(col, "expected 0 or 1")
        return self.row[col] == "1"

    def time(self, col: str) -> datetime:
        try:
            value = datetime.fromisoformat(self.row[col])
        except ValueError:
            raise self.fail(col, "expected an ISO 8601 timestamp") from None
        if value.tzinfo is None:
            raise self.fail(col, "expected a timestamp with a time zone")
        return value

    def lens(self, cols: tuple[str, str, str], required: bool) -> Prescription | None:
        values = [self.float(c) for c in cols]
        if all(v is None for v in values) and not required:
            return None
        if any(v is None for v in values):
            raise self.fail(cols[0], "a lens needs sphere, cylinder and axis")
        try:
            return Prescription(*values)
        except InvalidInputError as exc:
            raise self.fail(cols[0], str(exc)) from None


def _checked_trial(where: str, kind: str | None, fields: dict[str, Any]) -> Trial:
    """The :class:`Trial` of ``fields``, its slider checked (module docstring) and its ``kind``
    (``None``: a file older than the kinds) its own; errors start with ``where``."""
    try:
        trial = Trial(**fields)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    if kind is not None and kind != trial_kind(trial):
        raise InvalidInputError(
            f"{where}: kind: expected {trial_kind(trial)!r} for this trial (one of "
            f"{', '.join(TRIAL_KINDS)}), got {kind!r}"
        )
    if trial.slider_choice is not None and trial.lens != trial.slider_lenses[trial.slider_choice]:
        raise InvalidInputError(
            f"{where}: slider_choice: the lens {trial.lens} is not lens {trial.slider_choice} "
            f"of the path, {trial.slider_lenses[trial.slider_choice]}"
        )
    return trial


def trials_from_csv(text: str) -> tuple[list[Trial], bool | None]:
    """Read CSV text of schema 6 (or 5, 4, 3, 2, 1) back: ``(trials, simulated)``; ``simulated`` is
    ``None`` for a file without rows (the flag lives in the rows; the JSON export always carries it).

    Raises :class:`~visiontune.errors.InvalidInputError` naming the line and column of the
    first bad field, a header that is not :data:`CSV_COLUMNS` (or schema 2's or 1's), a row whose
    schema version is not its header's, or a row whose slider or kind is wrong (module docstring).
    """
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(reader.fieldnames or ())
    version = next((v for v, cols in _CSV_COLUMNS_BY_VERSION.items() if cols == header), None)
    if version is None:
        raise InvalidInputError(f"csv: expected the header {','.join(CSV_COLUMNS)}, got {reader.fieldnames}")
    trials, simulated = [], set()
    for line, raw in enumerate(reader, start=2):
        r = _Row(line, raw)
        if r.int("schema_version") != version:
            raise r.fail("schema_version", f"expected {version}, the schema of this file's header")
        comparison = raw.get("comparison") or None
        if comparison is not None and comparison not in COMPARISON_ANSWERS:
            raise r.fail("comparison", f"expected one of {', '.join(COMPARISON_ANSWERS)} or empty")
        s_logmar = r.float("s_logmar")
        if s_logmar is None:
            raise r.fail("s_logmar", "expected a number")
        fields = dict(
            session_id=r.int("session_id"),
            index=r.int("trial_index"),
            s_logmar=s_logmar,
            lens=r.lens(("sphere_d", "cylinder_d", "axis_deg"), True),
            lens2=r.lens(("sphere2_d", "cylinder2_d", "axis2_deg"), False),
            letter_shown=raw["letter_shown"],
            letter_named=raw["letter_named"] or None,
            correct=r.flag("correct"),
            presented_at=r.time("presented_at"),
            answered_at=r.time("answered_at"),
            void=r.flag("void"),
            comparison=comparison,
            slider_knob=raw.get("slider_knob") or None,
            slider_lenses=r.slider_path(),
            slider_choice=r.optional_int("slider_choice"),
            line_correct=raw.get("line_correct") or None,
            frame_lens=r.lens(_FRAME_COLUMNS, False) if version >= 6 else None,
        )
        trials.append(_checked_trial(f"csv line {line}", raw.get("kind"), fields))
        simulated.add(r.flag("simulated"))
        if version >= 4 and raw["mark"] != (SIMULATED_MARK if r.flag("simulated") else ""):
            raise r.fail("mark", f"expected {SIMULATED_MARK!r} exactly when simulated is 1, else empty")
    if len(simulated) > 1:
        raise InvalidInputError("csv: column simulated: rows disagree (a file mixes simulated and real answers)")
    return trials, (simulated.pop() if simulated else None)


#: A lens's keys in the exports, in column order.
_LENS_KEYS = ("sphere_d", "cylinder_d", "axis_deg")


def _lens_json(lens: Prescription | None) -> dict | None:
    return None if lens is None else lens_fields(lens)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _slider_json(t: Trial) -> dict | None:
    if t.slider_choice is None:
        return None
    return {"knob": t.slider_knob, "choice": t.slider_choice, "path": [_lens_json(x) for x in t.slider_lenses]}


def session_to_json(record: SessionRecord) -> dict[str, Any]:
    """The whole session as a JSON-ready dict (schema ``visiontune.session-export`` v4)."""
    info = record.info
    return {
        "schema": JSON_SCHEMA,
        "schema_version": JSON_SCHEMA_VERSION,
        "simulated": info.simulated,
        "mark": SIMULATED_MARK if info.simulated else None,
        "exported_by": f"visiontune {visiontune.__version__}",
        "session": {
            "session_id": info.session_id,
            "patient_id": info.patient_id,
            "eye": info.eye.value,
            "protocol_toml": info.protocol_toml,
            "software_version": info.software_version,
            "seed": info.seed,
            "state": info.state.value,
            "created_at": _iso(info.created_at),
            "finished_at": _iso(info.finished_at),
            "calibration": info.calibration,
            "starting_rx": info.starting_rx,
        },
        "trials": [
            {
                "index": t.index,
                "void": t.void,
                "s_logmar": t.s_logmar,
                "lens": _lens_json(t.lens),
                "lens2": _lens_json(t.lens2),
                "letter_shown": t.letter_shown,
                "letter_named": t.letter_named,
                "correct": t.correct,
                "comparison": t.comparison,
                "kind": trial_kind(t),
                "slider": _slider_json(t),
                "line_correct": t.line_correct,
                "frame_lens": _lens_json(t.frame_lens),
                "presented_at": _iso(t.presented_at),
                "answered_at": _iso(t.answered_at),
            }
            for t in record.trials
        ],
        "events": [
            {
                "event_id": e.event_id,
                "kind": e.kind.value,
                "at": _iso(e.at),
                "trial_index": e.trial_index,
                "payload": e.payload,
            }
            for e in record.events
        ],
        "result": record.result.raw,
    }


def session_json_text(record: SessionRecord) -> str:
    """:func:`session_to_json` as indented JSON text (no NaN, keys in schema order)."""
    return json.dumps(session_to_json(record), indent=2, allow_nan=False) + "\n"


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, allow_nan=False)


def _time(name: str, text: Any) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise InvalidInputError(f"json: {name}: expected an ISO 8601 timestamp, got {text!r}") from None


def _lens_from_json(d: Any) -> Prescription:
    if not isinstance(d, dict) or set(d) != set(_LENS_KEYS):
        raise InvalidInputError(f"lens: expected an object {{sphere_d, cylinder_d, axis_deg}}, got {d!r}")
    return Prescription(**d)


def _trial_from_json(i: int, t: Any, version: int, session_id: int) -> Trial:
    """Trial ``i`` of a document of schema ``version`` (no ``comparison`` before 2, no ``kind``
    and ``slider`` before 3, no ``line_correct`` before 4, no ``frame_lens`` before 5)."""
    slider = t["slider"] if version >= 3 else None
    if slider is not None and not isinstance(slider, dict):
        raise InvalidInputError(f"json: trials[{i}].slider: expected null or an object {{knob, choice, path}}")
    path = None if slider is None else slider["path"]
    if path is not None and not isinstance(path, list):
        raise InvalidInputError(f"json: trials[{i}].slider.path: expected a list of lenses, got {path!r}")
    fields = dict(
        session_id=session_id,
        index=t["index"],
        s_logmar=t["s_logmar"],
        lens=_lens_from_json(t["lens"]),
        lens2=None if t["lens2"] is None else _lens_from_json(t["lens2"]),
        letter_shown=t["letter_shown"],
        letter_named=t["letter_named"],
        correct=t["correct"],
        presented_at=_time(f"trials[{i}].presented_at", t["presented_at"]),
        answered_at=_time(f"trials[{i}].answered_at", t["answered_at"]),
        void=t["void"],
        comparison=t["comparison"] if version > 1 else None,
        slider_knob=None if slider is None else slider["knob"],
        slider_lenses=None if path is None else tuple(_lens_from_json(x) for x in path),
        slider_choice=None if slider is None else slider["choice"],
        line_correct=t["line_correct"] if version >= 4 else None,
        frame_lens=_lens_from_json(t["frame_lens"]) if version >= 5 and t["frame_lens"] is not None else None,
    )
    return _checked_trial(f"json: trials[{i}]", t["kind"] if version >= 3 else None, fields)


def session_from_json(doc: Any) -> SessionRecord:
    """Rebuild a :class:`SessionRecord` from a parsed JSON document of schema v5 (or v4, whose
    trials have no ``frame_lens``, v3, no ``line_correct`` either, v2, no ``kind`` nor ``slider``
    either, or v1, which has no ``comparison`` either).

    Raises :class:`~visiontune.errors.InvalidInputError` (naming the key) for another schema,
    a missing key or a bad value, a wrong slider or kind (module docstring), and
    :class:`~visiontune.errors.StoreError` for a result that does not follow the result schema.
    """
    if not isinstance(doc, dict) or doc.get("schema") != JSON_SCHEMA:
        raise InvalidInputError(f"json: schema: expected {JSON_SCHEMA!r}")
    version = doc.get("schema_version")
    if isinstance(version, bool) or version not in range(1, JSON_SCHEMA_VERSION + 1):
        raise InvalidInputError(
            f"json: schema_version: this VisionTune reads versions 1 to {JSON_SCHEMA_VERSION}, got {version!r}"
        )
    try:
        s = doc["session"]
        info = SessionInfo(
            session_id=s["session_id"],
            patient_id=s["patient_id"],
            eye=Eye(s["eye"]),
            protocol_toml=s["protocol_toml"],
            software_version=s["software_version"],
            seed=s["seed"],
            simulated=bool(doc["simulated"]),
            state=SessionState(s["state"]),
            created_at=_time("session.created_at", s["created_at"]),
            finished_at=_time("session.finished_at", s["finished_at"]),
            calibration_json=_dumps(s["calibration"]),
            starting_rx_json=_dumps(s["starting_rx"]),
            result_json=_dumps(doc["result"]),
        )
        trials = tuple(_trial_from_json(i, t, version, info.session_id) for i, t in enumerate(doc["trials"]))
        events = tuple(
            Event(
                e["event_id"],
                info.session_id,
                EventKind(e["kind"]),
                _time(f"events[{i}].at", e["at"]),
                e["trial_index"],
                _dumps(e["payload"]),
            )
            for i, e in enumerate(doc["events"])
        )
    except KeyError as exc:
        raise InvalidInputError(f"json: missing key {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidInputError):
            raise
        raise InvalidInputError(f"json: bad value ({exc})") from None
    result = parse_result(doc["result"], where=f"json session {info.session_id}")
    return SessionRecord(info=info, trials=trials, events=events, result=result)
