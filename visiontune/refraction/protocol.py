"""Session protocols: TOML files saying how a refraction session runs, validated once.

A protocol fixes the model and its policy (:mod:`visiontune.refraction.policies`: the optics
model with UCB-ALD, TS-ALD, BALD or EVR; or the GP model of Fauvel & Chalk (contextual BO) §5 with the registry's
contextual rules), the lens search, the trial lenses (quarter-diopter steps, axis steps, minus-
or plus-cylinder form), the letter-size range (Fauvel & Chalk (contextual BO), §5: ``[-1, 2]``
logMAR), the letter set and number of alternatives (chance ``γ = 1/n``, Fauvel & Chalk (contextual
BO), Eq. S34), the initial random trials (Fauvel & Chalk (contextual BO), §4: 5), the stopping rule
and the seed.

Every key is validated, and so is every combination: a protocol that parses runs (a policy
the model cannot run, a kernel the engine lacks, a hyperparameter it does not know are errors
here, before any session is written). An unknown key is an error. Each error is one
:class:`~visiontune.errors.ProtocolError` naming the file, the dotted key, what was expected
and what was found, e.g. ``protocols/x.toml: stopping.max_trials: expected an integer in
[1, 10000], found "ten"``.

**Optics model** (``[model] type = "optics"``): the search runs in power vectors around the
starting prescription (any axis); ``search_space.max_step_d`` bounds how far a proposed lens
may be from the current estimate (diopters, power-vector distance). Precision stop:
``stopping.precision.m_d`` and ``cylinder_vector_d``, the ``level`` posterior quantiles of
``|ΔM|`` and of ``|ΔJ|``, ``J = (J0, J45)``, and ``stopping.precision.over_minus_risk`` (optional,
in (0, 0.5); needs the over-minus guard below): in a session the guard covers, the stop also waits
until the lens to file is more minus than the correction by over 0.25 D with posterior probability
at most this; ``stopping.precision.filed_within_probability`` (optional, in [0.5, 0.999]; needs
``[comparisons]``): the stop reads the lens to file instead of the region's radii, stopping once its
posterior probability of lying within 0.25 D of the correction is at least this (the over-minus and
``κ`` waits unchanged; ``m_d`` and ``cylinder_vector_d`` still give the ``"evr-precision"`` units);
and ``stopping.min_information_bits``, the expected
information of the next answer below which asking more is pointless. ``model.over_minus_guard``
(:data:`OVER_MINUS_GUARDS`): when to file no lens more minus than the correction by over 0.25 D
with posterior probability above ``(1 - level) / 2``
(:meth:`~visiontune.refraction.optics_engine.OpticsEngine.filed_lens`): ``"never"`` (default),
``"young"`` (for a patient who may accommodate: aged 35 or less, or of unknown age), or
``"always"``; ``false`` and ``true`` mean ``"never"`` and ``"always"``. Measured in
docs/results/README.md: ``"always"`` costs more results within 0.25 D than it saves;
``"young"`` costs fewer and over-minuses no young patient (the shipped clinical default).
``model.filed_lens`` (:data:`FILED_LENS_RULES`): ``"rounded"`` (default) files the estimate
rounded to trial lenses; ``"most-probable"`` the trial lens near it most probably within 0.25 D
of the correction (:meth:`~visiontune.refraction.optics_engine.OpticsEngine._most_probable_lens`;
the default protocol, ``clinical-sloan-compare``). ``model.keep_start_margin`` (optional, in [0, 0.5]):
the starting prescription is filed in place of that lens when its posterior probability of lying within
0.25 D of the correction is at most this below the lens's (a prescription is not changed for nothing;
:meth:`~visiontune.refraction.optics_engine.OpticsEngine._kept_start`). ``model.lapse_sigma`` (default 0, at most 3):
above 0 the lapse rate is each patient's unknown, ``logit λ ~ N(logit model.lapse, lapse_sigma²)``,
read by letters, chart lines and comparisons alike
(:func:`~visiontune.refraction.optics_model.lapse_rate`). ``model.tempered`` (default false): an answer
that would leave fewer than half the particles' effective weight enters in stages, the particles moved
between them (:meth:`~visiontune.refraction.optics_model.ParticlePosterior._temper_in`).
``model.lapse_run_onset`` and ``model.lapse_run_recovery`` (both or neither; probabilities per answer,
the onset below 0.5): the patient's attention as a hidden two-state chain over the answers, lapsing with
the onset and attending again with the recovery, a lapsed answer at random (lapses in runs;
:mod:`~visiontune.refraction.attention`).
``model.best_acuity_mean`` and ``model.best_acuity_sd`` (logMAR, default 0.0 and 0.15): the normal prior of
the best-corrected acuity ``VA*``. ``model.fellow_eye_prior`` (default false): in a visit, the second eye's
session starts from the first eye's posterior of the patient's own unknowns, written into its protocol
(:mod:`visiontune.refraction.fellow_eye`).

**Optics-GP model** (``[model] type = "optics-gp"``, the hybrid the optics model was measured
against): the optics formula as the prior
mean of a probit GP whose zero-mean part learns what the formula misses
(:mod:`visiontune.reproduction.engines.optics_gp_model`); search space, rules and stops as the optics
model's; ``model.lapse``, ``model.n_particles`` as there, and the GP's prior ``residual_sd``
(probit units, default 0.25), ``residual_lengthscale_logmar`` (0.3) and ``residual_lengthscale_d``
(diopters, 0.75). Letters only: ``[comparisons]`` and ``[sliders]`` are refused.

**GP model** (``[model] type = "gp"``, the default when ``model.kernel`` is given): the
paper's 2-D search in ``(S, C)`` at the fixed ``search_space.axis_deg`` inside the box
``sphere_d`` x ``cylinder_d``; ``model.hyperparameters`` ``theta``, ``lengthscales`` (one or two),
``variance``, or ``model.fit = "simulation"`` (Fauvel & Chalk (contextual BO), §5.2); precision stop on the widths
``sphere_d`` and ``cylinder_d`` of the credible intervals.

**Comparisons** (optics model only): a ``[comparisons]`` table lets the session ask "which is
clearer, 1 or 2?" as well as letters, whichever is worth more per second of the patient's
time (:mod:`visiontune.refraction.mixed_rules`). Keys: ``enabled`` (default true),
``letter_seconds`` and ``comparison_seconds`` (the durations the choice weighs, seconds),
``lens_change_seconds`` (what a change of lens between answers costs, seconds: 0, the default, at
a phoropter; a trial frame's swap, measured by ``visiontune sessions durations``),
``lens_change_weight`` (default 1, 0.1 to 20: the choice charges a change this many times
``lens_change_seconds``, the patient's time once), ``criterion``
(``"evr"``, ``"evr-precision"``, which needs a precision stop, ``"evr-stop"``,
which also needs ``sensitivity_to_stop`` and a model that infers the sensitivity, or
``"information"``; :mod:`~visiontune.refraction.mixed_rules`), ``size_offset_logmar`` (the letter kept in view,
above the predicted best acuity), ``sensitivity_to_stop`` (with a model that infers the
patient's comparison sensitivity, the precision stop waits until the posterior standard
deviation of its logarithm is at most this fraction of the prior's), ``pairs`` (``"any"`` or
``"clinical"``: lens 1 and lens 2 differ in the sphere, the cylinder's power or its axis only;
``"one-change"``: a lens and one clinical change of it, :mod:`visiontune.refraction.clinical_pairs`),
``hand_held_d`` (with ``"one-change"``: the powers of the flipper and cross-cylinder held before the
trial lens, a list of multiples of 0.25 D, ``[0.25]`` by default);
``[comparisons.model]`` holds the fields of
:class:`~visiontune.optics.comparison_answers.ComparisonModel` (``kind``, ``indifference``, ``lapse``,
...), each validated as the model validates it; among them ``minus_bias_sigma`` (in [0, 5]) and
``indifference_sigma`` (in [0, 3]), off (0) by default: above 0 the session infers per patient a bias
toward the more minus lens (normal prior, mean 0, this σ) and the patient's own "equal" band
(lognormal around ``indifference``, this σ of its log), :mod:`visiontune.refraction.comparisons`.
No shipped protocol turns them on.

**Sliders** (optics model only): a ``[sliders]`` table lets the session also ask "turn the
knob; where is it clearest?" (:mod:`visiontune.refraction.slider`, Mikkola et al. 2020's
projective query), weighed against a letter and a comparison by value per second of the
patient's time (:mod:`visiontune.refraction.mixed_rules`; without ``[comparisons]``, letters
against sliders at the letter's default 3 s). Keys: ``enabled`` (default true),
``slider_seconds`` (default 8, stated), ``noise_logmar``, ``lapse`` and ``noise_sigma`` (the fields
of :class:`~visiontune.refraction.slider.SliderModel`, defaults as it has them: ``noise_sigma``, the
σ of the lognormal prior of the patient's choice noise around ``noise_logmar``, in [0, 3]; 0 keeps
the noise fixed, > 0 infers it per patient) and ``knobs`` (some of ``"sphere"``, ``"cylinder"``,
``"axis"``; default all three). No shipped protocol turns them on.

**Chart lines** (optics model with ``[comparisons]``): a ``[chart_line]`` table lets the session
also ask a line of letters of one size read aloud through one lens, each letter keyed right or
wrong (:mod:`visiontune.refraction.chart_line`), weighed against the letter and the comparison by
value per second (:mod:`visiontune.refraction.mixed_rules`). Keys: ``enabled`` (default true),
``letters_per_line`` (default 5, as a logMAR chart), ``line_seconds`` (default 6 s for 5 letters,
:mod:`visiontune.refraction.durations`) and ``crowding_logmar`` (how much harder a letter of a line
is than one alone, logMAR, in [0, 0.5]; default 0, cited there) and ``line_sd_logmar`` (the SD of a
threshold shift the letters of one line share, logMAR, in [0, 0.3]; default 0, none) and
``line_lapse`` (the chance that the patient's attention lapses for a whole line and every letter
is a guess, in [0, 0.5]; default 0, none).

Shipped protocols are looked up in ``visiontune/data/protocols/`` (installed package data)
and then in the ``protocols/`` folder of a source checkout (next to ``visiontune/``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from visiontune.errors import InvalidInputError, ProtocolError
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.chart_line import MAX_LINE_LETTERS, ChartLineSettings
from visiontune.refraction.clinical_pairs import HAND_HELD_D, is_hand_held_power
from visiontune.refraction.durations import COMPARISON_SECONDS, LENS_CHANGE_SECONDS, LETTER_SECONDS
from visiontune.refraction.lenses import CYLINDER_FORMS, LensSteps
from visiontune.refraction.mixed_rules import CRITERIA, PAIR_SETS, MixedSettings
from visiontune.refraction.policies import (
    GP_KERNELS,
    GP_POLICIES,
    MODEL_TYPES,
    OPTICS_POLICIES,
    PARTICLE_MODEL_TYPES,
)
from visiontune.refraction.slider import KNOBS, SliderModel, SliderSettings

#: The protocol a session runs unless another is named: letters, chart lines and comparisons, the
#: stop on the lens to file, the comparison read by two formulas
#: (docs/results/clinical-validation-clinical-sloan-lines-two-formulas.md); ``clinical-sloan-compare``
#: is the default before it, ``clinical-sloan`` asks letters only.
DEFAULT_PROTOCOL = "clinical-sloan-lines-two-formulas"
#: The letter sets a chart line may be read from (letters named aloud, one character each).
LINE_LETTER_SETS = ("sloan", "letters26")
#: Letter sets and their sizes, named as in ``visiontune/data/stimuli/<name>.json``.
LETTER_SET_SIZES: MappingProxyType = MappingProxyType({"letters26": 26, "sloan": 10, "tumbling_e": 4, "landolt_c": 8})
FIT_METHODS: frozenset[str] = frozenset({"simulation"})
#: When the optics engine files a lens bounded against over-minus (``model.over_minus_guard``).
OVER_MINUS_GUARDS: frozenset[str] = frozenset({"never", "young", "always"})
#: Which trial lens the optics engine files (``model.filed_lens``).
FILED_LENS_RULES: frozenset[str] = frozenset({"rounded", "most-probable"})
SLOPE_PRIORS: frozenset[str] = frozenset({"fixed", "uniform", "lognormal"})
#: GP hyperparameters: name -> (lowest, highest) value. ``lengthscales`` (diopters) takes one
#: value or one per lens coordinate (sphere, cylinder).
GP_HYPERPARAMETERS = MappingProxyType({"theta": (1e-4, 1e3), "lengthscales": (0.05, 50.0), "variance": (1e-4, 1e3)})

#: Physical limits of the spaces: trial lenses and chart sizes outside are typos.
SPHERE_LIMITS_D = (-30.0, 30.0)
CYLINDER_LIMITS_D = (-10.0, 10.0)
LOGMAR_LIMITS = (-1.0, 2.5)
MAX_TRIALS = 10_000
#: The narrowest precision stop a protocol may ask (diopters): the finest trial lens step
#: (``lenses.step_d`` 0.125; a prescription is written to 0.125 D at best). The filed lens is
#: rounded to its step, so a credible region narrower than one step (GP: interval width; optics:
#: ``±m_d`` half-width, so half a step) decides nothing the rounding has not; asked for, it only
#: makes the stop fire late or, like ``m_d = 1e-12``, never (the session runs to ``max_trials``).
MIN_PRECISION_WIDTH_D = 0.125
MAX_NAME_CHARS = 80
MAX_DESCRIPTION_CHARS = 500


@dataclass(frozen=True)
class SearchSpace:
    """GP model: lens box, sphere and cylinder ranges in diopters, at the fixed ``axis_deg``.
    Optics model: ``max_step_d``, how far a proposed lens may be from the current estimate
    before it is rounded to a trial lens (the rounding may add up to about 0.15 D)."""

    sphere_d: tuple[float, float] | None = None
    cylinder_d: tuple[float, float] | None = None
    axis_deg: float | None = None
    max_step_d: float = 1.0


@dataclass(frozen=True)
class Precision:
    """Stop when the ``level`` credible region is within the limits: GP model, the interval
    widths of the best ``sphere_d`` and ``cylinder_d``; optics model, ``±m_d`` on ``M`` and
    ``±cylinder_vector_d`` on ``J = (J0, J45)`` (diopters), and, with ``over_minus_risk``, in a
    session the over-minus guard covers, once the lens to file is more minus than the correction
    by over 0.25 D with posterior probability at most that
    (:meth:`~visiontune.refraction.optics_engine.OpticsEngine.over_minus_risk`)."""

    sphere_d: float | None = None
    cylinder_d: float | None = None
    m_d: float | None = None
    cylinder_vector_d: float | None = None
    level: float = 0.95
    over_minus_risk: float | None = None
    #: With the optics model and comparisons: stop on the lens to file instead of the region's radii,
    #: once its posterior probability of lying within 0.25 D of the correction is at least this
    #: (:meth:`~visiontune.refraction.mixed_engine.MixedOpticsEngine.filed_within_met`); None: the radii.
    filed_within_probability: float | None = None


@dataclass(frozen=True)
class Stopping:
    """Stop at ``max_trials``, or earlier once ``precision`` is met, or (optics model) once the
    next answer is expected to bring less than ``min_information_bits``, after ``min_trials``."""

    max_trials: int
    min_trials: int = 0
    precision: Precision | None = None
    min_information_bits: float | None = None


@dataclass(frozen=True)
class ModelSpec:
    """The model: ``type`` ``"optics"`` (``lapse``, ``lapse_sigma``, ``tempered``, ``n_particles``,
    ``over_minus_guard``, ``filed_lens``, ``keep_start_margin``, the prior of ``VA*`` ``best_acuity_mean``
    and ``best_acuity_sd``, ``fellow_eye_prior``), ``"gp"``
    (``kernel`` and either fixed ``hyperparameters`` or ``fit = "simulation"``, Fauvel & Chalk (contextual BO),
    §5.2) or ``"optics-gp"`` (``lapse``, ``n_particles`` and the GP's ``residual_sd``,
    ``residual_lengthscale_logmar``, ``residual_lengthscale_d``)."""

    type: str
    kernel: str | None = None
    hyperparameters: MappingProxyType | None = None
    fit: str | None = None
    lapse: float = 0.04
    lapse_sigma: float = 0.0
    tempered: bool = False
    lapse_runs: tuple[float, float] | None = None
    n_particles: int = 4000
    over_minus_guard: str = "never"
    filed_lens: str = "rounded"
    keep_start_margin: float | None = None
    best_acuity_mean: float = 0.0
    best_acuity_sd: float = 0.15
    fellow_eye_prior: bool = False
    residual_sd: float = 0.25
    residual_lengthscale_logmar: float = 0.3
    residual_lengthscale_d: float = 0.75


@dataclass(frozen=True)
class SlopePrior:
    """Prior on the psychometric slope ``a`` (logMAR⁻¹, Fauvel & Chalk (contextual BO), Eq. S34): ``fixed`` value,
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
    lenses: LensSteps = field(default_factory=LensSteps)
    comparisons: MixedSettings | None = None
    sliders: SliderSettings | None = None
    chart_line: ChartLineSettings | None = None

    @property
    def chance(self) -> float:
        """Guess rate ``γ = 1 / n_alternatives`` (Fauvel & Chalk (contextual BO), Eq. S34)."""
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

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
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


