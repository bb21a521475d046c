"""Projective vs pairwise preferential queries (Mikkola et al., ICML 2020, numerical experiments).

``visiontune bench projective [--quick] [--seeds N] [--functions NAME ...] [--out DIR]``.

The paper's protocol (its supplementary and public code): test functions Six-hump camel (2-D,
``[-3, 3] x [-2, 2]``), Hartmann (6-D, ``[0, 1]^6``), Levy (10-D, ``[-10, 10]^10``) and Ackley
(20-D, ``[-32.768, 32.768]^20``), minimised; inputs scaled to the unit box; SE kernel with fixed
hyperparameters ``θ`` per function (no refitting during a run; the supplementary names
``θ = (σ, σ_f, l)`` but the authors' code reads the second value as the lengthscale and the third
as ``σ_f``, which we follow: six-hump camel ``l = 0.2``, Hartmann ``l = 0.26``, ``σ_f = 0.1``); ``D`` initial
coordinate lines through random points, then the acquisition rule; 100 queries in all; ``m = 25``
pseudo-observations per answer; 25 seeds; the user answers without noise (the exact minimiser
along the line). Score: ``f(x̂)`` with ``x̂`` the minimiser of the posterior mean (the paper's
``x_opt``), on the function's own scale, after every query. Baselines: pairwise PBO with
Thompson-sampling duels (PBO-DTS, González et al. 2017) and random duels.

Here each projective run uses :mod:`visiontune.reproduction.acquisition.projective_queries` (simulated user:
:func:`~visiontune.reproduction.acquisition.projective_queries.answer_projective`); each duel run is the package's
preferential benchmark run (:func:`visiontune.reproduction.sweep.run_one`, rules ``Duel-TS`` and
``random-duel``, the benchmark kernel of the function, duel answers ``P = Φ(g(x) - g(x'))`` on the
scaled function), whose scores are mapped back to ``f``'s own scale. One query = one answer in
both. Runs are sequential (one core).
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.reproduction import definitions as defs
from visiontune.reproduction.acquisition.projective_queries import (
    ProjectiveGP,
    ProjectiveRule,
    answer_projective,
    initial_lines,
)
from visiontune.reproduction.benchmark_functions import get_function
from visiontune.reproduction.gp.kernels import SquaredExponential
from visiontune.reproduction.sweep import RunSpec, run_one
from visiontune.validation.provenance import machine_description

__all__ = [
    "EXPERIMENT",
    "PAPER",
    "ProjectiveExperiment",
    "run_cli",
    "run_duel",
    "run_projective",
]


@dataclass(frozen=True)
class PaperFunction:
    """A test function of the paper: callable on (n, D), box, ``θ = (σ, l, σ_f)``, global minimum,
    and the benchmark-registry name of the same function for the duel baseline (or None)."""

    fn: object
    bounds: tuple
    theta: tuple
    minimum: float
    registry_name: str | None


PAPER = {
    "six_hump_camel": PaperFunction(
        defs.six_hump_camel, ((-3.0, 3.0), (-2.0, 2.0)), (0.001, 0.2, 0.1), -1.0316284535, "six_hump_camel"
    ),
    "hartmann6": PaperFunction(defs.hartmann6, ((0.0, 1.0),) * 6, (0.001, 0.26, 0.1), -3.3223680114, "hartmann6"),
    "levy10": PaperFunction(defs.levy, ((-10.0, 10.0),) * 10, (0.001, 0.4, 0.15), 0.0, None),
    "ackley20": PaperFunction(defs.ackley, ((-32.768, 32.768),) * 20, (0.001, 0.45, 0.15), 0.0, None),
}


@dataclass(frozen=True)
class ProjectiveExperiment:
    name: str
    functions: tuple[str, ...]
    n_seeds: int
    iterations: int
    m: int
    projective_rules: tuple[str, ...]
    duel_rules: tuple[str, ...]
    n_initial_duels: int = 5

    def quick(self) -> ProjectiveExperiment:
        return replace(
            self,
            name=f"{self.name}-quick",
            functions=("six_hump_camel",),
            n_seeds=3,
            iterations=12,
            m=6,
            projective_rules=("EI", "PCD", "RAND"),
            duel_rules=("random-duel",),
        )


#: The paper's full protocol (about 25 x 4 x 7 runs of 100 queries with m = 25: days on one core).
PAPER_PROTOCOL = ProjectiveExperiment(
    "projective-paper",
    tuple(PAPER),
    25,
    100,
    25,
    ("EI", "EXR", "EXT", "PCD", "RAND"),
    ("Duel-TS", "random-duel"),
)
#: What ``visiontune bench projective`` runs: the paper's protocol scaled down to fit ~20 min on one
#: core (two functions with a duel baseline, the paper's 25 seeds, 60 queries instead of 100, m = 10
#: instead of 25, no EXR; about 9 minutes).
EXPERIMENT = ProjectiveExperiment(
    "projective",
    ("six_hump_camel", "hartmann6"),
    25,
    60,
    10,
    ("EI", "EXT", "PCD", "RAND"),
    ("Duel-TS", "random-duel"),
)


def _rng(*keys) -> np.random.Generator:
    return np.random.default_rng(
        [int(k) if isinstance(k, (int, np.integer)) else zlib.crc32(str(k).encode()) for k in keys]
    )


def run_projective(fname: str, rule: str, seed: int, iterations: int, m: int, *, noise_sd: float = 0.0) -> np.ndarray:
    """One projective run: ``f(x̂)`` after each query (iterations,). Seeds: the initial design and
    the rule's draws from ``(seed, fname, rule)``; pseudo-observations from ``(seed, fname, "pseudo")``."""
    spec = PAPER[fname]
    b = np.asarray(spec.bounds, float)
    D = b.shape[0]
    lo, width = b[:, 0], b[:, 1] - b[:, 0]

    def raw(U):
        return spec.fn(lo + np.atleast_2d(U) * width)

    def utility(U):  # the user prefers smaller f
        return -raw(U)

    sigma, ell, sf = spec.theta  # the authors' code reads θ as (σ, l, σ_f) (its SE_kernel)
    kernel = SquaredExponential([ell] * D, sf**2)
    rng = _rng(seed, fname, rule)
    user_rng = _rng(seed, fname, "user")
    lines = initial_lines(D, _rng(seed, fname, "initial"))[:iterations]
    answers = [answer_projective(utility, line, user_rng, noise_sd=noise_sd) for line in lines]
    choose = ProjectiveRule(rule)
    unit = np.tile([0.0, 1.0], (D, 1))
    scores = np.empty(iterations)
    model = None
    for t in range(iterations):
        if t >= len(lines):
            lines.append(choose(model, D, t, rng))
            answers.append(answer_projective(utility, lines[-1], user_rng, noise_sd=noise_sd))
        model = ProjectiveGP(
            kernel,
            lines[: t + 1],
            answers[: t + 1],
            sigma=sigma,
            m=m,
            rng=_rng(seed, fname, "pseudo"),
        )
        xhat, _ = model.best(unit, _rng(seed, fname, "best", t))
        scores[t] = float(raw(xhat)[0])
    return scores


