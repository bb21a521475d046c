"""The comparisons a clinician shows: a lens and one standard change of it (``pairs = "one-change"``).

Every pair is built around a *base* lens ``L`` (the lens in place, and the estimate rounded to a
trial lens) in power vectors ``(M, J0, J45)`` (Thibos, Wheeler & Horner 1997, Eqs. 6-8:
``M = S + C/2``, ``J0 = -(C/2) cos 2a``, ``J45 = -(C/2) sin 2a``), then rounded to trial lenses
(:func:`visiontune.refraction.lenses.trial_lens_power_vectors`: 0.25 D, the protocol's axis steps):

* **sphere**: ``(L, L + dS)`` for ``dS`` in ±0.25 and ±0.50 D (``M`` changes by ``dS``, ``J`` not);
  the plus steps are the fogging / plus-to-blur steps; and the ±0.25 D sphere flipper's two
  sides held before the lens, ``(L + 0.25, L - 0.25)`` (the end-point check of the sphere);
* **Jackson cross-cylinder**, ±``p`` D (``p`` = 0.25): the lens ``+p DS / -2p DC x t`` has
  ``M = p - p = 0`` and ``J = p (cos 2t, sin 2t)``; its flip (minus axis at ``t + 90``) is ``-J``.
  The pair is ``(L + J_t, L - J_t)``: for the **axis** the flips straddle the lens's axis ``a``
  (``t = a + 45``, the flip's minus axis at ``a + 45`` or ``a - 45``), for the **power** they are
  aligned with it (``t = a``: minus axis at ``a`` or ``a + 90``);
* **after a cross-cylinder answer**, the change the clinician makes: the axis turned by the step for
  the cylinder's power (:func:`~visiontune.refraction.lenses.axis_step_for`: 15° at 0.25 D, 10° at
  0.50 D, else the protocol's step; Borish's clinical refraction's 5-15° rule) and the cylinder's
  power by ±0.25 D with the sphere compensated to keep ``M`` (``S' = S - dC/2``, "maintain the
  spherical equivalent"; the trial-lens rounding keeps ``M`` within 0.125 D).

With no cylinder to follow (``|J| < 0.05`` D) the cross-cylinder is shown at 90/180 and 45/135.
"""

from __future__ import annotations

import numpy as np

from visiontune.optics.prescription import PowerVector, Prescription, normalise_axis_deg
from visiontune.refraction.lenses import LensSteps, axis_step_for, distinct_pair_indices, trial_lens_power_vectors

__all__ = ["CHANGE_KINDS", "JCC_D", "SPHERE_STEPS_D", "cross_cylinder", "one_change_pairs", "pair_changes"]

#: Sphere changes shown against the lens (D).
SPHERE_STEPS_D = (0.25, -0.25, 0.5, -0.5)
#: The sphere flipper's power, ±0.25 D.
FLIPPER_D = 0.25
#: The cross-cylinder's power, ±0.25 D.
JCC_D = 0.25
#: The cylinder-power change after a cross-cylinder answer (D).
CYLINDER_STEP_D = 0.25
#: Below this length of ``J`` (D) the lens has no axis to follow.
_AXIS_FREE_J_D = 0.05
#: Pairs shown by a hand-held lens before the lens in place (no change of the lens itself).
_HAND_HELD = ("flipper", "jcc-axis", "jcc-power")
CHANGE_KINDS = ("sphere", "flipper", "jcc-axis", "jcc-power", "axis", "cylinder")


def cross_cylinder(power_d: float, minus_axis_deg: float) -> np.ndarray:
    """The power vector of a cross cylinder ``+p DS / -2p DC x t`` (``p = power_d``, ``t``
    the minus axis): ``(0, p cos 2t, p sin 2t)`` (Thibos 1997 Eqs. 6-8 with ``S = p``, ``C = -2p``)."""
    t = np.deg2rad(minus_axis_deg)
    return np.array([0.0, power_d * np.cos(2 * t), power_d * np.sin(2 * t)])


