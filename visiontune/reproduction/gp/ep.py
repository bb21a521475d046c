"""Expectation propagation for GP classification with a probit likelihood.

Parallel EP with damping (R&W Alg. 3.5 with all sites updated from the same posterior, then one
Cholesky refresh per sweep; Rasmussen & Williams 2006, *GPML*, chapter 3.6). Works on a Gram
matrix ``K`` (n, n) and 0/1 answers ``y`` (n,). The result is a
:class:`~visiontune.reproduction.gp.laplace.GaussianApproximation` with ``S̃½`` in place of ``W½``, so
predictions use the same code as the Laplace approximation (R&W Alg. 3.6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import log_ndtr

from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.gp.laplace import (
    GaussianApproximation,
    _b_matrix,
    _check_gram,
    b_inverse,
    b_inverse_diag,
    cholesky_lower,
    empty_approximation,
    marginal_variances,
    signed_labels,
)

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_JITTER = 1e-10


def _tilted_moments(y_signed, mu_cav, var_cav):
    """Moments of ``Φ(y' f) N(f; μ₋, σ²₋)`` (R&W Eqs. 3.58).

    ``z = y' μ₋ / √(1 + σ²₋)``, ``Ẑ = Φ(z)``, ``r = N(z)/Φ(z)``,
    ``μ̂ = μ₋ + y' σ²₋ r / √(1 + σ²₋)``, ``σ̂² = σ²₋ - σ⁴₋ r (z + r) / (1 + σ²₋)``.
    Returns ``(log Ẑ, μ̂, σ̂²)``.
    """
    s = np.sqrt(1.0 + var_cav)
    z = y_signed * mu_cav / s
    log_z = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_z)
    mu_hat = mu_cav + y_signed * var_cav * r / s
    var_hat = var_cav - var_cav**2 * r * (z + r) / (1.0 + var_cav)
    return log_z, mu_hat, var_hat


def _posterior(K, tau_site, nu_site, work=None):
    """Marginals of ``q(f) = N(μ, Σ)``, ``Σ = (K⁻¹ + S̃)⁻¹``, ``μ = Σ ν̃`` (R&W Alg. 3.5 lines 13-15).

    Returns ``(diag Σ (n,), μ (n,), L, S̃½)`` with ``B = I + S̃½KS̃½ = LLᵀ``; the full ``Σ`` is
    never formed (``μ = Kν̃ - K S̃½ B⁻¹ S̃½ K ν̃``, diagonal by :func:`marginal_variances` from
    ``diag B⁻¹``). ``work``: optional (n, n) Fortran-ordered array that receives ``L`` (the
    previous sweep's factor is not needed any more).
    """
    n = K.shape[0]
    ss = np.sqrt(tau_site)
    L = cholesky_lower(_b_matrix(K, ss, out=work), overwrite=work is not None)
    kn = K @ nu_site
    t = solve_triangular(L, ss * kn, lower=True, check_finite=False)
    mu = kn - K @ (ss * solve_triangular(L, t, lower=True, trans="T", check_finite=False))
    b_diag = b_inverse_diag(L) if np.any(tau_site * np.diag(K) > 1e-3) else np.ones(n)
    return marginal_variances(K, ss, L, b_diag), mu, L, ss


def _log_evidence(L, mu, tau_site, nu_site, tau_cav, nu_cav, log_z_tilted):
    """EP log marginal likelihood (R&W Eq. 3.65, Alg. 3.5 lines 17-19, zero prior mean).

    ``log Z_EP = Σ log Ẑ_i - Σ log L_ii + ½ ν̃ᵀΣν̃ + ½ Σ log(1 + τ̃_i/τ₋_i)
    + ½ ν₋ᵀ (τ̃/τ₋ ∘ ν₋ - 2ν̃)/(τ̃ + τ₋) - ½ Σ ν̃²/(τ₋ + τ̃)``,
    an algebraic rearrangement of Eq. 3.65 that stays finite when a site precision is 0.
    """
    denom = tau_site + tau_cav
    return float(
        np.sum(log_z_tilted)
        - np.sum(np.log(np.diag(L)))
        + 0.5 * nu_site @ mu
        + 0.5 * np.sum(np.log1p(tau_site / tau_cav))
        + 0.5 * nu_cav @ ((tau_site / tau_cav * nu_cav - 2.0 * nu_site) / denom)
        - 0.5 * np.sum(nu_site**2 / denom)
    )


def expectation_propagation(
    K,
    y,
    *,
    damping: float = 0.7,
    tol: float = 1e-9,
    max_sweeps: int = 500,
    sites=None,
) -> GaussianApproximation:
    """Run damped parallel EP for a probit likelihood and return the Gaussian approximation.

    Each sweep: cavities ``τ₋ = 1/Σ_ii - τ̃_i``, ``ν₋ = μ_i/Σ_ii - ν̃_i`` (R&W Eq. 3.56); tilted
    moments (R&W Eq. 3.58); new sites ``τ̃ = 1/σ̂² - τ₋``, ``ν̃ = μ̂/σ̂² - ν₋`` (R&W Eq. 3.59),
    mixed with the old ones in natural parameters with weight ``damping`` (1 = undamped).
    Stop when the site parameters and ``log Z_EP`` change less than ``tol`` (or after
    ``max_sweeps``; ``n_iter`` of the result says which). ``K`` gets a jitter
    ``1e-10 (1 + mean diag K)`` so that a latent with zero prior variance (a duel ``[x, x]``)
    keeps a proper cavity.
    The weights of the predictive mean are ``α = ν̃ - S̃½ B⁻¹ S̃½ K ν̃`` (R&W Alg. 3.6 line 2-3).

    ``K``: (n, n) prior covariance; ``y``: (n,) 0/1 answers; ``sites``: optional
    ``(tau_site, nu_site)`` (n,) each, a warm start. Raises :class:`InvalidInputError`
    on bad input and :class:`NumericalError` if EP does not reach finite sites.
    """
    K, y = _check_gram(K, y)
    if not (0.0 < float(damping) <= 1.0):
        raise InvalidInputError(f"damping: must be in (0, 1], got {damping}")
    n = y.shape[0]
    if n == 0:
        return empty_approximation()
    ys = signed_labels(y)
    # A latent with zero prior variance (e.g. a duel [x, x]) has a degenerate cavity; a tiny
    # jitter keeps every cavity proper and changes the posterior by O(jitter).
    K = K + _JITTER * (1.0 + np.mean(np.diag(K))) * np.eye(n)
    if sites is None:
        tau_site, nu_site = np.zeros(n), np.zeros(n)
    else:
        tau_site = np.maximum(np.asarray(sites[0], float), 0.0)
        nu_site = np.asarray(sites[1], float)
        if tau_site.shape != (n,) or nu_site.shape != (n,) or not np.all(np.isfinite(nu_site)):
            raise InvalidInputError(f"sites: expected two finite arrays of shape ({n},)")

    def cavities(diag, mu):
        diag = np.maximum(diag, 1e-300)
        tau_cav = np.maximum(1.0 / diag - tau_site, 1e-300)
        return tau_cav, mu / diag - nu_site

    work = np.empty((n, n), order="F")  # B, then its factor L, at every sweep
    diag, mu, L, ss = _posterior(K, tau_site, nu_site, work)
    tau_cav, nu_cav = cavities(diag, mu)
    log_z = -np.inf
    sweep = 0
    for sweep in range(1, max_sweeps + 1):  # noqa: B007 (the sweeps run are reported after the loop)
        _, mu_hat, var_hat = _tilted_moments(ys, nu_cav / tau_cav, 1.0 / tau_cav)
        var_hat = np.maximum(var_hat, 1e-300)
        tau_new = np.maximum(1.0 / var_hat - tau_cav, 0.0)
        nu_new = mu_hat / var_hat - nu_cav
        d_tau = damping * (tau_new - tau_site)
        d_nu = damping * (nu_new - nu_site)
        tau_site = tau_site + d_tau
        nu_site = nu_site + d_nu
        if not (np.all(np.isfinite(tau_site)) and np.all(np.isfinite(nu_site))):
            raise NumericalError("EP: site parameters became non-finite")
        diag, mu, L, ss = _posterior(K, tau_site, nu_site, work)
        tau_cav, nu_cav = cavities(diag, mu)
        log_zt = _tilted_moments(ys, nu_cav / tau_cav, 1.0 / tau_cav)[0]
        log_z_old, log_z = log_z, _log_evidence(L, mu, tau_site, nu_site, tau_cav, nu_cav, log_zt)
        change = max(np.max(np.abs(d_tau) / (1.0 + np.abs(tau_site))), np.max(np.abs(d_nu) / (1.0 + np.abs(nu_site))))
        if change < tol and abs(log_z - log_z_old) < tol * (1.0 + abs(log_z)):
            break
    if not np.isfinite(log_z):
        raise NumericalError("EP: log marginal likelihood is not finite")
    t = solve_triangular(L, ss * (K @ nu_site), lower=True, check_finite=False)
    alpha = nu_site - ss * solve_triangular(L, t, lower=True, trans="T", check_finite=False)
    return EPApproximation(
        alpha=alpha,
        sqrt_w=ss,
        chol=L,
        mean=mu,
        log_marginal_likelihood=log_z,
        n_iter=sweep,
        tau_site=tau_site,
        nu_site=nu_site,
    )


@dataclass(frozen=True)
class EPApproximation(GaussianApproximation):
    """:class:`GaussianApproximation` plus the EP site parameters ``τ̃, ν̃`` (n,) (for warm starts)."""

    tau_site: np.ndarray | None = None
    nu_site: np.ndarray | None = None


def ep_lml_grad(approx: GaussianApproximation, K, y, dK) -> np.ndarray:
    """Gradient of ``log Z_EP`` w.r.t. kernel hyperparameters (R&W Eq. 5.27, Alg. 3.5 form).

    ``∂ log Z_EP / ∂θ_j = ½ tr((α αᵀ - S̃½ B⁻¹ S̃½) ∂K/∂θ_j)`` with ``α = ν̃ - S̃½ B⁻¹ S̃½ K ν̃``
    (exact at an EP fixed point, where the site parameters are stationary).
    ``dK``: (p, n, n). Returns (p,).
    """
    K, y = _check_gram(K, y)
    dK = np.asarray(dK, float)
    if approx.n == 0:
        return np.zeros(dK.shape[0])
    sw = approx.sqrt_w
    R = sw[:, None] * b_inverse(approx.chol) * sw[None, :]
    A = np.outer(approx.alpha, approx.alpha) - R
    return 0.5 * np.einsum("ij,pij->p", A, dK)
