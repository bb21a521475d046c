"""Simulated presbyopes for the near addition: who answers near letters, and a population of them.

A :class:`NearCase` is one eye of a SIMULATED patient at near: age, the objective amplitude of
accommodation ``A`` (D), half the depth of focus ``h`` (D; the defocus tolerated on either side),
the near acuity through a focused image ``VA*`` (logMAR), the psychometric slope and lapse, the
acuity model, and the residual error of the distance correction it looks through
(``r = P(final) - P(true)``, power vectors ``(M, J0, J45)``, D). Through the distance correction plus
an add ``a`` at demand ``D`` the spherical error at the target is ``m = r_M + a - D``; the eye
accommodates up to ``A`` to cancel a hyperopic ``m < 0`` and tolerates ``h`` either side::

    m_eff = min(m + A + h, 0)   if m < 0          m_eff = max(m - h, 0)   otherwise
    blur  = √(m_eff² + r_J0² + r_J45²)

and the acuity is the case's acuity model at that blur (:mod:`visiontune.optics.acuity`), the
answer the psychometric function of :mod:`visiontune.optics.psychometric`. Its near-usable
amplitude is ``U = A + h`` and its **true add** the reserve rule on it,
``round_0.25(max(D - U/2, 0))`` (:func:`~visiontune.refraction.near_add.add_by_reserve_rule`).

The population (:func:`draw_near_patients`): ages uniform on [40, 80] years; ``A`` triangular between
Hofstetter's (1950) minimum and maximum lines with the mode on the mean line (each clipped at 0);
``h`` uniform on [0.15, 0.45] D (half of a 0.3-0.9 D total depth of focus, Wang & Ciuffreda 2006,
Surv. Ophthalmol. 51:75-85; the range assumed); ``VA*`` normal (mean 0.0, SD 0.08) clipped to
[-0.2, 0.4] logMAR; slope uniform on [3, 7] logMAR⁻¹; lapse uniform on [0, 0.05]; the distance
correction's residual ``r_M ~ N(0, 0.15²)``, ``r_J0, r_J45 ~ N(0, 0.07²)`` per eye (a refraction
within about a quarter diopter, assumed); acuity model Blendowske's, or a mix of the three
published ones (``mixed_acuity=True``). The two eyes share ``A``, ``h`` (accommodation is
yoked, Hering's law of equal innervation) and differ in their residual and answers. Every draw
takes a seed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import HOFSTETTER
from visiontune.optics.acuity import ACUITY_MODELS, acuity_model_by_name
from visiontune.optics.psychometric import PsychometricFunction
from visiontune.refraction.near_add import add_by_reserve_rule

__all__ = ["NEAR_KEY", "NearCase", "draw_near_patients", "near_case_for_visit"]

NEAR_KEY = 0x4EA2
#: Sloan letters the near chart shows.
NEAR_LETTERS = "CDHKNORSVZ"


@dataclass(frozen=True)
class NearCase:
    """One eye of a simulated presbyope at near (module docstring). ``seed``: the answer seed;
    ``eye_index``: 0 for OD, 1 for OS (keys the answers' random numbers)."""

    age_years: float
    amplitude_d: float
    half_depth_of_focus_d: float
    va_star_logmar: float
    slope: float
    lapse: float
    acuity_model: str
    residual_d: tuple[float, float, float]
    seed: int
    eye_index: int = 0

    def __post_init__(self) -> None:
        for name in ("age_years", "amplitude_d", "half_depth_of_focus_d", "va_star_logmar", "slope", "lapse"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InvalidInputError(f"NearCase.{name}: expected a finite number, got {v!r}")
        if self.amplitude_d < 0 or self.half_depth_of_focus_d < 0:
            raise InvalidInputError("NearCase: amplitude_d and half_depth_of_focus_d are >= 0 D")
        if self.acuity_model not in ACUITY_MODELS:
            raise InvalidInputError(
                f"NearCase.acuity_model: expected one of {tuple(ACUITY_MODELS)}, got {self.acuity_model!r}"
            )
        r = tuple(float(x) for x in self.residual_d)
        if len(r) != 3 or not all(math.isfinite(x) for x in r):
            raise InvalidInputError(
                f"NearCase.residual_d: expected (M, J0, J45) finite diopters, got {self.residual_d!r}"
            )
        object.__setattr__(self, "residual_d", r)

    @property
    def usable_amplitude_d(self) -> float:
        """``U = A + h`` (D)."""
        return self.amplitude_d + self.half_depth_of_focus_d

    def true_add(self, demand_d: float) -> float:
        """The reserve rule on ``U``, rounded to 0.25 D."""
        return add_by_reserve_rule(demand_d, self.usable_amplitude_d)

    def blur_d(self, add_d, demand_d):
        """Blur (D) through the distance correction plus ``add_d`` at ``demand_d`` (module docstring)."""
        m = self.residual_d[0] + np.asarray(add_d, dtype=float) - float(demand_d)
        a, h = self.amplitude_d, self.half_depth_of_focus_d
        m_eff = np.where(m < 0, np.minimum(m + a + h, 0.0), np.maximum(m - h, 0.0))
        b = np.sqrt(m_eff**2 + self.residual_d[1] ** 2 + self.residual_d[2] ** 2)
        return float(b) if b.ndim == 0 else b

    def acuity_logmar(self, add_d, demand_d):
        """Near acuity (logMAR) through the add."""
        return acuity_model_by_name(self.acuity_model, self.va_star_logmar)(self.blur_d(add_d, demand_d))

    def probability_correct(self, size_logmar, add_d, demand_d):
        psy = PsychometricFunction(self.slope, len(NEAR_LETTERS), self.lapse)
        return psy.probability_correct(size_logmar, self.acuity_logmar(add_d, demand_d))

    def answer(self, index: int, add_d: float, size_logmar: float, demand_d: float) -> tuple[str, bool]:
        """``(letter shown, named right)`` of near question ``index``: one letter and one uniform from
        ``default_rng([seed, eye_index, index, NEAR_KEY])`` (the same answer on a resume)."""
        rng = np.random.default_rng([int(self.seed), int(self.eye_index), int(index), NEAR_KEY])
        letter = NEAR_LETTERS[int(rng.integers(len(NEAR_LETTERS)))]
        return letter, bool(rng.random() < self.probability_correct(size_logmar, add_d, demand_d))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["residual_d"] = list(self.residual_d)
        d["simulated"] = "SIMULATED"
        return d

    @classmethod
    def from_dict(cls, data: dict) -> NearCase:
        if not isinstance(data, dict):
            raise InvalidInputError(f"near case: expected a mapping, got {type(data).__name__}")
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        try:
            return cls(**fields)
        except TypeError as exc:
            raise InvalidInputError(f"near case: {exc}") from None


def _triangular_amplitude(rng: np.random.Generator, age: float) -> float:
    lo, mode, hi = (max(c - s * age, 0.0) for c, s in (HOFSTETTER[k] for k in ("minimum", "mean", "maximum")))
    if hi <= lo:
        return float(lo)
    return float(rng.triangular(lo, min(max(mode, lo), hi), hi))


def draw_near_patients(
    n: int, seed: int, *, ages=(40.0, 80.0), mixed_acuity: bool = False, amplitude_shift_d: float = 0.0
) -> list[tuple[NearCase, NearCase]]:
    """``n`` simulated presbyopes, each ``(OD, OS)`` (module docstring). ``amplitude_shift_d``
    moves every amplitude (then clipped at 0): a population that is not Hofstetter's."""
    if int(n) < 1:
        raise InvalidInputError(f"n: expected at least 1 patient, got {n!r}")
    rng = np.random.default_rng([int(seed), NEAR_KEY])
    models = tuple(ACUITY_MODELS) if mixed_acuity else ("blendowske",)
    out = []
    for _ in range(int(n)):
        age = float(rng.uniform(*ages))
        amp = max(_triangular_amplitude(rng, age) + float(amplitude_shift_d), 0.0)
        h = float(rng.uniform(0.15, 0.45))
        va = float(np.clip(rng.normal(0.0, 0.08), -0.2, 0.4))
        slope = float(rng.uniform(3.0, 7.0))
        lapse = float(rng.uniform(0.0, 0.05))
        model = models[int(rng.integers(len(models)))]
        eyes = []
        for k in range(2):
            r = (float(rng.normal(0, 0.15)), float(rng.normal(0, 0.07)), float(rng.normal(0, 0.07)))
            eyes.append(NearCase(age, amp, h, va, slope, lapse, model, r, int(rng.integers(2**31 - 1)), k))
        out.append((eyes[0], eyes[1]))
    return out


def near_case_for_visit(case, eye_index: int, residual_d, visit_seed: int) -> NearCase:
    """The near side of a visit's simulated eye ``case`` (a
    :class:`~visiontune.refraction.population.PatientCase`): its age, amplitude
    (``case.accommodation_d``), best acuity (as the near ``VA*``), slope, lapse and acuity model
    (pupil-geometric at its default pupil), with a half depth of focus drawn from ``visit_seed``
    (uniform on [0.15, 0.45] D, shared by both eyes) and ``residual_d`` the residual of the final
    distance prescription."""
    if case.age_years is None:
        raise InvalidInputError("near addition: the simulated patient has no age")
    rng = np.random.default_rng([int(visit_seed), NEAR_KEY])
    h = float(rng.uniform(0.15, 0.45))
    answer_seed = int(np.random.default_rng([int(case.seed), NEAR_KEY, int(eye_index)]).integers(2**31 - 1))
    return NearCase(
        float(case.age_years),
        float(case.accommodation_d),
        h,
        float(case.best_corrected_logmar),
        float(case.slope),
        float(case.lapse),
        case.acuity_model,
        tuple(float(x) for x in residual_d),
        answer_seed,
        int(eye_index),
    )
