"""The trial-log schema, version 2: visits (both eyes, binocular balance, sign-offs, acuity).

A **visit** is one patient's refraction in the clinic: the right eye (OD), the left eye (OS),
an optional binocular balance, the clinician's sign-off of an edited prescription and the
acuity read through the final one. Version 2 adds tables only; the version 1 tables
(``patients``, ``sessions``, ``trials``, ``events``) keep their meaning, and an eye's
refraction is an ordinary session linked to the visit.

Tables (every one append-only: triggers abort any ``UPDATE`` or ``DELETE``):

``visits``
    patient (a ``patients`` row), optional ``age_years``, optional habitual prescription per
    eye (``habitual_od_json`` / ``habitual_os_json``: ``{"sphere_d", "cylinder_d",
    "axis_deg"}``), the clinic's ``cylinder_form``, optional ``clinician``, ``simulated``,
    ``software_version``, ``created_at``.
``visit_eyes``
    what happened to each eye: either the ``session_id`` of its refraction (a session of the
    same patient, eye and kind, linked to one visit only) or a ``skip_reason`` (prosthetic
    eye, amblyopia...). One row per eye, except that an eye whose session was discarded
    (closed without answers, ``SessionHandle.discard``) may be linked again or skipped: the
    latest row of an eye is the one in force.
``visit_balance_answers``
    the binocular balance's comparison questions in order: the lens before each eye (fog and
    adjustments included), the plus over that eye's end point, and which eye the patient found
    clearer (``OD``, ``OS`` or ``equal``). ``idx`` is the next one of the visit, and nothing is
    added once the balance has its outcome.
``visit_balance``
    the balance's outcome, one per visit: ``equal``, ``right eye clearer``, ``not balanced``
    or ``not done`` (with the ``reason``), the method and the plus change it applies to each
    eye's sphere (D).
``visit_signoffs``
    an edited prescription of one eye signed by a named clinician. It is kept beside the
    prescription the refraction found (the session's result), never in its place; a later
    sign-off of the same eye is the one in force, the earlier ones stay.
``visit_acuities``
    an acuity (logMAR) read through given lenses (``lenses_json``: ``{"OD": rx, "OS": rx}``),
    one eye (``OD``/``OS``) or both (``OU``), how it was measured, and its details.

Times are ISO 8601 text in UTC, as in version 1.
"""

from __future__ import annotations

_APPEND_ONLY = ("visits", "visit_eyes", "visit_balance_answers", "visit_balance", "visit_signoffs", "visit_acuities")


def _guards(table: str) -> tuple[str, str]:
    return (
        f"""CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
           BEGIN SELECT RAISE(ABORT, '{table} are append-only: UPDATE is forbidden'); END""",
        f"""CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
           BEGIN SELECT RAISE(ABORT, '{table} are append-only: DELETE is forbidden'); END""",
    )


