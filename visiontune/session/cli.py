"""``visiontune session run|resume`` and ``visiontune sessions list|show|discard|durations``.

``session run --simulate`` drives a whole session headless against a simulated patient through
the session engine and the SQLite trial log; ``session resume ID --simulate`` continues one.
``sessions discard ID --reason TEXT`` closes a session that has no answers, for good, with the
reason on record (it is never deleted; ``sessions list`` shows it as ``discarded``, the app's
resume offer leaves it out). ``sessions durations`` reports the answer times per kind of question
and the gaps between answers with the lens kept or changed, so what a change of lens costs
(:mod:`visiontune.session.answer_times`), real patients' only unless ``--include-simulated``.
"""

from __future__ import annotations

import argparse
import json
import sys

from visiontune._argparse import INT64_MAX, bounded_int, db_argument, eye, finite_float
from visiontune.errors import InvalidInputError, SessionError, VisionTuneError, one_line
from visiontune.optics import Prescription
from visiontune.optics.notation import TRUTH, signed
from visiontune.refraction.answer_models import ANSWER_MODELS
from visiontune.refraction.lens_devices import DEVICE_KINDS, protocol_for_device
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.refraction.result import parse_result
from visiontune.refraction.simulated import (
    SIMULATED_PATIENT_NOTE,
    parse_true_rx,
    recorded_answer_model,
    simulated_case,
    simulated_presenter,
    with_answer_model,
)
from visiontune.refraction.start import SOURCES, StartingPoint
from visiontune.session.answer_times import answer_times
from visiontune.session.engine import RefractionSession
from visiontune.session.lens_device import protocol_with_lens_change_seconds
from visiontune.session.records import lens_fields
from visiontune.session.store import TrialStore
from visiontune.session.trial_text import held_text, lens_text, line_text, slider_text

#: The flags that describe a new simulated patient: a resumed session answers as the one recorded.
PATIENT_FLAGS = ("--true-rx", "--slope", "--best-va", "--age", "--patient-seed")


def _patient_arguments(parser: argparse.ArgumentParser, *, resume: bool = False) -> None:
    """The simulated patient's flags; ``resume``: accepted only to be refused with a reason
    (:func:`refuse_patient_flags`), hidden from the help."""
    hidden = argparse.SUPPRESS
    parser.add_argument(
        "--simulate",
        action="store_true",
        required=True,
        help="a simulated patient answers (the only headless presenter)",
    )
    parser.add_argument(
        "--true-rx",
        metavar='"S C x A"',
        help=hidden
        if resume
        else "simulated patient's correction as a clinician writes it, e.g. "
        '"-1.25 -0.50 x 30", "-2.25/-1.25x35" (default: a patient of the validation population '
        "drawn from --seed)",
    )
    parser.add_argument(
        "--slope", type=finite_float, default=None, help=hidden if resume else "simulated psychometric slope, logMAR^-1"
    )
    parser.add_argument(
        "--best-va",
        type=finite_float,
        default=None,
        help=hidden if resume else "simulated best-corrected acuity, logMAR",
    )
    parser.add_argument(
        "--age",
        type=finite_float,
        default=None,
        help=hidden if resume else "simulated patient's age, years (accommodation)",
    )
    parser.add_argument(
        "--patient-seed",
        type=bounded_int("--patient-seed", 0, INT64_MAX),
        default=None,
        help=hidden if resume else "seed of the simulated answers (default: --seed)",
    )
    _drive_arguments(parser)


def refuse_patient_flags(args, what: str) -> None:
    """Refuse the :data:`PATIENT_FLAGS` given to a resume: ``what`` answers as recorded."""
    given = [flag for flag in PATIENT_FLAGS if getattr(args, flag[2:].replace("-", "_"), None) is not None]
    if given:
        raise InvalidInputError(
            f"{', '.join(given)}: {what} keeps the simulated patient recorded with it, so that "
            "it answers as the uninterrupted one would; leave these flags out"
        )


def _drive_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-steps",
        type=bounded_int("--max-steps", 1, 1_000_000),
        default=None,
        help="stop after this many answers, leaving it open",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-trial progress")
    _device_argument(parser)


