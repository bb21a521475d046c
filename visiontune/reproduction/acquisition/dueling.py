"""The PBO baselines of Fauvel & Chalk (binary/preferential BO), table 2 / table S1: champion-challenger duels.

Each rule picks a first member (the *champion*) and then a second (the *challenger*) that
maximises a rule-specific acquisition over the box, at the reference context for a
contextual problem (then ``s`` by BALD on the duel, as MUC-ALD does; Fauvel & Chalk (contextual BO), §3.4). The rules
of Fauvel & Chalk (binary/preferential BO), table S1 (``V[Phi(g)]``: the epistemic variance of its Eq. 9):

=====================================  ===========================  =========================================
rule                                   champion                     challenger
=====================================  ===========================  =========================================
Dueling UCB (Benavoli et al. 2020)     ``x* = argmax_X mu_f``       ``argmax mu_g(x, x*) + beta sigma_g(x, x*)``
EI (Brochu et al. 2010)                ``x** = argmax_{X_t} mu_f``  ``argmax E[(f(x) - mu_f(x**))_+]``
Bivariate EI (Nielsen et al. 2014)     ``x**``                      ``argmax E[(f(x) - f(x**))_+]``
EIIG (Benavoli et al. 2020)            ``argmax_X mu_f``            ``argmax k log mu_c(x, x*) - I(c, g | x*, x)``
EIIG+I (ours: the information added)   ``argmax_X mu_f``            ``argmax k log mu_c(x, x*) + I(c, g | x*, x)``
Dueling TS (Benavoli et al. 2020)      ``argmax_X mu_f``            maximiser of a posterior sample of ``f``
Duel TS (González et al. 2017)         maximiser of a sample        ``argmax V[Phi(g(x1, x))]``
random duels                           uniform                      uniform
=====================================  ===========================  =========================================

``X_t`` are the options of the duels seen so far (both members). The model is a fitted
:class:`visiontune.reproduction.gp.PreferenceGP`; ``f`` is the latent utility (``predict_value``) and
``g(x, x') = f(x) - f(x')`` the duel's latent (``predict``). A duel never compares a point
with itself: a challenger within ``1e-6`` box widths of the champion is replaced by a uniform
draw (only possible when the posterior is flat).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune._validate import check_rng, finite_array
from visiontune.errors import InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.binary_policies import (
    Data,
    OptimiserSettings,
    Problem,
    Query,
    check_n_initial,
    n_answers,
    sample_optimiser,
    uniform_in_box,
)
from visiontune.reproduction.acquisition.preferential import (
    check_preferential_problem,
    duel_options,
    duel_query,
    preference_solution,
    random_duel,
    sample_maxima,
)
from visiontune.reproduction.gp import moments

__all__ = [
    "BETA_DUELING_UCB",
    "BivariateEI",
    "DuelBALD",
    "DuelTS",
    "DuelingTS",
    "DuelingUCB",
    "EIIG",
    "PreferentialEI",
    "RandomDuel",
    "bivariate_ei",
    "challenge_variance",
    "dueling_ucb",
    "eiig",
    "expected_improvement",
    "sample_maxima",
    "training_champion",
]

#: ``Phi^-1(0.975)``: the exploration constant of dueling UCB in the authors' toolbox (docs/design.md).
BETA_DUELING_UCB = float(ndtri(0.975))
_PHI0 = 1.0 / np.sqrt(2.0 * np.pi)


def _pdf(z):
    return _PHI0 * np.exp(-0.5 * z * z)


# --------------------------------------------------------------------------- acquisitions


def _utility(model, problem: Problem, X, grad: bool):
    """``mu_f, var_f`` of the utility at options ``(s0, x)``, ``X (m, d)``; with x-gradients if ``grad``."""
    opts = duel_options(problem, problem.reference_context, X)
    if not grad:
        mu, var = model.predict_value(opts)
        return mu, np.maximum(var, 0.0), None, None
    mu, var, dmu, dvar = model.predict_value_with_grad(opts)
    c = problem.c
    return mu, np.maximum(var, 0.0), dmu[:, c:], dvar[:, c:]


def _duel(model, problem: Problem, X, other, grad: bool):
    """Latent ``g(x, other)`` of the duels ``[(s0, x), (s0, other)]`` for rows ``x`` of ``X (m, d)``:
    ``(mu (m,), var (m,), dmu (m, d), dvar (m, d))``, gradients w.r.t. ``x`` (None without ``grad``)."""
    s0 = problem.reference_context
    duels = np.column_stack([duel_options(problem, s0, X), duel_options(problem, s0, np.broadcast_to(other, X.shape))])
    if not grad:
        mu, var = model.predict(duels)
        return mu, np.maximum(var, 0.0), None, None
    mu, var, dmu, dvar = model.predict_with_grad(duels)
    c, d = problem.c, problem.d
    return mu, np.maximum(var, 0.0), dmu[:, c : c + d], dvar[:, c : c + d]


def _sd_and_half_inverse(var):
    sd = np.sqrt(np.maximum(var, 1e-300))
    return sd, np.where(var > 0, 0.5 / sd, 0.0)


def dueling_ucb(model, problem: Problem, X, champion, beta: float = BETA_DUELING_UCB, *, grad: bool = True):
    """``mu_g(x, x*) + beta sigma_g(x, x*)``: the UCB of the duel's latent ``g(x, x*) = f(x) - f(x*)``
    against the champion ``x* (d,)``, at challengers ``X (m, d)`` (Benavoli et al. 2020; Fauvel & Chalk
    (binary/preferential BO), table S1).

    Table S1 prints ``mu_f(x) + beta sigma_f(x)`` with the marginal ``sigma_f``; the authors' toolbox
    (and Benavoli et al.) take the UCB of the difference. The two means differ by the constant
    ``mu_f(x*)``, but ``sigma_g^2 = sigma_f^2(x) + sigma_f^2(x*) - 2 cov(f(x), f(x*))`` vanishes at
    ``x = x*``, which keeps the challenger away from the champion; the marginal ``sigma_f`` does not,
    and its challengers sat next to the champion (uninformative duels, worse than random duels on
    Fauvel & Chalk (binary/preferential BO), table 2). Returns ``values (m,)`` or ``(values, grads (m, d))``.
    """
    mu, var, dmu, dvar = _duel(model, problem, X, champion, grad)
    sd, half = _sd_and_half_inverse(var)
    values = mu + beta * np.sqrt(var)
    if not grad:
        return values
    return values, dmu + (beta * half)[:, None] * dvar


def _ei_gaussian(mu, var):
    """``E[(Y)_+]`` for ``Y ~ N(mu, var)``: ``mu Phi(mu/sigma) + sigma phi(mu/sigma)`` and its
    derivatives w.r.t. ``mu`` (``Phi(z)``) and ``var`` (``phi(z) / (2 sigma)``)."""
    sd, half = _sd_and_half_inverse(var)
    z = mu / sd
    cdf, pdf = ndtr(z), _pdf(z)
    ei = np.where(var > 0, mu * cdf + sd * pdf, np.maximum(mu, 0.0))
    d_mu = np.where(var > 0, cdf, (mu > 0).astype(float))
    return np.maximum(ei, 0.0), d_mu, pdf * half


def expected_improvement(model, problem: Problem, X, incumbent: float, *, grad: bool = True):
    """``EI(x) = E[(f(x) - tau)_+] = (mu - tau) Phi(z) + sigma phi(z)``, ``z = (mu - tau)/sigma``,
    with the marginal utility ``f(x) ~ N(mu_f, sigma_f^2)`` and ``tau = incumbent`` (Brochu et al. 2010;
    Fauvel & Chalk (binary/preferential BO), table S1: ``tau = mu_f(x**)``). ``X (m, d)`` -> ``values (m,)`` or
    ``(values, grads (m, d))``."""
    tau = float(finite_array("incumbent", incumbent))
    mu, var, dmu, dvar = _utility(model, problem, X, grad)
    ei, e_mu, e_var = _ei_gaussian(mu - tau, var)
    if not grad:
        return ei
    return ei, e_mu[:, None] * dmu + e_var[:, None] * dvar


def bivariate_ei(model, problem: Problem, X, incumbent, *, grad: bool = True):
    """``BEI(x) = E[(f(x) - f(x**))_+]`` under the joint posterior of ``(f(x), f(x**))``
    (Nielsen et al. 2014; Fauvel & Chalk (binary/preferential BO), table S1): ``g = f(x) - f(x**) ~ N(mu_g, sigma_g^2)``
    is the duel's latent, so ``BEI = mu_g Phi(mu_g/sigma_g) + sigma_g phi(mu_g/sigma_g)``. Zero at ``x = x**``.
    ``incumbent``: ``x** (d,)``; ``X (m, d)`` -> ``values (m,)`` or ``(values, grads (m, d))``."""
    mu, var, dmu, dvar = _duel(model, problem, X, incumbent, grad)
    ei, e_mu, e_var = _ei_gaussian(mu, var)
    if not grad:
        return ei
    return ei, e_mu[:, None] * dmu + e_var[:, None] * dvar


def eiig(model, problem: Problem, X, champion, k: float = 0.5, information_weight: float = -1.0, *, grad: bool = True):
    """``k log mu_c(x, x*) + w I(c, g | x*, x)`` (Benavoli et al. 2020, "EI with information gain";
    Fauvel & Chalk (binary/preferential BO), table S1): ``mu_c(x, x*) = Phi(mu_g / sqrt(1 + sigma_g^2))`` the
    probability that ``x`` beats the champion (Fauvel & Chalk (binary/preferential BO), Eq. 3), ``I`` the BALD
    information of the duel's answer (Houlsby 2011, bits) and ``w = information_weight``.

    Table S1 prints ``k log mu_c - I`` and the authors' toolbox maximises it with ``k = 0.5``: the
    defaults, the paper's rule. Against the champion ``x* = argmax mu_f`` we have ``mu_g <= 0``, so
    ``mu_c <= 1/2`` and ``I >= 0``: its maximum is ``k ln(1/2)`` at ``x = x*``, a duel of the
    champion with (a near copy of) itself, the pathology Fauvel & Chalk (binary/preferential BO), §5.2 names for EI.
    Here the duel guard draws a uniform challenger where the optimiser lands on ``x*`` exactly: on the first 10
    functions of Fauvel & Chalk (binary/preferential BO), table 2, 60% of its duels are near copies, the rest champion
    against a uniform point (``benchmarks/duel_spread.py``). ``w = +1`` (the ``EIIG+I`` rule, with ``k = 0.1``) rewards
    the information instead: exploitation plus exploration (1% near copies).
    ``X (m, d)``, ``champion (d,)`` -> ``values (m,)`` or ``(values, grads (m, d))``.
    """
    mu, var, dmu, dvar = _duel(model, problem, X, champion, grad)
    if not grad:
        p = moments.predictive_probability(mu, var)
        return k * np.log(np.maximum(p, 1e-300)) + information_weight * moments.bald(mu, var)
    p, p_mu, p_var = moments.predictive_probability(mu, var, grad=True)
    i, i_mu, i_var = moments.bald(mu, var, grad=True)
    p = np.maximum(p, 1e-300)
    values = k * np.log(p) + information_weight * i
    g_mu, g_var = k * p_mu / p + information_weight * i_mu, k * p_var / p + information_weight * i_var
    return values, g_mu[:, None] * dmu + g_var[:, None] * dvar


def challenge_variance(model, problem: Problem, X, champion, *, grad: bool = True):
    """``V[Phi(g(x1, x))]`` at challengers ``X (m, d)`` for the champion ``x1 (d,)`` (Fauvel & Chalk
    (binary/preferential BO), Eq. 9, 16)."""
    s0 = problem.reference_context
    duels = np.column_stack(
        [duel_options(problem, s0, np.broadcast_to(champion, X.shape)), duel_options(problem, s0, X)]
    )
    if not grad:
        mu, var = model.predict(duels)
        return moments.epistemic_variance(mu, np.maximum(var, 0.0))
    start = 2 * problem.c + problem.d
    mu, var, dmu, dvar = model.predict_with_grad(duels)
    v, v_mu, v_var = moments.epistemic_variance(mu, np.maximum(var, 0.0), grad=True)
    return v, v_mu[:, None] * dmu[:, start:] + v_var[:, None] * dvar[:, start:]


# --------------------------------------------------------------------------- champions


def training_champion(model, problem: Problem) -> np.ndarray | None:
    """``x** = argmax mu_f`` over the options of the duels seen so far (Fauvel & Chalk (binary/preferential BO),
    table S1), at the reference context; ``None`` with no data. Returns ``(d,)``."""
    duels = np.asarray(model.X, float)
    if duels.shape[0] == 0:
        return None
    c, d = problem.c, problem.d
    options = np.vstack([duels[:, c : c + d], duels[:, 2 * c + d :]])
    mu = model.predict_value(duel_options(problem, problem.reference_context, options))[0]
    return options[int(np.argmax(mu))].copy()


def same_point(problem: Problem, a, b) -> bool:
    tol = 1e-6 * np.maximum(problem.box[:, 1] - problem.box[:, 0], 1e-12)
    return bool(np.all(np.abs(np.asarray(a) - np.asarray(b)) <= tol))


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True, kw_only=True)
class _Challenge:
    """Champion, then the challenger maximising :meth:`_acquisition` (subclasses)."""

    n_initial: int = 2
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)
    context_optimiser: OptimiserSettings = field(
        default_factory=lambda: OptimiserSettings(n_candidates=128, n_starts=4)
    )

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def _champion(self, model, problem: Problem, rng) -> np.ndarray:
        return preference_solution(model, problem, rng, optimiser=self.optimiser)

    def _acquisition(self, model, problem: Problem, champion, grad: bool):  # pragma: no cover - abstract
        raise NotImplementedError

    def _challenger(self, model, problem: Problem, champion, rng) -> np.ndarray:
        return self.optimiser.run(
            lambda X: self._acquisition(model, problem, champion, X, True),
            problem.box,
            rng,
            values_only=lambda X: self._acquisition(model, problem, champion, X, False),
        )[0]

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, type(self).__name__)
        if n_answers(data) < self.n_initial:
            return random_duel(problem, rng)
        champion = self._champion(model, problem, rng)
        challenger = self._challenger(model, problem, champion, rng)
        if same_point(problem, champion, challenger):
            challenger = uniform_in_box(problem.box, rng)
        return duel_query(model, problem, champion, challenger, rng, self.context_optimiser)


@dataclass(frozen=True, kw_only=True)
class DuelingUCB(_Challenge):
    """Dueling UCB (Benavoli et al. 2020; Fauvel & Chalk (binary/preferential BO), table 2, S1): champion
    ``x* = argmax mu_f``, challenger ``argmax mu_g(x, x*) + beta sigma_g(x, x*)`` (latent UCB of the duel against the
    champion, ``beta = Phi^-1(0.975)``; see :func:`dueling_ucb` for why not the marginal ``sigma_f``)."""

    beta: float = BETA_DUELING_UCB

    def __post_init__(self):
        super().__post_init__()
        b = finite_array("beta", self.beta)
        if b.ndim or b < 0:
            raise InvalidInputError(f"beta: expected one number >= 0, got {b.tolist()}")

    def _acquisition(self, model, problem, champion, X, grad):
        return dueling_ucb(model, problem, X, champion, self.beta, grad=grad)


@dataclass(frozen=True, kw_only=True)
class PreferentialEI(_Challenge):
    """EI (Brochu et al. 2010; Fauvel & Chalk (binary/preferential BO), table 2, S1): champion ``x** = argmax mu_f``
    over the options seen, challenger ``argmax E[(f(x) - mu_f(x**))_+]``. With no data the champion is
    ``argmax mu_f``."""

    def _champion(self, model, problem, rng):
        best = training_champion(model, problem)
        return super()._champion(model, problem, rng) if best is None else best

    def _acquisition(self, model, problem, champion, X, grad):
        tau = float(model.predict_value(duel_options(problem, problem.reference_context, champion[None, :]))[0][0])
        return expected_improvement(model, problem, X, tau, grad=grad)


@dataclass(frozen=True, kw_only=True)
class BivariateEI(PreferentialEI):
    """Bivariate EI (Nielsen et al. 2014; Fauvel & Chalk (binary/preferential BO), table 2, S1): champion ``x**``,
    challenger ``argmax E[(f(x) - f(x**))_+]`` under the joint posterior."""

    def _acquisition(self, model, problem, champion, X, grad):
        return bivariate_ei(model, problem, X, champion, grad=grad)


@dataclass(frozen=True, kw_only=True)
class EIIG(_Challenge):
    """EI with information gain (Benavoli et al. 2020; Fauvel & Chalk (binary/preferential BO), table 2, S1): champion
    ``argmax mu_f``, challenger ``argmax k log mu_c(x, x*) + w I(c, g | x*, x)``; the paper's rule has ``k = 0.5``,
    ``w = -1`` (the defaults), ``EIIG+I`` has ``k = 0.1``, ``w = +1`` (see :func:`eiig`)."""

    k: float = 0.5
    information_weight: float = -1.0

    def __post_init__(self):
        super().__post_init__()
        k = finite_array("k", self.k)
        if k.ndim or k < 0:
            raise InvalidInputError(f"k: expected one number >= 0, got {k.tolist()}")
        w = finite_array("information_weight", self.information_weight)
        if w.ndim:
            raise InvalidInputError(f"information_weight: expected one number, got {w.tolist()}")

    def _acquisition(self, model, problem, champion, X, grad):
        return eiig(model, problem, X, champion, self.k, self.information_weight, grad=grad)


@dataclass(frozen=True, kw_only=True)
class DuelingTS(_Challenge):
    """Dueling Thompson sampling (Benavoli et al. 2020; Fauvel & Chalk (binary/preferential BO), table 2, S1): champion
    ``argmax mu_f``, challenger the maximiser of one approximate posterior sample of ``f``; a sample whose maximum
    is the champion is redrawn (at most ``max_redraws`` times, then uniform)."""

    n_basis: int = 4096
    max_redraws: int = 5
    sample_settings: OptimiserSettings = field(default_factory=sample_optimiser)

    def _challenger(self, model, problem, champion, rng):
        for _ in range(self.max_redraws + 1):
            x = sample_maxima(model, problem, rng, 1, self.n_basis, self.sample_settings)[0]
            if not same_point(problem, x, champion):
                return x
        return uniform_in_box(problem.box, rng)


@dataclass(frozen=True, kw_only=True)
class DuelTS(_Challenge):
    """Duel Thompson sampling as in Fauvel & Chalk (binary/preferential BO), table S1 (after González et al. 2017):
    first member the maximiser of a posterior sample of ``f``, challenger ``argmax V[Phi(g(x1, x))]`` (Fauvel & Chalk
    (binary/preferential BO), Eq. 9). (González's own version maximises the sample's soft-Copeland score:
    ``PBO-DTS``.)"""

    n_basis: int = 4096
    sample_settings: OptimiserSettings = field(default_factory=sample_optimiser)

    def _champion(self, model, problem, rng):
        return sample_maxima(model, problem, rng, 1, self.n_basis, self.sample_settings)[0]

    def _acquisition(self, model, problem, champion, X, grad):
        return challenge_variance(model, problem, X, champion, grad=grad)


@dataclass(frozen=True)
class RandomDuel:
    """Both members uniform in the box (and ``s`` uniform in the context box): Fauvel & Chalk (binary/preferential BO),
    table 2 "Random"."""

    n_initial: int = 0

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, "RandomDuel")
        return random_duel(problem, rng)


@dataclass(frozen=True, kw_only=True)
class DuelBALD:
    """``(s, x1, x2) = argmax I(c, g | s, x1, x2)`` jointly (Houlsby et al. 2011; the "BALD" control
    of Fauvel & Chalk (contextual BO), §4.2, table 2): BALD of the duel ``[(s, x1), (s, x2)]`` over ``S x X x X``
    (``X x X`` without a context). ``I = 0`` when ``x1 = x2``, so the members differ."""

    n_initial: int = 2
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, "DuelBALD")
        if n_answers(data) < self.n_initial:
            return random_duel(problem, rng)
        c, d = problem.c, problem.d
        D = c + d
        box = np.vstack([problem.box, problem.box] if c == 0 else [problem.context_box, problem.box, problem.box])

        def duels(Z):
            S = Z[:, :c]
            return np.column_stack([S, Z[:, c : c + d], S, Z[:, c + d :]])

        def fn(Z):
            v, g = F.bald(model, duels(Z))
            return v, np.column_stack([g[:, :c] + g[:, D : D + c], g[:, c:D], g[:, D + c :]])

        z = self.optimiser.run(fn, box, rng, values_only=lambda Z: F.bald(model, duels(Z), grad=False))[0]
        x, x2 = z[c : c + d], z[c + d :]
        if same_point(problem, x, x2):
            x2 = uniform_in_box(problem.box, rng)
        return Query(x=x, x2=x2, s=z[:c] if c else None)
