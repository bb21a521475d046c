"""The near (reading) addition: the optics of near vision, the add a clinic files, and a Bayesian
refinement from near letters (Qt-free; the visit step is :mod:`visiontune.session.near_visit`).

**Near demand.** A target at ``d`` metres asks ``D = 1/d`` diopters of focus (40 cm: 2.50 D). Through
the distance correction plus an add ``a`` the eye must accommodate ``D - a``. With ``U`` the
eye's near-usable amplitude (diopters: the subjective amplitude, depth of focus included, as a
push-up amplitude measures it; Duane's data behind Hofstetter 1950 are such amplitudes) the
residual defocus, in diopters, is::

    b(a) = max(D - a - U, 0) + max(a - D, 0)

the first term when the amplitude falls short of the demand (the eye under-accommodates), the
second when the add exceeds the demand (the eye cannot relax below 0: myopic blur ``a - D``).
Acuity through it follows the project's acuity model, Blendowske (2015):
``VA = VA*_near + log10(1 + b²)``, and a letter of size ``s`` (logMAR) is named right with
``P = γ + (1 - γ - λ) Φ(k (s - VA))`` (:mod:`visiontune.optics.psychometric`).

**The add filed** keeps half the amplitude in reserve (Millodot, *Dictionary of Optometry and
Visual Science*, 7th ed., 2009, "addition, near": ``add = 1/d - x·A``, ``x`` one half to two
thirds; the half, as in Borish 2006, is the more conservative one)::

    add = max(D - U/2, 0)        rounded to the trial lenses' 0.25 D

and :func:`balanced_add` states the equivalent clinical form, the tentative add moved to the middle
of the relative accommodation range, ``final = tentative + (NRA + PRA)/2`` with the PRA negative
(the "balanced range of accommodation" with minus and plus lenses, one of the four tentative-add
methods compared in Arq. Bras. Oftalmol. 76:218-220, 2013; NRA and PRA as in Elliott 2014). Through
an add ``a`` the range of clear vision runs from ``1/(a + U)`` m (near point) to ``1/a`` m (far
point; infinite for ``a = 0``) (:func:`range_of_clear_vision`).

**The tentative add by age** (:data:`TENTATIVE_ADD_BY_AGE`) is Millodot's (2009, ibid.) table for a
40 cm reading distance, the lower end of each range: +1.00 D at 45-49, +1.50 at 50-54, +2.00 at
55-59, +2.50 from 60; below 45 (the table starts at 45) we take +0.75 D (our extrapolation).
At another distance the table moves by the change in demand, ``1/d - 2.50`` D, clipped at 0.

**Refinement.** A grid posterior over ``(U, VA*_near)`` (``U`` on 0-8 D in 0.05 D, ``VA*_near``
on -0.3 to 1.0 logMAR in 0.025): the prior from the age (Hofstetter 1950's mean line plus a depth
of focus, :func:`amplitude_prior`), each near letter's likelihood above. Each question (a lens over
the distance correction in 0.25 D steps, a letter size on the near chart's 0.1 logMAR lines) is the
one with the most
expected information about the filed add (the mutual information between the answer and the add
rounded to 0.25 D) per second of the patient's time: a letter 3 s, an add changed in a trial frame
4 s more (:data:`LETTER_SECONDS`, :data:`ADD_CHANGE_SECONDS`, the protocol's figures). The step
stops when the add's 95% credible region lies within ±0.25 D of the filed add, or at the budget.
The lenses run from -3.00 D (a minus lens over the distance correction: the positive relative
accommodation test, Elliott 2014, which is the only way letters at the near distance tell an eye
with more amplitude than the demand, ``U > D``, from one with just enough: no add blurs either) to
the demand + 0.50 D. On the design seeds (5 and 6) adds alone (0 to D + 0.5) reached the precision
stop for about half the eyes and the budget for the rest; with the minus side, five in six.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from visiontune._validate import scalar
from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import HOFSTETTER

__all__ = [
    "ADD_CHANGE_SECONDS",
    "ADD_STEP_D",
    "DEFAULT_NEAR_DISTANCE_CM",
    "LETTER_SECONDS",
    "NEAR_MODEL",
    "NEAR_SIZES_LOGMAR",
    "NearAnswer",
    "NearModel",
    "NearPosterior",
    "NearQuestion",
    "TENTATIVE_ADD_BY_AGE",
    "add_by_reserve_rule",
    "amplitude_prior",
    "balanced_add",
    "check_near_distance_cm",
    "near_blur_d",
    "near_demand_d",
    "question_seconds",
    "range_of_clear_vision",
    "round_add",
    "tentative_add",
]

DEFAULT_NEAR_DISTANCE_CM = 40.0
#: Adds are trial lenses in 0.25 D steps.
ADD_STEP_D = 0.25
#: Seconds of the patient's time: one letter named, and one add changed in the trial frame.
LETTER_SECONDS = 3.0
ADD_CHANGE_SECONDS = 4.0
#: The near chart's letter sizes (logMAR at the near distance), 0.1 logMAR lines.
NEAR_SIZES_LOGMAR = tuple(round(-0.2 + 0.1 * i, 1) for i in range(13))
#: Millodot (2009) tentative add at 40 cm by age: ``(from age, add D)``; below 45 our +0.75 D.
TENTATIVE_ADD_BY_AGE = ((0.0, 0.75), (45.0, 1.00), (50.0, 1.50), (55.0, 2.00), (60.0, 2.50))
_TABLE_DEMAND_D = 2.50
#: Largest add a candidate (diopters).
MAX_ADD_D = 4.0
#: Most minus lens over the distance correction a question may show (diopters): the minus side of
#: the relative accommodation test (PRA), which tells an eye with more amplitude than the demand
#: from one with just enough, where no add can.
MIN_TEST_LENS_D = -3.0


def check_near_distance_cm(value) -> float:
    """The near distance (cm) as a float in [20, 100], else InvalidInputError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"near distance: expected a number of centimetres, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InvalidInputError(f"near distance: expected a distance > 0 cm, got {value!r}")
    if not 20.0 <= v <= 100.0:
        raise InvalidInputError(f"near distance: expected 20 to 100 cm (a reading distance), got {v:g} cm")
    return v


