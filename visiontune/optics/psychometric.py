"""Psychometric function of an n-alternative letter task (Fauvel & Chalk (contextual BO) §5.1, Eqs. 13-14).

With letter size ``s`` (logMAR), acuity ``VA`` (logMAR), slope ``a`` (logMAR⁻¹),
chance ``γ = 1/n`` and lapse rate ``λ``::

    P(correct | s) = γ + (1 - γ - λ) Φ(a (s - VA))

Fauvel & Chalk (contextual BO), Eq. 13, writes ``γ + (1-γ) Φ(a s + b)`` with ``VA = -b/a`` (the inflexion point,
where ``P = (1+γ)/2``); that is the case ``λ = 0``. The lapse enters only as the upper
asymptote ``1 - λ`` (Wichmann & Hill 2001): it is the same as a patient who, on a fraction
``λ / (1 - γ)`` of trials, does not look and guesses. ``VA`` stays the point where
``Φ(·) = ½``, i.e. ``P = γ + (1-γ-λ)/2``.

The latent of Eq. 14 is ``f = Φ⁻¹(P(correct))`` so that ``P = Φ(f)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune._validate import check_int, finite_array, scalar
from visiontune.errors import InvalidInputError

__all__ = ["PsychometricFunction"]


def _out(arr: np.ndarray):
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True)
class PsychometricFunction:
    """``P(correct | s, VA) = γ + (1-γ-λ) Φ(a (s - VA))`` (Fauvel & Chalk (contextual BO), Eq. 13, with lapse).

    ``slope``: ``a`` > 0, logMAR⁻¹ (1 to 8 in the contextual BO paper, 5 in its figure 3).
    ``n_alternatives``: integer ``n >= 2``; chance ``γ = 1/n`` (26 letters in that paper,
    10 Sloan letters). ``lapse``: ``λ`` in ``[0, 1 - γ)``.
    """

    slope: float
    n_alternatives: int
    lapse: float = 0.0

    def __post_init__(self) -> None:
        slope = scalar("slope", self.slope)
        if slope <= 0:
            raise InvalidInputError(f"slope: must be > 0 (logMAR^-1), got {float(slope)}")
        n = self.n_alternatives
        check_int("n_alternatives", n)
        if n < 2:
            raise InvalidInputError(f"n_alternatives: a forced-choice task needs >= 2 alternatives, got {n}")
        lapse = scalar("lapse", self.lapse)
        gamma = 1.0 / int(n)
        if not 0.0 <= float(lapse) < 1.0 - gamma:
            raise InvalidInputError(f"lapse: must be in [0, 1 - 1/n) = [0, {1.0 - gamma:.6g}), got {float(lapse)}")
        object.__setattr__(self, "slope", float(slope))
        object.__setattr__(self, "n_alternatives", int(n))
        object.__setattr__(self, "lapse", float(lapse))

    @property
    def guess_rate(self) -> float:
        """Chance probability ``γ = 1/n``."""
        return 1.0 / self.n_alternatives

    def latent(self, s, va):
        """Linear latent ``a (s - VA)``; ``s``, ``va`` logMAR, broadcast. Unitless."""
        s_arr = finite_array("s", s)
        va_arr = finite_array("va", va)
        return _out(self.slope * (s_arr - va_arr))

    def probability_correct(self, s, va):
        """``γ + (1-γ-λ) Φ(a (s - VA))``; ``s`` (letter size) and ``va`` (acuity) in logMAR,
        any broadcastable shapes. Returns probabilities in ``[γ, 1-λ]``."""
        z = np.asarray(self.latent(s, va))
        p = self.guess_rate + (1.0 - self.guess_rate - self.lapse) * ndtr(z)
        return _out(p)

    def probability_wrong(self, s, va):
        """``1 - P(correct) = λ + (1-γ-λ) Φ(-a (s - VA))``, accurate where ``P`` rounds to 1."""
        z = np.asarray(self.latent(s, va))
        return _out(self.lapse + (1.0 - self.guess_rate - self.lapse) * ndtr(-z))

    def probit_latent(self, s, va):
        """Fauvel & Chalk (contextual BO), Eq. 14: ``f = Φ⁻¹(P(correct | s, VA))`` so that ``P = Φ(f)``.

        Above ``P = ½`` computed as ``-Φ⁻¹(1 - P)`` from :meth:`probability_wrong`, so ``f``
        stays finite for large letters (with ``λ = 0``, up to ``a (s - VA) ≈ 37``)."""
        p = np.asarray(self.probability_correct(s, va))
        q = np.asarray(self.probability_wrong(s, va))
        return _out(np.where(p < 0.5, ndtri(np.minimum(p, 0.5)), -ndtri(np.minimum(q, 0.5))))

    def threshold(self, probability, va=0.0):
        """Letter size (logMAR) at which ``P(correct) = probability``:
        ``s = VA + Φ⁻¹((p - γ)/(1 - γ - λ)) / a``. ``probability`` strictly inside
        ``(γ, 1 - λ)``; ``threshold((1+γ-λ)/2, va) == va``."""
        p = finite_array("probability", probability)
        va_arr = finite_array("va", va)
        lo, hi = self.guess_rate, 1.0 - self.lapse
        if np.any((p <= lo) | (p >= hi)):
            raise InvalidInputError(
                f"probability: must be strictly between chance {lo:.6g} and 1 - lapse = {hi:.6g}, got {p.tolist()}"
            )
        u = (p - lo) / (1.0 - lo - self.lapse)
        return _out(va_arr + ndtri(u) / self.slope)
