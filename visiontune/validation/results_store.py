"""Results store of benchmark sweeps: one SQLite row per finished run, safe against a kill.

A run is keyed by ``(experiment, scenario, rule, function, seed)`` (UNIQUE). The database runs
in WAL mode with ``synchronous=FULL``, and each finished run is committed in its own
transaction, so a sweep killed at any moment (SIGKILL included) keeps every run committed
before the kill; restarting the same command skips them (:meth:`ResultsStore.finished_keys`)
and a run stored twice is ignored (``INSERT OR IGNORE`` on the UNIQUE key), never duplicated.

Scores are stored as a JSON array of floats (``repr`` precision, so they round-trip exactly).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from visiontune import output_guard, private_files
from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError, StoreError

__all__ = [
    "RunKey",
    "RunRecord",
    "ResultsStore",
    "SCHEMA_VERSION",
    "open_results_db",
    "results_db_kind",
    "write_results_file",
]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    experiment  TEXT    NOT NULL,
    scenario    TEXT    NOT NULL,
    rule        TEXT    NOT NULL,
    function    TEXT    NOT NULL,
    seed        INTEGER NOT NULL,
    scores      TEXT    NOT NULL,
    n_decisions INTEGER NOT NULL,
    seconds     REAL    NOT NULL,
    finished_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (experiment, scenario, rule, function, seed)
);
"""


@dataclass(frozen=True)
class RunKey:
    """Identity of one run: ``experiment`` name, ``scenario``, ``rule`` and ``function`` names, ``seed``."""

    experiment: str
    scenario: str
    rule: str
    function: str
    seed: int


@dataclass(frozen=True)
class RunRecord:
    """One finished run: its ``key``, ``scores`` ``(n_iterations,)`` (true scaled value at the reported
    solution after each iteration), ``n_decisions`` (policy calls) and wall-clock ``seconds``."""

    key: RunKey
    scores: np.ndarray
    n_decisions: int
    seconds: float


_SQLITE_HEADER = b"SQLite format 3\x00"


#: The tables of a ``bench`` results store (``refraction_runs``: :mod:`~visiontune.reproduction.gp_refraction_bench`).
BENCH_TABLES = ("runs", "refraction_runs")


def results_db_kind(tables: tuple[str, ...]) -> output_guard.OutputKind:
    """A results database of no other tables than ``tables`` (an empty one included): what a
    results store may replace or reopen; a trial log or any other database is another kind."""
    names = {t.encode() for t in tables}

    def recognise(data: bytes) -> bool:
        return data.startswith(_SQLITE_HEADER) and set(re.findall(rb"CREATE TABLE (\w+)", data)) <= names

    return output_guard.OutputKind(f"results store (tables {', '.join(tables)})", recognise)


def open_results_db(path: Path, what: str, tables: tuple[str, ...]) -> sqlite3.Connection:
    """A connection (autocommit, WAL, ``synchronous=FULL``) to the results database at ``path``
    of ``tables``, created with mode 0600 (folders 0700) whatever the umask (SQLite gives its
    ``-wal``/``-shm`` the database's mode). Refused (StoreError naming ``what``): the user's
    files (trial log, calibration, settings, by identity) and an existing file that is not a
    results database of ``tables`` (:func:`visiontune.output_guard.guard_output_path`)."""
    path = output_guard.guard_output_path(path, results_db_kind(tables), name=what, error=StoreError)
    private_files.private_dir(path.parent, error=StoreError)
    try:
        try:
            private_files.create_private(path)
        except FileExistsError:
            private_files.make_private(path)
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"{path}: cannot open the {what} ({exc})") from None
    return db


def write_results_file(path: str | Path, data: str | bytes, kind: output_guard.OutputKind) -> Path:
    """A page, table or figure of ``bench``/``validate`` (``kind``: Markdown, CSV, JSON, PNG)
    written atomically with mode 0600; never over a user file or an existing file of another
    kind (StoreError naming it: :func:`visiontune.output_guard.write_output`)."""
    return output_guard.write_output(path, data, kind, name="results file", error=StoreError)


