"""The clinical validation benchmark: simulated patients through the one trial loop.

A population of simulated patients (:mod:`visiontune.refraction.population`, each number with
its source) is refracted with a protocol as a clinic would run it, through
:class:`visiontune.refraction.loop.Refraction` over an in-memory trial log (the same loop a
clinical session runs over SQLite). Per policy it reports answers used and stop reasons, the
dioptric distance between the prescription found (the trial lens the clinician would file) and
the true correction (Thibos 1997: the length of the difference of power vectors), the errors
in ``M`` and in ``J = (J0, J45)``, the axis error, the acuity lost through the found lens, how
often the credible region covers the truth (at 50%, 80% and 95%), the time from an answer to
the next lens, how many times the lens before the eye changed (a trial frame's lens swaps,
:func:`~visiontune.refraction.lenses.lens_changes`), and the same scores for **the starting
prescription as it is** beside them.

Runs are keyed by ``(experiment, population, policy, case)`` and committed one by one to an
SQLite store (a killed sweep resumes where it stopped); they run in joblib worker processes or
on a Dask scheduler (:func:`visiontune.validation.parallel_runs.execute_runs`). Every random choice is
seeded: a case is drawn from ``(population seed, case id)`` and its session seed is the case's.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from visiontune.errors import InvalidInputError, StoreError
from visiontune.optics import Prescription
from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.estimate import region_from_samples
from visiontune.refraction.lenses import lens_changes
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.population import PatientCase, draw_cases, population_by_name
from visiontune.refraction.protocol import Protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.parallel_runs import execute_runs
from visiontune.validation.results_store import open_results_db

__all__ = [
    "COVERAGE_LEVELS",
    "CaseResult",
    "CaseSpec",
    "ClinicStore",
    "TimedPresenter",
    "case_metrics",
    "case_refraction",
    "plan",
    "run_case",
    "stored_metrics",
    "summarise",
    "validation_case",
    "worse_than_start",
]

COVERAGE_LEVELS = (0.5, 0.8, 0.95)


@dataclass(frozen=True)
class RunKeyLike:
    experiment: str
    population: str
    policy: str
    case_id: int


@dataclass(frozen=True)
class CaseSpec:
    """One run: ``experiment`` name, the protocol (its TOML text and name), the ``policy`` run
    in it, the ``case`` (simulated patient and starting prescription)."""

    experiment: str
    protocol_text: str
    protocol_source: str
    policy: str
    population: str
    case: PatientCase

    @property
    def key(self) -> RunKeyLike:
        return RunKeyLike(self.experiment, self.population, self.policy, self.case.case_id)


@dataclass(frozen=True)
class CaseResult:
    """What one refraction gave (module docstring); ``metrics`` is a flat dict of numbers."""

    key: RunKeyLike
    metrics: dict
    n_decisions: int
    seconds: float


def _distance(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """``(|ΔP|, |ΔM|, |ΔJ|)`` between two power vectors (diopters)."""
    d = a - b
    return float(np.linalg.norm(d)), float(abs(d[0])), float(np.hypot(d[1], d[2]))


def _axis_error_deg(found: Prescription, true: Prescription) -> float | None:
    """Circular axis difference (degrees) when the true cylinder is at least 0.5 D, else None
    (the axis of a small cylinder is ill-defined)."""
    if abs(true.cylinder_d) < 0.5 or found.cylinder_d == 0.0:
        return None
    a, b = found.to_minus_cylinder().axis_deg, true.to_minus_cylinder().axis_deg
    return float(abs((a - b + 90.0) % 180.0 - 90.0))


def protocol_with_policy(protocol: Protocol, policy: str) -> Protocol:
    """``protocol`` with its ``policy`` line replaced (validated like any protocol file)."""
    lines = [
        f'policy = "{policy}"'
        if line.strip().startswith("policy") and "=" in line and not line.startswith(" ")
        else line
        for line in protocol.source_text.splitlines()
    ]
    return parse_protocol("\n".join(lines) + "\n", f"{protocol.source} (policy {policy})")


class TimedPresenter(SimulatedPresenter):
    """Times each decision: from the return of one answer to the next presentation
    (``decision_s``, seconds). Subclasses answer other kinds of query in :meth:`answer`."""

    def __init__(self, patient, *, comparison_model=None):
        super().__init__(patient, comparison_model=comparison_model)
        self.decision_s: list[float] = []
        self._answered: float | None = None

    def answer(self, query):
        return super().present(query)

    def present(self, query):
        now = time.perf_counter()
        if self._answered is not None:
            self.decision_s.append(now - self._answered)
        answer = self.answer(query)
        self._answered = time.perf_counter()
        return answer


def validation_case(population: str, case_id: int, seed: int) -> PatientCase:
    """Case ``case_id`` of ``population`` as ``visiontune validate`` draws it (population ``seed``)."""
    return draw_cases(population_by_name(population), case_id + 1, seed)[case_id]


def case_refraction(protocol: Protocol, case: PatientCase) -> Refraction:
    """The refraction of a simulated ``case`` under ``protocol`` before its first answer: an
    in-memory trial log, the case's seed and starting point, marked simulated (as
    :func:`run_case` refracts it). A start the session refuses raises :class:`InvalidInputError`."""
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    return Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)


def run_case(spec: CaseSpec) -> CaseResult:
    """Refract one simulated patient with the spec's protocol; score found and start."""
    t0 = time.perf_counter()
    protocol = parse_protocol(spec.protocol_text, spec.protocol_source)
    case = spec.case
    try:
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    except InvalidInputError as exc:  # the session refuses it: the clinician refracts by hand
        return CaseResult(spec.key, {"refused": str(exc)}, 0, time.perf_counter() - t0)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    patient = case.patient(protocol.n_alternatives)
    presenter = TimedPresenter(patient)
    result = refraction.run(presenter)
    m = case_metrics(refraction, result, case, patient, presenter.decision_s)
    return CaseResult(spec.key, m, int(result["trials_used"]), time.perf_counter() - t0)


