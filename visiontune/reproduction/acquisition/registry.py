"""Named policies: name -> (factory, scenario, source paper / table).

``make(name, **overrides)`` builds a policy with the paper's settings (overrides such as
``n_initial=0``, or an x-rule setting such as ``beta`` or ``n_basis``, replace them). Every registered policy is run
through the common test battery (tests/reproduction/acquisition/test_policy_battery.py) the moment it is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from visiontune.errors import ConfigurationError
from visiontune.reproduction.acquisition.acquisition_functions import BETA_UCB_PHI
from visiontune.reproduction.acquisition.batch import BatchKSS, BatchMUC, RandomBatch
from visiontune.reproduction.acquisition.binary_policies import (
    BALD,
    BETA_UCB_PHI_CONTEXTUAL,
    BinaryEI,
    JointBALD,
    Policy,
    RandomContext,
    RandomX,
    Sequential,
    ThompsonX,
    UCBf,
    UCBPhi,
)
from visiontune.reproduction.acquisition.dueling import (
    EIIG,
    BivariateEI,
    DuelBALD,
    DuelingTS,
    DuelingUCB,
    DuelTS,
    PreferentialEI,
    RandomDuel,
)
from visiontune.reproduction.acquisition.gonzalez import PBOCEI, PBODTS, PBOPE
from visiontune.reproduction.acquisition.knowledge_gradient import CBKG
from visiontune.reproduction.acquisition.preferential import KSS, MUC

__all__ = ["PolicySpec", "REGISTRY", "get", "make", "names", "register"]


@dataclass(frozen=True)
class PolicySpec:
    """A registered policy: ``factory(**overrides) -> Policy``, its ``scenario`` and ``source``."""

    name: str
    factory: Callable[..., Policy]
    scenario: str
    source: str
    description: str


REGISTRY: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> PolicySpec:
    if spec.name in REGISTRY:
        raise ConfigurationError(f"policy {spec.name!r} is already registered")
    REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> PolicySpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigurationError(f"policy: unknown name {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def make(name: str, **overrides) -> Policy:
    """Build the policy registered as ``name``; ``overrides`` (e.g. ``n_initial=0``) go to its factory."""
    return get(name).factory(**overrides)


def names(scenario: str | None = None) -> list[str]:
    return [n for n, s in REGISTRY.items() if scenario is None or s.scenario == scenario]


def _seq(x_rule_factory, context_rule_factory, n_initial_default):
    """Factory of ``Sequential(x_rule, context_rule, n_initial)``; extra keywords go to the x-rule."""

    def factory(n_initial: int = n_initial_default, **x_rule_overrides):
        ctx = context_rule_factory() if context_rule_factory is not None else None
        return Sequential(x_rule_factory(**x_rule_overrides), ctx, n_initial=n_initial)

    return factory


# Binary BO (Fauvel & Chalk (binary/preferential BO), table 1; 2 initial random samples, Fauvel & Chalk
# (binary/preferential BO), §5).
register(
    PolicySpec(
        "UCB_Phi",
        _seq(lambda **kw: UCBPhi(**{"beta": BETA_UCB_PHI, **kw}), None, 2),
        "binary",
        "Fauvel & Chalk (binary/preferential BO), Eq. 3, 9; table 1",
        "UCB in the observation space, beta = Phi^-1(0.99)",
    )
)
register(
    PolicySpec(
        "UCB_f",
        _seq(lambda **kw: UCBf(**{"beta": 1.0, **kw}), None, 2),
        "binary",
        "Fauvel & Chalk (binary/preferential BO), table 1 (Tesch et al. 2013)",
        "UCB in the latent space, beta = 1",
    )
)
register(
    PolicySpec(
        "binary-EI",
        _seq(BinaryEI, None, 2),
        "binary",
        "Fauvel & Chalk (binary/preferential BO), table 1 (Tesch et al. 2013)",
        "expected improvement of Phi(f) over the best mu_c",
    )
)
register(
    PolicySpec(
        "TS",
        _seq(ThompsonX, None, 2),
        "binary",
        "Fauvel & Chalk (binary/preferential BO), table 1, supp. D",
        "x = argmax of one approximate posterior sample of f",
    )
)
register(
    PolicySpec(
        "random",
        _seq(RandomX, None, 2),
        "binary",
        "Fauvel & Chalk (binary/preferential BO), table 1",
        "x uniform in the box",
    )
)

# Contextual binary BO (Fauvel & Chalk (contextual BO), tables 1 and 3; 5 initial random samples, Fauvel & Chalk
# (contextual BO), §4.1).
register(
    PolicySpec(
        "UCB-ALD",
        _seq(lambda **kw: UCBPhi(**{"beta": BETA_UCB_PHI_CONTEXTUAL, **kw}), BALD, 5),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), §3.3; tables 1, 3",
        "x = argmax UCB_Phi(s0, x) (beta = Phi^-1(0.95)), s = argmax_s BALD",
    )
)
register(
    PolicySpec(
        "TS-ALD",
        _seq(ThompsonX, BALD, 5),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), §3.3, supp. G; tables 1, 3",
        "x = argmax of a posterior sample f~(s0, x), s = argmax_s BALD",
    )
)
register(
    PolicySpec(
        "TS-random-context",
        _seq(ThompsonX, RandomContext, 5),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), tables 1, 3: TS (random context)",
        "x = argmax of a posterior sample f~(s0, x), s uniform",
    )
)
register(
    PolicySpec(
        "UCB-random-context",
        _seq(lambda **kw: UCBPhi(**{"beta": BETA_UCB_PHI_CONTEXTUAL, **kw}), RandomContext, 5),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), tables 1, 3: UCB (random context)",
        "x = argmax UCB_Phi(s0, x), s uniform",
    )
)
register(
    PolicySpec(
        "BALD",
        lambda n_initial=5: JointBALD(n_initial=n_initial),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), tables 1, 3 (Houlsby et al. 2011)",
        "(s, x) = argmax BALD jointly",
    )
)
register(
    PolicySpec(
        "random-contextual",
        _seq(RandomX, RandomContext, 5),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), tables 1, 3: Random",
        "(s, x) uniform",
    )
)

# Preferential BO (Fauvel & Chalk (binary/preferential BO), table 2 / S1; duels).
register(
    PolicySpec(
        "MUC",
        lambda n_initial=2, **kw: MUC(n_initial=n_initial, **kw),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), §4.2, table 2",
        "champion argmax mu_f, challenger argmax V[Phi(g(x*, x))]",
    )
)
register(
    PolicySpec(
        "KSS",
        lambda n_initial=2, **kw: KSS(n_initial=n_initial, **kw),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2 (Sui & Burdick 2017)",
        "maximisers of two posterior samples of the utility",
    )
)

# Contextual preferential BO (Fauvel & Chalk (contextual BO) §3.4, §4.2): the duel at s0, then s by BALD on the duel.
register(
    PolicySpec(
        "MUC-ALD",
        lambda n_initial=5, **kw: MUC(n_initial=n_initial, **kw),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §3.4, §4.2",
        "MUC duel at the reference context, s = argmax_s BALD of the duel",
    )
)
register(
    PolicySpec(
        "KSS-ALD",
        lambda n_initial=5, **kw: KSS(n_initial=n_initial, **kw),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §3.4, §4.2",
        "KSS duel at the reference context, s = argmax_s BALD of the duel",
    )
)

# Contextual binary knowledge gradient (Fauvel & Chalk (contextual BO), §3.2; discretised, see knowledge_gradient.py).
register(
    PolicySpec(
        "cBKG",
        lambda n_initial=5, **kw: CBKG(n_initial=n_initial, **kw),
        "contextual-binary",
        "Fauvel & Chalk (contextual BO), §3.2, Eq. 6-7, supp. B-C; table 1 "
        "(Sobol candidates + envelope-theorem gradient)",
        "(s, x) = argmax of the expected gain in max_x E[f(s0, x)] after one answer",
    )
)


# Preferential BO baselines (Fauvel & Chalk (binary/preferential BO), table 2 / table S1; 2 initial random duels like
# MUC).
def _kw(cls, n_initial_default):
    """Factory ``cls(n_initial=..., **overrides)``."""
    return lambda n_initial=n_initial_default, **kw: cls(n_initial=n_initial, **kw)


register(
    PolicySpec(
        "Dueling-UCB",
        _kw(DuelingUCB, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (Benavoli et al. 2020)",
        "champion x* = argmax mu_f, challenger argmax mu_g(x, x*) + beta sigma_g(x, x*) (beta = Phi^-1(0.975))",
    )
)
register(
    PolicySpec(
        "Bivariate-EI",
        _kw(BivariateEI, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (Nielsen et al. 2014)",
        "champion x** = argmax mu_f over the options seen, challenger argmax E[(f(x) - f(x**))_+]",
    )
)
register(
    PolicySpec(
        "Duel-TS",
        _kw(DuelTS, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (González et al. 2017)",
        "first member the maximiser of a posterior sample, challenger argmax V[Phi(g(x1, x))]",
    )
)
register(
    PolicySpec(
        "Dueling-TS",
        _kw(DuelingTS, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (Benavoli et al. 2020)",
        "champion argmax mu_f, challenger the maximiser of a posterior sample",
    )
)
register(
    PolicySpec(
        "EIIG",
        _kw(EIIG, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (Benavoli et al. 2020)",
        "champion argmax mu_f, challenger argmax k log mu_c(x, x*) - I(c, g | x*, x), k = 0.5 "
        "(as printed and in the authors' toolbox: a near copy of the champion)",
    )
)
register(
    PolicySpec(
        "EIIG+I",
        lambda n_initial=2, **kw: EIIG(n_initial=n_initial, **{"k": 0.1, "information_weight": 1.0, **kw}),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table S1 (EIIG, Benavoli et al. 2020) "
        "with the information added: ours",
        "champion argmax mu_f, challenger argmax k log mu_c(x, x*) + I(c, g | x*, x), k = 0.1",
    )
)
register(
    PolicySpec(
        "EI-pref",
        _kw(PreferentialEI, 2),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2, S1 (Brochu et al. 2010)",
        "champion x** = argmax mu_f over the options seen, challenger argmax E[(f(x) - mu_f(x**))_+]",
    )
)
register(
    PolicySpec(
        "random-duel",
        _kw(RandomDuel, 0),
        "preferential",
        "Fauvel & Chalk (binary/preferential BO), table 2: Random",
        "both members uniform in the box",
    )
)
register(
    PolicySpec(
        "PBO-PE",
        _kw(PBOPE, 2),
        "preferential",
        "González et al. 2017, §3.1 (pure exploration)",
        "duel argmax V[Phi(g(x, x'))] jointly over X x X",
    )
)
register(
    PolicySpec(
        "PBO-CEI",
        _kw(PBOCEI, 2),
        "preferential",
        "González et al. 2017, §3.2, Eq. 6 (discretised)",
        "Sobol duel maximising the expected gain in the Condorcet winner's soft-Copeland score",
    )
)
register(
    PolicySpec(
        "PBO-DTS",
        _kw(PBODTS, 2),
        "preferential",
        "González et al. 2017, §3.3",
        "x = argmax soft-Copeland score of a posterior sample, x' = argmax V[Phi(g(x, x'))]",
    )
)

# Batch preferential BO (Fauvel & Chalk (binary/preferential BO) §4.3, table 3; m = 3).
register(
    PolicySpec(
        "batch-MUC",
        _kw(BatchMUC, 2),
        "batch-preferential",
        "Fauvel & Chalk (binary/preferential BO), §4.3, Eqs. 19-20; table 3",
        "champion argmax mu_f, challengers jointly maximise sum_{i<j} V[Phi(g(x_i, x_j))]",
    )
)
register(
    PolicySpec(
        "batch-KSS",
        _kw(BatchKSS, 2),
        "batch-preferential",
        "Fauvel & Chalk (binary/preferential BO), table 3 (Sui et al. 2017)",
        "m maximisers of independent posterior samples, coinciding members redrawn",
    )
)
register(
    PolicySpec(
        "random-batch",
        _kw(RandomBatch, 0),
        "batch-preferential",
        "Fauvel & Chalk (binary/preferential BO), table 3: Random",
        "m options uniform in the box",
    )
)

# Controls of contextual preferential BO (Fauvel & Chalk (contextual BO) §4.2, table 2; 5 initial random duels).
register(
    PolicySpec(
        "KSS-random-context",
        lambda n_initial=5, **kw: KSS(n_initial=n_initial, random_context=True, **kw),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §4.2, table 2: Kernel Self-Sparring",
        "KSS duel at the reference context, s uniform",
    )
)
register(
    PolicySpec(
        "MUC-random-context",
        lambda n_initial=5, **kw: MUC(n_initial=n_initial, random_context=True, **kw),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §4.2 (control: x by MUC, s random)",
        "MUC duel at the reference context, s uniform",
    )
)
register(
    PolicySpec(
        "BALD-duel",
        _kw(DuelBALD, 5),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §4.2, table 2: BALD",
        "(s, x1, x2) = argmax BALD of the duel jointly",
    )
)
register(
    PolicySpec(
        "random-duel-contextual",
        _kw(RandomDuel, 5),
        "contextual-preferential",
        "Fauvel & Chalk (contextual BO), §4.2, table 2: Random",
        "(s, x1, x2) uniform",
    )
)
