"""The app with a lens device: the SIMULATED CV-5000 (the emulator on a pty) sets every lens
through the driver before its letter is shown, in the engine (a :class:`SessionHost`) and in
the window (the engine in its child process, offscreen Qt); the emulator's lens states are the
trial log's lenses trial by trial; a device fault pauses the session on the clinician's screen
with the message and a Retry, no answer lost, and Retry finishes it. The start form's device
setting, persisted only when it is one the app takes."""

from __future__ import annotations

import os

import pytest
from app_helpers import SCREENSHOTS, write_visit_protocol
from PySide6.QtCore import Qt

from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import (
    Command,
    DeviceFault,
    DeviceShown,
    Failed,
    Finish,
    Finished,
    Idle,
    Opened,
    OpenStore,
    Pause,
    Present,
    Presented,
    RecordAnswer,
    RetryDevice,
    SetDevice,
    ShowLens,
    StartSession,
    Updated,
)
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.settings import AppSettings, load_settings, save_settings
from visiontune.app.logic.simulation import case_patient, simulated_reply
from visiontune.app.logic.start_form import device_setting
from visiontune.app.logic.worker_device import CV5000_CAUTION
from visiontune.app.logic.worker_values import NewSession
from visiontune.devices.emulator import CV5000Emulator
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.refraction.lenses import lenses_shown, same_lens
from visiontune.refraction.loop import simulated_comparison, simulated_slider
from visiontune.session.engine import Answer, ComparisonReply, PendingComparison, PendingSlider, SliderReply
from visiontune.session.lens_device import lenses_set_notes
from visiontune.session.records import SessionState
from visiontune.session.store import TrialStore

#: The app on the emulator, mid-session (and ``device_session_fault.png``: paused on a fault).
SCREENSHOT = SCREENSHOTS / "device_session.png"


def _lenses_in_log(trials) -> list:
    return [lens for t in trials for lens in lenses_shown(t)]


def _same_sequence(device_lenses, log_lenses) -> bool:
    return len(device_lenses) == len(log_lenses) and all(same_lens(a, b) for a, b in zip(device_lenses, log_lenses))


def _logs_agree_around_a_fault(device_states, trials, kept: int, at_fault: int) -> bool:
    """The emulator's lens states are the trial log's lenses trial by trial: those of the ``kept``
    answers before the fault, then what the device took of the faulted question before its
    confirmation failed (``device_states[:at_fault]`` ends there: one lens, never shown), then,
    after Retry, the lenses of every later answer."""
    before = _lenses_in_log(trials[:kept])
    od = [s.od for s in device_states]
    return (
        _same_sequence(od[: len(before)], before)
        and at_fault - len(before) == 1
        and _same_sequence(od[at_fault:], _lenses_in_log(trials[kept:]))
    )


def _rows(trials):
    return [(t.index, t.lens, t.lens2, t.letter_shown, t.correct, t.comparison, t.presented_at) for t in trials]


def _answer(snap, patient):
    q = snap.query
    if isinstance(q, PendingSlider):
        return SliderReply(simulated_slider(patient, q))
    if isinstance(q, PendingComparison):
        return ComparisonReply(simulated_comparison(patient, q))
    reply = simulated_reply(
        patient,
        s_logmar=q.s_logmar,
        lens=q.lens,
        letter_shown=q.letter,
        letters=snap.letters,
        seed=snap.seed,
        trial_index=q.index,
    )
    return Answer(letter_named=reply.letter_named)


