"""Policies: what to ask next, given a fitted model. Binary and contextual-binary rules.

A policy is called as ``policy(model, problem, data, rng) -> Query``. As in the papers it is
a composition (Fauvel & Chalk (contextual BO), §3.3): an *x-rule* picks the lens ``x`` at the reference context, then a
*context rule* picks the context ``s`` (the letter size) for that ``x``::

    UCB_ALD = Sequential(UCBPhi(beta=norm.ppf(0.95)), BALD())

x-rules: ``UCBPhi``, ``UCBf``, ``BinaryEI``, ``ThompsonX``, ``RandomX``; context rules: ``BALD``,
``RandomContext``, ``FixedContext``. ``JointBALD`` picks ``(s, x)`` together. The first ``n_initial`` queries of a run
are drawn uniformly at random (the initial design: 2 in Fauvel & Chalk (binary/preferential BO), 5 in
Fauvel & Chalk (contextual BO)).

The model is a fitted :class:`visiontune.reproduction.gp.ProbitGP` (any object with ``predict`` and
``predict_with_grad``) whose inputs are ``(s, x)``, context columns first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.stats import norm

from visiontune._validate import (
    binary_labels,
    check_int,
    check_rng,
    finite_array,
    points,
)
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition.optimize import as_box, grid_maximize_1d, maximize
from visiontune.reproduction.acquisition.sample_search import SampleSearch
from visiontune.reproduction.gp.sampling import sample_posterior_functions

__all__ = [
    "BALD",
    "BETA_UCB_PHI_CONTEXTUAL",
    "ContextRule",
    "Data",
    "FixedContext",
    "JointBALD",
    "OptimiserSettings",
    "Policy",
    "Problem",
    "Query",
    "RandomContext",
    "RandomX",
    "SCENARIOS",
    "Sequential",
    "UCBf",
    "UCBPhi",
    "BinaryEI",
    "ThompsonX",
    "XRule",
    "sample_optimiser",
]

#: The exploration constant of UCB_Phi in Fauvel & Chalk (contextual BO) (``Phi^-1(0.95)``); the binary/preferential
#: paper uses ``Phi^-1(0.99)``.
BETA_UCB_PHI_CONTEXTUAL = float(norm.ppf(0.95))

SCENARIOS = ("binary", "contextual-binary", "preferential", "contextual-preferential", "batch-preferential")


def _frozen_array(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Problem:
    """What is searched: ``box (d, 2)`` of ``x`` (e.g. sphere and cylinder, diopters), an optional
    ``context_box (c, 2)`` of ``s`` (e.g. letter size, logMAR) with the ``reference_context (c,)``
    at which the x-rule and the solution are evaluated, and the ``scenario`` (one of SCENARIOS;
    inferred from the context box when not given).
    """

    box: np.ndarray
    context_box: np.ndarray | None = None
    reference_context: np.ndarray | None = None
    scenario: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "box", _frozen_array(as_box("box", self.box)))
        if self.context_box is None:
            if self.reference_context is not None:
                raise ConfigurationError("reference_context: given without a context_box")
            scenario = self.scenario or "binary"
        else:
            cbox = as_box("context_box", self.context_box)
            if self.reference_context is None:
                raise ConfigurationError(
                    "reference_context: required when a context_box is given (Fauvel & Chalk (contextual BO), §3.3)"
                )
            s0 = finite_array("reference_context", self.reference_context).reshape(-1)
            if s0.shape[0] != cbox.shape[0] or np.any(s0 < cbox[:, 0]) or np.any(s0 > cbox[:, 1]):
                raise InvalidInputError(
                    f"reference_context: {s0.tolist()} is not a point of context_box {cbox.tolist()}"
                )
            object.__setattr__(self, "context_box", _frozen_array(cbox))
            object.__setattr__(self, "reference_context", _frozen_array(s0))
            scenario = self.scenario or "contextual-binary"
        if scenario not in SCENARIOS:
            raise ConfigurationError(f"scenario: expected one of {SCENARIOS}, got {scenario!r}")
        if (self.context_box is None) == scenario.startswith("contextual"):
            raise ConfigurationError(
                f"scenario: {scenario!r} does not match context_box={self.context_box is not None}"
            )
        object.__setattr__(self, "scenario", scenario)

    @property
    def d(self) -> int:
        """Number of search dimensions."""
        return self.box.shape[0]

    @property
    def c(self) -> int:
        """Number of context dimensions (0 without a context)."""
        return 0 if self.context_box is None else self.context_box.shape[0]

    @property
    def input_box(self) -> np.ndarray:
        """``(c + d, 2)`` box of the model inputs ``(s, x)``."""
        return self.box if self.context_box is None else np.vstack([self.context_box, self.box])

    def model_input(self, x, s=None) -> np.ndarray:
        """The model input row ``(s, x)`` as a ``(c + d,)`` array."""
        x = finite_array("x", x).reshape(-1)
        if self.c == 0:
            return x
        s = self.reference_context if s is None else finite_array("s", s).reshape(-1)
        return np.concatenate([s, x])


@dataclass(frozen=True, eq=False)
class Query:
    """The next question: lens ``x (d,)``, context ``s (c,)`` or None; ``x2 (d,)`` the second
    option of a duel; ``batch (k, d)`` the options of a batch ranking."""

    x: np.ndarray
    s: np.ndarray | None = None
    x2: np.ndarray | None = None
    batch: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "x", _frozen_array(finite_array("x", self.x).reshape(-1)))
        for name in ("s", "x2"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, _frozen_array(finite_array(name, v).reshape(-1)))
        if self.batch is not None:
            object.__setattr__(self, "batch", _frozen_array(points("batch", self.batch)))

    def __eq__(self, other):
        if not isinstance(other, Query):
            return NotImplemented

        def same(a, b):
            return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))

        return all(same(getattr(self, k), getattr(other, k)) for k in ("x", "s", "x2", "batch"))

    __hash__ = None


@dataclass(frozen=True, eq=False)
class Data:
    """Answers so far: model inputs ``X (n, c + d)`` and answers ``y (n,)`` in {0, 1}."""

    X: np.ndarray
    y: np.ndarray

    def __post_init__(self):
        X = finite_array("X", self.X)
        if X.ndim != 2:
            raise InvalidInputError(f"X: expected an (n, D) array of model inputs, got shape {X.shape}")
        y = binary_labels("y", self.y, n=X.shape[0]) if X.shape[0] else np.zeros(0)
        object.__setattr__(self, "X", _frozen_array(X))
        object.__setattr__(self, "y", _frozen_array(y))

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @classmethod
    def empty(cls, dim: int) -> Data:
        return cls(np.zeros((0, dim)), np.zeros(0))


@runtime_checkable
class Policy(Protocol):
    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query: ...


class XRule(Protocol):
    def choose_x(self, model, problem: Problem, rng: np.random.Generator) -> np.ndarray: ...


class ContextRule(Protocol):
    def choose_context(self, model, problem: Problem, x: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...


def uniform_in_box(box: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return box[:, 0] + rng.random(box.shape[0]) * (box[:, 1] - box[:, 0])


def check_n_initial(n_initial) -> None:
    check_int("n_initial", n_initial, lo=0, whole_float=True)


def n_answers(data) -> int:
    if data is None:
        return 0
    return int(data.n) if hasattr(data, "n") else len(data[0])


@dataclass(frozen=True)
class OptimiserSettings:
    """Settings of :func:`maximize` (authors' toolbox: ~500 candidates, 10 starts)."""

    n_candidates: int = 512
    n_starts: int = 10

    def run(self, fn, box, rng, values_only=None):
        return maximize(fn, box, rng, n_candidates=self.n_candidates, n_starts=self.n_starts, values_only=values_only)


def sample_optimiser() -> SampleSearch:
    """Search for the maximum of a Thompson sample (cheap, for a TS decision within 80 ms): 256 Sobol candidates,
    L-BFGS-B from the 4 best candidates at least 0.1 box widths apart
    (:class:`~visiontune.reproduction.acquisition.sample_search.SampleSearch`). A candidate costs one pass over
    every feature, so the toolbox's ~500 candidates and 10 random starts dominated TS time."""
    return SampleSearch(n_candidates=256, n_starts=4, separation=0.1)


def _at_reference(fn, problem: Problem):
    return fn if problem.c == 0 else F.at_context(fn, problem.reference_context)


# --------------------------------------------------------------------------- x-rules


@dataclass(frozen=True, kw_only=True)
class _AcquisitionX:
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def _acq(self, model, X, grad=True):  # pragma: no cover - abstract
        raise NotImplementedError

    def choose_x(self, model, problem: Problem, rng: np.random.Generator) -> np.ndarray:
        fn = _at_reference(lambda X: self._acq(model, X), problem)
        values = _at_reference(lambda X: self._acq(model, X, grad=False), problem)
        return self.optimiser.run(fn, problem.box, check_rng(rng), values_only=values)[0]


@dataclass(frozen=True, kw_only=True)
class UCBPhi(_AcquisitionX):
    """x = argmax UCB_Phi at the reference context (Fauvel & Chalk (binary/preferential BO), Eq. 3, 9; Fauvel & Chalk
    (contextual BO), §3.3 with ``beta = Phi^-1(0.95)``)."""

    beta: float = F.BETA_UCB_PHI
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def __post_init__(self):
        F._beta(self.beta)

    def _acq(self, model, X, grad=True):
        return F.ucb_phi(model, X, self.beta, grad=grad)


@dataclass(frozen=True, kw_only=True)
class UCBf(_AcquisitionX):
    """x = argmax ``mu_f + beta sigma_f`` (Tesch et al. 2013; Fauvel & Chalk (binary/preferential BO), table 1,
    ``beta = 1``)."""

    beta: float = 1.0
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def __post_init__(self):
        F._beta(self.beta)

    def _acq(self, model, X, grad=True):
        return F.ucb_f(model, X, self.beta, grad=grad)


@dataclass(frozen=True, kw_only=True)
class BinaryEI(_AcquisitionX):
    """x = argmax binary expected improvement (Tesch et al. 2013; Fauvel & Chalk (binary/preferential BO), table 1)."""

    def _acq(self, model, X, grad=True):
        return F.binary_ei(model, X, grad=grad)


@dataclass(frozen=True, kw_only=True)
class ThompsonX:
    """x = argmax of one approximate posterior sample path ``f~(s0, .)`` (Thompson sampling;
    Fauvel & Chalk (binary/preferential BO), supp. D, Fauvel & Chalk (contextual BO), supp. G Eq. S43; sample from
    :func:`visiontune.reproduction.gp.sampling.sample_posterior_functions` on the model's input box, ``n_basis``
    Hilbert-space features).

    The sample is maximised by :func:`sample_optimiser` (256 candidates, 4 separated starts):
    evaluating a 4096-feature sample dominates the cost;
    tests/reproduction/acquisition/test_thompson_speed.py checks the choice against a dense grid."""

    n_basis: int = 4096
    optimiser: OptimiserSettings | SampleSearch = field(default_factory=sample_optimiser)

    def choose_x(self, model, problem: Problem, rng: np.random.Generator) -> np.ndarray:
        rng = check_rng(rng)
        sample = sample_posterior_functions(model, problem.input_box, 1, rng, n_basis=self.n_basis)
        fn = _at_reference(lambda X: (sample(X), sample.grad(X)), problem)
        values = _at_reference(lambda X: sample(X), problem)
        return self.optimiser.run(fn, problem.box, rng, values_only=values)[0]


@dataclass(frozen=True)
class RandomX:
    """x uniform in the search box (control rule)."""

    def choose_x(self, model, problem: Problem, rng: np.random.Generator) -> np.ndarray:
        return uniform_in_box(problem.box, check_rng(rng))


# --------------------------------------------------------------------------- context rules


@dataclass(frozen=True, kw_only=True)
class BALD:
    """s = argmax_s I(c, f | s, x) for the chosen x (Houlsby 2011; Fauvel & Chalk (contextual BO), §3.3, active learning
    by disagreement).

    One context dimension (the letter size): a vectorised grid of ``grid_size`` sizes, a finer grid
    around the best and one parabolic step (:func:`~visiontune.reproduction.acquisition.optimize.grid_maximize_1d`,
    3 model calls, no random draws). ``grid_size = 0``, or more than one context dimension: Sobol
    candidates and multistart L-BFGS-B with ``optimiser``.
    """

    optimiser: OptimiserSettings = field(default_factory=lambda: OptimiserSettings(n_candidates=128, n_starts=4))
    grid_size: int = 65

    def __post_init__(self):
        g = check_int("grid_size", self.grid_size)
        if not (g == 0 or g >= 3):
            raise InvalidInputError(f"grid_size: expected 0 or an integer >= 3, got {self.grid_size!r}")

    def choose_context(self, model, problem: Problem, x, rng: np.random.Generator) -> np.ndarray:
        if problem.c == 0:
            raise ConfigurationError("BALD context rule: the problem has no context_box")
        rng = check_rng(rng)
        values = F.over_context(lambda Z: F.bald(model, Z, grad=False), x)
        if problem.c == 1 and self.grid_size:
            return grid_maximize_1d(values, problem.context_box, n_grid=int(self.grid_size))[0]
        fn = F.over_context(lambda Z: F.bald(model, Z), x)
        return self.optimiser.run(fn, problem.context_box, rng, values_only=values)[0]


@dataclass(frozen=True)
class RandomContext:
    """s uniform in the context box (control: "UCB (random context)", Fauvel & Chalk (contextual BO), table 1)."""

    def choose_context(self, model, problem: Problem, x, rng: np.random.Generator) -> np.ndarray:
        if problem.c == 0:
            raise ConfigurationError("RandomContext: the problem has no context_box")
        return uniform_in_box(problem.context_box, check_rng(rng))


@dataclass(frozen=True, eq=False)
class FixedContext:
    """s fixed: ``s`` if given, else the problem's reference context."""

    s: np.ndarray | None = None

    def choose_context(self, model, problem: Problem, x, rng: np.random.Generator) -> np.ndarray:
        if problem.c == 0:
            raise ConfigurationError("FixedContext: the problem has no context_box")
        if self.s is None:
            return problem.reference_context.copy()
        s = finite_array("s", self.s).reshape(-1)
        box = problem.context_box
        if s.shape[0] != problem.c or np.any(s < box[:, 0]) or np.any(s > box[:, 1]):
            raise InvalidInputError(f"s: {s.tolist()} is not a point of the context box {box.tolist()}")
        return s


# --------------------------------------------------------------------------- policies


def _random_query(problem: Problem, rng) -> Query:
    x = uniform_in_box(problem.box, rng)
    s = uniform_in_box(problem.context_box, rng) if problem.c else None
    return Query(x=x, s=s)


@dataclass(frozen=True)
class Sequential:
    """x from ``x_rule`` at the reference context, then s from ``context_rule`` (Fauvel & Chalk (contextual BO), §3.3).

    Without a context rule on a contextual problem, s is the reference context. The first
    ``n_initial`` queries (counted by ``data.n``) are uniform random (the initial design).
    """

    x_rule: XRule
    context_rule: ContextRule | None = None
    n_initial: int = 0

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        if problem.scenario not in ("binary", "contextual-binary"):
            raise ConfigurationError(f"Sequential: a binary policy cannot serve a {problem.scenario!r} problem")
        if n_answers(data) < self.n_initial:
            return _random_query(problem, rng)
        x = self.x_rule.choose_x(model, problem, rng)
        if problem.c == 0:
            return Query(x=x)
        rule = self.context_rule if self.context_rule is not None else FixedContext()
        return Query(x=x, s=rule.choose_context(model, problem, x, rng))


@dataclass(frozen=True, kw_only=True)
class JointBALD:
    """(s, x) = argmax I(c, f | s, x) jointly (Houlsby 2011; "BALD" control of Fauvel & Chalk (contextual
    BO), tables 1, 3)."""

    n_initial: int = 0
    optimiser: OptimiserSettings = field(default_factory=OptimiserSettings)

    def __post_init__(self):
        check_n_initial(self.n_initial)

    def __call__(self, model, problem: Problem, data: Data | None, rng: np.random.Generator) -> Query:
        rng = check_rng(rng)
        if n_answers(data) < self.n_initial:
            return _random_query(problem, rng)
        z = self.optimiser.run(
            lambda Z: F.bald(model, Z), problem.input_box, rng, values_only=lambda Z: F.bald(model, Z, grad=False)
        )[0]
        return Query(x=z[problem.c :], s=z[: problem.c] if problem.c else None)