SCHEMA_V2_VISITS: tuple[str, ...] = (
    """CREATE TABLE visits (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        patient_id       TEXT NOT NULL REFERENCES patients(id),
        age_years        INTEGER CHECK (age_years IS NULL OR age_years BETWEEN 0 AND 130),
        habitual_od_json TEXT,
        habitual_os_json TEXT,
        cylinder_form    TEXT NOT NULL CHECK (cylinder_form IN ('minus', 'plus')),
        clinician        TEXT,
        simulated        INTEGER NOT NULL CHECK (simulated IN (0, 1)),
        software_version TEXT NOT NULL,
        created_at       TEXT NOT NULL
    )""",
    """CREATE TABLE visit_eyes (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        visit_id    INTEGER NOT NULL REFERENCES visits(id),
        eye         TEXT NOT NULL CHECK (eye IN ('OD', 'OS')),
        session_id  INTEGER UNIQUE REFERENCES sessions(id),
        skip_reason TEXT CHECK (skip_reason IS NULL OR length(trim(skip_reason)) > 0),
        at          TEXT NOT NULL,
        CHECK ((session_id IS NULL) <> (skip_reason IS NULL))
    )""",
    """CREATE TABLE visit_balance_answers (
        visit_id      INTEGER NOT NULL REFERENCES visits(id),
        idx           INTEGER NOT NULL CHECK (idx >= 0),
        od_sphere_d   REAL NOT NULL,
        od_cylinder_d REAL NOT NULL,
        od_axis_deg   REAL NOT NULL CHECK (od_axis_deg > 0 AND od_axis_deg <= 180),
        os_sphere_d   REAL NOT NULL,
        os_cylinder_d REAL NOT NULL,
        os_axis_deg   REAL NOT NULL CHECK (os_axis_deg > 0 AND os_axis_deg <= 180),
        plus_od_d     REAL NOT NULL,
        plus_os_d     REAL NOT NULL,
        clearer       TEXT NOT NULL CHECK (clearer IN ('OD', 'OS', 'equal')),
        at            TEXT NOT NULL,
        PRIMARY KEY (visit_id, idx)
    )""",
    """CREATE TABLE visit_balance (
        visit_id         INTEGER PRIMARY KEY REFERENCES visits(id),
        outcome          TEXT NOT NULL
                         CHECK (outcome IN ('equal', 'right eye clearer', 'not balanced', 'not done')),
        method           TEXT NOT NULL,
        plus_change_od_d REAL NOT NULL CHECK (plus_change_od_d BETWEEN -4 AND 4),
        plus_change_os_d REAL NOT NULL CHECK (plus_change_os_d BETWEEN -4 AND 4),
        reason           TEXT,
        at               TEXT NOT NULL
    )""",
    """CREATE TABLE visit_signoffs (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        visit_id   INTEGER NOT NULL REFERENCES visits(id),
        eye        TEXT NOT NULL CHECK (eye IN ('OD', 'OS')),
        sphere_d   REAL NOT NULL,
        cylinder_d REAL NOT NULL,
        axis_deg   REAL NOT NULL CHECK (axis_deg > 0 AND axis_deg <= 180),
        by_name    TEXT NOT NULL CHECK (length(trim(by_name)) > 0),
        at         TEXT NOT NULL
    )""",
    """CREATE TABLE visit_acuities (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        visit_id    INTEGER NOT NULL REFERENCES visits(id),
        eye         TEXT NOT NULL CHECK (eye IN ('OD', 'OS', 'OU')),
        va_logmar   REAL NOT NULL CHECK (va_logmar BETWEEN -1 AND 3),
        lenses_json TEXT NOT NULL,
        method      TEXT NOT NULL CHECK (length(trim(method)) > 0),
        detail_json TEXT,
        at          TEXT NOT NULL
    )""",
    "CREATE INDEX visits_by_patient ON visits(patient_id, id)",
    "CREATE INDEX visit_eyes_by_visit ON visit_eyes(visit_id, eye, id)",
    "CREATE INDEX visit_signoffs_by_visit ON visit_signoffs(visit_id, id)",
    "CREATE INDEX visit_acuities_by_visit ON visit_acuities(visit_id, id)",
    *(g for table in _APPEND_ONLY for g in _guards(table)),
    # --- consistency guards (the store checks first; these catch raw SQL) ------------------
    """CREATE TRIGGER visit_eyes_session_matches BEFORE INSERT ON visit_eyes
       WHEN NEW.session_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM sessions s JOIN visits v ON v.id = NEW.visit_id
            WHERE s.id = NEW.session_id AND s.patient_id = v.patient_id AND s.eye = NEW.eye
              AND s.simulated = v.simulated)
       BEGIN SELECT RAISE(ABORT, 'a visit eye links a session of the same patient, eye and kind only'); END""",
    """CREATE TRIGGER visit_eyes_once_per_eye BEFORE INSERT ON visit_eyes
       WHEN EXISTS (
            SELECT 1 FROM visit_eyes e LEFT JOIN sessions s ON s.id = e.session_id
            WHERE e.visit_id = NEW.visit_id AND e.eye = NEW.eye
              AND (e.session_id IS NULL OR s.state IS NOT 'finished'
                   OR json_extract(s.result_json, '$.discarded') IS NOT 1))
       BEGIN SELECT RAISE(ABORT, 'this eye of the visit already has its session or was skipped'); END""",
    """CREATE TRIGGER visit_balance_answers_index_is_next BEFORE INSERT ON visit_balance_answers
       WHEN NEW.idx IS NOT (SELECT count(*) FROM visit_balance_answers WHERE visit_id = NEW.visit_id)
       BEGIN SELECT RAISE(ABORT, 'balance answer index must be the next one of its visit'); END""",
    """CREATE TRIGGER visit_balance_answers_before_outcome BEFORE INSERT ON visit_balance_answers
       WHEN EXISTS (SELECT 1 FROM visit_balance WHERE visit_id = NEW.visit_id)
       BEGIN SELECT RAISE(ABORT, 'the balance of this visit has its outcome: no more answers'); END""",
)
