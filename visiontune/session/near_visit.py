"""The visit step "near addition", headless against a simulated patient (after both eyes' distance
prescriptions, the balance and the acuities).

For each eye with a final prescription: the tentative add by age put in the trial frame, near
letters through candidate adds chosen by :class:`~visiontune.refraction.near_add.NearPosterior`
(information per second), the add filed when its 95% credible region is within ±0.25 D (or at
the budget), then :data:`~visiontune.refraction.near_add.CHECK_LETTERS` letters through the filed
add, the near acuity being the posterior's prediction after them. The left eye starts from the
right eye's amplitude posterior, widened (:func:`~visiontune.refraction.near_add.fellow_prior`).

The step's distance and the SIMULATED eyes (:func:`~visiontune.refraction.near_population.near_case_for_visit`:
each eye looks through its final prescription, its residual from the true correction kept) are
written to the trial log before the first near letter; every answer is written before the next
question is computed, and a resumed step replays them, so a visit killed mid-step ends as the
uninterrupted one.

Who gets it: patients aged :data:`NEAR_FROM_AGE_YEARS` or more, unless the caller says
(``near=True``/``False``); a visit whose near step has begun always finishes it.
"""

from __future__ import annotations

from visiontune.errors import InvalidInputError, SessionError
from visiontune.refraction.near_add import (
    DEFAULT_NEAR_DISTANCE_CM,
    NearEyeStep,
    NearPosterior,
    check_near_distance_cm,
    fellow_prior,
    near_demand_d,
    tentative_add,
)
from visiontune.refraction.near_population import NearCase, near_case_for_visit
from visiontune.session import near_store
from visiontune.session.visit import eye_statuses, final_prescription
from visiontune.session.visit_records import VISIT_EYES

__all__ = [
    "NEAR_FROM_AGE_YEARS",
    "NEAR_METHOD",
    "answer_near",
    "begin_near",
    "drive_simulated_near",
    "next_near_question",
    "wants_near",
]

#: Patients from this age (years) get the near step by default (presbyopia: Millodot 2009's table
#: starts at 45; we begin at 40).
NEAR_FROM_AGE_YEARS = 40
NEAR_METHOD = (
    "near letters through lenses -3 D to add +0.5 D chosen by information per second; "
    "add = max(1/d - U/2, 0) "
    "(Millodot 2009), 95% region within +/-0.25 D; near VA predicted after 3 letters"
)


def wants_near(store, visit_id: int, near: bool | None) -> bool:
    """Whether the visit gets a near step: begun already, else ``near``, else the age rule."""
    if near_store.near_setup(store, visit_id) is not None:
        return True
    if near is not None:
        return bool(near)
    age = store.get_visit(visit_id).age_years
    return age is not None and age >= NEAR_FROM_AGE_YEARS


def _say(progress, text: str) -> None:
    if progress is not None:
        progress.line(text)


def drive_simulated_near(
    store, visit_id: int, cases: dict, *, distance_cm: float | None = None, progress=None, on_answer=None
) -> dict:
    """Run what is left of the near step of simulated visit ``visit_id``; return ``{eye: NearAddRecord}``.

    ``cases``: ``{eye: PatientCase}`` of the eyes refracted (their ages and answers).
    ``distance_cm``: the near distance (default 40 cm; a resumed step keeps its own and refuses
    another). ``on_answer(eye, record)``: called after each answer is durable."""
    visit = store.get_visit(visit_id)
    if not visit.simulated:
        raise SessionError(f"visit {visit.visit_id} is a real patient's; its near step is done in the app")
    setup = near_store.near_setup(store, visit.visit_id)
    if setup is None:
        distance = check_near_distance_cm(DEFAULT_NEAR_DISTANCE_CM if distance_cm is None else distance_cm)
        statuses = eye_statuses(store, visit.visit_id)
        eyes = {}
        for i, eye in enumerate(VISIT_EYES):
            if not statuses[eye].finished or eye not in cases:
                continue
            if cases[eye].age_years is None:
                raise InvalidInputError("near addition: the simulated patient has no age; give --age")
            final = final_prescription(store, visit.visit_id, eye)
            residual = final.power_vector_array() - cases[eye].true_rx.power_vector_array()
            shared_seed = cases["OD" if "OD" in cases else eye].seed
            eyes[eye] = near_case_for_visit(cases[eye], i, residual, shared_seed).to_dict()
        if not eyes:
            raise SessionError(f"visit {visit.visit_id}: no eye has a final prescription to add to")
        setup = near_store.start_near(
            store,
            visit.visit_id,
            distance_cm=distance,
            method=NEAR_METHOD,
            simulated={"mark": "SIMULATED", "eyes": eyes},
        )
        _say(progress, f"near addition at {distance:g} cm (demand {near_demand_d(distance):.2f} D)")
    elif distance_cm is not None and abs(check_near_distance_cm(distance_cm) - setup.distance_cm) > 1e-9:
        raise InvalidInputError(
            f"--near-distance-cm: visit {visit.visit_id}'s near step is at "
            f"{setup.distance_cm:g} cm, "
            f"not {distance_cm:g} cm; it continues at its own distance"
        )
    demand = setup.demand_d
    filed = near_store.near_add_records(store, visit.visit_id)
    simulated = (setup.simulated or {}).get("eyes", {})
    steps: dict = {}
    for eye in VISIT_EYES:
        if eye not in simulated:
            continue
        case = NearCase.from_dict(simulated[eye])
        step = _rebuilt_step(store, visit.visit_id, eye, setup, case.age_years, steps)
        if eye not in filed:
            index = len(step.posterior.answers)
            while (nxt := step.next()) is not None:
                phase, q = nxt
                letter, correct = case.answer(index, q.add_d, q.size_logmar, demand)
                rec = near_store.record_near_answer(
                    store,
                    visit.visit_id,
                    eye,
                    index,
                    phase=phase,
                    add_d=q.add_d,
                    size_logmar=q.size_logmar,
                    letter=letter,
                    correct=correct,
                )
                step.record(phase, q.add_d, q.size_logmar, correct)
                index += 1
                if on_answer is not None:
                    on_answer(eye, rec)
            result = step.result()
            detail = {**result.to_dict(), "true_add_d": case.true_add(demand), "mark": "SIMULATED"}
            filed[eye] = near_store.record_near_add(
                store, visit.visit_id, eye, result, method=NEAR_METHOD, detail=detail
            )
            _say(progress, _filed_line(filed[eye], result))
    return filed


