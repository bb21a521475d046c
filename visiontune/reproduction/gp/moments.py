"""Observation-space moments of a probit GP at one input.

Given the latent predictive mean ``mu`` and variance ``var`` of ``f`` at a point (a Gaussian
``f ~ N(mu, var)``), these give the moments of the answer probability ``Φ(f)``:

- ``predictive_probability``  ``μ_c = E[Φ(f)] = Φ(μ/√(1+σ²))``              (Eq. 3)
- ``epistemic_variance``      ``V[Φ(f)] = μ_c - 2 T(h, a) - μ_c²``           (Eq. 9)
- ``aleatoric_variance``      ``E[Φ(f)(1-Φ(f))] = 2 T(h, a)``                (Eq. 10)
- ``bald``                    mutual information between the answer and f, Houlsby et al.
  (2011) approximation, in bits.

with ``h = μ/√(1+σ²)``, ``a = 1/√(1+2σ²)`` and ``T`` Owen's T function. Epistemic plus
aleatoric variance is the variance of the Bernoulli answer, ``μ_c (1 - μ_c)``.

Every function is vectorised (``mu`` and ``var`` broadcast together) and takes ``grad``:
with ``grad=True`` it returns ``(value, d_value/d_mu, d_value/d_var)``, all of the broadcast
shape. ``var`` must be >= 0 (values in ``[-1e-10, 0)`` from round-off are read as 0).

References
----------
- Fauvel & Chalk (binary/preferential BO), *Efficient exploration in binary and preferential Bayesian
  optimization*, Eqs. 3, 9, 10 (the equations above; docs/references.md).
- Houlsby, Huszár, Ghahramani & Lengyel (2011), *Bayesian active learning for classification
  and preference learning*, arXiv:1112.5745, §3 (the approximation
  ``h(Φ(x)) ≈ exp(-x²/(π ln 2))``).
- Owen (1956), derivatives ``∂T/∂h = -φ(h)(Φ(ah) - ½)``, ``∂T/∂a = e^{-h²(1+a²)/2} / (2π(1+a²))``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr, owens_t

from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError

__all__ = ["predictive_probability", "epistemic_variance", "aleatoric_variance", "bald", "BALD_C"]

#: Houlsby's constant ``C = √(π ln 2 / 2)``.
BALD_C = math.sqrt(math.pi * math.log(2.0) / 2.0)
_LN2 = math.log(2.0)
_ROUNDOFF = 1e-10


def _inputs(mu, var):
    mu = finite_array("mu", mu)
    var = finite_array("var", var)
    if np.any(var < -_ROUNDOFF):
        raise InvalidInputError(f"var: latent variances must be >= 0, found {float(np.min(var))}")
    try:
        mu, var = np.broadcast_arrays(mu, np.maximum(var, 0.0))
    except ValueError:
        raise InvalidInputError(f"var: shape {var.shape} does not broadcast with mu shape {mu.shape}") from None
    return mu.astype(float), var.astype(float)


def _phi(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _out(value, d_mu, d_var, grad):
    if grad:
        return value, d_mu, d_var
    return value


def _probability_parts(mu, var):
    """``h = μ/√(1+σ²)``, ``μ_c = Φ(h)``, ``1-μ_c = Φ(-h)`` and their derivatives."""
    s2 = 1.0 + var
    h = mu / np.sqrt(s2)
    dh_dmu = 1.0 / np.sqrt(s2)
    dh_dvar = -0.5 * h / s2
    return h, ndtr(h), ndtr(-h), dh_dmu, dh_dvar


def predictive_probability(mu, var, grad: bool = False):
    """``μ_c = Φ(μ_f / √(1 + σ²_f))`` (Eq. 3).

    mu, var: latent predictive mean and variance (broadcastable arrays) -> μ_c in [0, 1].
    """
    mu, var = _inputs(mu, var)
    h, p, _, dh_dmu, dh_dvar = _probability_parts(mu, var)
    dens = _phi(h)
    return _out(p, dens * dh_dmu, dens * dh_dvar, grad)


def _owen_parts(mu, var):
    """``2 T(h, a)`` and its derivatives w.r.t. ``mu`` and ``var``."""
    h, p, q, dh_dmu, dh_dvar = _probability_parts(mu, var)
    a = 1.0 / np.sqrt(1.0 + 2.0 * var)
    t2 = 2.0 * owens_t(h, a)
    dT_dh = -_phi(h) * (ndtr(a * h) - 0.5)
    dT_da = np.exp(-0.5 * h * h * (1.0 + a * a)) / (2.0 * math.pi * (1.0 + a * a))
    da_dvar = -(a**3)
    d_mu = 2.0 * dT_dh * dh_dmu
    d_var = 2.0 * (dT_dh * dh_dvar + dT_da * da_dvar)
    return t2, d_mu, d_var, h, p, q, dh_dmu, dh_dvar


def aleatoric_variance(mu, var, grad: bool = False):
    """``E[Φ(f)(1 - Φ(f))] = 2 T(h, a)`` (Eq. 10), ``h = μ/√(1+σ²)``, ``a = 1/√(1+2σ²)``.

    The expected variance of the Bernoulli answer given f (noise that more data cannot remove).
    """
    mu, var = _inputs(mu, var)
    t2, d_mu, d_var, *_ = _owen_parts(mu, var)
    return _out(np.maximum(t2, 0.0), d_mu, d_var, grad)


def epistemic_variance(mu, var, grad: bool = False):
    """``V[Φ(f)] = μ_c - 2 T(h, a) - μ_c²`` (Eq. 9), computed as ``μ_c(1-μ_c) - 2T``.

    Clipped at 0: where the true value is below round-off (σ² → 0 or |μ| large) the result is
    0, never negative.
    """
    mu, var = _inputs(mu, var)
    t2, dt_mu, dt_var, h, p, q, dh_dmu, dh_dvar = _owen_parts(mu, var)
    value = p * q - t2
    dp = _phi(h) * (1.0 - 2.0 * p)  # d(p(1-p))/dh
    clipped = value <= 0.0
    d_mu = np.where(clipped, 0.0, dp * dh_dmu - dt_mu)
    d_var = np.where(clipped, 0.0, dp * dh_dvar - dt_var)
    return _out(np.maximum(value, 0.0), d_mu, d_var, grad)


def bald(mu, var, grad: bool = False):
    """Mutual information ``I(c; f)`` in bits, Houlsby et al. (2011) approximation:

    ``I = H₂(μ_c) - C/√(σ² + C²) · exp(-μ² / (2(σ² + C²)))``, ``C = √(π ln 2 / 2)``,
    ``H₂`` the binary entropy in bits. It follows from ``H₂(Φ(x)) ≈ exp(-x²/(π ln 2))``,
    whose Gaussian expectation is exact; that approximation can make ``I`` slightly negative
    (about -6e-4 bits at σ² → 0, |μ| ≈ 1), so the result is clipped at 0.
    """
    mu, var = _inputs(mu, var)
    h, p, q, dh_dmu, dh_dvar = _probability_parts(mu, var)
    log_p, log_q = log_ndtr(h), log_ndtr(-h)
    entropy = -(p * log_p + q * log_q) / _LN2
    d_entropy_dh = _phi(h) * (log_q - log_p) / _LN2  # dH₂/dp · dp/dh
    c2 = BALD_C**2
    s2 = var + c2
    expected = BALD_C / np.sqrt(s2) * np.exp(-0.5 * mu * mu / s2)
    dexp_dmu = -expected * mu / s2
    dexp_dvar = expected * (-0.5 / s2 + 0.5 * mu * mu / s2**2)
    value = entropy - expected
    clipped = value <= 0.0
    d_mu = np.where(clipped, 0.0, d_entropy_dh * dh_dmu - dexp_dmu)
    d_var = np.where(clipped, 0.0, d_entropy_dh * dh_dvar - dexp_dvar)
    return _out(np.maximum(value, 0.0), d_mu, d_var, grad)
