"""The papers' decision rules on the optics model (:mod:`visiontune.refraction.optics_model`).

The rules of Fauvel & Chalk (contextual BO) §3.3, unchanged in what they maximise, evaluated with the particle
posterior ``{θ_i}`` (equally weighted after systematic resampling):

* **UCB-ALD**: the lens ``x = argmax_x μ_c(s0, x) + β √V[P(s0, x)]`` with ``μ_c`` the posterior
  mean of ``P(correct)``, ``V`` its epistemic variance over the posterior (Fauvel & Chalk (binary/preferential BO),
  Eq. 9, here exact for the particles), ``β = Φ⁻¹(0.95)`` (Fauvel & Chalk (contextual BO), §4) and ``s0`` the
  reference letter size, the posterior mean of the patient's best acuity ``VA*`` (where ``P`` is most sensitive to
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
(Fauvel & Chalk (contextual BO), §3.3). Lenses are kept within ``radius`` (diopters, power-vector distance) of the
current estimate, as a clinician changes lenses in small steps near the current best, then rounded to
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

__all__ = [
    "OPTICS_RULES",
    "FormulaPredictor",
    "OpticsQuery",
    "candidate_lenses",
    "letter_at",
    "mutual_information_bits",
    "propose",
    "within_radius",
]

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


def candidate_lenses(centre: np.ndarray, draws: np.ndarray, radius: float, steps: LensSteps) -> np.ndarray:
    """The lenses a rule scores: the star of steps around ``centre`` (3,) and the corrections
    ``draws (n, 3)``, each brought within ``radius`` of ``centre`` and rounded to distinct trial
    lenses, ``(m, 3)`` power vectors."""
    return _unique_lenses(within_radius(np.vstack([_star(centre), draws]), centre, radius), steps)


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


class FormulaPredictor:
    """What a rule needs of the model, for the optics model itself (the default of :func:`propose`):
    ``P(correct)`` per particle at pairs of sizes and lenses (:func:`probability_correct`), on a
    grid of sizes × lenses (:func:`probability_grid`), and each particle's best correction (its
    first three columns). A model built on the optics model (the optics-GP hybrid) passes its own."""

    def __init__(self, spec) -> None:
        self.spec = spec

    def probabilities(self, particles: np.ndarray, s: np.ndarray, pvs: np.ndarray) -> np.ndarray:
        return probability_correct(particles, s, pvs, self.spec)

    def probability_grid(self, particles: np.ndarray, s_grid: np.ndarray, pvs: np.ndarray) -> np.ndarray:
        return probability_grid(particles, s_grid, pvs, self.spec)

    def corrections(self, particles: np.ndarray) -> np.ndarray:
        return particles[:, :3]


def letter_at(particles: np.ndarray, lens: Prescription, s_grid: np.ndarray, spec) -> OpticsQuery:
    """A letter through ``lens`` at the size BALD chooses on ``particles`` (the optics model's own
    probabilities): the question the rules ask once they have chosen a lens."""
    s, info = _letter_size(FormulaPredictor(spec), particles, _lens_pv(lens), s_grid)
    return OpticsQuery(s, lens, info)


def _letter_size(predictor, particles: np.ndarray, lens_pv: np.ndarray, s_grid: np.ndarray) -> tuple[float, float]:
    """BALD over ``s_grid`` at one lens: ``(s, information bits)``."""
    info = mutual_information_bits(predictor.probability_grid(particles, s_grid, lens_pv[None, :])[:, :, 0])
    j = int(np.argmax(info))
    return float(s_grid[j]), float(info[j])


def propose(
    posterior: ParticlePosterior,
    rule: str,
    *,
    steps: LensSteps,
    s_grid: np.ndarray,
    radius: float,
    rng: np.random.Generator,
    predictor=None,
    centre: np.ndarray | None = None,
) -> OpticsQuery:
    """The next query of ``rule`` (one of :data:`OPTICS_RULES`) on ``posterior``, around ``centre``
    (default the posterior's :meth:`~ParticlePosterior.best_correction`), with the ``predictor``'s
    probabilities and corrections (default :class:`FormulaPredictor`, the optics model's own)."""
    if rule not in OPTICS_RULES:
        raise InvalidInputError(f"rule: expected one of {', '.join(OPTICS_RULES)}, got {rule!r}")
    predictor = FormulaPredictor(posterior.spec) if predictor is None else predictor
    particles = posterior.subsample(min(DECISION_PARTICLES, posterior.spec.n_particles), rng)
    corrections = predictor.corrections(particles)
    centre = posterior.best_correction() if centre is None else centre
    if rule == "ts-ald":
        draw = corrections[int(rng.integers(len(particles)))]
        lens = trial_lens(within_radius(draw, centre, radius), steps)
        s, info = _letter_size(predictor, particles, _lens_pv(lens), s_grid)
        return OpticsQuery(s, lens, info)
    draws = corrections[rng.integers(len(particles), size=_CANDIDATE_DRAWS)]
    pvs = candidate_lenses(centre, draws, radius, steps)
    if rule == "ucb-ald":
        s0 = float(particles[:, VA0].mean())
        p = predictor.probabilities(particles, np.full(len(pvs), s0), pvs)
        ucb = p.mean(axis=0) + _BETA * p.std(axis=0)
        best = int(np.argmax(ucb))
        s, info = _letter_size(predictor, particles, pvs[best], s_grid)
        return OpticsQuery(s, trial_lens(pvs[best], steps), info)

    def score(p: np.ndarray) -> np.ndarray:
        return -expected_correction_variance(corrections, p) if rule == "evr" else mutual_information_bits(p)

    coarse = s_grid[::_COARSE_SIZE_STRIDE]
    p = predictor.probability_grid(particles, coarse, pvs)
    n_s, n_x = p.shape[1:]
    flat = score(p.reshape(len(particles), n_s * n_x))
    i_x = int(np.argmax(flat) % n_x)
    i_s = int(np.argmax(flat) // n_x)
    # refine the size on the full grid around the coarse choice, at the chosen lens
    j = int(np.searchsorted(s_grid, coarse[i_s]))
    near = s_grid[max(0, j - _COARSE_SIZE_STRIDE + 1) : j + _COARSE_SIZE_STRIDE]
    p_near = predictor.probability_grid(particles, near, pvs[i_x][None, :])[:, :, 0]
    k = int(np.argmax(score(p_near)))
    return OpticsQuery(
        float(near[k]), trial_lens(pvs[i_x], steps), float(mutual_information_bits(p_near[:, k : k + 1])[0])
    )
