"""The finish view: the result of a session and where its exports went."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from visiontune.app.logic.texts import MINUS, SOURCE_NAMES, region_text, rx_from_dict
from visiontune.app.session_view import SIMULATED_TEXT, acuity_text, lens_text
from visiontune.app.worker import FinishedView
from visiontune.refraction.lenses import CYLINDER_FORMS, in_form
from visiontune.session.trial_text import answer_kinds_text


class FinishView(QWidget):
    back_requested = Signal()
    export_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._session_id: int | None = None
        self.banner = QLabel(SIMULATED_TEXT)
        self.banner.setStyleSheet("background:#f5a623; color:#222; padding:4px; font-weight:bold;")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title = QLabel("")
        self.caption = QLabel("Prescription found (0.25 D steps)")
        self.region = QLabel("")
        self.region.setObjectName("resultRegion")
        self.start_caption = QLabel("Starting prescription")
        self.start_lens = QLabel("")
        self.start_lens.setObjectName("startLens")
        start_font = QFont(self.start_lens.font())
        start_font.setPointSize(20)
        self.start_lens.setFont(start_font)
        self.start_details = QLabel("")
        self.start_details.setObjectName("startDetails")
        self.start_details.setWordWrap(True)
        self.truth = QLabel("")
        self.truth.setObjectName("simulatedTruth")
        self.truth.setWordWrap(True)  # a long line would widen the window past the screen
        self.lens = QLabel("")
        self.lens.setObjectName("resultLens")
        font = QFont(self.lens.font())
        font.setPointSize(34)
        font.setBold(True)
        self.lens.setFont(font)
        self.details = QLabel("")
        self.details.setObjectName("resultDetails")
        self.details.setWordWrap(True)
        for w in (
            self.title,
            self.caption,
            self.details,
            self.truth,
            self.region,
            self.start_caption,
            self.start_details,
        ):
            f = QFont(w.font())
            f.setPointSize(12)
            w.setFont(f)
        self.region.setStyleSheet("font-size: 14pt;")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.exports = QLabel("")
        self.exports.setObjectName("exports")
        self.exports.setWordWrap(True)
        self.exports.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.export_button = QPushButton("Export again (PDF, CSV, JSON)")
        self.export_button.clicked.connect(
            lambda: self._session_id is not None and self.export_requested.emit(self._session_id)
        )
        back = QPushButton("Back to the start screen")
        back.setObjectName("backButton")
        back.clicked.connect(self.back_requested)
        # the prescription found with its region, the starting prescription beside it
        found = QGridLayout()
        found.addWidget(self.caption, 0, 0)
        found.addWidget(self.lens, 1, 0)
        found.addWidget(self.region, 2, 0)
        line = QFrame()
        line.setFrameShape(QFrame.Shape.VLine)
        line.setStyleSheet("color:#bbb;")
        found.addWidget(line, 0, 1, 3, 1)
        found.addWidget(self.start_caption, 0, 2)
        found.addWidget(self.start_lens, 1, 2)
        found.addWidget(self.start_details, 2, 2)
        found.setColumnStretch(0, 3)
        found.setColumnStretch(2, 2)
        found.setHorizontalSpacing(24)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addWidget(self.title)
        layout.addLayout(found)
        for w in (self.details, self.truth, self.exports):
            layout.addWidget(w)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_button)
        buttons.addWidget(back)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addStretch(1)

    def show_result(self, view: FinishedView, truth: str = "") -> None:
        """Show ``view``; ``truth``: for a simulated session, a line comparing with the
        simulated patient's true correction."""
        self.truth.setText(truth)
        self.truth.setVisible(bool(truth))
        self._session_id = view.session_id
        r = view.result or {}
        self.banner.setVisible(view.simulated)
        kind = "SIMULATED patient" if view.simulated else "patient"
        self.title.setText(f"Session {view.session_id} finished \u00b7 {kind} {view.patient_id} \u00b7 eye {view.eye}")
        if not r:
            self.lens.setText("no result stored")
            for w in (self.region, self.start_lens, self.start_details, self.details):
                w.setText("")
            return
        form = r.get("cylinder_form") if r.get("cylinder_form") in CYLINDER_FORMS else "minus"
        rounded = in_form(rx_from_dict(r["rounded"]), form)
        self.lens.setText(lens_text(rounded))
        exact = in_form(rx_from_dict(r["estimate"]), form)
        ci = r["credible_interval"]
        self.caption.setText(f"Prescription found (trial-lens steps, {form}-cylinder form)")
        self.region.setText(f"{round(100 * ci['level'])}% credible region: {region_text(ci, rounded)}")
        start = r.get("starting_rx")
        start_rx = rx_from_dict(start)
        if start_rx is None:
            self.start_caption.setText("Starting prescription")
            self.start_lens.setText("none")
            self.start_details.setText("The search started from nothing.")
        else:
            source = SOURCE_NAMES.get(start.get("source"), start.get("source") or "autorefraction")
            distance = float(((start_rx.power_vector_array() - rounded.power_vector_array()) ** 2).sum() ** 0.5)
            self.start_caption.setText(f"Starting prescription ({source})")
            self.start_lens.setText(lens_text(in_form(start_rx, form)))
            self.start_details.setText(f"{distance:.2f} D from the prescription found (power-vector distance)")
        lo, hi = r["predicted_va_interval"]
        kinds = answer_kinds_text(
            r["trials_used"], r.get("comparisons_used", 0), r.get("sliders_used", 0), r.get("lines_used", 0)
        )
        extra = ""
        if ci.get("m_pm_d") is not None:
            extra = (
                f"; \u00b1{ci['m_pm_d']:.2f} D on the spherical equivalent, "
                f"\u00b1{ci['cylinder_vector_pm_d']:.2f} D on "
                "the cylinder vector"
            )
        self.details.setText(
            (
                f"Exact estimate {lens_text(exact)}; {round(100 * ci['level'])}% credible intervals sphere "
                f"{ci['sphere_d'][0]:+.2f} to {ci['sphere_d'][1]:+.2f} D, "
                f"cylinder {ci['cylinder_d'][0]:+.2f} to {ci['cylinder_d'][1]:+.2f} D{extra}.\n"
                f"Predicted acuity {acuity_text(r['predicted_va_logmar'])} (interval {lo:+.2f} to {hi:+.2f}).\n"
                f"{r['trials_used']} answers" + (f" ({kinds})" if kinds else "") + f", stopped by {r['stopped_by']}."
            ).replace("-", MINUS)
        )
        if view.exports:
            self.exports.setText("Exported:\n" + "\n".join(f"  {k.upper()}: {p}" for k, p in view.exports.items()))
        elif view.export_error:
            self.exports.setText(
                f"Export failed: {view.export_error}\nThe session is safe in the trial log; "
                "export it again with the button below or `visiontune report`."
            )
        else:
            self.exports.setText("")
