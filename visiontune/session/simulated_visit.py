"""A whole visit against a simulated patient, headless: both eyes, balance, acuity.

:func:`drive_simulated_visit` takes a visit of the trial log where it stands and runs what is
left: each eye not skipped through a :class:`~visiontune.session.engine.RefractionSession`
(started, or resumed if it stopped), then the binocular balance
(:mod:`visiontune.session.balance`), then the acuity of each eye read on a letter chart through
its final prescription (:mod:`visiontune.session.chart`), then, for a presbyope, the near
addition of each eye (:mod:`visiontune.session.near_visit`). Every answer is written to the log
before the next step is computed, so a visit interrupted anywhere (mid-OS, mid-balance,
mid-near) resumes where it stopped and ends exactly as the uninterrupted one.

The patient's two eyes. The right eye is the session's simulated case
(:func:`~visiontune.refraction.simulated.simulated_case`, drawn by the visit's seed). The left
eye (:func:`fellow_eye_case`) is the same person (age, accommodation, best acuity, slope,
lapses, acuity model) with a refraction close to the right eye's: its power vector is the right
eye's with ``J45`` mirrored (fellow eyes tend to mirror-symmetric oblique axes) plus a
difference drawn from ``N(0, diag(FELLOW_EYE_SD_D²))``; the standard deviations (0.25 D on M,
0.10 D on J0 and J45) are **assumed**, chosen so that most simulated patients have less than
0.5 D between their eyes. Its autorefraction error is that of case 1 of the same population
draw. For a GP (paper) protocol, whose patient lives at one fixed axis in a box, the left eye
is the paper's patient for the left eye's seed instead. Each eye's case is recorded in its
session (note :data:`~visiontune.refraction.simulated.SIMULATED_PATIENT_NOTE`).

Seeds: the right eye's session uses the visit seed, the left eye's ``seed ^ 1``
(:func:`~visiontune.session.visit.os_seed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from visiontune.display.optotypes import load_letter_set
from visiontune.errors import SessionError
from visiontune.optics import PowerVector
from visiontune.refraction.lenses import LensSteps, trial_lens
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.population import PatientCase, draw_cases
from visiontune.refraction.protocol import Protocol
from visiontune.refraction.simulated import (
    DEMO_POPULATION,
    SIMULATED_PATIENT_NOTE,
    simulated_case,
)
from visiontune.refraction.start import StartingPoint, check_in_range
from visiontune.session.balance import BALANCE_METHOD, BalanceQuestion, balance_step, simulated_clearer
from visiontune.session.binocular_acuity import (
    BINOCULAR_CHART_METHOD,
    BinocularPatient,
    ou_seed,
    summation_detail,
)
from visiontune.session.chart import CHART_METHOD, read_chart_simulated
from visiontune.session.engine import RefractionSession
from visiontune.session.near_visit import drive_simulated_near, wants_near
from visiontune.session.store import TrialStore
from visiontune.session.visit import (
    balance_answers,
    end_point,
    eye_statuses,
    final_prescription,
    os_seed,
    reason_not_balanced,
    record_balance_answer,
    record_balance_end,
    start_eye,
)
from visiontune.session.visit_records import VISIT_EYES

__all__ = [
    "FELLOW_EYE_SD_D",
    "VisitProgress",
    "drive_simulated_visit",
    "fellow_eye_case",
    "recorded_case",
    "visit_cases",
]

#: Standard deviations (D) of the difference between the two eyes in M, J0, J45 (assumed).
FELLOW_EYE_SD_D = (0.25, 0.10, 0.10)
FELLOW_KEY = 0xF311


def fellow_eye_case(od: PatientCase, seed: int, protocol: Protocol) -> PatientCase:
    """The left eye of the simulated patient whose right eye is ``od`` (module docstring)."""
    if protocol.model.type == "gp":
        return simulated_case(seed=os_seed(seed), protocol=protocol)
    rng = np.random.default_rng([int(seed), FELLOW_KEY])
    difference = rng.normal(0.0, FELLOW_EYE_SD_D)
    m, j0, j45 = od.true_rx.power_vector_array()
    pv = np.array([m, j0, -j45]) + difference
    true_rx = PowerVector(*pv).to_prescription()
    check_in_range(true_rx, "simulated left eye")
    start_rx = None
    if od.start_rx is not None:
        other = draw_cases(DEMO_POPULATION, 2, int(seed))[1]
        error = other.start_rx.power_vector_array() - other.true_rx.power_vector_array()
        start_rx = trial_lens(pv + error, LensSteps())
    answer_seed = int(rng.integers(0, 2**31 - 1))
    return dataclasses.replace(od, true_rx=true_rx, start_rx=start_rx, seed=answer_seed)


def visit_cases(seed: int, protocol: Protocol) -> dict[str, PatientCase]:
    """``{"OD": case, "OS": case}``: both eyes of the visit's simulated patient for ``seed``."""
    od = simulated_case(seed=int(seed), protocol=protocol)
    return {"OD": od, "OS": fellow_eye_case(od, seed, protocol)}


