"""The session page of an optics-model session started from a typed prescription: the lens in
the chosen cylinder form, the start, the estimate with its credible region, progress and stop
reason; lenses stay near the current estimate (the protocol's ``max_step_d``); plot axes carry
units without SI prefixes; the map takes the engine's extents; simulated is said everywhere."""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import Qt

from visiontune.app.logic.keys import Phase
from visiontune.app.logic.settings import load_settings
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.session.store import TrialStore

PROTOCOL = "clinical-sloan"
TYPED = Prescription(-2.0, -1.0, 30.0)
#: Rounding a lens to the trial set moves it by at most this much (power-vector distance, D):
#: half a 0.25 D step on M, half a step on the cylinder and half an axis step on J.
ROUNDING_D = 0.2
LENS_RE = r"S (?:[+\u2212]\d+\.\d\d|plano)(?: / C [+\u2212]\d+\.\d\d \u00d7 \d{3}| DS)"


def distance(a: Prescription, b: Prescription) -> float:
    return float(np.linalg.norm(a.power_vector_array() - b.power_vector_array()))


def start_typed(qtbot, window, form="minus", patient="SIM-TYPED"):
    """Type S −2.00 / C −1.00 × 30 from an autorefraction; collect every estimate by answers."""
    view = window.start_view
    view.patient_id.setText(patient)
    view.sphere.setText("-2.00")
    view.cylinder.setText("-1.00")
    view.axis.setText("30")
    view.start_source.setCurrentIndex(view.start_source.findData("autorefraction"))
    view.cylinder_form.setCurrentIndex(view.cylinder_form.findData(form))
    estimates = {}
    window.worker.estimate_ready.connect(lambda v: estimates.__setitem__(v.n_trials, v))
    qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and 0 in estimates, timeout=60_000)
    return estimates


def answer_once(qtbot, window):
    n = window.snapshot.n_trials
    qtbot.keyClick(window.session_view, Qt.Key.Key_Return)  # lens set: the letter shows
    qtbot.keyClick(window.session_view, Qt.Key.Key_Return)  # the simulated patient's answer
    qtbot.waitUntil(
        lambda: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.n_trials == n + 1, timeout=60_000
    )


def test_first_lenses_start_from_the_typed_prescription_within_max_step(qtbot, make_window, paths):
    """Each of the first three lenses lies within ``max_step_d`` (plus trial-lens rounding) of
    the estimate shown when it was proposed; before any answer that estimate is the typed
    start (same cylinder and axis; M moved toward plus by the accommodation-aware estimate), so
    the first lens is within ``max_step_d`` + that shift of what the clinician typed. Lenses
    turn their axis in 5° steps from the typed 30°."""
    max_step = load_protocol(PROTOCOL).search_space.max_step_d
    window = make_window(protocol=PROTOCOL)
    estimates = start_typed(qtbot, window)
    view = window.session_view
    assert view.start_line.text().startswith(
        "Starting prescription: S \u22122.00 / C \u22121.00 \u00d7 030 (autorefraction"
    )
    est0 = estimates[0].estimate.lens
    assert distance(est0, TYPED) <= 0.5
    np.testing.assert_allclose(est0.power_vector_array()[1:], TYPED.power_vector_array()[1:], atol=0.05)
    lenses = []
    for k in range(3):
        qtbot.waitUntil(lambda k=k: k in estimates, timeout=60_000)
        lens = window.snapshot.query.lens
        assert re.fullmatch(LENS_RE, view.lens.text()) and view.lens.text().endswith(
            f"\u00d7 {round(lens.axis_deg):03d}"
        )
        assert lens.cylinder_d <= 0  # minus-cylinder form, the default
        assert distance(lens, estimates[k].estimate.lens) <= max_step + ROUNDING_D, (
            k,
            lens,
            estimates[k].estimate.lens,
        )
        assert (lens.axis_deg - 30.0) % 5.0 == 0.0 and abs((lens.axis_deg - 30.0 + 90.0) % 180.0 - 90.0) <= 15.0
        lenses.append(lens)
        answer_once(qtbot, window)
    assert distance(lenses[0], TYPED) <= max_step + distance(est0, TYPED) + ROUNDING_D
    with TrialStore.open(paths["db"]) as store:
        info = store.get_session(window.snapshot.session_id)
        stored = [
            Prescription(t.lens.sphere_d, t.lens.cylinder_d, t.lens.axis_deg or 180.0)
            for t in store.trials(info.session_id)
        ]
    assert info.starting_rx["rx"] == {"sphere_d": -2.0, "cylinder_d": -1.0, "axis_deg": 30.0}
    assert info.starting_rx["source"] == "autorefraction" and info.simulated
    assert all(a.is_equivalent(b) for a, b in zip(stored, lenses))  # the lenses shown are the ones logged

    # the panel: estimate with its region (± on sphere, cylinder, axis), progress, stop reason
    qtbot.waitUntil(lambda: window.last_estimate is not None and window.last_estimate.n_trials == 3, timeout=60_000)
    assert re.match(r"Best lens now: " + LENS_RE, view.estimate.text())
    assert re.match(
        r"95% credible region: S \u00b1\d\.\d\d / C \u00b1\d\.\d\d / axis \u00b1\d+\u00b0", view.interval.text()
    )
    assert view.precision.text().startswith("Precision stop (\u00b10.25 D on M and \u00b10.25 D on J): ")
    assert view.precision_bar.value() == round(100 * window.last_estimate.progress)
    assert view.stop.text() == "Stopping rule: not met yet"
    # simulated, said on the page, in the title and on the patient's curve
    assert view.banner.isVisible() and "SIMULATED" in view.banner.text() and "SIMULATED" in view.header.text()
    assert "SIMULATED" in window.windowTitle()
    assert view.psychometric_plot.truth.name() == "simulated patient"


