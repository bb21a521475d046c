"""Where a session's seconds go, and where other stops would have ended it (SIMULATED patients).

``trace``: refract the validation's cases (population seed ``--seed``, the first ``--cases`` of each
of ``--populations``) with ``--protocol`` through the one trial loop (``Refraction.run``), and after
every answer record what it cost and what the session knew: the question's kind and seconds (the
protocol's durations, :meth:`Refraction.patient_seconds`), its changes of lens from the lens in place
(:func:`~visiontune.refraction.lenses.changes_along`), the error of the lens that would be filed then
(``|P(filed) - P*|``, power vectors), the posterior probability that the filed lens is within 0.25 D
of the correction (``Σ_i w_i 1[|P(filed) - P*_i| <= 0.25]``), the 95% region's radii on ``M`` and
``J``, whether it holds the truth, the spread of ``ln κ`` over its prior's and the over-minus risk
of the lens to file. The rows go to ``--out`` (JSON) so that ``report`` reads them again.

``table``: the clinic-time table from ``visiontune validate`` stores (``store_rows``).

``report``: where the seconds went, by question kind, lens changes against answers, early (the lens
to file not yet within 0.25 D of the truth for good) against late (after it, until the stop); and
the stops other readings would give. A stop only ends a session, so every session's answers up to
it are those it was asked, and a stop met before the one run ends the session at the first answer
it is met: exact for a stop that fires earlier (the rows say when the session ended first, "as run").

Patient time with a motorized phoropter is read from the same answers with a change of lens at
``--phoropter-change-s`` (1 s) instead of the protocol's: the questions were chosen at the
protocol's price, so this is the time of these answers at the phoropter, not of a session
designed for it.

Run (1-6 s a session on a shared core; docs/results/clinic-time.md has the commands of its tables):
    OPENBLAS_NUM_THREADS=1 python benchmarks/clinic_time.py trace \
        --protocol docs/results/protocols/clinical-sloan-lines.toml --populations adult-clinic,young \
        --cases 20 --jobs 2 --out /tmp/ct/lines.json
    python benchmarks/clinic_time.py report /tmp/ct/lines.json
    python benchmarks/clinic_time.py table STORE.sqlite [--below 40]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from joblib import Parallel, delayed

from visiontune.errors import InvalidInputError
from visiontune.refraction.lenses import changes_along, lens_left_in_place, lenses_shown
from visiontune.refraction.loop import SimulatedPresenter, is_comparison, is_line, is_slider
from visiontune.refraction.mixed_engine import filed_within_probability, sensitivity_sd_ratio
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import case_refraction, validation_case

#: The window of agreement of two clinicians' refractions (Bullimore, Fusaro & Adams 1998), D.
WITHIN_D = 0.25


def kind_of(trial) -> str:
    if is_line(trial):
        return "line"
    if is_slider(trial):
        return "slider"
    return "comparison" if is_comparison(trial) else "letter"


def answer_seconds(protocol, kind: str) -> float:
    """The protocol's seconds for one answer of ``kind`` (as :meth:`Refraction.patient_seconds`)."""
    settings = protocol.comparisons or MixedSettings()
    if kind == "line":
        return protocol.chart_line.line_seconds
    if kind == "slider":
        return protocol.sliders.slider_seconds
    return settings.comparison_seconds if kind == "comparison" else settings.letter_seconds


