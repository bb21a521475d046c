"""``visiontune bench <experiment> [--quick] [--seeds N] [--functions NAME ...] [--jobs N] [--store PATH]
[--out DIR] [--scheduler ADDRESS]``.

Runs a paper experiment (:mod:`visiontune.reproduction.benchmark_experiments`) resumably into a results store
(:mod:`visiontune.validation.results_store`; default ``<out>/<experiment>.sqlite``), then writes the
stratified analysis (:mod:`visiontune.reproduction.analysis`) of the planned runs:
``<out>/<experiment>.md`` (ranking table + win-fraction matrix), ``<out>/<experiment>.csv``
(``rule,rank,borda``) and, when matplotlib is installed, ``<out>/<experiment>/regret_<function>.png``.
Re-running the same command after a kill resumes the sweep. ``--functions`` restricts the
experiment to a subset of its functions (same run keys, so subsets share one store).
``--stored-only`` runs nothing and writes the analysis of the functions whose runs are all stored
(a sweep in progress or stopped early), naming the functions it leaves out.

``visiontune bench refraction [--quick] [--slopes A ...] [--seeds N] [--policies NAME ...] [--trials N]
[--jobs N] [--store PATH] [--out DIR] [--scheduler ADDRESS]`` runs the refraction experiment of seed
Fauvel & Chalk (contextual BO), §5.3 instead (:mod:`visiontune.reproduction.gp_refraction_bench`); ``--slopes``,
``--policies`` and ``--trials`` belong to it only, ``--functions`` to the benchmark experiments only.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

import numpy as np

from visiontune import output_guard
from visiontune._argparse import worker_count
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction import analysis, sweep
from visiontune.reproduction.benchmark_experiments import EXPERIMENTS, get_experiment
from visiontune.reproduction.gp_refraction_bench import run_cli
from visiontune.reproduction.invocation import (
    busy_fraction,
    disagreements,
    print_outcome,
    record_wall_time,
    wall_time_kept_when_stopped,
)
from visiontune.reproduction.paper_tables import paper_rows, side_by_side
from visiontune.reproduction.projective_benchmark import run_cli as run_projective_cli
from visiontune.reproduction.sweep import plan
from visiontune.validation.parallel_runs import SweepStopped, SweepSummary
from visiontune.validation.provenance import machine_description, software_line
from visiontune.validation.results_store import ResultsStore, write_results_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "experiment",
        choices=[*sorted(EXPERIMENTS), REFRACTION, PROJECTIVE],
        help="the paper experiment to run (refraction: Fauvel & Chalk (contextual BO) §5.3, table 3; "
        "projective: Mikkola et al. 2020)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small subset (3 rules, 2 functions, 10 seeds, 15 iterations; "
        "refraction: 6 rules, slopes 2 and 5, 8 seeds, 30 trials)",
    )
    parser.add_argument("--seeds", type=int, default=None, metavar="N", help="number of seeds (repetitions)")
    parser.add_argument("--functions", nargs="+", default=None, metavar="NAME", help="run only these test functions")
    parser.add_argument(
        "--slopes",
        nargs="+",
        type=float,
        default=None,
        metavar="A",
        help="refraction only: psychometric slopes in logMAR^-1 (default 1 2 ... 8)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        default=None,
        metavar="NAME",
        help="refraction only: rules to run ('paper' = the six of table 3, the default)",
    )
    parser.add_argument(
        "--trials", type=int, default=None, metavar="N", help="refraction only: trials per run (default 260)"
    )
    parser.add_argument(
        "--jobs", type=worker_count, default=2, metavar="N", help="local worker processes (default 2; -1 = all cores)"
    )
    parser.add_argument(
        "--store", type=Path, default=None, metavar="PATH", help="results store (default <out>/<experiment>.sqlite)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("docs/results"), metavar="DIR", help="output directory (default docs/results)"
    )
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run on this dask.distributed scheduler")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--stored-only",
        action="store_true",
        help="run nothing: write the analysis of the functions whose runs are all in the store "
        "(a sweep in progress or stopped early); benchmark experiments only",
    )
    parser.add_argument(
        "--rerun",
        nargs="+",
        default=None,
        metavar="RULE",
        help="discard the stored runs of these rules first, so the sweep runs them again "
        "(after a fix to a rule; resume a stopped rerun without --rerun); benchmark experiments only",
    )


#: Name of the refraction experiment on the command line.
REFRACTION = "refraction"
#: Projective vs pairwise queries (Mikkola et al. 2020, :mod:`visiontune.reproduction.projective_benchmark`).
PROJECTIVE = "projective"


def command_line(args: argparse.Namespace) -> str:
    """The ``visiontune bench`` command that reproduces this run (store and output paths included)."""
    parts = ["visiontune", "bench", args.experiment]
    if args.quick:
        parts.append("--quick")
    if args.seeds is not None:
        parts += ["--seeds", str(args.seeds)]
    if args.functions:
        parts += ["--functions", *args.functions]
    parts += ["--jobs", str(args.jobs), "--out", str(args.out)]
    if args.store is not None:
        parts += ["--store", str(args.store)]
    if getattr(args, "stored_only", False):
        parts.append("--stored-only")
    return " ".join(parts)


def final_score_table(records) -> str:
    """Markdown: mean ± s.e.m. of the final score (true scaled value at the last reported solution)
    per function (rows) and rule (columns), the raw numbers behind the rank tests; the best mean
    of each row in bold."""
    by: dict[str, dict[str, list[float]]] = {}
    for r in records:
        by.setdefault(r.key.function, {}).setdefault(r.key.rule, []).append(float(r.scores[-1]))
    rules = sorted({r.key.rule for r in records})
    lines = [
        "Final score, mean ± s.e.m. over seeds (larger is better; best mean in bold):",
        "",
        "| Function | " + " | ".join(rules) + " |",
        "| --- |" + " ---: |" * len(rules),
    ]
    for function in sorted(by):
        values = [np.array(by[function].get(rule, [])) for rule in rules]
        best = max((v.mean() for v in values if v.size), default=None)
        cells = []
        for v in values:
            sem = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
            cell = f"{v.mean():.3f} ± {sem:.3f}" if v.size else "-"
            cells.append(f"**{cell}**" if v.size and v.mean() == best else cell)
        lines.append(f"| {function} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def stored_part(experiment, store):
    """``(experiment on the functions whose runs are all in store, the other functions)``;
    :class:`ConfigurationError` if no function is complete."""

    done = store.finished_keys(experiment.name)
    complete = [f for f in experiment.functions if all(s.key in done for s in plan(experiment.with_functions([f])))]
    if not complete:
        raise ConfigurationError(
            f"--stored-only: no function of {experiment.name} has all its "
            f"{len(experiment.rules) * experiment.n_seeds} runs in {store.path}"
        )
    return experiment.with_functions(complete), [f for f in experiment.functions if f not in complete]


def _invocation_runs(entry: dict) -> str:
    """``"2260"``, or ``"2260 (100 of them Dueling-UCB's runs rerun)"`` after ``--rerun``."""
    discarded = entry.get("discarded") or {}
    return str(entry["runs"]) + "".join(f" ({n} of them {rule}'s runs rerun)" for rule, n in discarded.items())


def results_page(
    experiment,
    result,
    summary,
    records,
    command: str,
    wall: list[dict] | None = None,
    ranks=None,
    left_out: list[str] | None = None,
    paper_only=None,
) -> str:
    """Markdown page of one experiment: protocol, command, machine, times, our table beside the
    paper's, the pairs ranked in the opposite order, the average ranks (``ranks``,
    :func:`visiontune.reproduction.analysis.average_ranks`) and the stratified analysis. ``left_out``:
    functions of the paper's experiment not (yet) complete in the store, named on the page.
    ``paper_only``: ``(result, ranks)`` of the paper's rules alone (:func:`paper_rules_only`) when
    the experiment runs rules the paper's table lacks; the opposite-order pairs then come from it."""

    run_seconds = sum(r.seconds for r in records)
    decisions = sum(r.n_decisions for r in records)
    lines = [
        f"# {experiment.name}",
        "",
        f"Source: {experiment.source}.",
        "",
        f"- Scenario `{experiment.scenario}`; {len(experiment.functions)} functions; {experiment.n_seeds} seeds; "
        f"{experiment.iterations} iterations ({experiment.n_initial} initial random).",
        f"- Functions: {', '.join(experiment.functions)}.",
        *(
            [
                f"- **Not complete in the store, left out of this analysis ({len(left_out)}):** {', '.join(left_out)}; "
                "the same command without `--stored-only` runs them."
            ]
            if left_out
            else []
        ),
        f"- Command: `{command}`",
        f"- Machine: {machine_description()}.",
        software_line(wall),
        f"- Wall time: {sum(e['seconds'] for e in wall or []):.1f} s over {len(wall or [])} invocation(s) "
        f"(runs per invocation: {', '.join(_invocation_runs(e) for e in wall or []) or 'none'}); run time of all "
        f"{len(records)} runs: {run_seconds:.1f} s ({decisions / run_seconds:.1f} decisions/s per core, "
        f"{decisions} decisions)"
        + (f"; workers busy {100 * busy:.0f}% of the wall time." if (busy := busy_fraction(wall)) else ".")
        if run_seconds
        else "- No run.",
        "",
        "## Our ranking beside the paper's",
        "",
        side_by_side(experiment.name, result),
    ]
    if paper_only is not None:
        extra = [r for r in result.rules if r not in paper_only[0].rules]
        lines += [
            "",
            "## The paper's rules only",
            "",
            f"The same runs without {', '.join(extra)}, which the paper's table does not have: a rule scores "
            "by beating the others, so every total depends on which rules take part. This is the comparison "
            "with the paper's table.",
            "",
            side_by_side(experiment.name, paper_only[0]),
            analysis.average_ranks_markdown(paper_only[1]),
        ]
    pairs = disagreements(experiment.name, result if paper_only is None else paper_only[0])
    if pairs:
        lines.append(
            "Pairs ranked in the opposite order from the paper (paper's better rule first): "
            + ", ".join(f"{a} / {b}" for a, b in pairs)
            + ". See README.md for the likely reasons."
        )
    else:
        lines.append("No pair of rules is ranked in the opposite order from the paper (ties aside).")
    if ranks is not None:
        lines += [
            "",
            "## Average ranks (Demšar 2006)",
            "",
            "Each function ranks the rules by their mean final score (1 = best); the ranks are averaged "
            "over functions. Less conservative than the Borda count at α = 5e-4, which needs well "
            "separated runs on each function.",
            "",
            analysis.average_ranks_markdown(ranks),
        ]
    lines += [
        "",
        final_score_table(records),
        "",
        analysis.to_markdown(result, title="Stratified analysis (this run)"),
        "",
        f"![win fractions]({experiment.name}/win_fraction.png)",
    ]
    return "\n".join(lines)