def _filed_line(r, result) -> str:
    far = "infinity" if r.far_point_cm is None else f"{r.far_point_cm:g} cm"
    near = "-" if r.near_point_cm is None else f"{r.near_point_cm:g} cm"
    return (
        f"{r.eye}: add {r.add_d:+.2f} D (95% {r.lower_d:+.2f} to {r.upper_d:+.2f}, tentative by age "
        f"{r.tentative_add_d:+.2f}) after {result.letters} letters, {result.seconds:.0f} s; clear "
        f"from {near} to {far}; near acuity {r.near_va_logmar:+.2f} logMAR"
    )


def _rebuilt_step(store, visit_id: int, eye: str, setup, age_years: float, steps: dict) -> NearEyeStep:
    """The eye's step rebuilt from the trial log: its prior (the right eye's posterior, widened, for
    the left eye when the right one has answers; else the age prior), then its recorded answers in
    order. ``steps`` caches the eyes rebuilt so far (the right eye first)."""
    prior = fellow_prior(steps["OD"].posterior) if eye == "OS" and "OD" in steps else None
    step = NearEyeStep(
        NearPosterior(setup.demand_d, age_years, prior_amplitude=prior), tentative_add(age_years, setup.distance_cm)
    )
    for a in near_store.near_answers(store, visit_id, eye):
        step.record(a.phase, a.add_d, a.size_logmar, a.correct)
    steps[eye] = step
    return step


# --- a real patient's near step: the engine's side (the clinician enters each answer) ------------
def begin_near(store, visit_id: int, *, distance_cm: float = DEFAULT_NEAR_DISTANCE_CM):
    """Start the near step of a real patient's visit at ``distance_cm`` (the visit needs an age:
    the prior and the tentative add come from it). Returns the :class:`~visiontune.session.near_store.NearSetup`."""
    visit = store.get_visit(visit_id)
    if visit.simulated:
        raise SessionError(f"visit {visit.visit_id} is a simulated patient's; run it with drive_simulated_near")
    if visit.age_years is None:
        raise InvalidInputError(f"visit {visit.visit_id}: the near addition needs the patient's age (none recorded)")
    return near_store.start_near(store, visit.visit_id, distance_cm=distance_cm, method=NEAR_METHOD)


def _real_eyes(store, visit_id: int) -> list[str]:
    statuses = eye_statuses(store, visit_id)
    return [e for e in VISIT_EYES if statuses[e].finished]


def next_near_question(store, visit_id: int):
    """``(eye, index, phase, NearQuestion)``: the next near letter of a real patient's visit (the right
    eye's step first, then the left's), computed from the trial log; ``None`` when every eye with a
    final prescription has its add filed. An eye whose last answer is in the log but whose add is not
    (the process ended between the two) has its add filed here first, from those answers.
    SessionError before :func:`begin_near`."""
    visit = store.get_visit(visit_id)
    setup = near_store.near_setup(store, visit.visit_id)
    if setup is None:
        raise SessionError(f"visit {visit.visit_id}: the near step has not begun")
    filed = near_store.near_add_records(store, visit.visit_id)
    steps: dict = {}
    for eye in _real_eyes(store, visit.visit_id):
        step = _rebuilt_step(store, visit.visit_id, eye, setup, float(visit.age_years), steps)
        if eye in filed:
            continue
        nxt = step.next()
        if nxt is not None:
            return eye, len(step.posterior.answers), nxt[0], nxt[1]
        near_store.record_near_add(store, visit.visit_id, eye, step.result(), method=NEAR_METHOD)
    return None


def answer_near(store, visit_id: int, eye: str, index: int, correct: bool, letter: str | None = None):
    """Record the answer to near question ``index`` of ``eye`` (the one :func:`next_near_question`
    gives: its lens and size are recomputed from the log, so nothing else can be recorded), then file
    the eye's add when its step is over. Returns the :class:`~visiontune.session.near_store.NearAddRecord`
    filed, or ``None`` while the step goes on. SessionError when it is not the question asked."""
    asked = next_near_question(store, visit_id)
    if asked is None or asked[0] != eye or asked[1] != index:
        now = "none" if asked is None else f"{asked[0]} question {asked[1]}"
        raise SessionError(f"visit {visit_id}: near answer to {eye} question {index}, but the question asked is {now}")
    _, _, phase, q = asked
    near_store.record_near_answer(
        store,
        visit_id,
        eye,
        index,
        phase=phase,
        add_d=q.add_d,
        size_logmar=q.size_logmar,
        letter=letter,
        correct=correct,
    )
    visit = store.get_visit(visit_id)
    setup = near_store.near_setup(store, visit.visit_id)
    steps: dict = {}
    for e in _real_eyes(store, visit.visit_id):
        step = _rebuilt_step(store, visit.visit_id, e, setup, float(visit.age_years), steps)
        if e == eye:
            break
    if step.next() is not None:
        return None
    return near_store.record_near_add(store, visit.visit_id, eye, step.result(), method=NEAR_METHOD)
