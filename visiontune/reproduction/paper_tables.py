"""The papers' ranking tables, as printed, keyed by our rule names, and the side-by-side page.

Sources (docs/references.md): Fauvel & Chalk (contextual BO)
Table 1 (§4.1) and Table 2 (§4.2); Fauvel & Chalk (binary/preferential BO) Tables 1-3
(§5.1-5.3). A paper row is ``(our rule name, name printed in the paper, rank, Borda score)``.
Fauvel & Chalk (contextual BO), Table 2 has no row for MUC with a random context (named in §4.2's text only).

The refraction experiment (contextual BO paper §5.3) has its own entries: :data:`REFRACTION_TABLE` (Table 3,
Borda scores summed over 8 psychometric slopes) and :data:`REFRACTION_UCB_ALD` (the final values of
UCB-ALD at slope 5 printed in §5.3). They are looked up under the experiment name ``002-refraction``.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.errors import ConfigurationError

__all__ = [
    "PAPER_TABLES",
    "REFRACTION_TABLE",
    "REFRACTION_UCB_ALD",
    "PaperRefractionFinal",
    "PaperRow",
    "paper_order",
    "paper_rows",
    "side_by_side",
]


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
        ("UCB-ALD", "UCB-ALD", 1, 144),
        ("TS-ALD", "TS-ALD", 2, 83),
        ("cBKG", "cBKG", 3, 59),
        ("UCB-random-context", "UCB (random context)", 4, 46),
        ("BALD", "BALD", 5, 35),
        ("TS-random-context", "TS (random context)", 6, 19),
        ("random-contextual", "Random", 7, 10),
    ),
    "002-table2": _rows(
        ("MUC-ALD", "MUC-ALD", 1, 99),
        ("KSS-ALD", "KSS-ALD", 2, 37),
        ("KSS-random-context", "Kernel Self-Sparring", 3, 22),
        ("BALD-duel", "BALD", 4, 9),
        ("random-duel-contextual", "Random", 5, 5),
    ),
    "000-table1": _rows(
        ("UCB_Phi", "UCB_Φ", 1, 77),
        ("UCB_f", "UCB_f (Tesch et al., 2013)", 2, 45),
        ("TS", "Thompson sampling", 3, 41),
        ("binary-EI", "Binary EI (Tesch et al., 2013)", 4, 40),
        ("random", "Random", 5, 12),
    ),
    "000-table2": _rows(
        ("MUC", "Maximally Uncertain Challenge", 1, 141),
        ("Dueling-UCB", "Dueling UCB (Benavoli et al., 2020)", 1, 141),
        ("Bivariate-EI", "Bivariate EI (Nielsen et al., 2014)", 3, 111),
        ("Duel-TS", "Duel TS (Gonzalez et al., 2017)", 4, 106),
        ("Dueling-TS", "Dueling TS (Benavoli et al., 2020)", 5, 101),
        ("KSS", "KSS (Sui et al., 2017)", 6, 66),
        ("EIIG", "EIIG (Benavoli et al., 2020)", 7, 32),
        ("EI-pref", "EI (Brochu et al., 2010b)", 8, 23),
        ("random-duel", "Random", 9, 21),
    ),
    "000-table3": _rows(
        ("batch-MUC", "MUC", 1, 32),
        ("batch-KSS", "KSS (Sui et al., 2017)", 2, 22),
        ("random-batch", "Random", 3, 0),
    ),
}

#: Fauvel & Chalk (contextual BO), Table 3 (§5.3): the refraction experiment, 6 rules, stratified over 8 slopes.
REFRACTION_TABLE: tuple[PaperRow, ...] = _rows(
    ("UCB-ALD", "UCB-ALD", 1, 35),
    ("TS-ALD", "TS-ALD", 2, 26),
    ("UCB-random-context", "UCB (random context)", 3, 15),
    ("BALD", "BALD", 4, 8),
    ("TS-random-context", "TS (random context)", 5, 3),
    ("random-contextual", "Random", 6, 0),
)


@dataclass(frozen=True)
class PaperRefractionFinal:
    """Final values printed in Fauvel & Chalk (contextual BO) §5.3 for one rule at one slope: mean VA through the final
    estimate (logMAR; its s.e.m. is printed as "8.22", a typo, so it is not kept), mean sphere and
    cylinder errors and their s.e.m. (diopters), ``n_runs`` repetitions, ``slope`` (logMAR⁻¹)."""

    rule: str
    slope: float
    n_runs: int
    va_logmar: float
    sphere_error_d: float
    sphere_error_sem_d: float
    cylinder_error_d: float
    cylinder_error_sem_d: float


#: UCB-ALD at slope 5 (Fauvel & Chalk (contextual BO), §5.3): VA 2.48e-2 logMAR, sphere error 2.74e-2 D (s.e.m.
#: 5.36e-2), cylinder error 1.53e-1 D (s.e.m. 8.22e-2), 20 repetitions.
REFRACTION_UCB_ALD = PaperRefractionFinal("UCB-ALD", 5.0, 20, 2.48e-2, 2.74e-2, 5.36e-2, 1.53e-1, 8.22e-2)

_OTHER_TABLES: dict[str, tuple[PaperRow, ...]] = {"002-refraction": REFRACTION_TABLE}


def _base(experiment: str) -> str:
    name = experiment.removesuffix("-quick")
    if name not in PAPER_TABLES and name not in _OTHER_TABLES:
        known = ", ".join([*PAPER_TABLES, *_OTHER_TABLES])
        raise ConfigurationError(f"experiment: no paper table for {experiment!r}; known: {known}")
    return name


def paper_rows(experiment: str) -> tuple[PaperRow, ...]:
    """The paper's table of ``experiment`` (a name of :data:`PAPER_TABLES`, or ``002-refraction``;
    a ``-quick`` suffix is ignored)."""
    name = _base(experiment)
    return PAPER_TABLES[name] if name in PAPER_TABLES else _OTHER_TABLES[name]


def paper_order(experiment: str, rules) -> list[str]:
    """``rules`` that the paper's table ranks, ordered by the paper's Borda score (best first)."""
    rows = {r.rule: r for r in paper_rows(experiment)}
    return sorted((r for r in rules if r in rows), key=lambda r: (-rows[r].borda, rows[r].rank))


def side_by_side(experiment: str, result) -> str:
    """Markdown table: our rank and Borda score (``result``: a
    :class:`~visiontune.reproduction.analysis.StratifiedResult`) beside the paper's, best of ours first."""
    rows = {r.rule: r for r in paper_rows(experiment)}
    lines = [
        "| Acquisition rule | Our rank | Our Borda | Paper's name | Paper's rank | Paper's Borda |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for i in result.order():
        rule = result.rules[i]
        p = rows.get(rule)
        paper = f"{p.printed} | {p.rank} | {p.borda}" if p else "(not in the paper's table) | - | -"
        lines.append(f"| {rule} | {int(result.rank[i])} | {int(result.borda[i])} | {paper} |")
    return "\n".join(lines) + "\n"