def near_demand_d(distance_cm) -> float:
    """Accommodative demand ``D = 1/d`` (diopters) of a target at ``distance_cm`` centimetres."""
    return 100.0 / check_near_distance_cm(distance_cm)


def near_blur_d(add_d, demand_d, usable_amplitude_d):
    """Residual defocus ``b = max(D - a - U, 0) + max(a - D, 0)`` (diopters), broadcast over
    ``add_d`` ``a``, ``demand_d`` ``D`` and ``usable_amplitude_d`` ``U`` (all diopters, module docstring)."""
    a = np.asarray(add_d, dtype=float)
    d = np.asarray(demand_d, dtype=float)
    u = np.asarray(usable_amplitude_d, dtype=float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(d)) and np.all(np.isfinite(u))):
        raise InvalidInputError("near_blur_d: add, demand and amplitude must be finite diopters")
    if np.any(u < 0):
        raise InvalidInputError(f"usable_amplitude_d: an amplitude is >= 0 D, got min {float(u.min())}")
    b = np.maximum(d - a - u, 0.0) + np.maximum(a - d, 0.0)
    return float(b) if b.ndim == 0 else b


def round_add(add_d):
    """An add rounded to the nearest 0.25 D trial lens (halves up), never below 0."""
    a = np.asarray(add_d, dtype=float)
    r = np.maximum(np.floor(a / ADD_STEP_D + 0.5) * ADD_STEP_D, 0.0)
    return float(r) if r.ndim == 0 else r


def add_by_reserve_rule(demand_d, usable_amplitude_d, *, rounded: bool = True):
    """``max(D - U/2, 0)``: the add keeping half the amplitude in reserve (Millodot 2009), rounded to
    0.25 D unless ``rounded`` is False. ``demand_d`` ``D`` and ``usable_amplitude_d`` ``U`` in diopters."""
    u = np.asarray(usable_amplitude_d, dtype=float)
    if np.any(~np.isfinite(u)) or np.any(u < 0):
        raise InvalidInputError(f"usable_amplitude_d: expected finite amplitudes >= 0 D, got {usable_amplitude_d!r}")
    add = np.maximum(float(demand_d) - u / 2.0, 0.0)
    out = round_add(add) if rounded else add
    return float(out) if np.ndim(out) == 0 else out


