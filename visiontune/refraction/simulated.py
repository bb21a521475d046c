"""The simulated patient of a headless or demo session: one case of the validation population.

``visiontune session run --simulate`` and the app's demo mode run against a patient drawn from
the ``adult-clinic`` population (:mod:`visiontune.refraction.population`) by the session's seed:
any cylinder axis, an autorefraction with the published error as the starting prescription. A
flag may fix the true correction, the slope, the best acuity or the age; the case is recorded
with the session (:data:`SIMULATED_PATIENT_NOTE`) so a resumed session answers exactly as the
uninterrupted one would.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.accommodation import hofstetter_amplitude_d
from visiontune.refraction.answer_models import AnswerModelPresenter, answer_model_by_name
from visiontune.refraction.lenses import LensSteps, trial_lens
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.population import PatientCase, draw_cases
from visiontune.refraction.start import check_in_range

__all__ = [
    "ANSWER_MODEL_KEY",
    "DEMO_POPULATION",
    "SIMULATED_PATIENT_NOTE",
    "paper_case",
    "parse_true_rx",
    "recorded_answer_model",
    "simulated_case",
    "simulated_presenter",
    "with_answer_model",
]

#: Stream of the paper patient's true correction (``default_rng([seed, 7919])``, as before).
PAPER_TRUE_RX_STREAM = 7919
#: The note under which a session records its simulated patient.
SIMULATED_PATIENT_NOTE = "simulated patient"
DEMO_POPULATION = "adult-clinic"
#: The key of the simulated patient's note holding its answer model (absent: the session's own model).
ANSWER_MODEL_KEY = "answer_model"


def paper_case(seed: int, protocol) -> PatientCase:
    """The patient of Fauvel & Chalk (contextual BO) §5.3 for a GP protocol (the paper's fixed-axis search): true
    sphere and cylinder uniform in the protocol's box at its axis (``default_rng([seed, 7919])``),
    best acuity 0, slope 5, no lapse, no starting prescription."""
    sp = protocol.search_space
    box = np.array([sp.sphere_d, sp.cylinder_d], dtype=float)
    s, c = np.random.default_rng([int(seed), PAPER_TRUE_RX_STREAM]).uniform(box[:, 0], box[:, 1])
    return PatientCase(
        0,
        Prescription(float(s), float(c), sp.axis_deg),
        0.0,
        5.0,
        0.0,
        None,
        0.0,
        None,
        "none",
        "blendowske",
        False,
        False,
        int(seed),
        population="Fauvel & Chalk (contextual BO) §5.3",
    )


def simulated_case(
    *,
    seed: int | None = None,
    protocol=None,
    true_rx: Prescription | None = None,
    slope: float | None = None,
    best_va: float | None = None,
    age_years: float | None = None,
    stored: dict | None = None,
) -> PatientCase:
    """The simulated patient: ``stored`` (a case's ``to_dict()``) as recorded; else, for a GP
    ``protocol``, the paper's patient (:func:`paper_case`), otherwise case 0 of
    :data:`DEMO_POPULATION` drawn with ``seed``; with the given fields replaced. A replaced
    true correction keeps the case's autorefraction error (the start moves with it); for a GP
    protocol it must lie in the protocol's box, and one given without an axis takes the
    protocol's fixed axis."""
    if stored is not None:
        return PatientCase.from_dict(stored)
    gp = protocol is not None and protocol.model.type == "gp"
    case = paper_case(int(seed), protocol) if gp else draw_cases(DEMO_POPULATION, 1, int(seed))[0]
    changes: dict = {}
    if true_rx is not None:
        if gp:
            true_rx = _in_gp_box(true_rx, protocol)
        check_in_range(true_rx, "--true-rx")
        changes["true_rx"] = true_rx
        if case.start_rx is not None:
            error = case.start_rx.power_vector_array() - case.true_rx.power_vector_array()
            changes["start_rx"] = trial_lens(true_rx.power_vector_array() + error, LensSteps())
    if slope is not None:
        if not 0.2 <= slope <= 50.0:
            raise InvalidInputError(f"--slope: expected a psychometric slope in [0.2, 50] logMAR^-1, got {slope}")
        changes["slope"] = float(slope)
    if best_va is not None:
        if not -0.3 <= best_va <= 1.0:
            raise InvalidInputError(f"--best-va: expected a best-corrected acuity in [-0.3, 1.0] logMAR, got {best_va}")
        changes["best_corrected_logmar"] = float(best_va)
    if age_years is not None:
        if not 3.0 <= age_years <= 110.0:
            raise InvalidInputError(f"--age: expected an age in [3, 110] years, got {age_years}")
        changes["age_years"] = float(age_years)
        changes["accommodation_d"] = float(hofstetter_amplitude_d(age_years, "mean"))
    return dataclasses.replace(case, **changes) if changes else case


def _in_gp_box(rx: Prescription, protocol) -> Prescription:
    sp = protocol.search_space
    if rx.cylinder_d != 0.0 and abs((rx.axis_deg - sp.axis_deg + 90.0) % 180.0 - 90.0) > 1e-9:
        raise InvalidInputError(
            f"--true-rx: the protocol {protocol.name} searches at the fixed axis {sp.axis_deg:g}; "
            f"got axis {rx.axis_deg:g} (write S C alone, or use an optics protocol)"
        )
    if not (sp.sphere_d[0] <= rx.sphere_d <= sp.sphere_d[1] and sp.cylinder_d[0] <= rx.cylinder_d <= sp.cylinder_d[1]):
        raise InvalidInputError(
            f"--true-rx: {rx.sphere_d:+.2f} {rx.cylinder_d:+.2f} D lies outside the protocol's search "
            f"space sphere {list(sp.sphere_d)}, cylinder {list(sp.cylinder_d)}"
        )
    return Prescription(rx.sphere_d, rx.cylinder_d, sp.axis_deg)


def parse_true_rx(text: str, protocol) -> Prescription:
    """``"S C x A"`` (``--true-rx``); for a GP protocol ``"S C"`` alone is at its fixed axis."""
    fixed_axis = protocol.search_space.axis_deg if protocol is not None and protocol.model.type == "gp" else None
    try:
        return Prescription.parse(text, default_axis_deg=fixed_axis)
    except InvalidInputError as exc:
        raise InvalidInputError(f"--true-rx: {exc}") from None


def simulated_presenter(patient, answer_model: str | None = None) -> SimulatedPresenter:
    """The presenter of a simulated ``patient``: answering by the session's own model (None), or
    by the answer model of that name (:mod:`visiontune.refraction.answer_models`)."""
    if answer_model is None:
        return SimulatedPresenter(patient)
    return AnswerModelPresenter(patient, answer_model_by_name(answer_model))


def with_answer_model(case_data: dict, answer_model: str | None) -> dict:
    """The note's data: a case's ``to_dict()`` and, when given, its answer model (checked)."""
    if answer_model is None:
        return case_data
    return {**case_data, ANSWER_MODEL_KEY: answer_model_by_name(answer_model).name}


def recorded_answer_model(stored: dict | None) -> str | None:
    """The answer model recorded with a session's simulated patient (None: the session's own)."""
    name = None if stored is None else stored.get(ANSWER_MODEL_KEY)
    return None if name is None else answer_model_by_name(str(name)).name
