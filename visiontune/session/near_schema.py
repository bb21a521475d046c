"""The trial-log tables of the near (reading) addition of a visit (a schema migration of
:mod:`visiontune.session.migrations`; the values and writes are :mod:`visiontune.session.near_store`).

Tables (append-only like every visit table: triggers abort any ``UPDATE`` or ``DELETE``):

``visit_near``
    one per visit, written before its first near answer: the near distance (cm, 20-100), the
    method, and for a SIMULATED patient the simulated eyes (``simulated_json``, each marked
    SIMULATED) so a resumed step answers as the first run would.
``visit_near_answers``
    each near letter in order per eye: ``phase`` (``refine``: through a candidate add;
    ``check``: through the filed add, the near acuity), the lens over the distance correction (D,
    -4 to 4: an add, or a minus lens testing the positive relative accommodation), the letter size (logMAR
    at the near distance), the letter and whether it was named right. ``idx`` is the next one of
    the eye; nothing is added once the eye's add is filed.
``visit_near_adds``
    the add filed per eye (one row per eye): add, its 95% credible region, the tentative add by
    age, the near-usable amplitude, the range of clear vision (cm; far point NULL when infinite),
    the near acuity through the add (logMAR), the near distance, the method and its details.
"""

from __future__ import annotations

_NEAR_TABLES = ("visit_near", "visit_near_answers", "visit_near_adds")


def _guards(table: str) -> tuple[str, str]:
    return (
        f"""CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
           BEGIN SELECT RAISE(ABORT, '{table} are append-only: UPDATE is forbidden'); END""",
        f"""CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
           BEGIN SELECT RAISE(ABORT, '{table} are append-only: DELETE is forbidden'); END""",
    )


SCHEMA_NEAR_ADDITION: tuple[str, ...] = (
    """CREATE TABLE visit_near (
        visit_id       INTEGER PRIMARY KEY REFERENCES visits(id),
        distance_cm    REAL NOT NULL CHECK (distance_cm BETWEEN 20 AND 100),
        method         TEXT NOT NULL CHECK (length(trim(method)) > 0),
        simulated_json TEXT,
        at             TEXT NOT NULL
    )""",
    """CREATE TABLE visit_near_answers (
        visit_id     INTEGER NOT NULL REFERENCES visit_near(visit_id),
        eye          TEXT NOT NULL CHECK (eye IN ('OD', 'OS')),
        idx          INTEGER NOT NULL CHECK (idx >= 0),
        phase        TEXT NOT NULL CHECK (phase IN ('refine', 'check')),
        add_d        REAL NOT NULL CHECK (add_d BETWEEN -4 AND 4),
        size_logmar  REAL NOT NULL CHECK (size_logmar BETWEEN -0.5 AND 2),
        letter       TEXT CHECK (letter IS NULL OR length(letter) = 1),
        correct      INTEGER NOT NULL CHECK (correct IN (0, 1)),
        at           TEXT NOT NULL,
        PRIMARY KEY (visit_id, eye, idx)
    )""",
    """CREATE TABLE visit_near_adds (
        visit_id        INTEGER NOT NULL REFERENCES visit_near(visit_id),
        eye             TEXT NOT NULL CHECK (eye IN ('OD', 'OS')),
        add_d           REAL NOT NULL CHECK (add_d BETWEEN 0 AND 4),
        lower_d         REAL NOT NULL CHECK (lower_d BETWEEN 0 AND 4 AND lower_d <= add_d),
        upper_d         REAL NOT NULL CHECK (upper_d BETWEEN 0 AND 4 AND upper_d >= add_d),
        tentative_add_d REAL NOT NULL CHECK (tentative_add_d BETWEEN 0 AND 4),
        amplitude_d     REAL NOT NULL CHECK (amplitude_d BETWEEN 0 AND 20),
        near_point_cm   REAL CHECK (near_point_cm IS NULL OR near_point_cm > 0),
        far_point_cm    REAL CHECK (far_point_cm IS NULL OR far_point_cm > 0),
        near_va_logmar  REAL NOT NULL CHECK (near_va_logmar BETWEEN -1 AND 3),
        distance_cm     REAL NOT NULL CHECK (distance_cm BETWEEN 20 AND 100),
        method          TEXT NOT NULL CHECK (length(trim(method)) > 0),
        detail_json     TEXT,
        at              TEXT NOT NULL,
        PRIMARY KEY (visit_id, eye)
    )""",
    *(g for table in _NEAR_TABLES for g in _guards(table)),
    """CREATE TRIGGER visit_near_answers_index_is_next BEFORE INSERT ON visit_near_answers
       WHEN NEW.idx IS NOT (SELECT count(*) FROM visit_near_answers WHERE visit_id = NEW.visit_id AND eye = NEW.eye)
       BEGIN SELECT RAISE(ABORT, 'near answer index must be the next one of its eye'); END""",
    """CREATE TRIGGER visit_near_answers_before_add BEFORE INSERT ON visit_near_answers
       WHEN EXISTS (SELECT 1 FROM visit_near_adds WHERE visit_id = NEW.visit_id AND eye = NEW.eye)
       BEGIN SELECT RAISE(ABORT, 'the add of this eye is filed: no more near answers'); END""",
)
