"""Random sequences of session operations against a plain-Python model of the log (oracle)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visiontune.errors import SessionError
from visiontune.optics import Prescription
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.trial import Trial
from visiontune.session.store import TrialStore

OPS = st.lists(st.sampled_from(["record", "record", "record", "undo", "pause", "resume", "finish"]), max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, seed=st.integers(0, 2**31 - 1))
def test_random_operation_sequences_match_the_model(ops, seed):
    """Model: a list of (index, void) plus a state; undo voids the last non-void trial."""
    protocol = load_protocol("ts-ald")
    model_trials: list[list] = []  # [index, correct, void]
    state = "open"
    with tempfile.TemporaryDirectory() as tmp, TrialStore.open(Path(tmp) / "log.sqlite3") as store:
        store.create_patient("P")
        sid = store.create_session("P", eye="OU", protocol=protocol, seed=seed)
        with store.open_session(sid) as h:
            for k, op in enumerate(ops):
                allowed = {
                    "record": state == "open",
                    "undo": state == "open",
                    "pause": state == "open",
                    "resume": state == "paused",
                    "finish": state in ("open", "paused"),
                }[op]
                correct = (seed >> (k % 31)) & 1 == 1
                try:
                    if op == "record":
                        t = h.record_trial(
                            Trial(len(model_trials), 0.01 * k, Prescription(0.25 * k, -0.25, 5.0), "K", correct)
                        )
                        assert t.index == len(model_trials)
                    elif op == "undo":
                        got = h.undo()
                        live = [m for m in model_trials if not m[2]]
                        if live:
                            live[-1][2] = True
                            assert (got.index, got.void) == (live[-1][0], True)
                        else:
                            assert got is None
                    elif op == "finish":
                        h.finish({"k": k})
                    else:
                        getattr(h, op)()
                except SessionError:
                    assert not allowed, op
                    continue
                assert allowed, op
                if op == "record":
                    model_trials.append([len(model_trials), correct, False])
                state = {"pause": "paused", "resume": "open", "finish": "finished"}.get(op, state)
            got_all = h.trials(include_void=True)
            assert [(t.index, t.correct, t.void) for t in got_all] == [tuple(m) for m in model_trials]
            assert [t.index for t in h.trials()] == [m[0] for m in model_trials if not m[2]]
            assert h.info.state == state
