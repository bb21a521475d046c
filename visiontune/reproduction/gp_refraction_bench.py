"""The refraction experiment of Fauvel & Chalk (contextual BO) §5.3 (Table 3, figure 3B):
``visiontune bench refraction``.

**Protocol** (Fauvel & Chalk (contextual BO), §5.3): rules UCB-ALD, TS-ALD, UCB with a random context, BALD, TS with a
random context and random (:data:`PAPER_RULES`, our registry names); psychometric slopes
``a ∈ linspace(1, 8, 8)`` logMAR⁻¹; 20 repetitions; 260 trials; a 26-letter task. Each run is one
simulated session (:func:`visiontune.reproduction.gp_refraction_run.run_refraction`); after every trial we keep
the patient's true acuity through the current estimate, ``VA(x̂_t) = VA* + log10(1 + β²)``
(logMAR; lower is better; docs/design.md, *Acuity model*), and at the end the sphere and cylinder errors
``|Ŝ - S*|``, ``|Ĉ - C*|`` (diopters).

**Runs and their keys.** A run is ``(rule, slope, repetition)``; its
:class:`~visiontune.validation.results_store.RunKey` is ``(experiment, "refraction", rule, "slope-<a>", seed)``
with ``seed`` = the repetition index. ``run_refraction`` draws the patient's true correction from
``SeedSequence(seed)``, so every rule and every slope sees the same 20 patients (common random
numbers, as the benchmark sweeps share the initial design across rules). The experiment name
carries everything that changes a run other than its key: ``refraction`` (260 trials),
``refraction-quick``, and ``-<n>trials`` for another trial count, so runs of different
lengths never share a key. Subsets of rules, slopes and seeds share the store.

**Store.** :class:`RefractionStore` is the sweeps' :class:`~visiontune.validation.results_store.ResultsStore`
(the per-trial VA is the run's ``scores``) plus a table ``refraction_runs`` with the final errors,
the true and estimated lenses; both rows of a run are committed in one transaction, so a kill at
any moment leaves either the whole run or nothing, and a restart never duplicates a run.

**Analysis** (Fauvel & Chalk (contextual BO), §4 protocol applied to Table 3): each slope is a stratum (a "function" of
the benchmarks); :func:`visiontune.reproduction.analysis.stratified_analysis` runs on ``-VA`` (it ranks larger
as better): one-sided Mann-Whitney U at α = 5e-4 on the final VA, AUC (mean VA over trials)
tie-break, Borda scores summed over slopes. With ``n`` repetitions the smallest exact p-value is
``1/C(2n, n)``: 6 repetitions or fewer can never separate two rules, 7 only when they do not overlap.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from visiontune import output_guard
from visiontune._validate import check_int, finite_array
from visiontune.errors import InvalidInputError, StoreError
from visiontune.reproduction import analysis
from visiontune.reproduction.analysis import ALPHA, save_mean_sem_figures, stratified_analysis
from visiontune.reproduction.gp_refraction_run import resolve_policy, run_refraction
from visiontune.reproduction.invocation import (
    disagreements,
    print_outcome,
    record_wall_time,
    wall_time_kept_when_stopped,
)
from visiontune.reproduction.paper_tables import REFRACTION_UCB_ALD, side_by_side
from visiontune.validation.parallel_runs import check_jobs, execute_runs
from visiontune.validation.provenance import code_version, machine_description, software_line
from visiontune.validation.results_store import ResultsStore, RunKey, RunRecord, write_results_file

__all__ = [
    "DEFAULT_EXPERIMENT",
    "FIGURE_SLOPE",
    "PAPER_RULES",
    "PAPER_SLOPES",
    "QUICK_EXPERIMENT",
    "SCENARIO",
    "FinalSummary",
    "RefractionExperiment",
    "RefractionResult",
    "RefractionSpec",
    "RefractionStore",
    "analyse",
    "command_line",
    "curves",
    "experiment_from_args",
    "final_summaries",
    "final_table",
    "on_box_edge",
    "plan",
    "planned_results",
    "plot_va_curves",
    "resolve_rules",
    "results_page",
    "run_cli",
    "run_experiment",
    "run_one",
    "slope_label",
]

#: Scenario column of the store's run keys.
SCENARIO = "refraction"
#: The rules of Fauvel & Chalk (contextual BO), Table 3, best first in the paper, under our registry names.
PAPER_RULES = ("UCB-ALD", "TS-ALD", "UCB-random-context", "BALD", "TS-random-context", "random-contextual")
#: Slopes of the psychometric function (logMAR⁻¹), Fauvel & Chalk (contextual BO), §5.3: 8 values evenly spaced
#: in [1, 8].
PAPER_SLOPES = tuple(float(a) for a in np.linspace(1.0, 8.0, 8))
#: Slope of Fauvel & Chalk (contextual BO), figure 3 and of the paper's final VA / sphere / cylinder figures.
FIGURE_SLOPE = 5.0


def slope_label(slope: float) -> str:
    """Stratum name of a slope, ``"slope-<a>"`` (``%g``), the ``function`` column of a run key."""
    return f"slope-{float(slope):g}"


@dataclass(frozen=True)
class RefractionExperiment:
    """The refraction experiment: ``name`` (run keys), ``rules`` (registry names), ``slopes``
    (logMAR⁻¹), ``n_seeds`` (repetitions, seeds ``0 .. n_seeds-1``), ``trials`` per run,
    ``n_alternatives`` of the letter task, ``source``."""

    name: str
    rules: tuple[str, ...]
    slopes: tuple[float, ...]
    n_seeds: int
    trials: int
    n_alternatives: int = 26
    source: str = "Fauvel & Chalk (contextual BO) §5.3, table 3 and figure 3B"

    def __post_init__(self):
        if not self.rules or len(set(self.rules)) != len(self.rules):
            raise InvalidInputError(f"policies: expected distinct rule names, got {list(self.rules)}")
        slopes = finite_array("slopes", self.slopes, ndim=1)
        if slopes.size < 1 or np.any(slopes <= 0):
            raise InvalidInputError(f"slopes: expected positive slopes (logMAR^-1), got {slopes.tolist()}")
        if len({slope_label(a) for a in slopes}) != slopes.size:
            raise InvalidInputError(f"slopes: expected distinct values, got {slopes.tolist()}")
        for field_name in ("n_seeds", "trials"):
            check_int("seeds" if field_name == "n_seeds" else field_name, getattr(self, field_name), lo=1)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.n_seeds))

    def subset(self, *, rules=None, slopes=None, n_seeds=None, trials=None) -> RefractionExperiment:
        """The same experiment with other rules, slopes, repetitions or trials. Rules, slopes and
        seeds keep the run keys; another trial count appends ``-<trials>trials`` to the name."""
        rules = self.rules if rules is None else tuple(resolve_rules(rules))
        slopes = self.slopes if slopes is None else tuple(float(a) for a in slopes)
        name = self.name
        if trials is not None and trials != self.trials:
            name = f"{self.name}-{trials}trials"
        return replace(
            self,
            name=name,
            rules=rules,
            slopes=slopes,
            n_seeds=self.n_seeds if n_seeds is None else n_seeds,
            trials=self.trials if trials is None else trials,
        )


#: The paper's protocol: 6 rules x 8 slopes x 20 repetitions x 260 trials (960 runs).
DEFAULT_EXPERIMENT = RefractionExperiment("refraction", PAPER_RULES, PAPER_SLOPES, 20, 260)
#: ``--quick``: 6 rules x slopes {2, 5} x 8 repetitions x 30 trials (96 runs, 2-3 minutes on 2 cores).
#: 8 repetitions is the fewest for which two rules can be separated at α = 5e-4 without being
#: perfectly apart (1/C(16, 8) = 7.8e-5; module docstring).
QUICK_EXPERIMENT = RefractionExperiment("refraction-quick", PAPER_RULES, (2.0, 5.0), 8, 30)


def resolve_rules(names: Iterable[str]) -> list[str]:
    """Registered names of contextual binary policies (case-insensitive); ``"paper"`` expands to
    :data:`PAPER_RULES`. Duplicates are dropped, order kept."""
    out: list[str] = []
    for name in names:
        expanded = PAPER_RULES if isinstance(name, str) and name.strip().lower() == "paper" else (name,)
        for n in expanded:
            try:
                resolved = resolve_policy(n)
            except InvalidInputError as exc:
                raise InvalidInputError(f"policies: {exc}") from None
            if resolved not in out:
                out.append(resolved)
    if not out:
        raise InvalidInputError("policies: expected at least one rule")
    return out


# ======================================================================================
# One run
# ======================================================================================


@dataclass(frozen=True)
class RefractionSpec:
    """One run: ``experiment`` name, ``rule``, ``slope`` (logMAR⁻¹), ``seed`` (repetition),
    ``trials``, ``n_alternatives``."""

    experiment: str
    rule: str
    slope: float
    seed: int
    trials: int
    n_alternatives: int = 26

    @property
    def key(self) -> RunKey:
        return RunKey(self.experiment, SCENARIO, self.rule, slope_label(self.slope), int(self.seed))


@dataclass(frozen=True)
class RefractionResult:
    """A finished run: ``key``; ``slope``; ``va_logmar`` ``(trials,)`` true acuity through the
    estimate after each trial (logMAR); the patient's ``true_rx_d`` and the final ``estimate_d``,
    both ``(sphere, cylinder)`` in diopters at axis 180; ``seconds`` of wall clock in the worker."""

    key: RunKey
    slope: float
    va_logmar: np.ndarray
    true_rx_d: tuple[float, float]
    estimate_d: tuple[float, float]
    seconds: float

    @property
    def sphere_error_d(self) -> float:
        """``|Ŝ - S*|`` (diopters)."""
        return abs(self.estimate_d[0] - self.true_rx_d[0])

    @property
    def cylinder_error_d(self) -> float:
        """``|Ĉ - C*|`` (diopters)."""
        return abs(self.estimate_d[1] - self.true_rx_d[1])

    @property
    def final_va_logmar(self) -> float:
        return float(self.va_logmar[-1])

    @property
    def n_decisions(self) -> int:
        """Policy calls: one per trial."""
        return int(self.va_logmar.size)

    def run_record(self) -> RunRecord:
        """The sweeps' record of this run (scores = per-trial VA, logMAR)."""
        return RunRecord(self.key, self.va_logmar, self.n_decisions, self.seconds)


