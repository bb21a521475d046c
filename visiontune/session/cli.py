"""``visiontune session run|resume`` and ``visiontune sessions list|show``.

``session run --simulate`` drives a whole session headless against a simulated patient through
the session engine and the SQLite trial log; ``session resume ID --simulate`` continues one.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.session.engine import RefractionSession, SimulatedPresenter
from visiontune.session.protocol import load_protocol
from visiontune.session.store import TrialStore


def _db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="PATH", help="SQLite trial log (default: the user data directory)")


def _patient_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--simulate", action="store_true", required=True,
                        help="a simulated patient answers (the only headless presenter)")  # fmt: skip
    parser.add_argument("--true-rx", metavar='"S C"', help="simulated patient's correction (default: drawn from --seed)")
    parser.add_argument("--slope", type=float, default=5.0, help="simulated psychometric slope, logMAR^-1 (default 5)")
    parser.add_argument("--best-va", type=float, default=0.0, help="simulated best-corrected acuity, logMAR (default 0)")
    parser.add_argument("--patient-seed", type=int, default=None, help="seed of the simulated answers (default: --seed)")
    parser.add_argument("--max-steps", type=int, default=None, help="stop after this many answers, leaving it open")
    parser.add_argument("--quiet", action="store_true", help="no per-trial progress")


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser("run", help="start a session")
    run.add_argument("--protocol", default="paper-ucb-ald", help="shipped protocol name or .toml path")
    run.add_argument("--patient-id", default="SIM-0001", help="pseudonymous patient id")
    run.add_argument("--eye", default="OD", choices=["OD", "OS", "OU"])
    run.add_argument("--seed", type=int, default=None, help="session seed (default: the protocol's)")
    _patient_arguments(run)
    _db_argument(run)
    resume = sub.add_parser("resume", help="continue an unfinished session")
    resume.add_argument("session_id", type=int)
    _patient_arguments(resume)
    _db_argument(resume)


def add_sessions_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    lst = sub.add_parser("list", help="sessions in the trial log")
    _db_argument(lst)
    show = sub.add_parser("show", help="one session, its trials and result")
    show.add_argument("session_id", type=int)
    show.add_argument("--json", action="store_true", help="print as JSON")
    _db_argument(show)


def _true_rx(args, session: RefractionSession) -> Prescription:
    box = session.problem.box
    if args.true_rx:
        parts = args.true_rx.replace(",", " ").split()
        try:
            s, c = (float(v) for v in parts)
        except ValueError:
            raise InvalidInputError(f'--true-rx: expected two numbers "S C" (diopters), got {args.true_rx!r}') from None
        rx = np.array([s, c])
        if np.any(rx < box[:, 0]) or np.any(rx > box[:, 1]):
            raise InvalidInputError(
                f"--true-rx: {s:+.2f} {c:+.2f} D lies outside the protocol's search space "
                f"sphere {box[0].tolist()}, cylinder {box[1].tolist()}"
            )
        return Prescription(s, c, session.axis_deg)
    rng = np.random.default_rng([session.seed, 7919])
    s, c = rng.uniform(box[:, 0], box[:, 1])
    return Prescription(float(s), float(c), session.axis_deg)


def _drive(args, session: RefractionSession) -> int:
    if args.slope <= 0:
        raise InvalidInputError(f"--slope: must be > 0 logMAR^-1, got {args.slope}")
    rx = _true_rx(args, session)
    patient = SimulatedPatient(
        rx, best_corrected_logmar=args.best_va, slope=args.slope, n_alternatives=session.protocol.n_alternatives,
        seed=session.seed if args.patient_seed is None else args.patient_seed,
    )  # fmt: skip
    print(f"SIMULATED session {session.session_id}: patient true correction {rx.format()}", file=sys.stderr)

    def progress(trial, s):
        if not args.quiet:
            mark = "+" if trial.correct else "-"
            print(f"  trial {trial.index + 1:3d}  s={trial.s_logmar:+.2f} logMAR  "
                  f"lens S {trial.lens.sphere_d:+.2f} C {trial.lens.cylinder_d:+.2f}  {mark}", file=sys.stderr)  # fmt: skip

    result = session.run(SimulatedPresenter(patient), progress=progress, max_steps=args.max_steps)
    if result is None:
        print(f"session {session.session_id} left open after {args.max_steps} answers; "
              f"continue with: visiontune session resume {session.session_id} --simulate", file=sys.stderr)  # fmt: skip
        return 0
    est = result["rounded"]
    found = Prescription(result["estimate"]["sphere_d"], result["estimate"]["cylinder_d"], session.axis_deg)
    print(f"SIMULATED session {session.session_id} finished ({result['stopped_by']}, {result['trials_used']} trials)")
    print(f"  true correction   {rx.format()}")
    print(f"  found correction  {Prescription(est['sphere_d'], est['cylinder_d'], est['axis_deg']).format()}"
          f"  (exact {found.format()})")  # fmt: skip
    print(f"  acuity through it {patient.acuity_logmar(found):.3f} logMAR (true); "
          f"predicted {result['predicted_va_logmar']:.3f}")  # fmt: skip
    return 0


def run_session(args) -> int:
    with TrialStore.open(args.db) as store:
        if args.action == "run":
            protocol = load_protocol(args.protocol)
            with RefractionSession.start(store, patient_id=args.patient_id, eye=args.eye, protocol=protocol,
                                         simulated=True, seed=args.seed) as session:  # fmt: skip
                return _drive(args, session)
        with RefractionSession.resume(store, args.session_id) as session:
            if not session.simulated:
                raise InvalidInputError(f"session {args.session_id} is a real patient's; resume it in the app")
            return _drive(args, session)


def run_sessions(args) -> int:
    with TrialStore.open(args.db) as store:
        if args.action == "list":
            rows = store.list_sessions()
            print(f"{'id':>4}  {'patient':<12} {'eye':<3} {'state':<8} {'trials':>6}  {'created':<20} kind")
            for info in rows:
                n = len(store.trials(info.session_id))
                kind = "SIMULATED" if info.simulated else "real"
                print(f"{info.session_id:>4}  {info.patient_id:<12} {info.eye.value:<3} {info.state.value:<8} {n:>6}  "
                      f"{info.created_at:%Y-%m-%d %H:%M:%S}  {kind}")  # fmt: skip
            return 0
        info = store.get_session(args.session_id)
        trials = store.trials(args.session_id, include_void=True)
        doc = {
            "session_id": info.session_id, "patient_id": info.patient_id, "eye": info.eye.value,
            "state": info.state.value, "simulated": info.simulated, "seed": info.seed,
            "protocol": info.protocol.name, "software_version": info.software_version,
            "trials": [{"index": t.index, "s_logmar": t.s_logmar, "sphere_d": t.lens.sphere_d,
                        "cylinder_d": t.lens.cylinder_d, "axis_deg": t.lens.axis_deg, "letter_shown": t.letter_shown,
                        "letter_named": t.letter_named, "correct": t.correct, "void": t.void} for t in trials],
            "result": info.result,
        }  # fmt: skip
        if args.json:
            print(json.dumps(doc, indent=2, default=str))
            return 0
        kind = "SIMULATED" if info.simulated else "real patient"
        print(f"session {info.session_id} ({kind}) patient {info.patient_id} {info.eye.value}, "
              f"protocol {info.protocol.name}, {info.state.value}, {len(trials)} trials")  # fmt: skip
        for t in trials:
            void = " VOID" if t.void else ""
            print(f"  {t.index + 1:3d} s={t.s_logmar:+.2f} S {t.lens.sphere_d:+.2f} C {t.lens.cylinder_d:+.2f} "
                  f"shown {t.letter_shown} named {t.letter_named or '-'} {'correct' if t.correct else 'wrong'}{void}")  # fmt: skip
        if info.result:
            r = info.result["rounded"]
            print(f"result: S {r['sphere_d']:+.2f} C {r['cylinder_d']:+.2f} x {r['axis_deg']:.0f}, "
                  f"predicted VA {info.result['predicted_va_logmar']:.2f} logMAR")  # fmt: skip
        return 0
