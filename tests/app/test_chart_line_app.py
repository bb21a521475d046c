"""A chart line in the app: the patient screen draws the line's letters at chart spacing only once
the lens is confirmed, the clinician keys each letter (right / wrong, the letter named, a count,
Backspace, Enter), a key that means nothing is refused with a sentence and loses nothing, and the
line is recorded as one trial (``line_correct``). The same in a simulated session (the simulated
patient reads the line), in a visit's eye, through the lens device (the SIMULATED CV-5000 sets the
lens before the line shows), and across an engine killed mid-line (SIGKILL)."""

from __future__ import annotations

import math
import os
import signal

from app_helpers import SCREENSHOTS, write_line_protocol
from PySide6.QtCore import Qt

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import Failed, Opened, Recorded, Updated
from visiontune.devices.emulator import CV5000Emulator
from visiontune.display import Calibration, save_calibration
from visiontune.display.geometry import largest_line_logmar
from visiontune.refraction.lenses import same_lens
from visiontune.refraction.loop import PendingComparison, PendingLine, simulated_line
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore

#: A 527 x 296 mm screen of 1920 x 1080 px at 1 m: lines of 5 letters up to about +1.6 logMAR fit.
CALIBRATION = Calibration(527.0, 296.4375, 1920, 1080, 1000.0)
SLOAN = tuple("CDHKNORSVZ")


def _key(qtbot, window, text):
    """One key press on the session page: a letter, a digit, ``+``, ``-``, Return, Space, Backspace."""
    special = {
        "Return": Qt.Key.Key_Return,
        "Space": Qt.Key.Key_Space,
        "Backspace": Qt.Key.Key_Backspace,
        "Escape": Qt.Key.Key_Escape,
    }
    if text in special:
        qtbot.keyClick(window.session_view, special[text])
    else:
        qtbot.keyClicks(window.session_view, text.lower())


def _settled(qtbot, window, n):
    qtbot.waitUntil(
        lambda: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.n_trials == n, timeout=60_000
    )


def _start_real(qtbot, window, patient_id):
    start = window.start_view
    start.simulated.setChecked(False)
    start.patient_id.setText(patient_id)
    start.sphere.setText("-1.25")
    start.cylinder.setText("-0.50")
    start.axis.setText("90")
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)


def _answer_comparison(qtbot, window):
    n = window.snapshot.n_trials
    _key(qtbot, window, "Return")
    assert window.phase == Phase.COMPARE
    _key(qtbot, window, "1")
    _settled(qtbot, window, n + 1)