# ---------------------------------------------------------------------------------- the engine side
def test_the_engine_sets_each_lens_on_the_device_before_the_letter_and_a_fault_pauses_until_retry(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_visit_protocol(tmp_path, max_trials=8)
    events = []
    with CV5000Emulator(change_seconds=0.0) as emu:
        host = SessionHost(events.append, reply_timeout_s=0.3)
        try:
            host.handle(SetDevice(f"cv5000:{emu.port}"))
            host.handle(OpenStore(str(db)))
            host.handle(StartSession(NewSession("SIM-DEV", "OD", str(protocol), True, seed=4)))
            view = [e.value for e in events if isinstance(e, DeviceShown)][-1]
            assert (view.kind, view.port, view.connected, view.fault) == ("cv5000", emu.port, True, None)
            snap = next(e.value for e in events if isinstance(e, Opened))
            assert snap.protocol_name == "visit-test"
            patient = case_patient(snap.simulated_case, snap.n_alternatives)
            held_when_shown = []
            for n in range(8):
                if n == 3:  # the device drops its confirmation: nothing shown, the session paused
                    emu.drop_next()
                    del events[:]
                    host.handle(Present())
                    kinds = [type(e) for e in events]
                    assert Presented not in kinds and Failed not in kinds, kinds
                    fault = next(e.value for e in events if isinstance(e, DeviceFault))
                    assert "session 1 paused, 3 answers kept" in fault and "no reply to 'v'" in fault, fault
                    paused = [e.value for e in events if isinstance(e, Updated)][-1]
                    assert paused.state == SessionState.PAUSED and paused.n_trials == 3 and paused.query is None
                    assert [e.value for e in events if isinstance(e, DeviceShown)][-1].fault is not None
                    before = _rows(host.session.trials())
                    at_fault = len(emu.log)
                    emu.clear_faults()
                    del events[:]
                    host.handle(RetryDevice())
                    snap = [e.value for e in events if isinstance(e, Updated)][-1]
                    assert snap.state == SessionState.OPEN and snap.query is not None
                    assert _rows(host.session.trials()) == before
                if snap.query is None:
                    break
                del events[:]
                host.handle(Present())
                assert Presented(snap.query.index) in events, events
                held_when_shown.append((snap.query, emu.state.od))
                host.handle(RecordAnswer(_answer(snap, patient)))
                snap = [e.value for e in events if isinstance(e, Updated)][-1]
            trials = host.session.trials()
            assert len(trials) == 8
            assert _logs_agree_around_a_fault(emu.log, trials, 3, at_fault)
            for query, held in held_when_shown:  # the device held the question's (last) lens when it was shown
                last = query.lens2 if isinstance(query, PendingComparison) else query.lens
                assert same_lens(last, held)
            events_now = host.session._handle.events()
            notes = lenses_set_notes(events_now)
            assert [n["trial"] for n in notes] == [t.index for t in trials]
            assert {(n["device"], n["port"], n["confirmation"]) for n in notes} == {("cv5000", emu.port, "device")}
        finally:
            host.shutdown()


def test_the_session_starts_with_the_device_change_time_and_a_port_that_does_not_open_pauses(tmp_path):
    db = tmp_path / "log.sqlite3"
    events = []
    host = SessionHost(events.append, reply_timeout_s=0.3)
    try:
        host.handle(SetDevice(str(tmp_path / "no-such-port")))  # not a device setting: refused, manual kept
        assert "expected 'manual' or 'cv5000:PORT'" in next(e.value for e in events if isinstance(e, Failed))
        assert host.device.spec == "manual"
        host.handle(SetDevice(f"cv5000:{tmp_path / 'no-such-port'}"))
        view = [e.value for e in events if isinstance(e, DeviceShown)][-1]
        assert not view.connected and "cannot open the port" in view.fault
        host.handle(OpenStore(str(db)))
        host.handle(StartSession(NewSession("SIM-DEV", "OD", "clinical-sloan-compare", True, seed=4)))
        assert host.session.protocol.comparisons.lens_change_seconds == 0.5  # the CV-5000's (assumed) change time
        assert "cv5000 device's change time" in host.session.protocol.source_text
        del events[:]
        host.handle(Present())
        assert "session 1 paused, 0 answers kept" in next(e.value for e in events if isinstance(e, DeviceFault))
        assert host.session.state == SessionState.PAUSED
    finally:
        host.shutdown()


# ---------------------------------------------------------------------------------- the start form
def test_the_device_setting_is_read_from_the_form_and_a_refused_one_is_never_persisted(tmp_path):
    assert device_setting("manual", "ignored") == "manual"
    assert device_setting("cv5000", "  /dev/ttyUSB0 ") == "cv5000:/dev/ttyUSB0"
    assert device_setting("cv5000", "COM4") == "cv5000:COM4"
    with pytest.raises(InvalidInputError, match="^Lens device port: type the CV-5000's serial port"):
        device_setting("cv5000", "  ")
    with pytest.raises(InvalidInputError, match="^Lens device port: expected a serial port name"):
        device_setting("cv5000", "/dev/tty\x1bUSB0")
    path = tmp_path / "app.toml"
    save_settings(AppSettings(device="cv5000:/dev/ttyUSB0"), path)
    assert load_settings(path).device == "cv5000:/dev/ttyUSB0"
    for refused in ("cv6000:/dev/ttyUSB0", "cv5000:", "serial", "cv5000:/dev/tty\nx"):
        with pytest.raises(ConfigurationError, match="device"):
            AppSettings(device=refused)
    path.write_text('device = "cv5000"\n', encoding="utf-8")  # a hand-edited file: the key named
    with pytest.raises(ConfigurationError, match="device: expected 'manual' or 'cv5000:PORT'"):
        load_settings(path)


def test_the_start_form_sets_the_device_the_engine_uses_and_saves_it(qtbot, make_window, paths):
    window = make_window(pace_s=0.0)
    start = window.start_view
    assert start.device_kind.currentData() == "manual" and not start.device_port.isVisibleTo(start)
    start.device_kind.setCurrentIndex(start.device_kind.findData("cv5000"))
    assert start.device_port.isVisibleTo(start) and "reverse-engineered" in start.device_note.text()
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    assert start.form_error.text().startswith("Lens device port:")
    assert "#b00020" in start.device_port.styleSheet()
    assert not paths["settings"].exists() or load_settings(paths["settings"]).device == "manual"
    with CV5000Emulator(change_seconds=0.0) as emu:
        start.device_port.setText(emu.port)
        qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)
        assert load_settings(paths["settings"]).device == f"cv5000:{emu.port}"
        assert window.engine_device == f"cv5000:{emu.port}"
        qtbot.waitUntil(
            lambda: window.controller.device is not None and window.controller.device.connected, timeout=20_000
        )
        text = window.session_view.device_state.text()
        assert f"Lens device: Topcon CV-5000 on {emu.port} \u00b7 connected" in text and CV5000_CAUTION in text
        window.close()


