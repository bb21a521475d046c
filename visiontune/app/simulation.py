"""The simulated patient of the app's demo mode: who they are, and what they say.

The patient's true correction is drawn from the session seed exactly as ``visiontune session
run --simulate`` draws it (``default_rng([seed, 7919])``, uniform in the protocol's lens box),
so the app and the command line simulate the same patient for the same session. Answers
follow the letter-task psychometric function ``P(correct | s, x) = γ + (1-γ) Φ(a (s - VA(x)))``
(seed 002, Eq. 13 / S34; DESIGN.md *The refraction model*): a correct answer names the letter
shown; a wrong one names another letter of the set, drawn uniformly with
``default_rng([seed, trial index, 17])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient

TRUE_RX_STREAM = 7919
WRONG_LETTER_STREAM = 17


def simulated_true_rx(seed: int, box, axis_deg: float) -> Prescription:
    """True correction ``(S, C)`` uniform in ``box (2, 2)`` (diopters) at ``axis_deg``."""
    box = np.asarray(box, dtype=float)
    if box.shape != (2, 2):
        raise InvalidInputError(f"box: expected [[S lo, S hi], [C lo, C hi]], got shape {box.shape}")
    s, c = np.random.default_rng([int(seed), TRUE_RX_STREAM]).uniform(box[:, 0], box[:, 1])
    return Prescription(float(s), float(c), axis_deg)


def simulated_patient(seed: int, box, axis_deg: float, n_alternatives: int, *, slope: float = 5.0,
                      best_corrected_logmar: float = 0.0) -> SimulatedPatient:
    """The session's simulated patient (answers seeded by ``seed``)."""
    rx = simulated_true_rx(seed, box, axis_deg)
    return SimulatedPatient(rx, best_corrected_logmar=best_corrected_logmar, slope=slope,
                            n_alternatives=n_alternatives, seed=np.random.SeedSequence([int(seed), TRUE_RX_STREAM, 1]))  # fmt: skip


@dataclass(frozen=True)
class SimulatedReply:
    """The letter the simulated patient names and whether it is the one shown."""

    letter_named: str
    correct: bool


def simulated_reply(patient: SimulatedPatient, *, s_logmar: float, lens: Prescription, letter_shown: str,
                    letters: tuple[str, ...], seed: int, trial_index: int) -> SimulatedReply:
    """One answer of ``patient`` to ``letter_shown`` at ``s_logmar`` through ``lens``."""
    if letter_shown not in letters:
        raise InvalidInputError(f"letter_shown: {letter_shown!r} is not in the letter set {letters}")
    if len(letters) < 2:
        raise InvalidInputError(f"letters: a letter task needs at least 2 letters, got {letters}")
    if patient.answer(s_logmar, lens):
        return SimulatedReply(letter_shown, True)
    others = [x for x in letters if x != letter_shown]
    rng = np.random.default_rng([int(seed), int(trial_index), WRONG_LETTER_STREAM])
    return SimulatedReply(others[int(rng.integers(len(others)))], False)