def _device_argument(parser: argparse.ArgumentParser) -> None:
    """``--device``: a lens device sets each lens (:mod:`visiontune.devices`; docs/devices.md)."""
    parser.add_argument(
        "--device",
        metavar="cv5000:PORT|manual",
        default=None,
        help="a motorized phoropter sets and confirms each lens before it is shown (cv5000:/dev/ttyUSB0, "
        "or the port `python -m visiontune.devices.emulator` prints); 'manual': confirm each lens "
        "at the terminal; a device fault pauses the session, answers kept",
    )


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser("run", help="start a session")
    run.add_argument(
        "--protocol", default=DEFAULT_PROTOCOL, help=f"shipped protocol name or .toml path (default {DEFAULT_PROTOCOL})"
    )
    run.add_argument("--patient-id", default="SIM-0001", help="pseudonymous patient id")
    run.add_argument("--eye", default="OD", type=eye, metavar="OD|OS", help="the eye refracted (od, os accepted)")
    run.add_argument(
        "--seed",
        type=bounded_int("--seed", 0, INT64_MAX),
        default=None,
        help="session seed (default: the protocol's)",
    )
    start_arguments(run)
    run.add_argument(
        "--lens-device",
        choices=tuple(DEVICE_KINDS),
        default=None,
        help="the clinic's lens device: each change of lens priced at its seconds "
        "(visiontune.refraction.lens_devices; default: the protocol's figure)",
    )
    run.add_argument(
        "--answer-model",
        choices=tuple(ANSWER_MODELS),
        default=None,
        help="the simulated patient answers by this model (visiontune.refraction.answer_models; "
        "default: the session's own model)",
    )
    _patient_arguments(run)
    db_argument(run)
    resume = sub.add_parser("resume", help="continue an unfinished session")
    resume.add_argument("session_id", type=bounded_int("session id", 1, INT64_MAX))
    _patient_arguments(resume, resume=True)
    db_argument(resume)


def add_sessions_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    lst = sub.add_parser("list", help="sessions in the trial log")
    db_argument(lst)
    show = sub.add_parser("show", help="one session, its trials and result")
    show.add_argument("session_id", type=bounded_int("session id", 1, INT64_MAX))
    show.add_argument("--json", action="store_true", help="print as JSON")
    db_argument(show)
    discard = sub.add_parser("discard", help="close a session that has no answers, for good (recorded, not deleted)")
    discard.add_argument("session_id", type=bounded_int("session id", 1, INT64_MAX))
    discard.add_argument("--reason", required=True, help="why, e.g. 'protocol refused by the engine' (kept in the log)")
    db_argument(discard)
    durations = sub.add_parser(
        "durations",
        help="answer times per kind of question (letter, comparison, slider) "
        "and the gaps between answers with the lens kept or changed: "
        "median and IQR, to refit a protocol's durations",
    )
    durations.add_argument(
        "--include-simulated",
        action="store_true",
        help="also summarise simulated sessions (apart, marked SIMULATED; their clock is not a patient's)",
    )
    durations.add_argument("--json", action="store_true", help="print as JSON")
    db_argument(durations)


def _parse_rx(flag: str, text: str) -> Prescription:
    try:
        return Prescription.parse(text)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{flag}: {exc}") from None


def start_arguments(parser: argparse.ArgumentParser, *, per_eye: bool = False) -> None:
    """``--start-rx`` and ``--start-source`` (checked together by :func:`start_choice`); ``per_eye``:
    ``--start-rx`` may be given once per eye, ``OD`` or ``OS`` before the prescription (a visit)."""
    eyes = " for both eyes, or once per eye with OD / OS before it" if per_eye else ""
    parser.add_argument(
        "--start-rx",
        metavar='"[OD|OS] S C x A"' if per_eye else '"S C x A"',
        action="append" if per_eye else "store",
        help=f'starting prescription as a clinician writes it, e.g. "-2.25/-1.25x35" or "-2.25 '
        f'-1.25 x 035"{eyes} (default for a simulated patient: its simulated autorefraction); '
        "'none' for no start",
    )
    parser.add_argument(
        "--start-source",
        choices=[s for s in SOURCES if s != "none"],
        default=None,
        help="where --start-rx comes from (sets the prior's width; default autorefraction); only with a --start-rx",
    )


def start_choice(start_rx: str | None, source: str | None) -> tuple[Prescription | None, str] | None:
    """``(rx, source)`` of ``--start-rx`` and ``--start-source``: ``None`` when no start was given
    (the simulated case's own), ``(None, "none")`` for ``--start-rx none``. A source without a
    prescription, or with ``none``, is refused: it would be silently ignored."""
    if start_rx is None:
        if source is not None:
            raise InvalidInputError(
                f"--start-source {source}: give the prescription it measured with --start-rx "
                f'"S C x A" (e.g. --start-rx "-2.25/-1.25x35" --start-source {source})'
            )
        return None
    if start_rx.strip().lower() == "none":
        if source is not None:
            raise InvalidInputError(
                f"--start-rx none with --start-source {source}: a session without a starting "
                "prescription has no source; leave --start-source out, or give its --start-rx"
            )
        return None, "none"
    return _parse_rx("--start-rx", start_rx), source or "autorefraction"


