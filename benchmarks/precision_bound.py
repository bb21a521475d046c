"""How many letter answers a ±0.25 D, 95% credible region needs at best (Cramér-Rao bound).

The clinical validation asks the precision stop (95% region within ±0.25 D on M and on J = (J0, J45)) to fire
by a median of 60 answers. This script computes the fewest answers any design could need for a
calibrated posterior to get there, under assumptions all in the design's favour: the patient
follows the model exactly, the best-corrected acuity, the slope and the accommodation are known
(only P* = (M, J0, J45) is unknown), no lapses beyond the model's, and every answer is asked at
the single most informative letter size and lens offset.

Per answer, the Fisher information about one power-vector component ``x`` at lens offset ``d``
from the truth along it and letter size ``s`` is (binomial, Fauvel & Chalk (contextual BO), Eq. 13 with the
Blendowske 2015 acuity ``VA = VA* + log10(1 + d²)``)::

    I(d, s) = (∂p/∂x)² / (p (1 - p)),   p = γ + (1-γ-λ) Φ(a (s - VA)),
    ∂p/∂x  = (1-γ-λ) φ(a (s - VA)) · a · 2d / (ln 10 · (1 + d²))

maximised over ``(d, s)``. With ``n_x`` answers spent on component ``x`` and a Gaussian prior of
standard deviation ``σ_x`` (the starting prescription's, :mod:`visiontune.refraction.start`), the
posterior standard deviation is at best ``(1/σ_x² + n_x I*)^(-1/2)``. The region is met when
``1.96 σ_M <= 0.25`` and the 95% radius of the 2-D J, ``2.448 σ_J``, is ``<= 0.25`` (Rayleigh).

Run: python benchmarks/precision_bound.py
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from visiontune.refraction.start import SOURCES, YOUNG_AUTOREFRACTION_SIGMA_M_D

CHANCE, LAPSE = 0.1, 0.04  # 10 Sloan letters; the clinical protocol's lapse
Z_M, Z_J = 1.96, float(np.sqrt(-2.0 * np.log(0.05)))  # 95% half-width (1-D), 95% radius (2-D)
TARGET_D = 0.25


def best_information(slope: float) -> tuple[float, float]:
    """``(I*, d*)``: the largest Fisher information per answer and the lens offset (D) giving it."""
    d = np.linspace(0.01, 3.0, 600)[:, None]
    z = np.linspace(-4.0, 4.0, 801)[None, :]
    p = CHANCE + (1 - CHANCE - LAPSE) * norm.cdf(z)
    dp = (1 - CHANCE - LAPSE) * norm.pdf(z) * slope * 2 * d / (np.log(10) * (1 + d**2))
    info = dp**2 / (p * (1 - p))
    i, _ = np.unravel_index(np.argmax(info), info.shape)
    return float(info.max()), float(d[i, 0])


def answers_needed(info: float, sigma_m: float, sigma_j: float) -> int:
    """Fewest answers, split optimally between M, J0 and J45, for the region to be met."""
    need_m = max(0.0, (Z_M / TARGET_D) ** 2 - 1 / sigma_m**2) / info
    need_j = max(0.0, (Z_J / TARGET_D) ** 2 - 1 / sigma_j**2) / info
    return int(np.ceil(need_m + 2 * need_j))


def main() -> None:
    print("fewest answers for a 95% region within ±0.25 D on M and J (everything but P* known):")
    starts = {name: s for name, s in SOURCES.items() if s is not None}
    starts["autorefraction, aged <= 40"] = (YOUNG_AUTOREFRACTION_SIGMA_M_D, SOURCES["autorefraction"][1])
    for slope in (3.0, 5.0, 8.0):
        info, offset = best_information(slope)
        cells = ", ".join(f"{name} {answers_needed(info, sm, sj)}" for name, (sm, sj) in starts.items())
        print(f"  slope {slope:g} logMAR^-1: I* = {info:.2f} per answer at {offset:.2f} D off; {cells}")


if __name__ == "__main__":
    main()
