"""The PDF report: its extracted text holds the prescription, the acuity and the patient id;
a simulated session's PDF carries the SIMULATED mark on every page."""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader

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
    assert "S -1.25 / C -0.50 x 90" in pages[0]  # rounded to 0.25 D
    assert "S -1.312 / C -0.562 x 90" in pages[0] or "S -1.313 / C -0.563 x 90" in pages[0]  # exact
    # 0.12 logMAR = 20/(20·10^0.12) = 20/26.4 = 6/7.9
    assert "0.12 logMAR (Snellen 20/26, 6/8)" in pages[0]
    assert "[0.02, 0.31] logMAR (Snellen 20/21 to 20/41)" in pages[0]
    assert "sphere [-1.75, -0.88] D" in pages[0] and "cylinder [-1.00, -0.12] D" in pages[0]
    assert "10 used, 2 voided; stopped by budget" in pages[0]
    assert "12 min 34 s" in pages[0]
    assert "Eye OD" in pages[0] and "paper-ucb-ald" in pages[0]
    assert "SIMULATED" not in text
    # the trial table: one row per answer, voided answers marked
    assert text.count(" void ") == 2
    assert "Trial table (12 answers)" in pages[1]


def test_simulated_mark_on_every_page(store, make_session):
    sid = make_session(n_trials=200, undo_at=(5,), simulated=True)
    pages = _pages(store, sid)
    assert len(pages) == 3  # summary + a table too long for one page (160 rows a page)
    for i, page in enumerate(pages, start=1):
        assert "SIMULATED - simulated patient, not a clinical record" in page, f"page {i}"
        assert f"page {i} of {len(pages)}" in page
    table = " ".join(pages[1:])
    assert table.count(" void ") == 1
    for index in (1, 80, 81, 160, 161, 200):
        assert re.search(rf"(^| ){index} -?\d\.\d\d ", table), index


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
