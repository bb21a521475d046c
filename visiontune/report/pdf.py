"""The printable PDF report, through Qt's own PDF writer (QPdfWriter + QPainter, QtGui only).

Page 1: patient id, date, eye, protocol, software version; the final prescription (rounded
to 0.25 D and exact) with its credible intervals; the predicted acuity in logMAR and Snellen
with its interval; answers used (by kind, when not all were letters) and duration; the two
figures of :mod:`visiontune.report.figures`. Page 2 (and more for a long session): the trial
table, one row per answer (letter size, first lens, letter shown and said, scored correct, answer
time; a slider's row is followed by a line "slider <knob>: clearest <lens> (<k> of <n>, path
<ends>)", :func:`~visiontune.session.trial_text.slider_text`; a chart line's row gives its
letters, its size, its lens and the count read right, and is followed by a line "line D+ K+ N- R+
S- (3 of 5 right) through <lens>", each letter with its answer,
:func:`~visiontune.session.trial_text.line_text`), voided answers greyed and marked
"void", in two blocks side by side (160 lines a page).
A simulated session carries a SIMULATED banner at the top of every page and in the footer.
Paper: A4 portrait with 15 mm margins, drawn in 300 dpi device units.

A QGuiApplication must exist (the writer needs fonts); :func:`ensure_gui_application`
creates one, offscreen when there is no display.
"""

from __future__ import annotations

import os
from datetime import UTC

from visiontune.optics.acuity_units import format_snellen
from visiontune.optics.notation import rx_cells, rx_text
from visiontune.refraction.result import LensValues
from visiontune.report.finished_session import SessionRecord
from visiontune.session.trial_text import answer_kinds_text, held_text, line_text, slider_text

__all__ = [
    "SIMULATED_BANNER",
    "ensure_gui_application",
    "format_lens",
    "is_note",
    "pdf_bytes",
    "report_lines",
    "trial_rows",
]

SIMULATED_BANNER = "SIMULATED - simulated patient, not a clinical record"
_DPI = 300
_TABLE_HEADER = ("#", "logMAR", "sph D", "cyl D", "axis", "shown", "said", "ok", "", "UTC")
_TABLE_PT = 6.5


