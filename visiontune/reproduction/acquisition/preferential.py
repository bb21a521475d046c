"""Preferential BO policies (duels): Maximally Uncertain Challenge and KernelSelfSparring,
and their contextual versions MUC-ALD and KSS-ALD (Fauvel & Chalk (contextual BO), §3.4). The other baselines
of Fauvel & Chalk (binary/preferential BO), table 2 are in :mod:`~visiontune.reproduction.acquisition.dueling`,
González's rules in
:mod:`~visiontune.reproduction.acquisition.gonzalez`, batch rules in :mod:`~visiontune.reproduction.acquisition.batch`.

The model is a fitted :class:`visiontune.reproduction.gp.PreferenceGP`: latent ``g(o, o') = f(o) - f(o')``
on duels ``(m, 2D)`` (``predict_with_grad``), latent utility ``f`` on options ``(m, D)``
(``predict_value``, ``predict_value_with_grad``). An option is ``x`` (D = d) or, for a
contextual problem, ``(s, x)`` (D = c + d, context first), and a contextual duel compares
``(s, x)`` with ``(s, x2)`` at one context ``s`` (Fauvel & Chalk (contextual BO), Eq. 11). The duel ``(x, x2)`` is
chosen at the reference context; then ``s = argmax_s I(c, g | s, x, x2)`` (BALD on the duel). A policy
returns ``Query(x, s, x2)``; ``x2`` is never ``x``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from visiontune._validate import check_rng
from visiontune.errors import ConfigurationError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.binary_policies import (
    Data,
    OptimiserSettings,
    Problem,
    Query,
    n_answers,
    sample_optimiser,
    uniform_in_box,
)
from visiontune.reproduction.acquisition.sample_search import SampleSearch
from visiontune.reproduction.gp import moments
from visiontune.reproduction.gp.sampling import sample_posterior_functions

__all__ = [
    "KSS",
    "MUC",
    "preference_solution",
    "sample_maxima",
]  # MUC-ALD / KSS-ALD: the same classes on a contextual problem


def check_preferential_problem(problem: Problem, who: str) -> None:
    if problem.scenario not in ("preferential", "contextual-preferential"):
        raise ConfigurationError(f"{who}: serves preferential problems, got {problem.scenario!r}")


def duel_options(problem: Problem, s, X) -> np.ndarray:
    """Options ``(s, x)`` (m, c + d) for ``X (m, d)`` at the context ``s (c,)`` (``X`` itself if c = 0)."""
    if problem.c == 0:
        return X
    return np.column_stack([np.broadcast_to(s, (X.shape[0], problem.c)), X])


def random_duel(problem: Problem, rng) -> Query:
    s = uniform_in_box(problem.context_box, rng) if problem.c else None
    return Query(x=uniform_in_box(problem.box, rng), x2=uniform_in_box(problem.box, rng), s=s)


def duel_query(
    model, problem: Problem, x, x2, rng, optimiser: OptimiserSettings, random_context: bool = False
) -> Query:
    """Query for the duel ``(x, x2)``; contextual: ``s = argmax_s BALD(g((s, x), (s, x2)))`` (Fauvel & Chalk (contextual
    BO), §3.4), or ``s`` uniform in the context box with ``random_context`` (the controls of Fauvel & Chalk (contextual
    BO), §4.2)."""
    if problem.c == 0:
        return Query(x=x, x2=x2)
    if random_context:
        return Query(x=x, x2=x2, s=uniform_in_box(problem.context_box, rng))

    c, D = problem.c, problem.c + problem.d

    def duels(S):
        return np.column_stack(
            [S, np.broadcast_to(x, (len(S), problem.d)), S, np.broadcast_to(x2, (len(S), problem.d))]
        )

    def fn(S):
        v, g = F.bald(model, duels(S))
        return v, g[:, :c] + g[:, D : D + c]

    s = optimiser.run(fn, problem.context_box, rng, values_only=lambda S: F.bald(model, duels(S), grad=False))[0]
    return Query(x=x, x2=x2, s=s)


def preference_solution(model, problem: Problem, rng, *, optimiser: OptimiserSettings | None = None) -> np.ndarray:
    """``argmax_x mu_f(s0, x)``, the posterior mean of the utility at the reference context
    (Fauvel & Chalk (binary/preferential BO) §4.2, MUC's champion; docs/design.md)."""
    optimiser = optimiser or OptimiserSettings()
    s0, c = problem.reference_context, problem.c
    if hasattr(model, "predict_value_mean_with_grad"):  # mean only: no variance, no triangular solve (speed)

        def fn(X):
            mu, dmu = model.predict_value_mean_with_grad(duel_options(problem, s0, X))
            return mu, dmu[:, c:]

        def values(X):
            return model.predict_value_mean(duel_options(problem, s0, X))
    else:

        def fn(X):
            mu, _, dmu, _ = model.predict_value_with_grad(duel_options(problem, s0, X))
            return mu, dmu[:, c:]

        def values(X):
            return model.predict_value(duel_options(problem, s0, X))[0]

    return optimiser.run(fn, problem.box, check_rng(rng), values_only=values)[0]


def _challenge_moments(model, problem: Problem, champion):
    """``(predict(X) -> (mu, var), predict_with_grad(X) -> (mu, var, dmu (m, d), dvar (m, d)))`` of
    ``g(x*, x)`` for the duels ``[(s0, x*), (s0, x)]``, gradients w.r.t. the challenger's lens
    ``x`` only. Uses :meth:`PreferenceGP.challenge` (the champion's part once per decision,
    one base-kernel call per evaluation) where the model has it, else the duel predictions."""
    s0, c = problem.reference_context, problem.c
    if hasattr(model, "challenge"):
        duel = model.challenge(duel_options(problem, s0, np.asarray(champion)[None, :])[0])

        def predict_with_grad(X):
            mu, var, dmu, dvar = duel.predict_with_grad(duel_options(problem, s0, X))
            return mu, var, dmu[:, c:], dvar[:, c:]

        return (lambda X: duel.predict(duel_options(problem, s0, X))), predict_with_grad
    start = 2 * problem.c + problem.d  # first x column of option 2

    def duels(X):
        return np.column_stack(
            [duel_options(problem, s0, np.broadcast_to(champion, X.shape)), duel_options(problem, s0, X)]
        )

    def predict_with_grad(X):
        mu, var, dmu, dvar = model.predict_with_grad(duels(X))
        return mu, var, dmu[:, start:], dvar[:, start:]

    return (lambda X: model.predict(duels(X))), predict_with_grad


def sample_maxima(model, problem: Problem, rng, n_samples: int, n_basis: int, optimiser: OptimiserSettings):
    """Maximisers ``(n_samples, d)`` of independent approximate posterior samples of the utility
    at the reference context (Fauvel & Chalk (binary/preferential BO), supp. D;
    :func:`visiontune.reproduction.gp.sampling.sample_posterior_functions`)."""
    s0, c = problem.reference_context, problem.c
    samples = sample_posterior_functions(model, problem.input_box, n_samples, rng, n_basis=n_basis)
    return np.array(
        [
            optimiser.run(
                lambda X, f=f: (
                    f.value(duel_options(problem, s0, X)),
                    f.value_grad(duel_options(problem, s0, X))[:, c:],
                ),
                problem.box,
                rng,
                values_only=lambda X, f=f: f.value(duel_options(problem, s0, X)),
            )[0]
            for f in samples
        ]
    )


@dataclass(frozen=True, kw_only=True)
class MUC:
    """Maximally Uncertain Challenge (Fauvel & Chalk (binary/preferential BO), §4.2, table S1): champion
    ``x* = argmax mu_f``, challenger ``x2 = argmax_x V[Phi(g(x*, x))]`` (epistemic variance of the duel's outcome,
    Fauvel & Chalk (binary/preferential BO), Eq. 9). ``V = 0`` at ``x = x*`` (``g(x*, x*) = 0`` surely), so
    ``x2 != x*``. Contextual problems: ``s`` by BALD on the duel (MUC-ALD), or uniform with ``random_context``."""

    n_initial: int = 2
    random_context: bool = False
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)
    context_optimiser: OptimiserSettings = field(
        default_factory=lambda: OptimiserSettings(n_candidates=128, n_starts=4)
    )

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, "MUC")
        if n_answers(data) < self.n_initial:
            return random_duel(problem, rng)
        champion = preference_solution(model, problem, rng, optimiser=self.optimiser)
        predict, predict_with_grad = _challenge_moments(model, problem, champion)

        def fn(X):
            mu, var, dmu, dvar = predict_with_grad(X)
            v, v_mu, v_var = moments.epistemic_variance(mu, np.maximum(var, 0.0), grad=True)
            return v, v_mu[:, None] * dmu + v_var[:, None] * dvar

        def values(X):
            mu, var = predict(X)
            return moments.epistemic_variance(mu, np.maximum(var, 0.0))

        challenger = self.optimiser.run(fn, problem.box, rng, values_only=values)[0]
        if np.array_equal(challenger, champion):  # only if the posterior is flat everywhere
            challenger = uniform_in_box(problem.box, rng)
        return duel_query(model, problem, champion, challenger, rng, self.context_optimiser, self.random_context)


