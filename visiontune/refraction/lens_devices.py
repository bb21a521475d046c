"""The lens device as a clinic setting: how long a change of lens takes, and what one change is.

A session prices each change of the lens before the eye at the protocol's ``[comparisons]
lens_change_seconds`` (:meth:`visiontune.refraction.loop.Refraction.patient_seconds`; the
question rule weighs it, :mod:`visiontune.refraction.mixed_rules`). That figure belongs to the
clinic's device, not to the protocol: :data:`DEVICE_KINDS` are the three a clinic uses, each
with its seconds per change and the changes it makes in one step; :func:`protocol_for_device`
is the protocol with the device's figure (``visiontune session run --lens-device KIND``,
``visiontune validate --lens-device KIND``). Qt-free: the app reads :func:`lens_change_seconds`
and :data:`DEVICE_KINDS` for its device setting.

What counts as a change is :func:`visiontune.refraction.lenses.lens_changes`: the lens before
the eye differs from the one before (the first lens placed included; a comparison shows two).
Changes a device makes without a change of that lens are priced at none by the questions
themselves: a hand-held Jackson cross-cylinder flipped before the lens in place, or a +/-0.25 D
flipper (:mod:`visiontune.refraction.clinical_pairs`).

**trial-frame** (4 s a change, **assumed**): the clinician takes the next lens from the case,
puts it in a cell of the frame and takes the old one out; a change of sphere and cylinder at once
is two lenses, counted as one change here. No published timing of a trial-lens swap was found
(:mod:`visiontune.refraction.durations`); 4 s is the figure of the shipped protocol and of
:data:`visiontune.devices.manual.TRIAL_FRAME_CHANGE_SECONDS`. A clinic measures its own from its
trial logs: ``visiontune sessions durations`` (the median gap between answers with the lens
changed, minus the gap with it kept, :mod:`visiontune.session.answer_times`); no clinic's logs
are in the project yet. One step: one lens swapped (a hand-held JCC or flipper over it: none).

**manual-phoropter** (1 s a change, **assumed**): a dial click of the sphere (0.25 D), a flip of
the phoropter's own cross-cylinder, a turn of the cylinder or axis knob; the slider model's 0.5 s
a click (:mod:`visiontune.refraction.durations`) for one or two clicks. A change of several
diopters takes more clicks (the fast 3 D dial of most phoropters keeps it to a few). One step: a
sphere click, a JCC flip, an axis turn.

**motorized-phoropter** (0.5 s a change, the CV-5000 emulator's stated timing,
:data:`visiontune.devices.cv5000.CV5000_CHANGE_SECONDS`, itself **assumed**: no maker's figure was
found; docs/devices.md): the device sets any lens in one command, sphere, cylinder and axis at
once. One step: any lens.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.devices.cv5000 import CV5000_CHANGE_SECONDS
from visiontune.devices.manual import TRIAL_FRAME_CHANGE_SECONDS
from visiontune.errors import InvalidInputError
from visiontune.refraction.protocol import Protocol, parse_protocol, with_table_line

__all__ = ["DEVICE_KINDS", "LensDeviceKind", "device_kind", "lens_change_seconds", "protocol_for_device"]


@dataclass(frozen=True)
class LensDeviceKind:
    """A kind of lens device: ``name`` (the flag's value), ``label`` (for people),
    ``change_seconds`` (one change of the lens before the eye, s), ``one_step`` (which changes it
    makes in one step) and ``source`` (where the seconds come from)."""

    name: str
    label: str
    change_seconds: float
    one_step: str
    source: str


_KINDS = (
    LensDeviceKind(
        "trial-frame",
        "trial frame",
        float(TRIAL_FRAME_CHANGE_SECONDS),
        "one trial lens swapped; a hand-held cross-cylinder or +/-0.25 D flipper over the lens in place is no change",
        "assumed (no published timing; measure with `visiontune sessions durations`)",
    ),
    LensDeviceKind(
        "manual-phoropter",
        "manual phoropter",
        1.0,
        "a sphere click, a flip of the phoropter's cross-cylinder, a turn of the axis or cylinder knob",
        "assumed (one or two dial clicks at 0.5 s, the slider's click)",
    ),
    LensDeviceKind(
        "motorized-phoropter",
        "motorized phoropter",
        float(CV5000_CHANGE_SECONDS),
        "any lens (sphere, cylinder and axis in one command)",
        "the CV-5000 emulator's stated timing (visiontune.devices.cv5000; assumed, no maker's figure)",
    ),
)
#: The device kinds by name, in the order a form lists them.
DEVICE_KINDS: dict[str, LensDeviceKind] = {k.name: k for k in _KINDS}


def device_kind(name: str) -> LensDeviceKind:
    """The device kind ``name``, or an error listing the kinds."""
    if name not in DEVICE_KINDS:
        raise InvalidInputError(f"lens device: expected one of {', '.join(DEVICE_KINDS)}, got {name!r}")
    return DEVICE_KINDS[name]


def lens_change_seconds(name: str) -> float:
    """Seconds of the patient's time per change of lens with the device kind ``name``."""
    return device_kind(name).change_seconds


def protocol_for_device(protocol: Protocol, name: str) -> Protocol:
    """``protocol`` with ``[comparisons] lens_change_seconds`` set to the device kind's seconds
    (the line replaced or added in the protocol text, parsed again, so the session's snapshot
    holds it). A protocol without ``[comparisons]`` prices no change: refused, since the device
    would change nothing there."""
    kind = device_kind(name)
    line = f"lens_change_seconds = {kind.change_seconds!r}  # the {kind.label}'s change time (lens device setting)"
    text = with_table_line(protocol.source_text, "comparisons", "lens_change_seconds", line)
    if text is None:
        raise InvalidInputError(
            f"--lens-device {name}: the protocol {protocol.name} has no [comparisons] table, "
            "so it prices no change of lens; the device changes nothing there"
        )
    return parse_protocol(text, source=f"{protocol.source} ({kind.label})")
