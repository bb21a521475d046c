"""The start page's "Import from instrument..." button: a file picked fills the starting
prescriptions and their source, the visit request carries them; a bad file is refused in the
form's error line and the form is left as it was."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from encoders import dicom_measurements, joia_xml

from visiontune.app import instrument_import
from visiontune.app.start_view import StartView
from visiontune.instrument_files import read_instrument_file
from visiontune.instrument_files.visit_import import start_form_texts
from visiontune.optics import Prescription


@pytest.fixture
def view(qtbot):
    v = StartView(["clinical-sloan-compare"])
    qtbot.addWidget(v)
    v.patient_id.setText("P-0042")
    return v


def test_the_button_is_on_the_start_page_and_a_picked_ref_fills_the_visit(view, qtbot, tmp_path, monkeypatch):
    ref = tmp_path / "ark.xml"
    ref.write_bytes(joia_xml("REF", {"R": (-2.25, -0.75, 175), "L": (+0.50, -1.25, 0)}, pd=64))
    monkeypatch.setattr(instrument_import, "choose_instrument_file", lambda parent=None: str(ref))
    assert view.import_button.text() == "Import from instrument\u2026"
    view.import_button.click()
    assert view.is_visit()
    assert (view.sphere.text(), view.cylinder.text(), view.axis.text()) == ("-2.25", "-0.75", "175")
    assert (view.os_sphere.text(), view.os_cylinder.text(), view.os_axis.text()) == ("+0.50", "-1.25", "180")
    assert view.start_source.currentData() == "autorefraction"
    assert "autorefraction (NIDEK ARK-1, ark.xml)" in view.instrument_summary.text()
    request = view.visit_request()
    assert request.starts == {"OD": Prescription(-2.25, -0.75, 175), "OS": Prescription(0.5, -1.25, 180)}
    assert request.start_source == "autorefraction"
    assert view.instrument_reading.pd_mm == 64.0


def test_a_lensmeter_file_gives_the_spectacles_as_start(view, tmp_path):
    lm = tmp_path / "len.dcm"
    lm.write_bytes(dicom_measurements("LM", {"OD": (-1.0, 0.5, 90.0), "OS": (-1.25, 0.0, 180.0)}, adds={"OD": 2.0}))
    assert instrument_import.import_into_start_view(view, lm) is not None
    assert view.start_source.currentData() == "spectacles"
    assert view.visit_request().starts["OD"] == Prescription(-1.0, 0.5, 90)


def test_a_bad_file_is_refused_and_the_form_kept(view, tmp_path):
    view.sphere.setText("-1.00")
    bad = tmp_path / "bad.xml"
    bad.write_bytes(joia_xml("REF", {"R": ("abc", -0.5, 10), "L": (-1.0, 0.0, 180)}))
    assert instrument_import.import_into_start_view(view, bad) is None
    assert (
        "Import from instrument: bad.xml: Measure(REF)/REF/R/Median/Sphere: 'abc' is not a number"
        in view.form_error.text()
    )
    assert view.sphere.text() == "-1.00" and view.instrument_reading is None


def test_start_form_texts_read_back_by_the_form_are_the_files_lenses(tmp_path):
    """Oracle: the texts written into the form parse back to the very lenses of the file."""
    path = tmp_path / "a.xml"
    path.write_bytes(joia_xml("REF", {"R": (-7.75, +2.25, 33), "L": (+3.0, -0.25, 179)}, cylinder_mode=None))
    reading = read_instrument_file(path)
    texts = start_form_texts(reading)
    for eye in ("OD", "OS"):
        s, c, a = texts[eye]
        assert Prescription(float(s), float(c), float(a)) == reading.lenses[eye]


def test_the_pd_fills_the_pages_pd_field_when_it_has_one(view, qtbot, tmp_path):
    from PySide6.QtWidgets import QLineEdit

    view.pd = QLineEdit()  # the typed-PD field of the start page (added by the visit inputs' form)
    lm = tmp_path / "cl.xml"
    lm.write_bytes(joia_xml("LM", {"R": (-1.0, -0.5, 90), "L": (-1.0, -0.5, 90)}, pd_r=31.5, pd_l=32.0))
    instrument_import.import_into_start_view(view, lm)
    assert view.pd.text() == "31.5/32"
    ref = tmp_path / "ark.xml"
    ref.write_bytes(joia_xml("REF", {"R": (-1.0, -0.5, 90), "L": (-1.0, -0.5, 90)}, pd=62.5))
    instrument_import.import_into_start_view(view, ref)
    assert view.pd.text() == "62.5"
