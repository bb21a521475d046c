"""Benchmark sweeps: run every (rule, function, seed) of an experiment, resumably, in parallel.

One run (:func:`run_one`) is a pure function of its :class:`RunSpec`:

1. the problem: inputs ``u`` scaled to ``[0, 1]^d`` (as the authors' toolbox does),
   ``x = lower + u (upper - lower)``, objective ``g(u) = TestFunction.scaled(x)`` (mean 0, sd 1,
   maximisation; docs/design.md, "Benchmark scaling"). Contextual-binary adds a context ``s`` in
   ``[0, 1]`` with reference ``s0 = 0.5`` (docs/design.md, authors' toolbox);
2. the loop, ``iterations`` times: ``query = policy(model, problem, data, rng)``; the answer is
   drawn with the run's rng, ``c ~ Bernoulli(Φ(g(x)))`` (binary, Fauvel & Chalk (binary/preferential BO), Eq. 1) or
   ``c ~ Bernoulli(Φ(s g(x)))`` (contextual binary, Fauvel & Chalk (contextual BO) §4, kernel ``s s' k(x, x')``);
   duels ``(s, x, x2)``: ``P(x wins) = Φ(g(x) - g(x2))`` (preferential, binary/preferential paper, Eq. 5) or
   ``Φ(s (g(x) - g(x2)))`` (contextual preferential, contextual paper, Eq. 11);
   batches of ``m`` options (batch-preferential, binary/preferential paper §4.3): the answer is a ranking drawn from
   the Thurstone case V model ``u_i = g(x_i) + ε_i``, ``ε_i ~ N(0, ½)`` i.i.d., options ranked by
   decreasing ``u`` (:func:`sample_ranking`); every pair then has ``P(x_i above x_j) = Φ(g(x_i) - g(x_j))``,
   the duel model of Fauvel & Chalk (binary/preferential BO), Eq. 5, and the ranking enters the model as its
   ``m(m-1)/2`` duels (:meth:`~visiontune.reproduction.gp.PreferenceGP.from_ranking`, Fauvel & Chalk
   (binary/preferential BO), §4.3); the :class:`~visiontune.reproduction.gp.ProbitGP` (duels:
   :class:`~visiontune.reproduction.gp.PreferenceGP`) is refitted (Laplace, as in the contextual paper §4.1,
   warm-started) with *fixed* hyperparameters; the reported solution ``x̂ = argmax_x μ_c(s0, x)`` (duels: ``argmax_x``
   of the utility's posterior mean) is scored by the true scaled value ``g(x̂)`` (docs/design.md scores binary runs by
   ``Φ(g(x̂))``: the same ranks on final scores, a different AUC; we record ``g`` for every scenario). The
   solution is tracked from iteration to iteration (:class:`~visiontune.reproduction.tracking.SolutionTracker`:
   64 Sobol candidates + the previous solution, with its own generator) instead of the policies'
   512-candidate, 10-start search.

Hyperparameters: the kernel kind, lengthscales and variance selected for each function by the
papers' protocol (:mod:`visiontune.reproduction.kernel_selection`, package data ``bench_kernels.json``),
held fixed during a run (as the authors did: no refitting during a run).

The run's generator is ``numpy.random.default_rng([seed, crc32(function)])``: every rule sees the
same initial design for a given (function, seed) (common random numbers).

:func:`run_sweep` skips runs already in the :class:`~visiontune.validation.results_store.ResultsStore` and
commits each run as it finishes; locally with joblib (loky processes), or on a
``dask.distributed`` scheduler when ``scheduler`` is given (:mod:`visiontune.validation.parallel_runs`,
the clinical validation's executor). Progress and ETA go to stderr. SIGTERM and SIGHUP stop a sweep
like Ctrl-C does (:func:`~visiontune.validation.parallel_runs.signals_stop_the_sweep`): the local
worker processes are terminated with it instead of finishing their current run as orphans.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import Data, Problem
from visiontune.reproduction.acquisition.solution import solution
from visiontune.reproduction.benchmark_experiments import SCENARIOS, Experiment, missing_rules
from visiontune.reproduction.benchmark_functions import get_function
from visiontune.reproduction.gp import PreferenceGP, ProbitGP
from visiontune.reproduction.gp import kernels as K
from visiontune.reproduction.kernel_selection import load_choices
from visiontune.reproduction.tracking import SolutionTracker
from visiontune.validation.parallel_runs import SweepStopped, SweepSummary, check_jobs, execute_runs
from visiontune.validation.results_store import ResultsStore, RunKey, RunRecord

__all__ = [
    "REFERENCE_CONTEXT",
    "SUPPORTED_SCENARIOS",
    "RunSpec",
    "SweepStopped",
    "SweepSummary",
    "benchmark_kernel",
    "check_jobs",
    "execute_runs",
    "plan",
    "run_one",
    "run_sweep",
    "sample_ranking",
]

#: Scenarios the sweep can run: every scenario of the policy registry.
SUPPORTED_SCENARIOS = SCENARIOS
#: Reference context of the contextual benchmarks (docs/design.md, authors' toolbox: ``s0 = 0.5``).
REFERENCE_CONTEXT = 0.5


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
    """GP kernel of a run on ``function`` on ``[0, 1]^d``: the stored kernel-selection choice
    (kind, lengthscales, variance; :func:`visiontune.reproduction.kernel_selection.load_choices`);
    contextual: ``s s' k(x, x')`` (Fauvel & Chalk (contextual BO) §4)."""

    choices = load_choices()
    if function.name not in choices:
        raise ConfigurationError(
            f"{function.name}: no stored kernel choice; run `python -m visiontune.reproduction.kernel_selection`"
        )
    choice = choices[function.name]
    if contextual:
        base = type(choice.kernel())
        return K.contextual_benchmark_kernel(base, choice.lengthscales, choice.variance, function.dimension)
    return choice.kernel()


def sample_ranking(latent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``m`` options, best first, drawn from the Thurstone case V model (module docstring).

    ``latent (m,)``: ``g`` at the options. ``u = latent + ε``, ``ε ~ N(0, ½ I)``; returns ``argsort(-u)``.
    Each pair is ordered with probability ``Φ(g_i - g_j)`` (Fauvel & Chalk (binary/preferential BO), Eq. 5), since
    ``ε_i - ε_j ~ N(0, 1)``.
    """
    latent = np.asarray(latent, dtype=float).reshape(-1)
    if latent.size < 2 or not np.all(np.isfinite(latent)):
        raise InvalidInputError(f"latent: expected at least 2 finite values, got {latent}")
    u = latent + rng.normal(0.0, np.sqrt(0.5), latent.size)
    return np.argsort(-u, kind="stable")


