"""A session that has no answers can be discarded, on the record.

An older VisionTune accepted protocols its engine then refused: the session row was written and
the 0-trial session stayed open for good (resume failed the same way; sessions are never
deleted). ``visiontune sessions discard ID --reason TEXT`` closes such a session for good: a
``finish`` event and the reason are recorded, nothing is deleted, the session is no longer
offered for resume, and a session with answers cannot be discarded.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from visiontune import cli
from visiontune.errors import InvalidInputError, SessionError
from visiontune.session.engine import RefractionSession
from visiontune.session.records import EventKind, SessionState
from visiontune.session.store import TrialStore

#: A protocol this version refuses when it is parsed (an older one wrote its session row, then
#: the engine failed): ``policy = "kss-ald"`` on the optics model.
REFUSED_POLICY = ('policy = "evr"', 'policy = "kss-ald"')


def test_discard_closes_the_session_on_the_record(store, session_id, clock):
    with store.open_session(session_id) as handle:
        handle.discard("protocol refused by the engine")
    info = store.get_session(session_id)
    assert info.state == SessionState.FINISHED and info.discarded
    assert info.discard_reason == "protocol refused by the engine"
    assert info.finished_at is not None
    events = store.events(session_id)
    assert [e.kind for e in events] == [EventKind.FINISH]
    assert events[0].payload == {"discarded": True, "reason": "protocol refused by the engine"}
    # still there, never deleted; left out of the default list, shown when asked for
    assert [i.session_id for i in store.list_sessions(include_discarded=True)] == [session_id]
    assert store.list_sessions() == []
    assert store.list_sessions(state="finished") == []


def test_a_discarded_session_is_never_resumed_nor_changed(store, session_id, make_trial):
    with store.open_session(session_id) as handle:
        handle.discard("typo in the protocol")
        with pytest.raises(SessionError, match="finished"):
            handle.record_trial(make_trial(0))
        with pytest.raises(SessionError, match="finished"):
            handle.discard("again")
    with pytest.raises(SessionError, match=f"session {session_id} was discarded \\(typo in the protocol\\)"):
        RefractionSession.resume(store, session_id)


def test_a_paused_session_and_one_whose_answers_were_all_undone_can_be_discarded(store, protocol, make_trial):
    store.create_patient("P1")
    paused = store.create_session("P1", eye="OD", protocol=protocol)
    undone = store.create_session("P1", eye="OD", protocol=protocol)
    with store.open_session(paused) as handle:
        handle.pause()
        handle.discard("patient left")
    with store.open_session(undone) as handle:
        handle.record_trial(make_trial(0))
        handle.undo()
        handle.discard("wrong eye")
    assert store.get_session(paused).discarded and store.get_session(undone).discarded
    assert len(store.trials(undone, include_void=True)) == 1  # the voided answer stays in the log


def test_a_session_with_answers_cannot_be_discarded(store, session_id, make_trial):
    with store.open_session(session_id) as handle:
        handle.record_trial(make_trial(0))
        with pytest.raises(SessionError, match="holds 1 answer: only a session without answers can be discarded"):
            handle.discard("changed my mind")
    assert store.get_session(session_id).state == SessionState.OPEN


@pytest.mark.parametrize("reason", ["", "   ", None, 3, "x" * 501])
def test_a_discard_needs_a_reason(store, session_id, reason):
    with store.open_session(session_id) as handle, pytest.raises(InvalidInputError, match="reason"):
        handle.discard(reason)
    assert store.get_session(session_id).state == SessionState.OPEN


def test_a_finished_session_is_not_discarded(store, session_id):
    with store.open_session(session_id) as handle:
        handle.finish({"x": 1})
        info = store.get_session(session_id)
        assert not info.discarded and info.discard_reason is None
        with pytest.raises(SessionError, match="finished"):
            handle.discard("too late")


# --- the orphan session, through the command line ---------------------------------


def _cli(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def _orphan(path):
    """A trial log holding session 1: a 0-trial open session whose protocol snapshot this
    version refuses (written by raw SQL, as an older version's session row), and session 2, a
    sound open one."""
    from visiontune.refraction.protocol import load_protocol

    sloan = load_protocol("clinical-sloan")
    with TrialStore.open(path) as store:
        store.create_patient("P1")
        good = store.create_session("P1", eye="OD", protocol=sloan)
        snapshot = sloan.source_text.replace(*REFUSED_POLICY)
        assert snapshot != sloan.source_text
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER sessions_snapshot_is_fixed")
    conn.execute("UPDATE sessions SET protocol_toml = ? WHERE id = ?", (snapshot, good))
    conn.commit()
    conn.close()
    with TrialStore.open(path) as store:
        other = store.create_session("P1", eye="OS", protocol=sloan)
    return good, other


def test_an_orphan_session_is_discarded_from_the_command_line(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    orphan, other = _orphan(db)
    code, out, err = _cli(["session", "resume", str(orphan), "--simulate", "--db", str(db), "--quiet"], capsys)
    assert code == 2 and "kss-ald" in err and err.count("\n") == 1, err
    code, out, err = _cli(["sessions", "show", str(orphan), "--db", str(db)], capsys)
    assert code == 0 and "snapshot refused" in out and "open" in out, (out, err)

    code, out, err = _cli(
        ["sessions", "discard", str(orphan), "--db", str(db), "--reason", "engine refused\x1b[2J"], capsys
    )
    assert code == 0, err
    assert f"session {orphan} discarded" in out and "\x1b" not in out and "\\x1b[2J" in out

    code, out, err = _cli(["sessions", "list", "--db", str(db)], capsys)
    rows = {int(line.split()[0]): line.split() for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert code == 0 and rows[orphan][3] == "discarded" and rows[other][3] == "open", out
    code, out, err = _cli(["sessions", "show", str(orphan), "--json", "--db", str(db)], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["discarded"] is True and doc["discard_reason"] == "engine refused\x1b[2J"

    for argv, message in (
        (["session", "resume", str(orphan), "--simulate"], "was discarded"),
        (["report", str(orphan), "--csv", str(tmp_path / "x.csv")], "was discarded"),
        (["sessions", "discard", str(orphan), "--reason", "again"], "already discarded"),
        (["sessions", "discard", "77", "--reason", "none such"], "no session 77"),
    ):
        code, out, err = _cli([*argv, "--db", str(db)], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    code, out, err = _cli(["sessions", "discard", str(orphan), "--db", str(db)], capsys)  # --reason is required
    assert code == 2 and "--reason" in err
    with TrialStore.open(db) as store:
        assert [i.session_id for i in store.list_sessions()] == [other]  # what the app's resume offer lists
        assert store.list_sessions(include_discarded=True)[0].session_id == orphan  # never deleted


def test_a_session_held_open_elsewhere_is_not_discarded(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    orphan, _ = _orphan(db)
    with TrialStore.open(db) as store, store.open_session(orphan):
        code, out, err = _cli(["sessions", "discard", str(orphan), "--db", str(db), "--reason", "x"], capsys)
    assert code == 2 and "is open in this process" in err
