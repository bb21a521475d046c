"""The shared input checks of visiontune._validate: what they accept, and messages that name
the argument, say what was expected and show what was given."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune._validate import check_box, check_int, check_number, check_rng, scalar
from visiontune.errors import ConfigurationError, InvalidInputError, SessionError, StoreError


@pytest.mark.parametrize("value", [0, 7, np.int64(7), np.uint8(3)])
def test_check_int_accepts_python_and_numpy_integers(value):
    out = check_int("n", value, lo=0)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize("value", [True, False, 1.0, 2.5, "3", None, np.array([1]), float("nan")])
def test_check_int_refuses_what_is_not_an_integer(value):
    with pytest.raises(InvalidInputError, match=r"^n: expected an integer, got "):
        check_int("n", value)


def test_check_int_bounds_are_inclusive_and_named():
    assert check_int("k", 1, lo=1, hi=3) == 1 and check_int("k", 3, lo=1, hi=3) == 3
    with pytest.raises(InvalidInputError, match=r"^k: expected an integer in \[1, 3\], got 4$"):
        check_int("k", 4, lo=1, hi=3)
    with pytest.raises(InvalidInputError, match=r"^k: expected an integer >= 2, got 1$"):
        check_int("k", 1, lo=2)
    with pytest.raises(InvalidInputError, match=r"^k: expected an integer <= 0, got 1$"):
        check_int("k", 1, hi=0)


def test_check_int_whole_float_only_when_asked():
    assert check_int("n", 3.0, lo=1, whole_float=True) == 3
    for bad in (3.5, float("inf"), True):
        with pytest.raises(InvalidInputError, match="^n: expected an integer >= 1"):
            check_int("n", bad, lo=1, whole_float=True)


@pytest.mark.parametrize("value", [0, 0.5, np.float64(0.25), np.int32(1)])
def test_check_number_accepts_finite_reals(value):
    out = check_number("x", value, 0, 1)
    assert out == float(value) and type(out) is float


@pytest.mark.parametrize("value", [True, "0.5", None, float("nan"), float("inf"), np.array([0.5]), 1.5, -0.1])
def test_check_number_refuses_and_names(value):
    with pytest.raises(InvalidInputError, match=r"^x: expected a finite number in \[0, 1\], got "):
        check_number("x", value, 0, 1)


def test_check_number_without_bounds():
    assert check_number("x", -1e300) == -1e300
    with pytest.raises(InvalidInputError, match=r"^x: expected a finite number, got nan$"):
        check_number("x", float("nan"))


@pytest.mark.parametrize("value", [0.5, 1, np.float32(0.5), np.array(0.5), "0.5"])
def test_scalar_accepts_what_numpy_reads_as_one_number(value):
    out = scalar("lapse", value, 0, 1)
    assert out == float(value) and type(out) is float


def test_scalar_refuses_and_names():
    for bad in (True, [0.5], np.array([0.5, 0.6]), "x"):
        with pytest.raises(InvalidInputError, match="^lapse: expected"):
            scalar("lapse", bad)
    with pytest.raises(InvalidInputError, match="^lapse: every value must be finite"):
        scalar("lapse", float("nan"))
    with pytest.raises(InvalidInputError, match=r"^lapse: expected a number in \[0, 0.5\], got 0.75$"):
        scalar("lapse", 0.75, 0, 0.5)
    with pytest.raises(InvalidInputError, match=r"^drift: expected a number >= -1, got -2.0$"):
        scalar("drift", -2, lo=-1)


def test_check_rng():
    rng = np.random.default_rng(0)
    assert check_rng(rng) is rng
    for bad in (0, None, np.random.RandomState(0)):
        with pytest.raises(InvalidInputError, match=r"^rng: expected a numpy.random.Generator .*, got "):
            check_rng(bad)
    with pytest.raises(InvalidInputError, match="^stream: "):
        check_rng(1, "stream")


def test_check_rng_allow_seed():
    rng = np.random.default_rng(0)
    assert check_rng(rng, allow_seed=True) is rng
    for seed in (7, np.int64(7), np.random.SeedSequence(7)):
        out = check_rng(seed, allow_seed=True)
        assert isinstance(out, np.random.Generator) and out.integers(10**9) == np.random.default_rng(7).integers(10**9)
    for bad, got in ((-1, "-1"), (True, "bool"), (1.0, "float"), (None, "NoneType")):
        message = rf"^seed: expected a numpy.random.Generator or a seed .*, got {got}$"
        with pytest.raises(InvalidInputError, match=message):
            check_rng(bad, "seed", allow_seed=True)


@pytest.mark.parametrize(
    "check, args",
    [(check_int, ("n", 2.5, 1)), (check_number, ("x", float("nan"), 0, 1)), (check_rng, (3, "stream"))],
)
@pytest.mark.parametrize("error", [ConfigurationError, SessionError, StoreError])
def test_error_raises_the_given_class_with_the_same_message(check, args, error):
    with pytest.raises(InvalidInputError) as default:
        check(*args)
    with pytest.raises(error) as given:
        check(*args, error=error)
    assert not isinstance(given.value, InvalidInputError) and str(given.value) == str(default.value)


def test_messages_show_a_long_value_cut_short():
    with pytest.raises(InvalidInputError, match=r"^x: expected a finite number, got 10{36}\.\.\.$"):
        check_number("x", 10**400)
    with pytest.raises(InvalidInputError, match=r"^x: expected a finite number, got 'a{36}\.\.\.$"):
        check_number("x", "a" * 5000)
    with pytest.raises(InvalidInputError, match=r"^n: expected an integer <= 10, got <int too long to show>$"):
        check_int("n", 10**5000, hi=10)
    with pytest.raises(InvalidInputError, match=r"^n: expected an integer, got 12\.5$"):
        check_int("n", 12.5)


def test_check_box_shapes_and_order():
    box = check_box("box", [[0, 1], [2, 2]])
    assert box.dtype == float and box.shape == (2, 2)
    assert check_box("box", [[0, 1]], 1).shape == (1, 2)
    with pytest.raises(
        InvalidInputError, match=r"^box: expected a \(d, 2\) array of \[low, high\] rows, got shape \(2,\)$"
    ):
        check_box("box", [0, 1])
    with pytest.raises(InvalidInputError, match=r"^box: expected a \(d, 2\) array"):
        check_box("box", np.zeros((0, 2)))
    with pytest.raises(InvalidInputError, match=r"^box: expected 3 rows of \[low, high\]"):
        check_box("box", [[0, 1]], 3)
    with pytest.raises(InvalidInputError, match=r"^box: row 1: expected low <= high, got \[3.0, 2.0\]$"):
        check_box("box", [[0, 1], [3, 2]])
    with pytest.raises(InvalidInputError, match=r"^bounds: row 1: expected low < high, got \[2.0, 2.0\]$"):
        check_box("bounds", [[0, 1], [2, 2]], strict=True)
    with pytest.raises(InvalidInputError, match="^box: every value must be finite"):
        check_box("box", [[0, np.inf]])
