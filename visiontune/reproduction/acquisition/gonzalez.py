"""Preferential BO of González et al. 2017: soft-Copeland score, Condorcet winner,
and the duel rules PBO-PE, PBO-CEI and PBO-DTS.

Soft-Copeland score (González et al. 2017, Eq. 3, Monte Carlo form Eq. 5) with our probit duel model
``P(x beats x') = E[Phi(g(x, x'))] = mu_c([x, x'])`` (Fauvel & Chalk (binary/preferential BO), Eq. 3; González uses a
logistic link):

    C(x) = Vol(X)^-1 int_X mu_c([x, x']) dx'  ~=  (1/M) sum_k mu_c([x, x_k])

over ``M`` landmarks ``x_k`` (scrambled Sobol points of the box, seeded from the rng; González
draws them uniformly). The Condorcet winner is ``argmax_x C(x)`` (González et al. 2017, §2.2).

- PBO-PE (González et al. 2017, §3.1): the duel ``[x, x']`` maximising the epistemic variance
  ``V[Phi(g(x, x'))]`` jointly over ``X x X``. González estimates it by Monte Carlo; here it is
  the closed form of Fauvel & Chalk (binary/preferential BO), Eq. 9.
- PBO-CEI (González et al. 2017, §3.2, Eq. 6): ``pi([x, x']) (c*_x - c*)_+ + pi([x', x]) (c*_x' - c*)_+`` with
  ``c*`` the Condorcet winner's score and ``c*_x`` (``c*_x'``) the score after the duel is
  added with ``x`` (``x'``) winning; each look-ahead is a refit. Discretised like cBKG: the
  outer maximum over Sobol candidate duels, the inner over a reference set. Non-contextual only.
- PBO-DTS (González et al. 2017, §3.3): ``x = argmax`` of the soft-Copeland score of one posterior sample
  ``C~(x) = (1/M) sum_k Phi(f~(x) - f~(x_k))``, then ``x' = argmax V[Phi(g(x, x'))]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from visiontune._validate import check_int, check_rng, points
from visiontune.errors import ConfigurationError
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
from visiontune.reproduction.acquisition.dueling import challenge_variance, same_point
from visiontune.reproduction.acquisition.optimize import sobol_points
from visiontune.reproduction.acquisition.preferential import (
    check_preferential_problem,
    duel_options,
    duel_query,
    random_duel,
)
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.sampling import sample_posterior_functions

__all__ = [
    "PBOCEI",
    "PBODTS",
    "PBOPE",
    "condorcet_winner",
    "copeland_expected_improvement",
    "sampled_copeland",
    "soft_copeland",
]


def _landmarks(problem: Problem, landmarks) -> np.ndarray:
    L = points("landmarks", landmarks, dim=problem.d)
    return L


def soft_copeland(model, problem: Problem, X, landmarks, *, grad: bool = False):
    """Soft-Copeland score ``C(x) = (1/M) sum_k mu_c([x, x_k])`` (González et al. 2017, Eq. 3, 5) at ``X (m, d)``,
    at the reference context; ``landmarks (M, d)``. Returns ``(m,)`` or ``((m,), grads (m, d))``."""
    X = points("X", X, dim=problem.d)
    L = _landmarks(problem, landmarks)
    m, M, s0 = X.shape[0], L.shape[0], problem.reference_context
    A = duel_options(problem, s0, np.repeat(X, M, axis=0))
    B = duel_options(problem, s0, np.tile(L, (m, 1)))
    duels = np.column_stack([A, B])
    if not grad:
        mu, var = model.predict(duels)
        return moments.predictive_probability(mu, np.maximum(var, 0.0)).reshape(m, M).mean(axis=1)
    mu, var, dmu, dvar = model.predict_with_grad(duels)
    p, p_mu, p_var = moments.predictive_probability(mu, np.maximum(var, 0.0), grad=True)
    c, d = problem.c, problem.d
    g = p_mu[:, None] * dmu[:, c : c + d] + p_var[:, None] * dvar[:, c : c + d]
    return p.reshape(m, M).mean(axis=1), g.reshape(m, M, d).mean(axis=1)


def sampled_copeland(sample, problem: Problem, X, landmarks, *, grad: bool = False):
    """Soft-Copeland score of one posterior sample ``f~`` of the utility (González et al. 2017, §3.3):
    ``C~(x) = (1/M) sum_k Phi(f~(x) - f~(x_k))`` at ``X (m, d)``; ``sample`` a
    :class:`visiontune.reproduction.gp.sampling.PosteriorSample` of a preference model."""
    from scipy.special import ndtr

    X = points("X", X, dim=problem.d)
    L = _landmarks(problem, landmarks)
    s0 = problem.reference_context
    fx = sample.value(duel_options(problem, s0, X))
    fl = sample.value(duel_options(problem, s0, L))
    z = fx[:, None] - fl[None, :]
    values = ndtr(z).mean(axis=1)
    if not grad:
        return values
    w = (np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)).mean(axis=1)
    return values, w[:, None] * sample.value_grad(duel_options(problem, s0, X))[:, problem.c :]


def condorcet_winner(
    model, problem: Problem, rng, *, n_landmarks: int = 64, optimiser: OptimiserSettings | None = None
):
    """``(x_c (d,), C(x_c))``: the argmax of the soft-Copeland score (González et al. 2017, §2.2), landmarks drawn from
    ``rng``."""
    optimiser = optimiser or OptimiserSettings(n_candidates=128, n_starts=4)
    L = sobol_points(problem.box, n_landmarks, check_rng(rng))
    return optimiser.run(
        lambda X: soft_copeland(model, problem, X, L, grad=True),
        problem.box,
        rng,
        values_only=lambda X: soft_copeland(model, problem, X, L),
    )


def _refit(model, duel: np.ndarray, answer: float):
    cls = type(model)
    duels = np.vstack([np.asarray(model.X, float).reshape(-1, duel.size), duel[None, :]])
    return cls(
        model.base_kernel,
        duels,
        np.append(model.y, answer),
        inference=model.inference,
        warm_start=model.warm_start_state,
    )


def copeland_expected_improvement(model, problem: Problem, duels, reference, landmarks) -> np.ndarray:
    """PBO-CEI ``(m,)`` at duels ``(m, 2d)`` (González et al. 2017, Eq. 6 and its closed form):
    ``pi([x, x']) (c*_x - c*)_+ + (1 - pi([x, x'])) (c*_x' - c*)_+``, ``pi = mu_c`` of the duel,
    ``c* = max_{reference} C``, ``c*_x`` (``c*_x'``) the same maximum after refitting with the
    duel won by ``x`` (``x'``). ``reference (r, d)``, ``landmarks (M, d)``. Non-contextual problems."""
    if problem.c:
        raise ConfigurationError("PBO-CEI: implemented for non-contextual preferential problems only")
    Z = points("duels", duels, dim=2 * problem.d)
    R = points("reference", reference, dim=problem.d)
    L = _landmarks(problem, landmarks)
    best_now = float(np.max(soft_copeland(model, problem, R, L)))
    mu, var = model.predict(Z)
    p = moments.predictive_probability(mu, np.maximum(var, 0.0))
    out = np.empty(len(Z))
    for i, z in enumerate(Z):
        won = [float(np.max(soft_copeland(_refit(model, z, a), problem, R, L))) for a in (1.0, 0.0)]
        out[i] = p[i] * max(won[0] - best_now, 0.0) + (1.0 - p[i]) * max(won[1] - best_now, 0.0)
    return out


@dataclass(frozen=True, kw_only=True)
class _Gonzalez:
    n_initial: int = 2
    context_optimiser: OptimiserSettings = field(
        default_factory=lambda: OptimiserSettings(n_candidates=128, n_starts=4)
    )

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def _duel(self, model, problem, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, type(self).__name__)
        if n_answers(data) < self.n_initial:
            return random_duel(problem, rng)
        x, x2 = self._duel(model, problem, rng)
        if same_point(problem, x, x2):
            x2 = uniform_in_box(problem.box, rng)
        return duel_query(model, problem, x, x2, rng, self.context_optimiser)


@dataclass(frozen=True, kw_only=True)
class PBOPE(_Gonzalez):
    """PBO-PE (González et al. 2017, §3.1): the duel ``argmax_{[x, x']} V[Phi(g(x, x'))]`` over ``X x X`` (Fauvel &
    Chalk (binary/preferential BO), Eq. 9)."""

    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def _duel(self, model, problem, rng):
        d, c, s0 = problem.d, problem.c, problem.reference_context
        box = np.vstack([problem.box, problem.box])

        def duels(Z):
            return np.column_stack([duel_options(problem, s0, Z[:, :d]), duel_options(problem, s0, Z[:, d:])])

        def fn(Z):
            mu, var, dmu, dvar = model.predict_with_grad(duels(Z))
            v, v_mu, v_var = moments.epistemic_variance(mu, np.maximum(var, 0.0), grad=True)
            g = v_mu[:, None] * dmu + v_var[:, None] * dvar
            return v, np.column_stack([g[:, c : c + d], g[:, 2 * c + d :]])

        def values(Z):
            mu, var = model.predict(duels(Z))
            return moments.epistemic_variance(mu, np.maximum(var, 0.0))

        z = self.optimiser.run(fn, box, rng, values_only=values)[0]
        return z[:d], z[d:]


@dataclass(frozen=True, kw_only=True)
class PBODTS(_Gonzalez):
    """PBO-DTS (González et al. 2017, §3.3): ``x = argmax`` of the sampled soft-Copeland score :func:`sampled_copeland`
    (one posterior sample, ``n_landmarks`` Sobol landmarks drawn first from the rng), then
    ``x' = argmax V[Phi(g(x, x'))]``."""

    n_basis: int = 4096
    n_landmarks: int = 64
    sample_settings: OptimiserSettings = field(default_factory=sample_optimiser)
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def _duel(self, model, problem, rng):
        L = sobol_points(problem.box, self.n_landmarks, rng)
        f = sample_posterior_functions(model, problem.input_box, 1, rng, n_basis=self.n_basis)[0]
        x = self.sample_settings.run(
            lambda X: sampled_copeland(f, problem, X, L, grad=True),
            problem.box,
            rng,
            values_only=lambda X: sampled_copeland(f, problem, X, L),
        )[0]
        x2 = self.optimiser.run(
            lambda X: challenge_variance(model, problem, X, x),
            problem.box,
            rng,
            values_only=lambda X: challenge_variance(model, problem, X, x, grad=False),
        )[0]
        return x, x2


@dataclass(frozen=True, kw_only=True)
class PBOCEI(_Gonzalez):
    """PBO-CEI (González et al. 2017, §3.2): the best of ``n_candidates`` Sobol duels by
    :func:`copeland_expected_improvement` (reference set: ``n_reference`` Sobol points plus the
    Condorcet winner; ``n_landmarks`` landmarks). Cost: two refits per candidate."""

    n_candidates: int = 32
    n_reference: int = 32
    n_landmarks: int = 32

    def __post_init__(self):
        super().__post_init__()
        for name in ("n_candidates", "n_reference", "n_landmarks"):
            v = getattr(self, name)
            check_int(name, v, lo=1, whole_float=True)

    def _duel(self, model, problem, rng):
        if problem.c:
            raise ConfigurationError("PBO-CEI: implemented for non-contextual preferential problems only")
        L = sobol_points(problem.box, self.n_landmarks, rng)
        winner = condorcet_winner(model, problem, rng, n_landmarks=self.n_landmarks)[0]
        R = np.vstack([sobol_points(problem.box, self.n_reference, rng), winner])
        Z = sobol_points(np.vstack([problem.box, problem.box]), self.n_candidates, rng)
        z = Z[int(np.argmax(copeland_expected_improvement(model, problem, Z, R, L)))]
        return z[: problem.d], z[problem.d :]
