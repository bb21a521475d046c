"""``visiontune bench <experiment> [--quick] [--seeds N] [--jobs N] [--store PATH] [--out DIR] [--scheduler ADDRESS]``.

Runs a paper experiment (:mod:`visiontune.bench.experiments`) resumably into a results store
(:mod:`visiontune.bench.store`; default ``<out>/<experiment>.sqlite``), then writes the
stratified analysis (:mod:`visiontune.bench.analysis`) of the planned runs:
``<out>/<experiment>.md`` (ranking table + win-fraction matrix), ``<out>/<experiment>.csv``
(``rule,rank,borda``) and, when matplotlib is installed, ``<out>/<experiment>/regret_<function>.png``.
Re-running the same command after a kill resumes the sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from visiontune.errors import InvalidInputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from visiontune.bench.experiments import EXPERIMENTS

    parser.add_argument("experiment", choices=sorted(EXPERIMENTS), help="the paper experiment to run")
    parser.add_argument("--quick", action="store_true", help="a small subset (3 rules, 2 functions, 4 seeds, 15 iterations)")
    parser.add_argument("--seeds", type=int, default=None, metavar="N", help="number of seeds (repetitions)")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="local worker processes (default 2; -1 = all cores)")
    parser.add_argument("--store", type=Path, default=None, metavar="PATH", help="results store (default <out>/<experiment>.sqlite)")
    parser.add_argument("--out", type=Path, default=Path("docs/results"), metavar="DIR", help="output directory (default docs/results)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run on this dask.distributed scheduler")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run(args: argparse.Namespace) -> int:
    from visiontune.bench import analysis
    from visiontune.bench.experiments import get_experiment
    from visiontune.bench.store import ResultsStore
    from visiontune.bench.sweep import plan, run_sweep

    experiment = get_experiment(args.experiment)
    if args.quick:
        experiment = experiment.quick()
    if args.seeds is not None:
        if args.seeds < 1:
            raise InvalidInputError(f"--seeds: expected an integer >= 1, got {args.seeds}")
        experiment = experiment.with_seeds(args.seeds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store_path = args.store or out / f"{experiment.name}.sqlite"
    with ResultsStore(store_path) as store:
        summary = run_sweep(experiment, store, jobs=args.jobs, scheduler=args.scheduler, progress=not args.no_progress)
        planned = {spec.key for spec in plan(experiment)}
        records = [r for r in store.records(experiment.name) if r.key in planned]
    curves: dict[str, dict[str, list]] = {}
    for rec in records:
        curves.setdefault(rec.key.function, {}).setdefault(rec.key.rule, []).append(rec.scores)
    curves = {f: {r: np.vstack(rows) for r, rows in by_rule.items()} for f, by_rule in curves.items()}
    result = analysis.stratified_analysis(curves)
    (out / f"{experiment.name}.md").write_text(analysis.to_markdown(result, title=f"{experiment.name}: {experiment.source}"), encoding="utf-8")
    (out / f"{experiment.name}.csv").write_text(analysis.to_csv(result), encoding="utf-8")
    pngs = analysis.plot_regret_curves(curves, out / experiment.name)
    rate = summary.decisions / summary.cpu_seconds if summary.cpu_seconds else float("nan")
    print(f"{experiment.name}: {summary.planned} runs planned, {summary.skipped} already stored, {summary.ran} run now "
          f"in {summary.seconds:.1f} s ({rate:.1f} decisions/s per core)")
    print(analysis.to_csv(result), end="")
    print(f"wrote {out / (experiment.name + '.md')}, {out / (experiment.name + '.csv')}"
          + (f", {len(pngs)} PNG" if pngs else " (no PNG: matplotlib is not installed)"))
    sys.stdout.flush()
    return 0
