"""The session side of a lens device: the questions' lenses, the device's change time in the
protocol the session snapshots, and the clinician's confirmation at the terminal."""

from __future__ import annotations

import dataclasses

import pytest

from visiontune.cli import main
from visiontune.devices.manual import ManualDevice
from visiontune.errors import DeviceError, ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.loop import PendingComparison, PendingQuery
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.session.lens_device import lenses_set_notes, protocol_with_lens_change_seconds, set_question_lenses
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore

A, B = Prescription(-1.0, -0.5, 90.0), Prescription(-1.25, 0.0, 180.0)


def test_a_comparison_sets_lens_1_then_lens_2_before_the_eye_and_a_letter_its_one_lens():
    asked = []
    device = ManualDevice(lambda text: asked.append(text) or True)
    set_question_lenses(device, "OS", PendingComparison(0, 0.3, A, B, "K"))
    set_question_lenses(device, "OS", PendingQuery(1, 0.3, B, "K"))
    assert asked == [
        f"set OD occluded; OS {A.format()}",
        f"set OD occluded; OS {B.format()}",
        f"set OD occluded; OS {B.format()}",
    ]
    with pytest.raises(DeviceError, match="OD or OS"):
        set_question_lenses(device, "OU", PendingQuery(1, 0.3, B, "K"))


def test_the_devices_change_time_replaces_the_protocols_and_is_in_its_text():
    shipped = load_protocol("clinical-sloan-compare")
    assert shipped.comparisons.lens_change_seconds == 4.0
    with_device = protocol_with_lens_change_seconds(shipped, 0.5, "cv5000")
    assert with_device.comparisons.lens_change_seconds == 0.5
    assert parse_protocol(with_device.source_text).comparisons.lens_change_seconds == 0.5  # what a resume reads
    changed = dataclasses.replace(shipped.comparisons, lens_change_seconds=0.5)
    assert with_device == dataclasses.replace(shipped, comparisons=changed, source_text=with_device.source_text)


def test_a_comparisons_table_without_the_setting_gains_it_and_a_letters_only_protocol_is_unchanged():
    shipped = load_protocol("clinical-sloan-compare")
    text = "\n".join(line for line in shipped.source_text.splitlines() if not line.startswith("lens_change_seconds"))
    bare = parse_protocol(text)
    assert protocol_with_lens_change_seconds(bare, 1.5, "cv5000").comparisons.lens_change_seconds == 1.5
    letters = load_protocol("clinical-sloan")
    assert protocol_with_lens_change_seconds(letters, 0.5, "cv5000") is letters
    with pytest.raises(ProtocolError):
        protocol_with_lens_change_seconds(shipped, 601.0, "cv5000")


def test_the_manual_device_asks_the_clinician_at_the_terminal_and_a_no_pauses(tmp_path, monkeypatch, capsys):
    db = tmp_path / "log.sqlite3"
    prompts = []
    monkeypatch.setattr("builtins.input", lambda text: prompts.append(text) or "")
    argv = [
        "session",
        "run",
        "--simulate",
        "--protocol",
        "clinical-sloan",
        "--device",
        "manual",
        "--db",
        str(db),
        "--quiet",
        "--max-steps",
        "3",
    ]
    assert main(argv) == 0
    assert len(prompts) == 3 and prompts[0].startswith("set OD ") and "; OS occluded; Enter when set" in prompts[0]
    monkeypatch.setattr("builtins.input", lambda text: "n")
    assert main(["session", "resume", "1", "--simulate", "--device", "manual", "--db", str(db), "--quiet"]) == 2
    assert "session 1 paused, 3 answers kept: the clinician did not confirm" in capsys.readouterr().err
    with TrialStore.open(db) as store:
        assert store.get_session(1).state == SessionState.PAUSED and store.trial_count(1) == 3
        notes = lenses_set_notes(store.events(1))
        assert [(n["trial"], n["device"], n["confirmation"]) for n in notes] == [
            (i, "manual", "clinician") for i in range(3)
        ]
