"""PsychoPy stimulus window in a child process, driven over a multiprocessing connection.

PsychoPy's window (pyglet) and the Qt GUI never share a process (docs/design.md,
*PsychoPy and Qt in one application*): this parent-side object starts
``python -m visiontune.display._psychopy_child``, possibly with another interpreter (a
lab's PsychoPy standalone), talks to it over a ``multiprocessing.connection`` (Unix socket
or Windows named pipe, authenticated with a random key), and turns every failure (child
exit, no answer within ``timeout_s``, an error in the child) into :class:`RendererError`.
This module imports neither PsychoPy nor Qt.

Sizes are computed here, not by PsychoPy: ``height_px = letter_height_px(logmar,
calibration)`` (``h = 2 d tan(5 * 10**s / 2 arcmin)``, docs/design.md), checked against the
displayable range; the child scales the 5 x 5 design cell to that many pixels. A chart line's
letters are placed here too, one letter width apart (Bailey & Lovie 1976;
:func:`~visiontune.display.geometry.line_centres_px`), the line checked against the screen's width.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Client
from pathlib import Path

from visiontune.display.calibration import Calibration
from visiontune.display.geometry import (
    DEFAULT_MIN_INK_PX,
    displayable_logmar_range,
    largest_line_logmar,
    letter_height_px,
    line_centres_px,
)
from visiontune.display.optotypes import load_letter_set
from visiontune.display.renderer import RendererError
from visiontune.errors import CalibrationError, InvalidInputError

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class PsychoPyRenderer:
    """Renderer whose window lives in a child process (see module docstring).

    ``python``: interpreter for the child (default: this one); it must have PsychoPy for
    ``backend="psychopy"``. ``backend="null"``: no window (protocol tests).
    ``timeout_s``: longest wait for one answer; ``start_timeout_s``: for the window to open.
    """

    def __init__(
        self,
        calibration: Calibration,
        letter_set: str,
        *,
        screen: int = 0,
        fullscreen: bool = True,
        min_ink_px: float = DEFAULT_MIN_INK_PX,
        python: str | os.PathLike | None = None,
        backend: str = "psychopy",
        timeout_s: float = 10.0,
        start_timeout_s: float = 60.0,
    ):
        if backend not in ("psychopy", "null"):
            raise InvalidInputError(f"backend: expected 'psychopy' or 'null', got {backend!r}")
        self.calibration = calibration
        self.letter_set = load_letter_set(letter_set)
        self.displayable = displayable_logmar_range(calibration, min_ink_px=min_ink_px)
        self.timeout_s = float(timeout_s)
        self._conn = None
        self._closed = False
        self._log = tempfile.NamedTemporaryFile(prefix="visiontune-psychopy-", suffix=".log", delete=False)
        self._tmpdir = tempfile.TemporaryDirectory(prefix="vt-pp-")
        if sys.platform == "win32":
            address = rf"\\.\pipe\visiontune-{secrets.token_hex(8)}"
        else:
            address = os.path.join(self._tmpdir.name, "sock")
        authkey = secrets.token_bytes(32)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (self._package_path(), env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [str(python or sys.executable), "-m", "visiontune.display._psychopy_child"],
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            self._process.stdin.write((json.dumps({"address": address, "authkey": authkey.hex()}) + "\n").encode())
            self._process.stdin.close()
            self._conn = self._connect(address, authkey, start_timeout_s)
            options = {
                "letter_set": letter_set,
                "width_px": calibration.width_px,
                "height_px": calibration.height_px,
                "screen": int(screen),
                "fullscreen": bool(fullscreen),
                "mirror": calibration.mirror,
                "backend": backend,
            }
            self.info = self._request(("init", options), start_timeout_s)
        except BaseException:
            self._kill()
            raise

    # -- the Renderer interface -------------------------------------------------------------
    def show(self, letter: str, logmar: float) -> None:
        """Show ``letter`` ``logmar`` tall. CalibrationError (size) and InvalidInputError
        (letter) are raised here, before the child is asked."""
        s = self.displayable.check(logmar)
        self.letter_set.glyph(letter)
        self._request(("show", letter, float(letter_height_px(s, self.calibration))))

    def show_line(self, letters, logmar: float) -> None:
        """Show the chart line ``letters`` (reading order) at ``logmar``, one letter width apart.
        CalibrationError (a letter's size, or a line wider than the screen:
        :func:`~visiontune.display.geometry.largest_line_logmar`) and InvalidInputError (a letter)
        are raised here, before the child is asked."""
        letters = [str(x) for x in letters]
        if not letters:
            raise InvalidInputError("letters: expected the line's letters, got none")
        s = self.displayable.check(logmar)
        for x in letters:
            self.letter_set.glyph(x)
        top = largest_line_logmar(self.calibration, len(letters))
        if s > top:
            raise CalibrationError(
                f"logmar: a line of {len(letters)} letters at {s:+.2f} logMAR is wider than this screen "
                f"({self.calibration.width_px} px; the largest line it shows is {top:+.2f} logMAR)"
            )
        h = float(letter_height_px(s, self.calibration))
        self._request(("show_line", letters, h, line_centres_px(len(letters), h)))

    def blank(self) -> None:
        self._request(("blank",))

    def capture(self):
        """The window's back buffer after redrawing the current state: ``(height, width)`` uint8."""
        return self._request(("capture",))

    def close(self) -> None:
        """Close the window and wait for the child; never raises for a child already gone."""
        if self._closed:
            return
        try:
            if self._process.poll() is None and self._conn is not None:
                self._request(("close",))
                self._process.wait(timeout=self.timeout_s)
        except (RendererError, subprocess.TimeoutExpired):
            pass
        finally:
            self._kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pid(self) -> int:
        return self._process.pid

    # -- plumbing ---------------------------------------------------------------------------
    def _package_path(self) -> str:
        """A folder holding only ``visiontune`` (a symlink), so that a foreign interpreter
        (PsychoPy standalone) finds our package without our site-packages (numpy built for
        another Python). Falls back to the folder above the package."""
        link = Path(self._tmpdir.name) / "path" / "visiontune"
        try:
            link.parent.mkdir()
            link.symlink_to(Path(_PACKAGE_ROOT) / "visiontune", target_is_directory=True)
        except OSError:
            return _PACKAGE_ROOT
        return str(link.parent)

    def _log_tail(self, n: int = 1500) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        return text[-n:].strip()

    def _died(self) -> RendererError:
        try:  # the connection may close a moment before the exit status is known
            rc = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            rc = "none: it closed the connection and was stopped"
        tail = self._log_tail()
        self._kill()
        return RendererError(
            f"PsychoPy window process exited (code {rc})" + (f"; its last output:\n{tail}" if tail else "")
        )

    def _connect(self, address, authkey, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            if self._process.poll() is not None:
                raise self._died()
            try:
                return Client(address, authkey=authkey)
            except (FileNotFoundError, ConnectionRefusedError, OSError):
                if time.monotonic() > deadline:
                    raise RendererError(f"PsychoPy window process did not start within {timeout_s:g} s") from None
                time.sleep(0.02)

    def _request(self, message, timeout_s: float | None = None):
        if self._closed:
            raise RendererError("the PsychoPy window is closed")
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            self._conn.send(message)
        except (OSError, EOFError):
            raise self._died() from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                ready = self._conn.poll(0.05)
            except (OSError, EOFError):
                raise self._died() from None
            if ready:
                try:
                    status, payload = self._conn.recv()
                except (OSError, EOFError):
                    raise self._died() from None
                if status == "ok":
                    return payload
                raise RendererError(f"PsychoPy window: {payload}")
            if self._process.poll() is not None:
                raise self._died()
            if time.monotonic() > deadline:
                self._kill()
                raise RendererError(f"PsychoPy window did not answer {message[0]!r} within {timeout:g} s; stopped it")

    def _kill(self) -> None:
        self._closed = True
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        if self._process.poll() is None:
            self._process.kill()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)  # its tail is in any error raised
        self._tmpdir.cleanup()
