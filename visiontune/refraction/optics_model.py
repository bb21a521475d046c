"""A model that knows optics: the blur-acuity relation as the model's structure.

The future work Fauvel & Chalk (contextual BO) names (§6, domain knowledge in the prior): instead of a stationary
GP over lenses, the probability of reading a letter of size ``s`` (logMAR) through a lens
with power vector ``L`` has the form of the simulated patient of its §5.1::

    r      = L - P*                                   residual (Thibos power vectors, D)
    r_M   += min(A, max(-r_M, 0))                     accommodation (Hofstetter amplitude A)
    VA(L)  = VA* + log10(1 + |r|²)                    Blendowske 2015 (docs/design.md, acuity model)
    P(correct | s, L) = γ + (1 - γ - λ) Φ(a (s - VA(L)))   Eq. 13 with a lapse λ

with unknowns ``θ = (M*, J0*, J45*, VA*, log a, A)``: the best correction (the most plus lens
that gives the best acuity, since acuity is flat on the minus side up to ``A``), the best-
corrected acuity, the psychometric slope and the amplitude of accommodation. Chance ``γ = 1/n``
and the lapse ``λ`` are the protocol's.

Inference is sequential Monte Carlo (Chopin 2002, *A sequential particle filter method for
static models*, Biometrika 89:539-551): ``N`` particles drawn from the prior, reweighted by
each answer's likelihood; when the effective sample size ``1 / Σ w²`` falls below ``N/2`` they
are resampled (systematic) and moved by a few random-walk Metropolis steps on the posterior of
every answer so far (covariance ``2.38²/d`` times the particles' own, Roberts & Rosenthal 2001).
With ``model.tempered`` an answer that would take the effective sample size below ``N/2`` enters in
stages, the particles moved between them (:meth:`ParticlePosterior._temper_in`, adaptive tempering).
Answers of other kinds (comparisons of two lenses, :mod:`visiontune.refraction.comparisons`;
slider choices, :mod:`visiontune.refraction.slider`) enter the same way through
:meth:`ParticlePosterior.observe`, and the moves then target the posterior of every answer.

**Optional columns.** A model of an answer may infer an unknown of its own, a column of ``θ``
past the six (:data:`OPTIONAL_COLUMNS`, keyed by name): ``ln κ``, the comparison sensitivity
(:data:`LOG_SENSITIVITY`, column 6), ``ln τ``, the slider choice noise (:data:`LOG_NOISE`,
column 7), and two more unknowns of a comparison's answer (:mod:`visiontune.refraction.comparisons`):
``β_minus``, the bias toward the more minus lens (:data:`MINUS_BIAS`, column 8, normal a priori
around 0, the one column not on a log scale) and ``ln τ_=``, the "equal" band
(:data:`LOG_INDIFFERENCE`, column 9); and ``logit λ``, the patient's lapse rate (:data:`LAPSE_LOGIT`, column
10, with ``model.lapse_sigma``: normal a priori on the logit scale, :meth:`ParticlePosterior.__init__`).
Each other is lognormal a priori; each is a priori
independent of the rest; it is added at the
first answer that depends on it (:meth:`ParticlePosterior.add_column`), drawn from its prior with
a stream of its own, ``default_rng([seed, 0, purpose])``. Since no earlier answer depends on it,
the weighted particles with the column appended still represent the posterior, whenever it is
added. A column keeps its index whatever the order of the first answers, so both columns added
in either order give the same particles; a column below a present one but not (yet) inferred
holds NaN (``ln τ`` without ``ln κ``: column 6 is NaN) and is neither moved nor read. The prior's
term of every present column enters the moves, whose proposal covariance is then over the
columns present (``2.38²/d`` with ``d`` of them). Without optional columns the particles keep
six columns and every draw is as before; with ``ln κ`` alone, seven, as before the slider's
column existed.

Every random draw for answer ``k`` comes from ``default_rng([seed, k, purpose])``, so the
posterior is a pure function of (log, seed): a session rebuilt from its log after a crash has
the same particles bit for bit.

Priors: ``P*`` from the starting prescription (:mod:`visiontune.refraction.start`);
``VA*`` normal, mean 0.0 and σ 0.15 logMAR, truncated to [-0.3, 1.0] (adult best-corrected
acuity is about -0.1 to 0.0 logMAR, Elliott, Yang & Whitaker 1995, Optom. Vis. Sci. 72:186-191;
the σ leaves room for patients with reduced acuity); ``log a`` normal from the protocol's slope
prior (median 5 logMAR⁻¹, σ 0.4: Carkeet, Lee, Kerr & Keung 2001, Optom. Vis. Sci. 78:113-121);
``A`` uniform on ``[0, A_max]`` with ``A_max`` Hofstetter's maximum amplitude at the patient's age
(:mod:`visiontune.optics.accommodation`), or 10 D when the age is unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import hofstetter_amplitude_d
from visiontune.optics.comparison_answers import mixture_prior
from visiontune.refraction.attention import AttentionChain, forward, forward_step
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.start import StartingPoint

__all__ = [
    "COLUMN_PRIOR_SHAPES",
    "LAPSE_LOGIT",
    "LOG_INDIFFERENCE",
    "LOG_NOISE",
    "LOG_SENSITIVITY",
    "MINUS_BIAS",
    "OPTIONAL_COLUMNS",
    "LetterAnswer",
    "OptionalColumn",
    "OpticsModelSpec",
    "ParticlePosterior",
    "acuity_logmar",
    "binary_entropy_bits",
    "blur_squared",
    "has_column",
    "lapse_rate",
    "probability_correct",
    "probability_grid",
    "systematic_resample",
    "with_column",
]

#: Parameter columns of a particle.
M, J0, J45, VA0, LOG_SLOPE, AMPLITUDE = range(6)
#: The optional columns (module docstring): ``ln κ``, the comparison sensitivity
#: (:mod:`visiontune.refraction.comparisons`), and ``ln τ``, the slider choice noise (logMAR,
#: :mod:`visiontune.refraction.slider`); ``β_minus``, the comparison's bias toward the more minus
#: lens, and ``ln τ_=``, the comparison's "equal" band (:mod:`visiontune.refraction.comparisons`);
#: ``logit λ``, the patient's lapse rate (:func:`lapse_rate`).
LOG_SENSITIVITY, LOG_NOISE, MINUS_BIAS, LOG_INDIFFERENCE, LAPSE_LOGIT = 6, 7, 8, 9, 10


@dataclass(frozen=True)
class OptionalColumn:
    """An optional column of ``θ``: its ``name``, its ``index`` and the ``purpose`` of the stream of
    its prior draws, ``default_rng([seed, 0, purpose])``. ``log_scale``: the prior is ``N(ln median,
    σ²)`` on the column (the log of a positive unknown, lognormal); False: ``N(mean, σ²)`` on the
    unknown itself (a bias, of either sign), the prior's pair then being ``(mean, σ)``.

    A column not on a log scale may also take a **half-normal** prior (shape ``"half-normal"``,
    :data:`COLUMN_PRIOR_SHAPES`): the normal folded at its mean ``μ``, density
    ``2 φ((x - μ)/σ) / σ`` for ``x >= μ`` and 0 below (Johnson, Kotz & Balakrishnan 1994,
    *Continuous Univariate Distributions* vol. 1, §13.10.1), drawn as ``μ + |N(0, σ²)|``; its log
    density is ``-∞`` below ``μ``, so a move proposing a value there is rejected.

    A column on a log scale may take a **mixture** prior (shape ``"mixture"``): the mixture
    ``(1 - w) N(ln m1, σ²) + w N(ln m2, σ²)``, ``m2`` the ``second`` median and ``w`` its ``weight``
    (default ½, the equal mixture), log density (up to a constant)
    ``logaddexp(ln(1 - w) - ½((x - ln m1)/σ)², ln w - ½((x - ln m2)/σ)²)`` (for ``w = ½`` the two
    ``ln ½`` terms, a constant, are left out); drawn by choosing the second component with
    probability ``w`` and drawing from the component chosen (the comparison sensitivity's prior of two
    formulas, the patient's "equal" band's prior of two kinds of patient,
    :mod:`visiontune.optics.comparison_answers`). The moves of the particles then also propose the
    reflection of the column about the midpoint of the two centres, ``x' = ln m1 + ln m2 - x``
    (:meth:`reflected`), which takes a particle from one component to the other; the reflection is
    its own inverse with Jacobian 1, so it is accepted with the ratio of the posterior densities
    (a deterministic involutive proposal: Tierney 1998, *Ann. Appl. Probab.* 8:1-9; Green 1995,
    *Biometrika* 82:711-732). Without it a component the answers first disfavoured, once resampled
    away, could not come back when later answers favour it."""

    name: str
    index: int
    purpose: int
    log_scale: bool = True

    def centre(self, location: float) -> float:
        """The prior's mean on the column: ``ln median`` (log scale) or the mean itself."""
        return float(np.log(location)) if self.log_scale else float(location)

    def draw(
        self,
        location: float,
        sigma: float,
        n: int,
        rng: np.random.Generator,
        shape: str = "normal",
        second: float | None = None,
        weight: float = 0.5,
    ):
        """``n`` draws of the column's prior of this ``shape`` (class docstring) from ``rng``
        (``second``: the mixture's second median, ``weight`` its probability)."""
        if shape == "normal":
            return rng.normal(self.centre(location), sigma, n)
        if shape == "mixture":
            first = rng.random(n) < 1.0 - weight
            centre = np.where(first, self.centre(location), self.centre(second))
            return centre + rng.normal(0.0, sigma, n)
        return self.centre(location) + np.abs(rng.normal(0.0, sigma, n))

    def log_prior(self, x: np.ndarray, prior: tuple) -> np.ndarray:
        """The log density of the column's ``prior`` (``(location, σ[, shape[, second]])``) at ``x``, up
        to a constant; ``-∞`` below a half-normal's mean (class docstring)."""
        location, sigma, *shape = prior
        z = (x - self.centre(location)) / sigma
        if not shape:
            return -0.5 * z**2
        if shape[0] == "mixture":
            z2 = (x - self.centre(shape[1])) / sigma
            w = mixture_weight(prior)
            if w == 0.5:
                return np.logaddexp(-0.5 * z**2, -0.5 * z2**2)
            return np.logaddexp(np.log1p(-w) - 0.5 * z**2, np.log(w) - 0.5 * z2**2)
        return np.where(z < 0.0, -np.inf, -0.5 * z**2)

    def reflected(self, x: np.ndarray, prior: tuple) -> np.ndarray | None:
        """``x`` reflected about the midpoint of a mixture prior's two centres (class docstring);
        None for another shape."""
        location, _, *shape = prior
        if not shape or shape[0] != "mixture":
            return None
        return self.centre(location) + self.centre(shape[1]) - x

    def prior_sd(self, prior: tuple) -> float:
        """The standard deviation the column's ``prior`` is read with (the wait for ``κ``): ``σ``; for a
        mixture ``√(σ² + w (1 - w) Δ²)``, ``Δ`` the distance of its two centres (``√(σ² + (Δ/2)²)`` at
        ``w = ½``)."""
        location, sigma, *shape = prior
        if shape and shape[0] == "mixture":
            spread = self.centre(shape[1]) - self.centre(location)
            w = mixture_weight(prior)
            if w == 0.5:
                return float(np.hypot(sigma, 0.5 * spread))
            return float(np.hypot(sigma, np.sqrt(w * (1.0 - w)) * spread))
        return float(sigma)


