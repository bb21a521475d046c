"""The manual trial frame or phoropter: the clinician places each lens and confirms it.

Today's behaviour, as a device: :meth:`ManualDevice.set_lenses` shows the clinician what to set
(both eyes: a lens or the occluder) and returns only when ``confirm(text)`` says it is set; a
refusal raises :class:`~visiontune.errors.DeviceError` (the session pauses, nothing lost). The
frame tells nothing back (:meth:`read_back` is ``None``). ``change_seconds``: 4 s a trial-lens
swap (assumed, the figure the shipped protocol prices; ``visiontune sessions durations`` measures
a clinic's own).
"""

from __future__ import annotations

from collections.abc import Callable

from visiontune.devices.base import DeviceLimits, LensDevice, LensState
from visiontune.errors import DeviceError

#: A trial-lens swap, s (assumed; the shipped clinical protocol's ``lens_change_seconds``).
TRIAL_FRAME_CHANGE_SECONDS = 4.0
#: A trial-lens set's usual range: spheres +-20 D and cylinders +-6 D in 0.25 D, axes by the degree.
TRIAL_SET_LIMITS = DeviceLimits(-20.0, 20.0, 0.25, -6.0, 6.0, 0.25)


class ManualDevice(LensDevice):
    """The clinician's hands. ``confirm(text) -> bool`` asks the clinician to set the lenses
    described by ``text`` (the app's prompt, or a terminal's) and says whether they did."""

    name = "manual"
    confirmation = "clinician"
    can_occlude = True

    def __init__(
        self,
        confirm: Callable[[str], bool],
        *,
        change_seconds: float = TRIAL_FRAME_CHANGE_SECONDS,
        limits: DeviceLimits = TRIAL_SET_LIMITS,
    ):
        self.confirm = confirm
        self.change_seconds = float(change_seconds)
        self.limits = limits

    def set_lenses(self, state: LensState) -> LensState:
        checked = self.limits.check_state(state)
        if not self.confirm(f"set {checked.text()}"):
            raise DeviceError(f"the clinician did not confirm the lenses ({checked.text()})")
        self.confirmed = checked
        return checked