def trace_case(protocol, population: str, case_id: int, seed: int) -> dict | None:
    """One session of ``protocol`` (a :class:`Protocol`), recorded after every answer (module docstring);
    None for a patient whose start the session refuses."""
    case = validation_case(population, case_id, seed)
    try:
        refraction = case_refraction(protocol, case)
    except InvalidInputError as exc:  # a start the session refuses: left out, as `visiontune validate` does
        print(f"{population} {case_id}: refused ({exc})", file=sys.stderr, flush=True)
        return None
    truth = case.true_rx.power_vector_array()
    steps = []

    def after(trial, r) -> None:
        trials = r.trials()
        before = lens_left_in_place(trials[-2]) if len(trials) > 1 else None
        est = r.current_estimate()
        engine = r.engine
        post = engine.correction_draws(trials)
        filed = est.rounded.power_vector_array()
        centre = post.best_correction()
        ratio = sensitivity_sd_ratio(post) if hasattr(post, "sensitivity_prior") else None
        risk = getattr(engine, "_filed_risk", None)
        kind = kind_of(trial)
        steps.append(
            {
                "kind": kind,
                "seconds": answer_seconds(protocol, kind),
                "changes": changes_along(lenses_shown(trial), before),
                "error": float(np.linalg.norm(filed - truth)),
                "error_m": float(filed[0] - truth[0]),
                "p_within": filed_within_probability(post, est.rounded),
                "m_pm": float(est.region.m_pm_d),
                "j_pm": float(est.region.cylinder_vector_pm_d),
                "covered": bool(np.linalg.norm(truth - centre) <= est.region.distance_d),
                "kappa_ratio": ratio,
                "om_risk": risk,
            }
        )

    patient = case.patient(protocol.n_alternatives)
    t0 = time.perf_counter()
    result = refraction.run(SimulatedPresenter(patient), progress=after)
    start = None if case.start_rx is None else float(np.linalg.norm(case.start_rx.power_vector_array() - truth))
    return {
        "population": population,
        "case_id": case_id,
        "age": case.age_years,
        "stopped_by": result["stopped_by"],
        "young": bool(getattr(refraction.engine, "guards_over_minus", lambda: False)()),
        "start_error": start,
        "patient_s": refraction.patient_seconds(),
        "steps": steps,
        "wall_s": time.perf_counter() - t0,
        "min_trials": protocol.stopping.min_trials,
        "max_trials": protocol.stopping.max_trials,
        "protocol": protocol.name,
    }


def _traced(protocol, population: str, case_id: int, seed: int) -> dict | None:
    """:func:`trace_case`, its line printed to stderr (a job of ``trace --jobs``: each session depends
    only on its case, so the traces are the same)."""
    row = trace_case(protocol, population, case_id, seed)
    if row is not None:
        print(
            f"{population} {case_id}: {len(row['steps'])} answers, {row['patient_s']:.0f} s, "
            f"{row['wall_s']:.1f} s wall",
            file=sys.stderr,
            flush=True,
        )
    return row


# ---------------------------------------------------------------------------------------------- stops
def stop_as_run(row: dict, n: int) -> bool:
    return n == len(row["steps"])


def stop_probability(level: float, *, over_minus: float | None = 0.001, kappa: float | None = None):
    """The stop on the filed lens: after ``n`` answers (at least the protocol's ``min_trials``), the
    posterior probability that the lens to file is within 0.25 D of the correction at least ``level``;
    in a session the over-minus guard covers, its over-minus risk at most ``over_minus`` (None: not
    waited for); with ``kappa``, the spread of ``ln κ`` at most that ratio to its prior's."""

    def stop(row: dict, n: int) -> bool:
        s = row["steps"][n - 1]
        if n < row["min_trials"]:
            return False
        if s["p_within"] < level:
            return False
        if over_minus is not None and s["om_risk"] is not None and s["om_risk"] > over_minus:
            return False
        return kappa is None or s["kappa_ratio"] is None or s["kappa_ratio"] <= kappa

    return stop


def stop_or_time_budget(stop, seconds: float, change_s: float = 4.0):
    """``stop``, or once the patient's time (answers and changes of lens at ``change_s``) reaches
    ``seconds``: a budget in the patient's time instead of in answers (the lens to file then is the
    estimate's, as at the answer budget)."""

    def either(row: dict, n: int) -> bool:
        spent = sum(s["seconds"] + change_s * s["changes"] for s in row["steps"][:n])
        return stop(row, n) or spent >= seconds

    either.inner = stop
    return either


def ended(row: dict, stop) -> int:
    """The answers after which ``stop`` ends the session (the session as run when it never does first)."""
    for n in range(1, len(row["steps"]) + 1):
        if stop(row, n):
            return n
    return len(row["steps"])


def session_at(row: dict, n: int, change_s: float | None, phoropter_change_s: float) -> dict:
    """What the session had cost and found after ``n`` answers."""
    steps = row["steps"][:n]
    answers_s = sum(s["seconds"] for s in steps)
    changes = sum(s["changes"] for s in steps)
    last = steps[-1]
    return {
        "answers": n,
        "changes": changes,
        "frame_s": answers_s + change_s * changes,
        "phoropter_s": answers_s + phoropter_change_s * changes,
        "error": last["error"],
        "error_m": last["error_m"],
        "covered": last["covered"],
        "precision": n < len(row["steps"]) or row["stopped_by"] == "precision",
    }


