"""The worker: plot data checked against independent computations, results via signals."""

import numpy as np
from app_helpers import SCREENSHOTS

from visiontune.app.worker import export_basename


def test_export_names_say_simulated():
    assert export_basename(3, "P-1", "OS", True) == "visiontune-session-3-P-1-OS-SIMULATED"
    assert export_basename(3, "P-1", "OS", False) == "visiontune-session-3-P-1-OS"


def test_estimate_shown_is_the_engine_estimate_of_the_same_log(qtbot, make_window, paths):
    """The window's estimate equals a fresh engine replay of the stored log (same seeds)."""
    from PySide6.QtCore import Qt

    from visiontune.app.logic.keys import Phase
    from visiontune.session.engine import RefractionSession
    from visiontune.session.store import TrialStore

    window = make_window(pace_s=0.01)
    window.start_view.patient_id.setText("SIM-EST")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.last_estimate is not None and window.last_estimate.n_trials >= 20, timeout=90_000)
    window.sim_patient = None  # stop auto-answering
    window.auto_timer.stop()
    qtbot.waitUntil(lambda: window.worker_idle and window.phase in (Phase.LENS, Phase.ANSWER), timeout=30_000)
    qtbot.waitUntil(lambda: window.last_estimate.n_trials == window.snapshot.n_trials, timeout=30_000)
    view, sid = window.last_estimate, window.snapshot.session_id
    qtbot.wait(200)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / "readme_session_view.png"))  # a session well under way
    n = view.n_trials
    window.close()
    with TrialStore.open(paths["db"]) as store, RefractionSession.resume(store, sid) as session:
        assert len(session.trials()) == n
        est = session.current_estimate()
        ref = session.psychometric(est.lens)
        progress = session.progress()
    assert view.estimate.lens == est.lens and view.estimate.va_logmar == est.va_logmar
    assert view.trials.shape == (n, 3)
    np.testing.assert_allclose(view.psychometric_p, ref[1])
    assert view.progress == progress and view.frame.progress == progress
    assert view.curve[-1] == (n, est.va_logmar)
    # the map is the engine's, on the grid it returns (the map plot takes its extents from it)
    amap = view.acuity_map
    va = np.asarray(amap["va_logmar"])
    assert va.shape == (len(amap["sphere_d"]), len(amap["cylinder_d"])) and np.all((va >= -1.0) & (va <= 2.0))
    x, y, w, h = view.frame.map_rect
    assert x < min(amap["sphere_d"]) and x + w > max(amap["sphere_d"])
    assert y < min(amap["cylinder_d"]) and y + h > max(amap["cylinder_d"])
