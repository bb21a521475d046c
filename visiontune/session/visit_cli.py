"""``visiontune visit run|resume|list|show|signoff|inputs``: a whole visit, headless.

``visit run --simulate`` creates a visit of a simulated patient and runs it: the right eye
(OD) and the left eye (OS) through the session engine and the trial log, then the binocular
balance and the acuity through the final prescriptions, and prints the result;
``visit resume ID --simulate`` continues one that stopped (mid-eye or mid-balance).
``visit signoff`` records a clinician's edited prescription beside the found one; ``visit inputs``
adds the pupillary distance or the examiner after a run (a new entry of the visit's inputs: the
earlier ones stay in the log, the latest in force). ``visit
export`` (the records) is added by :mod:`visiontune.report.visit_cli`, the report layer above.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys

from visiontune._argparse import INT64_MAX, bounded_int, db_argument, finite_float
from visiontune._argparse import eye as eye_name
from visiontune.errors import InvalidInputError, one_line
from visiontune.instrument_files.visit_import import read_visit_imports, simulated_cases_with_imports
from visiontune.optics import Prescription
from visiontune.optics.notation import TRUTH, signed
from visiontune.refraction.lenses import LensSteps, trial_lens
from visiontune.refraction.near_add import check_near_distance_cm
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.refraction.simulated import parse_true_rx, simulated_case
from visiontune.refraction.start import check_in_range
from visiontune.session.cli import start_arguments, start_choice
from visiontune.session.near_store import near_add_records
from visiontune.session.simulated_visit import (
    VisitProgress,
    drive_simulated_visit,
    fellow_eye_case,
    recorded_case,
)
from visiontune.session.store import TrialStore
from visiontune.session.trial_text import lens_text
from visiontune.session.visit import create_visit, eye_statuses, final_prescription, in_form
from visiontune.session.visit_records import (
    START_SOURCE_OF_STARTING_POINT,
    check_name,
    parse_pd,
    record_visit_inputs,
    visit_inputs,
)


def add_arguments(parser: argparse.ArgumentParser):
    """The subcommands; returns the subparsers (the report layer adds ``export``)."""
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser("run", help="a whole visit of a simulated patient: OD, OS, balance, acuity")
    run.add_argument(
        "--simulate",
        action="store_true",
        required=True,
        help="a simulated patient answers (the only headless presenter)",
    )
    run.add_argument(
        "--protocol", default=DEFAULT_PROTOCOL, help=f"shipped protocol name or .toml path (default {DEFAULT_PROTOCOL})"
    )
    run.add_argument(
        "--seed",
        type=bounded_int("--seed", 0, INT64_MAX),
        default=None,
        help="visit seed: the simulated patient and the right eye's session (default: the protocol's)",
    )
    run.add_argument("--patient-id", default="SIM-0001", help="pseudonymous patient id")
    run.add_argument("--skip-od", metavar="REASON", help="do not refract the right eye, and why")
    run.add_argument("--skip-os", metavar="REASON", help="do not refract the left eye, and why")
    run.add_argument(
        "--true-rx",
        action="append",
        metavar='"[OD|OS] S C x A"',
        help='the simulated patient\'s correction as a clinician writes it, e.g. "-2.25/-1.25x35": '
        "both eyes, or one eye with OD / OS before it (given twice, once per eye); the left eye "
        "not given is drawn around the right (default: drawn from --seed)",
    )
    start_arguments(run, per_eye=True)
    run.add_argument(
        "--pd",
        metavar="MM",
        default=None,
        help="the patient's pupillary distance in mm: binocular (63) or right/left monocular "
        "(31.5/31.5); 40 to 80 mm (Dodgson 2004)",
    )
    run.add_argument("--examiner", metavar="NAME", default=None, help="who runs the refraction (on every record)")
    run.add_argument(
        "--import",
        dest="import_files",
        action="append",
        metavar="FILE",
        default=None,
        help="an autorefractor's (REF) or lensmeter's (LM) file, JOIA XML or DICOM: the REF gives each "
        "eye's start and the PD, the LM the habitual spectacles (and the start without a REF); "
        "given twice for one of each",
    )
    run.add_argument("--age", type=finite_float, default=None, help="the simulated patient's age, years")
    _run_arguments(run)
    db_argument(run)
    resume = sub.add_parser("resume", help="continue a simulated visit that stopped")
    resume.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    resume.add_argument("--simulate", action="store_true", required=True, help="the simulated patient answers")
    _run_arguments(resume)
    db_argument(resume)
    lst = sub.add_parser("list", help="visits in the trial log")
    db_argument(lst)
    show = sub.add_parser("show", help="one visit: its eyes, balance, sign-offs, acuities, prescriptions")
    show.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    show.add_argument("--json", action="store_true", help="print as JSON")
    db_argument(show)
    sign = sub.add_parser(
        "signoff", help="record a clinician's edited prescription of one eye (kept beside the found one)"
    )
    sign.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    sign.add_argument(
        "--eye", required=True, type=eye_name, metavar="OD|OS", help="the eye signed off (od, os accepted)"
    )
    sign.add_argument(
        "--rx",
        required=True,
        metavar='"S C x A"',
        help="the eye's prescription before the binocular balance, in the visit's cylinder form, "
        'e.g. "-1.25 -0.50 x 90" (the balance\'s change is added to it, as on the '
        "record)",
    )
    sign.add_argument("--by", required=True, metavar="NAME", help="the clinician who signs")
    db_argument(sign)
    given = sub.add_parser(
        "inputs",
        help="add the pupillary distance or the examiner to a visit after its run "
        "(appended: the earlier entries are kept, the latest is in force)",
    )
    given.add_argument("visit_id", type=bounded_int("visit id", 1, INT64_MAX), metavar="ID")
    given.add_argument(
        "--pd",
        metavar="MM",
        default=None,
        help="the patient's pupillary distance in mm: binocular (63) or right/left monocular "
        "(31.5/31.5); 40 to 80 mm (Dodgson 2004)",
    )
    given.add_argument("--examiner", metavar="NAME", default=None, help="who ran the refraction")
    db_argument(given)
    return sub


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-balance", action="store_true", help="no binocular balance (recorded as not requested)")
    parser.add_argument(
        "--max-steps",
        type=bounded_int("--max-steps", 1, 1_000_000),
        default=None,
        help="stop after this many refraction answers in this run, leaving the visit to resume",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-answer progress")
    near = parser.add_mutually_exclusive_group()
    near.add_argument(
        "--near",
        dest="near",
        action="store_true",
        default=None,
        help="the near (reading) addition after the distance prescriptions (default: from age 40)",
    )
    near.add_argument("--no-near", dest="near", action="store_false", help="no near addition")
    parser.add_argument(
        "--near-distance-cm",
        type=_near_distance,
        default=None,
        metavar="CM",
        help="the near chart's distance, cm (default 40; a resumed near step keeps its own)",
    )


def _near_distance(text: str) -> float:
    """``--near-distance-cm``: 20 to 100 cm (:func:`~visiontune.refraction.near_add.check_near_distance_cm`)."""
    try:
        return check_near_distance_cm(finite_float(text))
    except (InvalidInputError, argparse.ArgumentTypeError) as exc:
        raise argparse.ArgumentTypeError(f"--near-distance-cm: {exc}") from None


def _parse_rx(flag: str, text: str) -> Prescription:
    try:
        return Prescription.parse(text)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{flag}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    if args.action == "run":  # checked before the log is opened: a refusal writes nothing
        for flag, reason in (("--skip-od", args.skip_od), ("--skip-os", args.skip_os)):
            check_name(flag, reason, optional=True)
        if args.skip_od is not None and args.skip_os is not None:
            raise InvalidInputError("--skip-od and --skip-os: a visit refracts at least one eye")
        given = _given_patient(args)
        if given and args.max_steps is not None:
            raise InvalidInputError(
                f"--max-steps with {', '.join(given)}: a visit resumed later draws the eyes not "
                "started from its seed, not from these flags; run it whole, or leave them out"
            )
        _starts(args)
        _inputs(args)
        args.imported = _imports(args)  # the files read (and refused) before the trial log is opened
    if args.action == "inputs":  # checked before the log is opened: a refusal writes nothing
        args.given = _given_inputs(args)
    with TrialStore.open(args.db, read_only=args.action in ("list", "show")) as store:
        action = {
            "run": _run,
            "resume": _resume,
            "list": _list,
            "show": _show,
            "signoff": _signoff,
            "inputs": _record_inputs,
        }[args.action]
        return action(args, store)


# --- run / resume ------------------------------------------------------------------------
def _progress(args):
    """Per-answer and per-eye lines on stderr; none with ``--quiet``."""
    if args.quiet:
        return VisitProgress()

    def trial(eye, t, session):
        print(
            f"  {eye} trial {t.index + 1:3d}  s={signed(t.s_logmar)} logMAR  lens {lens_text(t.lens)}  "
            f"{'+' if t.correct else '-'}",
            file=sys.stderr,
        )

    return VisitProgress(trial=trial, say=lambda text: print(text, file=sys.stderr))


def _given_patient(args) -> list[str]:
    return [
        flag
        for flag, value in (
            ("--true-rx", args.true_rx),
            ("--start-rx", args.start_rx),
            ("--age", args.age),
            ("--import", args.import_files),
        )
        if value is not None
    ]


def _per_eye(flag: str, texts: list[str], parse) -> dict:
    """``{"OD": value, "OS": value}`` of a flag's texts, each ``"OD S C x A"`` (``OD:``, ``OS=``
    too) for one eye or ``"S C x A"`` for both, read by ``parse``; an eye given twice is refused."""
    out: dict = {}
    for text in texts:
        m = re.match(r"\s*(od|os)\b\s*[:=]?\s*(.*)$", text, re.IGNORECASE | re.DOTALL)
        eyes, value = ((m.group(1).upper(),), m.group(2)) if m else (("OD", "OS"), text)
        for e in eyes:
            if e in out:
                raise InvalidInputError(
                    f"{flag}: {e} given twice ({text!r}); give each eye once, with OD or OS before "
                    "it, or one value for both eyes"
                )
            out[e] = parse(value)
    return out


def _starts(args) -> dict:
    """``{eye: (rx, source)}`` of ``--start-rx`` with ``--start-source`` (:func:`start_choice`)."""
    if args.start_rx is None:
        start_choice(None, args.start_source)  # a source without a prescription is refused
        return {}
    return _per_eye("--start-rx", args.start_rx, lambda text: start_choice(text, args.start_source))


def _inputs(args) -> dict:
    """The visit's inputs of ``--pd``, ``--examiner`` and each ``--start-rx``'s source, checked
    (:func:`~visiontune.session.visit_records.record_visit_inputs`'s keyword arguments)."""
    out: dict = {}
    if args.pd is not None:
        out.update(zip(("pd_mm", "pd_od_mm", "pd_os_mm"), parse_pd(args.pd, "--pd"), strict=True))
    if args.examiner is not None:
        out["examiner"] = check_name("--examiner", args.examiner)
    for eye, (_rx, source) in _starts(args).items():
        out[f"start_source_{eye.lower()}"] = START_SOURCE_OF_STARTING_POINT[source]
    return out


def _imports(args):
    """The instrument files of ``--import`` (:mod:`visiontune.instrument_files.visit_import`), the
    file giving the start checked for each eye refracted; an eye given both by a file and by
    ``--start-rx`` is refused."""
    eyes = tuple(e for e, skip in (("OD", args.skip_od), ("OS", args.skip_os)) if skip is None)
    imported = read_visit_imports(args.import_files, eyes=eyes)
    for eye in _starts(args):
        start = imported.start(eye)
        if start is not None:
            raise InvalidInputError(
                f"--start-rx and --import: {start[2].source_file} gives the {eye} start already; leave one of them out"
            )
    return imported


def _with_truth(case, true_rx: Prescription):
    """``case`` with its correction replaced, its autorefraction moved with it (the same error)."""
    check_in_range(true_rx, "--true-rx")
    start = case.start_rx
    if start is not None:
        start = trial_lens(
            true_rx.power_vector_array() + start.power_vector_array() - case.true_rx.power_vector_array(), LensSteps()
        )
    return dataclasses.replace(case, true_rx=true_rx, start_rx=start)


def _visit_cases(args, seed: int, protocol) -> dict:
    """Both eyes of the simulated patient: drawn from ``seed`` (the visit's default), with the
    right eye's correction and the age of the flags; the left eye drawn around the right, then
    given its own correction; each eye's start from ``--start-rx``."""
    truths = _per_eye("--true-rx", args.true_rx or [], lambda t: parse_true_rx(t, protocol))
    od = simulated_case(seed=seed, protocol=protocol, true_rx=truths.get("OD"), age_years=args.age)
    cases = {"OD": od, "OS": fellow_eye_case(od, seed, protocol)}
    if "OS" in truths:
        cases["OS"] = _with_truth(cases["OS"], truths["OS"])
    for e, (rx, source) in _starts(args).items():
        cases[e] = dataclasses.replace(cases[e], start_rx=rx, start_source=source)
    imported = getattr(args, "imported", None)
    if imported is not None:
        cases = simulated_cases_with_imports(cases, imported, given_truths=truths, gp=protocol.model.type == "gp")
    return cases


def _run(args, store) -> int:
    protocol = load_protocol(args.protocol)
    seed = protocol.seed if args.seed is None else args.seed
    cases = _visit_cases(args, seed, protocol)  # checked before anything is written
    age = cases["OD"].age_years
    imported = getattr(args, "imported", None)
    habitual = (
        {e: in_form(rx, protocol.lenses.cylinder_form) for e, rx in imported.habitual().items()}
        if imported is not None
        else {}
    )
    vid = create_visit(
        store,
        args.patient_id,
        simulated=True,
        age_years=None if age is None else round(age),
        cylinder_form=protocol.lenses.cylinder_form,
        habitual_od=habitual.get("OD"),
        habitual_os=habitual.get("OS"),
    )
    inputs = _inputs(args)
    if imported is not None and (imported.ref or imported.lm):
        for entry in imported.input_entries(with_pd=args.pd is None):
            record_visit_inputs(store, vid, **entry)
        print(imported.summary(), file=sys.stderr)
    if inputs:
        record_visit_inputs(store, vid, **inputs)
    for eye, reason in (("OD", args.skip_od), ("OS", args.skip_os)):
        if reason is not None:
            store.skip_visit_eye(vid, eye, reason)
    print(f"SIMULATED visit {vid}: patient {args.patient_id}, protocol {protocol.name}, seed {seed}", file=sys.stderr)
    done = drive_simulated_visit(
        store,
        vid,
        protocol=protocol,
        seed=seed,
        balance=not args.no_balance,
        max_steps=args.max_steps,
        progress=_progress(args),
        cases=cases,
        near=args.near,
        near_distance_cm=args.near_distance_cm,
    )
    return _finish(store, vid, done)


def _resume(args, store) -> int:
    visit = store.get_visit(args.visit_id)
    if not visit.simulated:
        raise InvalidInputError(f"visit {visit.visit_id} is a real patient's; continue it in the app")
    print(f"SIMULATED visit {visit.visit_id}: resuming", file=sys.stderr)
    done = drive_simulated_visit(
        store,
        visit.visit_id,
        balance=not args.no_balance,
        max_steps=args.max_steps,
        progress=_progress(args),
        near=args.near,
        near_distance_cm=args.near_distance_cm,
    )
    return _finish(store, visit.visit_id, done)


def _finish(store, vid: int, done: bool) -> int:
    if not done:
        print(
            f"visit {vid} stopped before its end; continue with: visiontune visit resume {vid} --simulate",
            file=sys.stderr,
        )
        return 0
    _print_summary(store, vid, with_truth=True)
    return 0


def _print_summary(store, vid: int, *, with_truth: bool = False) -> None:
    visit = store.get_visit(vid)
    kind = "SIMULATED visit" if visit.simulated else "visit"
    print(f"{kind} {vid}: patient {one_line(visit.patient_id)}, {visit.cylinder_form} cylinder")
    truths = _truths(store, vid) if with_truth and visit.simulated else {}
    acuities = store.visit_acuities(vid)
    signoffs = {s.eye: s for s in store.visit_signoffs(vid)}
    for eye, status in eye_statuses(store, vid).items():
        if status.state != "finished":
            detail = f"skipped: {one_line(status.skip_reason)}" if status.state == "skipped" else status.state
            print(
                f"  {eye}  {detail}"
                + (f" (session {status.session_id}, {status.answers} answers)" if status.session_id else "")
            )
            continue
        final = final_prescription(store, vid, eye)
        print(
            f"  {eye}  found {status.found.format()}  (session {status.session_id}, {status.answers} answers, "
            f"predicted {signed(status.predicted_va_logmar)} logMAR)"
        )
        if eye in signoffs:
            s = signoffs[eye]
            print(f"      signed off {s.prescription.format()} by {one_line(s.by)} at {s.at:%Y-%m-%d %H:%M}")
        print(f"      final      {final.format()}")
        through = [a for a in acuities if a.eye == eye and a.lenses[eye].is_equivalent(final, 1e-6)]
        if through:
            print(f"      acuity through it {signed(through[-1].va_logmar)} logMAR")
        if eye in truths:
            truth = truths[eye]
            error = float(((final.power_vector_array() - truth.power_vector_array()) ** 2).sum() ** 0.5)
            print(f"      true correction {truth.format(kind=TRUTH)}  (dioptric distance {error:.2f} D)")
    _print_inputs(store, vid, acuities)
    balance = store.visit_balance(vid)
    if balance is None:
        print("  balance: not yet")
    elif not balance.done:
        print(f"  balance: not done ({one_line(balance.reason)})")
    else:
        answers = store.balance_answers(vid)
        print(
            f"  balance: {balance.outcome} after {len(answers)} question{'s' if len(answers) != 1 else ''}; "
            f"OD {signed(balance.plus_change_od_d)} D, OS {signed(balance.plus_change_os_d)} D"
        )
    for eye, add in near_add_records(store, vid).items():
        far = "infinity" if add.far_point_cm is None else f"{add.far_point_cm:g} cm"
        near = "-" if add.near_point_cm is None else f"{add.near_point_cm:g} cm"
        print(
            f"  {eye}  near add {signed(add.add_d)} D at {add.distance_cm:g} cm (95% {signed(add.lower_d)} to "
            f"{signed(add.upper_d)}; by age {signed(add.tentative_add_d)}); clear from {near} to {far}; "
            f"near acuity {signed(add.near_va_logmar)} logMAR"
        )
        if with_truth and visit.simulated and isinstance(add.detail, dict) and "true_add_d" in add.detail:
            print(f"      simulated true add {signed(add.detail['true_add_d'])} D")


def _print_inputs(store, vid: int, acuities) -> None:
    """The acuity with both eyes open through both final prescriptions, the pupillary distance
    and the examiner, when recorded."""
    finals = {e: final_prescription(store, vid, e) for e in ("OD", "OS")}
    if all(finals.values()):
        both = [
            a
            for a in acuities
            if a.eye == "OU" and all(a.lenses[e].is_equivalent(finals[e], 1e-6) for e in ("OD", "OS"))
        ]
        if both:
            print(
                f"  OU  acuity with both eyes open through the two prescriptions above "
                f"{signed(both[-1].va_logmar)} logMAR"
            )
    given = visit_inputs(store, vid)
    if given.pd_mm is not None:
        mono = "" if given.pd_od_mm is None else f" (OD {given.pd_od_mm:g} / OS {given.pd_os_mm:g})"
        print(f"  pupillary distance {given.pd_mm:g} mm{mono}")
    if given.examiner is not None:
        print(f"  examiner {one_line(given.examiner)}")


def _truths(store, vid: int) -> dict:
    return {
        eye: recorded_case(store, link.session_id).true_rx
        for eye, link in store.visit_eyes(vid).items()
        if link.session_id is not None
    }


# --- list / show / signoff ---------------------------------------------------------------
def _list(args, store) -> int:
    print(f"{'id':>4}  {'patient':<12} {'OD':<10} {'OS':<10} {'created':<20} kind")
    for visit in store.list_visits():
        states = eye_statuses(store, visit.visit_id)
        print(
            f"{visit.visit_id:>4}  {one_line(visit.patient_id):<12} {states['OD'].state:<10} {states['OS'].state:<10} "
            f"{visit.created_at:%Y-%m-%d %H:%M:%S}  {'SIMULATED' if visit.simulated else 'real'}"
        )
    return 0


def _show(args, store) -> int:
    visit = store.get_visit(args.visit_id)
    vid = visit.visit_id
    if not args.json:
        _print_summary(store, vid)
        for a in store.balance_answers(vid):
            print(
                f"    balance question {a.index + 1}: OD {a.lens_od.format()} (+{a.plus_od_d:.2f}), "
                f"OS {a.lens_os.format()} (+{a.plus_os_d:.2f}) -> {a.clearer}"
            )
        return 0

    def rx(p):
        return None if p is None else {"sphere_d": p.sphere_d, "cylinder_d": p.cylinder_d, "axis_deg": p.axis_deg}

    statuses = eye_statuses(store, vid)
    balance = store.visit_balance(vid)
    doc = {
        "visit_id": vid,
        "patient_id": visit.patient_id,
        "age_years": visit.age_years,
        "simulated": visit.simulated,
        "cylinder_form": visit.cylinder_form,
        "clinician": visit.clinician,
        "created_at": visit.created_at.isoformat(),
        "habitual": {"OD": rx(visit.habitual_od), "OS": rx(visit.habitual_os)},
        "eyes": {
            e: {
                "state": s.state,
                "session_id": s.session_id,
                "answers": s.answers,
                "found": rx(s.found),
                "predicted_va_logmar": s.predicted_va_logmar,
                "skip_reason": s.skip_reason,
                "final": rx(final_prescription(store, vid, e)),
            }
            for e, s in statuses.items()
        },
        "balance": None
        if balance is None
        else {
            "outcome": balance.outcome,
            "method": balance.method,
            "plus_change_od_d": balance.plus_change_od_d,
            "plus_change_os_d": balance.plus_change_os_d,
            "reason": balance.reason,
            "answers": [
                {
                    "index": a.index,
                    "lens_od": rx(a.lens_od),
                    "lens_os": rx(a.lens_os),
                    "plus_od_d": a.plus_od_d,
                    "plus_os_d": a.plus_os_d,
                    "clearer": a.clearer,
                }
                for a in store.balance_answers(vid)
            ],
        },
        "signoffs": [
            {"eye": s.eye, "prescription": rx(s.prescription), "by": s.by, "at": s.at.isoformat()}
            for s in store.visit_signoffs(vid)
        ],
        "acuities": [
            {
                "eye": a.eye,
                "va_logmar": a.va_logmar,
                "lenses": {e: rx(p) for e, p in a.lenses.items()},
                "method": a.method,
                "at": a.at.isoformat(),
            }
            for a in store.visit_acuities(vid)
        ],
        "near_adds": {
            e: {
                "add_d": n.add_d,
                "lower_d": n.lower_d,
                "upper_d": n.upper_d,
                "tentative_add_d": n.tentative_add_d,
                "near_point_cm": n.near_point_cm,
                "far_point_cm": n.far_point_cm,
                "near_va_logmar": n.near_va_logmar,
                "distance_cm": n.distance_cm,
                "method": n.method,
                "at": n.at.isoformat(),
            }
            for e, n in near_add_records(store, vid).items()
        },
        "inputs": {k: v for k, v in dataclasses.asdict(visit_inputs(store, vid)).items() if k != "visit_id"},
    }
    print(json.dumps(doc, indent=2))
    return 0


def _signoff(args, store) -> int:
    try:
        rx = _parse_rx("--rx", args.rx)
        signed = store.sign_off(args.visit_id, args.eye, rx, args.by)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{exc}; nothing was recorded") from None
    print(
        f"visit {signed.visit_id} {signed.eye}: signed off {signed.prescription.format()} by {one_line(signed.by)} "
        f"(the found prescription is kept beside it)"
    )
    print(f"  final {final_prescription(store, signed.visit_id, signed.eye).format()} (with the binocular balance)")
    return 0


# --- inputs after the run ------------------------------------------------------------------
def _given_inputs(args) -> dict:
    """``visit inputs``: ``--pd`` (:func:`~visiontune.session.visit_records.parse_pd`) and
    ``--examiner`` checked, as :func:`record_visit_inputs`'s keyword arguments; at least one."""
    if args.pd is None and args.examiner is None:
        raise InvalidInputError("visit inputs: nothing to record: give --pd and/or --examiner; nothing was recorded")
    out: dict = {}
    if args.pd is not None:
        out.update(zip(("pd_mm", "pd_od_mm", "pd_os_mm"), parse_pd(args.pd, "--pd"), strict=True))
    if args.examiner is not None:
        out["examiner"] = check_name("--examiner", args.examiner)
    return out


def _record_inputs(args, store) -> int:
    """One new entry of the visit's inputs (append-only; durable when this returns), then the
    inputs in force printed."""
    try:
        given = record_visit_inputs(store, args.visit_id, **args.given)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{exc}; nothing was recorded") from None
    sim = "SIMULATED " if store.get_visit(given.visit_id).simulated else ""
    print(f"{sim}visit {given.visit_id}: inputs recorded (earlier entries kept)")
    if given.pd_mm is not None:
        mono = "" if given.pd_od_mm is None else f" (OD {given.pd_od_mm:g} / OS {given.pd_os_mm:g})"
        print(f"  pupillary distance {given.pd_mm:g} mm{mono}")
    if given.examiner is not None:
        print(f"  examiner {one_line(given.examiner)}")
    return 0
