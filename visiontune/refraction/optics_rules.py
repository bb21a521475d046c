"""The papers' decision rules on the optics model (:mod:`visiontune.refraction.optics_model`).

The rules of Fauvel & Chalk (contextual BO) §3.3, unchanged in what they maximise, evaluated with the particle
posterior ``{θ_i}`` (equally weighted after systematic resampling):

* **UCB-ALD**: the lens ``x = argmax_x μ_c(s0, x) + β √V[P(s0, x)]`` with ``μ_c`` the posterior
  mean of ``P(correct)``, ``V`` its epistemic variance over the posterior (Fauvel & Chalk (binary/preferential BO), Eq. 9, here
  exact for the particles), ``β = Φ⁻¹(0.95)`` (002 §4) and ``s0`` the reference letter size,
  the posterior mean of the patient's best acuity ``VA*`` (where ``P`` is most sensitive to
  the lens); then the letter size by BALD.
* **TS-ALD**: Thompson sampling: one particle drawn from the posterior, its best correction as
  the lens (the lens that maximises that sample's ``P(correct | s, x)`` at every ``s``); then
  the letter size by BALD.
* **EVR** (VisionTune, beyond the papers): the query ``(s, x)`` after whose answer the expected
  posterior variance of the correction, ``E_y[tr Cov(P* | y)]``, is smallest: information about
  the lens only, where BALD also spends answers on the nuisance ``VA*``, slope and accommodation.
* **BALD** (over ``(s, x)`` jointly): the query of largest mutual information between the answer
  and ``θ`` (Houlsby et al. 2011, *Bayesian active learning for classification and preference
  learning*, arXiv:1112.5745): ``I = h(E[p]) - E[h(p)]``, ``h`` the binary entropy (bits), exact
  for the particles.

The letter size of UCB-ALD and TS-ALD is BALD's argmax over the chart's sizes at the chosen lens
(002 §3.3). Lenses are kept within ``radius`` (diopters, power-vector distance) of the current
estimate, as a clinician changes lenses in small steps near the current best, then rounded to
the trial lens (:func:`visiontune.refraction.lenses.trial_lens`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import LensSteps, trial_lens, trial_lens_power_vectors
from visiontune.refraction.optics_model import (
    VA0,
    ParticlePosterior,
    binary_entropy_bits,
    probability_correct,
    probability_grid,
)

__all__ = ["OPTICS_RULES", "OpticsQuery", "mutual_information_bits", "propose", "within_radius"]

OPTICS_RULES = ("ucb-ald", "ts-ald", "bald", "evr")
_BETA = float(norm.ppf(0.95))
#: Particles used by a decision (a systematic subsample of the posterior).
DECISION_PARTICLES = 600
#: Lens candidates: posterior draws plus a star of steps around the estimate.
_CANDIDATE_DRAWS = 48
_STAR_STEPS_D = (0.25, 0.5, 0.75, 1.0)
#: The joint (size, lens) search first takes every second size of the grid, then refines.
_COARSE_SIZE_STRIDE = 2


@dataclass(frozen=True)
class OpticsQuery:
    """The next presentation: letter size ``s_logmar``, the trial ``lens`` and the expected
    information of its answer (bits)."""

    s_logmar: float
    lens: Prescription
    information_bits: float


def mutual_information_bits(p: np.ndarray) -> np.ndarray:
    """``h(mean_i p_i) - mean_i h(p_i)`` over axis 0 of ``p (N, ...)`` (bits)."""
    return binary_entropy_bits(p.mean(axis=0)) - binary_entropy_bits(p).mean(axis=0)


def expected_correction_variance(pv: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Expected posterior variance ``E_y[tr Cov(P* | y)]`` (D²) after one answer, per query:
    ``pv (N, 3)`` equally weighted particles' corrections, ``p (N, Q)`` their ``P(correct)``."""
    out = np.zeros(p.shape[1])
    for like in (p, 1.0 - p):
        mass = like.sum(axis=0)
        mean = (like.T @ pv) / mass[:, None]
        second = (like.T @ np.sum(pv**2, axis=1)) / mass
        out += (mass / len(pv)) * (second - np.sum(mean**2, axis=1))
    return out


