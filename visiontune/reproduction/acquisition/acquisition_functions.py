"""Acquisition functions on a fitted binary GP model, vectorised over candidates, with x-gradients.

Every function takes a fitted model with ``predict_with_grad(X) -> (mu, var, dmu, dvar)``
(latent mean/variance and their gradients w.r.t. each test point, :class:`visiontune.reproduction.gp.ProbitGP`)
and candidates ``X (m, D)``; it returns ``(values (m,), grads (m, D))``, or only ``values``
with ``grad=False`` (then only ``model.predict`` is called: cheaper on a candidate set). The observation-space
moments (``mu_c``, ``V[Phi(f)]``, BALD) come from :mod:`visiontune.reproduction.gp.moments`.

For contextual problems the model's inputs are ``(s, x)`` with the context in the first
``c`` columns; :func:`at_context` evaluates a function of ``(s, x)`` at a fixed context as a
function of ``x`` and :func:`over_context` as a function of ``s`` at a fixed ``x``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import ndtr, ndtri, owens_t
from scipy.stats import norm

from visiontune._validate import finite_array, points
from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp import moments

__all__ = [
    "BETA_UCB_PHI",
    "at_context",
    "bald",
    "binary_ei",
    "mean_probability",
    "over_context",
    "posterior_mean",
    "ucb_f",
    "ucb_phi",
]

#: ``Phi^-1(0.99)``, the exploration constant of UCB_Phi in Fauvel & Chalk (binary/preferential BO) (the contextual
#: paper uses ``Phi^-1(0.95)``).
BETA_UCB_PHI = float(norm.ppf(0.99))

_VAR_FLOOR = 1e-300


def _latent(model, X, grad=True):
    X = points("X", X)
    if not grad:
        mu, var = model.predict(X)
        return X, np.asarray(mu, float), np.maximum(np.asarray(var, float), 0.0), None, None
    mu, var, dmu, dvar = model.predict_with_grad(X)
    return (
        X,
        np.asarray(mu, float),
        np.maximum(np.asarray(var, float), 0.0),
        np.asarray(dmu, float),
        np.asarray(dvar, float),
    )


def _beta(beta) -> float:
    b = finite_array("beta", beta)
    if b.ndim or b < 0:
        raise InvalidInputError(f"beta: expected one number >= 0, got {b.tolist()}")
    return float(b)


def posterior_mean(model, X, *, grad: bool = True):
    """Latent posterior mean ``mu_f(x)`` and its gradient: ``(values (m,), grads (m, D))``."""
    _, mu, _, dmu, _ = _latent(model, X, grad)
    return (mu, dmu) if grad else mu


def mean_probability(model, X, *, grad: bool = True):
    """Predictive probability of success ``mu_c = Phi(mu_f / sqrt(1 + sigma_f^2))``
    (Fauvel & Chalk (binary/preferential BO), Eq. 3).

    Pure exploitation in binary BO (Fauvel & Chalk (binary/preferential BO), §3); its argmax is the reported solution.
    """
    _, mu, var, dmu, dvar = _latent(model, X, grad)
    if not grad:
        return moments.predictive_probability(mu, var)
    p, p_mu, p_var = moments.predictive_probability(mu, var, grad=True)
    return p, p_mu[:, None] * dmu + p_var[:, None] * dvar


def ucb_phi(model, X, beta: float = BETA_UCB_PHI, *, grad: bool = True):
    """Upper credible bound in the observation space (Fauvel & Chalk (binary/preferential BO), Eq. 3 and 9).

    ``UCB_Phi(x) = mu_c(x) + beta * sqrt(V[Phi(f(x))])`` with the epistemic variance
    ``V[Phi(f)] = mu_c - 2 T(h, 1/sqrt(1 + 2 sigma_f^2)) - mu_c^2``, ``h = mu_f / sqrt(1 + sigma_f^2)``.
    ``beta = Phi^-1(0.99)`` in Fauvel & Chalk (binary/preferential BO), ``Phi^-1(0.95)`` in Fauvel & Chalk
    (contextual BO).
    """
    beta = _beta(beta)
    _, mu, var, dmu, dvar = _latent(model, X, grad)
    m = moments
    if not grad:
        return m.predictive_probability(mu, var) + beta * np.sqrt(np.maximum(m.epistemic_variance(mu, var), 0.0))
    p, p_mu, p_var = m.predictive_probability(mu, var, grad=True)
    v, v_mu, v_var = m.epistemic_variance(mu, var, grad=True)
    sd = np.sqrt(np.maximum(v, _VAR_FLOOR))
    half = np.where(v > 0, beta / (2.0 * sd), 0.0)
    values = p + beta * np.sqrt(np.maximum(v, 0.0))
    grads = (p_mu + half * v_mu)[:, None] * dmu + (p_var + half * v_var)[:, None] * dvar
    return values, grads


def ucb_f(model, X, beta: float = 1.0, *, grad: bool = True):
    """Upper credible bound in the latent space, ``mu_f + beta sigma_f`` (Fauvel & Chalk (binary/preferential BO), §5;
    Tesch et al. 2013, ``beta = 1``)."""
    beta = _beta(beta)
    _, mu, var, dmu, dvar = _latent(model, X, grad)
    if not grad:
        return mu + beta * np.sqrt(var)
    sd = np.sqrt(np.maximum(var, _VAR_FLOOR))
    values = mu + beta * np.sqrt(var)
    grads = dmu + np.where(var > 0, beta / (2.0 * sd), 0.0)[:, None] * dvar
    return values, grads


def bald(model, X, *, grad: bool = True):
    """Mutual information between the answer and ``f`` (Houlsby et al. 2011), in bits.

    ``I = h(mu_c) - C / sqrt(sigma_f^2 + C^2) exp(-mu_f^2 / (2 (sigma_f^2 + C^2)))``,
    ``C = sqrt(pi ln 2 / 2)``; ``h`` the binary entropy. Used for the context in Fauvel & Chalk (contextual BO), §3.3.
    """
    _, mu, var, dmu, dvar = _latent(model, X, grad)
    if not grad:
        return moments.bald(mu, var)
    i, i_mu, i_var = moments.bald(mu, var, grad=True)
    return i, i_mu[:, None] * dmu + i_var[:, None] * dvar


def _bvn_cdf(h, k, rho):
    """``P(U <= h, V <= k)`` for standard normals with correlation ``rho`` (|rho| < 1), via Owen's T.

    ``Phi2(h, k; rho) = (Phi(h) + Phi(k))/2 - T(h, a_h) - T(k, a_k) - delta``,
    ``a_h = (k - rho h)/(h sqrt(1-rho^2))``, ``a_k = (h - rho k)/(k sqrt(1-rho^2))``,
    ``delta = 1/2`` if ``h k < 0`` or (``h k = 0`` and ``h + k < 0``), else 0 (Owen 1956).
    """
    tiny = 1e-10
    h = np.where(np.abs(h) < tiny, np.where(h < 0, -tiny, tiny), h)
    k = np.where(np.abs(k) < tiny, np.where(k < 0, -tiny, tiny), k)
    r = np.sqrt(1.0 - rho**2)
    a_h = (k - rho * h) / (h * r)
    a_k = (h - rho * k) / (k * r)
    delta = np.where(h * k < 0, 0.5, 0.0)
    return 0.5 * (ndtr(h) + ndtr(k)) - owens_t(h, a_h) - owens_t(k, a_k) - delta


def _binary_ei_moments(mu, var, p_star):
    """Binary EI and its derivatives w.r.t. ``mu`` and ``var`` for a latent ``N(mu, var)``.

    ``EI = E[max(0, Phi(f) - p*)] = int_a^inf (Phi(mu + sigma z) - p*) phi(z) dz``,
    ``a = (Phi^-1(p*) - mu) / sigma``. With ``W = (Z1 - sigma Z2)/sqrt(1+sigma^2)``,
    ``int_a^inf Phi(mu + sigma z) phi(z) dz = Phi(h) - Phi2(h, a; rho)``, ``h = mu/sqrt(1+sigma^2)``,
    ``rho = -sigma/sqrt(1+sigma^2)``. Derivatives (the boundary term vanishes):
    ``dEI/dmu = int_a^inf phi(mu + sigma z) phi(z) dz``, ``dEI/dsigma = int_a^inf z phi(mu+sigma z) phi(z) dz``,
    both Gaussian integrals in closed form.
    """
    sigma = np.sqrt(np.maximum(var, 1e-24))
    f_star = ndtri(p_star)
    a = np.clip((f_star - mu) / sigma, -40.0, 40.0)
    q = np.sqrt(1.0 + sigma**2)
    h = mu / q
    rho = -sigma / q
    ei = ndtr(h) - _bvn_cdf(h, a, rho) - p_star * ndtr(-a)
    ei = np.maximum(ei, 0.0)
    # phi(mu + sigma z) phi(z) = phi(h)/q * N(z; m, s^2), m = -mu sigma / q^2, s = 1/q.
    c = norm.pdf(h) / q
    m, s = -mu * sigma / q**2, 1.0 / q
    t = (a - m) / s
    tail = ndtr(-t)
    d_mu = c * tail
    d_sigma = c * (m * tail + s * norm.pdf(t))
    return ei, d_mu, d_sigma / (2.0 * sigma)


def binary_ei(model, X, incumbent: float | None = None, *, grad: bool = True):
    """Expected improvement in the observation space (Tesch et al. 2013; Fauvel & Chalk (binary/preferential BO),
    table 1 "binary EI").

    ``EI(x) = E_f[max(0, Phi(f(x)) - p*)]`` under the latent posterior ``N(mu_f, sigma_f^2)``;
    ``p*`` (``incumbent``, a probability in (0, 1)) defaults to the best predictive probability
    ``max_i mu_c(x_i)`` over the training inputs (0.5, the prior's, with no data).
    Closed form with Owen's T (see ``_binary_ei_moments``).
    """
    X, mu, var, dmu, dvar = _latent(model, X, grad)
    if incumbent is None:
        n = 0 if getattr(model, "X", None) is None else len(model.X)
        if n:
            m_tr, v_tr = model.predict(model.X)
            incumbent = float(np.max(moments.predictive_probability(np.asarray(m_tr), np.asarray(v_tr))))
        else:
            incumbent = 0.5
    p_star = float(finite_array("incumbent", incumbent))
    if not 0.0 < p_star < 1.0:
        raise InvalidInputError(f"incumbent: must be a probability in (0, 1), got {p_star}")
    ei, e_mu, e_var = _binary_ei_moments(mu, var, p_star)
    if not grad:
        return ei
    return ei, e_mu[:, None] * dmu + e_var[:, None] * dvar


AcqFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def at_context(fn: AcqFn, s) -> AcqFn:
    """Evaluate ``fn`` of ``(s, x)`` at the fixed context ``s (c,)`` as a function of ``x (m, d)``.

    Returns ``g(X) -> (values (m,), grads (m, d))`` (or ``values`` if ``fn`` returns values only):
    the context columns are prepended and their gradient columns dropped (Fauvel & Chalk (contextual BO), §3.3: the
    x-rule runs at a reference context).
    """
    s = finite_array("s", s).reshape(-1)

    def g(X):
        X = points("X", X)
        full = np.column_stack([np.broadcast_to(s, (X.shape[0], s.size)), X])
        out = fn(full)
        if not isinstance(out, tuple):  # a values-only function
            return out
        v, dv = out
        return v, None if dv is None else np.asarray(dv)[:, s.size :]

    return g


def over_context(fn: AcqFn, x) -> AcqFn:
    """Evaluate ``fn`` of ``(s, x)`` at the fixed ``x (d,)`` as a function of the context ``S (m, c)``.

    Returns ``g(S) -> (values (m,), grads (m, c))`` (Fauvel & Chalk (contextual BO), §3.3: the context rule, BALD over
    s).
    """
    x = finite_array("x", x).reshape(-1)

    def g(S):
        S = points("S", S)
        full = np.column_stack([S, np.broadcast_to(x, (S.shape[0], x.size))])
        out = fn(full)
        if not isinstance(out, tuple):  # a values-only function
            return out
        v, dv = out
        return v, np.asarray(dv)[:, : S.shape[1]]

    return g