def _safe_text(r: _Reader, value: Any, key: str, max_chars: int) -> str:
    """A non-empty string of printable characters (no control characters, no newline)."""
    text = r.string(value, key)
    if len(text) > max_chars or any(unicodedata.category(ch).startswith("C") for ch in text):
        raise r.fail(key, f"at most {max_chars} printable characters on one line", text[:max_chars] + "...")
    return text


def table_span(text: str, table: str) -> tuple[int, int] | None:
    """Where the body of ``[table]`` lies in protocol ``text``: from the end of its header line to the next
    table's header (or the end of the text); None when the text has no such header. For the edits that
    write a setting into a protocol's text and parse it again, so a session's snapshot holds it."""
    header = re.search(rf"^[ \t]*\[{re.escape(table)}\][ \t]*(#.*)?$", text, re.MULTILINE)
    if header is None:
        return None
    following = re.search(r"^[ \t]*\[", text[header.end() :], re.MULTILINE)
    return header.end(), header.end() + following.start() if following else len(text)


def with_table_line(text: str, table: str, key: str, line: str) -> str | None:
    """``text`` with the first ``key = ...`` line in the body of ``[table]`` (:func:`table_span`) replaced by
    ``line``, or ``line`` put right under the table's header when it has none; None when the text has no
    ``[table]``. For a setting a command writes into a protocol before parsing it again (the lens
    device's change time)."""
    span = table_span(text, table)
    if span is None:
        return None
    start, end = span
    body = text[start:end]
    setting = re.compile(rf"^[ \t]*{re.escape(key)}[ \t]*=.*$", re.MULTILINE)
    body = setting.sub(lambda _: line, body, count=1) if setting.search(body) else "\n" + line + body
    return text[:start] + body + text[end:]


