"""Input validation shared by every layer: one place, messages that name the argument."""

from __future__ import annotations

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
