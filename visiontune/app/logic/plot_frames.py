"""Ready-to-draw plot data of the session view, built in the engine process (Qt-free).

The GUI thread must never spend more than a few milliseconds on one estimate, so
everything the live plots need is computed here, next to the model, and sent as small
arrays that pyqtgraph items take as they are (``setImage`` / ``setData``, no conversion,
no per-point Python objects): the acuity map as a ``float32`` image already oriented for
``ImageItem(axisOrder="row-major")`` with its rectangle, the trials split into correct and
wrong, the slider answers (the lens chosen and the knob's path, as the PDF's map marks them:
:mod:`visiontune.report.map_marks`), the credible box as a closed outline, the acuity curve with a stable y range, the
psychometric band as one closed polygon, the simulated patient's true curve, and the
estimate panel's texts. A :class:`ViewFrame` of a 21 × 21 map and 100 trials pickles to
a few kilobytes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from visiontune.app.logic.texts import EstimateTexts, estimate_texts
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import in_form
from visiontune.report.map_marks import SliderMark, axis_gap_deg, path_polyline

#: Acuity-curve y range snaps outwards to multiples of this (logMAR), so it rarely changes.
CURVE_RANGE_STEP = 0.25
#: Acuity-curve x range: ``[0, CURVE_X_STEP · ceil((n + 2) / CURVE_X_STEP)]``, at least ``[0, 10]``.
CURVE_X_STEP = 10


@dataclass(frozen=True)
class ViewFrame:
    """Everything the session view draws for one estimate, ready to draw.

    ``map_image (n_c, n_s) float32``: predicted logMAR, rows = cylinder (y), columns = sphere
    (x); ``map_rect``: ``(x, y, width, height)`` of the image in diopters (pixel centres on the
    grid), also the map plot's range; ``map_axis_deg``: the cylinder axis the map is drawn at
    (None: not known). ``correct_xy``/``wrong_xy`` ``(2, k)``: sphere and cylinder (D) of the correct and
    wrong trials. ``slider_xy (2, k)``: the lenses chosen on sliders; ``slider_path_xy (2, m)``:
    their knobs' paths, one line broken by NaN columns (``connect="finite"``). ``best_lens (2,)``: sphere, cylinder (D).
    ``region_xy (2, 5)``: the credible box as a closed outline (``(2, 0)`` without a region). ``curve_xy (2, m)``:
    answers and predicted logMAR at the estimate; ``curve_x_range``/``curve_y_range``: its axes' ranges.
    ``psychometric_s (q,)`` logMAR, ``psychometric_p (q,)`` the model's P(correct),
    ``band_xy (2, 2q + 1)``: the closed outline of the credible band, ``true_p (q,)`` the
    simulated patient's P(correct) (None for a real patient). ``texts``: the panel's lines.
    ``progress``: how close the precision stop is, in [0, 1].
    """

    map_image: np.ndarray
    map_rect: tuple[float, float, float, float]
    correct_xy: np.ndarray
    wrong_xy: np.ndarray
    best_lens: np.ndarray
    region_xy: np.ndarray
    curve_xy: np.ndarray
    curve_x_range: tuple[float, float]
    curve_y_range: tuple[float, float]
    psychometric_s: np.ndarray
    psychometric_p: np.ndarray
    band_xy: np.ndarray
    true_p: np.ndarray | None
    texts: EstimateTexts
    map_axis_deg: float | None = None
    progress: float = 0.0
    slider_xy: np.ndarray = dataclasses.field(default_factory=lambda: np.empty((2, 0)))
    slider_path_xy: np.ndarray = dataclasses.field(default_factory=lambda: np.empty((2, 0)))


def map_image(acuity_map: dict) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """``(image (n_c, n_s) float32, (x, y, w, h))`` from an
    :meth:`~visiontune.refraction.loop.Refraction.acuity_map` dict (rows: sphere): the transpose, and the rectangle
    whose cells are centred on the grid."""
    sphere = np.asarray(acuity_map["sphere_d"], dtype=float)
    cylinder = np.asarray(acuity_map["cylinder_d"], dtype=float)
    va = np.asarray(acuity_map["va_logmar"], dtype=float)
    if sphere.ndim != 1 or cylinder.ndim != 1 or len(sphere) < 2 or len(cylinder) < 2:
        raise InvalidInputError("acuity_map: sphere_d and cylinder_d must be 1-D grids of at least 2 points")
    if va.shape != (len(sphere), len(cylinder)):
        raise InvalidInputError(f"acuity_map: va_logmar has shape {va.shape}, expected {(len(sphere), len(cylinder))}")
    ds, dc = sphere[1] - sphere[0], cylinder[1] - cylinder[0]
    rect = (float(sphere[0] - ds / 2), float(cylinder[0] - dc / 2), float(ds * len(sphere)), float(dc * len(cylinder)))
    return np.ascontiguousarray(va.T, dtype=np.float32), rect


def lens_on_map(lens: Prescription, axis_deg: float | None, cylinder_form: str) -> Prescription:
    """``lens`` in the coordinates of an acuity map drawn at ``axis_deg``: as it is when its
    axis is the map's (a fixed-axis GP map has signed cylinders at its axis), transposed when
    its axis is the map's + 90°, else (another axis, or no cylinder) in ``cylinder_form``."""
    if axis_deg is not None and abs(lens.cylinder_d) > 1e-9:
        gap = axis_gap_deg(lens.axis_deg, axis_deg)
        if gap < 0.5:
            return lens
        if gap > 89.5:
            return lens.transposed()
    return in_form(lens, cylinder_form)