# ---------------------------------------------------------------------------------- the whole app
def test_a_simulated_session_in_the_app_through_the_emulator_pauses_on_a_fault_and_retry_finishes(
    qtbot, make_window, paths, tmp_path
):
    protocol = write_visit_protocol(tmp_path, max_trials=10)
    with CV5000Emulator(change_seconds=0.05) as emu:
        window = make_window(pace_s=0.02, protocol=protocol)
        start = window.start_view
        start.set_device(f"cv5000:{emu.port}")
        start.patient_id.setText("SIM-CV5000")
        qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
        view = window.session_view
        # the safety rule as the window shows it: a letter on screen only through the lens the device holds
        shown = []
        window.controller.connect(
            lambda kind, value: shown.append((value, emu.state.od)) if kind == Shown.PRESENT else None
        )
        qtbot.waitUntil(lambda: window.snapshot is not None and window.snapshot.n_trials >= 4, timeout=120_000)
        assert view.device_state.isVisible() and "Lenses confirmed: OD S " in view.device_state.text()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        assert window.grab().save(str(SCREENSHOT))
        emu.corrupt_next()  # the next confirmation garbled: the session pauses, the letter not shown
        qtbot.waitUntil(lambda: window.phase == Phase.PAUSED, timeout=60_000)
        kept, at_fault = window.snapshot.n_trials, len(emu.log)
        assert view.device_fault.isVisible() and view.retry_button.isVisible()
        assert "garbled reply" in view.device_fault.text() and f"{kept} answers kept" in view.device_fault.text()
        assert "Retry" in view.instruction.text() and "nothing was shown" in view.instruction.text()
        assert window.grab().save(str(SCREENSHOT.with_name(SCREENSHOT.stem + "_fault.png")))
        with TrialStore.open(paths["db"]) as store:
            assert len(store.trials(1)) == kept and store.get_session(1).state == SessionState.PAUSED
        qtbot.wait(300)
        assert window.phase == Phase.PAUSED  # the autopilot waits for the clinician
        emu.clear_faults()
        qtbot.mouseClick(view.retry_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=120_000)
        assert not view.retry_button.isVisible()
    with TrialStore.open(paths["db"]) as store:
        info, trials = store.get_session(1), store.trials(1)
    assert info.state == SessionState.FINISHED and len(trials) == 10 > kept
    assert _logs_agree_around_a_fault(emu.log, trials, kept, at_fault)
    assert len(shown) == len(trials)
    for query, held in shown:
        last = query.lens2 if isinstance(query, PendingComparison) else query.lens
        assert same_lens(last, held)


# ---------------------------------------------------------------------------------- the controller
class _Engine:
    def __init__(self) -> None:
        self.sent: list[Command] = []

    def submit(self, command: Command) -> None:
        self.sent.append(command)


def _snapshot(n_trials: int, *, paused: bool = False):
    from visiontune.app.logic.worker_values import Snapshot
    from visiontune.optics import Prescription
    from visiontune.refraction.loop import PendingQuery

    query = (
        None if paused else PendingQuery(index=n_trials, s_logmar=0.3, lens=Prescription(-1.0, -0.5, 90.0), letter="K")
    )
    return Snapshot(
        session_id=1,
        patient_id="P-1",
        eye="OD",
        simulated=False,
        seed=7,
        protocol_name="app-test",
        state=SessionState.PAUSED if paused else SessionState.OPEN,
        n_trials=n_trials,
        max_trials=40,
        query=query,
        stop_reason=None,
        letters=tuple("CDHKNORSVZ"),
        letter_set="sloan",
        n_alternatives=10,
        cylinder_form="minus",
        context_box=(-1.0, 2.0),
        prior_duration_s=0.0,
    )