def test_a_real_patients_line_is_drawn_at_chart_spacing_keyed_letter_by_letter_and_recorded(
    qtbot, make_window, paths, tmp_path
):
    save_calibration(CALIBRATION, paths["calibration"])
    window = make_window(simulate=False, protocol=write_line_protocol(tmp_path, max_trials=12))
    _start_real(qtbot, window, "P-LINE")
    view, pw = window.session_view, window.patient_window
    lines = []  # (trial index, letters, the line_correct expected)
    while len(lines) < 2 and window.phase == Phase.LENS:
        q = window.snapshot.query
        if not isinstance(q, PendingLine):
            _answer_comparison(qtbot, window)
            continue
        n = window.snapshot.n_trials
        assert "chart line" in view.lens_caption.text() and "show the line" in view.instruction.text()
        assert pw.current is None  # nothing on the patient screen before the lens is confirmed
        _key(qtbot, window, "Return")
        assert window.phase == Phase.LINE
        # the patient screen: the line's letters, each at the calibrated height (h = 2 d tan(5 * 10**s / 2 arcmin))
        shown, height = pw.current
        expected = 2 * 1000.0 * math.tan(math.radians(5 * 10**q.s_logmar / 60) / 2) / (296.4375 / 1080)
        assert shown == "".join(q.letters) and len(q.letters) == 5 and math.isclose(height, expected, rel_tol=1e-9)
        assert all(f"{x}<span style='color:#999999'>_</span>" in view.letter.text() for x in q.letters)
        if not lines:
            wrong = next(x for x in SLOAN if x not in q.letters)
            _key(qtbot, window, "Q")  # not a Sloan letter: refused, nothing keyed
            assert "not a letter of this chart" in window.status.currentMessage()
            _key(qtbot, window, "+")  # letter 1 right
            _key(qtbot, window, q.letters[1])  # letter 2 named, the one shown: right
            _key(qtbot, window, "-")  # letter 3 wrong
            _key(qtbot, window, "Backspace")  # ... taken back
            assert "Letter 3 taken back" in window.status.currentMessage()
            _key(qtbot, window, "3")  # a count after letters: refused, the two letters kept
            assert "Backspace to start again" in window.status.currentMessage()
            assert window.controller.line_entry.marks == [True, True]
            _key(qtbot, window, "Return")  # not every letter keyed: refused, nothing recorded
            assert "5 letters; 2 keyed so far" in window.status.currentMessage()
            assert window.phase == Phase.LINE and window.snapshot.n_trials == n
            _key(qtbot, window, "-")  # letter 3 wrong
            _key(qtbot, window, wrong)  # letter 4: another letter named, wrong
            _key(qtbot, window, "+")  # letter 5 right
            _key(qtbot, window, "+")  # one too many: refused
            assert "every letter of the line has its answer" in window.status.currentMessage()
            marks = "".join(x for x in view.letter.text().split("&nbsp;" * 3)[0] if x in "+_\u2212")
            assert marks == "++\u2212\u2212+"  # what was keyed, letter by letter
            _key(qtbot, window, "Escape")  # the patient screen blanked: the keys are kept
            assert pw.current is None and window.phase == Phase.LENS
            _key(qtbot, window, "Return")
            assert window.controller.line_entry.marks == [True, True, False, False, True]
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            qtbot.wait(300)
            assert window.grab().save(str(SCREENSHOTS / "session_line.png"))
            pw.resize(960, 540)
            assert pw.grab().save(str(SCREENSHOTS / "patient_line.png"))
            _key(qtbot, window, "Return")
            lines.append((q.index, q.letters, "11001"))
        else:
            _key(qtbot, window, "3")  # the number read: the line read to its third letter
            lines.append((q.index, q.letters, "11100"))
        _settled(qtbot, window, n + 1)
        assert pw.current is None  # blanked once the answer is sent
        assert window.snapshot.last_trial.line_correct == lines[-1][2]
    assert len(lines) == 2, "the protocol asked fewer than two lines in 12 answers"
    sid = window.snapshot.session_id
    window.close()
    with TrialStore.open(paths["db"], read_only=True) as store:
        trials = {t.index: t for t in store.trials(sid)}
    for index, letters, correct in lines:
        t = trials[index]
        assert (t.letter_shown, t.line_correct, t.correct) == ("".join(letters), correct, correct.count("1") >= 3)
        assert t.comparison is None and t.lens2 is None


def test_a_simulated_line_is_the_simulated_patients_and_the_autopilot_finishes_a_session_of_lines(
    qtbot, make_window, paths, tmp_path
):
    protocol = write_line_protocol(tmp_path, max_trials=8)
    window = make_window(pace_s=0.0, protocol=protocol)
    window.start_view.patient_id.setText("SIM-LINE")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)
    expected = {}
    while window.phase == Phase.LENS and not expected:  # step mode: Space shows, Space answers as the patient
        q, n = window.snapshot.query, window.snapshot.n_trials
        _key(qtbot, window, "Space")
        if isinstance(q, PendingLine):
            assert window.phase == Phase.LINE
            said = simulated_line(window.controller.sim_patient, q).correct
            assert window.controller.sim_line == said
            assert window.session_view.simulated_reply.text().startswith("Simulated patient reads:")
            expected[q.index] = "".join("1" if c else "0" for c in said)
        _key(qtbot, window, "Space")
        _settled(qtbot, window, n + 1)
    window.controller.pace_s = 0.01  # the autopilot answers the rest and finishes
    window.controller.auto_step()
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=120_000)
    with TrialStore.open(paths["db"], read_only=True) as store:
        info, trials = store.get_session(1), store.trials(1)
    assert info.state == SessionState.FINISHED and info.simulated
    line_trials = [t for t in trials if t.line_correct is not None]
    assert line_trials and {t.index: t.line_correct for t in line_trials if t.index in expected} == expected
    for t in line_trials:  # every line the autopilot answered is the simulated patient's
        assert len(t.line_correct) == len(t.letter_shown) == 5


