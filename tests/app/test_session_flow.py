"""A whole simulated session driven by key presses: confirm lens, answer, undo, pause,
resume, finish. The trial log holds what was typed, the app log says what each key did,
the exports and the window say SIMULATED; screenshots of both screens are saved."""

from __future__ import annotations

import csv
import io
import json
import re

from app_helpers import SCREENSHOTS
from PySide6.QtCore import Qt

from visiontune.app.logic.keys import Phase
from visiontune.session.records import EventKind, SessionState
from visiontune.session.store import TrialStore


def wait_phase(qtbot, window, *phases, timeout=30_000):
    qtbot.waitUntil(lambda: window.phase in phases, timeout=timeout)


def press(qtbot, window, key, text=None):
    qtbot.keyClick(window.session_view, key) if text is None else qtbot.keyClicks(window.session_view, text)


def test_a_whole_simulated_session_by_keyboard(qtbot, make_window, paths):
    window = make_window(pace_s=0.0)
    start = window.start_view
    assert start.simulated.isChecked() and start.patient_id.text() == "SIM-0001"
    qtbot.wait(200)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    assert window.grab().save(str(SCREENSHOTS / "start_screen.png"))

    start.patient_id.setText("SIM-KEYS")
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    wait_phase(qtbot, window, Phase.LENS)
    assert "SIMULATED" in window.windowTitle()
    view = window.session_view
    assert view.banner.isVisible() and "SIMULATED" in view.banner.text()
    # the one notation: signed powers (plano), sphere-only as DS, the axis in three digits
    lens_re = r"S (?:[+\u2212]\d+\.\d\d|plano)(?: / C [+\u2212]\d+\.\d\d \u00d7 \d{3}| DS)"
    assert re.fullmatch(lens_re, view.lens.text()), view.lens.text()

    typed = []  # (index, letter typed) for letter answers
    # 1: a key that means nothing before the lens is confirmed: calm message, nothing recorded
    press(qtbot, window, Qt.Key.Key_K)
    assert "set the lens" in window.status.currentMessage()
    # 2-7: confirm with Return/Space, answer by typing a letter (the simulated patient's, or a
    # deliberate other one), or + / -
    for i in range(6):
        press(qtbot, window, Qt.Key.Key_Return if i % 2 == 0 else Qt.Key.Key_Space)
        assert window.phase == Phase.ANSWER
        letter_shown = window.snapshot.query.letter
        assert letter_shown in view.letter.text()
        assert view.simulated_reply.text().startswith("Simulated patient says:")
        if i == 2:
            press(qtbot, window, Qt.Key.Key_Q)  # not a Sloan letter
            assert "not a letter of this chart" in window.status.currentMessage()
            assert window.phase == Phase.ANSWER
        if i == 4:
            press(qtbot, window, Qt.Key.Key_Plus, "+")
        elif i == 5:
            press(qtbot, window, Qt.Key.Key_Minus, "-")
        else:
            letter = window.sim_reply.letter_named if i % 2 == 0 else ("C" if letter_shown != "C" else "D")
            press(qtbot, window, getattr(Qt.Key, f"Key_{letter}"), letter.lower())
            typed.append((i, letter))
        wait_phase(qtbot, window, Phase.LENS)
        assert window.snapshot.n_trials == i + 1
    qtbot.waitUntil(lambda: window.last_estimate is not None and window.last_estimate.n_trials == 6, timeout=30_000)
    assert "Best lens now" in view.estimate.text() and "credible region: S \u00b1" in view.interval.text()

    # undo the last answer
    press(qtbot, window, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.snapshot.n_trials == 5, timeout=30_000)
    # one more answer in step mode: Space shows the letter, Space again types the patient's answer
    press(qtbot, window, Qt.Key.Key_Space)
    reply = window.sim_reply.letter_named
    press(qtbot, window, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.snapshot.n_trials == 6, timeout=30_000)
    # Escape blanks the patient screen and takes back the letter
    press(qtbot, window, Qt.Key.Key_Return)
    press(qtbot, window, Qt.Key.Key_Escape)
    assert window.phase == Phase.LENS
    # pause, a key while paused does nothing, resume
    press(qtbot, window, Qt.Key.Key_P)
    wait_phase(qtbot, window, Phase.PAUSED)
    press(qtbot, window, Qt.Key.Key_Return)
    assert "paused" in window.status.currentMessage().lower()
    press(qtbot, window, Qt.Key.Key_P)
    wait_phase(qtbot, window, Phase.LENS)
    qtbot.waitUntil(lambda: window.last_estimate is not None and window.last_estimate.n_trials == 6, timeout=30_000)
    qtbot.wait(300)
    assert window.grab().save(str(SCREENSHOTS / "session_view.png"))

    # finish: F once arms, F again finishes
    sid = window.snapshot.session_id
    press(qtbot, window, Qt.Key.Key_F)
    assert "again" in window.status.currentMessage()
    assert window.phase == Phase.LENS
    press(qtbot, window, Qt.Key.Key_F)
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=60_000)
    assert "SIMULATED" in window.windowTitle()
    assert window.finish_view.banner.isVisible()
    qtbot.wait(200)
    assert window.grab().save(str(SCREENSHOTS / "finish_view.png"))
    exports = window.finish_view.exports.text()
    window.close()

    # --- the trial log holds exactly what was typed
    with TrialStore.open(paths["db"]) as store:
        info = store.get_session(sid)
        trials = store.trials(sid, include_void=True)
        events = [e.kind for e in store.events(sid)]
    assert info.state == SessionState.FINISHED and info.simulated and info.result["simulated"] is True
    assert len(trials) == 7 and [t.void for t in trials] == [False] * 5 + [True, False]
    for i, letter in typed:
        assert trials[i].letter_named == letter
        assert trials[i].correct == (letter == trials[i].letter_shown)
    assert trials[4].letter_named is None and trials[4].correct is True  # '+'
    assert trials[5].letter_named is None and trials[5].correct is False  # '-', then undone
    assert trials[6].letter_named == reply
    assert events.count(EventKind.UNDO) == 1 and EventKind.PAUSE in events and EventKind.RESUME in events
    assert events[-1] == EventKind.FINISH and info.result["stopped_by"] == "clinician"

    # --- the app log says what each key did
    text = paths["log_file"].read_text(encoding="utf-8")
    for _, letter in typed:
        assert f"key '{letter.lower()}' -> answer-letter {letter}" in text
    for line in (
        "key Return -> confirm-lens",
        "key Space -> simulated-answer",
        "key '+' -> answer-correct",
        "key '-' -> answer-wrong",
        "key Backspace -> undo",
        "key 'p' -> pause-toggle",
        "key 'f' -> finish",
        "key 'q' ignored",
        "key Escape -> blank",
    ):
        assert line in text, line

    # --- exports: PDF, CSV, JSON, named and marked SIMULATED
    files = sorted(p.name for p in paths["exports"].iterdir())
    assert files == [f"visiontune-session-{sid}-SIM-KEYS-OD-SIMULATED.{ext}" for ext in ("csv", "json", "pdf")]
    assert all(name in exports for name in files)
    doc = json.loads((paths["exports"] / files[1]).read_text(encoding="utf-8"))
    assert doc["simulated"] is True and "SIMULATED" in doc["mark"]
    assert [t["letter_named"] for t in doc["trials"]] == [t.letter_named for t in trials]
    csv_text = (paths["exports"] / files[0]).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert len(rows) == 7 and all(r["simulated"] == "1" for r in rows)  # the CSV's SIMULATED column
    assert (paths["exports"] / files[2]).read_bytes().startswith(b"%PDF")


def test_session_list_marks_simulated_sessions(qtbot, make_window, paths):
    window = make_window()
    window.start_view.patient_id.setText("SIM-LIST")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    wait_phase(qtbot, window, Phase.LENS)
    window.show_start()
    qtbot.waitUntil(lambda: window.start_view.table.rowCount() == 1, timeout=20_000)
    row = [window.start_view.table.item(0, c).text() for c in range(window.start_view.table.columnCount())]
    assert row[1] == "SIM-LIST" and row[-1] == "SIMULATED"