@dataclass(frozen=True)
class VisitProgress:
    """Callbacks of :func:`drive_simulated_visit` (each optional): ``trial(eye, trial,
    session)`` after each recorded answer, ``say(text)`` for a line of progress."""

    trial: Callable | None = None
    say: Callable[[str], None] | None = None

    def line(self, text: str) -> None:
        if self.say is not None:
            self.say(text)


def recorded_case(store: TrialStore, session_id: int) -> PatientCase:
    """The simulated case recorded with a session (the last note of that name)."""
    found = None
    for event in store.events(session_id):
        payload = event.payload
        if event.kind.value == "note" and isinstance(payload, dict) and payload.get("text") == SIMULATED_PATIENT_NOTE:
            found = payload.get("data")
    if found is None:
        raise SessionError(f"session {session_id} has no simulated patient on record; it cannot be run headless")
    return simulated_case(stored=found)


def _visit_seed(store: TrialStore, visit_id: int, default: int | None) -> int | None:
    """The visit's seed, from a session already started (OD's seed, or OS's ``^ 1``)."""
    for eye, status in eye_statuses(store, visit_id).items():
        if status.session_id is not None:
            seed = store.get_session(status.session_id).seed
            return seed if eye == "OD" else os_seed(seed)
    return default


def drive_simulated_visit(
    store: TrialStore,
    visit_id: int,
    *,
    protocol: Protocol | None = None,
    seed: int | None = None,
    balance: bool = True,
    max_steps: int | None = None,
    progress: VisitProgress | None = None,
    cases: dict | None = None,
    near: bool | None = None,
    near_distance_cm: float | None = None,
) -> bool:
    """Run what is left of simulated visit ``visit_id``; return ``True`` when it is complete,
    ``False`` when ``max_steps`` answers (refraction answers, counted over both eyes) were
    recorded first (the open session is left open to resume).

    ``protocol`` and ``seed`` serve eyes not started yet: by default the protocol and seed of
    an eye already started (the protocol's seed for a new visit). ``balance``: do the binocular
    balance (``False`` records it as not done, "not requested"). ``cases``: the simulated
    patient's eyes not started yet (default :func:`visit_cases` of ``seed``). ``near``: the near
    addition step (:mod:`visiontune.session.near_visit`) after the acuities, ``None`` by the age
    rule; ``near_distance_cm`` its distance (default 40 cm).
    """
    progress = progress or VisitProgress()
    visit = store.get_visit(visit_id)
    if not visit.simulated:
        raise SessionError(f"visit {visit.visit_id} is a real patient's; it is run in the app, not headless")
    seed = _visit_seed(store, visit.visit_id, seed)
    statuses = eye_statuses(store, visit.visit_id)
    if protocol is None:
        started = [s for s in statuses.values() if s.session_id is not None]
        if not started:
            raise SessionError(f"visit {visit.visit_id}: no eye started and no protocol given")
        protocol = store.get_session(started[0].session_id).protocol
    seed = protocol.seed if seed is None else seed
    drawn = visit_cases(seed, protocol) if cases is None else cases
    cases = {}
    steps = 0
    for eye in VISIT_EYES:
        status = statuses[eye]
        if status.state == "skipped":
            progress.line(f"{eye}: skipped ({status.skip_reason})")
            continue
        if status.state == "discarded":
            raise SessionError(
                f"visit {visit.visit_id}: the session of {eye} was discarded; skip the eye or start it again in the app"
            )
        if status.finished:
            cases[eye] = recorded_case(store, status.session_id)
            continue
        if status.state == "not started":
            case = drawn[eye]
            start = StartingPoint(case.start_rx, case.start_source, case.age_years)
            session = start_eye(
                store, visit.visit_id, eye, protocol=protocol, seed=seed if eye == "OD" else os_seed(seed), start=start
            )
            session.note(SIMULATED_PATIENT_NOTE, case.to_dict())
        else:
            session = RefractionSession.resume(store, status.session_id)
        with session:
            case = recorded_case(store, session.session_id)
            cases[eye] = case
            progress.line(f"{eye}: session {session.session_id}, {len(session.trials())} answers so far")
            budget = None if max_steps is None else max(0, max_steps - steps)
            count = [0]

            def on_trial(trial, s, eye=eye, count=count):
                count[0] += 1
                if progress.trial is not None:
                    progress.trial(eye, trial, s)

            result = session.run(
                SimulatedPresenter(case.patient(session.protocol.n_alternatives)), progress=on_trial, max_steps=budget
            )
            steps += count[0]
            if result is None:
                progress.line(f"{eye}: session {session.session_id} left open after {len(session.trials())} answers")
                return False
    _balance(store, visit.visit_id, cases, balance, progress)
    _acuities(store, visit.visit_id, cases, protocol, progress)
    if wants_near(store, visit.visit_id, near):
        drive_simulated_near(store, visit.visit_id, cases, distance_cm=near_distance_cm, progress=progress)
    return True


