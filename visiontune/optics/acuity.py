"""Acuity as a function of dioptric blur: a pluggable model (docs/design.md, "Acuity model").

An :class:`AcuityModel` is any callable mapping blur (diopters, array) to visual acuity
(logMAR, same shape). The default, :class:`BlendowskeAcuity`, implements Blendowske (2015,
*Unaided visual acuity and blur*, Optom. Vis. Sci. 92:e121) as cited by Fauvel & Chalk (contextual BO) §5.1::

    MAR(β) = MAR* · (1 + β²)   =>   VA(x) = VA(x*) + log10(1 + β²)   (logMAR)

The paper prints ``VA(x) - VA(x*) = 1 + β²``; the logarithm was lost in print (our
correction, docs/design.md, "Acuity model"): with it 1 D of blur costs 0.30 logMAR (20/40) and 4 D costs 1.23 logMAR.

Two other published shapes, for simulated patients who are *not* the model (the
clinical validation must be robust to a patient who is not the model); both keep ``VA(0) = VA*`` but differ from
Blendowske's in shape (a sharper cusp at zero blur, a slower rise at large blur):

* :class:`PupilBlurAcuity`, geometric optics with the pupil (Smith 1991)::

      θ = 3.438 · p · β                      (blur-disc diameter, arcmin; p pupil mm, β D)
      MAR = √(MAR*² + (k θ)²)                (arcmin; MAR* = 10^VA*)
      VA = log10(MAR)

* :class:`LinearLogmarAcuity`, logMAR linear in the blur strength (Remón, Monsoriu & Furlan
  2017)::

      VA = VA* + b · β

:data:`ACUITY_MODELS` names every model; :func:`acuity_model_by_name` builds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from visiontune._validate import finite_array, scalar
from visiontune.errors import InvalidInputError

__all__ = [
    "AcuityModel",
    "BlendowskeAcuity",
    "PupilBlurAcuity",
    "LinearLogmarAcuity",
    "ACUITY_MODELS",
    "acuity_model_by_name",
    "check_blur",
    "ARCMIN_PER_MRAD",
]


def check_blur(name: str, blur_d) -> np.ndarray:
    """Return ``blur_d`` as a finite, non-negative float array (diopters), or raise naming ``name``."""
    arr = finite_array(name, blur_d)
    if np.any(arr < 0):
        raise InvalidInputError(f"{name}: blur is a length in diopters and must be >= 0, got min {arr.min()}")
    return arr


def _check_va_star(value) -> float:
    """``best_corrected_logmar`` as a float in [-0.5, 2] logMAR, or raise naming it."""
    return scalar("best_corrected_logmar", value, -0.5, 2.0)


def _check_positive_number(name: str, value, upper: float) -> float:
    v = scalar(name, value, hi=upper)
    if v <= 0.0:
        raise InvalidInputError(f"{name}: expected a number in (0, {upper:g}], got {v}")
    return v


@runtime_checkable
class AcuityModel(Protocol):
    """Visual acuity (logMAR) as a function of blur (diopters).

    ``__call__(blur_d)``: ``blur_d`` a float or array of blur strengths >= 0 (diopters);
    returns logMAR of the same shape (a float for a scalar input). ``best_corrected_logmar``
    is the acuity at zero blur, ``VA(x*)``.
    """

    best_corrected_logmar: float

    def __call__(self, blur_d): ...


@dataclass(frozen=True)
class BlendowskeAcuity:
    """``VA(β) = VA* + log10(1 + β²)`` (Blendowske 2015; Fauvel & Chalk (contextual BO) §5.1, with the logarithm
    restored).

    ``best_corrected_logmar``: ``VA*``, the acuity through the best correction (logMAR;
    0 is 20/20, the paper's patient). Finite; a value outside [-0.5, 2] is rejected as
    implausible for a patient who can do a letter task.
    """

    best_corrected_logmar: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "best_corrected_logmar", _check_va_star(self.best_corrected_logmar))

    def __call__(self, blur_d):
        """``blur_d`` (diopters, >= 0, any shape) -> logMAR, same shape (float for a scalar)."""
        beta = check_blur("blur_d", blur_d)
        va = self.best_corrected_logmar + np.log10(1.0 + beta**2)
        return float(va) if va.ndim == 0 else va

    def blur_for_logmar(self, logmar):
        """Inverse: the blur (diopters) giving acuity ``logmar``: ``β = √(10^(VA - VA*) - 1)``.

        ``logmar`` must be >= ``best_corrected_logmar`` (blur cannot improve acuity).
        """
        va = finite_array("logmar", logmar)
        excess = va - self.best_corrected_logmar
        if np.any(excess < 0):
            raise InvalidInputError(
                f"logmar: must be >= best_corrected_logmar = {self.best_corrected_logmar}, got min {va.min()}"
            )
        beta = np.sqrt(np.power(10.0, excess) - 1.0)
        return float(beta) if beta.ndim == 0 else beta


#: Arcminutes per milliradian (``10800 / (1000 π)``): a blur disc of ``p`` mm pupil × ``β`` D
#: subtends ``p · β`` mrad = ``3.438 p β`` arcmin (geometric optics; Smith 1991; Thibos &
#: Thibos 2011, *Geometrical optical analysis of defocused retinal images*, US Ophthalmic
#: Review 4:104).
ARCMIN_PER_MRAD = 10800.0 / (1000.0 * np.pi)


@dataclass(frozen=True)
class PupilBlurAcuity:
    """Pupil-dependent geometric-optics acuity: ``MAR = √(MAR*² + (k · 3.438 p β)²)``.

    Source: G. Smith (1991), *Relation between spherical refractive error and visual acuity*,
    Optom. Vis. Sci. 68:591-598: the geometric blur disc of a defocused eye subtends
    ``p · β`` mrad (pupil diameter ``p`` in mm, defocus ``β`` in D) and, over a wide range of
    errors, the minimum angle of resolution grows linearly with the product of refractive
    error and pupil diameter. The quadrature sum with the focused ``MAR*`` is the standard
    "equivalent intrinsic blur" form (as used e.g. by McAnany et al. 2011, Optom. Vis. Sci.
    88:716) so that ``VA(0) = VA*``; for large blur ``MAR ≈ k · 3.438 p β`` (Smith's linear
    relation).

    ``best_corrected_logmar``: ``VA*`` (logMAR). ``pupil_mm``: pupil diameter, mm, in
    (0, 10] (default 4 mm, a photopic pupil in front of a chart). ``blur_fraction``: ``k``,
    the fraction of the blur-disc diameter that equals the letter's MAR at threshold,
    unitless; **assumed** 0.16, picked (not fitted) so that 1 D of blur through a 4 mm pupil
    costs about 0.38 logMAR, between Blendowske's 0.30 and the clinical rule of thumb of one
    chart line per 0.25-0.5 D. Against Blendowske it rises faster at small blur (linear,
    not quadratic, once ``kθ`` exceeds ``MAR*``) and slower at large blur (logarithm of a
    linear, not of a quadratic, function of ``β``).
    """

    best_corrected_logmar: float = 0.0
    pupil_mm: float = 4.0
    blur_fraction: float = 0.16

    def __post_init__(self) -> None:
        object.__setattr__(self, "best_corrected_logmar", _check_va_star(self.best_corrected_logmar))
        object.__setattr__(self, "pupil_mm", _check_positive_number("pupil_mm", self.pupil_mm, 10.0))
        object.__setattr__(self, "blur_fraction", _check_positive_number("blur_fraction", self.blur_fraction, 10.0))

    def blur_disc_arcmin(self, blur_d):
        """Geometric blur-disc diameter ``θ = 3.438 · p · β`` (arcmin) for blur ``β`` (D)."""
        beta = check_blur("blur_d", blur_d)
        theta = ARCMIN_PER_MRAD * self.pupil_mm * beta
        return float(theta) if theta.ndim == 0 else theta

    def __call__(self, blur_d):
        """``blur_d`` (diopters, >= 0, any shape) -> logMAR, same shape (float for a scalar)."""
        theta = np.asarray(self.blur_disc_arcmin(blur_d))
        mar_star = 10.0**self.best_corrected_logmar
        va = np.log10(np.hypot(mar_star, self.blur_fraction * theta))
        return float(va) if va.ndim == 0 else va


@dataclass(frozen=True)
class LinearLogmarAcuity:
    """logMAR linear in the blur strength: ``VA(β) = VA* + b · β``.

    Source: L. Remón, J. A. Monsoriu & W. D. Furlan (2017), *Influence of different types of
    astigmatism on visual acuity*, J. Optom. 10:141-148: "logMAR VA varies in a linear fashion
    with increasing [...] blur strength" (the length of the dioptric power vector), for
    spherical and astigmatic blur alike. ``b`` (logMAR per diopter, > 0) is **assumed**
    0.30: the clinical rule of thumb of one 0.1-logMAR chart line lost per 0.25-0.5 D of
    error gives 0.2-0.4; 0.30 makes 1 D cost the same as Blendowske's model, so the two
    differ in shape only (a cusp at zero blur: 0.25 D costs 0.075 logMAR here, 0.026 there).
    """

    best_corrected_logmar: float = 0.0
    logmar_per_diopter: float = 0.30

    def __post_init__(self) -> None:
        object.__setattr__(self, "best_corrected_logmar", _check_va_star(self.best_corrected_logmar))
        object.__setattr__(
            self, "logmar_per_diopter", _check_positive_number("logmar_per_diopter", self.logmar_per_diopter, 5.0)
        )

    def __call__(self, blur_d):
        """``blur_d`` (diopters, >= 0, any shape) -> logMAR, same shape (float for a scalar)."""
        beta = check_blur("blur_d", blur_d)
        va = self.best_corrected_logmar + self.logmar_per_diopter * beta
        return float(va) if va.ndim == 0 else va


#: Every acuity model by name (the names stored with a simulated patient case).
ACUITY_MODELS = {
    "blendowske": BlendowskeAcuity,
    "pupil-geometric": PupilBlurAcuity,
    "linear-logmar": LinearLogmarAcuity,
}


def acuity_model_by_name(
    name: str, best_corrected_logmar: float = 0.0, *, pupil_mm: float | None = None
) -> AcuityModel:
    """The acuity model called ``name`` (a key of :data:`ACUITY_MODELS`) with ``VA*`` =
    ``best_corrected_logmar`` (logMAR). ``pupil_mm`` (mm) is used by ``"pupil-geometric"``
    only (default 4 mm there) and must be None for the others."""
    if name not in ACUITY_MODELS:
        raise InvalidInputError(f"acuity_model: expected one of {', '.join(ACUITY_MODELS)}, got {name!r}")
    if name == "pupil-geometric":
        return PupilBlurAcuity(best_corrected_logmar, 4.0 if pupil_mm is None else pupil_mm)
    if pupil_mm is not None:
        raise InvalidInputError(f"pupil_mm: only the pupil-geometric model uses a pupil, not {name!r}")
    return ACUITY_MODELS[name](best_corrected_logmar)
