"""Record the stored runs the tests hold to docs/results as a text fixture (tests/fixtures/stored_runs.json).

    OPENBLAS_CORETYPE=Haswell python -m tests.record_stored_answers            # write the fixture
    OPENBLAS_CORETYPE=SkylakeX python -m tests.record_stored_answers --measure # how this CPU differs

The stores are not in the repository (``python docs/results/regenerate.py --list`` names the
commands that write them; ``--stores DIR`` reads them from another folder than docs/results), and
they keep each run's final metrics, not its answers. Writing: each registered run
(:data:`tests.stored_runs.STORED_CASES`) is rerun and must give its store's metrics to the last
bit, which holds only on the kernels the stores were recorded with (here OpenBLAS's Haswell
kernels and NumPy's default dispatch); the fixture then keeps, per run, the store's metrics
(decision times aside: wall clock), and the run's trials with ``stopped_by`` and
``robust_prefix``: the number of trials before the first decision another CPU's rounding could
turn, a near-tie. A decision is an ``argmax``/``argmin`` over a flat array of floats, or a
``floor`` (a value rounded to a lens step), taken while the question of trial ``k`` (or, at
``k = n``, the stop and the lens to file) was chosen; it is a near-tie when its best two values
differ by less than :data:`NEAR_TIE` relative to the larger (the value lies that close to a step's
edge). The stopping rules' thresholds are not traced: (a) recomputes the stop from the answers.

``--measure`` prints, per run, on this CPU: the estimate recomputed from the recorded answers
against the stored one (both from the fixture: no store needed), the trials the rerun asks in
common with the recorded ones, and the recorded ``robust_prefix``.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from tests.stored_runs import (
    ANSWERS,
    RESULTS,
    STORED_CASES,
    as_stored,
    compact_trial,
    same_prefix,
    stored_answers,
    trial_record,
    without_times,
)
from visiontune.refraction.loop import MemoryLog

#: Relative gap of a decision's best two values under which another CPU may choose the other.
#: Kernels differ by a few ulps per operation (~1e-16 relative), accumulated through a session's
#: particle weights: recomputed under 4 emulated CPUs (``--measure``: OPENBLAS_CORETYPE=SkylakeX,
#: Sandybridge, Prescott, NumPy's AVX2/AVX-512 loops disabled) the estimates of the stored runs
#: moved by at most 1.5e-15 D. 1e-9 leaves six orders of magnitude to that. The closest decision
#: of the 15 stored runs held is 8.9e-9 apart (trial-frame, adult-clinic case 0): none is a
#: near-tie, and each asks all its questions alike on those CPUs.
NEAR_TIE = 1e-9


class _DecisionNumpy:
    """NumPy as the package's modules see it, except that each ``argmax``/``argmin`` over a
    flat array of floats appends ``(trials recorded so far, relative gap of its best two)`` to
    ``gaps``."""

    def __init__(self, gaps: list, trials_so_far) -> None:
        self._gaps, self._trials_so_far = gaps, trials_so_far

    def __getattr__(self, name):
        return getattr(np, name)

    def _note(self, a, sign: float) -> None:
        v = np.asarray(a)
        if v.dtype.kind != "f" or v.size < 2:
            return
        flat = sign * v.ravel()
        flat = flat[np.isfinite(flat)]
        if flat.size < 2:
            return
        second, best = np.partition(flat, -2)[-2:]
        scale = max(abs(best), abs(second), np.finfo(float).tiny)
        self._gaps.append((self._trials_so_far(), float((best - second) / scale)))

    def argmax(self, a, axis=None, **kwargs):
        if axis is None:
            self._note(a, 1.0)
        return np.argmax(a, axis=axis, **kwargs)

    def argmin(self, a, axis=None, **kwargs):
        if axis is None:
            self._note(a, -1.0)
        return np.argmin(a, axis=axis, **kwargs)

    def floor(self, x, *args, **kwargs):
        """Rounding to a lens step (``floor(y + 0.5)``): a near-tie when ``y`` lies within a
        relative :data:`NEAR_TIE` of an integer (an exact integer, a value on the grid, aside)."""
        y = np.asarray(x, dtype=float)
        if y.dtype.kind == "f" and y.size:
            off = np.abs(y - np.round(y))
            close = off[(off > 0) & np.isfinite(y)] / np.maximum(np.abs(y[(off > 0) & np.isfinite(y)]), 1.0)
            if close.size:
                self._gaps.append((self._trials_so_far(), float(close.min())))
        return np.floor(x, *args, **kwargs)


@contextmanager
def decision_gaps():
    """Within: the gaps of every decision the package takes, listed as ``(k, gap)``."""
    gaps: list[tuple[int, float]] = []
    recorded = [0]
    record = MemoryLog.record

    def counting(self, *args, **kwargs):
        trial = record(self, *args, **kwargs)
        recorded[0] += 1
        return trial

    proxy = _DecisionNumpy(gaps, lambda: recorded[0])
    patched = [
        m for name, m in list(sys.modules.items()) if name.startswith("visiontune.") and getattr(m, "np", None) is np
    ]
    MemoryLog.record = counting
    for m in patched:
        m.np = proxy
    try:
        yield gaps
    finally:
        MemoryLog.record = record
        for m in patched:
            m.np = np


def robust_prefix(gaps: list[tuple[int, float]], n_trials: int) -> int:
    """Trials before the first decision that is a near-tie (all ``n_trials`` when none is)."""
    return min([k for k, gap in gaps if gap < NEAR_TIE] + [n_trials])


def record(results: Path = RESULTS) -> dict:
    """Each registered run's fixture entry, its store read in the folder ``results``."""
    missing = sorted({c.store for c in STORED_CASES.values() if not (results / c.store).is_file()})
    if missing:
        names = " ".join(m.removesuffix(".sqlite") for m in missing)
        sys.exit(f"{results}: no store {', '.join(missing)}; regenerate with python docs/results/regenerate.py {names}")
    out = {}
    for key, case in STORED_CASES.items():
        stored = case.stored_in(results)
        with decision_gaps() as gaps:
            metrics, trials = case.run()
        if as_stored(metrics, stored) != without_times(stored):
            sys.exit(
                f"{key}: the rerun differs from the store; record on the kernels the stores were written with "
                "(OPENBLAS_CORETYPE=Haswell on an x86-64 with AVX2, NumPy's default dispatch)"
            )
        out[key] = {
            "stopped_by": stored["stopped_by"],
            "robust_prefix": robust_prefix(gaps, len(trials)),
            "metrics": without_times(stored),
            "trials": [trial_record(t) for t in trials],
        }
        closest = min(gap for k, gap in gaps if k < len(trials))
        print(
            f"{key}: {len(trials)} trials, first near-tie before trial {out[key]['robust_prefix']}, "
            f"closest decision {closest:.2g}",
            file=sys.stderr,
        )
    return out


