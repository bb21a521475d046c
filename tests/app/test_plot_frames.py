"""The ready-to-draw plot data built in the engine process (Qt-free).

Oracles: the acuity-map dict read element by element (orientation), the grid points as pixel
centres (the image rectangle), the shoelace area of the band polygon against the trapezoid
integral of ``hi - lo``, the definition of the snapped range (covers the values, multiples of
the step), the app's own simulated patient (true curve), and the old formatting of the panel."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.app.logic.plot_frames import (
    ViewFrame,
    band_outline,
    box_outline,
    build_view_frame,
    curve_x_range,
    map_image,
    snapped_range,
)
from visiontune.app.logic.texts import (
    acuity_text,
    estimate_texts,
    lens_text,
    progress_text,
    region_text,
    start_text,
    stop_text,
)
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.estimate import CurrentEstimate, Region
from visiontune.refraction.protocol import Precision
from visiontune.refraction.start import StartingPoint
from visiontune.report.map_marks import SliderMark, path_polyline


def grid_map(n_s=5, n_c=4):
    sphere = np.linspace(-4.0, 4.0, n_s)
    cylinder = np.linspace(-3.0, 1.5, n_c)
    va = (0.1 * sphere[:, None] - 0.01 * cylinder[None, :] ** 2).tolist()  # rows: sphere
    return {"sphere_d": sphere.tolist(), "cylinder_d": cylinder.tolist(), "va_logmar": va}


def current_estimate(region=True, va=0.31):
    r = Region(0.95, (-1.5, 0.25), (-0.75, 1.0), 12.4, 0.3, 0.2, 0.4) if region else None
    lens = Prescription(-0.98, 1.61, 90.0)
    return CurrentEstimate(12, lens, lens.rounded(), r, va, (-1.0, 2.0))


def test_map_image_rows_are_cylinder_and_cells_are_centred_on_the_grid():
    m = grid_map()
    image, (x, y, w, h) = map_image(m)
    assert image.dtype == np.float32 and image.shape == (4, 5) and image.flags.c_contiguous
    for i in range(len(m["sphere_d"])):
        for j in range(len(m["cylinder_d"])):
            assert image[j, i] == pytest.approx(m["va_logmar"][i][j], abs=1e-6)
    # pixel (row j, column i) of the rectangle has its centre on (sphere i, cylinder j)
    np.testing.assert_allclose(x + (np.arange(5) + 0.5) * w / 5, m["sphere_d"])
    np.testing.assert_allclose(y + (np.arange(4) + 0.5) * h / 4, m["cylinder_d"])


def test_map_image_refuses_a_map_of_the_wrong_shape():
    m = grid_map()
    m["va_logmar"] = np.zeros((4, 5)).tolist()  # transposed
    with pytest.raises(InvalidInputError, match="acuity_map"):
        map_image(m)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-3.0, 3.0), min_size=1, max_size=40), st.sampled_from([0.1, 0.25, 0.5]))
def test_snapped_range_covers_the_values_on_multiples_of_the_step(values, step):
    lo, hi = snapped_range(values, step=step, minimum_span=0.5)
    assert lo <= min(values) + 1e-12 and hi >= max(values) - 1e-12
    assert hi - lo >= 0.5 - 1e-12
    for bound in (lo, hi):
        assert abs(bound / step - round(bound / step)) < 1e-6 or hi - lo == pytest.approx(0.5)
    # tight: shrinking either end by a step would leave a value outside (unless widened to the span)
    if hi - lo > 0.5 + 1e-9:
        assert lo + step > min(values) - 1e-9 and hi - step < max(values) + 1e-9


def test_snapped_range_moves_only_when_a_multiple_of_the_step_is_crossed():
    assert snapped_range([0.12, 0.31]) == snapped_range([0.03, 0.49]) == (0.0, 0.5)
    assert snapped_range([0.12, 0.51]) == (0.0, 0.75)
    assert snapped_range([-1.0, 0.35]) == (-1.0, 0.5)


def test_snapped_range_refuses_no_or_non_finite_values():
    with pytest.raises(InvalidInputError, match="values"):
        snapped_range([])
    with pytest.raises(InvalidInputError, match="values"):
        snapped_range([0.1, np.nan])


def test_curve_x_range_leaves_room_and_grows_in_steps_of_ten():
    assert [curve_x_range(n) for n in (0, 1, 8, 9, 18, 28, 29)] == [
        (0.0, 10.0),
        (0.0, 10.0),
        (0.0, 10.0),
        (0.0, 20.0),
        (0.0, 20.0),
        (0.0, 30.0),
        (0.0, 40.0),
    ]


def shoelace(x, y):
    return 0.5 * abs(np.dot(x[:-1], y[1:]) - np.dot(x[1:], y[:-1]))


def test_band_outline_is_closed_and_encloses_the_area_between_the_curves():
    s = np.linspace(-1.0, 2.0, 61)
    lo = 0.5 * (1 + np.tanh(2 * s)) * 0.8
    hi = np.minimum(lo + 0.1 + 0.05 * np.cos(s), 1.0)
    xy = band_outline(s, lo, hi)
    assert xy.shape == (2, 2 * 61 + 1)
    np.testing.assert_array_equal(xy[:, 0], xy[:, -1])
    area = np.sum((hi - lo)[1:] + (hi - lo)[:-1]) / 2 * (s[1] - s[0])  # trapezoid rule
    assert shoelace(*xy) == pytest.approx(area, rel=1e-12)


def test_band_outline_refuses_arrays_of_different_lengths():
    with pytest.raises(InvalidInputError, match="s, lo, hi"):
        band_outline([0, 1, 2], [0, 1], [1, 2, 3])


def test_box_outline_is_the_closed_credible_box():
    xy = box_outline(current_estimate().region)
    np.testing.assert_array_equal(xy, [[-1.5, 0.25, 0.25, -1.5, -1.5], [-0.75, -0.75, 1.0, 1.0, -0.75]])
    assert shoelace(*xy) == pytest.approx(1.75 * 1.75)
    assert box_outline(None).shape == (2, 0)


def frame_for(trials, region=True, true_p=None):
    s = np.linspace(-1.0, 2.0, 7)
    p = np.linspace(0.1, 0.9, 7)
    return build_view_frame(
        estimate=current_estimate(region),
        acuity_map=grid_map(),
        trials=trials,
        curve=((1, 0.8), (2, 0.55), (3, 0.31)),
        psychometric=(s, p, p - 0.05, p + 0.05),
        chart_range=(-1.0, 2.0),
        true_p=true_p,
    )


def test_view_frame_splits_the_trials_and_carries_the_estimate():
    trials = np.array([[1.0, -1.0, 1.0], [0.5, 0.25, 0.0], [-2.0, 3.0, 1.0]])
    f = frame_for(trials)
    np.testing.assert_array_equal(f.correct_xy, [[1.0, -2.0], [-1.0, 3.0]])
    np.testing.assert_array_equal(f.wrong_xy, [[0.5], [0.25]])
    np.testing.assert_array_equal(f.best_lens, [-0.98, 1.61])
    np.testing.assert_array_equal(f.curve_xy, [[1, 2, 3], [0.8, 0.55, 0.31]])
    assert f.curve_x_range == (0.0, 10.0) and f.curve_y_range == (0.25, 1.0)
    assert f.region_xy.shape == (2, 5) and f.true_p is None
    assert frame_for(trials, region=False).region_xy.shape == (2, 0)
    # empty categories are (2, 0) arrays pyqtgraph takes as they are
    assert frame_for(trials[:0]).correct_xy.shape == (2, 0) and frame_for(trials[:0]).wrong_xy.shape == (2, 0)


def test_a_view_frame_of_a_realistic_session_pickles_to_a_few_kilobytes():
    rng = np.random.default_rng(0)
    trials = np.column_stack([rng.uniform(-4, 4, (100, 2)), rng.integers(0, 2, 100)])
    m = {
        "sphere_d": np.linspace(-4, 4, 21).tolist(),
        "cylinder_d": np.linspace(-4, 4, 21).tolist(),
        "va_logmar": rng.uniform(-0.1, 1.3, (21, 21)).tolist(),
    }
    s = np.linspace(-1.0, 2.0, 61)
    f = build_view_frame(
        estimate=current_estimate(),
        acuity_map=m,
        trials=trials,
        curve=tuple((i, 0.3) for i in range(1, 101)),
        psychometric=(s, s * 0, s * 0, s * 0 + 1),
        chart_range=(-1.0, 2.0),
        true_p=s * 0,
    )
    assert isinstance(f, ViewFrame)
    assert len(pickle.dumps(f, protocol=pickle.HIGHEST_PROTOCOL)) < 16 * 1024


def test_estimate_texts_are_the_panel_lines():
    t = estimate_texts(current_estimate(), (-1.0, 2.0), "Precision stop: 40%")
    # the trial lens to file, never the exact estimate (S −0.98 / C +1.61, off the 0.25 D steps)
    assert t.best_lens == "Best lens now: S \u22121.00 / C +1.50 \u00d7 090"
    # the region as a clinician reads it: half-widths of the intervals, the axis ± in whole degrees
    assert t.interval == (
        "95% credible region: S \u00b10.88 / C \u00b10.88 / axis \u00b112\u00b0\n"
        "(sphere \u22121.50 to +0.25 D, cylinder \u22120.75 to +1.00 D)"
    )
    assert t.progress == "Precision stop: 40%"
    assert t.acuity == "Predicted acuity through it: +0.31 logMAR (20/41); interval \u22121.00 to +2.00"
    assert estimate_texts(current_estimate(region=False), None).interval == ""
    # at the edge of the chart the acuity is a bound, and said so
    edge = estimate_texts(current_estimate(va=-1.0), (-1.0, 2.0)).acuity
    assert "\u22121.00 logMAR or better (the smallest letter of the chart)" in edge


def test_lens_and_acuity_texts():
    assert lens_text(Prescription(-1.25, -0.5, 180.0)) == "S \u22121.25 / C \u22120.50 \u00d7 180"
    assert acuity_text(0.3) == "+0.30 logMAR (20/40)"
    assert acuity_text(2.0, (-1.0, 2.0)).startswith("+2.00 logMAR or worse")


def test_region_text_reads_sphere_cylinder_and_axis_pm():
    region = Region(0.95, (-2.30, -1.80), (-1.25, -0.75), 7.6, 0.2, 0.15, 0.3)
    assert region_text(region) == "S \u00b10.25 / C \u00b10.25 / axis \u00b18\u00b0"
    assert region_text(region.to_dict()) == region_text(region)  # a stored result's credible_interval
    # no axis ± without one, or for a lens without cylinder
    assert region_text({**region.to_dict(), "axis_pm_deg": None}) == "S \u00b10.25 / C \u00b10.25"
    assert region_text(region, Prescription(-2.0, 0.0, 180.0)) == "S \u00b10.25 / C \u00b10.25"


def test_lens_text_shows_the_axis_in_three_whole_degrees_in_1_to_180():
    assert lens_text(Prescription(-2.0, -1.0, 29.6)) == "S \u22122.00 / C \u22121.00 \u00d7 030 (not a trial lens)"
    assert (
        lens_text(Prescription(-2.0, -1.0, 0.3), "estimate")
        == "S \u22122.00 / C \u22121.00 \u00d7 180 (estimate, not a trial lens)"
    )
    assert lens_text(Prescription(0.0, 0.75, 5.0)) == "S plano / C +0.75 \u00d7 005"


def test_start_and_stop_texts():
    start = StartingPoint(Prescription(-2.0, -1.0, 30.0), "spectacles", 45.0)
    assert start_text(start) == "S \u22122.00 / C \u22121.00 \u00d7 030 (habitual spectacles, age 45)"
    assert start_text(start, "plus") == "S \u22123.00 / C +1.00 \u00d7 120 (habitual spectacles, age 45)"
    assert start_text(StartingPoint()) == "none"
    assert stop_text(None) == "Stopping rule: not met yet"
    assert stop_text("precision").startswith("Stopping rule met: precision (")
    # before any answer (the optics model's prior) the estimate says so
    est = current_estimate()
    assert estimate_texts(CurrentEstimate(0, est.lens, est.rounded, None, 0.3, (0.1, 0.5)), None).best_lens.startswith(
        "Best lens before any answer"
    )


def test_progress_text_names_the_stop_it_measures():
    optics = Precision(m_d=0.25, cylinder_vector_d=0.25)
    assert progress_text(0.404, optics) == "Precision stop (\u00b10.25 D on M and \u00b10.25 D on J): 40%"
    assert progress_text(1.7, optics).endswith(": 100%")
    waits = progress_text(0.8, optics, waits_for_sensitivity=True)
    assert waits == (
        "Precision stop (\u00b10.25 D on M and \u00b10.25 D on J, the patient's sensitivity to 1-or-2 "
        "comparisons learned): 80%"
    )
    assert progress_text(0.5, None).startswith("Budget used: 50%")
    young = progress_text(
        0.3, Precision(m_d=0.25, cylinder_vector_d=0.25, over_minus_risk=0.001), waits_for_over_minus=True
    )
    assert (
        young
        == "Precision stop (\u00b10.25 D on M and \u00b10.25 D on J, over 0.25 D too minus at most 0.1% likely): 30%"
    )
    filed = Precision(m_d=0.25, cylinder_vector_d=0.25, over_minus_risk=0.01, filed_within_probability=0.85)
    assert progress_text(0.6, filed, waits_for_over_minus=True) == (
        "Precision stop (the lens to file within 0.25 D, 85% likely, over 0.25 D too minus at most 1% likely): 60%"
    )


def test_the_map_frame_says_its_axis_and_puts_the_best_lens_in_the_maps_coordinates():
    """A fixed-axis GP map (axis 90, signed cylinders): a minus-cylinder estimate at 180 is
    the same lens transposed onto the map's axis."""
    gp_map = {**grid_map(), "axis_deg": 90.0}
    s = np.linspace(-1.0, 2.0, 7)
    est = CurrentEstimate(3, Prescription(0.5, -1.5, 180.0), Prescription(0.5, -1.5, 180.0), None, 0.2, (0.1, 0.3))
    f = build_view_frame(
        estimate=est,
        acuity_map=gp_map,
        trials=np.zeros((0, 3)),
        curve=((1, 0.2),),
        psychometric=(s, s * 0, s * 0, s * 0),
        chart_range=(-1.0, 2.0),
        progress=0.3,
    )
    assert f.map_axis_deg == 90.0 and f.progress == 0.3
    np.testing.assert_allclose(f.best_lens, [-1.0, 1.5])
    assert frame_for(np.zeros((0, 3))).map_axis_deg is None


