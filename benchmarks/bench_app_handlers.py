"""Benchmark: the GUI-side cost of the session engine's events, offscreen.

1. Records the event stream of a real simulated session: a :class:`SessionHost` (the engine
   process's executor, here in-process) runs ``open_store``, ``start`` and ``--trials``
   answers of the app's simulated patient (same seed rule as the app), then ``finish``.
   For each event kind it prints the pickled size and the ``pickle.loads`` time (what the
   relay thread of the GUI process pays, holding the GIL, for every event).
2. Feeds that stream, event by event, to a real :class:`MainWindow` (offscreen, 1280 × 860)
   through the :class:`SessionWorker`'s signals, as the relay does, and times:
   - each handler (``on_opened``, ``on_updated``, ``on_estimate``, the deferred
     ``_render_pending`` that takes the latest estimate, the session view's
     ``_plot_step`` that draws one plot per event-loop pass, each plot's ``update_frame``,
     ``on_recorded``, ``on_idle``, ``on_finished``, ...), median and max in ms;
   - each plot's paint (the three pyqtgraph views) and each label paint;
   - the longest single event-loop pass after each event (handlers + layout + paint: what the
     event-loop probe of tests/app/test_responsiveness.py sees as a stall).
3. Times the patient window (real-patient sessions): show each query's letter at its size,
   blank it, each followed by a synchronous repaint (``repaint()``).

Run:   cd /work/main && /work/venv/bin/python benchmarks/bench_app_handlers.py [--trials 30]
The load average is printed with the figures: on a shared machine compare the maxima at a
similar load. Target: every handler and every event-loop pass well under 100 ms.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import pickle
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

#: The engine events fed to the window (through the worker's dispatch on their type); Idle too.
FED = ("SessionsListed", "Opened", "Updated", "Recorded", "EstimateReady", "Finished", "Failed", "Busy")
HANDLERS = (
    "on_opened",
    "on_updated",
    "on_estimate",
    "_render_pending",
    "on_recorded",
    "on_idle",
    "on_finished",
    "on_busy",
    "on_failed",
)


def record_session(folder: Path, protocol: str, trials: int, seed: int) -> list:
    """The events of a simulated session of ``trials`` answers, as the engine sends them."""
    from visiontune.app.logic.session_host import record_simulated_session

    return record_simulated_session(folder / "bench.sqlite3", protocol, trials, seed=seed)


def pipe_costs(events) -> dict[str, tuple[int, float, float]]:
    """``event type name -> (count, max pickled bytes, max pickle.loads ms)``."""
    out: dict[str, list] = collections.defaultdict(list)
    for event in events:
        kind = type(event).__name__
        blob = pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL)
        t0 = time.perf_counter()
        for _ in range(5):
            pickle.loads(blob)
        out[kind].append((len(blob), 1000 * (time.perf_counter() - t0) / 5))
    return {k: (len(v), max(b for b, _ in v), max(t for _, t in v)) for k, v in out.items()}


def _timed(table: dict, name: str, f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            table[name].append(1000 * (time.perf_counter() - t0))

    return wrapper


def _drain(app, window, quiet_s: float = 0.03, limit_s: float = 2.0) -> float:
    """Run the event loop until nothing happened for ``quiet_s``; the longest single pass, ms."""
    worst, t_end, last_busy = 0.0, time.perf_counter() + limit_s, time.perf_counter()
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        app.processEvents()
        dt = time.perf_counter() - t0
        worst = max(worst, dt)
        if dt > 0.0005 or window.render_timer.isActive():
            last_busy = time.perf_counter()
        elif time.perf_counter() - last_busy > quiet_s:
            break
        time.sleep(0.001)
    return 1000 * worst


def feed_window(events, folder: Path):
    """Feed ``events`` to a MainWindow; returns (handler ms, paint ms, loop-pass ms by event kind)."""
    from PySide6.QtWidgets import QApplication, QLabel

    from visiontune.app import logs, plots
    from visiontune.app.logic.settings import load_settings
    from visiontune.app.main_window import AppOptions, MainWindow
    from visiontune.app.session_view import SessionView

    app = QApplication.instance() or QApplication([])
    logs.configure_logging(folder / "logs")
    handlers: dict[str, list[float]] = collections.defaultdict(list)
    paints: dict[str, list[float]] = collections.defaultdict(list)
    for name in HANDLERS:  # wrapped before the window connects them
        setattr(MainWindow, name, _timed(handlers, name, getattr(MainWindow, name)))
    SessionView._plot_step = _timed(handlers, "SessionView._plot_step", SessionView._plot_step)
    for cls in (plots.AcuityMapPlot, plots.AcuityCurvePlot, plots.PsychometricPlot):
        cls.update_frame = _timed(handlers, f"{cls.__name__}.update_frame", cls.update_frame)
        cls.paintEvent = _timed(paints, f"{cls.__name__} paint", cls.paintEvent)
    QLabel.paintEvent = _timed(paints, "label paint", QLabel.paintEvent)
    options = AppOptions(
        db_path=folder / "gui.sqlite3",
        simulate=True,
        pace_s=0.0,
        windowed=True,
        settings_path=folder / "app.toml",
        calibration_path=folder / "cal.json",
        export_dir=folder / "exports",
    )
    window = MainWindow(options, load_settings(folder / "app.toml"))
    window.resize(1280, 860)
    window.show()
    deadline = time.monotonic() + 60
    while window.worker.store is None and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.005)
    _drain(app, window, quiet_s=0.5)
    window.prewarm_timer.stop()
    for table in (handlers, paints):
        table.clear()
    passes: dict[str, list[float]] = collections.defaultdict(list)
    worker = window.worker
    for event in events:
        kind = type(event).__name__
        if kind in FED:
            worker.signal_of[type(event)](event)
        elif kind == "Idle":
            worker.idle.emit()
        else:
            continue
        passes[kind].append(_drain(app, window))
    window.close()
    return handlers, paints, passes


def patient_window_costs(events, repeats: int = 1) -> dict[str, list[float]]:
    """Show / blank the patient window (1920 × 1080, 4 m) for every query, each with a synchronous repaint."""
    from PySide6.QtWidgets import QApplication

    from visiontune.app.logic.worker_values import Snapshot
    from visiontune.display import Calibration, load_letter_set
    from visiontune.display.qt_renderer import PatientWindow

    app = QApplication.instance() or QApplication([])
    queries = [e.value.query for e in events if isinstance(e.value, Snapshot) and e.value.query is not None]
    window = PatientWindow(Calibration(480.0, 270.0, 1920, 1080, 4000.0), load_letter_set("sloan"))
    window.resize(1920, 1080)
    window.show()
    app.processEvents()
    out: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(repeats):
        for q in queries:
            s = min(max(q.s_logmar, window.displayable.min_logmar), window.displayable.max_logmar)
            t0 = time.perf_counter()
            window.show(q.letter, s)
            window.repaint()
            out["patient show letter + repaint"].append(1000 * (time.perf_counter() - t0))
            t0 = time.perf_counter()
            window.blank()
            window.repaint()
            out["patient blank + repaint"].append(1000 * (time.perf_counter() - t0))
    window.close()
    return out


def _row(name: str, values: list[float]) -> str:
    return f"  {name:34s} n={len(values):4d}  median {statistics.median(values):7.2f} ms  max {max(values):7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=30, help="answers in the recorded session (default 30)")
    parser.add_argument("--protocol", default="clinical-sloan", help="shipped protocol name or .toml path")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vt-bench-app-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        events = record_session(folder, args.protocol, args.trials, args.seed)
        n = sum(1 for e in events if type(e).__name__ == "Recorded")
        print(
            f"recorded a simulated session: {n} answers, {len(events)} events, "
            f"{time.perf_counter() - t0:.1f} s (protocol {args.protocol}, seed {args.seed})"
        )
        print("pipe (per event kind): count, max pickled size, max pickle.loads time")
        for kind, (count, size, ms) in sorted(pipe_costs(events).items()):
            print(f"  {kind:16s} n={count:4d}  {size / 1024:7.1f} KiB  {ms:6.3f} ms")
        load = os.getloadavg()[0]
        handlers, paints, passes = feed_window(events, folder)
        print(f"GUI handlers (load average {load:.2f} before, {os.getloadavg()[0]:.2f} after):")
        for name, values in handlers.items():
            print(_row(name, values))
        print("paints:")
        for name, values in sorted(paints.items()):
            print(_row(name, values))
        print("longest event-loop pass after each event (handler + layout + paint):")
        for kind, values in sorted(passes.items()):
            print(_row(kind, values))
        print("patient window:")
        for name, values in patient_window_costs(events).items():
            print(_row(name, values))
        worst = max(max(v) for v in passes.values())
        print(f"worst event-loop pass: {worst:.1f} ms (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
