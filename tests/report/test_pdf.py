"""The PDF report: its extracted text holds the prescription, the acuity and the patient id;
a simulated session's PDF carries the SIMULATED mark on every page."""

from __future__ import annotations

import io
import re
import subprocess

import pytest
from pypdf import PdfReader

from visiontune.optics.notation import rx_cells, rx_text
from visiontune.report import load_session
from visiontune.report.pdf import pdf_bytes


def _pages(store, sid) -> list[str]:
    reader = PdfReader(io.BytesIO(pdf_bytes(load_session(store, sid))))
    # the extractor separates words with tabs or spaces: normalise to single spaces
    return [re.sub(r"\s+", " ", page.extract_text()) for page in reader.pages]


def test_pdf_text_holds_prescription_acuity_and_patient(store, make_session):
    sid = make_session(n_trials=12, undo_at=(3, 8))
    pages = _pages(store, sid)
    text = " ".join(pages)
    assert len(pages) == 2
    assert "P-0042" in pages[0]
    assert "S -1.25 / C -0.50 x 090" in pages[0]  # rounded to 0.25 D
    # exact -1.3125 / -0.5625, printed to 0.01 D and marked: never written as a lens
    assert "Exact estimate S -1.31 / C -0.56 x 090 (estimate, not a trial lens)" in pages[0]
    # 0.12 logMAR = 20/(20·10^0.12) = 20/26.4 = 6/7.9
    assert "0.12 logMAR (Snellen 20/26, 6/8)" in pages[0]
    assert "[0.02, 0.31] logMAR (Snellen 20/21 to 20/41)" in pages[0]
    assert "sphere [-1.75, -0.88] D" in pages[0] and "cylinder [-1.00, -0.12] D" in pages[0]
    assert "10 used, 2 voided Stopped by budget" in pages[0]
    assert "12 min 34 s" in pages[0]
    assert "Eye OD" in pages[0] and "paper-ucb-ald" in pages[0]
    assert "SIMULATED" not in text
    # the trial table: one row per answer, voided answers marked
    assert text.count(" void ") == 2
    assert "Trial table (12 answers)" in pages[1]


def test_simulated_mark_on_every_page(store, make_session):
    sid = make_session(n_trials=200, undo_at=(5,), simulated=True, comparisons=False)
    pages = _pages(store, sid)
    assert len(pages) == 3  # summary + a table too long for one page (160 rows a page)
    for i, page in enumerate(pages, start=1):
        assert "SIMULATED - simulated patient, not a clinical record" in page, f"page {i}"
        assert f"page {i} of {len(pages)}" in page
    table = " ".join(pages[1:])
    assert table.count(" void ") == 1
    for index in (1, 80, 81, 160, 161, 200):
        assert re.search(rf"(^| ){index} -?\d\.\d\d ", table), index


def test_a_comparison_row_gives_both_lenses_and_the_clearer(store, make_session):
    """Every 11th answer of the fixture is a comparison of S -1.75 / C -1.38 x 90 (trial 11) with
    S -0.50 / C -0.75 x 10, answered "equal"; the summary gives the result's count of them."""
    pages = _pages(store, make_session(n_trials=12, undo_at=(), comparisons_used=1))
    assert "12 used (11 letters, 1 comparison) Stopped by" in pages[0]
    assert re.search(r"(^| )11 0\.30 -1\.75/-0\.50 -1\.38/-0\.75 090/010 C equal - ", pages[1]), pages[1]


