"""The printable record of a visit: one PDF, both eyes side by side (Qt's QPdfWriter, QtGui only).

Page 1: patient, visit, date and time (local, with its UTC offset), the examiner, the clinicians who
signed off, the pupillary distance, cylinder form; a two-column table, right eye (OD)
left, left eye (OS) right, as on a prescription pad: the prescription to dispense (final Rx
plus the binocular balance, in the clinic's cylinder form), the Rx VisionTune found and the
signed-off edit (kept beside it), the balance change, the 95% credible half-widths (± on
sphere, cylinder, axis and on the power vector M, J0, J45), acuity in logMAR, Snellen 6/ and
20/ and decimal (measured or predicted), the starting and the habitual Rx with their sources,
answers and stop reason; a skipped eye shows its reason; when a near addition was filed, its
rows (the add, its 95% credible region, the add by age, the near distance, the range of clear
vision and the near acuity). Then the
binocular balance (method, changes) and the binocular acuity.
Page 2, when the sessions' records are given: each eye's acuity map and acuity curve
(:mod:`visiontune.report.figures`).

A simulated visit carries the SIMULATED banner at the top of every page and in every footer
(as :mod:`visiontune.report.pdf`). A4 portrait, 15 mm margins, 300 dpi device units.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity_units import format_snellen, logmar_to_decimal
from visiontune.optics.notation import rx_text as notation_rx_text
from visiontune.optics.notation import signed
from visiontune.optics.prescription import Prescription
from visiontune.report.files import check_output_path, write_private
from visiontune.report.pdf import a4_pdf_writer, draw_page_frame
from visiontune.report.visit_record import EyeRecord, NearAddition, VisitRecord, time_text

__all__ = ["acuity_text", "rx_text", "visit_lines", "visit_pdf_bytes", "visit_table", "write_visit_pdf"]

_DPI = 300
_MINUS = "\u2212"


def rx_text(p: Prescription | None) -> str:
    """``"S −1.25 / C −0.50 × 090"`` in the one notation (:func:`visiontune.optics.notation.rx_text`,
    U+2212 minus); ``"—"`` for None."""
    return "\u2014" if p is None else notation_rx_text(p, unicode=True)


def acuity_text(logmar: float) -> str:
    """``"0.10 logMAR · 6/7.5 · 20/25 · decimal 0.79"``."""
    dec = float(logmar_to_decimal(logmar))
    six = format_snellen(logmar, 6, decimals=1)
    return (f"{logmar:.2f} logMAR \u00b7 {six} \u00b7 {format_snellen(logmar, 20)} \u00b7 decimal {dec:.2f}").replace(
        "-", _MINUS
    )


def _signed(x: float, unit: str = "D") -> str:
    return f"{signed(x)} {unit}".replace("-", _MINUS)


def visit_lines(record: VisitRecord) -> list[tuple[str, str]]:
    """The header of page 1 as ``(label, text)`` pairs."""
    when = time_text(record.recorded_at)
    lines = [
        ("Patient ID", record.patient_id or "(no patient id)"),
        ("Age", "\u2014" if record.age_years is None else f"{record.age_years} years"),
        ("Visit", f"{record.visit_id} ({'simulated patient' if record.simulated else 'patient'})"),
        ("Date", when),
        ("Examiner", record.examiner_or_clinician or "\u2014"),
        ("Signed off by", ", ".join(record.signed_by) or "not signed off"),
        ("PD", record.pd_text or "\u2014"),
        ("Cylinder form", f"{record.cylinder_form} cylinder"),
    ]
    return lines


def _eye_cells(record: VisitRecord, e: EyeRecord) -> list[str]:
    habitual = _with_source(record.shown(record.habitual(e.eye)), record.habitual_source)
    if not e.measured:
        return ["\u2014", f"eye not measured: {e.skip_reason}", "", "", "", "", "", "", habitual, ""]
    signed = (
        "not edited"
        if e.signed_off is None
        else (f"{rx_text(record.shown(e.signed_off.prescription))}  by {e.signed_off.by}, {time_text(e.signed_off.at)}")
    )
    change = 0.0
    if record.balance is not None:
        change = record.balance.plus_change_od_d if e.eye == "OD" else record.balance.plus_change_os_d
    m, j0, j45 = (float(v) for v in e.prescription.power_vector_array())
    return [
        rx_text(record.balanced_prescription(e.eye)),
        rx_text(record.shown(e.prescription)),
        signed,
        "\u2014" if record.balance is None else ("no change" if change == 0 else f"{_signed(change)} sphere"),
        f"sphere \u00b1{e.sphere_pm_d:.2f} D, cyl \u00b1{e.cylinder_pm_d:.2f} D, axis \u00b1{e.axis_pm_deg:.0f}\u00b0",
        (
            f"M {_signed(m, '')}\u00b1{e.m_pm_d:.2f}   J0 {_signed(j0, '')}\u00b1{e.j0_pm_d:.2f}   "
            f"J45 {_signed(j45, '')}\u00b1{e.j45_pm_d:.2f} D"
        ),
        "not measured" if e.measured_va_logmar is None else acuity_text(e.measured_va_logmar),
        acuity_text(e.predicted_va_logmar),
        habitual,
        f"{e.answers_text}, stopped by {e.stopped_by}; session {e.session_id}",
    ]


_ROW_LABELS = (
    "Prescription",
    "Found by VisionTune",
    "Signed off",
    "Balance",
    "95% credible \u00b1",
    "Power vector",
    "Measured acuity",
    "Predicted acuity",
    "Habitual Rx",
    "Session",
)


def visit_table(record: VisitRecord) -> list[tuple[str, str, str]]:
    """The side-by-side table: ``(label, right eye text, left eye text)`` rows, as printed."""
    od, os_ = _eye_cells(record, record.od), _eye_cells(record, record.os)
    rows = [(label, a, b) for label, a, b in zip(_ROW_LABELS, od, os_, strict=True)]
    starts = [_with_source(record.shown(record.start(e)), record.start_source(e)) for e in ("OD", "OS")]
    rows.insert(_ROW_LABELS.index("Habitual Rx"), ("Starting Rx", *starts))
    if record.near:
        near = [_near_cells(record.near_add(e)) for e in ("OD", "OS")]
        rows += [(label, a, b) for label, a, b in zip(("Near addition", "Near vision"), *near, strict=True)]
    return rows


def _with_source(rx: Prescription | None, source: str | None) -> str:
    """``"S −1.25 / C −0.50 × 090 (autorefraction)"``; ``"none"`` for a refraction started without one."""
    if rx is None:
        return "none" if source == "none" else "\u2014"
    return rx_text(rx) + (f" ({source})" if source else "")


def _near_cells(near: NearAddition | None) -> list[str]:
    """The near rows of one eye: the add (with its 95% region, the add by age and the distance), the
    range of clear vision through it and the near acuity."""
    if near is None:
        return ["\u2014", "\u2014"]
    return [
        f"Add {_signed(near.add_d)} for {near.distance_cm:g} cm (95% {signed(near.lower_d)} to "
        f"{_signed(near.upper_d)}; by age {_signed(near.tentative_add_d)})",
        f"clear from {near.range_text}; near acuity {near.near_va_logmar:+.2f} logMAR",
    ]


def _binocular_lines(record: VisitRecord) -> list[tuple[str, str]]:
    lines = []
    b = record.balance
    if b is not None:
        lines.append(
            ("Binocular balance", f"{b.method}: OD {_signed(b.plus_change_od_d)}, OS {_signed(b.plus_change_os_d)}")
        )
    else:
        lines.append(("Binocular balance", "not done"))
    if record.binocular_va_logmar is not None:
        lines.append(
            (
                "Binocular acuity",
                acuity_text(record.binocular_va_logmar) + ", both eyes open through the two prescriptions",
            )
        )
    return lines


def visit_pdf_bytes(record: VisitRecord, sessions: Mapping[str, object] | None = None) -> bytes:
    """Render the visit's PDF and return its bytes.

    ``sessions``: optional ``{"OD": SessionRecord, "OS": SessionRecord}`` of the measured eyes;
    when given, page 2 draws each eye's acuity map and curve. Raises InvalidInputError for a
    visit without a measured eye.
    """
    from PySide6.QtCore import (
        QPointF,
        QRectF,
        Qt,
    )
    from PySide6.QtGui import (
        QColor,
        QFontMetricsF,
        QPainter,
        QPen,
    )

    from visiontune.report.figures import draw_acuity_curve, draw_acuity_map, draw_map_legend, set_font  # late: PySide6

    if not isinstance(record, VisitRecord):
        raise InvalidInputError(f"record: expected a VisitRecord, got {type(record).__name__}")
    record.check_recordable()
    sessions = dict(sessions or {})
    for eye in sessions:
        if eye not in ("OD", "OS") or not (record.od if eye == "OD" else record.os).measured:
            raise InvalidInputError(f"sessions: {eye!r} is not a measured eye of visit {record.visit_id}")
    data, buf, writer = a4_pdf_writer()
    writer.setTitle(f"VisionTune visit record, patient {record.patient_id or '-'}, visit {record.visit_id}")
    writer.setCreator(f"VisionTune {record.software_version}")
    n_pages = 2 if sessions else 1
    p = QPainter(writer)
    try:
        width, height = float(writer.width()), float(writer.height())

        def frame(page: int) -> float:
            footer = (
                f"VisionTune {record.software_version} - patient {record.patient_id or '-'} - visit "
                f"{record.visit_id} - page {page} of {n_pages}" + (" - SIMULATED" if record.simulated else "")
            )
            return draw_page_frame(p, width, height, simulated=record.simulated, footer=footer)

        def rule(y: float, grey: int = 120) -> None:
            p.setPen(QPen(QColor(grey, grey, grey), 2))
            p.drawLine(QPointF(0, y), QPointF(width, y))
            p.setPen(QPen(Qt.black, 0))

        # --- page 1
        y = frame(1)
        set_font(p, 15, bold=True)
        fm = QFontMetricsF(p.font())
        y += fm.ascent()
        p.drawText(QPointF(0, y), "Subjective refraction \u2014 visit record")
        y += fm.descent() + fm.height() * 0.3
        set_font(p, 9.5)
        fm = QFontMetricsF(p.font())
        label_w = width * 0.20
        lines = visit_lines(record)
        half = (len(lines) + 1) // 2
        for i, (label, text) in enumerate(lines):
            col = 0 if i < half else 1
            row = i if i < half else i - half
            x0 = col * width * 0.5
            yy = y + (row + 1) * fm.height() * 1.2
            set_font(p, 9.5, bold=True)
            p.drawText(QPointF(x0, yy), label)
            set_font(p, 9.5)
            p.drawText(QPointF(x0 + label_w * (0.85 if col else 1.0), yy), text)
        y += (half + 0.6) * fm.height() * 1.2
        rule(y)

        # two-column table
        col_label = width * 0.20
        col_w = (width - col_label) / 2
        set_font(p, 12, bold=True)
        fm = QFontMetricsF(p.font())
        y += fm.height() * 1.3
        p.drawText(QPointF(col_label, y), "Right eye (OD)")
        p.drawText(QPointF(col_label + col_w, y), "Left eye (OS)")
        y += fm.height() * 0.4
        rule(y, 180)
        for label, right, left in visit_table(record):
            important = label == "Prescription"
            size = 13 if important else 8.5
            set_font(p, size, bold=important)
            fm = QFontMetricsF(p.font())
            cells = [right, left]
            # wrap long cells over two lines within the column
            wrapped = []
            for text in cells:
                rect = fm.boundingRect(QRectF(0, 0, col_w * 0.96, 10 * fm.height()), Qt.TextWordWrap, text)
                wrapped.append(rect.height())
            set_font(p, 8.5, bold=True)
            lfm = QFontMetricsF(p.font())
            label_h = lfm.boundingRect(
                QRectF(0, 0, col_label * 0.95, 10 * lfm.height()), Qt.TextWordWrap, label
            ).height()
            row_h = max(max(wrapped), fm.height(), label_h) + fm.height() * (0.55 if important else 0.35)
            top = y + fm.height() * (0.3 if important else 0.2)
            p.setPen(QColor(70, 70, 70))
            p.drawText(
                QRectF(0, top + (fm.height() - lfm.height()) * 0.5, col_label * 0.95, row_h), Qt.TextWordWrap, label
            )
            set_font(p, size, bold=important)
            p.setPen(QPen(Qt.black, 0))
            set_font(p, size, bold=important)
            for k, text in enumerate(cells):
                p.drawText(QRectF(col_label + k * col_w, top, col_w * 0.96, row_h), Qt.TextWordWrap, text)
            y += row_h
            rule(y, 215)
        # binocular
        y += QFontMetricsF(p.font()).height() * 0.8
        for label, text in _binocular_lines(record):
            set_font(p, 9.5, bold=True)
            fm = QFontMetricsF(p.font())
            y += fm.height() * 1.25
            p.drawText(QPointF(0, y), label)
            set_font(p, 9.5)
            box = QRectF(width * 0.22, y - fm.ascent(), width * 0.78, fm.height() * 4)  # long text wraps
            used = p.boundingRect(box, Qt.TextWordWrap, text)
            p.drawText(box, Qt.TextWordWrap, text)
            y += max(0.0, used.height() - fm.height())
        y += fm.height() * 1.5
        set_font(p, 7.5)
        fm = QFontMetricsF(p.font())
        notes = [
            (
                "Prescription = final Rx (signed off if edited, else as found) + binocular balance, "
                f"in {record.cylinder_form} cylinder. The found Rx is kept beside any edit."
            ),
            "\u00b1 = half-width of the 95% credible interval of the estimate. M, J0, J45: Thibos power vector (D).",
            (
                "Acuity: logMAR, Snellen at 6 m and 20 ft, decimal. Predicted: the model's estimate through the "
                "found Rx, "
                "not read on a chart."
            ),
        ]
        for note in notes:
            y += fm.height() * 1.2
            p.drawText(QPointF(0, y), note)

        # --- page 2: figures per eye
        if sessions:
            writer.newPage()
            y0 = frame(2)
            set_font(p, 12, bold=True)
            fm = QFontMetricsF(p.font())
            y0 += fm.height()
            p.drawText(QPointF(0, y0), "Refraction sessions: acuity maps and curves")
            y0 += fm.height() * 0.5
            block_h = (height - y0 - fm.height() * 3) / 2
            for k, eye in enumerate(("OD", "OS")):
                top = y0 + k * block_h
                set_font(p, 11, bold=True)
                fm = QFontMetricsF(p.font())
                label = "Right eye (OD)" if eye == "OD" else "Left eye (OS)"
                p.drawText(QPointF(0, top + fm.height()), label)
                rec = sessions.get(eye)
                set_font(p, 8)
                if rec is None:
                    reason = (record.od if eye == "OD" else record.os).skip_reason
                    p.drawText(
                        QPointF(0, top + fm.height() * 2.5), f"not measured: {reason}" if reason else "no session"
                    )
                    continue
                fig_top = top + fm.height() * 1.4
                fig_h = block_h - fm.height() * 2.0
                draw_acuity_map(p, QRectF(0, fig_top, width * 0.55, fig_h), rec.result, rec.trials)
                draw_acuity_curve(p, QRectF(width * 0.56, fig_top, width * 0.44, fig_h), rec.result)
            set_font(p, 7)
            draw_map_legend(p, 0, height - QFontMetricsF(p.font()).height() * 2.6)
    finally:
        p.end()
    buf.close()
    return bytes(data.data())


def write_visit_pdf(
    record: VisitRecord,
    path: str | os.PathLike,
    sessions: Mapping[str, object] | None = None,
    protected: tuple[Path, ...] = (),
) -> Path:
    """Render and write the visit's PDF to ``path`` (mode 0600, atomic); nothing is written on
    an error. ``sessions`` as in :func:`visit_pdf_bytes`."""
    out = check_output_path("pdf", path, protected)
    write_private(out, visit_pdf_bytes(record, sessions))
    return out