def parse_protocol(text: str, source: str = "<protocol>") -> Protocol:
    """Parse and validate protocol TOML ``text``; ``source`` names it in error messages."""
    r = _Reader(source)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolError(f"{source}: invalid TOML ({exc})") from None
    except RecursionError:
        raise ProtocolError(f"{source}: invalid TOML (arrays or tables nested too deeply)") from None
    top_required = {
        "name",
        "description",
        "policy",
        "seed",
        "initial_random_trials",
        "search_space",
        "context_space",
        "letters",
        "stopping",
        "model",
    }
    r.table(doc, "", top_required, {"psychometric", "lenses", "comparisons", "sliders", "chart_line"})
    name = _safe_text(r, doc["name"], "name", MAX_NAME_CHARS)
    description = _safe_text(r, doc["description"], "description", MAX_DESCRIPTION_CHARS)
    seed = r.integer(doc["seed"], "seed", 0, 2**63 - 1)

    model = _model(r, r.sub_table(doc, "model"))
    if model.type == "optics-gp":
        for table in sorted({"comparisons", "sliders", "chart_line"} & doc.keys()):
            raise r.fail(
                table,
                'no such table for model.type = "optics-gp" (letters only; comparisons and sliders '
                'need model.type = "optics")',
                doc[table],
            )
    known = OPTICS_POLICIES if model.type in PARTICLE_MODEL_TYPES else GP_POLICIES
    policy = r.string(doc["policy"], "policy", known.keys())

    stop = r.table(
        r.sub_table(doc, "stopping"), "stopping.", {"max_trials"}, {"min_trials", "precision", "min_information_bits"}
    )
    max_trials = r.integer(stop["max_trials"], "stopping.max_trials", 1, MAX_TRIALS)
    min_trials = r.integer(stop.get("min_trials", 0), "stopping.min_trials", 0, max_trials)
    initial = r.integer(doc["initial_random_trials"], "initial_random_trials", 0, max_trials)
    precision = _precision(r, r.sub_table(stop, "precision", "stopping."), model) if "precision" in stop else None
    min_bits = None
    if "min_information_bits" in stop:
        if model.type not in PARTICLE_MODEL_TYPES:
            raise r.fail(
                "stopping.min_information_bits",
                "no such key for the GP model (optics model only)",
                stop["min_information_bits"],
            )
        min_bits = r.number(stop["min_information_bits"], "stopping.min_information_bits", 0.0, 1.0)

    lens_steps = _lens_steps(r, r.sub_table(doc, "lenses")) if "lenses" in doc else LensSteps()
    space = _search_space(r, r.sub_table(doc, "search_space"), model.type, lens_steps.step_d)

    context = r.table(r.sub_table(doc, "context_space"), "context_space.", {"logmar"}, set())
    logmar = r.interval(context["logmar"], "context_space.logmar", LOGMAR_LIMITS, "logMAR")

    letters = r.table(r.sub_table(doc, "letters"), "letters.", {"set", "n_alternatives"}, set())
    letter_set = r.string(letters["set"], "letters.set", LETTER_SET_SIZES.keys())
    n_alt = r.integer(letters["n_alternatives"], "letters.n_alternatives", 2, LETTER_SET_SIZES[letter_set])

    slope_prior = None
    if "psychometric" in doc:
        psy = r.table(r.sub_table(doc, "psychometric"), "psychometric.", {"slope_prior"}, set())
        slope_prior = _slope_prior(r, r.sub_table(psy, "slope_prior", "psychometric."))

    comparisons = None
    if "comparisons" in doc:
        if model.type != "optics":
            raise r.fail(
                "comparisons", "no such table for the GP model (comparisons need the optics model)", doc["comparisons"]
            )
        comparisons = _comparisons(r, r.sub_table(doc, "comparisons"))
        if comparisons is not None and comparisons.criterion in ("evr-precision", "evr-stop") and precision is None:
            raise r.fail(
                "comparisons.criterion",
                f'a precision stop ([stopping.precision]) for "{comparisons.criterion}", '
                "which measures variance in its units; or another criterion",
                comparisons.criterion,
            )
    sliders = None
    if "sliders" in doc:
        if model.type != "optics":
            raise r.fail("sliders", "no such table for the GP model (sliders need the optics model)", doc["sliders"])
        sliders = _sliders(r, r.sub_table(doc, "sliders"))
    chart_line = None
    if "chart_line" in doc:
        chart_line = _chart_line(r, r.sub_table(doc, "chart_line"), LETTER_SET_SIZES[letter_set])
        if chart_line is not None and letter_set not in LINE_LETTER_SETS:
            raise r.fail(
                "letters.set",
                f"one of {', '.join(LINE_LETTER_SETS)} for a [chart_line] (letters read aloud, one character each)",
                letter_set,
            )
        if chart_line is not None and comparisons is None:
            raise r.fail(
                "chart_line",
                "a [comparisons] table (optics model) beside it: lines are weighed against letters and comparisons",
                doc["chart_line"],
            )

    if precision is not None and precision.filed_within_probability is not None and comparisons is None:
        raise r.fail(
            "stopping.precision.filed_within_probability",
            "a [comparisons] table beside it (the engine of "
            "letters and comparisons reads the stop on the lens to file), or no such key",
            precision.filed_within_probability,
        )
    return Protocol(
        name=name,
        description=description,
        policy=policy,
        seed=seed,
        initial_random_trials=initial,
        search_space=space,
        logmar_range=logmar,
        letter_set=letter_set,
        n_alternatives=n_alt,
        stopping=Stopping(max_trials, min_trials, precision, min_bits),
        model=model,
        slope_prior=slope_prior,
        source=source,
        source_text=text,
        lenses=lens_steps,
        comparisons=comparisons,
        sliders=sliders,
        chart_line=chart_line,
    )


