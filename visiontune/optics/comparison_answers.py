"""Comparison answers ("which is clearer, 1 or 2?") and the simulated patient giving them.

A comparison shows two lenses ``L1``, ``L2`` while the patient reads letters of size ``s``
(logMAR); the answer is ``"1"`` (lens 1 clearer), ``"2"`` (lens 2 clearer) or ``"="``
(no difference). Both models below produce a signal ``δ`` (positive when lens 1 is the
clearer) and turn it into the three answers with an **indifference band** ``τ`` (the
Thurstone model of paired comparisons with ties, Glenn & David 1960, *Ties in paired-
comparison experiments using a modified Thurstone-Mosteller model*, Biometrics 16:86-109)::

    P("1") = Φ(δ - τ)      P("2") = Φ(-δ - τ)      P("=") = Φ(δ + τ) - Φ(δ - τ)

and a lapse ``ε`` (an answer at random among the three): ``P <- (1 - ε) P + ε / 3``. With
``τ = 0`` and ``ε = 0`` ``P("=") = 0`` and ``P("1") = Φ(δ)``: the forced choice. "Equal" carries
information: it is likeliest when ``|δ|`` is small, so it says the two lenses lie about
equally far from the correction.

**Thurstone (Fauvel & Chalk (contextual BO), Eq. 11, the default)**: ``δ = f(s, L1) - f(s, L2)``, the difference of
the latent of the letter task, ``f = a (s - VA(L))`` (``"linear"``, the simulated patient's
default; then ``s`` cancels and ``δ = a (VA(L2) - VA(L1))``) or Eq. 14's ``f = Φ⁻¹(P(correct |
s, L))`` (``"probit"``; then ``s`` matters).

**Blur discrimination (second model)**: the patient judges which image is less blurred. Blur
discrimination thresholds follow a "dipper": from focus the smallest visible change of blur
is the blur detection threshold (0.10-0.18 D of defocus, Jacobs, Smith & Chan 1989, *Effect
of defocus on blur thresholds and on thresholds of perceived change in blur*, Optom. Vis. Sci.
66:545-553; about 0.1 D for a change of focus, Walsh & Charman 1988, Vision Res. 28:1207-1221);
a little blurred, smaller changes are seen (0.05-0.07 D, Jacobs et al. 1989); well blurred,
the threshold grows in proportion to the blur (Weber's law). The classic account of this
shape, reviewed by Watson & Ahumada 2011 (*Blur clarified: a review and synthesis of blur
discrimination*, J. Vis. 11(5):10), is an intrinsic blur ``b_i`` adding to the optical blur,
``ρ(b) = √(b² + b_i²)``, and a Weber law on ``ρ``. Here ``b`` is the dioptric blur, the length
of the residual power vector after accommodation (the blur of the acuity model), and::

    δ = (ln ρ(b2) - ln ρ(b1)) / w

The two constants are set from two thresholds of the forced choice (``τ = ε = 0``, 75%
correct, ``z = Φ⁻¹(0.75)``): the threshold from focus ``T0`` (``b1 = 0``, ``b2 = T0``) and the
Weber fraction ``W = ΔB / B`` for large blur, which give ``w = ln(1 + W) / z`` and
``b_i = T0 / √((1 + W)² - 1)``. Defaults ``T0 = 0.15 D`` (within Jacobs et al.'s 0.10-0.18 D)
and ``W = 0.12`` (**stated**: with ``T0`` it puts the bottom of the dipper at about 0.07 D near
``b = b_i ≈ 0.3 D``, Jacobs et al.'s change threshold, and lets the threshold grow with blur
as Watson & Ahumada's review describes). The letter size does not enter (**assumed**: the
letters are large enough to judge their sharpness), nor does attention drift.

**Sensitivity (the model's, opt-in)**: a model of the patient's answers need not know which
formula the patient follows. ``ComparisonModel.sensitivity_median`` and ``sensitivity_sigma``
make the model's signal ``δ_model = κ δ``, with ``δ`` of the model's ``kind`` and ``κ`` the
patient's unknown **comparison sensitivity**, lognormal with that median and ``σ`` of ``ln κ``
(:mod:`visiontune.refraction.comparisons`: a seventh particle column ``ln κ``). ``σ = 0``
(default) means ``κ`` fixed at the median (default 1: the formula as written). The simulated
patient ignores both fields. The band ``τ`` and the lapse are not scaled: ``τ`` stays in units
of the judgement's noise, as it is for both formulas here (the same ``τ = 0.5``: "equal" at
``δ = 0`` 38% of the time whichever the formula), so ``κ`` alone maps one formula onto the other
near focus; a band in units of the signal (``Φ(κ (δ - τ))``) would not nest the two patients.

*A prior that spans both formulas.* Near the correction both signals are quadratic in the
blurs ``b1``, ``b2`` through the two lenses: Eq. 11 (linear latent, ``VA = VA* + log10(1 + b²)``)
``δ ≈ a (b2² - b1²) / ln 10``, blur discrimination ``δ ≈ (b2² - b1²) / (2 w b_i²)``. Their ratio
``κ_blur = ln 10 / (2 a w b_i²)`` (:func:`focus_sensitivity_ratio`) is 15.5 at the default
constants (``w = 0.168``, ``b_i = 0.297 D``) and the median slope ``a = 5``: a blur-discriminating
patient looks, to the Eq. 11 model, like one with ``κ ≈ 15`` at focus. Further from focus the
blur signal grows as ``ln b`` and Eq. 11's as ``b²``, so the ratio falls (12 at 0.25 D of blur, 8
at 0.5 D, 5 at 1 D). A lognormal prior spanning ``κ = 1`` (the Eq. 11 patient) and ``κ ≈ 15``
(the blur patient, at focus) on the log scale: median ``√15.5 ≈ 4`` and ``σ = 1``
(:data:`SPANNING_SENSITIVITY_MEDIAN`, :data:`SPANNING_SENSITIVITY_SIGMA`), so that both lie
1.4 σ from the median, inside the central 84% (the prior's 95% interval is 0.56-28, room for
the spread of the slope ``a``, σ 0.4 on ``ln a``, that ``κ`` absorbs for a blur patient).
**Stated**, not fitted to patients: with recorded sessions the prior should be refitted.
Measured (``docs/results/comparisons.md``, simulated patients): with this prior a blur patient is
refracted as well as by the blur model itself; an Eq. 11 patient's session no longer fails as
under the blur model, but its precision stop tends to fire before ``κ`` is learned (too early,
``κ`` overestimated); without the stop it ends as the Eq. 11 model does.

*Two formulas.* The spanning prior puts most of its mass between the two formulas (``κ`` 2-8),
where neither patient is. An Eq. 11 patient's comparisons near focus are close to coin flips; read
with ``κ`` about 4 they say that the correction lies halfway between the two lenses, sharply, so a
stop on the posterior fires while ``κ`` is still overestimated and the region is too small
(measured on 30 young Eq. 11 patients, ``benchmarks/region_honesty.py``: the 95% region of the stop
on the lens to file covered 77% of them; five of the seven it missed stopped at 20 answers with the
posterior mean of ``ln κ`` at 1.32-1.59, the prior's 1.39, against the truth 0;
``docs/results/clinic-time.md``, "An honest region"). With ``sensitivity_second_median``
the prior says what is known instead: the patient compares either as the letter task predicts
(``κ`` near ``sensitivity_median`` = 1) or as blur discrimination does (``κ`` near the focus ratio,
15.5 at the default constants), equally likely a priori (**stated**), each lognormal with
``σ = sensitivity_sigma``; the answers then weigh the two (a mixture prior is the Bayesian
reading of model uncertainty between two models, Hoeting, Madigan, Raftery & Volinsky 1999,
*Statist. Sci.* 14:382-417). Measured there: the region honest in most populations (coverage 84-98%),
sessions 37-105 s longer and less accurate in high myopia and no-start; not in a shipped protocol.

*Two kinds of patient* (the "equal" band). How often a patient says "no difference" is the patient's
own (Kaernbach 2001; García-Pérez & Alcalá-Quintana 2011, as cited in
``docs/results/answer-bias.md``); a patient who rarely says it answers two lenses alike "1" or "2" at
random, which the model, expecting "=" 38% of the time there (``τ = 0.5``), reads as a difference
seen, and its posterior ends too sure (``docs/results/answer-bias.md``). A lognormal prior of
``ln τ`` wide enough to reach such a patient (``indifference_sigma = 1``) also lets the model's own
patient's "1"s be read as a narrow band, and costs them (there). With
``indifference_second_median`` the prior says what is known instead: most patients say "="
about as the model does, some rarely do, ``(1 - w) N(ln 0.5, σ²) + w N(ln τ₂, σ²)``; each "="
between lenses alike then weighs against the second kind, and its absence for it (a Bayesian
choice between two models, as for ``κ``; Hoeting et al. 1999). **Stated**, not fitted: no clinic's
rate of "no difference" answers was found.

Keyed answers, as the letter answers of :class:`~visiontune.optics.SimulatedPatient`: the
comparison at trial ``k`` draws its one uniform from ``default_rng([seed, k, 0x5EED, 2])``
(letters use ``[seed, k, 0x5EED]``, binary duels ``[..., 1]``), so the answer does not depend on
what was asked before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics.attention import check_trial_index
from visiontune.optics.patient import TRIAL_KEY, SimulatedPatient

__all__ = [
    "COMPARISON_ANSWERS",
    "COMPARISON_KINDS",
    "MINUS_BIAS_PRIORS",
    "SPANNING_SENSITIVITY_MEDIAN",
    "SPANNING_SENSITIVITY_SIGMA",
    "ComparisonModel",
    "answer_comparison_trial",
    "blur_discrimination_signal",
    "mixture_prior",
    "focus_sensitivity_ratio",
    "patient_comparison_probabilities",
    "ternary_probabilities",
]

#: The three answers, in the order of the last axis of every probability array here.
COMPARISON_ANSWERS = ("1", "2", "=")
#: The comparison models: the contextual BO paper's Eq. 11 and blur discrimination (module docstring).
COMPARISON_KINDS = ("thurstone", "blur")
_LATENTS = ("linear", "probit")
#: Shapes of the prior of the bias toward the more minus lens (:class:`ComparisonModel`).
MINUS_BIAS_PRIORS = ("normal", "half-normal")
#: Sub-key of the comparison answers' keyed stream (after ``[seed, k, TRIAL_KEY]``).
COMPARISON_STREAM = 2
_Z75 = float(ndtri(0.75))
#: A prior of the comparison sensitivity ``κ`` spanning the Eq. 11 and blur patients (module docstring).
SPANNING_SENSITIVITY_MEDIAN = 4.0
SPANNING_SENSITIVITY_SIGMA = 1.0


@dataclass(frozen=True)
class ComparisonModel:
    """How a comparison is answered (module docstring).

    ``kind``: ``"thurstone"`` (contextual BO, Eq. 11) or ``"blur"`` (blur discrimination).
    ``indifference``: ``τ`` >= 0, the half-width of the "equal" band in units of the signal;
    default 0.5 (**stated**: at ``δ = 0`` "equal" is answered 38% of the time).
    ``lapse``: ``ε`` in [0, 1), the rate of answers at random among the three.
    ``latent``: ``"linear"`` or ``"probit"`` (Thurstone only). ``threshold_at_focus_d`` ``T0``
    and ``weber_fraction`` ``W`` (blur only; diopters and a ratio). ``sensitivity_median`` and
    ``sensitivity_sigma``: the model's comparison sensitivity ``κ`` (``δ_model = κ δ``), lognormal
    with this median and ``σ`` of ``ln κ``; ``σ = 0`` (default) fixes ``κ`` at the median (default
    1, the formula as written); the simulated patient ignores both (module docstring).
    ``sensitivity_second_median``: ``0`` (default) for that lognormal; ``> 0`` makes the prior of
    ``ln κ`` the equal mixture of ``N(ln sensitivity_median, σ²)`` and ``N(ln second, σ²)``, the
    prior of two formulas (module docstring, "Two formulas").
    ``minus_bias_sigma``: ``σ`` of the normal prior (mean 0) of the patient's bias toward the more
    minus lens ``β_minus``, and ``indifference_sigma``: ``σ`` of ``ln τ`` around ``ln indifference``;
    ``0`` (default) holds ``β_minus = 0`` and ``τ = indifference`` fixed (the likelihood with them:
    :mod:`visiontune.refraction.comparisons`). The simulated patient ignores both.
    ``indifference_second_median`` ``τ₂`` and ``indifference_second_weight`` ``w``: ``0`` (default) for
    that lognormal; ``τ₂ > 0`` makes the prior of ``ln τ`` the mixture ``(1 - w) N(ln indifference, σ²)
    + w N(ln τ₂, σ²)`` (module docstring, "Two kinds of patient"); ``w`` default ½.
    ``minus_bias_prior``: the shape of that prior, ``"normal"`` (default, ``N(0, σ²)``: a bias either
    way) or ``"half-normal"`` (a bias toward the more minus lens only, ``β_minus >= 0``, density
    ``2 φ(β/σ) / σ`` there and 0 below; Johnson, Kotz & Balakrishnan 1994, *Continuous Univariate
    Distributions* vol. 1, §13.10.1: the normal folded at its mean).
    """

    kind: str = "thurstone"
    indifference: float = 0.5
    lapse: float = 0.04
    latent: str = "linear"
    threshold_at_focus_d: float = 0.15
    weber_fraction: float = 0.12
    sensitivity_median: float = 1.0
    sensitivity_sigma: float = 0.0
    sensitivity_second_median: float = 0.0
    minus_bias_sigma: float = 0.0
    indifference_sigma: float = 0.0
    minus_bias_prior: str = "normal"
    indifference_second_median: float = 0.0
    indifference_second_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.kind not in COMPARISON_KINDS:
            raise InvalidInputError(f"kind: expected one of {', '.join(COMPARISON_KINDS)}, got {self.kind!r}")
        if self.latent not in _LATENTS:
            raise InvalidInputError(f"latent: expected one of {', '.join(_LATENTS)}, got {self.latent!r}")
        if self.minus_bias_prior not in MINUS_BIAS_PRIORS:
            raise InvalidInputError(
                f"minus_bias_prior: expected one of {', '.join(MINUS_BIAS_PRIORS)}, got {self.minus_bias_prior!r}"
            )
        for name, lo, hi in (
            ("indifference", 0, 5),
            ("lapse", 0, 0.99),
            ("threshold_at_focus_d", 0.001, 2),
            ("weber_fraction", 0.001, 5),
            ("sensitivity_median", 0.001, 1000),
            ("sensitivity_sigma", 0, 5),
            ("sensitivity_second_median", 0, 1000),
            ("minus_bias_sigma", 0, 5),
            ("indifference_sigma", 0, 3),
            ("indifference_second_median", 0, 5),
            ("indifference_second_weight", 0.001, 0.999),
        ):
            check_number(name, getattr(self, name), lo, hi)
        if self.sensitivity_second_median > 0 and not self.sensitivity_sigma > 0:
            raise InvalidInputError(
                "sensitivity_second_median: a prior of two lognormals is a prior of an inferred sensitivity, "
                f"which needs sensitivity_sigma > 0, got sensitivity_sigma = {self.sensitivity_sigma!r}"
            )
        if self.indifference_second_median > 0 and not self.indifference_sigma > 0:
            raise InvalidInputError(
                "indifference_second_median: a prior of two lognormals is a prior of an inferred band, "
                f"which needs indifference_sigma > 0, got indifference_sigma = {self.indifference_sigma!r}"
            )
        if self.indifference_sigma > 0 and not self.indifference > 0:
            raise InvalidInputError(
                "indifference_sigma: an inferred band is lognormal around indifference, which must then be "
                f"positive, got indifference = {self.indifference!r}"
            )

    @property
    def uses_size(self) -> bool:
        """Whether the letter size changes the answer's probabilities (Eq. 14's probit latent only)."""
        return self.kind == "thurstone" and self.latent == "probit"

    @property
    def infers_sensitivity(self) -> bool:
        """Whether ``κ`` is an unknown of the model (``sensitivity_sigma > 0``)."""
        return float(self.sensitivity_sigma) > 0.0

    @property
    def infers_minus_bias(self) -> bool:
        """Whether ``β_minus`` is an unknown of the model (``minus_bias_sigma > 0``)."""
        return float(self.minus_bias_sigma) > 0.0

    @property
    def infers_indifference(self) -> bool:
        """Whether the band ``τ`` is an unknown of the model (``indifference_sigma > 0``)."""
        return float(self.indifference_sigma) > 0.0

    @property
    def column_priors(self) -> tuple[tuple[str, float, float], ...]:
        """The optional particle columns this model reads, each ``(name, location, σ)``: ``ln κ``
        (lognormal, median ``sensitivity_median``), ``β_minus`` (normal, mean 0) and ``ln τ``
        (lognormal, median ``indifference``), those the model infers, in that order. With
        ``minus_bias_prior = "half-normal"`` the ``β_minus`` entry carries a fourth element,
        ``"half-normal"`` (the prior folded at its mean,
        :class:`~visiontune.refraction.optics_model.OptionalColumn`); with
        ``sensitivity_second_median`` the ``ln κ`` entry carries ``"mixture"`` and that median (the
        prior of two formulas, module docstring); with ``indifference_second_median`` the ``ln τ`` entry
        carries ``"mixture"``, that median and, unless ½, ``indifference_second_weight``."""
        out = []
        if self.infers_sensitivity:
            kappa = ("log_sensitivity", float(self.sensitivity_median), float(self.sensitivity_sigma))
            second = float(self.sensitivity_second_median)
            out.append(kappa if second == 0.0 else mixture_prior(kappa, second))
        if self.infers_minus_bias:
            bias = ("minus_bias", 0.0, float(self.minus_bias_sigma))
            out.append(bias if self.minus_bias_prior == "normal" else (*bias, self.minus_bias_prior))
        if self.infers_indifference:
            band = ("log_indifference", float(self.indifference), float(self.indifference_sigma))
            second = float(self.indifference_second_median)
            if second > 0.0:
                band = mixture_prior(band, second, float(self.indifference_second_weight))
            out.append(band)
        return tuple(out)

    @property
    def log_blur_noise(self) -> float:
        """``w``: the standard deviation of the judged ``ln ρ`` difference (blur model)."""
        return math.log1p(self.weber_fraction) / _Z75

    @property
    def intrinsic_blur_d(self) -> float:
        """``b_i`` (diopters), the intrinsic blur of the blur model."""
        return self.threshold_at_focus_d / math.sqrt((1.0 + self.weber_fraction) ** 2 - 1.0)


def mixture_prior(head: tuple, second: float, weight: float = 0.5) -> tuple:
    """A mixture prior as an optional column stores it: ``head`` (``(location, σ)``, or with the column's
    name first), then ``"mixture"``, the ``second`` median and, only when it is not ½, the second component's
    ``weight``, so an equal mixture keeps the tuple it had before weights existed
    (:class:`~visiontune.refraction.optics_model.OptionalColumn`)."""
    return (*head, "mixture", float(second), *((float(weight),) if weight != 0.5 else ()))


def ternary_probabilities(delta, indifference: float, lapse: float) -> np.ndarray:
    """``(P("1"), P("2"), P("="))`` along a new last axis for signals ``delta`` (any shape)."""
    d = np.asarray(delta, dtype=float)
    p1 = ndtr(d - indifference)
    p2 = ndtr(-d - indifference)
    out = np.stack([p1, p2, np.maximum(1.0 - p1 - p2, 0.0)], axis=-1)
    return (1.0 - lapse) * out + lapse / 3.0


def blur_discrimination_signal(blur1_d, blur2_d, model: ComparisonModel) -> np.ndarray:
    """``δ = (ln ρ(b2) - ln ρ(b1)) / w`` with ``ρ(b) = √(b² + b_i²)``, for dioptric blurs through
    lens 1 and lens 2 (broadcast); positive when lens 1 is the less blurred."""
    bi2 = model.intrinsic_blur_d**2
    b1 = np.asarray(blur1_d, dtype=float)
    b2 = np.asarray(blur2_d, dtype=float)
    return 0.5 * (np.log(b2 * b2 + bi2) - np.log(b1 * b1 + bi2)) / model.log_blur_noise


def focus_sensitivity_ratio(blur_model: ComparisonModel, slope: float = 5.0) -> float:
    """``κ_blur = ln 10 / (2 a w b_i²)``: the ratio of the blur-discrimination signal to Eq. 11's
    (linear latent, slope ``a``) in the limit of small blurs, where both are quadratic in the
    blur (module docstring); the scale at which an Eq. 11 model sees a blur patient at focus."""
    if not slope > 0.0:
        raise InvalidInputError(f"slope: expected a positive slope, got {slope!r}")
    return math.log(10.0) / (2.0 * slope * blur_model.log_blur_noise * blur_model.intrinsic_blur_d**2)


def patient_comparison_probabilities(
    patient: SimulatedPatient, k: int, s: float, lens1, lens2, model: ComparisonModel
) -> np.ndarray:
    """``(3,)`` probabilities of ``"1"``, ``"2"``, ``"="`` for the simulated ``patient`` at trial
    ``k``. Thurstone: ``δ = Φ⁻¹(P(lens1 preferred))`` from the patient's own Eq. 11 (its latent,
    linear or probit, and its attention drift at trial ``k``); blur: from the patient's blur
    through each lens (accommodation included)."""
    if not isinstance(patient, SimulatedPatient):
        raise InvalidInputError(f"patient: expected a SimulatedPatient, got {type(patient).__name__}")
    k = check_trial_index(k)
    if model.kind == "thurstone":
        p = float(patient.preference_probability_at_trial(k, s, lens1, lens2))
        delta = float(ndtri(min(max(p, 1e-15), 1.0 - 1e-15)))
    else:
        delta = float(blur_discrimination_signal(patient.blur_diopters(lens1), patient.blur_diopters(lens2), model))
    return ternary_probabilities(delta, model.indifference, model.lapse)


def answer_comparison_trial(patient: SimulatedPatient, k: int, s: float, lens1, lens2, model: ComparisonModel) -> str:
    """The patient's answer (``"1"``, ``"2"`` or ``"="``) to the comparison at trial ``k``: one
    uniform ``u`` from ``default_rng([seed, k, 0x5EED, 2])``, the first answer whose cumulative
    probability exceeds ``u``."""
    p = patient_comparison_probabilities(patient, k, s, lens1, lens2, model)
    if patient.seed is None:
        raise InvalidInputError("seed: keyed comparison answers need the patient built with an integer seed")
    u = float(np.random.default_rng([patient.seed, k, TRIAL_KEY, COMPARISON_STREAM]).random())
    return COMPARISON_ANSWERS[int(np.searchsorted(np.cumsum(p)[:2], u, side="right"))]