def balanced_add(tentative_d: float, nra_d: float, pra_d: float) -> float:
    """``tentative + (NRA + PRA)/2``, the PRA negative (balanced range of accommodation, Arq. Bras.
    Oftalmol. 2013): the add centred in the range
    of relative accommodation. Through ``a`` an eye of amplitude ``U`` accommodates ``D - a``: it
    can relax all of it (``NRA = D - a``) or add the rest of its amplitude (``PRA = -(U - D + a)``),
    and the balanced add is then ``D - U/2`` for any ``a``: the reserve rule."""
    t, n, p = (scalar(name, v) for name, v in (("tentative_d", tentative_d), ("nra_d", nra_d), ("pra_d", pra_d)))
    if n < 0 or p > 0:
        raise InvalidInputError(f"nra_d must be >= 0 and pra_d <= 0 (PRA negative by convention), got {n}, {p}")
    return float(t + (n + p) / 2.0)


def range_of_clear_vision(add_d: float, usable_amplitude_d: float) -> tuple[float, float]:
    """``(near point, far point)`` in metres through add ``a`` with amplitude ``U``: ``1/(a + U)``
    to ``1/a`` (``inf`` for ``a = 0``; both ``inf`` when ``a + U = 0``)."""
    a = scalar("add_d", add_d)
    u = scalar("usable_amplitude_d", usable_amplitude_d)
    if a < 0 or u < 0:
        raise InvalidInputError(f"add_d and usable_amplitude_d are >= 0 D, got {a}, {u}")
    near = math.inf if a + u <= 0 else 1.0 / (a + u)
    far = math.inf if a <= 0 else 1.0 / a
    return near, far


def tentative_add(age_years, distance_cm=DEFAULT_NEAR_DISTANCE_CM) -> float:
    """Millodot's (2009) add by age at 40 cm (:data:`TENTATIVE_ADD_BY_AGE`), moved by the change in
    demand at ``distance_cm`` (``1/d - 2.50`` D), clipped at 0. Ages in [0, 120] years."""
    age = scalar("age_years", age_years, 0.0, 120.0)
    add = [a for start, a in TENTATIVE_ADD_BY_AGE if age >= start][-1]
    return float(round_add(add + near_demand_d(distance_cm) - _TABLE_DEMAND_D))


#: The depth of focus the prior adds to the amplitude (diopters, mean and SD; assumed: half of a
#: 0.5-1 D total depth of focus, Wang & Ciuffreda 2006, Surv. Ophthalmol. 51:75-85).
PRIOR_DEPTH_OF_FOCUS_D = (0.3, 0.15)


def amplitude_prior(age_years, grid_d: np.ndarray) -> np.ndarray:
    """Prior weights over the near-usable amplitude grid ``grid_d`` (D) at ``age_years``: a normal
    around Hofstetter's (1950) mean line (clipped at 0) plus :data:`PRIOR_DEPTH_OF_FOCUS_D`, with
    SD = 0.5 D + a quarter of the max-min spread of Hofstetter's lines (wider than the lines,
    on purpose: the prior should not be the population), truncated at 0. Sums to 1."""
    age = scalar("age_years", age_years, 0.0, 120.0)
    lo = HOFSTETTER["minimum"][0] - HOFSTETTER["minimum"][1] * age
    mean = HOFSTETTER["mean"][0] - HOFSTETTER["mean"][1] * age
    hi = HOFSTETTER["maximum"][0] - HOFSTETTER["maximum"][1] * age
    centre = max(mean, 0.0) + PRIOR_DEPTH_OF_FOCUS_D[0]
    sd = math.hypot(0.5 + (hi - lo) / 4.0, PRIOR_DEPTH_OF_FOCUS_D[1])
    w = np.exp(-0.5 * ((np.asarray(grid_d, dtype=float) - centre) / sd) ** 2)
    return w / w.sum()