def run_duel(fname: str, rule: str, seed: int, iterations: int, n_initial: int) -> np.ndarray:
    """One pairwise run through the package's preferential benchmark (:func:`run_one`): ``f(x̂)`` per answer."""
    name = PAPER[fname].registry_name
    function = get_function(name)
    scaling = function.scaling
    if scaling.log:
        raise InvalidInputError(f"{name}: log-scaled; its scores cannot be mapped back to f")
    record = run_one(RunSpec("projective", "preferential", rule, name, int(seed), iterations, n_initial))
    return scaling.mean - scaling.sd * np.asarray(record.scores, float)  # y = -(f - mean)/sd


def run_experiment(exp: ProjectiveExperiment, progress=None) -> dict:
    """Every run of ``exp``: ``{function: {label: [[scores per iteration] per seed]}}`` and timings."""
    results, seconds = {}, {}
    for fname in exp.functions:
        results[fname] = {}
        jobs = [(f"PPBO-{r}", run_projective, (fname, r)) for r in exp.projective_rules]
        if PAPER[fname].registry_name:
            jobs += [(f"PBO-{r}", run_duel, (fname, r)) for r in exp.duel_rules]
        for label, fn, args in jobs:
            start = time.perf_counter()
            runs = []
            for seed in range(exp.n_seeds):
                extra = (exp.m,) if fn is run_projective else (exp.n_initial_duels,)
                runs.append(fn(*args, seed, exp.iterations, *extra).tolist())
            results[fname][label] = runs
            seconds[f"{fname}/{label}"] = time.perf_counter() - start
            if progress:
                progress(f"{fname} {label}: {seconds[f'{fname}/{label}']:.1f} s")
    return {"experiment": asdict(exp), "results": results, "seconds": seconds}


