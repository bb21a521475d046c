"""``visiontune visit send --dicom``: a visit's DICOM objects C-STOREd to a real Storage SCP.

The SCPs are dcmtk's (Debian package ``dcmtk``), started by the tests on the loopback:
``storescp`` writes every object it receives to a folder, which pydicom reads back and compares
with what ``visit export --dicom-dir`` writes (the visit started from an autorefractor's and a
lensmeter's file: four objects, refraction, acuity, autorefraction and lensometry); ``dcmqrscp``
checks the called AE title. Each failure (refused
association, a SOP class the SCP does not take, an abort, no answer, nothing listening) is a
clear error, recorded in the trial log, with nothing changed here.
"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pydicom
import pytest
from archive_servers import HAS_DCMQRSCP, HAS_STORESCP, REFRACTION_ONLY_PROFILE, dcmqrscp, free_port, storescp

from visiontune.cli import main
from visiontune.errors import ConfigurationError
from visiontune.report.archive_config import load_archive_config
from visiontune.report.archive_send import send_visit
from visiontune.report.dicom_visit import export_dicom_files
from visiontune.report.visit_export import load_visit
from visiontune.session.archive_sends import archive_sends
from visiontune.session.store import TrialStore

pytestmark = pytest.mark.skipif(not HAS_STORESCP, reason="dcmtk's storescp is not installed (.ci/run installs dcmtk)")

SRF, VA = "1.2.840.10008.5.1.4.1.1.78.4", "1.2.840.10008.5.1.4.1.1.78.5"
LEN, AR = "1.2.840.10008.5.1.4.1.1.78.1", "1.2.840.10008.5.1.4.1.1.78.2"

_spec = importlib.util.spec_from_file_location(
    "instrument_encoders", Path(__file__).resolve().parent.parent / "instrument_files" / "encoders.py"
)
encoders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(encoders)


@pytest.fixture(scope="module")
def visit_db(tmp_path_factory):
    """A simulated visit started from an autorefractor's file, with the habitual spectacles from a
    lensmeter's file."""
    folder = tmp_path_factory.mktemp("visit")
    db, ref, lm = folder / "log.sqlite3", folder / "ark.xml", folder / "lm.dcm"
    ref.write_bytes(encoders.joia_xml("REF", {"R": (-2.25, -0.75, 175), "L": (-1.75, -0.50, 10)}, pd=64))
    lm.write_bytes(encoders.dicom_measurements("LM", {"OD": (-2.0, -0.5, 180.0), "OS": (-1.5, -0.5, 5.0)}))
    assert (
        main(
            [
                "visit",
                "run",
                "--simulate",
                "--seed",
                "5",
                "--quiet",
                "--no-near",
                "--db",
                str(db),
                "--import",
                str(ref),
                "--import",
                str(lm),
            ]
        )
        == 0
    )
    return db


@pytest.fixture
def db(visit_db, tmp_path):
    """A private copy of the visit's log (each test sees only its own sends)."""
    copy = tmp_path / "log.sqlite3"
    copy.write_bytes(visit_db.read_bytes())
    return copy


def _record(db):
    with TrialStore.open(db, read_only=True) as store:
        return load_visit(store, 1).record


def _sends(db):
    with TrialStore.open(db, read_only=True) as store:
        return [(s.what, s.destination, s.status) for s in archive_sends(store, 1)], archive_sends(store, 1)


def _config(tmp_path: Path, port: int, called: str, calling: str = "VISIONTUNE", timeout: float = 10) -> Path:
    path = tmp_path / "archive.toml"
    path.write_text(
        f'[dicom]\nhost = "127.0.0.1"\nport = {port}\ncalled_ae_title = "{called}"\n'
        f'calling_ae_title = "{calling}"\ntimeout_s = {timeout}\n'
    )
    return path


def _send(db, config) -> int:
    return main(["visit", "send", "1", "--db", str(db), "--dicom", "--archive-config", str(config)])


def _received(folder: Path) -> dict[str, pydicom.Dataset]:
    out = {}
    for path in sorted((folder / "received").iterdir()):
        ds = pydicom.dcmread(path)
        out[str(ds.SOPInstanceUID)] = ds
    return out


