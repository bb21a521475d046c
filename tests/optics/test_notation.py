"""The one notation of a prescription (visiontune.optics.notation): what every surface writes,
and what Prescription.parse reads back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.notation import axis_text, is_trial_lens, power_text, rx_cells, rx_text, signed

#: Trial lenses: sphere and cylinder on the 0.25 D steps, a whole-degree axis (180 without cylinder).
trial_lenses = st.builds(
    lambda s, c, a: Prescription(s * 0.25, c * 0.25, a if c else 180),
    st.integers(-80, 80),
    st.integers(-32, 32),
    st.integers(1, 180),
)


@settings(max_examples=300, deadline=None)
@given(trial_lenses, st.sampled_from([None, "minus", "plus"]), st.booleans())
def test_a_trial_lens_reads_back_as_written_in_either_form(rx, form, unicode):
    text = rx_text(rx, form=form, unicode=unicode)
    back = Prescription.parse(text)
    expected = {None: rx, "minus": rx.to_minus_cylinder(), "plus": rx.to_plus_cylinder()}[form]
    assert back == expected, text
    assert "not a trial lens" not in text


@settings(max_examples=300, deadline=None)
@given(trial_lenses)
def test_the_two_forms_describe_the_same_power_vector(rx):
    minus = Prescription.parse(rx_text(rx, form="minus"))
    plus = Prescription.parse(rx_text(rx, form="plus"))
    assert minus.cylinder_d <= 0 <= plus.cylinder_d
    np.testing.assert_allclose(minus.power_vector_array(), plus.power_vector_array(), atol=1e-12)
    np.testing.assert_allclose(minus.power_vector_array(), rx.power_vector_array(), atol=1e-12)


@pytest.mark.parametrize(
    "rx, text",
    [
        (Prescription(-1.25, -0.5, 35), "S -1.25 / C -0.50 x 035"),
        (Prescription(-2.0, -1.75, 40), "S -2.00 / C -1.75 x 040"),
        (Prescription(-1.0, -0.5, 3), "S -1.00 / C -0.50 x 003"),
        (Prescription(0.0, -0.5, 180), "S plano / C -0.50 x 180"),
        (Prescription(-0.0, -0.5, 0), "S plano / C -0.50 x 180"),
        (Prescription(0.25, 0.0, 90), "S +0.25 DS"),
        (Prescription(0.0, 0.0, 180), "S plano DS"),
    ],
)
def test_signed_two_decimals_plano_ds_and_the_axis_in_three_digits(rx, text):
    assert rx_text(rx) == text == rx.format() == str(rx)


def test_unicode_writes_the_minus_sign_and_times():
    assert rx_text(Prescription(-1.25, -0.5, 35), unicode=True) == "S \u22121.25 / C \u22120.50 \u00d7 035"


@pytest.mark.parametrize(
    "rx",
    [
        Prescription(-1.05, -1.30, 32.4),  # an estimate off the trial-lens steps, as the live panel's "Best lens now"
        Prescription(-1.25, -0.5, 35.5),  # a fractional axis
        Prescription(-1.3125, -0.5, 90),  # a power off the 0.25 D steps
        Prescription(-1.0, -0.001, 90),  # a cylinder that prints as 0.00 is not none
    ],
)
def test_a_value_off_the_steps_is_never_written_as_a_lens(rx):
    assert not is_trial_lens(rx)
    assert rx_text(rx).endswith(" (not a trial lens)")
    assert rx_text(rx, kind="estimate").endswith(" (estimate, not a trial lens)")
    assert (
        rx_text(Prescription(-1.05, -1.30, 32.4), kind="estimate")
        == "S -1.05 / C -1.30 x 032 (estimate, not a trial lens)"
    )


def test_no_negative_zero():
    assert signed(-0.001) == signed(-0.0) == signed(0.0) == "+0.00"
    assert signed(-0.0004, 3) == "+0.000"
    assert signed(-0.006) == "-0.01" and signed(0.3) == "+0.30"
    assert power_text(-0.004) == power_text(0.0) == "plano"
    assert axis_text(0) == axis_text(180) == "180" and axis_text(5.4) == "005" and axis_text(179.6) == "180"


def test_table_cells():
    assert rx_cells(Prescription(-1.25, -0.5, 35)) == ("-1.25", "-0.50", "035")
    assert rx_cells(Prescription(0.0, 0.0, 180)) == ("plano", "DS", "-")


def test_an_unknown_form_is_refused():
    with pytest.raises(InvalidInputError, match="form"):
        rx_text(Prescription(-1, -1, 90), form="cross")


@pytest.mark.parametrize(
    "text",
    [
        "-2.25/-1.25x35",
        "-2.25 / -1.25 x 35",
        "-2.25 -1.25 x 035",
        "-2.25DS/-1.25DCx35",
        "-2,25 -1,25 x 35",
        "-2,25/-1,25x35",
        "S -2.25 / C -1.25 x 035",
        "S \u22122.25 / C \u22121.25 \u00d7 035",
        "-2.25, -1.25 x 35",
        "-2.25 -1.25 @ 35",
        "sph -2.25 cyl -1.25 axis 35",
    ],
)
def test_what_a_clinician_types_is_read(text):
    assert Prescription.parse(text) == Prescription(-2.25, -1.25, 35)


def test_a_fixed_axis_model_reads_s_c_alone():
    assert Prescription.parse("-2,25 -1,25", default_axis_deg=180.0) == Prescription(-2.25, -1.25, 180)
    with pytest.raises(InvalidInputError, match="needs an axis"):
        Prescription.parse("-2.25 -1.25")


# --- every surface writes through the one formatter ---------------------------------------------


@settings(max_examples=60, deadline=None)
@given(trial_lenses | st.builds(Prescription, st.floats(-10, 10), st.floats(-4, 4), st.floats(0, 180)))
def test_every_surface_writes_the_one_notation(rx):
    from visiontune.app.logic.texts import lens_text as app_lens_text
    from visiontune.report.pdf import format_lens
    from visiontune.report.visit_pdf import rx_text as visit_pdf_rx_text
    from visiontune.session.trial_text import lens_text as cli_lens_text

    assert app_lens_text(rx) == visit_pdf_rx_text(rx) == rx_text(rx, unicode=True)
    assert cli_lens_text(rx) == format_lens(rx) == rx_text(rx)
