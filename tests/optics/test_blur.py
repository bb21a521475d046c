"""Blur = length of the residual power vector (Fauvel & Chalk (contextual BO), Eq. 12 for aligned axes)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics.blur import blur_diopters, residual_power_vector
from visiontune.optics.prescription import Prescription

from .test_prescription import power_matrix

powers = st.floats(-8, 8, allow_nan=False)
axes = st.floats(0, 180, allow_nan=False)


def eq12(d_sphere, d_cyl):
    """Fauvel & Chalk (contextual BO), Eq. 12, written out."""
    return math.sqrt(0.5 * (d_sphere**2 + (d_sphere + d_cyl) ** 2))


def blur_from_principal_meridians(lens: Prescription, true_rx: Prescription) -> float:
    """Independent oblique-axis oracle: the residual power matrix ΔF = F(lens) - F(true_rx)
    (Long 1976) is symmetric; its eigenvalues are the residual's principal-meridian powers
    λ1, λ2, i.e. a residual sphere λ1 with cylinder λ2 - λ1, whose blur by Eq. 12 is
    √(½(λ1² + λ2²))."""
    lam = np.linalg.eigvalsh(power_matrix(lens) - power_matrix(true_rx))
    return eq12(lam[0], lam[1] - lam[0])


def test_corrected_patient_has_no_blur():
    rx = Prescription(-2.25, -1.0, 35)
    assert blur_diopters(rx, rx) == 0.0
    assert blur_diopters(rx.transposed(), rx) == pytest.approx(0.0, abs=1e-12)


def test_known_values():
    plano = Prescription(0.0)
    assert blur_diopters(plano, Prescription(-1.0)) == pytest.approx(1.0)  # 1 D myope, no lens
    assert blur_diopters(plano, Prescription(0.0, -2.0, 90)) == pytest.approx(math.sqrt(2.0))  # Eq. 12: √(½·4)
    # crossed cylinders: -1 x 180 worn by a -1 x 90 patient: ΔJ0 = 1, ΔM = 0.
    assert blur_diopters(Prescription(0, -1, 180), Prescription(0, -1, 90)) == pytest.approx(1.0)


@settings(max_examples=100, deadline=None)
@given(powers, powers, powers, powers, axes)
def test_aligned_axes_equal_eq12(s, c, s_true, c_true, axis):
    lens, true_rx = Prescription(s, c, axis), Prescription(s_true, c_true, axis)
    assert blur_diopters(lens, true_rx) == pytest.approx(eq12(s - s_true, c - c_true), rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(powers, powers, axes, powers, powers, axes)
def test_oblique_axes_equal_principal_meridian_oracle(s, c, a, s_true, c_true, a_true):
    lens, true_rx = Prescription(s, c, a), Prescription(s_true, c_true, a_true)
    expected = blur_from_principal_meridians(lens, true_rx)
    assert blur_diopters(lens, true_rx) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert blur_diopters(lens.transposed(), true_rx.transposed()) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_residual_sign_convention():
    # Lens -1.00 for a -3.00 myope: residual M = lens - true = +2 (under-corrected by 2 D).
    r = residual_power_vector(Prescription(-1.0), Prescription(-3.0))
    assert r.shape == (3,)
    assert r == pytest.approx([2.0, 0.0, 0.0])


def test_vectorised_over_sphere_cylinder_arrays():
    rng = np.random.default_rng(0)
    sc = rng.uniform(-4, 4, size=(40, 2))
    true_rx = Prescription(-1.5, -0.75, 30)
    got = blur_diopters(sc, true_rx)  # lens axis defaults to the true axis
    assert got.shape == (40,)
    expected = [eq12(s + 1.5, c + 0.75) for s, c in sc]
    assert got == pytest.approx(expected, rel=1e-12)
    # a single (2,) lens gives a float; a list of Prescriptions gives the same values
    assert isinstance(blur_diopters(sc[0], true_rx), float)
    lenses = [Prescription(s, c, 30) for s, c in sc]
    assert blur_diopters(lenses, true_rx) == pytest.approx(got, rel=1e-12)
    # both as arrays at a common axis: Eq. 12 with no axis needed
    assert blur_diopters(sc, sc[::-1]) == pytest.approx([eq12(*(a - b)) for a, b in zip(sc, sc[::-1])])
    # an explicit different lens axis makes it oblique
    oblique = blur_diopters(sc, true_rx, axis_deg=120)
    assert oblique == pytest.approx([blur_from_principal_meridians(Prescription(s, c, 120), true_rx) for s, c in sc])


@pytest.mark.parametrize(
    "lens, true_rx, name",
    [
        (np.array([[np.nan, 0.0]]), Prescription(0.0), "lens"),
        (np.zeros((3, 3)), Prescription(0.0), "lens"),
        (Prescription(0.0), np.array([0.0, np.inf]), "true_rx"),
        (np.zeros((3, 2)), np.zeros((2, 2)), "lens"),
        ([Prescription(0.0), (1.0, 2.0)], Prescription(0.0), "lens"),
    ],
)
def test_bad_input_raises_naming_the_argument(lens, true_rx, name):
    with pytest.raises(InvalidInputError, match=name):
        blur_diopters(lens, true_rx)


def test_bad_axis():
    with pytest.raises(InvalidInputError, match="axis_deg"):
        blur_diopters(np.zeros(2), Prescription(0.0), axis_deg=200)
