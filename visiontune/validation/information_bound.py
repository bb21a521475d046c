"""The fewest answers a ±0.25 D, 95% credible region could need: a Cramér-Rao bound per patient.

The precision stop (95% region within ±0.25 D on ``M`` and on ``J = (J0, J45)``) fires only once
the answers carry enough information. This module bounds how many answers that takes for one
simulated patient, under assumptions all in the design's favour: the patient follows the model
exactly, everything but the correction ``P* = (M, J0, J45)`` is known (best-corrected acuity,
psychometric slope ``a``, amplitude of accommodation ``A``, the comparison sensitivity at
Eq. 11's), and every answer is the single most informative question for the component it is
spent on.

**Per answer.** With ``d = L - x`` the offset of a trial lens from the correction along one
component ``x`` and the blur of the letter model (Blendowske 2015, ``VA = VA* + log10(1 + b²)``;
accommodation, Hofstetter 1950, clears up to ``A`` of a lens too minus, so along ``M`` the blur is
``b = d + min(A, max(-d, 0))``, along ``J0``, ``J45`` it is ``d``), the Fisher information about
``x`` of one answer with outcome probabilities ``p_k(x)`` is ``Σ_k (∂p_k/∂x)² / p_k``:

* a **letter** of size ``s`` through ``L`` (Fauvel & Chalk (contextual BO), Eq. 13 with a lapse),
  ``p = γ + (1-γ-λ) Φ(a (s - VA))``; maximised over the lens offset and the size;
* a **comparison** of ``L1``, ``L2`` (Eq. 11 of the same paper, with the "equal" band ``τ`` and
  lapse ``ε`` of :mod:`visiontune.optics.comparison_answers`), ``δ = a (VA(L2) - VA(L1))``,
  ``P("1") = Φ(δ - τ)``, ``P("2") = Φ(-δ - τ)``, ``P("=")`` the rest, mixed with ``ε/3``;
  maximised over both offsets.

Both lenses stay within ``reach`` of the correction (the clinical protocol's ``max_step_d``,
1 D: a clinician changes lenses in small steps near the current best). Without accommodation
a comparison straddling the correction (``L = x ± 1 D``) carries about six times a letter's
information at slope 5; in an eye that accommodates more than the reach, every lens on the
minus side reads as well as the correction, no pair straddles it along ``M``, and the
comparison carries about what a letter does.

**With the answer's nuisance unknown** (:func:`efficient_information`, an estimate of what a
session can reach rather than a bound). Each kind of answer reads ``x`` through a quantity the
session does not know: a letter through the drop of acuity from ``VA*``, a comparison through
the size of its signal, whose scale ``κ a`` (the patient's comparison sensitivity times the
slope, :mod:`visiontune.refraction.comparisons`) is unknown. With ``(x, n)`` both unknown the
information left for ``x`` by a design ``ξ`` (a weighting of questions) is the efficient
information ``I_xx - I_xn² / I_nn`` of its 2x2 Fisher matrix (e.g. Pukelsheim 1993, *Optimal
Design of Experiments*, ch. 3); it is maximised here over designs of two questions (coordinate
ascent; checked against every pair on a coarse grid). A straddling pair, where ``δ = 0``, is
blind to the scale and loses nothing; in an eye that accommodates beyond the reach a letter keeps
about a quarter of its information about ``M``, a comparison under a third.

**Per patient.** With ``n_x`` answers on component ``x``, each at the best information ``I_x``,
and the starting prescription's Gaussian prior of standard deviation ``σ_x``
(:mod:`visiontune.refraction.start`), the posterior standard deviation is at best
``(1/σ_x² + n_x I_x)^(-1/2)``; the region is met when ``1.96 σ_M <= 0.25`` and the 95% radius of
the 2-D ``J``, ``2.448 σ_J``, is ``<= 0.25`` (Rayleigh)::

    n >= (z_M² / t² - 1/σ_M²) / I_M + 2 (z_J² / t² - 1/σ_J²) / I_J        (t = 0.25 D)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.optics.comparison_answers import ComparisonModel, ternary_probabilities

__all__ = [
    "REACH_D",
    "Z_M",
    "Z_J",
    "PatientBound",
    "answers_needed",
    "comparison_information",
    "efficient_information",
    "letter_information",
    "pair_information",
    "patient_bound",
]

#: The clinical protocol's ``search_space.max_step_d``: lenses within 1 D of the estimate.
REACH_D = 1.0
#: 95% half-width of a 1-D normal, 95% radius of a 2-D isotropic normal (``√(-2 ln 0.05)``).
Z_M, Z_J = 1.959963984540054, float(np.sqrt(-2.0 * np.log(0.05)))
_STEP = 1e-5
_OFFSETS = np.linspace(-1.0, 1.0, 81)
#: Letter sizes ``z = a (s - VA)``: fine for the best single letter, coarser for two-question designs.
_FINE_SIZES, _SIZES = np.linspace(-4.0, 4.0, 801), np.linspace(-4.0, 4.0, 81)
#: The two-point search of :func:`efficient_information`: starts per criterion, sweeps per start.
_STARTS, _SWEEPS = 4, 8


def _blur(offset: np.ndarray, amplitude: float) -> np.ndarray:
    """Blur (D) along one component at lens offset ``d`` after ``amplitude`` of accommodation."""
    return offset + np.minimum(amplitude, np.maximum(-offset, 0.0))


def _acuity(offset: np.ndarray, amplitude: float) -> np.ndarray:
    return np.log10(1.0 + _blur(offset, amplitude) ** 2)


def _check(slope: float, amplitude: float, reach: float) -> None:
    if not slope > 0.0 or not amplitude >= 0.0 or not reach > 0.0:
        raise InvalidInputError(
            f"slope, amplitude, reach: expected a positive slope, amplitude >= 0 and a positive "
            f"reach, got {slope!r}, {amplitude!r}, {reach!r}"
        )


def _eq11(model: ComparisonModel | None) -> ComparisonModel:
    model = model or ComparisonModel()
    if model.kind != "thurstone" or model.latent != "linear":
        raise InvalidInputError(
            f"model: expected Eq. 11's linear Thurstone comparison, got {model.kind}/{model.latent}"
        )
    return model


def _letter_answers(slope: float, amplitude: float, chance: float, lapse: float, reach: float, sizes: np.ndarray):
    """A letter's answer over a grid of lens offsets ``|d| <= reach`` × sizes ``z = a (s - VA)``
    (the size in units of the psychometric function): ``probs(e, va_shift) -> (Q, 2)`` with the
    correction moved by ``e`` and ``VA*`` by ``va_shift``, and the questions ``(Q, 2)`` of
    ``(d, z)``."""
    d, z = (g.ravel() for g in np.meshgrid(_OFFSETS * reach, sizes, indexing="ij"))

    def probs(e: float, va_shift: float) -> np.ndarray:
        latent = z + slope * (_acuity(d, amplitude) - _acuity(d - e, amplitude) - va_shift)
        p = chance + (1 - chance - lapse) * ndtr(latent)
        return np.stack([p, 1.0 - p], axis=-1)

    return probs, np.column_stack([d, z])


def _comparison_answers(slope: float, amplitude: float, model: ComparisonModel, reach: float):
    """An Eq. 11 comparison's answer over pairs of lens offsets within ``reach``:
    ``probs(e, log_scale) -> (Q, 3)`` with the correction moved by ``e`` and the signal's scale
    ``κ a`` by the factor ``exp(log_scale)``, and the questions ``(Q, 2)`` of ``(d1, d2)``."""
    d1, d2 = (g.ravel() for g in np.meshgrid(_OFFSETS * reach, _OFFSETS * reach, indexing="ij"))

    def probs(e: float, log_scale: float) -> np.ndarray:
        delta = slope * np.exp(log_scale) * (_acuity(d2 - e, amplitude) - _acuity(d1 - e, amplitude))
        return ternary_probabilities(delta, model.indifference, model.lapse)

    return probs, np.column_stack([d1, d2])


def _fisher(probs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(I_ee, I_en, I_nn)`` over a design grid: the 2x2 Fisher matrix of the correction ``e`` and a
    nuisance ``n`` per question, from ``probs(e, n) -> (Q, K)`` by central differences."""
    p = probs(0.0, 0.0)
    g_e = (probs(_STEP, 0.0) - probs(-_STEP, 0.0)) / (2 * _STEP)
    g_n = (probs(0.0, _STEP) - probs(0.0, -_STEP)) / (2 * _STEP)
    p = np.maximum(p, 1e-300)
    return tuple(np.sum(x * y / p, axis=-1) for x, y in ((g_e, g_e), (g_e, g_n), (g_n, g_n)))