def _comparisons(r: _Reader, table: dict) -> MixedSettings | None:
    """``[comparisons]`` (module docstring); ``None`` when ``enabled = false``."""
    p = "comparisons."
    r.table(
        table,
        p,
        set(),
        {
            "enabled",
            "letter_seconds",
            "comparison_seconds",
            "lens_change_seconds",
            "lens_change_weight",
            "criterion",
            "size_offset_logmar",
            "sensitivity_to_stop",
            "pairs",
            "hand_held_d",
            "model",
        },
    )
    enabled = r.boolean(table.get("enabled", True), p + "enabled")
    seconds = {
        k: r.number(table.get(k, d), p + k, 0.1, 600.0)
        for k, d in (("letter_seconds", LETTER_SECONDS), ("comparison_seconds", COMPARISON_SECONDS))
    }
    change = r.number(table.get("lens_change_seconds", LENS_CHANGE_SECONDS), p + "lens_change_seconds", 0.0, 600.0)
    weight = r.number(table.get("lens_change_weight", 1.0), p + "lens_change_weight", 0.1, 20.0)
    criterion = r.string(table.get("criterion", "evr"), p + "criterion", CRITERIA)
    pairs = r.string(table.get("pairs", "any"), p + "pairs", PAIR_SETS)
    held = _hand_held_powers(r, table.get("hand_held_d", list(HAND_HELD_D)), p + "hand_held_d")
    if "hand_held_d" in table and pairs != "one-change":
        raise r.fail(p + "hand_held_d", 'pairs = "one-change", the only pairs held by hand', pairs)
    offset = r.number(table.get("size_offset_logmar", 0.1), p + "size_offset_logmar", -0.5, 1.0)
    to_stop = None
    if "sensitivity_to_stop" in table:
        to_stop = r.number(table["sensitivity_to_stop"], p + "sensitivity_to_stop", 0.0, 1.0, open_lo=True)
    model = _comparison_model(r, r.sub_table(table, "model", p)) if "model" in table else ComparisonModel()
    if not enabled:
        return None
    if criterion == "evr-stop" and (to_stop is None or not model.infers_sensitivity):
        raise r.fail(
            p + "criterion",
            "a sensitivity_to_stop and a [comparisons.model] that infers the sensitivity "
            '(sensitivity_sigma > 0) for "evr-stop", which turns to that wait; or another criterion',
            criterion,
        )
    return MixedSettings(
        model,
        seconds["letter_seconds"],
        seconds["comparison_seconds"],
        criterion,
        comparison_size_offset_logmar=offset,
        sensitivity_to_stop=to_stop,
        pairs=pairs,
        lens_change_seconds=change,
        hand_held_d=held,
        lens_change_weight=weight,
    )


