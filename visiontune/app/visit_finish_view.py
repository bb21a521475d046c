"""The visit's finish page: both eyes side by side, sign-off, acuity, export.

Right eye (OD) on the left, left eye (OS) on the right, as on a prescription pad. Per eye: the
final prescription (the end point plus the balance's change) in the clinic's cylinder form,
what the refraction found and the clinician's sign-off beside it, the credible region
(S ± / C ± / axis ±), the acuity in logMAR, Snellen 6/ and 20/ and decimal; under it a form
to edit the eye and sign it off with a name (recorded beside the found prescription, never in
its place) and, for a real patient, to record the acuity read through the final prescription.
Under both eyes: the acuity with both eyes open through both final prescriptions (measured:
typed by the clinician for a real patient, read by a simulated one), the pupillary distance,
the examiner and who signed off, with a form to record the acuity with both eyes open (real
patients) and the PD (63, or 31.5/31.5 mm) and the examiner.
The page records nothing itself: it emits ``signoff_requested(eye, Prescription, name)``,
``acuity_requested(eye, logMAR)`` (eye ``OU``: both eyes open), ``inputs_requested(PD text,
examiner)``, ``export_requested()`` and ``back_requested()``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from visiontune.app.archive_send import ArchiveSendPanel
from visiontune.app.logic.texts import MINUS, STOP_MEANINGS, lens_text, region_text
from visiontune.app.logic.visit_flow import (
    EyeSummary,
    VisitView,
    acuity_line,
    balance_text,
    change_text,
    eye_title,
    inputs_text,
    lens_or_dash,
    near_add_line,
    parse_acuity,
    read_signoff,
)
from visiontune.app.session_view import SIMULATED_TEXT
from visiontune.app.visit_step_view import eye_badge_style, visit_heading
from visiontune.errors import InvalidInputError

__all__ = ["EyeColumn", "VisitFinishView"]

_ERROR_STYLE = "color:#b00020;"


def _font(widget: QWidget, size: float, bold: bool = False) -> None:
    f = QFont(widget.font())
    f.setPointSizeF(size)
    f.setBold(bold)
    widget.setFont(f)


def _field(name: str, placeholder: str, width: int) -> QLineEdit:
    field = QLineEdit()
    field.setObjectName(name)
    field.setPlaceholderText(placeholder)
    field.setMaximumWidth(width)
    return field


def _power(x: float) -> str:
    return f"{x:+.2f}"


class EyeColumn(QFrame):
    """One eye of the finish page (see module doc)."""

    def __init__(self, eye: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.eye = eye
        self.summary: EyeSummary | None = None
        self.cylinder_form = "minus"
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName(f"eyeColumn{eye}")
        self.heading = QLabel(eye_title(eye))
        self.heading.setObjectName(f"eyeHeading{eye}")
        _font(self.heading, 16, True)
        self.heading.setStyleSheet(eye_badge_style(eye))
        self.caption = QLabel("Prescription (final, with the binocular balance)")
        self.lens = QLabel("")
        self.lens.setObjectName(f"finalLens{eye}")
        _font(self.lens, 24, True)
        self.lens.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = QLabel("")
        self.details.setObjectName(f"eyeDetails{eye}")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        _font(self.details, 11)
        self.truth = QLabel("")
        self.truth.setObjectName(f"simulatedTruth{eye}")
        self.truth.setWordWrap(True)
        self.truth.setStyleSheet("color:#8a5a00;")
        # edit and sign off
        self.sphere = _field(f"signSphere{eye}", "\u22121.25", 80)
        self.cylinder = _field(f"signCylinder{eye}", "\u22120.50", 80)
        self.axis = _field(f"signAxis{eye}", "90", 55)
        self.by = _field(f"signBy{eye}", "clinician's name", 220)
        self.sign_button = QPushButton(f"Sign off {eye}")
        self.sign_button.setObjectName(f"signButton{eye}")
        self.sign_caption = QLabel("")
        self.sign_caption.setWordWrap(True)
        self.sign_caption.setStyleSheet("color:#555;")
        rx_row = QHBoxLayout()
        for text, field in (("S", self.sphere), ("D  C", self.cylinder), ("D  \u00d7", self.axis), ("\u00b0", None)):
            rx_row.addWidget(QLabel(text))
            if field is not None:
                rx_row.addWidget(field)
        rx_row.addStretch(1)
        by_row = QHBoxLayout()
        by_row.addWidget(QLabel("Signed by"))
        by_row.addWidget(self.by, 1)
        by_row.addWidget(self.sign_button)
        # acuity read by the clinician (real patients)
        self.acuity = _field(f"acuity{eye}", "logMAR, or 6/9, 20/25", 160)
        self.acuity_button = QPushButton("Record acuity")
        self.acuity_button.setObjectName(f"acuityButton{eye}")
        acuity_row = QHBoxLayout()
        acuity_row.addWidget(QLabel("Acuity read through the final Rx"))
        acuity_row.addWidget(self.acuity)
        acuity_row.addWidget(self.acuity_button)
        acuity_row.addStretch(1)
        self.acuity_box = QFrame()
        self.acuity_box.setLayout(acuity_row)
        self.error = QLabel("")
        self.error.setObjectName(f"eyeError{eye}")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(_ERROR_STYLE)
        form = QVBoxLayout()
        form.addWidget(self.sign_caption)
        form.addLayout(rx_row)
        form.addLayout(by_row)
        self.sign_box = QFrame()
        self.sign_box.setLayout(form)
        layout = QVBoxLayout(self)
        for w in (
            self.heading,
            self.caption,
            self.lens,
            self.details,
            self.truth,
            self.sign_box,
            self.acuity_box,
            self.error,
        ):
            layout.addWidget(w)
        layout.addStretch(1)

    def show_eye(self, summary: EyeSummary, view: VisitView, change_d: float) -> None:
        self.summary = summary
        self.cylinder_form = view.cylinder_form
        self.error.setText("")
        if not summary.finished:
            self.lens.setText("not refracted" if summary.state == "skipped" else summary.state)
            self.caption.setText("")
            why = (
                f"Skipped: {summary.skip_reason}."
                if summary.state == "skipped"
                else f"Its refraction is {summary.state} ({summary.answers} answers)."
            )
            self.details.setText(_html(why))
            self.truth.setText("")
            self.sign_box.setVisible(False)
            self.acuity_box.setVisible(False)
            return
        self.caption.setText("Prescription (final, with the binocular balance)")
        self.lens.setText(lens_or_dash(summary.final))
        region = summary.region or {}
        rows = [
            (
                "Found by VisionTune",
                f"{lens_text(summary.found)} ({summary.answers} answers, stopped: "
                f"{STOP_MEANINGS.get(summary.stopped_by, summary.stopped_by)})",
            )
        ]
        if summary.signed is not None:
            rows.append(
                (
                    "Signed off",
                    f"<b>{lens_text(summary.signed)}</b> by {_esc(summary.signed_by)}, "
                    f"{summary.signed_at.astimezone():%Y-%m-%d %H:%M} (the found one is kept beside it)",
                )
            )
        else:
            rows.append(("Signed off", "not edited (the found prescription stands)"))
        rows.append(("Balance", change_text(change_d)))
        if region:
            rows.append(
                (f"{round(100 * region.get('level', 0.95))}% credible region", region_text(region, summary.found))
            )
        if summary.measured_va_logmar is not None:
            rows.append(("Acuity, measured through it", acuity_line(summary.measured_va_logmar)))
        else:
            rows.append(("Acuity, measured through it", "not yet measured"))
        if summary.predicted_va_logmar is not None:
            rows.append(("Acuity, predicted", acuity_line(summary.predicted_va_logmar)))
        self.details.setText(
            "<table cellspacing='3'>"
            + "".join(
                f"<tr><td style='color:#555; padding-right:10px'>{k}</td>"
                f"<td>{_esc(v) if '<b>' not in v else v}</td></tr>"
                for k, v in rows
            )
            + "</table>"
        )
        self.truth.setText(
            "" if summary.true_rx is None else f"SIMULATED patient's true correction: {lens_text(summary.true_rx)}"
        )
        self.truth.setVisible(summary.true_rx is not None)
        end = summary.end_point
        balance = (
            "the balance changed nothing"
            if abs(change_d) < 1e-9
            else f"the balance's {change_d:+.2f} D is added to its sphere".replace("-", MINUS)
        )
        self.sign_caption.setText(
            f"Edit and sign off (the monocular prescription, {view.cylinder_form} cylinder; {balance}):"
        )
        for field, value in (
            (self.sphere, _power(end.sphere_d)),
            (self.cylinder, _power(end.cylinder_d)),
            (self.axis, f"{end.axis_deg:.0f}"),
        ):
            field.setText(value.replace("-", MINUS))
            field.setStyleSheet("")
        self.sign_box.setVisible(True)
        self.acuity_box.setVisible(not view.simulated)
        self.acuity.clear()

    def read_signoff(self):
        """``(Prescription, name)`` from the form; InvalidInputError naming the field (shown)."""
        try:
            out = read_signoff(
                self.sphere.text(), self.cylinder.text(), self.axis.text(), self.by.text(), self.cylinder_form
            )
        except InvalidInputError as exc:
            self.show_error(str(exc))
            raise
        self.show_error("")
        return out

    def read_acuity(self) -> float:
        try:
            value = parse_acuity(self.acuity.text())
        except InvalidInputError as exc:
            self.show_error(str(exc))
            raise
        self.show_error("")
        return value

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        head = message.split(":", 1)[0].strip().lower() if message else ""
        named = {
            "sphere": self.sphere,
            "cylinder": self.cylinder,
            "axis": self.axis,
            "name": self.by,
            "acuity": self.acuity,
        }.get(head)
        for w in (self.sphere, self.cylinder, self.axis, self.by, self.acuity):
            w.setStyleSheet("border: 2px solid #b00020;" if w is named else "")
        if named is not None:
            named.setFocus()


def _esc(text) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _html(text: str) -> str:
    return _esc(text)


def near_text(view: VisitView) -> str:
    """The near addition on the finish page: each eye's distance Rx with its add, 95% region, range
    of clear vision and near acuity; or why it was not done; or nothing (not for this visit)."""
    near = getattr(view, "near", None)
    if near is None:
        return ""
    if near.skip_reason is not None:
        return f"Near addition not done: {near.skip_reason}."
    lines = []
    for eye, add in sorted(near.adds.items()):
        final = view.eyes[eye].final
        sim = ""
        if view.simulated:
            true_add = (add.detail or {}).get("true_add_d") if isinstance(add.detail, dict) else None
            sim = " (SIMULATED" + ("" if true_add is None else f"; true add {true_add:+.2f} D") + ")"
        lines.append(f"{eye}: {lens_or_dash(final)} \u00b7 {near_add_line(add)}{sim}")
    if not lines:
        return "Near addition: not filed yet."
    return "Near addition (reading):\n" + "\n".join(lines)


class VisitFinishView(QWidget):
    signoff_requested = Signal(str, object, str)
    acuity_requested = Signal(str, float)
    inputs_requested = Signal(str, str)
    export_requested = Signal()
    back_requested = Signal()
    near_requested = Signal()  # begin the near addition (a patient the age rule leaves out)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view: VisitView | None = None
        self.banner = QLabel(SIMULATED_TEXT)
        self.banner.setObjectName("visitFinishBanner")
        self.banner.setStyleSheet("background:#f5a623; color:#222; padding:4px; font-weight:bold;")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title = QLabel("")
        self.title.setObjectName("visitFinishTitle")
        _font(self.title, 14, True)
        self.hint = QLabel(
            "Accept the prescriptions, or edit an eye and sign it off with your name (the edit is "
            "recorded beside the found prescription, which is kept); then export the visit's records."
        )
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color:#444;")
        self.columns = {eye: EyeColumn(eye) for eye in ("OD", "OS")}
        grid = QGridLayout()
        grid.addWidget(self.columns["OD"], 0, 0)
        grid.addWidget(self.columns["OS"], 0, 1)
        grid.setHorizontalSpacing(12)
        for eye, column in self.columns.items():
            column.sign_button.clicked.connect(lambda _=False, e=eye: self._sign(e))
            column.by.returnPressed.connect(lambda e=eye: self._sign(e))
            column.acuity_button.clicked.connect(lambda _=False, e=eye: self._acuity(e))
            column.acuity.returnPressed.connect(lambda e=eye: self._acuity(e))
        self.balance = QLabel("")
        self.balance.setObjectName("visitBalance")
        self.balance.setWordWrap(True)
        _font(self.balance, 11)
        self.inputs = QLabel("")
        self.inputs.setObjectName("visitInputs")
        self.inputs.setWordWrap(True)
        # the near addition of each eye, or why it was not done; "Near addition" begins one
        self.near = QLabel("")
        self.near.setObjectName("visitNear")
        self.near.setWordWrap(True)
        _font(self.near, 11)
        self.near_button = QPushButton("Near addition\u2026")
        self.near_button.setObjectName("visitNearButton")
        self.near_button.clicked.connect(self.near_requested)
        self.both_acuity = _field("acuityOU", "logMAR, or 6/9, 20/25", 160)
        self.both_button = QPushButton("Record acuity, both eyes open")
        self.both_button.setObjectName("acuityButtonOU")
        self.both_button.clicked.connect(self._both_acuity)
        self.both_acuity.returnPressed.connect(self._both_acuity)
        self.pd = _field("visitPd", "PD mm: 63 or 31.5/31.5", 170)
        self.examiner = _field("visitExaminer", "examiner's name", 220)
        inputs_button = QPushButton("Record PD and examiner")
        inputs_button.setObjectName("visitInputsButton")
        inputs_button.clicked.connect(self._inputs)
        for w in (self.pd, self.examiner):
            w.returnPressed.connect(self._inputs)
        self.both_box = QFrame()
        both_row = QHBoxLayout(self.both_box)
        both_row.setContentsMargins(0, 0, 0, 0)
        both_row.addWidget(QLabel("Both eyes open, through both final Rx"))
        both_row.addWidget(self.both_acuity)
        both_row.addWidget(self.both_button)
        both_row.addStretch(1)
        inputs_row = QHBoxLayout()
        inputs_row.addWidget(self.pd)
        inputs_row.addWidget(self.examiner)
        inputs_row.addWidget(inputs_button)
        inputs_row.addStretch(1)
        self.message = QLabel("")
        self.message.setObjectName("visitMessage")
        self.message.setWordWrap(True)
        self.exports = QLabel("")
        self.exports.setObjectName("visitExports")
        self.exports.setWordWrap(True)
        self.exports.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.export_button = QPushButton("&Accept and export the records (PDF, FHIR, DICOM, CSV, JSON)")
        self.export_button.setObjectName("visitExportButton")
        self.export_button.clicked.connect(self.export_requested)
        back = QPushButton("Back to the start screen")
        back.setObjectName("visitBackButton")
        back.clicked.connect(self.back_requested)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_button)
        buttons.addWidget(back)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addWidget(self.title)
        layout.addWidget(self.hint)
        layout.addLayout(grid)
        layout.addWidget(self.balance)
        layout.addWidget(self.inputs)
        layout.addWidget(self.near)
        layout.addWidget(self.near_button)
        layout.addWidget(self.both_box)
        layout.addLayout(inputs_row)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        layout.addWidget(self.exports)
        self.archive = ArchiveSendPanel()  # "Send to archive" once the records are exported
        layout.addWidget(self.archive)
        layout.addStretch(1)

    def show_visit(self, view: VisitView) -> None:
        self.view = view
        self.banner.setVisible(view.simulated)
        self.title.setText(visit_heading(view, f"prescriptions in {view.cylinder_form}-cylinder form"))
        b = view.balance
        for eye, column in self.columns.items():
            change = (b.plus_change_od_d if eye == "OD" else b.plus_change_os_d) if b.done else 0.0
            column.show_eye(view.eyes[eye], view, change)
        self.balance.setText(balance_text(view).replace("-", MINUS) if b.outcome else "")
        self.inputs.setText(inputs_text(view).replace("-", MINUS))
        self.near.setText(near_text(view))
        near = getattr(view, "near", None)
        self.near_button.setVisible(
            near is None
            and all(e.finished or e.state == "skipped" for e in view.eyes.values())
            and any(e.finished for e in view.eyes.values())
        )
        both = all(e.finished for e in view.eyes.values())
        self.both_box.setVisible(both and not view.simulated)
        self.both_acuity.clear()
        self.message.setText(view.message)
        if view.exports:
            lines = [f"  {kind.upper()}: {path}" for kind, paths in view.exports.items() for path in paths]
            self.exports.setText("Exported (each file readable by you only):\n" + "\n".join(lines))
        else:
            self.exports.setText("")
        self.archive.show_visit(view)

    def show_failure(self, message: str) -> None:
        self.message.setText(message)
        self.message.setStyleSheet(_ERROR_STYLE if message else "")

    def _sign(self, eye: str) -> None:
        try:
            rx, by = self.columns[eye].read_signoff()
        except InvalidInputError:
            return
        self.signoff_requested.emit(eye, rx, by)

    def _both_acuity(self) -> None:
        """The acuity with both eyes open, as typed (logMAR or Snellen); an error names the field."""
        try:
            value = parse_acuity(self.both_acuity.text())
        except InvalidInputError as exc:
            self.show_failure(f"Both eyes open: {exc}")
            self.both_acuity.setStyleSheet("border: 2px solid #b00020;")
            return
        self.both_acuity.setStyleSheet("")
        self.acuity_requested.emit("OU", value)

    def _inputs(self) -> None:
        pd, examiner = self.pd.text().strip(), self.examiner.text().strip()
        if not pd and not examiner:
            self.show_failure("PD and examiner: type the pupillary distance (63, or 31.5/31.5 mm) or the examiner")
            return
        self.inputs_requested.emit(pd, examiner)

    def _acuity(self, eye: str) -> None:
        try:
            value = self.columns[eye].read_acuity()
        except InvalidInputError:
            return
        self.acuity_requested.emit(eye, value)
