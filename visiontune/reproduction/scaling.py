"""Estimate, store and regenerate the benchmark scaling (docs/design.md, "Benchmark scaling").

For each function ``f`` of table S1 (Fauvel & Chalk (contextual BO), supplementary H) the moments of ``g`` over the
uniform distribution on the domain are estimated once on a scrambled Sobol set::

    g = log f   if the function is on the log list of docs/design.md, else g = f
    mean = (1/N) Σ g(x_k),   sd = sqrt((1/(N-1)) Σ (g(x_k) - mean)²),   N = 2^16

(the authors used 50,000 i.i.d. uniform samples; a scrambled Sobol set of 2^16 points has a
smaller error for the same cost). The authors' rule for the log list is "variance of f above
100 and every value positive"; :func:`log_rule` applies it so that the list can be checked.

Regenerate the package data with::

    python -m visiontune.reproduction.scaling            # writes visiontune/data/bench_scaling.json
    python -m visiontune.reproduction.scaling --n-log2 12 --output /tmp/scaling.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import qmc

from visiontune._validate import check_int
from visiontune.reproduction.benchmark_functions import FUNCTIONS, Scaling, TestFunction

SOBOL_LOG2_POINTS = 16
SOBOL_SEED = 20220601
LOG_RULE_VARIANCE = 100.0
DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "data" / "bench_scaling.json"


@dataclass(frozen=True)
class ScalingEstimate:
    """Moments of one function on a Sobol set: the chosen ``scaling``, the raw statistics
    (``raw_variance``, ``raw_min``, ``raw_max`` of ``f`` itself) and the verdict of :func:`log_rule`."""

    scaling: Scaling
    raw_variance: float
    raw_min: float
    raw_max: float
    log_rule: bool
    n_points: int


def sobol_points(function: TestFunction, n_log2: int, seed: int = SOBOL_SEED) -> np.ndarray:
    """``(2^n_log2, d)`` scrambled Sobol points (scipy ``qmc.Sobol``, Owen scrambling) on the domain."""
    n_log2 = check_int("n_log2", n_log2, 1, 24)
    sampler = qmc.Sobol(function.dimension, scramble=True, seed=np.random.default_rng(seed))
    return qmc.scale(sampler.random_base2(n_log2), function.lower, function.upper)


def log_rule(values: np.ndarray) -> bool:
    """The authors' rule: scale ``log f`` when ``var(f) > 100`` and ``min f > 0`` on the sample."""
    values = np.asarray(values, dtype=float)
    return bool(np.var(values, ddof=1) > LOG_RULE_VARIANCE and np.min(values) > 0.0)


def estimate_scaling(
    function: TestFunction, n_log2: int = SOBOL_LOG2_POINTS, seed: int = SOBOL_SEED
) -> ScalingEstimate:
    """Estimate ``mean`` and ``sd`` of ``g`` (``log f`` if ``function.log_scaled``) on
    ``2^n_log2`` scrambled Sobol points drawn with ``seed``."""
    X = sobol_points(function, n_log2, seed)
    values = function(X)
    g = np.log(values) if function.log_scaled else values
    return ScalingEstimate(
        scaling=Scaling(mean=float(np.mean(g)), sd=float(np.std(g, ddof=1)), log=function.log_scaled),
        raw_variance=float(np.var(values, ddof=1)),
        raw_min=float(np.min(values)),
        raw_max=float(np.max(values)),
        log_rule=log_rule(values),
        n_points=X.shape[0],
    )


def compute_table(n_log2: int = SOBOL_LOG2_POINTS, seed: int = SOBOL_SEED) -> dict:
    """The JSON-ready scaling table of every registered function."""
    functions = {}
    for name, function in FUNCTIONS.items():
        estimate = estimate_scaling(function, n_log2, seed)
        functions[name] = {
            "mean": estimate.scaling.mean,
            "sd": estimate.scaling.sd,
            "log": estimate.scaling.log,
            "raw_variance": estimate.raw_variance,
            "raw_min": estimate.raw_min,
            "raw_max": estimate.raw_max,
            "log_rule": estimate.log_rule,
        }
    return {
        "description": "y = -(g - mean)/sd, g = log f if log else f (docs/design.md, Benchmark scaling)",
        "method": "scrambled Sobol (scipy.stats.qmc.Sobol, Owen scrambling), uniform on the domain",
        "n_points": 2**n_log2,
        "seed": seed,
        "functions": functions,
    }


def write_table(path: Path = DEFAULT_OUTPUT, n_log2: int = SOBOL_LOG2_POINTS, seed: int = SOBOL_SEED) -> dict:
    """Compute the table and write it to ``path`` as JSON; returns the table."""
    table = compute_table(n_log2, seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return table


def main(argv: list[str] | None = None) -> int:
    """Command line: regenerate the scaling file (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m visiontune.reproduction.scaling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n-log2", type=int, default=SOBOL_LOG2_POINTS, help="log2 of the number of Sobol points")
    parser.add_argument("--seed", type=int, default=SOBOL_SEED)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    table = write_table(args.output, args.n_log2, args.seed)
    disagree = [n for n, e in table["functions"].items() if e["log"] != e["log_rule"]]
    print(f"wrote {args.output} ({len(table['functions'])} functions, {table['n_points']} points)")
    if disagree:
        print(
            f"log rule (var > {LOG_RULE_VARIANCE:g} and all > 0) disagrees with docs/design.md for: "
            f"{', '.join(disagree)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
