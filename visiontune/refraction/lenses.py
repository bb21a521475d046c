"""Trial lenses: a power vector turned into the lens a clinician sets, in clinical form.

The search runs in Thibos power vectors ``(M, J0, J45)`` (Thibos, Wheeler & Horner 1997);
the clinician sets sphere / cylinder × axis from a trial set or a phoropter:

* sphere and cylinder on quarter-diopter steps (``step_d``; 0 keeps them continuous, the
  paper's simulated experiment, Fauvel & Chalk (contextual BO) §5.3);
* the axis on ``axis_step_deg`` steps (5° by default, 1° as a setting; a divisor of 180°), coarser when the
  cylinder is small, where the axis matters little: 15° for 0.25 D and 10° for 0.50 D of
  cylinder, in the spirit of the axis tolerances of ANSI Z80.1 / ISO 21987 for mounted
  spectacle lenses (±14° at 0.25 D, ±7° at 0.50 D, ±5° up to 0.75 D);
* in minus-cylinder form (the optometric default) or plus-cylinder form (the ophthalmic);
  both describe the same lens (:meth:`~visiontune.optics.Prescription.transposed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics import PowerVector, Prescription
from visiontune.optics.prescription import normalise_axis_deg

__all__ = [
    "CYLINDER_FORMS",
    "LensSteps",
    "axis_step_for",
    "distinct_pair_indices",
    "changes_along",
    "in_form",
    "lens_changes",
    "lens_left_in_place",
    "lens_power_vector",
    "lenses_shown",
    "neighbouring_lenses",
    "same_lens",
    "trial_lens",
    "trial_lens_power_vectors",
]

CYLINDER_FORMS = ("minus", "plus")

#: Axis steps (degrees) for small cylinders: ``(largest |C| in D, step)``.
_SMALL_CYLINDER_AXIS_STEPS = ((0.25, 15.0), (0.50, 10.0))


@dataclass(frozen=True)
class LensSteps:
    """How proposed lenses are rounded: ``step_d`` (D, 0 = continuous), ``axis_step_deg``
    (degrees, > 0), ``cylinder_form`` (``"minus"`` or ``"plus"``), and ``axis_origin_deg``, the
    axis the steps count from (a session starting from a prescription with a cylinder turns the
    axis in steps from the start's axis, as a clinician does from the autorefractor's reading)."""

    step_d: float = 0.25
    axis_step_deg: float = 5.0
    cylinder_form: str = "minus"
    axis_origin_deg: float = 0.0

    def __post_init__(self) -> None:
        step, axis_step = self.step_d, self.axis_step_deg
        step = check_number("step_d", step, 0, 1)
        axis_step = check_number("axis_step_deg", axis_step)
        if not 0 < axis_step <= 45 or abs(180.0 / axis_step - round(180.0 / axis_step)) > 1e-9:
            raise InvalidInputError(
                f"axis_step_deg: expected an axis step in (0, 45] degrees that divides 180 "
                f"(1, 2, 2.5, 3, 4, 5, 6, 9, 10, 12, 15, ...), got {axis_step!r}"
            )
        if self.cylinder_form not in CYLINDER_FORMS:
            raise InvalidInputError(f"cylinder_form: expected 'minus' or 'plus', got {self.cylinder_form!r}")
        origin = check_number("axis_origin_deg", self.axis_origin_deg)
        object.__setattr__(self, "step_d", float(step))
        object.__setattr__(self, "axis_step_deg", float(axis_step))
        object.__setattr__(self, "axis_origin_deg", float(origin) % 180.0)


def axis_step_for(cylinder_d: float, axis_step_deg: float) -> float:
    """The axis step for a cylinder of ``|cylinder_d|`` D: 15° at 0.25 D, 10° at 0.50 D, else
    ``axis_step_deg`` (never finer than it)."""
    c = abs(float(cylinder_d))
    for limit, step in _SMALL_CYLINDER_AXIS_STEPS:
        if c <= limit + 1e-9:
            return max(step, axis_step_deg)
    return axis_step_deg


def in_form(rx: Prescription, cylinder_form: str) -> Prescription:
    """``rx`` written in ``cylinder_form`` (``"minus"`` or ``"plus"``)."""
    if cylinder_form not in CYLINDER_FORMS:
        raise InvalidInputError(f"cylinder_form: expected 'minus' or 'plus', got {cylinder_form!r}")
    return rx.to_minus_cylinder() if cylinder_form == "minus" else rx.to_plus_cylinder()


def _round_half_away(x: float, q: float) -> float:
    return math.copysign(math.floor(abs(x) / q + 0.5), x) * q


def trial_lens(power_vector, steps: LensSteps) -> Prescription:
    """The trial lens nearest to ``power_vector`` ``(3,)`` ``(M, J0, J45)`` (diopters): minus-
    cylinder form rounded to ``steps``, then written in ``steps.cylinder_form``. A cylinder
    that rounds to 0 is written with axis 180."""
    pv = np.asarray(power_vector, dtype=float)
    if pv.shape != (3,) or not np.all(np.isfinite(pv)):
        raise InvalidInputError(f"power_vector: expected 3 finite numbers (M, J0, J45), got {power_vector!r}")
    rx = PowerVector(*pv).to_prescription()
    if steps.step_d == 0.0:
        return in_form(rx, steps.cylinder_form)
    cylinder = _round_half_away(rx.cylinder_d, steps.step_d)
    if cylinder == 0.0:
        # the sphere that keeps M: S = M (no cylinder)
        return Prescription(_round_half_away(float(pv[0]), steps.step_d), 0.0, 180.0)
    # keep the spherical equivalent when the cylinder is rounded: S = M - C/2
    sphere = _round_half_away(float(pv[0]) - cylinder / 2.0, steps.step_d)
    axis_step = axis_step_for(cylinder, steps.axis_step_deg)
    origin = steps.axis_origin_deg
    axis = (origin + _round_half_away(rx.axis_deg - origin, axis_step)) % 180.0
    return in_form(Prescription(sphere, cylinder, 180.0 if axis == 0.0 else axis), steps.cylinder_form)


def neighbouring_lenses(
    lens: Prescription,
    steps: LensSteps,
    sphere_steps: int = 2,
    cylinder_steps: int = 1,
    axis_deg: float = 180.0,
    axis_steps: int = 1,
) -> list[Prescription]:
    """``lens`` (a trial lens) and the trial lenses around it, in minus-cylinder form, ``lens``
    first, none twice: the sphere within ``sphere_steps`` steps, the cylinder within
    ``cylinder_steps`` (never of the other sign) and the axis within ``axis_steps`` steps of the
    cylinder's own axis step (:func:`axis_step_for`, on the grid from ``steps.axis_origin_deg``)
    of ``lens``'s axis, or of ``axis_deg`` when ``lens`` has no cylinder. A cylinder of 0 is
    written with axis 180. Needs ``steps.step_d > 0``."""
    if steps.step_d <= 0.0:
        raise InvalidInputError(
            "steps.step_d: neighbouring trial lenses need a lens step above 0 (continuous lenses have no neighbours)"
        )
    q, origin = steps.step_d, steps.axis_origin_deg
    base = lens.to_minus_cylinder()
    centre_axis = base.axis_deg if base.cylinder_d != 0.0 else float(axis_deg)
    out, seen = [], set()

    def add(rx: Prescription) -> None:
        key = (round(rx.sphere_d, 6), round(rx.cylinder_d, 6), round(rx.axis_deg % 180.0, 6))
        if key not in seen:
            seen.add(key)
            out.append(rx)

    add(base)
    for dc in range(-cylinder_steps, cylinder_steps + 1):
        cylinder = round(base.cylinder_d + dc * q, 9)
        if cylinder > 0.0:
            continue
        if cylinder == 0.0:
            axes = [180.0]
        else:
            a_step = axis_step_for(cylinder, steps.axis_step_deg)
            snapped = origin + _round_half_away(centre_axis - origin, a_step)
            axes = [normalise_axis_deg(snapped + k * a_step) for k in range(-axis_steps, axis_steps + 1)]
        for ds in range(-sphere_steps, sphere_steps + 1):
            for axis in axes:
                add(Prescription(round(base.sphere_d + ds * q, 9), cylinder, float(axis)))
    return out


def trial_lens_power_vectors(power_vectors: np.ndarray, steps: LensSteps) -> np.ndarray:
    """Vectorised :func:`trial_lens` for ``(n, 3)`` power vectors: the ``(n, 3)`` power vectors
    of the trial lenses (the cylinder form does not change a power vector)."""
    pv = np.asarray(power_vectors, dtype=float)
    if pv.ndim != 2 or pv.shape[1] != 3 or not np.all(np.isfinite(pv)):
        raise InvalidInputError(f"power_vectors: expected an (n, 3) array of finite (M, J0, J45), got shape {pv.shape}")
    if steps.step_d == 0.0:
        return pv.copy()
    q = steps.step_d
    half = np.hypot(pv[:, 1], pv[:, 2])
    cylinder = -np.floor(2.0 * half / q + 0.5) * q
    axis = normalise_axis_deg(np.degrees(0.5 * np.arctan2(pv[:, 2], pv[:, 1])))  # (0, 180], as trial_lens
    axis_step = np.where(
        np.abs(cylinder) <= 0.25 + 1e-9,
        max(15.0, steps.axis_step_deg),
        np.where(np.abs(cylinder) <= 0.5 + 1e-9, max(10.0, steps.axis_step_deg), steps.axis_step_deg),
    )
    origin = steps.axis_origin_deg
    shifted = axis - origin
    axis = origin + np.sign(shifted) * np.floor(np.abs(shifted) / axis_step + 0.5) * axis_step
    sphere_raw = np.where(cylinder == 0.0, pv[:, 0], pv[:, 0] - cylinder / 2.0)
    sphere = np.sign(sphere_raw) * np.floor(np.abs(sphere_raw) / q + 0.5) * q
    two_a = np.radians(2.0 * axis)
    return np.column_stack([sphere + cylinder / 2.0, -cylinder / 2.0 * np.cos(two_a), -cylinder / 2.0 * np.sin(two_a)])


def lens_power_vector(lens) -> np.ndarray:
    """``(3,)`` power vector of a lens with ``sphere_d``, ``cylinder_d``, ``axis_deg``."""
    return Prescription(lens.sphere_d, lens.cylinder_d, lens.axis_deg).power_vector_array()


def lenses_shown(trial) -> list[Prescription]:
    """The trial lenses a :class:`~visiontune.refraction.trial.Trial` put before the eye, in order:
    a letter's ``lens``, a comparison's (or a duel's) ``lens`` then ``lens2``, a slider's path; for
    a flipper or cross-cylinder held before a trial lens, that ``frame_lens`` alone (its two sides
    are no change of lens)."""
    if trial.slider_lenses is not None:
        return list(trial.slider_lenses)
    if getattr(trial, "frame_lens", None) is not None:
        return [trial.frame_lens]
    return [trial.lens] if trial.lens2 is None else [trial.lens, trial.lens2]


def lens_left_in_place(trial) -> Prescription:
    """The lens ``trial`` left before the eye, the last one it showed (:func:`lenses_shown`): the
    lens in place for the next question."""
    return lenses_shown(trial)[-1]


def same_lens(a, b) -> bool:
    """Whether two lenses (``sphere_d``, ``cylinder_d``, ``axis_deg``) have the same power: power
    vectors equal to 1e-6 D, so either cylinder form, and a plano at any axis, is the same lens."""
    return bool(np.all(np.abs(lens_power_vector(a) - lens_power_vector(b)) <= 1e-6))


def changes_along(lenses, in_place=None) -> int:
    """How many times the lens before the eye changes showing ``lenses`` in order from the lens
    ``in_place`` (None: none yet, so the first lens placed counts). A lens of the power of the
    one before (:func:`same_lens`) is no change."""
    count, before = 0, in_place
    for lens in lenses:
        if before is None or not same_lens(lens, before):
            count += 1
        before = lens
    return count


def lens_changes(trials) -> int:
    """How many times the lens before the eye changed over ``trials`` (:func:`lenses_shown`), the
    first lens placed included: the lens swaps of a trial frame (:func:`changes_along`)."""
    return changes_along([lens for trial in trials for lens in lenses_shown(trial)])


def distinct_pair_indices(a: np.ndarray, b: np.ndarray) -> list[int]:
    """The indices ``n`` of the pairs ``(a[n], b[n])`` of two different lenses (power vectors,
    ``(Q, 3)`` each), each pair the first time it comes in either order (to 1e-6 D)."""
    keep, seen = [], set()
    for n in range(len(a)):
        ka, kb = tuple(np.round(a[n], 6)), tuple(np.round(b[n], 6))
        if ka == kb or (ka, kb) in seen or (kb, ka) in seen:
            continue
        seen.add((ka, kb))
        keep.append(n)
    return keep
