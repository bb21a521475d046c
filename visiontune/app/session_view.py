"""The session view: the lens to set, large; the letter; progress, estimate and live plots.

Keys pressed anywhere in the view arrive as ``key_pressed(name, text, ctrl)`` (see
:mod:`visiontune.app.keys`); the view itself records nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from visiontune.app.keys import legend
from visiontune.app.plots import AcuityCurvePlot, AcuityMapPlot, PsychometricPlot
from visiontune.app.worker import EstimateView, Snapshot
from visiontune.optics import Prescription
from visiontune.optics.acuity_units import format_snellen

SIMULATED_TEXT = "SIMULATED: a simulated patient answers. Not a clinical record."

_KEY_NAMES = {
    Qt.Key.Key_Return: "Return", Qt.Key.Key_Enter: "Enter", Qt.Key.Key_Space: "Space",
    Qt.Key.Key_Backspace: "Backspace", Qt.Key.Key_Escape: "Escape", Qt.Key.Key_Plus: "Plus",
    Qt.Key.Key_Minus: "Minus",
}  # fmt: skip


def key_name(key: int) -> str:
    """A Qt key code as the name :func:`visiontune.app.keys.interpret_key` expects."""
    key = Qt.Key(key)
    if key in _KEY_NAMES:
        return _KEY_NAMES[key]
    if Qt.Key.Key_A.value <= key.value <= Qt.Key.Key_Z.value:
        return chr(key.value)
    return key.name.removeprefix("Key_") if hasattr(key, "name") else str(key.value)


def lens_text(lens: Prescription) -> str:
    """``S −1.25 / C −0.50 × 180`` (U+2212 minus, U+00D7 times)."""
    return lens.format(unicode_minus=True).replace(" x ", " \u00d7 ")


def acuity_text(logmar: float, chart_range: tuple[float, float] | None = None) -> str:
    """``+0.30 logMAR (20/40)``; at an edge of ``chart_range`` the value is a bound, said so."""
    text = f"{logmar:+.2f} logMAR ({format_snellen(logmar)})"
    if chart_range is not None and logmar <= chart_range[0] + 1e-9:
        text = f"{chart_range[0]:+.2f} logMAR or better (the smallest letter of the chart)"
    elif chart_range is not None and logmar >= chart_range[1] - 1e-9:
        text = f"{chart_range[1]:+.2f} logMAR or worse (the largest letter of the chart)"
    return text.replace("-", "\u2212")


def _label(text: str = "", point_size: float | None = None, bold: bool = False, name: str = "") -> QLabel:
    label = QLabel(text)
    if point_size is not None or bold:
        font = QFont(label.font())
        if point_size is not None:
            font.setPointSizeF(point_size)
        font.setBold(bold)
        label.setFont(font)
    if name:
        label.setObjectName(name)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
    return label


class SessionView(QWidget):
    key_pressed = Signal(str, str, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.chart_range: tuple[float, float] | None = None
        self.banner = _label(SIMULATED_TEXT, 12, True, "simulatedBanner")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.banner.setStyleSheet("background:#f5a623; color:#222; padding:4px; border-radius:3px;")
        self.header = _label("", 11, False, "sessionHeader")
        self.lens_caption = _label("Set the lens", 12, False)
        self.lens = _label("", 40, True, "lensLabel")
        self.instruction = _label("", 15, False, "instruction")
        self.instruction.setWordWrap(True)
        self.letter = _label("", 20, True, "letterLabel")
        self.simulated_reply = _label("", 14, False, "simulatedReply")
        self.legend = _label("", 9, False, "keyLegend")
        self.legend.setStyleSheet("color:#555; font-family:monospace;")

        self.progress = _label("", 13, True, "progress")
        self.elapsed = _label("", 12, False, "elapsed")
        self.estimate = _label("Estimate: after the first answer", 13, True, "estimate")
        self.interval = _label("", 11, False, "interval")
        self.acuity = _label("", 11, False, "acuity")
        for w in (self.estimate, self.interval, self.acuity):
            w.setWordWrap(True)

        left = QVBoxLayout()
        for w in (self.header, self.lens_caption, self.lens, self.instruction, self.letter, self.simulated_reply):
            left.addWidget(w)
        left.addStretch(1)
        left.addWidget(self.legend)
        right_frame = QFrame()
        right_frame.setFrameShape(QFrame.Shape.StyledPanel)
        right_frame.setMinimumWidth(420)
        right = QVBoxLayout(right_frame)
        for w in (self.progress, self.elapsed, self.estimate, self.interval, self.acuity):
            right.addWidget(w)
        right.addStretch(1)
        top = QHBoxLayout()
        top.addLayout(left, 3)
        top.addWidget(right_frame, 2)

        self.map_plot = AcuityMapPlot()
        self.curve_plot = AcuityCurvePlot()
        self.psychometric_plot = PsychometricPlot()
        plots = QGridLayout()
        for i, w in enumerate((self.map_plot, self.curve_plot, self.psychometric_plot)):
            w.setMinimumHeight(260)
            plots.addWidget(w, 0, i)
        plots.setColumnStretch(0, 5)
        plots.setColumnStretch(1, 3)
        plots.setColumnStretch(2, 3)

        outer = QVBoxLayout(self)
        outer.addWidget(self.banner)
        outer.addLayout(top)
        outer.addLayout(plots, 1)
        for child in self.findChildren(QWidget):
            child.setFocusPolicy(Qt.FocusPolicy.NoFocus)

    # ------------------------------------------------------------------ updates
    def show_snapshot(self, snap: Snapshot) -> None:
        self.banner.setVisible(snap.simulated)
        kind = "SIMULATED patient" if snap.simulated else "patient"
        self.header.setText(f"Session {snap.session_id} \u00b7 {kind} {snap.patient_id} \u00b7 eye {snap.eye} "
                            f"\u00b7 protocol {snap.protocol_name}")  # fmt: skip
        self.progress.setText(f"Answers: {snap.n_trials} / {snap.max_trials}")
        self.legend.setText(legend(snap.letters))
        self.chart_range = snap.context_box
        self.map_plot.set_box(snap.box)
        self.curve_plot.setXRange(0, max(10, snap.n_trials + 2), padding=0)
        if snap.query is not None:
            self.lens.setText(lens_text(snap.query.lens))

    def show_estimate(self, view: EstimateView, true_p=None) -> None:
        est = view.estimate
        self.estimate.setText(f"Best lens now: {lens_text(est.lens)}")
        if est.region is not None:
            r = est.region
            pct = round(100 * r.level)
            self.interval.setText(
                f"{pct}% credible interval: sphere {r.sphere_d[0]:+.2f} to {r.sphere_d[1]:+.2f} D, "
                f"cylinder {r.cylinder_d[0]:+.2f} to {r.cylinder_d[1]:+.2f} D".replace("-", "\u2212")
            )
        lo, hi = est.va_interval
        self.acuity.setText(f"Predicted acuity through it: {acuity_text(est.va_logmar, self.chart_range)}; "
                            f"interval {lo:+.2f} to {hi:+.2f}".replace("-", "\u2212"))  # fmt: skip
        self.map_plot.update_view(view)
        self.curve_plot.update_view(view)
        self.psychometric_plot.update_view(view, true_p)

    def set_elapsed(self, seconds: float) -> None:
        m, s = divmod(int(seconds), 60)
        h, m = divmod(m, 60)
        self.elapsed.setText(f"Elapsed: {h:d}:{m:02d}:{s:02d}" if h else f"Elapsed: {m:02d}:{s:02d}")

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.isAutoRepeat():
            event.accept()
            return
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        self.key_pressed.emit(key_name(event.key()), event.text(), ctrl)
        event.accept()
