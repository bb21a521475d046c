"""One count on the session page: the answers recorded. The panel's counter, the status line
that confirms an answer and the undo's all give the same number in the same words
("Answers: 7 of 40", "Answer 7 of 40 recorded"), at the moment the status line says it; the
lens caption says what to do and counts nothing (it said "Trial 8" beside "Answers: 7")."""

from __future__ import annotations

import re

from visiontune.app.logic.events import Shown
from visiontune.app.logic.texts import answer_text, answers_text


def test_the_count_texts():
    assert answers_text(6, 120) == "Answers: 6 of 120"
    assert answer_text(7, 120) == "Answer 7 of 120"


def test_the_panel_and_the_status_line_give_the_same_count_as_each_answer_is_recorded(make_window, qtbot):
    window = make_window(pace_s=0.01)
    seen = []

    def watch(kind, value):
        if kind == Shown.STATUS and " recorded" in value[0]:
            seen.append((value[0], window.session_view.progress.text(), window.session_view.lens_caption.text()))

    window.controller.connect(watch)
    window.start_view.simulated.setChecked(True)
    window.start_view._start()
    qtbot.waitUntil(lambda: len(seen) >= 4, timeout=60_000)
    for k, (status, panel, caption) in enumerate(seen[:4], 1):
        budget = window.snapshot.max_trials
        assert status.startswith(f"{answer_text(k, budget)} recorded: simulated patient says "), status
        assert panel == answers_text(k, budget)
        assert not re.search(r"\b(Trial|Answer|Question)\b", caption), caption
