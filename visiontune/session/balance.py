"""Binocular balance: fogged alternate-occlusion comparison of the two eyes' blur.

After both eyes are refracted one at a time (the monocular end points), a binocular balance
checks that accommodation is equally relaxed in both: an eye refracted with its accommodation
a little active ends with too much minus. The method implemented here is the *fogging,
alternate-occlusion* balance as taught in

    Elliott DB. *Clinical Procedures in Primary Eye Care*, 4th ed. (Elsevier, 2014), chapter
    on subjective refraction, "binocular balancing";
    Benjamin WJ (ed.). *Borish's Clinical Refraction*, 2nd ed. (Butterworth-Heinemann, 2006),
    chapter on binocular refraction (balancing by alternate occlusion).

(cited from the procedure as taught in both; not checked page by page):

1. Both eyes wear their end point plus :data:`FOG_D` (+0.75 D): both are blurred, so neither
   can see better by accommodating, and a difference in blur between them is easy to see.
2. The eyes are occluded in turn and the patient says which eye sees the chart line more
   clearly, or that both look the same.
3. +0.25 D (:data:`STEP_D`) goes before the clearer eye and the question is repeated, until
   both look the same. When the answer swaps sides instead (no lens makes them equal), the
   right eye is left the clearer one (the dominant eye is left clearer; we take the right eye
   as dominant, which is an assumption: dominance is not measured).
4. The fog is removed, leaving each eye with its end point plus the adjustments of step 3.

What this module assumes (said plainly, not claimed as clinical fact):

* The fog is removed in full (-0.75 D on both eyes). The clinical procedure reduces the plus
  binocularly in 0.25 D steps to the best binocular acuity; we do not model binocular acuity,
  and the monocular end points were already the best acuity, so the balance here changes only
  the difference between the eyes.
* A balance changes an eye by at most :data:`MAX_CHANGE_D` (+0.50 D). Eyes still unequal after
  that are reported ``not balanced`` and no change is applied: the monocular refractions
  disagree by more than a balance should correct and should be checked (our limit).
* The balance is done only when both eyes were refracted and the acuities the refraction
  predicts through their found prescriptions differ by at most :data:`MAX_ACUITY_DIFFERENCE_LOGMAR` (0.20 logMAR, two
  lines): balancing by comparing blur needs eyes that see about equally well (Elliott makes the same point; the
  limit is ours).

The procedure is a pure function of the answers so far (:func:`balance_step`): every answer
is written to the trial log before the next question is computed, so an interrupted balance
resumes at the question it stopped at.

The simulated patient's answer (:func:`simulated_clearer`) compares the acuity each eye has
through its lens (the patient's own acuity model, accommodation included: in fog it does not
help), ``d = VA_OS - VA_OD + ε`` logMAR with ``ε ~ N(0, JUDGEMENT_SD_LOGMAR²)``: ``equal`` when
``|d| <`` :data:`EQUAL_WITHIN_LOGMAR`, else the eye with the lower (better) acuity. Both
constants are **assumed** (a difference of about two letters is seen as a difference).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription

__all__ = [
    "BALANCE_METHOD",
    "EQUAL_WITHIN_LOGMAR",
    "FOG_D",
    "JUDGEMENT_SD_LOGMAR",
    "MAX_ACUITY_DIFFERENCE_LOGMAR",
    "MAX_CHANGE_D",
    "STEP_D",
    "BalanceEnd",
    "BalanceQuestion",
    "balance_step",
    "fogged",
    "reason_not_to_balance",
    "simulated_clearer",
]

FOG_D = 0.75
STEP_D = 0.25
MAX_CHANGE_D = 0.50
MAX_ACUITY_DIFFERENCE_LOGMAR = 0.20
JUDGEMENT_SD_LOGMAR = 0.03
EQUAL_WITHIN_LOGMAR = 0.04
#: Key of the simulated answers' random streams: question ``k`` draws from
#: ``default_rng([seed_od, seed_os, k, BALANCE_KEY])``.
BALANCE_KEY = 0xBA1A
BALANCE_METHOD = f"fogged alternate occlusion, +{FOG_D:.2f} D fog, {STEP_D:.2f} D steps (Elliott 2014)"


@dataclass(frozen=True)
class BalanceQuestion:
    """Question ``index``: "which eye sees the line more clearly?" with ``plus_od_d`` /
    ``plus_os_d`` (D, fog included) over each eye's end point; ``lens_od`` / ``lens_os``
    the lenses that makes."""

    index: int
    plus_od_d: float
    plus_os_d: float
    lens_od: Prescription
    lens_os: Prescription


@dataclass(frozen=True)
class BalanceEnd:
    """The balance is over: ``outcome`` (``"equal"``, ``"right eye clearer"`` or ``"not
    balanced"``), the plus change of each eye's sphere (D, fog removed) and a ``reason`` for
    ``not balanced``."""

    outcome: str
    plus_change_od_d: float
    plus_change_os_d: float
    reason: str | None = None


def fogged(end_point: Prescription, plus_d: float) -> Prescription:
    """``end_point`` with ``plus_d`` added to its sphere (same cylinder form and axis)."""
    return Prescription(end_point.sphere_d + plus_d, end_point.cylinder_d, end_point.axis_deg)


def reason_not_to_balance(va_od_logmar: float, va_os_logmar: float) -> str | None:
    """Why two refracted eyes cannot be balanced by comparing blur, or ``None`` if they can:
    ``va_*_logmar`` the acuities predicted through their found prescriptions."""
    difference = abs(va_od_logmar - va_os_logmar)
    if difference > MAX_ACUITY_DIFFERENCE_LOGMAR + 1e-9:
        return (
            f"the acuities predicted through the two found prescriptions differ by {difference:.2f} logMAR "
            f"(more than {MAX_ACUITY_DIFFERENCE_LOGMAR:.2f}): their blur cannot be compared"
        )
    return None


def balance_step(end_od: Prescription, end_os: Prescription, answers: Sequence[str]) -> BalanceQuestion | BalanceEnd:
    """The next question, or the end of the balance, after ``answers`` (each ``"OD"``, ``"OS"``
    or ``"equal"``: the eye found clearer) given the monocular end points (module docstring)."""
    plus = {"OD": 0.0, "OS": 0.0}
    previous = None
    for k, answer in enumerate(answers):
        if answer not in ("OD", "OS", "equal"):
            raise InvalidInputError(f"answers[{k}]: expected 'OD', 'OS' or 'equal', got {answer!r}")
        if answer == "equal":
            return BalanceEnd("equal", plus["OD"], plus["OS"])
        if answer == "OD" and previous == "OS":  # the left eye, blurred a step, is now the blurrier
            return BalanceEnd("right eye clearer", plus["OD"], plus["OS"])
        if answer == "OS" and previous == "OD":  # the last step on the right eye went past equal
            plus["OD"] -= STEP_D
            return BalanceEnd("right eye clearer", plus["OD"], plus["OS"])
        if plus[answer] + STEP_D > MAX_CHANGE_D + 1e-9:
            return BalanceEnd(
                "not balanced",
                0.0,
                0.0,
                f"{answer} still clearer with +{plus[answer]:.2f} D: the balance changes an eye by "
                f"at most +{MAX_CHANGE_D:.2f} D; check the monocular refractions",
            )
        plus[answer] += STEP_D
        previous = answer
    od, os_ = FOG_D + plus["OD"], FOG_D + plus["OS"]
    return BalanceQuestion(len(answers), od, os_, fogged(end_od, od), fogged(end_os, os_))


def simulated_clearer(patient_od, patient_os, question: BalanceQuestion, seed_od: int, seed_os: int) -> str:
    """A simulated patient's answer to ``question`` (module docstring): ``"OD"``, ``"OS"`` or
    ``"equal"``. ``patient_od`` / ``patient_os``: the eyes' simulated patients; the draw is
    keyed by ``(seed_od, seed_os, question.index)``, so a resumed balance hears the same answers."""
    rng = np.random.default_rng([int(seed_od), int(seed_os), int(question.index), BALANCE_KEY])
    d = (
        float(patient_os.acuity_logmar(question.lens_os))
        - float(patient_od.acuity_logmar(question.lens_od))
        + float(rng.normal(0.0, JUDGEMENT_SD_LOGMAR))
    )
    if abs(d) < EQUAL_WITHIN_LOGMAR:
        return "equal"
    return "OD" if d > 0 else "OS"
