"""The lens device of the app's session engine (Qt-free: it runs in the engine process).

The app's device setting (``manual`` or ``cv5000:PORT``, :mod:`visiontune.devices.choice`) is
held by a :class:`DeviceLink` in the engine process (:class:`~visiontune.app.logic.session_host.SessionHost`):
it opens the device, attaches it to each session the host opens
(:meth:`~visiontune.session.engine.RefractionSession.attach_device`, noted in the trial log) and
describes it to the clinician's screen as a :class:`DeviceView` (picklable, sent over the
pipe).

- ``manual``: the trial frame or phoropter. The clinician sets the lens and presses Enter, and
  only then is the letter shown and ``present`` sent: that key press is the confirmation, so the
  app's manual device (:class:`EnterKeyTrialFrame`) records the lenses as confirmed by the
  clinician when ``present`` arrives (the trial log's ``"lenses set by device"`` notes, as
  ``visiontune session run --device manual`` writes them).
- ``cv5000:PORT``: the Topcon CV-5000 driver (:class:`~visiontune.devices.cv5000.CV5000`). The
  letter waits for the device's confirmation (``present`` answered by ``presented``); a fault
  pauses the session (every answer kept) and :meth:`DeviceLink.reconnect` opens the driver again
  (a driver is not used after a fault on its line: a new one re-initialises the device).
  The device sets a question's lenses in order (a comparison's lens 1, then lens 2; a slider's
  path) before it is shown; while it is on screen, ``device_lens`` has the device show one of
  them again (the clinician's "lens 1" / "lens 2", the slider's knob), noted as
  :data:`LENS_SHOWN_NOTE`.

The device *kind* (:mod:`visiontune.refraction.lens_devices`) is what a change of lens costs the
patient: the manual device is a ``trial-frame`` (the default) or a ``manual-phoropter``, the
clinic's setting (:attr:`DeviceLink.lens_kind`); a CV-5000 is a ``motorized-phoropter`` whatever
that setting says. :attr:`DeviceLink.device_kind` is the kind in force; each session and visit eye
is priced at its seconds a change (:func:`~visiontune.refraction.lens_devices.protocol_for_device`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from visiontune.devices.base import LensDevice, LensState
from visiontune.devices.choice import open_device, parse_device_spec
from visiontune.devices.manual import ManualDevice
from visiontune.errors import DeviceError, InvalidInputError
from visiontune.optics.notation import rx_text
from visiontune.refraction.lens_devices import DEVICE_KINDS

__all__ = [
    "CV5000_CAUTION",
    "DEVICE_LABELS",
    "LENS_SHOWN_NOTE",
    "MANUAL_KINDS",
    "DeviceLink",
    "DeviceView",
    "EnterKeyTrialFrame",
    "check_manual_kind",
]

#: The note (events table) of a lens the clinician had the device show again while a question
#: was on screen (a comparison's lens 1 or 2, a slider's knob position): trial, eye, position,
#: lens and the device (the question's own lenses are ``"lenses set by device"``).
LENS_SHOWN_NOTE = "lens shown by device"

#: What the clinician's screen says of the CV-5000 driver whenever it is the device.
CV5000_CAUTION = (
    "The CV-5000 driver follows public reverse-engineered notes, not Topcon's specification: "
    "verify it on this clinic's own device before clinical use."
)
#: The device kinds as the clinician reads them.
DEVICE_LABELS = {"manual": "Manual trial frame or phoropter", "cv5000": "Topcon CV-5000 motorized phoropter"}
#: The kinds the manual device can be (the CV-5000 is the motorized phoropter).
MANUAL_KINDS = ("trial-frame", "manual-phoropter")


def check_manual_kind(name: str, *, what: str = "lens device kind") -> str:
    """``name`` if it is a kind the manual device can be (:data:`MANUAL_KINDS`); InvalidInputError
    naming ``what`` otherwise (a motorized phoropter is the CV-5000 driver, not a manual device)."""
    if name not in MANUAL_KINDS:
        raise InvalidInputError(
            f"{what}: expected {' or '.join(MANUAL_KINDS)} for the manual device (a motorized "
            f"phoropter is the CV-5000 driver), got {name!r}"
        )
    return name


class EnterKeyTrialFrame(ManualDevice):
    """The trial frame in the app: the clinician has set the lens and pressed Enter before
    ``present`` is sent, so the lenses are confirmed (by the clinician) when it arrives. The
    trial frame's range is the clinician's to check: the app shows the lens it asks for."""

    def __init__(self) -> None:
        super().__init__(lambda _text: True)

    def set_lenses(self, state: LensState) -> LensState:
        self.confirmed = state
        return state


@dataclass(frozen=True)
class DeviceView:
    """The lens device as the clinician's screen shows it. ``spec``: the setting; ``kind``:
    ``manual`` or ``cv5000``; ``port`` (None for manual); ``confirmation``: ``"device"`` (the
    device's reply) or ``"clinician"`` (the Enter key); ``connected``: the driver is open;
    ``od`` / ``os``: the lens last confirmed before each eye (text; ``None``: none yet);
    ``confirmed_at``: when (UTC), for ``trial`` (the trial index it was set for);
    ``change_s``: the last change as the driver measured it (s); ``fault``: the last fault's
    message (None: none since the last confirmation). ``device_kind``: the kind in force
    (:data:`~visiontune.refraction.lens_devices.DEVICE_KINDS`: trial frame, manual or motorized
    phoropter), whose ``change_seconds`` and ``source`` price a change of lens."""

    spec: str
    kind: str
    port: str | None
    confirmation: str
    connected: bool = False
    od: str | None = None
    os: str | None = None
    confirmed_at: datetime | None = None
    trial: int | None = None
    change_s: float | None = None
    fault: str | None = None
    device_kind: str = "trial-frame"

    @property
    def kind_label(self) -> str:
        """The kind as people read it: ``trial frame``, ``manual phoropter``, ``motorized phoropter``."""
        return DEVICE_KINDS[self.device_kind].label

    @property
    def change_seconds(self) -> float:
        """Seconds of the patient's time a change of lens is priced at with this kind."""
        return DEVICE_KINDS[self.device_kind].change_seconds

    @property
    def change_source(self) -> str:
        """Where :attr:`change_seconds` comes from (measured, cited or assumed)."""
        return DEVICE_KINDS[self.device_kind].source

    @property
    def waits_for_device(self) -> bool:
        """True when the letter waits for the device's own confirmation (a motorized phoropter)."""
        return self.confirmation == "device"

    @property
    def label(self) -> str:
        return DEVICE_LABELS.get(self.kind, self.kind)

    @property
    def short_label(self) -> str:
        """The device panel's name: ``Topcon CV-5000`` or ``manual trial frame or phoropter``."""
        return {"cv5000": "Topcon CV-5000"}.get(self.kind, self.label)


def _eye_text(rx, fellow_by_hand: bool) -> str:
    if rx is None:
        return "plano (occlude by hand)" if fellow_by_hand else "occluded"
    return rx_text(rx, unicode=True)


class DeviceLink:
    """The engine's lens device: the setting, the open driver, what it last confirmed.

    ``opener(spec, confirm=...)``: how a device is opened (:func:`~visiontune.devices.choice.open_device`);
    ``options``: the serial driver's (``reply_timeout_s``, ``change_seconds``)."""

    def __init__(self, spec: str = "manual", *, opener=open_device, lens_kind: str = "trial-frame", **options) -> None:
        self.opener = opener
        #: The manual device's kind (:data:`MANUAL_KINDS`), kept when the driver setting changes.
        self.lens_kind = check_manual_kind(lens_kind)
        self.options = options
        self.spec, self.kind, self.port = "manual", "manual", None
        self.device: LensDevice | None = None
        self.fault: str | None = None
        self.confirmed_at: datetime | None = None
        self.trial: int | None = None
        self.configure(spec)

    def configure(self, spec: str) -> None:
        """Take the setting ``spec`` (InvalidInputError for one that is not ``manual`` or
        ``cv5000:PORT``; the previous setting is then kept). The driver opens when first used."""
        kind, port = parse_device_spec(spec)
        self.close()
        self.spec, self.kind, self.port = (f"cv5000:{port}" if kind == "cv5000" else "manual"), kind, port
        self.fault = None
        self.confirmed_at = self.trial = None

    def set_lens_kind(self, name: str) -> None:
        """The manual device's kind (``trial-frame`` or ``manual-phoropter``); InvalidInputError
        otherwise (the kind then unchanged)."""
        self.lens_kind = check_manual_kind(name)

    @property
    def device_kind(self) -> str:
        """The kind in force: ``motorized-phoropter`` for a CV-5000, the manual kind otherwise."""
        return "motorized-phoropter" if self.kind == "cv5000" else self.lens_kind

    def ensure_open(self) -> LensDevice:
        """The open device; a CV-5000 driver is opened (and initialised) if it is not, or was
        left after a fault. DeviceError (the fault kept for :meth:`view`) if it cannot be."""
        device = self.device
        if device is not None and getattr(device, "fault", None) is None:
            return device
        self.close()
        if self.kind == "manual":
            self.device = EnterKeyTrialFrame()
            return self.device
        try:
            self.device = self.opener(self.spec, **self.options)
        except DeviceError as exc:
            self.fault = str(exc)
            raise
        self.fault = None
        return self.device

    def reconnect(self) -> LensDevice:
        """Close the driver and open a new one (the device re-initialised)."""
        self.close()
        return self.ensure_open()

    def attach(self, session) -> LensDevice:
        """``session`` set through this device from now on (noted in its trial log)."""
        device = self.ensure_open()
        if session.lens_device is not device:
            session.attach_device(device)
        return device

    def confirmed(self, trial_index: int) -> None:
        """The device confirmed the lenses of trial ``trial_index``."""
        self.confirmed_at = datetime.now(UTC)
        self.trial = int(trial_index)
        self.fault = None

    def failed(self, message: str) -> None:
        self.fault = message

    def view(self) -> DeviceView:
        device = self.device
        connected = device is not None and getattr(device, "fault", None) is None
        state = None if device is None else device.confirmed
        by_hand = device is not None and not device.can_occlude
        times = getattr(device, "change_times", None) or []
        return DeviceView(
            spec=self.spec,
            kind=self.kind,
            port=self.port,
            confirmation="clinician" if self.kind == "manual" else "device",
            connected=connected,
            od=None if state is None else _eye_text(state.od, by_hand),
            os=None if state is None else _eye_text(state.os, by_hand),
            confirmed_at=self.confirmed_at,
            trial=self.trial,
            change_s=times[-1] if times else None,
            fault=self.fault,
            device_kind=self.device_kind,
        )

    def close(self) -> None:
        if self.device is not None:
            try:
                self.device.close()
            finally:
                self.device = None
