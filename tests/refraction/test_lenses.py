"""Trial lenses (visiontune.refraction.lenses) against independent oracles.

Oracles: the Thibos power vector written out here (M = S + C/2, J0 = -C/2 cos 2a,
J45 = -C/2 sin 2a), a brute-force enumeration of the trial lenses near a target, and
``Prescription.transposed`` for the two cylinder forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics import PowerVector, Prescription
from visiontune.refraction.lenses import (
    CYLINDER_FORMS,
    LensSteps,
    axis_step_for,
    in_form,
    lens_power_vector,
    trial_lens,
    trial_lens_power_vectors,
)

# Axis steps that divide 180 degrees (the grid counted from the origin is then well defined
# modulo 180); the protocol reader accepts 1-15 degrees.
AXIS_STEPS = (1.0, 2.5, 5.0, 10.0, 15.0)
LENS_STEPS = (0.0, 0.125, 0.25)


def pv_of(sphere: float, cylinder: float, axis_deg: float) -> np.ndarray:
    """Thibos 1997 power vector, written here independently of the package."""
    a = math.radians(axis_deg)
    return np.array([sphere + cylinder / 2.0, -cylinder / 2.0 * math.cos(2 * a), -cylinder / 2.0 * math.sin(2 * a)])


def exact_minus(pv: np.ndarray) -> tuple[float, float, float]:
    """Minus-cylinder (S, C, axis in [0, 180)) of a power vector (Thibos 1997, Eqs. 9-11)."""
    half = math.hypot(pv[1], pv[2])
    c = -2.0 * half
    axis = math.degrees(0.5 * math.atan2(pv[2], pv[1])) % 180.0
    return pv[0] - c / 2.0, c, axis


def axis_gap(a: float, b: float) -> float:
    """Circular distance between two cylinder axes (degrees, period 180)."""
    return abs((a - b + 90.0) % 180.0 - 90.0)


def expected_axis_step(cylinder: float, base: float) -> float:
    c = abs(cylinder)
    if c <= 0.25 + 1e-9:
        return max(15.0, base)
    if c <= 0.50 + 1e-9:
        return max(10.0, base)
    return base


power_vectors = st.tuples(st.floats(-12.0, 8.0), st.floats(-3.0, 3.0), st.floats(-3.0, 3.0))
lens_steps = st.builds(
    LensSteps,
    step_d=st.sampled_from(LENS_STEPS),
    axis_step_deg=st.sampled_from(AXIS_STEPS),
    cylinder_form=st.sampled_from(CYLINDER_FORMS),
    axis_origin_deg=st.one_of(st.integers(0, 179).map(float), st.floats(0.0, 180.0, exclude_max=True)),
)


# ------------------------------------------------------------------ scalar vs vectorised
@settings(max_examples=400, deadline=None)
@given(pvs=st.lists(power_vectors, min_size=1, max_size=8), steps=lens_steps)
def test_vectorised_matches_scalar_trial_lens(pvs, steps):
    arr = np.array(pvs, dtype=float)
    vec = trial_lens_power_vectors(arr, steps)
    assert vec.shape == arr.shape
    scalar = np.array([trial_lens(p, steps).power_vector_array() for p in arr])
    np.testing.assert_allclose(vec, scalar, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "pv, steps",
    [
        ((0.0, 0.25, 0.0), LensSteps(0.125, 1.0, "minus", 65.0)),
        ((-1.0, 0.25, 0.0), LensSteps(0.25, 5.0, "minus", 5.0)),
    ],
)
def test_vectorised_matches_scalar_at_axis_zero(pv, steps):
    pv = np.array(pv)
    np.testing.assert_allclose(
        trial_lens_power_vectors(pv[None, :], steps)[0], trial_lens(pv, steps).power_vector_array(), atol=1e-9
    )


# ------------------------------------------------------------------ grid membership
@settings(max_examples=400, deadline=None)
@given(pv=power_vectors, steps=lens_steps)
def test_rounded_lens_lies_on_the_step_grids(pv, steps):
    pv = np.array(pv, dtype=float)
    lens = trial_lens(pv, steps)
    # the lens is written in the requested form
    if steps.cylinder_form == "minus":
        assert lens.cylinder_d <= 0.0
    else:
        assert lens.cylinder_d >= 0.0
    if steps.step_d == 0.0:
        np.testing.assert_allclose(lens.power_vector_array(), pv, atol=1e-9)
        return
    q = steps.step_d
    for value in (lens.sphere_d, lens.cylinder_d):
        assert abs(value / q - round(value / q)) < 1e-9, (value, q)
    minus = lens.to_minus_cylinder()
    if minus.cylinder_d == 0.0:
        return
    step = expected_axis_step(minus.cylinder_d, steps.axis_step_deg)
    k = (minus.axis_deg - steps.axis_origin_deg) / step
    assert abs(k - round(k)) < 1e-7, (minus.axis_deg, steps.axis_origin_deg, step)


@settings(max_examples=300, deadline=None)
@given(pv=power_vectors, steps=lens_steps)
def test_rounding_error_is_at_most_half_a_step_in_c_m_and_axis(pv, steps):
    """The rounded cylinder is within q/2 of the exact one, the sphere within q/2 of
    ``M - C_rounded/2`` (the sphere that keeps M), and the axis within half its step."""
    pv = np.array(pv, dtype=float)
    lens = trial_lens(pv, steps).to_minus_cylinder()
    if steps.step_d == 0.0:
        return
    q = steps.step_d
    _, c, axis = exact_minus(pv)
    tol = 1e-9
    assert abs(lens.cylinder_d - c) <= q / 2 + tol
    assert abs(lens.spherical_equivalent_d - pv[0]) <= q / 2 + tol
    assert abs(lens.sphere_d - (pv[0] - lens.cylinder_d / 2.0)) <= q / 2 + tol
    if lens.cylinder_d != 0.0:
        assert axis_gap(lens.axis_deg, axis) <= expected_axis_step(lens.cylinder_d, steps.axis_step_deg) / 2 + 1e-7


@settings(max_examples=300, deadline=None)
@given(pv=power_vectors, steps=lens_steps)
def test_trial_lens_is_idempotent(pv, steps):
    lens = trial_lens(np.array(pv, dtype=float), steps)
    again = trial_lens(lens.power_vector_array(), steps)
    np.testing.assert_allclose(again.power_vector_array(), lens.power_vector_array(), atol=1e-9)


@pytest.mark.parametrize("step", [7.0, 8.0, 11.0, 14.0])
def test_an_axis_step_that_does_not_divide_180_is_refused(step):
    """On a 7° grid counted from 0, x180 and x0 would be different grid axes: refused."""
    with pytest.raises(InvalidInputError, match="axis_step_deg: expected an axis step .* that divides 180"):
        LensSteps(0.25, step, "minus", 0.0)


def test_small_cylinders_get_coarser_axis_steps():
    # axis_step_for: 15 deg up to 0.25 D, 10 deg up to 0.50 D, the setting above, never finer
    assert axis_step_for(-0.25, 5.0) == 15.0
    assert axis_step_for(0.25, 1.0) == 15.0
    assert axis_step_for(-0.5, 5.0) == 10.0
    assert axis_step_for(0.375, 5.0) == 10.0
    assert axis_step_for(-0.75, 5.0) == 5.0
    assert axis_step_for(-0.5, 12.0) == 12.0
    assert axis_step_for(-0.25, 20.0) == 20.0
    steps = LensSteps(0.25, 5.0)
    # axis 37 deg: 0.25 D -> nearest multiple of 15 (30), 0.50 D -> of 10 (40), 1.00 D -> of 5 (35)
    assert trial_lens(pv_of(0.0, -0.25, 37.0), steps).axis_deg == pytest.approx(30.0)
    assert trial_lens(pv_of(0.0, -0.50, 37.0), steps).axis_deg == pytest.approx(40.0)
    assert trial_lens(pv_of(0.0, -1.00, 37.0), steps).axis_deg == pytest.approx(35.0)
    # counted from the origin: from 37 deg, 44 deg with 0.25 D stays at 37 (|7| < 7.5); with 1.00 D,
    # 44 -> 42 and 45 -> 47 (the multiples of 5 would give 45)
    from_37 = LensSteps(0.25, 5.0, "minus", 37.0)
    assert trial_lens(pv_of(0.0, -0.25, 44.0), from_37).axis_deg == pytest.approx(37.0)
    assert trial_lens(pv_of(0.0, -1.00, 44.0), from_37).axis_deg == pytest.approx(42.0)
    assert trial_lens(pv_of(0.0, -1.00, 45.0), from_37).axis_deg == pytest.approx(47.0)


def test_cylinder_rounding_to_zero_keeps_m_and_axis_180():
    lens = trial_lens(pv_of(-1.3, -0.1, 63.0), LensSteps(0.25, 5.0, "plus"))
    assert lens.cylinder_d == 0.0 and lens.axis_deg == 180.0
    assert lens.sphere_d == pytest.approx(-1.25)  # M = -1.35 -> -1.25 (nearest quarter)


# ------------------------------------------------------------------ forms
@settings(max_examples=300, deadline=None)
@given(
    pv=power_vectors,
    step_d=st.sampled_from(LENS_STEPS),
    axis_step=st.sampled_from(AXIS_STEPS),
    origin=st.integers(0, 179),
)
def test_minus_and_plus_form_are_the_same_lens(pv, step_d, axis_step, origin):
    pv = np.array(pv, dtype=float)
    minus = trial_lens(pv, LensSteps(step_d, axis_step, "minus", float(origin)))
    plus = trial_lens(pv, LensSteps(step_d, axis_step, "plus", float(origin)))
    assert minus.cylinder_d <= 0.0 <= plus.cylinder_d
    np.testing.assert_allclose(plus.power_vector_array(), minus.power_vector_array(), atol=1e-9)
    np.testing.assert_allclose(
        PowerVector(*pv_of(plus.sphere_d, plus.cylinder_d, plus.axis_deg)).as_array(),
        pv_of(minus.sphere_d, minus.cylinder_d, minus.axis_deg),
        atol=1e-9,
    )
    if minus.cylinder_d != 0.0:
        t = minus.transposed()
        assert t.sphere_d == pytest.approx(plus.sphere_d, abs=1e-9)
        assert t.cylinder_d == pytest.approx(plus.cylinder_d, abs=1e-9)
        assert axis_gap(t.axis_deg, plus.axis_deg) < 1e-7
    # in_form and lens_power_vector agree with the same lens
    np.testing.assert_allclose(lens_power_vector(in_form(minus, "plus")), minus.power_vector_array(), atol=1e-9)


# ------------------------------------------------------------------ brute force nearest
def _enumerate_trial_lenses(centre_s: float, centre_c: float, steps: LensSteps, span: float = 1.0):
    """Every trial lens (minus form) with S, C within ``span`` of the centre, every grid axis."""
    q = steps.step_d
    out = []
    for c in np.arange(math.floor((centre_c - span) / q), math.ceil(min(centre_c + span, 0.0) / q) + 1) * q:
        if c > 1e-12:
            continue
        for s in np.arange(math.floor((centre_s - span) / q), math.ceil((centre_s + span) / q) + 1) * q:
            if abs(c) < 1e-12:
                out.append((s, 0.0, 180.0))
                continue
            step = expected_axis_step(c, steps.axis_step_deg)
            for k in range(round(180.0 / step)):
                out.append((s, c, (steps.axis_origin_deg + k * step) % 180.0))
    return np.array(out)


@pytest.mark.parametrize(
    "rx, steps",
    [
        (Prescription(-2.13, -0.81, 23.0), LensSteps(0.25, 5.0)),
        (Prescription(1.06, -0.37, 101.0), LensSteps(0.25, 5.0, "minus", 37.0)),
        (Prescription(-0.40, -0.18, 160.0), LensSteps(0.25, 5.0, "plus")),
        (Prescription(-4.90, -2.40, 88.7), LensSteps(0.125, 1.0, "minus", 12.0)),
        (Prescription(0.31, -1.62, 4.0), LensSteps(0.25, 10.0, "minus", 5.0)),
        (Prescription(-7.77, -0.55, 132.0), LensSteps(0.125, 5.0)),
    ],
)
def test_rounded_lens_is_the_nearest_trial_lens_within_half_a_step(rx, steps):
    target = pv_of(rx.sphere_d, rx.cylinder_d, rx.axis_deg)
    lens = trial_lens(target, steps).to_minus_cylinder()
    cands = _enumerate_trial_lenses(rx.sphere_d, rx.cylinder_d, steps)
    cand_pv = np.array([pv_of(*row) for row in cands])
    lens_pv = pv_of(lens.sphere_d, lens.cylinder_d, lens.axis_deg)
    # the rounded lens is one of the enumerated trial lenses (it lies on the grids)
    assert np.min(np.linalg.norm(cand_pv - lens_pv, axis=1)) < 1e-9
    # among the trial lenses within half a step in C, in M (S given C) and in axis, it is the only one
    q = steps.step_d
    _, c, axis = exact_minus(target)
    m = target[0]
    near = []
    for (_, cc, ca), cpv in zip(cands, cand_pv):
        if abs(cc - c) > q / 2 + 1e-12 or abs(cpv[0] - m) > q / 2 + 1e-12:
            continue
        if cc != 0.0 and axis_gap(ca, axis) > expected_axis_step(cc, steps.axis_step_deg) / 2 + 1e-9:
            continue
        near.append(cpv)
    near = np.unique(np.round(np.array(near), 9), axis=0)
    assert len(near) == 1
    np.testing.assert_allclose(near[0], lens_pv, atol=1e-8)
    # sanity bound in power-vector distance: no worse than the brute-force nearest trial lens
    # plus the largest error of component-wise rounding (q/2 on M; q/4 on |J| and a chord of
    # 2 |J| sin(half axis step) on the J plane).
    d = np.linalg.norm(cand_pv - target, axis=1)
    d_lens = np.linalg.norm(lens_pv - target)
    half_j = math.hypot(target[1], target[2]) + q / 4
    bound = math.hypot(
        q / 2, q / 4 + 2 * half_j * math.sin(math.radians(expected_axis_step(lens.cylinder_d, steps.axis_step_deg) / 2))
    )
    assert d.min() <= d_lens + 1e-12
    assert d_lens <= bound + 1e-12
    assert d_lens - d.min() <= q / 2


def test_trial_lens_input_in_plus_form_same_as_minus():
    # the same target written from either form's power vector gives the same trial lens
    rx = Prescription(-1.00, -1.30, 17.0)
    steps = LensSteps(0.25, 5.0)
    a = trial_lens(rx.power_vector_array(), steps)
    b = trial_lens(rx.transposed().power_vector_array(), steps)
    assert (a.sphere_d, a.cylinder_d) == (b.sphere_d, b.cylinder_d)
    assert axis_gap(a.axis_deg, b.axis_deg) < 1e-9
    assert (a.sphere_d, a.cylinder_d, a.axis_deg) == pytest.approx((-1.0, -1.25, 15.0))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "bad",
    [
        [np.nan, 0.0, 0.0],
        [0.0, np.inf, 0.0],
        [1.0, 2.0],
        [[1.0, 2.0, 3.0]],
        np.zeros((3, 1)),
        None,
        [1.0, 2.0, 3.0, 4.0],
    ],
)
def test_trial_lens_refuses_bad_power_vectors(bad):
    with pytest.raises(InvalidInputError, match="power_vector"):
        trial_lens(bad, LensSteps())


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"step_d": -0.25}, "step_d"),
        ({"step_d": 1.5}, "step_d"),
        ({"step_d": float("nan")}, "step_d"),
        ({"step_d": True}, "step_d"),
        ({"step_d": "0.25"}, "step_d"),
        ({"step_d": float("inf")}, "step_d"),
        ({"axis_step_deg": 0.0}, "axis_step_deg"),
        ({"axis_step_deg": 46.0}, "axis_step_deg"),
        ({"axis_step_deg": float("nan")}, "axis_step_deg"),
        ({"axis_step_deg": False}, "axis_step_deg"),
        ({"axis_step_deg": -5.0}, "axis_step_deg"),
        ({"cylinder_form": "Minus"}, "cylinder_form"),
        ({"cylinder_form": ""}, "cylinder_form"),
        ({"cylinder_form": None}, "cylinder_form"),
    ],
)
def test_lens_steps_refuse_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(InvalidInputError, match=field):
        LensSteps(**kwargs)


def test_lens_steps_accept_the_limits():
    assert LensSteps(0, 45).step_d == 0.0 and isinstance(LensSteps(0, 45).step_d, float)
    assert LensSteps(1, 1e-3).step_d == 1.0


def test_in_form_refuses_bad_form():
    with pytest.raises(InvalidInputError, match="cylinder_form"):
        in_form(Prescription(-1.0, -0.5, 90.0), "cross")


@pytest.mark.parametrize("origin", [float("nan"), float("inf"), "10"])
def test_lens_steps_refuse_bad_axis_origin(origin):
    with pytest.raises(InvalidInputError, match="axis_origin_deg"):
        LensSteps(axis_origin_deg=origin)


@pytest.mark.parametrize("bad", [np.array([[np.nan, 0.0, 0.0]]), np.zeros((2, 2)), np.zeros(3)])
def test_vectorised_refuses_bad_power_vectors(bad):
    with pytest.raises(InvalidInputError, match="power_vectors"):
        trial_lens_power_vectors(bad, LensSteps())