def mixture_weight(prior: tuple) -> float:
    """The second component's probability ``w`` of a mixture prior ``(location, σ, "mixture", second[,
    w])`` (:class:`OptionalColumn`): its fifth element, ½ when it has none."""
    return float(prior[4]) if len(prior) > 4 else 0.5


#: Shapes of an optional column's prior (:class:`OptionalColumn`): normal (on the log scale for a
#: positive unknown), for a column not on a log scale half-normal, for one on a log scale a mixture.
COLUMN_PRIOR_SHAPES = ("normal", "half-normal", "mixture")
#: The registry of optional columns, by name, in the order of their indices.
OPTIONAL_COLUMNS = {
    "log_sensitivity": OptionalColumn("log_sensitivity", LOG_SENSITIVITY, 0x5E5),
    "log_noise": OptionalColumn("log_noise", LOG_NOISE, 0x7A0),
    "minus_bias": OptionalColumn("minus_bias", MINUS_BIAS, 0xB1A, log_scale=False),
    "log_indifference": OptionalColumn("log_indifference", LOG_INDIFFERENCE, 0x7E0),
    "lapse_logit": OptionalColumn("lapse_logit", LAPSE_LOGIT, 0x1A5, log_scale=False),
}
_VA0_RANGE = (-0.3, 1.0)
_AMPLITUDE_UNKNOWN_AGE_D = 10.0
_METROPOLIS_STEPS = 4
#: Quantile of the posterior of ``M*`` reported as the estimate (:meth:`ParticlePosterior.best_correction`).
PLUS_QUANTILE = 2.0 / 3.0