def _axis_and_cylinder(base: np.ndarray) -> tuple[float, float]:
    """``(minus-cylinder axis (deg), cylinder (D, <= 0))`` of the power vector ``base``; axis 180
    and cylinder 0 without a cylinder to follow."""
    rx = PowerVector(*base).to_prescription().to_minus_cylinder()
    if np.hypot(base[1], base[2]) < _AXIS_FREE_J_D:
        return 180.0, 0.0
    return rx.axis_deg, rx.cylinder_d


def _pairs_around(base: np.ndarray, steps: LensSteps) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(kind, lens 1, lens 2)`` of every one-change pair around ``base (3,)``, unrounded."""
    axis, cylinder = _axis_and_cylinder(base)
    out = [("sphere", base, base + np.array([d, 0.0, 0.0])) for d in SPHERE_STEPS_D]
    flip = np.array([FLIPPER_D, 0.0, 0.0])
    out.append(("flipper", base + flip, base - flip))
    straddle = cross_cylinder(JCC_D, axis + 45.0)
    aligned = cross_cylinder(JCC_D, axis)
    out += [("jcc-axis", base + straddle, base - straddle), ("jcc-power", base + aligned, base - aligned)]
    if cylinder != 0.0:
        step = axis_step_for(cylinder, steps.axis_step_deg)
        for turn in (step, -step):
            out.append(("axis", base, _rotated(base, turn)))
    for dc in (-CYLINDER_STEP_D, CYLINDER_STEP_D):
        # the cylinder's power along its own axis by dc, M kept: J grows by -dc/2 along the axis
        out.append(("cylinder", base, base + cross_cylinder(-dc / 2.0, axis)))
    return out


def _rotated(base: np.ndarray, turn_deg: float) -> np.ndarray:
    """The power vector of the lens ``base`` with its cylinder's axis turned by ``turn_deg``."""
    rx = PowerVector(*base).to_prescription()
    return Prescription(
        rx.sphere_d, rx.cylinder_d, float(normalise_axis_deg(rx.axis_deg + turn_deg))
    ).power_vector_array()


def one_change_pairs(bases, steps: LensSteps, with_kinds: bool = False):
    """Candidate pairs ``(Q, 2, 3)`` of trial lenses (module docstring), each a base lens (rows of
    ``bases (B, 3)``) and one clinical change of it, rounded to trial lenses, no pair twice and no
    pair of one lens; with ``with_kinds`` also each pair's ``(kind, base index)``
    (:data:`CHANGE_KINDS`)."""
    first, second, kinds = [], [], []
    for index, base in enumerate(np.atleast_2d(np.asarray(bases, dtype=float))):
        base = trial_lens_power_vectors(base[None, :], steps)[0]
        built = _pairs_around(base, steps)
        first.append(trial_lens_power_vectors(np.array([p[1] for p in built]), steps))
        second.append(trial_lens_power_vectors(np.array([p[2] for p in built]), steps))
        kinds += [(p[0], index) for p in built]
    a, b = np.concatenate(first), np.concatenate(second)
    keep = distinct_pair_indices(a, b)
    pairs, kinds = np.stack([a[keep], b[keep]], axis=1), [kinds[n] for n in keep]
    return (pairs, kinds) if with_kinds else pairs


def pair_changes(pairs: np.ndarray, kinds, in_place) -> np.ndarray:
    """Changes of lens each pair of :func:`one_change_pairs` (built with ``in_place`` as base 0)
    costs from the lens in place ``in_place`` (a power vector, or None): a cross-cylinder pair around
    the lens in place, or a ±0.25 D flipper's, none (a hand-held cross-cylinder or flipper turned
    before the trial frame's lens, or one flip of a phoropter's, is part of the comparison's own
    time; assumed, as the clinic does it), else
    1 where the pair holds the lens in place and 2 where it does not."""
    if in_place is None:
        return np.full(len(pairs), 2.0)
    here = np.abs(pairs - np.asarray(in_place, dtype=float)).max(axis=-1) <= 1e-6
    changes = np.where(here.any(axis=1), 1.0, 2.0)
    jcc = np.array([kind in _HAND_HELD and base == 0 for kind, base in kinds])
    return np.where(jcc, 0.0, changes)
