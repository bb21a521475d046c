"""A real (non-simulated) session: calibration wizard, letter on the patient screen only
after the lens is confirmed, at the height of the calibration; Escape blanks it."""

import math

from app_helpers import write_protocol
from PySide6.QtCore import Qt

from visiontune.app.calibration_dialog import CalibrationDialog
from visiontune.app.logic.keys import Phase
from visiontune.display import Calibration, load_calibration, save_calibration
from visiontune.display.calibration import CARD_WIDTH_MM


def test_card_calibration_gives_the_card_pitch(qtbot, tmp_path):
    dialog = CalibrationDialog(width_px=1920, height_px=1080)
    qtbot.addWidget(dialog)
    dialog.by_card.setChecked(True)
    dialog.card_px.setValue(323)
    dialog.distance_mm.setValue(3000)
    dialog.mirror.setChecked(True)
    dialog.accept()
    c = dialog.calibration
    assert math.isclose(c.pixel_pitch_x_mm, CARD_WIDTH_MM / 323, rel_tol=1e-12)
    assert c.mirror and c.viewing_distance_mm == 3000 and (c.width_px, c.height_px) == (1920, 1080)
    assert load_calibration(save_calibration(c, tmp_path / "c.json")) == c


def test_impossible_calibration_is_refused_in_the_dialog(qtbot):
    dialog = CalibrationDialog(width_px=1920, height_px=1080)
    qtbot.addWidget(dialog)
    dialog.width_mm.setValue(527)
    dialog.height_mm.setValue(100)  # pixels would not be square
    dialog.accept()
    assert dialog.calibration is None and "square" in dialog.error.text()


def test_letter_shows_only_after_confirm_at_the_calibrated_height(qtbot, make_window, paths, tmp_path):
    calibration = Calibration(527.0, 296.4375, 1920, 1080, 1000.0)
    save_calibration(calibration, paths["calibration"])
    protocol = write_protocol(tmp_path, lo=0.0, hi=1.0, name="near.toml")
    window = make_window(simulate=False, protocol=protocol)
    start = window.start_view
    assert start.simulated.isEnabled()
    start.simulated.setChecked(False)
    start.patient_id.setText("P-0042")
    start.sphere.setText("-1.25")
    start.cylinder.setText("-0.50")
    start.axis.setText("90")
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=30_000)
    assert "SIMULATED" not in window.windowTitle() and not window.session_view.banner.isVisible()
    pw = window.patient_window
    assert pw is not None and pw.current is None  # blank until the lens is confirmed
    qtbot.keyClick(window.session_view, Qt.Key.Key_Return)
    q = window.snapshot.query
    letter, height = pw.current
    # oracle: h = 2 d tan(5 * 10**s / 2 arcmin), in pixels of the vertical pitch
    expected = 2 * 1000.0 * math.tan(math.radians(5 * 10**q.s_logmar / 60) / 2) / (296.4375 / 1080)
    assert letter == q.letter and math.isclose(height, expected, rel_tol=1e-9)
    qtbot.keyClick(window.session_view, Qt.Key.Key_Escape)
    assert pw.current is None and window.phase == Phase.LENS
    qtbot.keyClick(window.session_view, Qt.Key.Key_Return)
    qtbot.keyClicks(window.session_view, q.letter.lower())
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.snapshot.n_trials == 1, timeout=30_000)
    assert pw.current is None
    assert window.snapshot.last_trial.letter_named == q.letter and window.snapshot.last_trial.correct


def test_protocol_sizes_the_screen_cannot_show_are_refused_before_starting(qtbot, make_window, paths):
    save_calibration(Calibration(527.0, 296.4375, 1920, 1080, 4000.0), paths["calibration"])
    window = make_window(simulate=False)  # protocol range [-1, 2] logMAR: too large and too small at 4 m
    window.start_view.simulated.setChecked(False)
    window.start_view.patient_id.setText("P-0043")
    window.start_view.start_source.setCurrentIndex(window.start_view.start_source.findData("none"))
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    assert "do not fit this screen" in window.reporter.dialog.text()
    assert window.stack.currentWidget() is window.start_view and window.snapshot is None