def _hand_held_powers(r: _Reader, value: Any, key: str) -> tuple[float, ...]:
    """``comparisons.hand_held_d``: the powers of the hand-held flipper and cross-cylinder, D."""
    expected = "a non-empty list of distinct powers, each a multiple of 0.25 D from 0.25 to 2.0"
    if not isinstance(value, list) or not value:
        raise r.fail(key, expected, value)
    powers = tuple(r.number(v, key, 0.25, 2.0) for v in value)
    if not all(is_hand_held_power(p) for p in powers) or len(set(powers)) != len(powers):
        raise r.fail(key, expected, value)
    return tuple(float(p) for p in powers)


def _sliders(r: _Reader, table: dict) -> SliderSettings | None:
    """``[sliders]`` (module docstring); ``None`` when ``enabled = false``."""
    p = "sliders."
    r.table(table, p, set(), {"enabled", "slider_seconds", "noise_logmar", "lapse", "noise_sigma", "knobs"})
    enabled = r.boolean(table.get("enabled", True), p + "enabled")
    defaults = SliderSettings()
    seconds = r.number(table.get("slider_seconds", defaults.slider_seconds), p + "slider_seconds", 0.1, 600.0)
    noise = r.number(table.get("noise_logmar", defaults.model.noise_logmar), p + "noise_logmar", 1e-4, 1.0)
    lapse = r.number(table.get("lapse", defaults.model.lapse), p + "lapse", 0.0, 0.99)
    noise_sigma = r.number(table.get("noise_sigma", defaults.model.noise_sigma), p + "noise_sigma", 0.0, 3.0)
    knobs = table.get("knobs", list(KNOBS))
    expected = "a non-empty list of " + ", ".join(json.dumps(k) for k in KNOBS) + ", each at most once"
    if (
        not isinstance(knobs, list)
        or not knobs
        or any(not isinstance(k, str) or k not in KNOBS for k in knobs)
        or len(set(knobs)) != len(knobs)
    ):
        raise r.fail(p + "knobs", expected, knobs)
    if not enabled:
        return None
    return SliderSettings(seconds, SliderModel(noise, lapse, noise_sigma), tuple(knobs))


