"""The finish view: the result of a session and where its exports went."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from visiontune.app.session_view import SIMULATED_TEXT, acuity_text, lens_text
from visiontune.app.worker import FinishedView
from visiontune.optics import Prescription


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
        self.caption = QLabel("Prescription found (rounded to 0.25 D)")
        self.truth = QLabel("")
        self.truth.setObjectName("simulatedTruth")
        self.lens = QLabel("")
        self.lens.setObjectName("resultLens")
        font = QFont(self.lens.font())
        font.setPointSize(34)
        font.setBold(True)
        self.lens.setFont(font)
        self.details = QLabel("")
        self.details.setObjectName("resultDetails")
        self.details.setWordWrap(True)
        for w in (self.title, self.caption, self.details, self.truth):
            f = QFont(w.font())
            f.setPointSize(12)
            w.setFont(f)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.exports = QLabel("")
        self.exports.setObjectName("exports")
        self.exports.setWordWrap(True)
        self.exports.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.export_button = QPushButton("Export again (PDF, CSV, JSON)")
        self.export_button.clicked.connect(lambda: self._session_id is not None and self.export_requested.emit(self._session_id))
        back = QPushButton("Back to the start screen")
        back.setObjectName("backButton")
        back.clicked.connect(self.back_requested)
        layout = QVBoxLayout(self)
        for w in (self.banner, self.title, self.caption, self.lens, self.details, self.truth, self.exports):
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
            return
        rounded = r["rounded"]
        self.lens.setText(lens_text(Prescription(rounded["sphere_d"], rounded["cylinder_d"], rounded["axis_deg"])))
        exact = r["estimate"]
        ci = r["credible_interval"]
        lo, hi = r["predicted_va_interval"]
        self.details.setText((
            f"Exact estimate {lens_text(Prescription(exact['sphere_d'], exact['cylinder_d'], exact['axis_deg']))}; "
            f"{round(100 * ci['level'])}% credible interval sphere {ci['sphere_d'][0]:+.2f} to {ci['sphere_d'][1]:+.2f} D, "
            f"cylinder {ci['cylinder_d'][0]:+.2f} to {ci['cylinder_d'][1]:+.2f} D.\n"
            f"Predicted acuity {acuity_text(r['predicted_va_logmar'])} (interval {lo:+.2f} to {hi:+.2f}).\n"
            f"{r['trials_used']} answers, stopped by {r['stopped_by']}."
        ).replace("-", "\u2212"))
        if view.exports:
            self.exports.setText("Exported:\n" + "\n".join(f"  {k.upper()}: {p}" for k, p in view.exports.items()))
        elif view.export_error:
            self.exports.setText(f"Export failed: {view.export_error}\nThe session is safe in the trial log; "
                                 "export it again with the button below or `visiontune report`.")  # fmt: skip
        else:
            self.exports.setText("")
