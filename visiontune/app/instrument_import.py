""" "Import from instrument...": the start page's file picker for an autorefractor's or lensmeter's file.

A button under the starting prescriptions of the start page opens a file dialog on the clinic's
instrument files (JOIA XML ``.xml``, DICOM ``.dcm``); the file is read by
:func:`visiontune.instrument_files.read_instrument_file` and its readings fill the form: each eye's
sphere, cylinder and axis, and the start's source (autorefraction for a refractometer's file,
habitual spectacles for a lensmeter's), the form switched to a visit when the file has both eyes, and
the pupillary distance when the page has a PD field (``view.pd``).
The values stay editable and are checked by the form as typed ones are; what the file said and where
it came from is shown beside the button. A bad file is refused with the reader's message (the file,
the element, what is wrong) in the form's error line, and the form is left as it was.

The Qt-free part is :func:`visiontune.instrument_files.visit_import.start_form_texts`.
"""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from visiontune.errors import InvalidInputError
from visiontune.instrument_files import read_instrument_file
from visiontune.instrument_files.reading import InstrumentReading
from visiontune.instrument_files.visit_import import start_form_texts

__all__ = ["FILE_FILTER", "choose_instrument_file", "import_into_start_view", "install_import_button"]

FILE_FILTER = "Instrument files (*.xml *.XML *.dcm *.DCM *.dicom);;All files (*)"


def choose_instrument_file(parent: QWidget | None = None) -> str | None:
    """The file the clinician picks in a file dialog, or ``None`` when cancelled."""
    path, _filter = QFileDialog.getOpenFileName(parent, "Import from instrument", "", FILE_FILTER)
    return path or None


def import_into_start_view(view, path) -> InstrumentReading | None:
    """Read the instrument file at ``path`` into the start page ``view`` (module docstring); return the
    reading, or ``None`` after showing the refusal in the form's error line."""
    try:
        reading = read_instrument_file(path)
    except InvalidInputError as exc:
        view.show_error(f"Import from instrument: {exc}")
        return None
    texts = start_form_texts(reading)
    if "OD" in texts and "OS" in texts and not view.is_visit():
        view.choose_visit()
    eye_fields = {"OD": (view.sphere, view.cylinder, view.axis), "OS": (view.os_sphere, view.os_cylinder, view.os_axis)}
    for eye, fields in eye_fields.items():
        if eye in texts:
            for field, text in zip(fields, texts[eye], strict=True):
                field.setText(text)
    pd_field = getattr(view, "pd", None)  # the start page's typed PD, where the page has one
    if reading.pd_mm is not None and isinstance(pd_field, QLineEdit):
        pd_field.setText(
            f"{reading.pd_od_mm:g}/{reading.pd_os_mm:g}" if reading.pd_od_mm is not None else f"{reading.pd_mm:g}"
        )
    index = view.start_source.findData(texts["source"])
    if index >= 0:
        view.start_source.setCurrentIndex(index)
    view.show_error("")
    label = getattr(view, "instrument_summary", None)
    if label is not None:
        label.setText(reading.summary().replace("\n", "<br>"))
    view.instrument_reading = reading
    return reading


def install_import_button(view) -> QPushButton:
    """Add the "Import from instrument..." row to the start page's form (below the starting
    prescriptions) and return its button; the row also shows what the last file gave."""
    button = QPushButton("Import from instrument\u2026")
    button.setObjectName("importInstrument")
    button.setToolTip("Read the starting prescription from an autorefractor's or lensmeter's file (JOIA XML or DICOM)")
    summary = QLabel("")
    summary.setObjectName("instrumentSummary")
    summary.setWordWrap(True)
    summary.setStyleSheet("color:#555;")
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(button)
    layout.addWidget(summary, 1)
    view.instrument_summary = summary
    view.instrument_reading = None
    form = view.form
    at, _role = form.getWidgetPosition(view.os_row)
    form.insertRow(at + 1 if at >= 0 else form.rowCount(), "", row)

    def picked() -> None:
        path = choose_instrument_file(view)
        if path is not None:
            import_into_start_view(view, path)

    button.clicked.connect(picked)
    return button
