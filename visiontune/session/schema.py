"""The trial-log schema, version 1, as a list of SQL statements.

Append-only design (chosen over a guarded ``void`` column): ``trials`` and ``events`` rows
are never updated or deleted -- triggers abort any ``UPDATE`` or ``DELETE`` on them. A trial
is *void* when an ``undo`` event references it (at most one per trial, enforced by a partial
unique index). ``sessions`` rows may change only in ``state``, ``finished_at`` and
``result_json``, never once finished, and are never deleted.

Statements are kept separate (not one script) because ``sqlite3.executescript`` commits any
open transaction first; a migration must run inside one transaction.
"""

from __future__ import annotations

SCHEMA_V1: tuple[str, ...] = (
    """CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE patients (
        id         TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE sessions (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        patient_id       TEXT NOT NULL REFERENCES patients(id),
        eye              TEXT NOT NULL CHECK (eye IN ('OD', 'OS', 'OU')),
        protocol_toml    TEXT NOT NULL,
        software_version TEXT NOT NULL,
        seed             INTEGER NOT NULL CHECK (seed >= 0),
        calibration_json TEXT,
        simulated        INTEGER NOT NULL CHECK (simulated IN (0, 1)),
        state            TEXT NOT NULL CHECK (state IN ('open', 'paused', 'finished')),
        created_at       TEXT NOT NULL,
        finished_at      TEXT,
        starting_rx_json TEXT,
        result_json      TEXT
    )""",
    """CREATE TABLE trials (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id   INTEGER NOT NULL REFERENCES sessions(id),
        idx          INTEGER NOT NULL CHECK (idx >= 0),
        s_logmar     REAL NOT NULL,
        sphere_d     REAL NOT NULL,
        cylinder_d   REAL NOT NULL,
        axis_deg     REAL NOT NULL CHECK (axis_deg >= 0 AND axis_deg < 180),
        sphere2_d    REAL,
        cylinder2_d  REAL,
        axis2_deg    REAL,
        letter_shown TEXT NOT NULL,
        letter_named TEXT,
        correct      INTEGER NOT NULL CHECK (correct IN (0, 1)),
        presented_at TEXT NOT NULL,
        answered_at  TEXT NOT NULL,
        UNIQUE (session_id, idx),
        CHECK ((sphere2_d IS NULL) = (cylinder2_d IS NULL) AND (cylinder2_d IS NULL) = (axis2_deg IS NULL))
    )""",
    """CREATE TABLE events (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id   INTEGER NOT NULL REFERENCES sessions(id),
        kind         TEXT NOT NULL CHECK (kind IN ('undo', 'pause', 'resume', 'finish', 'note')),
        trial_id     INTEGER REFERENCES trials(id),
        at           TEXT NOT NULL,
        payload_json TEXT,
        CHECK ((kind = 'undo') = (trial_id IS NOT NULL))
    )""",
    "CREATE UNIQUE INDEX events_one_undo_per_trial ON events(trial_id) WHERE kind = 'undo'",
    "CREATE INDEX events_by_session ON events(session_id, id)",
    "CREATE INDEX sessions_by_patient ON sessions(patient_id, id)",
    # --- append-only guards -------------------------------------------------------------
    """CREATE TRIGGER trials_no_update BEFORE UPDATE ON trials
       BEGIN SELECT RAISE(ABORT, 'trials are append-only: UPDATE is forbidden'); END""",
    """CREATE TRIGGER trials_no_delete BEFORE DELETE ON trials
       BEGIN SELECT RAISE(ABORT, 'trials are append-only: DELETE is forbidden'); END""",
    """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE is forbidden'); END""",
    """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
       BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE is forbidden'); END""",
    """CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions
       BEGIN SELECT RAISE(ABORT, 'sessions are never deleted'); END""",
    """CREATE TRIGGER sessions_finished_is_final BEFORE UPDATE ON sessions
       WHEN OLD.state = 'finished'
       BEGIN SELECT RAISE(ABORT, 'a finished session cannot change'); END""",
    """CREATE TRIGGER sessions_snapshot_is_fixed BEFORE UPDATE ON sessions
       WHEN NEW.id IS NOT OLD.id OR NEW.patient_id IS NOT OLD.patient_id OR NEW.eye IS NOT OLD.eye
         OR NEW.protocol_toml IS NOT OLD.protocol_toml
         OR NEW.software_version IS NOT OLD.software_version OR NEW.seed IS NOT OLD.seed
         OR NEW.calibration_json IS NOT OLD.calibration_json OR NEW.simulated IS NOT OLD.simulated
         OR NEW.created_at IS NOT OLD.created_at OR NEW.starting_rx_json IS NOT OLD.starting_rx_json
       BEGIN SELECT RAISE(ABORT, 'only state, finished_at and result_json of a session may change'); END""",
    # --- consistency guards (the store checks first; these catch raw SQL) ----------------
    """CREATE TRIGGER trials_only_in_open_session BEFORE INSERT ON trials
       WHEN (SELECT state FROM sessions WHERE id = NEW.session_id) IS NOT 'open'
       BEGIN SELECT RAISE(ABORT, 'trials can be added to an open session only'); END""",
    """CREATE TRIGGER trials_index_is_next BEFORE INSERT ON trials
       WHEN NEW.idx IS NOT (SELECT count(*) FROM trials WHERE session_id = NEW.session_id)
       BEGIN SELECT RAISE(ABORT, 'trial index must be the next one of its session'); END""",
    """CREATE TRIGGER events_undo_same_session BEFORE INSERT ON events
       WHEN NEW.kind = 'undo'
        AND (SELECT session_id FROM trials WHERE id = NEW.trial_id) IS NOT NEW.session_id
       BEGIN SELECT RAISE(ABORT, 'an undo must reference a trial of its own session'); END""",
)