def _information(
    kind: str,
    slope: float,
    *,
    amplitude: float,
    reach: float,
    chance: float = 0.1,
    lapse: float = 0.04,
    model: ComparisonModel | None = None,
    sizes: np.ndarray = _SIZES,
):
    """``((I_ee, I_en, I_nn), questions)`` of ``kind`` (``"letter"``, nuisance ``VA*``, with
    ``chance``, ``lapse`` and ``sizes``; or ``"comparison"``, nuisance ``ln(κ a)``, with ``model``)
    over its design grid."""
    _check(slope, amplitude, reach)
    if kind == "letter":
        probs, questions = _letter_answers(slope, amplitude, chance, lapse, reach, sizes)
    elif kind == "comparison":
        probs, questions = _comparison_answers(slope, amplitude, _eq11(model), reach)
    else:
        raise InvalidInputError(f"kind: expected 'letter' or 'comparison', got {kind!r}")
    return _fisher(probs), questions


def letter_information(
    slope: float, *, amplitude: float = 0.0, chance: float = 0.1, lapse: float = 0.04, reach: float = REACH_D
) -> tuple[float, float]:
    """``(I*, d*)``: the largest Fisher information (D⁻²) about the correction along one component
    of one letter answer, over lens offsets ``|d| <= reach`` and every letter size, and the
    offset giving it (module docstring); ``amplitude`` > 0 for ``M`` in an eye that accommodates."""
    (i_ee, _, _), questions = _information(
        "letter", slope, amplitude=amplitude, reach=reach, chance=chance, lapse=lapse, sizes=_FINE_SIZES
    )
    k = int(np.argmax(i_ee))
    return float(i_ee[k]), float(questions[k, 0])


