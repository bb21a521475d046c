"""display layer (see DESIGN.md): calibration, optotype geometry, letter sets, renderers.

Importing this package imports neither Qt nor PsychoPy: the renderers live in
``visiontune.display.qt_renderer`` (PySide6) and ``visiontune.display.psychopy_renderer``
(PsychoPy in a child process); import them where they are used.
"""

from visiontune.display.calibration import Calibration, from_psychopy_monitor, load_calibration, save_calibration
from visiontune.display.geometry import (
    DEFAULT_MIN_INK_PX,
    LogmarRange,
    check_displayable,
    displayable_logmar_range,
    letter_height_mm,
    letter_height_px,
    logmar_for_height_mm,
)
from visiontune.display.optotypes import LETTER_SETS, Glyph, LetterSet, load_letter_set
from visiontune.display.renderer import Renderer, RendererError

__all__ = [
    "DEFAULT_MIN_INK_PX",
    "LETTER_SETS",
    "Calibration",
    "Glyph",
    "LetterSet",
    "LogmarRange",
    "Renderer",
    "RendererError",
    "check_displayable",
    "displayable_logmar_range",
    "from_psychopy_monitor",
    "letter_height_mm",
    "letter_height_px",
    "load_calibration",
    "load_letter_set",
    "logmar_for_height_mm",
    "save_calibration",
]
