"""The engine's side of a visit's near (reading) addition in the app (Qt-free).

:class:`~visiontune.app.logic.visit_host.VisitHost` runs the command ``visit_near`` through these
functions, over the trial log alone (nothing is kept between commands, so an engine killed
mid-step resumes at the same letter):

- who gets it: a visit whose near step has begun, else one not skipped whose patient is aged
  :data:`~visiontune.session.near_visit.NEAR_FROM_AGE_YEARS` or more (the clinician may begin it
  for any patient from the finish page);
- :func:`begin`: the step's near distance (the clinic's, 40 cm by default) is recorded before any
  letter; for a SIMULATED patient with the simulated eyes looking through their final
  prescriptions, as ``visiontune visit run --simulate`` records them
  (:func:`~visiontune.session.near_visit.drive_simulated_near`);
- :func:`question`: the next letter, right eye then left
  (:class:`~visiontune.refraction.near_add.NearEyeStep` rebuilt from the log); its height on the
  patient screen is ``h = 2 d tan(5 * 10**s / 2 arcmin)`` at the near distance ``d``
  (:func:`~visiontune.display.geometry.letter_height_mm`; ISO 8596), in pixels through the pixel
  pitch of the session's screen calibration. A calibration holds one viewing distance (a lane,
  500 mm or more), so the near letter is drawn for the near distance from the same screen
  geometry (its pixel pitch), and the page says so;
- :func:`answer`: the answer (``+`` read right / ``-`` wrong) written to the trial log first, then
  the eye's add filed when its step is over (an eye whose last answer was written but whose add
  was not, the engine killed between the two, is filed by :func:`settle` on the next command);
- :func:`skip`: not done, with the clinician's reason (:mod:`visiontune.session.near_skip`).

A real patient's letters are chosen from :data:`~visiontune.refraction.near_population.NEAR_LETTERS`
by ``default_rng([seed of the eye's session, eye index, letter index, NEAR_KEY])`` (the same letter
on a resume); a simulated patient's letter and answer are its own
(:meth:`~visiontune.refraction.near_population.NearCase.answer`).
"""

from __future__ import annotations

import logging

import numpy as np

from visiontune.app.logic.visit_flow import NearQuestionView, NearSummary
from visiontune.display.calibration import Calibration
from visiontune.display.geometry import DEFAULT_MIN_INK_PX, letter_height_mm
from visiontune.errors import InvalidInputError, SessionError
from visiontune.refraction.near_add import DEFAULT_NEAR_DISTANCE_CM, check_near_distance_cm
from visiontune.refraction.near_population import NEAR_KEY, NEAR_LETTERS, NearCase, near_case_for_visit
from visiontune.session import near_store
from visiontune.session.near_skip import near_skip, record_near_skip
from visiontune.session.near_visit import NEAR_FROM_AGE_YEARS, NEAR_METHOD, _rebuilt_step, begin_near
from visiontune.session.simulated_visit import recorded_case
from visiontune.session.visit import eye_statuses, final_prescription
from visiontune.session.visit_records import VISIT_EYES

__all__ = ["answer", "begin", "pending", "question", "settle", "skip", "summary", "wanted"]

log = logging.getLogger("visiontune.app.worker")


def wanted(store, vid: int) -> bool:
    """Whether the visit has a near step: begun, or (not skipped) a patient aged 40 or more."""
    if near_store.near_setup(store, vid) is not None:
        return True
    if near_skip(store, vid) is not None:
        return False
    age = store.get_visit(vid).age_years
    return age is not None and age >= NEAR_FROM_AGE_YEARS


def _steps(store, vid: int, setup) -> list:
    """``[(eye, NearEyeStep, NearCase or None)]`` of the eyes in the step, right eye first, rebuilt
    from the log as :mod:`visiontune.session.near_visit` rebuilds them."""
    visit = store.get_visit(vid)
    steps: dict = {}
    out = []
    if setup.simulated is not None:
        for eye in VISIT_EYES:
            if eye in setup.simulated.get("eyes", {}):
                case = NearCase.from_dict(setup.simulated["eyes"][eye])
                out.append((eye, _rebuilt_step(store, vid, eye, setup, case.age_years, steps), case))
        return out
    statuses = eye_statuses(store, vid)
    for eye in VISIT_EYES:
        if statuses[eye].finished:
            out.append((eye, _rebuilt_step(store, vid, eye, setup, float(visit.age_years), steps), None))
    return out