def test_view_frame_carries_the_slider_marks():
    marks = (
        SliderMark("sphere", (-1.0, -0.5), ((-1.5, -0.5), (-1.0, -0.5), (-0.5, -0.5))),
        SliderMark("cylinder", (0.25, -1.0), ((0.25, -1.5), (0.25, -1.0)), void=True),
    )
    s = np.linspace(-1.0, 2.0, 7)
    f = build_view_frame(
        estimate=current_estimate(),
        acuity_map=grid_map(),
        trials=np.zeros((0, 3)),
        curve=((1, 0.3),),
        psychometric=(s, s * 0, s * 0, s * 0 + 1),
        chart_range=(-1.0, 2.0),
        sliders=marks,
    )
    np.testing.assert_array_equal(f.slider_xy, [[-1.0, 0.25], [-0.5, -1.0]])
    np.testing.assert_array_equal(
        f.slider_path_xy,
        [[-1.5, -1.0, -0.5, np.nan, 0.25, 0.25, np.nan], [-0.5, -0.5, -0.5, np.nan, -1.5, -1.0, np.nan]],
    )
    none = frame_for(np.zeros((0, 3)))
    assert none.slider_xy.shape == (2, 0) and none.slider_path_xy.shape == (2, 0)


SLIDER_PROTOCOL = Path(__file__).resolve().parent.parent / "protocols" / "sloan-compare-sliders.toml"


