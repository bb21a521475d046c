"""Slider (knob, projective) questions in the optics model: "turn the knob; where is it clearest?"

At a phoropter the clinician turns ONE knob while the patient reads a line of letters of size
``s`` (logMAR), and the patient says where the line is clearest. This is the projective
preferential query of Mikkola et al. 2020 (*Projective Preferential Bayesian Optimization*,
ICML 2020: the user picks the best point along a line through the search space), written for
the particle posterior of :mod:`visiontune.refraction.optics_model`
(``θ_i = (M, J0, J45, VA*, log a, A[, ln κ][, ln τ])``).

**Knob paths.** A path is a map ``t -> L(t)`` (Thibos 1997 power vectors, D) on a grid of ``t``
through a phoropter setting ``c`` written in minus-cylinder form ``(S, C, α)``:

* ``"sphere"``: ``L(t) = c + t (1, 0, 0)``, i.e. ``(S + t, C, α)``; default ``t`` in ±1.00 D,
  steps of 0.25 D (9 lenses);
* ``"cylinder"``: the cylinder power at the setting's axis, ``(S, C + t, α)``: ``M`` moves by
  ``t/2`` and ``J`` by ``-t/2 (cos 2α, sin 2α)`` (Thibos 1997, Eqs. 6-8); default ``t`` in
  ±1.00 D, steps of 0.25 D, keeping ``C + t <= 0`` (the cylinder dial of a minus-cylinder
  phoropter stops at plano); without a cylinder the axis is 180°;
* ``"axis"``: ``(S, C, α + t)``: ``M`` is kept and ``J`` turns on the circle of radius ``|C|/2``;
  default ``t`` in ±30°, steps of 5° (coarser for small cylinders as
  :func:`~visiontune.refraction.lenses.axis_step_for`: 15° at 0.25 D, 10° at 0.50 D); it needs
  a cylinder.

**Choice model.** The patient picks the point ``j`` of the path's grid where the letters are
clearest, with noise::

    P(j | θ_i) = (1 - ε) exp(-VA_i(L_j) / τ) / Σ_k exp(-VA_i(L_k) / τ) + ε / n

with ``VA_i`` the particle's acuity through the lens (``VA* + log10(1 + |r|²)``, after its
accommodation, :func:`~visiontune.refraction.optics_model.acuity_logmar`), ``n`` the number of
grid points, ``τ`` (logMAR) the choice noise and ``ε`` a lapse (the patient names a point at
random). It is the multinomial logit of a choice among ``n`` alternatives of utility
``-VA / τ`` (Luce 1959, *Individual Choice Behavior*, Wiley; McFadden 1974, *Conditional logit
analysis of qualitative choice behavior*, in Zarembka (ed.), *Frontiers in Econometrics*,
pp. 105-142): the choice of the best of ``n`` Thurstone-type percepts ``-VA_j + noise_j`` with
i.i.d. Gumbel noise of scale ``τ``; for ``n = 2`` it is a logistic comparison, close to the
probit of the comparisons (:mod:`visiontune.refraction.comparisons`). Equally clear points
(acuity is flat on the minus side of ``M*`` up to the amplitude ``A``) get equal probabilities,
so the ties of the accommodated side need no special rule; the simulated patient
(:func:`simulated_slider_choice`) picks by the same rule at its true acuity. Defaults
(**stated**, not measured): ``τ = 0.03`` logMAR (about one and a half letters, 0.02 logMAR a letter on
a five-letter line) and ``ε = 0.05``.

**The patient's noise, inferred.** Patients differ in how sharply they judge clarity, and a model
whose ``τ`` is smaller than the patient's is over-confident (its posterior narrows faster than the
answers warrant). With ``noise_sigma > 0`` (:class:`SliderModel`) ``τ`` is an unknown per patient,
lognormal a priori, ``ln τ ~ N(ln noise_logmar, noise_sigma²)``: the optional particle column
``"log_noise"`` (:data:`~visiontune.refraction.optics_model.LOG_NOISE`), added by
:meth:`ParticlePosterior.observe <visiontune.refraction.optics_model.ParticlePosterior.observe>` at
the first slider answer (no earlier answer depends on ``τ``), the same mechanism as the
comparison sensitivity ``κ`` (:mod:`visiontune.refraction.comparisons`). Each particle's ``τ_i``
then enters its likelihood and the value of a slider (:func:`slider_value`,
:func:`propose_slider`, with prior draws of ``τ`` before the first slider answer:
:func:`with_noise`). ``noise_sigma = 0`` (default) keeps ``τ = noise_logmar`` fixed, as before.
A prior (**stated**): median the stated ``τ`` 0.03 logMAR (a patient like the fixed model's at
its centre) and σ 0.8, so that its central 95% (``0.03 e^{±1.96 × 0.8}`` = 0.006-0.14 logMAR)
reaches a line and a half: the test-retest spread of a chart acuity is about a line (95% limits
near ±0.1-0.15 logMAR; Arditi & Cagenello 1993, *On the statistical reliability of letter-chart
visual acuity measurements*, Invest. Ophthalmol. Vis. Sci. 34:120-129), an upper bound for a
patient's uncertainty about which lens of a path is clearest, and a letter is 0.02 logMAR. On
simulated patients who choose with noise 0.08 and lapse 0.15 it brings the coverage of the 95%
region from 69% to 91% and costs nothing on patients who choose as the fixed model does
(``benchmarks/slider_robustness.py``; SIMULATED).

What differs from Mikkola et al. 2020: they model the slider answer, a point on a continuous
line, with a GP over the objective and turn it into pseudo-observations (the chosen point
preferred over points of the line, pairwise comparisons with a probit likelihood); here the
path is the discrete set of lenses the knob clicks through, and the likelihood of the choice
among them is exact for every particle; the objective is the optics model's acuity, not a GP.
The letter size ``s`` does not enter the likelihood (the patient judges clarity, not a letter's
identity; it is kept in the answer for the log): it is set a line (0.1 logMAR) above the
predicted best acuity, readable at the best point.

**Which knob.** :func:`slider_value` is the expected reduction of the posterior variance of the
correction after the answer, ``tr Cov(P*) - E_j[tr Cov(P* | j)]`` (D²), exact over the ``n``
possible answers (the quantity :mod:`visiontune.refraction.mixed_rules` weighs);
:func:`propose_slider` scores the three knobs through the current estimate
(:meth:`~visiontune.refraction.optics_model.ParticlePosterior.best_correction` rounded to a trial
lens) and returns the best.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from visiontune._validate import check_int, check_number, check_rng, points
from visiontune.errors import InvalidInputError
from visiontune.optics import PowerVector, Prescription
from visiontune.optics.prescription import normalise_axis_deg
from visiontune.refraction.durations import SLIDER_SECONDS
from visiontune.refraction.lenses import LensSteps, axis_step_for, trial_lens
from visiontune.refraction.optics_model import (
    LOG_NOISE,
    VA0,
    OpticsModelSpec,
    ParticlePosterior,
    acuity_logmar,
    has_column,
    with_column,
)
from visiontune.refraction.optics_rules import DECISION_PARTICLES

__all__ = [
    "DEFAULT_HALF_RANGES",
    "DEFAULT_STEPS",
    "KNOBS",
    "KnobPath",
    "SliderAnswer",
    "SliderModel",
    "SliderQuery",
    "SliderSettings",
    "check_slider_trial",
    "choice_probabilities",
    "knob_path",
    "log_sum_exp_last",
    "propose_slider",
    "simulated_slider_choice",
    "slider_noise",
    "slider_probabilities",
    "slider_value",
    "with_noise",
]

KNOBS = ("sphere", "cylinder", "axis")
#: Default half-ranges of the knobs: D for sphere and cylinder, degrees for the axis.
DEFAULT_HALF_RANGES = {"sphere": 1.0, "cylinder": 1.0, "axis": 30.0}
#: Default grid steps: trial-lens steps of 0.25 D, 5° of axis.
DEFAULT_STEPS = {"sphere": 0.25, "cylinder": 0.25, "axis": 5.0}
#: Below this cylinder (D) the axis knob has nothing to turn.
_MIN_AXIS_CYLINDER_D = 0.125
#: The slider's letter size above the predicted best acuity (logMAR): one line.
SIZE_OFFSET_LOGMAR = 0.1


@dataclass(frozen=True)
class SliderModel:
    """The choice model of a slider answer (module docstring): ``noise_logmar`` ``τ`` (logMAR,
    > 0; the prior's median when inferred), ``lapse`` ``ε`` in [0, 1) (a point named at random)
    and ``noise_sigma``, the σ of the lognormal prior of ``τ`` (0: ``τ`` fixed, the default; > 0:
    inferred per patient, the ``ln τ`` column)."""

    noise_logmar: float = 0.03
    lapse: float = 0.05
    noise_sigma: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_logmar", check_number("noise_logmar", self.noise_logmar, 1e-4, 1.0))
        object.__setattr__(self, "lapse", check_number("lapse", self.lapse, 0.0, 0.99))
        object.__setattr__(self, "noise_sigma", check_number("noise_sigma", self.noise_sigma, 0.0, 3.0))

    @property
    def infers_noise(self) -> bool:
        """Whether ``τ`` is an unknown (``noise_sigma > 0``)."""
        return self.noise_sigma > 0.0


def slider_noise(theta: np.ndarray, model: SliderModel):
    """``τ`` (logMAR): ``(N, 1)`` from the particles' ``ln τ`` column when ``model`` infers it, else
    the float ``model.noise_logmar``."""
    if not model.infers_noise:
        return model.noise_logmar
    if not has_column(theta, "log_noise"):
        raise InvalidInputError(
            "theta: the slider model infers its noise, but the particles have no ln τ column "
            "(ParticlePosterior.observe adds it; with_noise for particles drawn before)"
        )
    return np.exp(theta[:, LOG_NOISE, None])


def with_noise(theta: np.ndarray, model: SliderModel, rng: np.random.Generator) -> np.ndarray:
    """``theta`` with a ``ln τ`` column of prior draws when ``model`` infers the noise and the
    particles have none (to choose the first slider; module docstring), else ``theta`` itself."""
    if not model.infers_noise:
        return theta
    return with_column(theta, "log_noise", model.noise_logmar, model.noise_sigma, rng)


def log_sum_exp_last(z: np.ndarray) -> np.ndarray:
    """``log Σ_k exp(z_k)`` along the last axis of ``z (..., n)``, kept as ``(..., 1)``, for real
    ``z`` whose every row has a finite maximum (padding may be ``-inf``): the operations of
    :func:`scipy.special.logsumexp` (SciPy 1.17) in its order, so the same bits (the maximum's terms separated
    out of the sum: ``a + log(m) + log1p(Σ_{z_k < a} exp(z_k - a) / m)``, ``a`` the maximum, ``m``
    how many reach it; Blanchard, Higham & Higham 2021, IMA J. Numer. Anal. 41:2311-2330), without
    the second pass scipy makes for rows whose result is infinite, which these rows never are. The
    slider answers' likelihood in the particles' moves calls it on every answer's path."""
    a_max = np.max(z, axis=-1, keepdims=True)
    top = z == a_max
    m = np.sum(top.astype(z.dtype), axis=-1, keepdims=True, dtype=z.dtype)
    s = np.sum(np.exp(np.where(top, -np.inf, z) - a_max), axis=-1, keepdims=True, dtype=z.dtype)
    s = np.where(s == 0, s, s / m)
    return np.log1p(s) + np.log(m) + a_max


def choice_probabilities(va: np.ndarray, model: SliderModel, noise=None) -> np.ndarray:
    """``P(j) = (1 - ε) softmax_j(-VA_j / τ) + ε / n`` along the last axis of ``va (..., n)``
    (logMAR): ``(..., n)``. ``noise``: ``τ``, a float or an array broadcasting against ``va``
    (default ``model.noise_logmar``)."""
    va = np.asarray(va, dtype=float)
    z = -va / (model.noise_logmar if noise is None else noise)
    soft = np.exp(z - logsumexp(z, axis=-1, keepdims=True))
    return (1.0 - model.lapse) * soft + model.lapse / va.shape[-1]


def slider_probabilities(theta: np.ndarray, lenses, model: SliderModel) -> np.ndarray:
    """``P(j | θ_i)`` for particles ``theta (N, d)`` and a path's lenses ``(n, 3)``: ``(N, n)``,
    each row summing to 1; with each particle's ``τ_i`` when ``model`` infers it."""
    va = acuity_logmar(theta, np.asarray(lenses, dtype=float).reshape(-1, 3))
    return choice_probabilities(va, model, slider_noise(theta, model))


@dataclass(frozen=True)
class SliderSettings:
    """A session's slider questions (the protocol's ``[sliders]`` table): ``slider_seconds``, the
    patient's time per slider answer (s; default 8, mostly assumed: the clinician turns the knob
    through about nine lenses while the patient watches one line, then the patient names the
    clearest; :mod:`visiontune.refraction.durations`), the choice ``model`` and the
    ``knobs`` the session may turn (some of :data:`KNOBS`, in that order). The mixed rule
    (:mod:`visiontune.refraction.mixed_rules`) weighs a slider against a letter and a comparison
    by value per second of the patient's time."""

    slider_seconds: float = SLIDER_SECONDS
    model: SliderModel = field(default_factory=SliderModel)
    knobs: tuple[str, ...] = KNOBS

    def __post_init__(self) -> None:
        object.__setattr__(self, "slider_seconds", check_number("slider_seconds", self.slider_seconds, 0.1, 600.0))
        if not isinstance(self.model, SliderModel):
            raise InvalidInputError(f"model: expected a SliderModel, got {type(self.model).__name__}")
        knobs = tuple(self.knobs) if isinstance(self.knobs, (list, tuple)) else ()
        if not knobs or any(k not in KNOBS for k in knobs) or len(set(knobs)) != len(knobs):
            raise InvalidInputError(f"knobs: expected some of {', '.join(KNOBS)}, each once, got {self.knobs!r}")
        object.__setattr__(self, "knobs", tuple(k for k in KNOBS if k in knobs))


# ---------------------------------------------------------------------------------- paths
@dataclass(frozen=True)
class KnobPath:
    """A knob's path: ``knob`` (one of :data:`KNOBS`), the setting ``centre`` it turns from
    (minus-cylinder form), the grid ``t`` (D, or degrees for the axis), the lenses' power
    vectors ``lenses`` ``((M, J0, J45), ...)`` and the phoropter ``settings`` the knob clicks
    through (minus-cylinder form, axis 180 without a cylinder), one of each per ``t``."""

    knob: str
    centre: Prescription
    t: tuple[float, ...]
    lenses: tuple[tuple[float, float, float], ...]
    settings: tuple[Prescription, ...]

    def prescriptions(self) -> list[Prescription]:
        """The phoropter settings along the path, in minus-cylinder form."""
        return list(self.settings)

    def power_vectors(self) -> np.ndarray:
        """``(n, 3)`` power vectors (D)."""
        return np.array(self.lenses, dtype=float)


def _grid(half_range: float, step: float) -> np.ndarray:
    k = int(math.floor(half_range / step + 1e-9))
    return np.arange(-k, k + 1) * step


def knob_path(knob: str, centre, *, half_range: float | None = None, step: float | None = None) -> KnobPath:
    """The path of ``knob`` through ``centre`` (a :class:`Prescription`, or a power vector
    ``(3,)``, read in minus-cylinder form): module docstring. ``half_range`` (D; degrees for
    the axis) and ``step`` default to :data:`DEFAULT_HALF_RANGES` and :data:`DEFAULT_STEPS` (the
    axis step never finer than :func:`~visiontune.refraction.lenses.axis_step_for` gives)."""
    if knob not in KNOBS:
        raise InvalidInputError(f"knob: expected one of {', '.join(KNOBS)}, got {knob!r}")
    if isinstance(centre, Prescription):
        rx = centre.to_minus_cylinder()
    else:
        pv = points("centre", centre, 3)
        if len(pv) != 1:
            raise InvalidInputError(f"centre: expected one power vector (M, J0, J45), got {len(pv)}")
        rx = PowerVector(*pv[0]).to_prescription()
    limit = 90.0 if knob == "axis" else 10.0
    half = check_number("half_range", DEFAULT_HALF_RANGES[knob] if half_range is None else half_range, 0.0, limit)
    s, c, a = rx.sphere_d, rx.cylinder_d, rx.axis_deg
    if knob == "axis":
        if abs(c) < _MIN_AXIS_CYLINDER_D:
            raise InvalidInputError(
                f"knob 'axis': the setting {rx.format()} has no cylinder to turn (|C| < {_MIN_AXIS_CYLINDER_D} D)"
            )
        default = axis_step_for(c, DEFAULT_STEPS["axis"])
        st = check_number("step", default if step is None else step, 0.1, 90.0)
        t = _grid(half, st)
        cyl, axis, sph = np.full(len(t), c), normalise_axis_deg(a + t), np.full(len(t), s)
    else:
        st = check_number("step", DEFAULT_STEPS[knob] if step is None else step, 0.01, 10.0)
        t = _grid(half, st)
        if knob == "sphere":
            sph, cyl = s + t, np.full(len(t), c)
        else:
            t = t[c + t <= 1e-9]
            sph, cyl = np.full(len(t), s), c + t
        axis = np.full(len(t), a)
    if len(t) < 2:
        raise InvalidInputError(
            f"knob {knob!r}: half_range {half} with step {st} gives {len(t)} point(s); a path needs at least 2"
        )
    two_a = np.radians(2.0 * np.asarray(axis, dtype=float))
    pv = np.column_stack([sph + cyl / 2.0, -cyl / 2.0 * np.cos(two_a), -cyl / 2.0 * np.sin(two_a)])
    lenses = tuple(tuple(float(x) + 0.0 for x in row) for row in pv)
    settings = tuple(
        Prescription(float(sp) + 0.0, float(cy) + 0.0, 180.0 if cy == 0.0 else float(ax))
        for sp, cy, ax in zip(sph, cyl, axis)
    )
    return KnobPath(knob, rx, tuple(float(x) for x in t), lenses, settings)


# ---------------------------------------------------------------------------------- answers
def check_slider_trial(
    knob, lenses, choice, lens2=None, comparison=None, *, lens_type: type = Prescription
) -> tuple | None:
    """``(knob, lenses, choice)`` of a logged slider trial checked, or ``None`` for a trial of
    another kind: all three given or none, not a comparison too (``lens2``, ``comparison``), the
    knob one of :data:`KNOBS`, at least two ``lens_type`` lenses and ``choice`` an index into
    them; :class:`InvalidInputError` otherwise. The trial log in memory
    (:class:`~visiontune.refraction.loop.MemoryLog`, :class:`Prescription` lenses) and the
    store's records (:mod:`visiontune.session.records`, their own ``Lens``) both check with it."""
    given = (knob is not None, lenses is not None, choice is not None)
    if not any(given):
        return None
    if not all(given):
        raise InvalidInputError(
            f"slider: expected the knob, its lenses and the choice together, got knob {knob!r}, "
            f"lenses {lenses!r}, choice {choice!r}"
        )
    if lens2 is not None or comparison is not None:
        raise InvalidInputError("slider: a trial is a slider or a comparison, not both")
    if knob not in KNOBS:
        raise InvalidInputError(f"slider_knob: expected one of {', '.join(KNOBS)}, got {knob!r}")
    if not isinstance(lenses, (tuple, list)) or len(lenses) < 2 or not all(isinstance(x, lens_type) for x in lenses):
        raise InvalidInputError(f"slider_lenses: expected at least 2 {lens_type.__name__} values, got {lenses!r}")
    if isinstance(choice, bool) or not isinstance(choice, int) or not 0 <= choice < len(lenses):
        raise InvalidInputError(f"slider_choice: expected an index in [0, {len(lenses) - 1}], got {choice!r}")
    return knob, tuple(lenses), choice


def _check_lenses(lenses) -> tuple[tuple[float, float, float], ...]:
    arr = points("lenses", lenses, 3)
    if len(arr) < 2:
        raise InvalidInputError(f"lenses: a slider path needs at least 2 lenses, got {len(arr)}")
    return tuple(tuple(float(x) + 0.0 for x in row) for row in arr)


@dataclass(frozen=True)
class SliderAnswer:
    """One slider answer for :meth:`ParticlePosterior.observe
    <visiontune.refraction.optics_model.ParticlePosterior.observe>`: the path's lenses (power
    vectors ``((M, J0, J45), ...)``, D, in knob order), the letter size ``s`` (logMAR), the
    index ``choice`` of the clearest lens and the choice ``model`` (module docstring)."""

    lenses: tuple[tuple[float, float, float], ...]
    s: float
    choice: int
    model: SliderModel = field(default_factory=SliderModel)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lenses", _check_lenses(self.lenses))
        object.__setattr__(self, "s", check_number("s", self.s, -1.0, 2.0))
        object.__setattr__(self, "choice", check_int("choice", self.choice, 0, len(self.lenses) - 1))
        if not isinstance(self.model, SliderModel):
            raise InvalidInputError(f"model: expected a SliderModel, got {type(self.model).__name__}")

    @property
    def batch_key(self) -> tuple:
        return ("slider", self.model)

    @property
    def column_priors(self) -> tuple[tuple[str, float, float], ...]:
        """The optional column the answer reads, ``(("log_noise", median, σ),)`` when the model
        infers ``τ``, else none (:meth:`ParticlePosterior.observe` adds it)."""
        m = self.model
        return (("log_noise", m.noise_logmar, m.noise_sigma),) if m.infers_noise else ()

    def log_likelihood(self, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``log P(choice | θ_i)`` per particle: ``(N,)``."""
        return SliderAnswer.batch_log_likelihood([self], theta, spec)

    def lapsed_log_likelihood(self, spec: OpticsModelSpec) -> float:
        """``log P(choice)`` of a lapsed patient, who picks a lens of the path at random: ``-log n``."""
        return -math.log(len(self.lenses))

    @staticmethod
    def batch_log_likelihood(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``Σ_m log P(choice_m | θ_i)`` over slider ``answers`` of one model: ``(N,)``. Every
        distinct lens is evaluated once, and the normaliser ``log Σ_k exp(-VA_k / τ)`` once per
        distinct path (a session turns the same knob through the same lens again and again);
        paths of different lengths are padded (a padded point has probability 0)."""
        model = answers[0].model
        path_of: dict = {}
        at = np.array([path_of.setdefault(a.lenses, len(path_of)) for a in answers])  # answer -> its path
        paths = list(path_of)
        sizes = np.array([len(a.lenses) for a in answers])
        flat = np.array([pv for path in paths for pv in path], dtype=float)
        unique, inverse = np.unique(flat, axis=0, return_inverse=True)
        va_unique = acuity_logmar(theta, unique)
        path_sizes = np.array([len(path) for path in paths])
        width = int(path_sizes.max())
        index = np.zeros((len(paths), width), dtype=int)
        valid = np.arange(width)[None, :] < path_sizes[:, None]
        index[valid] = inverse.reshape(-1)
        tau = slider_noise(theta, model)  # a float, or (N, 1) per particle
        z = -va_unique[:, index] / (tau[:, :, None] if model.infers_noise else tau)  # (N, paths, width)
        z = np.where(valid[None, :, :], z, -np.inf)
        log_norm = log_sum_exp_last(z)[:, :, 0]  # (N, paths)
        chosen = z[:, at, np.array([a.choice for a in answers])] - log_norm[:, at]  # (N, m)
        if model.lapse == 0.0:
            return chosen.sum(axis=1)
        p = (1.0 - model.lapse) * np.exp(chosen) + model.lapse / sizes[None, :]
        return np.log(p).sum(axis=1)


def simulated_slider_choice(patient, lenses, model: SliderModel, rng: np.random.Generator) -> int:
    """A simulated patient's slider answer: the index drawn from :func:`choice_probabilities` at
    the patient's true acuity along the path (``patient.acuity_logmar`` of each lens, a
    :class:`~visiontune.optics.SimulatedPatient`), from ``rng``; the patient's noise is
    ``model.noise_logmar`` (``noise_sigma`` is the model's uncertainty, not the patient's)."""
    rng = check_rng(rng)
    lens_rx = [PowerVector(*pv).to_prescription() for pv in _check_lenses(lenses)]
    va = np.asarray(patient.acuity_logmar(lens_rx), dtype=float).reshape(-1)
    p = choice_probabilities(va, model)
    return int(rng.choice(len(p), p=p / p.sum()))


# ---------------------------------------------------------------------------------- the knob to turn
def slider_value(
    particles: np.ndarray, lenses, model: SliderModel, weights: np.ndarray | None = None, criterion_columns=None
) -> float:
    """``tr Cov(P*) - Σ_j P(j) tr Cov(P* | j)`` (D²): the expected reduction of the posterior
    variance of the correction by the answer to the path ``lenses (n, 3)``, exact over its ``n``
    answers, for particles ``(N, d)`` with ``weights`` (default equal; normalised here); each
    particle's ``τ_i`` when ``model`` infers the noise (the particles then carry ``ln τ``).
    ``criterion_columns``: a function of the particles giving the columns whose variance is
    reduced instead of ``P*`` (the ``"evr-precision"`` units,
    :meth:`~visiontune.refraction.mixed_rules.PrecisionUnits.columns`)."""
    theta = np.asarray(particles, dtype=float)
    w = np.full(len(theta), 1.0 / len(theta)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(theta),) or not np.all(w >= 0) or not w.sum() > 0:
        raise InvalidInputError(f"weights: expected {len(theta)} non-negative weights, not all 0")
    w = w / w.sum()
    pv = theta[:, :3] if criterion_columns is None else criterion_columns(theta)
    sq = np.sum(pv**2, axis=1)
    now = float(w @ sq - np.sum((w @ pv) ** 2))
    like = w[:, None] * slider_probabilities(theta, lenses, model)  # (N, n): w_i P(j | θ_i)
    mass = np.maximum(like.sum(axis=0), 1e-300)
    mean = (like.T @ pv) / mass[:, None]
    after = float(np.sum(like.T @ sq - mass * np.sum(mean**2, axis=1)))
    return now - after


def _mutual_information_bits(particles: np.ndarray, lenses, model: SliderModel) -> float:
    p = slider_probabilities(particles, lenses, model)
    mean = p.mean(axis=0)
    return float(-np.sum(mean * np.log2(mean)) + np.mean(np.sum(p * np.log2(p), axis=1)))


@dataclass(frozen=True)
class SliderQuery:
    """The next slider question: the ``path`` of the knob, the letter size ``s_logmar``, its
    ``value`` (expected reduction of ``tr Cov(P*)``, D²), the mutual information between the
    answer and ``θ`` (bits) and every knob's value ``values`` (``((knob, D²), ...)``)."""

    path: KnobPath
    s_logmar: float
    value: float
    information_bits: float
    values: tuple[tuple[str, float], ...]

    @property
    def knob(self) -> str:
        return self.path.knob


def propose_slider(
    posterior: ParticlePosterior,
    *,
    rng: np.random.Generator,
    model: SliderModel | None = None,
    steps: LensSteps | None = None,
    knobs=KNOBS,
    half_ranges: dict | None = None,
    s_grid=None,
    size_offset_logmar: float = SIZE_OFFSET_LOGMAR,
    criterion_columns=None,
) -> SliderQuery:
    """The best knob to turn (module docstring): the paths of ``knobs`` through the current
    estimate rounded to a trial lens (``steps``, default :class:`LensSteps`; the sphere and
    cylinder knobs click in its ``step_d``, 0.25 D when continuous), each scored by
    :func:`slider_value` on a systematic subsample of the posterior (``rng``; with prior draws of
    ``τ`` from ``rng`` after it while the posterior has no ``ln τ`` column). ``half_ranges``:
    ``{knob: half-range}`` overriding :data:`DEFAULT_HALF_RANGES`. The letter size is the
    posterior mean of ``VA*`` plus ``size_offset_logmar``, the nearest of ``s_grid`` when given.
    A knob without a path (the axis without a cylinder) is skipped; when no knob has one,
    :class:`InvalidInputError`. ``criterion_columns``: as :func:`slider_value`."""
    rng = check_rng(rng)
    model = model or SliderModel()
    steps = steps or LensSteps()
    if not knobs or any(k not in KNOBS for k in knobs):
        raise InvalidInputError(f"knobs: expected some of {', '.join(KNOBS)}, got {knobs!r}")
    ranges = {**DEFAULT_HALF_RANGES, **(half_ranges or {})}
    particles = posterior.subsample(min(DECISION_PARTICLES, posterior.spec.n_particles), rng)
    particles = with_noise(particles, model, rng)
    centre = trial_lens(posterior.best_correction(), steps).to_minus_cylinder()
    step_d = steps.step_d if steps.step_d > 0 else DEFAULT_STEPS["sphere"]
    best, values = None, []
    for knob in knobs:
        if knob == "axis" and abs(centre.cylinder_d) < _MIN_AXIS_CYLINDER_D:
            continue
        path = knob_path(knob, centre, half_range=ranges[knob], step=None if knob == "axis" else step_d)
        v = slider_value(particles, path.lenses, model, criterion_columns=criterion_columns)
        values.append((knob, v))
        if best is None or v > best[0]:
            best = (v, path)
    if best is None:
        raise InvalidInputError(
            f"knobs: none of {', '.join(knobs)} has a path through {centre.format()} (the axis needs a cylinder)"
        )
    value, path = best
    s = float(particles[:, VA0].mean()) + check_number("size_offset_logmar", size_offset_logmar, -0.5, 1.0)
    if s_grid is not None:
        grid = np.asarray(s_grid, dtype=float).reshape(-1)
        s = float(grid[int(np.argmin(np.abs(grid - s)))])
    info = _mutual_information_bits(particles, path.lenses, model)
    return SliderQuery(path, s, float(value), info, tuple(values))