def test_the_controller_shows_the_letter_only_on_the_device_confirmation_and_p_retries_after_a_fault():
    from visiontune.app.logic.session_controller import SessionController
    from visiontune.app.logic.worker_device import DeviceView

    engine, events = _Engine(), []
    controller = SessionController(engine, export_dir=lambda: "/exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    controller.on_device(DeviceView("cv5000:/dev/pts/9", "cv5000", "/dev/pts/9", "device", connected=True))
    controller.on_opened(_snapshot(2))
    assert controller.phase == Phase.LENS and "sets this lens" in events[-2][1].instruction
    controller.on_key("Return", "")
    assert [type(c) for c in engine.sent] == [Present] and controller.phase == Phase.BUSY
    assert not [v for k, v in events if k == Shown.PRESENT]  # no letter before the device confirms
    controller.on_key("K", "k")  # an answer key while the device sets the lens: nothing sent
    assert [type(c) for c in engine.sent] == [Present]
    controller.on_presented(1)  # another trial's confirmation: still nothing shown
    assert not [v for k, v in events if k == Shown.PRESENT]
    controller.on_presented(2)
    assert [v.index for k, v in events if k == Shown.PRESENT] == [2] and controller.phase == Phase.ANSWER
    paused_events = len(events)
    controller.on_idle()
    controller.on_key("K", "k")
    assert isinstance(engine.sent[-1], RecordAnswer)
    controller.on_idle()
    controller.on_updated(_snapshot(3))
    controller.on_key("Space", "")
    controller.on_device_fault("session 1 paused, 3 answers kept: CV-5000 on /dev/pts/9: no reply to 'v'")
    controller.on_updated(_snapshot(3, paused=True))
    controller.on_idle()
    assert controller.phase == Phase.PAUSED and controller.device_fault.startswith("session 1 paused")
    prompt = [v for k, v in events if k == Shown.PROMPT][-1]
    assert "all 3 answers are kept" in prompt.instruction and "Retry" in prompt.instruction
    assert [v.index for k, v in events if k == Shown.PRESENT] == [2]  # trial 3 never shown
    controller.on_key("P", "p")  # P retries the device (not a plain resume)
    assert engine.sent[-1] == RetryDevice() and controller.phase == Phase.BUSY
    controller.on_idle()
    controller.on_updated(_snapshot(3))
    assert controller.phase == Phase.LENS and controller.device_fault is None
    # P while the device sets a lens: its confirmation then shows nothing, the session pauses
    controller.on_key("Return", "")
    controller.on_key("P", "p")
    assert [type(c) for c in engine.sent][-2:] == [Present, Pause]
    controller.on_presented(3)
    assert [v.index for k, v in events[paused_events:] if k == Shown.PRESENT] == []


def test_at_the_trial_frame_the_enter_key_shows_the_letter_at_once_and_the_panel_says_so():
    from visiontune.app.logic.session_controller import SessionController
    from visiontune.app.logic.texts import device_text
    from visiontune.app.logic.worker_device import DeviceView

    engine, events = _Engine(), []
    controller = SessionController(engine, export_dir=lambda: "/exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    controller.on_device(DeviceView("manual", "manual", None, "clinician"))
    controller.on_opened(_snapshot(0))
    controller.on_key("Return", "")
    assert controller.phase == Phase.ANSWER and [type(c) for c in engine.sent] == [Present]
    assert [v.index for k, v in events if k == Shown.PRESENT] == [0]
    text = device_text(controller.device)
    assert "Manual trial frame or phoropter" in text and "OD S \u22121.00 / C \u22120.50 \u00d7 090" in text
    assert "OS occluded" in text and "Last confirmed by the clinician (Enter): trial 1" in text
    assert "reverse-engineered" not in text


def test_the_trial_frame_records_the_clinician_as_the_device_that_set_each_lens(tmp_path):
    db, protocol = tmp_path / "log.sqlite3", write_visit_protocol(tmp_path, max_trials=8)
    events = []
    host = SessionHost(events.append)
    try:
        host.handle(OpenStore(str(db)))
        host.handle(StartSession(NewSession("SIM-DEV", "OD", str(protocol), True, seed=4)))
        snap = next(e.value for e in events if isinstance(e, Opened))
        patient = case_patient(snap.simulated_case, snap.n_alternatives)
        for _ in range(3):
            del events[:]
            host.handle(Present())
            assert events == [Idle()]  # the letter is on screen already: nothing to wait for
            host.handle(RecordAnswer(_answer(snap, patient)))
            snap = [e.value for e in events if isinstance(e, Updated)][-1]
        notes = lenses_set_notes(host.session._handle.events())
        assert [n["trial"] for n in notes] == [0, 1, 2]
        assert {(n["device"], n["confirmation"]) for n in notes} == {("manual", "clinician")}
        assert [n["lenses"][0]["sphere_d"] for n in notes] == [t.lens.sphere_d for t in host.session.trials()]
    finally:
        host.shutdown()


# ---------------------------------------------------------------------------------- the command line
def test_app_device_option_is_checked_before_any_window_opens():
    import argparse

    from visiontune.app import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["--device", "cv5000:/dev/ttyUSB0"]).device == "cv5000:/dev/ttyUSB0"
    assert cli.check_device(" CV5000:COM4") == "cv5000:COM4" and cli.check_device("manual") == "manual"
    for refused in ("cv6000:/dev/ttyUSB0", "cv5000", "manual:x"):
        with pytest.raises(InvalidInputError, match="^--device: device: expected 'manual' or 'cv5000:PORT'"):
            cli.run(parser.parse_args(["--device", refused]))


def test_the_app_command_runs_a_simulated_session_on_the_emulator(tmp_path):
    import subprocess
    import sys

    protocol = write_visit_protocol(tmp_path, max_trials=8)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    code = (
        "import sys, argparse; from visiontune.app import cli; p = argparse.ArgumentParser(); "
        "cli.add_arguments(p); sys.exit(cli.run(p.parse_args(sys.argv[1:])))"
    )
    db = tmp_path / "log.sqlite3"
    with CV5000Emulator(change_seconds=0.0) as emu:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "--simulate",
                "--pace",
                "0.01",
                "--db",
                str(db),
                "--protocol",
                str(protocol),
                "--exit-after",
                "5",
                "--device",
                f"cv5000:{emu.port}",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr
    with TrialStore.open(db) as store:
        (info,) = store.list_sessions()
        trials = store.trials(info.session_id)
    assert len(trials) == 5 and _same_sequence([s.od for s in emu.log], _lenses_in_log(trials))
    saved = load_settings(tmp_path / "cfg" / "visiontune" / "app.toml")
    assert saved.device == f"cv5000:{emu.port}"
    log_text = (tmp_path / "state" / "visiontune" / "log" / "app.log").read_text()
    assert f"lens device: cv5000:{emu.port}" in log_text


#: Each fault the issue names, injected into the emulator (or the device's range): the words its message holds.
APP_FAULTS = {
    "dropped reply": (lambda emu: emu.drop_next(), "no reply to 'v'"),
    "10 s delay": (lambda emu: emu.delay_next(10.0), "no reply to 'v' within 0.3 s"),
    "garbled reply": (lambda emu: emu.corrupt_next(), "garbled reply"),
    "port closed": (lambda emu: emu.close_after(1), "the port closed or the cable is out"),
    "out of range": (None, "outside the device's range"),
}


@pytest.mark.parametrize("fault", APP_FAULTS)
def test_every_device_fault_pauses_the_app_session_keeping_the_answers_and_the_device_back_finishes_it(tmp_path, fault):
    from visiontune.devices.base import DeviceLimits

    inject, words = APP_FAULTS[fault]
    db, protocol = tmp_path / "log.sqlite3", write_visit_protocol(tmp_path, max_trials=6)
    events = []
    with CV5000Emulator(change_seconds=0.0) as emu, CV5000Emulator(change_seconds=0.0) as back:
        host = SessionHost(events.append, reply_timeout_s=0.3, change_seconds=0.0)
        try:
            host.handle(SetDevice(f"cv5000:{emu.port}"))
            host.handle(OpenStore(str(db)))
            host.handle(StartSession(NewSession("SIM-DEV", "OD", str(protocol), True, seed=4)))
            snap = next(e.value for e in events if isinstance(e, Opened))
            patient = case_patient(snap.simulated_case, snap.n_alternatives)
            for _ in range(2):
                host.handle(Present())
                host.handle(RecordAnswer(_answer(snap, patient)))
                snap = [e.value for e in events if isinstance(e, Updated)][-1]
            before = _rows(host.session.trials())
            if inject is None:  # a device whose range holds none of the session's lenses: refused before sending
                host.device.options["limits"] = DeviceLimits(10, 20, 0.25, -6, 0, 0.25)
                host.device.close()
            else:
                inject(emu)
            del events[:]
            host.handle(Present())
            fault_message = next(e.value for e in events if isinstance(e, DeviceFault))
            assert "session 1 paused, 2 answers kept" in fault_message and words in fault_message, fault_message
            assert not any(isinstance(e, Presented) for e in events)
            assert host.session.state == SessionState.PAUSED and _rows(host.session.trials()) == before
            with TrialStore.open(db) as other:  # what is in the log, read as another process would
                assert _rows(other.trials(1)) == before and other.get_session(1).state == SessionState.PAUSED
            # the device back: the same port (faults cleared, the range the device's own), or for a
            # closed port the device on its new port (the clinician's setting)
            host.device.options.pop("limits", None)
            emu.clear_faults()
            if fault == "port closed":
                del events[:]
                host.handle(RetryDevice())  # still gone: the session stays paused, saying why
                assert "cannot open the port" in next(e.value for e in events if isinstance(e, DeviceFault))
                assert host.session.state == SessionState.PAUSED
                host.handle(SetDevice(f"cv5000:{back.port}"))
            del events[:]
            host.handle(RetryDevice())
            snap = [e.value for e in events if isinstance(e, Updated)][-1]
            assert (
                snap.state == SessionState.OPEN
                and snap.query is not None
                and not any(isinstance(e, DeviceFault) for e in events)
            )
            while snap.query is not None:
                del events[:]
                host.handle(Present())
                assert Presented(snap.query.index) in events
                host.handle(RecordAnswer(_answer(snap, patient)))
                snap = [e.value for e in events if isinstance(e, Updated)][-1]
            host.handle(Finish("budget", None))
            assert next(e.value for e in events if isinstance(e, Finished)).result
            with TrialStore.open(db) as other:
                trials = other.trials(1)
                assert other.get_session(1).state == SessionState.FINISHED
            assert _rows(trials[:2]) == before and len(trials) == 6
        finally:
            host.shutdown()


def test_a_restarted_engine_gets_the_device_again_and_every_later_lens_is_set_by_it(
    qtbot, make_window, paths, tmp_path
):
    protocol = write_visit_protocol(tmp_path, max_trials=8)
    with CV5000Emulator(change_seconds=0.0) as emu:
        window = make_window(pace_s=0.02, protocol=protocol)
        window.reporter.report = lambda message: None  # the engine's death is said in a dialog: none in a test
        window.start_view.set_device(f"cv5000:{emu.port}")
        qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.snapshot is not None and window.snapshot.n_trials >= 3, timeout=60_000)
        first_pid = window.worker.pid
        window.worker.kill_engine()
        qtbot.waitUntil(lambda: window.worker.pid != first_pid and window.worker.session_id is not None, timeout=60_000)
        qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=120_000)
    with TrialStore.open(paths["db"]) as store, store.open_session(1) as handle:
        trials, notes = store.trials(1), lenses_set_notes(handle.events())
    assert len(trials) == 8
    assert {(n["device"], n["port"]) for n in notes} == {("cv5000", emu.port)}
    last_note = {n["trial"]: n for n in notes}  # the lenses each answer was given through: set by the device
    assert sorted(last_note) == [t.index for t in trials]
    for t in trials:
        assert same_lens(t.lens2 or t.lens, _rx(last_note[t.index]["lenses"][-1]))