def _check_options(args: argparse.Namespace) -> None:
    """Options of one experiment kind given to the other are errors, not silently ignored."""
    if args.experiment == REFRACTION:
        if getattr(args, "functions", None):
            raise InvalidInputError("--functions: only for the benchmark experiments, not refraction (use --slopes)")
        for option in ("stored_only", "rerun"):
            if getattr(args, option, None):
                raise InvalidInputError(
                    f"--{option.replace('_', '-')}: only for the benchmark experiments, not refraction"
                )
        return
    if getattr(args, "rerun", None) and getattr(args, "stored_only", False):
        raise InvalidInputError("--rerun with --stored-only: --stored-only runs nothing, so nothing would be run again")
    for option in ("slopes", "policies", "trials"):
        if getattr(args, option, None) is not None:
            raise InvalidInputError(f"--{option}: only for `visiontune bench refraction`, not {args.experiment}")


def run(args: argparse.Namespace) -> int:
    """The command; a sweep stopped by Ctrl-C, SIGTERM or SIGHUP says how to resume and exits with
    ``128 + signal`` (its finished runs are in the store)."""
    import signal

    try:
        return _run(args)
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, SweepStopped) else signal.SIGINT
        again = "the same command without --rerun" if getattr(args, "rerun", None) else "the same command"
        print(
            f"\nvisiontune bench: stopped by {signal.Signals(signum).name}; the finished runs are stored, "
            f"{again} resumes the sweep",
            file=sys.stderr,
        )
        return 128 + int(signum)


