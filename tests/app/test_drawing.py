"""The GUI side of a responsive window: estimates are drawn cheaply, in place, and as they arrive.

A real simulated session's event stream (recorded once with an in-process SessionHost) is fed
to a MainWindow through the worker's signals, as the relay does. Oracles: the frame's own
arrays read back from the pyqtgraph items, the app's simulated patient built independently
from the snapshot (the true curve), Qt's resize events (none on the plots mid-session), call
counts (one draw per plot for a burst of estimates)."""

from __future__ import annotations

import numpy as np
import pytest
from app_helpers import write_protocol
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QGraphicsItem

from visiontune.app.logic.messages import (
    Busy,
    EstimateReady,
    Failed,
    Finished,
    Idle,
    Opened,
    Recorded,
    SessionsListed,
    Updated,
)
from visiontune.app.logic.session_host import record_simulated_session
from visiontune.app.logic.simulation import case_patient
from visiontune.app.logic.worker_values import EstimateView, Snapshot

#: The engine events fed to the window through the worker's dispatch on their type (Idle: its signal at once).
FED = (SessionsListed, Opened, Updated, Recorded, EstimateReady, Finished, Failed, Busy)


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay")
    protocol = write_protocol(folder, max_trials=40)
    return record_simulated_session(folder / "replay.sqlite3", str(protocol), 8, seed=5, finish=False)


def feed(qtbot, window, events, upto=None):
    """Emit the events as the relay would, letting the event loop run after each."""
    for event in events[:upto]:
        if isinstance(event, FED):
            window.worker.signal_of[type(event)](event)
        elif isinstance(event, Idle):
            window.worker.idle.emit()
        qtbot.wait(2)
    qtbot.waitUntil(lambda: not window.render_timer.isActive() and not window.session_view.plots_pending, timeout=5_000)


class ResizeCounter(QObject):
    def __init__(self, widgets):
        super().__init__()
        self.count = 0
        for w in widgets:
            w.installEventFilter(self)

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Resize:
            self.count += 1
        return False


def estimates(events):
    return [e.value for e in events if isinstance(e.value, EstimateView)]


def test_the_engine_sends_ready_to_draw_frames_with_the_simulated_patients_true_curve(events):
    snap = next(e.value for e in events if isinstance(e, Opened))
    views = estimates(events)
    assert len(views) == 8
    patient = case_patient(snap.simulated_case, snap.n_alternatives)  # as the GUI builds it
    for view in views:
        f = view.frame
        np.testing.assert_allclose(f.true_p, patient.probability_correct(view.psychometric_s, view.estimate.lens))
        np.testing.assert_array_equal(f.psychometric_p, view.psychometric_p)
        np.testing.assert_array_equal(f.map_image, np.asarray(view.acuity_map["va_logmar"], dtype=np.float32).T)
        assert f.correct_xy.shape[1] + f.wrong_xy.shape[1] == view.n_trials
        assert f.curve_xy[0, -1] == view.n_trials and f.curve_xy[1, -1] == view.estimate.va_logmar


def test_a_session_is_drawn_in_place_without_resizing_the_plots(qtbot, make_window, events):
    window = make_window(pace_s=0.0)
    view = window.session_view
    items_before = {
        p: list(p.getPlotItem().items) if hasattr(p, "getPlotItem") else list(p.plot.items) for p in view.plots
    }
    qtbot.waitUntil(lambda: not window.prewarm_timer.isActive(), timeout=5_000)  # pages laid out at the window's size
    counter = ResizeCounter(view.plots)
    feed(qtbot, window, events)
    assert window.stack.currentWidget() is view and all(p.isVisible() for p in view.plots)
    assert counter.count == 0, "the page switch or a label change re-laid out the window and resized the plots"
    last = estimates(events)[-1]
    assert window.last_estimate is last
    f = last.frame
    # what the items hold is the frame, as sent
    m = view.map_plot
    np.testing.assert_array_equal(m.image.image, f.map_image)
    assert tuple(m.image.levels) == (-0.1, 1.3)
    np.testing.assert_array_equal(np.vstack(m.correct.getData()), f.correct_xy)
    np.testing.assert_array_equal(np.vstack(m.wrong.getData()), f.wrong_xy)
    np.testing.assert_array_equal(np.vstack(view.curve_plot.curve.getData()), f.curve_xy)
    p = view.psychometric_plot
    np.testing.assert_array_equal(p.truth.getData()[1], f.true_p)
    np.testing.assert_array_equal(np.vstack(p.band.getData()), f.band_xy)
    assert view.estimate.text() == f.texts.best_lens and view.acuity.text() == f.texts.acuity
    # no item was created along the way; nothing auto-ranges; every axis is a cached pixmap
    for plot, before in items_before.items():
        after = list(plot.getPlotItem().items) if hasattr(plot, "getPlotItem") else list(plot.plot.items)
        assert after == before
    for plot_item in (m.plot, view.curve_plot.getPlotItem(), p.getPlotItem()):
        assert plot_item.getViewBox().autoRangeEnabled() == [False, False]
        for name in ("left", "bottom"):
            assert plot_item.getAxis(name).cacheMode() == QGraphicsItem.CacheMode.DeviceCoordinateCache
    vb_x, vb_y = view.curve_plot.getPlotItem().getViewBox().viewRange()
    assert vb_x[0] <= 0 and vb_x[1] >= f.curve_x_range[1] - 1e-9 and vb_y[0] <= f.curve_y_range[0] + 1e-9