def test_plus_cylinder_setting_shows_positive_cylinders_and_persists(qtbot, make_window, paths):
    window = make_window(protocol=PROTOCOL)
    estimates = start_typed(qtbot, window, form="plus", patient="SIM-PLUS")
    view = window.session_view
    # the typed start, transposed: S −3.00 / C +1.00 × 120
    assert "S \u22123.00 / C +1.00 \u00d7 120 (autorefraction" in view.start_line.text()
    assert "plus-cylinder form" in view.start_line.text()
    for k in range(3):
        qtbot.waitUntil(
            lambda k=k: window.last_estimate is not None and window.last_estimate.n_trials == k, timeout=60_000
        )
        lens = window.snapshot.query.lens
        assert lens.cylinder_d >= 0 and re.search(r"C (\+\d\.\d\d|0\.00) \u00d7", view.lens.text()), view.lens.text()
        assert estimates[k].estimate.lens.cylinder_d >= 0 and "C +" in view.estimate.text()
        answer_once(qtbot, window)
    with TrialStore.open(paths["db"]) as store:
        trials = store.trials(window.snapshot.session_id)
        assert all(t.lens.cylinder_d >= 0 for t in trials)
    # a setting: saved, and the next window starts with it
    assert load_settings(paths["settings"]).cylinder_form == "plus"
    again = make_window(protocol=PROTOCOL)
    assert again.start_view.cylinder_form_name() == "plus"


def test_plot_axes_have_units_no_si_prefix_and_the_map_takes_the_engines_extents(qtbot, make_window):
    window = make_window(protocol=PROTOCOL)
    estimates = start_typed(qtbot, window, patient="SIM-PLOTS")
    answer_once(qtbot, window)
    view = window.session_view
    qtbot.waitUntil(
        lambda: 1 in estimates and window.last_estimate is estimates[1] and not view.plots_pending, timeout=60_000
    )
    labels = {}
    for plot in (view.map_plot.plot, view.curve_plot.getPlotItem(), view.psychometric_plot.getPlotItem()):
        for side in ("bottom", "left"):
            axis = plot.getAxis(side)
            assert axis.autoSIPrefix is False and axis.autoSIPrefixScale == 1.0
            labels[axis.labelText] = axis
    amap = estimates[1].acuity_map
    at_axis = f"cylinder (D) at axis {round(amap['axis_deg']) % 180 or 180}\u00b0"  # the axis the map is drawn at
    assert {
        "sphere (D)",
        at_axis,
        "answers (count)",
        "predicted acuity (logMAR)",
        "letter size (logMAR)",
        "P(correct)",
    } == set(labels)
    # a letter-size range of a thousandth of a logMAR still reads in logMAR, no "(x0.001)" or "m"
    axis = labels["letter size (logMAR)"]
    view.psychometric_plot.getPlotItem().setXRange(0.0, 0.001, padding=0)
    axis.updateAutoSIPrefix()
    assert (
        axis.labelString().count("logMAR") == 1 and "0.001" not in axis.labelString() and "(m" not in axis.labelString()
    )
    # the map plot's range is the grid the engine returned (cells centred on it)
    (x0, x1), (y0, y1) = view.map_plot.plot.getViewBox().viewRange()
    s, c = np.asarray(amap["sphere_d"]), np.asarray(amap["cylinder_d"])
    ds, dc = s[1] - s[0], c[1] - c[0]
    assert x0 <= s[0] - ds / 2 + 1e-9 and x1 >= s[-1] + ds / 2 - 1e-9 and x1 - x0 <= 1.1 * (s[-1] - s[0] + ds)
    assert y0 <= c[0] - dc / 2 + 1e-9 and y1 >= c[-1] + dc / 2 - 1e-9 and y1 - y0 <= 1.1 * (c[-1] - c[0] + dc)


def test_the_screenshot_script_saves_the_first_three_lenses(qtbot, tmp_path):
    """``python -m visiontune.app.screenshots`` (the docs' pictures) still runs: three window-sized PNGs."""
    from PySide6.QtGui import QImage

    from visiontune.app.screenshots import take

    paths = take(tmp_path, settle_s=0.1)
    lenses = [p.name for p in paths if not p.stem.endswith("-line")]
    assert lenses == [f"first-three-lenses-{k}.png" for k in (1, 2, 3)]  # and a chart line read, where one is
    assert all(p.name.startswith("first-three-lenses-") for p in paths)
    for p in paths:
        image = QImage(str(p))
        assert (image.width(), image.height()) == (1280, 860)
