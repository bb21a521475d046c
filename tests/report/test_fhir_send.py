"""``visiontune visit send --fhir``: the visit's FHIR resources POSTed as a transaction to a real
FHIR R4 server on the loopback (SEKMET, ``sekmet-fhir`` from PyPI: a SQLite-backed server that
validates what it receives and runs a transaction all-or-nothing), then read back with GET.
"""

from __future__ import annotations

import json

import pytest
from archive_servers import HAS_SEKMET, free_port, sekmet

from visiontune.cli import main
from visiontune.report.archive_config import ArchiveSendError, FhirDestination
from visiontune.report.fhir_send import post_transaction, read_back, transaction_bundle
from visiontune.report.fhir_visit import PATIENT_ID_SYSTEM, visit_bundle_json
from visiontune.report.visit_export import load_visit
from visiontune.session.archive_sends import archive_sends
from visiontune.session.store import TrialStore

pytestmark = pytest.mark.skipif(
    not HAS_SEKMET, reason="the FHIR test server (sekmet-fhir, the test extra) is not installed"
)


@pytest.fixture(scope="module")
def visit_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("visit") / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--seed", "5", "--quiet", "--db", str(db)]) == 0
    return db


@pytest.fixture
def db(visit_db, tmp_path):
    copy = tmp_path / "log.sqlite3"
    copy.write_bytes(visit_db.read_bytes())
    return copy


@pytest.fixture
def server(tmp_path):
    folder = tmp_path / "fhir-server"
    folder.mkdir()
    srv, base = sekmet(folder)
    yield base
    srv.stop()


def _record(db):
    with TrialStore.open(db, read_only=True) as store:
        return load_visit(store, 1).record


def _config(tmp_path, base: str, timeout: float = 20):
    path = tmp_path / "archive.json"
    path.write_text(json.dumps({"fhir": {"base_url": base, "timeout_s": timeout}}))
    return path


def _send(db, config) -> int:
    return main(["visit", "send", "1", "--db", str(db), "--fhir", "--archive-config", str(config)])


def test_bundle_arrives_and_reads_back_with_the_visit_values(db, tmp_path, server, capsys):
    record = _record(db)
    assert _send(db, _config(tmp_path, server)) == 0
    out = capsys.readouterr().out
    with TrialStore.open(db, read_only=True) as store:
        sends = archive_sends(store, 1)
    assert [(s.what, s.destination, s.status) for s in sends] == [("fhir", server, "started"), ("fhir", server, "sent")]
    locations = {r["location"] for r in sends[1].detail["resources"]}
    assert len(locations) == len(json.loads(visit_bundle_json(record))["entry"])
    for loc in locations:
        assert f"{server}/{loc}" in out
    dest = FhirDestination(server, 20)
    back = {loc: read_back(dest, loc) for loc in locations}
    patient = next(r for r in back.values() if r["resourceType"] == "Patient")
    assert patient["identifier"] == [{"system": PATIENT_ID_SYSTEM, "value": record.patient_id}]
    rx = next(r for r in back.values() if r["resourceType"] == "VisionPrescription")
    assert rx["patient"]["reference"] == f"Patient/{patient['id']}"  # the urn:uuid rewritten by the server
    for spec in rx["lensSpecification"]:
        want = record.balanced_prescription({"right": "OD", "left": "OS"}[spec["eye"]])
        assert spec["sphere"] == pytest.approx(want.sphere_d, abs=1e-9)
        assert spec["cylinder"] == pytest.approx(want.cylinder_d, abs=1e-9)
    for resource in back.values():  # every resource marked simulated, as in the file export
        assert {
            "system": "http://terminology.hl7.org/CodeSystem/v3-ActReason",
            "code": "HTEST",
            "display": "test health data",
        } in resource["meta"]["tag"]
    assert out.count("SIMULATED FHIR") == len(locations)


def test_sending_again_updates_the_same_resources(db, tmp_path, server):
    config = _config(tmp_path, server)
    assert _send(db, config) == 0 and _send(db, config) == 0
    with TrialStore.open(db, read_only=True) as store:
        sent = [s for s in archive_sends(store, 1) if s.status == "sent"]
    first, second = ([r["location"] for r in s.detail["resources"]] for s in sent)
    assert first == second  # conditional create found the patient, the rest updated in place
    statuses = [r["status"] for r in sent[1].detail["resources"]]
    assert statuses[0].startswith("200") and all(s.startswith("200") for s in statuses[1:])
    dest = FhirDestination(server, 20)
    assert read_back(dest, second[1])["meta"]["versionId"] == "2"


def test_server_refuses_an_invalid_resource_and_keeps_nothing(db, server):
    dest = FhirDestination(server, 20)
    bundle = transaction_bundle(json.loads(visit_bundle_json(_record(db))))
    observation = next(e for e in bundle["entry"] if e["resource"]["resourceType"] == "Observation")
    del observation["resource"]["status"]  # required (1..1) in R4
    location = observation["request"]["url"]
    with pytest.raises(ArchiveSendError, match=r"HTTP 4\d\d .*status"):
        post_transaction(bundle, dest)
    with pytest.raises(ArchiveSendError, match="HTTP 404"):  # all-or-nothing: not even the valid entries
        read_back(dest, location)


def test_nothing_listening_is_a_clear_error_recorded_in_the_log(db, tmp_path, capsys):
    base = f"http://127.0.0.1:{free_port()}/fhir"
    assert _send(db, _config(tmp_path, base, timeout=5)) == 1
    err = capsys.readouterr().err
    assert f"FHIR server {base}: POST {base} failed: connection refused" in err
    with TrialStore.open(db, read_only=True) as store:
        sends = archive_sends(store, 1)
    assert [s.status for s in sends] == ["started", "failed"] and "connection refused" in sends[1].detail["error"]