def case_metrics(refraction: Refraction, result: dict, case: PatientCase, patient, decision_s: list[float]) -> dict:
    """The metrics of one finished refraction (module docstring): errors of the filed lens and
    of the start, acuity lost, coverage, decision times (``decision_s``, seconds)."""
    truth = case.true_rx.power_vector_array()
    rounded = result["rounded"]
    found = Prescription(rounded["sphere_d"], rounded["cylinder_d"], rounded["axis_deg"])
    exact_pv = np.array(Prescription(**result["estimate"]).power_vector_array())
    dist, dm, dj = _distance(found.power_vector_array(), truth)
    m = {
        "answers": result["trials_used"],
        "stopped_by": result["stopped_by"],
        "error_d": dist,
        "error_m_d": dm,
        "error_j_d": dj,
        "signed_error_m_d": float(found.power_vector_array()[0] - truth[0]),
        "exact_error_d": _distance(exact_pv, truth)[0],
        "axis_error_deg": _axis_error_deg(found, case.true_rx),
        "va_loss_logmar": float(patient.acuity_logmar(found) - patient.acuity_logmar(case.true_rx)),
        "age_years": case.age_years,
        "true_cylinder_d": case.true_rx.cylinder_d,
        "decision_ms": [1000.0 * s for s in decision_s],
        "lens_changes": lens_changes(refraction.trials()),
    }
    m.update(_coverage(refraction, truth))
    if refraction.protocol.comparisons is not None:
        m.update({"comparisons": int(result["comparisons_used"]), "patient_s": refraction.patient_seconds()})
    if refraction.protocol.sliders is not None:
        m.update({"sliders": int(result["sliders_used"]), "patient_s": refraction.patient_seconds()})
    if case.start_rx is not None:
        sd, sm, sj = _distance(case.start_rx.power_vector_array(), truth)
        m.update(
            {
                "start_error_d": sd,
                "start_error_m_d": sm,
                "start_error_j_d": sj,
                "start_signed_error_m_d": float(case.start_rx.power_vector_array()[0] - truth[0]),
                "start_axis_error_deg": _axis_error_deg(case.start_rx, case.true_rx),
                "start_va_loss_logmar": float(
                    patient.acuity_logmar(case.start_rx) - patient.acuity_logmar(case.true_rx)
                ),
            }
        )
    return m


def _coverage(refraction: Refraction, truth: np.ndarray) -> dict:
    """Whether the truth lies in the credible region ``{P: |P - P̂| <= r_level}`` at each level."""
    out = {}
    post = refraction.engine.correction_draws(refraction.trials())
    if post is not None:  # the engine keeps weighted draws of the correction (the optics models)
        centre = post.best_correction()
        for level in COVERAGE_LEVELS:
            region = region_from_samples(post.theta[:, :3], post.weights, centre, level, "minus")
            out[f"covered_{round(100 * level)}"] = bool(np.linalg.norm(truth - centre) <= region.distance_d)
        return out
    est = refraction.current_estimate()
    centre = est.lens.power_vector_array()
    covered = np.linalg.norm(truth - centre) <= est.region.distance_d
    out[f"covered_{round(100 * est.region.level)}"] = bool(covered)
    return out


