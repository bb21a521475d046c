"""The optics model as the prior mean of a probit GP, and a GP for what the formula misses.

The hybrid: the blur-acuity relation of :mod:`visiontune.refraction.optics_model` is the
prior mean of a GP classifier whose zero-mean part ``g`` learns what the formula misses
(Rasmussen & Williams 2006, *GPML*, §2.7 "Incorporating explicit basis functions", and §3 for
the probit likelihood)::

    P(correct | s, L, θ) = Φ(f(s, L)),      f = μ_θ(s, L) + g(s, L)
    μ_θ(s, L) = Φ⁻¹(γ + (1 - γ - λ) Φ(a (s - VA_θ(L))))
    g ~ GP(0, σ_g² exp(-½ [(s - s')²/ℓ_s² + |L - L'|²/ℓ_L²]))        over (s, M, J0, J45)

``μ_θ`` is the optics formula's probability written on the probit scale, so that the GP's
ordinary probit likelihood ``Φ(f)`` (the paper's GP engine, :mod:`visiontune.reproduction.engines.gp_engine`)
carries chance ``γ = 1/n`` and the lapse ``λ`` exactly: with ``g = 0``, ``Φ(μ_θ)`` *is* the
optics model's ``P(correct)``. ``g`` is over power vectors at any axis (the paper's GP is at a
fixed axis) with a small amplitude ``σ_g``, so with few answers the model is the optics model.

**Empirical Bayes for θ, particles for its uncertainty.** After each answer ``g`` is fitted
(Laplace, :class:`visiontune.reproduction.gp.ProbitGP` with ``prior_mean``) with the prior mean at the answers
the optics posterior's predictive ``μ̄ = Φ⁻¹(Σ_i w_i P_θi)`` (the particle posterior run
alongside on the same answers): ``g`` learns what the optics model, with its uncertainty about
``θ``, fails to predict. (The formula at one point ``θ̂``, the posterior mean, was tried first:
``g`` then learns the difference between the formula at ``θ̂`` and the posterior's average, the
blur of ``θ``'s uncertainty, present for patients who follow the formula exactly, and adding it
to every particle cost accuracy; docs/results/clinical-validation-optics-gp.md.) The
uncertainty of ``θ`` stays in the particles: particle ``θ_i`` predicts
``p_i = Φ((μ_θi + m_g) / √(1 + v_g))``, the probit predictive of ``μ_θi + g`` with ``g``'s
posterior mean ``m_g`` and variance ``v_g`` (R&W Eq. 3.80). The particles' weights are the
optics model's (they do not see ``g``): an approximation of the joint posterior of ``(θ, g)``.

**The best correction of a draw.** With the accommodation term removed (the far point, the most
plus lens of best acuity), ``μ_θi`` at the particle's threshold size ``s = VA*_i`` is, near its
maximum ``P*_i``, ``μ½ - ½ κ_i |L - P*_i|²`` with ``μ½ = Φ⁻¹(γ + (1-γ-λ)/2)`` and (from
``log10(1 + r²) ≈ r² / ln 10``) ``κ_i = 2 (1-γ-λ) φ(0) a_i / (φ(μ½) ln 10)``. Adding ``m_g``
moves the maximum by one Newton step ``δ_i = ∇_L m_g(VA*_i, P*_i) / κ_i`` (length at most
:data:`MAX_SHIFT_D`): the draw's correction is ``P*_i + δ_i``. Likewise the acuity through ``L``
(where the latent crosses ``μ½``) moves from ``VA_θi(L)`` by ``-m_g / (∂μ/∂s)``, ``∂μ/∂s =
(1-γ-λ) φ(0) a_i / φ(μ½)`` at threshold.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune.errors import InvalidInputError
from visiontune.refraction.optics_model import (
    LOG_SLOPE,
    VA0,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
    probability_correct,
    probability_grid,
)
from visiontune.reproduction.gp import ProbitGP, SquaredExponential

__all__ = [
    "MAX_SHIFT_D",
    "ResidualFit",
    "ResidualSpec",
    "fit_residual",
    "half_latent",
    "predictive_mean",
    "probit_mean",
    "probit_mean_grid",
    "threshold_slope",
]

#: Largest move of a draw's best correction by ``g`` (diopters): the Newton step is a local one.
MAX_SHIFT_D = 0.5
_PHI0 = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class ResidualSpec:
    """The prior of ``g``: amplitude ``sd`` (probit units, ``σ_g``), lengthscales in letter
    size ``lengthscale_logmar`` and in power vectors ``lengthscale_d`` (diopters)."""

    sd: float = 0.25
    lengthscale_logmar: float = 0.3
    lengthscale_d: float = 0.75

    def __post_init__(self) -> None:
        for name in ("sd", "lengthscale_logmar", "lengthscale_d"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (math.isfinite(value) and value > 0)
            ):
                raise InvalidInputError(f"{name}: expected a positive number, got {value!r}")

    def kernel(self) -> SquaredExponential:
        """``σ_g² k_SE`` over ``(s, M, J0, J45)``."""
        ls = [self.lengthscale_logmar] + [self.lengthscale_d] * 3
        return SquaredExponential(ls, self.sd**2)


def probit_mean(theta: np.ndarray, s: np.ndarray, lenses: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
    """``μ_θ(s_j, L_j) = Φ⁻¹(P_optics)`` for particles ``theta (N, 6)``, trials ``s (m,)``,
    ``lenses (m, 3)``: ``(N, m)``."""
    return ndtri(probability_correct(theta, s, lenses, spec))


def probit_mean_grid(theta: np.ndarray, s_grid: np.ndarray, lenses: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
    """``μ_θ`` on sizes ``s_grid (n_s,)`` × ``lenses (n_x, 3)``: ``(N, n_s, n_x)``."""
    return ndtri(probability_grid(theta, s_grid, lenses, spec))


def half_latent(spec: OpticsModelSpec) -> float:
    """``μ½ = Φ⁻¹(γ + (1-γ-λ)/2)``, the latent at a particle's threshold (``s = VA_θ(L)``)."""
    return float(ndtri(spec.chance + 0.5 * (1.0 - spec.chance - spec.lapse)))


