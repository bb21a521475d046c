"""The start screen's starting prescription: sphere / cylinder × axis, its source and the
patient's age; every bad input is a message naming its field, an out-of-range prescription gets
the engine's range message (never a silent clip), and nothing reaches the trial log."""

import pytest
from PySide6.QtCore import Qt

from visiontune.app.logic.start_form import read_start
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.start import StartingPoint
from visiontune.session.store import TrialStore


def start(sphere="", cylinder="", axis="", source="autorefraction", age="", simulated=False):
    return read_start(sphere, cylinder, axis, source, age, simulated=simulated)


def test_a_typed_prescription_is_read_in_any_clinical_spelling():
    assert start("-2.00", "-1.00", "30").rx == Prescription(-2.0, -1.0, 30.0)
    assert start("\u22122", "\u22121,25", "5", age="45").rx == Prescription(-2.0, -1.25, 5.0)
    assert start("-2.00", "-1.00", "30", age="45").age_years == 45.0
    assert start("plano", "+0.75", "90", source="retinoscopy").rx == Prescription(0.0, 0.75, 90.0)
    assert start("+1.50").rx == Prescription(1.5, 0.0, 180.0)  # no cylinder, no axis needed
    assert start("+1.50 D", "0", "").rx == Prescription(1.5, 0.0, 180.0)
    typed = start("-2.00", "-1.00", "30", source="spectacles")
    assert (typed.rx, typed.source) == (Prescription(-2.0, -1.0, 30.0), "spectacles")


def test_no_prescription_needs_source_none_for_a_real_patient():
    assert start(source="none").rx is None
    assert start(simulated=True).rx is None  # the simulated patient's own autorefraction, later
    with pytest.raises(InvalidInputError, match=r"^Sphere: type the starting prescription from the autorefraction"):
        start()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"sphere": "abc"}, r"^Sphere: expected a number, e\.g\. \u22122\.00; got 'abc'"),
        ({"sphere": "-2", "cylinder": "1..0", "axis": "30"}, r"^Cylinder: expected a number"),
        ({"sphere": "-2", "cylinder": "-1"}, r"^Axis: a cylinder of -1\.00 D needs its axis"),
        ({"sphere": "-2", "cylinder": "-1", "axis": "200"}, r"^Axis: expected degrees in \[0, 180\], got 200"),
        ({"sphere": "-2", "cylinder": "-1", "axis": "thirty"}, r"^Axis: expected a number"),
        ({"cylinder": "-1", "axis": "30"}, r"^Sphere: type the sphere"),
        ({"sphere": "-2", "age": "2"}, r"^Age: expected an age in \[3, 110\] years, got 2"),
        ({"sphere": "-2", "age": "old"}, r"^Age: expected a number"),
        (
            {"sphere": "-2", "cylinder": "-1", "axis": "30", "source": "none"},
            r"^Source: say where the starting prescription",
        ),
    ],
)
def test_bad_input_is_a_message_naming_its_field(fields, message):
    with pytest.raises(InvalidInputError, match=message):
        start(**fields)


def test_out_of_range_gets_the_engines_range_message_not_a_clip():
    for sphere, cylinder in (("-15.00", "0"), ("+2.00", "-7.00")):
        rx = Prescription(float(sphere), float(cylinder), 90.0)
        with pytest.raises(InvalidInputError) as engine:
            StartingPoint(rx, "autorefraction")
        with pytest.raises(InvalidInputError) as form:
            start(sphere, cylinder, "90")
        assert str(form.value) == str(engine.value)
        assert "outside the range this refraction covers" in str(form.value)


def fill(view, sphere="", cylinder="", axis="", source="autorefraction", age=""):
    view.sphere.setText(sphere)
    view.cylinder.setText(cylinder)
    view.axis.setText(axis)
    view.start_source.setCurrentIndex(view.start_source.findData(source))
    view.age.setText(age)


@pytest.mark.parametrize(
    "fields, named, message",
    [
        (
            {"sphere": "-2.00", "cylinder": "-1.00", "axis": "190"},
            ("axis",),
            "Axis: expected degrees in [0, 180], got 190",
        ),
        ({"sphere": "-2.00", "cylinder": "-1.00"}, ("axis",), "Axis: a cylinder of \u22121.00 D needs its axis"),
        ({"sphere": "minus two"}, ("sphere",), "Sphere: expected a number"),
        (
            {"sphere": "-15.00"},
            ("sphere", "cylinder", "axis"),  # the range is the whole prescription's
            "starting prescription: S -15.00 DS (spherical equivalent -15.00 D) is outside the range",
        ),
        ({"sphere": "-2.00", "age": "200"}, ("age",), "Age: expected an age in [3, 110] years"),
        (
            {"sphere": "-2.00", "cylinder": "-1.00", "axis": "30", "source": "none"},
            ("start_source",),
            "Source: say where",
        ),
    ],
)
def test_bad_start_input_shows_the_error_and_writes_no_session_row(qtbot, make_window, paths, fields, named, message):
    window = make_window(simulate=True)
    view = window.start_view
    fill(view, **fields)
    qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    assert view.form_error.text().replace("\u2212", "-").startswith(message.replace("\u2212", "-")), (
        view.form_error.text()
    )
    outlined = [
        name
        for name in ("sphere", "cylinder", "axis", "start_source", "age", "patient_id")
        if getattr(view, name).styleSheet()
    ]
    assert outlined == list(named)
    qtbot.wait(300)  # a start sent by mistake would have reached the engine by now
    assert window.stack.currentWidget() is view and window.snapshot is None
    with TrialStore.open(paths["db"]) as store:
        assert store.list_sessions() == []
    # corrected, the same form starts a session, and the outline goes
    fill(view, "-2.00", "-1.00", "30")
    qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
    assert view.form_error.text() == "" and not view.axis.styleSheet()
    qtbot.waitUntil(lambda: window.snapshot is not None, timeout=30_000)