def test_the_live_map_and_the_pdf_map_mark_the_same_sliders(tmp_path, qapp, monkeypatch):
    """A SIMULATED app session with letters, comparisons and sliders, finished after 30 answers:
    the last live frame marks the letters (read or not) and the sliders where the PDF's map of the
    finished session marks them
    (the chosen lens and the path of every valid slider in the map's plane), and the live map's
    items hold them. At the protocol's own change time (0 s): priced at a lens device's, this
    protocol asks no slider."""
    from visiontune.app.logic.session_host import SessionHost, record_simulated_session
    from visiontune.app.logic.worker_values import EstimateView
    from visiontune.app.plots import AcuityMapPlot
    from visiontune.report import load_session
    from visiontune.report.figures import letters_on_map, sliders_on_map
    from visiontune.session.store import TrialStore

    monkeypatch.setattr(SessionHost, "_manual_kind_protocol", lambda _self, protocol: protocol)
    db = tmp_path / "log.sqlite3"
    events = record_simulated_session(db, str(SLIDER_PROTOCOL), 30, seed=3)
    frame = [e.value for e in events if isinstance(e.value, EstimateView)][-1].frame
    with TrialStore.open(db) as store:
        record = load_session(store, 1)
    assert record.simulated and record.result.sliders_used >= 2
    assert frame.map_axis_deg == record.result.map_axis_deg
    marks = sliders_on_map(record.valid_trials, record.result.map_axis_deg)
    assert len(marks) >= 2
    np.testing.assert_array_equal(frame.slider_xy, np.array([m.chosen for m in marks]).T)
    np.testing.assert_array_equal(frame.slider_path_xy, path_polyline(marks))
    chosen = [t for t in record.valid_trials if t.slider_choice is not None]
    assert {(t.lens.sphere_d, t.lens.cylinder_d) for t in chosen} >= {m.chosen for m in marks}
    assert len(marks) < len(chosen)  # this session also has sliders 15 degrees off the map's axis: on neither map
    letters = letters_on_map(record.valid_trials, record.result.map_axis_deg)
    for xy, read in ((frame.correct_xy, True), (frame.wrong_xy, False)):
        np.testing.assert_array_equal(xy, np.array([m.at for m in letters if m.correct is read]).reshape(-1, 2).T)
    live = AcuityMapPlot()
    live.update_frame(frame)
    np.testing.assert_array_equal(np.vstack(live.sliders.getData()), frame.slider_xy)
    np.testing.assert_array_equal(np.vstack(live.slider_paths.getData()), frame.slider_path_xy)
