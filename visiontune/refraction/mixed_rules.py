"""A letter or a comparison? The next question by its value per second of the patient's time.

Near the best lens a letter answer carries little information: acuity is flat at the optimum
(``benchmarks/precision_bound.py``). A comparison of two lenses placed on either side of the
estimate ("which is clearer, 1 or 2?", the Jackson cross-cylinder's question) depends on the
*first* power of the distance from the estimate to the correction, so near the end of a
refraction it may teach more per answer; it also takes longer. This rule weighs the two:

* the **letter** is the protocol's rule (:func:`visiontune.refraction.optics_rules.propose`,
  unchanged, with the loop's random stream), so a session that never asks a comparison asks
  exactly the letters of the letter-only protocol;
* the **comparison** is the best of a set of candidate pairs of trial lenses around the
  estimate ``c``: symmetric pairs ``c ± h u`` and one-sided pairs ``(c, c ± 2h u)`` for
  half-separations ``h`` of 0.125 to 0.75 D along ``M``, ``J0``, ``J45`` and the two longest
  principal axes of the posterior of the correction, plus pairs of two posterior draws'
  corrections (as KSS draws a duel, Fauvel & Chalk (contextual BO) §3.4) (``pairs = "any"``);
  or, with ``pairs = "clinical"``, the same pairs along the three directions a clinician
  changes one at a time: the sphere (``M``), the cylinder's power at its axis (``J`` along the
  estimate's own cylinder, as the cross-cylinder's power check) and its axis (``J`` across it, the
  axis check), so that lens 1 and lens 2 differ in one parameter as at a phoropter; or, with
  ``pairs = "one-change"``, the pairs a clinician shows around the lens in place and the rounded
  estimate (:mod:`visiontune.refraction.clinical_pairs`: sphere ±0.25/±0.50 D, the cross-cylinder's
  two flips for the axis and the power, the axis and power steps after it), a cross-cylinder pair
  around the lens in place costing no lens change; otherwise all within
  the protocol's step of ``c`` and rounded to trial lenses (scored with each particle's comparison
  sensitivity ``κ`` when the model infers it, :mod:`visiontune.refraction.comparisons`). Its letter
  size: BALD-like search over the chart's sizes when the
  comparison model depends on the size (Eq. 14's probit latent), else the predicted best acuity
  plus :attr:`MixedSettings.comparison_size_offset_logmar` (a line the patient reads easily);
* each is scored, on one equally weighted subsample of the particles, by ``criterion``:
  ``"evr"`` (default) the expected reduction of the posterior variance of the correction,
  ``tr Cov(P*) - E_y[tr Cov(P* | y)]`` (D², the quantity the EVR rule minimises),
  ``"evr-precision"`` the same reduction in units of the precision the stop asks
  (:class:`PrecisionUnits`), ``"evr-stop"`` the first until the region is within the stop's
  precision and then, while the stop waits only for ``κ``, the second (below), or
  ``"information"`` the mutual information between the answer and ``θ`` (bits, Houlsby et al.
  2011); divided by the question's duration, and the larger value per second is asked.

**In units of the precision asked.** ``"evr"`` adds diopters² of ``M``, ``J0`` and ``J45``; the
stop asks each to its own precision (±0.25 D on ``M``, a 1-D interval; 0.25 D on the length of
``J``, a 2-D disk) and, with a model that infers the comparison sensitivity ``κ`` and a
``sensitivity_to_stop``, that ``ln κ`` be learned, which no diopter term values. ``"evr-precision"``
scores ``Σ_k (Var θ_k - E_y[Var(θ_k | y)]) / t_k²`` over ``θ_k`` = ``M``, ``J0``, ``J45`` (and ``ln κ``)
with ``t_k`` the standard deviation at which the stop's condition on ``θ_k`` is met by a normal
posterior: ``t_M = m_d / z`` (``z = Φ⁻¹((1 + level) / 2)``, 1.96 at 95%), ``t_J =
cylinder_vector_d / √(χ²₂(level))`` (``√(-2 ln(1 - level))``, 2.45 at 95%), ``t_κ =
sensitivity_to_stop × σ`` (σ the prior's of ``ln κ``). The letter, comparison and slider are
weighed on the same units (a slider's ``ln κ`` term is left out until the particles carry one).
Measured (docs/results/README.md): the regions are better calibrated (``κ`` learned early, the
posterior of ``M`` is no longer pulled plus by a prior ``κ`` too high for an Eq. 11 patient) and
older patients stop sooner, but young patients, whose ``M`` is the slow part, take longer and end
less often within 0.25 D.

**Towards the stop that is left.** ``"evr-stop"`` spends each answer on the condition of the stop
still unmet: ``"evr"`` while the region is wider than the precision (so ``M`` and ``J`` are valued in
diopters, as before, and a young patient's slow ``M`` keeps every answer), and ``"evr-precision"``
once the region is within it and the stop waits only for ``κ`` (:class:`MixedSettings`
``sensitivity_to_stop``), where no diopter term values the answers the stop still needs. The
engine decides which (:meth:`~visiontune.refraction.mixed_engine.MixedOpticsEngine.question_settings`,
from the posterior the stop reads), and :func:`propose_mixed` is given the criterion it resolved.
In an eye that does not accommodate the region is met after about 20 answers of straddling
comparisons, which are blind to ``κ`` (``δ = 0``), so under ``"evr"`` ``κ`` was learned only
by the way, about 30 answers later (docs/results/README.md measures both).

**Sliders.** With :class:`~visiontune.refraction.slider.SliderSettings` (the protocol's
``[sliders]`` table) a third kind is weighed: the best knob to turn,
:func:`~visiontune.refraction.slider.propose_slider` (the projective preferential query of
Mikkola et al. 2020), scored by the same ``criterion`` (its expected reduction of ``tr Cov(P*)``
exact over the ``n`` answers, or its mutual information) per ``slider_seconds``. Its draws come
from a stream of their own, so a protocol without sliders asks what it asked before; without
comparisons the letter is weighed on a subsample of that stream (letters against sliders).

Durations are settings. Defaults: a letter 3 s, a comparison 5 s, a slider 8 s, derived from
published timings (and what is still assumed) in :mod:`visiontune.refraction.durations`.

**Lens changes.** With ``lens_change_seconds`` ``c > 0`` (a trial frame; 0 at a phoropter, the
default) each question also costs ``c`` per change of lens from the lens in place (the last one
shown): a letter ``0`` or ``1`` change, a comparison ``1`` or ``2`` (lens 1 is shown first, so a
pair holding the lens in place shows it first), a slider the changes along its path. The candidate
pairs gain the lens in place against every other lens they hold ("1, the lens you have; or 2?", a
clinician's question at a trial frame, one swap); each question is valued per second of ``duration
+ c × changes``, the best comparison pair among them too, and the letter through the lens in place
(BALD's size, :func:`optics_rules.letter_at`) is weighed beside the rule's letter. With ``c = 0``
nothing changes: the same questions to the last bit. ``lens_change_weight`` ``w`` (default 1)
charges each change ``w c`` in the choice while the patient's time still counts ``c``: the one-step
value per second does not see that a lens left in place serves the questions after it. At ``w = 5``
(a trial frame) the default asked half the changes in 9-69 s less, but filed 4-12 points fewer lenses
within 0.25 D in three of five populations: measured, not shipped (docs/results/clinic-time.md, "A lens
change charged more than its seconds").

**Chart lines.** With :class:`~visiontune.refraction.chart_line.ChartLineSettings` (the protocol's
``[chart_line]``) a fourth kind is weighed: ``n`` letters of one size read aloud through one lens
(:mod:`visiontune.refraction.chart_line`). Its candidates are the rule's letter lens, the lens in
place and the estimate rounded to a trial lens, each at every size of the chart; each is scored by
the same ``criterion`` exactly over the particles, its ``n + 1`` outcomes the number of letters
read (binomial given the particle), per ``line_seconds`` plus its lens change. It uses the
comparison's subsample (no draw of its own), so a protocol without ``[chart_line]`` asks what it
asked before.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtri

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction import clinical_pairs, optics_rules
from visiontune.refraction.chart_line import ChartLineSettings, LineQuery, line_count_probabilities
from visiontune.refraction.comparisons import comparison_probabilities, with_sensitivity
from visiontune.refraction.durations import COMPARISON_SECONDS, LENS_CHANGE_SECONDS, LETTER_SECONDS
from visiontune.refraction.lenses import (
    LensSteps,
    changes_along,
    distinct_pair_indices,
    trial_lens,
    trial_lens_power_vectors,
)
from visiontune.refraction.optics_model import (
    LOG_SENSITIVITY,
    VA0,
    ParticlePosterior,
    probability_correct,
)
from visiontune.refraction.optics_rules import (
    DECISION_PARTICLES,
    OpticsQuery,
    within_radius,
)
from visiontune.refraction.slider import SliderQuery, SliderSettings, propose_slider

__all__ = [
    "CRITERIA",
    "ComparisonQuery",
    "MixedChoice",
    "MixedSettings",
    "PrecisionUnits",
    "comparison_candidates",
    "expected_posterior_variance",
    "mutual_information_bits",
    "propose_mixed",
]

CRITERIA = ("evr", "evr-precision", "evr-stop", "information")
#: Candidate pairs of a comparison (module docstring).
PAIR_SETS = ("any", "clinical", "one-change")
#: Below this length of ``J`` (D; a cylinder under about 0.1 D) the estimate has no axis to follow.
_AXIS_FREE_J_D = 0.05
#: Half-separations of the candidate pairs (power-vector length, D): 0.125 D of J is a 0.25 D cylinder.
HALF_SEPARATIONS_D = (0.125, 0.25, 0.375, 0.5, 0.75)
#: Candidate pairs of two posterior draws (KSS-like).
_PAIR_DRAWS = 24
_COARSE_SIZE_STRIDE = 2


@dataclass(frozen=True)
class MixedSettings:
    """Settings of a mixed session: the ``comparison`` model the posterior uses, the durations
    ``letter_seconds`` and ``comparison_seconds`` (patient's time per answer, s), the
    ``criterion`` (:data:`CRITERIA`, module docstring), ``comparisons`` (False: letters only), the
    comparison's letter size above the predicted best acuity (logMAR) when the size does not
    change the answer, and ``sensitivity_to_stop``: with a model that infers the comparison
    sensitivity ``κ``, the precision stop also waits until the posterior standard deviation of
    ``ln κ`` is at most this fraction of its prior's (None: it does not wait). Early in a
    session weak answers fit "a sensitive patient near the correction" about as well as "an
    insensitive one a quarter diopter away", so a region computed before ``κ`` is learned can be
    too narrow (docs/results/comparisons.md). ``pairs``: the candidate pairs, ``"any"``,
    ``"clinical"`` (one parameter at a time) or ``"one-change"`` (a lens and one clinical change
    of it; module docstring), with ``hand_held_d`` the powers of its hand-held flipper and
    cross-cylinder (D) and ``plus_sphere_only`` (set by the engine for an eye that may accommodate)
    the sphere held as plus only. ``lens_change_seconds``: what a
    change of lens between answers costs (s; 0 at a phoropter; module docstring, "Lens changes");
    ``lens_change_weight``: how many times those seconds the choice charges a change
    (:attr:`change_price_seconds`; the patient's time counts it once)."""

    comparison: ComparisonModel = field(default_factory=ComparisonModel)
    letter_seconds: float = LETTER_SECONDS
    comparison_seconds: float = COMPARISON_SECONDS
    criterion: str = "evr"
    comparisons: bool = True
    comparison_size_offset_logmar: float = 0.1
    sensitivity_to_stop: float | None = None
    pairs: str = "any"
    lens_change_seconds: float = LENS_CHANGE_SECONDS
    hand_held_d: tuple[float, ...] = clinical_pairs.HAND_HELD_D
    plus_sphere_only: bool = False
    lens_change_weight: float = 1.0

    @property
    def change_price_seconds(self) -> float:
        """What the choice charges a change of lens: ``lens_change_weight × lens_change_seconds``."""
        return self.lens_change_weight * self.lens_change_seconds

    def __post_init__(self) -> None:
        if not isinstance(self.comparison, ComparisonModel):
            raise InvalidInputError(f"comparison: expected a ComparisonModel, got {type(self.comparison).__name__}")
        for name in ("letter_seconds", "comparison_seconds"):
            check_number(name, getattr(self, name), 0.1, 600)
        check_number("lens_change_seconds", self.lens_change_seconds, 0.0, 600)
        check_number("lens_change_weight", self.lens_change_weight, 0.1, 20)
        if self.criterion not in CRITERIA:
            raise InvalidInputError(f"criterion: expected one of {', '.join(CRITERIA)}, got {self.criterion!r}")
        check_number("comparison_size_offset_logmar", self.comparison_size_offset_logmar, -0.5, 1)
        if self.pairs not in PAIR_SETS:
            raise InvalidInputError(f"pairs: expected one of {', '.join(PAIR_SETS)}, got {self.pairs!r}")
        held = self.hand_held_d
        if not isinstance(held, tuple) or not held or not all(clinical_pairs.is_hand_held_power(p) for p in held):
            raise InvalidInputError(
                "hand_held_d: expected a non-empty tuple of powers, each a multiple of 0.25 D from 0.25 to 2.00, "
                f"got {held!r}"
            )
        ratio = self.sensitivity_to_stop
        if ratio is not None and (
            isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.0 < ratio <= 1.0
        ):
            raise InvalidInputError(f"sensitivity_to_stop: expected None or a fraction in (0, 1], got {ratio!r}")
        if self.criterion == "evr-stop" and not self.stop_waits_for_sensitivity:
            raise InvalidInputError(
                "criterion 'evr-stop': expected comparisons whose model infers the sensitivity "
                "(sensitivity_sigma) and a sensitivity_to_stop, the condition it turns to; "
                "without them it is 'evr'"
            )

    @property
    def stop_waits_for_sensitivity(self) -> bool:
        """Whether the precision stop also waits for ``κ``: comparisons on, a model that infers it
        and a ``sensitivity_to_stop``."""
        return bool(self.comparisons and self.comparison.infers_sensitivity and self.sensitivity_to_stop)


@dataclass(frozen=True)
class PrecisionUnits:
    """The standard deviations ``t_k`` the ``"evr-precision"`` criterion measures variance in
    (module docstring): ``m_sd`` of ``M``, ``j_sd`` of each of ``J0`` and ``J45`` (D), and
    ``log_sensitivity_sd`` of ``ln κ`` (None: ``ln κ`` is not scored)."""

    m_sd: float
    j_sd: float
    log_sensitivity_sd: float | None = None

    def __post_init__(self) -> None:
        check_number("m_sd", self.m_sd, 1e-6, 100)
        check_number("j_sd", self.j_sd, 1e-6, 100)
        if self.log_sensitivity_sd is not None:
            check_number("log_sensitivity_sd", self.log_sensitivity_sd, 1e-6, 100)

    @classmethod
    def of_stop(cls, precision, settings: MixedSettings) -> PrecisionUnits:
        """The units of a protocol's precision stop (``m_d``, ``cylinder_vector_d``, ``level``)
        and of ``settings`` (``ln κ`` scored when its model infers ``κ`` and the stop waits for it)."""
        if precision is None:
            raise InvalidInputError(
                "criterion 'evr-precision': the protocol needs a precision stop ([stopping.precision])"
            )
        level = float(precision.level)
        m_sd = precision.m_d / float(ndtri(0.5 * (1.0 + level)))
        j_sd = precision.cylinder_vector_d / math.sqrt(-2.0 * math.log1p(-level))
        waits = settings.stop_waits_for_sensitivity
        kappa_sd = settings.sensitivity_to_stop * settings.comparison.sensitivity_sigma if waits else None
        return cls(m_sd, j_sd, kappa_sd)

    def columns(self, theta: np.ndarray) -> np.ndarray:
        """``(N, 3 or 4)``: ``M / t_M``, ``J0 / t_J``, ``J45 / t_J`` and, when scored and present
        (not NaN) in ``theta``, ``ln κ / t_κ``."""
        cols = [theta[:, 0] / self.m_sd, theta[:, 1] / self.j_sd, theta[:, 2] / self.j_sd]
        scored = self.log_sensitivity_sd is not None and theta.shape[1] > LOG_SENSITIVITY
        if scored and not np.isnan(theta[0, LOG_SENSITIVITY]):
            cols.append(theta[:, LOG_SENSITIVITY] / self.log_sensitivity_sd)
        return np.column_stack(cols)


def criterion_columns(theta: np.ndarray, units: PrecisionUnits | None) -> np.ndarray:
    """The columns whose variance the criterion reduces: ``M, J0, J45`` (D) without ``units``,
    else :meth:`PrecisionUnits.columns`."""
    return theta[:, :3] if units is None else units.columns(theta)


@dataclass(frozen=True)
class ComparisonQuery:
    """The next comparison: letter size ``s_logmar``, lenses ``lens1`` and ``lens2``, the expected
    information of the answer (bits) and, for a lens held before a trial lens (a flipper, a
    cross-cylinder, a sphere "with or without"), that ``frame_lens`` (None: two trial lenses placed
    in turn; :mod:`~visiontune.refraction.clinical_pairs`)."""

    s_logmar: float
    lens1: Prescription
    lens2: Prescription
    information_bits: float
    frame_lens: Prescription | None = None


@dataclass(frozen=True)
class MixedChoice:
    """What to ask: ``kind`` ``"letter"``, ``"comparison"`` or ``"slider"``; the ``letter`` the
    protocol's rule proposes (always computed; with lens changes priced, the letter through the
    lens in place when that is worth more), the best ``comparison`` (None when comparisons
    are off), the best ``slider`` (None without sliders) and each one's value per second
    (criterion units per second); with chart lines, the best ``line`` (``kind`` ``"line"``)."""

    kind: str
    letter: OpticsQuery
    comparison: ComparisonQuery | None = None
    letter_value_per_s: float | None = None
    comparison_value_per_s: float | None = None
    slider: SliderQuery | None = None
    slider_value_per_s: float | None = None
    line: LineQuery | None = None
    line_value_per_s: float | None = None

    @property
    def information_bits(self) -> float:
        if self.kind == "slider":
            return self.slider.information_bits
        if self.kind == "line":
            return self.line.information_bits
        return self.comparison.information_bits if self.kind == "comparison" else self.letter.information_bits


def expected_posterior_variance(pv: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``E_y[tr Cov(P* | y)]`` (D²) after one answer with ``K`` outcomes, per question: ``pv
    (N, 3)`` equally weighted particles' corrections, ``probs (N, Q, K)`` their outcome
    probabilities. (``K = 2`` is :func:`optics_rules.expected_correction_variance`.)"""
    out = np.zeros(probs.shape[1])
    sq = np.sum(pv**2, axis=1)
    for k in range(probs.shape[2]):
        like = probs[:, :, k]
        mass = np.maximum(like.sum(axis=0), 1e-300)
        mean = (like.T @ pv) / mass[:, None]
        second = (like.T @ sq) / mass
        out += (mass / len(pv)) * (second - np.sum(mean**2, axis=1))
    return out


def mutual_information_bits(probs: np.ndarray) -> np.ndarray:
    """``H(mean_i p_i) - mean_i H(p_i)`` (bits) for ``probs (N, Q, K)``: ``(Q,)``."""
    q = np.clip(probs, 1e-300, 1.0)
    h_each = -np.sum(probs * np.log2(q), axis=2).mean(axis=0)
    mean = probs.mean(axis=0)
    h_mean = -np.sum(mean * np.log2(np.clip(mean, 1e-300, 1.0)), axis=1)
    return h_mean - h_each


def _exact_lens(power_vector: np.ndarray, steps: LensSteps) -> Prescription:
    """The lens of ``power_vector`` unrounded, in the clinic's cylinder form: a hand-held lens
    before a trial lens (their sum), not itself a trial lens."""
    return trial_lens(power_vector, dataclasses.replace(steps, step_d=0.0))


def _value(criterion: str, pv: np.ndarray, probs: np.ndarray) -> np.ndarray:
    if criterion == "information":
        return mutual_information_bits(probs)
    now = float(np.mean(np.sum(pv**2, axis=1)) - np.sum(pv.mean(axis=0) ** 2))
    return now - expected_posterior_variance(pv, probs)


def clinical_directions(centre: np.ndarray) -> list[np.ndarray]:
    """The unit directions a clinician changes one at a time at the estimate ``centre (3,)``:
    the sphere ``M``, then ``J`` along the estimate's cylinder (its power) and across it (its
    axis); without a cylinder to follow, ``J0`` and ``J45``."""
    j0, j45 = float(centre[1]), float(centre[2])
    length = float(np.hypot(j0, j45))
    along = np.array([0.0, 1.0, 0.0]) if length < _AXIS_FREE_J_D else np.array([0.0, j0, j45]) / length
    return [np.array([1.0, 0.0, 0.0]), along, np.array([0.0, -along[2], along[1]])]


def comparison_candidates(
    particles: np.ndarray,
    centre: np.ndarray,
    radius: float,
    steps: LensSteps,
    rng: np.random.Generator,
    pairs: str = "any",
) -> np.ndarray:
    """Candidate pairs of trial lenses (module docstring): ``(Q, 2, 3)`` power vectors, the two
    lenses of a pair distinct, no pair twice (in either order)."""
    pv = particles[:, :3]
    if pairs == "clinical":
        directions = clinical_directions(centre)
    else:
        _, vectors = np.linalg.eigh(np.cov(pv.T))
        directions = [np.eye(3)[i] for i in range(3)] + [vectors[:, -1], vectors[:, -2]]
    first, second = [], []
    for u in directions:
        for h in HALF_SEPARATIONS_D:
            first += [centre + h * u, centre, centre]
            second += [centre - h * u, centre + 2 * h * u, centre - 2 * h * u]
    first, second = np.array(first), np.array(second)
    if pairs != "clinical":
        i = rng.integers(len(pv), size=_PAIR_DRAWS)
        j = rng.integers(len(pv), size=_PAIR_DRAWS)
        first, second = np.vstack([first, pv[i]]), np.vstack([second, pv[j]])
    a = within_radius(first, centre, radius)
    b = within_radius(second, centre, radius)
    return _distinct_pairs(trial_lens_power_vectors(a, steps), trial_lens_power_vectors(b, steps))


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pairs ``(a[n], b[n])`` of two different lenses, each the first time it comes in either
    order (power vectors to 1e-6 D): ``(Q, 2, 3)``."""
    keep = distinct_pair_indices(a, b)
    return np.stack([a[keep], b[keep]], axis=1)


def _letter_value(
    particles: np.ndarray,
    letter: OpticsQuery,
    settings: MixedSettings,
    spec,
    units: PrecisionUnits | None,
    in_place: Prescription | None = None,
) -> float:
    """The letter's value per second on equally weighted ``particles``, its lens changed from
    ``in_place`` at ``settings.lens_change_seconds`` (module docstring)."""
    p = probability_correct(particles, np.array([letter.s_logmar]), letter.lens.power_vector_array()[None, :], spec)
    value = _value(settings.criterion, criterion_columns(particles, units), np.stack([p, 1.0 - p], axis=-1))[0]
    return float(value) / (settings.letter_seconds + _changes_priced(settings, [letter.lens], in_place))


def _changes_priced(settings: MixedSettings, lenses, in_place: Prescription | None) -> float:
    """The seconds the changes of lens showing ``lenses`` from ``in_place`` cost; none counted at a
    price of 0 (the default), which keeps them off the path of every question."""
    price = settings.change_price_seconds
    return price * changes_along(lenses, in_place) if price > 0.0 else 0.0


def _best_letter(
    particles: np.ndarray,
    letter: OpticsQuery,
    settings: MixedSettings,
    spec,
    s_grid: np.ndarray,
    units: PrecisionUnits | None,
    in_place: Prescription | None,
) -> tuple[OpticsQuery, float]:
    """``(letter, value per second)``: the rule's ``letter``, or with lens changes priced
    (``lens_change_seconds > 0``) the letter through the lens in place when it is worth more."""
    value = _letter_value(particles, letter, settings, spec, units, in_place)
    if settings.lens_change_seconds > 0.0 and in_place is not None:
        here = optics_rules.letter_at(particles, in_place, s_grid, spec)
        here_value = _letter_value(particles, here, settings, spec, units, in_place)
        if here_value > value:
            return here, here_value
    return letter, value


def _in_place_first(pairs: np.ndarray, in_place: Prescription | None) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, changes)``: candidate ``pairs (Q, 2, 3)`` with the lens in place shown first where a
    pair holds it, and each pair's changes of lens from it (1 or 2)."""
    if in_place is None:
        return pairs, np.full(len(pairs), 2.0)
    here = np.abs(pairs - in_place.power_vector_array()).max(axis=-1) <= 1e-6  # (Q, 2)
    swap = here[:, 1] & ~here[:, 0]
    ordered = np.where(swap[:, None, None], pairs[:, ::-1], pairs)
    return ordered, np.where(here.any(axis=1), 1.0, 2.0)


def _with_lens_in_place(pairs: np.ndarray, in_place: Prescription | None) -> np.ndarray:
    """``pairs (Q, 2, 3)`` and, for every other lens they hold, the pair of the lens in place and
    it ("1, the lens you have; 2, this one"), none twice."""
    if in_place is None:
        return pairs
    lenses = np.unique(np.round(pairs.reshape(-1, 3), 9), axis=0)
    first = np.concatenate([pairs[:, 0], np.broadcast_to(in_place.power_vector_array(), lenses.shape)])
    return _distinct_pairs(first, np.concatenate([pairs[:, 1], lenses]))


def propose_mixed(
    posterior: ParticlePosterior,
    rule: str,
    settings: MixedSettings,
    *,
    steps: LensSteps,
    s_grid: np.ndarray,
    radius: float,
    rng_letter: np.random.Generator,
    rng_comparison: np.random.Generator,
    sliders: SliderSettings | None = None,
    rng_slider: np.random.Generator | None = None,
    units: PrecisionUnits | None = None,
    in_place: Prescription | None = None,
    lines: ChartLineSettings | None = None,
) -> MixedChoice:
    """The next question (module docstring). ``rule``, ``steps``, ``s_grid``, ``radius``: as
    :func:`optics_rules.propose`, which gets ``rng_letter``; the comparison's draws come from
    ``rng_comparison`` only, so the letter proposed does not depend on whether comparisons are on;
    with ``sliders``, the slider's draws come from ``rng_slider`` only (required then); ``units``:
    the :class:`PrecisionUnits` of the ``"evr-precision"`` criterion (required then);
    ``in_place``: the lens before the eye (the last one shown; None before the first), which
    prices lens changes when ``settings.lens_change_seconds > 0``; ``lines``: chart lines weighed
    too (module docstring; they need comparisons on, whose subsample they score on)."""
    letter = optics_rules.propose(posterior, rule, steps=steps, s_grid=s_grid, radius=radius, rng=rng_letter)
    if sliders is not None and rng_slider is None:
        raise InvalidInputError("rng_slider: a session with sliders needs the slider's random stream")
    if settings.criterion == "evr-stop":
        raise InvalidInputError(
            "criterion 'evr-stop': resolve it to 'evr' or 'evr-precision' first (MixedOpticsEngine.question_settings)"
        )
    if (settings.criterion == "evr-precision") != (units is not None):
        raise InvalidInputError(
            f"units: expected PrecisionUnits with the 'evr-precision' criterion and None with "
            f"{settings.criterion!r}, got {units!r}"
        )
    if not settings.comparisons:
        if lines is not None:
            raise InvalidInputError("lines: chart lines are weighed on the comparisons' particles; turn comparisons on")
        if sliders is None:
            return MixedChoice("letter", letter)
        spec = posterior.spec
        particles = posterior.subsample(min(DECISION_PARTICLES, spec.n_particles), rng_slider)
        letter, letter_value = _best_letter(particles, letter, settings, spec, s_grid, units, in_place)
        return _with_slider(
            MixedChoice("letter", letter, None, letter_value),
            posterior,
            settings,
            sliders,
            steps,
            s_grid,
            rng_slider,
            units,
            in_place,
        )
    choice = _with_comparison(
        posterior, letter, settings, steps, s_grid, radius, rng_comparison, units, in_place, lines
    )
    if sliders is None:
        return choice
    return _with_slider(choice, posterior, settings, sliders, steps, s_grid, rng_slider, units, in_place)


def _with_slider(
    choice: MixedChoice,
    posterior: ParticlePosterior,
    settings: MixedSettings,
    sliders: SliderSettings,
    steps: LensSteps,
    s_grid: np.ndarray,
    rng_slider: np.random.Generator,
    units: PrecisionUnits | None,
    in_place: Prescription | None = None,
) -> MixedChoice:
    """``choice`` with the best slider weighed in: asked when its value per second beats the
    letter's and the comparison's. No knob with a path (only the axis, no cylinder): no slider."""
    columns = None if units is None else units.columns
    try:
        q = propose_slider(
            posterior,
            rng=rng_slider,
            model=sliders.model,
            steps=steps,
            knobs=sliders.knobs,
            s_grid=s_grid,
            criterion_columns=columns,
        )
    except InvalidInputError:
        return choice
    seconds = sliders.slider_seconds + _changes_priced(settings, q.path.settings, in_place)
    value = (q.information_bits if settings.criterion == "information" else q.value) / seconds
    others = [
        v for v in (choice.letter_value_per_s, choice.comparison_value_per_s, choice.line_value_per_s) if v is not None
    ]
    kind = "slider" if value > max(others) else choice.kind
    return dataclasses.replace(choice, kind=kind, slider=q, slider_value_per_s=value)


def _with_comparison(
    posterior: ParticlePosterior,
    letter: OpticsQuery,
    settings: MixedSettings,
    steps: LensSteps,
    s_grid: np.ndarray,
    radius: float,
    rng_comparison: np.random.Generator,
    units: PrecisionUnits | None,
    in_place: Prescription | None = None,
    lines: ChartLineSettings | None = None,
) -> MixedChoice:
    """The letter weighed against the best comparison (module docstring), and the best chart line
    with ``lines``."""
    spec = posterior.spec
    model = settings.comparison
    particles = posterior.subsample(min(DECISION_PARTICLES, spec.n_particles), rng_comparison)
    centre = posterior.best_correction()
    kinds = None
    if settings.pairs == "one-change":
        bases = ([] if in_place is None else [in_place.power_vector_array()]) + [centre]
        pairs, kinds = clinical_pairs.one_change_pairs(
            bases, steps, with_kinds=True, hand_held_d=settings.hand_held_d, plus_only=settings.plus_sphere_only
        )
    else:
        pairs = comparison_candidates(particles, centre, radius, steps, rng_comparison, settings.pairs)
    # A model that infers the sensitivity κ scores with each particle's κ (prior draws before its first comparison).
    particles = with_sensitivity(particles, model, rng_comparison)
    pv = criterion_columns(particles, units)
    letter, letter_value = _best_letter(particles, letter, settings, spec, s_grid, units, in_place)
    seconds = None
    if settings.lens_change_seconds > 0.0 and kinds is not None:
        changes = clinical_pairs.pair_changes(pairs, kinds, None if in_place is None else in_place.power_vector_array())
        held = np.array([clinical_pairs.is_hand_held(k) for k, _ in kinds], dtype=bool)
        pairs = np.where(held[:, None, None], pairs, _in_place_first(pairs, in_place)[0])
        seconds = settings.comparison_seconds + settings.change_price_seconds * changes
    elif settings.lens_change_seconds > 0.0:
        pairs, changes = _in_place_first(_with_lens_in_place(pairs, in_place), in_place)
        seconds = settings.comparison_seconds + settings.change_price_seconds * changes
    if model.uses_size:
        sizes = s_grid[::_COARSE_SIZE_STRIDE]
    else:
        target = float(particles[:, VA0].mean()) + settings.comparison_size_offset_logmar
        sizes = s_grid[[int(np.argmin(np.abs(s_grid - target)))]]
    best = (-np.inf, 0, 0.0, None)
    for s in sizes:
        probs = comparison_probabilities(particles, float(s), pairs[:, 0], pairs[:, 1], model, spec)
        values = _value(settings.criterion, pv, probs)
        if seconds is not None:
            values = values / seconds
        q = int(np.argmax(values))
        if values[q] > best[0]:
            best = (float(values[q]), q, float(s), probs[:, q : q + 1])
    value, q, s, probs = best
    info = float(mutual_information_bits(probs)[0])
    if kinds is not None and clinical_pairs.is_hand_held(kinds[q][0]):
        frame = trial_lens(clinical_pairs.frame_lens_of(kinds[q][0], pairs[q]), steps)
        comparison = ComparisonQuery(s, _exact_lens(pairs[q, 0], steps), _exact_lens(pairs[q, 1], steps), info, frame)
    else:
        comparison = ComparisonQuery(s, trial_lens(pairs[q, 0], steps), trial_lens(pairs[q, 1], steps), info)
    comparison_value = value / settings.comparison_seconds if seconds is None else value
    kind = "comparison" if comparison_value > letter_value else "letter"
    choice = MixedChoice(kind, letter, comparison, letter_value, comparison_value)
    if lines is None:
        return choice
    candidates = [letter.lens, trial_lens(centre, steps)] + ([] if in_place is None else [in_place])
    line, line_value = best_line(particles, pv, candidates, s_grid, lines, settings, spec, in_place)
    kind = "line" if line_value > max(letter_value, comparison_value) else kind
    return dataclasses.replace(choice, kind=kind, line=line, line_value_per_s=line_value)


def best_line(
    particles: np.ndarray,
    pv: np.ndarray,
    lenses,
    s_grid: np.ndarray,
    lines: ChartLineSettings,
    settings: MixedSettings,
    spec,
    in_place: Prescription | None,
) -> tuple[LineQuery, float]:
    """``(line, value per second)``: the chart line worth most per second among ``lenses`` (trial
    lenses, each once) at every size of ``s_grid`` (module docstring, "Chart lines"), scored by
    ``settings.criterion`` on equally weighted ``particles`` (``pv``: their criterion columns) over
    the ``n + 1`` counts of letters read (:func:`~visiontune.refraction.chart_line.line_count_probabilities`),
    per ``line_seconds`` and the lens change from ``in_place``."""
    unique = {tuple(np.round(x.power_vector_array(), 9)): x for x in lenses}
    lenses = list(unique.values())
    pvs = np.array([x.power_vector_array() for x in lenses])
    sizes = np.asarray(s_grid, dtype=float)
    # (N, n_s * n_lenses, n + 1): sizes vary slowest.
    probs = line_count_probabilities(
        particles, np.repeat(sizes, len(lenses)), np.tile(pvs, (len(sizes), 1)), lines.letters_per_line, lines, spec
    )
    seconds = np.array([lines.line_seconds + _changes_priced(settings, [x], in_place) for x in lenses])
    values = _value(settings.criterion, pv, probs) / np.tile(seconds, len(sizes))
    q = int(np.argmax(values))
    info = float(mutual_information_bits(probs[:, q : q + 1])[0])
    s = float(np.asarray(s_grid, dtype=float)[q // len(lenses)])
    return LineQuery(s, lenses[q % len(lenses)], lines.letters_per_line, info), float(values[q])