def _start(args, case) -> StartingPoint:
    """The starting point of a new session: --start-rx, or the simulated case's own start."""
    chosen = start_choice(args.start_rx, args.start_source)
    if chosen is None:
        return StartingPoint(case.start_rx, case.start_source, case.age_years)
    return StartingPoint(chosen[0], chosen[1], case.age_years)


def _case(args, seed: int, stored: dict | None, protocol):
    """The simulated patient: the one recorded with the session (resume), else drawn by
    ``seed`` (:func:`~visiontune.refraction.simulated.simulated_case`) and overridden by the
    command's flags."""
    if stored is not None:
        return simulated_case(stored=stored)
    true_rx = None if args.true_rx is None else parse_true_rx(args.true_rx, protocol)
    return simulated_case(
        seed=seed if args.patient_seed is None else args.patient_seed,
        protocol=protocol,
        true_rx=true_rx,
        slope=args.slope,
        best_va=args.best_va,
        age_years=args.age,
    )


def _trial_text(t, named: bool = False) -> str:
    """One trial on a line: a letter (its lens, and what was shown and named, or + / -) or a
    comparison (the two lenses and the answer: 1, 2 or =) or a slider (the knob, the lens chosen,
    its place on the path and the path's ends: :func:`~visiontune.session.trial_text.slider_text`) or
    a chart line (each letter with its + / -, the count read right and the lens:
    :func:`~visiontune.session.trial_text.line_text`)."""
    if getattr(t, "slider_choice", None) is not None:
        return slider_text(t)
    if getattr(t, "line_correct", None) is not None:
        return line_text(t)
    if t.comparison is not None and getattr(t, "frame_lens", None) is not None:
        return f"{held_text(t.lens, t.lens2, t.frame_lens)}  clearer: {t.comparison}"
    if t.comparison is not None:
        return f"lens 1 {lens_text(t.lens)} vs lens 2 {lens_text(t.lens2)}  clearer: {t.comparison}"
    if named:
        verdict = "correct" if t.correct else "wrong"
        return f"{lens_text(t.lens)} shown {t.letter_shown} named {t.letter_named or '-'} {verdict}"
    return f"lens {lens_text(t.lens)}  {'+' if t.correct else '-'}"


def _drive(args, session: RefractionSession, case, answer_model: str | None = None) -> int:
    patient = case.patient(session.protocol.n_alternatives)
    print(
        f"SIMULATED session {session.session_id}: patient true correction {case.true_rx.format(kind=TRUTH)}; "
        f"start {session.start_point.rx.format() if session.start_point.rx else 'none'} "
        f"({session.start_point.source})",
        file=sys.stderr,
    )

    def progress(trial, s):
        if not args.quiet:
            print(
                f"  trial {trial.index + 1:3d}  s={signed(trial.s_logmar)} logMAR  {_trial_text(trial)}",
                file=sys.stderr,
            )

    result = session.run(simulated_presenter(patient, answer_model), progress=progress, max_steps=args.max_steps)
    if result is None:
        print(
            f"session {session.session_id} left open after {args.max_steps} answers; "
            f"continue with: visiontune session resume {session.session_id} --simulate",
            file=sys.stderr,
        )
        return 0
    est = result["rounded"]
    found = Prescription(est["sphere_d"], est["cylinder_d"], est["axis_deg"])
    error = float(((found.power_vector_array() - case.true_rx.power_vector_array()) ** 2).sum() ** 0.5)
    print(f"SIMULATED session {session.session_id} finished ({result['stopped_by']}, {result['trials_used']} answers)")
    print(f"  true correction   {case.true_rx.format(kind=TRUTH)}")
    print(f"  found correction  {found.format()}  (dioptric distance to the truth {error:.2f} D)")
    if session.start_point.rx is not None:
        start_error = float(
            ((session.start_point.rx.power_vector_array() - case.true_rx.power_vector_array()) ** 2).sum() ** 0.5
        )
        print(f"  starting rx       {session.start_point.rx.format()}  ({start_error:.2f} D)")
    print(
        f"  acuity through it {signed(patient.acuity_logmar(found), 3)} logMAR (true); "
        f"predicted {signed(result['predicted_va_logmar'], 3)}"
    )
    return 0


def _terminal_confirm(text: str) -> bool:
    try:
        return input(f"{text}; Enter when set, n to pause: ").strip().lower() != "n"
    except EOFError:  # no terminal to confirm at: not confirmed
        return False