def within_radius(pv: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """``pv (..., 3)`` moved onto the ball of ``radius`` D around ``centre`` where outside it."""
    d = pv - centre
    length = np.linalg.norm(d, axis=-1, keepdims=True)
    scale = np.where(length > radius, radius / np.maximum(length, 1e-12), 1.0)
    return centre + d * scale


def _lens_pv(rx: Prescription) -> np.ndarray:
    return rx.power_vector_array()


def _unique_lenses(pvs: np.ndarray, steps: LensSteps) -> np.ndarray:
    """The distinct trial lenses nearest to ``pvs (n, 3)``, as ``(m, 3)`` power vectors."""
    rounded = trial_lens_power_vectors(pvs, steps)
    _, first = np.unique(np.round(rounded, 6), axis=0, return_index=True)
    return rounded[np.sort(first)]


def _star(centre: np.ndarray) -> np.ndarray:
    """Steps along M, J0 and J45 around ``centre`` (the flanks that locate the best lens)."""
    out = [centre]
    for step in _STAR_STEPS_D:
        for axis, scale in ((0, 1.0), (1, 0.5), (2, 0.5)):
            for sign in (-1.0, 1.0):
                p = centre.copy()
                p[axis] += sign * step * scale
                out.append(p)
    return np.array(out)


def _letter_size(particles: np.ndarray, lens_pv: np.ndarray, s_grid: np.ndarray, spec) -> tuple[float, float]:
    """BALD over ``s_grid`` at one lens: ``(s, information bits)``."""
    info = mutual_information_bits(probability_grid(particles, s_grid, lens_pv[None, :], spec)[:, :, 0])
    j = int(np.argmax(info))
    return float(s_grid[j]), float(info[j])


def propose(posterior: ParticlePosterior, rule: str, *, steps: LensSteps, s_grid: np.ndarray, radius: float,
            rng: np.random.Generator) -> OpticsQuery:
    """The next query of ``rule`` (one of :data:`OPTICS_RULES`) on ``posterior``."""
    if rule not in OPTICS_RULES:
        raise InvalidInputError(f"rule: expected one of {', '.join(OPTICS_RULES)}, got {rule!r}")
    spec = posterior.spec
    particles = posterior.subsample(min(DECISION_PARTICLES, spec.n_particles), rng)
    centre = posterior.best_correction()
    if rule == "ts-ald":
        draw = particles[int(rng.integers(len(particles))), :3]
        lens = trial_lens(within_radius(draw, centre, radius), steps)
        s, info = _letter_size(particles, _lens_pv(lens), s_grid, spec)
        return OpticsQuery(s, lens, info)
    draws = particles[rng.integers(len(particles), size=_CANDIDATE_DRAWS), :3]
    candidates = within_radius(np.vstack([_star(centre), draws]), centre, radius)
    pvs = _unique_lenses(candidates, steps)
    if rule == "ucb-ald":
        s0 = float(particles[:, VA0].mean())
        p = probability_correct(particles, np.full(len(pvs), s0), pvs, spec)
        ucb = p.mean(axis=0) + _BETA * p.std(axis=0)
        best = int(np.argmax(ucb))
        s, info = _letter_size(particles, pvs[best], s_grid, spec)
        return OpticsQuery(s, trial_lens(pvs[best], steps), info)
    coarse = s_grid[::_COARSE_SIZE_STRIDE]
    p = probability_grid(particles, coarse, pvs, spec)
    n_s, n_x = p.shape[1:]
    flat = p.reshape(len(particles), n_s * n_x)
    score = -expected_correction_variance(particles[:, :3], flat) if rule == "evr" else mutual_information_bits(flat)
    i_x = int(np.argmax(score) % n_x)
    i_s = int(np.argmax(score) // n_x)
    # refine the size on the full grid around the coarse choice, at the chosen lens
    j = int(np.searchsorted(s_grid, coarse[i_s]))
    near = s_grid[max(0, j - _COARSE_SIZE_STRIDE + 1): j + _COARSE_SIZE_STRIDE]
    p_near = probability_grid(particles, near, pvs[i_x][None, :], spec)[:, :, 0]
    score_near = (-expected_correction_variance(particles[:, :3], p_near) if rule == "evr"
                  else mutual_information_bits(p_near))  # fmt: skip
    k = int(np.argmax(score_near))
    return OpticsQuery(float(near[k]), trial_lens(pvs[i_x], steps), float(mutual_information_bits(p_near[:, k:k + 1])[0]))
