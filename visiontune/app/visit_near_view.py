"""The visit's near (reading) addition page: the clinician's view of the near step.

Before the step: who it is for, the clinic's near distance, Enter to begin, or skip it with a
reason. During it: both eyes' distance prescriptions with the adds filed so far, the eye tested and
what to set before it (the lens over its distance prescription), the letter to show and its size at
the near distance (logMAR, mm, and pixels on the patient screen, with how it is drawn), the keys
``+`` (read right) and ``-`` (wrong), and for a SIMULATED patient its answer (Enter types it). Keys
arrive as ``key_pressed(name, text, ctrl)`` (:func:`~visiontune.app.logic.visit_flow.interpret_near_key`);
the page records nothing: each answer goes to the engine, which writes it to the trial log before
the next letter is computed (:mod:`visiontune.app.logic.visit_near_host`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from visiontune.app.logic.texts import MINUS
from visiontune.app.logic.visit_flow import EYE_NAMES, VisitView, eye_title, lens_or_dash, near_add_line
from visiontune.app.session_view import emit_key, eye_badge_style
from visiontune.app.visit_step_view import keys_to_page, simulated_banner, visit_heading, wrapped_label
from visiontune.display.calibration import Calibration
from visiontune.display.geometry import letter_height_mm, logmar_for_height_mm

__all__ = ["VisitNearView", "lens_over_text", "patient_screen_logmar"]


def patient_screen_logmar(size_logmar: float, near_distance_cm: float, calibration: Calibration) -> float:
    """The size to ask of a patient screen calibrated for ``calibration.viewing_distance_mm`` so that
    it draws a letter ``size_logmar`` tall at the near distance: the same height
    ``h = 2 d tan(5 * 10**s / 2 arcmin)`` (ISO 8596; :func:`~visiontune.display.geometry.letter_height_mm`)
    at ``d`` = the near distance, as logMAR at the calibration's distance ``D``:
    ``s' = log10(2 atan(h / 2D) / 5 arcmin)``. The screen's pixel pitch does the rest, so the letter
    on the screen is ``h`` mm tall whatever distance the calibration was made for."""
    height = letter_height_mm(size_logmar, near_distance_cm * 10.0)
    return float(logmar_for_height_mm(height, calibration.viewing_distance_mm))


def lens_over_text(add_d: float) -> str:
    """The lens to set over the distance prescription: ``+1.50 D add`` / ``−0.50 D (minus lens)``."""
    if add_d < 0:
        return f"{add_d:+.2f} D (a minus lens, over the distance Rx)".replace("-", MINUS)
    return f"{add_d:+.2f} D add (over the distance Rx)"


class VisitNearView(QWidget):
    """The near page (module doc). Emits ``key_pressed(name, text, ctrl)`` and ``skip_requested(reason)``."""

    key_pressed = Signal(str, str, bool)
    skip_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.banner = simulated_banner("nearBanner")
        self.header = wrapped_label("", 11, False, "nearHeader")
        self.title = wrapped_label("", 26, True, "nearTitle")
        self.body = wrapped_label("", 13, False, "nearBody")
        self.distance_rx = wrapped_label("", 13, False, "nearDistanceRx")
        self.distance_rx.setStyleSheet("background:#f4f6f8; padding:6px; border-radius:4px;")
        self.lens = wrapped_label("", 20, True, "nearLens")
        self.letter = wrapped_label("", 60, True, "nearLetter")
        self.letter.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.size = wrapped_label("", 13, False, "nearSize")
        self.geometry_note = wrapped_label("", 10, False, "nearGeometry")
        self.geometry_note.setStyleSheet("color:#555;")
        self.prompt = wrapped_label("", 20, True, "nearPrompt")
        self.prompt.setStyleSheet("background:#eef3e8; padding:10px; border-radius:4px;")
        self.simulated_reply = wrapped_label("", 14, False, "nearSimulatedReply")
        self.answers = wrapped_label("", 11, False, "nearAnswers")
        self.skip_reason = QLineEdit()
        self.skip_reason.setObjectName("nearSkipReason")
        self.skip_reason.setPlaceholderText("reason, e.g. reads without glasses, near done elsewhere")
        self.skip_reason.returnPressed.connect(self._skip)
        self.skip_button = QPushButton("Skip the near addition")
        self.skip_button.setObjectName("nearSkipButton")
        self.skip_button.clicked.connect(self._skip)
        row = QHBoxLayout()
        row.addWidget(wrapped_label("Or do not do it; why:", 11))
        row.addWidget(self.skip_reason, 1)
        row.addWidget(self.skip_button)
        self.skip_box = QFrame()
        self.skip_box.setLayout(row)
        self.method = wrapped_label("", 9, False, "nearMethod")
        self.method.setStyleSheet("color:#555;")
        self.legend = wrapped_label("", 10, False, "nearLegend")
        self.legend.setStyleSheet("color:#555; font-family:monospace;")
        layout = QVBoxLayout(self)
        for w in (
            self.banner,
            self.header,
            self.title,
            self.body,
            self.distance_rx,
            self.lens,
            self.letter,
            self.size,
            self.geometry_note,
            self.prompt,
            self.simulated_reply,
            self.answers,
            self.skip_box,
        ):
            layout.addWidget(w)
        layout.addStretch(1)
        layout.addWidget(self.method)
        layout.addWidget(self.legend)
        keys_to_page(self, self.skip_reason, self.skip_button)

    def show_near(self, view: VisitView) -> None:
        """The near step of ``view`` (step NEAR): its start, or its next letter."""
        near, q = view.near, view.near_question
        self.banner.setVisible(view.simulated)
        self.header.setText(visit_heading(view, "near addition"))
        rows = []
        for eye in ("OD", "OS"):
            e = view.eyes[eye]
            if not e.finished:
                rows.append(f"{eye_title(eye)}: not refracted")
                continue
            add = near.adds.get(eye) if near is not None else None
            rows.append(
                f"{eye_title(eye)}: distance {lens_or_dash(e.final)}"
                + (f"  \u00b7  {near_add_line(add)}" if add is not None else "  \u00b7  add not filed yet")
            )
        self.distance_rx.setText("\n".join(rows))
        begun = near is not None and near.begun
        distance = near.distance_cm if near is not None else 40.0
        self.skip_box.setVisible(not begun)
        self.method.setText(f"Method: {near.method}" if near is not None and near.method else "")
        for w in (self.lens, self.letter, self.size, self.geometry_note, self.prompt, self.answers):
            w.setVisible(begun and q is not None)
        self.simulated_reply.setVisible(begun and q is not None and q.simulated_correct is not None)
        if not begun:
            self.title.setText("Near addition (reading)")
            self.title.setStyleSheet("background:#37474f; color:white; padding:6px 14px; border-radius:4px;")
            self.body.setText(
                f"Both eyes' distance prescriptions are done. The near addition for reading is "
                f"measured at {distance:g} cm, each eye in turn through its distance prescription "
                "(the other eye occluded). Press Enter to begin, or type why it is not done."
            )
            self.skip_reason.clear()
            self.legend.setText("Enter/Space  begin the near addition")
            return
        if q is None:
            self.title.setText("Near addition: filing\u2026")
            self.body.setText("")
            self.legend.setText("")
            return
        self.title.setText(
            f"Near \u00b7 {eye_title(q.eye)} \u00b7 letter {q.index + 1}"
            + (" (check through the add)" if q.phase == "check" else "")
        )
        self.title.setStyleSheet(eye_badge_style(q.eye))
        other = "OS" if q.eye == "OD" else "OD"
        self.body.setText(
            f"Occlude the {EYE_NAMES[other].lower()} ({other}); the patient holds the near screen at "
            f"{q.distance_cm:g} cm. Set before the {EYE_NAMES[q.eye].lower()} ({q.eye}):"
        )
        self.lens.setText(lens_over_text(q.add_d))
        self.letter.setText(q.letter)
        px = "" if q.height_px is None else f" = {q.height_px:.1f} px"
        self.size.setText(
            f"Show the letter {q.letter} at {q.size_logmar:+.2f} logMAR at {q.distance_cm:g} cm: "
            f"{q.height_mm:.2f} mm tall{px}".replace("-", MINUS)
        )
        self.geometry_note.setText(q.geometry)
        self.prompt.setText("Did the patient read it?   +  right      \u2212  wrong")
        if q.simulated_correct is not None:
            said = "reads it right (+)" if q.simulated_correct else f"gets it wrong ({MINUS})"
            self.simulated_reply.setText(f"Simulated patient {said}; Enter types it.")
        n = near.answers if near is not None else {}
        self.answers.setText("Answers so far (recorded): " + ", ".join(f"{e} {n.get(e, 0)}" for e in ("OD", "OS")))
        enter = "    Enter/Space  the simulated patient's answer" if q.simulated_correct is not None else ""
        self.legend.setText(f"+  read right    -  wrong{enter}")

    def _skip(self) -> None:
        self.skip_requested.emit(self.skip_reason.text().strip())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        emit_key(event, self.key_pressed)