def test_a_slider_row_gives_the_knob_the_lens_chosen_and_the_path(store, slider_session, tmp_path):
    """The SIMULATED engine session of letters, comparisons and sliders: each slider's row is
    followed by "slider <knob>: clearest <lens> (<k> of <n>, path <first> to <last> D or °)", the
    summary counts the answers of each kind."""
    from visiontune.refraction.result import parse_result

    record = load_session(store, slider_session)
    pages = _pages(store, slider_session)
    table = " ".join(pages[1:])
    r = parse_result(record.info.result)
    assert r.sliders_used >= 1 and r.comparisons_used >= 1
    letters = r.trials_used - r.sliders_used - r.comparisons_used
    assert (
        f"{r.trials_used} used ({letters} letters, {r.comparisons_used} comparisons, {r.sliders_used} sliders), "
        f"1 voided Stopped by {r.stopped_by}"
    ) in pages[0]
    sliders, notes = [t for t in record.trials if t.slider_choice is not None], []
    assert table.count("slider ") == 2 * len(sliders) and table.count(": clearest ") == len(sliders)
    for t in sliders:
        chosen, ends = t.slider_lenses[t.slider_choice], (t.slider_lenses[0], t.slider_lenses[-1])
        if t.slider_knob == "axis":
            path = f"{ends[0].axis_deg or 180:.0f} to {ends[1].axis_deg or 180:.0f}\u00b0"
        else:
            path = f"{getattr(ends[0], f'{t.slider_knob}_d'):+.2f} to {getattr(ends[1], f'{t.slider_knob}_d'):+.2f} D"
        cells = (
            f"{t.index + 1} {t.s_logmar:.2f} {' '.join(rx_cells(chosen))} "
            f"{t.letter_shown} slider - {'void ' if t.void else ''}"
        )
        note = (
            f"slider {t.slider_knob}: clearest {rx_text(chosen)} ({t.slider_choice + 1} of "
            f"{len(t.slider_lenses)}, path {path})"
        )
        row = rf"(^| ){re.escape(cells)}\d\d:\d\d:\d\d {re.escape(note)}"
        assert re.search(row, table), row
        notes.append(note)
    assert "SIMULATED" in pages[0] and "SIMULATED" in pages[1]
    # poppler's extractor reads the same lines
    (tmp_path / "r.pdf").write_bytes(pdf_bytes(record))
    text = subprocess.run(
        ["pdftotext", "-layout", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert all(note in text for note in notes) and "SIMULATED" in text


def test_pdf_with_no_answers(store, make_session):
    pages = _pages(store, make_session(n_trials=0, undo_at=(), acuity_curve=[]))
    assert len(pages) == 2 and "no answers recorded" in pages[1] and "no data" in pages[0]


def test_pdf_is_a_pdf_with_metadata(store, make_session):
    data = pdf_bytes(load_session(store, make_session()))
    assert data.startswith(b"%PDF-")
    meta = PdfReader(io.BytesIO(data)).metadata
    assert "P-0042" in meta.title


@pytest.mark.parametrize("eye", ["OS", "OU"])
def test_eye_is_printed(store, make_session, eye):
    assert f"Eye {eye}" in _pages(store, make_session(eye=eye))[0]


def test_an_optics_session_prints_its_start_region_and_power_vector_radii(store):
    """Any-axis session from an autorefraction: the start, the region with the axis ± and its
    radii on M and J are printed as the result holds them."""
    from visiontune.optics import Prescription
    from visiontune.refraction.loop import SimulatedPresenter
    from visiontune.refraction.protocol import load_protocol
    from visiontune.refraction.simulated import simulated_case
    from visiontune.refraction.start import StartingPoint
    from visiontune.session.engine import RefractionSession

    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=2, protocol=protocol, true_rx=Prescription(-2.0, -1.5, 30.0))
    start = StartingPoint(Prescription(-2.25, -1.25, 35.0), "autorefraction", 50.0)
    with RefractionSession.start(
        store, patient_id="P-7", eye="OS", protocol=protocol, simulated=True, seed=2, start=start
    ) as session:
        session.run(SimulatedPresenter(case.patient(10)), max_steps=25)
        result = session.finish()
        sid = session.session_id
    page = _pages(store, sid)[0]
    assert "Starting prescription S -2.25 / C -1.25 x 035 (autorefraction)" in page
    ci = result["credible_interval"]
    assert f"axis ±{ci['axis_pm_deg']:.0f}°" in page
    assert f"M ±{ci['m_pm_d']:.2f} D, J ±{ci['cylinder_vector_pm_d']:.2f} D" in page
    assert f"at axis {result['posterior_map']['axis_deg']:.0f}°" in page
    if result["rounded"]["cylinder_d"] != 0.0:  # the map lies in the plane of the prescription found
        assert result["posterior_map"]["axis_deg"] == result["rounded"]["axis_deg"]


@pytest.mark.parametrize("age", [22.0, 60.0])
def test_a_session_the_over_minus_guard_covers_records_and_prints_how_likely_it_over_minuses(store, age):
    """The shipped protocol guards a patient aged 35 or less: the result holds the posterior probability
    that the lens filed is over 0.25 D too minus (recomputed here from the session's draws) and the
    PDF prints it; a patient of 60 has neither."""
    from visiontune.optics import Prescription
    from visiontune.refraction.loop import SimulatedPresenter
    from visiontune.refraction.protocol import load_protocol
    from visiontune.refraction.simulated import simulated_case
    from visiontune.refraction.start import StartingPoint
    from visiontune.session.engine import RefractionSession

    protocol = load_protocol("clinical-sloan-compare")
    case = simulated_case(seed=4, protocol=protocol, true_rx=Prescription(0.5, -0.5, 90.0))
    start = StartingPoint(Prescription(0.0, -0.5, 90.0), "autorefraction", age)
    with RefractionSession.start(
        store, patient_id="P-8", eye="OD", protocol=protocol, simulated=True, seed=4, start=start
    ) as session:
        session.run(SimulatedPresenter(case.patient(10)), max_steps=12)
        draws = session.engine.correction_draws(session.trials())
        result = session.finish()
        sid = session.session_id
    page = _pages(store, sid)[0]
    if age > 35.0:
        assert "over_minus_risk" not in result and "Over-minus check" not in page
        return
    m_filed = Prescription(**result["rounded"]).power_vector_array()[0]
    assert result["over_minus_risk"] == pytest.approx(draws.weights @ (draws.theta[:, 0] > m_filed + 0.25 + 1e-9))
    assert 0.0 < result["over_minus_risk"] <= 0.025  # the guard's bound on the lens filed, 12 answers in
    assert (
        f"Over-minus check {100 * result['over_minus_risk']:.1f}% likely over 0.25 D too minus (patient may "
        "accommodate)"
    ) in page


def test_the_map_draws_only_the_lenses_in_its_plane():
    """Letters within 10° of the map's axis where they are, within 10° of the axis + 90°
    transposed (the same lens in the other cylinder form), no cylinder anywhere; the rest not."""
    from types import SimpleNamespace as NS

    from visiontune.report.figures import letters_on_map
    from visiontune.report.map_marks import LetterMark

    trials = [
        NS(lens=NS(sphere_d=0.5, cylinder_d=c, axis_deg=a), correct=k, void=False)
        for c, a, k in (
            (-1.0, 30.0, True),
            (-1.0, 40.0, False),
            (-1.0, 41.0, True),
            (0.0, 120.0, True),
            (-0.5, 178.0, True),
            (1.0, 125.0, False),
        )
    ]
    assert letters_on_map(trials, 30.0) == [
        LetterMark((0.5, -1.0), True),
        LetterMark((0.5, -1.0), False),
        LetterMark((0.5, 0.0), True),
        LetterMark((1.5, -1.0), False),
    ]
    # 178° is 7° from 5°
    assert letters_on_map(trials, 5.0) == [LetterMark((0.5, 0.0), True), LetterMark((0.5, -0.5), True)]
    assert len(letters_on_map(trials, None)) == len(trials)
