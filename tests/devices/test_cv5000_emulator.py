"""The CV-5000 driver against the SIMULATED CV-5000 on a pty: the same bytes both ways, the state
of both eyes, and every fault a clear DeviceError of its kind."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from visiontune.devices.base import (
    DeviceDisconnectedError,
    DeviceLimits,
    DeviceRangeError,
    DeviceReplyError,
    DeviceTimeoutError,
    LensState,
)
from visiontune.devices.cv5000 import CV5000
from visiontune.devices.cv5000_frames import FrameReader, decode_frame, encode_frame
from visiontune.devices.emulator import CV5000Emulator
from visiontune.errors import DeviceError
from visiontune.optics import Prescription

LENS = LensState.monocular("OD", Prescription(-1.25, -0.5, 30.0))
PLANO = Prescription(0.0, 0.0, 180.0)


@pytest.fixture
def emulator():
    with CV5000Emulator(change_seconds=0.0) as emu:
        yield emu


@pytest.fixture
def driver(emulator):
    with CV5000(emulator.port, reply_timeout_s=0.5, change_seconds=0.0) as device:
        yield device


def test_a_lens_set_is_taken_by_the_emulator_for_both_eyes_after_the_init_handshake(emulator, driver):
    confirmed = driver.set_lenses(LENS)
    assert emulator.frames_seen[0] == ("r",)
    assert emulator.frames_seen[1][0] == "B" and emulator.frames_seen[2] == ("v", "PS")
    assert emulator.log == [LensState(LENS.od, PLANO)] and emulator.state == LensState(LENS.od, PLANO)
    assert confirmed == LENS == driver.confirmed and len(driver.change_times) == 1
    driver.set_lenses(LensState.monocular("OS", Prescription(0.5, -2.0, 175.0)))
    assert emulator.state == LensState(PLANO, Prescription(0.5, -2.0, 175.0))


def test_the_confirmation_waits_for_the_emulators_stated_change_time():
    with CV5000Emulator(change_seconds=0.3) as emu, CV5000(emu.port, reply_timeout_s=0.5, change_seconds=0.3) as dev:
        started = time.monotonic()
        dev.set_lenses(LENS)
        assert time.monotonic() - started >= 0.3 and dev.change_times[0] >= 0.3


def test_a_dropped_reply_is_a_timeout_and_the_driver_sends_nothing_more_after_it(emulator, driver):
    emulator.drop_next()
    with pytest.raises(DeviceTimeoutError, match=r"no reply to 'v' within 0\.5 s"):
        driver.set_lenses(LENS)
    seen = list(emulator.frames_seen)
    with pytest.raises(DeviceError, match=r"not used after a fault \(CV-5000 on \S+: no reply to 'v'"):
        driver.set_lenses(LensState.monocular("OD", PLANO))
    time.sleep(0.1)
    assert emulator.frames_seen == seen


def test_a_reply_delayed_past_the_timeout_is_a_timeout(emulator, driver):
    emulator.delay_next(10.0)
    started = time.monotonic()
    with pytest.raises(DeviceTimeoutError):
        driver.set_lenses(LENS)
    assert time.monotonic() - started < 5.0
    emulator.clear_faults()


def test_a_garbled_reply_is_a_reply_error(emulator, driver):
    emulator.corrupt_next()
    with pytest.raises(DeviceReplyError, match="garbled reply to 'v'"):
        driver.set_lenses(LENS)


def test_a_port_closed_mid_session_is_a_disconnection(emulator, driver):
    driver.set_lenses(LENS)
    emulator.close_after(1)
    with pytest.raises(DeviceDisconnectedError, match="the port closed or the cable is out"):
        driver.set_lenses(LensState.monocular("OD", PLANO))
    assert len(emulator.log) == 1


def test_a_lens_outside_the_range_is_refused_before_any_byte_is_sent(emulator, driver):
    seen = list(emulator.frames_seen)
    with pytest.raises(DeviceRangeError, match="OD sphere -21.00 D"):
        driver.set_lenses(LensState.monocular("OD", Prescription(-21.0, 0.0, 180.0)))
    time.sleep(0.1)
    assert emulator.frames_seen == seen and emulator.log == []


def test_an_emulator_out_of_range_takes_no_lens_it_cannot_hold():
    narrow = DeviceLimits(-1.0, 1.0, 0.25, -1.0, 0.0, 0.25)
    with CV5000Emulator(change_seconds=0.0, limits=narrow) as emu, CV5000(emu.port, reply_timeout_s=0.5) as dev:
        dev.set_lenses(LensState.monocular("OD", Prescription(-2.0, 0.0, 180.0)))
        assert emu.log == [] and "OD sphere -2.00 D" in emu.refused[0][1]
        with CV5000(emu.port, reply_timeout_s=0.5, limits=narrow) as careful, pytest.raises(DeviceRangeError):
            careful.set_lenses(LensState.monocular("OD", Prescription(-2.0, 0.0, 180.0)))


def test_a_new_driver_discards_a_late_reply_left_on_the_line(emulator, driver):
    emulator.delay_next(0.8)
    with pytest.raises(DeviceTimeoutError):
        driver.set_lenses(LENS)
    driver.close()
    time.sleep(0.5)  # the late reply is written meanwhile
    with CV5000(emulator.port, reply_timeout_s=0.5) as again:
        again.set_lenses(LensState.monocular("OD", PLANO))
    assert emulator.state.od == PLANO


def test_the_emulator_log_file_is_user_only_json_lines(tmp_path, umask_000):
    path = tmp_path / "lenses.jsonl"
    with CV5000Emulator(change_seconds=0.0, log_path=str(path)) as emu, CV5000(emu.port, reply_timeout_s=0.5) as dev:
        dev.set_lenses(LENS)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["lenses"] == {
        "OD": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 30.0},
        "OS": {"sphere_d": 0.0, "cylinder_d": 0.0, "axis_deg": 180.0},
    }


def test_a_lens_already_in_place_is_confirmed_without_the_change_time():
    with CV5000Emulator(change_seconds=0.4) as emu, CV5000(emu.port, reply_timeout_s=0.5, change_seconds=0.4) as dev:
        dev.set_lenses(LENS)
        dev.set_lenses(LENS)
        assert dev.change_times[0] >= 0.4 > dev.change_times[1]
        assert emu.log == [LensState(LENS.od, PLANO)] * 2


def test_the_emulator_answers_both_version_queries_as_the_notes_captured(emulator):
    fd = os.open(emulator.port, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, encode_frame(("v", "PS")) + encode_frame(("v", "CV")) + encode_frame(("r",)))
        reader, replies, deadline = FrameReader(), [], time.monotonic() + 2
        while len(replies) < 3 and time.monotonic() < deadline:
            replies += [decode_frame(f) for f in reader.feed(os.read(fd, 256))]
    finally:
        os.close(fd)
    assert replies == [("v", "PS", " 1.02.02  "), ("v", "CV", " 4.00.50LP"), ("er", "01")]