def _rx(d):
    from visiontune.optics import Prescription

    return Prescription(d["sphere_d"], d["cylinder_d"], d["axis_deg"])


# ---------------------------------------------------------------------------------- comparisons on the device
def test_during_a_comparison_the_device_shows_lens_1_or_lens_2_again_on_the_clinicians_button(tmp_path):
    from visiontune.app.logic.worker_device import LENS_SHOWN_NOTE

    events = []
    with CV5000Emulator(change_seconds=0.0) as emu:
        host = SessionHost(events.append, reply_timeout_s=0.5)
        try:
            host.handle(SetDevice(f"cv5000:{emu.port}"))
            host.handle(OpenStore(str(tmp_path / "log.sqlite3")))
            host.handle(StartSession(NewSession("SIM-DEV", "OD", "clinical-sloan-compare", True, seed=3)))
            snap = next(e.value for e in events if isinstance(e, Opened))
            patient = case_patient(snap.simulated_case, snap.n_alternatives)
            while not isinstance(snap.query, PendingComparison):
                host.handle(Present())
                host.handle(RecordAnswer(_answer(snap, patient)))
                snap = [e.value for e in events if isinstance(e, Updated)][-1]
            q = snap.query
            host.handle(Present())
            assert same_lens(emu.state.od, q.lens2)  # set lens 1, then lens 2: lens 2 in place
            for position, lens in ((0, q.lens1), (1, q.lens2), (0, q.lens1)):
                del events[:]
                host.handle(ShowLens(position))
                assert same_lens(emu.state.od, lens) and not any(isinstance(e, Failed) for e in events)
                view = [e.value for e in events if isinstance(e, DeviceShown)][-1]
                assert view.trial == q.index and view.fault is None
            del events[:]
            host.handle(ShowLens(2))
            assert "lens position: expected 0 to 1" in next(e.value for e in events if isinstance(e, Failed))
            shown = [
                e.payload["data"]
                for e in host.session._handle.events()
                if isinstance(e.payload, dict) and e.payload.get("text") == LENS_SHOWN_NOTE
            ]
            expected = [(q.index, p, "cv5000") for p in (0, 1, 0)]
            assert [(n["trial"], n["position"], n["device"]) for n in shown] == expected
            host.handle(RecordAnswer(_answer(snap, patient)))
            assert host.session.trials()[-1].lens2 is not None  # the comparison's answer recorded as usual
            snap = [e.value for e in events if isinstance(e, Updated)][-1]
            host.handle(Present())
            kept = len(host.session.trials())
            emu.drop_next()  # a fault while switching: paused, every answer kept
            del events[:]
            host.handle(ShowLens(0))
            assert f"{kept} answers kept" in next(e.value for e in events if isinstance(e, DeviceFault))
            assert host.session.state == SessionState.PAUSED
        finally:
            host.shutdown()