def _chart_line(r: _Reader, table: dict, n_letters: int) -> ChartLineSettings | None:
    """``[chart_line]`` (module docstring); ``None`` when ``enabled = false``. A line's letters are
    distinct, so at most the letter set's ``n_letters``."""
    p = "chart_line."
    r.table(
        table,
        p,
        set(),
        {"enabled", "letters_per_line", "line_seconds", "crowding_logmar", "line_sd_logmar", "line_lapse"},
    )
    enabled = r.boolean(table.get("enabled", True), p + "enabled")
    defaults = ChartLineSettings()
    n = r.integer(
        table.get("letters_per_line", defaults.letters_per_line),
        p + "letters_per_line",
        2,
        min(MAX_LINE_LETTERS, n_letters),
    )
    seconds = r.number(table.get("line_seconds", defaults.line_seconds), p + "line_seconds", 0.1, 600.0)
    crowding = r.number(table.get("crowding_logmar", defaults.crowding_logmar), p + "crowding_logmar", 0.0, 0.5)
    shared = r.number(table.get("line_sd_logmar", defaults.line_sd_logmar), p + "line_sd_logmar", 0.0, 0.3)
    lapse = r.number(table.get("line_lapse", defaults.line_lapse), p + "line_lapse", 0.0, 0.5)
    return ChartLineSettings(n, seconds, crowding, shared, lapse) if enabled else None


def _comparison_model(r: _Reader, table: dict) -> ComparisonModel:
    """``[comparisons.model]``: the fields of :class:`ComparisonModel`, each checked as it checks them."""
    p = "comparisons.model."
    defaults = {f.name: f.default for f in dataclasses.fields(ComparisonModel)}
    r.table(table, p, set(), set(defaults))
    values = {}
    for key, value in table.items():
        default = defaults[key]
        if isinstance(default, str):
            values[key] = r.string(value, p + key)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise r.fail(p + key, "a number", value)
        else:
            values[key] = float(value)
    try:
        return ComparisonModel(**values)
    except InvalidInputError as exc:
        field_name, _, message = str(exc).partition(": ")
        raise ProtocolError(f"{r.source}: {p}{field_name}: {message.replace(', got ', ', found ', 1)}") from None


