"""What a fitted model says about the patient: best lens, its credible region, acuity.

All functions take a fitted :class:`visiontune.reproduction.gp.ProbitGP` over inputs ``(s, S, C)`` and the
session's :class:`visiontune.reproduction.acquisition.Problem`.

- Best lens ``x̂ = argmax_x μ_c(s0, x)`` at the reference letter size ``s0`` (the solution the
  benchmarks score, docs/design.md, "Stratified analysis").
- Credible region: the ``level`` central interval, per coordinate, of ``argmax_x f̃(s0, x)`` over
  approximate posterior samples ``f̃`` (Fauvel & Chalk (contextual BO), supp. G, decoupled bases), each maximised on a
  grid.
- Predicted acuity through a lens: the letter size where the latent mean crosses 0, i.e. where
  the model's ``P(correct) = Φ(f) = ½`` (Fauvel & Chalk (contextual BO), Eq. 14 with ``γ ≈ 0``, as the GP model assumes,
  Fauvel & Chalk (contextual BO), §5.2); the interval is where ``μ_f ± z σ_f`` cross 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from visiontune.reproduction.acquisition.binary_policies import Problem
from visiontune.reproduction.acquisition.solution import solution
from visiontune.reproduction.gp import sample_posterior_functions


@dataclass(frozen=True)
class CredibleRegion:
    """Central ``level`` intervals (diopters) of the best sphere and cylinder, and the sampled
    maximisers ``maxima (n_samples, 2)`` they come from."""

    sphere_d: tuple[float, float]
    cylinder_d: tuple[float, float]
    level: float
    maxima: np.ndarray

    @property
    def widths_d(self) -> tuple[float, float]:
        return (self.sphere_d[1] - self.sphere_d[0], self.cylinder_d[1] - self.cylinder_d[0])


def best_lens(model, problem: Problem, rng: np.random.Generator) -> np.ndarray:
    """``(2,)`` lens ``(S, C)`` maximising the predicted probability of reading at ``s0``."""
    return solution(model, problem, rng)


def lens_grid(problem: Problem, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n × n`` grid over the lens box: sphere values ``(n,)``, cylinder values ``(n,)`` and
    the ``(n², 2)`` points, sphere varying slowest."""
    sphere = np.linspace(*problem.box[0], n)
    cylinder = np.linspace(*problem.box[1], n)
    pts = np.stack(np.meshgrid(sphere, cylinder, indexing="ij"), axis=-1).reshape(-1, 2)
    return sphere, cylinder, pts


def credible_region(
    model, problem: Problem, rng: np.random.Generator, *, level: float = 0.95, n_samples: int = 64, grid: int = 41
) -> CredibleRegion:
    """Credible intervals of the best lens from ``n_samples`` posterior sample paths, each
    maximised over a ``grid × grid`` lattice of the lens box at the reference letter size."""
    samples = sample_posterior_functions(model, problem.input_box, n_samples, rng)
    _, _, pts = lens_grid(problem, grid)
    inputs = np.column_stack([np.full(len(pts), problem.reference_context[0]), pts])
    maxima = pts[np.argmax(samples.evaluate(inputs), axis=1)]
    tail = 50.0 * (1.0 - level)
    lo, hi = np.percentile(maxima, [tail, 100.0 - tail], axis=0)
    return CredibleRegion((float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1])), level, maxima)


def _zero_crossings(values: np.ndarray, s_grid: np.ndarray) -> np.ndarray:
    """First letter size where each column of ``values (n_s, m)`` (increasing in ``s``) reaches
    0, linearly interpolated; the box edge where it never crosses."""
    reached = values >= 0
    first = np.argmax(reached, axis=0)
    j = np.clip(first, 1, len(s_grid) - 1)
    cols = np.arange(values.shape[1])
    v0, v1 = values[j - 1, cols], values[j, cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(v1 != v0, v0 / (v0 - v1), 0.0)
    out = s_grid[j - 1] + np.clip(t, 0.0, 1.0) * (s_grid[j] - s_grid[j - 1])
    out[reached[0]] = s_grid[0]
    out[~reached.any(axis=0)] = s_grid[-1]
    return out


def predicted_acuity(model, problem: Problem, lenses, *, level: float = 0.95, n_s: int = 61):
    """Predicted acuity (logMAR) through each lens of ``lenses (m, 2)``, with its pointwise
    ``level`` interval: ``(va (m,), lower (m,), upper (m,))``, clipped to the context box."""
    lenses = np.atleast_2d(np.asarray(lenses, dtype=float))
    s_grid = np.linspace(*problem.context_box[0], n_s)
    inputs = np.column_stack([np.repeat(s_grid, len(lenses)), np.tile(lenses, (n_s, 1))])
    mu, var = model.predict(inputs)
    mu = mu.reshape(n_s, len(lenses))
    sd = np.sqrt(np.maximum(var, 0.0)).reshape(n_s, len(lenses))
    z = norm.ppf(0.5 + level / 2.0)
    return _zero_crossings(mu, s_grid), _zero_crossings(mu + z * sd, s_grid), _zero_crossings(mu - z * sd, s_grid)


def acuity_map(model, problem: Problem, n: int = 25) -> dict:
    """Posterior acuity map: predicted logMAR on an ``n × n`` lens grid, as a JSON-ready dict
    ``{"sphere_d": [n], "cylinder_d": [n], "va_logmar": [[n] * n]}`` (rows: sphere)."""
    sphere, cylinder, pts = lens_grid(problem, n)
    va, _, _ = predicted_acuity(model, problem, pts)
    return {"sphere_d": sphere.tolist(), "cylinder_d": cylinder.tolist(), "va_logmar": va.reshape(n, n).tolist()}
