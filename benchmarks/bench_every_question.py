"""Benchmark: answer -> next question with every question type on (prints medians).

``--protocol`` (default ``docs/results/protocols/clinical-sloan-lines-filed.toml``: letters, 1-or-2
comparisons and chart lines, the stop on the lens to file) with the sliders of
``clinical-sloan-compare-sliders`` added (``--no-sliders``: as it is), so that each answer weighs a
letter, a comparison, a chart line and a slider against each other. Timed per answer as
``bench_answer_to_lens.py`` times it (the answer committed to the SQLite trial log, the estimate
with its region, the stop rule, the next question), sessions run to the budget (precision stop
evaluated, not obeyed). Target (issue): <= 50 ms median, <= 100 ms at the 99th percentile.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_every_question.py [--sessions 3] [--population adult-clinic]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from bench_answer_to_lens import full_length

from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.population import draw_cases
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore

SLIDERS = "docs/results/protocols/clinical-sloan-compare-sliders.toml"


def with_sliders(protocol):
    """``protocol`` with the ``[sliders]`` table of :data:`SLIDERS` appended (refused if it has one)."""
    if protocol.sliders is not None:
        return protocol
    text = load_protocol(SLIDERS).source_text
    table = text[text.index("[sliders]") :]
    return parse_protocol(protocol.source_text.rstrip("\n") + "\n\n" + table, f"{protocol.source} (with sliders)")


def time_session(folder: Path, protocol, case) -> tuple[np.ndarray, Counter]:
    """Seconds from each answer to the next question over one session (as ``bench_answer_to_lens``),
    and how many questions of each kind it asked."""
    patient = case.patient(protocol.n_alternatives)
    presenter = SimulatedPresenter(patient)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    times, kinds = [], Counter()
    with TrialStore.open(folder / "bench.sqlite3") as store:
        with RefractionSession.start(
            store, patient_id="BENCH", eye="OD", protocol=protocol, simulated=True, seed=case.seed, start=start
        ) as session:
            query = session.next_query()
            while True:
                kinds[type(query).__name__] += 1
                answer = presenter.present(query)
                t0 = time.perf_counter()
                session.record(answer)
                session.current_estimate()
                if session.stop_reason() == "budget":
                    break
                query = session.next_query()
                times.append(time.perf_counter() - t0)
    return np.array(times), kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--protocol", default="docs/results/protocols/clinical-sloan-lines-filed.toml")
    parser.add_argument("--population", default="adult-clinic", help="validation population of the patients")
    parser.add_argument("--no-sliders", action="store_true", help="the protocol as it is")
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    if not args.no_sliders:
        protocol = with_sliders(protocol)
    protocol = full_length(protocol)
    every, kinds = [], Counter()
    for case in draw_cases(args.population, args.sessions, 1):
        with tempfile.TemporaryDirectory() as folder:
            t, asked = time_session(Path(folder), protocol, case)
        t = t * 1e3
        every.append(t)
        kinds.update(asked)
        print(
            f"case {case.case_id}: {len(t) + 1} answers, median {np.median(t):.1f} ms, "
            f"p99 {np.percentile(t, 99):.1f} ms"
        )
    t = np.concatenate(every)
    print(f"questions asked: {dict(sorted(kinds.items()))}")
    print(
        f"answer -> next question over {len(t)} answers in {args.sessions} sessions of {protocol.name}"
        f"{'' if args.no_sliders else ' with sliders'} ({args.population}): median {np.median(t):.1f} ms, "
        f"p99 {np.percentile(t, 99):.1f} ms, max {t.max():.1f} ms"
    )


if __name__ == "__main__":
    main()