@dataclass(frozen=True)
class NearModel:
    """The model's fixed parts: psychometric slope ``k`` (logMAR⁻¹, 5 as the distance model),
    lapse ``λ`` (assumed 0.03), ``n_alternatives`` (10 Sloan letters), the grids, and the budget
    (letters an eye) and minimum letters an eye before the precision stop may end it."""

    slope: float = 5.0
    lapse: float = 0.03
    n_alternatives: int = 10
    amplitude_step_d: float = 0.05
    amplitude_max_d: float = 8.0
    va_min_logmar: float = -0.3
    va_max_logmar: float = 1.0
    va_step_logmar: float = 0.025
    va_prior_logmar: tuple[float, float] = (0.05, 0.2)
    budget_letters: int = 16
    min_letters: int = 3

    @property
    def amplitude_grid_d(self) -> np.ndarray:
        return np.arange(0.0, self.amplitude_max_d + 1e-9, self.amplitude_step_d)

    @property
    def va_grid_logmar(self) -> np.ndarray:
        return np.arange(self.va_min_logmar, self.va_max_logmar + 1e-9, self.va_step_logmar)

    def p_correct(self, size_logmar, add_d, demand_d, amplitude_d, va_logmar):
        """``γ + (1-γ-λ) Φ(k (s - VA* - log10(1 + b²)))``, broadcast (module docstring)."""
        b = near_blur_d(add_d, demand_d, amplitude_d)
        va = np.asarray(va_logmar) + np.log10(1.0 + np.asarray(b) ** 2)
        g = 1.0 / self.n_alternatives
        return g + (1.0 - g - self.lapse) * ndtr(self.slope * (np.asarray(size_logmar) - va))


NEAR_MODEL = NearModel()
#: The chart likelihood tables computed so far, oldest first (:meth:`NearPosterior._chart_likelihood`).
_LIKELIHOODS: dict = {}
_LIKELIHOODS_KEPT = 64


@dataclass(frozen=True)
class NearQuestion:
    """One near letter to show: the add before the eye (D) and the letter size (logMAR at the
    near distance); ``info_bits`` its expected information, ``seconds`` its cost."""

    add_d: float
    size_logmar: float
    info_bits: float = 0.0
    seconds: float = LETTER_SECONDS


@dataclass(frozen=True)
class NearAnswer:
    add_d: float
    size_logmar: float
    correct: bool


