"""A SIMULATED session of a protocol cut short, started in a store, for the report tests."""

from __future__ import annotations

import re
from pathlib import Path

from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession


def short_session(
    store, tmp_path: Path, protocol_path: Path, patient_id: str, *, max_trials: int, min_trials: int, seed: int = 3
) -> tuple[RefractionSession, SimulatedPresenter]:
    """``(session, presenter)``: ``protocol_path`` cut to ``max_trials`` answers (``min_trials`` at
    least) and 1000 particles, written to ``tmp_path``, its SIMULATED case ``seed`` started in ``store``
    for ``patient_id`` (eye OD), and that case's patient answering."""
    text = protocol_path.read_text(encoding="utf-8")
    text = re.sub(r"max_trials = \d+", f"max_trials = {max_trials}", text)
    text = re.sub(r"min_trials = \d+", f"min_trials = {min_trials}", text)
    text = re.sub(r"n_particles = \d+", "n_particles = 1000", text)
    path = tmp_path / f"short-{protocol_path.name}"
    path.write_text(text, encoding="utf-8")
    protocol = load_protocol(str(path))
    case = simulated_case(seed=seed, protocol=protocol)
    store.create_patient(patient_id)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    session = RefractionSession.start(
        store, patient_id=patient_id, eye="OD", protocol=protocol, simulated=True, seed=seed, start=start
    )
    return session, SimulatedPresenter(case.patient(protocol.n_alternatives))
