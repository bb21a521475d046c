"""The benchmark experiments of the papers, by name, and their quick subsets.

An :class:`Experiment` names a scenario, the rules (names of
:mod:`visiontune.reproduction.acquisition.registry`), the test functions
(:mod:`visiontune.reproduction.benchmark_functions`), the number of seeds (repetitions), iterations
per run and initial random samples. The names keep the papers' numbers (docs/references.md): ``002`` is
Fauvel & Chalk (contextual BO), ``000`` is Fauvel & Chalk (binary/preferential BO):

=============  ========================  =====  =====  =======  =============================
name           scenario                  seeds  iters  initial  source
=============  ========================  =====  =====  =======  =============================
002-table1     contextual-binary         40     60     5        contextual BO §4.1, table 1
002-table2     contextual-preferential   40     60     5        contextual BO §4.2, table 2
000-table1     binary                    60     100    2        binary/pref. BO §5.1, table 1
000-table2     preferential              40     80     5        binary/pref. BO §5.2, table 2
000-table3     batch-preferential        30     30     2 (*)    binary/pref. BO §5.3, table 3
=============  ========================  =====  =====  =======  =============================

(*) Fauvel & Chalk (binary/preferential BO) does not state the initial design of the batch experiment; 2 as in §5.1 is
our choice. Iterations count every answer, the initial random ones included. Rules of a paper that are not
(yet) in the registry are kept in :attr:`Experiment.rules` under the names we will give them;
the sweep refuses them with a "not yet available" error (:func:`missing_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from visiontune._validate import check_int
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import SCENARIOS as POLICY_SCENARIOS
from visiontune.reproduction.benchmark_functions import FUNCTIONS

__all__ = ["EXPERIMENTS", "Experiment", "get_experiment", "missing_rules"]

#: Scenarios of a sweep: the policy registry's (visiontune.reproduction.acquisition.binary_policies.SCENARIOS).
SCENARIOS = POLICY_SCENARIOS

#: Functions of the quick subsets: 1-D, 2-D smooth and 2-D multimodal, all cheap.
QUICK_FUNCTIONS = ("forrester", "six_hump_camel")
#: Seeds of the quick subsets: enough for the stratified analysis to separate two rules.
QUICK_SEEDS = 10


@dataclass(frozen=True)
class Experiment:
    """A benchmark experiment: ``name``, ``scenario`` (a key of :data:`SCENARIOS`), ``rules`` and
    ``functions`` (names), ``n_seeds`` (seeds ``0 .. n_seeds-1``), ``iterations`` (answers per run,
    initial ones included), ``n_initial`` (initial uniform random queries), ``source``."""

    name: str
    scenario: str
    rules: tuple[str, ...]
    functions: tuple[str, ...]
    n_seeds: int
    iterations: int
    n_initial: int
    source: str

    def __post_init__(self):
        if self.scenario not in SCENARIOS:
            raise InvalidInputError(f"scenario: expected one of {list(SCENARIOS)}, got {self.scenario!r}")
        if not self.rules or not self.functions:
            raise InvalidInputError(f"{self.name}: rules and functions must not be empty")
        for field_name in ("n_seeds", "iterations"):
            check_int(field_name, getattr(self, field_name), lo=1)
        check_int("n_initial", self.n_initial, lo=0, hi=self.iterations)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.n_seeds))

    def with_seeds(self, n_seeds: int) -> Experiment:
        return replace(self, n_seeds=n_seeds)

    def with_functions(self, names) -> Experiment:
        """The same experiment on the subset ``names`` of its functions (same name and run keys)."""
        names = tuple(dict.fromkeys(names))
        unknown = [n for n in names if n not in self.functions]
        if not names or unknown:
            raise ConfigurationError(
                f"functions: expected names among {list(self.functions)}, got unknown {unknown or 'none'}"
            )
        return replace(self, functions=names)

    def quick(self) -> Experiment:
        """A subset that runs in minutes on two cores: 3 rules, 2 functions, :data:`QUICK_SEEDS` seeds,
        15 iterations. 10 seeds: with 6 or fewer per rule, no one-sided rank-sum test can reach
        ``p < 5e-4`` (the exact minimum for ``n`` vs ``n`` runs is ``1 / C(2n, n)``; ``C(12, 6) = 924``)."""
        functions = tuple(f for f in QUICK_FUNCTIONS if f in FUNCTIONS and f in self.functions)
        iterations = 15
        return replace(
            self,
            name=f"{self.name}-quick",
            rules=self.rules[:2] + self.rules[-1:] if len(self.rules) > 3 else self.rules,
            functions=functions or self.functions[:2],
            n_seeds=QUICK_SEEDS,
            iterations=iterations,
            n_initial=min(self.n_initial, iterations),
        )


def _all_functions() -> tuple[str, ...]:
    return tuple(FUNCTIONS)


def _experiments() -> dict[str, Experiment]:
    fns = _all_functions()
    return {
        e.name: e
        for e in (
            Experiment(
                "002-table1",
                "contextual-binary",
                ("UCB-ALD", "TS-ALD", "cBKG", "UCB-random-context", "BALD", "TS-random-context", "random-contextual"),
                fns,
                40,
                60,
                5,
                "Fauvel & Chalk (contextual BO) §4.1, table 1",
            ),
            Experiment(
                "002-table2",
                "contextual-preferential",
                (
                    "MUC-ALD",
                    "KSS-ALD",
                    "KSS-random-context",
                    "MUC-random-context",
                    "BALD-duel",
                    "random-duel-contextual",
                ),
                fns,
                40,
                60,
                5,
                "Fauvel & Chalk (contextual BO) §4.2, table 2 (+ MUC random context, listed in §4.2's text)",
            ),
            Experiment(
                "000-table1",
                "binary",
                ("UCB_Phi", "UCB_f", "TS", "binary-EI", "random"),
                fns,
                60,
                100,
                2,
                "Fauvel & Chalk (binary/preferential BO) §5.1, table 1",
            ),
            Experiment(
                "000-table2",
                "preferential",
                (
                    "MUC",
                    "Dueling-UCB",
                    "Bivariate-EI",
                    "Duel-TS",
                    "Dueling-TS",
                    "KSS",
                    "EIIG",
                    "EI-pref",
                    "random-duel",
                    "EIIG+I",
                ),
                fns,
                40,
                80,
                5,
                "Fauvel & Chalk (binary/preferential BO) §5.2, table 2 "
                "(+ EIIG+I, ours: EIIG with the information added)",
            ),
            Experiment(
                "000-table3",
                "batch-preferential",
                ("batch-MUC", "batch-KSS", "random-batch"),
                fns,
                30,
                30,
                2,
                "Fauvel & Chalk (binary/preferential BO) §5.3, table 3 (batch size 3)",
            ),
        )
    }


EXPERIMENTS: dict[str, Experiment] = _experiments()


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; :class:`ConfigurationError` listing the known ones otherwise."""
    try:
        return EXPERIMENTS[name]
    except (KeyError, TypeError):
        raise ConfigurationError(f"experiment: unknown name {name!r}; known: {', '.join(EXPERIMENTS)}") from None


def missing_rules(experiment: Experiment) -> list[str]:
    """Rules of ``experiment`` the sweep cannot run yet (not registered for its scenario, or a
    scenario the sweep does not support yet)."""
    if experiment.scenario not in SCENARIOS:
        return list(experiment.rules)
    return [
        r
        for r in experiment.rules
        if r not in registry.REGISTRY or registry.REGISTRY[r].scenario != experiment.scenario
    ]
