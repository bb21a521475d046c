"""The trial-log table of a visit's inputs: pupillary distance, where each starting and the
habitual prescription came from, the examiner (a schema migration of
:mod:`visiontune.session.migrations`; the values and writes are
:func:`visiontune.session.visit_records.record_visit_inputs` and
:func:`~visiontune.session.visit_records.visit_inputs`).

``visit_inputs`` (append-only like every visit table: triggers abort any ``UPDATE`` or ``DELETE``)
    one row per entry (typed at the visit's start, or read from an instrument's file): the
    binocular pupillary distance ``pd_mm`` (40-80 mm: Dodgson 2004, adults and children from five
    years) and/or the monocular ones ``pd_od_mm`` / ``pd_os_mm`` (20-40 mm each; when both are
    given ``pd_mm`` is their sum), the source of the
    starting prescription of each eye (``autorefraction``, ``retinoscopy``, ``habitual
    spectacles``, ``typed``, ``none``), the source of the habitual prescription (``lensmeter``,
    ``spectacle prescription``, ``typed``), ``from_file`` (the instrument file the row was read
    from; NULL when typed), the ``examiner`` who ran the refraction, and ``at`` (UTC). Every
    column but ``visit_id`` and ``at`` may be NULL; the values in force are, field by field, the
    latest row's non-NULL one (the pupillary distances as one group).
"""

from __future__ import annotations

SCHEMA_VISIT_INPUTS: tuple[str, ...] = (
    """CREATE TABLE visit_inputs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        visit_id        INTEGER NOT NULL REFERENCES visits(id),
        pd_mm           REAL CHECK (pd_mm IS NULL OR pd_mm BETWEEN 40 AND 80),
        pd_od_mm        REAL CHECK (pd_od_mm IS NULL OR pd_od_mm BETWEEN 20 AND 40),
        pd_os_mm        REAL CHECK (pd_os_mm IS NULL OR pd_os_mm BETWEEN 20 AND 40),
        start_source_od TEXT CHECK (start_source_od IS NULL OR start_source_od IN
                                    ('autorefraction', 'retinoscopy', 'habitual spectacles', 'typed', 'none')),
        start_source_os TEXT CHECK (start_source_os IS NULL OR start_source_os IN
                                    ('autorefraction', 'retinoscopy', 'habitual spectacles', 'typed', 'none')),
        habitual_source TEXT CHECK (habitual_source IS NULL OR habitual_source IN
                                    ('lensmeter', 'spectacle prescription', 'typed')),
        from_file       TEXT CHECK (from_file IS NULL OR length(trim(from_file)) > 0),
        examiner        TEXT CHECK (examiner IS NULL OR length(trim(examiner)) > 0),
        at              TEXT NOT NULL,
        CHECK ((pd_od_mm IS NULL) = (pd_os_mm IS NULL)),
        CHECK (pd_od_mm IS NULL OR abs(pd_mm - pd_od_mm - pd_os_mm) < 0.01)
    )""",
    "CREATE INDEX visit_inputs_by_visit ON visit_inputs(visit_id, id)",
    """CREATE TRIGGER visit_inputs_no_update BEFORE UPDATE ON visit_inputs
       BEGIN SELECT RAISE(ABORT, 'visit_inputs are append-only: UPDATE is forbidden'); END""",
    """CREATE TRIGGER visit_inputs_no_delete BEFORE DELETE ON visit_inputs
       BEGIN SELECT RAISE(ABORT, 'visit_inputs are append-only: DELETE is forbidden'); END""",
)