@dataclass(frozen=True)
class OpticsModelSpec:
    """Settings of the optics model: ``n_alternatives`` (chance ``1/n``), ``lapse`` ``λ``,
    the slope prior (``slope_median`` logMAR⁻¹, ``slope_sigma`` of ``log a``), the prior of
    ``VA*`` (``va0_mean``, ``va0_sd`` logMAR) and the number of particles.

    ``lapse_sigma`` > 0 makes the lapse rate an unknown of each patient (:func:`lapse_rate`):
    ``logit λ ~ N(logit lapse, lapse_sigma²)``; 0 keeps it the constant ``lapse``.

    ``tempered``: an answer that would leave fewer than half the particles' effective weight enters in
    stages (:meth:`ParticlePosterior.observe`, adaptive tempering); False, in one step as before.

    ``lapse_runs``: an :class:`~visiontune.refraction.attention.AttentionChain`, the patient's attention
    as a hidden two-state chain over the answers, whose lapsed answers are at random (lapses in runs;
    :mod:`visiontune.refraction.attention`); None, each answer's likelihood on its own as before."""

    n_alternatives: int
    lapse: float = 0.04
    slope_median: float = 5.0
    slope_sigma: float = 0.4
    va0_mean: float = 0.0
    va0_sd: float = 0.15
    n_particles: int = 4000
    lapse_sigma: float = 0.0
    tempered: bool = False
    lapse_runs: AttentionChain | None = None

    def __post_init__(self) -> None:
        if self.lapse_runs is not None and not isinstance(self.lapse_runs, AttentionChain):
            raise InvalidInputError(f"lapse_runs: expected None or an AttentionChain, got {self.lapse_runs!r}")
        if not 2 <= self.n_alternatives <= 100:
            raise InvalidInputError(f"n_alternatives: expected 2-100, got {self.n_alternatives!r}")
        if not 0.0 <= self.lapse < 0.5:
            raise InvalidInputError(f"lapse: expected a rate in [0, 0.5), got {self.lapse!r}")
        if not (0.0 <= self.lapse_sigma <= 3.0 and (self.lapse_sigma == 0.0 or self.lapse > 0.0)):
            raise InvalidInputError(
                f"lapse_sigma: expected 0 (a fixed lapse) or up to 3 with a positive lapse, got "
                f"{self.lapse_sigma!r} (lapse {self.lapse!r})"
            )
        if not 100 <= self.n_particles <= 200_000:
            raise InvalidInputError(f"n_particles: expected 100-200000, got {self.n_particles!r}")

    @property
    def chance(self) -> float:
        return 1.0 / self.n_alternatives


def lapse_rate(theta: np.ndarray, fixed: float):
    """The lapse rate ``λ`` of each particle, ``(N, 1)``, from its ``logit λ`` column when the particles
    carry one, ``λ = 1 / (1 + exp(-logit λ))``; else the float ``fixed`` (the protocol's constant).

    Why an unknown: a lapse rate fixed at the wrong value biases the threshold and slope fitted
    through it, and one fitted per observer removes that bias (Wichmann & Hill 2001, *The
    psychometric function: I. Fitting, sampling, and goodness of fit*, Percept. Psychophys.
    63:1293-1313, §"Bias and lapse rate"); patients lapse at different rates, and in runs
    (:mod:`visiontune.refraction.answer_models`). One rate serves letters and comparisons: a
    lapse is the patient's attention, not the question's."""
    if not has_column(theta, "lapse_logit"):
        return fixed
    return 1.0 / (1.0 + np.exp(-theta[:, LAPSE_LOGIT, None]))


