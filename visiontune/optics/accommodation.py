"""Accommodation: why a young patient still reads through too much minus.

Amplitude of accommodation by age (Hofstetter 1950, *A useful age-amplitude formula*, Optom.
World 38:42-45; the three lines fitted to Duane's 1922 data)::

    minimum  A = 15.0 - 0.25 · age       (diopters)
    mean     A = 18.5 - 0.30 · age
    maximum  A = 25.0 - 0.40 · age

clipped at 0 (presbyopia). Residual error through a lens: ``r = P(lens) - P(x*)`` (power
vectors, :mod:`visiontune.optics.blur`). A lens more minus than the correction leaves the eye
hyperopic by ``-r_M``; the eye adds up to ``A`` diopters of plus to cancel it::

    r_M(eff) = r_M + min(A, max(-r_M, 0))

so the acuity curve is flat on the minus side up to ``A`` and the most plus lens with the best
acuity is ``x*`` itself (the clinical rule: maximum plus to best visual acuity; Elliott,
*Clinical Procedures in Primary Eye Care*, 5th ed., ch. 4). Accommodation changes only the
spherical equivalent, not ``J0``, ``J45``.
"""

from __future__ import annotations

import numpy as np

from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError

__all__ = ["HOFSTETTER", "YOUNG_AGE_YEARS", "hofstetter_amplitude_d", "accommodated_residual"]

#: ``(intercept, slope per year)`` of Hofstetter's three lines (diopters, diopters/year).
HOFSTETTER = {"minimum": (15.0, 0.25), "mean": (18.5, 0.30), "maximum": (25.0, 0.40)}
#: Up to this age (years) a patient is "young" for over-minus: even Hofstetter's minimum
#: amplitude is then at least 6.25 D, so a lens a quarter diopter too minus reads as well as the
#: correction; the validation counts over-minused patients up to this age.
YOUNG_AGE_YEARS = 35.0


def hofstetter_amplitude_d(age_years, which: str = "mean"):
    """Amplitude of accommodation (diopters, >= 0) at ``age_years`` by Hofstetter's
    ``which`` line (``"minimum"``, ``"mean"`` or ``"maximum"``). Ages in [0, 120] years."""
    if which not in HOFSTETTER:
        raise InvalidInputError(f"which: expected one of {', '.join(HOFSTETTER)}, got {which!r}")
    age = finite_array("age_years", age_years)
    if np.any((age < 0) | (age > 120)):
        raise InvalidInputError(f"age_years: expected ages in [0, 120] years, got {age_years!r}")
    intercept, per_year = HOFSTETTER[which]
    amp = np.maximum(intercept - per_year * age, 0.0)
    return float(amp) if amp.ndim == 0 else amp


def accommodated_residual(residual, amplitude_d) -> np.ndarray:
    """Residual power vectors after accommodation: ``(..., 3)`` -> same shape.

    ``residual``: ``r = P(lens) - P(x*)`` as ``(..., 3)`` ``(M, J0, J45)`` in diopters.
    ``amplitude_d``: available accommodation ``A >= 0`` (diopters), broadcasting against
    ``residual[..., 0]``. Only ``M`` changes: ``r_M + min(A, max(-r_M, 0))``.
    """
    r = np.asarray(residual, dtype=float)
    amp = np.asarray(amplitude_d, dtype=float)
    if np.any(amp < 0):
        raise InvalidInputError(f"amplitude_d: accommodation must be >= 0 D, got min {amp.min()}")
    out = r.copy()
    out[..., 0] = r[..., 0] + np.minimum(amp, np.maximum(-r[..., 0], 0.0))
    return out
