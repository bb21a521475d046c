"""Fixtures of the report tests: finished sessions built directly through the store API."""

from __future__ import annotations

import pytest
from report_helpers import FakeClock, make_result, trial_input

from visiontune.refraction.protocol import load_protocol
from visiontune.session.store import TrialStore


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

    def make(n_trials=12, undo_at=(3, 8), simulated=False, eye="OD", finish=True, patient="P-0042",
             result_simulated=None, comparisons=True, **overrides):  # fmt: skip
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


@pytest.fixture(autouse=True)
def _qt_application(qapp):
    """The PDF writer needs a Qt application: take pytest-qt's QApplication, so the report code
    never creates a bare QGuiApplication inside the test process (widget tests would break)."""
    return qapp
