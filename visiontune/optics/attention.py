"""A slow drift of attention over a session (fatigue), for simulated patients.

Over a long letter task a patient lapses more often and their threshold creeps up. At
trial ``k`` (0-based, the trial's index in the session)::

    λ(k)  = λ + Δλ · min(k / K, 1)          (lapse rate grows linearly, then stays)
    δ(k)  = d · k / 100                     (logMAR added to the acuity, linear in k)

with ``λ`` the patient's own lapse rate, ``Δλ`` = :attr:`AttentionDrift.lapse_increase`,
``K`` = :attr:`AttentionDrift.over_trials` and ``d`` =
:attr:`AttentionDrift.logmar_per_100_trials`. The patient then answers trial ``k`` with
``P = γ + (1-γ-λ(k)) Φ(a (s - VA(x) - δ_letter - δ(k)))``.

Sources and assumptions. That sustained attention declines with time on task is the
vigilance decrement (Mackworth 1948, *The breakdown of vigilance during prolonged visual
search*, Q. J. Exp. Psychol. 1:6-21); lapses as the upper asymptote of the psychometric
function follow Wichmann & Hill (2001, Percept. Psychophys. 63:1293). We found no published
rate for fatigue within one acuity or refraction session: the linear forms and every
magnitude used with them (e.g. +3 percentage points of lapses over 120 trials, +0.02 logMAR
per 100 trials) are **assumptions**, chosen small enough that a good engine should still
succeed and large enough to matter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_int, scalar

__all__ = ["AttentionDrift", "check_trial_index"]


def check_trial_index(k) -> int:
    """``k`` as a trial index (integer >= 0), or raise naming ``k``."""
    return check_int("k", k, lo=0)


@dataclass(frozen=True)
class AttentionDrift:
    """Attention drift over a session (module docstring for the formulas and sources).

    ``lapse_increase``: ``Δλ``, added to the lapse rate by trial ``over_trials`` (in [0, 1)).
    ``over_trials``: ``K`` (integer >= 1), the trials over which the lapse rate grows.
    ``logmar_per_100_trials``: ``d``, threshold drift in logMAR per 100 trials (in [-1, 1];
    positive is fatigue, the acuity worsens).
    """

    lapse_increase: float = 0.0
    over_trials: int = 120
    logmar_per_100_trials: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "lapse_increase", scalar("lapse_increase", self.lapse_increase, 0.0, 0.999))
        k = self.over_trials
        object.__setattr__(self, "over_trials", check_int("over_trials", k, lo=1))
        object.__setattr__(
            self, "logmar_per_100_trials", scalar("logmar_per_100_trials", self.logmar_per_100_trials, -1.0, 1.0)
        )

    def lapse_at(self, k: int, base_lapse: float) -> float:
        """``λ(k) = λ + Δλ · min(k / K, 1)`` for trial ``k`` (0-based)."""
        k = check_trial_index(k)
        return float(base_lapse + self.lapse_increase * min(k / self.over_trials, 1.0))

    def logmar_shift_at(self, k: int) -> float:
        """``δ(k) = d · k / 100`` (logMAR) for trial ``k`` (0-based)."""
        k = check_trial_index(k)
        return float(self.logmar_per_100_trials * k / 100.0)

    def max_lapse(self, base_lapse: float) -> float:
        """The largest lapse rate reached, ``λ + Δλ``."""
        return float(np.float64(base_lapse) + self.lapse_increase)

    def to_dict(self) -> dict:
        return {
            "lapse_increase": self.lapse_increase,
            "over_trials": self.over_trials,
            "logmar_per_100_trials": self.logmar_per_100_trials,
        }
