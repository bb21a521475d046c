"""The comparisons a clinician shows: a lens and one standard change of it (``pairs = "one-change"``).

Every pair is built around a *base* lens ``L`` (the lens in place, and the estimate rounded to a
trial lens) in power vectors ``(M, J0, J45)`` (Thibos, Wheeler & Horner 1997, Eqs. 6-8:
``M = S + C/2``, ``J0 = -(C/2) cos 2a``, ``J45 = -(C/2) sin 2a``), then rounded to trial lenses
(:func:`visiontune.refraction.lenses.trial_lens_power_vectors`: 0.25 D, the protocol's axis steps):

* **sphere**: ``(L, L + dS)`` for ``dS`` in ±0.25 and ±0.50 D (``M`` changes by ``dS``, ``J`` not);
  the plus steps are the fogging / plus-to-blur steps; and a sphere flipper's two sides held
  before the lens, ``(L + p, L - p)`` (at ``p`` = 0.25 D the end-point check of the sphere;
  at ±0.50 to ±1.00 D the bracketing a clinician uses where acuity is poor);
* **Jackson cross-cylinder**, ±``p`` D: the lens ``+p DS / -2p DC x t`` has
  ``M = p - p = 0`` and ``J = p (cos 2t, sin 2t)``; its flip (minus axis at ``t + 90``) is ``-J``.
  The pair is ``(L + J_t, L - J_t)``: for the **axis** the flips straddle the lens's axis ``a``
  (``t = a + 45``, the flip's minus axis at ``a + 45`` or ``a - 45``), for the **power** they are
  aligned with it (``t = a``: minus axis at ``a`` or ``a + 90``). Cross-cylinders are made at
  ±0.25, ±0.37, ±0.50, ±0.75 and ±1.00 D; the ±0.25 D one is the routine's, the stronger ones
  are for an eye whose acuity is poor (Elliott 2014, *Clinical Procedures in Primary Eye Care*,
  §4.8; Benjamin 2006, *Borish's Clinical Refraction*, ch. 20);
* **after a cross-cylinder answer**, the change the clinician makes: the axis turned by the step for
  the cylinder's power (:func:`~visiontune.refraction.lenses.axis_step_for`: 15° at 0.25 D, 10° at
  0.50 D, else the protocol's step; Borish's clinical refraction's 5-15° rule) and the cylinder's
  power by ±0.25 D with the sphere compensated to keep ``M`` (``S' = S - dC/2``, "maintain the
  spherical equivalent"; the trial-lens rounding keeps ``M`` within 0.125 D).

With no cylinder to follow (``|J| < 0.05`` D) the cross-cylinder is shown at 90/180 and 45/135.

**Hand-held pairs** (flipper, cross-cylinder, a plus sphere "with or without") are a lens held
before the base lens ``L``, which stays in the trial frame (the *frame lens*, :func:`frame_lens_of`):
their two lenses are exactly ``L ± H`` (``H`` the flipper's or cross-cylinder's power vector), or
``(L, L + p)`` for the sphere "with or without", not rounded, and ``L`` is what the next question
finds in place. The powers held are the protocol's ``hand_held_d`` (±0.25 D by default). For an eye
that may accommodate the sphere is held as plus only, "with or without" (its minus side would be
cleared by accommodation; the clinical rule of the most plus lens for the best acuity, Elliott 2014
§4.6). Every other pair is two trial lenses placed in turn, rounded.
"""

from __future__ import annotations

import numpy as np

from visiontune.optics.prescription import PowerVector, Prescription, normalise_axis_deg
from visiontune.refraction.lenses import LensSteps, axis_step_for, distinct_pair_indices, trial_lens_power_vectors

__all__ = [
    "CHANGE_KINDS",
    "HAND_HELD_D",
    "JCC_D",
    "SPHERE_STEPS_D",
    "cross_cylinder",
    "frame_lens_of",
    "is_hand_held",
    "is_hand_held_power",
    "one_change_pairs",
    "pair_changes",
]

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
#: The powers of the hand-held flipper and cross-cylinder by default (D).
HAND_HELD_D = (FLIPPER_D,)
#: Pairs shown by a hand-held lens before the frame lens (no change of the lens itself).
_HAND_HELD = ("with-without", "flipper", "jcc-axis", "jcc-power")
CHANGE_KINDS = ("sphere", "with-without", "flipper", "jcc-axis", "jcc-power", "axis", "cylinder")


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


