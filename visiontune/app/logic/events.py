"""Events out of the app's Qt-free controllers: what they say, the widgets render.

:class:`EventSource` keeps the listeners of a controller
(:class:`~visiontune.app.logic.session_controller.SessionController`,
:class:`~visiontune.app.logic.visit_flow_controller.VisitFlowController`): each listener is called
with ``(kind, value)`` for every event, in the order they were connected; :meth:`EventSource.dispatch_key`
acts on a key both controllers have read with their own key table. Plain Python, no Qt.

The kind of an event is a :class:`Shown` member (a tag: what the window is to show or do);
the value it comes with is typed by the kind (listed with each member). A listener dispatches
on the member (a dict from member to handler), never on a name; a kind that is not a
:class:`Shown` member is refused when it is emitted (:class:`~visiontune.errors.InvalidInputError`
naming its type), before any listener hears it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum

from visiontune.app.logic.keys import Rejected
from visiontune.errors import InvalidInputError

__all__ = ["EventSource", "Listener", "Shown"]

log = logging.getLogger("visiontune.app")


class Shown(Enum):
    """What a controller tells the window to show or do (the kind of an event; the value it
    carries in brackets). Session page (:class:`~visiontune.app.logic.session_controller.SessionController`)
    and visit pages (:class:`~visiontune.app.logic.visit_flow_controller.VisitFlowController`)."""

    STATUS = "status"  #: ``(text, timeout_ms)``: the status line
    PROMPT = "prompt"  #: :class:`~visiontune.app.logic.session_controller.Prompt`: the session page's instruction
    AUTOPILOT = "autopilot"  #: float seconds until the next autopilot step, or None: stop it
    ANSWERS = "answers"  #: ``(count, max_trials)``: the answer count
    SNAPSHOT = "snapshot"  #: :class:`~visiontune.app.logic.worker_values.Snapshot`: the session as it stands
    PRESENT = "present"  #: the pending query: its letter (or line) on the patient screen
    BLANK = "blank"  #: None: blank the patient screen
    SIMULATED_REPLY = "simulated_reply"  #: str: what the simulated patient says
    SLIDER = "slider"  #: :class:`~visiontune.app.logic.session_controller.SliderView`
    LINE = "line"  #: :class:`~visiontune.app.logic.session_controller.LineView`
    OPENED = "opened"  #: :class:`~visiontune.app.logic.worker_values.Snapshot`: a session was opened
    BUSY_PAGE = "busy_page"  #: str: show the waiting page with this text
    BUSY_TEXT = "busy_text"  #: str: the waiting page's text (the page stays)
    FINISHED = "finished"  #: :class:`~visiontune.app.logic.session_controller.FinishedPage`
    VISIT_EYE_FINISHED = (
        "visit_eye_finished"  #: :class:`~visiontune.app.logic.worker_values.FinishedView` of a visit's eye
    )
    EXIT = "exit"  #: None: close the app (``--exit-after``)
    DEVICE = "device"  #: :class:`~visiontune.app.logic.worker_device.DeviceView`: the lens device panel
    DEVICE_FAULT = "device_fault"  #: str or None: the device fault that paused the session
    DEVICE_LENSES = "device_lenses"  #: int: how many lens buttons to show (0: none)
    PAGE = "page"  #: :class:`~visiontune.app.logic.visit_flow.VisitView`: show the page of its step


#: A listener: ``listener(kind, value)``.
Listener = Callable[[Shown, object], None]


class EventSource:
    """The listeners of a controller and the events it emits to them."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def connect(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def _emit(self, kind: Shown, value: object = None) -> None:
        if not isinstance(kind, Shown):  # a bare name is refused: the listeners dispatch on the member
            raise InvalidInputError(
                f"controller event: expected a Shown member, got {type(kind).__module__}.{type(kind).__qualname__} "
                f"{kind!r}"
            )
        for listener in list(self.listeners):
            listener(kind, value)

    def say(self, message: str, timeout_ms: int = 6000) -> None:
        """A line for the status bar (:attr:`Shown.STATUS`, ``(message, timeout_ms)``)."""
        self._emit(Shown.STATUS, (message, timeout_ms))

    def dispatch_key(self, result, name: str, text: str, where: str) -> None:
        """Act on a key the controller's key table read as ``result``: a :class:`Rejected` is
        logged (``where``: the phase or step) and said on the status bar, a command is carried
        out by the controller's ``perform``; both name the key as typed (the character, quoted,
        when printable, else the key's ``name``)."""
        typed = repr(text) if text and text.isprintable() and not text.isspace() else name
        if isinstance(result, Rejected):
            log.info("key %s ignored (%s): %s", typed, where, result.message)
            self.say(result.message)
            return
        self.perform(result, f"key {typed}")
