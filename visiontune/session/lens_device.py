"""A lens device in a session: each lens a question shows is set, and confirmed, before the
question is on screen; the trial log records which device set it.

:func:`set_question_lenses` puts the lenses of the pending question before the session's eye
(the fellow eye occluded), in the order the patient sees them (a letter's lens; a comparison's
lens 1 then lens 2; a slider's path), each returning only once the device (or, at a trial
frame, the clinician) confirmed it (:class:`~visiontune.devices.base.LensDevice`). The session
(:meth:`~visiontune.session.engine.RefractionSession.mark_presented`) notes every question's
lenses with the device that set them (:data:`LENSES_SET_NOTE`, the store's events: no schema
change) and, on a :class:`~visiontune.errors.DeviceError`, pauses (every answer kept).

:func:`protocol_with_lens_change_seconds`: the device's own change time as the protocol's
``[comparisons] lens_change_seconds`` (the price of a change of lens between answers), set in
the protocol text so the session's snapshot holds it.
"""

from __future__ import annotations

from visiontune.devices.base import LensDevice, LensState
from visiontune.errors import DeviceError
from visiontune.optics import Prescription
from visiontune.refraction.loop import PendingComparison, PendingSlider
from visiontune.refraction.protocol import Protocol, parse_protocol, with_table_line

#: The note (events table) holding each question's lenses and the device that set them.
LENSES_SET_NOTE = "lenses set by device"
#: The note recording a device attached to the session (from which trial on).
DEVICE_ATTACHED_NOTE = "lens device attached"


def question_lenses(query) -> list[Prescription]:
    """The lenses a pending question puts before the eye, in order; for a lens held before the
    trial lens (a flipper, a cross-cylinder), that frame lens alone: the clinician holds the other."""
    if isinstance(query, PendingSlider):
        return list(query.lenses)
    if isinstance(query, PendingComparison) and query.frame_lens is not None:
        return [query.frame_lens]
    if isinstance(query, PendingComparison):
        return [query.lens1, query.lens2]
    return [query.lens]


def set_question_lenses(device: LensDevice, eye: str, query) -> list[LensState]:
    """Set every lens of ``query`` before ``eye`` on ``device`` (fellow eye occluded), each
    confirmed; the states the device confirmed. :class:`DeviceError` stops at the first fault."""
    if eye not in ("OD", "OS"):
        raise DeviceError(f"a lens device sets one eye's lenses (OD or OS); this session is {eye}")
    return [device.set_lenses(LensState.monocular(eye, lens)) for lens in question_lenses(query)]


def lenses_set_record(device: LensDevice, eye: str, trial_index: int, states: list[LensState]) -> dict:
    """The note's data: the trial, the device (:meth:`LensDevice.describe`) and the lenses it set before ``eye``."""
    lenses = [state.to_dict()[eye] for state in states]
    return {"trial": trial_index, "eye": eye, "lenses": lenses, **device.describe()}


def lenses_set_notes(events) -> list[dict]:
    """The :data:`LENSES_SET_NOTE` records of a session's events, in order (a question set again
    after a pause has two: the later one set the lenses the answer was given through)."""
    return [
        e.payload["data"] for e in events if isinstance(e.payload, dict) and e.payload.get("text") == LENSES_SET_NOTE
    ]


def protocol_with_lens_change_seconds(protocol: Protocol, seconds: float, device_name: str) -> Protocol:
    """``protocol`` with ``[comparisons] lens_change_seconds = seconds`` (the protocol unchanged
    when it has no ``[comparisons]`` table: nothing there prices a change). The text is edited
    and parsed again, so the value is validated and the session's snapshot holds it."""
    line = f"lens_change_seconds = {float(seconds)!r}  # the {device_name} device's change time"
    text = with_table_line(protocol.source_text, "comparisons", "lens_change_seconds", line)
    return protocol if text is None else parse_protocol(text, source=protocol.source)
