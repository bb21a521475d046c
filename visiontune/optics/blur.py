"""Dioptric blur of a lens for a patient (Fauvel & Chalk (contextual BO) §5.1, Eq. 12; Thibos power vectors).

Sign convention. ``true_rx`` is the patient's best correction, the lens that corrects them
(``x*`` in the paper). The residual refractive error seen through lens ``x`` is, in power-
vector space,

    r = P(x) - P(x*)        (P the Thibos power vector, diopters)

so the patient is corrected exactly when the lens equals ``true_rx`` (r = 0). "The eye's error
vector plus the lens vector" says the same, with the eye's error vector ``-P(x*)``. The blur
strength is the length ``β = |r| = √(ΔM² + ΔJ0² + ΔJ45²)``. For aligned axes
(``ΔS = S - S*``, ``ΔC = C - C*``) this is the paper's Eq. 12 (Raasch 1995, Blendowske 2015):

    β = √(½ (ΔS² + (ΔS + ΔC)²))

and for oblique axes it is the natural extension. The sign of the residual does not matter
for blur: an over-minused lens blurs as much as an under-minused one of the same size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from visiontune._validate import finite_array, points
from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription, _components

__all__ = ["as_power_vectors", "residual_power_vector", "blur_diopters"]


def as_power_vectors(name: str, lens, axis_deg: float) -> tuple[np.ndarray, bool]:
    """Return ``(n, 3)`` power vectors (diopters) for ``lens`` and whether it was a single lens.

    ``lens``: a :class:`Prescription`; a sequence of them; or a ``(2,)`` / ``(n, 2)`` array
    of ``(sphere_d, cylinder_d)`` at the common axis ``axis_deg`` (degrees).
    """
    if isinstance(lens, Prescription):
        return lens.power_vector_array()[None, :], True
    if isinstance(lens, Sequence) and len(lens) and all(isinstance(p, Prescription) for p in lens):
        return np.stack([p.power_vector_array() for p in lens]), False
    if isinstance(lens, Sequence) and any(isinstance(p, Prescription) for p in lens):
        raise InvalidInputError(f"{name}: mixes Prescriptions with other values")
    single = np.ndim(lens) == 1
    sc = points(name, lens, dim=2)
    return _components(sc[:, 0], sc[:, 1], np.float64(axis_deg)), single


def _axis_for(lens, true_rx, axis_deg) -> float:
    if axis_deg is not None:
        a = finite_array("axis_deg", axis_deg)
        if a.ndim != 0 or not 0.0 <= float(a) <= 180.0:
            raise InvalidInputError(f"axis_deg: expected one angle in [0, 180] degrees, got {axis_deg!r}")
        return float(a)
    if isinstance(true_rx, Prescription):
        return true_rx.axis_deg
    if isinstance(lens, Prescription):
        return lens.axis_deg
    return 180.0  # both (sphere, cylinder) arrays at the same axis: the blur does not depend on it


def residual_power_vector(lens, true_rx, *, axis_deg: float | None = None) -> np.ndarray:
    """Residual error ``P(lens) - P(true_rx)`` as ``(3,)`` or ``(n, 3)`` power vectors, diopters.

    ``lens`` and ``true_rx``: each a :class:`Prescription`, a sequence of them, or a
    ``(2,)``/``(n, 2)`` array of ``(sphere_d, cylinder_d)`` at axis ``axis_deg`` (default:
    ``true_rx``'s axis if it is a Prescription, else ``lens``'s, else 180). ``n`` broadcasts
    against 1. The result is ``(3,)`` when both inputs are single lenses.
    """
    axis = _axis_for(lens, true_rx, axis_deg)
    p_lens, single_lens = as_power_vectors("lens", lens, axis)
    p_true, single_true = as_power_vectors("true_rx", true_rx, axis)
    if p_lens.shape[0] != p_true.shape[0] and 1 not in (p_lens.shape[0], p_true.shape[0]):
        raise InvalidInputError(
            f"lens: {p_lens.shape[0]} lenses cannot be paired with {p_true.shape[0]} true corrections (true_rx)"
        )
    residual = p_lens - p_true
    return residual[0] if single_lens and single_true else residual


def blur_diopters(lens, true_rx, *, axis_deg: float | None = None):
    """Blur strength ``β = |P(lens) - P(true_rx)|`` in diopters (Fauvel & Chalk (contextual BO), Eq. 12).

    Inputs as in :func:`residual_power_vector`. Returns a float when both inputs are single
    lenses, else an ``(n,)`` array. For aligned axes equals ``√(½(ΔS² + (ΔS+ΔC)²))``.
    """
    residual = residual_power_vector(lens, true_rx, axis_deg=axis_deg)
    beta = np.linalg.norm(residual, axis=-1)
    return float(beta) if np.ndim(beta) == 0 else beta
