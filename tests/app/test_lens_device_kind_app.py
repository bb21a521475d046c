"""The lens device's kind as a clinic setting in the app: the manual device is a trial frame (the
default, 4 s a change of lens) or a manual phoropter (1 s); a CV-5000 is the motorized phoropter
(0.5 s) whatever the setting says. The kind is persisted with the other settings (a refused value
never), each session's and each visit eye's stored protocol snapshot carries the kind's seconds
(``[comparisons] lens_change_seconds``), and the session page says which lens to place on what
device, the device panel the kind with its seconds a change and their source."""

from __future__ import annotations

import argparse
import dataclasses
import re
from importlib import resources

import pytest
from PySide6.QtCore import Qt

from visiontune.app import cli
from visiontune.app.logic.events import Shown
from visiontune.app.logic.keys import Phase
from visiontune.app.logic.messages import CreateVisit, DeviceShown, Failed, OpenStore, SetDevice, StartSession
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.settings import AppSettings, load_settings, save_settings
from visiontune.app.logic.start_form import LENS_KIND_CHOICES, lens_kind_setting
from visiontune.app.logic.texts import device_text
from visiontune.app.logic.visit_flow import NewVisit
from visiontune.app.logic.worker_device import DeviceLink, DeviceView
from visiontune.app.logic.worker_values import NewSession
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.optics import Prescription
from visiontune.session.engine import PendingComparison
from visiontune.session.store import TrialStore

#: The seconds a change of lens each kind is priced at (lens_devices' module docstring; written
#: out here, not read from the table under test).
TRIAL_FRAME_S, MANUAL_PHOROPTER_S, MOTORIZED_S = 4.0, 1.0, 0.5


def _compare_protocol(folder, max_trials: int = 6):
    """``clinical-sloan-compare`` (letters and comparisons) stopping after ``max_trials`` answers."""
    text = (resources.files("visiontune") / "data" / "protocols" / "clinical-sloan-compare.toml").read_text("utf-8")
    text = text.replace('name = "clinical-sloan-compare"', 'name = "kind-test"')
    text = re.sub(r"max_trials = \d+", f"max_trials = {max_trials}", text)
    text = re.sub(r"min_trials = \d+", "min_trials = 0", text)
    path = folder / "kind-test.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _host(tmp_path, device):
    db, events = tmp_path / "log.sqlite3", []
    host = SessionHost(events.append, reply_timeout_s=0.3)
    host.handle(SetDevice(*device) if isinstance(device, tuple) else SetDevice(device))
    host.handle(OpenStore(str(db)))
    return host, events, db


# ---------------------------------------------------------------------------------- the setting
def test_the_kind_is_persisted_and_a_refused_one_never_is(tmp_path):
    assert AppSettings().lens_device == "trial-frame"
    path = tmp_path / "app.toml"
    save_settings(AppSettings(lens_device="manual-phoropter"), path)
    assert load_settings(path).lens_device == "manual-phoropter"
    before = path.read_bytes()
    for refused in ("motorized-phoropter", "phoropter", "", "Trial-Frame"):
        with pytest.raises(ConfigurationError, match="^lens_device: expected trial-frame or manual-phoropter"):
            AppSettings(lens_device=refused)
    with pytest.raises(ConfigurationError, match="lens_device: expected a string"):
        AppSettings(lens_device=1.0)
    assert path.read_bytes() == before  # nothing refused reached the file
    path.write_text('lens_device = "motorized-phoropter"\n', encoding="utf-8")  # hand-edited: the file and key named
    with pytest.raises(ConfigurationError, match=r"app\.toml: lens_device: expected trial-frame or manual-phoropter"):
        load_settings(path)
    assert [name for name, _ in LENS_KIND_CHOICES] == ["trial-frame", "manual-phoropter"]
    assert "4 s a lens change" in LENS_KIND_CHOICES[0][1] and "1 s a lens change" in LENS_KIND_CHOICES[1][1]
    assert lens_kind_setting("manual-phoropter") == "manual-phoropter"
    with pytest.raises(InvalidInputError, match="^Lens device kind: expected trial-frame or manual-phoropter"):
        lens_kind_setting("motorized-phoropter")


