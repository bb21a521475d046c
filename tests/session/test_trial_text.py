"""One-line texts of logged answers shared by the command line, the PDF report and the app: a
slider's knob, lens chosen, place and path ends; the answers a session used by kind."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from visiontune.optics import Prescription
from visiontune.refraction.trial import Trial, trial_kind
from visiontune.session.trial_text import answer_kinds_text, lens_text, slider_text

T = datetime(2026, 1, 1, tzinfo=UTC)


def _slider(knob, path, choice, void=False) -> Trial:
    lenses = tuple(Prescription(*x) for x in path)
    return Trial(
        4,
        0.1,
        lenses[choice],
        "H",
        True,
        None,
        T,
        T,
        void=void,
        slider_knob=knob,
        slider_lenses=lenses,
        slider_choice=choice,
        session_id=1,
    )


def test_a_slider_on_one_line_with_the_ends_of_its_path_in_the_knobs_unit():
    sphere = _slider("sphere", [(-2.25 + 0.25 * k, -0.5, 90.0) for k in range(9)], 3)
    assert slider_text(sphere) == "slider sphere: clearest S -1.50 / C -0.50 x 090 (4 of 9, path -2.25 to -0.25 D)"
    cylinder = _slider("cylinder", [(0.5, -0.5, 35.0), (0.5, -0.25, 35.0), (0.5, 0.0, 0.0)], 2)
    assert slider_text(cylinder) == "slider cylinder: clearest S +0.50 DS (3 of 3, path -0.50 to +0.00 D)"
    axis = _slider("axis", [(0.0, -1.0, a) for a in (170.0, 175.0, 0.0, 5.0, 10.0)], 2)
    assert slider_text(axis) == "slider axis: clearest S plano / C -1.00 x 180 (3 of 5, path 170 to 10\u00b0)"
    assert slider_text(axis, lens=lambda x: "LENS") == "slider axis: clearest LENS (3 of 5, path 170 to 10\u00b0)"


def test_the_trial_read_back_from_the_store_reads_the_same(store, session_id):
    """The bench's trial (axes in (0, 180], one at 180) gives the clinic's text once stored and
    read back (the store writes axis 180 as 0 and reads it as 180 again)."""
    path = tuple(Prescription(s, -0.5, 180.0) for s in (-1.0, -0.75, -0.5))
    logged = Trial(0, 0.1, path[1], "H", True, slider_knob="sphere", slider_lenses=path, slider_choice=1)
    with store.open_session(session_id) as handle:
        handle.record_trial(logged)
    [stored] = store.trials(session_id)
    assert dataclasses.replace(stored, session_id=None, presented_at=None, answered_at=None) == logged
    assert (
        slider_text(logged)
        == slider_text(stored)
        == "slider sphere: clearest S -0.75 / C -0.50 x 180 (2 of 3, path -1.00 to -0.50 D)"
    )


def test_lens_text_writes_axis_0_as_180():
    assert lens_text(Prescription(-1.0, -0.5, 0.0)) == "S -1.00 / C -0.50 x 180"


def test_answers_by_kind():
    assert answer_kinds_text(12) == answer_kinds_text(12, 0, 0) == ""
    assert answer_kinds_text(12, 1) == "11 letters, 1 comparison"
    assert answer_kinds_text(12, 0, 2) == "10 letters, 2 sliders"
    assert answer_kinds_text(3, 1, 1) == "1 letter, 1 comparison, 1 slider"


def test_trial_kinds():
    letter = Trial(0, 0.1, Prescription(0.0, 0.0), "H", True, "H", T, T)
    duel = Trial(1, 0.1, Prescription(0.0, 0.0), "H", True, "H", T, T, lens2=Prescription(0.5, 0.0))
    comparison = Trial(2, 0.1, Prescription(0.0, 0.0), "H", True, None, T, T, lens2=Prescription(0.5), comparison="=")
    slider = _slider("sphere", [(0.0, 0.0, 0.0), (0.25, 0.0, 0.0)], 0)
    assert [trial_kind(t) for t in (letter, duel, comparison, slider)] == ["letter", "letter", "comparison", "slider"]