def comparison_information(
    slope: float, *, amplitude: float = 0.0, model: ComparisonModel | None = None, reach: float = REACH_D
) -> tuple[float, float, float]:
    """``(I*, d1*, d2*)``: the largest Fisher information (D⁻²) about the correction along one
    component of one Eq. 11 comparison (``model``: its band and lapse; default
    :class:`~visiontune.optics.comparison_answers.ComparisonModel`), over pairs of lens offsets within
    ``reach``, and the offsets giving it (module docstring)."""
    (i_ee, _, _), questions = _information("comparison", slope, amplitude=amplitude, reach=reach, model=model)
    k = int(np.argmax(i_ee))
    return float(i_ee[k]), float(questions[k, 0]), float(questions[k, 1])


def pair_information(model: ComparisonModel, slope: float, half_d: float) -> float:
    """Fisher information (D⁻²) about the correction along one component of one comparison of the
    lenses ``c + h`` and ``c - h`` (``h = half_d``) with the correction at ``c``, the eye not
    accommodating: ``Σ_k (∂p_k/∂e)² / p_k`` at ``e = 0`` by central differences. ``model``: Eq. 11
    (``δ = a (VA(L2) - VA(L1))``, Blendowske's acuity) or blur discrimination (``δ = (ln ρ(b2) -
    ln ρ(b1)) / w``, ``ρ(b) = √(b² + b_i²)``; Watson & Ahumada 2011), each with its band and lapse
    (:mod:`visiontune.optics.comparison_answers`)."""
    if not (slope > 0.0 and half_d > 0.0):
        raise InvalidInputError(f"slope, half_d: expected positive numbers, got {slope!r}, {half_d!r}")

    def probs(e: float) -> np.ndarray:
        b1, b2 = abs(half_d - e), abs(-half_d - e)
        if model.kind == "blur":
            bi2 = model.intrinsic_blur_d**2
            delta = 0.5 * (np.log(b2**2 + bi2) - np.log(b1**2 + bi2)) / model.log_blur_noise
        else:
            delta = slope * (np.log10(1 + b2**2) - np.log10(1 + b1**2))
        return ternary_probabilities(delta, model.indifference, model.lapse)

    gradient = (probs(_STEP) - probs(-_STEP)) / (2 * _STEP)
    return float(np.sum(gradient**2 / probs(0.0)))


def _two_point_efficient(i_ee: np.ndarray, i_en: np.ndarray, i_nn: np.ndarray) -> tuple[float, int, int, float]:
    """The largest efficient information ``I_ee - I_en² / I_nn`` of a design putting a share ``w`` of
    the answers on question ``a`` and the rest on ``b`` (``w`` on a grid of 51): ``(value, a, b, w)``.
    Coordinate ascent, the best ``b`` for ``a`` then the best ``a`` for ``b``, from the questions
    most informative about ``e`` and about the nuisance."""
    share = np.linspace(0.0, 1.0, 51)[:, None]

    def best_partner(a: int) -> tuple[float, int, float]:
        ee, en, nn = (share * f[a] + (1 - share) * f[None, :] for f in (i_ee, i_en, i_nn))
        efficient = ee - en**2 / np.maximum(nn, 1e-300)
        k, b = np.unravel_index(np.argmax(efficient), efficient.shape)
        return float(efficient[k, b]), int(b), float(share[k, 0])

    best = (-np.inf, 0, 0, 1.0)
    for start in np.concatenate([np.argsort(-i_ee)[:_STARTS], np.argsort(-i_nn)[:_STARTS]]):
        a, value = int(start), -np.inf
        for _ in range(_SWEEPS):
            found, b, w = best_partner(a)
            if found <= value + 1e-12:
                break
            value, (a, b, w) = found, (b, a, 1.0 - w)
        if value > best[0]:
            best = (value, a, b, w)
    return best