def check_out_dir(path: Path) -> Path:
    """``--out`` as a folder that exists or can be created: an existing file or device
    (``/dev/full``), or a path through one, is an InvalidInputError naming it, not a
    traceback after the sweep."""
    out = Path(path).expanduser().absolute()
    probe = out
    while True:
        try:
            st = os.stat(probe)
        except FileNotFoundError:
            probe = probe.parent
            continue
        except OSError as exc:
            raise InvalidInputError(
                f"--out: {out}: cannot be used as the output folder ({exc.strerror or exc})"
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            where = "it is" if probe == out else f"{probe}, in its path, is"
            raise InvalidInputError(f"--out: {out}: expected a folder for the results, but {where} not a folder")
        return out


def _run(args: argparse.Namespace) -> int:
    _check_options(args)
    check_out_dir(args.out)
    if args.experiment == REFRACTION:
        return run_cli(args)
    if args.experiment == PROJECTIVE:
        return run_projective_cli(args)
    experiment = get_experiment(args.experiment)
    if args.quick:
        experiment = experiment.quick()
    if args.seeds is not None:
        if args.seeds < 1:
            raise InvalidInputError(f"--seeds: expected an integer >= 1, got {args.seeds}")
        experiment = experiment.with_seeds(args.seeds)
    if args.functions:
        experiment = experiment.with_functions(args.functions)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store_path = args.store or out / f"{experiment.name}.sqlite"
    left_out: list[str] = []
    with ResultsStore(store_path) as store:
        discarded = discard_reruns(experiment, store, getattr(args, "rerun", None) or ())
        if getattr(args, "stored_only", False):
            experiment, left_out = stored_part(experiment, store)
            n = len(plan(experiment))
            summary = SweepSummary(n, n, 0, 0.0, 0, 0.0)
        else:
            with wall_time_kept_when_stopped(out / f"{experiment.name}.wall.json", args.jobs, discarded):
                summary = sweep.run_sweep(
                    experiment, store, jobs=args.jobs, scheduler=args.scheduler, progress=not args.no_progress
                )
        planned = {spec.key for spec in plan(experiment)}
        records = [r for r in store.records(experiment.name) if r.key in planned]
    curves: dict[str, dict[str, list]] = {}
    for rec in records:
        curves.setdefault(rec.key.function, {}).setdefault(rec.key.rule, []).append(rec.scores)
    curves = {f: {r: np.vstack(rows) for r, rows in by_rule.items()} for f, by_rule in curves.items()}
    result = analysis.stratified_analysis(curves)
    ranks = analysis.average_ranks(curves)
    wall = record_wall_time(out / f"{experiment.name}.wall.json", summary, args.jobs, discarded)
    page = results_page(
        experiment,
        result,
        summary,
        records,
        command_line(args),
        wall,
        ranks,
        left_out,
        paper_rules_only(experiment.name, curves),
    )
    write_results_file(out / f"{experiment.name}.md", page, output_guard.MARKDOWN)
    write_results_file(out / f"{experiment.name}.csv", analysis.to_csv(result), output_guard.CSV)
    pngs = analysis.plot_regret_curves(curves, out / experiment.name)
    analysis.plot_win_fraction(result, out / experiment.name / "win_fraction.png")
    rate = summary.decisions / summary.cpu_seconds if summary.cpu_seconds else float("nan")
    print_outcome(experiment.name, summary, f"{rate:.1f} decisions/s per core", result, out, pngs)
    return 0


def paper_rules_only(experiment_name: str, curves):
    """``(stratified result, average ranks)`` of the rules in the paper's table of ``experiment_name``
    alone, from ``curves`` (function -> rule -> scores); ``None`` when every rule is in the table
    (or fewer than two are)."""

    table = {r.rule for r in paper_rows(experiment_name)}
    rules = set(next(iter(curves.values()), {}))
    if rules <= table or len(rules & table) < 2:
        return None
    kept = {f: {r: c for r, c in by_rule.items() if r in table} for f, by_rule in curves.items()}
    return analysis.stratified_analysis(kept), analysis.average_ranks(kept)


def discard_reruns(experiment, store, rules) -> dict[str, int]:
    """``--rerun``: delete the stored runs of ``rules`` (names of ``experiment``'s rules) among the
    planned runs (functions and seeds of this command only), say how many and return them, rule -> runs."""
    unknown = [r for r in rules if r not in experiment.rules]
    if unknown:
        raise InvalidInputError(
            f"--rerun: {', '.join(unknown)} not a rule of {experiment.name} (its rules: {', '.join(experiment.rules)})"
        )

    keys = [spec.key for spec in plan(experiment)]
    discarded = {rule: store.discard(k for k in keys if k.rule == rule) for rule in rules}
    for rule, n in discarded.items():
        print(f"{experiment.name}: discarded the {n} stored runs of {rule}; they run again")
    return discarded