def snapped_range(values, step: float = CURVE_RANGE_STEP, minimum_span: float = 0.5) -> tuple[float, float]:
    """``[step · floor(min / step), step · ceil(max / step)]`` widened to ``minimum_span``: an
    axis range that covers ``values`` and changes only when they cross a multiple of ``step``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise InvalidInputError("values: expected at least one finite value")
    if not step > 0 or not minimum_span > 0:
        raise InvalidInputError(f"step, minimum_span: must be positive, got {step}, {minimum_span}")
    vmin, vmax = float(v.min()), float(v.max())
    lo, hi = step * math.floor(vmin / step), step * math.ceil(vmax / step)
    lo -= step if lo > vmin else 0.0  # the division rounded up to a multiple: one step more
    hi += step if hi < vmax else 0.0
    if hi - lo < minimum_span:
        mid = step * round((lo + hi) / 2 / step)
        lo, hi = mid - minimum_span / 2, mid + minimum_span / 2
    return float(lo), float(hi)


def curve_x_range(n_trials: int, step: int = CURVE_X_STEP) -> tuple[float, float]:
    """``(0, step · ceil((n + 2) / step))``, at least ``(0, 10)``: room for the next answers."""
    return 0.0, float(max(10, step * math.ceil((int(n_trials) + 2) / step)))


def band_outline(s, lo, hi) -> np.ndarray:
    """``(2, 2q + 1)`` closed polygon of the band between ``lo (q,)`` and ``hi (q,)`` over ``s (q,)``:
    along ``lo`` forwards, back along ``hi``, back to the start."""
    s, lo, hi = (np.asarray(a, dtype=float) for a in (s, lo, hi))
    if not (s.ndim == 1 and s.shape == lo.shape == hi.shape and len(s) >= 2):
        raise InvalidInputError(
            f"s, lo, hi: expected three 1-D arrays of one length >= 2, got {s.shape}, {lo.shape}, {hi.shape}"
        )
    x = np.concatenate([s, s[::-1], s[:1]])
    y = np.concatenate([lo, hi[::-1], lo[:1]])
    return np.vstack([x, y])


def box_outline(region) -> np.ndarray:
    """``(2, 5)`` closed outline of a credible region's sphere × cylinder box; ``(2, 0)`` for None."""
    if region is None:
        return np.empty((2, 0))
    (a, b), (c, d) = region.sphere_d, region.cylinder_d
    return np.array([[a, b, b, a, a], [c, c, d, d, c]], dtype=float)


def build_view_frame(
    *,
    estimate,
    acuity_map: dict,
    trials: np.ndarray,
    curve,
    psychometric,
    chart_range,
    true_p=None,
    progress: float = 0.0,
    progress_line: str = "",
    sliders: tuple[SliderMark, ...] = (),
) -> ViewFrame:
    """The :class:`ViewFrame` of one estimate.

    ``estimate``: :class:`~visiontune.refraction.estimate.CurrentEstimate`; ``acuity_map``:
    the :meth:`~visiontune.refraction.loop.Refraction.acuity_map` dict; ``trials (n, 3)``:
    sphere, cylinder (D), answer (1/0); ``curve``: ``(answers, logMAR)`` pairs;
    ``psychometric``: ``(s, p, lo, hi)`` of :meth:`~visiontune.refraction.loop.Refraction.psychometric`;
    ``chart_range``: the protocol's logMAR range; ``true_p (q,)``: the simulated patient's
    curve at ``s`` or None; ``progress`` in [0, 1] and its ``progress_line`` (texts);
    ``sliders``: the slider answers' marks (:func:`~visiontune.report.map_marks.slider_marks`
    at the map's axis, the rule of the PDF's map).
    """
    trials = np.asarray(trials, dtype=float).reshape(-1, 3)
    correct = trials[:, 2] > 0.5
    image, rect = map_image(acuity_map)
    curve_xy = np.array(curve, dtype=float).reshape(-1, 2).T
    n = int(curve_xy[0].max()) if curve_xy.shape[1] else len(trials)
    s, p, lo, hi = (np.asarray(a, dtype=float) for a in psychometric)
    axis = acuity_map.get("axis_deg")
    best = lens_on_map(estimate.lens, axis, "plus" if estimate.lens.cylinder_d > 0 else "minus")
    return ViewFrame(
        map_image=image,
        map_rect=rect,
        correct_xy=np.ascontiguousarray(trials[correct, :2].T),
        wrong_xy=np.ascontiguousarray(trials[~correct, :2].T),
        best_lens=np.array([best.sphere_d, best.cylinder_d], dtype=float),
        region_xy=box_outline(estimate.region),
        curve_xy=curve_xy,
        curve_x_range=curve_x_range(n),
        curve_y_range=snapped_range(curve_xy[1]) if curve_xy.shape[1] else snapped_range([estimate.va_logmar]),
        psychometric_s=s,
        psychometric_p=p,
        band_xy=band_outline(s, lo, hi),
        true_p=None if true_p is None else np.asarray(true_p, dtype=float),
        texts=estimate_texts(
            estimate, None if chart_range is None else (float(chart_range[0]), float(chart_range[1])), progress_line
        ),
        map_axis_deg=None if axis is None else float(axis),
        progress=float(min(max(progress, 0.0), 1.0)),
        slider_xy=np.array([m.chosen for m in sliders], dtype=float).reshape(-1, 2).T,
        slider_path_xy=path_polyline(sliders),
    )