def probability_correct(theta: np.ndarray, s: np.ndarray, lenses: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
    """``P(correct | s_j, L_j, θ_i)`` (module docstring) for particles ``theta (N, 6)`` and
    trials ``s (m,)``, ``lenses (m, 3)``: an ``(N, m)`` array (``λ`` per particle, :func:`lapse_rate`)."""
    return spec.chance + (1.0 - spec.chance - lapse_rate(theta, spec.lapse)) * ndtr(_latent(theta, s, lenses))


def probability_grid(theta: np.ndarray, s_grid: np.ndarray, lenses: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
    """``P(correct | s_j, L_l, θ_i)`` on the grid of sizes ``s_grid (n_s,)`` × lenses
    ``lenses (n_x, 3)``: an ``(N, n_s, n_x)`` array (the acuity through each lens computed once)."""
    va = acuity_logmar(theta, lenses)
    z = np.exp(theta[:, LOG_SLOPE])[:, None, None] * (np.asarray(s_grid)[None, :, None] - va[:, None, :])
    lapse = lapse_rate(theta, spec.lapse)
    lapse = lapse if np.isscalar(lapse) else lapse[:, :, None]
    return spec.chance + (1.0 - spec.chance - lapse) * ndtr(z)


def blur_squared(theta: np.ndarray, lenses: np.ndarray) -> np.ndarray:
    """``|r|²`` (D²), the squared length of the residual power vector after accommodation
    (module docstring), for each particle and lens: ``(N, m)``.

    ``r_M = (L_M - M) + min(A, max(-(L_M - M), 0))``, then ``(r_M² + r_J0²) + r_J45²``, one
    ``(N, m)`` component at a time in two buffers (the particles' moves call it for every answer:
    the same operations in the same order as on an ``(N, m, 3)`` array, so the same bits, without
    its strided ``(N, m, 3)`` temporaries)."""
    lenses = np.asarray(lenses, dtype=float)
    r = np.subtract(lenses[None, :, 0], theta[:, 0, None])
    t = np.maximum(np.negative(r), 0.0)
    np.minimum(theta[:, AMPLITUDE, None], t, out=t)
    r += t
    np.square(r, out=r)
    for k in (1, 2):
        np.subtract(lenses[None, :, k], theta[:, k, None], out=t)
        np.square(t, out=t)
        r += t
    return r


def acuity_logmar(theta: np.ndarray, lenses: np.ndarray) -> np.ndarray:
    """``VA(L_j) = VA* + log10(1 + |r|²)`` for each particle ``theta (N, 6)`` and lens
    ``lenses (m, 3)``: ``(N, m)`` logMAR."""
    return theta[:, VA0, None] + np.log10(1.0 + blur_squared(theta, lenses))


def _latent(theta: np.ndarray, s: np.ndarray, lenses: np.ndarray) -> np.ndarray:
    return np.exp(theta[:, LOG_SLOPE, None]) * (np.asarray(s)[None, :] - acuity_logmar(theta, lenses))


def binary_entropy_bits(p: np.ndarray) -> np.ndarray:
    """``h(p) = -p log2 p - (1-p) log2(1-p)`` (0 at 0 and 1)."""
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    return -(q * np.log2(q) + (1.0 - q) * np.log2(1.0 - q))


def systematic_resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn by systematic resampling of ``weights`` (Kitagawa 1996)."""
    positions = (rng.random() + np.arange(n)) / n
    cw = np.cumsum(weights)
    cw[-1] = 1.0
    return np.searchsorted(cw, positions)


def _normalised(log_w: np.ndarray) -> np.ndarray:
    """The weights ``exp(log_w)`` scaled to sum to 1."""
    w = np.exp(log_w - log_w.max())
    return w / w.sum()


def _ess(log_w: np.ndarray) -> float:
    """``1 / Σ w²`` of the normalised ``exp(log_w)``."""
    return float(1.0 / np.sum(_normalised(log_w) ** 2))


def _column(name: str) -> OptionalColumn:
    if name not in OPTIONAL_COLUMNS:
        raise InvalidInputError(f"column: expected one of {', '.join(OPTIONAL_COLUMNS)}, got {name!r}")
    return OPTIONAL_COLUMNS[name]


def has_column(theta: np.ndarray, name: str) -> bool:
    """Whether particles ``theta (N, d)`` carry the optional column ``name`` (there, not NaN)."""
    i = _column(name).index
    return theta.ndim == 2 and theta.shape[1] > i and len(theta) > 0 and not np.isnan(theta[0, i])


def with_column(
    theta: np.ndarray,
    name: str,
    median: float,
    sigma: float,
    rng: np.random.Generator,
    shape: str = "normal",
    second: float | None = None,
    weight: float = 0.5,
) -> np.ndarray:
    """``theta (N, d)`` with the optional column ``name`` of prior draws ``N(ln median, σ²)`` (or of
    the ``shape`` named, :meth:`OptionalColumn.draw`) from ``rng`` when it has none (to choose a
    question before the column's first answer; module docstring), else ``theta`` itself."""
    if has_column(theta, name):
        return theta
    col = _column(name)
    _check_shape(col, shape, second, weight)
    return _set_column(theta, col.index, col.draw(median, sigma, len(theta), rng, shape, second, weight))


def _check_shape(col: OptionalColumn, shape: str, second: float | None = None, weight: float = 0.5) -> None:
    if shape not in COLUMN_PRIOR_SHAPES:
        raise InvalidInputError(f"{col.name} prior: expected one of {', '.join(COLUMN_PRIOR_SHAPES)}, got {shape!r}")
    if shape == "half-normal" and col.log_scale:
        raise InvalidInputError(f"{col.name} prior: a {shape} prior is for a column not on a log scale")
    if shape == "mixture" and not (col.log_scale and second is not None and np.isfinite(second) and second > 0.0):
        raise InvalidInputError(
            f"{col.name} prior: a mixture prior is for a column on a log scale, with a positive second median, "
            f"got {second!r}"
        )
    if shape == "mixture" and not 0.0 < weight < 1.0:
        raise InvalidInputError(f"{col.name} prior: a mixture's second weight must lie in (0, 1), got {weight!r}")


def _set_column(theta: np.ndarray, index: int, values: np.ndarray) -> np.ndarray:
    """A copy of ``theta`` with column ``index`` set to ``values``, widened (NaN) as needed."""
    if theta.shape[1] == index:
        return np.column_stack([theta, values])
    out = np.full((len(theta), max(theta.shape[1], index + 1)), np.nan)
    out[:, : theta.shape[1]] = theta
    out[:, index] = values
    return out


@dataclass(frozen=True)
class LetterAnswer:
    """One letter answer for :meth:`ParticlePosterior.observe`: size ``s`` (logMAR), the lens's
    power vector ``lens`` ``(M, J0, J45)`` (diopters), ``correct``."""

    s: float
    lens: tuple[float, float, float]
    correct: bool

    batch_key: ClassVar[str] = "letter"

    def log_likelihood(self, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(answer | θ_i)`` per particle: ``(N,)``."""
        p = probability_correct(theta, np.array([self.s]), np.asarray(self.lens, dtype=float).reshape(1, 3), spec)[:, 0]
        return np.log(p if self.correct else 1.0 - p)

    def lapsed_log_likelihood(self, spec: OpticsModelSpec) -> float:
        """``log P(answer)`` of a lapsed patient, who guesses: ``log γ`` or ``log(1 - γ)``."""
        return math.log(spec.chance) if self.correct else math.log1p(-spec.chance)

    @staticmethod
    def batch_log_likelihoods(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(answer_j | θ_i)`` of each letter of ``answers``: ``(N, m)``."""
        s = np.array([a.s for a in answers])
        lenses = np.array([a.lens for a in answers], dtype=float).reshape(len(answers), 3)
        correct = np.array([a.correct for a in answers], dtype=bool)
        p = probability_correct(theta, s, lenses, spec)
        return np.log(np.where(correct[None, :], p, 1.0 - p))

    @staticmethod
    def batch_log_likelihood(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``Σ_j log P(answer_j | θ_i)`` over letter ``answers``: ``(N,)``."""
        return np.sum(LetterAnswer.batch_log_likelihoods(answers, theta, spec), axis=1)


class ParticlePosterior:
    """The posterior of ``θ`` given the answers so far, as weighted particles.

    ``spec``: :class:`OpticsModelSpec`; ``start``: the :class:`StartingPoint` (prior on ``P*``
    and the patient's age); ``seed``: the session's seed. :meth:`update` adds a letter answer,
    :meth:`observe` an answer of any kind (a letter, a comparison). With ``spec.lapse_sigma`` the
    ``logit λ`` column is drawn with the others, before any answer (every answer depends on it).
    """

    def __init__(self, spec: OpticsModelSpec, start: StartingPoint, seed: int) -> None:
        self.spec = spec
        self.start = start
        self.seed = int(seed)
        self.amplitude_max = (
            _AMPLITUDE_UNKNOWN_AGE_D
            if start.age_years is None
            else max(hofstetter_amplitude_d(start.age_years, "maximum"), 0.25)
        )
        rng = np.random.default_rng([self.seed, 0, 0xA11])
        n = spec.n_particles
        theta = np.empty((n, 6))
        theta[:, :3] = start.sample_prior(rng, n)
        theta[:, VA0] = np.clip(rng.normal(spec.va0_mean, spec.va0_sd, n), *_VA0_RANGE)
        theta[:, LOG_SLOPE] = rng.normal(np.log(spec.slope_median), spec.slope_sigma, n)
        theta[:, AMPLITUDE] = rng.uniform(0.0, self.amplitude_max, n)
        self.theta = theta
        self.log_w = np.zeros(n)
        #: Every answer so far, in order (letters, comparisons, ...).
        self.answers: list = []
        self._groups: dict = {}
        #: Where each group's answers stand in :attr:`answers`; with ``spec.lapse_runs``, each answer's
        #: log-likelihood if lapsed, and the particles' filtered state of attention (``α (N, 2)``, the
        #: probabilities of attending and of lapsed at the last answer).
        self._positions: dict = {}
        self._lapsed = np.zeros(0)
        self._attention: np.ndarray | None = None
        #: The letter answers as arrays: sizes (logMAR), lenses ``(n, 3)``, correct.
        self.s = np.zeros(0)
        self.lenses = np.zeros((0, 3))
        self.correct = np.zeros(0, dtype=bool)
        self.n_moves = 0
        #: ``{name: (median, σ)}``: the lognormal prior of each optional column present, in index order
        #: (``(mean, σ)`` for a column not on a log scale; ``(mean, σ, "half-normal")`` for a half-normal).
        self.column_priors: dict[str, tuple] = {}
        if spec.lapse_sigma > 0.0:
            self.add_column("lapse_logit", float(np.log(spec.lapse / (1.0 - spec.lapse))), spec.lapse_sigma)

    @property
    def sensitivity_prior(self) -> tuple | None:
        """``(median, σ)`` of the prior of ``κ`` once the ``ln κ`` column was added (``(median, σ,
        "mixture", second)`` for a mixture, :class:`OptionalColumn`), else None."""
        return self.column_priors.get("log_sensitivity")

    @property
    def noise_prior(self) -> tuple[float, float] | None:
        """``(median, σ)`` of the prior of the slider noise ``τ`` (logMAR) once the ``ln τ`` column
        was added, else None."""
        return self.column_priors.get("log_noise")

    # ------------------------------------------------------------------ weights
    @property
    def n(self) -> int:
        """Answers incorporated (of every kind)."""
        return len(self.answers)

    @property
    def weights(self) -> np.ndarray:
        return _normalised(self.log_w)

    def effective_sample_size(self) -> float:
        return _ess(self.log_w)

    def _log_prior(self, theta: np.ndarray) -> np.ndarray:
        spec = self.spec
        lp = self.start.log_prior(theta[:, :3])
        lp = lp - 0.5 * ((theta[:, VA0] - spec.va0_mean) / spec.va0_sd) ** 2
        lp = lp - 0.5 * ((theta[:, LOG_SLOPE] - np.log(spec.slope_median)) / spec.slope_sigma) ** 2
        for name, prior in self.column_priors.items():
            col = OPTIONAL_COLUMNS[name]
            lp = lp + col.log_prior(theta[:, col.index], prior)
        outside = (
            (theta[:, VA0] < _VA0_RANGE[0])
            | (theta[:, VA0] > _VA0_RANGE[1])
            | (theta[:, AMPLITUDE] < 0.0)
            | (theta[:, AMPLITUDE] > self.amplitude_max)
        )
        return np.where(outside, -np.inf, lp)

    def _log_likelihood(self, theta: np.ndarray) -> np.ndarray:
        """Log-likelihood of every answer so far (letters and every other kind), per particle:
        ``(N,)``; the answers of one kind are evaluated together (``batch_log_likelihood``). With
        ``spec.lapse_runs``, summed over the hidden states of attention by the forward algorithm
        (:func:`~visiontune.refraction.attention.forward`)."""
        if self.n == 0:
            return np.zeros(len(theta))
        if self.spec.lapse_runs is not None:
            return forward(self.spec.lapse_runs, self._each_log_likelihood(theta), self._lapsed)[0]
        total = None
        for group in self._groups.values():
            ll = type(group[0]).batch_log_likelihood(group, theta, self.spec)
            total = ll if total is None else total + ll
        return total

    def _each_log_likelihood(self, theta: np.ndarray) -> np.ndarray:
        """``log P(answer_t | θ_i)`` of every answer so far, in the order answered: ``(N, T)`` (a kind
        without ``batch_log_likelihoods`` answer by answer)."""
        out = np.empty((len(theta), self.n))
        for key, group in self._groups.items():
            kind = type(group[0])
            if hasattr(kind, "batch_log_likelihoods"):
                each = kind.batch_log_likelihoods(group, theta, self.spec)
            else:
                each = np.stack([a.log_likelihood(theta, self.spec) for a in group], axis=1)
            out[:, self._positions[key]] = each
        return out

    def _attention_state(self, theta: np.ndarray) -> np.ndarray | None:
        """With ``spec.lapse_runs``, the filtered state of attention after every answer so far, ``α (N,
        2)``, for particles ``theta``; None without it or before the first answer."""
        if self.spec.lapse_runs is None or self.n == 0:
            return None
        return forward(self.spec.lapse_runs, self._each_log_likelihood(theta), self._lapsed)[1]

    def _increment(self, answer, theta: np.ndarray, alpha) -> np.ndarray:
        """``log p(answer | answers before, θ_i)``: the answer's log-likelihood, or with
        ``spec.lapse_runs`` its predictive given the state of attention ``alpha``
        (:meth:`_attention_state` of ``theta``)."""
        log_f = answer.log_likelihood(theta, self.spec)
        if self.spec.lapse_runs is None:
            return log_f
        return forward_step(self.spec.lapse_runs, alpha, log_f, answer.lapsed_log_likelihood(self.spec))[0]

    @property
    def lapsed_probability(self) -> float | None:
        """With ``spec.lapse_runs``, the posterior probability that the patient was lapsed at the last
        answer (``Σ_i w_i α_i(L)``); None without it or before the first answer."""
        if self._attention is None:
            return None
        return float(self.weights @ self._attention[:, 1])

    # ------------------------------------------------------------------ one answer
    def observe(self, answer) -> None:
        """Add one answer of any kind; resample and move the particles when the effective
        sample size falls below half (the moves then target the posterior of every answer).

        ``answer`` is a frozen value with ``log_likelihood(theta, spec) -> (N,)`` (its log-
        likelihood per particle), a hashable ``batch_key`` and a static
        ``batch_log_likelihood(answers, theta, spec) -> (N,)``, the sum over answers of the same
        key: :class:`LetterAnswer`, :class:`visiontune.refraction.comparisons.ComparisonAnswer`.
        An answer may name optional columns its likelihood reads, ``column_priors``: ``((name,
        median, σ), ...)`` (a comparison model that infers ``κ``, a slider model that infers
        ``τ``), with a fourth element naming the prior's shape when it is not normal; each is added
        first when the particles have none (:meth:`add_column`)."""
        for name, median, sigma, *shape in getattr(answer, "column_priors", ()):
            self.add_column(name, median, sigma, *shape)
        chain = self.spec.lapse_runs
        if self.spec.tempered:
            self._temper_in(answer)
        elif chain is None:
            self.log_w = self.log_w + answer.log_likelihood(self.theta, self.spec)
        if chain is not None:
            log_g = answer.lapsed_log_likelihood(self.spec)
            log_c, self._attention = forward_step(
                chain, self._attention, answer.log_likelihood(self.theta, self.spec), log_g
            )
            if not self.spec.tempered:
                self.log_w = self.log_w + log_c
            self._lapsed = np.append(self._lapsed, log_g)
        self._positions.setdefault(answer.batch_key, []).append(self.n)
        self.answers.append(answer)
        self._groups.setdefault(answer.batch_key, []).append(answer)
        if isinstance(answer, LetterAnswer):
            self.s = np.append(self.s, answer.s)
            self.lenses = np.vstack([self.lenses, np.asarray(answer.lens).reshape(1, 3)])
            self.correct = np.append(self.correct, answer.correct)
        if self.effective_sample_size() < 0.5 * self.spec.n_particles:
            self._resample_move(np.random.default_rng([self.seed, self.n, 0x5A3]))

    def add_column(
        self,
        name: str,
        median: float,
        sigma: float,
        shape: str = "normal",
        second: float | None = None,
        weight: float = 0.5,
    ) -> None:
        """Add the optional column ``name`` (:data:`OPTIONAL_COLUMNS`), ``N(ln median, σ²)`` draws
        (or of the ``shape`` named, :meth:`OptionalColumn.draw`: a half-normal for a column not on a
        log scale, a mixture with the ``second`` median at probability ``weight`` for one on a log scale) from
        ``default_rng([seed, 0, purpose])``, unless there is one (then the prior must be the
        same). The column is a priori independent of the other unknowns and no answer so far
        depends on it, so the weighted particles with it represent the posterior, whenever it is
        added (module docstring): the particles are a pure function of the answers, as before."""
        col = _column(name)
        _check_shape(col, shape, second, weight)
        prior = (float(median), float(sigma))
        if shape == "mixture":
            prior = mixture_prior(prior, second, weight)
        elif shape != "normal":
            prior = (*prior, shape)
        known = self.column_priors.get(name)
        if known is not None:
            if prior != known:
                raise InvalidInputError(
                    f"{name} prior: the posterior has median, sigma = {known}, an answer asks for "
                    f"{prior} (one prior per unknown and session)"
                )
            return
        if not ((prior[0] > 0.0 or not col.log_scale) and np.isfinite(prior[0]) and prior[1] > 0.0):
            what = "a positive median and sigma" if col.log_scale else "a finite mean and a positive sigma"
            raise InvalidInputError(f"{name} prior: expected {what}, got {prior}")
        rng = np.random.default_rng([self.seed, 0, col.purpose])
        self.theta = _set_column(
            self.theta, col.index, col.draw(prior[0], prior[1], len(self.theta), rng, shape, second, weight)
        )
        priors = {**self.column_priors, name: prior}
        self.column_priors = {k: priors[k] for k in OPTIONAL_COLUMNS if k in priors}

    def add_sensitivity(self, median: float, sigma: float) -> None:
        """Add the ``ln κ`` column (:meth:`add_column`)."""
        self.add_column("log_sensitivity", median, sigma)

    def update(self, s: float, lens_pv, correct: bool) -> None:
        """Add the answer ``correct`` to a letter of size ``s`` (logMAR) through the lens of
        power vector ``lens_pv (3,)`` (:meth:`observe` with a :class:`LetterAnswer`)."""
        lens = np.asarray(lens_pv, dtype=float).reshape(3)
        self.observe(LetterAnswer(float(s), (float(lens[0]), float(lens[1]), float(lens[2])), bool(correct)))

    def _temper_in(self, answer) -> None:
        """Reweight by the new ``answer``'s likelihood ``ℓ`` in stages ``ℓ^δ₁, ℓ^δ₂, ...`` (exponents
        summing to 1), each ``δ`` the largest that keeps the effective sample size at half the
        particles (found by bisection), resampling and moving the particles after every stage but the
        last toward ``prior × (earlier answers) × ℓ^φ``, ``φ`` the exponent so far: adaptive tempering
        (Del Moral, Doucet & Jasra 2006, *Sequential Monte Carlo samplers*, J. R. Stat. Soc. B
        68:411-436, §3.3.2; Jasra, Stephens, Doucet & Tsagaris 2011, Scand. J. Stat. 38:1-22). A chart
        line is five answers at once and can put nearly all the weight on a few particles; in stages
        the moves rebuild the cloud between them. The answer is not yet among :attr:`answers` here;
        :meth:`observe` adds it and, as untempered, resamples once more when the weights call for it.
        Each stage's draws come from ``default_rng([seed, n + 1, 0x7E3, stage])``, ``n`` the answers before."""
        ll = self._increment(answer, self.theta, self._attention)
        phi, stage, half = 0.0, 0, 0.5 * self.spec.n_particles
        while True:
            delta = 1.0 - phi
            if _ess(self.log_w + delta * ll) < half:
                lo, hi = 0.0, delta
                for _ in range(40):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if _ess(self.log_w + mid * ll) >= half else (lo, mid)
                delta = max(lo, 1e-6 * (1.0 - phi))
            self.log_w = self.log_w + delta * ll
            phi = 1.0 if delta >= 1.0 - phi else phi + delta
            if phi >= 1.0:
                return
            rng = np.random.default_rng([self.seed, self.n + 1, 0x7E3, stage])
            self._resample_move(
                rng, extra=lambda theta, e=phi: e * self._increment(answer, theta, self._attention_state(theta))
            )
            ll = self._increment(answer, self.theta, self._attention)
            stage += 1

    def _resample_move(self, rng: np.random.Generator, extra=None) -> None:
        """Resample the particles and move each by random-walk Metropolis steps toward the posterior of
        every answer so far, times ``exp(extra(θ))`` when given (a tempered answer, :meth:`_temper_in`)."""
        w = self.weights
        cols = [*range(6), *(OPTIONAL_COLUMNS[name].index for name in self.column_priors)]
        d = len(cols)
        every = d == self.theta.shape[1]  # no NaN column (not inferred) to leave out
        jitter = [1e-4, 1e-5, 1e-5, 1e-5, 1e-5, 1e-4] + [1e-4] * (d - 6)
        cov = np.cov((self.theta if every else self.theta[:, cols]).T, aweights=w) + np.diag(jitter)
        chol = np.linalg.cholesky((2.38**2 / float(d)) * cov)
        theta = self.theta[systematic_resample(w, len(w), rng)]
        log_post = self._log_prior(theta) + self._log_likelihood(theta)
        if extra is not None:
            log_post = log_post + extra(theta)
        for _ in range(_METROPOLIS_STEPS):
            step = rng.standard_normal((len(theta), d)) @ chol.T
            if every:
                proposal = theta + step
            else:
                proposal = theta.copy()
                proposal[:, cols] += step
            self._metropolis(theta, log_post, proposal, rng, extra)
        for name, prior in self.column_priors.items():  # a mixture's other component (OptionalColumn)
            col = OPTIONAL_COLUMNS[name]
            reflected = col.reflected(theta[:, col.index], prior)
            if reflected is None:
                continue
            proposal = theta.copy()
            proposal[:, col.index] = reflected
            self._metropolis(theta, log_post, proposal, rng, extra)
        self.theta = theta
        self.log_w = np.zeros(len(theta))
        self._attention = self._attention_state(theta)
        self.n_moves += 1

    def _metropolis(
        self, theta: np.ndarray, log_post: np.ndarray, proposal: np.ndarray, rng: np.random.Generator, extra=None
    ) -> None:
        """One Metropolis-Hastings step of every particle to its row of ``proposal`` (a symmetric or
        involutive proposal), accepted with probability ``min(1, π(proposal) / π(theta))``;
        ``theta`` and its log posterior ``log_post`` are updated in place. A proposal outside the
        prior (log prior ``-∞``) is rejected without computing its likelihood. ``extra``: a further
        log factor of the target (:meth:`_resample_move`)."""
        lp_prior = self._log_prior(proposal)
        finite = np.isfinite(lp_prior)
        lp = np.full(len(theta), -np.inf)
        if finite.any():
            lp[finite] = lp_prior[finite] + self._log_likelihood(proposal[finite])
            if extra is not None:
                lp[finite] += extra(proposal[finite])
        accept = np.log(rng.random(len(theta))) < lp - log_post
        theta[accept] = proposal[accept]
        log_post[accept] = lp[accept]

    # ------------------------------------------------------------------ summaries
    def subsample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` equally weighted particles ``(n, d)`` (systematic resampling; ``d`` = 6, or more with
        optional columns, module docstring)."""
        return self.theta[systematic_resample(self.weights, n, rng)]

    def mean(self) -> np.ndarray:
        """Posterior mean of ``θ`` ``(d,)`` (6, or more with optional columns; NaN for one not inferred)."""
        return self.weights @ self.theta

    def best_correction(self) -> np.ndarray:
        """The estimate of the best correction ``P* = (M, J0, J45)``: the posterior's
        :data:`PLUS_QUANTILE` quantile of ``M`` and the posterior means of ``J0``, ``J45``.

        The clinical rule is the most plus lens that gives the best acuity (module docstring).
        For an eye that accommodates, answers bound ``M*`` sharply from the plus side only
        (lenses more minus than ``M*`` read as well), so the posterior of ``M*`` has a long
        minus tail and its mean lies on the minus side of the edge; and over-minusing costs a
        young patient accommodative effort, while a little under-minus costs a little blur.
        The Bayes estimate under a linear loss twice as heavy for over-minus as for under-minus
        is the posterior's 2/3 quantile of ``M`` (e.g. Berger 1985, *Statistical Decision
        Theory and Bayesian Analysis*, §4.4.2)."""
        w = self.weights
        m = weighted_quantile(self.theta[:, M], w, PLUS_QUANTILE)
        return np.array([m, w @ self.theta[:, J0], w @ self.theta[:, J45]])

    def acuity(self, lenses: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Predicted acuity (logMAR) through ``lenses (m, 3)``: posterior mean and the
        central ``level`` interval, each ``(m,)``."""
        rng = np.random.default_rng([self.seed, self.n, 0xAC])
        va = acuity_logmar(self.subsample(min(1000, self.spec.n_particles), rng), np.atleast_2d(lenses))
        tail = 50.0 * (1.0 - level)
        lo, hi = np.percentile(va, [tail, 100.0 - tail], axis=0)
        return va.mean(axis=0), lo, hi
