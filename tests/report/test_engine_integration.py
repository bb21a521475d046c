"""End to end: a session run by the real engine against a simulated patient exports cleanly
(the engine's result follows the schema this layer reads)."""

from __future__ import annotations

import json

import pytest
from fhir.resources.R4B.visionprescription import VisionPrescription

from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.report import ExportPaths, export_session
from visiontune.report.tabular import session_from_json, trials_from_csv
from visiontune.session.engine import RefractionSession, SimulatedPresenter
from visiontune.session.store import TrialStore


@pytest.mark.slow  # about 100 s: hyperparameter fit and credible-region sampling in the engine
def test_engine_session_exports(tmp_path):
    from visiontune.optics import Prescription, SimulatedPatient

    text = load_protocol("paper-ucb-ald").source_text.replace("max_trials = 260", "max_trials = 8")
    protocol = parse_protocol(text, source="tiny protocol")
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        start = {"patient_id": "SIM-1", "eye": "OS", "protocol": protocol, "simulated": True, "seed": 2}
        with RefractionSession.start(store, **start) as s:
            patient = SimulatedPatient(Prescription(-1.0, -0.5, protocol.search_space.axis_deg), seed=3)
            result = s.run(SimulatedPresenter(patient))
            sid = s.session_id
    paths = ExportPaths(*(tmp_path / name for name in ("r.pdf", "r.csv", "r.json", "r.fhir.json")))
    export_session(db, sid, paths)
    with TrialStore.open(db) as store:
        trials = store.trials(sid, include_void=True)
    assert trials_from_csv(paths.csv.read_text()) == (trials, True)
    assert session_from_json(json.loads(paths.json.read_text())).result.raw == result
    spec = VisionPrescription.model_validate_json(paths.fhir.read_text()).lensSpecification[0]
    rounded = result["rounded"]
    assert (spec.eye, float(spec.sphere), float(spec.cylinder)) == ("left", rounded["sphere_d"], rounded["cylinder_d"])
