"""display layer (docs/design.md, "Layers"): calibration, optotype geometry, letter sets, renderers.

Importing this package imports neither Qt nor PsychoPy: the renderers live in
``visiontune.display.qt_renderer`` (PySide6) and ``visiontune.display.psychopy_renderer``
(PsychoPy in a child process); import them where they are used. ``visiontune calibrate``
is :mod:`visiontune.display.cli`.

Contrast (ISO 8596, ISO 10938): both renderers draw the optotype at the screen's black
level (RGB 0) on its white (RGB 255), so the optotype's luminance is the panel's black
level, well under the 15% of the background the standards allow (0.1% at 1000:1). A
measured pair of luminances can be recorded in the :class:`Calibration`, which checks it.
"""

from visiontune.display.calibration import (
    ISO10938_BACKGROUND_CD_M2,
    MAX_OPTOTYPE_FRACTION,
    Calibration,
    from_psychopy_monitor,
    load_calibration,
    save_calibration,
)
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
    "ISO10938_BACKGROUND_CD_M2",
    "MAX_OPTOTYPE_FRACTION",
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
