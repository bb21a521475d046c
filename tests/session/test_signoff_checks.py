"""A signed-off prescription is a possible one (never ``-99 0 x 90``): the same range and step checks
as a session's lenses, the axis a whole degree, the clinic's cylinder form; a refused sign-off
names what was wrong and records nothing."""

from __future__ import annotations

import hashlib

import pytest

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.session.visit import final_prescription

RESULT = {"rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0}, "predicted_va_logmar": 0.02}


@pytest.fixture
def visit(store, protocol):
    """Visit 1 of P-0042 with a finished refraction of OD (minus-cylinder clinic)."""
    store.create_patient("P-0042")
    vid = store.create_visit("P-0042", age_years=47, clinician="Dr A. Optom")
    sid = store.create_session("P-0042", eye="OD", protocol=protocol, seed=3)
    with store.open_session(sid) as handle:
        handle.finish(RESULT)
    store.link_visit_session(vid, "OD", sid)
    return vid


@pytest.mark.parametrize(
    "rx, message",
    [
        (Prescription(-99.0, 0.0, 90.0), r"spherical equivalent -99.00 D\) is outside the range"),
        (Prescription(0.0, -30.0, 90.0), "outside the range this refraction covers"),
        (Prescription(-13.0, 0.0, 180.0), "outside the range"),
        (Prescription(9.0, 0.0, 180.0), "outside the range"),
        (Prescription(-2.0, -7.0, 180.0), "cylinder up to 6 D"),
        (Prescription(-1.12, -0.5, 90.0), r"sphere -1.12 D is not a trial lens \(steps of 0.25 D\)"),
        (Prescription(-1.0, -0.6, 90.0), r"cylinder -0.6 D is not a trial lens"),
        (Prescription(-1.0, -0.5, 90.5), "axis 90.5 is not a whole degree"),
        (Prescription(-1.5, 0.5, 180.0), "is in plus-cylinder form but this visit writes minus cylinders"),
    ],
)
def test_an_impossible_sign_off_is_refused_naming_what_was_wrong(store, visit, rx, message):
    before = list(store.conn.iterdump())
    with pytest.raises(InvalidInputError, match=message):
        store.sign_off(visit, "OD", rx, "X")
    assert list(store.conn.iterdump()) == before and store.visit_signoffs(visit) == []
    assert final_prescription(store, visit, "OD") == Prescription(-1.25, -0.5, 90.0)


@pytest.mark.parametrize(
    "rx",
    [
        Prescription(-12.0, 0.0, 180.0),
        Prescription(8.0, 0.0, 180.0),
        Prescription(-1.0, -6.0, 1.0),
        Prescription(-3.25, 0.0, 37.5),
    ],
)
def test_a_possible_sign_off_at_the_edges_is_recorded(store, visit, rx):
    """The edges of the range are possible; the axis of a sphere (no cylinder) is not a lens's."""
    store.sign_off(visit, "OD", rx, "Dr B")
    assert final_prescription(store, visit, "OD") == rx


@pytest.mark.parametrize("rx", ["-99 0 x 90", "0 -30 x 90"])
def test_the_audits_sign_offs_exit_2_and_leave_the_log_unchanged(store, visit, db_path, capsys, rx):
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    assert main(["visit", "signoff", str(visit), "--eye", "OD", "--rx", rx, "--by", "X", "--db", str(db_path)]) == 2
    err = capsys.readouterr().err
    assert "outside the range" in err and "nothing was recorded" in err
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    assert store.visit_signoffs(visit) == []