def test_a_burst_of_estimates_is_drawn_once_latest_wins_and_never_inside_the_handler(qtbot, make_window, events):
    window = make_window(pace_s=0.0)
    first_estimate = next(i for i, e in enumerate(events) if isinstance(e, EstimateReady))
    feed(qtbot, window, events[:first_estimate])
    view = window.session_view
    calls = {p: [] for p in view.plots}
    for plot in view.plots:
        original = plot.update_frame
        plot.update_frame = lambda frame, plot=plot, original=original: (calls[plot].append(frame), original(frame))
    burst = estimates(events)
    for v in burst:  # faster than the screen: no event-loop pass in between
        window.worker.estimate_ready.emit(v)
        assert all(not c for c in calls.values())  # the handler only keeps the estimate
    assert window.last_estimate is None
    qtbot.waitUntil(lambda: window.last_estimate is burst[-1] and not view.plots_pending, timeout=5_000)
    assert {p: len(c) for p, c in calls.items()} == {p: 1 for p in view.plots}
    assert all(c[0] is burst[-1].frame for c in calls.values())


def test_snapshots_do_not_touch_the_plot_ranges_when_nothing_changed(qtbot, make_window, events):
    window = make_window(pace_s=0.0)
    snaps = [e.value for e in events if isinstance(e.value, Snapshot)]
    window.worker.opened.emit(snaps[0])
    qtbot.wait(20)
    view = window.session_view
    changes = []
    for plot_item in (view.map_plot.plot, view.psychometric_plot.getPlotItem()):
        plot_item.getViewBox().sigRangeChanged.connect(lambda *a: changes.append(a))
    for snap in snaps[1:]:
        view.show_snapshot(snap)
    assert changes == []


def test_every_acuity_map_is_bright_where_acuity_is_good(qtbot):
    """The reversed colormap is the plot's own: a second map does not flip the first (the
    shared cached ``viridis`` used to be reversed once per plot, so every second window drew
    its map upside down, whatever the order of the tests)."""
    from PySide6.QtGui import QColor

    from visiontune.app.plots import MAP_LEVELS, AcuityMapPlot

    for _ in range(2):  # two in a row: one of them was wrong with the shared colormap
        m = AcuityMapPlot()
        qtbot.addWidget(m)
        lut = m.image.lut  # the table the image is drawn with: row 0 at the low level
        low, high = (QColor(*map(int, lut[i][:3])).lightness() for i in (0, -1))
        assert low > high, f"{MAP_LEVELS[0]} logMAR (good acuity) must be the bright end"


def test_the_plots_of_a_page_shown_again_and_again_all_come_back(qtbot):
    """The page shows its plots one per event-loop pass; shown, hidden and shown again before
    they are all back, it still ends with every plot visible, and only then."""
    from visiontune.app.session_view import SessionView

    view = SessionView()
    qtbot.addWidget(view)
    view.resize(1280, 800)
    view.show()
    assert not any(p.isVisible() for p in view.plots) and view.plots_pending  # the first paint: labels only
    qtbot.waitUntil(lambda: view.map_plot.isVisible(), timeout=2_000)
    view.hide()
    view.show()
    qtbot.waitUntil(lambda: not view.plots_pending, timeout=2_000)
    assert all(p.isVisible() for p in view.plots)
