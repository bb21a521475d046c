"""Benchmark: the durable commit of one answer to the trial log (plain script, prints medians).

Timed: :meth:`visiontune.session.store.SessionHandle.record_trial` of one
:class:`~visiontune.refraction.trial.Trial`, which returns only when the
answer is committed and fsynced (WAL journal, ``synchronous=FULL``, one ``BEGIN IMMEDIATE ...
COMMIT`` per answer: the trial log is written before anything else happens). The
session grows from 0 to ``--trials`` answers in a fresh database in ``--dir`` (default: a
temporary folder; point it at the disk the clinic will use, since fsync cost is the disk's).

Run: python benchmarks/bench_commit.py [--trials 260] [--repeats 5] [--dir DIR]
Prints the median, 95th percentile and maximum per answer over all repeats, and the median
of the per-repeat medians.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.store import TrialStore


def time_session(folder: Path, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Seconds of each ``record_trial`` of one session of ``trials`` answers in a new database."""
    protocol = load_protocol("clinical-sloan")
    times = np.empty(trials)
    with TrialStore.open(folder / "bench.sqlite3") as store:
        store.create_patient("BENCH")
        sid = store.create_session("BENCH", eye="OD", protocol=protocol, seed=0, simulated=True)
        with store.open_session(sid) as handle:
            for i in range(trials):
                trial = Trial(
                    index=i,
                    s_logmar=float(rng.uniform(-0.3, 1.0)),
                    lens=Prescription(float(rng.uniform(-8, 8)), float(rng.uniform(0, 6)), float(rng.uniform(0, 180))),
                    letter_shown="K",
                    letter_named="K",
                    correct=bool(rng.random() < 0.7),
                )
                start = time.perf_counter()
                handle.record_trial(trial)
                times[i] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=260)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go (default: a temporary folder)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per_repeat, every = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(dir=args.dir) as folder:
            t = time_session(Path(folder), args.trials, rng)
        per_repeat.append(np.median(t))
        every.append(t)
    t = np.concatenate(every) * 1e3
    print(
        f"record_trial (durable commit of one answer), {args.trials} answers x {args.repeats} sessions, "
        f"load average {os.getloadavg()[0]:.2f}:"
    )
    print(
        f"  median {np.median(t):.2f} ms, p95 {np.percentile(t, 95):.2f} ms, max {t.max():.2f} ms; "
        f"median of the session medians {1e3 * np.median(per_repeat):.2f} ms"
    )


if __name__ == "__main__":
    main()