def test_the_window_shows_lens_buttons_during_a_comparison_and_the_device_follows_them(qtbot, make_window):
    with CV5000Emulator(change_seconds=0.0) as emu:
        window = make_window(pace_s=0.0, protocol="clinical-sloan-compare")
        window.start_view.set_device(f"cv5000:{emu.port}")
        qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
        view = window.session_view
        for _ in range(12):  # one step per key: Enter (the device sets the lens), Space (the simulated answer)
            qtbot.waitUntil(lambda: window.phase == Phase.LENS and window.worker_idle, timeout=60_000)
            assert not any(b.isVisible() for b in view.lens_buttons)
            qtbot.keyClick(view, Qt.Key.Key_Return)
            qtbot.waitUntil(lambda: window.phase in (Phase.ANSWER, Phase.COMPARE), timeout=60_000)
            if window.phase == Phase.COMPARE:
                break
            qtbot.keyClick(view, Qt.Key.Key_Space)
        assert window.phase == Phase.COMPARE
        q = window.snapshot.query
        assert all(b.isVisible() for b in view.lens_buttons) and "Lens 1 / Lens 2 buttons" in view.instruction.text()
        assert same_lens(emu.state.od, q.lens2)
        qtbot.mouseClick(view.lens_buttons[0], Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: same_lens(emu.state.od, q.lens1), timeout=20_000)
        qtbot.waitUntil(
            lambda: "Lenses confirmed: OD S" in view.device_state.text() and window.worker_idle, timeout=20_000
        )
        assert window.phase == Phase.COMPARE  # the answer is still the clinician's to type
        qtbot.mouseClick(view.lens_buttons[1], Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: same_lens(emu.state.od, q.lens2), timeout=20_000)
        qtbot.keyClick(view, Qt.Key.Key_1)
        qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)
        assert not any(b.isVisible() for b in view.lens_buttons)
        window.close()