def pending(store, vid: int) -> bool:
    """The visit's near step is wanted and an eye's add is not filed yet."""
    if not wanted(store, vid):
        return False
    setup = near_store.near_setup(store, vid)
    if setup is None:
        return True
    filed = near_store.near_add_records(store, vid)
    return any(eye not in filed for eye, _, _ in _steps(store, vid, setup))


def _file(store, vid: int, eye: str, step, case, demand_d: float):
    result = step.result()
    detail = None
    if case is not None:
        detail = {**result.to_dict(), "true_add_d": case.true_add(demand_d), "mark": "SIMULATED"}
    add = near_store.record_near_add(store, vid, eye, result, method=NEAR_METHOD, detail=detail)
    log.info(
        "visit %d %s: add %+.2f D (95%% %+.2f to %+.2f), near VA %+.2f logMAR at %g cm%s",
        vid,
        eye,
        add.add_d,
        add.lower_d,
        add.upper_d,
        add.near_va_logmar,
        add.distance_cm,
        ", SIMULATED" if case is not None else "",
    )
    return add


def settle(store, vid: int) -> None:
    """File the add of every eye whose letters are over and whose add is not (the engine stopped
    between the last answer and the add)."""
    setup = near_store.near_setup(store, vid)
    if setup is None:
        return
    filed = near_store.near_add_records(store, vid)
    for eye, step, case in _steps(store, vid, setup):
        if eye not in filed and step.next() is None:
            _file(store, vid, eye, step, case, setup.demand_d)


def begin(store, vid: int, distance_cm: float = DEFAULT_NEAR_DISTANCE_CM):
    """Record the near step at ``distance_cm`` (before any letter); returns its NearSetup."""
    visit = store.get_visit(vid)
    distance = check_near_distance_cm(distance_cm)
    if near_store.near_setup(store, vid) is not None:
        raise SessionError(f"visit {vid}: the near step has begun already")
    if near_skip(store, vid) is not None:
        reason = near_skip(store, vid).reason
        raise SessionError(f"visit {vid}: the near step was skipped ({reason}); it cannot begin")
    statuses = eye_statuses(store, vid)
    if not any(s.finished for s in statuses.values()):
        raise SessionError(f"visit {vid}: no eye has a final prescription to add to")
    if any(s.state not in ("finished", "skipped") for s in statuses.values()) or store.visit_balance(vid) is None:
        raise SessionError(
            f"visit {vid}: the near addition follows both eyes' refractions and the binocular balance; nothing recorded"
        )
    if not visit.simulated:
        setup = begin_near(store, vid, distance_cm=distance)
    else:
        cases = {e: recorded_case(store, s.session_id) for e, s in statuses.items() if s.finished}
        eyes = {}
        for i, eye in enumerate(VISIT_EYES):
            if eye not in cases:
                continue
            if cases[eye].age_years is None:
                raise InvalidInputError(f"visit {vid}: the simulated patient has no age; the near addition needs one")
            final = final_prescription(store, vid, eye)
            residual = final.power_vector_array() - cases[eye].true_rx.power_vector_array()
            shared_seed = cases["OD" if "OD" in cases else eye].seed
            eyes[eye] = near_case_for_visit(cases[eye], i, residual, shared_seed).to_dict()
        setup = near_store.start_near(
            store, vid, distance_cm=distance, method=NEAR_METHOD, simulated={"mark": "SIMULATED", "eyes": eyes}
        )
    log.info(
        "visit %d: near addition begun at %g cm%s", vid, setup.distance_cm, ", SIMULATED" if visit.simulated else ""
    )
    return setup