def efficient_information(
    kind: str,
    slope: float,
    *,
    amplitude: float = 0.0,
    chance: float = 0.1,
    lapse: float = 0.04,
    model: ComparisonModel | None = None,
    reach: float = REACH_D,
) -> tuple[float, tuple]:
    """``(I_eff, design)``: the information (D⁻²) per answer about the correction along one
    component left when the answer's own nuisance is unknown too, at the best design of at most
    two questions (module docstring). ``kind``: ``"letter"`` (nuisance: the best-corrected acuity
    ``VA*``) or ``"comparison"`` (Eq. 11; nuisance: the log of the signal's scale ``κ a``).
    ``design``: ``(question a, question b, share of a)``, a question being ``(offset, z)`` for a
    letter (``z = a (s - VA)``, the size in units of the psychometric function) and ``(offset 1,
    offset 2)`` for a comparison."""
    fisher, questions = _information(
        kind, slope, amplitude=amplitude, reach=reach, chance=chance, lapse=lapse, model=model
    )
    return _efficient(fisher, questions)


def _efficient(fisher, questions: np.ndarray) -> tuple[float, tuple]:
    value, a, b, share = _two_point_efficient(*fisher)
    return value, (tuple(questions[a].tolist()), tuple(questions[b].tolist()), share)


def answers_needed(info_m: float, info_j: float, sigma_m: float, sigma_j: float, *, target_d: float = 0.25) -> int:
    """Fewest answers, split optimally between ``M``, ``J0`` and ``J45``, for the region to be met
    (module docstring), ``info_*`` per answer (D⁻²), ``sigma_*`` the prior's (D)."""
    if min(info_m, info_j, sigma_m, sigma_j, target_d) <= 0.0:
        raise InvalidInputError(
            f"answers_needed: expected positive informations and SDs, got "
            f"{(info_m, info_j, sigma_m, sigma_j, target_d)}"
        )
    need_m = max(0.0, (Z_M / target_d) ** 2 - 1 / sigma_m**2) / info_m
    need_j = max(0.0, (Z_J / target_d) ** 2 - 1 / sigma_j**2) / info_j
    return int(np.ceil(need_m + 2 * need_j))


@dataclass(frozen=True)
class PatientBound:
    """The bound for one patient: the best information per answer on ``M`` and on each ``J``
    component (D⁻²; letters or comparisons, whichever is larger), the fewest answers with
    comparisons and with letters only, and the same two with each answer's nuisance unknown
    (:func:`efficient_information`)."""

    info_m: float
    info_j: float
    answers: int
    answers_letters_only: int
    info_m_nuisance: float
    info_j_nuisance: float
    answers_nuisance: int


def patient_bound(
    slope: float,
    amplitude: float,
    sigma_m: float,
    sigma_j: float,
    *,
    chance: float = 0.1,
    lapse: float = 0.04,
    model: ComparisonModel | None = None,
    reach: float = REACH_D,
) -> PatientBound:
    """:class:`PatientBound` of a patient of slope ``a``, amplitude of accommodation ``A`` (D) and
    prior SDs of the start (module docstring)."""
    letters = {"chance": chance, "lapse": lapse, "reach": reach}
    letter_m = letter_information(slope, amplitude=amplitude, **letters)[0]
    letter_j = letter_information(slope, **letters)[0]
    comparisons = {"model": model, "reach": reach}
    comp_m = _information("comparison", slope, amplitude=amplitude, **comparisons)
    comp_j = _information("comparison", slope, amplitude=0.0, **comparisons)
    info_m, info_j = max(letter_m, float(comp_m[0][0].max())), max(letter_j, float(comp_j[0][0].max()))
    eff_m = max(efficient_information("letter", slope, amplitude=amplitude, **letters)[0], _efficient(*comp_m)[0])
    eff_j = max(efficient_information("letter", slope, **letters)[0], _efficient(*comp_j)[0])
    return PatientBound(
        info_m,
        info_j,
        answers_needed(info_m, info_j, sigma_m, sigma_j),
        answers_needed(letter_m, letter_j, sigma_m, sigma_j),
        eff_m,
        eff_j,
        answers_needed(eff_m, eff_j, sigma_m, sigma_j),
    )
