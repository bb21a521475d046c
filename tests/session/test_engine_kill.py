"""A session process killed with SIGKILL loses no committed answer, and the resumed session
proposes exactly the query an uninterrupted session fed the same answers would have. A simulated
session killed again and again and resumed to its end holds exactly the trials (letter sizes,
lenses, letters, answers) and the result of the same session run uninterrupted (the
simulated patient's answer to trial k is keyed by (patient seed, k), and the patient is the one
recorded with the session, whatever a resume command says)."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.session.test_engine import protocol
from visiontune.refraction.protocol import load_protocol
from visiontune.session.engine import Answer, RefractionSession
from visiontune.session.store import TrialStore


def _spawn(args):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "visiontune", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _reference_next_query(tmp_path, proto, trials, k):
    with (
        TrialStore.open(tmp_path / f"ref{k}.sqlite3") as ref,
        RefractionSession.start(ref, patient_id="P1", eye="OD", protocol=proto, simulated=True) as session,
    ):
        for t in trials:
            session.record(Answer(correct=t.correct))
        return session.next_query()


@pytest.mark.parametrize("kills", [4, pytest.param(20, marks=pytest.mark.slow)])
def test_sigkill_at_random_points_loses_nothing(tmp_path, kills):
    # Each child stops by itself after STEPS answers (leaving the session open), so a fast machine
    # cannot finish the session before the last kill: the kills land within STEPS answers.
    steps = 8
    proto = protocol(max_trials=steps * kills + 20)
    proto_path = tmp_path / "p.toml"
    proto_path.write_text(proto.source_text)
    db = tmp_path / "log.sqlite3"
    rng = np.random.default_rng(2024)
    seen: list = []
    sid = None
    for k in range(kills):
        if sid is None:
            args = [
                "session",
                "run",
                "--simulate",
                "--protocol",
                str(proto_path),
                "--db",
                str(db),
                "--quiet",
                "--true-rx",
                "1 -1",
            ]
        else:
            args = ["session", "resume", str(sid), "--simulate", "--db", str(db), "--quiet"]
        child = _spawn(args + ["--max-steps", str(steps)])
        deadline = time.monotonic() + 60
        target = len(seen) + int(rng.integers(1, 4))
        while time.monotonic() < deadline and child.poll() is None:  # kill once a few new answers are in
            if db.exists():
                with TrialStore.open(db) as s:
                    sessions = s.list_sessions()
                    if sessions and len(s.trials(sessions[0].session_id, include_void=True)) >= target:
                        break
            time.sleep(rng.uniform(0.01, 0.2))
        time.sleep(rng.uniform(0.0, 0.3))  # land anywhere: mid-fit, mid-commit, between trials
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        with TrialStore.open(db) as s:
            sid = s.list_sessions()[0].session_id
            trials = s.trials(sid, include_void=True)
        assert len(trials) >= len(seen)
        assert trials[: len(seen)] == seen, "a committed answer changed or disappeared"
        seen = trials
        with TrialStore.open(db) as s, RefractionSession.resume(s, sid) as resumed:
            assert resumed.next_query() == _reference_next_query(tmp_path, proto, trials, k)
    assert len(seen) >= kills

    # resumed to its end, the killed session is the uninterrupted one, trial for trial
    resume = _spawn(["session", "resume", str(sid), "--simulate", "--db", str(db), "--quiet"])
    assert resume.wait(timeout=300) == 0
    whole = tmp_path / "whole.sqlite3"
    uninterrupted = _spawn(
        [
            "session",
            "run",
            "--simulate",
            "--protocol",
            str(proto_path),
            "--db",
            str(whole),
            "--quiet",
            "--true-rx",
            "1 -1",
        ]
    )
    assert uninterrupted.wait(timeout=300) == 0
    killed, reference = _session_content(db, sid), _session_content(whole, 1)
    assert len(killed[0]) == proto.stopping.max_trials
    assert killed == reference


def _session_content(db, sid):
    """``(trials, result)``: what each trial showed and what was answered, and the rounded result."""
    with TrialStore.open(db) as s:
        info = s.get_session(sid)
        trials = [
            (t.index, t.s_logmar, t.lens, t.letter_shown, t.letter_named, t.correct, t.void)
            for t in s.trials(sid, include_void=True)
        ]
        return trials, info.result["rounded"], info.result["stopped_by"]


def _kill_resume_and_rerun(tmp_path, proto_path, kills: int, rng_seed: int):
    """Run ``proto_path``'s simulated session (seed 3), SIGKILL it ``kills`` times at random
    moments, each after at least two more committed answers, resuming it each time, then resume
    it to its end; run the same session uninterrupted. Returns the two stores' paths and the
    killed session's id; asserts along the way that no committed answer changed or vanished."""
    db = tmp_path / "log.sqlite3"
    rng = np.random.default_rng(rng_seed)
    seen, sid = [], None
    for _ in range(kills):
        args = (
            ["session", "run", "--simulate", "--protocol", str(proto_path), "--seed", "3"]
            if sid is None
            else ["session", "resume", str(sid), "--simulate"]
        )
        child = _spawn([*args, "--db", str(db), "--quiet", "--max-steps", "6"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if db.exists():
                with TrialStore.open(db) as s:
                    sessions = s.list_sessions()
                    if sessions and len(s.trials(sessions[0].session_id)) >= len(seen) + 2:
                        break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.2))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        with TrialStore.open(db) as s:
            sid = s.list_sessions()[0].session_id
            trials = s.trials(sid, include_void=True)
        assert trials[: len(seen)] == seen, "a committed answer changed or disappeared"
        seen = trials
    resume = _spawn(["session", "resume", str(sid), "--simulate", "--db", str(db), "--quiet"])
    assert resume.wait(timeout=300) == 0
    whole = tmp_path / "whole.sqlite3"
    uninterrupted = _spawn(
        ["session", "run", "--simulate", "--protocol", str(proto_path), "--seed", "3", "--db", str(whole), "--quiet"]
    )
    assert uninterrupted.wait(timeout=300) == 0
    return db, whole, sid