def test_a_cv5000_is_the_motorized_phoropter_whatever_the_manual_kind():
    link = DeviceLink("manual")
    assert link.device_kind == "trial-frame" and link.view().change_seconds == TRIAL_FRAME_S
    link.set_lens_kind("manual-phoropter")
    assert link.view().device_kind == "manual-phoropter" and link.view().change_seconds == MANUAL_PHOROPTER_S
    link.configure("cv5000:/dev/ttyUSB9")
    assert link.device_kind == "motorized-phoropter" and link.view().change_seconds == MOTORIZED_S
    link.configure("manual")
    assert link.device_kind == "manual-phoropter"  # the manual kind kept across the driver setting
    with pytest.raises(InvalidInputError, match="motorized phoropter is the CV-5000 driver"):
        link.set_lens_kind("motorized-phoropter")
    assert link.lens_kind == "manual-phoropter"


# ---------------------------------------------------------------------------------- the pricing
@pytest.mark.parametrize(
    "device, seconds, said",
    [
        (("manual", "trial-frame"), TRIAL_FRAME_S, "the trial frame's change time"),
        (("manual", "manual-phoropter"), MANUAL_PHOROPTER_S, "the manual phoropter's change time"),
    ],
)
def test_a_sessions_stored_protocol_carries_the_kinds_seconds(tmp_path, device, seconds, said):
    host, events, db = _host(tmp_path, device)
    try:
        host.handle(StartSession(NewSession("SIM-KIND", "OD", "clinical-sloan-compare", True, seed=4)))
        assert not [e.value for e in events if isinstance(e, Failed)], events
        assert host.session.protocol.comparisons.lens_change_seconds == seconds
        view = [e.value for e in events if isinstance(e, DeviceShown)][-1]
        assert view.device_kind == device[1] and view.change_seconds == seconds
    finally:
        host.shutdown()
    with TrialStore.open(db, read_only=True) as store:
        stored = store.get_session(1).protocol
    assert stored.comparisons.lens_change_seconds == seconds and said in stored.source_text


def test_a_cv5000_session_keeps_its_own_change_time_beside_a_manual_kind(tmp_path):
    host, events, _db = _host(tmp_path, (f"cv5000:{tmp_path / 'no-such-port'}", "manual-phoropter"))
    try:
        host.handle(StartSession(NewSession("SIM-CV", "OD", "clinical-sloan-compare", True, seed=4)))
        assert host.session.protocol.comparisons.lens_change_seconds == MOTORIZED_S
        assert [e.value for e in events if isinstance(e, DeviceShown)][-1].device_kind == "motorized-phoropter"
    finally:
        host.shutdown()


def test_a_letters_only_protocol_is_left_as_it_is(tmp_path):
    host, events, _db = _host(tmp_path, ("manual", "manual-phoropter"))
    try:
        host.handle(StartSession(NewSession("SIM-LET", "OD", "clinical-sloan", True, seed=4)))
        assert not [e.value for e in events if isinstance(e, Failed)], events
        assert host.session.protocol.comparisons is None
        assert "change time" not in host.session.protocol.source_text
    finally:
        host.shutdown()


def test_each_visit_eye_carries_the_kinds_seconds(tmp_path):
    host, events, db = _host(tmp_path, ("manual", "manual-phoropter"))
    try:
        host.handle(CreateVisit(NewVisit("SIM-KINDV", "clinical-sloan-compare", True, seed=4)))
        assert not [e.value for e in events if isinstance(e, Failed)], events
    finally:
        host.shutdown()
    with TrialStore.open(db, read_only=True) as store:
        eyes = store.visit_eyes(1)
        for eye in ("OD", "OS"):
            protocol = store.get_session(eyes[eye].session_id).protocol
            assert protocol.comparisons.lens_change_seconds == MANUAL_PHOROPTER_S, eye
            assert "the manual phoropter's change time" in protocol.source_text, eye


