"""A chart line as the command line and the reports write it: each letter with its + / -, the count
read right and the lens (``sessions show``, its JSON), and the session's answers by kind."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from visiontune import cli
from visiontune.optics import Prescription
from visiontune.refraction.trial import Trial
from visiontune.session.store import TrialStore
from visiontune.session.trial_text import answer_kinds_text, line_marks_text, line_text

T = datetime(2026, 1, 1, tzinfo=UTC)
LINES = Path(__file__).resolve().parents[2] / "docs" / "results" / "protocols" / "clinical-sloan-lines-filed.toml"


def _line(correct: str) -> Trial:
    return Trial(
        3, 0.3, Prescription(-1.25, -0.5, 90.0), "DKNRS", correct.count("1") >= 3, None, T, T, line_correct=correct
    )


def test_a_line_is_written_letter_by_letter_with_its_count_and_lens():
    assert line_marks_text(_line("11010")) == "D+ K+ N- R+ S-"
    assert line_text(_line("11010")) == "line D+ K+ N- R+ S- (3 of 5 right) through S -1.25 / C -0.50 x 090"
    assert line_text(_line("00000"), lambda lens: "L") == "line D- K- N- R- S- (0 of 5 right) through L"
    assert answer_kinds_text(20, 12, 0, 5) == "3 letters, 12 comparisons, 5 chart lines"
    assert answer_kinds_text(6, 0, 0, 1) == "5 letters, 1 chart line"
    assert answer_kinds_text(6) == answer_kinds_text(6, 0, 0, 0) == ""


def test_sessions_show_prints_each_line_as_a_line(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    argv = ["session", "run", "--simulate", "--protocol", str(LINES), "--db", str(db), "--seed", "3", "--quiet"]
    assert cli.main([*argv, "--max-steps", "6"]) == 0
    capsys.readouterr()
    with TrialStore.open(db, read_only=True) as store:
        trials = store.trials(1)
    lines = [t for t in trials if t.line_correct is not None]
    assert lines, "the simulated session asked no line in 6 answers"
    assert cli.main(["sessions", "show", "1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    for t in lines:
        marks = " ".join(f"{x}{'+' if c == '1' else '-'}" for x, c in zip(t.letter_shown, t.line_correct))
        assert f"{t.index + 1:3d} s={t.s_logmar:+.2f} line {marks} ({t.line_correct.count('1')} of 5 right)" in out
    assert cli.main(["sessions", "show", "1", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_index = {t["index"]: t for t in doc["trials"]}
    assert {t.index: t.line_correct for t in lines} == {
        i: by_index[i]["line_correct"] for i in by_index if "line_correct" in by_index[i]
    }
