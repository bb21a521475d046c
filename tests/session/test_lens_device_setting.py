"""``session run --lens-device`` and ``--answer-model``: the snapshot holds the device's price,
the simulated patient's note its answer model, and a resumed session answers as an uninterrupted one."""

from __future__ import annotations

import pytest

from visiontune.cli import main
from visiontune.refraction.lens_devices import lens_change_seconds
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import SIMULATED_PATIENT_NOTE
from visiontune.session.store import TrialStore


def _short(tmp_path):
    text = load_protocol("clinical-sloan-compare").source_text.replace("max_trials = 120", "max_trials = 14")
    path = tmp_path / "short.toml"
    path.write_text(text.replace("min_trials = 20", "min_trials = 0"))
    return path


def _answers(db, sid):
    with TrialStore.open(db) as s:
        return [(t.lens, t.lens2, t.comparison, t.correct) for t in s.trials(sid)]


def test_the_device_prices_the_session_and_the_answer_model_is_kept_on_resume(tmp_path, capsys):
    proto = _short(tmp_path)
    flags = [
        "--simulate",
        "--protocol",
        str(proto),
        "--seed",
        "5",
        "--lens-device",
        "manual-phoropter",
        "--answer-model",
        "lapse-runs",
        "--quiet",
    ]
    whole, part = tmp_path / "whole.sqlite3", tmp_path / "part.sqlite3"
    assert main(["session", "run", *flags, "--db", str(whole)]) == 0
    assert main(["session", "run", *flags, "--db", str(part), "--max-steps", "5"]) == 0
    assert main(["session", "resume", "1", "--simulate", "--db", str(part), "--quiet"]) == 0
    capsys.readouterr()
    assert _answers(whole, 1) == _answers(part, 1) and len(_answers(whole, 1)) == 14
    with TrialStore.open(part) as s:
        snapshot = parse_protocol(s.get_session(1).protocol_toml, "snapshot")
        notes = [
            e.payload["data"]
            for e in s.events(1)
            if isinstance(e.payload, dict) and e.payload.get("text") == SIMULATED_PATIENT_NOTE
        ]
    assert snapshot.comparisons.lens_change_seconds == lens_change_seconds("manual-phoropter") == 1.0
    assert notes and notes[0]["answer_model"] == "lapse-runs"


def test_bad_device_or_answer_model_is_refused_before_the_log_is_written(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    for flag, value in (("--lens-device", "robot"), ("--answer-model", "stubborn")):
        with pytest.raises(SystemExit) as exc:
            main(["session", "run", "--simulate", "--db", str(db), flag, value])
        assert exc.value.code == 2 and f"argument {flag}: invalid choice: '{value}'" in capsys.readouterr().err
    assert not db.exists()
    assert (
        main(["session", "run", "--simulate", "--db", str(db), "--lens-device", "trial-frame", "--device", "manual"])
        != 0
    )
    assert "--device sets the change time already" in capsys.readouterr().err and not db.exists()
