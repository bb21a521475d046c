"""Comparison answers in the optics model: their likelihood over the particles.

The patient compares lens 1 and lens 2 while reading letters of size ``s`` (logMAR) and
answers ``"1"``, ``"2"`` or ``"="``. The two models of :mod:`visiontune.optics.comparison`
(seed 002 Eq. 11, the default, and blur discrimination; both with an indifference band ``τ``
and a lapse ``ε``) are written here for every particle ``θ_i = (M, J0, J45, VA*, log a, A)`` of
:mod:`visiontune.refraction.optics_model`::

    Thurstone, linear latent   δ_i = a_i (VA_i(L2) - VA_i(L1))
    Thurstone, probit latent   δ_i = Φ⁻¹(P_i(correct | s, L1)) - Φ⁻¹(P_i(correct | s, L2))   (002 Eq. 14)
    blur discrimination        δ_i = (ln ρ(b_i(L2)) - ln ρ(b_i(L1))) / w,  ρ(b) = √(b² + b_i²)

with ``VA_i`` and the dioptric blur ``b_i = |r|`` (after the particle's accommodation) of the
letter model, then ``P("1") = Φ(δ - τ)``, ``P("2") = Φ(-δ - τ)``, ``P("=") = 1 - P("1") - P("2")``,
mixed with ``ε/3``. The model's ``τ``, ``ε`` and blur constants are settings
(:class:`~visiontune.optics.comparison.ComparisonModel`), not unknowns: the particles carry no
more dimensions than the letter model's six.

:class:`ComparisonAnswer` is the value :meth:`ParticlePosterior.observe
<visiontune.refraction.optics_model.ParticlePosterior.observe>` takes; the comparisons of one
model are evaluated together when the particles are moved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from visiontune.errors import InvalidInputError
from visiontune.optics.comparison import (
    COMPARISON_ANSWERS,
    ComparisonModel,
    blur_discrimination_signal,
    ternary_probabilities,
)
from visiontune.refraction.optics_model import (
    LOG_SLOPE,
    OpticsModelSpec,
    acuity_logmar,
    blur_squared,
    probability_correct,
)

__all__ = ["ComparisonAnswer", "comparison_probabilities", "comparison_signal"]


def _pairs(s, lens1, lens2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    l1 = np.asarray(lens1, dtype=float).reshape(-1, 3)
    l2 = np.asarray(lens2, dtype=float).reshape(-1, 3)
    if l1.shape != l2.shape:
        raise InvalidInputError(f"lens1, lens2: expected the same number of lenses, got {len(l1)} and {len(l2)}")
    s = np.broadcast_to(np.asarray(s, dtype=float), (len(l1),))
    return s, l1, l2


def comparison_signal(theta: np.ndarray, s, lens1, lens2, model: ComparisonModel, spec: OpticsModelSpec) -> np.ndarray:
    """``δ_i`` (module docstring) for particles ``theta (N, 6)`` and comparisons of sizes ``s
    (m,)`` (or one size), lenses ``lens1 (m, 3)``, ``lens2 (m, 3)`` (power vectors, D):
    ``(N, m)``, positive where lens 1 is the clearer."""
    s, l1, l2 = _pairs(s, lens1, lens2)
    if model.kind == "blur":
        b1 = np.sqrt(blur_squared(theta, l1))
        b2 = np.sqrt(blur_squared(theta, l2))
        return blur_discrimination_signal(b1, b2, model)
    if model.latent == "linear":
        return np.exp(theta[:, LOG_SLOPE, None]) * (acuity_logmar(theta, l2) - acuity_logmar(theta, l1))
    f1 = ndtri(probability_correct(theta, s, l1, spec))
    f2 = ndtri(probability_correct(theta, s, l2, spec))
    return f1 - f2


def comparison_probabilities(theta: np.ndarray, s, lens1, lens2, model: ComparisonModel,
                             spec: OpticsModelSpec) -> np.ndarray:
    """``P(answer | s_j, L1_j, L2_j, θ_i)`` for the answers ``"1"``, ``"2"``, ``"="`` along the
    last axis: ``(N, m, 3)``."""
    return ternary_probabilities(comparison_signal(theta, s, lens1, lens2, model, spec), model.indifference,
                                 model.lapse)  # fmt: skip


@dataclass(frozen=True)
class ComparisonAnswer:
    """One comparison answer for :meth:`ParticlePosterior.observe`: size ``s`` (logMAR), the two
    lenses' power vectors ``lens1``, ``lens2`` ``(M, J0, J45)`` (diopters), the ``answer``
    (``"1"``, ``"2"`` or ``"="``) and the ``model`` that gives its likelihood."""

    s: float
    lens1: tuple[float, float, float]
    lens2: tuple[float, float, float]
    answer: str
    model: ComparisonModel

    def __post_init__(self) -> None:
        if self.answer not in COMPARISON_ANSWERS:
            raise InvalidInputError(f"answer: expected one of {', '.join(COMPARISON_ANSWERS)}, got {self.answer!r}")

    @property
    def batch_key(self) -> tuple:
        return ("comparison", self.model)

    @property
    def answer_index(self) -> int:
        return COMPARISON_ANSWERS.index(self.answer)

    def log_likelihood(self, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(answer | θ_i)`` per particle: ``(N,)``."""
        p = comparison_probabilities(theta, [self.s], [self.lens1], [self.lens2], self.model, spec)
        return np.log(p[:, 0, self.answer_index])

    @staticmethod
    def batch_log_likelihood(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``Σ_j log P(answer_j | θ_i)`` over comparison ``answers`` of one model: ``(N,)``."""
        model = answers[0].model
        p = comparison_probabilities(theta, [a.s for a in answers], [a.lens1 for a in answers],
                                     [a.lens2 for a in answers], model, spec)  # fmt: skip
        idx = np.array([a.answer_index for a in answers])
        return np.sum(np.log(p[:, np.arange(len(answers)), idx]), axis=1)