def summary(rows: list[dict], stop, change_s: float, phoropter_change_s: float) -> dict:
    at = []
    for r in rows:
        n = ended(r, stop)
        a = session_at(r, n, change_s, phoropter_change_s)
        inner = getattr(stop, "inner", None)  # a time budget's stop is no precision stop
        if inner is not None and n < len(r["steps"]):
            a["precision"] = inner(r, n)
        at.append(a)
    young = [a for a, r in zip(at, rows) if r["young"]]
    frame = np.array([a["frame_s"] for a in at])
    phor = np.array([a["phoropter_s"] for a in at])
    err = np.array([a["error"] for a in at])
    return {
        "n": len(at),
        "frame_median": float(np.median(frame)),
        "frame_p90": float(np.percentile(frame, 90)),
        "phoropter_median": float(np.median(phor)),
        "phoropter_p90": float(np.percentile(phor, 90)),
        "changes": float(np.median([a["changes"] for a in at])),
        "answers": float(np.median([a["answers"] for a in at])),
        "within_25": float(np.mean(err <= 0.25 + 1e-9)),
        "within_50": float(np.mean(err <= 0.5 + 1e-9)),
        "coverage": float(np.mean([a["covered"] for a in at])),
        "precision": float(np.mean([a["precision"] for a in at])),
        "young_over_minus": int(sum(a["error_m"] < -0.25 - 1e-9 for a in young)),
    }


def settled_at(row: dict) -> int | None:
    """The first answer after which the lens to file stays within 0.25 D of the truth to the end (None: never)."""
    first = None
    for n, s in enumerate(row["steps"], start=1):
        if s["error"] <= WITHIN_D + 1e-9:
            first = first or n
        else:
            first = None
    return first