def test_visit_objects_arrive_in_storescp_as_sent(db, tmp_path, capsys):
    record = _record(db)
    export = tmp_path / "exported"
    export.mkdir()
    assert main(["visit", "export", "1", "--db", str(db), "--dicom-dir", str(export)]) == 0
    sent = {str(ds.SOPInstanceUID): ds for ds in (pydicom.dcmread(p) for p in export.iterdir())}
    assert sorted(str(ds.SOPClassUID) for ds in sent.values()) == [LEN, AR, SRF, VA]  # every object exported
    scp = storescp(tmp_path)
    try:
        assert _send(db, _config(tmp_path, scp.port, "VTPACS")) == 0
    finally:
        scp.stop()
    out = capsys.readouterr().out
    received = _received(tmp_path)
    assert set(received) == set(sent) and len(sent) == 4
    for uid, ds in received.items():
        assert f"VTPACS@127.0.0.1:{scp.port}" in out and uid in out
        assert ds == sent[uid]  # every element of the dataset as the export makes it
        assert ds.PatientID == record.patient_id == "SIM-0001"
        assert "SIMULATED" in ds.SeriesDescription and "SIMULATED" in ds.PatientComments
        assert out.count("SIMULATED DICOM") == 4
    srf = next(ds for ds in received.values() if ds.SOPClassUID == SRF)
    for eye, seq in (("OD", "SubjectiveRefractionRightEyeSequence"), ("OS", "SubjectiveRefractionLeftEyeSequence")):
        rx = record.balanced_prescription(eye)
        item = getattr(srf, seq)[0]
        assert (float(item.SpherePower), float(item.CylinderSequence[0].CylinderPower)) == (rx.sphere_d, rx.cylinder_d)
        assert float(item.CylinderSequence[0].CylinderAxis) == round(rx.axis_deg)
    va = next(ds for ds in received.values() if ds.SOPClassUID == VA)
    assert va.ReferencedRefractiveMeasurementsSequence[0].ReferencedSOPInstanceUID == srf.SOPInstanceUID
    lens = next(ds for ds in received.values() if ds.SOPClassUID == LEN)
    assert [float(lens.RightLensSequence[0].SpherePower), float(lens.LeftLensSequence[0].SpherePower)] == [-2.0, -1.5]
    auto = next(ds for ds in received.values() if ds.SOPClassUID == AR)
    assert float(auto.AutorefractionRightEyeSequence[0].SpherePower) == -2.25
    assert len({ds.StudyInstanceUID for ds in received.values()}) == 1  # one study
    rows, sends = _sends(db)
    where = f"VTPACS@127.0.0.1:{scp.port}"
    assert rows == [("dicom", where, "started"), ("dicom", where, "sent")]
    assert {o["sop_instance_uid"] for o in sends[1].detail["stored"]} == set(sent)
    assert sends[1].detail["simulated"] is True and sends[0].at <= sends[1].at


def _failed_send(db, tmp_path, config, capsys) -> str:
    export = tmp_path / "exported"
    export.mkdir()
    assert main(["visit", "export", "1", "--db", str(db), "--dicom-dir", str(export)]) == 0
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in export.iterdir()}
    capsys.readouterr()
    assert _send(db, config) == 1
    err = capsys.readouterr().err
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in export.iterdir()} == before
    assert set(export_dicom_files(_record(db)).items()) == {(n, b) for n, (b, _) in before.items()}
    assert len(before) == 4
    rows, sends = _sends(db)
    assert [r[2] for r in rows] == ["started", "failed"]
    assert sends[1].detail["error"] in err.replace("DICOM not sent: ", "")
    return err


@pytest.mark.skipif(not HAS_DCMQRSCP, reason="dcmtk's dcmqrscp is not installed")
def test_wrong_called_ae_title_is_a_refused_association(db, tmp_path, capsys):
    scp = dcmqrscp(tmp_path, ae_title="VTARCHIVE")
    try:
        err = _failed_send(db, tmp_path, _config(tmp_path, scp.port, "NOTTHEPACS"), capsys)
    finally:
        scp.stop()
    assert "association was rejected" in err and "Called AE title not recognised" in err
    assert "NOTTHEPACS" in err and "nothing was stored there" in err and "nothing was changed here" in err
    assert not any(p.suffix == ".dcm" for p in (tmp_path / "db").iterdir())