def run_one(spec: RefractionSpec) -> RefractionResult:
    """Run one simulated session (:func:`~visiontune.reproduction.gp_refraction_run.run_refraction`, Fauvel & Chalk
    (contextual BO), §5.3); a pure function of ``spec`` apart from ``seconds``."""
    start = time.perf_counter()
    run = run_refraction(
        spec.rule, slope=spec.slope, trials=spec.trials, seed=spec.seed, n_alternatives=spec.n_alternatives
    )
    va = np.array([r.va_logmar for r in run.records], dtype=float)
    estimate = (float(run.records[-1].estimate[0]), float(run.records[-1].estimate[1]))
    true_rx = (float(run.true_rx.sphere_d), float(run.true_rx.cylinder_d))
    return RefractionResult(spec.key, float(spec.slope), va, true_rx, estimate, time.perf_counter() - start)


def plan(experiment: RefractionExperiment) -> list[RefractionSpec]:
    """Every run of ``experiment`` once: seed-major, then slope, then rule, so that a sweep stopped
    part-way holds whole repetitions (every rule and slope for the first seeds)."""
    return [
        RefractionSpec(experiment.name, rule, float(a), seed, experiment.trials, experiment.n_alternatives)
        for seed in experiment.seeds
        for a in experiment.slopes
        for rule in experiment.rules
    ]


