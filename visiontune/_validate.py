"""Input validation shared by every layer: one place, messages that name the argument."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from visiontune.errors import InvalidInputError


def finite_array(name: str, value, *, ndim: int | None = None, dtype=float) -> np.ndarray:
    """Return ``value`` as a finite numpy array, or raise naming ``name``.

    ``ndim``: required number of dimensions (a 1-D input is accepted where 2 is asked
    and reshaped to one column only by the caller, never here).
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}: expected numbers, got {type(value).__name__} ({exc})") from None
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidInputError(
            f"{name}: every value must be finite, found {arr[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return arr


def points(name: str, value, dim: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite ``(n, d)`` float array; a 1-D input is one point."""
    arr = finite_array(name, value)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InvalidInputError(f"{name}: expected an (n, d) array of points, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise InvalidInputError(f"{name}: expected points with {dim} coordinates, got {arr.shape[1]}")
    return arr


def positive(name: str, value) -> np.ndarray:
    """Return ``value`` as a finite array of strictly positive numbers, or raise naming ``name``."""
    arr = finite_array(name, value)
    if np.any(arr <= 0):
        raise InvalidInputError(f"{name}: must be > 0, got {arr.tolist() if arr.ndim else float(arr)}")
    return arr


def binary_labels(name: str, value, n: int | None = None) -> np.ndarray:
    """Return ``value`` as a 1-D float array of 0/1 answers, or raise naming ``name``."""
    arr = finite_array(name, value).reshape(-1) if np.ndim(value) else finite_array(name, value).reshape(1)
    bad = ~np.isin(arr, (0.0, 1.0))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InvalidInputError(f"{name}: answers must be 0 or 1, found {arr[i]} at index {i}")
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(f"{name}: expected {n} answers (one per point), got {arr.shape[0]}")
    return arr


def short_repr(value) -> str:
    """``repr(value)`` cut to 40 characters (a value read from a file can be a page long)."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than sys.get_int_max_str_digits()
        return f"<{type(value).__name__} too long to show>"
    return text if len(text) <= 40 else text[:37] + "..."


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f" in [{lo}, {hi}]"
    if lo is not None:
        return f" >= {lo}"
    return f" <= {hi}" if hi is not None else ""


def check_int(
    name: str,
    value,
    lo: int | None = None,
    hi: int | None = None,
    *,
    whole_float: bool = False,
    error: type[Exception] = InvalidInputError,
) -> int:
    """Return ``value`` as an ``int`` when it is an integer in ``[lo, hi]`` (either bound may be
    ``None``), or raise ``error`` naming ``name``.

    A Python or numpy integer is accepted, a ``bool`` never (``True`` is not a count).
    ``whole_float``: also accept a float with no fractional part (``3.0``), for arguments
    that always took one. ``error``: the exception class raised (a file's reader raises its own).
    """
    ok = not isinstance(value, bool) and (
        isinstance(value, Integral)
        or (whole_float and isinstance(value, Real) and math.isfinite(value) and float(value).is_integer())
    )
    if not ok or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise error(f"{name}: expected an integer{_range_text(lo, hi)}, got {short_repr(value)}")
    return int(value)


def _finite_real(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        return False


def check_number(
    name: str, value, lo: float | None = None, hi: float | None = None, *, error: type[Exception] = InvalidInputError
) -> float:
    """Return ``value`` as a ``float`` when it is one finite real number in ``[lo, hi]`` (either
    bound may be ``None``), or raise ``error`` naming ``name``. A ``bool``, a string or an array
    is refused."""
    if not _finite_real(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise error(f"{name}: expected a finite number{_range_text(lo, hi)}, got {short_repr(value)}")
    return float(value)


def scalar(name: str, value, lo: float | None = None, hi: float | None = None) -> float:
    """Return ``value`` as a ``float`` when numpy reads it as one finite number (a Python or
    numpy number, a 0-d array, a numeric string) in ``[lo, hi]``, or raise naming ``name``.

    For numeric arguments of the models; a ``bool`` is refused. Values read from a record or
    a file, where a string must not pass for a number, use :func:`check_number`.
    """
    arr = finite_array(name, value)
    if arr.ndim != 0 or isinstance(value, bool):
        raise InvalidInputError(f"{name}: expected one number, got {value!r}")
    v = float(arr)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise InvalidInputError(f"{name}: expected a number{_range_text(lo, hi)}, got {v}")
    return v


def check_rng(
    rng, name: str = "rng", *, allow_seed: bool = False, error: type[Exception] = InvalidInputError
) -> np.random.Generator:
    """Return ``rng`` when it is a :class:`numpy.random.Generator`, or raise ``error`` naming
    ``name`` (a seed or the legacy ``RandomState`` is refused: every draw comes from one stream).

    ``allow_seed``: also accept a seed, an integer >= 0 or a :class:`numpy.random.SeedSequence`,
    and return ``np.random.default_rng(seed)``.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if not allow_seed:
        raise error(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    integer = isinstance(rng, Integral) and not isinstance(rng, bool)
    if integer and rng >= 0:
        return np.random.default_rng(int(rng))
    raise error(
        f"{name}: expected a numpy.random.Generator or a seed (an integer >= 0 or a numpy.random.SeedSequence), "
        f"got {short_repr(rng) if integer else type(rng).__name__}"
    )


def check_box(name: str, box, d: int | None = None, *, strict: bool = False) -> np.ndarray:
    """Return ``box`` as a finite ``(d, 2)`` float array of ``[low, high]`` rows, or raise naming
    ``name``.

    ``d``: the number of rows required (one per input column; ``None``: any number >= 1).
    ``low <= high`` in every row (a row with ``low == high`` holds that input fixed);
    ``strict``: ``low < high``.
    """
    arr = finite_array(name, box)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise InvalidInputError(f"{name}: expected a (d, 2) array of [low, high] rows, got shape {arr.shape}")
    if d is not None and arr.shape[0] != d:
        raise InvalidInputError(f"{name}: expected {d} rows of [low, high] (one per input column), got {arr.shape[0]}")
    bad = arr[:, 0] >= arr[:, 1] if strict else arr[:, 0] > arr[:, 1]
    if np.any(bad):
        i = int(np.argmax(bad))
        need = "<" if strict else "<="
        raise InvalidInputError(f"{name}: row {i}: expected low {need} high, got [{arr[i, 0]}, {arr[i, 1]}]")
    return arr
