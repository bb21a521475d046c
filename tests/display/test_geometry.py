"""Letter size on screen (docs/design.md, *Letter size on screen*) and the displayable range."""

import math

import numpy as np
import pytest

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import (
    check_displayable,
    displayable_logmar_range,
    letter_height_mm,
    letter_height_px,
    logmar_for_height_mm,
)
from visiontune.errors import CalibrationError, InvalidInputError

CAL_4M = Calibration(480.0, 270.0, 1920, 1080, 4000.0)


def subtended_arcmin(h_mm, d_mm):
    """Oracle: the angle between the rays to the top and bottom of a centred letter."""
    top = np.array([d_mm, h_mm / 2])
    bottom = np.array([d_mm, -h_mm / 2])
    cos = top @ bottom / (np.linalg.norm(top) * np.linalg.norm(bottom))
    return math.degrees(math.acos(cos)) * 60


def test_logmar_zero_at_4_m_is_5_82_mm():
    assert letter_height_mm(0.0, 4000.0) == pytest.approx(5.818, abs=5e-4)  # docs/design.md


@pytest.mark.parametrize("s", [-0.3, 0.0, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("d", [500.0, 4000.0, 6000.0])
def test_height_subtends_five_mar(s, d):
    h = letter_height_mm(s, d)
    assert subtended_arcmin(h, d) == pytest.approx(5 * 10**s, rel=1e-9)
    assert logmar_for_height_mm(h, d) == pytest.approx(s, abs=1e-12)


def test_vectorised_and_pixels():
    s = np.linspace(-0.3, 1.0, 14)
    h = letter_height_mm(s, 4000.0)
    assert h.shape == (14,)
    assert np.all(np.diff(h) > 0)
    assert letter_height_px(s, CAL_4M) == pytest.approx(h / 0.25)


def test_bad_inputs_name_the_argument():
    with pytest.raises(InvalidInputError, match="logmar"):
        letter_height_mm(float("nan"), 4000.0)
    with pytest.raises(InvalidInputError, match="distance_mm"):
        letter_height_mm(0.0, 0.0)
    with pytest.raises(CalibrationError, match="logmar"):
        letter_height_mm(4.0, 4000.0)  # 50000 arcmin > 180 degrees


def test_displayable_range_ends():
    r = displayable_logmar_range(CAL_4M, min_ink_px=5.0)
    assert letter_height_px(r.min_logmar, CAL_4M) == pytest.approx(5.0)
    assert letter_height_px(r.max_logmar, CAL_4M) == pytest.approx(1080.0)
    # at 4 m on a 0.25 mm panel: 5 px = 1.25 mm -> about -0.67 logMAR
    assert r.min_logmar == pytest.approx(math.log10(2 * math.atan(1.25 / 8000) / (5 * math.pi / 10800)))
    wide = displayable_logmar_range(Calibration(270.0, 480.0, 1080, 1920, 4000.0))
    assert letter_height_px(wide.max_logmar, Calibration(270.0, 480.0, 1080, 1920, 4000.0)) == pytest.approx(1080.0)


def test_out_of_range_is_an_error_not_a_clip():
    r = displayable_logmar_range(CAL_4M, min_ink_px=12.0)
    assert check_displayable(0.0, CAL_4M, min_ink_px=12.0) == 0.0
    with pytest.raises(CalibrationError, match="outside the displayable range"):
        check_displayable(r.min_logmar - 0.01, CAL_4M, min_ink_px=12.0)
    with pytest.raises(CalibrationError, match="outside the displayable range"):
        check_displayable(r.max_logmar + 0.01, CAL_4M)
    with pytest.raises(CalibrationError, match="min_ink_px"):
        displayable_logmar_range(Calibration(48.0, 27.0, 192, 108, 4000.0), min_ink_px=200)
    with pytest.raises(InvalidInputError, match="min_ink_px"):
        displayable_logmar_range(CAL_4M, min_ink_px=0)