# ======================================================================================
# Store
# ======================================================================================

_EXTRA_SCHEMA = """
CREATE TABLE IF NOT EXISTS refraction_runs (
    experiment  TEXT    NOT NULL,
    scenario    TEXT    NOT NULL,
    rule        TEXT    NOT NULL,
    function    TEXT    NOT NULL,
    seed        INTEGER NOT NULL,
    slope       REAL    NOT NULL,
    true_sphere_d REAL  NOT NULL,
    true_cylinder_d REAL NOT NULL,
    estimate_sphere_d REAL NOT NULL,
    estimate_cylinder_d REAL NOT NULL,
    UNIQUE (experiment, scenario, rule, function, seed)
);
"""


class RefractionStore(ResultsStore):
    """The sweeps' results store plus the final lenses of each refraction run (module docstring)."""

    def __init__(self, path):
        super().__init__(path)
        try:
            self._db.executescript(_EXTRA_SCHEMA)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the results store ({exc})") from None

    def add_result(self, result: RefractionResult) -> bool:
        """Commit both rows of one run in one transaction; False if the run was already stored."""
        if not isinstance(result, RefractionResult):
            raise InvalidInputError(f"result: expected a RefractionResult, got {type(result).__name__}")
        va = finite_array("result.va_logmar", result.va_logmar).reshape(-1)
        k = result.key
        key = (k.experiment, k.scenario, k.rule, k.function, int(k.seed))
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(
                    "INSERT OR IGNORE INTO runs"
                    " (experiment, scenario, rule, function, seed, scores, n_decisions, seconds)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, json.dumps([float(v) for v in va]), int(va.size), float(result.seconds)),
                )
                self._db.execute(
                    "INSERT OR IGNORE INTO refraction_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, float(result.slope), *map(float, result.true_rx_d), *map(float, result.estimate_d)),
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot store run {k} ({exc})") from None
        return cur.rowcount == 1

    def finished_keys(self, experiment: str | None = None) -> set[RunKey]:
        """Keys of the runs stored with their final lenses (of one ``experiment`` if given)."""
        sql = (
            "SELECT r.experiment, r.scenario, r.rule, r.function, r.seed FROM runs r JOIN refraction_runs f "
            "USING (experiment, scenario, rule, function, seed)"
        )
        rows = self._db.execute(
            sql + (" WHERE r.experiment = ?" if experiment else ""), (experiment,) if experiment else ()
        )
        return {RunKey(*row) for row in rows}

    def results(self, experiment: str) -> list[RefractionResult]:
        """The stored runs of ``experiment``, ordered by key."""
        sql = (
            "SELECT r.experiment, r.scenario, r.rule, r.function, r.seed, r.scores, r.seconds, f.slope, "
            "f.true_sphere_d, f.true_cylinder_d, f.estimate_sphere_d, f.estimate_cylinder_d "
            "FROM runs r JOIN refraction_runs f USING (experiment, scenario, rule, function, seed) "
            "WHERE r.experiment = ? ORDER BY r.rule, f.slope, r.seed"
        )
        out = []
        for row in self._db.execute(sql, (experiment,)):
            try:
                va = np.array(json.loads(row[5]), dtype=float)
            except (TypeError, ValueError) as exc:
                raise StoreError(f"{self.path}: damaged scores for run {row[:5]} ({exc})") from None
            out.append(
                RefractionResult(
                    RunKey(*row[:5]),
                    float(row[7]),
                    va,
                    (float(row[8]), float(row[9])),
                    (float(row[10]), float(row[11])),
                    float(row[6]),
                )
            )
        return out


# ======================================================================================
# Running
# ======================================================================================


def run_experiment(
    experiment: RefractionExperiment,
    store: RefractionStore,
    *,
    jobs: int = 2,
    scheduler: str | None = None,
    progress: bool = True,
    stream=None,
    connect_timeout: float = 30.0,
):
    """Run the runs of ``experiment`` missing from ``store``, committing each as it finishes.

    Locally with joblib (``jobs`` worker processes; 1 = in this process; -1 = every core) or on
    the dask.distributed scheduler at ``scheduler``. Returns a
    :class:`~visiontune.validation.parallel_runs.SweepSummary`. Restarted after a kill, it runs only what is missing.
    """
    check_jobs(jobs)
    if not isinstance(store, RefractionStore):
        raise InvalidInputError(f"store: expected a RefractionStore, got {type(store).__name__}")
    if tuple(resolve_rules(experiment.rules)) != tuple(experiment.rules):
        raise InvalidInputError(f"policies: expected registered names, got {list(experiment.rules)}")
    return execute_runs(
        plan(experiment),
        store.finished_keys(experiment.name),
        run_one,
        store.add_result,
        jobs=jobs,
        scheduler=scheduler,
        progress=progress,
        stream=stream,
        connect_timeout=connect_timeout,
    )


# ======================================================================================
# Analysis
# ======================================================================================


def planned_results(store: RefractionStore, experiment: RefractionExperiment) -> list[RefractionResult]:
    """The stored runs that ``experiment`` plans (a store may hold more)."""
    planned = {s.key for s in plan(experiment)}
    return [r for r in store.results(experiment.name) if r.key in planned]


def curves(results: Sequence[RefractionResult]) -> dict[str, dict[str, np.ndarray]]:
    """slope label -> rule -> ``(n_seeds, trials)`` VA (logMAR), rows by seed."""
    grouped: dict[str, dict[str, list[tuple[int, np.ndarray]]]] = {}
    for r in results:
        grouped.setdefault(r.key.function, {}).setdefault(r.key.rule, []).append((r.key.seed, r.va_logmar))
    out: dict[str, dict[str, np.ndarray]] = {}
    for label, by_rule in grouped.items():
        out[label] = {}
        for rule, rows in by_rule.items():
            rows.sort(key=lambda t: t[0])
            if len({v.size for _, v in rows}) != 1:
                raise StoreError(f"runs of {rule} at {label} have different lengths")
            out[label][rule] = np.vstack([v for _, v in rows])
    return out


def analyse(va_curves: Mapping[str, Mapping[str, object]], alpha: float | None = None):
    """Stratified analysis over slopes (module docstring) of VA curves (lower is better).

    ``va_curves``: stratum -> rule -> ``(n_runs, trials)`` VA (logMAR). The tests see ``-VA``, so
    ``i`` beats ``j`` when the final VA of ``i`` is stochastically *smaller* (one-sided
    Mann-Whitney U, ``p < alpha``, default 5e-4); ties by the same test on the mean VA over
    trials. Returns a :class:`~visiontune.reproduction.analysis.StratifiedResult`.
    """
    if not isinstance(va_curves, Mapping) or not va_curves:
        raise InvalidInputError("va_curves: expected a non-empty mapping slope -> rule -> (runs, trials) VA")
    negated = {}
    for label, by_rule in va_curves.items():
        if not isinstance(by_rule, Mapping) or not by_rule:
            raise InvalidInputError(f"va_curves[{label!r}]: expected a non-empty mapping rule -> VA curves")
        negated[label] = {
            rule: -finite_array(f"va_curves[{label!r}][{rule!r}]", c, ndim=2) for rule, c in by_rule.items()
        }
    return stratified_analysis(negated, ALPHA if alpha is None else alpha)


@dataclass(frozen=True)
class FinalSummary:
    """Mean and s.e.m. (``ddof = 1``; nan for one run) over ``n`` runs of one rule: final VA
    (logMAR), sphere and cylinder errors (diopters); ``on_edge``: runs whose final estimate lies on
    the edge of the search box ``[-4, 4]²`` D (within 1e-6 D), the signature of a stalled run."""

    rule: str
    n: int
    va_mean: float
    va_sem: float
    sphere_mean: float
    sphere_sem: float
    cylinder_mean: float
    cylinder_sem: float
    on_edge: int = 0


#: Half-width of the search box (diopters), Fauvel & Chalk (contextual BO), §5.3.
_BOX_EDGE_D = 4.0


def on_box_edge(estimate_d) -> bool:
    """True if the lens ``(S, C)`` (diopters) lies on the edge of ``[-4, 4]²`` (within 1e-6 D)."""
    return bool(np.max(np.abs(np.asarray(estimate_d, dtype=float))) >= _BOX_EDGE_D - 1e-6)


def _mean_sem(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def final_summaries(results: Sequence[RefractionResult], slope: float | None = None) -> list[FinalSummary]:
    """Per rule (in first-seen order): mean ± s.e.m. of the final VA, sphere and cylinder errors,
    over the runs at ``slope`` (logMAR⁻¹), or over every run when ``slope`` is None."""
    by_rule: dict[str, list[RefractionResult]] = {}
    for r in results:
        if slope is None or slope_label(r.slope) == slope_label(slope):
            by_rule.setdefault(r.key.rule, []).append(r)
    out = []
    for rule, rs in by_rule.items():
        va = _mean_sem([r.final_va_logmar for r in rs])
        sph = _mean_sem([r.sphere_error_d for r in rs])
        cyl = _mean_sem([r.cylinder_error_d for r in rs])
        out.append(FinalSummary(rule, len(rs), *va, *sph, *cyl, sum(on_box_edge(r.estimate_d) for r in rs)))
    return out


def plot_va_curves(
    va_curves: Mapping[str, Mapping[str, object]], out_dir, *, labels: Sequence[str] | None = None
) -> list[Path] | None:
    """One PNG per stratum, ``va_<label>.png``: mean ± s.e.m. over runs of the VA through the
    estimate (logMAR) against the trial, per rule (Fauvel & Chalk (contextual BO), figure 3B). ``None`` without
    matplotlib."""

    def title(label, rule_curves):
        n_runs = {np.asarray(c).shape[0] for c in rule_curves.values()}
        return f"SIMULATED patients, {label}: mean ± s.e.m. over {'/'.join(map(str, sorted(n_runs)))} runs"

    return save_mean_sem_figures(
        va_curves,
        out_dir,
        labels or list(va_curves),
        filename="va_{}.png",
        title=title,
        xlabel="trial",
        ylabel="VA through the estimate (logMAR)",
        where="va_curves",
        figsize=(5.5, 3.8),
        title_size=9,
        zero_line=True,
    )


# ======================================================================================
# Page
# ======================================================================================


def _fmt(mean: float, sem: float) -> str:
    return f"{mean:.3g} ± {sem:.2g}" if np.isfinite(sem) else f"{mean:.3g}"


def final_table(results: Sequence[RefractionResult], slope: float | None) -> str:
    """Markdown: final VA, sphere and cylinder errors per rule, with the paper's UCB-ALD figures
    (Fauvel & Chalk (contextual BO), §5.3, slope 5) as the last row."""
    lines = [
        "| Rule | Runs | Final VA (logMAR) | Sphere error (D) | Cylinder error (D) | Estimate on the box edge |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows = sorted(final_summaries(results, slope), key=lambda s: s.va_mean)
    for s in rows:
        lines.append(
            f"| {s.rule} | {s.n} | {_fmt(s.va_mean, s.va_sem)} | {_fmt(s.sphere_mean, s.sphere_sem)} | "
            f"{_fmt(s.cylinder_mean, s.cylinder_sem)} | {s.on_edge} |"
        )
    P = REFRACTION_UCB_ALD
    lines.append(
        f"| *paper, {P.rule}, slope {P.slope:g}* | {P.n_runs} | {P.va_logmar:.3g} | "
        f"{_fmt(P.sphere_error_d, P.sphere_error_sem_d)} | {_fmt(P.cylinder_error_d, P.cylinder_error_sem_d)} | - |"
    )
    return "\n".join(lines) + "\n"


#: A looser level reported beside the paper's 5e-4, to show the direction of small samples.
SENSITIVITY_ALPHA = 0.05


def results_page(
    experiment: RefractionExperiment,
    result,
    results: Sequence[RefractionResult],
    command: str,
    wall: list[dict] | None = None,
    pngs: Sequence[Path] | None = None,
    out: Path | None = None,
) -> str:
    """Markdown page: protocol, command, machine, times, our Borda table beside Fauvel & Chalk (contextual BO), Table 3,
    the final VA / sphere / cylinder table at slope 5 and over all slopes, the curves, the analysis."""

    run_seconds = sum(r.seconds for r in results)
    decisions = sum(r.n_decisions for r in results)
    wall_seconds = sum(e["seconds"] for e in wall or [])
    wall_runs = sum(e["runs"] for e in wall or [])
    wall_decisions = sum(e.get("decisions", 0) for e in wall or [])
    n_planned = len(experiment.rules) * len(experiment.slopes) * experiment.n_seeds
    patients = {r.key.seed: r.true_rx_d for r in results}
    near_edge = sum(np.max(np.abs(rx)) >= _BOX_EDGE_D - 0.5 for rx in patients.values())
    lines = [
        f"# {experiment.name}: the refraction experiment (Fauvel & Chalk (contextual BO), Table 3, figure 3B)",
        "",
        f"Source: {experiment.source}. Simulated patients only.",
        "",
        f"- Rules: {', '.join(experiment.rules)}.",
        f"- Slopes (logMAR⁻¹): {', '.join(f'{a:g}' for a in experiment.slopes)}; {experiment.n_seeds} repetitions "
        f"(seeds 0-{experiment.n_seeds - 1}, the same patients for every rule and slope); {experiment.trials} trials; "
        f"{experiment.n_alternatives} letters; {n_planned} runs. Paper: 6 rules, 8 slopes, 20 repetitions, 260 trials "
        f"(960 runs).",
        "- Score per trial: the true VA through the current estimate (logMAR, lower is better); "
        "the rank tests see -VA.",
        f"- Command: `{command}`",
        f"- Machine: {machine_description()}.",
        f"- Code: {code_version()}.",
        software_line(wall),
    ]
    if wall_seconds:
        lines.append(
            f"- Wall time: {wall_seconds:.0f} s ({wall_seconds / 3600:.2f} h) for {wall_runs} runs in "
            f"{len(wall)} invocation(s) (jobs: {', '.join(str(e['jobs']) for e in wall)}): "
            f"{wall_seconds / wall_runs:.1f} s per run, {wall_decisions / wall_seconds:.2f} decisions/s."
        )
        if experiment.trials == DEFAULT_EXPERIMENT.trials:
            full = len(plan(DEFAULT_EXPERIMENT)) * wall_seconds / wall_runs
            lines.append(
                f"- Extrapolation to the paper's {len(plan(DEFAULT_EXPERIMENT))} runs at this rate: "
                f"{full / 3600:.1f} h of wall time (same machine and jobs)."
            )
    if run_seconds:
        by_rule: dict[str, list[float]] = {}
        for r in results:
            by_rule.setdefault(r.key.rule, []).append(r.seconds)
        lines.append(
            f"- Worker time of the {len(results)} runs: {run_seconds:.0f} s, {decisions / run_seconds:.2f} "
            f"decisions/s per worker ({decisions} decisions); mean s per run: "
            + ", ".join(f"{rule} {np.mean(v):.1f}" for rule, v in by_rule.items())
            + "."
        )
    lines += [
        "",
        "## Our ranking beside the paper's (Fauvel & Chalk (contextual BO), Table 3)",
        "",
        f"Borda scores summed over {len(result.per_function)} slope(s); the paper sums 8.",
        "",
        side_by_side("002-refraction", result),
    ]
    if results:
        loose = analyse(curves(results), SENSITIVITY_ALPHA)
        lines += [
            f"Sensitivity (not the paper's level): the same analysis at α = {SENSITIVITY_ALPHA:g} gives Borda "
            + ", ".join(f"{loose.rules[i]} {int(loose.borda[i])}" for i in loose.order())
            + ".",
            "",
        ]
    pairs = disagreements("002-refraction", result)
    lines.append(
        "Pairs ranked in the opposite order from the paper (paper's better rule first): "
        + ", ".join(f"{a} / {b}" for a, b in pairs)
        + "."
        if pairs
        else "No pair of rules is ranked in the opposite order from the paper (ties aside)."
    )
    slopes = {slope_label(a) for a in experiment.slopes}
    if slope_label(FIGURE_SLOPE) in slopes:
        lines += [
            "",
            f"## Final values at slope {FIGURE_SLOPE:g} (mean ± s.e.m. over repetitions)",
            "",
            final_table(results, FIGURE_SLOPE),
        ]
    lines += [
        "",
        "## Final values over all slopes (mean ± s.e.m. over runs)",
        "",
        final_table(results, None),
        "The paper's s.e.m. of the VA is printed as 8.22 (a typo, the same digits as the cylinder's), "
        "so it is left out.",
        "",
        f"*Estimate on the box edge*: runs whose final lens has |S| or |C| = 4 D. The patients are uniform in "
        f"the box, so some true corrections lie near an edge ({near_edge} of the {len(patients)} patients within "
        f"0.5 D of it); many edge estimates with a poor VA mark runs stalled on the boundary.",
        "",
    ]
    if pngs:
        lines += ["## VA through the estimate against the trial (mean ± s.e.m.)", ""]
        shown = sorted(pngs, key=lambda p: (p.stem != f"va_{slope_label(FIGURE_SLOPE)}", p.stem))
        for p in shown:
            rel = p.relative_to(out) if out is not None and p.is_relative_to(out) else p
            lines.append(f"![{p.stem}]({rel.as_posix()})")
        lines.append("")
    lines += [
        "## Decisions",
        "",
        "- Seeds are repetitions: seed k gives the same patient (true correction uniform in [-4, 4]² D, "
        "axis 180) to every rule and slope, and its own answer, policy and estimate streams "
        "(`run_refraction`, `SeedSequence(seed)`).",
        "- Reference letter size s0 = 0 logMAR for the x-rule and the estimate (the `run_refraction` default; "
        "the contextual BO paper does not state it for this task); hyperparameters fit once per slope on 1000 "
        "simulated answers and held fixed (Fauvel & Chalk (contextual BO), §5.2, shipped fits).",
        "- Fauvel & Chalk (contextual BO), §5.3 says 20 repetitions; the caption of its figure 3 says 60. "
        "We follow the text.",
        "",
        analysis.to_markdown(result, title="Stratified analysis (strata = slopes; scores = -VA)"),
    ]
    return "\n".join(lines)


# ======================================================================================
# Command line (called from visiontune.reproduction.bench_cli)
# ======================================================================================


def experiment_from_args(args: argparse.Namespace) -> RefractionExperiment:
    """The experiment named by ``visiontune bench refraction`` options (bad values -> InvalidInputError)."""
    experiment = QUICK_EXPERIMENT if args.quick else DEFAULT_EXPERIMENT
    if args.seeds is not None and (isinstance(args.seeds, bool) or args.seeds < 1):
        raise InvalidInputError(f"--seeds: expected an integer >= 1, got {args.seeds}")
    if args.trials is not None and args.trials < 1:
        raise InvalidInputError(f"--trials: expected an integer >= 1, got {args.trials}")
    if args.slopes is not None:
        bad = [a for a in args.slopes if not np.isfinite(a) or a <= 0]
        if bad or len({slope_label(a) for a in args.slopes}) != len(args.slopes):
            raise InvalidInputError(f"--slopes: expected distinct positive slopes (logMAR^-1), got {args.slopes}")
    if args.jobs < 1 and args.jobs != -1:
        raise InvalidInputError(f"--jobs: expected an integer >= 1 or -1, got {args.jobs}")
    try:
        rules = resolve_rules(args.policies) if args.policies else None
    except InvalidInputError as exc:
        raise InvalidInputError(f"--{exc}") from None
    return experiment.subset(rules=rules, slopes=args.slopes, n_seeds=args.seeds, trials=args.trials)


def command_line(args: argparse.Namespace) -> str:
    """The ``visiontune bench refraction`` command that reproduces this run."""
    parts = ["visiontune", "bench", "refraction"]
    if args.quick:
        parts.append("--quick")
    if args.slopes is not None:
        parts += ["--slopes", *(f"{a:g}" for a in args.slopes)]
    if args.seeds is not None:
        parts += ["--seeds", str(args.seeds)]
    if args.policies:
        parts += ["--policies", *args.policies]
    if args.trials is not None:
        parts += ["--trials", str(args.trials)]
    parts += ["--jobs", str(args.jobs), "--out", str(args.out)]
    if args.store is not None:
        parts += ["--store", str(args.store)]
    return " ".join(parts)


def run_cli(args: argparse.Namespace) -> int:
    """``visiontune bench refraction``: run (resumably), analyse, write the page, CSV and PNGs."""

    experiment = experiment_from_args(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store_path = args.store or out / f"{experiment.name}.sqlite"
    with RefractionStore(store_path) as store:
        with wall_time_kept_when_stopped(out / f"{experiment.name}.wall.json", args.jobs):
            summary = run_experiment(
                experiment, store, jobs=args.jobs, scheduler=args.scheduler, progress=not args.no_progress
            )
        results = planned_results(store, experiment)
    found = curves(results)
    order = sorted(found, key=lambda label: float(label.removeprefix("slope-")))
    va = {label: {rule: found[label][rule] for rule in experiment.rules if rule in found[label]} for label in order}
    result = analyse(va)
    wall = record_wall_time(out / f"{experiment.name}.wall.json", summary, args.jobs)
    pngs = plot_va_curves(va, out / experiment.name)
    page = results_page(experiment, result, results, command_line(args), wall, pngs, out)
    write_results_file(out / f"{experiment.name}.md", page, output_guard.MARKDOWN)
    write_results_file(out / f"{experiment.name}.csv", analysis.to_csv(result), output_guard.CSV)
    rate = summary.decisions / summary.seconds if summary.seconds and summary.ran else float("nan")
    print_outcome(experiment.name, summary, f"{rate:.2f} decisions/s", result, out, pngs)
    return 0
