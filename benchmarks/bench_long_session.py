"""Benchmark: how the cost of one answer grows with the length of a session.

One simulated session of ``--trials`` answers per protocol, through the same loop a clinical
session runs (:class:`visiontune.session.engine.RefractionSession` on an SQLite trial log in a
temporary folder; ``--log memory`` uses the bench's in-memory log instead). Timed per answer,
as the clinician waits for it: the answer is committed, the stopping rule is checked and the
next query (letter size, lens) is proposed. Also timed, separately, in the windows reported:
the estimate with its credible region (what the app shows after every answer; the CLI does not
compute it).

Protocols:

- ``gp``: the small fixed-hyperparameter GP protocol of the tests
  (:func:`tests.protocol_text.small_protocol_text`: UCB-ALD, S and C in [-4, 4] D, the paper's
  kernel ``theta s s' + k_SE``) with ``max_trials`` raised to the session length;
- ``optics``: the shipped ``clinical-sloan`` (optics model, EVR) with its stops removed
  (no precision, information or minimum-count stop) and ``max_trials`` raised.

Prints, for each protocol, the median per-answer time over the answers n-9..n at each n of
``--at`` (default 50, 250, 1000), and the growth exponent between consecutive n
(``log(t2/t1) / log(n2/n1)``).

Run: OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_long_session.py
     [--protocols gp,optics] [--at 50,250,1000] [--log sqlite|memory] [--no-estimate]
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: hence the imports below this loop (E402).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.protocol_text

from visiontune.refraction.loop import Answer, MemoryLog, Refraction, SimulatedPresenter  # noqa: E402
from visiontune.refraction.protocol import Stopping, load_protocol, parse_protocol  # noqa: E402
from visiontune.refraction.simulated import simulated_case  # noqa: E402
from visiontune.refraction.start import StartingPoint  # noqa: E402

WINDOW = 10


def bench_protocol(kind: str, trials: int):
    """The protocol ``kind`` (``gp`` or ``optics``) with no stop before ``trials`` answers."""
    if kind == "gp":
        from tests.protocol_text import small_protocol_text

        return parse_protocol(
            small_protocol_text("bench-long-gp", purpose="the long-session benchmark", max_trials=trials),
            source="bench-long-gp",
        )
    if kind == "optics":
        text = load_protocol("clinical-sloan").source_text
        # the trial log snapshots the protocol's text: edit the text, not the parsed protocol
        text, count = re.subn(
            r"\n\[stopping\]\n.*?(?=\n\[psychometric)", f"\n[stopping]\nmax_trials = {trials}\n", text, flags=re.S
        )
        assert count == 1, "clinical-sloan.toml no longer has [stopping] before [psychometric]"
        protocol = parse_protocol(text, source="clinical-sloan without its stops")
        assert protocol.stopping == Stopping(max_trials=trials)
        return protocol
    raise SystemExit(f"unknown protocol kind {kind!r} (gp, optics)")


def time_session(
    protocol, trials: int, *, log: str, estimate_at: set[int] | None, seed: int = 0, folder: Path | None = None
):
    """``(answer_s (trials,), estimate_s (trials,) or None)``: seconds of each answer (commit,
    stopping rule, next query) and of the estimate with its region after the answers that bring
    the session to a count in ``estimate_at`` (NaN elsewhere)."""
    case = simulated_case(seed=seed, protocol=protocol)
    patient = case.patient(protocol.n_alternatives)
    presenter = SimulatedPresenter(patient)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    answer_s = np.full(trials, np.nan)
    estimate_s = np.full(trials, np.nan) if estimate_at is not None else None
    store = session = None
    if log == "sqlite":
        from visiontune.session.engine import RefractionSession
        from visiontune.session.store import TrialStore

        store = TrialStore.open(folder / "bench.sqlite3")
        session = RefractionSession.start(
            store, patient_id="BENCH", eye="OD", protocol=protocol, simulated=True, seed=seed, start=start
        )
        loop = session
    else:
        loop = Refraction(MemoryLog(), protocol, seed=seed, start=start, simulated=True)
    try:
        query = loop.next_query()
        for i in range(trials):
            answer = presenter.present(query)
            t0 = time.perf_counter()
            loop.mark_presented()
            loop.record(Answer(correct=answer.correct))
            if loop.stop_reason() is not None:
                answer_s[i] = time.perf_counter() - t0
                break
            query = loop.next_query()
            answer_s[i] = time.perf_counter() - t0
            if estimate_at is not None and i + 1 in estimate_at:
                t1 = time.perf_counter()
                loop.current_estimate(with_region=True)
                estimate_s[i] = time.perf_counter() - t1
    finally:
        if session is not None:
            session.close()
        if store is not None:
            store.close()
    return answer_s, estimate_s


def window_median(times: np.ndarray, n: int) -> float:
    """Median of the answers that brought the session to n-9..n answers, milliseconds."""
    chunk = times[max(0, n - WINDOW) : n]
    chunk = chunk[np.isfinite(chunk)]
    return float(np.median(chunk) * 1e3) if chunk.size else float("nan")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", default="gp,optics", help="comma-separated: gp, optics")
    parser.add_argument("--at", default="50,250,1000", help="comma-separated session lengths to report")
    parser.add_argument("--log", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument("--no-estimate", action="store_true", help="do not time the estimate and its region")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    at = sorted({int(v) for v in args.at.split(",")})
    trials = at[-1]
    print(
        f"per-answer time (commit + stopping rule + next query), median of answers n-{WINDOW - 1}..n, ms; "
        f"log: {args.log}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    for kind in args.protocols.split(","):
        protocol = bench_protocol(kind.strip(), trials)
        with tempfile.TemporaryDirectory() as folder:
            wall0 = time.perf_counter()
            windows = None if args.no_estimate else {m for n in at for m in range(max(1, n - WINDOW + 1), n + 1)}
            answer_s, estimate_s = time_session(
                protocol, trials, log=args.log, estimate_at=windows, seed=args.seed, folder=Path(folder)
            )
            wall = time.perf_counter() - wall0
        print(f"\n{kind} ({protocol.model.type} model, policy {protocol.policy}): {trials} answers in {wall:.1f} s")
        header = f"{'n':>6}  {'answer ms':>10}  {'growth':>7}"
        if estimate_s is not None:
            header += f"  {'estimate ms':>12}  {'growth':>7}"
        print(header)
        prev = None
        for n in at:
            a = window_median(answer_s, n)
            line = f"{n:>6}  {a:>10.1f}  "
            e = window_median(estimate_s, n) if estimate_s is not None else None
            if prev is None:
                line += f"{'':>7}"
            else:
                line += f"{np.log(a / prev[1]) / np.log(n / prev[0]):>7.2f}"
            if e is not None:
                line += f"  {e:>12.1f}  "
                line += f"{'':>7}" if prev is None else f"{np.log(e / prev[2]) / np.log(n / prev[0]):>7.2f}"
            print(line)
            prev = (n, a, e)


if __name__ == "__main__":
    main()
