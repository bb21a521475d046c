"""``model.fellow_eye_prior`` in a visit: the left eye's session starts from the right eye's posterior
of the patient's own unknowns, written into the protocol its trial log snapshots; a visit stopped in the
left eye resumes to the same end; without a finished right eye the left eye starts as the protocol is."""

from __future__ import annotations

import pytest

from visiontune.cli import main
from visiontune.refraction.fellow_eye import fellow_eye_protocol
from visiontune.refraction.loop import make_engine
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.store import TrialStore
from visiontune.session.visit import eye_statuses

SEED = "5"


@pytest.fixture(scope="module")
def protocol_file(tmp_path_factory):
    text = load_protocol(DEFAULT_PROTOCOL).source_text.replace("[model]\n", "[model]\nfellow_eye_prior = true\n", 1)
    path = tmp_path_factory.mktemp("protocol") / "fellow.toml"
    path.write_text(text)
    return path


def _run(db, protocol_file, *extra) -> int:
    argv = ["visit", "run", "--simulate", "--seed", SEED, "--quiet", "--no-near", "--no-balance"]
    return main([*argv, "--protocol", str(protocol_file), "--db", str(db), *extra])


@pytest.fixture(scope="module")
def visit_db(tmp_path_factory, protocol_file):
    db = tmp_path_factory.mktemp("visit") / "log.sqlite3"
    assert _run(db, protocol_file) == 0
    return db


def _sessions(db):
    with TrialStore.open(db, read_only=True) as store:
        statuses = eye_statuses(store, 1)
        infos = {eye: store.get_session(s.session_id) for eye, s in statuses.items() if s.session_id}
        trials = {eye: store.trials(info.session_id) for eye, info in infos.items()}
    return statuses, infos, trials


def test_the_left_eye_starts_from_the_right_eyes_posterior(visit_db, protocol_file):
    statuses, infos, trials = _sessions(visit_db)
    assert [s.state for s in statuses.values()] == ["finished", "finished"]
    as_written = load_protocol(str(protocol_file))
    assert infos["OD"].protocol.source_text == as_written.source_text
    od = infos["OD"]
    engine = make_engine(od.protocol, StartingPoint.from_dict(od.starting_rx), int(od.seed))
    expected = fellow_eye_protocol(as_written, engine.posterior(trials["OD"]), f"OD, session {od.session_id}")
    left = infos["OS"].protocol
    assert left.source_text == expected.source_text
    assert left.model.best_acuity_sd < as_written.model.best_acuity_sd  # the right eye narrowed it
    assert left.comparisons.comparison.sensitivity_second_median == 0.0


def test_a_visit_stopped_in_the_left_eye_resumes_to_the_same_end(visit_db, protocol_file, tmp_path):
    _, _, whole = _sessions(visit_db)
    db = tmp_path / "log.sqlite3"
    assert _run(db, protocol_file, "--max-steps", str(len(whole["OD"]) + 5)) == 0
    assert len(_sessions(db)[2]["OS"]) == 5
    assert main(["visit", "resume", "1", "--simulate", "--quiet", "--db", str(db)]) == 0
    statuses, infos, trials = _sessions(db)
    _, infos_whole, _ = _sessions(visit_db)
    assert infos["OS"].protocol.source_text == infos_whole["OS"].protocol.source_text
    key = [(t.s_logmar, t.lens, t.correct) for t in trials["OS"]]
    assert key == [(t.s_logmar, t.lens, t.correct) for t in whole["OS"]]


def test_without_a_finished_right_eye_the_left_eye_starts_as_the_protocol_is(protocol_file, tmp_path):
    db = tmp_path / "log.sqlite3"
    assert _run(db, protocol_file, "--skip-od", "patching") == 0
    statuses, infos, _ = _sessions(db)
    assert statuses["OD"].state == "skipped" and statuses["OS"].state == "finished"
    assert infos["OS"].protocol.source_text == load_protocol(str(protocol_file)).source_text