def test_a_sliders_knob_moves_the_device_with_it_from_its_starting_lens():
    import dataclasses

    from visiontune.app.logic.session_controller import SessionController
    from visiontune.app.logic.worker_device import DeviceView
    from visiontune.optics import Prescription

    engine, events = _Engine(), []
    controller = SessionController(engine, export_dir=lambda: "/exports")
    controller.connect(lambda kind, value: events.append((kind, value)))
    controller.on_device(DeviceView("cv5000:/dev/pts/9", "cv5000", "/dev/pts/9", "device", connected=True))
    path = tuple(Prescription(s, -0.5, 90.0) for s in (-1.5, -1.25, -1.0, -0.75))
    slider = PendingSlider(index=4, s_logmar=0.2, knob="sphere", lenses=path, start=1, letter="KSR")
    controller.on_opened(dataclasses.replace(_snapshot(4), query=slider))
    controller.on_key("Return", "")
    assert [type(c) for c in engine.sent] == [Present]
    controller.on_presented(4)  # the device set the whole path: it goes back to the knob's start
    assert engine.sent[-1] == ShowLens(1) and controller.phase == Phase.SLIDE
    controller.on_key("Right", "")
    controller.on_key("Right", "")
    controller.on_key("Right", "")  # the end of the path: the knob and the device stay
    assert [c.position for c in engine.sent if isinstance(c, ShowLens)] == [1, 2, 3]
    controller.on_key("Left", "")
    assert engine.sent[-1] == ShowLens(2)
    assert not [v for k, v in events if k == Shown.DEVICE_LENSES]  # the comparison's buttons: not for a slider