def ensure_gui_application():
    """The running Qt application, or a new QGuiApplication (offscreen without a display)."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance()
    if app is None:
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(["visiontune-report"])
    return app


def format_lens(lens: LensValues, kind: str | None = None) -> str:
    """Clinical text of a result lens in the one notation (:func:`visiontune.optics.notation.rx_text`),
    e.g. ``"S -1.25 / C -0.50 x 180"``; one off the trial-lens steps is marked, ``kind`` naming it."""
    return rx_text(lens, kind=kind)


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s"


def report_lines(record: SessionRecord) -> list[tuple[str, str]]:
    """The summary of page 1 as ``(label, text)`` pairs, in print order."""
    info, r = record.info, record.result
    try:
        protocol = info.protocol.name
    except Exception:  # a snapshot this version cannot parse still gets a report
        protocol = "(protocol snapshot unreadable)"
    when = (info.finished_at or info.created_at).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lvl = round(100 * r.interval_level)
    va, (va_lo, va_hi) = r.predicted_va_logmar, r.predicted_va_interval
    voided = sum(t.void for t in record.trials)
    kinds = answer_kinds_text(r.trials_used, r.comparisons_used, r.sliders_used, r.lines_used)
    return [
        ("Patient ID", info.patient_id),
        ("Session", f"{info.session_id} ({'simulated patient' if info.simulated else 'patient'})"),
        ("Date", when),
        ("Eye", info.eye.value),
        ("Protocol", protocol),
        ("Software", f"VisionTune {info.software_version}"),
        ("Prescription (0.25 D)", format_lens(r.rounded)),
        ("Exact estimate", format_lens(r.estimate, kind="estimate")),
        *_start_line(r),
        (f"{lvl}% credible region", _region_text(r)),
        *_power_vector_line(r),
        ("Predicted acuity", f"{va:.2f} logMAR (Snellen {format_snellen(va)}, {format_snellen(va, 6)})"),
        (
            "Acuity interval",
            f"[{va_lo:.2f}, {va_hi:.2f}] logMAR (Snellen {format_snellen(va_lo)} to {format_snellen(va_hi)})",
        ),
        (
            "Answers",
            f"{r.trials_used} used" + (f" ({kinds})" if kinds else "") + (f", {voided} voided" if voided else ""),
        ),
        ("Stopped by", r.stopped_by),
        *_over_minus_line(r),
        ("Duration", _duration(r.duration_s)),
    ]


def _over_minus_line(r) -> list[tuple[str, str]]:
    """For a patient who may accommodate, how likely the prescription over-minuses (when recorded)."""
    if r.over_minus_risk is None:
        return []
    return [
        ("Over-minus check", f"{100.0 * r.over_minus_risk:.1f}% likely over 0.25 D too minus (patient may accommodate)")
    ]


def _region_text(r) -> str:
    """Sphere and cylinder intervals, and the axis ± when there is one."""
    text = (
        f"sphere [{r.sphere_interval_d[0]:+.2f}, {r.sphere_interval_d[1]:+.2f}] D, "
        f"cylinder [{r.cylinder_interval_d[0]:+.2f}, {r.cylinder_interval_d[1]:+.2f}] D"
    )
    if r.axis_pm_deg is not None:
        text += f", axis \u00b1{r.axis_pm_deg:.0f}\u00b0"
    return text


def _power_vector_line(r) -> list[tuple[str, str]]:
    """The region as radii on M and on J = (J0, J45) (Thibos 1997), when the result has them."""
    radii = r.region_radii_d or {}
    if "m_pm_d" not in radii or "cylinder_vector_pm_d" not in radii:
        return []
    return [("  in power vectors", f"M \u00b1{radii['m_pm_d']:.2f} D, J \u00b1{radii['cylinder_vector_pm_d']:.2f} D")]


def _start_line(r) -> list[tuple[str, str]]:
    if r.starting_rx is None:
        return []
    return [("Starting prescription", f"{format_lens(r.starting_rx)} ({r.starting_source or 'source not recorded'})")]


def is_note(row: tuple[str, ...]) -> bool:
    """Whether a row of :func:`trial_rows` is a line of text under the row before (its text in
    the second cell, printed across the table)."""
    return row[0] == ""


def trial_rows(record: SessionRecord) -> list[tuple[str, ...]]:
    """The trial table: one row of text per answer (voided ones included), as printed. A
    comparison's row gives both lenses (lens 1 / lens 2) and the clearer one (or "equal"). A
    slider's row gives the lens chosen (said: "slider") and is followed by a note
    (:func:`is_note`): the slider on one line, with the path's ends. A chart line's row gives its
    letters (shown), "line" (said) and the count read right (``3 of 5``), and is followed by a note:
    each letter with its answer, + read right or - wrong, and the lens. A comparison shown by a lens
    held before the trial lens is followed by a note of what was held before which lens
    (:func:`~visiontune.session.trial_text.held_text`)."""
    rows = []
    for t in record.trials:
        if t.line_correct is not None:
            void = "void" if t.void else ""
            rows.append(
                (
                    str(t.index + 1),
                    f"{t.s_logmar:.2f}",
                    *rx_cells(t.lens),
                    t.letter_shown,
                    "line",
                    f"{t.line_correct.count('1')} of {len(t.line_correct)}",
                    void,
                    t.answered_at.astimezone(UTC).strftime("%H:%M:%S"),
                )
            )
            rows.append(("", line_text(t), "", "", "", "", "", "", void, ""))
            continue
        if t.slider_choice is not None:
            void = "void" if t.void else ""
            rows.append(
                (
                    str(t.index + 1),
                    f"{t.s_logmar:.2f}",
                    *rx_cells(t.lens),
                    t.letter_shown,
                    "slider",
                    "-",
                    void,
                    t.answered_at.astimezone(UTC).strftime("%H:%M:%S"),
                )
            )
            rows.append(("", slider_text(t), "", "", "", "", "", "", void, ""))
            continue
        if t.comparison is not None:
            a, b = t.lens, t.lens2
            rows.append(
                (
                    str(t.index + 1),
                    f"{t.s_logmar:.2f}",
                    *(f"{x}/{y}" for x, y in zip(rx_cells(a), rx_cells(b))),
                    t.letter_shown,
                    "equal" if t.comparison == "=" else f"lens {t.comparison}",
                    "-",
                    "void" if t.void else "",
                    t.answered_at.astimezone(UTC).strftime("%H:%M:%S"),
                )
            )
            if t.frame_lens is not None:
                rows.append(("", held_text(t.lens, t.lens2, t.frame_lens), "", "", "", "", "", "", rows[-1][8], ""))
            continue
        rows.append(
            (
                str(t.index + 1),
                f"{t.s_logmar:.2f}",
                *rx_cells(t.lens),
                t.letter_shown,
                t.letter_named or "-",
                "yes" if t.correct else "no",
                "void" if t.void else "",
                t.answered_at.astimezone(UTC).strftime("%H:%M:%S"),
            )
        )
    return rows


def draw_page_frame(p, width: float, height: float, *, simulated: bool, footer: str) -> float:
    """Draw a page's SIMULATED banner (when ``simulated``) and its ``footer`` with painter ``p``
    on a ``width`` × ``height`` page (device units); return the y where content starts."""
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFontMetricsF, QPen

    from visiontune.report.figures import set_font  # late: PySide6

    y = 0.0
    if simulated:
        set_font(p, 16, bold=True)
        fm = QFontMetricsF(p.font())
        band = QRectF(0, 0, width, fm.height() * 1.4)
        p.fillRect(band, QColor(200, 0, 0))
        p.setPen(QColor(255, 255, 255))
        p.drawText(band, Qt.AlignCenter, SIMULATED_BANNER)
        y = band.bottom() + fm.height() * 0.5
    set_font(p, 7.5)
    p.setPen(QPen(Qt.black, 0))
    p.drawText(QPointF(0, height - QFontMetricsF(p.font()).descent()), footer)
    return y


def a4_pdf_writer():
    """``(data, buffer, writer)``: a ``QPdfWriter`` on an A4 portrait page (15 mm margins, the
    report's resolution) writing into the in-memory ``data`` through the open ``buffer``."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter

    ensure_gui_application()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.WriteOnly)
    writer = QPdfWriter(buf)
    writer.setResolution(_DPI)
    writer.setPageLayout(
        QPageLayout(QPageSize(QPageSize.A4), QPageLayout.Portrait, QMarginsF(15, 15, 15, 15), QPageLayout.Millimeter)
    )
    return data, buf, writer