# ---------------------------------------------------------------------------------- the page
def _controller(kind: str):
    from test_session_controller import FakeEngine, snapshot

    from visiontune.app.logic.session_controller import SessionController

    engine, events = FakeEngine(), []
    controller = SessionController(engine, export_dir=lambda: "/exports")
    controller.connect(lambda k, value: events.append((k, value)))
    controller.on_device(DeviceView("manual", "manual", None, "clinician", device_kind=kind))
    return controller, events, snapshot


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("trial-frame", "Place lens S \u22121.00 / C \u22120.50 \u00d7 090 in the trial frame, then press Enter"),
        ("manual-phoropter", "Set S \u22121.00 / C \u22120.50 \u00d7 090 on the phoropter, then press Enter"),
    ],
)
def test_the_page_says_which_lens_to_place_on_what_device(kind, expected):
    controller, events, snapshot = _controller(kind)
    controller.submit(StartSession("request"))
    controller.on_opened(snapshot(0))
    controller.on_idle()
    prompt = [v for k, v in events if k == Shown.PROMPT][-1]
    assert prompt.instruction.startswith(expected)
    events.clear()
    pair = PendingComparison(0, 0.3, Prescription(-1.0, -0.5, 90.0), Prescription(-0.75, -0.5, 90.0), "K")
    controller.on_opened(dataclasses.replace(snapshot(0), query=pair))
    controller.on_idle()
    where = "on the phoropter" if kind == "manual-phoropter" else "in the trial frame"
    prompt = [v for k, v in events if k == Shown.PROMPT][-1]
    assert f"Set lens 1 and lens 2 ({where}), then press Enter" in prompt.instruction


def test_the_device_panel_shows_the_kind_its_seconds_and_their_source():
    text = device_text(DeviceView("manual", "manual", None, "clinician", device_kind="manual-phoropter"))
    assert "Kind: manual phoropter \u00b7 1 s a change of lens, assumed" in text
    text = device_text(DeviceView("manual", "manual", None, "clinician"))
    assert "Kind: trial frame \u00b7 4 s a change of lens, assumed (no published timing" in text
    text = device_text(DeviceView("cv5000:COM4", "cv5000", "COM4", "device", device_kind="motorized-phoropter"))
    assert "Kind: motorized phoropter \u00b7 0.5 s a change of lens, the CV-5000 emulator's stated timing" in text


def test_the_start_form_sets_the_kind_the_session_is_priced_at_and_saves_it(qtbot, make_window, paths, tmp_path):
    window = make_window(pace_s=0.0, protocol=_compare_protocol(tmp_path))
    start = window.start_view
    assert start.lens_kind.currentData() == "trial-frame" and start.lens_kind.isVisibleTo(start)
    start.lens_kind.setCurrentIndex(start.lens_kind.findData("manual-phoropter"))
    start.device_kind.setCurrentIndex(start.device_kind.findData("cv5000"))  # no port: refused
    assert not start.lens_kind.isVisibleTo(start)  # a CV-5000 is the motorized phoropter
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    assert start.form_error.text().startswith("Lens device port:")
    assert not paths["settings"].exists() or load_settings(paths["settings"]).lens_device == "trial-frame"
    start.device_kind.setCurrentIndex(start.device_kind.findData("manual"))
    qtbot.mouseClick(start.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.phase == Phase.LENS, timeout=60_000)
    assert load_settings(paths["settings"]).lens_device == "manual-phoropter"
    assert window.engine_lens_kind == "manual-phoropter"
    assert "on the phoropter" in window.session_view.instruction.text()
    qtbot.waitUntil(lambda: "Kind: manual phoropter" in window.session_view.device_state.text(), timeout=20_000)
    assert "1 s a change of lens" in window.session_view.device_state.text()
    session_id = window.worker.session_id
    window.close()
    with TrialStore.open(paths["db"], read_only=True) as store:
        assert store.get_session(session_id).protocol.comparisons.lens_change_seconds == MANUAL_PHOROPTER_S


# ---------------------------------------------------------------------------------- the command line
def test_app_lens_device_option_is_checked_before_any_window_opens():
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["--lens-device", "manual-phoropter"]).lens_device == "manual-phoropter"
    assert cli.check_lens_device("manual-phoropter", None) == "manual-phoropter"
    assert cli.check_lens_device("trial-frame", "manual") == "trial-frame"
    assert cli.check_lens_device("motorized-phoropter", "cv5000:COM4") is None
    assert cli.check_lens_device(None, "cv5000:COM4") is None
    for argv, message in (
        (["--lens-device", "phoropter"], "^--lens-device: expected one of trial-frame"),
        (["--lens-device", "motorized-phoropter"], "^--lens-device motorized-phoropter: .*CV-5000"),
        (
            ["--lens-device", "trial-frame", "--device", "cv5000:COM4"],
            "^--lens-device trial-frame: --device cv5000:COM4 is the motorized phoropter",
        ),
    ):
        with pytest.raises(InvalidInputError, match=message):
            cli.run(parser.parse_args(argv))
