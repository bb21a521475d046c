"""The CV-5000 frames (SOH fields-each-with-CR EOT) as the public notes capture them."""

from __future__ import annotations

import pytest

from visiontune.devices.base import DeviceReplyError, LensState
from visiontune.devices.cv5000_frames import (
    FrameReader,
    decode_frame,
    encode_frame,
    format_power,
    lens_command,
    parse_lens_command,
)
from visiontune.optics import Prescription

#: The notes' captured B frame, both eyes plano (protocol_spec.json, "example_hex").
NOTES_PLANO_B = bytes.fromhex(
    "01 42 0D 52 0D 20 20 30 2E 30 30 0D 20 20 30 2E 30 30 0D 20 20 20 30 0D 4C 0D 20 20 30 2E 30 30 0D "
    "20 20 30 2E 30 30 0D 20 20 20 30 0D 30 31 0D 30 31 0D 30 0D 04"
)


def test_the_notes_captured_lens_frame_reads_as_plano_before_both_eyes():
    state = parse_lens_command(decode_frame(NOTES_PLANO_B))
    assert state == LensState(Prescription(0.0, 0.0, 180.0), Prescription(0.0, 0.0, 180.0))


def test_a_lens_command_is_the_notes_layout_and_reads_back_to_the_same_lenses():
    state = LensState(Prescription(-1.25, -0.5, 90.0), Prescription(2.0, -1.75, 5.0))
    fields = lens_command(state)
    assert fields == ("B", "R", "- 1.25", "- 0.50", "  90", "L", "  2.00", "- 1.75", "   5", "01", "01", "0")
    frame = encode_frame(fields)
    assert frame[:3] == b"\x01B\r" and frame[-2:] == b"\r\x04"
    assert parse_lens_command(decode_frame(frame)) == state


def test_powers_are_six_characters_sign_then_magnitude():
    assert [format_power(x) for x in (0.0, 1.25, -1.25, -0.25)] == ["  0.00", "  1.25", "- 1.25", "- 0.25"]


def test_an_occluded_eye_is_sent_as_plano():
    fields = lens_command(LensState.monocular("OS", Prescription(-3.0, 0.0, 180.0)))
    assert fields[2:5] == ("  0.00", "  0.00", " 180") and fields[6] == "- 3.00"


def test_the_reader_splits_a_stream_cut_anywhere_and_returns_noise_apart():
    data = b"zz" + encode_frame(("er", "01")) + encode_frame(("v", "PS", " 1.02.02  "))
    reader, frames = FrameReader(), []
    for i in range(len(data)):
        frames += reader.feed(data[i : i + 1])
    assert frames[0] == b"zz" or frames[:2] == [b"z", b"z"]
    decoded = [decode_frame(f) for f in frames if f.startswith(b"\x01")]
    assert decoded == [("er", "01"), ("v", "PS", " 1.02.02  ")]


@pytest.mark.parametrize("frame", [b"er\r01\r", b"\x01er\r01\x04", b"\x01e\xffr\r\x04", b"\x01a\x01b\r\x04", b"\x04"])
def test_garbled_frames_are_refused(frame):
    with pytest.raises(DeviceReplyError):
        decode_frame(frame)


@pytest.mark.parametrize(
    "fields, named",
    [
        (("B", "R", "- 1.x5", "  0.00", "  90", "L", "  0.00", "  0.00", "  90", "01", "01", "0"), "R sphere"),
        (("B", "R", "  0.00", "  0.00", " 190", "L", "  0.00", "  0.00", "  90", "01", "01", "0"), "R axis"),
        (("B", "R", "  0.00", "  0.00", "  90", "L", "  0.00", "  0.00", "  ab", "01", "01", "0"), "L axis"),
        (("B", "R", "  0.00"), "not a lens command"),
    ],
)
def test_a_bad_lens_field_is_named(fields, named):
    with pytest.raises(DeviceReplyError, match=named):
        parse_lens_command(fields)
