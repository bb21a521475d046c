"""A device's range and steps refuse a lens before it is sent; the manual device is the
clinician's confirmation."""

from __future__ import annotations

import pytest

from visiontune.devices.base import DeviceRangeError, LensState
from visiontune.devices.choice import open_device, parse_device_spec
from visiontune.devices.cv5000 import CV5000_LIMITS
from visiontune.devices.manual import ManualDevice
from visiontune.errors import DeviceError, InvalidInputError, VisionTuneError
from visiontune.optics import Prescription


def test_a_plus_cylinder_lens_is_sent_as_the_same_lens_in_minus_cylinder():
    lens = CV5000_LIMITS.check("OD", Prescription(-1.75, 0.5, 30.0))
    assert (lens.sphere_d, lens.cylinder_d, lens.axis_deg) == (-1.25, -0.5, 120.0)


@pytest.mark.parametrize(
    "rx, words",
    [
        (Prescription(-20.25, 0.0, 180.0), ["OD sphere -20.25 D", "[-20.00, +20.00] D", "nothing was sent"]),
        (Prescription(0.0, -6.5, 90.0), ["OD cylinder -6.50 D", "[-6.00, +0.00] D"]),
        (Prescription(-1.1, 0.0, 180.0), ["OD sphere -1.10 D", "0.25 D steps"]),
        (Prescription(-1.0, -0.5, 32.5), ["OD axis +32.50 deg", "1 deg steps"]),
    ],
)
def test_a_lens_outside_the_range_or_steps_is_refused_naming_value_and_range(rx, words):
    with pytest.raises(DeviceRangeError) as info:
        CV5000_LIMITS.check("OD", rx)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert isinstance(info.value, DeviceError) and isinstance(info.value, VisionTuneError)


def test_the_manual_device_waits_for_the_clinician_and_a_refusal_is_a_device_error():
    asked = []
    device = ManualDevice(lambda text: asked.append(text) or len(asked) == 1)
    state = LensState.monocular("OS", Prescription(-2.0, -0.75, 10.0))
    assert device.set_lenses(state) == state
    assert asked == [f"set OD occluded; OS {Prescription(-2.0, -0.75, 10.0).format()}"]
    with pytest.raises(DeviceError, match="did not confirm"):
        device.set_lenses(state)
    assert device.confirmation == "clinician" and device.read_back() is None


def test_device_settings_are_parsed_or_refused_clearly():
    assert parse_device_spec("cv5000:/dev/ttyUSB0") == ("cv5000", "/dev/ttyUSB0")
    assert parse_device_spec(" manual ") == ("manual", None)
    for bad in ("cv5000", "cv5000:", "vision-r:/dev/ttyS0", "manual:x"):
        with pytest.raises(InvalidInputError, match="'manual' or 'cv5000:PORT'"):
            parse_device_spec(bad)
    with pytest.raises(InvalidInputError, match="confirmation"):
        open_device("manual")


def test_a_port_that_does_not_exist_is_a_clear_device_error(tmp_path):
    with pytest.raises(DeviceError, match="cannot open the port"):
        open_device(f"cv5000:{tmp_path / 'no-such-tty'}")
