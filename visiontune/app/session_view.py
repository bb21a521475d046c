"""The session view: the lens to set, large; the letter; progress, estimate and live plots.

Keys pressed anywhere in the view arrive as ``key_pressed(name, text, ctrl)`` (see
:mod:`visiontune.app.logic.keys`); the view itself records nothing.

Cheap updates (the GUI thread spends a few milliseconds at most): every label keeps a fixed minimum height (its lines at
its font), so a text that appears, vanishes or wraps never re-lays out the window and never resizes the
plots (a resized pyqtgraph view repaints everything, axes and tick labels included); the
estimate arrives ready to draw (texts and arrays built by the engine); and the three plots are
drawn one per event-loop pass, :data:`PLOT_STEP_MS` apart, with the latest estimate, so one
estimate (and the page's first paint when it is shown) is three short stalls, never one long one. The plots' axes are
cached as pixmaps (:mod:`visiontune.app.plots`): Qt keeps those in ``QPixmapCache``, whose default 10 MB
limit is less than the 13 axis pixmaps of this view (about 1 MB each with the grid on), so
the view raises it to :data:`PIXMAP_CACHE_KB`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QFont, QKeyEvent, QPixmapCache, QShowEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from visiontune.app.logic.keys import legend
from visiontune.app.logic.session_controller import LineView, SliderView, slider_notes
from visiontune.app.logic.texts import MINUS, acuity_text, answers_text, device_text, lens_text, start_text, stop_text
from visiontune.app.plots import AcuityCurvePlot, AcuityMapPlot, PsychometricPlot
from visiontune.app.worker import EstimateView, Snapshot
from visiontune.refraction.lenses import in_form
from visiontune.refraction.loop import PendingComparison, PendingSlider
from visiontune.session.trial_text import held_text

__all__ = [
    "EYE_COLOURS",
    "SIMULATED_TEXT",
    "SessionView",
    "acuity_text",
    "emit_key",
    "eye_badge_style",
    "eye_text",
    "key_name",
    "lens_text",
]

SIMULATED_TEXT = "SIMULATED: a simulated patient answers. Not a clinical record."
#: Background of each eye's badge (white text): one colour per eye, the same on every page.
EYE_COLOURS = {"OD": "#b3261e", "OS": "#1f5fa8", "OU": "#2e6b30"}
_EYE_WORDS = {
    "OD": ("RIGHT EYE", "occlude the left eye"),
    "OS": ("LEFT EYE", "occlude the right eye"),
    "OU": ("BOTH EYES", "both eyes open"),
}


def eye_badge_style(eye: str) -> str:
    return f"background:{EYE_COLOURS.get(eye, '#444')}; color:white; padding:4px 14px; border-radius:4px;"


def eye_text(eye: str) -> str:
    """The session view's eye badge: ``RIGHT EYE (OD) · occlude the left eye``."""
    name, other = _EYE_WORDS.get(eye, (eye, ""))
    return f"{name} ({eye}) \u00b7 {other}" if other else f"{name} ({eye})"


#: Delay between drawing one plot and the next (ms): lets the event loop run in between.
PLOT_STEP_MS = 1
#: Qt's pixmap cache limit (KiB) while a session view exists: room for every cached axis.
PIXMAP_CACHE_KB = 64 * 1024

#: What a slider's knob turns, as its scale reads (the lens in the clinic's cylinder form).
_KNOB_VALUE = {
    "sphere": lambda lens: f"{lens.sphere_d:+.2f}",
    "cylinder": lambda lens: f"{lens.cylinder_d:+.2f}",
    "axis": lambda lens: f"{round(float(lens.axis_deg)) % 180 or 180:03d}",
}

_KEY_NAMES = {
    Qt.Key.Key_Return: "Return",
    Qt.Key.Key_Enter: "Enter",
    Qt.Key.Key_Space: "Space",
    Qt.Key.Key_Backspace: "Backspace",
    Qt.Key.Key_Escape: "Escape",
    Qt.Key.Key_Plus: "Plus",
    Qt.Key.Key_Minus: "Minus",
}


def key_name(key: int) -> str:
    """A Qt key code as the name :func:`visiontune.app.logic.keys.interpret_key` expects."""
    key = Qt.Key(key)
    if key in _KEY_NAMES:
        return _KEY_NAMES[key]
    if Qt.Key.Key_A.value <= key.value <= Qt.Key.Key_Z.value:
        return chr(key.value)
    return key.name.removeprefix("Key_") if hasattr(key, "name") else str(key.value)


def emit_key(event: QKeyEvent, key_pressed: SignalInstance) -> None:
    """Emit ``key_pressed(name, text, ctrl)`` for a key pressed on a page (:func:`key_name`); a key
    held down is not repeated."""
    if event.isAutoRepeat():
        event.accept()
        return
    ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
    key_pressed.emit(key_name(event.key()), event.text(), ctrl)
    event.accept()