def test_a_visits_two_eyes_are_set_through_the_device_each_before_its_eye(qtbot, make_window, tmp_path):
    protocol = write_visit_protocol(tmp_path, max_trials=4)
    with CV5000Emulator(change_seconds=0.0) as emu:
        window = make_window(pace_s=0.0, protocol=protocol)
        start = window.start_view
        start.choose_visit()
        start.set_device(f"cv5000:{emu.port}")
        qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
        view = window.session_view
        sessions = {}
        for eye in ("OD", "OS"):
            qtbot.waitUntil(lambda eye=eye: window.phase == Phase.LENS and window.snapshot.eye == eye, timeout=60_000)
            sessions[eye] = window.snapshot.session_id
            while window.phase != Phase.STOPPED:
                n = window.snapshot.n_trials
                qtbot.keyClick(view, Qt.Key.Key_Return)
                qtbot.waitUntil(lambda: window.phase in (Phase.ANSWER, Phase.COMPARE, Phase.SLIDE), timeout=60_000)
                qtbot.keyClick(view, Qt.Key.Key_Space)
                qtbot.waitUntil(
                    lambda n=n: window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.n_trials == n + 1,
                    timeout=60_000,
                )
            qtbot.keyClick(view, Qt.Key.Key_F)
            qtbot.keyClick(view, Qt.Key.Key_F)
            visits = window.visits
            qtbot.waitUntil(
                lambda: (
                    window.stack.currentWidget() is visits.step_view and visits.view is not None and not visits.pending
                ),
                timeout=60_000,
            )
            if eye == "OD":
                qtbot.keyClick(visits.step_view, Qt.Key.Key_Space)  # the next eye
        window.close()
    with TrialStore.open(window.options.db_path) as store:
        trials = {eye: store.trials(sid) for eye, sid in sessions.items()}
    od_lenses, os_lenses = _lenses_in_log(trials["OD"]), _lenses_in_log(trials["OS"])
    assert len(od_lenses) == len(os_lenses) == 4 and len(emu.log) == 8
    assert _same_sequence([s.od for s in emu.log[:4]], od_lenses)  # the right eye's, the left eye plano
    assert _same_sequence([s.os for s in emu.log[4:]], os_lenses)  # then the left eye's, the right plano
    assert all(s.os.sphere_d == 0 for s in emu.log[:4]) and all(s.od.sphere_d == 0 for s in emu.log[4:])


def test_after_a_fault_the_clinician_can_go_on_with_the_trial_frame(qtbot, make_window, paths, tmp_path):
    protocol = write_visit_protocol(tmp_path, max_trials=6)
    with CV5000Emulator(change_seconds=0.0) as emu:
        window = make_window(pace_s=0.02, protocol=protocol)
        window.start_view.set_device(f"cv5000:{emu.port}")
        qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.snapshot is not None and window.snapshot.n_trials >= 2, timeout=60_000)
        emu.close_after(1)  # the cable pulled: the device is gone for good
        qtbot.waitUntil(lambda: window.phase == Phase.PAUSED, timeout=60_000)
        view = window.session_view
        kept = window.snapshot.n_trials
        assert view.manual_button.isVisible() and "Use the trial frame" in view.instruction.text()
        qtbot.mouseClick(view.manual_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=60_000)
        assert not view.manual_button.isVisible()
        assert "manual" in view.device_state.text().lower()
    with TrialStore.open(paths["db"]) as store, store.open_session(1) as handle:
        trials, notes = store.trials(1), lenses_set_notes(handle.events())
    assert len(trials) == 6
    by_trial = {n["trial"]: n["device"] for n in notes}  # the later note of a trial set twice wins
    assert [by_trial[t.index] for t in trials] == ["cv5000"] * kept + ["manual"] * (6 - kept)
    assert load_settings(paths["settings"]).device == f"cv5000:{emu.port}"  # the saved setting is kept
