"""The renderer interface shared by the Qt patient window and the PsychoPy child window."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from visiontune.errors import VisionTuneError


class RendererError(VisionTuneError):
    """A stimulus window failed: its process died, stopped answering, or reported an error."""


@runtime_checkable
class Renderer(Protocol):
    """Shows one optotype at a time, sized by a :class:`~visiontune.display.Calibration`."""

    def show(self, letter: str, logmar: float) -> None:
        """Show glyph ``letter`` of the renderer's letter set, ``logmar`` tall (5 x MAR).
        Raises CalibrationError if the size is outside the displayable range."""

    def blank(self) -> None:
        """Show the empty background."""

    def close(self) -> None:
        """Close the window and release its resources."""
