"""Benchmark sweeps: run every (rule, function, seed) of an experiment, resumably, in parallel.

One run (:func:`run_one`) is a pure function of its :class:`RunSpec`:

1. the problem: inputs ``u`` scaled to ``[0, 1]^d`` (as the authors' toolbox does),
   ``x = lower + u (upper - lower)``, objective ``g(u) = TestFunction.scaled(x)`` (mean 0, sd 1,
   maximisation; DESIGN.md "Benchmark scaling"). Contextual-binary adds a context ``s`` in
   ``[0, 1]`` with reference ``s0 = 0.5`` (DESIGN.md, authors' toolbox);
2. the loop, ``iterations`` times: ``query = policy(model, problem, data, rng)``; the answer is
   drawn with the run's rng, ``c ~ Bernoulli(Φ(g(x)))`` (binary, seed 000 Eq. 1) or
   ``c ~ Bernoulli(Φ(s g(x)))`` (contextual binary, seed 002 §4, kernel ``s s' k(x, x')``);
   duels ``(s, x, x2)``: ``P(x wins) = Φ(g(x) - g(x2))`` (preferential, seed 000 Eq. 5) or
   ``Φ(s (g(x) - g(x2)))`` (contextual preferential, seed 002 Eq. 11);
   the :class:`~visiontune.gp.ProbitGP` (duels: :class:`~visiontune.gp.PreferenceGP`) is
   refitted (Laplace, as in seed 002 §4.1, warm-started) with *fixed* hyperparameters; the
   reported solution ``x̂ = argmax_x μ_c(s0, x)`` (:func:`visiontune.acquisition.policy.solution`;
   duels: ``argmax_x`` of the utility's posterior mean, ``preference_solution``) is scored by the
   true scaled value ``g(x̂)`` (DESIGN.md scores binary runs by ``Φ(g(x̂))``: the same ranks on
   final scores, a different AUC; we record ``g`` for every scenario).

Hyperparameters: until the kernel-selection package data exists, the kernel *type* is the one
of table S1 (``TestFunction.kernel``: SE, Matérn 3/2, Matérn 5/2), with every lengthscale
:data:`LENGTHSCALE` ``= 1/10`` of the unit box and variance 1 (our choice, not the paper's).

The run's generator is ``numpy.random.default_rng([seed, crc32(function)])``: every rule sees the
same initial design for a given (function, seed) (common random numbers).

:func:`run_sweep` skips runs already in the :class:`~visiontune.bench.store.ResultsStore` and
commits each run as it finishes; locally with joblib (loky processes), or on a
``dask.distributed`` scheduler when ``scheduler`` is given. Progress and ETA go to stderr.
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from visiontune.bench.experiments import Experiment, missing_rules
from visiontune.bench.store import ResultsStore, RunKey, RunRecord
from visiontune.errors import ConfigurationError, InvalidInputError

__all__ = [
    "LENGTHSCALE",
    "REFERENCE_CONTEXT",
    "SUPPORTED_SCENARIOS",
    "RunSpec",
    "SweepSummary",
    "benchmark_kernel",
    "plan",
    "run_one",
    "run_sweep",
]

#: Scenarios the sweep can run today (batch-preferential waits for a batch policy).
SUPPORTED_SCENARIOS = ("binary", "contextual-binary", "preferential", "contextual-preferential")
#: Reference context of the contextual benchmarks (DESIGN.md, authors' toolbox: ``s0 = 0.5``).
REFERENCE_CONTEXT = 0.5
#: Lengthscale of every input dimension on the unit box, until kernel selection exists (our choice).
LENGTHSCALE = 0.1


@dataclass(frozen=True)
class RunSpec:
    """One run: ``experiment`` name, ``scenario``, ``rule``, ``function``, ``seed``, ``iterations``
    (answers, initial ones included) and ``n_initial`` (uniform random queries first)."""

    experiment: str
    scenario: str
    rule: str
    function: str
    seed: int
    iterations: int
    n_initial: int

    @property
    def key(self) -> RunKey:
        return RunKey(self.experiment, self.scenario, self.rule, self.function, int(self.seed))


def plan(experiment: Experiment) -> list[RunSpec]:
    """Every run of ``experiment``, function-major then rule then seed. Raises
    :class:`ConfigurationError` ("not yet available") if a scenario or rule cannot run yet."""
    if experiment.scenario not in SUPPORTED_SCENARIOS:
        raise ConfigurationError(
            f"scenario {experiment.scenario!r} of {experiment.name}: not yet available in the sweep "
            f"(supported: {', '.join(SUPPORTED_SCENARIOS)})"
        )
    missing = missing_rules(experiment)
    if missing:
        raise ConfigurationError(
            f"rules of {experiment.name} not yet available for scenario {experiment.scenario!r}: {', '.join(missing)}"
        )
    return [
        RunSpec(experiment.name, experiment.scenario, rule, fname, seed, experiment.iterations, experiment.n_initial)
        for fname in experiment.functions
        for rule in experiment.rules
        for seed in experiment.seeds
    ]


def benchmark_kernel(function, contextual: bool):
    """GP kernel of a run on ``function``: the table-S1 kernel type on ``[0, 1]^d`` with lengthscales
    :data:`LENGTHSCALE` and variance 1; contextual: ``s s' k(x, x')`` (seed 002 §4)."""
    from visiontune.gp import kernels as K

    base = {"se": K.SquaredExponential, "matern32": K.Matern32, "matern52": K.Matern52}[function.kernel]
    ls = np.full(function.dimension, LENGTHSCALE)
    if contextual:
        return K.contextual_benchmark_kernel(base, ls, 1.0, function.dimension)
    return base(ls, 1.0)


def _run_rng(spec: RunSpec) -> np.random.Generator:
    return np.random.default_rng([int(spec.seed), zlib.crc32(spec.function.encode())])


def run_one(spec: RunSpec) -> RunRecord:
    """Run one (rule, function, seed) and return its record (see the module docstring).

    ``scores[t]`` = ``g(x̂_t)`` after ``t + 1`` answers, ``(iterations,)``.
    """
    from visiontune.acquisition import registry
    from visiontune.acquisition.policy import Data, Problem, solution
    from visiontune.acquisition.preferential import preference_solution
    from visiontune.bench.functions import get_function
    from visiontune.gp import PreferenceGP, ProbitGP

    if spec.scenario not in SUPPORTED_SCENARIOS:
        raise ConfigurationError(f"scenario {spec.scenario!r}: not yet available in the sweep")
    if spec.seed < 0:
        raise InvalidInputError(f"seed: expected an integer >= 0, got {spec.seed}")
    start = time.perf_counter()
    function = get_function(spec.function)
    contextual = spec.scenario.startswith("contextual")
    preferential = spec.scenario.endswith("preferential")
    d = function.dimension
    lower, width = function.lower, function.upper - function.lower

    def g(U: np.ndarray) -> np.ndarray:
        return function.scaled(lower + np.atleast_2d(U) * width)

    unit = np.tile([0.0, 1.0], (d, 1))
    if contextual:
        problem = Problem(unit, context_box=[[0.0, 1.0]], reference_context=[REFERENCE_CONTEXT], scenario=spec.scenario)
    else:
        problem = Problem(unit, scenario=spec.scenario)
    policy = registry.make(spec.rule, n_initial=spec.n_initial)
    kernel = benchmark_kernel(function, contextual)
    rng = _run_rng(spec)
    Model = PreferenceGP if preferential else ProbitGP
    X = np.zeros((0, (problem.c + d) * (2 if preferential else 1)))
    y = np.zeros(0)
    model = Model(kernel, X, y)
    scores = np.empty(spec.iterations)
    for t in range(spec.iterations):
        query = policy(model, problem, Data(X, y), rng)
        latent = g(query.x)[0]
        row = problem.model_input(query.x, query.s)
        if preferential:  # duel [(s, x), (s, x2)]; P(first wins) = Φ(s (g(x) - g(x2))) (000 Eq. 5, 002 Eq. 11)
            latent -= g(query.x2)[0]
            row = np.concatenate([row, problem.model_input(query.x2, query.s)])
        if contextual:
            latent *= float(query.s[0])
        answer = float(rng.random() < norm.cdf(latent))
        X = np.vstack([X, row])
        y = np.append(y, answer)
        model = Model(kernel, X, y, warm_start=model.warm_start_state if model.n else None)
        x_hat = preference_solution(model, problem, rng) if preferential else solution(model, problem, rng)
        scores[t] = g(x_hat)[0]
    return RunRecord(spec.key, scores, spec.iterations, time.perf_counter() - start)


# ------------------------------------------------------------------------------ sweeps


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
        return f"[{bar:<{self.width}}] {self.done}/{self.total} runs {100 * frac:5.1f}% elapsed {self._fmt(elapsed)} ETA {eta}"

    def step(self) -> None:
        self.done += 1
        self.stream.write("\r" + self.line())
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def _local(todo: list[RunSpec], jobs: int) -> Iterator[RunRecord]:
    if jobs == 1:
        yield from map(run_one, todo)
        return
    from joblib import Parallel, delayed

    yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(delayed(run_one)(s) for s in todo)


def _dask(todo: list[RunSpec], address: str, timeout: float) -> Iterator[RunRecord]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ConfigurationError("scheduler: dask.distributed is not installed (pip install 'dask[distributed]')") from None
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ConfigurationError(f"scheduler: cannot connect to {address!r} ({exc})") from None
    try:
        futures = client.map(run_one, todo, pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()


def run_sweep(
    experiment: Experiment,
    store: ResultsStore,
    *,
    jobs: int = 2,
    scheduler: str | None = None,
    progress: bool = True,
    stream=None,
    connect_timeout: float = 30.0,
) -> SweepSummary:
    """Run the runs of ``experiment`` missing from ``store``, committing each as it finishes.

    ``jobs``: local worker processes (joblib/loky; 1 = in this process; -1 = every core);
    ``scheduler``: address of a dask.distributed scheduler (``tcp://host:8786``) instead, reached
    within ``connect_timeout`` seconds. ``stream``: where the progress bar goes (stderr).
    A killed sweep restarted with the same arguments resumes where it stopped.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or (jobs < 1 and jobs != -1):
        raise InvalidInputError(f"jobs: expected an integer >= 1 or -1, got {jobs!r}")
    specs = plan(experiment)
    done = store.finished_keys(experiment.name)
    todo = [s for s in specs if s.key not in done]
    start = time.perf_counter()
    bar = Progress(len(todo), stream) if progress and todo else None
    ran = decisions = 0
    cpu = 0.0
    results: Iterable[RunRecord] = _dask(todo, scheduler, connect_timeout) if scheduler else _local(todo, jobs)
    for record in results if todo else ():
        store.add(record)
        ran += 1
        decisions += record.n_decisions
        cpu += record.seconds
        if bar is not None:
            bar.step()
    return SweepSummary(len(specs), len(specs) - len(todo), ran, time.perf_counter() - start, decisions, cpu)
