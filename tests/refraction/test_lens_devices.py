"""The lens device as a clinic setting: its seconds per change, and the protocol priced by it."""

from __future__ import annotations

import pytest

from visiontune.devices.cv5000 import CV5000_CHANGE_SECONDS
from visiontune.devices.manual import TRIAL_FRAME_CHANGE_SECONDS
from visiontune.errors import InvalidInputError
from visiontune.refraction.lens_devices import DEVICE_KINDS, device_kind, lens_change_seconds, protocol_for_device
from visiontune.refraction.lenses import lens_changes
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint


def test_the_three_kinds_and_their_seconds():
    assert list(DEVICE_KINDS) == ["trial-frame", "manual-phoropter", "motorized-phoropter"]
    assert lens_change_seconds("trial-frame") == TRIAL_FRAME_CHANGE_SECONDS == 4.0
    assert lens_change_seconds("motorized-phoropter") == CV5000_CHANGE_SECONDS
    assert (
        lens_change_seconds("trial-frame")
        > lens_change_seconds("manual-phoropter")
        > lens_change_seconds("motorized-phoropter")
    )
    assert all(k.one_step and k.source for k in DEVICE_KINDS.values())
    with pytest.raises(InvalidInputError, match="lens device: expected one of trial-frame"):
        device_kind("robot")


@pytest.mark.parametrize("kind", list(DEVICE_KINDS))
def test_the_protocol_takes_the_devices_seconds_and_nothing_else(kind):
    shipped = load_protocol("clinical-sloan-compare")
    priced = protocol_for_device(shipped, kind)
    assert priced.comparisons.lens_change_seconds == lens_change_seconds(kind)
    assert f"lens_change_seconds = {lens_change_seconds(kind)!r}" in priced.source_text  # the snapshot holds it
    assert priced.comparisons.comparison == shipped.comparisons.comparison and priced.stopping == shipped.stopping
    assert priced.name == shipped.name and priced.comparisons.letter_seconds == shipped.comparisons.letter_seconds


def test_a_protocol_without_the_line_gets_it_and_one_without_comparisons_is_refused():
    text = load_protocol("clinical-sloan-compare").source_text
    lines = [line for line in text.splitlines() if not line.strip().startswith("lens_change_seconds")]
    bare = parse_protocol("\n".join(lines) + "\n", "bare")
    assert bare.comparisons.lens_change_seconds == 0.0
    assert protocol_for_device(bare, "manual-phoropter").comparisons.lens_change_seconds == 1.0
    with pytest.raises(InvalidInputError, match="no \\[comparisons\\] table"):
        protocol_for_device(load_protocol("clinical-sloan"), "trial-frame")


def test_the_patients_time_counts_each_change_at_the_devices_seconds():
    """Same answers, two devices: the time differs by exactly the change count times the seconds' difference."""
    case = simulated_case(seed=2)
    times = {}
    for kind in ("trial-frame", "motorized-phoropter"):
        protocol = protocol_for_device(load_protocol("clinical-sloan-compare"), kind)
        r = Refraction(
            MemoryLog(),
            protocol,
            seed=case.seed,
            simulated=True,
            start=StartingPoint(case.start_rx, case.start_source, case.age_years),
        )
        r.run(SimulatedPresenter(case.patient(protocol.n_alternatives)), max_steps=1)
        times[kind] = (r.patient_seconds(), lens_changes(r.trials()))
    (t_frame, n), (t_motor, n2) = times["trial-frame"], times["motorized-phoropter"]
    assert n == n2 >= 1 and t_frame - t_motor == pytest.approx(n * (4.0 - CV5000_CHANGE_SECONDS))
