"""Contextual binary knowledge gradient (cBKG, Fauvel & Chalk (contextual BO) §3.2, Eq. 6-7; supp. B-C).

``KG(s, x) = sum_{c in {0,1}} p(c | s, x, D) mu*_{D + (s, x, c)} - mu*_D`` with
``mu*_D = max_{x'} E[f(s0, x') | D]`` the maximum of the latent posterior mean at the reference
context (Fauvel & Chalk (contextual BO), Eq. 6) and ``p(c = 1 | s, x, D) = mu_c(s, x)`` (Fauvel & Chalk
(binary/preferential BO), Eq. 3). Each look-ahead posterior is a real refit of the model (Laplace or EP, warm-started
from the current one).

Gradient (Fauvel & Chalk (contextual BO), supp. B, Eqs. S21-S30; Laplace only): by the envelope theorem
``grad mu*_c = grad_z E[f(r*) | D + (z, c)]`` at the look-ahead maximiser ``r* = (s0, x*)`` held
fixed, and with ``a = grad log p(c | y)`` at the look-ahead mode ``y = K a``,
``W = -grad^2 log p(c | y)``:

    grad_z E[f(r*)] = (d k(r*, z)/dz) a_{n+1} + k(r*, X~)^T (-W dy/dz),
    dy/dz = (I + K W)^-1 (dK/dz) a                                          (S28-S30)

where only the last row and column of ``K`` depend on the new input ``z``; then
``grad KG = grad mu_c (mu*_1 - mu*_0) + mu_c grad mu*_1 + (1 - mu_c) grad mu*_0`` (S21).

Simplifications (say so when comparing with Fauvel & Chalk (contextual BO), table 1): the inner maximum is taken over a
finite reference set of ``x'`` (scrambled Sobol points plus the current solution). The outer
maximum: ``n_candidates`` Sobol points of ``(s, x)``, then (Laplace models) L-BFGS-B with the
envelope gradient from the ``n_starts`` best. Cost: two refits per evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_rng, points
from visiontune.errors import ConfigurationError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.binary_policies import (
    Data,
    Problem,
    Query,
    _random_query,
    check_n_initial,
    n_answers,
)
from visiontune.reproduction.acquisition.optimize import refine_in_box, sobol_points
from visiontune.reproduction.acquisition.solution import solution
from visiontune.reproduction.gp.laplace import probit_log_likelihood_terms, signed_labels
from visiontune.reproduction.gp.model import diag_input_gradient

__all__ = ["CBKG", "knowledge_gradient", "knowledge_gradient_with_grad"]


def _refit(model, z: np.ndarray, c: float):
    cls = type(model)
    X = np.vstack([model.X.reshape(-1, z.size), z[None, :]])
    return cls(model.kernel, X, np.append(model.y, c), inference=model.inference, warm_start=model.warm_start_state)


def knowledge_gradient(model, problem: Problem, Z, reference) -> np.ndarray:
    """``KG (m,)`` at model inputs ``Z (m, c + d)`` (Fauvel & Chalk (contextual BO), Eq. 7), inner max over
    ``reference (k, d)``.

    ``model``: a fitted ``ProbitGP`` on inputs ``(s, x)``; the posterior mean is taken at
    ``problem.reference_context`` (none for a binary problem).
    """
    Z = points("Z", Z, dim=problem.c + problem.d)
    R = points("reference", reference, dim=problem.d)
    if problem.c:
        R = np.column_stack([np.broadcast_to(problem.reference_context, (len(R), problem.c)), R])
    best_now = float(np.max(model.predict(R)[0]))
    p1 = F.mean_probability(model, Z, grad=False)
    kg = np.empty(len(Z))
    for i, z in enumerate(Z):
        best = [float(np.max(_refit(model, z, c).predict(R)[0])) for c in (0.0, 1.0)]
        kg[i] = (1.0 - p1[i]) * best[0] + p1[i] * best[1] - best_now
    return kg


def _lookahead_best_and_grad(model, refit, z: np.ndarray, R: np.ndarray):
    """``(mu*_c, grad_z mu*_c)`` of a Laplace refit on ``D + (z, c)`` (Fauvel & Chalk (contextual BO), Eqs. S26-S30)."""

    mu_R = refit.predict(R)[0]
    r = R[int(np.argmax(mu_R))]
    kernel, Xt = refit.kernel, np.asarray(refit.X, float)
    n = Xt.shape[0] - 1
    f_hat = refit.warm_start_state[0]
    _, a, d2, _ = probit_log_likelihood_terms(f_hat, signed_labels(np.asarray(refit.y, float)))
    W = -d2
    dk_z = kernel.grad_inputs(z[None, :], Xt[:n])[0]  # (n, D): d k(z, x_j) / dz
    dK_a = np.empty((n + 1, z.size))
    dK_a[:n] = dk_z * a[n]
    dK_a[n] = dk_z.T @ a[:n] + diag_input_gradient(kernel, z[None, :])[0] * a[n]
    K = kernel(Xt)
    dy = np.linalg.solve(np.eye(n + 1) + K * W[None, :], dK_a)
    k_r = kernel(r[None, :], Xt)[0]
    grad = kernel.grad_inputs(z[None, :], r[None, :])[0, 0] * a[n] - k_r @ (W[:, None] * dy)
    return float(mu_R.max()), grad


def knowledge_gradient_with_grad(model, problem: Problem, Z, reference):
    """``(KG (m,), grad (m, c + d))`` at ``Z (m, c + d)``: :func:`knowledge_gradient` and its
    envelope-theorem gradient (Fauvel & Chalk (contextual BO), supp. B, Eq. S21; module docstring). Laplace models
    only."""
    if getattr(model, "inference", "laplace") != "laplace":
        raise ConfigurationError(
            "cBKG gradient: needs a Laplace model (Fauvel & Chalk (contextual BO), supp. B); use gradient=False with EP"
        )
    Z = points("Z", Z, dim=problem.c + problem.d)
    R = points("reference", reference, dim=problem.d)
    if problem.c:
        R = np.column_stack([np.broadcast_to(problem.reference_context, (len(R), problem.c)), R])
    best_now = float(np.max(model.predict(R)[0]))
    p1, dp1 = F.mean_probability(model, Z)
    kg, grad = np.empty(len(Z)), np.empty(Z.shape)
    for i, z in enumerate(Z):
        (b0, g0), (b1, g1) = (_lookahead_best_and_grad(model, _refit(model, z, c), z, R) for c in (0.0, 1.0))
        kg[i] = (1.0 - p1[i]) * b0 + p1[i] * b1 - best_now
        grad[i] = dp1[i] * (b1 - b0) + p1[i] * g1 + (1.0 - p1[i]) * g0
    return kg, grad


@dataclass(frozen=True, kw_only=True)
class CBKG:
    """Query ``(s, x) = argmax KG``: the best of ``n_candidates`` Sobol points of the input box,
    refined (``gradient=True``, Laplace models) by L-BFGS-B with the envelope-theorem gradient
    from the ``n_starts`` best candidates (Fauvel & Chalk (contextual BO), §3.2, supp. B-C; see module docstring)."""

    n_initial: int = 0
    n_candidates: int = 64
    n_reference: int = 128
    n_starts: int = 2
    gradient: bool = True

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        if problem.scenario not in ("binary", "contextual-binary"):
            raise ConfigurationError(f"cBKG: serves binary problems, got {problem.scenario!r}")
        if n_answers(data) < self.n_initial:
            return _random_query(problem, rng)
        reference = np.vstack([sobol_points(problem.box, self.n_reference, rng), solution(model, problem, rng)])
        Z = sobol_points(problem.input_box, self.n_candidates, rng)
        kg = knowledge_gradient(model, problem, Z, reference)
        z = Z[int(np.argmax(kg))]
        if self.gradient and self.n_starts > 0 and getattr(model, "inference", "laplace") == "laplace":
            z = _refine(model, problem, Z[np.argsort(-kg)[: self.n_starts]], float(kg.max()), z, reference)
        return Query(x=z[problem.c :], s=z[: problem.c] if problem.c else None)


def _refine(model, problem: Problem, starts, best_value, best_z, reference):
    """:func:`~visiontune.reproduction.acquisition.optimize.refine_in_box` of KG from ``starts`` (envelope gradient,
    at most 30 L-BFGS-B iterations); the best end point if it beats ``best_value``, else ``best_z``."""
    return refine_in_box(
        lambda X: knowledge_gradient_with_grad(model, problem, X, reference),
        problem.input_box,
        starts,
        values_only=lambda X: knowledge_gradient(model, problem, X, reference),
        incumbent=(best_z, best_value),
        options={"maxiter": 30, "gtol": 1e-6},
    )[0]