def _lapse_runs(r: _Reader, table: dict) -> tuple[float, float] | None:
    """``(onset, recovery)`` of ``model.lapse_run_onset`` and ``model.lapse_run_recovery`` (both or neither)."""
    given = [k for k in ("lapse_run_onset", "lapse_run_recovery") if k in table]
    if not given:
        return None
    if len(given) == 1:
        missing = "lapse_run_recovery" if given[0] == "lapse_run_onset" else "lapse_run_onset"
        raise ProtocolError(
            f"{r.source}: model.{given[0]}: lapses in runs need both model.lapse_run_onset and "
            f"model.lapse_run_recovery, found no model.{missing}"
        )
    onset = r.number(table["lapse_run_onset"], "model.lapse_run_onset", 0.0, 0.5, open_lo=True, open_hi=True)
    recovery = r.number(table["lapse_run_recovery"], "model.lapse_run_recovery", 0.0, 1.0, open_lo=True, open_hi=True)
    return onset, recovery


def _model(r: _Reader, table: dict) -> ModelSpec:
    if "type" in table:
        kind = r.string(table["type"], "model.type", MODEL_TYPES)
    else:
        kind = "gp" if {"kernel", "hyperparameters", "fit"} & table.keys() else "optics"
    if kind == "optics-gp":
        return _optics_gp_model(r, table)
    if kind == "optics":
        keys = {
            "type",
            "lapse",
            "lapse_sigma",
            "tempered",
            "lapse_run_onset",
            "lapse_run_recovery",
            "n_particles",
            "over_minus_guard",
            "filed_lens",
            "keep_start_margin",
            "best_acuity_mean",
            "best_acuity_sd",
            "fellow_eye_prior",
        }
        r.table(table, "model.", set(), keys)
        guard = table.get("over_minus_guard", "never")
        if isinstance(guard, bool):
            guard = "always" if guard else "never"
        guard = r.string(guard, "model.over_minus_guard", OVER_MINUS_GUARDS)
        lapse = r.number(table.get("lapse", 0.04), "model.lapse", 0.0, 0.2)
        lapse_sigma = r.number(table.get("lapse_sigma", 0.0), "model.lapse_sigma", 0.0, 3.0)
        if lapse_sigma > 0.0 and lapse == 0.0:
            raise ProtocolError(
                f"{r.source}: model.lapse_sigma: an inferred lapse needs a positive model.lapse (its prior's "
                f"median), found lapse = 0 with lapse_sigma = {lapse_sigma:g}"
            )
        return ModelSpec(
            "optics",
            lapse=lapse,
            lapse_sigma=lapse_sigma,
            tempered=r.boolean(table.get("tempered", False), "model.tempered"),
            lapse_runs=_lapse_runs(r, table),
            n_particles=r.integer(table.get("n_particles", 4000), "model.n_particles", 500, 50_000),
            over_minus_guard=guard,
            filed_lens=r.string(table.get("filed_lens", "rounded"), "model.filed_lens", FILED_LENS_RULES),
            keep_start_margin=(
                r.number(table["keep_start_margin"], "model.keep_start_margin", 0.0, 0.5)
                if "keep_start_margin" in table
                else None
            ),
            best_acuity_mean=r.number(table.get("best_acuity_mean", 0.0), "model.best_acuity_mean", -0.3, 1.0),
            best_acuity_sd=r.number(table.get("best_acuity_sd", 0.15), "model.best_acuity_sd", 0.01, 0.5),
            fellow_eye_prior=r.boolean(table.get("fellow_eye_prior", False), "model.fellow_eye_prior"),
        )
    r.table(table, "model.", {"kernel"}, {"type", "hyperparameters", "fit"})
    kernel = r.string(table["kernel"], "model.kernel", GP_KERNELS)
    if ("hyperparameters" in table) == ("fit" in table):
        which = "both" if "fit" in table else "neither"
        raise ProtocolError(
            f"{r.source}: model: expected exactly one of model.hyperparameters (a table) or "
            f'model.fit = "simulation", found {which}'
        )
    if "fit" in table:
        return ModelSpec("gp", kernel, fit=r.string(table["fit"], "model.fit", FIT_METHODS))
    hyper = _hyperparameters(r, r.sub_table(table, "hyperparameters", "model."))
    return ModelSpec("gp", kernel, hyperparameters=MappingProxyType(hyper))


def _optics_gp_model(r: _Reader, table: dict) -> ModelSpec:
    """``[model]`` with ``type = "optics-gp"``: the optics model's ``lapse`` and ``n_particles``
    and the prior of the GP ``g`` (:class:`~visiontune.reproduction.engines.optics_gp_model.ResidualSpec`):
    ``residual_sd`` (probit units), ``residual_lengthscale_logmar``, ``residual_lengthscale_d``."""
    keys = {"type", "lapse", "n_particles", "residual_sd", "residual_lengthscale_logmar", "residual_lengthscale_d"}
    r.table(table, "model.", set(), keys)
    return ModelSpec(
        "optics-gp",
        lapse=r.number(table.get("lapse", 0.04), "model.lapse", 0.0, 0.2),
        n_particles=r.integer(table.get("n_particles", 4000), "model.n_particles", 500, 50_000),
        residual_sd=r.number(table.get("residual_sd", 0.25), "model.residual_sd", 0.0, 5.0, open_lo=True),
        residual_lengthscale_logmar=r.number(
            table.get("residual_lengthscale_logmar", 0.3), "model.residual_lengthscale_logmar", 0.01, 10.0
        ),
        residual_lengthscale_d=r.number(
            table.get("residual_lengthscale_d", 0.75), "model.residual_lengthscale_d", 0.05, 20.0
        ),
    )


