"""A visit started in the app: what it took from an instrument file, and the lens device's change time.

* The start page filled from an autorefractor's or lensmeter's file (:mod:`visiontune.app.instrument_import`)
  sends the file with the visit; the engine records the visit's inputs as ``visit run --import``
  does: the eyes, PD and habitual spectacles still the file's with its name, what the clinician
  edited as typed (read back from the trial log).
* With a lens device set (CV-5000), a visit's sessions price a change of lens at the device's change
  time, as a session started alone does (``lens_change_seconds`` in each eye's protocol snapshot).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from visiontune.app import instrument_import
from visiontune.app.logic.messages import CreateVisit, Failed, OpenStore, SetDevice
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.visit_imports import ImportedStart, input_entries
from visiontune.app.start_view import StartView
from visiontune.errors import InvalidInputError
from visiontune.session.store import TrialStore
from visiontune.session.visit_records import visit_input_rows, visit_inputs

_spec = importlib.util.spec_from_file_location(
    "instrument_encoders", Path(__file__).resolve().parent.parent / "instrument_files" / "encoders.py"
)
encoders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(encoders)

REF = {"R": (-2.25, -0.75, 175), "L": (-1.75, -0.50, 10)}


@pytest.fixture
def view(qtbot):
    v = StartView(["clinical-sloan-compare"])
    qtbot.addWidget(v)
    v.patient_id.setText("SIM-IMP")
    v.simulated.setChecked(True)
    return v


def _create(tmp_path, request, device: str | None = None):
    """``visit_create`` in a SessionHost on a new log; returns (host, events, db)."""
    db = tmp_path / "log.sqlite3"
    events = []
    host = SessionHost(events.append, reply_timeout_s=0.3)
    if device is not None:
        host.handle(SetDevice(device))
    host.handle(OpenStore(str(db)))
    host.handle(CreateVisit(request))
    assert not [e.value for e in events if isinstance(e, Failed)], events
    return host, events, db


def test_a_ref_file_left_as_imported_is_recorded_with_its_name(view, tmp_path):
    ref = tmp_path / "ark.xml"
    ref.write_bytes(encoders.joia_xml("REF", REF, pd=64))
    assert instrument_import.import_into_start_view(view, ref) is not None
    view.examiner.setText("J. Examiner")
    request = view.visit_request()
    assert request.imported == ImportedStart("ark.xml", "REF", ("OD", "OS"), "64")
    host, _events, db = _create(tmp_path, request)
    host.shutdown()
    with TrialStore.open(db, read_only=True) as store:
        given = visit_inputs(store, 1)
        rows = visit_input_rows(store, 1)
    assert (given.pd_mm, given.pd_file) == (64.0, "ark.xml")
    assert [given.start_source(e) for e in ("OD", "OS")] == ["autorefraction", "autorefraction"]
    assert [given.start_file(e) for e in ("OD", "OS")] == ["ark.xml", "ark.xml"]
    assert given.examiner == "J. Examiner" and given.habitual_source is None
    assert [r["from_file"] for r in rows] == ["ark.xml", None]  # the file's entry, then the typed one


def test_values_edited_after_the_import_are_recorded_as_typed(view, tmp_path):
    ref = tmp_path / "ark.xml"
    ref.write_bytes(encoders.joia_xml("REF", REF, pd=64))
    instrument_import.import_into_start_view(view, ref)
    view.os_sphere.setText("-2.00")  # the clinician changed the left eye's sphere
    view.pd.setText("62")  # and measured the PD again
    request = view.visit_request()
    assert request.imported == ImportedStart("ark.xml", "REF", ("OD",), None)
    host, _events, db = _create(tmp_path, request)
    host.shutdown()
    with TrialStore.open(db, read_only=True) as store:
        given = visit_inputs(store, 1)
    assert (given.pd_mm, given.pd_file) == (62.0, None)
    assert (given.start_file("OD"), given.start_file("OS")) == ("ark.xml", None)
    assert given.start_source("OS") == "autorefraction"  # the source chosen on the form, typed


def test_a_lensmeter_file_gives_the_habitual_spectacles_with_their_source_and_file(view, tmp_path):
    lm = tmp_path / "len.dcm"
    lm.write_bytes(encoders.dicom_measurements("LM", {"OD": (-1.0, -0.5, 90.0), "OS": (-1.25, 0.0, 180.0)}))
    instrument_import.import_into_start_view(view, lm)
    request = view.visit_request()
    assert request.imported == ImportedStart("len.dcm", "LM", ("OD", "OS"), None)
    host, _events, db = _create(tmp_path, request)
    host.shutdown()
    with TrialStore.open(db, read_only=True) as store:
        given = visit_inputs(store, 1)
        visit = store.get_visit(1)
    assert (given.habitual_source, given.habitual_file) == ("lensmeter", "len.dcm")
    assert given.start_source("OD") == "habitual spectacles" and given.start_file("OD") == "len.dcm"
    assert visit.habitual_od is not None and visit.habitual_od.sphere_d == -1.0


def test_a_typed_visit_records_one_typed_entry(view, tmp_path):
    view.pd.setText("63")
    request = view.visit_request()
    assert request.imported is None
    assert input_entries({"pd_mm": 63.0}, None, "63") == [{"pd_mm": 63.0}]
    assert input_entries({}, None, None) == []
    with pytest.raises(InvalidInputError, match="imported file: kind expected REF or LM"):
        ImportedStart("x.xml", "OCT")


def test_a_visits_sessions_take_the_devices_change_time(tmp_path):
    from visiontune.app.logic.visit_flow import NewVisit

    host, events, db = _create(
        tmp_path,
        NewVisit("SIM-DEV", "clinical-sloan-compare", True, seed=4),
        device=f"cv5000:{tmp_path / 'no-such-port'}",
    )  # the port does not open: assumed 0.5 s
    try:
        assert host.session.protocol.comparisons.lens_change_seconds == 0.5  # the CV-5000's change time
        with TrialStore.open(db, read_only=True) as store:
            eyes = store.visit_eyes(1)
            for eye in ("OD", "OS"):
                protocol = store.get_session(eyes[eye].session_id).protocol
                assert protocol.comparisons.lens_change_seconds == 0.5, eye
                assert "cv5000 device's change time" in protocol.source_text
    finally:
        host.shutdown()
    host, _events, db2 = _create(tmp_path / "manual", NewVisit("SIM-MAN", "clinical-sloan-compare", True, seed=4))
    try:
        assert host.session.protocol.comparisons.lens_change_seconds != 0.5  # the protocol's own, with no device
        assert "device's change time" not in host.session.protocol.source_text
    finally:
        host.shutdown()