def where_seconds_go(rows: list[dict], change_s: float) -> None:
    """Per population: seconds by question kind, lens changes against answers, before and after the
    lens to file settled within 0.25 D of the truth, and what the stop waited for then."""
    print("\n### Where the seconds go (median per session; share of the total time)\n")
    print(
        "| population | n | total s | letters s | comparisons s | lines s | lens changes s | "
        "answers / changes | settled within 0.25 D at answer | s before it | s after it (the stop's wait) | "
        "never settled |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for population in sorted({r["population"] for r in rows}):
        group = [r for r in rows if r["population"] == population]
        per = {k: [] for k in ("total", "letter", "comparison", "line", "changes", "before", "after")}
        answers, changes, settled, never = [], [], [], 0
        for r in group:
            steps = r["steps"]
            cost = [s["seconds"] + change_s * s["changes"] for s in steps]
            per["total"].append(sum(cost))
            for kind in ("letter", "comparison", "line"):
                per[kind].append(sum(s["seconds"] for s in steps if s["kind"] == kind))
            per["changes"].append(change_s * sum(s["changes"] for s in steps))
            answers.append(len(steps))
            changes.append(sum(s["changes"] for s in steps))
            n = settled_at(r)
            if n is None:
                never += 1
                continue
            settled.append(n)
            per["before"].append(sum(cost[:n]))
            per["after"].append(sum(cost[n:]))
        total = float(np.sum(per["total"]))

        def cell(k: str) -> str:
            return f"{np.median(per[k]):.0f} ({np.sum(per[k]) / total:.0%})"

        print(
            f"| {population} | {len(group)} | {np.median(per['total']):.0f} | {cell('letter')} | "
            f"{cell('comparison')} | {cell('line')} | {cell('changes')} | {np.median(answers):.0f} / "
            f"{np.median(changes):.0f} | {np.median(settled) if settled else float('nan'):.0f} | "
            f"{np.median(per['before']) if settled else float('nan'):.0f} | "
            f"{np.median(per['after']) if settled else float('nan'):.0f} | {never} |"
        )
    print(
        "\nAt the answer the lens to file settled within 0.25 D (sessions that settled), what the stop still "
        "lacked (share of sessions; the stop waits for all):\n"
    )
    print(
        "| population | n settled | 95% radius of M > 0.25 | of J > 0.25 | ln κ spread | over-minus risk | "
        "P(filed within 0.25 D) there (median) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for population in sorted({r["population"] for r in rows}):
        lacks = []
        for r in (r for r in rows if r["population"] == population):
            n = settled_at(r)
            if n is None:
                continue
            s = r["steps"][n - 1]
            lacks.append(
                (
                    s["m_pm"] > 0.25,
                    s["j_pm"] > 0.25,
                    (s["kappa_ratio"] or 0.0) > 0.5,
                    s["om_risk"] is not None and s["om_risk"] > 0.001,
                    s["p_within"],
                )
            )
        if not lacks:
            continue
        a = np.array(lacks, dtype=float)
        print(
            f"| {population} | {len(a)} | {a[:, 0].mean():.0%} | {a[:, 1].mean():.0%} | {a[:, 2].mean():.0%} | "
            f"{a[:, 3].mean():.0%} | {np.median(a[:, 4]):.2f} |"
        )


STOPS = {
    "as run": stop_as_run,
    **{f"P(filed within 0.25 D) >= {q:.2f}, over-minus risk <= 0.1%": stop_probability(q) for q in (0.7, 0.8, 0.9)},
    **{
        f"P(filed within 0.25 D) >= {q:.2f}, over-minus risk <= {r:.1%}": stop_probability(q, over_minus=r)
        for q in (0.8, 0.85)
        for r in (0.005, 0.01)
    },
    "P(filed within 0.25 D) >= 0.85, over-minus risk <= 1%, κ learned": stop_probability(
        0.85, over_minus=0.01, kappa=0.5
    ),
    "as run, or 300 s of the patient's time (trial frame)": stop_or_time_budget(stop_as_run, 300.0),
    "as run, or 240 s of the patient's time (trial frame)": stop_or_time_budget(stop_as_run, 240.0),
    "as run, or 180 s of the patient's time (trial frame)": stop_or_time_budget(stop_as_run, 180.0),
    "as run, or 120 s of the patient's time (trial frame)": stop_or_time_budget(stop_as_run, 120.0),
}


def print_stops(rows: list[dict], change_s: float, phoropter_change_s: float) -> None:
    print(
        f"\n### The stop read otherwise (trial frame {change_s:g} s a change; motorized phoropter "
        f"{phoropter_change_s:g} s)\n"
    )
    print(
        "| population | stop | n | frame s median / p90 | phoropter s median / p90 | lens changes | answers | "
        "within 0.25 / 0.50 D | 95% coverage | precision stop | young over-minused |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for population in sorted({r["population"] for r in rows}):
        group = [r for r in rows if r["population"] == population]
        for label, stop in STOPS.items():
            s = summary(group, stop, change_s, phoropter_change_s)
            print(
                f"| {population} | {label} | {s['n']} | {s['frame_median']:.0f} / {s['frame_p90']:.0f} | "
                f"{s['phoropter_median']:.0f} / {s['phoropter_p90']:.0f} | {s['changes']:.0f} | {s['answers']:.0f} | "
                f"{s['within_25']:.0%} / {s['within_50']:.0%} | {s['coverage']:.0%} | {s['precision']:.0%} | "
                f"{s['young_over_minus']} |"
            )


POPULATIONS = ("adult-clinic", "adult-clinic-misspecified", "young", "high-myopia", "no-start")


def store_rows(path: str, change_s: float, phoropter_change_s: float, below: int | None = None) -> list[str]:
    """The clinic-time table's rows of one ``visiontune validate`` store (every population in it,
    the starting prescription as it is beside each): the validation's own definitions
    (:func:`~visiontune.validation.clinic.summarise`) and the patient's time median and 90th
    percentile with a trial frame (the run's ``patient_s``, changes at the protocol's ``change_s``)
    and with a motorized phoropter (the same answers, ``phoropter_change_s`` a change); with
    ``below``, only the cases numbered below it (the first ``below`` of each population)."""
    import sqlite3

    from visiontune.validation.clinic import summarise

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        found = db.execute(
            "SELECT experiment, population, metrics FROM clinic_runs WHERE case_id < ? ORDER BY case_id",
            (10**9 if below is None else below,),
        ).fetchall()
    out = []
    for population in [p for p in POPULATIONS if any(f[1] == p for f in found)]:
        runs = [json.loads(m) for _, pop, m in found if pop == population]
        runs = [r for r in runs if "refused" not in r]
        s = summarise(population, runs)
        frame = np.array([r["patient_s"] for r in runs])
        changes = np.array([r["lens_changes"] for r in runs])
        phor = frame - (change_s - phoropter_change_s) * changes
        label = found[0][0]
        precision = s.stops.get("precision", 0) / s.n
        out.append(
            f"| {population} | `{label}` | {s.n} | {np.median(frame):.0f} / {np.percentile(frame, 90):.0f} | "
            f"{np.median(phor):.0f} / {np.percentile(phor, 90):.0f} | {np.median(changes):.0f} | "
            f"{s.median_answers:.0f} | {s.within_025:.0%} / {s.within_050:.0%} | "
            f"{s.coverage['covered_95']:.0%} | "
            f"{precision:.0%} | {s.over_minus_young} |"
        )
        if all(r.get("start_error_d") is not None for r in runs):
            st = summarise(population, runs, start=True)
            out.append(
                f"| {population} | starting prescription as it is | {st.n} | - | - | - | - | "
                f"{st.within_025:.0%} / {st.within_050:.0%} | - | - | {st.over_minus_young} |"
            )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("trace", help="refract and record every answer")
    t.add_argument("--protocol", default="clinical-sloan-compare")
    t.add_argument("--populations", default="adult-clinic,young")
    t.add_argument("--cases", type=int, default=20)
    t.add_argument("--first", type=int, default=0, help="first case id (default 0)")
    t.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    t.add_argument("--out", required=True, help="JSON file of the traces (refused if it exists)")
    t.add_argument("--jobs", type=int, default=1, help="sessions traced at once (default 1); the same traces")
    r = sub.add_parser("report", help="print the tables from traces")
    r.add_argument("traces", nargs="+")
    r.add_argument("--phoropter-change-s", type=float, default=1.0)
    t2 = sub.add_parser("table", help="the clinic-time table from visiontune validate stores")
    t2.add_argument("stores", nargs="+")
    t2.add_argument("--change-s", type=float, default=4.0, help="the protocols' seconds a change of lens (4)")
    t2.add_argument("--phoropter-change-s", type=float, default=1.0)
    t2.add_argument("--below", type=int, default=None, help="only the first N cases of each population")
    args = parser.parse_args(argv)
    if args.command == "table":
        print(
            "| population | protocol | n | trial frame s median / p90 | phoropter s median / p90 | lens changes | "
            "answers | within 0.25 / 0.50 D | 95% coverage | precision stop | young over-minused |"
        )
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for path in args.stores:
            print("\n".join(store_rows(path, args.change_s, args.phoropter_change_s, args.below)))
        return 0
    if args.command == "trace":
        from pathlib import Path

        out = Path(args.out)
        if out.exists():
            print(f"--out: {out} exists; choose a new file (nothing written)", file=sys.stderr)
            return 2
        if args.jobs < 1 or args.cases < 1 or args.first < 0:
            parser.error(
                f"--jobs and --cases must be 1 or more and --first 0 or more; got {args.jobs}, {args.cases} "
                f"and {args.first}"
            )
        protocol = load_protocol(args.protocol)
        keys = [(p, i) for p in args.populations.split(",") for i in range(args.first, args.first + args.cases)]
        traced = Parallel(n_jobs=args.jobs)(delayed(_traced)(protocol, p, i, args.seed) for p, i in keys)
        rows = [row for row in traced if row is not None]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rows))
        return 0
    rows = [row for path in args.traces for row in json.loads(open(path).read())]
    change_s = rows[0]["patient_s"] - sum(s["seconds"] for s in rows[0]["steps"])
    changes = sum(s["changes"] for s in rows[0]["steps"])
    change_s = change_s / changes if changes else 0.0
    print(
        f"SIMULATED patients: {rows[0]['protocol']}, {len(rows)} sessions; a change of lens priced "
        f"{change_s:g} s in the protocol"
    )
    where_seconds_go(rows, change_s)
    print_stops(rows, change_s, args.phoropter_change_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