def is_hand_held_power(p) -> bool:
    """Whether ``p`` (D) is a power of the flippers and cross-cylinders :data:`HAND_HELD_D` may list:
    a multiple of 0.25 D from 0.25 to 2.00."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.25 <= p <= 2.0:
        return False
    return abs(p / 0.25 - round(p / 0.25)) < 1e-9


def is_hand_held(kind: str) -> bool:
    """Whether a pair of ``kind`` (:data:`CHANGE_KINDS`) is a lens held before the frame lens (a
    flipper, a cross-cylinder or a sphere "with or without")."""
    return kind in _HAND_HELD


def _pairs_around(
    base: np.ndarray, steps: LensSteps, hand_held_d=HAND_HELD_D, plus_only: bool = False
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(kind, lens 1, lens 2)`` of every one-change pair around the trial lens ``base (3,)``,
    unrounded; for each power of ``hand_held_d`` a sphere held before it (a flipper, or with
    ``plus_only`` the plus sphere "with or without") and the two cross-cylinder pairs."""
    axis, cylinder = _axis_and_cylinder(base)
    out = []
    for p in hand_held_d:
        flip = np.array([p, 0.0, 0.0])
        straddle = cross_cylinder(p, axis + 45.0)
        aligned = cross_cylinder(p, axis)
        out += [
            ("with-without", base, base + flip) if plus_only else ("flipper", base + flip, base - flip),
            ("jcc-axis", base + straddle, base - straddle),
            ("jcc-power", base + aligned, base - aligned),
        ]
    # Sphere steps last: where one shows the two lenses a sphere held "with or without" shows, the
    # held one (no change of lens) is the pair kept.
    out += [("sphere", base, base + np.array([d, 0.0, 0.0])) for d in SPHERE_STEPS_D]
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


def one_change_pairs(
    bases, steps: LensSteps, with_kinds: bool = False, hand_held_d=HAND_HELD_D, plus_only: bool = False
):
    """Candidate pairs ``(Q, 2, 3)`` (module docstring), each a base lens (rows of ``bases (B, 3)``,
    rounded to a trial lens) and one clinical change of it: two trial lenses, or a lens held before
    the base (each power of ``hand_held_d``, D; the sphere as plus only with ``plus_only``), no pair
    twice and no pair of one lens; with ``with_kinds`` also each pair's ``(kind, base index)``
    (:data:`CHANGE_KINDS`)."""
    first, second, kinds = [], [], []
    for index, base in enumerate(np.atleast_2d(np.asarray(bases, dtype=float))):
        base = trial_lens_power_vectors(base[None, :], steps)[0]
        built = _pairs_around(base, steps, hand_held_d, plus_only)
        held = np.array([is_hand_held(p[0]) for p in built])[:, None]
        a, b = np.array([p[1] for p in built]), np.array([p[2] for p in built])
        first.append(np.where(held, a, trial_lens_power_vectors(a, steps)))
        second.append(np.where(held, b, trial_lens_power_vectors(b, steps)))
        kinds += [(p[0], index) for p in built]
    a, b = np.concatenate(first), np.concatenate(second)
    keep = distinct_pair_indices(a, b)
    pairs, kinds = np.stack([a[keep], b[keep]], axis=1), [kinds[n] for n in keep]
    return (pairs, kinds) if with_kinds else pairs


def frame_lens_of(kind: str, pair: np.ndarray) -> np.ndarray:
    """The frame lens of a hand-held pair ``(2, 3)`` of ``kind``: lens 1 for "with or without" (the
    lens alone, then with the sphere held before it), else the base its two sides straddle,
    ``(L1 + L2) / 2``."""
    if kind == "with-without":
        return np.asarray(pair[0], dtype=float)
    return (np.asarray(pair[0], dtype=float) + np.asarray(pair[1], dtype=float)) / 2.0


def pair_changes(pairs: np.ndarray, kinds, in_place) -> np.ndarray:
    """Changes of lens each pair of :func:`one_change_pairs` (built with ``in_place`` as base 0)
    costs from the lens in place ``in_place`` (a power vector, or None): a hand-held pair (a
    flipper or cross-cylinder turned before the trial frame's lens, or one flip of a phoropter's,
    within the comparison's own time; assumed, as the clinic does it) none when its frame lens is
    the lens in place and 1 (placing it) when not; two trial lenses 1 where the pair holds the lens
    in place and 2 where it does not."""
    held = np.array([is_hand_held(kind) for kind, _ in kinds], dtype=bool)
    if in_place is None:
        return np.where(held, 1.0, 2.0)
    in_place = np.asarray(in_place, dtype=float)
    here = np.abs(pairs - in_place).max(axis=-1) <= 1e-6
    frames = np.array([frame_lens_of(kind, pair) for (kind, _), pair in zip(kinds, pairs)]).reshape(-1, 3)
    framed_here = np.abs(frames - in_place).max(axis=-1) <= 1e-6
    return np.where(held, np.where(framed_here, 0.0, 1.0), np.where(here.any(axis=1), 1.0, 2.0))