class ResultsStore:
    """SQLite results store at ``path`` (created if absent). Use as a context manager or call :meth:`close`."""

    def __init__(self, path):
        self.path = Path(path)
        self._db = open_results_db(self.path, "results store", BENCH_TABLES)
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: results store schema {version} is newer than this VisionTune ({SCHEMA_VERSION})"
                )
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the results store ({exc})") from None

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def journal_mode(self) -> str:
        return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    @property
    def synchronous(self) -> int:
        """SQLite ``synchronous`` level (2 = FULL)."""
        return int(self._db.execute("PRAGMA synchronous").fetchone()[0])

    # -------------------------------------------------------------- writing
    def add(self, record: RunRecord) -> bool:
        """Commit one finished run; returns False if that key was already stored (nothing changes)."""
        if not isinstance(record, RunRecord):
            raise InvalidInputError(f"record: expected a RunRecord, got {type(record).__name__}")
        scores = finite_array("record.scores", record.scores).reshape(-1)
        k = record.key
        try:
            cur = self._db.execute(
                "INSERT OR IGNORE INTO runs (experiment, scenario, rule, function, seed, scores, n_decisions, seconds)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    k.experiment,
                    k.scenario,
                    k.rule,
                    k.function,
                    int(k.seed),
                    json.dumps([float(v) for v in scores]),
                    int(record.n_decisions),
                    float(record.seconds),
                ),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot store run {k} ({exc})") from None
        return cur.rowcount == 1

    def discard(self, keys) -> int:
        """Delete the stored runs of ``keys`` (:class:`RunKey`, absent ones ignored) in one transaction,
        so that a sweep runs them again (e.g. after a fix to a rule); returns how many were deleted."""
        rows = [(k.experiment, k.scenario, k.rule, k.function, int(k.seed)) for k in keys]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            deleted = sum(
                self._db.execute(
                    "DELETE FROM runs WHERE experiment = ? AND scenario = ? AND rule = ? AND function = ? AND seed = ?",
                    row,
                ).rowcount
                for row in rows
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreError(f"{self.path}: cannot discard {len(rows)} runs ({exc})") from None
        return deleted

    # -------------------------------------------------------------- reading
    def finished_keys(self, experiment: str | None = None) -> set[RunKey]:
        """Keys of the stored runs (of one ``experiment`` if given)."""
        sql = "SELECT experiment, scenario, rule, function, seed FROM runs"
        rows = self._db.execute(
            sql + (" WHERE experiment = ?" if experiment else ""), (experiment,) if experiment else ()
        )
        return {RunKey(*row) for row in rows}

    def records(self, experiment: str | None = None) -> list[RunRecord]:
        """Stored runs (of one ``experiment`` if given), ordered by key."""
        sql = "SELECT experiment, scenario, rule, function, seed, scores, n_decisions, seconds FROM runs"
        sql += " WHERE experiment = ?" if experiment else ""
        sql += " ORDER BY experiment, scenario, rule, function, seed"
        out = []
        for row in self._db.execute(sql, (experiment,) if experiment else ()):
            try:
                scores = np.array(json.loads(row[5]), dtype=float)
            except (TypeError, ValueError) as exc:
                raise StoreError(f"{self.path}: damaged scores for run {row[:5]} ({exc})") from None
            out.append(RunRecord(RunKey(*row[:5]), scores, int(row[6]), float(row[7])))
        return out

    def count(self, experiment: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM runs" + (" WHERE experiment = ?" if experiment else "")
        return int(self._db.execute(sql, (experiment,) if experiment else ()).fetchone()[0])

    def curves(self, experiment: str) -> dict[str, dict[str, np.ndarray]]:
        """function -> rule -> ``(n_seeds, n_iterations)`` scores of ``experiment``, rows by seed
        (the input of :func:`visiontune.reproduction.analysis.stratified_analysis`)."""
        grouped: dict[str, dict[str, list[np.ndarray]]] = {}
        for rec in self.records(experiment):
            grouped.setdefault(rec.key.function, {}).setdefault(rec.key.rule, []).append(rec.scores)
        out = {}
        for fname, by_rule in grouped.items():
            out[fname] = {}
            for rule, rows in by_rule.items():
                lengths = {len(r) for r in rows}
                if len(lengths) != 1:
                    raise StoreError(f"{self.path}: runs of {rule} on {fname} have different lengths {sorted(lengths)}")
                out[fname][rule] = np.vstack(rows)
        return out