def test_the_device_sets_the_lens_before_the_line_shows(qtbot, make_window, paths, tmp_path):
    protocol = write_line_protocol(tmp_path, max_trials=8)
    with CV5000Emulator(change_seconds=0.02) as emu:
        window = make_window(pace_s=0.01, protocol=protocol)
        start = window.start_view
        start.set_device(f"cv5000:{emu.port}")
        start.patient_id.setText("SIM-LINE-CV")
        shown = []  # each question as it reached the patient screen, with the lens the device held then
        window.controller.connect(
            lambda kind, value: shown.append((value, emu.state.od)) if kind == Shown.PRESENT else None
        )
        qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=180_000)
    with TrialStore.open(paths["db"], read_only=True) as store:
        trials = store.trials(1)
    assert len(shown) == len(trials) == 8
    lines = [(q, held) for q, held in shown if isinstance(q, PendingLine)]
    assert lines, "no line in 8 answers"
    for query, held in shown:
        last = query.lens2 if isinstance(query, PendingComparison) else query.lens
        assert same_lens(last, held)
    by_index = {t.index: t for t in trials}
    for query, _ in lines:
        assert by_index[query.index].letter_shown == "".join(query.letters)
        assert by_index[query.index].line_correct is not None


def test_a_visit_eye_asks_lines(qtbot, make_window, paths, tmp_path):
    protocol = write_line_protocol(tmp_path, max_trials=6)
    window = make_window(pace_s=0.0, protocol=protocol)
    start = window.start_view
    start.patient_id.clear()
    qtbot.keyClicks(start.patient_id, "SIM-VISIT-LINE")
    qtbot.keyClick(start.eye, Qt.Key.Key_End)  # the last choice: a visit
    assert start.is_visit()
    qtbot.keyClick(start.start_button, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.snapshot.eye == "OD", timeout=60_000)
    assert window.snapshot.visit_id is not None
    seen_line = False
    while window.phase == Phase.LENS:
        q, n = window.snapshot.query, window.snapshot.n_trials
        _key(qtbot, window, "Return")
        seen_line |= window.phase == Phase.LINE
        _key(qtbot, window, "Return")  # the simulated patient's answer
        _settled(qtbot, window, n + 1)
        if isinstance(q, PendingLine):
            assert window.snapshot.last_trial.line_correct is not None
    assert window.phase == Phase.STOPPED and seen_line
    with TrialStore.open(paths["db"], read_only=True) as store:
        trials = store.trials(window.snapshot.session_id)
    assert any(t.line_correct is not None for t in trials)


def test_the_largest_line_a_screen_shows_and_a_line_too_wide_for_it_goes_to_a_printed_chart(
    qtbot, make_window, paths, tmp_path
):
    # oracle: a 5-letter line is 9 letter heights wide; the widest letter 1920 / 9 px = 58.56 mm at 1 m
    assert math.isclose(
        largest_line_logmar(CALIBRATION, 5),
        math.log10(2 * math.degrees(math.atan(1920 / 9 * 296.4375 / 1080 / 2 / 1000.0)) * 60 / 5),
        rel_tol=1e-12,
    )
    from visiontune.display.optotypes import load_letter_set
    from visiontune.display.qt_renderer import PatientWindow

    pw = PatientWindow(CALIBRATION, load_letter_set("sloan"))
    qtbot.addWidget(pw)
    too_wide = largest_line_logmar(CALIBRATION, 5) + 0.05
    assert pw.line_fits(5, too_wide - 0.1) and not pw.line_fits(5, too_wide)
    pw.show_line(tuple("DKNRS"), 0.5)
    try:
        pw.show_line(tuple("DKNRS"), too_wide)
    except Exception as exc:  # its type and words are the point
        assert type(exc).__name__ == "CalibrationError" and "this screen is 1920 px wide" in str(exc)
    else:
        raise AssertionError("a line wider than the screen was drawn")
    assert pw.current[0] == "DKNRS"  # the line shown before is left as it was


