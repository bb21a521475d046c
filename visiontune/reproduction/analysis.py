"""Stratified analysis of benchmark sweeps (Dewancker et al. 2016, as used by both Fauvel & Chalk papers).

Per benchmark function, for every ordered pair of rules ``(i, j)`` a one-sided (right-tailed)
Mann-Whitney U test asks whether the final scores of ``i`` are stochastically larger than those
of ``j``; ``i`` *beats* ``j`` when ``p < alpha`` (``alpha = 5e-4``, Fauvel & Chalk (contextual BO) §4; docs/design.md,
"Stratified analysis"). This gives a partial ranking by number of wins. Rules with the same
number of wins form a tied group; inside each group only, the same test is run on the area
under the curve (AUC = mean score over iterations) and the group is ordered by AUC wins. The
Borda score of a rule on one function is the number of rules ranked strictly below it
(Dwork et al. 2001); Borda scores are summed over functions for the global ranking (Fauvel & Chalk (contextual BO), §4,
tables 1-2; Fauvel & Chalk (binary/preferential BO), tables 1-3).

The win-fraction matrix (Fauvel & Chalk (contextual BO), figure S1 / tables S1-S2) is ``W[i, j]`` = fraction of
functions on which rule ``i`` beats rule ``j`` on final scores.

:func:`average_ranks` adds the summary of Demšar (2006, J. Mach. Learn. Res. 7:1-30, §3.2.2):
per function the rules are ranked by their mean final score, the ranks are averaged over
functions, Friedman's test asks whether they differ at all and the Nemenyi critical difference
says which pairs do (α = 0.05). It needs no per-function significance, so it still separates
rules when a sweep has too few seeds for the α = 5e-4 rank-sum tests.

numpy / scipy only; :func:`plot_regret_curves` imports matplotlib lazily (Agg backend).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import friedmanchisquare, mannwhitneyu, rankdata, studentized_range

from visiontune import output_guard
from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError
from visiontune.validation.results_store import write_results_file

__all__ = [
    "ALPHA",
    "AverageRanks",
    "FunctionRanking",
    "StratifiedResult",
    "auc",
    "average_ranks",
    "average_ranks_markdown",
    "beats_matrix",
    "function_ranking",
    "nemenyi_critical_difference",
    "plot_mean_sem",
    "plot_regret_curves",
    "plot_win_fraction",
    "pyplot",
    "save_mean_sem_figures",
    "stratified_analysis",
    "to_csv",
    "to_markdown",
]

#: Significance level of the pairwise tests (Fauvel & Chalk (contextual BO) §4: ``alpha = 5e-4``).
ALPHA = 5e-4


def _check_alpha(alpha) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise InvalidInputError(f"alpha: expected a level in (0, 1), got {alpha}")
    return alpha


def _samples(name: str, samples: Mapping[str, object]) -> dict[str, np.ndarray]:
    if not isinstance(samples, Mapping) or len(samples) < 1:
        raise InvalidInputError(f"{name}: expected a non-empty mapping rule -> scores")
    out = {}
    for rule, values in samples.items():
        arr = finite_array(f"{name}[{rule!r}]", values).reshape(-1)
        if arr.size < 1:
            raise InvalidInputError(f"{name}[{rule!r}]: expected at least one score, got none")
        out[str(rule)] = arr
    return out


def auc(curves) -> np.ndarray:
    """Area under the curve of each run: mean score over iterations.

    ``curves: (n_runs, n_iterations)`` scores -> ``(n_runs,)`` (docs/design.md, "Stratified analysis").
    """
    arr = finite_array("curves", curves, ndim=2)
    if arr.shape[1] < 1:
        raise InvalidInputError("curves: expected at least one iteration per run")
    return arr.mean(axis=1)


def beats_matrix(
    samples: Mapping[str, object], alpha: float = ALPHA, *, method: str = "auto"
) -> tuple[list[str], np.ndarray]:
    """Pairwise one-sided Mann-Whitney U decisions.

    ``samples``: rule -> ``(n_rule,)`` scores (larger is better). Returns ``(rules, B)`` with
    ``B[i, j] = True`` iff ``p < alpha`` for H1 "scores of rules[i] are stochastically larger
    than those of rules[j]" (``scipy.stats.mannwhitneyu(a_i, a_j, alternative="greater")``).
    ``method`` is passed to scipy (``"auto"``, ``"exact"``, ``"asymptotic"``).
    """
    alpha = _check_alpha(alpha)
    data = _samples("samples", samples)
    rules = list(data)
    n = len(rules)
    B = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue  # a rule never beats itself
            a, b = data[rules[i]], data[rules[j]]
            if np.ptp(np.concatenate([a, b])) == 0.0:
                continue  # all scores equal: no evidence either way (scipy would return p = 1 or nan)
            p = mannwhitneyu(a, b, alternative="greater", method=method).pvalue
            B[i, j] = bool(p < alpha)
    return rules, B


@dataclass(frozen=True)
class FunctionRanking:
    """Ranking of the rules on one function.

    ``rules``: names in input order; ``wins``: ``(r,)`` wins on final scores; ``auc_wins``: ``(r,)``
    wins on AUC against the rules of the same tied group; ``borda``: ``(r,)`` number of rules ranked
    strictly worse; ``beats``: ``(r, r)`` final-score decisions.
    """

    rules: tuple[str, ...]
    wins: np.ndarray
    auc_wins: np.ndarray
    borda: np.ndarray
    beats: np.ndarray


def function_ranking(final: Mapping[str, object], aucs: Mapping[str, object], alpha: float = ALPHA) -> FunctionRanking:
    """Stratified ranking on one function (Fauvel & Chalk (contextual BO) §4; docs/design.md, "Stratified analysis").

    ``final``: rule -> ``(n,)`` final scores; ``aucs``: rule -> ``(n,)`` AUC of the same runs.
    Rank key of rule ``i`` = ``(wins_i, aucwins_i)``, ``wins_i = Σ_j B_final[i, j]``,
    ``aucwins_i = Σ_{j: wins_j = wins_i} B_auc[i, j]``; ``borda_i = #{j : key_j < key_i}``.
    """
    rules, B = beats_matrix(final, alpha)
    auc_data = _samples("aucs", aucs)
    if set(auc_data) != set(rules):
        raise InvalidInputError(f"aucs: expected the same rules as final {rules}, got {list(auc_data)}")
    wins = B.sum(axis=1)
    auc_wins = np.zeros(len(rules), dtype=int)
    for level in np.unique(wins):
        group = [i for i in range(len(rules)) if wins[i] == level]
        if len(group) < 2:
            continue
        _, Bg = beats_matrix({rules[i]: auc_data[rules[i]] for i in group}, alpha)
        for k, i in enumerate(group):
            auc_wins[i] = int(Bg[k].sum())
    keys = list(zip(wins.tolist(), auc_wins.tolist()))
    borda = np.array([sum(kj < ki for kj in keys) for ki in keys], dtype=int)
    return FunctionRanking(tuple(rules), wins.astype(int), auc_wins, borda, B)


@dataclass(frozen=True)
class StratifiedResult:
    """Global result: ``rules``; ``borda`` ``(r,)`` summed over functions; ``rank`` ``(r,)`` (1 = best,
    equal Borda -> equal rank, competition ranking "1224"); ``per_function``: name -> ranking;
    ``win_fraction`` ``(r, r)``: fraction of functions where ``rules[i]`` beats ``rules[j]``."""

    rules: tuple[str, ...]
    borda: np.ndarray
    rank: np.ndarray
    per_function: dict[str, FunctionRanking]
    win_fraction: np.ndarray

    def order(self) -> list[int]:
        """Indices of the rules from best to worst (ties in input order)."""
        return sorted(range(len(self.rules)), key=lambda i: (self.rank[i], i))


def stratified_analysis(curves: Mapping[str, Mapping[str, object]], alpha: float = ALPHA) -> StratifiedResult:
    """Stratified analysis over functions.

    ``curves``: function -> rule -> ``(n_runs, n_iterations)`` scores (final score = last column,
    AUC = row mean). Every function must have the same set of rules.
    """
    alpha = _check_alpha(alpha)
    if not isinstance(curves, Mapping) or not curves:
        raise InvalidInputError("curves: expected a non-empty mapping function -> rule -> (runs, iterations) scores")
    rules: tuple[str, ...] | None = None
    per_function = {}
    for fname, by_rule in curves.items():
        if not isinstance(by_rule, Mapping) or not by_rule:
            raise InvalidInputError(f"curves[{fname!r}]: expected a non-empty mapping rule -> scores")
        arrays = {r: finite_array(f"curves[{fname!r}][{r!r}]", c, ndim=2) for r, c in by_rule.items()}
        if rules is None:
            rules = tuple(arrays)
        elif set(arrays) != set(rules):
            raise InvalidInputError(f"curves[{fname!r}]: rules {sorted(arrays)} differ from {sorted(rules)}")
        final = {r: arrays[r][:, -1] for r in rules}
        per_function[fname] = function_ranking(final, {r: auc(arrays[r]) for r in rules}, alpha)
    assert rules is not None
    borda = np.sum([fr.borda for fr in per_function.values()], axis=0)
    rank = np.array([1 + int(np.sum(borda > b)) for b in borda], dtype=int)
    win_fraction = np.mean([fr.beats.astype(float) for fr in per_function.values()], axis=0)
    return StratifiedResult(rules, borda.astype(int), rank, per_function, win_fraction)


#: Level of the Nemenyi critical difference (Demšar 2006 uses 0.05 and 0.10).
NEMENYI_ALPHA = 0.05


@dataclass(frozen=True)
class AverageRanks:
    """``rules``; ``mean_rank`` ``(r,)`` over ``n_functions`` (1 = best); ``friedman_p`` (NaN with
    fewer than 3 rules or 2 functions); ``critical_difference``: the Nemenyi CD at
    :data:`NEMENYI_ALPHA` (two rules whose mean ranks differ by more than it differ)."""

    rules: tuple[str, ...]
    mean_rank: np.ndarray
    n_functions: int
    friedman_p: float
    critical_difference: float

    def order(self) -> list[int]:
        return sorted(range(len(self.rules)), key=lambda i: (self.mean_rank[i], i))


def nemenyi_critical_difference(n_rules: int, n_functions: int, alpha: float = NEMENYI_ALPHA) -> float:
    """``CD = q_α √(k (k + 1) / (6 N))`` with ``q_α`` the studentized range quantile at infinite
    degrees of freedom divided by ``√2`` (Demšar 2006, §3.2.2, table 5)."""
    k, n = int(n_rules), int(n_functions)
    if k < 2 or n < 1:
        raise InvalidInputError(f"nemenyi: expected at least 2 rules and 1 function, got {k} and {n}")
    q = studentized_range.ppf(1.0 - _check_alpha(alpha), k, np.inf) / np.sqrt(2.0)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def average_ranks(curves: Mapping[str, Mapping[str, object]]) -> AverageRanks:
    """Average ranks of the rules (Demšar 2006, §3.2.2).

    ``curves`` as in :func:`stratified_analysis`. On each function the rules are ranked by the
    mean of their final scores (larger is better, rank 1; ties share the average rank), then
    ``R_j = (1/N) Σ_f r_fj``. Friedman's test (``scipy.stats.friedmanchisquare``) of equal mean ranks.
    """
    if not isinstance(curves, Mapping) or not curves:
        raise InvalidInputError("curves: expected a non-empty mapping function -> rule -> (runs, iterations) scores")
    rules = tuple(next(iter(curves.values())))
    means = []
    for fname, by_rule in curves.items():
        if set(by_rule) != set(rules):
            raise InvalidInputError(f"curves[{fname!r}]: rules {sorted(by_rule)} differ from {sorted(rules)}")
        means.append([finite_array(f"curves[{fname!r}][{r!r}]", by_rule[r], ndim=2)[:, -1].mean() for r in rules])
    means = np.asarray(means)  # (N functions, k rules)
    ranks = np.vstack([rankdata(-row) for row in means])
    n, k = means.shape
    p = float(friedmanchisquare(*means.T).pvalue) if k >= 3 and n >= 2 else float("nan")
    cd = nemenyi_critical_difference(k, n) if k >= 2 else float("nan")
    return AverageRanks(rules, ranks.mean(axis=0), n, p, cd)


def average_ranks_markdown(ranks: AverageRanks) -> str:
    """Markdown table of :func:`average_ranks`, best first, with Friedman's p and the Nemenyi CD."""
    lines = ["| Acquisition rule | Average rank |", "| --- | ---: |"]
    lines += [f"| {ranks.rules[i]} | {ranks.mean_rank[i]:.2f} |" for i in ranks.order()]
    lines += [
        "",
        f"Friedman test over {ranks.n_functions} functions: p = {ranks.friedman_p:.2g}; Nemenyi critical "
        f"difference at α = {NEMENYI_ALPHA}: {ranks.critical_difference:.2f} (two rules whose average ranks "
        "differ by more than this differ).",
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ outputs


def to_csv(result: StratifiedResult) -> str:
    """CSV ``rule,rank,borda``, best first."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["rule", "rank", "borda"])
    for i in result.order():
        writer.writerow([result.rules[i], int(result.rank[i]), int(result.borda[i])])
    return buf.getvalue()


def to_markdown(result: StratifiedResult, title: str | None = None) -> str:
    """Markdown: the ranking table (as in Fauvel & Chalk (contextual BO), table 1) and the win-fraction matrix (Fauvel &
    Chalk (contextual BO), fig. S1)."""
    lines = [f"## {title}", ""] if title else []
    lines += ["| Acquisition rule | Rank | Borda score |", "| --- | ---: | ---: |"]
    order = result.order()
    for i in order:
        lines.append(f"| {result.rules[i]} | {int(result.rank[i])} | {int(result.borda[i])} |")
    lines += [
        "",
        f"Win fraction over {len(result.per_function)} functions (row beats column, "
        f"one-sided Mann-Whitney U on final scores):",
        "",
    ]
    lines.append("| | " + " | ".join(result.rules[j] for j in order) + " |")
    lines.append("| --- |" + " ---: |" * len(order))
    for i in order:
        cells = ["-" if i == j else f"{result.win_fraction[i, j]:.2f}" for j in order]
        lines.append(f"| {result.rules[i]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display), or ``None`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def plot_mean_sem(ax, curves: Mapping[str, object], where: str) -> None:
    """Draw, per rule, the mean over runs (rows) of its ``(runs, iterations)`` curve against the
    iteration (1-based), with a band of ± one standard error of the mean (``sd / √runs``, ddof 1;
    none for a single run). ``where`` names the curves in error messages."""
    for rule, c in curves.items():
        arr = finite_array(f"{where}[{rule!r}]", c, ndim=2)
        mean = arr.mean(axis=0)
        sem = arr.std(axis=0, ddof=1) / np.sqrt(arr.shape[0]) if arr.shape[0] > 1 else np.zeros_like(mean)
        t = np.arange(1, arr.shape[1] + 1)
        ax.plot(t, mean, label=rule)
        ax.fill_between(t, mean - sem, mean + sem, alpha=0.25)


def save_mean_sem_figures(
    groups: Mapping[str, Mapping[str, object]],
    out_dir,
    names: Sequence[str],
    *,
    filename: str,
    title,
    xlabel: str,
    ylabel: str,
    where: str,
    figsize=(5, 3.5),
    title_size: float | None = None,
    zero_line: bool = False,
) -> list[Path] | None:
    """One PNG per name of ``names``: :func:`plot_mean_sem` of ``groups[name]`` (rule -> runs x steps),
    saved as ``out_dir / filename.format(name)`` with ``title(name, rule_curves)`` on top (in points
    ``title_size``, else matplotlib's title size) and, if ``zero_line``, a dotted
    line at 0. Returns the paths, or ``None`` when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        fig, ax = plt.subplots(figsize=figsize)
        plot_mean_sem(ax, groups[name], f"{where}[{name!r}]")
        if zero_line:
            ax.axhline(0.0, color="k", lw=0.6, ls=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title(name, groups[name]), **({"fontsize": title_size} if title_size else {}))
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(save_png(plt, fig, out_dir / filename.format(name)))
    return written


def plot_regret_curves(
    curves: Mapping[str, Mapping[str, object]], out_dir, *, functions: Sequence[str] | None = None
) -> list[Path] | None:
    """One PNG per function, ``regret_<function>.png``: mean ± s.e.m. over runs of the score at each
    iteration, per rule. ``curves`` as in :func:`stratified_analysis`. Returns the written paths,
    or ``None`` when matplotlib is not installed (imported lazily, Agg backend).
    """
    return save_mean_sem_figures(
        curves,
        out_dir,
        functions or list(curves),
        filename="regret_{}.png",
        title=lambda name, _curves: name,
        xlabel="iteration",
        ylabel="scaled value at the reported solution",
        where="curves",
    )


def plot_win_fraction(result: StratifiedResult, path) -> Path | None:
    """Heat map of the win-fraction matrix (rows beat columns, best rule first), as Fauvel & Chalk (contextual BO),
    figure S1. Returns the path, or ``None`` when matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return None
    order = result.order()
    names = [result.rules[i] for i in order]
    W = result.win_fraction[np.ix_(order, order)]
    size = 1.2 + 0.55 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    image = ax.imshow(W, vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j:
                ax.text(
                    j, i, f"{W[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w" if W[i, j] < 0.5 else "k"
                )
    ax.set_title(f"row beats column: fraction of {len(result.per_function)} functions", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_png(plt, fig, path)


def save_png(plt, fig, path) -> Path:
    """Render ``fig`` (then closed) as a 100 dpi PNG in memory and write it to ``path``
    (:func:`~visiontune.validation.results_store.write_results_file`: atomic, 0600, never over a file of
    another kind); return the path."""
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png", dpi=100)
    finally:
        plt.close(fig)
    return write_results_file(path, png.getvalue(), output_guard.PNG)