@dataclass(frozen=True, kw_only=True)
class KSS:
    """KernelSelfSparring (Sui & Burdick 2017; Fauvel & Chalk (binary/preferential BO), table S1): the maximisers of two
    independent approximate posterior samples of the utility; a duel whose two maxima coincide is redrawn
    (authors' toolbox), at most ``max_redraws`` times, then the second option is uniform.
    Contextual problems: ``s`` by BALD on the duel (KSS-ALD), or uniform with ``random_context``."""

    n_initial: int = 2
    random_context: bool = False
    n_basis: int = 4096
    max_redraws: int = 5
    optimiser: OptimiserSettings | SampleSearch = field(default_factory=sample_optimiser)
    context_optimiser: OptimiserSettings = field(
        default_factory=lambda: OptimiserSettings(n_candidates=128, n_starts=4)
    )

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        check_preferential_problem(problem, "KSS")
        if n_answers(data) < self.n_initial:
            return random_duel(problem, rng)
        tol = 1e-6 * np.maximum(problem.box[:, 1] - problem.box[:, 0], 1e-12)
        for _ in range(self.max_redraws + 1):
            maxima = sample_maxima(model, problem, rng, 2, self.n_basis, self.optimiser)
            if np.any(np.abs(maxima[0] - maxima[1]) > tol):
                return duel_query(
                    model, problem, maxima[0], maxima[1], rng, self.context_optimiser, self.random_context
                )
        return duel_query(
            model,
            problem,
            maxima[0],
            uniform_in_box(problem.box, rng),
            rng,
            self.context_optimiser,
            self.random_context,
        )