def plan(experiment: str, protocol: Protocol, policies, population: str, n_cases: int, seed: int) -> list[CaseSpec]:
    """Every run of a validation: each policy on each of the first ``n_cases`` cases."""
    cases = draw_cases(population_by_name(population), n_cases, seed)
    specs = []
    for policy in policies:
        p = protocol if policy == protocol.policy else protocol_with_policy(protocol, policy)
        specs += [CaseSpec(experiment, p.source_text, p.source, policy, population, c) for c in cases]
    return specs


_SCHEMA = """
CREATE TABLE IF NOT EXISTS clinic_runs (
    experiment TEXT NOT NULL, population TEXT NOT NULL, policy TEXT NOT NULL, case_id INTEGER NOT NULL,
    metrics TEXT NOT NULL, n_decisions INTEGER NOT NULL, seconds REAL NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (experiment, population, policy, case_id)
);
"""


class ClinicStore:
    """The validation's results: one committed row per finished run (WAL, synchronous=FULL)."""

    def __init__(self, path) -> None:
        self.path = Path(path)
        self._db = open_results_db(self.path, "validation store", ("clinic_runs",))  # 0600, never over a user file
        try:
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.path}: cannot open the validation store ({exc})") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, result: CaseResult) -> None:
        k = result.key
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO clinic_runs (experiment, population, policy, case_id, metrics, "
                "n_decisions, seconds) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    k.experiment,
                    k.population,
                    k.policy,
                    k.case_id,
                    json.dumps(result.metrics),
                    result.n_decisions,
                    result.seconds,
                ),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot store run {k} ({exc})") from None

    def run(self, specs: list, experiments, run, *, jobs: int, scheduler: str | None, progress: bool):
        """Run every spec of ``specs`` not yet finished under one of ``experiments`` in this store
        (:func:`~visiontune.validation.parallel_runs.execute_runs`, each result committed as it
        finishes) and return the :class:`~visiontune.validation.parallel_runs.SweepSummary`; after
        Ctrl-C, say on stderr that the finished runs are stored and the same command resumes, and
        return None."""
        done = set().union(*(self.finished_keys(e) for e in experiments))
        try:
            return execute_runs(
                specs,
                done,
                run,
                self.add,
                jobs=jobs,
                scheduler=scheduler,
                progress=progress,
                stream=sys.stderr,
                connect_timeout=30.0,
            )
        except KeyboardInterrupt:
            print(f"stopped; the finished runs are stored: the same command resumes ({self.path})", file=sys.stderr)
            return None

    def finished_keys(self, experiment: str) -> set[RunKeyLike]:
        rows = self._db.execute(
            "SELECT experiment, population, policy, case_id FROM clinic_runs WHERE experiment = ?", (experiment,)
        )
        return {RunKeyLike(*r) for r in rows}

    def metrics(self, experiment: str, population: str, policy: str, n_cases: int) -> list[dict]:
        rows = self._db.execute(
            "SELECT metrics FROM clinic_runs WHERE experiment = ? AND population = ? AND policy = ? "
            "AND case_id < ? ORDER BY case_id",
            (experiment, population, policy, n_cases),
        )
        return [json.loads(r[0]) for r in rows]


