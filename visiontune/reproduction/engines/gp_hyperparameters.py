"""The GP refraction model of Fauvel & Chalk (contextual BO) §5.2: its kernel and the fitted hyperparameters.

**Kernel and its hyperparameters** (Fauvel & Chalk (contextual BO), §5.2, Eq. 15). Model inputs are ``(s, S, C)``:
letter size (logMAR), sphere and cylinder (diopters) at a fixed axis, with

    k((s, x), (s', x')) = θ s s' + σ² exp(-½ Σ_i (x_i - x'_i)² / ℓ_i²)

As in the paper, the hyperparameters ``(θ, ℓ_S, ℓ_C, σ²)`` are fit once by type-II maximum
likelihood (Laplace evidence, R&W Eq. 3.32) on the answers of a simulated patient to
``N_FIT = 1000`` random queries (``s`` uniform in the context box ``[-1, 2]`` logMAR, ``x``
uniform in the search box ``[-4, 4]²`` D, the patient's true correction drawn from the fixed
seed :data:`FIT_SEED`), then held fixed. Values for the paper's slopes ``linspace(1, 8, 8)``
and ``n`` = 26 and 10 alternatives ship in ``visiontune/data/refraction_hyperparameters.json``
(regenerate with ``python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate``); any other slope or
box is fit on the fly and cached in memory.

**Where they are used.** A GP protocol (``[model] type = "gp"``) gives the hyperparameters
explicitly or asks for this fit (``fit = "simulation"``,
:func:`visiontune.reproduction.engines.gp_engine.gp_kernel`); the refraction experiment
(:func:`visiontune.reproduction.gp_refraction_run.run_refraction`) writes the fit of its slope, or its named
variant's values, into the paper's protocol and runs it through the one trial loop, where the
probit GP is refit from scratch on the trial log after every answer with these values held fixed.

Reference context ``s0`` (the letter size at which the x-rule and the estimate are evaluated):
the paper does not state it for the refraction task. Default ``s0 = 0`` logMAR (20/20), the
best-corrected acuity of the paper's patient (Fauvel & Chalk (contextual BO), §5.1), where ``f(0, x) = b(x)`` is the
acuity term of Eq. 14 alone and the linear term ``θ s s'`` vanishes; the session engine uses
the same value. Measured (UCB-ALD, slope 5, 26 letters, 260 trials, seeds 0-9, shipped
hyperparameters; mean final VA ± s.e.m., logMAR): ``s0 = 0``: 0.187 ± 0.057; ``s0 = 0.5``
(mid-point of the context box, the authors' benchmark convention): 0.329 ± 0.063;
``s0 = 1.0``: 0.150 ± 0.055. The mid-point is clearly worse; 0 and 1 are within noise of each
other, and none reaches the paper's 0.025: runs stall (at a box corner or in the ``M = 0``
valley) once the first failed answers pull the long-lengthscale (ℓ ≈ 5 D) SE part down
everywhere but the region already sampled. (Those numbers were measured with the standalone
loop the experiment ran before the one trial loop, docs/results/refraction-investigation.md.)

**Named variants** (VisionTune, not in the papers; docs/results/refraction-investigation.md): the
cause is the fitted lengthscales (5-10 D), far too long for the acuity peak at ``x*``.
``UCB-ALD-SL`` runs UCB-ALD with both SE lengthscales at 2 D (θ, σ² as fit): mean final VA
0.036 ± 0.011 logMAR at slope 5 (10 seeds) against 0.172 ± 0.055 for UCB-ALD. ``UCB-ALD-PV`` ran
it on the SE kernel in power-vector coordinates with its own fit (0.363 ± 0.062: no better).
``TS-ALD-SL`` is TS-ALD with the same 2 D lengthscales (0.021 ± 0.005 at slope 5, 20 repetitions).
:data:`FIXED_POLICIES` maps each name to ``(registered policy, kernel variant)``. The one trial
loop's GP engine has the paper's kernel only (:data:`visiontune.refraction.policies.GP_KERNELS`),
so the ``-SL`` rules run through it (the same kernel with other values) and ``UCB-ALD-PV`` does
not; its fitted values stay here, with their regeneration.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from visiontune._validate import check_box, check_int, positive
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.optics import CONTEXT_BOX, SEARCH_BOX, Prescription, SimulatedPatient
from visiontune.reproduction.gp import Kernel, ProbitGP, fit_hyperparameters, refraction_kernel
from visiontune.reproduction.gp.transformed import refraction_power_vector_kernel

__all__ = [
    "DEFAULT_REFERENCE_LOGMAR",
    "FITTED_KERNEL_VARIANTS",
    "FIT_SEED",
    "FIXED_POLICIES",
    "KERNEL_POWER_VECTOR",
    "KERNEL_SE",
    "KERNEL_SHORT_LENGTHSCALE",
    "KERNEL_VARIANTS",
    "N_FIT",
    "SHORT_LENGTHSCALE_D",
    "STORED_ALTERNATIVES",
    "STORED_SLOPES",
    "TS_ALD_SL",
    "UCB_ALD_PV",
    "UCB_ALD_SL",
    "RefractionHyperparameters",
    "fit_power_vector_hyperparameters",
    "fit_refraction_hyperparameters",
    "fitted_refraction_kernel",
    "kernel_variant_hyperparameters",
    "refraction_hyperparameters",
    "refraction_kernel_variant",
    "regenerate",
    "short_lengthscale_hyperparameters",
    "simulate_fit_data",
    "stored_hyperparameters",
]

#: Number of simulated answers the hyperparameters are fit on (Fauvel & Chalk (contextual BO), §5.2).
N_FIT = 1000
#: Seed of the fitting data (true correction, queries, answers, optimiser starts).
FIT_SEED = 20_210
#: Slopes (logMAR⁻¹) and numbers of alternatives whose fitted values ship as package data.
STORED_SLOPES = tuple(float(a) for a in np.linspace(1.0, 8.0, 8))
STORED_ALTERNATIVES = (26, 10)
#: Default reference letter size s0 (logMAR): 20/20 (module docstring).
DEFAULT_REFERENCE_LOGMAR = 0.0

_DATA_FILE = "refraction_hyperparameters.json"
_DEFAULT_SEARCH = SEARCH_BOX.bounds()
_DEFAULT_CONTEXT = CONTEXT_BOX.bounds()


# ======================================================================================
# Hyperparameters
# ======================================================================================


@dataclass(frozen=True)
class RefractionHyperparameters:
    """Fitted hyperparameters of ``θ s s' + k_SE`` (Fauvel & Chalk (contextual BO), Eq. 15) for one patient model.

    ``theta``: linear variance of ``s`` (logMAR⁻²); ``lengthscales``: ``(ℓ_S, ℓ_C)`` diopters;
    ``variance``: SE output variance; ``log_marginal_likelihood``: Laplace evidence at the fit
    (nats); ``slope`` (logMAR⁻¹) and ``n_alternatives`` of the simulated patient; ``n_answers``
    and ``seed`` of the fitting data.
    """

    slope: float
    n_alternatives: int
    theta: float
    lengthscales: tuple[float, float]
    variance: float
    log_marginal_likelihood: float
    n_answers: int = N_FIT
    seed: int = FIT_SEED

    def kernel(self) -> Kernel:
        """The refraction kernel with these values (:func:`visiontune.reproduction.gp.refraction_kernel`)."""
        return refraction_kernel(self.theta, np.array(self.lengthscales), self.variance)

    def to_dict(self) -> dict:
        return {
            "slope": self.slope,
            "n_alternatives": self.n_alternatives,
            "theta": self.theta,
            "lengthscales": list(self.lengthscales),
            "variance": self.variance,
            "log_marginal_likelihood": self.log_marginal_likelihood,
            "n_answers": self.n_answers,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, d: dict) -> RefractionHyperparameters:
        try:
            return cls(
                float(d["slope"]),
                int(d["n_alternatives"]),
                float(d["theta"]),
                (float(d["lengthscales"][0]), float(d["lengthscales"][1])),
                float(d["variance"]),
                float(d["log_marginal_likelihood"]),
                int(d["n_answers"]),
                int(d["seed"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ConfigurationError(f"{_DATA_FILE}: malformed entry {d!r} ({exc})") from None


def _check_slope(slope) -> float:
    a = positive("slope", slope)
    if a.ndim:
        raise InvalidInputError(f"slope: expected one number (logMAR^-1), got shape {a.shape}")
    return float(a)


def _check_alternatives(n_alternatives) -> int:
    return check_int("n_alternatives", n_alternatives, lo=2)


def simulate_fit_data(
    slope: float, n_alternatives: int = 26, *, n: int = N_FIT, seed: int = FIT_SEED, search_box=None, context_box=None
):
    """The fitting data of Fauvel & Chalk (contextual BO), §5.2: ``(X (n, 3), y (n,), true_rx)``.

    ``X`` rows ``(s, S, C)`` with ``s`` uniform in ``context_box`` (default ``[-1, 2]`` logMAR)
    and ``(S, C)`` uniform in ``search_box`` (default ``[-4, 4]²`` D); ``y`` the answers (1 =
    letter read) of a :class:`SimulatedPatient` (VA* = 0, no lapse) whose correction is uniform
    in the search box. One ``SeedSequence(seed)`` spawns the streams of the correction, the
    queries and the answers.
    """
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    check_int("n", n, lo=1)
    sbox = check_box("search_box", _DEFAULT_SEARCH if search_box is None else search_box, 2, strict=True)
    cbox = check_box("context_box", _DEFAULT_CONTEXT if context_box is None else context_box, 1, strict=True)
    rx_seq, query_seq, patient_seq = np.random.SeedSequence(seed).spawn(3)
    rx_rng = np.random.default_rng(rx_seq)
    sphere, cylinder = rx_rng.uniform(sbox[:, 0], sbox[:, 1])
    true_rx = Prescription(float(sphere), float(cylinder), 180.0)
    q = np.random.default_rng(query_seq)
    s = q.uniform(cbox[0, 0], cbox[0, 1], size=n)
    x = q.uniform(sbox[:, 0], sbox[:, 1], size=(n, 2))
    patient = SimulatedPatient(true_rx, 0.0, slope, n_alternatives, 0.0, seed=np.random.default_rng(patient_seq))
    y = patient.answers(s, x).astype(float)
    return np.column_stack([s, x]), y, true_rx


def fit_refraction_hyperparameters(
    slope: float,
    n_alternatives: int = 26,
    *,
    n: int = N_FIT,
    seed: int = FIT_SEED,
    search_box=None,
    context_box=None,
    n_starts: int = 3,
) -> RefractionHyperparameters:
    """Maximum-likelihood ``(θ, ℓ_S, ℓ_C, σ²)`` on :func:`simulate_fit_data` (Fauvel & Chalk (contextual BO), §5.2).

    ``argmax log q(y | X, θ)`` (Laplace evidence, R&W Eq. 3.32) by multistart L-BFGS-B
    (:func:`visiontune.reproduction.gp.fit_hyperparameters`), the first start at ``θ = 1, ℓ = 2 D, σ² = 1``.
    Takes about 10-30 s for ``n = 1000``.
    """
    start = refraction_kernel(1.0, np.array([2.0, 2.0]), 1.0)
    return _fit_from(
        start, slope, n_alternatives, n=n, seed=seed, search_box=search_box, context_box=context_box, n_starts=n_starts
    )


def _fit_from(
    start, slope: float, n_alternatives: int, *, n: int, seed: int, search_box=None, context_box=None, n_starts: int
) -> RefractionHyperparameters:
    """Maximum-likelihood hyperparameters of the kernel ``start`` (``θ s s' + k_SE`` on some input
    map, parameters as :func:`_unpack` reads them) on :func:`simulate_fit_data`, from ``start``."""
    X, y, _ = simulate_fit_data(slope, n_alternatives, n=n, seed=seed, search_box=search_box, context_box=context_box)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[3])
    fitted = fit_hyperparameters(start, X, y, inference="laplace", n_starts=n_starts, rng=rng)
    lml = ProbitGP(fitted, X, y).log_marginal_likelihood()
    theta, lengthscales, variance = _unpack(fitted)
    return RefractionHyperparameters(
        float(slope), int(n_alternatives), theta, lengthscales, variance, float(lml), int(n), int(seed)
    )


def _unpack(kernel) -> tuple[float, tuple[float, float], float]:
    """``(θ, (ℓ_S, ℓ_C), σ²)`` of a :func:`refraction_kernel`, whose free log-parameters are
    ``k0.variance`` (θ), ``k1.lengthscales[0..1]`` and ``k1.variance``, in that order."""
    expected = ["k0.variance", "k1.lengthscales[0]", "k1.lengthscales[1]", "k1.variance"]
    if list(kernel.param_names) != expected:
        raise ConfigurationError(f"refraction kernel: expected parameters {expected}, got {kernel.param_names}")
    values = np.exp(kernel.params)
    return float(values[0]), (float(values[1]), float(values[2])), float(values[3])


def stored_hyperparameters() -> dict[tuple[float, int], RefractionHyperparameters]:
    """The shipped fits, by ``(slope, n_alternatives)``; empty if the data file is missing."""
    return _stored()


@functools.lru_cache(maxsize=1)
def _data_document() -> dict:
    """The parsed package data file (``{}`` if it is missing); ConfigurationError if unreadable."""
    try:
        text = resources.files("visiontune").joinpath("data", _DATA_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        return {}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{_DATA_FILE}: unreadable ({exc})") from None
    if not isinstance(doc, dict):
        raise ConfigurationError(f"{_DATA_FILE}: unreadable (expected a JSON object, got {type(doc).__name__})")
    return doc


def _stored_entries(key: str) -> dict[tuple[float, int], RefractionHyperparameters]:
    """The fits stored under ``key`` of the data file, by ``(slope rounded to 1e-9, n_alternatives)``."""
    entries = _data_document().get(key, [])
    if not isinstance(entries, list):
        raise ConfigurationError(f"{_DATA_FILE}: unreadable ({key!r} is not a list)")
    out = {}
    for d in entries:
        hp = RefractionHyperparameters.from_dict(d)
        out[(round(hp.slope, 9), hp.n_alternatives)] = hp
    return out


def _stored() -> dict[tuple[float, int], RefractionHyperparameters]:
    return _stored_entries("entries")


@functools.lru_cache(maxsize=64)
def _fit_cached(slope: float, n_alternatives: int, search: tuple, context: tuple) -> RefractionHyperparameters:
    return fit_refraction_hyperparameters(
        slope, n_alternatives, search_box=np.array(search).reshape(2, 2), context_box=np.array(context).reshape(1, 2)
    )


def refraction_hyperparameters(
    slope: float, n_alternatives: int = 26, *, search_box=None, context_box=None
) -> RefractionHyperparameters:
    """Hyperparameters for a patient model: the shipped fit for the paper's boxes and a stored
    ``(slope, n_alternatives)``; otherwise fit on the fly (10-30 s) and cached in memory."""
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    sbox = check_box("search_box", _DEFAULT_SEARCH if search_box is None else search_box, 2, strict=True)
    cbox = check_box("context_box", _DEFAULT_CONTEXT if context_box is None else context_box, 1, strict=True)
    if np.array_equal(sbox, _DEFAULT_SEARCH) and np.array_equal(cbox, _DEFAULT_CONTEXT):
        hp = _stored().get((round(slope, 9), n_alternatives))
        if hp is not None:
            return hp
    return _fit_cached(slope, n_alternatives, tuple(sbox.ravel().tolist()), tuple(cbox.ravel().tolist()))


def fitted_refraction_kernel(*, slope: float, n_alternatives: int = 26, search_box=None, context_box=None) -> Kernel:
    """The refraction kernel (Fauvel & Chalk (contextual BO), Eq. 15) with hyperparameters from
    :func:`refraction_hyperparameters`."""
    return refraction_hyperparameters(slope, n_alternatives, search_box=search_box, context_box=context_box).kernel()


def regenerate(
    path: str | Path | None = None,
    *,
    slopes=STORED_SLOPES,
    alternatives=STORED_ALTERNATIVES,
    progress: Callable[[str], None] | None = None,
    kernels=None,
) -> Path:
    """Refit every ``(slope, n_alternatives)`` and write the package data file (JSON).

    ``kernels``: the variants to refit (:data:`FITTED_KERNEL_VARIANTS`; default both): ``"refraction-se"``
    fills ``entries`` (:func:`fit_refraction_hyperparameters`), ``"refraction-power-vector-se"``
    fills ``power_vector_entries`` (:func:`fit_power_vector_hyperparameters`). A section not refit
    is copied from the file already at ``path`` (if any), so one variant can be refit alone.
    """
    path = Path(path) if path is not None else Path(__file__).resolve().parent.parent / "data" / _DATA_FILE
    kernels = FITTED_KERNEL_VARIANTS if kernels is None else tuple(_check_kernel_variant(k) for k in kernels)
    if any(k not in FITTED_KERNEL_VARIANTS for k in kernels):
        raise InvalidInputError(f"kernels: only {FITTED_KERNEL_VARIANTS} are fit and shipped, got {kernels}")
    try:
        old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, json.JSONDecodeError):
        old = {}
    fitters = {
        KERNEL_SE: ("entries", fit_refraction_hyperparameters),
        KERNEL_POWER_VECTOR: (_PV_KEY, fit_power_vector_hyperparameters),
    }
    sections = {key: list(old.get(key, [])) if isinstance(old, dict) else [] for key, _ in fitters.values()}
    for variant in kernels:
        key, fit = fitters[variant]
        entries = []
        for n_alt in alternatives:
            for a in slopes:
                hp = fit(float(a), int(n_alt))
                entries.append(hp.to_dict())
                if progress is not None:
                    progress(
                        f"{variant}: slope {a:g}, n = {n_alt}: theta {hp.theta:.4g}, lengthscales "
                        f"{hp.lengthscales[0]:.4g} {hp.lengthscales[1]:.4g}, variance {hp.variance:.4g}"
                    )
        sections[key] = entries
    doc = {
        "description": "Maximum-likelihood hyperparameters of theta*s*s' + k_SE((S,C),(S',C')) "
        "(Fauvel & Chalk (contextual BO) Eq. 15, "
        "§5.2) fit on 1000 simulated answers; regenerate with "
        "python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate",
        "search_box": _DEFAULT_SEARCH.tolist(),
        "context_box": _DEFAULT_CONTEXT.tolist(),
        "inference": "laplace",
        "entries": sections["entries"],
        "power_vector_description": "VisionTune variant (not in the papers): maximum-likelihood hyperparameters of "
        "theta*s*s' + k_SE((M, C/2), (M', C'/2)), M = S + C/2, on the same 1000 simulated "
        "answers; lengthscales are (l_M, l_J) in diopters; fit with "
        "visiontune.reproduction.engines.gp_hyperparameters.fit_power_vector_hyperparameters; regenerate with "
        "python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate --kernel "
        "refraction-power-vector-se",
        _PV_KEY: sections[_PV_KEY],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    _data_document.cache_clear()
    return path


# ======================================================================================

# ======================================================================================
KERNEL_SE = "refraction-se"
#: ``θ s s' + k_SE((M, C/2), (M', C'/2))``: the SE part in power-vector coordinates, where the
#: blur of Fauvel & Chalk (contextual BO), Eq. 12 is isotropic
#: (:func:`visiontune.reproduction.gp.transformed.refraction_power_vector_kernel`).
KERNEL_POWER_VECTOR = "refraction-power-vector-se"
#: ``θ s s' + k_SE((S, C), (S', C'))`` with both SE lengthscales fixed at :data:`SHORT_LENGTHSCALE_D`
#: and ``θ``, ``σ²`` of the paper's fit: the configuration that ended the stall in
#: docs/results/refraction-investigation.md (hypothesis H3, the fitted lengthscales are too long).
KERNEL_SHORT_LENGTHSCALE = "refraction-se-short-lengthscale"
#: SE lengthscale (diopters) of :data:`KERNEL_SHORT_LENGTHSCALE`.
SHORT_LENGTHSCALE_D = 2.0
KERNEL_VARIANTS = (KERNEL_SE, KERNEL_POWER_VECTOR, KERNEL_SHORT_LENGTHSCALE)
#: Variants whose hyperparameters are fit by maximum likelihood and shipped (regenerate).
FITTED_KERNEL_VARIANTS = (KERNEL_SE, KERNEL_POWER_VECTOR)
#: UCB-ALD on the power-vector kernel (VisionTune variant for the ``M = 0`` valley,
#: docs/results/refraction-investigation.md).
UCB_ALD_PV = "UCB-ALD-PV"
#: UCB-ALD on the paper's kernel with 2 D SE lengthscales (VisionTune fix of the stall,
#: docs/results/refraction-investigation.md).
UCB_ALD_SL = "UCB-ALD-SL"
#: TS-ALD with the same 2 D SE lengthscales (does the fix carry over to Thompson sampling?).
TS_ALD_SL = "TS-ALD-SL"
#: Named refraction policies beyond the paper: name -> (registered policy, kernel variant).
#: Each has hyperparameters for every stored slope and number of alternatives without a fit.
FIXED_POLICIES: dict[str, tuple[str, str]] = {
    UCB_ALD_PV: ("UCB-ALD", KERNEL_POWER_VECTOR),
    UCB_ALD_SL: ("UCB-ALD", KERNEL_SHORT_LENGTHSCALE),
    TS_ALD_SL: ("TS-ALD", KERNEL_SHORT_LENGTHSCALE),
}
_PV_KEY = "power_vector_entries"


def _check_kernel_variant(kernel) -> str:
    if kernel not in KERNEL_VARIANTS:
        raise InvalidInputError(f"kernel: expected one of {KERNEL_VARIANTS}, got {kernel!r}")
    return kernel


def fit_power_vector_hyperparameters(
    slope: float, n_alternatives: int = 26, *, n: int = N_FIT, seed: int = FIT_SEED, n_starts: int = 3
) -> RefractionHyperparameters:
    """Maximum-likelihood ``(θ, ℓ_M, ℓ_J, σ²)`` of the power-vector kernel on the same simulated
    answers as :func:`fit_refraction_hyperparameters` (Fauvel & Chalk (contextual BO), §5.2 protocol; Laplace evidence,
    R&W Eq. 3.32). ``lengthscales`` of the result are ``(ℓ_M, ℓ_J)`` in diopters."""
    start = refraction_power_vector_kernel(1.0, np.array([2.0, 2.0]), 1.0)
    return _fit_from(start, slope, n_alternatives, n=n, seed=seed, n_starts=n_starts)


def _stored_power_vector() -> dict[tuple[float, int], RefractionHyperparameters]:
    return _stored_entries(_PV_KEY)


@functools.lru_cache(maxsize=64)
def _fit_power_vector_cached(slope: float, n_alternatives: int) -> RefractionHyperparameters:
    return fit_power_vector_hyperparameters(slope, n_alternatives)


def kernel_variant_hyperparameters(kernel: str, slope: float, n_alternatives: int = 26) -> RefractionHyperparameters:
    """Hyperparameters of a kernel variant (paper's boxes): for ``"refraction-se"`` those of
    :func:`refraction_hyperparameters`; for ``"refraction-power-vector-se"`` the shipped fit
    (JSON key ``power_vector_entries``) or a fit on the fly (about a minute), cached in memory;
    for ``"refraction-se-short-lengthscale"`` the paper's fit with ``ℓ_S = ℓ_C = 2 D``
    (:func:`short_lengthscale_hyperparameters`)."""
    variant = _check_kernel_variant(kernel)
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    if variant == KERNEL_SE:
        return refraction_hyperparameters(slope, n_alternatives)
    if variant == KERNEL_SHORT_LENGTHSCALE:
        return short_lengthscale_hyperparameters(slope, n_alternatives)
    hp = _stored_power_vector().get((round(slope, 9), n_alternatives))
    return hp if hp is not None else _fit_power_vector_cached(slope, n_alternatives)


@functools.lru_cache(maxsize=64)
def _short_lengthscale_cached(slope: float, n_alternatives: int) -> RefractionHyperparameters:
    hp = refraction_hyperparameters(slope, n_alternatives)
    ls = (SHORT_LENGTHSCALE_D, SHORT_LENGTHSCALE_D)
    X, y, _ = simulate_fit_data(slope, n_alternatives, n=hp.n_answers, seed=hp.seed)
    lml = ProbitGP(refraction_kernel(hp.theta, np.array(ls), hp.variance), X, y).log_marginal_likelihood()
    return RefractionHyperparameters(
        hp.slope, hp.n_alternatives, hp.theta, ls, hp.variance, float(lml), hp.n_answers, hp.seed
    )


def short_lengthscale_hyperparameters(slope: float, n_alternatives: int = 26) -> RefractionHyperparameters:
    """``(θ, σ²)`` of the paper's maximum-likelihood fit (:func:`refraction_hyperparameters`, Fauvel & Chalk (contextual
    BO), §5.2) with both SE lengthscales set to :data:`SHORT_LENGTHSCALE_D` (2 D) instead of the fitted 5-10 D;
    ``log_marginal_likelihood`` is the Laplace evidence (R&W Eq. 3.32) of these values on the same
    fitting data (lower than the fit's: the evidence of 1000 random answers prefers the long
    lengthscales that make runs stall, docs/results/refraction-investigation.md). Cached in memory."""
    slope, n_alternatives = _check_slope(slope), _check_alternatives(n_alternatives)
    return _short_lengthscale_cached(slope, n_alternatives)


def _variant_kernel(variant: str, hp: RefractionHyperparameters) -> Kernel:
    if variant in (KERNEL_SE, KERNEL_SHORT_LENGTHSCALE):
        return hp.kernel()

    return refraction_power_vector_kernel(hp.theta, np.array(hp.lengthscales), hp.variance)


def refraction_kernel_variant(kernel: str, *, slope: float, n_alternatives: int = 26) -> Kernel:
    """The fitted kernel of a variant (:data:`KERNEL_VARIANTS`) for a patient model."""
    variant = _check_kernel_variant(kernel)
    return _variant_kernel(variant, kernel_variant_hyperparameters(variant, slope, n_alternatives))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m visiontune.reproduction.engines.gp_hyperparameters",
        description="Refit the shipped refraction hyperparameters (Fauvel & Chalk (contextual BO), §5.2).",
    )
    parser.add_argument("--regenerate", action="store_true", help="refit every stored slope and write the data file")
    parser.add_argument("--output", default=None, help="write to this path instead of the package data file")
    parser.add_argument(
        "--kernel",
        action="append",
        choices=FITTED_KERNEL_VARIANTS,
        default=None,
        help="refit only this kernel variant (repeatable; default: every variant)",
    )
    args = parser.parse_args(argv)
    if not args.regenerate:
        parser.print_help()
        return 0
    path = regenerate(args.output, kernels=args.kernel, progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
