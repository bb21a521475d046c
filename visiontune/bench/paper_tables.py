"""The papers' ranking tables, as printed, keyed by our rule names, and the side-by-side page.

Sources (text of the seeds in ``shared/seeds``): seed 002 (Fauvel & Chalk, contextual binary BO)
Table 1 (§4.1) and Table 2 (§4.2); seed 000 (Fauvel & Chalk, binary and preferential BO) Tables 1-3
(§5.1-5.3). A paper row is ``(our rule name, name printed in the paper, rank, Borda score)``.
002 Table 2 has no row for MUC with a random context (named in §4.2's text only).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

from visiontune.errors import ConfigurationError

__all__ = ["PAPER_TABLES", "PaperRow", "machine_description", "paper_order", "side_by_side"]


@dataclass(frozen=True)
class PaperRow:
    """One row of a paper's table: ``rule`` (our registry name), ``printed`` (the paper's name),
    ``rank`` and ``borda`` (summed over the paper's 34 functions)."""

    rule: str
    printed: str
    rank: int
    borda: int


def _rows(*rows) -> tuple[PaperRow, ...]:
    return tuple(PaperRow(*r) for r in rows)


PAPER_TABLES: dict[str, tuple[PaperRow, ...]] = {
    "002-table1": _rows(
        ("UCB-ALD", "UCB-ALD", 1, 144), ("TS-ALD", "TS-ALD", 2, 83), ("cBKG", "cBKG", 3, 59),
        ("UCB-random-context", "UCB (random context)", 4, 46), ("BALD", "BALD", 5, 35),
        ("TS-random-context", "TS (random context)", 6, 19), ("random-contextual", "Random", 7, 10),
    ),
    "002-table2": _rows(
        ("MUC-ALD", "MUC-ALD", 1, 99), ("KSS-ALD", "KSS-ALD", 2, 37),
        ("KSS-random-context", "Kernel Self-Sparring", 3, 22), ("BALD-duel", "BALD", 4, 9),
        ("random-duel-contextual", "Random", 5, 5),
    ),
    "000-table1": _rows(
        ("UCB_Phi", "UCB_Φ", 1, 77), ("UCB_f", "UCB_f (Tesch et al., 2013)", 2, 45),
        ("TS", "Thompson sampling", 3, 41), ("binary-EI", "Binary EI (Tesch et al., 2013)", 4, 40),
        ("random", "Random", 5, 12),
    ),
    "000-table2": _rows(
        ("MUC", "Maximally Uncertain Challenge", 1, 141), ("Dueling-UCB", "Dueling UCB (Benavoli et al., 2020)", 1, 141),
        ("Bivariate-EI", "Bivariate EI (Nielsen et al., 2014)", 3, 111), ("Duel-TS", "Duel TS (Gonzalez et al., 2017)", 4, 106),
        ("Dueling-TS", "Dueling TS (Benavoli et al., 2020)", 5, 101), ("KSS", "KSS (Sui et al., 2017)", 6, 66),
        ("EIIG", "EIIG (Benavoli et al., 2020)", 7, 32), ("EI-pref", "EI (Brochu et al., 2010b)", 8, 23),
        ("random-duel", "Random", 9, 21),
    ),
    "000-table3": _rows(
        ("batch-MUC", "MUC", 1, 32), ("batch-KSS", "KSS (Sui et al., 2017)", 2, 22), ("random-batch", "Random", 3, 0),
    ),
}  # fmt: skip


def _base(experiment: str) -> str:
    name = experiment.removesuffix("-quick")
    if name not in PAPER_TABLES:
        raise ConfigurationError(f"experiment: no paper table for {experiment!r}; known: {', '.join(PAPER_TABLES)}")
    return name


def paper_order(experiment: str, rules) -> list[str]:
    """``rules`` that the paper's table ranks, ordered by the paper's Borda score (best first)."""
    rows = {r.rule: r for r in PAPER_TABLES[_base(experiment)]}
    return sorted((r for r in rules if r in rows), key=lambda r: (-rows[r].borda, rows[r].rank))


def machine_description() -> str:
    """``"<nproc> cores, <CPU model>, Python <version>"`` from ``os.cpu_count`` and ``/proc/cpuinfo``."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def side_by_side(experiment: str, result) -> str:
    """Markdown table: our rank and Borda score (``result``: a
    :class:`~visiontune.bench.analysis.StratifiedResult`) beside the paper's, best of ours first."""
    rows = {r.rule: r for r in PAPER_TABLES[_base(experiment)]}
    lines = ["| Acquisition rule | Our rank | Our Borda | Paper's name | Paper's rank | Paper's Borda |",
             "| --- | ---: | ---: | --- | ---: | ---: |"]
    for i in result.order():
        rule = result.rules[i]
        p = rows.get(rule)
        paper = f"{p.printed} | {p.rank} | {p.borda}" if p else "(not in the paper's table) | - | -"
        lines.append(f"| {rule} | {int(result.rank[i])} | {int(result.borda[i])} | {paper} |")
    return "\n".join(lines) + "\n"