def _geometry(store, vid: int, eye: str, size_logmar: float, distance_cm: float) -> tuple[float, float | None, str]:
    """``(height mm, height px or None, how it is drawn)`` of a near letter."""
    height = letter_height_mm(size_logmar, distance_cm * 10.0)
    status = eye_statuses(store, vid)[eye]
    raw = store.get_session(status.session_id).calibration if status.session_id is not None else None
    if not raw:
        return (
            height,
            None,
            (
                f"{height:.2f} mm tall at {distance_cm:g} cm (no screen calibration recorded: show a "
                "printed near card letter of this height)"
            ),
        )
    cal = Calibration.from_dict(raw)
    px = height / cal.pixel_pitch_mm
    how = (
        f"{height:.2f} mm = {px:.1f} px on the patient screen: the calibration is for "
        f"{cal.viewing_distance_mm / 10:g} cm (distance), so the near letter is drawn for "
        f"{distance_cm:g} cm from the same screen geometry ({cal.pixel_pitch_mm:.4f} mm/px); "
        f"hold the screen at {distance_cm:g} cm"
    )
    if px < DEFAULT_MIN_INK_PX:
        how += (
            f". {px:.1f} px is below the {DEFAULT_MIN_INK_PX:g} px this screen draws faithfully (a 1 px stroke): "
            "the patient screen stays blank; show a printed near letter of this height"
        )
    return height, px, how


def question(store, vid: int) -> NearQuestionView | None:
    """The next near letter (right eye first), or None (not begun, or every add filed)."""
    setup = near_store.near_setup(store, vid)
    if setup is None:
        return None
    filed = near_store.near_add_records(store, vid)
    for eye, step, case in _steps(store, vid, setup):
        if eye in filed:
            continue
        nxt = step.next()
        if nxt is None:
            continue
        phase, q = nxt
        index = len(step.posterior.answers)
        correct = None
        if case is not None:
            letter, correct = case.answer(index, q.add_d, q.size_logmar, setup.demand_d)
        else:
            seed = store.get_session(eye_statuses(store, vid)[eye].session_id).seed
            rng = np.random.default_rng([int(seed), VISIT_EYES.index(eye), index, NEAR_KEY])
            letter = NEAR_LETTERS[int(rng.integers(len(NEAR_LETTERS)))]
        height, px, how = _geometry(store, vid, eye, q.size_logmar, setup.distance_cm)
        return NearQuestionView(
            eye,
            index,
            phase,
            float(q.add_d),
            float(q.size_logmar),
            setup.distance_cm,
            letter,
            height,
            px,
            how,
            final_prescription(store, vid, eye),
            correct,
        )
    return None


def answer(store, vid: int, eye: str, index: int, correct: bool):
    """Record the answer to near letter ``index`` of ``eye`` (the one :func:`question` asks), then
    file the eye's add when its step is over. SessionError (nothing recorded) for another letter."""
    if not isinstance(correct, bool):
        raise InvalidInputError(f"near answer: expected read right (+) or wrong (-), got {correct!r}")
    settle(store, vid)
    q = question(store, vid)
    if q is None or q.eye != eye or q.index != index:
        now = "none" if q is None else f"{q.eye} letter {q.index + 1}"
        raise SessionError(
            f"visit {vid}: near answer to {eye} letter {index + 1}, but the letter asked is {now}; nothing recorded"
        )
    near_store.record_near_answer(
        store,
        vid,
        eye,
        index,
        phase=q.phase,
        add_d=q.add_d,
        size_logmar=q.size_logmar,
        letter=q.letter,
        correct=correct,
    )
    log.info(
        "visit %d %s near letter %d (%s): %s through %+.2f D at %+.2f logMAR -> %s",
        vid,
        eye,
        index + 1,
        q.phase,
        q.letter,
        q.add_d,
        q.size_logmar,
        "right" if correct else "wrong",
    )
    settle(store, vid)
    return near_store.near_add_records(store, vid).get(eye)


def skip(store, vid: int, reason: str):
    """The near step not done, with the clinician's ``reason``."""
    skipped = record_near_skip(store, vid, reason)
    log.info("visit %d: near addition not done (%s)", vid, skipped.reason)
    return skipped


def summary(store, vid: int, distance_cm: float = DEFAULT_NEAR_DISTANCE_CM) -> NearSummary | None:
    """The near step as the pages show it; None when the visit has none and none was skipped."""
    setup = near_store.near_setup(store, vid)
    skipped = near_skip(store, vid)
    if setup is None and skipped is None and not wanted(store, vid):
        return None
    if setup is None:
        return NearSummary(
            False, float(distance_cm), skip_reason=None if skipped is None else skipped.reason, method=NEAR_METHOD
        )
    answers = {e: len(near_store.near_answers(store, vid, e)) for e in VISIT_EYES}
    return NearSummary(True, setup.distance_cm, near_store.near_add_records(store, vid), answers, None, setup.method)
