"""Calibration wizard: the patient screen's pixel pitch (from its size, or by matching an
on-screen rectangle to an ID-1 card), the viewing distance and the mirror flag.

Pitch from a card (ISO/IEC 7810 ID-1, 85.60 x 53.98 mm): the rectangle's width in device
pixels when it matches the card gives ``pitch = 85.60 mm / width_px``
(:meth:`visiontune.display.Calibration.from_card`). The result is validated by
:class:`~visiontune.display.Calibration` and saved with
:func:`~visiontune.display.save_calibration`.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QRadioButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from visiontune.display import Calibration
from visiontune.display.calibration import CARD_HEIGHT_MM, CARD_WIDTH_MM
from visiontune.errors import CalibrationError


class CardRectangle(QWidget):
    """A rectangle of the ID-1 card's aspect ratio, ``width_px`` device pixels wide."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.width_px = 320.0
        self.setMinimumHeight(260)

    def set_width_px(self, value: float) -> None:
        self.width_px = float(value)
        self.update()

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        ratio = self.devicePixelRatioF()
        w = self.width_px / ratio
        h = w * CARD_HEIGHT_MM / CARD_WIDTH_MM
        p.fillRect(self.rect(), QColor(250, 250, 250))
        p.setBrush(QColor(70, 110, 200, 90))
        p.setPen(QColor(30, 60, 150))
        p.drawRoundedRect(QRectF(10, 10, w, h), 6, 6)
        p.drawText(QRectF(16, 16, w, 20), "hold a bank card here")
        p.end()


def _spin(lo: float, hi: float, value: float, decimals: int = 1, suffix: str = "") -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setValue(value)
    s.setSuffix(suffix)
    return s


class CalibrationDialog(QDialog):
    """Builds a :class:`Calibration`; :attr:`calibration` is set when accepted."""

    def __init__(self, *, width_px: int = 1920, height_px: int = 1080, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Calibrate the patient screen")
        self.calibration: Calibration | None = None
        self.by_size = QRadioButton("I know the screen's visible size")
        self.by_card = QRadioButton("Measure with a bank card (ID-1)")
        self.by_size.setChecked(True)
        self.width_px = QSpinBox()
        self.width_px.setRange(1, 16384)
        self.width_px.setValue(width_px)
        self.height_px = QSpinBox()
        self.height_px.setRange(1, 16384)
        self.height_px.setValue(height_px)
        self.width_mm = _spin(10, 5000, 527.0, 1, " mm")
        self.height_mm = _spin(10, 5000, 296.5, 1, " mm")
        self.card_px = _spin(20, 4000, 320, 0, " px")
        self.card = CardRectangle()
        self.card_px.valueChanged.connect(self.card.set_width_px)
        self.distance_mm = _spin(500, 20000, 4000, 0, " mm")
        self.mirror = QCheckBox("Mirror (the patient sees the screen in a mirror)")
        self.error = QLabel("")
        self.error.setStyleSheet("color:#b00020;")
        self.error.setWordWrap(True)

        size_page = QWidget()
        size_form = QFormLayout(size_page)
        size_form.addRow("Visible width", self.width_mm)
        size_form.addRow("Visible height", self.height_mm)
        card_page = QWidget()
        card_layout = QVBoxLayout(card_page)
        card_layout.addWidget(
            QLabel("Hold a bank card against the screen and change the width until the rectangle matches it exactly.")
        )
        card_form = QFormLayout()
        card_form.addRow("Rectangle width", self.card_px)
        card_layout.addLayout(card_form)
        card_layout.addWidget(self.card)
        self.pages = QStackedWidget()
        self.pages.addWidget(size_page)
        self.pages.addWidget(card_page)
        self.by_card.toggled.connect(lambda on: self.pages.setCurrentIndex(1 if on else 0))

        common = QFormLayout()
        common.addRow("Resolution, width", self.width_px)
        common.addRow("Resolution, height", self.height_px)
        common.addRow("Viewing distance (eye to screen, via the mirror)", self.distance_mm)
        common.addRow("", self.mirror)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.by_size)
        layout.addWidget(self.by_card)
        layout.addWidget(self.pages)
        layout.addLayout(common)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def build(self) -> Calibration:
        """The calibration the fields describe (CalibrationError naming the field)."""
        w, h = self.width_px.value(), self.height_px.value()
        d, mirror = self.distance_mm.value(), self.mirror.isChecked()
        if self.by_card.isChecked():
            px = self.card_px.value()
            return Calibration.from_card(px, px * CARD_HEIGHT_MM / CARD_WIDTH_MM, w, h, d, mirror=mirror)
        return Calibration(self.width_mm.value(), self.height_mm.value(), w, h, d, mirror=mirror)

    def accept(self) -> None:
        try:
            self.calibration = self.build()
        except CalibrationError as exc:
            self.error.setText(str(exc))
            return
        super().accept()


def describe(calibration: Calibration | None) -> str:
    """One line for the start screen."""
    if calibration is None:
        return "No calibration: simulated sessions only. Calibrate to test a patient."
    c = calibration
    return (
        f"{c.screen_width_mm:.0f} \u00d7 {c.screen_height_mm:.0f} mm, {c.width_px} \u00d7 {c.height_px} px "
        f"(pixel {c.pixel_pitch_mm:.3f} mm) at {c.viewing_distance_mm / 1000:.2f} m"
        + (", mirrored" if c.mirror else "")
    )
