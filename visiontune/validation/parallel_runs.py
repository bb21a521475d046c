"""Simulated runs in parallel, resumably: worker processes (joblib/loky) or a Dask scheduler, a
progress bar, and a stop on SIGTERM/SIGHUP that keeps what finished.

Shared by the clinical validation (:mod:`visiontune.validation.validate_cli`,
:mod:`visiontune.validation.answer_validation`) and the papers' benchmark sweeps
(:mod:`visiontune.reproduction.sweep`, :mod:`visiontune.reproduction.gp_refraction_bench`). A run is
any picklable spec with a ``key``; :func:`execute_runs` skips the specs whose key is already stored,
hands each result to the store's commit as it finishes, and sums up. A killed invocation restarted
with the same arguments runs only what is missing.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from visiontune._validate import check_int
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.validation.scheduler_check import check_dask_scheduler
from visiontune.validation.worker_lifetime import DiesWithParent

__all__ = [
    "Progress",
    "SweepStopped",
    "SweepSummary",
    "check_jobs",
    "execute_runs",
    "run_dask",
    "run_local",
    "signals_stop_the_sweep",
]


@dataclass(frozen=True)
class SweepSummary:
    """``planned`` runs, ``skipped`` (already stored), ``ran`` now, ``seconds`` of wall clock,
    ``decisions`` made now and ``cpu_seconds`` (sum of the runs' own times)."""

    planned: int
    skipped: int
    ran: int
    seconds: float
    decisions: int
    cpu_seconds: float


class Progress:
    """A one-line progress bar with ETA, redrawn on ``stream`` (stderr) after each run."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.done, self.width = total, 0, width
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()

    @staticmethod
    def _fmt(seconds: float) -> str:
        seconds = int(round(seconds))
        h, rest = divmod(seconds, 3600)
        m, s = divmod(rest, 60)
        return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(round(frac * self.width))
        eta = self._fmt(elapsed / self.done * (self.total - self.done)) if self.done else "?"
        return (
            f"[{bar:<{self.width}}] {self.done}/{self.total} runs {100 * frac:5.1f}% "
            f"elapsed {self._fmt(elapsed)} ETA {eta}"
        )

    def step(self) -> None:
        self.done += 1
        self.stream.write("\r" + self.line())
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


class SweepStopped(KeyboardInterrupt):
    """A sweep stopped by SIGTERM or SIGHUP (``signum``); raised in the main thread."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def signals_stop_the_sweep():
    """While the block runs, SIGTERM and SIGHUP raise :class:`SweepStopped` (a KeyboardInterrupt).

    Their default action ends the process at once, and the loky workers then finish their current
    run as orphans; as an exception, joblib's generator aborts and terminates its workers, exactly
    as on Ctrl-C. Runs already committed stay in the store. No-op outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise SweepStopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def check_jobs(jobs) -> int:
    """``jobs`` (worker processes) when it is an integer >= 1 or -1 (every core), else raise."""
    jobs = check_int("jobs", jobs)
    if jobs < 1 and jobs != -1:
        raise InvalidInputError(f"jobs: expected an integer >= 1 or -1 (every core), got {jobs!r}")
    return jobs


def run_local(todo: list, jobs: int, fn: Callable) -> Iterator:
    """``fn(spec)`` for every spec of ``todo``, in this process
    (``jobs == 1``) or in ``jobs`` joblib/loky worker processes, which end when this process
    dies (:mod:`visiontune.validation.worker_lifetime`); results in completion order."""
    if jobs == 1:
        yield from map(fn, todo)
        return
    from joblib import Parallel, delayed

    fn = DiesWithParent(fn)  # a SIGKILLed sweep leaves no worker running on
    yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(delayed(fn)(s) for s in todo)


def run_dask(todo: list, address: str, timeout: float, fn: Callable) -> Iterator:
    """``fn(spec)`` for every spec of ``todo`` on the Dask scheduler at
    ``address`` (checked first: :func:`~visiontune.validation.scheduler_check.check_dask_scheduler`);
    results in completion order."""
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ConfigurationError(
            "scheduler: dask.distributed is not installed (pip install 'dask[distributed]')"
        ) from None
    check_dask_scheduler(address, timeout)  # not Dask: a clear error, not Dask allocating exabytes
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigurationError(f"scheduler: cannot connect to {address!r} ({exc})") from None
    try:
        futures = client.map(fn, todo, pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()


def execute_runs(
    specs: list,
    done: set,
    run: Callable,
    add: Callable,
    *,
    jobs: int,
    scheduler: str | None,
    progress: bool,
    stream,
    connect_timeout: float,
) -> SweepSummary:
    """Run ``run(spec)`` for every spec whose ``key`` is not in ``done`` (locally with
    :func:`run_local` or on the scheduler with :func:`run_dask`), hand each result to ``add``
    (the store's commit) as it finishes, and sum up. Results need ``n_decisions`` and ``seconds``.
    A stop (Ctrl-C, :class:`SweepStopped`) propagates with the :class:`SweepSummary` of the runs
    finished before it as its ``summary`` attribute."""
    todo = [s for s in specs if s.key not in done]
    start = time.perf_counter()
    bar = Progress(len(todo), stream) if progress and todo else None
    ran = decisions = 0
    cpu = 0.0

    def summary() -> SweepSummary:
        return SweepSummary(len(specs), len(specs) - len(todo), ran, time.perf_counter() - start, decisions, cpu)

    results: Iterable = (
        (run_dask(todo, scheduler, connect_timeout, run) if scheduler else run_local(todo, jobs, run)) if todo else ()
    )
    try:
        with signals_stop_the_sweep():
            for result in results:
                add(result)
                ran += 1
                decisions += result.n_decisions
                cpu += result.seconds
                if bar is not None:
                    bar.step()
    except KeyboardInterrupt as exc:  # Ctrl-C or SweepStopped: say what was done before the stop
        exc.summary = summary()
        raise
    return summary()
