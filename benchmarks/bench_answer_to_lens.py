"""Benchmark: from a typed answer to the next lens, in a clinical session (prints medians).

Timed per answer, as the app does it: :meth:`RefractionSession.record` (the answer committed
to the SQLite trial log, fsynced), the current estimate with its credible region
(:meth:`~visiontune.refraction.loop.Refraction.current_estimate`), the stop rule, and the next
query (lens and letter size, :meth:`~visiontune.refraction.loop.Refraction.next_query`).
Sessions run the ``clinical-sloan`` protocol to its budget (``max_trials`` answers: the
information stop switched off, the precision stop evaluated but not obeyed) against
patients of a validation population (``adult-clinic`` by default; ``no-start``, the
widest prior, is the slowest) (target: <= 50 ms median, <= 100 ms
at the 99th percentile on the 2-core machine).

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_answer_to_lens.py [--sessions 5] [--protocol clinical-sloan]
     [--population adult-clinic|no-start|...]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.population import draw_cases
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore


def full_length(protocol):
    """``protocol`` without its information stop; the precision stop is evaluated at every answer
    but not obeyed (:func:`time_session`), since a criterion in its units needs it."""
    text = re.sub(r"(?m)^min_information_bits\s*=.*$", "", protocol.source_text)
    return parse_protocol(text, f"{protocol.source} (full length)")


def time_session(folder: Path, protocol, case) -> np.ndarray:
    """Seconds from each answer to the next lens over one session."""
    patient = case.patient(protocol.n_alternatives)
    presenter = SimulatedPresenter(patient)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    times = []
    with TrialStore.open(folder / "bench.sqlite3") as store:
        with RefractionSession.start(
            store, patient_id="BENCH", eye="OD", protocol=protocol, simulated=True, seed=case.seed, start=start
        ) as session:
            query = session.next_query()
            while True:
                answer = presenter.present(query)
                t0 = time.perf_counter()
                session.record(answer)
                session.current_estimate()
                if session.stop_reason() == "budget":
                    break
                query = session.next_query()
                times.append(time.perf_counter() - t0)
    return np.array(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--protocol", default="clinical-sloan")
    parser.add_argument("--population", default="adult-clinic", help="validation population of the patients")
    args = parser.parse_args()
    protocol = full_length(load_protocol(args.protocol))
    cases = draw_cases(args.population, args.sessions, 1)
    every, medians = [], []
    for case in cases:
        with tempfile.TemporaryDirectory() as folder:
            t = time_session(Path(folder), protocol, case) * 1e3
        every.append(t)
        medians.append(np.median(t))
        print(
            f"case {case.case_id}: {len(t) + 1} answers, median {np.median(t):.1f} ms, "
            f"p99 {np.percentile(t, 99):.1f} ms, max {t.max():.1f} ms"
        )
    t = np.concatenate(every)
    print(
        f"answer -> next lens over {len(t)} answers in {args.sessions} sessions of {protocol.name} "
        f"({args.population}): median {np.median(t):.1f} ms, p99 {np.percentile(t, 99):.1f} ms, max {t.max():.1f} ms; "
        f"median of session medians {np.median(medians):.1f} ms"
    )


if __name__ == "__main__":
    main()