def run_session(args) -> int:
    if args.action == "run":  # checked before the log is opened: a refusal writes nothing
        start_choice(args.start_rx, args.start_source)
        if args.lens_device is not None and getattr(args, "device", None) is not None:
            raise InvalidInputError(
                "--lens-device: --device sets the change time already (the device's own); give one of them"
            )
    else:
        refuse_patient_flags(args, f"session resume {args.session_id}")
    if getattr(args, "device", None) is None:
        return _run_session(args, None)
    from visiontune.devices.choice import open_device

    with open_device(args.device, confirm=_terminal_confirm) as device:
        return _run_session(args, device)


def _run_session(args, device) -> int:
    with TrialStore.open(args.db) as store:
        if args.action == "run":
            protocol = load_protocol(args.protocol)
            if args.lens_device is not None:
                protocol = protocol_for_device(protocol, args.lens_device)
            if device is not None:
                protocol = protocol_with_lens_change_seconds(protocol, device.change_seconds, device.name)
            seed = protocol.seed if args.seed is None else args.seed
            case = _case(args, seed, None, protocol)
            with RefractionSession.start(
                store,
                patient_id=args.patient_id,
                eye=args.eye,
                protocol=protocol,
                simulated=True,
                seed=seed,
                start=_start(args, case),
            ) as session:
                session.note(SIMULATED_PATIENT_NOTE, with_answer_model(case.to_dict(), args.answer_model))
                if device is not None:
                    session.attach_device(device)
                return _drive(args, session, case, args.answer_model)
        with RefractionSession.resume(store, args.session_id) as session:
            if not session.simulated:
                raise InvalidInputError(f"session {args.session_id} is a real patient's; resume it in the app")
            stored = session.recorded_note(SIMULATED_PATIENT_NOTE)
            if device is not None:
                session.attach_device(device)
            case = _case(args, session.seed, stored, session.protocol)
            return _drive(args, session, case, recorded_answer_model(stored))


_clean = one_line  # one printable line of stored text (control characters shown as escapes)


def _discard(store: TrialStore, session_id: int, reason: str) -> int:
    info = store.get_session(session_id)
    if info.discarded:
        raise SessionError(f"session {session_id} is already discarded ({info.discard_reason})")
    with store.open_session(session_id) as handle:
        handle.discard(reason)
    print(f"session {session_id} discarded: {_clean(reason.strip())} (it stays in the log; it cannot be resumed)")
    return 0


def _protocol_name(info) -> str:
    """The snapshot's protocol name; for a snapshot this version refuses (a session an older
    version wrote), why, so that the session can still be shown (and discarded)."""
    try:
        return info.protocol.name
    except VisionTuneError as exc:
        return f"? (snapshot refused: {exc})"


#: The protocol setting each kind's duration refits ([table] key); a duel has none.
_DURATION_KEYS = {
    "letter": "[comparisons] letter_seconds",
    "comparison": "[comparisons] comparison_seconds",
    "slider": "[sliders] slider_seconds",
    "line": "[chart_line] line_seconds",
}


def _durations(store: TrialStore, include_simulated: bool, as_json: bool) -> int:
    """``sessions durations``: :func:`~visiontune.session.answer_times.answer_times`, as a table or JSON."""
    found = answer_times(store, include_simulated=include_simulated)
    if as_json:
        print(
            json.dumps(
                {
                    "real_sessions": found.real_sessions,
                    "simulated_sessions": found.simulated_sessions,
                    "rows": [{**vars(r), "iqr_s": r.iqr_s} for r in found.rows],
                    "left_out": found.left_out,
                    "gaps": [{**vars(r), "iqr_s": r.iqr_s} for r in found.gaps],
                    "lens_change_s": found.lens_change_s(),
                },
                indent=2,
            )
        )
        return 0
    print(
        f"answer times (question on screen to answer recorded), {found.real_sessions} real-patient sessions"
        + (f" and {found.simulated_sessions} SIMULATED" if include_simulated else "")
        + f" in {store.path}"
    )
    _print_times(found.rows, "kind", "answers")
    real = [r for r in found.rows if not r.simulated and r.kind in _DURATION_KEYS]
    change = found.lens_change_s()
    if real:
        values = [f"{_DURATION_KEYS[r.kind]} = {r.median_s:.1f}" for r in real]
        if change is not None:
            values.append(f"[comparisons] lens_change_seconds = {max(change, 0.0):.1f}")
        print("protocol values from the real patients' medians: " + "; ".join(values))
    else:
        print("no real patient's timed answers: nothing to refit the protocol's durations from")
    if found.gaps:
        print("between answers (answer recorded to the next question on screen: setting the next lens)")
        _print_times(found.gaps, "lens", "gaps")
        if change is not None:
            print(
                f"a change of lens adds {change:.1f} s between answers (median changed - median kept; real "
                "patients), to weigh against a protocol's lens changes (the validation's page)"
            )
    if found.left_out:
        print("left out: " + "; ".join(f"{count} {reason}" for reason, count in found.left_out.items()))
    return 0


