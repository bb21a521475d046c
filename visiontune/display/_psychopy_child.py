"""Child process of :class:`~visiontune.display.psychopy_renderer.PsychoPyRenderer`.

Run as ``python -m visiontune.display._psychopy_child``; reads one JSON line on stdin
(``address``, ``authkey`` hex), listens there, accepts the parent, then serves requests:

    ("init", options)           -> ("ok", info)        open the window (or ("error", msg))
    ("show", letter, height_px) -> ("ok", None)        draw, flip
    ("show_line", letters, height_px, centres_px)
                                -> ("ok", None)        a chart line: each letter at its centre's x
                                                        (px from the window's centre), draw, flip
    ("blank",)                  -> ("ok", None)
    ("capture",)                -> ("ok", (h, w) uint8) draw the current state to the back
                                                        buffer and read it (before flip)
    ("close",)                  -> ("ok", None)        then exit

PsychoPy is imported here only (``backend="psychopy"``); ``backend="null"`` draws nothing
and exists to test the protocol where PsychoPy is absent. This module must not import Qt.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from multiprocessing.connection import Listener


class NullBackend:
    """No window: keeps the state; ``_sleep`` and ``_crash`` exist to test the parent."""

    def __init__(self, options):
        self.state = None

    def show(self, glyph, height_px, mirror):
        self.state = (glyph.name, height_px)

    def show_line(self, glyphs, height_px, centres_px, mirror):
        self.state = ("".join(g.name for g in glyphs), height_px, tuple(centres_px))

    def blank(self):
        self.state = None

    def capture(self):
        raise RuntimeError("the null backend has no pixels to capture")

    def close(self):
        pass


class PsychoPyBackend:
    """A PsychoPy window in pixel units, white background, black glyph polygons."""

    def __init__(self, options):
        from psychopy import visual  # the only place PsychoPy is imported

        self.visual = visual
        self.win = visual.Window(
            size=(options["width_px"], options["height_px"]),
            units="pix",
            color=(1, 1, 1),
            colorSpace="rgb",
            fullscr=bool(options.get("fullscreen", False)),
            screen=int(options.get("screen", 0)),
            allowGUI=False,
            gammaErrorPolicy="ignore",
            waitBlanking=bool(options.get("fullscreen", False)),
        )
        self.stim = None
        self.win.flip()

    def show(self, glyph, height_px, mirror):
        """Our rings never overlap, solids are CCW and holes CW (stimuli/README.md), so the
        even-odd fill equals painting every ring, largest first, black if CCW, white if CW
        (a ring lies inside only larger rings). One ShapeStim per ring: ShapeStim wants
        equal-length contours for holes."""
        self.stim = self._stims(glyph, height_px, mirror, 0.0)
        self._draw()
        self.win.flip()

    def show_line(self, glyphs, height_px, centres_px, mirror):
        """A chart line: each glyph as :meth:`show` draws one, its centre at ``centres_px`` (x,
        pixels from the window's centre); mirrored, the whole line flipped (``x -> -x``)."""
        self.stim = [
            s for g, x in zip(glyphs, centres_px, strict=True) for s in self._stims(g, height_px, mirror, float(x))
        ]
        self._draw()
        self.win.flip()

    def _stims(self, glyph, height_px, mirror, centre_x_px):
        k = height_px / 5.0
        sx = -k if mirror else k
        dx = -centre_x_px if mirror else centre_x_px
        rings = []
        for ring in glyph.rings:
            x, y = ring[:, 0], ring[:, 1]
            area = 0.5 * float((x * (y[list(range(1, len(y))) + [0]]) - x[list(range(1, len(x))) + [0]] * y).sum())
            pts = [((a - 2.5) * sx + dx, (b - 2.5) * k) for a, b in ring.tolist()]
            rings.append((abs(area), area > 0, pts))
        rings.sort(key=lambda r: -r[0])
        return [
            self.visual.ShapeStim(
                self.win,
                vertices=pts,
                fillColor=(-1, -1, -1) if solid else (1, 1, 1),
                lineColor=None,
                units="pix",
                colorSpace="rgb",
            )
            for _, solid, pts in rings
        ]

    def blank(self):
        self.stim = None
        self._draw()
        self.win.flip()

    def _draw(self):
        for stim in self.stim or ():
            stim.draw()

    def capture(self):
        import numpy as np

        self._draw()
        frame = self.win.getMovieFrame(buffer="back")
        self.win.movieFrames.clear()
        self.win.clearBuffer()
        return np.asarray(frame.convert("L"), dtype=np.uint8)

    def close(self):
        self.win.close()


BACKENDS = {"null": NullBackend, "psychopy": PsychoPyBackend}


def serve(conn) -> None:
    from visiontune.display.optotypes import load_letter_set  # late: numpy after the child listens

    backend = letter_set = None
    mirror = False
    while True:
        try:
            msg = conn.recv()
        except EOFError:  # parent gone
            break
        cmd = msg[0]
        try:
            if cmd == "init":
                options = msg[1]
                letter_set = load_letter_set(options["letter_set"])
                mirror = bool(options.get("mirror", False))
                backend = BACKENDS[options.get("backend", "psychopy")](options)
                conn.send(("ok", {"pid": os.getpid(), "backend": options.get("backend", "psychopy")}))
            elif cmd == "show":
                backend.show(letter_set.glyph(msg[1]), float(msg[2]), mirror)
                conn.send(("ok", None))
            elif cmd == "show_line":
                glyphs = [letter_set.glyph(x) for x in msg[1]]
                backend.show_line(glyphs, float(msg[2]), [float(x) for x in msg[3]], mirror)
                conn.send(("ok", None))
            elif cmd == "blank":
                backend.blank()
                conn.send(("ok", None))
            elif cmd == "capture":
                conn.send(("ok", backend.capture()))
            elif cmd == "close":
                if backend is not None:
                    backend.close()
                conn.send(("ok", None))
                break
            elif cmd == "_sleep" and isinstance(backend, NullBackend):
                time.sleep(float(msg[1]))
                conn.send(("ok", None))
            elif cmd == "_state" and isinstance(backend, NullBackend):
                conn.send(("ok", backend.state))
            elif cmd == "_crash" and isinstance(backend, NullBackend):
                os._exit(3)
            else:
                conn.send(("error", f"unknown request {cmd!r}"))
        except Exception as exc:  # reported to the parent, which raises RendererError
            conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"))
            if cmd == "init":
                break


def main() -> int:
    hello = json.loads(sys.stdin.readline())
    with Listener(hello["address"], authkey=bytes.fromhex(hello["authkey"])) as listener:
        with listener.accept() as conn:
            serve(conn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
