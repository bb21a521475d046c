"""The estimate a refraction reports, and its credible region, whatever the model.

The region is summarised from posterior draws of the best correction ``P* = (M, J0, J45)``
(Thibos 1997 power vectors; weighted particles of the optics model, or the maximisers of GP
sample paths): for a credible ``level``,

* ``±`` radii around the estimate ``P̂``: the ``level`` quantiles of ``|M - M̂|``, of
  ``|J - Ĵ|`` with ``J = (J0, J45)`` (the cylinder vector), and of the dioptric distance
  ``|P* - P̂|`` (the region ``{P : |P - P̂| <= r}`` is the one whose coverage is measured);
* central ``level`` intervals of sphere and cylinder in the clinic's cylinder form, and the
  ``level`` quantile of the axis difference (degrees), what a clinician reads as
  "S ± / C ± / axis ±".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune.optics import Prescription

__all__ = [
    "CurrentEstimate",
    "Region",
    "clinical_form_arrays",
    "region_from_samples",
    "shortest_interval",
    "weighted_quantile",
]


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The ``q`` quantile of ``values (n,)`` under ``weights (n,)`` (normalised here)."""
    order = np.argsort(values)
    cw = np.cumsum(weights[order])
    return float(values[order][min(int(np.searchsorted(cw, q * cw[-1])), len(values) - 1)])


def shortest_interval(values: np.ndarray, weights: np.ndarray, level: float) -> tuple[float, float]:
    """The shortest interval ``[values[i], values[j]]`` of weighted draws holding at least ``level``
    of the weight (normalised here): the highest-posterior-density interval of a unimodal
    posterior (e.g. Chen & Shao 1999, *Monte Carlo estimation of Bayesian credible and HPD
    intervals*, J. Comput. Graph. Stat. 8:69-92, for equal weights)."""
    order = np.argsort(values)
    v, w = values[order], weights[order] / weights.sum()
    before = np.concatenate([[0.0], np.cumsum(w)[:-1]])  # weight below each draw
    end = np.searchsorted(np.cumsum(w), before + level - 1e-12)  # first draw closing >= level from i
    ok = end < len(v)
    i = int(np.argmin(np.where(ok, v[np.minimum(end, len(v) - 1)] - v, np.inf)))
    return float(v[i]), float(v[end[i]])


@dataclass(frozen=True)
class Region:
    """The ``level`` credible region of the best correction (module docstring); diopters and
    degrees. ``axis_pm_deg`` is ``None`` when the estimate has no cylinder."""

    level: float
    sphere_d: tuple[float, float]
    cylinder_d: tuple[float, float]
    axis_pm_deg: float | None
    m_pm_d: float
    cylinder_vector_pm_d: float
    distance_d: float

    @property
    def widths_d(self) -> tuple[float, float]:
        """Widths of the sphere and cylinder intervals (diopters)."""
        return (self.sphere_d[1] - self.sphere_d[0], self.cylinder_d[1] - self.cylinder_d[0])

    def to_dict(self) -> dict:
        return {
            "level": self.level,
            "sphere_d": list(self.sphere_d),
            "cylinder_d": list(self.cylinder_d),
            "axis_pm_deg": self.axis_pm_deg,
            "m_pm_d": self.m_pm_d,
            "cylinder_vector_pm_d": self.cylinder_vector_pm_d,
            "distance_d": self.distance_d,
        }


@dataclass(frozen=True)
class CurrentEstimate:
    """The best lens now (``lens``, exact, in the clinic's cylinder form), the trial lens to
    file (``rounded``), the credible ``region`` (``None`` when not computed) and the
    predicted acuity through the lens with its interval (logMAR)."""

    n_trials: int
    lens: Prescription
    rounded: Prescription
    region: Region | None
    va_logmar: float
    va_interval: tuple[float, float]


def clinical_form_arrays(pv: np.ndarray, cylinder_form: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sphere, cylinder, axis)`` arrays of power vectors ``pv (n, 3)`` in ``cylinder_form``
    (Thibos 1997, Eqs. 9-11): ``C = ∓2|J|``, ``S = M - C/2``, axis ``½ atan2(J45, J0)``
    (plus 90° in plus-cylinder form), in ``(0, 180]``."""
    half = np.hypot(pv[:, 1], pv[:, 2])
    cylinder = -2.0 * half if cylinder_form == "minus" else 2.0 * half
    axis = np.degrees(0.5 * np.arctan2(pv[:, 2], pv[:, 1])) + (0.0 if cylinder_form == "minus" else 90.0)
    axis = np.mod(axis, 180.0)
    axis = np.where(axis < 1e-9, 180.0, axis)
    return pv[:, 0] - cylinder / 2.0, cylinder, axis


def region_from_samples(
    pv: np.ndarray,
    weights: np.ndarray,
    centre: np.ndarray,
    level: float,
    cylinder_form: str,
    *,
    sphere_d: tuple[float, float] | None = None,
    cylinder_d: tuple[float, float] | None = None,
) -> Region:
    """The :class:`Region` of draws ``pv (n, 3)`` with ``weights (n,)`` around the estimate
    ``centre (3,)``; ``sphere_d`` / ``cylinder_d`` intervals may be given (the GP model's
    fixed-axis intervals), else they are the draws' central intervals in ``cylinder_form``."""
    w = weights / weights.sum()
    d = pv - centre
    tail = 0.5 * (1.0 - level)
    sphere, cylinder, axis = clinical_form_arrays(pv, cylinder_form)
    if sphere_d is None:
        sphere_d = (weighted_quantile(sphere, w, tail), weighted_quantile(sphere, w, 1.0 - tail))
    if cylinder_d is None:
        cylinder_d = (weighted_quantile(cylinder, w, tail), weighted_quantile(cylinder, w, 1.0 - tail))
    axis_pm = None
    if np.hypot(centre[1], centre[2]) > 1e-6:
        centre_axis = clinical_form_arrays(centre[None, :], cylinder_form)[2][0]
        diff = np.abs((axis - centre_axis + 90.0) % 180.0 - 90.0)
        axis_pm = weighted_quantile(diff, w, level)
    return Region(
        float(level),
        (float(sphere_d[0]), float(sphere_d[1])),
        (float(cylinder_d[0]), float(cylinder_d[1])),
        axis_pm,
        weighted_quantile(np.abs(d[:, 0]), w, level),
        weighted_quantile(np.hypot(d[:, 1], d[:, 2]), w, level),
        weighted_quantile(np.linalg.norm(d, axis=1), w, level),
    )