#: Version 3: a trial may be a comparison ("which is clearer, 1 or 2?"): ``comparison`` holds its
#: answer (``'1'``, ``'2'`` or ``'='``), ``sphere_d``... the first lens and ``sphere2_d``... the
#: second; ``letter_shown`` the letter kept in view, ``correct`` 1 when lens 1 was the clearer.
#: A letter trial's ``comparison`` is NULL (every trial of a version 2 log).
SCHEMA_V3_COMPARISONS: tuple[str, ...] = (
    """ALTER TABLE trials ADD COLUMN comparison TEXT
       CHECK (comparison IS NULL OR (comparison IN ('1', '2', '=') AND sphere2_d IS NOT NULL))""",
)


#: Version 4: a trial may be a slider answer ("turn the knob; where is it clearest?",
#: :mod:`visiontune.refraction.slider`): ``slider_knob`` the knob turned (``'sphere'``,
#: ``'cylinder'`` or ``'axis'``), ``slider_path`` the lenses of its path in knob order (JSON: a list
#: of at least two ``{"sphere_d", "cylinder_d", "axis_deg"}``) and ``slider_choice`` the index of
#: the clearest; ``sphere_d``... the lens chosen, ``letter_shown`` the letter kept in view,
#: ``correct`` 1 when the knob's starting lens was the clearest. All three are set or none (a
#: letter or a comparison: every trial of a version 3 log); a slider is not a comparison.
SCHEMA_V4_SLIDERS: tuple[str, ...] = (
    """ALTER TABLE trials ADD COLUMN slider_knob TEXT
       CHECK (slider_knob IS NULL OR slider_knob IN ('sphere', 'cylinder', 'axis'))""",
    """ALTER TABLE trials ADD COLUMN slider_path TEXT
       CHECK (slider_path IS NULL OR (json_valid(slider_path) AND json_type(slider_path) = 'array'
                                     AND json_array_length(slider_path) >= 2))""",
    """ALTER TABLE trials ADD COLUMN slider_choice INTEGER
       CHECK ((slider_choice IS NULL) = (slider_knob IS NULL) AND (slider_knob IS NULL) = (slider_path IS NULL)
              AND (slider_choice IS NULL OR (typeof(slider_choice) = 'integer' AND slider_choice >= 0
                   AND slider_choice < json_array_length(slider_path) AND comparison IS NULL
                   AND sphere2_d IS NULL)))""",
)
