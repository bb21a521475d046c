"""Acuity as a function of dioptric blur: a pluggable model (DESIGN.md, "Acuity model").

An :class:`AcuityModel` is any callable mapping blur (diopters, array) to visual acuity
(logMAR, same shape). The default, :class:`BlendowskeAcuity`, implements Blendowske (2015,
*Unaided visual acuity and blur*, Optom. Vis. Sci. 92:e121) as cited by seed 002 §5.1::

    MAR(β) = MAR* · (1 + β²)   =>   VA(x) = VA(x*) + log10(1 + β²)   (logMAR)

Seed 002 prints ``VA(x) - VA(x*) = 1 + β²``; the logarithm was lost in print (DESIGN.md
correction): with it 1 D of blur costs 0.30 logMAR (20/40) and 4 D costs 1.23 logMAR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError

__all__ = ["AcuityModel", "BlendowskeAcuity", "check_blur"]


def check_blur(name: str, blur_d) -> np.ndarray:
    """Return ``blur_d`` as a finite, non-negative float array (diopters), or raise naming ``name``."""
    arr = finite_array(name, blur_d)
    if np.any(arr < 0):
        raise InvalidInputError(f"{name}: blur is a length in diopters and must be >= 0, got min {arr.min()}")
    return arr


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
    """``VA(β) = VA* + log10(1 + β²)`` (Blendowske 2015; seed 002 §5.1 with DESIGN.md's fix).

    ``best_corrected_logmar``: ``VA*``, the acuity through the best correction (logMAR;
    0 is 20/20, the paper's patient). Finite; a value outside [-0.5, 2] is rejected as
    implausible for a patient who can do a letter task.
    """

    best_corrected_logmar: float = 0.0

    def __post_init__(self) -> None:
        value = finite_array("best_corrected_logmar", self.best_corrected_logmar)
        if value.ndim != 0 or isinstance(self.best_corrected_logmar, bool):
            raise InvalidInputError(f"best_corrected_logmar: expected one number, got {self.best_corrected_logmar!r}")
        if not -0.5 <= float(value) <= 2.0:
            raise InvalidInputError(f"best_corrected_logmar: must be in [-0.5, 2] logMAR, got {float(value)}")
        object.__setattr__(self, "best_corrected_logmar", float(value))

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
