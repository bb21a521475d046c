"""`visiontune simulate --protocol`: any protocol, any axis, through the one loop over a memory log."""

from __future__ import annotations

import json

from visiontune.cli import main
from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint


def test_simulate_a_protocol_with_an_oblique_patient(tmp_path, capsys):
    out = tmp_path / "run.json"
    code = main(
        [
            "simulate",
            "--protocol",
            "clinical-sloan",
            "--seed",
            "3",
            "--true-rx",
            "-2.25 -1.25 x 35",
            "--trials",
            "15",
            "--quiet",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert text.startswith("SIMULATED session (clinical-sloan, evr, 15 answers")
    assert "true correction:  S -2.25 / C -1.25 x 035" in text
    saved = json.loads(out.read_text())
    assert saved["result"]["simulated"] is True and saved["result"]["trials_used"] == 15
    # the same run by hand through the loop files the same lens
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=3, protocol=protocol, true_rx=Prescription(-2.25, -1.25, 35.0))
    r = Refraction(
        MemoryLog(),
        protocol,
        seed=case.seed,
        simulated=True,
        start=StartingPoint(case.start_rx, case.start_source, case.age_years),
    )
    r.run(SimulatedPresenter(case.patient(protocol.n_alternatives)), max_steps=15)
    assert r.finish("clinician")["rounded"] == saved["result"]["rounded"]
    assert f"found correction: {Prescription(**saved['result']['rounded']).format()}" in text


def test_simulate_a_gp_protocol_refuses_an_oblique_patient(capsys):
    code = main(["simulate", "--protocol", "paper-ucb-ald", "--true-rx", "-1 -1 x 35", "--trials", "3", "--quiet"])
    assert code == 2 and "fixed axis" in capsys.readouterr().err