def measure() -> None:
    for key, case in STORED_CASES.items():
        stored, answers = case.stored(), stored_answers(case)
        again, _ = case.recompute(answers["trials"], answers["stopped_by"])
        _, trials = case.run()
        common = same_prefix(answers["trials"], [trial_record(t) for t in trials])
        print(
            json.dumps(
                {
                    "case": key,
                    "estimate_moved_d": abs(again["exact_error_d"] - stored["exact_error_d"]),
                    "same_trials": common,
                    "robust_prefix": answers["robust_prefix"],
                    "recorded_trials": len(answers["trials"]),
                }
            )
        )


def fixture_text(runs: dict) -> str:
    """The fixture's text: a run's stop, prefix and metrics on its first line, then one trial a line."""
    lines = []
    for key, run in runs.items():
        head = {"stopped_by": run["stopped_by"], "robust_prefix": run["robust_prefix"], "metrics": run["metrics"]}
        trials = ",\n".join(f"  {json.dumps(compact_trial(t), ensure_ascii=False)}" for t in run["trials"])
        lines.append(f' {json.dumps(key)}: {json.dumps(head, ensure_ascii=False)[:-1]}, "trials": [\n{trials}]}}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", action="store_true", help="compare this CPU's reruns with the recorded answers")
    parser.add_argument("--stores", type=Path, default=RESULTS, help="folder of the stores (default docs/results)")
    args = parser.parse_args()
    if args.measure:
        measure()
        return
    ANSWERS.parent.mkdir(exist_ok=True)
    ANSWERS.write_text(fixture_text(record(args.stores)))


if __name__ == "__main__":
    main()
