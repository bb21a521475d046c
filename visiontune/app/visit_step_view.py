"""The visit's pages between the refractions: the next eye, and the binocular balance question.

Keys pressed on the page arrive as ``key_pressed(name, text, ctrl)`` (interpreted by
:func:`~visiontune.app.logic.visit_flow.interpret_visit_key`); the page records nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from visiontune.app.logic.texts import lens_text
from visiontune.app.logic.visit_flow import ANSWER_WORDS, EYE_NAMES, OTHER_EYE, VisitView, eye_title, lens_or_dash
from visiontune.app.session_view import EYE_COLOURS, SIMULATED_TEXT, emit_key, eye_badge_style

__all__ = [
    "EYE_COLOURS",
    "VisitStepView",
    "eye_badge_style",
    "keys_to_page",
    "simulated_banner",
    "visit_heading",
    "wrapped_label",
]


def wrapped_label(
    text: str = "", point_size: float = 12, bold: bool = False, name: str = "", wrap: bool = True
) -> QLabel:
    """A label of the visit's pages: ``point_size`` pt, bold or not, wrapped unless ``wrap`` is false,
    named ``name`` (the tests find it by that)."""
    label = QLabel(text)
    font = QFont(label.font())
    font.setPointSizeF(point_size)
    font.setBold(bold)
    label.setFont(font)
    label.setWordWrap(wrap)
    if name:
        label.setObjectName(name)
    return label


def simulated_banner(name: str) -> QLabel:
    """The banner of a visit's page with a simulated patient
    (:data:`~visiontune.app.session_view.SIMULATED_TEXT`), named ``name``."""
    banner = wrapped_label(SIMULATED_TEXT, 12, True, name)
    banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
    banner.setStyleSheet("background:#f5a623; color:#222; padding:4px; border-radius:3px;")
    return banner


def visit_heading(view: VisitView, what: str) -> str:
    """``Visit 3 · patient P-1 · age 52 · <what>``: the header of a visit's page (no age when not given)."""
    age = "" if view.age_years is None else f" \u00b7 age {view.age_years}"
    return f"Visit {view.visit_id} \u00b7 {view.kind} {view.patient_id}{age} \u00b7 {what}"


def keys_to_page(page: QWidget, *typed: QWidget) -> None:
    """Leave the keyboard focus to ``page`` and the ``typed`` widgets: no other child of it takes it."""
    for child in page.findChildren(QWidget):
        if child not in typed:
            child.setFocusPolicy(Qt.FocusPolicy.NoFocus)


