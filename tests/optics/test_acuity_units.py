"""Acuity unit conversions against standard chart values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics import acuity_units as u

# (Snellen 20/x, Snellen 6/x, decimal, logMAR, ETDRS letters) rows of the standard table
TABLE = [
    (20, 6, 1.0, 0.0, 85),
    (40, 12, 0.5, 0.30, 70),
    (200, 60, 0.1, 1.0, 35),
    (10, 3, 2.0, -0.30, 100),
    (100, 30, 0.2, 0.70, 50),
]


@pytest.mark.parametrize("d20, d6, decimal, logmar, letters", TABLE)
def test_standard_table(d20, d6, decimal, logmar, letters):
    assert u.snellen_to_logmar(20, d20) == pytest.approx(logmar, abs=0.005)
    assert u.snellen_to_logmar(6, d6) == pytest.approx(logmar, abs=0.005)
    assert u.parse_snellen(f"20/{d20}") == pytest.approx(logmar, abs=0.005)
    assert u.decimal_to_logmar(decimal) == pytest.approx(logmar, abs=0.005)
    assert u.logmar_to_decimal(logmar) == pytest.approx(decimal, rel=0.02)
    assert u.logmar_to_snellen_denominator(logmar) == pytest.approx(d20, rel=0.02)
    assert u.logmar_to_snellen_denominator(logmar, numerator=6) == pytest.approx(d6, rel=0.02)
    assert u.logmar_to_etdrs_letters(logmar) == pytest.approx(letters)
    assert u.etdrs_letters_to_logmar(letters) == pytest.approx(logmar)
    assert u.logmar_to_mar_arcmin(logmar) == pytest.approx(1 / decimal, rel=0.02)


def test_format_snellen():
    assert u.format_snellen(0.0) == "20/20"
    assert u.format_snellen(np.log10(2)) == "20/40"
    assert u.format_snellen(1.0, numerator=6) == "6/60"


@settings(max_examples=100, deadline=None)
@given(st.floats(-0.3, 1.7))
def test_round_trips(logmar):
    assert u.mar_arcmin_to_logmar(u.logmar_to_mar_arcmin(logmar)) == pytest.approx(logmar, abs=1e-12)
    assert u.decimal_to_logmar(u.logmar_to_decimal(logmar)) == pytest.approx(logmar, abs=1e-12)
    assert u.snellen_to_logmar(6, u.logmar_to_snellen_denominator(logmar, 6)) == pytest.approx(logmar, abs=1e-12)
    assert u.etdrs_letters_to_logmar(u.logmar_to_etdrs_letters(logmar)) == pytest.approx(logmar, abs=1e-12)


def test_vectorised():
    out = u.logmar_to_decimal(np.array([0.0, 1.0]))
    assert isinstance(out, np.ndarray) and out == pytest.approx([1.0, 0.1])
    assert isinstance(u.logmar_to_decimal(0.0), float)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: u.decimal_to_logmar(0.0), "decimal"),
        (lambda: u.mar_arcmin_to_logmar(-1.0), "mar_arcmin"),
        (lambda: u.snellen_to_logmar(20, 0), "denominator"),
        (lambda: u.snellen_to_logmar(-20, 40), "numerator"),
        (lambda: u.logmar_to_decimal(np.nan), "logmar"),
        (lambda: u.logmar_to_etdrs_letters(2.0), "logmar"),
        (lambda: u.etdrs_letters_to_logmar(101), "letters"),
        (lambda: u.etdrs_letters_to_logmar(-1), "letters"),
        (lambda: u.parse_snellen("20:40"), "text"),
        (lambda: u.parse_snellen(20), "text"),
        (lambda: u.format_snellen([0.0, 0.1]), "logmar"),
    ],
)
def test_bad_input_raises_naming_the_argument(call, name):
    with pytest.raises(InvalidInputError, match=name):
        call()
