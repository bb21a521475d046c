"""Simulated patient populations drawn from published distributions (the clinical validation).

A :class:`Population` describes a clinic's patients as distributions; :func:`draw_cases`
draws :class:`PatientCase` s from it, reproducibly: case ``i`` depends only on
``(seed, i)`` (its own generator ``numpy.random.default_rng([seed, i, 0xCA5E])``, 16
uniforms in fixed slots, then the patient's answer seed), so drawing more cases never
changes the earlier ones. :meth:`PatientCase.patient` builds the
:class:`~visiontune.optics.patient.SimulatedPatient` that answers the session.

Every number below has its source or is marked **assumed**. The populations
(:data:`POPULATIONS`):

``adult-clinic`` (well specified: the patients follow the model)
    * Spherical equivalent ``M`` (D): a mixture, truncated to [-10, +6] D, of an emmetropic
      core ``N(+0.10, 0.55)`` (weight 0.34), a myopic tail ``-0.5 - Exp(2.2)`` (0.41) and a
      hyperopic tail ``+0.5 + Exp(1.4)`` (0.25). Its weights and scales are **chosen by us** (by hand)
      to the US adult prevalences of Vitale et al. 2008 (*Prevalence of refractive error in
      the United States, 1999-2004*, Arch. Ophthalmol. 126:1111; persons >= 20 years):
      myopia (``M <= -1.0 D``) 33.1%, hyperopia (``M >= +3.0 D``) 3.6%; the result has
      P(M <= -1) = 0.333, P(M >= +3) = 0.038, median -0.25 D, 10th-90th percentiles
      -3.5 / +1.7 D, a myopic tail to -10 D (P(M <= -5) = 0.048) and a hyperopic tail to
      +6 D, the skew of adult surveys (Attebo, Ivers & Mitchell 1999, Ophthalmology 106:1066;
      Williams et al. 2015, E3 consortium, Eur. J. Epidemiol. 30:305). ``M`` is drawn
      independently of age (**assumed**; surveys show a hyperopic shift after 50).
    * Cylinder magnitude ``|C|`` (D, minus-cylinder form): exponential with scale 0.55 D,
      truncated at 4 D: P(|C| > 0.5) = 0.40, the adult prevalence of astigmatism (> 0.5 D) in
      the meta-analysis of Hashemi et al. 2018 (*Global and regional estimates of prevalence
      of refractive errors*, J. Curr. Ophthalmol. 30:3): 40.4%. Mean 0.55 D, most below 1 D
      (P(|C| <= 1) = 0.84). The exponential shape is **assumed** (astigmatism distributions
      are leptokurtic, McKendrick & Brennan 1996, JOSA A 13:206). Vitale 2008 reports more
      (36.2% with >= 1.0 D, from non-cycloplegic autorefraction, which reads more cylinder than
      a subjective refraction); we follow the meta-analysis.
    * Axis (minus cylinder): with-the-rule (180 ± 30°), against-the-rule (90 ± 30°) or oblique
      (the rest), uniform within the class. Under 40 years 55% / 20% / 25%, from 40 years
      30% / 45% / 25%: the proportions are **assumed**; the direction (with-the-rule in the
      young, against-the-rule after about 40) is the well-known shift with age (e.g. Attebo
      1999; BMJ Best Practice, *Astigmatism: epidemiology*), and a quarter oblique is close to
      the 18% oblique among all eyes (46% orthogonal) of a 663-eye adult sample (Clin. Exp.
      Optom. 2016, *The influence on unaided vision of age, pupil diameter and
      sphero-cylindrical refractive error*) once eyes without cylinder are set aside.
    * Best-corrected acuity ``VA*``: ``N(-0.05, 0.08)`` logMAR truncated to [-0.2, 0.4]
      (adults read better than 6/6 on average, declining with age: Elliott, Yang & Whitaker
      1995, *Visual acuity changes throughout adulthood in normal, healthy eyes: seeing
      beyond 6/6*, Optom. Vis. Sci. 72:186; one distribution for all ages is **assumed**).
    * Psychometric slope ``a`` (logMAR⁻¹): lognormal, median 5 (the slope of Fauvel & Chalk (contextual BO),
      Fig. 3, i.e. a cumulative-normal spread of 0.2 logMAR, within the spreads reported for
      letter charts: Horner et al. 1985, Am. J. Optom. Physiol. Opt. 62:895; Carkeet et al. 2001,
      Optom. Vis. Sci. 78:113-121), log-SD 0.3 (**assumed**), truncated to [1.5, 15].
    * Lapse rate 2% (**assumed**).
    * Age uniform in [18, 80] years (**assumed**, not census-weighted); amplitude of
      accommodation = Hofstetter's mean line ``18.5 - 0.3 age`` (Hofstetter 1950, via
      :mod:`visiontune.optics.accommodation`), of which the patient uses 2/3.
    * Start: an autorefraction = truth + error, error in power vectors ``M``: ``N(-0.20,
      0.35)`` D (autorefractors read more minus than the subjective refraction: Kinge,
      Midelfart & Jacobsen 1996, Br. J. Ophthalmol. 80:35, Humphrey 500 -0.23 ± 0.47 D,
      Nidek AR-1000 -0.13 ± 0.27 D, autorefraction minus subjective, as tabulated in a later
      Br. J. Ophthalmol. comparison; we take a value between), ``J0``, ``J45``: ``N(0, 0.15)``
      D each (**assumed**, within the 0.12-0.2 D reported for autorefractor vs subjective
      cylinder vectors, e.g. Pesudovs & Weisinger 2004, Optom. Vis. Sci. 81:554; Bullimore,
      Fusaro & Adams 1998, *The repeatability of automated and clinician refraction*, Optom.
      Vis. Sci. 75:617), printed as an autorefractor does in 0.25 D and 1°
      steps, minus-cylinder form. The reading as it is lies within 0.25 D (dioptric distance
      of power vectors) of the truth for 26% of patients and within 0.50 D for 71% (40,000
      cases), a little worse than the 30% / 85% measured in the first clinical validation.
    * Acuity model Blendowske, no letter difficulty, no attention drift.

``adult-clinic-misspecified``: the same refractive errors, ages, acuity, slopes and start,
but each patient's acuity-blur curve is one of the two other published shapes, half
:class:`~visiontune.optics.acuity.PupilBlurAcuity` (Smith 1991) with a pupil of
``N(4.8 - 0.025 (age - 20), 0.5)`` mm truncated to [2, 8] (light-adapted pupils shrink
linearly with age: Winn et al. 1994, IOVS 35:1132; constants **assumed** for a chart of
about 100-200 cd/m²) and half :class:`~visiontune.optics.acuity.LinearLogmarAcuity`
(Remón et al. 2017); Sloan-letter difficulty (:data:`SLOAN_PERCENT_CORRECT`); 5% lapses;
attention drift :data:`DEFAULT_DRIFT`.

``young`` (8-35 years, strong accommodation, more hyperopes): ``M`` mixture truncated to
[-8, +7] D: core ``N(+0.5, 0.6)`` (0.55), myopic ``-0.5 - Exp(1.5)`` (0.25), hyperopic
``+1.0 + Exp(1.2)`` (0.20) (shape **assumed**: children and young adults are more often
hyperopic and less often highly myopic than older adults; Hashemi 2018; it gives
P(M > +0.5) = 0.48, P(M <= -1) = 0.18, median +0.43 D); cylinder scale
0.40 D (**assumed**, between Hashemi 2018's children, 15% > 0.5 D, scale 0.27, and adults);
autorefraction without cycloplegia reads more minus in accommodating eyes: ``M`` error
``N(-0.40, 0.45)`` (**assumed**); otherwise as ``adult-clinic``.

``high-myopia``: ``M`` uniform in [-12, -6] D; cylinder scale 0.9 D truncated at 5 D
(**assumed**: astigmatism is larger in high myopes); ages 18-60; autorefraction ``M`` error
``N(-0.25, 0.50)`` (**assumed**: more scatter at high powers); otherwise as ``adult-clinic``.

``no-start``: like ``adult-clinic`` but with no starting prescription (source ``"none"``)
and wider errors, ``M`` uniform in [-10, +6] D and cylinders to 6 D, so that a session must
find a -10 D myope or a +6 D hyperope from nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from numbers import Integral

import numpy as np
from scipy.special import ndtr, ndtri

from visiontune._validate import check_int, check_number
from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import hofstetter_amplitude_d
from visiontune.optics.acuity import ACUITY_MODELS, acuity_model_by_name
from visiontune.optics.attention import AttentionDrift
from visiontune.optics.letter_difficulty import letter_offsets_from_percent_correct
from visiontune.optics.patient import SimulatedPatient
from visiontune.optics.prescription import PowerVector, Prescription, normalise_axis_deg
from visiontune.optics.psychometric import PsychometricFunction

__all__ = [
    "DEFAULT_DRIFT",
    "POPULATIONS",
    "SLOAN_PERCENT_CORRECT",
    "START_SOURCES",
    "AxisMix",
    "CylinderDistribution",
    "PatientCase",
    "Population",
    "SphericalEquivalentMixture",
    "StartError",
    "UniformRange",
    "axis_class",
    "draw_cases",
    "population_by_name",
    "sloan_letter_offsets",
]

START_SOURCES = ("autorefraction", "spectacles", "retinoscopy", "none")

#: Key of the case generators: case ``i`` draws from ``default_rng([seed, i, CASE_KEY])``.
CASE_KEY = 0xCA5E

#: Percent correct of each Sloan letter at one letter size near threshold. C, O, S (about
#: 71%) and Z (94%) are the figures of docs/design.md ("Letter size on screen"); the ranking (round letters C, O, D
#: hardest, letters with diagonal strokes Z, V, N easiest) follows Alexander, Xie & Derlacki 1997
#: (*Visual acuity and contrast sensitivity for individual Sloan letters*, Vision Res.
#: 37:813) and Miller et al. 2001 (OSA Vision Science and its Applications, FC3); the values
#: of D, R, H, K, N and V are **assumed** (spread between the two ends in that order).
SLOAN_PERCENT_CORRECT = {
    "C": 71.0,
    "O": 71.0,
    "S": 71.0,
    "D": 74.0,
    "R": 79.0,
    "H": 82.0,
    "K": 85.0,
    "N": 88.0,
    "V": 90.0,
    "Z": 94.0,
}

#: Attention drift of the misspecified population (**assumed** magnitudes; the formulas and
#: what is known are in :mod:`visiontune.optics.attention`): lapses grow by 3 percentage points
#: over 120 trials, the threshold worsens by 0.02 logMAR per 100 trials.
DEFAULT_DRIFT = AttentionDrift(lapse_increase=0.03, over_trials=120, logmar_per_100_trials=0.02)

# Slots of the 16 uniforms each case draws (fixed, so changing one distribution never moves
# another's draw).
(
    _U_M_COMPONENT,
    _U_M_VALUE,
    _U_CYL,
    _U_AXIS_CLASS,
    _U_AXIS_ANGLE,
    _U_VA,
    _U_SLOPE,
    _U_AGE,
    _U_MODEL,
    _U_PUPIL,
    _U_START_M,
    _U_START_J0,
    _U_START_J45,
) = range(13)
_N_UNIFORMS = 16
_TINY = 1e-12


def sloan_letter_offsets() -> dict[str, float]:
    """Per-letter acuity offsets ``δ`` (logMAR) from :data:`SLOAN_PERCENT_CORRECT`.

    Computed once for a reference 10-alternative task with slope 5 logMAR⁻¹ and no lapse
    (:func:`~visiontune.optics.letter_difficulty.letter_offsets_from_percent_correct`, the
    reference letter at the table's mean), so a letter's offset is a property of the letter,
    the same for every patient: C, O, S about +0.07, Z about -0.14 logMAR. The 16 letters
    that are not Sloan letters get 0 (an average letter; **assumed**), so a 26-letter protocol
    works too.
    """
    reference = PsychometricFunction(slope=5.0, n_alternatives=10, lapse=0.0)
    offsets = {letter: 0.0 for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    offsets.update(letter_offsets_from_percent_correct(SLOAN_PERCENT_CORRECT, reference))
    return offsets


# --- distributions (inverse-CDF samplers of one or two uniforms, with their CDFs) --------------


def _normal(u: float) -> float:
    return float(ndtri(min(max(u, _TINY), 1.0 - _TINY)))


def _truncated_normal(u: float, mean: float, sd: float, lower: float, upper: float) -> float:
    a, b = ndtr((lower - mean) / sd), ndtr((upper - mean) / sd)
    p = a + u * (b - a)
    return float(np.clip(mean + sd * ndtri(min(max(p, _TINY), 1.0 - _TINY)), lower, upper))


def _truncated_normal_cdf(x, mean, sd, lower, upper):
    a, b = ndtr((lower - mean) / sd), ndtr((upper - mean) / sd)
    return np.clip((ndtr((np.clip(x, lower, upper) - mean) / sd) - a) / (b - a), 0.0, 1.0)


def _truncated_exponential(u: float, scale: float, length: float) -> float:
    """``E ~ Exp(scale)`` conditioned on ``E <= length``, by inversion."""
    return float(-scale * math.log1p(-u * -math.expm1(-length / scale)))


def _truncated_exponential_cdf(x, scale, length):
    x = np.clip(np.asarray(x, dtype=float), 0.0, length)
    return -np.expm1(-x / scale) / -math.expm1(-length / scale)


def _check(name: str, ok: bool, expected: str, value) -> None:
    if not ok:
        raise InvalidInputError(f"{name}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class SphericalEquivalentMixture:
    """Spherical equivalent ``M`` (D): a mixture of a normal core ``N(core_mean_d, core_sd_d)``,
    a myopic tail ``myopic_onset_d - Exp(myopic_scale_d)`` and a hyperopic tail
    ``hyperopic_onset_d + Exp(hyperopic_scale_d)``, each truncated to ``[lower_d, upper_d]``,
    with weights ``core_weight``, ``myopic_weight``, ``hyperopic_weight`` (summing to 1)."""

    core_weight: float
    core_mean_d: float
    core_sd_d: float
    myopic_weight: float
    myopic_onset_d: float
    myopic_scale_d: float
    hyperopic_weight: float
    hyperopic_onset_d: float
    hyperopic_scale_d: float
    lower_d: float
    upper_d: float

    def __post_init__(self) -> None:
        w = (self.core_weight, self.myopic_weight, self.hyperopic_weight)
        _check("weights", min(w) >= 0 and abs(sum(w) - 1.0) < 1e-9, "non-negative weights summing to 1", w)
        _check("core_sd_d", self.core_sd_d > 0, "> 0", self.core_sd_d)
        _check("myopic_scale_d", self.myopic_scale_d > 0, "> 0", self.myopic_scale_d)
        _check("hyperopic_scale_d", self.hyperopic_scale_d > 0, "> 0", self.hyperopic_scale_d)
        _check(
            "lower_d",
            self.lower_d < self.myopic_onset_d <= self.hyperopic_onset_d < self.upper_d,
            "lower_d < myopic_onset_d <= hyperopic_onset_d < upper_d",
            (self.lower_d, self.upper_d),
        )

    def sample(self, u_component: float, u_value: float) -> float:
        if u_component < self.core_weight:
            return _truncated_normal(u_value, self.core_mean_d, self.core_sd_d, self.lower_d, self.upper_d)
        if u_component < self.core_weight + self.myopic_weight:
            return self.myopic_onset_d - _truncated_exponential(
                u_value, self.myopic_scale_d, self.myopic_onset_d - self.lower_d
            )
        return self.hyperopic_onset_d + _truncated_exponential(
            u_value, self.hyperopic_scale_d, self.upper_d - self.hyperopic_onset_d
        )

    def cdf(self, x):
        """``P(M <= x)`` (exact, for tests and documentation)."""
        x = np.asarray(x, dtype=float)
        core = _truncated_normal_cdf(x, self.core_mean_d, self.core_sd_d, self.lower_d, self.upper_d)
        myopic = 1.0 - _truncated_exponential_cdf(
            self.myopic_onset_d - x, self.myopic_scale_d, self.myopic_onset_d - self.lower_d
        )
        myopic = np.where(x >= self.myopic_onset_d, 1.0, np.where(x < self.lower_d, 0.0, myopic))
        hyperopic = _truncated_exponential_cdf(
            x - self.hyperopic_onset_d, self.hyperopic_scale_d, self.upper_d - self.hyperopic_onset_d
        )
        out = self.core_weight * core + self.myopic_weight * myopic + self.hyperopic_weight * hyperopic
        return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class UniformRange:
    """``M`` (D) uniform in ``[lower_d, upper_d]``."""

    lower_d: float
    upper_d: float

    def __post_init__(self) -> None:
        _check("upper_d", self.upper_d > self.lower_d, f"> lower_d = {self.lower_d}", self.upper_d)

    def sample(self, u_component: float, u_value: float) -> float:
        return float(self.lower_d + u_value * (self.upper_d - self.lower_d))

    def cdf(self, x):
        out = np.clip((np.asarray(x, dtype=float) - self.lower_d) / (self.upper_d - self.lower_d), 0.0, 1.0)
        return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class CylinderDistribution:
    """Cylinder magnitude ``|C|`` (D): ``Exp(scale_d)`` truncated at ``max_d``."""

    scale_d: float
    max_d: float

    def __post_init__(self) -> None:
        _check("scale_d", self.scale_d > 0, "> 0", self.scale_d)
        _check("max_d", self.max_d > 0, "> 0", self.max_d)

    def sample(self, u: float) -> float:
        return _truncated_exponential(u, self.scale_d, self.max_d)

    def cdf(self, x):
        out = _truncated_exponential_cdf(x, self.scale_d, self.max_d)
        return float(out) if np.ndim(out) == 0 else out

    def mean(self) -> float:
        """Mean of the truncated exponential, D."""
        s, m = self.scale_d, self.max_d
        return float(s - m * math.exp(-m / s) / -math.expm1(-m / s))


#: Axis classes (minus-cylinder axis, degrees): the start and width of each class's arcs.
_AXIS_CLASSES = {
    "with-the-rule": ((150.0, 60.0),),
    "against-the-rule": ((60.0, 60.0),),
    "oblique": ((30.0, 30.0), (120.0, 30.0)),
}


@dataclass(frozen=True)
class AxisMix:
    """Probabilities of the axis classes (minus cylinder): with-the-rule (axis 180 ± 30°),
    against-the-rule (90 ± 30°), oblique (30-60° and 120-150°); uniform within a class."""

    with_the_rule: float
    against_the_rule: float
    oblique: float

    def __post_init__(self) -> None:
        w = (self.with_the_rule, self.against_the_rule, self.oblique)
        _check("axis mix", min(w) >= 0 and abs(sum(w) - 1.0) < 1e-9, "non-negative proportions summing to 1", w)

    def sample(self, u_class: float, u_angle: float) -> float:
        if u_class < self.with_the_rule:
            arcs = _AXIS_CLASSES["with-the-rule"]
        elif u_class < self.with_the_rule + self.against_the_rule:
            arcs = _AXIS_CLASSES["against-the-rule"]
        else:
            arcs = _AXIS_CLASSES["oblique"]
        total = sum(width for _, width in arcs)
        t = u_angle * total
        for start, width in arcs:
            if t < width or (start, width) == arcs[-1]:
                return float(normalise_axis_deg(start + t))
            t -= width
        raise AssertionError("unreachable")


def axis_class(axis_deg: float) -> str:
    """The class of a minus-cylinder axis (degrees): ``"with-the-rule"``, ``"against-the-rule"``
    or ``"oblique"`` (boundaries 30°, 60°, 120°, 150° belong to the next class counter-clockwise)."""
    a = float(normalise_axis_deg(axis_deg)) % 180.0
    if a < 30.0 or a >= 150.0:
        return "with-the-rule"
    if 60.0 <= a < 120.0:
        return "against-the-rule"
    return "oblique"


@dataclass(frozen=True)
class StartError:
    """Error of the starting prescription against the subjective refraction, in power vectors:
    ``M`` error ``N(bias_m_d, sd_m_d)``, ``J0`` and ``J45`` errors ``N(0, sd_j_d)`` (D); the
    reading is rounded to ``step_d`` (D) and ``axis_step_deg`` as the instrument prints it."""

    source: str
    bias_m_d: float
    sd_m_d: float
    sd_j_d: float
    step_d: float = 0.25
    axis_step_deg: float = 1.0

    def __post_init__(self) -> None:
        _check("source", self.source in START_SOURCES[:-1], f"one of {START_SOURCES[:-1]}", self.source)
        _check("sd_m_d", self.sd_m_d >= 0, ">= 0", self.sd_m_d)
        _check("sd_j_d", self.sd_j_d >= 0, ">= 0", self.sd_j_d)

    def reading(self, true_rx: Prescription, u_m: float, u_j0: float, u_j45: float) -> Prescription:
        m, j0, j45 = true_rx.power_vector_array()
        pv = PowerVector(
            m + self.bias_m_d + self.sd_m_d * _normal(u_m),
            j0 + self.sd_j_d * _normal(u_j0),
            j45 + self.sd_j_d * _normal(u_j45),
        )
        rx = pv.to_prescription()
        return rx.rounded(self.step_d, self.axis_step_deg).to_minus_cylinder() if self.step_d > 0 else rx


@dataclass(frozen=True)
class Population:
    """A clinic's patients as distributions (module docstring for every source).

    ``spherical_equivalent``: distribution of ``M`` (D). ``cylinder``: of ``|C|`` (D).
    ``axis_under_40`` / ``axis_from_40``: axis classes by age. ``va_mean``, ``va_sd``,
    ``va_lower``, ``va_upper``: truncated normal of ``VA*`` (logMAR). ``slope_median``,
    ``slope_log_sd``, ``slope_lower``, ``slope_upper``: truncated lognormal of ``a``
    (logMAR⁻¹). ``lapse``: ``λ``. ``age_range``: uniform ages (years). ``start``: the
    starting prescription's error, or None (no start). ``acuity_models``: ``((name,
    weight), ...)``. ``pupil_at_20_mm``, ``pupil_per_year_mm``, ``pupil_sd_mm``: pupil
    (mm) of the pupil-dependent acuity model, ``N(p20 + slope (age - 20), sd)`` in [2, 8].
    ``letter_difficulty``, ``drift``: the patients' Sloan-letter difficulty and attention
    drift (:data:`DEFAULT_DRIFT`).
    """

    name: str
    description: str
    spherical_equivalent: SphericalEquivalentMixture | UniformRange
    cylinder: CylinderDistribution
    axis_under_40: AxisMix
    axis_from_40: AxisMix
    age_range: tuple[float, float]
    start: StartError | None
    va_mean: float = -0.05
    va_sd: float = 0.08
    va_lower: float = -0.2
    va_upper: float = 0.4
    slope_median: float = 5.0
    slope_log_sd: float = 0.3
    slope_lower: float = 1.5
    slope_upper: float = 15.0
    lapse: float = 0.02
    acuity_models: tuple[tuple[str, float], ...] = (("blendowske", 1.0),)
    pupil_at_20_mm: float = 4.8
    pupil_per_year_mm: float = -0.025
    pupil_sd_mm: float = 0.5
    letter_difficulty: bool = False
    drift: bool = False

    def __post_init__(self) -> None:
        lo, hi = self.age_range
        _check("age_range", 0 <= lo < hi <= 120, "0 <= first < second <= 120 years", self.age_range)
        names = [n for n, _ in self.acuity_models]
        weights = [w for _, w in self.acuity_models]
        _check(
            "acuity_models",
            all(n in ACUITY_MODELS for n in names) and min(weights) >= 0 and abs(sum(weights) - 1.0) < 1e-9,
            f"(name, weight) pairs of {tuple(ACUITY_MODELS)} summing to 1",
            self.acuity_models,
        )
        _check("lapse", 0 <= self.lapse < 0.5, "a lapse rate in [0, 0.5)", self.lapse)

    def to_dict(self) -> dict:
        """Every parameter, as plain data (for results pages)."""
        return asdict(self)


@dataclass(frozen=True)
class PatientCase:
    """One simulated patient of a population, as stored with a benchmark run.

    ``case_id``: index ``i`` in the draw. ``true_rx``: the subjective refraction the session
    should find (minus-cylinder form, any axis). ``best_corrected_logmar``: ``VA*``.
    ``slope``: ``a`` (logMAR⁻¹). ``lapse``: ``λ``. ``age_years``: years or None.
    ``accommodation_d``: the amplitude of accommodation (D) the patient has (they use 2/3 of
    it). ``start_rx`` / ``start_source``: the starting prescription and where it came from
    (``"autorefraction"``, ``"spectacles"``, ``"retinoscopy"``, or ``"none"`` with
    ``start_rx`` None). ``acuity_model``: a name of
    :data:`~visiontune.optics.acuity.ACUITY_MODELS`. ``letter_difficulty``: Sloan-letter
    offsets on. ``drift``: :data:`DEFAULT_DRIFT` on. ``seed``: the patient's answer seed.
    ``pupil_mm``: pupil (mm) of the ``"pupil-geometric"`` model, else None. ``population``:
    the population's name.
    """

    case_id: int
    true_rx: Prescription
    best_corrected_logmar: float
    slope: float
    lapse: float
    age_years: float | None
    accommodation_d: float
    start_rx: Prescription | None
    start_source: str
    acuity_model: str
    letter_difficulty: bool
    drift: bool
    seed: int
    pupil_mm: float | None = None
    population: str = field(default="")

    def __post_init__(self) -> None:
        _check("true_rx", isinstance(self.true_rx, Prescription), "a Prescription", self.true_rx)
        _check("start_source", self.start_source in START_SOURCES, f"one of {START_SOURCES}", self.start_source)
        if self.start_source == "none":
            _check("start_rx", self.start_rx is None, "None when start_source is 'none'", self.start_rx)
        else:
            _check(
                "start_rx",
                isinstance(self.start_rx, Prescription),
                f"a Prescription for start_source {self.start_source!r}",
                self.start_rx,
            )
        _check("acuity_model", self.acuity_model in ACUITY_MODELS, f"one of {tuple(ACUITY_MODELS)}", self.acuity_model)
        _check(
            "seed",
            isinstance(self.seed, Integral) and not isinstance(self.seed, bool) and self.seed >= 0,
            "an integer >= 0",
            self.seed,
        )

    def patient(self, n_alternatives: int) -> SimulatedPatient:
        """The simulated patient of this case for a task with ``n_alternatives`` letters."""
        model = acuity_model_by_name(self.acuity_model, self.best_corrected_logmar, pupil_mm=self.pupil_mm)
        return SimulatedPatient(
            self.true_rx,
            slope=self.slope,
            n_alternatives=n_alternatives,
            lapse=self.lapse,
            seed=self.seed,
            acuity_model=model,
            letter_offsets_logmar=sloan_letter_offsets() if self.letter_difficulty else None,
            age_years=self.age_years,
            accommodation_d=self.accommodation_d,
            drift=DEFAULT_DRIFT if self.drift else None,
        )

    def to_dict(self) -> dict:
        """Plain data (JSON-ready); :meth:`from_dict` reads it back."""

        def rx(p):
            return None if p is None else {"sphere_d": p.sphere_d, "cylinder_d": p.cylinder_d, "axis_deg": p.axis_deg}

        return {
            "case_id": self.case_id,
            "population": self.population,
            "true_rx": rx(self.true_rx),
            "best_corrected_logmar": self.best_corrected_logmar,
            "slope": self.slope,
            "lapse": self.lapse,
            "age_years": self.age_years,
            "accommodation_d": self.accommodation_d,
            "start_rx": rx(self.start_rx),
            "start_source": self.start_source,
            "acuity_model": self.acuity_model,
            "letter_difficulty": self.letter_difficulty,
            "drift": self.drift,
            "seed": self.seed,
            "pupil_mm": self.pupil_mm,
        }

    @classmethod
    def from_dict(cls, data: dict) -> PatientCase:
        """Inverse of :meth:`to_dict`; a missing or malformed key is an error naming it."""
        if not isinstance(data, dict):
            raise InvalidInputError(f"data: expected a dict from PatientCase.to_dict(), got {type(data).__name__}")
        required = (
            "case_id",
            "true_rx",
            "best_corrected_logmar",
            "slope",
            "lapse",
            "age_years",
            "accommodation_d",
            "start_rx",
            "start_source",
            "acuity_model",
            "letter_difficulty",
            "drift",
            "seed",
        )
        missing = [k for k in required if k not in data]
        if missing:
            raise InvalidInputError(f"data: missing keys {', '.join(missing)}")

        def rx(key):
            value = data[key]
            if value is None:
                return None
            try:
                return Prescription(value["sphere_d"], value["cylinder_d"], value["axis_deg"])
            except (KeyError, TypeError) as exc:
                raise InvalidInputError(f"{key}: expected {{sphere_d, cylinder_d, axis_deg}}, got {value!r}") from exc

        for key in ("case_id", "seed"):
            check_int(key, data[key])
        for key in ("best_corrected_logmar", "slope", "lapse", "accommodation_d"):
            check_number(key, data.get(key))
        for key in ("age_years", "pupil_mm"):
            if data.get(key) is not None:
                check_number(key, data[key])
        return cls(
            case_id=int(data["case_id"]),
            true_rx=rx("true_rx"),
            best_corrected_logmar=float(data["best_corrected_logmar"]),
            slope=float(data["slope"]),
            lapse=float(data["lapse"]),
            age_years=None if data["age_years"] is None else float(data["age_years"]),
            accommodation_d=float(data["accommodation_d"]),
            start_rx=rx("start_rx"),
            start_source=str(data["start_source"]),
            acuity_model=str(data["acuity_model"]),
            letter_difficulty=bool(data["letter_difficulty"]),
            drift=bool(data["drift"]),
            seed=int(data["seed"]),
            pupil_mm=None if data.get("pupil_mm") is None else float(data["pupil_mm"]),
            population=str(data.get("population", "")),
        )


# --- the populations ----------------------------------------------------------------------------

_ADULT_M = SphericalEquivalentMixture(
    core_weight=0.34,
    core_mean_d=0.10,
    core_sd_d=0.55,
    myopic_weight=0.41,
    myopic_onset_d=-0.5,
    myopic_scale_d=2.2,
    hyperopic_weight=0.25,
    hyperopic_onset_d=0.5,
    hyperopic_scale_d=1.4,
    lower_d=-10.0,
    upper_d=6.0,
)
_ADULT_CYLINDER = CylinderDistribution(scale_d=0.55, max_d=4.0)
_AXIS_UNDER_40 = AxisMix(with_the_rule=0.55, against_the_rule=0.20, oblique=0.25)
_AXIS_FROM_40 = AxisMix(with_the_rule=0.30, against_the_rule=0.45, oblique=0.25)
_AUTOREFRACTION = StartError("autorefraction", bias_m_d=-0.20, sd_m_d=0.35, sd_j_d=0.15)

_ADULT = Population(
    name="adult-clinic",
    description="Adults 18-80 at an optometry clinic, well specified (Blendowske acuity, 2% lapses), "
    "starting from an autorefraction",
    spherical_equivalent=_ADULT_M,
    cylinder=_ADULT_CYLINDER,
    axis_under_40=_AXIS_UNDER_40,
    axis_from_40=_AXIS_FROM_40,
    age_range=(18.0, 80.0),
    start=_AUTOREFRACTION,
)

POPULATIONS: dict[str, Population] = {
    "adult-clinic": _ADULT,
    "adult-clinic-misspecified": Population(
        name="adult-clinic-misspecified",
        description="The adult clinic's patients, whose acuity-blur curve is not Blendowske's (Smith 1991 pupil "
        "model or linear logMAR), with Sloan-letter difficulty, 5% lapses and attention drift",
        spherical_equivalent=_ADULT_M,
        cylinder=_ADULT_CYLINDER,
        axis_under_40=_AXIS_UNDER_40,
        axis_from_40=_AXIS_FROM_40,
        age_range=(18.0, 80.0),
        start=_AUTOREFRACTION,
        lapse=0.05,
        acuity_models=(("pupil-geometric", 0.5), ("linear-logmar", 0.5)),
        letter_difficulty=True,
        drift=True,
    ),
    "young": Population(
        name="young",
        description="Children and young adults 8-35 (strong accommodation, more hyperopes), starting from a "
        "non-cycloplegic autorefraction",
        spherical_equivalent=SphericalEquivalentMixture(
            core_weight=0.55,
            core_mean_d=0.5,
            core_sd_d=0.6,
            myopic_weight=0.25,
            myopic_onset_d=-0.5,
            myopic_scale_d=1.5,
            hyperopic_weight=0.20,
            hyperopic_onset_d=1.0,
            hyperopic_scale_d=1.2,
            lower_d=-8.0,
            upper_d=7.0,
        ),
        cylinder=CylinderDistribution(scale_d=0.40, max_d=4.0),
        axis_under_40=_AXIS_UNDER_40,
        axis_from_40=_AXIS_FROM_40,
        age_range=(8.0, 35.0),
        start=StartError("autorefraction", bias_m_d=-0.40, sd_m_d=0.45, sd_j_d=0.15),
    ),
    "high-myopia": Population(
        name="high-myopia",
        description="High myopes (M -12 to -6 D) 18-60 with more astigmatism, starting from an autorefraction",
        spherical_equivalent=UniformRange(-12.0, -6.0),
        cylinder=CylinderDistribution(scale_d=0.9, max_d=5.0),
        axis_under_40=_AXIS_UNDER_40,
        axis_from_40=_AXIS_FROM_40,
        age_range=(18.0, 60.0),
        start=StartError("autorefraction", bias_m_d=-0.25, sd_m_d=0.50, sd_j_d=0.20),
    ),
    "no-start": Population(
        name="no-start",
        description="Adults 18-80 with M from -10 to +6 D and cylinders to 6 D, and no starting prescription",
        spherical_equivalent=UniformRange(-10.0, 6.0),
        cylinder=CylinderDistribution(scale_d=0.55, max_d=6.0),
        axis_under_40=_AXIS_UNDER_40,
        axis_from_40=_AXIS_FROM_40,
        age_range=(18.0, 80.0),
        start=None,
    ),
}


def population_by_name(name: str) -> Population:
    """The registered population called ``name``, or an error listing the names."""
    if name not in POPULATIONS:
        raise InvalidInputError(f"population: expected one of {', '.join(POPULATIONS)}, got {name!r}")
    return POPULATIONS[name]


def _draw_case(population: Population, seed: int, i: int) -> PatientCase:
    rng = np.random.default_rng([seed, i, CASE_KEY])
    u = rng.random(_N_UNIFORMS)
    patient_seed = int(rng.integers(0, 2**31 - 1))
    p = population

    m = p.spherical_equivalent.sample(u[_U_M_COMPONENT], u[_U_M_VALUE])
    cylinder = -p.cylinder.sample(u[_U_CYL])
    lo, hi = p.age_range
    age = float(lo + u[_U_AGE] * (hi - lo))
    axis = (p.axis_under_40 if age < 40.0 else p.axis_from_40).sample(u[_U_AXIS_CLASS], u[_U_AXIS_ANGLE])
    true_rx = Prescription(m - cylinder / 2.0, cylinder, axis)
    va = _truncated_normal(u[_U_VA], p.va_mean, p.va_sd, p.va_lower, p.va_upper)
    log_slope = _truncated_normal(
        u[_U_SLOPE], math.log(p.slope_median), p.slope_log_sd, math.log(p.slope_lower), math.log(p.slope_upper)
    )
    cumulative, model = 0.0, p.acuity_models[-1][0]
    for name, weight in p.acuity_models:
        cumulative += weight
        if u[_U_MODEL] < cumulative:
            model = name
            break
    pupil = None
    if model == "pupil-geometric":
        pupil = _truncated_normal(
            u[_U_PUPIL], p.pupil_at_20_mm + p.pupil_per_year_mm * (age - 20.0), p.pupil_sd_mm, 2.0, 8.0
        )
    if p.start is None:
        start_rx, source = None, "none"
    else:
        start_rx = p.start.reading(true_rx, u[_U_START_M], u[_U_START_J0], u[_U_START_J45])
        source = p.start.source
    return PatientCase(
        case_id=i,
        true_rx=true_rx,
        best_corrected_logmar=va,
        slope=float(math.exp(log_slope)),
        lapse=p.lapse,
        age_years=age,
        accommodation_d=float(hofstetter_amplitude_d(age, "mean")),
        start_rx=start_rx,
        start_source=source,
        acuity_model=model,
        letter_difficulty=p.letter_difficulty,
        drift=p.drift,
        seed=patient_seed,
        pupil_mm=pupil,
        population=p.name,
    )


def draw_cases(population: Population | str, n: int, seed: int, *, start: int = 0) -> list[PatientCase]:
    """Cases ``start, ..., start + n - 1`` of ``population`` (a :class:`Population` or a
    name in :data:`POPULATIONS`) for ``seed``. Case ``i`` depends only on ``(seed, i)``:
    the same seed gives the same cases, and ``draw_cases(p, 10, s)`` is the first ten of
    ``draw_cases(p, 100, s)``."""
    if isinstance(population, str):
        population = population_by_name(population)
    if not isinstance(population, Population):
        raise InvalidInputError(f"population: expected a Population or a name, got {type(population).__name__}")
    for name, value in (("n", n), ("seed", seed), ("start", start)):
        check_int(name, value, lo=0)
    return [_draw_case(population, int(seed), i) for i in range(int(start), int(start) + int(n))]
