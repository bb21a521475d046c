"""The optics-GP hybrid (:mod:`~visiontune.reproduction.engines.optics_gp_model`) as a refraction engine.

The optics engine's particle posterior runs alongside on the same answers (θ's uncertainty,
its predictive for the GP's prior mean, the search radius); the GP ``g`` is refitted after each answer.
What differs from :class:`~visiontune.refraction.optics_engine.OpticsEngine`:

* **Decisions**: the optics rules (:mod:`~visiontune.refraction.optics_rules`: UCB-ALD and TS-ALD
  for the lens with BALD for the size, BALD, EVR; the clinical protocol's is EVR) on the same
  candidates, with each particle's ``P(correct)`` the hybrid's with ``g`` at its posterior mean,
  ``p_i = Φ(μ_θi + m_g)``, and its best correction ``P*_i + δ_i`` (moved by ``g``): ``g`` is
  plugged in at its posterior mean as ``θ``'s uncertainty is carried by the particles, so that
  with ``σ_g -> 0`` the decisions are the optics model's exactly. (Integrating ``g`` out,
  ``Φ((μ_θi + m_g)/√(1 + v_g))``, treats its uncertainty as noise of the answer, largest where
  nothing was asked; the first version did so, docs/results/clinical-validation-optics-gp.md.)
* **Estimate**: the Bayes estimate of :meth:`ParticlePosterior.best_correction` (2/3 quantile of
  ``M``, mean of ``J0``, ``J45``) over the draws of the hybrid's best correction ``P*_i + δ_i``
  with the particles' weights, filed as the optics engine files its estimate (trial lens, the
  start's axis kept unless the answers show otherwise); the credible region from the same
  draws (:func:`~visiontune.refraction.estimate.region_from_samples`).
* **Acuity** through a lens: the hybrid's (the latent's threshold moved by ``m_g``).

Letters only: the loop never asks this engine for a comparison or a slider, and the protocol
reader refuses ``[comparisons]`` and ``[sliders]`` with ``model.type = "optics-gp"``.
"""

from __future__ import annotations

import numpy as np

from visiontune.optics import Prescription
from visiontune.refraction.optics_engine import OpticsEngine
from visiontune.refraction.optics_model import ParticlePosterior
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.start import StartingPoint
from visiontune.reproduction.engines.optics_gp_model import ResidualFit, ResidualSpec, fit_residual

__all__ = ["OpticsGPEngine"]

#: Draws behind the predicted acuity and the psychometric band.
_SUMMARY_DRAWS = 400


class _HybridPredictor:
    """The hybrid's probabilities (``g`` at its posterior mean) and moved corrections, for
    :func:`visiontune.refraction.optics_rules.propose` (its ``predictor``)."""

    def __init__(self, fit: ResidualFit) -> None:
        self.fit = fit

    def probabilities(self, particles: np.ndarray, s: np.ndarray, pvs: np.ndarray) -> np.ndarray:
        return self.fit.probabilities(particles, s, pvs, marginal=False)

    def probability_grid(self, particles: np.ndarray, s_grid: np.ndarray, pvs: np.ndarray) -> np.ndarray:
        return self.fit.probability_grid(particles, s_grid, pvs, marginal=False)

    def corrections(self, particles: np.ndarray) -> np.ndarray:
        return self.fit.corrections(particles)


class OpticsGPEngine(OpticsEngine):
    """Propose, estimate and map with the optics-GP hybrid for one session (letters only)."""

    model_type = "optics-gp"

    def __init__(self, protocol: Protocol, start: StartingPoint, seed: int) -> None:
        super().__init__(protocol, start, seed)
        m = protocol.model
        self.residual = ResidualSpec(m.residual_sd, m.residual_lengthscale_logmar, m.residual_lengthscale_d)
        self._fit: tuple[tuple, ResidualFit, ParticlePosterior] | None = None

    def _fitted(self, trials) -> tuple[ResidualFit, ParticlePosterior]:
        post = self.posterior(trials)
        key = tuple(self._key)
        if self._fit is None or self._fit[0] != key:
            fit = fit_residual(post, self.residual)
            self._fit = (key, fit, fit.corrected_posterior(post))
        return self._fit[1], self._fit[2]

    def fit(self, trials) -> tuple[ParticlePosterior, ResidualFit]:
        """The particle posterior after ``trials`` and ``g`` fitted at its mean (cached)."""
        fit = self._fitted(trials)[0]
        return self._posterior, fit

    def correction_draws(self, trials) -> ParticlePosterior:
        """The particles with their best corrections moved by ``g`` (the hybrid's draws, cached)."""
        return self._fitted(trials)[1]

    # ------------------------------------------------------------------ what the hybrid replaces
    def _rule_inputs(self, trials) -> tuple:
        """The rules run on the hybrid's probabilities and moved corrections, around its estimate."""
        fit = self.fit(trials)[1]
        return _HybridPredictor(fit), self.correction_draws(trials).best_correction()

    def _acuity(self, trials, lenses: np.ndarray, level: float = 0.95):
        """The hybrid's acuity (logMAR) through ``lenses (m, 3)``: mean and central ``level``
        interval over :data:`_SUMMARY_DRAWS` particles, each ``(m,)``."""
        post, fit = self.fit(trials)
        rng = np.random.default_rng([self.seed, post.n, 0xAC])
        va = fit.acuity(post.subsample(min(_SUMMARY_DRAWS, self.spec.n_particles), rng), np.atleast_2d(lenses))
        tail = 50.0 * (1.0 - level)
        lo, hi = np.percentile(va, [tail, 100.0 - tail], axis=0)
        return va.mean(axis=0), lo, hi

    def psychometric(self, trials, lens: Prescription, level: float, n: int = 61):
        """``(s, p, lo, hi)``: the hybrid's mean ``P(correct)`` against letter size through
        ``lens`` over the draws, and its central ``level`` band."""
        post, fit = self.fit(trials)
        s = np.linspace(*self.protocol.logmar_range, n)
        particles = post.subsample(
            min(_SUMMARY_DRAWS, self.spec.n_particles), np.random.default_rng([self.seed, post.n, 0x9F])
        )
        p = fit.probabilities(particles, s, np.repeat(lens.power_vector_array()[None, :], n, axis=0))
        tail = 50.0 * (1.0 - level)
        lo, hi = np.percentile(p, [tail, 100.0 - tail], axis=0)
        return s, p.mean(axis=0), lo, hi