def checkpoints(iterations: int) -> list[int]:
    """Query counts reported in the table: a quarter, half and all of the budget."""
    return sorted({max(1, iterations // 4), max(1, iterations // 2), iterations})


def summary_table(data: dict) -> str:
    exp = data["experiment"]
    cps = checkpoints(exp["iterations"])
    head = (
        "| function | rule | "
        + " | ".join(f"f(x̂) after {c}" for c in cps)
        + " | median f(x̂) at the end | median regret at the end | runs with regret < 0.05 |"
    )
    rows = [head, "|" + " --- |" * (5 + len(cps))]
    for fname, by_rule in data["results"].items():
        spec = PAPER[fname]
        for label, runs in by_rule.items():
            a = np.asarray(runs)
            cells = [f"{a[:, c - 1].mean():.3f} ± {a[:, c - 1].std(ddof=1) if len(a) > 1 else 0:.3f}" for c in cps]
            med = float(np.median(a[:, -1]))
            rows.append(
                f"| {fname} (min {spec.minimum:.4g}) | {label} | "
                + " | ".join(cells)
                + f" | {med:.3f} | {med - spec.minimum:.3g} | {np.sum(a[:, -1] - spec.minimum < 0.05)}/{len(a)} |"
            )
    return "\n".join(rows)


def run_cli(args: argparse.Namespace) -> int:
    """``visiontune bench projective``: run, print the table, write ``<out>/<name>.json`` and ``.table.md``."""
    for option in ("stored_only", "rerun"):
        if getattr(args, option, None):
            raise InvalidInputError(f"--{option.replace('_', '-')}: not for `visiontune bench projective`")
    exp = EXPERIMENT.quick() if args.quick else EXPERIMENT
    if args.seeds is not None:
        if args.seeds < 2:
            raise InvalidInputError(f"--seeds: expected an integer >= 2, got {args.seeds}")
        exp = replace(exp, n_seeds=int(args.seeds))
    if args.functions:
        unknown = [f for f in args.functions if f not in PAPER]
        if unknown:
            raise InvalidInputError(f"--functions: unknown {unknown}; known: {list(PAPER)}")
        exp = replace(exp, functions=tuple(args.functions))
    start = time.perf_counter()
    printer = None if getattr(args, "no_progress", False) else (lambda s: print(s, flush=True))
    data = run_experiment(exp, printer)
    data["wall_seconds"] = time.perf_counter() - start
    data["machine"] = machine_description()
    table = summary_table(data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{exp.name}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    (out / f"{exp.name}.table.md").write_text(table + "\n", encoding="utf-8")
    print(table)
    print(f"wall time {data['wall_seconds']:.1f} s; written {out / (exp.name + '.json')}")
    return 0
