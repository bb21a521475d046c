"""Errors reach the user as one readable dialog and go to a log file; nothing crashes the app.

- :func:`configure_logging`: the ``visiontune`` logger writes to
  ``<user log dir>/visiontune/app.log`` (platformdirs), one line per event, rotated at 1 MB.
  The log holds patient ids and every answer: the file (and each rotated one) is 0600 and its
  folder 0700, whatever the umask.
- :class:`ErrorReporter`: shows a message in one non-modal dialog; errors arriving while it
  is open are appended to it (never a cascade of dialogs).
- :func:`install_excepthook`: any exception escaping a Qt slot or event handler is logged
  with its traceback and reported; a :class:`~visiontune.errors.VisionTuneError` shows its
  own message, anything else "unexpected error" and the log file's path; with
  :attr:`ErrorReporter.fatal` set (a smoke run, ``--exit-after``) it is then called, to end the app.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from visiontune import private_files
from visiontune.errors import VisionTuneError

LOGGER_NAME = "visiontune"
LOG_FILE_NAME = "app.log"
log = logging.getLogger(f"{LOGGER_NAME}.app")


def default_log_dir() -> Path:
    from platformdirs import user_log_dir

    return Path(user_log_dir("visiontune", appauthor=False))


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose files are created (and kept) user-only, mode 0600, whatever the
    umask; a log path that is not a regular file (a FIFO, a device) is refused."""

    def _open(self):
        fd = private_files.open_private_append(self.baseFilename, name="log file")
        try:
            return open(fd, "a", encoding=self.encoding, errors=self.errors)
        except BaseException:
            os.close(fd)
            raise


def configure_logging(log_dir: str | os.PathLike | None = None) -> Path:
    """Log the ``visiontune`` logger (INFO and up) to ``<log_dir>/app.log``; return the path.
    Calling it again with another folder moves the file handler there. The folder is created
    0700 (the default folder is also set back to 0700 if an older version made it wider)."""
    folder = Path(log_dir) if log_dir is not None else default_log_dir()
    folder = private_files.private_dir(folder, tighten=log_dir is None)
    path = folder / LOG_FILE_NAME
    root = logging.getLogger(LOGGER_NAME)
    for h in list(root.handlers):
        if getattr(h, "_visiontune_app", False):
            root.removeHandler(h)
            h.close()
    handler = PrivateRotatingFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler._visiontune_app = True
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return path


def log_path() -> Path | None:
    for h in logging.getLogger(LOGGER_NAME).handlers:
        if getattr(h, "_visiontune_app", False):
            return Path(h.baseFilename)
    return None


def flush_log() -> None:
    for h in logging.getLogger(LOGGER_NAME).handlers:
        h.flush()


class ErrorReporter:
    """One dialog for every error; later errors are appended while it is open."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self.parent = parent
        self.dialog: QMessageBox | None = None
        self.messages: list[str] = []
        #: Called with the message of an unexpected error after it is reported (a smoke run ends on it).
        self.fatal: Callable[[str], None] | None = None

    def report(self, message: str, *, title: str = "VisionTune") -> None:
        log.error("reported to the user: %s", message)
        self.messages.append(message)
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.setText("\n\n".join(self.messages[-5:]))
            return
        self.messages = [message]
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self.parent)
        box.setWindowModality(box.windowModality().NonModal)
        box.setObjectName("errorDialog")
        box.finished.connect(self._closed)
        self.dialog = box
        box.show()

    def _closed(self, _result: int) -> None:
        self.messages = []

    def report_exception(self, exc: BaseException) -> None:
        if isinstance(exc, VisionTuneError):
            log.error("%s: %s", type(exc).__name__, exc)
            self.report(str(exc))
            if self.fatal is not None:
                self.fatal(str(exc))
            return
        log.error("unexpected error:\n%s", "".join(traceback.format_exception(exc)))
        where = log_path()
        message = (
            f"Unexpected error: {type(exc).__name__}: {exc}\n\nNothing recorded was lost (every answer is "
            f"saved when it is typed). Details are in the log{f': {where}' if where else ''}."
        )
        self.report(message)
        if self.fatal is not None:
            self.fatal(message)


def install_excepthook(reporter: ErrorReporter):
    """Route uncaught exceptions to ``reporter`` (the app keeps running); return the previous hook."""
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            previous(exc_type, exc, tb)
            return
        try:
            reporter.report_exception(exc if exc is not None else exc_type())
        except Exception:  # the hook must never raise
            previous(exc_type, exc, tb)

    sys.excepthook = hook
    return previous