def pdf_bytes(record: SessionRecord) -> bytes:
    """Render the report of ``record`` and return the PDF file's bytes."""
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

    from visiontune.report.figures import (  # late: PySide6
        draw_acuity_curve,
        draw_acuity_map,
        draw_map_legend,
        set_font,
    )

    data, buf, writer = a4_pdf_writer()
    info = record.info
    writer.setTitle(f"VisionTune refraction report, patient {info.patient_id}, session {info.session_id}")
    writer.setCreator(f"VisionTune {info.software_version}")
    p = QPainter(writer)
    try:
        width, height = float(writer.width()), float(writer.height())
        rows = trial_rows(record)
        set_font(p, _TABLE_PT)
        row_h = QFontMetricsF(p.font()).height() * 1.1
        top_table = row_h * 5 + (QFontMetricsF(p.font()).height() * 3 if info.simulated else 0)
        per_block = max(1, int((height - top_table - row_h * 3) // row_h))
        set_font(p, _TABLE_PT, bold=True)
        fm = QFontMetricsF(p.font())
        gap = fm.horizontalAdvance("   ") / 2
        columns = zip(_TABLE_HEADER, *(r for r in rows if not is_note(r)), strict=True)
        widths = [max(fm.horizontalAdvance(c) for c in column) + gap for column in columns]
        col_x = [sum(widths[:i]) for i in range(len(widths))]
        notes_w = max((col_x[1] + fm.horizontalAdvance(r[1]) for r in rows if is_note(r)), default=0.0)
        block_w = width * 0.49
        if max(sum(widths), notes_w) <= block_w:
            blocks = 2
        else:  # too wide for two blocks side by side: one block per page
            blocks, block_w = 1, width
        per_page = blocks * per_block
        n_pages = 1 + max(1, -(-len(rows) // per_page))

        def frame(page: int) -> float:
            footer = (
                f"VisionTune {info.software_version} - patient {info.patient_id} - session {info.session_id}"
                f" - page {page} of {n_pages}" + (" - SIMULATED" if info.simulated else "")
            )
            return draw_page_frame(p, width, height, simulated=info.simulated, footer=footer)

        # --- page 1: summary and figures
        y = frame(1)
        set_font(p, 15, bold=True)
        fm = QFontMetricsF(p.font())
        y += fm.ascent()
        p.drawText(QPointF(0, y), "Subjective refraction report")
        y += fm.descent() + fm.height() * 0.4
        label_w = width * 0.30
        for label, text in report_lines(record):
            important = label.startswith(("Prescription", "Predicted"))
            set_font(p, 11 if important else 10, bold=important)
            fm = QFontMetricsF(p.font())
            y += fm.height() * 1.15
            p.drawText(QPointF(0, y), label)
            p.drawText(QPointF(label_w, y), text)
        y += fm.height()
        set_font(p, 8)
        fig_h = min(width * 0.5, height - y - row_h * 3)
        draw_acuity_map(p, QRectF(0, y, width * 0.55, fig_h), record.result, record.trials)
        draw_acuity_curve(p, QRectF(width * 0.56, y, width * 0.44, fig_h), record.result)
        set_font(p, 7)
        draw_map_legend(p, 0, y + fig_h + row_h)

        # --- trial table pages: two blocks of rows side by side
        chunks = [rows[i : i + per_page] for i in range(0, len(rows), per_page)] or [[]]
        for k, chunk in enumerate(chunks):
            writer.newPage()
            y0 = frame(k + 2)
            set_font(p, 11, bold=True)
            y0 += QFontMetricsF(p.font()).height()
            n_answers = len(record.trials)
            p.drawText(QPointF(0, y0), f"Trial table ({n_answers} answers)" + (" continued" if k else ""))
            y0 += row_h * 1.5
            for b in range(blocks):
                block = chunk[b * per_block : (b + 1) * per_block]
                x0 = b * (width - block_w)
                if not block and b:
                    break
                set_font(p, _TABLE_PT, bold=True)
                for x, title in zip(col_x, _TABLE_HEADER, strict=True):
                    p.drawText(QPointF(x0 + x, y0), title)
                set_font(p, _TABLE_PT)
                y = y0
                for row in block:
                    y += row_h
                    p.setPen(QColor(150, 150, 150) if row[8] else QColor(0, 0, 0))
                    if is_note(row):
                        p.drawText(QPointF(x0 + col_x[1], y), row[1])
                        continue
                    for x, cell in zip(col_x, row, strict=True):
                        p.drawText(QPointF(x0 + x, y), cell)
                p.setPen(QPen(Qt.black, 0))
            if not chunk:
                p.drawText(QPointF(0, y0 + row_h), "no answers recorded")
    finally:
        p.end()
    buf.close()
    return bytes(data.data())
