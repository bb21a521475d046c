"""Comparison answers in the optics model: their likelihood over the particles.

The patient compares lens 1 and lens 2 while reading letters of size ``s`` (logMAR) and
answers ``"1"``, ``"2"`` or ``"="``. The two models of :mod:`visiontune.optics.comparison_answers`
(Fauvel & Chalk (contextual BO), Eq. 11, the default, and blur discrimination; both with an indifference band ``τ``
and a lapse ``ε``) are written here for every particle ``θ_i = (M, J0, J45, VA*, log a, A)`` of
:mod:`visiontune.refraction.optics_model`::

    Thurstone, linear latent   δ_i = a_i (VA_i(L2) - VA_i(L1))
    Thurstone, probit latent   δ_i = Φ⁻¹(P_i(correct | s, L1)) - Φ⁻¹(P_i(correct | s, L2))
                               (the probit latent: Fauvel & Chalk (contextual BO), Eq. 14)
    blur discrimination        δ_i = (ln ρ(b_i(L2)) - ln ρ(b_i(L1))) / w,  ρ(b) = √(b² + b_i²)

with ``VA_i`` and the dioptric blur ``b_i = |r|`` (after the particle's accommodation) of the
letter model, then ``P("1") = Φ(δ - τ)``, ``P("2") = Φ(-δ - τ)``, ``P("=") = 1 - P("1") - P("2")``,
mixed with ``ε/3``. The model's ``τ``, ``ε`` and blur constants are settings
(:class:`~visiontune.optics.comparison_answers.ComparisonModel`), not unknowns, except where said
below; with ``model.lapse_sigma`` in the protocol ``ε`` is the patient's own lapse rate ``λ_i``, the
letters' (:func:`~visiontune.refraction.optics_model.lapse_rate`).

The **comparison sensitivity** ``κ`` scales the signal, ``δ_i <- κ_i δ_i`` (``τ`` and ``ε`` are not
scaled; why: :mod:`visiontune.optics.comparison_answers`). With ``model.sensitivity_sigma = 0`` (default)
``κ`` is the fixed ``model.sensitivity_median`` (default 1, the formula as written) and the
particles keep the letter model's six columns. With ``sensitivity_sigma > 0`` ``ln κ`` is an
unknown, the optional particle column ``"log_sensitivity"`` (the seventh,
:data:`~visiontune.refraction.optics_model.LOG_SENSITIVITY`), lognormal a priori;
:meth:`ParticlePosterior.observe <visiontune.refraction.optics_model.ParticlePosterior.observe>` adds
the column, drawn from the prior, at the first such comparison (the letters do not depend on
``κ``, so up to then its posterior is its prior), and :func:`with_sensitivity` attaches prior
draws to particles that have none yet (to choose the first comparison).

**A bias toward the more minus lens and the "equal" band, per patient (opt-in).** Through more
minus an eye that can accommodate sees the letters smaller and blacker and may prefer them: the
reason for the clinician's "most plus to best acuity" end point (Borish's Clinical Refraction,
Benjamin 2006, ch. 20). With ``model.minus_bias_sigma > 0`` the signal carries an unknown shift
``β_minus`` toward the more minus lens, and with ``model.indifference_sigma > 0`` the band ``τ`` is
the patient's own unknown::

    δ_i <- κ_i δ_i + β_i m_ij          P("1") = Φ(δ_i - τ_i)    P("2") = Φ(-δ_i - τ_i)

with ``m_ij`` (:func:`minus_sign`) +1 when lens 1 has the lower ``M`` (the more minus), -1 when
lens 2 has, 0 when both ``M`` are equal or when particle ``i``'s accommodation cannot clear the
more minus lens (``M*_i - M_minus > A_i``). A priori ``β_minus ~ N(0, σ_β²)`` (column
``"minus_bias"``, not on a log scale), or with ``model.minus_bias_prior = "half-normal"`` the half-normal
``2 φ(β/σ_β) / σ_β`` on ``β >= 0`` (a bias toward the more minus lens only: the mechanism is one way,
and no reason for a bias toward plus is published; a move to ``β < 0`` is rejected) and
``ln τ ~ N(ln model.indifference, σ_τ²)`` (column
``"log_indifference"``), independent of the rest, added at the first comparison like ``ln κ``.
``β`` is identified against the letters, which carry no such bias: through two lenses the eye
clears, both more minus than ``M*``, Eq. 11 gives ``δ = 0`` and a preference is the bias alone.
``τ`` is identified by the share of "=" answers, ``2Φ(τ) - 1`` at ``δ = 0`` (Glenn & David 1960).

:class:`ComparisonAnswer` is the value :meth:`ParticlePosterior.observe
<visiontune.refraction.optics_model.ParticlePosterior.observe>` takes; the comparisons of one
model are evaluated together when the particles are moved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune.errors import InvalidInputError
from visiontune.optics.comparison_answers import (
    COMPARISON_ANSWERS,
    ComparisonModel,
    blur_discrimination_signal,
    ternary_probabilities,
)
from visiontune.refraction.optics_model import (
    AMPLITUDE,
    LOG_INDIFFERENCE,
    LOG_SENSITIVITY,
    LOG_SLOPE,
    MINUS_BIAS,
    OpticsModelSpec,
    acuity_logmar,
    blur_squared,
    has_column,
    lapse_rate,
    probability_correct,
    with_column,
)
from visiontune.refraction.optics_model import M as M_STAR

__all__ = [
    "ComparisonAnswer",
    "comparison_probabilities",
    "comparison_signal",
    "indifference",
    "minus_sign",
    "sensitivity",
    "with_sensitivity",
]


def _pairs(s, lens1, lens2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    l1 = np.asarray(lens1, dtype=float).reshape(-1, 3)
    l2 = np.asarray(lens2, dtype=float).reshape(-1, 3)
    if l1.shape != l2.shape:
        raise InvalidInputError(f"lens1, lens2: expected the same number of lenses, got {len(l1)} and {len(l2)}")
    s = np.broadcast_to(np.asarray(s, dtype=float), (len(l1),))
    return s, l1, l2


def sensitivity(theta: np.ndarray, model: ComparisonModel):
    """``κ``: ``(N, 1)`` from the particles' ``ln κ`` column when ``model`` infers it, else the
    float ``model.sensitivity_median``."""
    if not model.infers_sensitivity:
        return float(model.sensitivity_median)
    if not has_column(theta, "log_sensitivity"):
        raise InvalidInputError(
            "theta: the comparison model infers its sensitivity, but the particles have no ln κ column "
            "(ParticlePosterior.observe adds it; with_sensitivity for particles drawn before)"
        )
    return np.exp(theta[:, LOG_SENSITIVITY, None])


def with_sensitivity(theta: np.ndarray, model: ComparisonModel, rng: np.random.Generator) -> np.ndarray:
    """``theta`` with a column of prior draws for each unknown ``model`` infers that the particles
    have none of (``ln κ``, then ``β_minus``, then ``ln τ``; module docstring;
    :func:`~visiontune.refraction.optics_model.with_column`), else ``theta`` itself."""
    for name, location, sigma, *shape in model.column_priors:
        theta = with_column(theta, name, location, sigma, rng, *shape)
    return theta


def indifference(theta: np.ndarray, model: ComparisonModel):
    """``τ``: ``(N, 1)`` from the particles' ``ln τ`` column when ``model`` infers the band, else the
    float ``model.indifference``."""
    if not model.infers_indifference:
        return float(model.indifference)
    if not has_column(theta, "log_indifference"):
        raise InvalidInputError(
            "theta: the comparison model infers its equal band, but the particles have no ln τ column "
            "(ParticlePosterior.observe adds it; with_sensitivity for particles drawn before)"
        )
    return np.exp(theta[:, LOG_INDIFFERENCE, None])


def minus_sign(theta: np.ndarray, lens1, lens2) -> np.ndarray:
    """``m_ij`` ``(N, m)``: +1 where lens 1 has the lower spherical equivalent ``M`` (the more minus),
    -1 where lens 2 has, 0 where both ``M`` agree to 1e-9 D, and 0 where particle ``i``'s
    accommodation cannot clear the more minus lens (``M*_i - M_minus > A_i``: it over-minuses the
    eye by more than the eye can accommodate, so its letters are blurred, not smaller and blacker)."""
    _, l1, l2 = _pairs(0.0, lens1, lens2)
    m1, m2 = l1[:, 0], l2[:, 0]
    sign = np.where(np.abs(m1 - m2) <= 1e-9, 0.0, np.where(m1 < m2, 1.0, -1.0))
    cleared = theta[:, M_STAR, None] - np.minimum(m1, m2)[None, :] <= theta[:, AMPLITUDE, None] + 1e-12
    return np.where(cleared, sign[None, :], 0.0)


def comparison_signal(theta: np.ndarray, s, lens1, lens2, model: ComparisonModel, spec: OpticsModelSpec) -> np.ndarray:
    """``κ_i δ_i`` (module docstring) for particles ``theta (N, 6)`` (``(N, d > 6)`` with ``ln κ``,
    when ``model`` infers the sensitivity) and comparisons of sizes ``s (m,)`` (or one size),
    lenses ``lens1 (m, 3)``, ``lens2 (m, 3)`` (power vectors, D): ``(N, m)``, positive where
    lens 1 is the clearer."""
    kappa = sensitivity(theta, model)
    delta = _signal(theta, s, lens1, lens2, model, spec)
    if not (isinstance(kappa, float) and kappa == 1.0):
        delta = kappa * delta
    if model.infers_minus_bias:
        if not has_column(theta, "minus_bias"):
            raise InvalidInputError(
                "theta: the comparison model infers a bias toward the more minus lens, but the particles have "
                "no β_minus column (ParticlePosterior.observe adds it; with_sensitivity for particles drawn before)"
            )
        delta = delta + theta[:, MINUS_BIAS, None] * minus_sign(theta, lens1, lens2)
    return delta


def _signal(theta: np.ndarray, s, lens1, lens2, model: ComparisonModel, spec: OpticsModelSpec) -> np.ndarray:
    s, l1, l2 = _pairs(s, lens1, lens2)
    if model.kind == "blur":
        b = np.sqrt(_per_lens(blur_squared, theta, l1, l2))
        return blur_discrimination_signal(b[0], b[1], model)
    if model.latent == "linear":
        va = _per_lens(acuity_logmar, theta, l1, l2)
        return np.exp(theta[:, LOG_SLOPE, None]) * (va[1] - va[0])
    f1 = ndtri(probability_correct(theta, s, l1, spec))
    f2 = ndtri(probability_correct(theta, s, l2, spec))
    return f1 - f2


def _per_lens(f, theta: np.ndarray, l1: np.ndarray, l2: np.ndarray) -> np.ndarray:
    """``f(theta, lenses) (N, m)`` for the lenses of both sides, ``(2, N, m)``, each distinct lens
    computed once (the pairs of a session share their trial lenses; ``f`` is elementwise in the
    lens, so the values are those of ``f(theta, l1)`` and ``f(theta, l2)``)."""
    lenses, index = np.unique(np.vstack([l1, l2]), axis=0, return_inverse=True)
    values = f(theta, lenses)[:, index.reshape(-1)]
    return values.reshape(len(theta), 2, len(l1)).transpose(1, 0, 2)


def comparison_probabilities(
    theta: np.ndarray, s, lens1, lens2, model: ComparisonModel, spec: OpticsModelSpec
) -> np.ndarray:
    """``P(answer | s_j, L1_j, L2_j, θ_i)`` for the answers ``"1"``, ``"2"``, ``"="`` along the
    last axis: ``(N, m, 3)`` (``ε`` the particles' own lapse rate when they infer it, the letters', else
    ``model.lapse``: :func:`~visiontune.refraction.optics_model.lapse_rate`)."""
    lapse = lapse_rate(theta, model.lapse)
    return ternary_probabilities(
        comparison_signal(theta, s, lens1, lens2, model, spec),
        indifference(theta, model),
        lapse if np.isscalar(lapse) else lapse[:, :, None],
    )


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
    def sensitivity_prior(self) -> tuple | None:
        """``(median, σ)`` of the lognormal prior of ``κ`` when the model infers it (``(median, σ,
        "mixture", second)`` for the prior of two formulas), else None."""
        for name, *prior in self.model.column_priors:
            if name == "log_sensitivity":
                return tuple(prior)
        return None

    @property
    def column_priors(self) -> tuple[tuple[str, float, float], ...]:
        """The optional columns the answer reads, ``(name, location, σ)`` for each unknown the model
        infers (``ln κ``, ``β_minus``, ``ln τ``; :attr:`ComparisonModel.column_priors`), else none
        (:meth:`ParticlePosterior.observe` adds them)."""
        return self.model.column_priors

    @property
    def answer_index(self) -> int:
        return COMPARISON_ANSWERS.index(self.answer)

    def log_likelihood(self, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(answer | θ_i)`` per particle: ``(N,)``."""
        p = comparison_probabilities(theta, [self.s], [self.lens1], [self.lens2], self.model, spec)
        return np.log(p[:, 0, self.answer_index])

    @staticmethod
    def lapsed_log_likelihood(spec: OpticsModelSpec) -> float:
        """``log P(answer)`` of a lapsed patient, who answers at random among the three: ``log 1/3``."""
        return -math.log(3.0)

    @staticmethod
    def batch_log_likelihoods(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(answer_j | θ_i)`` of each comparison of ``answers`` (one model): ``(N, m)``."""
        model = answers[0].model
        delta = comparison_signal(
            theta, [a.s for a in answers], [a.lens1 for a in answers], [a.lens2 for a in answers], model, spec
        )
        idx = np.array([a.answer_index for a in answers])
        lapse = lapse_rate(theta, model.lapse)
        return np.log(_answer_probabilities(delta, idx, indifference(theta, model), lapse))

    @staticmethod
    def batch_log_likelihood(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``Σ_j log P(answer_j | θ_i)`` over comparison ``answers`` of one model: ``(N,)``."""
        return np.sum(ComparisonAnswer.batch_log_likelihoods(answers, theta, spec), axis=1)


def _answer_probabilities(delta: np.ndarray, idx: np.ndarray, indifference, lapse) -> np.ndarray:
    """``P(answer_j | δ_ij)`` ``(N, m)`` of the answers given (``idx (m,)``: 0 "1", 1 "2", 2 "="):
    :func:`~visiontune.optics.comparison_answers.ternary_probabilities` at the answered entries only,
    computed with the same operations (the same numbers), each Φ only where it is needed; the band
    ``indifference`` and the ``lapse`` each a float or ``(N, 1)`` per particle."""
    p = np.empty_like(delta)
    for k in range(3):
        cols = idx == k
        if not cols.any():
            continue
        d = delta[:, cols]
        if k == 0:
            p[:, cols] = ndtr(d - indifference)
        elif k == 1:
            p[:, cols] = ndtr(-d - indifference)
        else:
            p[:, cols] = np.maximum(1.0 - ndtr(d - indifference) - ndtr(-d - indifference), 0.0)
    return (1.0 - lapse) * p + lapse / 3.0
