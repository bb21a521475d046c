"""Events out of the app's Qt-free controllers: what they say, the widgets render.

:class:`EventSource` keeps the listeners of a controller
(:class:`~visiontune.app.session_controller.SessionController`,
:class:`~visiontune.app.visit_flow_controller.VisitFlowController`): each listener is called
with ``(kind, value)`` for every event, in the order they were connected; :meth:`EventSource.dispatch_key`
acts on a key both controllers have read with their own key table. Plain Python, no Qt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from visiontune.app.keys import Rejected

__all__ = ["EventSource", "Listener"]

log = logging.getLogger("visiontune.app")

#: A listener: ``listener(kind, value)``.
Listener = Callable[[str, object], None]


class EventSource:
    """The listeners of a controller and the events it emits to them."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def connect(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def _emit(self, kind: str, value: object = None) -> None:
        for listener in list(self.listeners):
            listener(kind, value)

    def say(self, message: str, timeout_ms: int = 6000) -> None:
        """A line for the status bar (``"status"``, ``(message, timeout_ms)``)."""
        self._emit("status", (message, timeout_ms))

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
