"""Acuity models: Blendowske (the correction of Fauvel & Chalk (contextual BO) §5.1 in docs/design.md) and the
misspecified ones."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity import (
    ACUITY_MODELS,
    AcuityModel,
    BlendowskeAcuity,
    LinearLogmarAcuity,
    PupilBlurAcuity,
    acuity_model_by_name,
)


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


# --- misspecified acuity models: other published shapes -----------------------------------------


def test_pupil_model_against_hand_computation():
    # θ = 3.4377 · p · β arcmin (1 mrad = 3.4377 arcmin); MAR = √(MAR*² + (0.16 θ)²); VA = log10 MAR.
    model = PupilBlurAcuity()  # VA* = 0 (MAR* = 1 arcmin), 4 mm pupil, k = 0.16
    # β = 1: θ = 13.751, kθ = 2.2002, MAR = √(1 + 4.8408) = 2.4168 -> 0.3832
    assert model(1.0) == pytest.approx(0.3832, abs=5e-4)
    # β = 4: θ = 55.004, kθ = 8.8006, MAR = √(1 + 77.451) = 8.8573 -> 0.9473
    assert model(4.0) == pytest.approx(0.9473, abs=5e-4)
    assert model(0.0) == 0.0
    assert model.blur_disc_arcmin(1.0) == pytest.approx(13.751, abs=1e-3)
    # VA* = 0.2 (MAR* = 1.5849), 3 mm pupil, β = 2: θ = 20.626, kθ = 3.3002,
    # MAR = √(2.5119 + 10.891) = 3.6610 -> 0.5636
    other = PupilBlurAcuity(best_corrected_logmar=0.2, pupil_mm=3.0)
    assert other(2.0) == pytest.approx(0.5636, abs=5e-4)
    assert other(0.0) == pytest.approx(0.2)
    # a larger pupil blurs more (Smith 1991: MAR linear in pupil × error at large blur)
    big, small = PupilBlurAcuity(pupil_mm=6.0), PupilBlurAcuity(pupil_mm=2.0)
    assert big(3.0) > model(3.0) > small(3.0)
    assert 10 ** big(8.0) / 10 ** small(8.0) == pytest.approx(3.0, rel=0.01)


def test_linear_logmar_model_against_hand_computation():
    model = LinearLogmarAcuity(best_corrected_logmar=0.1)
    for beta, want in [(0.0, 0.1), (0.25, 0.175), (1.0, 0.4), (2.5, 0.85)]:
        assert model(beta) == pytest.approx(want, abs=1e-12)
    assert LinearLogmarAcuity(logmar_per_diopter=0.4)(2.0) == pytest.approx(0.8)


def test_models_differ_in_shape_from_blendowske():
    """Compared at a few blurs (docs/design.md: Blendowske is 0.30 at 1 D and 1.23 at 4 D)."""
    blur = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    blendowske = BlendowskeAcuity()(blur)  # 0.026 0.097 0.301 0.699 1.230
    pupil = PupilBlurAcuity()(blur)  # 0.057 0.172 0.383 0.654 0.947
    linear = LinearLogmarAcuity()(blur)  # 0.075 0.150 0.300 0.600 1.200
    assert blendowske == pytest.approx([0.0263, 0.0969, 0.3010, 0.6990, 1.2304], abs=5e-4)
    assert pupil == pytest.approx([0.0574, 0.1722, 0.3832, 0.6544, 0.9473], abs=5e-4)
    # near the correction both alternatives fall faster (the last quarter diopter costs more) ...
    assert np.all(pupil[:3] > blendowske[:3]) and np.all(linear[:2] > blendowske[:2])
    # ... and at large blur slower
    assert pupil[-1] < blendowske[-1] - 0.2 and linear[3] < blendowske[3]
    for model in (PupilBlurAcuity(), LinearLogmarAcuity()):
        assert isinstance(model, AcuityModel)
        assert np.all(np.diff(model(np.linspace(0, 8, 50))) > 0)
        assert model(blur).shape == (5,)


def test_acuity_model_registry():
    assert set(ACUITY_MODELS) == {"blendowske", "pupil-geometric", "linear-logmar"}
    assert acuity_model_by_name("blendowske", 0.1) == BlendowskeAcuity(0.1)
    assert acuity_model_by_name("pupil-geometric", 0.1, pupil_mm=5.0) == PupilBlurAcuity(0.1, 5.0)
    assert acuity_model_by_name("linear-logmar") == LinearLogmarAcuity()
    with pytest.raises(InvalidInputError, match="acuity_model"):
        acuity_model_by_name("snellen")
    with pytest.raises(InvalidInputError, match="pupil_mm"):
        acuity_model_by_name("blendowske", pupil_mm=4.0)


@pytest.mark.parametrize(
    "factory, name",
    [
        (lambda: PupilBlurAcuity(pupil_mm=0.0), "pupil_mm"),
        (lambda: PupilBlurAcuity(pupil_mm=float("nan")), "pupil_mm"),
        (lambda: PupilBlurAcuity(blur_fraction=-1.0), "blur_fraction"),
        (lambda: PupilBlurAcuity(best_corrected_logmar=3.0), "best_corrected_logmar"),
        (lambda: LinearLogmarAcuity(logmar_per_diopter=0.0), "logmar_per_diopter"),
        (lambda: LinearLogmarAcuity(best_corrected_logmar=True), "best_corrected_logmar"),
        (lambda: PupilBlurAcuity()(-0.5), "blur_d"),
        (lambda: LinearLogmarAcuity()(np.nan), "blur_d"),
    ],
)
def test_bad_parameters_of_the_other_models(factory, name):
    with pytest.raises(InvalidInputError, match=name):
        factory()