def _print_times(rows, label: str, count: str) -> None:
    print(f"{label:<13} {count:>7} {'sessions':>8} {'median s':>8}  {'IQR s (Q1-Q3)':<16} {'mean s':>6}")
    for r in rows:
        mark = "  SIMULATED" if r.simulated else ""
        print(
            f"{r.kind:<13} {r.n:>7} {r.sessions:>8} {r.median_s:>8.2f}  {r.q3_s - r.q1_s:>5.2f} "
            f"({r.q1_s:.2f}-{r.q3_s:.2f}){'':<2} {r.mean_s:>6.2f}{mark}"
        )


def run_sessions(args) -> int:
    with TrialStore.open(args.db, read_only=args.action != "discard") as store:
        if args.action == "discard":
            return _discard(store, args.session_id, args.reason)
        if args.action == "durations":
            return _durations(store, args.include_simulated, args.json)
        if args.action == "list":
            print(f"{'id':>4}  {'patient':<12} {'eye':<3} {'state':<9} {'trials':>6}  {'created':<20} kind")
            for info in store.list_sessions(include_discarded=True):
                if info.damaged:
                    print(f"{info.session_id:>4}  DAMAGED: {_clean('; '.join(info.damage))}")
                    continue
                kind = "SIMULATED" if info.simulated else "real"
                state = "discarded" if info.discarded else info.state.value
                print(
                    f"{info.session_id:>4}  {_clean(info.patient_id):<12} {info.eye.value:<3} {state:<9} "
                    f"{store.trial_count(info.session_id):>6}  {info.created_at:%Y-%m-%d %H:%M:%S}  {kind}"
                )
            return 0
        info = store.get_session(args.session_id)
        trials = store.trials(args.session_id, include_void=True)
        result = None
        if info.result is not None and not info.discarded:
            result = parse_result(info.result, where=f"session {info.session_id}")
        doc = {
            "session_id": info.session_id,
            "patient_id": info.patient_id,
            "eye": info.eye.value,
            "state": info.state.value,
            "simulated": info.simulated,
            "seed": info.seed,
            "protocol": _protocol_name(info),
            "software_version": info.software_version,
            "starting_rx": info.starting_rx,
            "discarded": info.discarded,
            "discard_reason": info.discard_reason,
            "trials": [
                {
                    "index": t.index,
                    "s_logmar": t.s_logmar,
                    **lens_fields(t.lens),
                    "letter_shown": t.letter_shown,
                    "letter_named": t.letter_named,
                    "correct": t.correct,
                    "void": t.void,
                    "lens2": None if t.lens2 is None else lens_fields(t.lens2),
                    "comparison": t.comparison,
                    **(
                        {}
                        if t.slider_choice is None
                        else {
                            "slider_knob": t.slider_knob,
                            "slider_lenses": [lens_fields(x) for x in t.slider_lenses],
                            "slider_choice": t.slider_choice,
                        }
                    ),
                    **({} if t.line_correct is None else {"line_correct": t.line_correct}),
                }
                for t in trials
            ],
            "result": info.result,
        }
        if args.json:
            print(json.dumps(doc, indent=2, default=str))
            return 0
        kind = "SIMULATED" if info.simulated else "real patient"
        print(
            f"session {info.session_id} ({kind}) patient {_clean(info.patient_id)} {info.eye.value}, "
            f"protocol {_clean(_protocol_name(info))}, {'discarded' if info.discarded else info.state.value}, "
            f"{len(trials)} trials"
        )
        if info.discarded:
            print(f"discarded: {_clean(info.discard_reason)}")
        for t in trials:
            void = " VOID" if t.void else ""
            print(f"  {t.index + 1:3d} s={signed(t.s_logmar)} {_trial_text(t, named=True)}{void}")
        if result is not None:
            r = result.rounded
            print(
                f"result: {Prescription(r.sphere_d, r.cylinder_d, r.axis_deg).format()}, "
                f"predicted VA {signed(result.predicted_va_logmar)} logMAR, {result.trials_used} answers, "
                f"stopped by {result.stopped_by}"
            )
        return 0
