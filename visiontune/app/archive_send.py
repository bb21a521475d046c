"""The finish page's "Send to archive": a visit's records to the clinic's PACS and FHIR server.

Shown once the visit's records are exported. It reads the clinic's archive settings
(``archive.toml`` beside the app's settings, :mod:`visiontune.report.archive_config`) and says
where records would go, or that no archive is configured (then nothing can be sent: there is
no default destination). The button sends every configured kind with
:func:`visiontune.report.archive_send.send_visit` in a background thread (the page stays
responsive; every step is recorded in the trial log there), then lists what went where: each
DICOM object's SOP Instance UID at ``AE@host:port``, each FHIR resource's ``Type/id`` at the
server, or the error of a kind that failed. A simulated visit's lines say SIMULATED.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from visiontune.errors import VisionTuneError, one_line
from visiontune.report.archive_config import (
    ARCHIVE_CONFIG_NAME,
    ArchiveConfig,
    default_archive_config_path,
    load_archive_config,
)
from visiontune.report.archive_send import SendOutcome, send_visit

__all__ = ["ArchiveSendPanel"]

_ERROR_STYLE = "color:#b00020;"


class ArchiveSendPanel(QWidget):
    """``show_visit(view)`` after an export; ``db_path`` / ``config_path``: the trial log and the
    archive settings (``None``: the app's, from the window's options, else the defaults)."""

    _finished = Signal(object)  # list[SendOutcome], or the error text; from the sending thread

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db_path: Path | None = None
        self.config_path: Path | None = None
        self.visit_id: int | None = None
        self.config: ArchiveConfig | None = None
        self.thread: threading.Thread | None = None
        self.setObjectName("archiveSendPanel")
        self.where = QLabel("")
        self.where.setObjectName("archiveWhere")
        self.where.setWordWrap(True)
        self.button = QPushButton("Send to &archive")
        self.button.setObjectName("archiveSendButton")
        self.button.clicked.connect(self.send)
        self.result = QLabel("")
        self.result.setObjectName("archiveResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.button)
        row.addWidget(self.where, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.result)
        self._finished.connect(self._show_outcomes)
        self.setVisible(False)

    def _paths(self) -> tuple[Path | None, Path]:
        options = getattr(self.window(), "options", None)
        db = self.db_path if self.db_path is not None else getattr(options, "db_path", None)
        if self.config_path is not None:
            return db, Path(self.config_path)
        settings = getattr(options, "settings_path", None)
        return db, (Path(settings).with_name(ARCHIVE_CONFIG_NAME) if settings else default_archive_config_path())

    def show_visit(self, view) -> None:
        """Show the panel for ``view`` (a :class:`~visiontune.app.logic.visit_flow.VisitView`) once it
        has been exported; hide it otherwise."""
        exported = bool(getattr(view, "exports", None))
        self.setVisible(exported)
        if not exported or self.sending:
            return
        if view.visit_id != self.visit_id:
            self.result.setText("")
        self.visit_id = view.visit_id
        _, config_path = self._paths()
        try:
            self.config = load_archive_config(config_path)
        except VisionTuneError as exc:
            self.config = None
            self.where.setText(f"No archive: {one_line(exc)}")
            self.button.setEnabled(False)
            return
        kinds = [
            f"DICOM to {self.config.dicom.where()} (as {self.config.dicom.calling_ae_title})"
            if self.config.dicom
            else "",
            f"FHIR to {self.config.fhir.where()}" if self.config.fhir else "",
        ]
        self.where.setText("Sends " + " and ".join(k for k in kinds if k) + f" (settings: {config_path})")
        self.button.setEnabled(True)

    @property
    def sending(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def send(self) -> None:
        if self.config is None or self.visit_id is None or self.sending:
            return
        db, _ = self._paths()
        config, vid = self.config, self.visit_id
        self.button.setEnabled(False)
        self.result.setStyleSheet("")
        self.result.setText(f"Sending visit {vid} ...")

        def work() -> None:
            try:
                outcome: object = send_visit(
                    db, vid, config, dicom=config.dicom is not None, fhir=config.fhir is not None
                )
            except VisionTuneError as exc:
                outcome = f"Nothing sent: {one_line(exc)}"
            self._finished.emit(outcome)

        self.thread = threading.Thread(target=work, name="archive-send", daemon=True)
        self.thread.start()

    def _show_outcomes(self, outcomes) -> None:
        self.button.setEnabled(self.config is not None)
        if isinstance(outcomes, str):
            self.result.setText(outcomes)
            self.result.setStyleSheet(_ERROR_STYLE)
            return
        lines: list[str] = []
        for o in outcomes:
            assert isinstance(o, SendOutcome)
            if o.ok:
                calling = f" as {self.config.dicom.calling_ae_title}" if o.what == "dicom" and self.config else ""
                lines.append(f"Sent {o.what.upper()} to {o.destination}{calling}:")
                lines += [f"  {one_line(t)}" for t in o.items]
            else:
                lines.append(f"{o.what.upper()} not sent: {one_line(o.error)}")
        self.result.setText("\n".join(lines))
        self.result.setStyleSheet("" if all(o.ok for o in outcomes) else _ERROR_STYLE)
