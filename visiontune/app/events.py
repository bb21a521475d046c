"""Events out of the app's Qt-free controllers: what they say, the widgets render.

:class:`EventSource` keeps the listeners of a controller
(:class:`~visiontune.app.session_controller.SessionController`,
:class:`~visiontune.app.visit_flow_controller.VisitFlowController`): each listener is called
with ``(kind, value)`` for every event, in the order they were connected. Plain Python, no Qt.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["EventSource", "Listener"]

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
