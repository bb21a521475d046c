"""Fixtures of the report tests: finished sessions built directly through the store API, and a
SIMULATED one with letters, comparisons and sliders run by the session engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import FakeClock, make_result, trial_input

from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import PendingSlider, RefractionSession, SimulatedPresenter
from visiontune.session.store import TrialStore

#: The test protocol with comparisons and sliders (tests/session/test_engine_sliders.py runs it too).
SLIDER_PROTOCOL = Path(__file__).resolve().parent.parent / "protocols" / "sloan-compare-sliders.toml"


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "log.sqlite3"


@pytest.fixture
def store(db_path):
    with TrialStore.open(db_path, clock=FakeClock()) as s:
        yield s


@pytest.fixture
def make_session(store):
    """``make_session(n_trials=12, undo_at=(3, 8), simulated=False, eye="OD", finish=True,
    patient="P-0042", comparisons=True, **result_overrides) -> session id``; undo after trial
    indices in ``undo_at`` voids that trial; ``result_simulated`` overrides the result's flag;
    ``comparisons=False``: letters and duels only (:func:`trial_input`)."""
    protocol = load_protocol("paper-ucb-ald")

    def make(
        n_trials=12,
        undo_at=(3, 8),
        simulated=False,
        eye="OD",
        finish=True,
        patient="P-0042",
        result_simulated=None,
        comparisons=True,
        **overrides,
    ):
        if patient not in {p.patient_id for p in store.list_patients()}:
            store.create_patient(patient)
        sid = store.create_session(patient, eye=eye, protocol=protocol, seed=11, simulated=simulated)
        with store.open_session(sid) as handle:
            for i in range(n_trials):
                handle.record_trial(trial_input(i, comparisons))
                if i in undo_at:
                    handle.undo("misheard")
            handle.note("hyperparameters", {"theta": 1.5})
            if finish:
                overrides.setdefault("trials_used", n_trials - len([u for u in undo_at if u < n_trials]))
                result = make_result(**overrides)
                if result_simulated is not None:
                    result["simulated"] = result_simulated
                elif simulated:
                    result["simulated"] = True
                handle.finish(result)
        return sid

    return make


@pytest.fixture
def slider_session(store):
    """A finished SIMULATED session of the engine with letters, comparisons and sliders (protocol
    :data:`SLIDER_PROTOCOL`, a patient of the adult-clinic population who gets all three kinds),
    its first slider answered, undone (void) and asked again; -> session id."""
    protocol = load_protocol(SLIDER_PROTOCOL)
    case = draw_cases(population_by_name("adult-clinic"), 8, 5)[7]
    store.create_patient("SIM-0007")
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    presenter = SimulatedPresenter(case.patient(protocol.n_alternatives))
    with RefractionSession.start(
        store, patient_id="SIM-0007", eye="OD", protocol=protocol, simulated=True, seed=case.seed, start=start
    ) as session:
        while not isinstance(q := session.next_query(), PendingSlider):
            session.record(presenter.present(q))
        session.record(presenter.present(q))
        session.undo()
        session.run(presenter)
        return session.session_id


@pytest.fixture(autouse=True)
def _qt_application(qapp):
    """The PDF writer needs a Qt application: take pytest-qt's QApplication, so the report code
    never creates a bare QGuiApplication inside the test process (widget tests would break)."""
    return qapp
