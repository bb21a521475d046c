"""Session protocols: TOML files saying how a refraction session runs.

A protocol fixes the policy (e.g. ``"ucb-ald"``, seed 002 §3.3), the lens search space and
the letter-size context space (002 §5: ``[-4, 4]²`` D and ``[-1, 2]`` logMAR), the letter set
and number of alternatives (chance ``γ = 1/n``, 002 Eq. S34), the initial random trials (002
§4: 5), the stopping rule, the GP model (kernel ``θ s s' + k_SE(x, x')``, 002 Eq. 15, with
hyperparameters given or fitted on simulated answers as in 002 §5.2) and the seed.

Every key is validated; an unknown key is an error. Each error is one
:class:`~visiontune.errors.ProtocolError` naming the file, the dotted key, what was expected
and what was found, e.g. ``protocols/x.toml: stopping.max_trials: expected an integer >= 1,
found "ten"``.

Shipped protocols are looked up in ``visiontune/data/protocols/`` (installed package data)
and then in the ``protocols/`` folder of a source checkout (next to ``visiontune/``).
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from visiontune.errors import ProtocolError

#: Policy names a protocol may ask for: the contextual policies of seed 002 (§3.3-3.4), in
#: lower case; the acquisition registry spells them "UCB-ALD", "TS-ALD"... (match case-blind).
KNOWN_POLICIES: frozenset[str] = frozenset(
    {
        "ucb-ald", "ts-ald", "ucb-random-context", "ts-random-context", "bald", "random-contextual",
        "cbkg", "kss-ald", "muc-ald",
    }
)  # fmt: skip
#: Kernel names (002 Eq. 15, the power-vector variant of DESIGN.md, the benchmark s s' k(x, x')).
KNOWN_KERNELS: frozenset[str] = frozenset({"refraction-se", "refraction-power-vector-se", "contextual-product-se"})
#: Letter sets and their sizes, named as in ``visiontune/data/stimuli/<name>.json``.
LETTER_SETS: MappingProxyType = MappingProxyType({"letters26": 26, "sloan": 10, "tumbling_e": 4, "landolt_c": 8})
FIT_METHODS: frozenset[str] = frozenset({"simulation"})
SLOPE_PRIORS: frozenset[str] = frozenset({"fixed", "uniform", "lognormal"})

#: Physical limits of the spaces: trial lenses and chart sizes outside are typos.
SPHERE_LIMITS_D = (-30.0, 30.0)
CYLINDER_LIMITS_D = (-10.0, 10.0)
LOGMAR_LIMITS = (-1.0, 2.5)


@dataclass(frozen=True)
class SearchSpace:
    """Lens box: sphere and cylinder ranges in diopters; ``axis_deg`` fixed, or None (free)."""

    sphere_d: tuple[float, float]
    cylinder_d: tuple[float, float]
    axis_deg: float | None = None


@dataclass(frozen=True)
class Precision:
    """Stop when the ``level`` credible interval of the best sphere and cylinder is narrower
    than ``sphere_d`` / ``cylinder_d`` diopters."""

    sphere_d: float
    cylinder_d: float
    level: float = 0.95


@dataclass(frozen=True)
class Stopping:
    """Stop at ``max_trials``, or earlier once ``precision`` is met after ``min_trials``."""

    max_trials: int
    min_trials: int = 0
    precision: Precision | None = None


@dataclass(frozen=True)
class ModelSpec:
    """GP model: kernel name and either fixed ``hyperparameters`` or ``fit = "simulation"``
    (maximum likelihood on simulated answers, 002 §5.2)."""

    kernel: str
    hyperparameters: MappingProxyType | None = None
    fit: str | None = None


@dataclass(frozen=True)
class SlopePrior:
    """Prior on the psychometric slope ``a`` (logMAR⁻¹, 002 Eq. S34): ``fixed`` value,
    ``uniform`` on ``range``, or ``lognormal`` with ``median`` and ``sigma`` (of log a)."""

    distribution: str
    value: float | None = None
    range: tuple[float, float] | None = None
    median: float | None = None
    sigma: float | None = None


@dataclass(frozen=True)
class Protocol:
    """A validated protocol. ``source`` names where it came from; ``source_text`` is the TOML
    text itself (what the trial log snapshots)."""

    name: str
    description: str
    policy: str
    seed: int
    initial_random_trials: int
    search_space: SearchSpace
    logmar_range: tuple[float, float]
    letter_set: str
    n_alternatives: int
    stopping: Stopping
    model: ModelSpec
    slope_prior: SlopePrior | None
    source: str
    source_text: str = field(repr=False)

    @property
    def chance(self) -> float:
        """Guess rate ``γ = 1 / n_alternatives`` (002 Eq. S34)."""
        return 1.0 / self.n_alternatives


# --- the validating reader ------------------------------------------------------------------


def _describe(value: Any) -> str:
    """A TOML-like rendering of what was found."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return f"{type(value).__name__} {value}"