def _hyperparameters(r: _Reader, table: dict) -> dict[str, float | tuple[float, ...]]:
    """``theta``, ``lengthscales`` (one value or one per lens coordinate) and ``variance``,
    each within :data:`GP_HYPERPARAMETERS`."""
    r.table(table, "model.hyperparameters.", set(GP_HYPERPARAMETERS), set())
    out: dict[str, float | tuple[float, ...]] = {}
    for name, (lo, hi) in GP_HYPERPARAMETERS.items():
        key, value = f"model.hyperparameters.{name}", table[name]
        if name == "lengthscales" and isinstance(value, list):
            if len(value) not in (1, 2):
                raise r.fail(key, f"1 or 2 numbers in [{lo:g}, {hi:g}] (sphere, cylinder)", value)
            out[name] = tuple(r.number(v, f"{key}[{i}]", lo, hi) for i, v in enumerate(value))
        else:
            out[name] = r.number(value, key, lo, hi)
    return out


def _precision_width(r: _Reader, value: Any, key: str, least: float) -> float:
    """A precision limit (diopters) of at least ``least``: see :data:`MIN_PRECISION_WIDTH_D`."""
    r.number(value, key, 0.0, 10.0, open_lo=True)
    if value < least:
        raise r.fail(
            key,
            f"a number in [{least:g}, 10]: a credible region narrower than the finest trial lens step "
            f"({MIN_PRECISION_WIDTH_D:g} D) changes no lens filed, and the stop would never fire",
            value,
        )
    return float(value)


def _precision(r: _Reader, table: dict, model: ModelSpec) -> Precision:
    p = "stopping.precision."
    gp = model.type == "gp"
    widths = ("sphere_d", "cylinder_d") if gp else ("m_d", "cylinder_vector_d")
    r.table(table, p, set(widths), {"level"} if gp else {"level", "over_minus_risk", "filed_within_probability"})
    least = MIN_PRECISION_WIDTH_D if gp else MIN_PRECISION_WIDTH_D / 2  # a width (GP), a ± half-width (optics)
    values = {w: _precision_width(r, table[w], p + w, least) for w in widths}
    level = r.number(table.get("level", 0.95), p + "level", 0.5, 0.999)
    risk = None
    if "over_minus_risk" in table:
        risk = r.number(table["over_minus_risk"], p + "over_minus_risk", 0.0, 0.5, open_lo=True, open_hi=True)
        if model.over_minus_guard == "never":
            raise r.fail(
                p + "over_minus_risk",
                'model.over_minus_guard "young" or "always" (the stop waits only in '
                "the sessions the guard covers), or no such key",
                table["over_minus_risk"],
            )
    filed = None
    if "filed_within_probability" in table:
        filed = r.number(table["filed_within_probability"], p + "filed_within_probability", 0.5, 0.999)
    return Precision(**values, level=level, over_minus_risk=risk, filed_within_probability=filed)


def _lens_steps(r: _Reader, table: dict) -> LensSteps:
    r.table(table, "lenses.", set(), {"step_d", "axis_step_deg", "cylinder_form"})
    step = table.get("step_d", 0.25)
    if step not in (0, 0.0, 0.125, 0.25):
        raise r.fail("lenses.step_d", "0.25 (trial lenses), 0.125, or 0 (continuous, the paper's simulation)", step)
    axis_step = r.number(table.get("axis_step_deg", 5.0), "lenses.axis_step_deg", 1.0, 15.0)
    if abs(180.0 / axis_step - round(180.0 / axis_step)) > 1e-9:
        raise r.fail(
            "lenses.axis_step_deg",
            "an axis step that divides 180 (1, 2, 2.5, 3, 4, 5, 6, 9, 10, 12, 15)",
            table["axis_step_deg"],
        )
    form = r.string(table.get("cylinder_form", "minus"), "lenses.cylinder_form", CYLINDER_FORMS)
    return LensSteps(float(step), axis_step, form)


def _search_space(r: _Reader, table: dict, model_type: str, step_d: float) -> SearchSpace:
    p = "search_space."
    if model_type in PARTICLE_MODEL_TYPES:
        r.table(table, p, set(), {"max_step_d"})
        return SearchSpace(max_step_d=r.number(table.get("max_step_d", 1.0), p + "max_step_d", 0.25, 4.0))
    r.table(table, p, {"sphere_d", "cylinder_d"}, {"axis_deg"})
    sphere = r.interval(table["sphere_d"], p + "sphere_d", SPHERE_LIMITS_D, "D")
    cylinder = r.interval(table["cylinder_d"], p + "cylinder_d", CYLINDER_LIMITS_D, "D")
    if step_d:
        for key, (lo, hi) in (("sphere_d", sphere), ("cylinder_d", cylinder)):
            if math.floor(hi / step_d) - math.ceil(lo / step_d) < 1:
                raise r.fail(p + key, f"a range holding at least two trial lenses ({step_d:g} D steps)", [lo, hi])
    axis = 180.0
    if "axis_deg" in table:
        axis = r.number(table["axis_deg"], p + "axis_deg", 0.0, 180.0)
    return SearchSpace(sphere, cylinder, 180.0 if axis % 180.0 == 0.0 else axis)


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
