"""The benchmark test functions of Fauvel & Chalk (contextual BO), table S1, as records, and their registry.

A :class:`TestFunction` couples one objective of :mod:`visiontune.reproduction.definitions`
(minimisation form, Surjanovic & Bingham) with the metadata of that paper, supplementary
table S1 (dimension, domain, the GP kernel the authors used) and with the scaling that
turns it into the paper's maximisation target (docs/design.md, "Benchmark scaling")::

    y(x) = -(g(x) - mean) / sd,   g = log f  for the functions docs/design.md lists, else g = f,

``mean`` and ``sd`` estimated once over the domain by :mod:`visiontune.reproduction.scaling` and
stored in ``visiontune/data/bench_scaling.json``.

Usage::

    from visiontune.reproduction.benchmark_functions import get_function
    ackley = get_function("ackley")
    y = ackley.scaled(X)          # X: (n, 2) points inside ackley.bounds

References: Fauvel & Chalk, *Contextual Bayesian optimization with binary outputs*,
supplementary section H, table S1; Surjanovic & Bingham, *Virtual Library of
Simulation Experiments* (www.sfu.ca/~ssurjano).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np

from visiontune import _validate
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction import definitions as defs

KERNELS = ("se", "matern32", "matern52")
SCALING_RESOURCE = ("visiontune", "data/bench_scaling.json")


@dataclass(frozen=True)
class Scaling:
    """Affine (optionally log) normalisation of one function (docs/design.md, "Benchmark scaling").

    ``mean``, ``sd``: moments of ``g`` over the uniform distribution on the domain, where
    ``g = log f`` if ``log`` else ``g = f``.
    """

    mean: float
    sd: float
    log: bool


@dataclass(frozen=True)
class TestFunction:
    """One benchmark objective with the metadata of Fauvel & Chalk (contextual BO), table S1.

    ``name``: slug (``"ackley"``); ``title``: the name printed in table S1;
    ``toolbox_name``: the authors' MATLAB name (``"boha1"``), for cross-reference;
    ``dimension``: d; ``bounds``: d pairs ``(low, high)``, i.e. shape ``(d, 2)``;
    ``kernel``: the GP kernel of table S1, one of ``"se"`` (SE-ARD), ``"matern32"``, ``"matern52"``;
    ``minimum``: global minimum value of ``f`` on the domain, ``None`` if unknown;
    ``minimizers``: the global minimisers (each a d-tuple), ``()`` if unknown;
    ``minimum_source``: where the value comes from (S&B, the literature, or a numerical
    multistart L-BFGS-B search made for this project);
    ``log_scaled``: whether the scaled target uses ``log f`` (the list in docs/design.md);
    ``scaling``: the stored moments, ``None`` only while the scaling file is being generated.
    """

    __test__ = False  # not a pytest test class, despite its name

    name: str
    title: str
    toolbox_name: str
    dimension: int
    bounds: tuple[tuple[float, float], ...]
    kernel: str
    objective: Callable[[np.ndarray], np.ndarray]
    minimum: float | None
    minimizers: tuple[tuple[float, ...], ...]
    minimum_source: str
    log_scaled: bool
    scaling: Scaling | None = None

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise ConfigurationError(f"kernel: expected one of {KERNELS}, got {self.kernel!r}")
        if len(self.bounds) != self.dimension or any(lo >= hi for lo, hi in self.bounds):
            raise ConfigurationError(f"bounds of {self.name}: expected {self.dimension} pairs low < high")

    @property
    def lower(self) -> np.ndarray:
        """``(d,)`` lower corner of the domain."""
        return np.array([lo for lo, _ in self.bounds])

    @property
    def upper(self) -> np.ndarray:
        """``(d,)`` upper corner of the domain."""
        return np.array([hi for _, hi in self.bounds])

    def __call__(self, X) -> np.ndarray:
        """Raw objective ``f(X)`` (minimisation form). ``X: (n, d)`` (a ``(d,)`` point is one row) -> ``(n,)``.

        Points outside ``bounds`` are evaluated, not rejected (the formulas are defined everywhere).
        """
        return self.objective(_validate.points("X", X, dim=self.dimension))

    def scaled(self, X) -> np.ndarray:
        """The paper's maximisation target ``y = -(g(X) - mean)/sd`` (docs/design.md; Fauvel & Chalk (contextual BO)
        §4), ``(n,)``.

        ``g = log f`` when ``log_scaled``; at an exact zero of ``f`` (e.g. the sphere's origin)
        ``log f = -inf`` and ``y = +inf``, the limit of the formula.
        """
        scaling = self.scaling
        if scaling is None:
            raise ConfigurationError(
                f"{self.name}: no scaling stored; run `python -m visiontune.reproduction.scaling` to generate it"
            )
        g = self(X)
        if scaling.log:
            with np.errstate(divide="ignore"):
                g = np.log(np.maximum(g, 0.0))
        return -(g - scaling.mean) / scaling.sd


S_AND_B = "Surjanovic & Bingham"
NUMERICAL = "numerical: multistart L-BFGS-B from the 40 best of 2^14 Sobol points (this project)"
_LOG_SET = frozenset(
    {
        "beale",
        "bohachevsky",
        "three_hump_camel",
        "colville",
        "dixon_price",
        "goldstein_price",
        "griewank",
        "levy",
        "levy13",
        "perm0db",
        "permdb",
        "powell",
        "rosenbrock",
        "rotated_hyper_ellipsoid",
        "schwefel",
        "sphere",
        "sum_squares",
    }
)


def _sym(*coordinates: float) -> tuple[tuple[float, ...], ...]:
    """All sign combinations of ``coordinates`` (for the symmetric minimisers)."""
    out = [()]
    for c in coordinates:
        out = [p + (s * c,) for p in out for s in (1.0, -1.0)]
    return tuple(out)


# (slug, table S1 title, toolbox name, objective, bounds, kernel, minimum, minimisers, source)
_TABLE_S1 = (
    ("ackley", "Ackley", "ackley", defs.ackley, ((-32.768, 32.768),) * 2, "matern32", 0.0, ((0.0, 0.0),), S_AND_B),
    ("beale", "Beale", "beale", defs.beale, ((-4.5, 4.5),) * 2, "se", 0.0, ((3.0, 0.5),), S_AND_B),
    (
        "bohachevsky",
        "Bohachevsky",
        "boha1",
        defs.bohachevsky,
        ((-100.0, 100.0),) * 2,
        "se",
        0.0,
        ((0.0, 0.0),),
        S_AND_B,
    ),
    (
        "three_hump_camel",
        "Three-Hump Camel",
        "camel3",
        defs.three_hump_camel,
        ((-5.0, 5.0),) * 2,
        "matern52",
        0.0,
        ((0.0, 0.0),),
        S_AND_B,
    ),
    (
        "six_hump_camel",
        "Six-Hump Camel",
        "camel6",
        defs.six_hump_camel,
        ((-3.0, 3.0), (-2.0, 2.0)),
        "se",
        -1.031628453489877,
        ((0.0898420131, -0.7126564033), (-0.0898420131, 0.7126564033)),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "colville",
        "Colville",
        "colville",
        defs.colville,
        ((-10.0, 10.0),) * 4,
        "matern52",
        0.0,
        ((1.0, 1.0, 1.0, 1.0),),
        S_AND_B,
    ),
    (
        "cross_in_tray",
        "Cross-in-Tray",
        "crossit",
        defs.cross_in_tray,
        ((-10.0, 10.0),) * 2,
        "matern52",
        -2.062611870822739,
        _sym(1.3494066142, 1.3494066142),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "dixon_price",
        "Dixon-Price",
        "dixonpr",
        defs.dixon_price,
        ((-5.0, 5.0),) * 2,
        "matern52",
        0.0,
        ((1.0, 2.0**-0.5), (1.0, -(2.0**-0.5))),
        S_AND_B + ": x_i = 2^-((2^i - 2)/2^i), x2 up to sign",
    ),
    ("drop_wave", "Drop-Wave", "drop", defs.drop_wave, ((-5.12, 5.12),) * 2, "matern32", -1.0, ((0.0, 0.0),), S_AND_B),
    (
        "eggholder",
        "Eggholder",
        "egg",
        defs.eggholder,
        ((-512.0, 512.0),) * 2,
        "se",
        -959.6406627208503,
        ((512.0, 404.2318044697),),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "forrester",
        "Forrester et al (2008)",
        "forretal08",
        defs.forrester,
        ((0.0, 1.0),),
        "se",
        -6.020740055767083,
        ((0.7572487584,),),
        "Forrester et al. 2008 (digits: numerical)",
    ),
    (
        "goldstein_price",
        "Goldstein-Price",
        "goldpr",
        defs.goldstein_price,
        ((-2.0, 2.0),) * 2,
        "se",
        3.0,
        ((0.0, -1.0),),
        S_AND_B,
    ),
    ("griewank", "Griewank", "griewank", defs.griewank, ((-600.0, 600.0),) * 2, "se", 0.0, ((0.0, 0.0),), S_AND_B),
    (
        "gramacy_lee",
        "Gramacy and Lee (2012)",
        "grlee12",
        defs.gramacy_lee,
        ((0.5, 2.5),),
        "se",
        -0.8690111349894997,
        ((0.548563444,),),
        "Gramacy & Lee 2012 (digits: numerical)",
    ),
    (
        "hartmann3",
        "Hartmann 3-D",
        "hart3",
        defs.hartmann3,
        ((0.0, 1.0),) * 3,
        "se",
        -3.862779787332661,
        ((0.1145888803, 0.5556488934, 0.8525469808),),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "hartmann4",
        "Hartmann 4D",
        "hart4",
        defs.hartmann4,
        ((0.0, 1.0),) * 4,
        "se",
        -3.1344941412223983,
        ((0.1873952684, 0.1941515263, 0.5579177744, 0.26477962),),
        NUMERICAL,
    ),
    (
        "hartmann6",
        "Hartmann 6D",
        "hart6",
        defs.hartmann6,
        ((0.0, 1.0),) * 6,
        "se",
        -3.3223680114155125,
        ((0.201689508, 0.1500106879, 0.476873973, 0.2753324263, 0.3116516121, 0.6573005308),),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "holder_table",
        "Holder",
        "holder",
        defs.holder_table,
        ((-10.0, 10.0),) * 2,
        "se",
        -19.208502567886747,
        _sym(8.0550234784, 9.6645900290),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "langermann",
        "Langer",
        "langer",
        defs.langermann,
        ((0.0, 10.0),) * 2,
        "matern32",
        -4.155809291847784,
        ((2.7934022047, 1.5972325011),),
        NUMERICAL,
    ),
    ("levy", "Levy", "levy", defs.levy, ((-10.0, 10.0),) * 2, "se", 0.0, ((1.0, 1.0),), S_AND_B),
    ("levy13", "Levy N.13", "levy13", defs.levy13, ((-10.0, 10.0),) * 2, "matern52", 0.0, ((1.0, 1.0),), S_AND_B),
    ("perm0db", "Perm 0,d,β", "perm0db", defs.perm0db, ((-2.0, 2.0),) * 2, "se", 0.0, ((1.0, 0.5),), S_AND_B),
    ("permdb", "Perm d,β", "permdb", defs.permdb, ((-2.0, 2.0),) * 2, "se", 0.0, ((1.0, 2.0),), S_AND_B),
    ("powell", "Powell", "powell", defs.powell, ((-4.0, 5.0),) * 4, "se", 0.0, ((0.0, 0.0, 0.0, 0.0),), S_AND_B),
    ("rosenbrock", "Rosenbrock", "rosen", defs.rosenbrock, ((-2.048, 2.048),) * 2, "se", 0.0, ((1.0, 1.0),), S_AND_B),
    (
        "rotated_hyper_ellipsoid",
        "Rotated Hyper-Ellipsoid",
        "rothyp",
        defs.rotated_hyper_ellipsoid,
        ((-65.536, 65.536),) * 2,
        "matern32",
        0.0,
        ((0.0, 0.0),),
        S_AND_B,
    ),
    (
        "schaffer4",
        "Schaffer n4",
        "schaffer4",
        defs.schaffer4,
        ((-100.0, 100.0),) * 2,
        "matern32",
        0.2925786320359808,
        ((0.0, 1.2531318), (0.0, -1.2531318), (1.2531318, 0.0), (-1.2531318, 0.0)),
        "Jamil & Yang 2013, 0.292579 (digits: numerical)",
    ),
    (
        "schwefel",
        "Schwefel",
        "schwef",
        defs.schwefel,
        ((-500.0, 500.0),) * 2,
        "se",
        2.5455133254581597e-05,
        ((420.9687, 420.9687),),
        S_AND_B + ": 0 up to S&B's constant 418.9829 (value: numerical)",
    ),
    (
        "shekel",
        "Shekel",
        "shekel",
        defs.shekel,
        ((0.0, 10.0),) * 4,
        "se",
        -10.536443153483521,
        ((4.0007468637, 3.9995094756, 4.0007468637, 3.9995094756),),
        S_AND_B + " (digits: numerical)",
    ),
    (
        "shubert",
        "Schubert",
        "shubert",
        defs.shubert,
        ((0.0, 10.0),) * 2,
        "matern32",
        -186.73090883102384,
        ((4.8580568781, 5.4828642022), (5.4828642022, 4.8580568781)),
        S_AND_B + ": -186.7309; the 2 of its 18 minimisers inside [0, 10]² (digits: numerical)",
    ),
    ("sphere", "Sphere", "spheref", defs.sphere, ((-5.12, 5.12),) * 2, "se", 0.0, ((0.0, 0.0),), S_AND_B),
    ("sum_squares", "Sum Squares", "sumsqu", defs.sum_squares, ((-10.0, 10.0),) * 2, "se", 0.0, ((0.0, 0.0),), S_AND_B),
    ("trid", "Trid", "trid", defs.trid, ((-4.0, 4.0),) * 2, "se", -2.0, ((2.0, 2.0),), S_AND_B + ": -d(d+4)(d-1)/6"),
    (
        "ursem_waves",
        "Ursem Waves",
        "Ursem_waves",
        defs.ursem_waves,
        ((-0.9, 1.2), (-1.2, 1.2)),
        "se",
        -7.306998731324458,
        ((-0.6056894978, -1.17756194),),
        NUMERICAL + ", for the toolbox's definition",
    ),
)


def load_scaling_table() -> dict[str, Scaling]:
    """Read the stored scaling moments, ``{name: Scaling}``; ``{}`` if the file is absent.

    Raises :class:`ConfigurationError` if the file exists but is malformed.
    """
    package, relative = SCALING_RESOURCE
    path = resources.files(package).joinpath(relative)
    if not path.is_file():
        return {}
    try:
        table = json.loads(path.read_text(encoding="utf-8"))["functions"]
        return {
            name: Scaling(mean=float(entry["mean"]), sd=float(entry["sd"]), log=bool(entry["log"]))
            for name, entry in table.items()
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigurationError(f"{relative}: malformed benchmark scaling file ({exc})") from None


def _build_registry() -> dict[str, TestFunction]:
    scalings = load_scaling_table()
    registry = {}
    for name, title, toolbox, objective, bounds, kernel, minimum, minimizers, source in _TABLE_S1:
        scaling = scalings.get(name)
        if scaling is not None and scaling.log != (name in _LOG_SET):
            raise ConfigurationError(
                f"bench_scaling.json: log flag of {name} disagrees with the list in docs/design.md"
            )
        registry[name] = TestFunction(
            name=name,
            title=title,
            toolbox_name=toolbox,
            dimension=len(bounds),
            bounds=bounds,
            kernel=kernel,
            objective=objective,
            minimum=minimum,
            minimizers=minimizers,
            minimum_source=source,
            log_scaled=name in _LOG_SET,
            scaling=scaling,
        )
    return registry


FUNCTIONS: dict[str, TestFunction] = _build_registry()
"""name -> :class:`TestFunction`, the 34 functions of Fauvel & Chalk (contextual BO), table S1, in table order."""


def get_function(name: str) -> TestFunction:
    """The registered test function called ``name`` (a slug of :data:`FUNCTIONS`).

    Raises :class:`InvalidInputError` naming the unknown function and listing the known ones.
    """
    try:
        return FUNCTIONS[name]
    except (KeyError, TypeError):
        raise InvalidInputError(
            f"name: unknown benchmark function {name!r}; known functions: {', '.join(FUNCTIONS)}"
        ) from None