def test_an_engine_killed_mid_line_keeps_every_recorded_answer_and_asks_the_same_line_again(
    qtbot, make_window, paths, tmp_path
):
    protocol = write_line_protocol(tmp_path, max_trials=12)
    window = make_window(pace_s=0.0, protocol=protocol)  # the simulated patient of seed 3: lines at answers 1, 5
    window.start_view.patient_id.setText("SIM-KILL")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)
    while not isinstance(window.snapshot.query, PendingLine) or window.snapshot.n_trials < 1:
        assert window.phase == Phase.LENS, "no second line before the stop"
        n = window.snapshot.n_trials
        _key(qtbot, window, "Space")  # shown, then the simulated patient's answer
        _key(qtbot, window, "Space")
        _settled(qtbot, window, n + 1)
    q, n, sid = window.snapshot.query, window.snapshot.n_trials, window.snapshot.session_id
    with TrialStore.open(paths["db"], read_only=True) as store:
        before = [(t.index, t.letter_shown, t.line_correct, t.comparison) for t in store.trials(sid)]
    _key(qtbot, window, "Return")
    for key in ("+", "-", q.letters[2]):  # three letters keyed, the line not yet recorded
        _key(qtbot, window, key)
    assert window.controller.line_entry.marks == [True, False, True]
    pid = window.worker.pid
    os.kill(pid, signal.SIGKILL)  # the engine process killed mid-line
    qtbot.waitUntil(lambda: not window.worker.running or window.worker.pid != pid, timeout=60_000)
    window.close()
    with TrialStore.open(paths["db"], read_only=True) as store:
        after = [(t.index, t.letter_shown, t.line_correct, t.comparison) for t in store.trials(sid)]
        state = store.get_session(sid).state
    assert after == before and len(after) == n and state == SessionState.OPEN  # every recorded answer kept
    second = make_window(protocol=protocol)
    second.resume_session(sid)
    qtbot.waitUntil(lambda: second.phase == Phase.LENS, timeout=60_000)
    again = second.snapshot.query
    assert second.snapshot.n_trials == n and isinstance(again, PendingLine)
    assert (again.index, again.letters, again.s_logmar) == (q.index, q.letters, q.s_logmar)
    assert same_lens(again.lens, q.lens)
    _key(qtbot, second, "Return")
    assert second.controller.line_entry.marks == []  # the keys of the killed line were never recorded
    _key(qtbot, second, "5")
    _settled(qtbot, second, n + 1)
    assert second.snapshot.last_trial.line_correct == "11111"


def test_the_engine_hosts_simulated_run_answers_lines_as_its_patient(tmp_path):
    """record_simulated_session (the benchmarks' and the GUI tests' replay): each line is the
    simulated patient's own reading of it, recorded as one trial."""
    from visiontune.app.logic.session_host import record_simulated_session
    from visiontune.app.logic.simulation import case_patient

    events = record_simulated_session(
        tmp_path / "log.sqlite3", str(write_line_protocol(tmp_path, max_trials=8)), 8, seed=3
    )
    assert not [e.value for e in events if isinstance(e, Failed)]
    opened = next(e.value for e in events if isinstance(e, Opened))
    patient = case_patient(opened.simulated_case, opened.n_alternatives)
    asked = [e.value.query for e in events if isinstance(e, Opened | Updated) and e.value.query is not None]
    recorded = [e.value for e in events if isinstance(e, Recorded)]
    lines = [(q, t) for q, t in zip(asked, recorded, strict=False) if isinstance(q, PendingLine)]
    assert len(recorded) == 8 and len(lines) >= 2
    for q, t in lines:
        said = simulated_line(patient, q).correct
        assert t.index == q.index and t.letter_shown == "".join(q.letters)
        assert t.line_correct == "".join("1" if c else "0" for c in said)
