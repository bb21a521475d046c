"""Batch preferential BO (Fauvel & Chalk (binary/preferential BO) §4.3, table 3): the patient ranks ``m >= 3`` options
at once.

A ranking is read as its ``m(m-1)/2`` pairwise duels (Fauvel & Chalk (binary/preferential BO), Eqs. 17-18;
:meth:`visiontune.reproduction.gp.PreferenceGP.from_ranking`), so the model is an ordinary
:class:`~visiontune.reproduction.gp.PreferenceGP`. A batch rule returns ``Query(x=batch[0], x2=batch[1],
batch=batch)`` with ``batch (m, d)`` of distinct options (the problem's scenario is
``batch-preferential``, without a context).

- Batch MUC (Fauvel & Chalk (binary/preferential BO), Eqs. 19-20): champion ``x1 = argmax mu_f``; challengers
  ``(x2, ..., xm)`` jointly maximising ``sum_{i<j} V[Phi(g(x_i, x_j))]`` over all pairs of the batch (Fauvel & Chalk
  (binary/preferential BO), Eq. 9 for each term), one L-BFGS-B search over ``X^(m-1)``. Each term vanishes when two
  members coincide, so the maximiser has distinct members.
- Batch KSS (Sui et al. 2017; Fauvel & Chalk (binary/preferential BO), table 3): the maximisers of ``m`` independent
  posterior samples of the utility; a member equal to an earlier one is redrawn from a fresh sample (at
  most ``max_redraws`` times, then uniform), as the authors' toolbox does for duels.
- Random: ``m`` uniform options (Fauvel & Chalk (binary/preferential BO), table 3 "Random").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from visiontune._validate import check_int, check_rng, points
from visiontune.errors import ConfigurationError, InvalidInputError
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
from visiontune.reproduction.acquisition.dueling import same_point, sample_maxima
from visiontune.reproduction.acquisition.preferential import preference_solution
from visiontune.reproduction.gp import moments

__all__ = ["BatchKSS", "BatchMUC", "RandomBatch", "batch_uncertainty"]


def _check_batch_problem(problem: Problem, who: str) -> None:
    if problem.scenario != "batch-preferential":
        raise ConfigurationError(f"{who}: serves batch-preferential problems, got {problem.scenario!r}")


def batch_uncertainty(model, champion, Z, *, grad: bool = True):
    """``sum_{i<j} V[Phi(g(x_i, x_j))]`` over the batch ``(x1 = champion, Z's members)`` (Fauvel & Chalk
    (binary/preferential BO), Eq. 20).

    ``champion (d,)``; ``Z (k, (m-1) d)``: ``k`` candidate challenger sets, member ``j`` in
    columns ``j d : (j+1) d``. Returns ``(k,)`` or ``((k,), grads (k, (m-1) d))`` (gradient
    w.r.t. the challengers; the champion is held fixed).
    """
    champion = np.asarray(champion, float).reshape(-1)
    d = champion.size
    Z = points("Z", Z)
    if Z.shape[1] % d or Z.shape[1] < 2 * d:
        raise InvalidInputError(f"Z: expected (k, (m-1) d) columns with m >= 3, d = {d}; got {Z.shape[1]}")
    k, m = Z.shape[0], Z.shape[1] // d + 1
    members = [np.broadcast_to(champion, (k, d))] + [Z[:, j * d : (j + 1) * d] for j in range(m - 1)]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    duels = np.vstack([np.column_stack([members[i], members[j]]) for i, j in pairs])
    if not grad:
        mu, var = model.predict(duels)
        return moments.epistemic_variance(mu, np.maximum(var, 0.0)).reshape(len(pairs), k).sum(axis=0)
    mu, var, dmu, dvar = model.predict_with_grad(duels)
    v, v_mu, v_var = moments.epistemic_variance(mu, np.maximum(var, 0.0), grad=True)
    g = (v_mu[:, None] * dmu + v_var[:, None] * dvar).reshape(len(pairs), k, 2 * d)
    grads = np.zeros((k, m, d))
    for p, (i, j) in enumerate(pairs):
        grads[:, i] += g[p, :, :d]
        grads[:, j] += g[p, :, d:]
    return v.reshape(len(pairs), k).sum(axis=0), grads[:, 1:].reshape(k, (m - 1) * d)


def _distinct(problem: Problem, batch: np.ndarray, rng) -> np.ndarray:
    """Replace any member equal to an earlier one by a uniform draw (only with a flat posterior)."""
    batch = batch.copy()
    for j in range(1, len(batch)):
        while any(same_point(problem, batch[j], batch[i]) for i in range(j)):
            batch[j] = uniform_in_box(problem.box, rng)
    return batch


def _query(batch: np.ndarray) -> Query:
    return Query(x=batch[0], x2=batch[1], batch=batch)


def _random_batch(problem: Problem, m: int, rng) -> Query:
    return _query(np.array([uniform_in_box(problem.box, rng) for _ in range(m)]))


@dataclass(frozen=True, kw_only=True)
class BatchMUC:
    """Batch Maximally Uncertain Challenge (Fauvel & Chalk (binary/preferential BO), §4.3, Eqs. 19-20); ``m`` options
    per query."""

    m: int = 3
    n_initial: int = 2
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def __post_init__(self):
        check_int("m", self.m, lo=3, whole_float=True)
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        _check_batch_problem(problem, "BatchMUC")
        if n_answers(data) < self.n_initial:
            return _random_batch(problem, self.m, rng)
        champion = preference_solution(model, problem, rng, optimiser=self.optimiser)
        box = np.tile(problem.box, (self.m - 1, 1))
        z = self.optimiser.run(
            lambda Z: batch_uncertainty(model, champion, Z),
            box,
            rng,
            values_only=lambda Z: batch_uncertainty(model, champion, Z, grad=False),
        )[0]
        batch = np.vstack([champion, z.reshape(self.m - 1, problem.d)])
        return _query(_distinct(problem, batch, rng))


@dataclass(frozen=True, kw_only=True)
class BatchKSS:
    """Batch KernelSelfSparring (Sui et al. 2017; Fauvel & Chalk (binary/preferential BO), table 3): ``m``
    posterior-sample maximisers, members that coincide redrawn (at most ``max_redraws`` times each, then uniform)."""

    m: int = 3
    n_initial: int = 2
    n_basis: int = 4096
    max_redraws: int = 5
    sample_settings: OptimiserSettings = field(default_factory=sample_optimiser)

    def __post_init__(self):
        check_int("m", self.m, lo=3, whole_float=True)
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        _check_batch_problem(problem, "BatchKSS")
        if n_answers(data) < self.n_initial:
            return _random_batch(problem, self.m, rng)
        batch = list(sample_maxima(model, problem, rng, self.m, self.n_basis, self.sample_settings))
        for j in range(1, self.m):
            for _ in range(self.max_redraws):
                if not any(same_point(problem, batch[j], batch[i]) for i in range(j)):
                    break
                batch[j] = sample_maxima(model, problem, rng, 1, self.n_basis, self.sample_settings)[0]
        return _query(_distinct(problem, np.array(batch), rng))


@dataclass(frozen=True)
class RandomBatch:
    """``m`` options uniform in the box (Fauvel & Chalk (binary/preferential BO), table 3 "Random")."""

    m: int = 3
    n_initial: int = 0

    def __post_init__(self):
        check_int("m", self.m, lo=3, whole_float=True)
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        _check_batch_problem(problem, "RandomBatch")
        return _random_batch(problem, self.m, rng)