def _entropy_bits(p):
    p = np.clip(p, 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    return -(p * np.log2(p) + q * np.log2(q))


class NearPosterior:
    """The grid posterior over ``(U, VA*_near)`` of one eye at one near demand (module docstring).

    ``demand_d``: ``D`` (diopters). ``prior_amplitude``: weights over the amplitude grid (default
    :func:`amplitude_prior` at ``age_years``). Answers enter by :meth:`update`."""

    def __init__(
        self,
        demand_d: float,
        age_years: float,
        *,
        model: NearModel = NEAR_MODEL,
        prior_amplitude: np.ndarray | None = None,
    ) -> None:
        self.model = model
        self.demand_d = scalar("demand_d", demand_d, 1.0, 5.0)
        self.age_years = scalar("age_years", age_years, 0.0, 120.0)
        self.amplitude_d = model.amplitude_grid_d
        self.va_logmar = model.va_grid_logmar
        pu = amplitude_prior(age_years, self.amplitude_d) if prior_amplitude is None else np.asarray(prior_amplitude)
        if pu.shape != self.amplitude_d.shape or not np.all(np.isfinite(pu)) or pu.min() < 0 or pu.sum() <= 0:
            raise InvalidInputError(f"prior_amplitude: expected {self.amplitude_d.size} weights >= 0, got {pu.shape}")
        mu, sd = model.va_prior_logmar
        pv = np.exp(-0.5 * ((self.va_logmar - mu) / sd) ** 2)
        self.log_w = np.log(np.maximum(np.outer(pu / pu.sum(), pv / pv.sum()), 1e-300))
        self.answers: list[NearAnswer] = []
        # the filed add of every amplitude grid point and its 0.25 D bin
        self.add_of_u = np.maximum(self.demand_d - self.amplitude_d / 2.0, 0.0)
        self.bin_of_u = np.rint(round_add(self.add_of_u) / ADD_STEP_D).astype(int)
        self._bins = np.unique(self.bin_of_u)
        self._bin_matrix = (self._bins[:, None] == self.bin_of_u[None, :]).astype(float)  # (bins, U)

    # --- state ---------------------------------------------------------------------------
    @property
    def weights(self) -> np.ndarray:
        """Normalised ``(n_U, n_VA)`` posterior."""
        w = np.exp(self.log_w - self.log_w.max())
        return w / w.sum()

    def amplitude_marginal(self) -> np.ndarray:
        return self.weights.sum(axis=1)

    def update(self, add_d: float, size_logmar: float, correct: bool) -> None:
        """Multiply in one answer's likelihood (the letter of ``size_logmar`` through ``add_d``)."""
        a = scalar("add_d", add_d, MIN_TEST_LENS_D, MAX_ADD_D)
        s = scalar("size_logmar", size_logmar, -0.5, 2.0)
        p = self.model.p_correct(s, a, self.demand_d, self.amplitude_d[:, None], self.va_logmar[None, :])
        self.log_w = self.log_w + np.log(np.maximum(p if correct else 1.0 - p, 1e-300))
        self.answers.append(NearAnswer(a, s, bool(correct)))

    def add_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """``(adds, probabilities)``: the posterior of the filed add in 0.25 D steps."""
        pu = self.amplitude_marginal()
        bins = np.arange(self.bin_of_u.min(), self.bin_of_u.max() + 1)
        probs = np.array([pu[self.bin_of_u == b].sum() for b in bins])
        return bins * ADD_STEP_D, probs

    def filed_add(self) -> float:
        """The most probable add in 0.25 D steps (ties: the lower add)."""
        adds, probs = self.add_distribution()
        return float(adds[int(np.argmax(probs))])

    def credible_region(self, mass: float = 0.95) -> tuple[float, float]:
        """The equal-tailed ``mass`` credible interval of the add (continuous ``max(D - U/2, 0)``),
        each end rounded to the nearest 0.25 D (diopters)."""
        pu = self.amplitude_marginal()
        order = np.argsort(self.add_of_u, kind="stable")
        cdf = np.cumsum(pu[order])
        tail = (1.0 - mass) / 2.0
        lo = self.add_of_u[order][min(int(np.searchsorted(cdf, tail)), len(cdf) - 1)]
        hi = self.add_of_u[order][min(int(np.searchsorted(cdf, 1.0 - tail)), len(cdf) - 1)]
        return float(round_add(lo)), float(round_add(hi))

    def amplitude_mean(self) -> float:
        return float(self.amplitude_marginal() @ self.amplitude_d)

    def predicted_va(self, add_d: float) -> float:
        """Posterior mean of ``VA*_near + log10(1 + b(add)²)`` (logMAR)."""
        w = self.weights
        b = near_blur_d(add_d, self.demand_d, self.amplitude_d)
        va = self.va_logmar[None, :] + np.log10(1.0 + b[:, None] ** 2)
        return float((w * va).sum())

    def precise(self) -> bool:
        """The 95% credible region within ±0.25 D of the filed add."""
        lo, hi = self.credible_region()
        add = self.filed_add()
        return lo >= add - ADD_STEP_D - 1e-9 and hi <= add + ADD_STEP_D + 1e-9

    def done(self) -> bool:
        n = len(self.answers)
        return n >= self.model.budget_letters or (n >= self.model.min_letters and self.precise())

    # --- question choice -----------------------------------------------------------------
    def candidate_adds(self) -> np.ndarray:
        """Lenses over the distance correction in 0.25 D steps from :data:`MIN_TEST_LENS_D` (minus:
        the PRA side) to ``min(D + 0.5, 4)`` D."""
        top = min(self.demand_d + 0.5, MAX_ADD_D)
        return np.arange(MIN_TEST_LENS_D, top + 1e-9, ADD_STEP_D)

    def information_bits(self, add_d: float, sizes=NEAR_SIZES_LOGMAR) -> np.ndarray:
        """Expected information (bits) about the filed add's 0.25 D bin from one letter of each
        size through ``add_d``: ``H(Y) - Σ_bin P(bin) H(Y | bin)``."""
        w = self.weights
        s = np.asarray(sizes, dtype=float)
        if s.shape == (len(NEAR_SIZES_LOGMAR),) and np.array_equal(s, NEAR_SIZES_LOGMAR):
            p = self._chart_likelihood(float(add_d))
        else:
            p = self.model.p_correct(
                s[:, None, None], add_d, self.demand_d, self.amplitude_d[None, :, None], self.va_logmar[None, None, :]
            )
        joint = np.einsum("sij,ij->si", p, w)  # (sizes, U): P(correct, U)
        p_all = joint.sum(axis=1)
        pb = self._bin_matrix @ w.sum(axis=1)  # (bins,): P(bin)
        correct_and_bin = joint @ self._bin_matrix.T  # (sizes, bins)
        keep = pb > 0
        conditional = correct_and_bin[:, keep] / pb[keep]
        info = _entropy_bits(p_all) - (_entropy_bits(conditional) * pb[keep]).sum(axis=1)
        return np.maximum(info, 0.0)

    def _chart_likelihood(self, add_d: float) -> np.ndarray:
        """``P(correct)`` of every chart size through ``add_d`` on the grid, ``(sizes, U, VA)``:
        it depends on the model, the demand and the lens only, so it is computed once a process
        for each (:data:`_LIKELIHOODS`, at most :data:`_LIKELIHOODS_KEPT` tables) and read-only."""
        key = (self.model, round(self.demand_d, 9), round(add_d / ADD_STEP_D * 4))
        table = _LIKELIHOODS.get(key)
        if table is None:
            s = np.asarray(NEAR_SIZES_LOGMAR)
            table = self.model.p_correct(
                s[:, None, None], add_d, self.demand_d, self.amplitude_d[None, :, None], self.va_logmar[None, None, :]
            )
            table.setflags(write=False)
            if len(_LIKELIHOODS) >= _LIKELIHOODS_KEPT:
                _LIKELIHOODS.pop(next(iter(_LIKELIHOODS)))
            _LIKELIHOODS[key] = table
        return table

    def next_question(self, current_add_d: float | None) -> NearQuestion:
        """The (add, size) with the most expected information per second (module docstring);
        ties go to the current add, then the lower add, then the larger letter."""
        best = None
        for a in self.candidate_adds():
            a = float(a)
            info = self.information_bits(a)
            same = current_add_d is not None and abs(a - current_add_d) < 1e-9
            seconds = LETTER_SECONDS + (0.0 if same else ADD_CHANGE_SECONDS)
            rate = info / seconds
            j = int(np.argmax(rate[::-1]))
            j = len(rate) - 1 - j
            key = (float(rate[j]) + 1e-12 * same,)
            if best is None or key[0] > best[0] + 1e-15:
                best = (key[0], NearQuestion(a, NEAR_SIZES_LOGMAR[j], float(info[j]), seconds))
        return best[1]


def question_seconds(answers) -> float:
    """Patient time (s) of a sequence of near answers: 3 s a letter, 4 s for each add put in
    (the first one included)."""
    total, current = 0.0, None
    for a in answers:
        total += LETTER_SECONDS + (0.0 if current is not None and abs(a.add_d - current) < 1e-9 else ADD_CHANGE_SECONDS)
        current = a.add_d
    return total


#: Letters read through the filed add to check the near acuity the posterior predicts.
CHECK_LETTERS = 3
#: SD (D) of the difference between the two eyes' near-usable amplitudes the left eye's prior
#: allows (assumed; accommodation is yoked, Hering's law of equal innervation, so the right eye's
#: posterior is the left eye's prior, widened by this).
FELLOW_AMPLITUDE_SD_D = 0.25


def fellow_prior(posterior: NearPosterior, sd_d: float = FELLOW_AMPLITUDE_SD_D) -> np.ndarray:
    """The other eye's amplitude prior: ``posterior``'s amplitude marginal convolved with
    ``N(0, sd_d²)`` on the grid (mass beyond the grid's ends folded back onto it)."""
    u = posterior.amplitude_d
    pu = posterior.amplitude_marginal()
    k = np.exp(-0.5 * ((u[:, None] - u[None, :]) / scalar("sd_d", sd_d, 1e-6, 5.0)) ** 2)
    k /= k.sum(axis=0, keepdims=True)
    out = k @ pu
    return out / out.sum()


def check_size_logmar(predicted_va: float) -> float:
    """The near chart line at or just above (larger than) the predicted acuity (logMAR)."""
    line = math.ceil(round(float(predicted_va) * 10.0, 6)) / 10.0
    return float(min(max(line, NEAR_SIZES_LOGMAR[0]), NEAR_SIZES_LOGMAR[-1]))


@dataclass(frozen=True)
class NearAddResult:
    """One eye's near addition: the filed add and its 95% credible region (D, 0.25 D steps), the
    tentative add by age, the posterior mean near-usable amplitude (D), the range of clear vision
    through the add (cm, far ``None`` when infinite), the near acuity through it (logMAR: the
    posterior's prediction after the check letters) and the check line (size, letters right of
    :data:`CHECK_LETTERS`), the letters asked, the patient's seconds and why the refinement stopped."""

    add_d: float
    lower_d: float
    upper_d: float
    tentative_add_d: float
    amplitude_d: float
    near_point_cm: float | None
    far_point_cm: float | None
    near_va_logmar: float
    check_size_logmar: float
    check_correct: int
    letters: int
    seconds: float
    stop: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class NearEyeStep:
    """The near addition of one eye as a sequence of questions: refine (:meth:`NearPosterior.next_question`)
    until :meth:`NearPosterior.done`, file the add, then :data:`CHECK_LETTERS` letters through it
    at :func:`check_size_logmar` of the predicted acuity. :meth:`next` gives ``(phase, question)``
    or ``None`` at the end; :meth:`record` takes the answer. A resumed step replays the recorded
    answers by :meth:`record` in order (each with its phase)."""

    def __init__(self, posterior: NearPosterior, tentative_add_d: float) -> None:
        self.posterior = posterior
        self.tentative_add_d = float(tentative_add_d)
        self.filed: tuple[float, float, float, str] | None = None
        self.check_size: float | None = None
        self.check_answers: list[bool] = []
        self.refine_answers: list[NearAnswer] = []

    def _current_add(self) -> float:
        answers = self.posterior.answers
        return answers[-1].add_d if answers else self.tentative_add_d

    def _file(self) -> None:
        p = self.posterior
        lo, hi = p.credible_region()
        stop = "precision" if p.precise() else "budget"
        self.filed = (p.filed_add(), lo, hi, stop)
        self.check_size = check_size_logmar(p.predicted_va(self.filed[0]))

    def next(self) -> tuple[str, NearQuestion] | None:
        if self.filed is None:
            if not self.posterior.done():
                return "refine", self.posterior.next_question(self._current_add())
            self._file()
        if len(self.check_answers) < CHECK_LETTERS:
            return "check", NearQuestion(self.filed[0], self.check_size)
        return None

    def record(self, phase: str, add_d: float, size_logmar: float, correct: bool) -> None:
        if phase == "refine":
            if self.filed is not None:
                raise InvalidInputError("near answer: a refinement answer after the add was filed")
            self.posterior.update(add_d, size_logmar, correct)
            self.refine_answers.append(self.posterior.answers[-1])
        elif phase == "check":
            if self.filed is None:
                self._file()
            if abs(add_d - self.filed[0]) > 1e-9:
                raise InvalidInputError(
                    f"near answer: a check letter through {add_d:+.2f} D, not the filed add {self.filed[0]:+.2f} D"
                )
            self.posterior.update(add_d, size_logmar, correct)
            self.check_answers.append(bool(correct))
        else:
            raise InvalidInputError(f"near answer phase: expected 'refine' or 'check', got {phase!r}")

    def result(self) -> NearAddResult:
        if self.filed is None or len(self.check_answers) < CHECK_LETTERS:
            raise InvalidInputError("near addition: the step is not over")
        add, lo, hi, stop = self.filed
        near, far = range_of_clear_vision(add, self.posterior.amplitude_mean())
        return NearAddResult(
            add_d=add,
            lower_d=lo,
            upper_d=hi,
            tentative_add_d=self.tentative_add_d,
            amplitude_d=round(self.posterior.amplitude_mean(), 3),
            near_point_cm=None if math.isinf(near) else round(100.0 * near, 1),
            far_point_cm=None if math.isinf(far) else round(100.0 * far, 1),
            near_va_logmar=round(self.posterior.predicted_va(add), 2),
            check_size_logmar=self.check_size,
            check_correct=sum(self.check_answers),
            letters=len(self.posterior.answers),
            seconds=question_seconds(self.posterior.answers),
            stop=stop,
        )


__all__ += [
    "CHECK_LETTERS",
    "FELLOW_AMPLITUDE_SD_D",
    "NearAddResult",
    "NearEyeStep",
    "check_size_logmar",
    "fellow_prior",
]
