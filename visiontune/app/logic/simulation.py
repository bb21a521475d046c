"""The simulated patient of the app's demo mode: who they are, and what they say.

The patient is :func:`visiontune.refraction.simulated.simulated_case`, the one ``visiontune
session run --simulate`` draws for the same seed and protocol: for an optics protocol a case of
the validation population (any cylinder axis, an autorefraction reading with the published
error as the starting prescription), for a GP protocol the paper's patient. The case is
recorded with the session (note :data:`SIMULATED_PATIENT_NOTE`), so a resumed session, the
engine process (the true curve on the plots) and the GUI process (the answers) all simulate
the patient as recorded. The answer to trial ``k`` draws from the patient's stream keyed by
``k`` (:meth:`~visiontune.optics.SimulatedPatient.answer_trial`, as the headless session's
presenter does): a correct answer names the letter shown; a wrong one names another letter of
the set, drawn uniformly with ``default_rng([seed, trial index, 17])``.

A starting prescription typed on the start screen is the simulated patient's reading
(:func:`case_around_start`): the patient is drawn around it, so that the search starts where the
clinician said it does and the truth lies as far from it as the population's starting
prescriptions lie from theirs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.optics.prescription import PowerVector
from visiontune.refraction.population import PatientCase
from visiontune.refraction.simulated import SIMULATED_PATIENT_NOTE, simulated_case
from visiontune.refraction.start import StartingPoint, check_in_range

__all__ = [
    "SIMULATED_PATIENT_NOTE",
    "WRONG_LETTER_STREAM",
    "SimulatedReply",
    "case_around_start",
    "case_patient",
    "new_case",
    "simulated_reply",
]

WRONG_LETTER_STREAM = 17


def new_case(seed: int, protocol, *, age_years: float | None = None) -> PatientCase:
    """The simulated patient of a new session of ``protocol`` with ``seed`` (the command
    line's for the same seed); ``age_years`` replaces the case's age (accommodation follows)."""
    return simulated_case(seed=int(seed), protocol=protocol, age_years=age_years)


def case_patient(stored: dict, n_alternatives: int) -> SimulatedPatient:
    """The :class:`SimulatedPatient` of a recorded case (``PatientCase.to_dict()``)."""
    return simulated_case(stored=stored).patient(n_alternatives)


def case_around_start(case: PatientCase, start: StartingPoint) -> PatientCase:
    """``case`` moved under a typed starting prescription ``start.rx``: its true correction is the
    typed start minus the case's own start error, in power vectors (Thibos 1997),

        P*_true = P_typed - (P_case_start - P*_case_true),

    the error of ``adult-clinic``'s autorefraction as the case drew it with the session's seed
    (:mod:`visiontune.refraction.population`: ``M`` error ``N(-0.20, 0.35)`` D, ``J0`` and ``J45``
    ``N(0, 0.15)`` D, read in 0.25 D and 1 deg steps); the population models no other source, so a
    typed retinoscopy or spectacle lens is given the same error. The case's start becomes the
    typed one, with its source. Unchanged without a typed prescription, or for a case without a
    start (a GP protocol's patient, the paper's, which starts from nothing); the case itself when
    its own reading is typed (as ``visiontune session run --simulate`` draws it). InvalidInputError
    when the truth so drawn falls outside the range a refraction covers."""
    if start.rx is None or case.start_rx is None:
        return case
    if start.rx == case.start_rx:  # the case's own reading typed: the same patient, to the last bit
        return case if start.source == case.start_source else dataclasses.replace(case, start_source=start.source)
    error = case.start_rx.power_vector_array() - case.true_rx.power_vector_array()
    true_rx = PowerVector(*(start.rx.power_vector_array() - error)).to_prescription().to_minus_cylinder()
    check_in_range(
        true_rx, "the simulated patient's true correction (the typed starting prescription minus its drawn error)"
    )
    return dataclasses.replace(case, true_rx=true_rx, start_rx=start.rx, start_source=start.source)


@dataclass(frozen=True)
class SimulatedReply:
    """The letter the simulated patient names and whether it is the one shown."""

    letter_named: str
    correct: bool


def simulated_reply(
    patient: SimulatedPatient,
    *,
    s_logmar: float,
    lens: Prescription,
    letter_shown: str,
    letters: tuple[str, ...],
    seed: int,
    trial_index: int,
) -> SimulatedReply:
    """The answer of ``patient`` to ``letter_shown`` at ``s_logmar`` through ``lens`` in trial
    ``trial_index`` (0-based, void trials counted)."""
    if letter_shown not in letters:
        raise InvalidInputError(f"letter_shown: {letter_shown!r} is not in the letter set {letters}")
    if len(letters) < 2:
        raise InvalidInputError(f"letters: a letter task needs at least 2 letters, got {letters}")
    if patient.answer_trial(int(trial_index), float(s_logmar), lens, letter_shown):
        return SimulatedReply(letter_shown, True)
    others = [x for x in letters if x != letter_shown]
    rng = np.random.default_rng([int(seed), int(trial_index), WRONG_LETTER_STREAM])
    return SimulatedReply(others[int(rng.integers(len(others)))], False)