_MISSING = object()


class _Reader:
    """Reads one TOML document, raising ProtocolError('<source>: <key>: expected ..., found ...')."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, expected: str, found: Any = _MISSING) -> ProtocolError:
        shown = "nothing (the key is missing)" if found is _MISSING else _describe(found)
        return ProtocolError(f"{self.source}: {key}: expected {expected}, found {shown}")

    def table(self, data: dict, prefix: str, required: set[str], optional: set[str]) -> dict:
        for key in data:
            if key not in required | optional:
                allowed = ", ".join(sorted(required | optional))
                raise ProtocolError(f"{self.source}: {prefix}{key}: unknown key (allowed here: {allowed})")
        for key in sorted(required):
            if key not in data:
                raise ProtocolError(f"{self.source}: {prefix}{key}: missing required key")
        return data

    def sub_table(self, data: dict, key: str, prefix: str = "") -> dict:
        value = data[key]
        if not isinstance(value, dict):
            raise self.fail(prefix + key, "a table", value)
        return value

    def string(self, value: Any, key: str, choices=None) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "a non-empty string", value)
        if choices is not None and value not in choices:
            raise self.fail(key, "one of " + ", ".join(json.dumps(c) for c in sorted(choices)), value)
        return value

    def integer(self, value: Any, key: str, lo: int, hi: int | None = None) -> int:
        expected = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, expected, value)
        if value < lo or (hi is not None and value > hi):
            raise self.fail(key, expected, value)
        return value

    def number(self, value: Any, key: str, lo: float, hi: float, *, open_lo=False, open_hi=False) -> float:
        lb, rb = "(" if open_lo else "[", ")" if open_hi else "]"
        expected = f"a number in {lb}{lo:g}, {hi:g}{rb}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, expected, value)
        if value < lo or value > hi or (open_lo and value == lo) or (open_hi and value == hi):
            raise self.fail(key, expected, value)
        return float(value)

    def interval(self, value: Any, key: str, limits: tuple[float, float], unit: str) -> tuple[float, float]:
        lo_lim, hi_lim = limits
        expected = f"[lo, hi] {unit} with {lo_lim:g} <= lo < hi <= {hi_lim:g}"
        if (
            not isinstance(value, list)
            or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in value)
        ):
            raise self.fail(key, expected, value)
        lo, hi = float(value[0]), float(value[1])
        if not lo < hi:
            raise self.fail(key, expected + " (the interval is inverted or empty)", value)
        if lo < lo_lim or hi > hi_lim:
            raise self.fail(key, expected + " (outside the physical range)", value)
        return lo, hi


def parse_protocol(text: str, source: str = "<protocol>") -> Protocol:
    """Parse and validate protocol TOML ``text``; ``source`` names it in error messages."""
    r = _Reader(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolError(f"{source}: invalid TOML ({exc})") from None
    top_required = {
        "name", "description", "policy", "seed", "initial_random_trials",
        "search_space", "context_space", "letters", "stopping", "model",
    }  # fmt: skip
    r.table(doc, "", top_required, {"psychometric"})
    name = r.string(doc["name"], "name")
    description = r.string(doc["description"], "description")
    policy = r.string(doc["policy"], "policy", KNOWN_POLICIES)
    seed = r.integer(doc["seed"], "seed", 0, 2**63 - 1)
    initial = r.integer(doc["initial_random_trials"], "initial_random_trials", 0)

    space = r.table(r.sub_table(doc, "search_space"), "search_space.", {"sphere_d", "cylinder_d"}, {"axis_deg"})
    sphere = r.interval(space["sphere_d"], "search_space.sphere_d", SPHERE_LIMITS_D, "D")
    cylinder = r.interval(space["cylinder_d"], "search_space.cylinder_d", CYLINDER_LIMITS_D, "D")
    axis = None
    if "axis_deg" in space:
        axis = r.number(space["axis_deg"], "search_space.axis_deg", 0.0, 180.0, open_hi=True)

    context = r.table(r.sub_table(doc, "context_space"), "context_space.", {"logmar"}, set())
    logmar = r.interval(context["logmar"], "context_space.logmar", LOGMAR_LIMITS, "logMAR")

    letters = r.table(r.sub_table(doc, "letters"), "letters.", {"set", "n_alternatives"}, set())
    letter_set = r.string(letters["set"], "letters.set", LETTER_SETS.keys())
    n_alt = r.integer(letters["n_alternatives"], "letters.n_alternatives", 2, LETTER_SETS[letter_set])

    stop = r.table(r.sub_table(doc, "stopping"), "stopping.", {"max_trials"}, {"min_trials", "precision"})
    max_trials = r.integer(stop["max_trials"], "stopping.max_trials", 1)
    min_trials = r.integer(stop.get("min_trials", 0), "stopping.min_trials", 0, max_trials)
    if initial > max_trials:
        raise r.fail("initial_random_trials", f"an integer in [0, {max_trials}] (stopping.max_trials)", initial)
    precision = None
    if "precision" in stop:
        prec = r.table(r.sub_table(stop, "precision", "stopping."), "stopping.precision.",
                       {"sphere_d", "cylinder_d"}, {"level"})  # fmt: skip
        precision = Precision(
            sphere_d=r.number(prec["sphere_d"], "stopping.precision.sphere_d", 0.0, 10.0, open_lo=True),
            cylinder_d=r.number(prec["cylinder_d"], "stopping.precision.cylinder_d", 0.0, 10.0, open_lo=True),
            level=r.number(prec.get("level", 0.95), "stopping.precision.level", 0.0, 1.0, open_lo=True, open_hi=True),
        )

    model = r.table(r.sub_table(doc, "model"), "model.", {"kernel"}, {"hyperparameters", "fit"})
    kernel = r.string(model["kernel"], "model.kernel", KNOWN_KERNELS)
    if ("hyperparameters" in model) == ("fit" in model):
        which = "both" if "fit" in model else "neither"
        raise ProtocolError(
            f"{source}: model: expected exactly one of model.hyperparameters (a table) or "
            f'model.fit = "simulation", found {which}'
        )
    hyper, fit = None, None
    if "fit" in model:
        fit = r.string(model["fit"], "model.fit", FIT_METHODS)
    else:
        hyper = MappingProxyType(_hyperparameters(r, r.sub_table(model, "hyperparameters", "model.")))

    slope_prior = None
    if "psychometric" in doc:
        psy = r.table(r.sub_table(doc, "psychometric"), "psychometric.", {"slope_prior"}, set())
        slope_prior = _slope_prior(r, r.sub_table(psy, "slope_prior", "psychometric."))

    return Protocol(
        name=name, description=description, policy=policy, seed=seed, initial_random_trials=initial,
        search_space=SearchSpace(sphere, cylinder, axis), logmar_range=logmar, letter_set=letter_set,
        n_alternatives=n_alt, stopping=Stopping(max_trials, min_trials, precision),
        model=ModelSpec(kernel, hyper, fit), slope_prior=slope_prior, source=source, source_text=text,
    )  # fmt: skip


def _hyperparameters(r: _Reader, table: dict) -> dict[str, float | tuple[float, ...]]:
    """Positive finite numbers, or non-empty lists of them (ARD lengthscales)."""
    if not table:
        raise r.fail("model.hyperparameters", "at least one name = positive number", table)
    out: dict[str, float | tuple[float, ...]] = {}
    for name, value in table.items():
        key = f"model.hyperparameters.{name}"
        if isinstance(value, list) and value:
            out[name] = tuple(r.number(v, f"{key}[{i}]", 0.0, math.inf, open_lo=True) for i, v in enumerate(value))
        elif isinstance(value, list):
            raise r.fail(key, "a positive number or a non-empty list of them", value)
        else:
            out[name] = r.number(value, key, 0.0, math.inf, open_lo=True)
    return out


def _slope_prior(r: _Reader, table: dict) -> SlopePrior:
    p = "psychometric.slope_prior."
    if "distribution" not in table:
        raise ProtocolError(f"{r.source}: {p}distribution: missing required key")
    dist = r.string(table["distribution"], p + "distribution", SLOPE_PRIORS)
    if dist == "fixed":
        r.table(table, p, {"distribution", "value"}, set())
        return SlopePrior(dist, value=r.number(table["value"], p + "value", 0.0, 100.0, open_lo=True))
    if dist == "uniform":
        r.table(table, p, {"distribution", "range"}, set())
        return SlopePrior(dist, range=r.interval(table["range"], p + "range", (0.0, 100.0), "logMAR⁻¹"))
    r.table(table, p, {"distribution", "median", "sigma"}, set())
    return SlopePrior(
        dist,
        median=r.number(table["median"], p + "median", 0.0, 100.0, open_lo=True),
        sigma=r.number(table["sigma"], p + "sigma", 0.0, 10.0, open_lo=True),
    )


# --- files and shipped protocols ------------------------------------------------------------


def protocol_dirs() -> list[Path]:
    """Folders searched for shipped protocols, first match wins: the installed package data
    ``visiontune/data/protocols`` then a checkout's top-level ``protocols/``."""
    package = Path(__file__).resolve().parent.parent
    candidates = [package / "data" / "protocols", package.parent / "protocols"]
    return [d for d in candidates if d.is_dir()]


def list_protocols() -> list[str]:
    """Names (file stems) of the shipped protocols, sorted."""
    names = {p.stem for d in protocol_dirs() for p in d.glob("*.toml")}
    return sorted(names)


def load_protocol(path_or_name: str | os.PathLike) -> Protocol:
    """Load a protocol from a ``.toml`` path, or a shipped one by name (``"paper-ucb-ald"``)."""
    text_arg = os.fspath(path_or_name)
    looks_like_path = isinstance(path_or_name, os.PathLike) or text_arg.endswith(".toml") or os.sep in text_arg
    if looks_like_path:
        path = Path(text_arg)
        if not path.is_file():
            raise ProtocolError(f"{text_arg}: no such protocol file")
    else:
        found = [d / f"{text_arg}.toml" for d in protocol_dirs() if (d / f"{text_arg}.toml").is_file()]
        if not found:
            raise ProtocolError(
                f"{text_arg}: no shipped protocol of that name (available: {', '.join(list_protocols()) or 'none'})"
            )
        path = found[0]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{path}: cannot read the protocol file ({exc})") from None
    return parse_protocol(text, source=str(path) if looks_like_path else f"protocols/{path.name}")
