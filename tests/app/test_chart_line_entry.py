"""The clinician's keys for a chart line and the line's layout on the patient screen
(visiontune.app.logic.chart_line_entry, no Qt): each letter keyed right, wrong or named, a count keyed at
once, Backspace, and the letters one letter width apart."""

from __future__ import annotations

import pytest

from visiontune.app.logic.chart_line_entry import LineEntry, line_layout
from visiontune.errors import InvalidInputError
from visiontune.refraction.loop import LineReply

SLOAN = tuple("CDHKNORSVZ")


def test_each_letter_keyed_right_wrong_or_named_gives_the_reply():
    entry = LineEntry(tuple("HNOVZ"), SLOAN)
    for key in ("+", "N", "C", "-"):  # H right, N named right, C named for O: wrong, V wrong
        assert entry.press(key) is None
    assert entry.status == "H+  N+  O-  V-  Z_"
    with pytest.raises(InvalidInputError, match="4 keyed so far"):
        entry.press("Enter")
    entry.press("backspace")
    entry.press("Y")
    entry.press("z")
    assert entry.press("Enter") == LineReply((True, True, False, True, True))
    with pytest.raises(InvalidInputError, match="every letter of the line has its answer"):
        entry.press("+")


def test_n_off_the_line_is_wrong_and_a_count_completes_the_line():
    entry = LineEntry(tuple("CDHKO"), SLOAN)
    entry.press("N")
    assert entry.marks == [False]
    with pytest.raises(InvalidInputError, match="before any letter"):
        entry.press("3")
    fresh = LineEntry(tuple("CDHKO"), SLOAN)
    assert fresh.press("3") == LineReply((True, True, True, False, False))
    with pytest.raises(InvalidInputError, match="cannot be read right"):
        LineEntry(tuple("CDHKO"), SLOAN).press("7")
    with pytest.raises(InvalidInputError, match="key 'Q'"):
        LineEntry(tuple("CDHKO"), SLOAN).press("Q")


def test_letters_sit_one_letter_width_apart_centred():
    xs = line_layout(5, 40.0, centre_x_px=500.0)
    assert xs == [340.0, 420.0, 500.0, 580.0, 660.0]  # centres 2 heights apart: a 40 px gap between 40 px letters
    with pytest.raises(InvalidInputError):
        line_layout(5, 0.0)
