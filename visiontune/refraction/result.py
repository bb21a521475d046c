"""The session result: the JSON the trial loop gives its log's ``finish`` (schema v2).

This module is the agreement between the one trial loop (:meth:`visiontune.refraction.loop.
Refraction.result`), the trial log that stores it and the exports that read it.
A finished session's ``result`` is a JSON object with exactly these keys::

    estimate              {"sphere_d", "cylinder_d", "axis_deg"}   exact best lens (D, D, degrees)
    rounded               {"sphere_d", "cylinder_d", "axis_deg"}   the same, sphere and cylinder
                                                                  on 0.25 D steps (the Rx to file)
    credible_interval     {"sphere_d": [lo, hi], "cylinder_d": [lo, hi]}  central interval (D)
                          of the best lens; optional "level" (default 0.95) and the region's
                          ± radii (schema v2): "axis_pm_deg" (degrees, null without cylinder),
                          "m_pm_d" (on M), "cylinder_vector_pm_d" (on J = (J0, J45)),
                          "distance_d" (dioptric distance), each at that level
    predicted_va_logmar   float, acuity predicted through the estimate (logMAR)
    predicted_va_interval [lo, hi], its credible interval (logMAR)
    trials_used           int >= 0, answers the model used (voided answers excluded)
    duration_s            float >= 0, first presentation to last answer (seconds)
    stopped_by            "budget" | "precision" | "information" | "clinician"
    acuity_curve          [[trial_number, va_logmar], ...]: the estimate's predicted acuity
                          after each listed number of answers (non-decreasing trial numbers)
    posterior_map         {"sphere_d": [n], "cylinder_d": [m], "va_logmar": [[m] * n]}:
                          predicted acuity (logMAR) on the lens grid, rows = sphere
    simulated             optional bool; when present it must equal the session's flag

Optional (schema v2): ``power_vector`` {"m_d", "j0_d", "j45_d"} of the rounded lens (Thibos
1997); ``starting_rx`` {"sphere_d", "cylinder_d", "axis_deg", "source"} or null; ``model``
("optics" | "gp" | "optics-gp"), ``policy``, ``cylinder_form`` ("minus" | "plus"), ``software_version``;
``posterior_map.axis_deg`` (the axis the map is drawn at, null for the GP model's fixed axis);
``comparisons_used`` (int, ``0 <= comparisons_used <= trials_used``: how many of the answers
were comparisons, "which is clearer, 1 or 2?"; present when the protocol asks them);
``sliders_used`` (int, ``0 <= sliders_used``, ``comparisons_used + sliders_used <= trials_used``:
how many were slider answers, "turn the knob; where is it clearest?"; present when the protocol
has a ``[sliders]`` table); ``lines_used`` (int, ``comparisons_used + sliders_used + lines_used <=
trials_used``: how many were chart lines) and ``line_letters_used`` (int, the letters those lines
held, at least two a line), both present when the protocol has a ``[chart_line]`` table;
``over_minus_risk`` (float in [0, 1]: the posterior probability that the
rounded lens is more minus than the correction by over 0.25 D; present when the over-minus guard
covered the session, a patient who may accommodate).

Any other key, a missing key, a non-finite number or a wrong shape is rejected with a
:class:`~visiontune.errors.StoreError` naming the session and the key path, so a drift in
the engine's output shows up as a clear error rather than a wrong report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from visiontune._validate import check_int, check_number
from visiontune.errors import StoreError

__all__ = ["STOPPED_BY", "LensValues", "SessionResult", "parse_result"]

STOPPED_BY = ("budget", "precision", "information", "clinician")
_REQUIRED = (
    "estimate",
    "rounded",
    "credible_interval",
    "predicted_va_logmar",
    "predicted_va_interval",
    "trials_used",
    "duration_s",
    "stopped_by",
    "acuity_curve",
    "posterior_map",
)
_OPTIONAL = (
    "simulated",
    "power_vector",
    "starting_rx",
    "model",
    "policy",
    "cylinder_form",
    "software_version",
    "comparisons_used",
    "sliders_used",
    "over_minus_risk",
    "lines_used",
    "line_letters_used",
)
_REGION_RADII = ("m_pm_d", "cylinder_vector_pm_d", "distance_d")
_START_SOURCES = ("autorefraction", "retinoscopy", "spectacles")
_LENS_KEYS = ("sphere_d", "cylinder_d", "axis_deg")


@dataclass(frozen=True)
class LensValues:
    """Sphere and cylinder (diopters) and axis (degrees) of a lens, as written in a result."""

    sphere_d: float
    cylinder_d: float
    axis_deg: float

    def as_dict(self) -> dict[str, float]:
        return {"sphere_d": self.sphere_d, "cylinder_d": self.cylinder_d, "axis_deg": self.axis_deg}


@dataclass(frozen=True)
class SessionResult:
    """A validated session result (see the module docstring for units and meaning).

    ``acuity_curve``: tuple of ``(trial_number, va_logmar)``; ``posterior_map`` values:
    ``map_sphere_d (n,)``, ``map_cylinder_d (m,)``, ``map_va_logmar`` n rows of m values.
    ``raw`` is the JSON object as stored (exports copy it unchanged).
    """

    estimate: LensValues
    rounded: LensValues
    sphere_interval_d: tuple[float, float]
    cylinder_interval_d: tuple[float, float]
    interval_level: float
    predicted_va_logmar: float
    predicted_va_interval: tuple[float, float]
    trials_used: int
    duration_s: float
    stopped_by: str
    acuity_curve: tuple[tuple[int, float], ...]
    map_sphere_d: tuple[float, ...]
    map_cylinder_d: tuple[float, ...]
    map_va_logmar: tuple[tuple[float, ...], ...]
    simulated: bool | None
    raw: Any
    axis_pm_deg: float | None = None
    region_radii_d: dict | None = None
    power_vector: tuple[float, float, float] | None = None
    starting_rx: LensValues | None = None
    starting_source: str | None = None
    cylinder_form: str = "minus"
    map_axis_deg: float | None = None
    comparisons_used: int = 0
    sliders_used: int = 0
    over_minus_risk: float | None = None
    lines_used: int = 0
    line_letters_used: int = 0


class _Checker:
    def __init__(self, where: str) -> None:
        self.where = where

    def _name(self, key: str) -> str:
        return f"{self.where}: result.{key}" if key else f"{self.where}: result"

    def fail(self, key: str, message: str) -> StoreError:
        return StoreError(f"{self._name(key)}: {message}")

    def mapping(self, key: str, value: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a JSON object, got {type(value).__name__}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(key, f"missing key(s) {', '.join(missing)}")
        extra = sorted(set(value) - set(required) - set(optional))
        if extra:
            raise self.fail(key, f"unknown key(s) {', '.join(extra)} (result schema v2)")
        return value

    def number(self, key: str, value: Any) -> float:
        return check_number(self._name(key), value, error=StoreError)

    def integer(self, key: str, value: Any, lo: int | None = None, *, whole_float: bool = False) -> int:
        return check_int(self._name(key), value, lo, whole_float=whole_float, error=StoreError)

    def pair(self, key: str, value: Any) -> tuple[float, float]:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self.fail(key, f"expected [lo, hi], got {value!r}")
        lo, hi = self.number(f"{key}[0]", value[0]), self.number(f"{key}[1]", value[1])
        if lo > hi:
            raise self.fail(key, f"expected lo <= hi, got [{lo}, {hi}]")
        return lo, hi

    def numbers(self, key: str, value: Any) -> tuple[float, ...]:
        if not isinstance(value, (list, tuple)):
            raise self.fail(key, f"expected a list of numbers, got {type(value).__name__}")
        return tuple(self.number(f"{key}[{i}]", v) for i, v in enumerate(value))

    def lens(self, key: str, value: Any) -> LensValues:
        d = self.mapping(key, value, _LENS_KEYS)
        lens = LensValues(*(self.number(f"{key}.{k}", d[k]) for k in _LENS_KEYS))
        if not 0.0 <= lens.axis_deg <= 180.0:
            raise self.fail(f"{key}.axis_deg", f"expected degrees in [0, 180], got {lens.axis_deg}")
        return lens


def parse_result(result: Any, *, where: str = "session") -> SessionResult:
    """Validate a result object (parsed JSON) against schema v1 and return it typed.

    ``where`` names the session in error messages (e.g. ``"session 3"``).
    Raises :class:`~visiontune.errors.StoreError` naming the offending key.
    """
    c = _Checker(where)
    if result is None:
        raise StoreError(f"{where}: has no result")
    d = c.mapping("", result, _REQUIRED, _OPTIONAL)
    ci = c.mapping(
        "credible_interval",
        d["credible_interval"],
        ("sphere_d", "cylinder_d"),
        ("level", "axis_pm_deg", *_REGION_RADII),
    )
    radii = {k: c.number(f"credible_interval.{k}", ci[k]) for k in _REGION_RADII if k in ci} or None
    axis_pm = ci.get("axis_pm_deg")
    if axis_pm is not None:
        axis_pm = c.number("credible_interval.axis_pm_deg", axis_pm)
        if not 0.0 <= axis_pm <= 90.0:
            raise c.fail("credible_interval.axis_pm_deg", f"expected degrees in [0, 90], got {axis_pm}")
    power_vector = None
    if d.get("power_vector") is not None:
        pv = c.mapping("power_vector", d["power_vector"], ("m_d", "j0_d", "j45_d"))
        power_vector = tuple(c.number(f"power_vector.{k}", pv[k]) for k in ("m_d", "j0_d", "j45_d"))
    start, source = None, None
    if d.get("starting_rx") is not None:
        sr = c.mapping("starting_rx", d["starting_rx"], (*_LENS_KEYS, "source"))
        start = c.lens("starting_rx", {k: sr[k] for k in _LENS_KEYS})
        source = sr["source"]
        if source not in _START_SOURCES:
            raise c.fail("starting_rx.source", f"expected one of {', '.join(_START_SOURCES)}, got {source!r}")
    form = d.get("cylinder_form", "minus")
    if form not in ("minus", "plus"):
        raise c.fail("cylinder_form", f"expected 'minus' or 'plus', got {form!r}")
    level = c.number("credible_interval.level", ci.get("level", 0.95))
    if not 0.0 < level < 1.0:
        raise c.fail("credible_interval.level", f"expected a probability in (0, 1), got {level}")
    trials_used = c.integer("trials_used", d["trials_used"], lo=0)
    comparisons_used = c.integer("comparisons_used", d.get("comparisons_used", 0), lo=0)
    if comparisons_used > trials_used:
        raise c.fail(
            "comparisons_used", f"expected an integer in [0, trials_used = {trials_used}], got {comparisons_used!r}"
        )
    sliders_used = c.integer("sliders_used", d.get("sliders_used", 0), lo=0)
    if comparisons_used + sliders_used > trials_used:
        raise c.fail(
            "sliders_used",
            f"expected an integer in [0, trials_used - comparisons_used = "
            f"{trials_used - comparisons_used}], got {sliders_used!r}",
        )
    lines_used = c.integer("lines_used", d.get("lines_used", 0), lo=0)
    if comparisons_used + sliders_used + lines_used > trials_used:
        raise c.fail(
            "lines_used",
            f"expected an integer in [0, trials_used - comparisons_used - sliders_used = "
            f"{trials_used - comparisons_used - sliders_used}], got {lines_used!r}",
        )
    line_letters = c.integer("line_letters_used", d.get("line_letters_used", 0), lo=0)
    if (line_letters < 2 * lines_used) or (line_letters > 0 and lines_used == 0):
        raise c.fail(
            "line_letters_used", f"expected at least two letters a line ({lines_used} lines), got {line_letters!r}"
        )
    over_minus_risk = None
    if "over_minus_risk" in d:
        over_minus_risk = c.number("over_minus_risk", d["over_minus_risk"])
        if not 0.0 <= over_minus_risk <= 1.0:
            raise c.fail("over_minus_risk", f"expected a probability in [0, 1], got {over_minus_risk}")
    duration = c.number("duration_s", d["duration_s"])
    if duration < 0:
        raise c.fail("duration_s", f"expected seconds >= 0, got {duration}")
    if d["stopped_by"] not in STOPPED_BY:
        raise c.fail("stopped_by", f"expected one of {', '.join(STOPPED_BY)}, got {d['stopped_by']!r}")
    curve_raw = d["acuity_curve"]
    if not isinstance(curve_raw, list):
        raise c.fail("acuity_curve", f"expected a list of [trial_number, va_logmar], got {type(curve_raw).__name__}")
    curve = []
    for i, point in enumerate(curve_raw):
        n, va = _curve_point(c, i, point)
        if curve and n < curve[-1][0]:
            raise c.fail(f"acuity_curve[{i}]", f"trial numbers must not decrease ({n} after {curve[-1][0]})")
        curve.append((n, va))
    pm = c.mapping("posterior_map", d["posterior_map"], ("sphere_d", "cylinder_d", "va_logmar"), ("axis_deg",))
    map_axis = None if pm.get("axis_deg") is None else c.number("posterior_map.axis_deg", pm["axis_deg"])
    sphere = c.numbers("posterior_map.sphere_d", pm["sphere_d"])
    cylinder = c.numbers("posterior_map.cylinder_d", pm["cylinder_d"])
    for name, axis in (("sphere_d", sphere), ("cylinder_d", cylinder)):
        if not axis or any(b <= a for a, b in zip(axis[:-1], axis[1:], strict=True)):
            raise c.fail(f"posterior_map.{name}", "expected a non-empty, strictly increasing grid")
    rows = pm["va_logmar"]
    if not isinstance(rows, list) or len(rows) != len(sphere):
        raise c.fail("posterior_map.va_logmar", f"expected {len(sphere)} rows (one per sphere value)")
    grid = tuple(c.numbers(f"posterior_map.va_logmar[{i}]", r) for i, r in enumerate(rows))
    if any(len(r) != len(cylinder) for r in grid):
        raise c.fail("posterior_map.va_logmar", f"expected rows of {len(cylinder)} values (one per cylinder value)")
    simulated = d.get("simulated")
    if simulated is not None and not isinstance(simulated, bool):
        raise c.fail("simulated", f"expected true or false, got {simulated!r}")
    return SessionResult(
        estimate=c.lens("estimate", d["estimate"]),
        rounded=c.lens("rounded", d["rounded"]),
        sphere_interval_d=c.pair("credible_interval.sphere_d", ci["sphere_d"]),
        cylinder_interval_d=c.pair("credible_interval.cylinder_d", ci["cylinder_d"]),
        interval_level=level,
        predicted_va_logmar=c.number("predicted_va_logmar", d["predicted_va_logmar"]),
        predicted_va_interval=c.pair("predicted_va_interval", d["predicted_va_interval"]),
        trials_used=trials_used,
        duration_s=duration,
        stopped_by=d["stopped_by"],
        acuity_curve=tuple(curve),
        map_sphere_d=sphere,
        map_cylinder_d=cylinder,
        map_va_logmar=grid,
        simulated=simulated,
        raw=result,
        axis_pm_deg=axis_pm,
        region_radii_d=radii,
        power_vector=power_vector,
        starting_rx=start,
        starting_source=source,
        cylinder_form=form,
        map_axis_deg=map_axis,
        comparisons_used=comparisons_used,
        sliders_used=sliders_used,
        over_minus_risk=over_minus_risk,
        lines_used=lines_used,
        line_letters_used=line_letters,
    )


def _curve_point(c: _Checker, i: int, point: Any) -> tuple[int, float]:
    key = f"acuity_curve[{i}]"
    if not isinstance(point, (list, tuple)) or len(point) != 2:
        raise c.fail(key, f"expected [trial_number, va_logmar], got {point!r}")
    return c.integer(f"{key}[0]", point[0], lo=0, whole_float=True), c.number(f"{key}[1]", point[1])