def _label(
    text: str = "", point_size: float | None = None, bold: bool = False, name: str = "", lines: int = 1
) -> QLabel:
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
    # room for ``lines`` lines whatever the text: a label that grows or shrinks re-lays out the window
    label.setMinimumHeight(lines * label.fontMetrics().lineSpacing() + 2 * label.margin() + 2)
    return label


class SessionView(QWidget):
    """``key_pressed(name, text, ctrl)``; ``retry_requested()``: the lens device's Retry button;
    ``device_lens_requested(position)``: a comparison's Lens 1 / Lens 2 button (0 / 1);
    ``manual_requested()``: after a device fault, go on with the trial frame."""

    key_pressed = Signal(str, str, bool)
    retry_requested = Signal()
    device_lens_requested = Signal(int)
    manual_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        QPixmapCache.setCacheLimit(max(QPixmapCache.cacheLimit(), PIXMAP_CACHE_KB))
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.chart_range: tuple[float, float] | None = None
        self.banner = _label(SIMULATED_TEXT, 12, True, "simulatedBanner")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.banner.setStyleSheet("background:#f5a623; color:#222; padding:4px; border-radius:3px;")
        self.header = _label("", 11, False, "sessionHeader")
        self.eye_badge = _label("", 22, True, "eyeBadge")  # which eye: large, in the eye's colour
        self.lens_caption = _label("Set the lens", 12, False)
        self.lens = _label("", 40, True, "lensLabel")
        self.instruction = _label("", 15, False, "instruction", lines=2)
        self.instruction.setWordWrap(True)
        self.letter = _label("", 20, True, "letterLabel")
        self.simulated_reply = _label("", 14, False, "simulatedReply")
        # a slider's knob scale: the power or axis of each click, the one the knob is at highlighted
        self.slider_path = _label("", 13, False, "sliderPath", lines=3)
        self.slider_path.setWordWrap(True)
        self.slider_path.setTextFormat(Qt.TextFormat.RichText)
        self.legend = _label("", 9, False, "keyLegend", lines=4)  # keys.legend: 4 lines, 5 with clashes
        self.legend.setStyleSheet("color:#555; font-family:monospace;")

        self.progress = _label("", 13, True, "progress")
        self.start_line = _label("", 11, False, "startLine", lines=2)
        self.start_line.setWordWrap(True)
        self.elapsed = _label("", 12, False, "elapsed")
        self.precision_bar = QProgressBar()
        self.precision_bar.setObjectName("precisionBar")
        self.precision_bar.setRange(0, 100)
        self.precision_bar.setValue(0)
        self.precision_bar.setTextVisible(True)
        self.precision_bar.setFormat("%p%")
        self.precision_bar.setFixedHeight(self.precision_bar.sizeHint().height())
        self.precision = _label("Precision stop: after the first answer", 11, False, "precisionText", lines=2)
        self.precision.setWordWrap(True)
        self.stop = _label(stop_text(None), 11, True, "stopReason", lines=2)
        self.stop.setWordWrap(True)
        self.estimate = _label("Estimate: after the first answer", 13, True, "estimate", lines=2)
        self.interval = _label("", 11, False, "interval", lines=2)
        self.acuity = _label("", 11, False, "acuity", lines=3)
        for w in (self.estimate, self.interval, self.acuity):
            w.setWordWrap(True)

        # the lens device: what it is, the lenses it confirmed, a fault and its Retry
        self.device_state = _label("", 9, False, "deviceState", lines=6)
        self.device_state.setWordWrap(True)
        self.device_state.setStyleSheet("background:#eef3f8; padding:4px; border-radius:3px;")
        self.device_fault = _label("", 11, True, "deviceFault", lines=3)
        self.device_fault.setWordWrap(True)
        self.device_fault.setStyleSheet("color:#b00020;")
        self.retry_button = QPushButton("Retry the lens device")
        self.retry_button.setObjectName("deviceRetry")
        self.retry_button.clicked.connect(self.retry_requested)
        self.manual_button = QPushButton("Use the trial frame")
        self.manual_button.setObjectName("deviceManual")
        self.manual_button.setToolTip("Go on with the manual trial frame or phoropter (you set each lens)")
        self.manual_button.clicked.connect(self.manual_requested)
        self.lens_buttons = []
        for k in range(2):
            button = QPushButton(f"Lens {k + 1} on the device")
            button.setObjectName(f"deviceLens{k + 1}")
            button.clicked.connect(lambda _checked=False, k=k: self.device_lens_requested.emit(k))
            self.lens_buttons.append(button)
        for w in (self.device_state, self.device_fault, self.retry_button, self.manual_button, *self.lens_buttons):
            policy = w.sizePolicy()
            # shown and hidden without a re-layout; the lens buttons share the fault's row (its height)
            policy.setRetainSizeWhenHidden(w not in self.lens_buttons)
            policy.setHorizontalPolicy(QSizePolicy.Policy.Preferred)
            w.setSizePolicy(policy)
            w.setVisible(False)

        left = QVBoxLayout()
        # the knob's scale beside the lens (no taller page: the plots keep their size)
        lens_row = QHBoxLayout()
        lens_row.addWidget(self.lens, 0)
        lens_row.addWidget(self.slider_path, 1)
        for w in (self.eye_badge, self.header, self.lens_caption):
            left.addWidget(w)
        left.addLayout(lens_row)
        for w in (self.instruction, self.letter, self.simulated_reply):
            left.addWidget(w)
        fault_row = QHBoxLayout()  # a fault and its Retry, or a comparison's lens buttons: never both at once
        for button in self.lens_buttons:
            fault_row.addWidget(button, 0)
        fault_row.addWidget(self.device_fault, 1)
        fault_buttons = QVBoxLayout()
        fault_buttons.addWidget(self.retry_button)
        fault_buttons.addWidget(self.manual_button)
        fault_row.addLayout(fault_buttons, 0)
        left.addLayout(fault_row)
        left.addStretch(1)
        left.addWidget(self.legend)
        right_frame = QFrame()
        right_frame.setFrameShape(QFrame.Shape.StyledPanel)
        right_frame.setMinimumWidth(420)
        right = QVBoxLayout(right_frame)
        for w in (
            self.progress,
            self.start_line,
            self.elapsed,
            self.estimate,
            self.interval,
            self.acuity,
            self.precision,
            self.precision_bar,
            self.stop,
            self.device_state,
        ):
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
            policy = w.sizePolicy()
            policy.setRetainSizeWhenHidden(True)  # shown one per step (showEvent) without a re-layout
            w.setSizePolicy(policy)
            plots.addWidget(w, 0, i)
        plots.setColumnStretch(0, 5)
        plots.setColumnStretch(1, 3)
        plots.setColumnStretch(2, 3)

        # Plots still to draw with the latest frame, in order; one per step of the timer.
        self._frame = None
        self._dirty: list = []
        self._hidden: list = []
        self.plot_timer = QTimer(self)
        self.plot_timer.setSingleShot(True)
        self.plot_timer.setInterval(PLOT_STEP_MS)
        self.plot_timer.timeout.connect(self._plot_step)

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
        visit = f"Visit {snap.visit_id} \u00b7 " if snap.visit_id is not None else ""
        self.header.setText(
            f"{visit}Session {snap.session_id} \u00b7 {kind} {snap.patient_id} \u00b7 eye {snap.eye} "
            f"\u00b7 protocol {snap.protocol_name}"
        )
        self.eye_badge.setText(eye_text(snap.eye))
        self.eye_badge.setStyleSheet(eye_badge_style(snap.eye))
        self.show_answers(snap.n_trials, snap.max_trials)
        unused = " (not used by this protocol's fixed-axis model)" if snap.model_type == "gp" and snap.start.rx else ""
        self.start_line.setText(
            f"Starting prescription: {start_text(snap.start, snap.cylinder_form)}{unused} "
            f"\u00b7 lenses in {snap.cylinder_form}-cylinder form"
        )
        self.stop.setText(stop_text(snap.stop_reason))
        self.legend.setText(legend(snap.letters))
        self.chart_range = snap.context_box
        self.psychometric_plot.ranges.set(x=snap.context_box)  # the letter sizes: no change at the first estimate
        if snap.n_trials == 0:
            self.precision.setText("Precision stop: after the first answer")
            self.precision_bar.setValue(0)
        q = snap.query
        self.slider_path.setText("")
        if isinstance(q, PendingSlider):
            lenses = tuple(in_form(x, snap.cylinder_form) for x in q.lenses)
            self.show_slider(SliderView(q.knob, lenses, q.start, q.start))
        elif isinstance(q, PendingComparison) and q.frame_lens is not None:
            form = snap.cylinder_form
            self.lens.setText(held_text(q.lens1, q.lens2, q.frame_lens, lambda x: lens_text(in_form(x, form)), MINUS))
        elif isinstance(q, PendingComparison):
            self.lens.setText(
                f"1: {lens_text(in_form(q.lens1, snap.cylinder_form))}\n"
                f"2: {lens_text(in_form(q.lens2, snap.cylinder_form))}"
            )
        elif q is not None:
            self.lens.setText(lens_text(in_form(q.lens, snap.cylinder_form)))

    def show_device(self, view) -> None:
        """The lens device's state (:func:`~visiontune.app.logic.texts.device_text`)."""
        self.device_state.setText(device_text(view))
        self.device_state.setVisible(True)

    def show_device_fault(self, message: str | None) -> None:
        """A device fault and its Retry (``None``: no fault, both hidden)."""
        self.device_fault.setText("" if message is None else f"Lens device fault: {message}")
        for w in (self.device_fault, self.retry_button, self.manual_button):
            w.setVisible(message is not None)

    def show_lens_buttons(self, count: int) -> None:
        """Show the first ``count`` of the device's lens buttons (0: none)."""
        for k, button in enumerate(self.lens_buttons):
            button.setVisible(k < count)

    def show_answers(self, count: int, budget: int) -> None:
        """The count of answers recorded (:func:`~visiontune.app.logic.texts.answers_text`)."""
        self.progress.setText(answers_text(count, budget))

    def show_slider(self, view: SliderView) -> None:
        """A slider's knob: the lens it is at, large; under it the knob's scale as a phoropter
        shows it, the value the knob turns (sphere or cylinder power, or axis) at each click, the
        one it is at highlighted (the start and the simulated patient's choice noted), one click a
        line, in the knob's order."""
        self.lens.setText(f"{view.knob}: {lens_text(view.lenses[view.position])}")
        parts = []
        for i, lens in enumerate(view.lenses):
            notes = slider_notes(view, i)
            text = _KNOB_VALUE[view.knob](lens).replace("-", MINUS) + (f" {notes}" if notes else "")
            if i == view.position:
                text = f"<span style='background:#ffe08a; font-weight:bold'>&#9654; {text}</span>"
            parts.append(text)
        unit = "axis (\u00b0)" if view.knob == "axis" else f"{view.knob} (D)"
        self.slider_path.setText(f"{unit}:<br>" + "<br>".join(parts))

    def show_line(self, view: LineView) -> None:
        """A chart line on the letter's line of the page (no new row: the page never re-lays out):
        each letter of the line in reading order with what was keyed for it (a green + right, a red
        \u2212 wrong, a grey _ not yet), then the line's size. The simulated patient's answers are on
        the simulated reply's line."""
        cells = []
        for j, letter in enumerate(view.letters):
            if j < len(view.marks):
                sign, colour = ("+", "#1e8c3c") if view.marks[j] else (MINUS, "#c82828")
            else:
                sign, colour = ("_", "#999999")
            cells.append(f"{letter}<span style='color:{colour}'>{sign}</span>")
        self.letter.setText("&nbsp;&nbsp;".join(cells) + f"&nbsp;&nbsp;&nbsp;{acuity_text(view.s_logmar)}")

    @property
    def plots(self) -> tuple:
        return (self.map_plot, self.curve_plot, self.psychometric_plot)

    def show_estimate(self, view: EstimateView) -> None:
        """Show an estimate: its texts at once, its plots one per step (see module doc); the
        texts and arrays come ready to draw (``view.frame``)."""
        frame = view.frame
        self.estimate.setText(frame.texts.best_lens)
        if frame.texts.interval:
            self.interval.setText(frame.texts.interval)
        self.acuity.setText(frame.texts.acuity)
        if frame.texts.progress:
            self.precision.setText(frame.texts.progress)
        self.precision_bar.setValue(round(100 * frame.progress))
        self._frame = frame
        self._dirty = list(self.plots)
        self.plot_timer.start()

    @property
    def plots_pending(self) -> bool:
        """True while a plot still waits to be shown or drawn."""
        return bool(self._hidden or self._dirty)

    def _plot_step(self) -> None:
        if self._hidden:
            self._hidden.pop(0).setVisible(True)
        elif self._dirty:
            self._dirty.pop(0).update_frame(self._frame)
        if self.plots_pending:
            self.plot_timer.start()

    def showEvent(self, event: QShowEvent) -> None:
        """When the page is shown, show its plots one per step: the page's first paint is then
        the labels only, and each plot's first paint (its axes re-rendered: Qt drops the
        item caches of a hidden view) gets an event-loop pass of its own."""
        super().showEvent(event)
        if event.spontaneous():
            return
        self._hidden = list(self.plots)  # all of them, also those still hidden by a previous show
        for p in self._hidden:
            p.setVisible(False)
        self.plot_timer.start()

    def set_elapsed(self, seconds: float) -> None:
        m, s = divmod(int(seconds), 60)
        h, m = divmod(m, 60)
        self.elapsed.setText(f"Elapsed: {h:d}:{m:02d}:{s:02d}" if h else f"Elapsed: {m:02d}:{s:02d}")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        emit_key(event, self.key_pressed)
