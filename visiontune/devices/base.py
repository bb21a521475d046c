"""The lens-device interface: what is before each eye, the device's range and steps, and the
errors a device raises.

A :class:`LensDevice` sets the lenses before both eyes at once (:class:`LensState`: a lens or
the occluder per eye), says how it knows the lens is in place (``confirmation``: ``"device"``,
a reply on its line; ``"clinician"``, a person's confirmation) and what a change costs
(``change_seconds``). Values outside the device's range or off its steps are refused by
:meth:`DeviceLimits.check` before anything is sent, the message naming the eye, the value and
the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from visiontune.errors import DeviceError
from visiontune.optics import Prescription

EYES = ("OD", "OS")


class DeviceRangeError(DeviceError):
    """A lens outside the device's range or off its steps, refused before it was sent."""


class DeviceTimeoutError(DeviceError):
    """The device did not answer within its time."""


class DeviceDisconnectedError(DeviceError):
    """The port closed or the cable is out."""


class DeviceReplyError(DeviceError):
    """The device answered bytes that are not the reply expected (garbled or out of step)."""


@dataclass(frozen=True)
class LensState:
    """The lenses before the right (``od``) and left (``os``) eyes; ``None`` is the occluder."""

    od: Prescription | None
    os: Prescription | None

    @classmethod
    def monocular(cls, eye: str, lens: Prescription) -> LensState:
        """``lens`` before ``eye`` (``"OD"`` or ``"OS"``), the fellow eye occluded."""
        if eye not in EYES:
            raise DeviceError(f"eye: expected OD or OS, got {eye!r}")
        return cls(lens, None) if eye == "OD" else cls(None, lens)

    def lens(self, eye: str) -> Prescription | None:
        return self.od if eye == "OD" else self.os

    def to_dict(self) -> dict:
        def one(rx):
            return (
                None if rx is None else {"sphere_d": rx.sphere_d, "cylinder_d": rx.cylinder_d, "axis_deg": rx.axis_deg}
            )

        return {"OD": one(self.od), "OS": one(self.os)}

    def text(self) -> str:
        return "; ".join(
            f"{eye} {'occluded' if rx is None else rx.format()}" for eye, rx in (("OD", self.od), ("OS", self.os))
        )


def _on_step(value: float, lo: float, step: float) -> bool:
    k = (value - lo) / step
    return math.isclose(k, round(k), abs_tol=1e-6)


@dataclass(frozen=True)
class DeviceLimits:
    """A device's range and steps: sphere and cylinder in diopters (the cylinder in the form the
    device takes: minus cylinder when ``cylinder_max_d`` is 0), axis in degrees."""

    sphere_min_d: float
    sphere_max_d: float
    sphere_step_d: float
    cylinder_min_d: float
    cylinder_max_d: float
    cylinder_step_d: float
    axis_min_deg: float = 0.0
    axis_max_deg: float = 180.0
    axis_step_deg: float = 1.0

    def in_device_form(self, rx: Prescription) -> Prescription:
        """``rx`` in the cylinder form the device takes (the same lens, transposed if needed)."""
        return rx.to_minus_cylinder() if self.cylinder_max_d <= 0.0 else rx

    def check(self, eye: str, rx: Prescription) -> Prescription:
        """``rx`` in the device's form, or :class:`DeviceRangeError` naming the eye, the value and
        the range or step it misses (nothing is sent)."""
        lens = self.in_device_form(rx)
        for name, value, lo, hi, step, unit in (
            ("sphere", lens.sphere_d, self.sphere_min_d, self.sphere_max_d, self.sphere_step_d, "D"),
            ("cylinder", lens.cylinder_d, self.cylinder_min_d, self.cylinder_max_d, self.cylinder_step_d, "D"),
            ("axis", lens.axis_deg, self.axis_min_deg, self.axis_max_deg, self.axis_step_deg, "deg"),
        ):
            if not lo - 1e-9 <= value <= hi + 1e-9:
                raise DeviceRangeError(
                    f"{eye} {name} {value:+.2f} {unit} (lens {rx.format()}) is outside the device's "
                    f"range [{lo:+.2f}, {hi:+.2f}] {unit}; nothing was sent"
                )
            if not _on_step(value, lo, step):
                raise DeviceRangeError(
                    f"{eye} {name} {value:+.2f} {unit} (lens {rx.format()}) is not on the device's "
                    f"{step:g} {unit} steps; nothing was sent"
                )
        return lens

    def check_state(self, state: LensState) -> LensState:
        """Both eyes checked (:meth:`check`), in the device's form."""
        return LensState(
            *(None if rx is None else self.check(eye, rx) for eye, rx in (("OD", state.od), ("OS", state.os)))
        )


class LensDevice:
    """A device that puts lenses before the eyes. Subclasses set :attr:`name`, :attr:`limits`,
    :attr:`change_seconds` and :attr:`confirmation` and implement :meth:`set_lenses`.

    ``set_lenses(state)`` returns only when the device (or the clinician) has confirmed that
    ``state`` is before the eyes, and raises :class:`~visiontune.errors.DeviceError` otherwise.
    ``read_back()`` is what the device says is set, or ``None`` where it tells nothing.
    ``can_occlude``: whether the device closes an eye itself (else the clinician does)."""

    name: str = "device"
    limits: DeviceLimits
    change_seconds: float
    confirmation: str = "device"
    can_occlude: bool = True
    #: The lenses last confirmed (the driver's record of a confirmation, not a read-back).
    confirmed: LensState | None = None

    def describe(self) -> dict:
        """What the trial log records about the device that set a lens."""
        return {"device": self.name, "confirmation": self.confirmation, "change_seconds": self.change_seconds}

    def set_lenses(self, state: LensState) -> LensState:
        raise NotImplementedError

    def read_back(self) -> LensState | None:
        return None

    def close(self) -> None:
        """Release the device (a port); idempotent."""

    def __enter__(self) -> LensDevice:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