class VisitStepView(QWidget):
    """The next eye ("occlude the right eye, press Enter"; or skip it with a reason) and the
    balance question ("which eye sees the line more clearly? R / L / ="). Emits
    ``key_pressed(name, text, ctrl)`` and ``skip_requested(eye, reason)``."""

    key_pressed = Signal(str, str, bool)
    skip_requested = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._eye: str | None = None
        self.banner = simulated_banner("visitBanner")
        self.header = wrapped_label("", 11, False, "visitHeader")
        self.title = wrapped_label("", 30, True, "visitTitle")
        self.body = wrapped_label("", 15, False, "visitBody")
        # the balance: the lens before each eye, right eye on the left as on a prescription
        self.lens_od = wrapped_label("", 16, True, "balanceLensOD")
        self.lens_os = wrapped_label("", 16, True, "balanceLensOS")
        lenses = QGridLayout()
        self.lens_titles = {}
        for col, (eye, lens) in enumerate((("OD", self.lens_od), ("OS", self.lens_os))):
            title = wrapped_label(eye_title(eye), 15, True, f"balanceEye{eye}", wrap=False)
            title.setStyleSheet(eye_badge_style(eye))
            title.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.lens_titles[eye] = title
            lenses.addWidget(title, 0, col)
            lenses.addWidget(lens, 1, col)
        lenses.setHorizontalSpacing(40)
        self.lenses = QFrame()
        self.lenses.setLayout(lenses)
        self.prompt = wrapped_label("", 22, True, "balancePrompt")
        self.prompt.setStyleSheet("background:#eef3e8; padding:10px; border-radius:4px;")
        self.simulated_reply = wrapped_label("", 15, False, "balanceSimulatedReply")
        self.answers = wrapped_label("", 12, False, "balanceAnswers")
        self.method = wrapped_label("", 10, False, "balanceMethod")
        self.method.setStyleSheet("color:#555;")
        # the next eye may be skipped instead, with its reason
        self.skip_reason = QLineEdit()
        self.skip_reason.setObjectName("skipReason")
        self.skip_reason.setPlaceholderText("reason, e.g. prosthetic eye, amblyopic eye")
        self.skip_reason.returnPressed.connect(self._skip)
        self.skip_button = QPushButton("Skip this eye")
        self.skip_button.setObjectName("skipButton")
        self.skip_button.clicked.connect(self._skip)
        self.skip_caption = wrapped_label("", 11, False, wrap=False)
        skip_row = QHBoxLayout()
        skip_row.addWidget(self.skip_caption)
        skip_row.addWidget(self.skip_reason, 1)
        skip_row.addWidget(self.skip_button)
        self.skip_box = QFrame()
        self.skip_box.setLayout(skip_row)
        self.legend = wrapped_label("", 10, False, "visitLegend")
        self.legend.setStyleSheet("color:#555; font-family:monospace;")

        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addWidget(self.header)
        layout.addSpacing(12)
        layout.addWidget(self.title)
        layout.addWidget(self.body)
        layout.addSpacing(8)
        layout.addWidget(self.lenses)
        layout.addSpacing(8)
        layout.addWidget(self.prompt)
        layout.addWidget(self.simulated_reply)
        layout.addWidget(self.answers)
        layout.addWidget(self.skip_box)
        layout.addStretch(1)
        layout.addWidget(self.method)
        layout.addWidget(self.legend)
        keys_to_page(self, self.skip_reason, self.skip_button)

    # ------------------------------------------------------------------ pages
    def _common(self, view: VisitView) -> None:
        self.banner.setVisible(view.simulated)
        self.header.setText(visit_heading(view, f"lenses in {view.cylinder_form}-cylinder form"))

    def show_next_eye(self, view: VisitView) -> None:
        """Between the eyes: which eye comes next and what to occlude."""
        self._common(view)
        eye = view.eye
        self._eye = eye
        other = OTHER_EYE[eye]
        done = view.eyes[other]
        self.title.setText(f"Next: {eye_title(eye)}")
        self.title.setStyleSheet(eye_badge_style(eye))
        if done.finished:
            before = (
                f"The {EYE_NAMES[other].lower()} ({other}) is done: {lens_or_dash(done.found)} "
                f"({done.answers} answers). "
            )
        elif done.state == "skipped":
            before = f"The {EYE_NAMES[other].lower()} ({other}) is not refracted ({done.skip_reason}). "
        else:
            before = ""
        answers = view.eyes[eye].answers
        resume = f" (its {answers} answers so far are kept)" if answers else ""
        self.body.setText(
            f"{before}Occlude the {EYE_NAMES[other].lower()} ({other}), then press Enter to refract "
            f"the {EYE_NAMES[eye].lower()} ({eye}){resume}."
        )
        self.skip_caption.setText(f"Or do not refract the {EYE_NAMES[eye].lower()} ({eye}); why:")
        self.skip_reason.clear()
        for w in (self.lenses, self.prompt, self.simulated_reply, self.answers, self.method):
            w.setVisible(False)
        self.skip_box.setVisible(True)
        self.skip_button.setText(f"Skip {eye}")
        self.legend.setText("Enter/Space  start the next eye")

    def show_question(self, view: VisitView) -> None:
        """The balance question: the fogged lenses before each eye, the question, the keys."""
        self._common(view)
        q = view.question
        self.title.setText(f"Binocular balance \u00b7 question {q.index + 1}")
        self.title.setStyleSheet("background:#37474f; color:white; padding:6px 14px; border-radius:4px;")
        self.body.setText(
            "Both eyes refracted. Set these lenses (each eye's end point plus the fog and the "
            "balance so far), show a line a little above the best acuity, occlude each eye in turn "
            "and ask:"
        )
        for eye, label, plus in (("OD", self.lens_od, q.plus_od_d), ("OS", self.lens_os, q.plus_os_d)):
            lens = q.lens_od if eye == "OD" else q.lens_os
            label.setText(f"{lens_text(lens)}\n(end point +{plus:.2f} D)")
        self.prompt.setText("Which eye sees the line more clearly?\nR  right eye    L  left eye    =  equal")
        if q.simulated_answer is not None:
            self.simulated_reply.setText(
                f"Simulated patient says: {_key_of(q.simulated_answer)} "
                f"({ANSWER_WORDS[q.simulated_answer]}); Enter types it."
            )
        else:
            self.simulated_reply.setText("")
        done = [
            f"{i + 1}: OD +{od:.2f} D, OS +{os_:.2f} D \u2192 {ANSWER_WORDS[c]}"
            for i, (od, os_, c) in enumerate(view.balance.answers)
        ]
        self.answers.setText(("Answers so far (recorded):  " + ";   ".join(done)) if done else "")
        self.method.setText(
            f"Method: {view.balance.method}: +0.25 D before the clearer eye until both look equal; "
            "the fog is then removed."
        )
        for w in (self.lenses, self.prompt, self.simulated_reply, self.answers, self.method):
            w.setVisible(True)
        self.simulated_reply.setVisible(q.simulated_answer is not None)
        self.skip_box.setVisible(False)
        enter = "    Enter/Space  the simulated patient's answer" if q.simulated_answer is not None else ""
        self.legend.setText(
            f"R  right eye clearer    L  left eye clearer    =  equal (or E){enter}\n"
            "N  no balance (recorded as not done)"
        )

    # ------------------------------------------------------------------ input
    def _skip(self) -> None:
        if self._eye is not None:
            self.skip_requested.emit(self._eye, self.skip_reason.text().strip())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        emit_key(event, self.key_pressed)


def _key_of(answer: str) -> str:
    return {"OD": "R", "OS": "L", "equal": "="}[answer]
