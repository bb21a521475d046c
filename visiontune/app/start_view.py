"""The start screen: a new session, the session list (open / resume), calibration, screen."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from visiontune.app.logic.start_form import (
    DEVICE_CHOICES,
    LENS_KIND_CHOICES,
    SOURCE_LABELS,
    device_setting,
    lens_kind_setting,
    parse_age,
    read_start,
)
from visiontune.app.logic.visit_flow import NewVisit
from visiontune.app.logic.visit_imports import imported_start
from visiontune.app.worker import NewSession, SessionSummary
from visiontune.errors import InvalidInputError
from visiontune.session.records import SessionState
from visiontune.session.visit_records import check_name, parse_pd

_COLUMNS = ("id", "patient", "eye", "state", "answers", "created (UTC)", "kind")
CYLINDER_FORM_LABELS = (("minus", "minus cylinder (optometric)"), ("plus", "plus cylinder (ophthalmic)"))
#: The eye choices: one eye (a session), or a visit (OD, then OS, then the binocular balance).
EYES = ("OD", "OS", "OU")
VISIT_CHOICE = "OD + OS: a visit (right eye, left eye, balance)"


def _rx_row(fields) -> QWidget:
    """``S [ ] D  C [ ] D  × [ ] °`` in a widget of its own (a row that can be hidden)."""
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    for text, field in zip(("S", "D   C", "D   \u00d7"), fields, strict=True):
        row.addWidget(QLabel(text))
        row.addWidget(field)
    row.addWidget(QLabel("\u00b0"))
    row.addStretch(1)
    box = QWidget()
    box.setLayout(row)
    return box


def _power_field(name: str, placeholder: str, width: int = 90) -> QLineEdit:
    field = QLineEdit()
    field.setObjectName(name)
    field.setPlaceholderText(placeholder)
    field.setMaximumWidth(width)
    return field


class StartView(QWidget):
    """Emits ``start_requested(NewSession)``, ``resume_requested(id)``, ``view_requested(id)``
    and ``calibrate_requested()``; holds no session state."""

    start_requested = Signal(object)
    visit_requested = Signal(object)
    resume_requested = Signal(int)
    view_requested = Signal(int)
    calibrate_requested = Signal()

    def __init__(self, protocols: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._sessions: list[SessionSummary] = []
        title = QLabel("VisionTune")
        font = QFont(title.font())
        font.setPointSize(26)
        font.setBold(True)
        title.setFont(font)
        subtitle = QLabel(
            "Subjective refraction by Bayesian optimization: set the lens shown, type what the patient reads."
        )
        subtitle.setWordWrap(True)

        self.resume_banner = QLabel("")
        self.resume_banner.setObjectName("resumeBanner")
        self.resume_banner.setStyleSheet("background:#e8f0fe; padding:6px; border-radius:3px;")
        self.resume_banner.setWordWrap(True)
        self.resume_last = QPushButton("Resume it")
        self.resume_last.setObjectName("resumeLast")
        self.resume_last.clicked.connect(self._resume_last)
        banner_row = QHBoxLayout()
        banner_row.addWidget(self.resume_banner, 1)
        banner_row.addWidget(self.resume_last)

        # --- new session
        self.patient_id = QLineEdit()
        self.patient_id.setPlaceholderText("pseudonymous id, e.g. P-0042 (no names)")
        self.eye = QComboBox()
        self.eye.setObjectName("eyeChoice")
        self.eye.addItems([*EYES, VISIT_CHOICE])
        # the starting prescription: S [ ] D  C [ ] D  x [ ] deg (of the right eye in a visit)
        self.sphere = _power_field("startSphere", "\u22122.00")
        self.cylinder = _power_field("startCylinder", "\u22121.00")
        self.axis = _power_field("startAxis", "30", 60)
        rx_row = _rx_row((self.sphere, self.cylinder, self.axis))
        # a visit: the left eye's starting prescription, and the eyes not refracted with why
        self.os_sphere = _power_field("startSphereOS", "\u22122.00")
        self.os_cylinder = _power_field("startCylinderOS", "\u22121.00")
        self.os_axis = _power_field("startAxisOS", "150", 60)
        self.os_row = _rx_row((self.os_sphere, self.os_cylinder, self.os_axis))
        self.skip_od = QLineEdit()
        self.skip_od.setObjectName("skipOD")
        self.skip_od.setPlaceholderText("OD: why not (e.g. prosthetic eye)")
        self.skip_os = QLineEdit()
        self.skip_os.setObjectName("skipOS")
        self.skip_os.setPlaceholderText("OS: why not (e.g. amblyopic eye)")
        skip_layout = QHBoxLayout()
        skip_layout.setContentsMargins(0, 0, 0, 0)
        skip_layout.addWidget(self.skip_od)
        skip_layout.addWidget(self.skip_os)
        self.skip_row = QWidget()
        self.skip_row.setLayout(skip_layout)
        # a visit's pupillary distance and examiner (optional; on every record of the visit)
        self.pd = QLineEdit()
        self.pd.setObjectName("visitPd")
        self.pd.setPlaceholderText("PD mm: 63 or 31.5/31.5")
        self.examiner = QLineEdit()
        self.examiner.setObjectName("visitExaminer")
        self.examiner.setPlaceholderText("examiner: who refracts")
        people_layout = QHBoxLayout()
        people_layout.setContentsMargins(0, 0, 0, 0)
        people_layout.addWidget(self.pd)
        people_layout.addWidget(self.examiner)
        self.people_row = QWidget()
        self.people_row.setLayout(people_layout)
        self.start_source = QComboBox()
        self.start_source.setObjectName("startSource")
        for name, label in SOURCE_LABELS:
            self.start_source.addItem(label, name)
        self.age = QLineEdit()
        self.age.setObjectName("patientAge")
        self.age.setPlaceholderText("optional, years (the model of accommodation uses it)")
        self.age.setMaximumWidth(260)
        self.start_hint = QLabel(
            "Leave the prescription empty with source 'none' to start from nothing; a "
            "simulated patient left empty starts from its own autorefraction."
        )
        self.start_hint.setWordWrap(True)
        self.start_hint.setStyleSheet("color:#555;")
        self.cylinder_form = QComboBox()
        self.cylinder_form.setObjectName("cylinderForm")
        for name, label in CYLINDER_FORM_LABELS:
            self.cylinder_form.addItem(label, name)
        # the lens device: the manual trial frame, or a CV-5000 on a chosen serial port
        self.device_kind = QComboBox()
        self.device_kind.setObjectName("deviceKind")
        for name, label in DEVICE_CHOICES:
            self.device_kind.addItem(label, name)
        self.lens_kind = QComboBox()  # the manual device's kind: what a change of lens costs the patient
        self.lens_kind.setObjectName("lensKind")
        for name, label in LENS_KIND_CHOICES:
            self.lens_kind.addItem(label, name)
        self.device_port = QLineEdit()
        self.device_port.setObjectName("devicePort")
        self.device_port.setPlaceholderText("serial port, e.g. /dev/ttyUSB0 or COM4")
        self.device_note = QLabel(
            "The CV-5000 driver follows public reverse-engineered notes: verify it on this "
            "clinic's own device before clinical use (docs/devices.md)."
        )
        self.device_note.setObjectName("deviceNote")
        self.device_note.setWordWrap(True)
        self.device_note.setStyleSheet("color:#8a4b00;")
        self.protocol = QComboBox()
        self.protocol.setEditable(True)
        self.protocol.addItems(protocols)
        self.simulated = QCheckBox("Simulated patient (demo: answers automatically)")
        self.start_button = QPushButton("Start session")
        self.start_button.setObjectName("startButton")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self._start)
        self.form_error = QLabel("")
        self.form_error.setStyleSheet("color:#b00020;")
        self.form_error.setWordWrap(True)
        form = QFormLayout()
        self.form = form
        form.addRow("Patient id", self.patient_id)
        form.addRow("Eye", self.eye)
        form.addRow("Starting prescription", rx_row)
        self.rx_label = form.labelForField(rx_row)
        form.addRow("Starting Rx, OS", self.os_row)
        form.addRow("Not refracted", self.skip_row)
        form.addRow("PD, examiner", self.people_row)
        form.addRow("  measured by", self.start_source)
        form.addRow("", self.start_hint)
        form.addRow("Age", self.age)
        form.addRow("Protocol", self.protocol)
        form.addRow("", self.simulated)
        new_box = QGroupBox("New session")
        new_layout = QVBoxLayout(new_box)
        new_layout.addLayout(form)
        new_layout.addWidget(self.form_error)
        new_layout.addWidget(self.start_button)
        howto = QLabel(
            "<b>How a session goes</b><ol>"
            "<li>Set the lens the screen shows in the trial frame or phoropter.</li>"
            "<li>Press <b>Enter</b>: the letter appears on the patient screen.</li>"
            "<li>Type the letter the patient names (or <b>+</b> / <b>\u2212</b>). <b>Backspace</b> undoes.</li>"
            "<li>Repeat until the stopping rule is met; <b>F F</b> finishes, <b>P</b> pauses.</li>"
            "<li>A visit does the right eye, then the left eye, then the binocular balance: the patient "
            "says which eye sees the line more clearly, <b>R</b>, <b>L</b> or <b>=</b>.</li></ol>"
            "Every answer is saved as it is typed: closing the app loses nothing."
        )
        howto.setWordWrap(True)
        howto.setStyleSheet("color:#333;")
        new_layout.addWidget(howto)
        new_layout.addStretch(1)

        # --- sessions
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setObjectName("sessionTable")
        self.table.setHorizontalHeaderLabels(_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.doubleClicked.connect(lambda _i: self._open_selected())
        self.open_button = QPushButton("Open / resume selected")
        self.open_button.clicked.connect(self._open_selected)
        list_box = QGroupBox("Sessions")
        list_layout = QVBoxLayout(list_box)
        list_layout.addWidget(self.table)
        list_layout.addWidget(self.open_button)

        # --- setup
        self.calibration_status = QLabel("")
        self.calibration_status.setObjectName("calibrationStatus")
        self.calibration_status.setWordWrap(True)
        self.calibrate_button = QPushButton("Calibrate the patient screen\u2026")
        self.calibrate_button.clicked.connect(self.calibrate_requested)
        self.screen = QComboBox()
        self.screen.setObjectName("patientScreen")
        setup_box = QGroupBox("Settings")
        setup = QFormLayout(setup_box)
        setup.addRow("Patient screen", self.screen)
        setup.addRow("Calibration", self.calibration_status)
        setup.addRow("", self.calibrate_button)
        setup.addRow("Lenses in", self.cylinder_form)
        setup.addRow("Lens device", self.device_kind)
        setup.addRow("  kind", self.lens_kind)
        setup.addRow("  port", self.device_port)
        setup.addRow("", self.device_note)
        self.setup_form = setup

        columns = QHBoxLayout()
        left = QVBoxLayout()
        left.addWidget(new_box)
        left.addWidget(setup_box)
        columns.addLayout(left, 2)
        columns.addWidget(list_box, 3)
        outer = QVBoxLayout(self)
        outer.addWidget(title)
        outer.addWidget(subtitle)
        outer.addLayout(banner_row)
        outer.addLayout(columns, 1)
        self.set_sessions([])
        self.eye.currentIndexChanged.connect(self._eye_changed)
        self._eye_changed()
        self.device_kind.currentIndexChanged.connect(self._device_changed)
        self._device_changed()
        from visiontune.app.instrument_import import install_import_button  # "Import from instrument..." row

        self.import_button = install_import_button(self)

    def _device_changed(self, _index=None) -> None:
        serial = self.device_kind.currentData() != "manual"
        self.setup_form.setRowVisible(self.device_port, serial)
        self.setup_form.setRowVisible(self.device_note, serial)
        self.setup_form.setRowVisible(self.lens_kind, not serial)  # a CV-5000 is the motorized phoropter

    def set_device(self, spec: str) -> None:
        """Show the device setting ``spec`` (``manual`` or ``cv5000:PORT``; anything else: manual)."""
        kind, _, port = str(spec).partition(":")
        index = self.device_kind.findData(kind if kind in ("manual", "cv5000") else "manual")
        self.device_kind.setCurrentIndex(max(index, 0))
        self.device_port.setText(port if kind == "cv5000" else "")

    def set_lens_kind(self, name: str) -> None:
        """Show the manual device's kind ``name`` (``trial-frame`` or ``manual-phoropter``;
        anything else: the trial frame)."""
        self.lens_kind.setCurrentIndex(max(self.lens_kind.findData(name), 0))

    def lens_kind_name(self) -> str:
        """The manual device's kind the form holds (InvalidInputError naming the field)."""
        return lens_kind_setting(self.lens_kind.currentData())

    def device_spec(self) -> str:
        """The device setting the form holds (:func:`~visiontune.app.logic.start_form.device_setting`;
        InvalidInputError naming the field)."""
        return device_setting(self.device_kind.currentData(), self.device_port.text())

    def is_visit(self) -> bool:
        """True when the form starts a visit (both eyes), not one session."""
        return self.eye.currentText() == VISIT_CHOICE

    def choose_visit(self) -> None:
        self.eye.setCurrentText(VISIT_CHOICE)

    def _eye_changed(self, _index=None) -> None:
        visit = self.is_visit()
        self.form.setRowVisible(self.os_row, visit)
        self.form.setRowVisible(self.skip_row, visit)
        self.form.setRowVisible(self.people_row, visit)
        self.rx_label.setText("Starting Rx, OD" if visit else "Starting prescription")
        self.start_button.setText("Start visit" if visit else "Start session")

    # ------------------------------------------------------------------ data
    def set_cylinder_form(self, form: str) -> None:
        """Choose ``"minus"`` or ``"plus"`` (anything else leaves the choice as it is)."""
        index = self.cylinder_form.findData(form)
        if index >= 0:
            self.cylinder_form.setCurrentIndex(index)

    def set_protocol(self, name: str) -> None:
        if self.protocol.findText(name) < 0:
            self.protocol.addItem(name)
        self.protocol.setCurrentText(name)

    def set_screens(self, screens: list[tuple[str, str]], chosen: str) -> None:
        """``screens``: ``(name, description)`` pairs; ``chosen``: the saved name. Default:
        the second screen if there is one (the first is the clinician's)."""
        self.screen.clear()
        for name, description in screens:
            self.screen.addItem(description, name)
        names = [n for n, _ in screens]
        if chosen in names:
            self.screen.setCurrentIndex(names.index(chosen))
        elif len(names) > 1:
            self.screen.setCurrentIndex(1)

    def screen_name(self) -> str:
        return self.screen.currentData() or ""

    def set_calibration(self, text: str, real_sessions_possible: bool) -> None:
        self.calibration_status.setText(text)
        if not real_sessions_possible:
            self.simulated.setChecked(True)
            self.simulated.setEnabled(False)
            self.simulated.setToolTip("No screen calibration: only simulated sessions (calibrate to test patients).")
        else:
            self.simulated.setEnabled(True)

    def set_sessions(self, sessions: list[SessionSummary]) -> None:
        self._sessions = list(sessions)
        self.table.setRowCount(len(sessions))
        for row, s in enumerate(reversed(self._sessions)):
            values = (
                str(s.session_id),
                s.patient_id,
                s.eye,
                s.state.value,
                str(s.n_trials),
                f"{s.created_at:%Y-%m-%d %H:%M}",
                s.kind,
            )
            for col, v in enumerate(values):
                item = QTableWidgetItem(v)
                item.setData(Qt.ItemDataRole.UserRole, s.session_id)
                if s.simulated and col == len(values) - 1:
                    item.setForeground(Qt.GlobalColor.darkYellow)
                self.table.setItem(row, col, item)
        unfinished = [s for s in self._sessions if s.state != SessionState.FINISHED]
        if unfinished:
            last = self.last_unfinished()
            sim = " SIMULATED" if last.simulated else ""
            self.resume_banner.setText(
                f"Session {last.session_id} ({sim.strip() + ' ' if sim else ''}patient "
                f"{last.patient_id}, {last.eye}, {last.n_trials} answers, {last.state.value}) "
                "was not finished. Nothing was lost."
            )
        self.resume_banner.setVisible(bool(unfinished))
        self.resume_last.setVisible(bool(unfinished))

    def last_unfinished(self) -> SessionSummary | None:
        """The session to offer for resuming: the last unfinished one with answers (a visit's
        left eye waits, open and empty, while its right eye is refracted), else the last one."""
        unfinished = [s for s in self._sessions if s.state != SessionState.FINISHED]
        answered = [s for s in unfinished if s.n_trials > 0]
        return (answered or unfinished or [None])[-1]

    # ------------------------------------------------------------------ actions
    def cylinder_form_name(self) -> str:
        """The cylinder-form setting: ``"minus"`` or ``"plus"``."""
        return self.cylinder_form.currentData()

    def request(self) -> NewSession:
        """The form as a :class:`NewSession`; InvalidInputError naming the field
        (:func:`~visiontune.app.logic.start_form.read_start`)."""
        patient = self.patient_id.text().strip()
        if not patient:
            raise InvalidInputError("Patient id: enter a pseudonymous id (letters, digits, . _ -)")
        start = read_start(
            self.sphere.text(),
            self.cylinder.text(),
            self.axis.text(),
            self.start_source.currentData(),
            self.age.text(),
            simulated=self.simulated.isChecked(),
        )
        protocol = self.protocol.currentText().strip()
        if not protocol:
            raise InvalidInputError("Protocol: choose a protocol")
        return NewSession(
            patient,
            self.eye.currentText(),
            protocol,
            self.simulated.isChecked(),
            starting_rx=start.rx,
            start_source=start.source,
            age_years=start.age_years,
            cylinder_form=self.cylinder_form_name(),
        )

    def visit_request(self) -> NewVisit:
        """The form as a :class:`~visiontune.app.logic.visit_flow.NewVisit`; InvalidInputError
        naming the field (``"OS Sphere: ..."``, ``"Not refracted: ..."``)."""
        patient = self.patient_id.text().strip()
        if not patient:
            raise InvalidInputError("Patient id: enter a pseudonymous id (letters, digits, . _ -)")
        protocol = self.protocol.currentText().strip()
        if not protocol:
            raise InvalidInputError("Protocol: choose a protocol")
        age = parse_age(self.age.text())
        skip = {e: f.text().strip() for e, f in (("OD", self.skip_od), ("OS", self.skip_os)) if f.text().strip()}
        if len(skip) == 2:
            raise InvalidInputError("Not refracted: a visit refracts at least one eye; clear one of the reasons")
        simulated = self.simulated.isChecked()
        source = self.start_source.currentData()
        starts = {}
        for eye, fields in (
            ("OD", (self.sphere, self.cylinder, self.axis)),
            ("OS", (self.os_sphere, self.os_cylinder, self.os_axis)),
        ):
            if eye in skip:
                continue
            try:
                start = read_start(*(f.text() for f in fields), source, self.age.text(), simulated=simulated)
            except InvalidInputError as exc:
                raise InvalidInputError(f"{eye} {exc}") from None
            starts[eye] = start.rx
        pd = self.pd.text().strip() or None
        if pd is not None:
            parse_pd(pd, "PD")  # refused here, naming the field; the engine reads it again
        examiner = check_name("Examiner", self.examiner.text(), optional=True) if self.examiner.text().strip() else None
        form = {
            "OD": (self.sphere.text(), self.cylinder.text(), self.axis.text()),
            "OS": (self.os_sphere.text(), self.os_cylinder.text(), self.os_axis.text()),
        }
        form = {e: t for e, t in form.items() if e in starts and starts[e] is not None}
        imported = imported_start(getattr(self, "instrument_reading", None), form, source, pd)
        return NewVisit(
            patient,
            protocol,
            simulated,
            starts=starts,
            start_source=source,
            age_years=age,
            skip=skip,
            cylinder_form=self.cylinder_form_name(),
            pd=pd,
            examiner=examiner,
            imported=imported,
        )

    def _start(self) -> None:
        try:
            self.device_spec()
            self.lens_kind_name()
            request = self.visit_request() if self.is_visit() else self.request()
        except InvalidInputError as exc:
            self.show_error(str(exc))
            return
        self.show_error("")
        (self.visit_requested if self.is_visit() else self.start_requested).emit(request)

    def show_error(self, message: str) -> None:
        """Show ``message`` under the form and outline the field(s) it names in red."""
        self.form_error.setText(message)
        head = message.split(":", 1)[0].strip().lower() if message else ""
        fields = {}
        for prefix, (s, c, a) in (
            ("", (self.sphere, self.cylinder, self.axis)),
            ("od ", (self.sphere, self.cylinder, self.axis)),
            ("os ", (self.os_sphere, self.os_cylinder, self.os_axis)),
        ):
            fields |= {
                f"{prefix}sphere": (s,),
                f"{prefix}cylinder": (c,),
                f"{prefix}axis": (a,),
                f"{prefix}starting prescription": (s, c, a),
                f"{prefix}source": (self.start_source,),
                f"{prefix}age": (self.age,),
            }
        fields |= {
            "patient id": (self.patient_id,),
            "not refracted": (self.skip_od, self.skip_os),
            "lens device port": (self.device_port,),
            "lens device kind": (self.lens_kind,),
            "pd": (self.pd,),
            "examiner": (self.examiner,),
        }
        named = fields.get(head, ())
        for w in (
            self.sphere,
            self.cylinder,
            self.axis,
            self.os_sphere,
            self.os_cylinder,
            self.os_axis,
            self.start_source,
            self.age,
            self.patient_id,
            self.skip_od,
            self.skip_os,
            self.device_port,
            self.lens_kind,
            self.pd,
            self.examiner,
        ):
            w.setStyleSheet("border: 2px solid #b00020;" if w in named else "")
        if named:
            named[0].setFocus()

    def _resume_last(self) -> None:
        last = self.last_unfinished()
        if last is not None:
            self.resume_requested.emit(last.session_id)

    def _open_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            self.form_error.setText("Select a session in the list first.")
            return
        sid = int(self.table.item(rows[0].row(), 0).data(Qt.ItemDataRole.UserRole))
        summary = next(s for s in self._sessions if s.session_id == sid)
        if summary.state == SessionState.FINISHED:
            self.view_requested.emit(sid)
        else:
            self.resume_requested.emit(sid)