def _balance(store: TrialStore, visit_id: int, cases: dict, wanted: bool, progress: VisitProgress) -> None:
    if store.visit_balance(visit_id) is not None:
        return
    statuses = eye_statuses(store, visit_id)
    reason = reason_not_balanced(statuses) if wanted else "not requested"
    if reason is not None:
        store.record_balance(visit_id, outcome="not done", method=BALANCE_METHOD, reason=reason)
        progress.line(f"binocular balance not done: {reason}")
        return
    end_od, end_os = end_point(store, visit_id, "OD"), end_point(store, visit_id, "OS")
    patients = {e: cases[e].patient(26) for e in VISIT_EYES}  # only their acuity through a lens is used
    answers = balance_answers(store, visit_id, end_od, end_os)
    while isinstance(step := balance_step(end_od, end_os, answers), BalanceQuestion):
        clearer = simulated_clearer(patients["OD"], patients["OS"], step, cases["OD"].seed, cases["OS"].seed)
        record_balance_answer(store, visit_id, step, clearer)
        progress.line(
            f"balance question {step.index + 1}: OD +{step.plus_od_d:.2f} D, OS +{step.plus_os_d:.2f} D "
            f"over the end points -> {'both equal' if clearer == 'equal' else clearer + ' clearer'}"
        )
        answers.append(clearer)
    record_balance_end(store, visit_id, step)
    progress.line(
        f"binocular balance: {step.outcome}; OD {step.plus_change_od_d:+.2f} D, OS {step.plus_change_os_d:+.2f} D"
    )


def _acuities(store: TrialStore, visit_id: int, cases: dict, protocol: Protocol, progress: VisitProgress) -> None:
    recorded = store.visit_acuities(visit_id)
    for eye, case in cases.items():
        lens = final_prescription(store, visit_id, eye)
        if any(a.eye == eye and a.lenses[eye].is_equivalent(lens, 1e-6) for a in recorded):
            continue
        session_id = eye_statuses(store, visit_id)[eye].session_id
        session_protocol = store.get_session(session_id).protocol
        letters = tuple(load_letter_set(session_protocol.letter_set).letters)
        patient = case.patient(session_protocol.n_alternatives)
        reading = read_chart_simulated(patient, lens, letters, case.seed)
        store.record_visit_acuity(
            visit_id, eye, reading.va_logmar, lenses={eye: lens}, method=CHART_METHOD, detail=reading.detail()
        )
        progress.line(
            f"{eye}: acuity through {lens.format()}: {reading.va_logmar:+.2f} logMAR "
            f"({reading.letters_correct} letters)"
        )
    _binocular_acuity(store, visit_id, cases, progress)


def _binocular_acuity(store: TrialStore, visit_id: int, cases: dict, progress: VisitProgress) -> None:
    """Both eyes open through both final prescriptions (:mod:`visiontune.session.binocular_acuity`),
    once per pair of final lenses; nothing when an eye was skipped."""
    lenses = {e: final_prescription(store, visit_id, e) if e in cases else None for e in VISIT_EYES}
    if any(rx is None for rx in lenses.values()):
        return
    if any(
        a.eye == "OU" and all(a.lenses[e].is_equivalent(lenses[e], 1e-6) for e in VISIT_EYES)
        for a in store.visit_acuities(visit_id)
    ):
        return
    session_protocol = store.get_session(eye_statuses(store, visit_id)["OD"].session_id).protocol
    letters = tuple(load_letter_set(session_protocol.letter_set).letters)
    both = BinocularPatient(*(cases[e].patient(session_protocol.n_alternatives) for e in VISIT_EYES))
    reading = read_chart_simulated(both, lenses, letters, ou_seed(cases["OD"].seed))
    store.record_visit_acuity(
        visit_id,
        "OU",
        reading.va_logmar,
        lenses=lenses,
        method=BINOCULAR_CHART_METHOD,
        detail={
            **reading.detail(),
            "model": summation_detail(**{f"va_{e.lower()}": v for e, v in both.acuities(lenses).items()}),
        },
    )
    progress.line(
        f"both eyes open: acuity through OD {lenses['OD'].format()}, OS {lenses['OS'].format()}: "
        f"{reading.va_logmar:+.2f} logMAR ({reading.letters_correct} letters)"
    )
