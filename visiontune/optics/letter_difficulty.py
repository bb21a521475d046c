"""Per-letter difficulty for the simulated patient (docs/design.md, "Letter size on screen").

A letter ``L`` shifts the patient's acuity by ``δ_L`` (logMAR) in Fauvel & Chalk (contextual BO), Eq. 13:
``P = γ + (1-γ-λ) Φ(a (s - VA(x) - δ_L))``; a hard letter has ``δ_L > 0``. Sloan letters
range from about 71% correct (C, O, S) to 94% (Z) at one size; no table ships here, the
caller supplies one with its source.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics.psychometric import PsychometricFunction

__all__ = ["check_letter_offsets", "letter_offsets_from_percent_correct"]


def check_letter_offsets(offsets) -> dict[str, float] | None:
    """Validate ``{letter: δ}`` (logMAR offsets); None passes through (all letters alike)."""
    if offsets is None:
        return None
    if not isinstance(offsets, Mapping) or not offsets:
        raise InvalidInputError(
            f"letter_offsets_logmar: expected a non-empty mapping letter -> logMAR, got {offsets!r}"
        )
    checked = {}
    for letter, value in offsets.items():
        if not isinstance(letter, str) or not letter:
            raise InvalidInputError(f"letter_offsets_logmar: keys must be letters (strings), got {letter!r}")
        v = np.asarray(value, dtype=float) if not isinstance(value, bool) else np.asarray(np.nan)
        if v.ndim != 0 or not np.isfinite(v):
            raise InvalidInputError(
                f"letter_offsets_logmar: offset of {letter!r} must be one finite number, got {value!r}"
            )
        checked[letter] = float(v)
    return checked


def letter_offsets_from_percent_correct(
    percent_correct: Mapping[str, float], psychometric: PsychometricFunction, reference_percent: float | None = None
) -> dict[str, float]:
    """Per-letter offsets ``δ`` (logMAR) from each letter's percent correct at one letter size.

    At that size the reference (average) letter is read with probability ``p_ref`` and
    letter ``L`` with ``p_L``. With ``t(p) = Φ⁻¹((p - γ)/(1 - γ - λ)) / a`` the distance of
    that size from threshold (inverse of Eq. 13, :meth:`PsychometricFunction.threshold`
    at ``VA = 0``), ``δ_L = t(p_ref) - t(p_L)``: an easier letter has ``δ < 0``.
    ``percent_correct`` values in percent, strictly between ``100 γ`` and ``100 (1 - λ)``;
    ``reference_percent`` defaults to their mean (the chart's average letter).
    """
    if not isinstance(psychometric, PsychometricFunction):
        raise InvalidInputError(f"psychometric: expected a PsychometricFunction, got {type(psychometric).__name__}")
    if not isinstance(percent_correct, Mapping) or not percent_correct:
        raise InvalidInputError(
            f"percent_correct: expected a non-empty mapping letter -> percent, got {percent_correct!r}"
        )

    def distance(name: str, pct) -> float:
        try:
            return float(psychometric.threshold(np.asarray(pct, dtype=float) / 100.0, 0.0))
        except (InvalidInputError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"{name}: unusable percent correct {pct!r} ({exc})") from None

    t_letters = {letter: distance("percent_correct", pct) for letter, pct in percent_correct.items()}
    if reference_percent is None:
        reference_percent = float(np.mean([float(v) for v in percent_correct.values()]))
    t_ref = distance("reference_percent", reference_percent)
    return {letter: t_ref - t_l for letter, t_l in t_letters.items()}
