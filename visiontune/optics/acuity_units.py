"""Visual-acuity units: logMAR, MAR (arcmin), decimal, Snellen fractions, ETDRS letters.

Definitions (ISO 8596; Bailey & Lovie 1976; Ferris et al. 1982 for ETDRS):

* ``MAR = 10^logMAR`` arcmin (the stroke width of the optotype; letter height = 5 MAR);
* decimal acuity ``= 1 / MAR = 10^-logMAR``;
* Snellen ``N/D`` with ``D = N · MAR``, e.g. 20/40 or 6/12 at logMAR 0.30;
* ETDRS letter score ``= 85 - 50 · logMAR`` (5 letters per 0.1 logMAR line, 85 letters
  read at logMAR 0 when every line down to 1.7 counts). The chart spans logMAR 1.7
  (0 letters) to -0.3 (100 letters); conversions outside that range raise.

Every function is vectorised (float in, float out; array in, array out) and raises
:class:`~visiontune.errors.InvalidInputError` naming the argument on bad input.
"""

from __future__ import annotations

import re

import numpy as np

from visiontune._validate import finite_array, positive
from visiontune.errors import InvalidInputError

__all__ = [
    "logmar_to_mar_arcmin",
    "mar_arcmin_to_logmar",
    "logmar_to_decimal",
    "decimal_to_logmar",
    "logmar_to_snellen_denominator",
    "snellen_to_logmar",
    "parse_snellen",
    "format_snellen",
    "logmar_to_etdrs_letters",
    "etdrs_letters_to_logmar",
    "ETDRS_LOGMAR_RANGE",
]

ETDRS_LOGMAR_RANGE = (-0.3, 1.7)
"""logMAR range of a full ETDRS chart (100 letters at -0.3, 0 letters at 1.7)."""


def _out(arr: np.ndarray):
    return float(arr) if arr.ndim == 0 else arr


def logmar_to_mar_arcmin(logmar):
    """``MAR = 10^logMAR``, minutes of arc."""
    return _out(np.power(10.0, finite_array("logmar", logmar)))


def mar_arcmin_to_logmar(mar_arcmin):
    """``logMAR = log10(MAR)``; ``mar_arcmin`` > 0 (minutes of arc)."""
    return _out(np.log10(positive("mar_arcmin", mar_arcmin)))


def logmar_to_decimal(logmar):
    """Decimal acuity ``10^-logMAR`` (1.0 = 20/20 = 6/6)."""
    return _out(np.power(10.0, -finite_array("logmar", logmar)))


def decimal_to_logmar(decimal):
    """``logMAR = -log10(decimal)``; ``decimal`` > 0."""
    return _out(-np.log10(positive("decimal", decimal)))


def logmar_to_snellen_denominator(logmar, numerator: float = 20.0):
    """Snellen denominator ``D = N · 10^logMAR`` for test distance ``numerator`` (20 ft, 6 m...)."""
    n = positive("numerator", numerator)
    return _out(n * np.power(10.0, finite_array("logmar", logmar)))


def snellen_to_logmar(numerator, denominator):
    """``logMAR = log10(D / N)`` for the Snellen fraction ``N/D`` (both > 0)."""
    return _out(np.log10(positive("denominator", denominator) / positive("numerator", numerator)))


_SNELLEN_RE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*/\s*(\d+(?:\.\d*)?)\s*$")


def parse_snellen(text: str) -> float:
    """logMAR of a Snellen fraction written ``"20/40"``, ``"6/12"``, ``"4/4.0"``..."""
    if not isinstance(text, str):
        raise InvalidInputError(f"text: expected a Snellen fraction such as '20/40', got {type(text).__name__}")
    match = _SNELLEN_RE.match(text)
    if match is None:
        raise InvalidInputError(f"text: expected a Snellen fraction such as '20/40', got {text!r}")
    return snellen_to_logmar(float(match.group(1)), float(match.group(2)))


def format_snellen(logmar: float, numerator: float = 20.0, decimals: int = 0) -> str:
    """Snellen text ``"N/D"`` for one logMAR value, e.g. ``format_snellen(0.3) == "20/40"``."""
    value = finite_array("logmar", logmar)
    if value.ndim != 0:
        raise InvalidInputError(f"logmar: expected one value, got shape {value.shape}")
    n = float(positive("numerator", numerator))
    d = logmar_to_snellen_denominator(float(value), n)
    return f"{n:g}/{d:.{decimals}f}"


def logmar_to_etdrs_letters(logmar):
    """ETDRS letter score ``85 - 50 · logMAR``; ``logmar`` within ``[-0.3, 1.7]``."""
    va = finite_array("logmar", logmar)
    lo, hi = ETDRS_LOGMAR_RANGE
    if np.any((va < lo - 1e-12) | (va > hi + 1e-12)):
        raise InvalidInputError(f"logmar: an ETDRS chart scores logMAR in [{lo}, {hi}], got {va.tolist()}")
    return _out(85.0 - 50.0 * va)


def etdrs_letters_to_logmar(letters):
    """``logMAR = (85 - letters) / 50``; ``letters`` within ``[0, 100]``."""
    n = finite_array("letters", letters)
    if np.any((n < 0) | (n > 100)):
        raise InvalidInputError(f"letters: an ETDRS letter score is in [0, 100], got {n.tolist()}")
    return _out((85.0 - n) / 50.0)