def threshold_slope(theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
    """``∂μ_θ/∂s`` at threshold, ``(1-γ-λ) φ(0) a / φ(μ½)`` per particle: ``(N,)``."""
    mu = half_latent(spec)
    phi_mu = math.exp(-0.5 * mu * mu) * _PHI0
    return (1.0 - spec.chance - spec.lapse) * _PHI0 * np.exp(theta[:, LOG_SLOPE]) / phi_mu


def predictive_mean(posterior: ParticlePosterior, s: np.ndarray, lenses: np.ndarray) -> np.ndarray:
    """``μ̄(s_j, L_j) = Φ⁻¹(Σ_i w_i P_θi(s_j, L_j))``, the optics posterior's predictive on the
    probit scale, at sizes ``s (m,)`` through ``lenses (m, 3)``: ``(m,)``."""
    if len(s) == 0:
        return np.zeros(0)
    return ndtri(posterior.weights @ probability_correct(posterior.theta, s, lenses, posterior.spec))


class ResidualFit:
    """``g``'s posterior (Laplace) given the answers of ``posterior`` with the prior mean
    :func:`predictive_mean` at the answers (module docstring). ``gp`` is the fitted
    :class:`~visiontune.reproduction.gp.ProbitGP` over ``(s, M, J0, J45)``; its predictions are of ``g``."""

    def __init__(self, posterior: ParticlePosterior, spec: ResidualSpec) -> None:
        self.spec = spec
        self.model_spec = posterior.spec
        X = np.column_stack([posterior.s, posterior.lenses]).reshape(-1, 4)
        self.prior_mean = predictive_mean(posterior, posterior.s, posterior.lenses)
        self.gp = ProbitGP(spec.kernel(), X, posterior.correct.astype(float), prior_mean=self.prior_mean)

    def predict(self, s: np.ndarray, lenses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(m_g (m,), v_g (m,))`` at sizes ``s (m,)`` through ``lenses (m, 3)``."""
        return self.gp.predict(np.column_stack([np.asarray(s, dtype=float), lenses]))

    def lens_gradient(self, s: np.ndarray, lenses: np.ndarray) -> np.ndarray:
        """``∇_L m_g(s_j, L_j)`` ``(m, 3)`` (D⁻¹, probit units per diopter)."""
        _, _, dmu, _ = self.gp.predict_with_grad(np.column_stack([np.asarray(s, dtype=float), lenses]))
        return dmu[:, 1:]

    def probabilities(
        self, theta: np.ndarray, s: np.ndarray, lenses: np.ndarray, *, marginal: bool = True
    ) -> np.ndarray:
        """``p_i(s_j, L_j) = Φ((μ_θi + m_g) / √(1 + v_g))`` (``marginal``: ``g``'s uncertainty
        integrated out), or ``Φ(μ_θi + m_g)`` (``g`` at its posterior mean, what the decisions
        use: :mod:`~visiontune.reproduction.engines.optics_gp_engine`): ``(N, m)``."""
        m, v = self.predict(s, lenses)
        z = probit_mean(theta, s, lenses, self.model_spec) + m[None, :]
        return ndtr(z / np.sqrt(1.0 + v)[None, :] if marginal else z)

    def probability_grid(
        self, theta: np.ndarray, s_grid: np.ndarray, lenses: np.ndarray, *, marginal: bool = True
    ) -> np.ndarray:
        """:meth:`probabilities` on sizes ``s_grid (n_s,)`` × ``lenses (n_x, 3)``: ``(N, n_s, n_x)``."""
        n_s, n_x = len(s_grid), len(lenses)
        m, v = self.predict(np.repeat(s_grid, n_x), np.tile(lenses, (n_s, 1)))
        z = probit_mean_grid(theta, s_grid, lenses, self.model_spec) + m.reshape(n_s, n_x)[None]
        return ndtr(z / np.sqrt(1.0 + v).reshape(n_s, n_x)[None] if marginal else z)

    def corrections(self, theta: np.ndarray) -> np.ndarray:
        """Each draw's best correction ``P*_i + δ_i`` (module docstring): ``(N, 3)``."""
        kappa = 2.0 * threshold_slope(theta, self.model_spec) / math.log(10.0)
        delta = self.lens_gradient(theta[:, VA0], theta[:, :3]) / kappa[:, None]
        length = np.linalg.norm(delta, axis=1, keepdims=True)
        delta *= np.minimum(1.0, MAX_SHIFT_D / np.maximum(length, 1e-12))
        return theta[:, :3] + delta

    def acuity(self, theta: np.ndarray, lenses: np.ndarray) -> np.ndarray:
        """Acuity (logMAR) through ``lenses (m, 3)`` per draw, ``VA_θi(L) - m_g(VA_θi(L), L) /
        (∂μ/∂s)``: ``(N, m)``."""
        va = acuity_logmar(theta, lenses)
        n, m = va.shape
        mg, _ = self.predict(va.ravel(), np.tile(lenses, (n, 1)))
        return va - mg.reshape(n, m) / threshold_slope(theta, self.model_spec)[:, None]

    def corrected_posterior(self, posterior: ParticlePosterior) -> ParticlePosterior:
        """A shallow copy of ``posterior`` whose particles' corrections are :meth:`corrections`
        (the draws of the hybrid's best correction, with the particles' weights)."""
        out = copy.copy(posterior)
        theta = posterior.theta.copy()
        theta[:, :3] = self.corrections(posterior.theta)
        out.theta = theta
        return out


def fit_residual(posterior: ParticlePosterior, spec: ResidualSpec) -> ResidualFit:
    """:class:`ResidualFit` of ``posterior``'s letter answers (only letters: the hybrid asks no
    other kind)."""
    if len(posterior.s) != posterior.n:
        raise InvalidInputError(
            "posterior: the optics-gp model takes letter answers only "
            f"({posterior.n - len(posterior.s)} of {posterior.n} answers are of another kind)"
        )
    return ResidualFit(posterior, spec)
