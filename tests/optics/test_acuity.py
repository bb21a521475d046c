"""Blendowske acuity model (DESIGN.md correction of seed 002 §5.1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity import AcuityModel, BlendowskeAcuity


def test_design_numbers():
    model = BlendowskeAcuity()
    assert model(0.0) == 0.0
    assert model(1.0) == pytest.approx(0.30, abs=0.005)  # 20/40
    assert model(4.0) == pytest.approx(1.23, abs=0.005)
    assert model(1.0) == pytest.approx(np.log10(2.0), rel=1e-12)


def test_mar_grows_as_one_plus_blur_squared():
    # Blendowske: MAR(β) / MAR* = 1 + β² -- checked in MAR space, with a non-zero VA*.
    model = BlendowskeAcuity(best_corrected_logmar=0.2)
    beta = np.linspace(0, 5, 11)
    ratio = 10 ** model(beta) / 10**0.2
    assert ratio == pytest.approx(1 + beta**2, rel=1e-12)
    assert model(beta).shape == (11,)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 10), st.floats(-0.3, 1.0))
def test_inverse(beta, va_star):
    model = BlendowskeAcuity(va_star)
    assert model.blur_for_logmar(model(beta)) == pytest.approx(beta, rel=1e-7, abs=1e-6)


def test_monotone_and_protocol():
    model = BlendowskeAcuity()
    assert isinstance(model, AcuityModel)
    assert np.all(np.diff(model(np.linspace(0, 8, 100))) > 0)


@pytest.mark.parametrize("blur", [-0.1, np.nan, [0.0, np.inf]])
def test_bad_blur(blur):
    with pytest.raises(InvalidInputError, match="blur_d"):
        BlendowskeAcuity()(blur)


@pytest.mark.parametrize("va", [np.nan, 3.0, -1.0, True, [0.0, 0.1]])
def test_bad_best_corrected(va):
    with pytest.raises(InvalidInputError, match="best_corrected_logmar"):
        BlendowskeAcuity(va)


def test_inverse_rejects_acuity_better_than_best_corrected():
    with pytest.raises(InvalidInputError, match="logmar"):
        BlendowskeAcuity(0.2).blur_for_logmar(0.1)
