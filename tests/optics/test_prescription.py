"""Prescription and PowerVector: conventions, round trips, transposition, text."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import PowerVector, Prescription, normalise_axis_deg, power_vector_components

powers = st.floats(-20, 20, allow_nan=False)
axes = st.floats(0, 180, allow_nan=False)
prescriptions = st.builds(Prescription, powers, powers, axes)


def power_matrix(rx: Prescription) -> np.ndarray:
    """Dioptric power matrix (Long 1976; Keating 1981): an oracle independent of Thibos' formulas.

    F = S I + C [[sin²α, -sinα cosα], [-sinα cosα, cos²α]] = [[M + J0, J45], [J45, M - J0]],
    so M = tr F / 2, J0 = (F11 - F22) / 2, J45 = F12 (Thibos 1997, Eq. 19)."""
    a = math.radians(rx.axis_deg)
    s, c = rx.sphere_d, rx.cylinder_d
    return np.array(
        [
            [s + c * math.sin(a) ** 2, -c * math.sin(a) * math.cos(a)],
            [-c * math.sin(a) * math.cos(a), s + c * math.cos(a) ** 2],
        ]
    )


def test_axis_zero_is_stored_as_180():
    assert Prescription(-1.0, -0.5, 0).axis_deg == 180.0
    assert Prescription(-1.0, -0.5, 180).axis_deg == 180.0
    assert Prescription(-1.0, -0.5, 45).axis_deg == 45.0


def test_known_power_vector():
    # S -1.25 / C -0.50 x 180: M = -1.5, J0 = +0.25, J45 = 0.
    pv = Prescription(-1.25, -0.50, 180).power_vector()
    assert pv.m_d == pytest.approx(-1.5)
    assert pv.j0_d == pytest.approx(0.25)
    assert pv.j45_d == pytest.approx(0.0, abs=1e-15)
    # Oblique axis 45: J0 = 0, J45 = -(C/2) = +1 for C = -2.
    pv = Prescription(0.0, -2.0, 45).power_vector()
    assert (pv.m_d, pv.j0_d, pv.j45_d) == pytest.approx((-1.0, 0.0, 1.0), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(prescriptions)
def test_power_vector_matches_power_matrix(rx):
    f = power_matrix(rx)
    pv = rx.power_vector()
    expected = (np.trace(f) / 2, (f[0, 0] - f[1, 1]) / 2, f[0, 1])
    assert pv.as_array() == pytest.approx(expected, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(prescriptions)
def test_power_vector_round_trip_gives_minus_cylinder_form(rx):
    back = rx.power_vector().to_prescription()
    assert back.cylinder_d <= 0
    assert back.is_equivalent(rx, tol_d=1e-9)
    minus = rx.to_minus_cylinder()
    assert back.sphere_d == pytest.approx(minus.sphere_d, abs=1e-9)
    assert back.cylinder_d == pytest.approx(minus.cylinder_d, abs=1e-9)
    if abs(rx.cylinder_d) > 1e-6:  # the axis is undefined without cylinder
        d = abs(back.axis_deg - minus.axis_deg)
        assert min(d, 180 - d) == pytest.approx(0, abs=1e-5)


@settings(max_examples=100, deadline=None)
@given(st.floats(-20, 20), st.floats(-20, 20), st.floats(-20, 20))
def test_prescription_round_trip_from_power_vector(m, j0, j45):
    pv = PowerVector(m, j0, j45)
    assert pv.to_prescription().power_vector().as_array() == pytest.approx(pv.as_array(), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(prescriptions)
def test_transposition_keeps_the_power_vector(rx):
    t = rx.transposed()
    assert t.power_vector().as_array() == pytest.approx(rx.power_vector().as_array(), abs=1e-9)
    assert t.cylinder_d == -rx.cylinder_d
    assert 0 < t.axis_deg <= 180
    assert t.transposed().is_equivalent(rx)
    assert rx.to_minus_cylinder().cylinder_d <= 0 and rx.to_plus_cylinder().cylinder_d >= 0


def test_transposition_known_example():
    t = Prescription(-1.75, -0.50, 10).transposed()
    assert (t.sphere_d, t.cylinder_d, t.axis_deg) == pytest.approx((-2.25, 0.50, 100.0))
    t = Prescription(+1.00, +1.50, 120).transposed()
    assert (t.sphere_d, t.cylinder_d, t.axis_deg) == pytest.approx((2.50, -1.50, 30.0))
    t = Prescription(0.0, -1.0, 90).transposed()
    assert t.axis_deg == 180.0


def test_vectorised_power_vectors_match_scalar():
    rng = np.random.default_rng(3)
    s, c, a = rng.uniform(-4, 4, 50), rng.uniform(-4, 4, 50), rng.uniform(0, 180, 50)
    batch = power_vector_components(s, c, a)
    assert batch.shape == (50, 3)
    for i in range(50):
        assert batch[i] == pytest.approx(Prescription(s[i], c[i], a[i]).power_vector().as_array())


def test_normalise_axis():
    assert normalise_axis_deg(0.0) == 180.0
    assert normalise_axis_deg(270.0) == 90.0
    assert normalise_axis_deg(-30.0) == 150.0
    assert np.array_equal(normalise_axis_deg([0.0, 180.0, 360.0, 45.0]), [180.0, 180.0, 180.0, 45.0])


def test_rounded():
    r = Prescription(-1.13, -0.62, 179.6).rounded()
    assert (r.sphere_d, r.cylinder_d, r.axis_deg) == (-1.25, -0.5, 180.0)
    r = Prescription(1.125, -0.375, 0.4).rounded()  # halves go away from zero; axis 0 -> 180
    assert (r.sphere_d, r.cylinder_d, r.axis_deg) == (1.25, -0.5, 180.0)
    r = Prescription(-2.04, 0.0, 93.0).rounded(step_d=0.125, axis_step_deg=5)
    assert (r.sphere_d, r.cylinder_d, r.axis_deg) == (-2.0, 0.0, 95.0)
    with pytest.raises(InvalidInputError, match="step_d"):
        Prescription(0, 0, 90).rounded(step_d=0)
    with pytest.raises(InvalidInputError, match="axis_step_deg"):
        Prescription(0, 0, 90).rounded(axis_step_deg=-1)


def test_format():
    """The one notation (visiontune.optics.notation; more in tests/optics/test_notation.py)."""
    assert Prescription(-1.25, -0.5, 0).format() == "S -1.25 / C -0.50 x 180"
    assert Prescription(0.75, 0.0, 90).format() == "S +0.75 DS"
    assert Prescription(-0.0, -1.0, 12).format() == "S plano / C -1.00 x 012"
    # a simulated patient's axis and powers are off the trial-lens steps: marked, never a lens
    assert Prescription(0.17, -0.58, 171.456).format() == "S +0.17 / C -0.58 x 171 (not a trial lens)"
    assert Prescription(-1.0, -0.5, 0.04).format() == "S -1.00 / C -0.50 x 180 (not a trial lens)"
    assert Prescription(-1.25, -0.5, 0).format(unicode_minus=True) == "S \u22121.25 / C \u22120.50 \u00d7 180"
    assert str(Prescription(2, -1, 45)) == "S +2.00 / C -1.00 x 045"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("S -1.25 / C -0.50 x 180", (-1.25, -0.5, 180.0)),
        ("-1.25 -0.50 x 180", (-1.25, -0.5, 180.0)),
        ("-1.25 -0.50 x 0", (-1.25, -0.5, 180.0)),
        ("+2.00 / -0.75 @ 90", (2.0, -0.75, 90.0)),
        ("\u22121.00 \u22120.25 \u00d7 45", (-1.0, -0.25, 45.0)),
        ("sph +0.50 cyl +1.00 axis 12", (0.5, 1.0, 12.0)),
        ("+2.00 DS", (2.0, 0.0, 180.0)),
        ("plano", (0.0, 0.0, 180.0)),
        ("-3", (-3.0, 0.0, 180.0)),
        ("-3 0", (-3.0, 0.0, 180.0)),
    ],
)
def test_parse(text, expected):
    rx = Prescription.parse(text)
    assert (rx.sphere_d, rx.cylinder_d, rx.axis_deg) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(st.integers(-80, 80), st.integers(-32, 32), st.integers(1, 180), st.booleans())
def test_format_parse_round_trip(s_q, c_q, axis, unicode_minus):
    rx = Prescription(s_q * 0.25, c_q * 0.25, axis if c_q else 180)  # a lens without cylinder has no axis
    assert Prescription.parse(rx.format(unicode_minus=unicode_minus)) == rx


@pytest.mark.parametrize("text", ["", "abc", "-1.25 -0.50", "-1.25 -0.5 x", "-1.25 -0.5 x 200", "1 2 3 4"])
def test_parse_rejects_bad_text(text):
    with pytest.raises(InvalidInputError, match="text|axis_deg"):
        Prescription.parse(text)


def test_parse_rejects_non_string():
    with pytest.raises(InvalidInputError, match="text"):
        Prescription.parse(1.25)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(sphere_d=float("nan"), cylinder_d=0, axis_deg=90), "sphere_d"),
        (dict(sphere_d=0, cylinder_d=float("inf"), axis_deg=90), "cylinder_d"),
        (dict(sphere_d=0, cylinder_d=-1, axis_deg=float("nan")), "axis_deg"),
        (dict(sphere_d=0, cylinder_d=-1, axis_deg=181), "axis_deg"),
        (dict(sphere_d=0, cylinder_d=-1, axis_deg=-1), "axis_deg"),
        (dict(sphere_d="x", cylinder_d=-1, axis_deg=90), "sphere_d"),
        (dict(sphere_d=[1, 2], cylinder_d=-1, axis_deg=90), "sphere_d"),
        (dict(sphere_d=True, cylinder_d=-1, axis_deg=90), "sphere_d"),
    ],
)
def test_bad_prescription_raises_naming_the_argument(kwargs, name):
    with pytest.raises(InvalidInputError, match=name):
        Prescription(**kwargs)


def test_frozen_and_power_vector_validation():
    rx = Prescription(-1, -1, 90)
    with pytest.raises(AttributeError):
        rx.sphere_d = 0.0
    with pytest.raises(InvalidInputError, match="j45_d"):
        PowerVector(0.0, 0.0, float("nan"))
    with pytest.raises(InvalidInputError, match="other"):
        rx.is_equivalent("S -1")
