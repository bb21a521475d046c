"""PDF record of a visit: both eyes side by side, clinic form, acuity notations, SIMULATED marks."""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
from types import SimpleNamespace

import pytest
from report_helpers import make_result
from visit_helpers import make_visit, measured_eye, skipped_eye

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import Prescription
from visiontune.refraction.result import parse_result
from visiontune.report.visit_pdf import (
    acuity_text,
    rx_text,
    visit_pdf_bytes,
    visit_table,
    write_visit_pdf,
)

HAS_PDFTOTEXT = shutil.which("pdftotext") is not None


def _session(n: int = 12):
    """What the figures read of a session record: its result and its trials' lenses and answers."""
    trials = tuple(
        SimpleNamespace(
            lens=SimpleNamespace(sphere_d=-2 + (i % 5) * 0.5, cylinder_d=-1 + (i % 3) * 0.5),
            correct=i % 2 == 0,
            void=i == 3,
        )
        for i in range(n)
    )
    return SimpleNamespace(result=parse_result(make_result(trials_used=n)), trials=trials)


def _pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


def _page_texts(path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return text.split("\f")[:-1] if text.endswith("\f") else text.split("\f")


def test_table_has_both_eyes_in_clinic_form_with_found_and_signed_beside():
    rows = {label: (od, os_) for label, od, os_ in visit_table(make_visit())}
    assert rows["Prescription"] == ("S \u22121.00 / C \u22120.50 \u00d7 090", "S \u22121.75 / C \u22120.75 \u00d7 175")
    assert rows["Found by VisionTune"] == (
        "S \u22121.25 / C \u22120.50 \u00d7 090",
        "S \u22122.00 / C \u22120.75 \u00d7 175",
    )
    assert rows["Signed off"][0] == "not edited" and rows["Signed off"][1].startswith(
        "S \u22121.75 / C \u22120.75 \u00d7 175  by Dr A. Optom"
    )
    assert rows["Balance"] == ("+0.25 D sphere", "no change")
    assert rows["95% credible \u00b1"][0] == "sphere \u00b10.25 D, cyl \u00b10.38 D, axis \u00b112\u00b0"
    assert "M \u22121.50 \u00b10.20" in rows["Power vector"][0] and "J45" in rows["Power vector"][1]
    assert rows["Measured acuity"] == (acuity_text(0.02), "not measured")
    assert rows["Predicted acuity"][1] == "0.00 logMAR \u00b7 6/6.0 \u00b7 20/20 \u00b7 decimal 1.00"


def test_the_session_row_counts_the_answers_of_each_kind():
    visit = make_visit(od=measured_eye("OD", comparisons_used=10, sliders_used=4))
    rows = {label: (od, os_) for label, od, os_ in visit_table(visit)}
    assert rows["Session"] == (
        "64 answers (50 letters, 10 comparisons, 4 sliders), stopped by precision; session 7",
        "64 answers, stopped by precision; session 8",
    )


def test_plus_cylinder_clinic_shows_plus_cylinder():
    visit = make_visit(cylinder_form="plus", os=skipped_eye("OS", "prosthetic eye"), balance=None)
    rows = {label: (od, os_) for label, od, os_ in visit_table(visit)}
    assert rows["Prescription"] == ("S \u22121.75 / C +0.50 \u00d7 180", "\u2014")
    assert rows["Found by VisionTune"][1] == "eye not measured: prosthetic eye"
    assert rows["Habitual Rx"][0] == "S \u22121.25 / C +0.25 \u00d7 175"


def test_notations():
    assert rx_text(Prescription(2.0, 0.0, 180.0)) == "S +2.00 DS"
    assert rx_text(None) == "\u2014"
    assert acuity_text(0.3) == "0.30 logMAR \u00b7 6/12.0 \u00b7 20/40 \u00b7 decimal 0.50"
    assert acuity_text(-0.1) == "\u22120.10 logMAR \u00b7 6/4.8 \u00b7 20/16 \u00b7 decimal 1.26"


def test_pdf_is_written_private_with_one_page_or_two_with_figures(tmp_path):
    out = write_visit_pdf(make_visit(), tmp_path / "visit.pdf")
    data = out.read_bytes()
    assert data.startswith(b"%PDF-") and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert _pages(data) == 1
    assert _pages(visit_pdf_bytes(make_visit(), sessions={"OD": _session(), "OS": _session(8)})) == 2


@pytest.mark.skipif(not HAS_PDFTOTEXT, reason="pdftotext (poppler-utils) not installed")
def test_simulated_banner_on_every_page(tmp_path):
    out = write_visit_pdf(
        make_visit(simulated=True), tmp_path / "sim.pdf", sessions={"OD": _session(), "OS": _session()}
    )
    pages = _page_texts(out)
    assert len(pages) == 2
    for text in pages:
        assert "SIMULATED - simulated patient, not a clinical record" in text
        assert re.search(r"page \d of 2 - SIMULATED", text)


@pytest.mark.skipif(not HAS_PDFTOTEXT, reason="pdftotext (poppler-utils) not installed")
def test_real_visit_has_no_simulated_mark_and_reads_as_printed(tmp_path):
    out = write_visit_pdf(make_visit(), tmp_path / "real.pdf", sessions={"OD": _session(), "OS": _session()})
    pages = _page_texts(out)
    assert len(pages) == 2 and all("SIMULATED" not in t for t in pages)
    first = pages[0]
    for text in (
        "Right eye (OD)",
        "Left eye (OS)",
        "S \u22121.00 / C \u22120.50 \u00d7 090",
        "S \u22121.75 / C \u22120.75 \u00d7 175",
        "6/6.3",
        "20/21",
        "decimal 0.95",
        "alternate occlusion, equal-plus comparison",
        "P-0042",
    ):
        assert text in first, text
    assert "acuity maps" in pages[1]


def test_sessions_must_be_of_measured_eyes():
    with pytest.raises(InvalidInputError, match="'OS' is not a measured eye"):
        visit_pdf_bytes(make_visit(os=skipped_eye(), balance=None), sessions={"OS": _session()})


def test_no_measured_eye_is_refused_and_no_file_is_left(tmp_path):
    visit = make_visit(od=skipped_eye("OD"), os=skipped_eye("OS"), balance=None)
    with pytest.raises(InvalidInputError, match="no eye was measured"):
        write_visit_pdf(visit, tmp_path / "visit.pdf")
    assert list(tmp_path.iterdir()) == []


def test_zero_cylinder_eye_reads_as_sphere_only():
    visit = make_visit(od=measured_eye("OD", prescription=Prescription(1.5, 0.0, 180.0)), balance=None)
    assert visit_table(visit)[0][1] == "S +1.50 DS"