def test_a_session_with_comparisons_killed_and_resumed_is_the_uninterrupted_one(tmp_path):
    """The default protocol (letters and comparisons): SIGKILLed three times and resumed to its
    end, the session holds the same letters, comparisons (both lenses, the answer) and result as
    the same session run without interruption."""
    text = load_protocol("clinical-sloan-compare").source_text.replace("max_trials = 120", "max_trials = 24")
    proto_path = tmp_path / "compare.toml"
    proto_path.write_text(text.replace("min_trials = 20", "min_trials = 24"))  # no early stop: the budget ends it
    db, whole, sid = _kill_resume_and_rerun(tmp_path, proto_path, 3, 7)
    with TrialStore.open(db) as a, TrialStore.open(whole) as b:
        killed = [(t.lens, t.lens2, t.comparison, t.letter_shown, t.correct) for t in a.trials(sid)]
        reference = [(t.lens, t.lens2, t.comparison, t.letter_shown, t.correct) for t in b.trials(1)]
        assert len(killed) == 24 and killed == reference
        assert any(c is not None for _, _, c, _, _ in killed)  # comparisons were asked
        assert a.get_session(sid).result["rounded"] == b.get_session(1).result["rounded"]


def test_a_session_with_sliders_killed_and_resumed_is_the_uninterrupted_one(tmp_path):
    """Letters and sliders (clinical-sloan with a [sliders] table): SIGKILLed twice and resumed to
    its end, the session holds the same letters, sliders (knob, path, choice) and result as the
    same session run without interruption."""
    text = load_protocol("clinical-sloan").source_text.replace("max_trials = 120", "max_trials = 16")
    proto_path = tmp_path / "sliders.toml"
    proto_path.write_text(text.replace("min_trials = 20", "min_trials = 16") + "\n[sliders]\n")
    db, whole, sid = _kill_resume_and_rerun(tmp_path, proto_path, 2, 11)
    with TrialStore.open(db) as a, TrialStore.open(whole) as b:

        def content(t):
            return (t.lens, t.slider_knob, t.slider_lenses, t.slider_choice, t.letter_shown, t.correct)

        killed, reference = [content(t) for t in a.trials(sid)], [content(t) for t in b.trials(1)]
        assert len(killed) == 16 and killed == reference
        assert any(t[3] is not None for t in killed)  # sliders were asked
        assert a.get_session(sid).result["rounded"] == b.get_session(1).result["rounded"]
        assert a.get_session(sid).result["sliders_used"] == sum(t[3] is not None for t in killed)
