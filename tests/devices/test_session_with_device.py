"""A whole simulated session with the SIMULATED CV-5000 setting every lens: no question is shown
before the device holds its lens, the emulator's lens states are the trial log's lenses trial by
trial, and every device fault pauses the session with every answer kept, resuming finishes it."""

from __future__ import annotations

import pytest

from visiontune.cli import main
from visiontune.devices.base import DeviceLimits
from visiontune.devices.cv5000 import CV5000, CV5000_CHANGE_SECONDS
from visiontune.devices.emulator import CV5000Emulator
from visiontune.errors import DeviceError
from visiontune.refraction.lenses import lenses_shown, same_lens
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession, SimulatedPresenter
from visiontune.session.lens_device import lenses_set_notes, question_lenses
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore


class WatchingPresenter:
    """The simulated patient, noting the lens the emulator holds before OD when each question
    is shown (the safety rule: the device holds the lens before the letter appears)."""

    def __init__(self, inner, emulator):
        self.inner, self.emulator, self.seen = inner, emulator, []

    def present(self, query):
        self.seen.append((question_lenses(query)[-1], self.emulator.state.od))
        return self.inner.present(query)


def _session(store, protocol_name="clinical-sloan", seed=3):
    protocol = load_protocol(protocol_name)
    case = simulated_case(seed=seed, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    session = RefractionSession.start(
        store, patient_id="SIM-0001", eye="OD", protocol=protocol, simulated=True, seed=seed, start=start
    )
    return session, SimulatedPresenter(case.patient(protocol.n_alternatives))


def _lenses_in_log(trials) -> list:
    return [lens for t in trials for lens in lenses_shown(t)]


def _same_sequence(device_lenses, log_lenses) -> bool:
    return len(device_lenses) == len(log_lenses) and all(same_lens(a, b) for a, b in zip(device_lenses, log_lenses))


def _trial_rows(trials):
    return [(t.index, t.lens, t.lens2, t.letter_shown, t.correct, t.comparison, t.presented_at) for t in trials]


def test_every_question_is_shown_through_the_lens_the_device_holds_and_the_logs_agree(tmp_path):
    with (
        TrialStore.open(tmp_path / "log.sqlite3") as store,
        CV5000Emulator(change_seconds=0.0) as emu,
        CV5000(emu.port, reply_timeout_s=1.0) as device,
    ):
        session, patient = _session(store)
        with session:
            session.attach_device(device)
            watcher = WatchingPresenter(patient, emu)
            result = session.run(watcher)
            trials = session.log.trials()
            events = session._handle.events()
        assert result is not None and len(trials) >= 20
        assert all(same_lens(asked, held) for asked, held in watcher.seen) and len(watcher.seen) == len(trials)
        assert _same_sequence([s.od for s in emu.log], _lenses_in_log(trials))
        assert all(s.os.sphere_d == 0.0 and s.os.cylinder_d == 0.0 for s in emu.log)  # the fellow eye plano
        notes = lenses_set_notes(events)
        assert [n["trial"] for n in notes] == [t.index for t in trials]
        assert {(n["device"], n["port"], n["confirmation"]) for n in notes} == {("cv5000", emu.port, "device")}


def test_the_command_line_runs_a_whole_session_on_the_emulator_and_the_logs_agree(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    with CV5000Emulator(change_seconds=0.0) as emu:
        assert main(["session", "run", "--simulate", "--device", f"cv5000:{emu.port}", "--db", str(db), "--quiet"]) == 0
    with TrialStore.open(db) as store:
        info = store.get_session(1)
        trials = store.trials(1)
        assert info.state == SessionState.FINISHED
        assert _same_sequence([s.od for s in emu.log], _lenses_in_log(trials))
        assert any(t.lens2 is not None for t in trials)  # comparisons: both lenses set, in order
        assert info.protocol.comparisons.lens_change_seconds == CV5000_CHANGE_SECONDS
        assert "cv5000 device's change time" in info.protocol.source_text


FAULTS = {
    "dropped reply": (lambda emu: emu.drop_next(), "no reply to 'v'"),
    "10 s delay": (lambda emu: emu.delay_next(10.0), "no reply to 'v' within 0.3 s"),
    "garbled reply": (lambda emu: emu.corrupt_next(), "garbled reply"),
    "port closed": (lambda emu: emu.close_after(1), "the port closed or the cable is out"),
    "out of range": (None, "outside the device's range"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_device_fault_pauses_the_session_keeping_every_answer_and_resuming_finishes_it(tmp_path, fault):
    inject, words = FAULTS[fault]
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store, CV5000Emulator(change_seconds=0.0) as emu:
        session, patient = _session(store)
        with session, CV5000(emu.port, reply_timeout_s=0.3, change_seconds=0.0) as device:
            session.attach_device(device)
            assert session.run(patient, max_steps=4) is None
            before = _trial_rows(session.log.trials())
            if inject is None:  # a device whose range holds none of the session's lenses
                session.attach_device(
                    CV5000(emu.port, reply_timeout_s=0.3, limits=DeviceLimits(10, 20, 0.25, -6, 0, 0.25))
                )
            else:
                inject(emu)
            with pytest.raises(DeviceError) as info:
                session.run(patient)
            assert f"session {session.session_id} paused, 4 answers kept" in str(info.value)
            assert words in str(info.value), str(info.value)
            assert session.state == SessionState.PAUSED
        assert _trial_rows(store.trials(1)) == before
        emu.clear_faults()
    with (
        TrialStore.open(db) as store,
        CV5000Emulator(change_seconds=0.0) as back,
        RefractionSession.resume(store, 1) as session,
        CV5000(back.port, reply_timeout_s=1.0) as device,
    ):
        session.attach_device(device)
        result = session.run(patient)
        trials = session.log.trials()
        assert result is not None and session.state == SessionState.FINISHED
        assert _trial_rows(trials[:4]) == before and len(trials) > 4
        assert _same_sequence([s.od for s in back.log], _lenses_in_log(trials[4:]))


def test_the_command_line_pauses_on_a_pulled_cable_and_resumes_on_the_device(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    with CV5000Emulator(change_seconds=0.0) as emu:
        emu.close_after(6)
        code = main(
            [
                "session",
                "run",
                "--simulate",
                "--protocol",
                "clinical-sloan",
                "--device",
                f"cv5000:{emu.port}",
                "--db",
                str(db),
                "--quiet",
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and "session 1 paused, 5 answers kept" in err and "the port closed or the cable is out" in err
    with CV5000Emulator(change_seconds=0.0) as back:
        assert (
            main(
                ["session", "resume", "1", "--simulate", "--device", f"cv5000:{back.port}", "--db", str(db), "--quiet"]
            )
            == 0
        )
    with TrialStore.open(db) as store:
        trials = store.trials(1)
        assert store.get_session(1).state == SessionState.FINISHED
        assert _same_sequence([s.od for s in emu.log] + [s.od for s in back.log], _lenses_in_log(trials))