def _run_rng(spec: RunSpec) -> np.random.Generator:
    return np.random.default_rng([int(spec.seed), zlib.crc32(spec.function.encode())])


def _tracker_rng(spec: RunSpec) -> np.random.Generator:
    """The solution tracker's own generator: the run's decisions do not depend on its draws."""
    return np.random.default_rng([int(spec.seed), zlib.crc32(spec.function.encode()), 1])


#: How :func:`run_one` searches the reported solution: ``"tracked"`` (warm-started, the default) or
#: ``"full"`` (:func:`visiontune.reproduction.acquisition.solution.solution`, 512 candidates and 10 starts each time).
SOLUTION_SEARCHES = ("tracked", "full")


def run_one(spec: RunSpec, *, solution_search: str = "tracked") -> RunRecord:
    """Run one (rule, function, seed) and return its record (see the module docstring).

    ``solution_search``: one of :data:`SOLUTION_SEARCHES` (``"full"`` is kept for the speed benchmark).

    ``scores[t]`` = ``g(x̂_t)`` after ``t + 1`` answers, ``(iterations,)``.
    """

    if spec.scenario not in SUPPORTED_SCENARIOS:
        raise ConfigurationError(f"scenario {spec.scenario!r}: not yet available in the sweep")
    if spec.seed < 0:
        raise InvalidInputError(f"seed: expected an integer >= 0, got {spec.seed}")
    if solution_search not in SOLUTION_SEARCHES:
        raise InvalidInputError(f"solution_search: expected one of {SOLUTION_SEARCHES}, got {solution_search!r}")
    start = time.perf_counter()
    function = get_function(spec.function)
    contextual = spec.scenario.startswith("contextual")
    preferential = spec.scenario.endswith("preferential")
    batch = spec.scenario == "batch-preferential"
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
    tracker = SolutionTracker(problem, _tracker_rng(spec))
    if solution_search == "full":
        full_rng = _tracker_rng(spec)

        def tracker(m):
            return solution(m, problem, full_rng)

    Model = PreferenceGP if preferential else ProbitGP
    X = np.zeros((0, (problem.c + d) * (2 if preferential else 1)))
    y = np.zeros(0)
    model = Model(kernel, X, y)
    scores = np.empty(spec.iterations)
    for t in range(spec.iterations):
        query = policy(model, problem, Data(X, y), rng)
        # batch: a ranking of the m options, read as its m(m-1)/2 duels (Fauvel & Chalk (binary/preferential BO), §4.3)
        if batch:
            options = np.asarray(query.batch)
            order = sample_ranking(g(options), rng)
            rows, answers = PreferenceGP.from_ranking(options[order])
        else:
            latent = g(query.x)[0]
            row = problem.model_input(query.x, query.s)
            # preferential: the duel [(s, x), (s, x2)]; P(first wins) = Φ(s (g(x) - g(x2))) (Fauvel & Chalk
            # (binary/preferential BO), Eq. 5; Fauvel & Chalk (contextual BO), Eq. 11)
            if preferential:
                latent -= g(query.x2)[0]
                row = np.concatenate([row, problem.model_input(query.x2, query.s)])
            if contextual:
                latent *= float(query.s[0])
            rows, answers = row[None, :], np.array([float(rng.random() < norm.cdf(latent))])
        X = np.vstack([X, rows])
        y = np.append(y, answers)
        model = Model(kernel, X, y, warm_start=model.warm_start_state if model.n else None)
        scores[t] = g(tracker(model))[0]
    return RunRecord(spec.key, scores, spec.iterations, time.perf_counter() - start)


# ------------------------------------------------------------------------------ sweeps


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
    check_jobs(jobs)
    return execute_runs(
        plan(experiment),
        store.finished_keys(experiment.name),
        run_one,
        store.add,
        jobs=jobs,
        scheduler=scheduler,
        progress=progress,
        stream=stream,
        connect_timeout=connect_timeout,
    )