def stored_metrics(path, population: str, policy: str, experiment: str | None = None) -> dict[int, dict]:
    """The metrics of a finished validation store's runs of ``population`` and ``policy``, by case,
    read without writing beside it (SQLite ``immutable``: no ``-wal``/``-shm`` left in a results
    folder). ``experiment`` None: the store's only experiment with that population."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such validation store")
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as db:
            if experiment is None:
                found = [
                    r[0]
                    for r in db.execute(
                        "SELECT DISTINCT experiment FROM clinic_runs WHERE population = ?", (population,)
                    )
                ]
                if len(found) != 1:
                    raise InvalidInputError(f"{path}: name the experiment; the store has {found} for {population}")
                experiment = found[0]
            rows = db.execute(
                "SELECT case_id, metrics FROM clinic_runs WHERE experiment = ? AND population = ? AND policy = ?",
                (experiment, population, policy),
            ).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot read the validation store ({exc})") from None
    return {int(case): json.loads(metrics) for case, metrics in rows}


@dataclass(frozen=True)
class Summary:
    """One row of the validation table (module docstring): shares are fractions in [0, 1]."""

    label: str
    n: int
    within_025: float
    within_050: float
    median_error_d: float
    p90_error_d: float
    median_error_m_d: float
    median_error_j_d: float
    median_va_loss: float
    median_answers: float | None = None
    stops: dict | None = None
    coverage: dict | None = None
    decision_ms_median: float | None = None
    decision_ms_p99: float | None = None
    worse_axis_near: int | None = None
    worse_than_start: float | None = None
    over_minus_young: int | None = None
    median_comparisons: float | None = None
    median_patient_s: float | None = None
    median_sliders: float | None = None
    median_lens_changes: float | None = None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def worse_than_start(runs: list[dict]) -> float | None:
    """The share of ``runs`` with a start whose filed lens is further from the truth than the start, by any
    amount (``error_d > start_error_d``); None when no run had a start."""
    started = [r for r in runs if r.get("start_error_d") is not None]
    if not started:
        return None
    return float(np.mean([r["error_d"] > r["start_error_d"] + 1e-9 for r in started]))


def summarise(label: str, runs: list[dict], *, start: bool = False) -> Summary:
    """The table row of ``runs`` (their metrics); ``start=True`` scores the starting prescription."""
    refused = sum("refused" in r for r in runs)
    runs = [r for r in runs if "refused" not in r]
    if not runs:
        raise InvalidInputError(f"{label}: no finished runs to summarise")
    pre = "start_" if start else ""
    err = np.array([r[pre + "error_d"] for r in runs])
    common = {
        "label": label,
        "n": len(runs),
        "within_025": float(np.mean(err <= 0.25 + 1e-9)),
        "within_050": float(np.mean(err <= 0.50 + 1e-9)),
        "median_error_d": float(np.median(err)),
        "p90_error_d": float(np.percentile(err, 90)),
        "median_error_m_d": float(np.median([r[pre + "error_m_d"] for r in runs])),
        "median_error_j_d": float(np.median([r[pre + "error_j_d"] for r in runs])),
        "median_va_loss": float(np.median([r[pre + "va_loss_logmar"] for r in runs])),
    }
    young = [r for r in runs if r.get("age_years") is not None and r["age_years"] <= YOUNG_AGE_YEARS]
    over_minus = sum(r[pre + "signed_error_m_d"] < -0.25 - 1e-9 for r in young)
    if start:
        return Summary(**common, over_minus_young=over_minus)
    stops: dict[str, int] = {}
    for r in runs:
        stops[r["stopped_by"]] = stops.get(r["stopped_by"], 0) + 1
    if refused:
        stops["refused, outside the range"] = refused
    coverage = {
        k: float(np.mean([r[k] for r in runs if k in r]))
        for k in sorted({k for r in runs for k in r if k.startswith("covered_")})
    }
    times = np.concatenate([r["decision_ms"] for r in runs if r["decision_ms"]] or [np.zeros(0)])
    near = [
        r
        for r in runs
        if r.get("start_error_d") is not None
        and r["start_error_d"] <= 0.25
        and r["axis_error_deg"] is not None
        and r["start_axis_error_deg"] is not None
    ]
    worse_axis = sum(r["axis_error_deg"] > r["start_axis_error_deg"] + 1e-9 for r in near)
    common["worse_than_start"] = worse_than_start(runs)
    if all("lens_changes" in r for r in runs):  # stores written before the count was kept lack it
        common["median_lens_changes"] = float(np.median([r["lens_changes"] for r in runs]))
    mixed = [r for r in runs if "comparisons" in r]
    if mixed:
        common.update(
            median_comparisons=float(np.median([r["comparisons"] for r in mixed])),
            median_patient_s=float(np.median([r["patient_s"] for r in mixed])),
        )
    slid = [r for r in runs if "sliders" in r]
    if slid:
        common.update(
            median_sliders=float(np.median([r["sliders"] for r in slid])),
            median_patient_s=float(np.median([r["patient_s"] for r in slid])),
        )
    return Summary(
        **common,
        median_answers=float(np.median([r["answers"] for r in runs])),
        stops=stops,
        coverage=coverage,
        decision_ms_median=float(np.median(times)) if times.size else None,
        decision_ms_p99=float(np.percentile(times, 99)) if times.size else None,
        worse_axis_near=worse_axis,
        over_minus_young=over_minus,
    )