@pytest.mark.skipif(not HAS_DCMQRSCP, reason="dcmtk's dcmqrscp is not installed")
def test_right_called_ae_title_is_taken_by_the_same_checking_scp(db, tmp_path):
    scp = dcmqrscp(tmp_path, ae_title="VTARCHIVE")
    try:
        assert _send(db, _config(tmp_path, scp.port, "VTARCHIVE")) == 0
    finally:
        scp.stop()
    stored = [pydicom.dcmread(p) for p in (tmp_path / "db").iterdir() if p.suffix == ".dcm"]
    assert sorted(str(ds.SOPClassUID) for ds in stored) == [LEN, AR, SRF, VA]


@pytest.mark.skipif(not HAS_DCMQRSCP, reason="dcmtk's dcmqrscp is not installed")
def test_a_failure_status_is_an_error_naming_the_status(db, tmp_path, capsys):
    scp = dcmqrscp(tmp_path, ae_title="VTARCHIVE", quota="(1, 1kb)")  # every object is larger than 1 kB
    try:
        err = _failed_send(db, tmp_path, _config(tmp_path, scp.port, "VTARCHIVE"), capsys)
    finally:
        scp.stop()
    assert "Subjective Refraction Measurements" in err
    assert "C-STORE status 0xA700 Failure, Refused: Out of Resources" in err and "nothing was stored there" in err


def test_storescp_refusing_every_association(db, tmp_path, capsys):
    scp = storescp(tmp_path, "--refuse")
    try:
        err = _failed_send(db, tmp_path, _config(tmp_path, scp.port, "VTPACS"), capsys)
    finally:
        scp.stop()
    assert "association was rejected (Rejected Permanent" in err
    assert list((tmp_path / "received").iterdir()) == []


def test_a_sop_class_the_scp_does_not_take_sends_nothing(db, tmp_path, capsys):
    profile = tmp_path / "refraction-only.cfg"
    profile.write_text(REFRACTION_ONLY_PROFILE)
    scp = storescp(tmp_path, "-xf", str(profile), "RefractionOnly")
    try:
        err = _failed_send(db, tmp_path, _config(tmp_path, scp.port, "VTPACS"), capsys)
    finally:
        scp.stop()
    assert (
        f"does not accept the SOP classes Lensometry Measurements ({LEN}), Autorefraction Measurements ({AR}), "
        f"Visual Acuity Measurements ({VA})"
    ) in err
    assert "no object was sent" in err
    assert list((tmp_path / "received").iterdir()) == []  # not even the refraction object


def test_scp_aborting_after_the_request_is_a_failure(db, tmp_path, capsys):
    scp = storescp(tmp_path, "--abort-after")
    try:
        err = _failed_send(db, tmp_path, _config(tmp_path, scp.port, "VTPACS", timeout=5), capsys)
    finally:
        scp.stop()
    assert "Subjective Refraction Measurements" in err and "no C-STORE answer" in err


def test_port_with_nothing_listening(db, tmp_path, capsys):
    err = _failed_send(db, tmp_path, _config(tmp_path, free_port(), "VTPACS", timeout=5), capsys)
    assert "connection refused: nothing is listening on 127.0.0.1 port" in err


def test_a_listener_that_never_answers_times_out(db, tmp_path, capsys):
    with socket.socket() as silent:  # accepts the TCP connection (backlog), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        err = _failed_send(db, tmp_path, _config(tmp_path, port, "VTPACS", timeout=1), capsys)
    assert "no association answer came within 1 s (timeout" in err


def test_no_dicom_destination_sends_nothing_and_records_nothing(db, tmp_path):
    config = tmp_path / "archive.toml"
    config.write_text('[fhir]\nbase_url = "http://127.0.0.1:9/fhir"\n')
    with pytest.raises(ConfigurationError, match=r"has no \[dicom\] destination.*nothing was sent"):
        send_visit(db, 1, load_archive_config(config), dicom=True)
    assert _sends(db)[0] == []


def test_no_archive_settings_file_sends_nothing(db, tmp_path, capsys):
    assert _send(db, tmp_path / "archive.toml") == 2
    assert "no archive configured" in capsys.readouterr().err
    assert _sends(db)[0] == []
