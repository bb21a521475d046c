"""The GUI thread keeps running: a 10 ms PreciseTimer probe runs over a whole
simulated session (the session view opening, 20 auto-answered trials, each with its refit,
next query and estimate in the engine process, the plots redrawn, the finish view); the
largest gap between two ticks minus the period is the worst event-loop stall, printed with
the 99th percentile, the median and the load average before and after.

The bar: the window never freezes for more than 100 ms. Measured on the 2-core dev VM
(the figures): 120-180 ms before the GUI-side work was made
cheap (axes repainted on every change, autoranging, plots resized by label changes, every
estimate drawn inside its handler), 40-70 ms after, at a load average of 5. A stall can also
come from the OS not scheduling the GUI process on a busy machine, which no code can prevent:
so the 100 ms bar is asserted when the machine is quiet (load average below
:data:`QUIET_LOAD` per core before and after the run), and a 500 ms bar otherwise; the tail
(99th percentile) must stay under 100 ms in any case.
"""

from __future__ import annotations

import json
import os
import time

from app_helpers import write_protocol
from PySide6.QtCore import Qt, QTimer

from visiontune.app.logic.keys import Phase

PROBE_MS = 10
#: Answers in the probed session; a longer probe: VISIONTUNE_PROBE_ANSWERS=60 pytest ... -s
ANSWERS = int(os.environ.get("VISIONTUNE_PROBE_ANSWERS", "20"))
#: Load average per core under which the machine counts as quiet.
QUIET_LOAD = 0.5
WORST_QUIET_MS = 100.0
WORST_LOADED_MS = 500.0
P99_MS = 100.0


class Probe:
    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(PROBE_MS)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def stalls_ms(self) -> list[float]:
        """Sorted gaps between consecutive ticks minus the period (ms)."""
        return sorted(1000.0 * (b - a) - PROBE_MS for a, b in zip(self.ticks, self.ticks[1:]))


def test_whole_simulated_session_never_stalls_the_event_loop(qtbot, make_window, paths, tmp_path):
    protocol = write_protocol(tmp_path, max_trials=ANSWERS, name="stall.toml")
    window = make_window(pace_s=0.02, protocol=protocol)
    qtbot.waitUntil(lambda: not window.prewarm_timer.isActive(), timeout=5_000)
    load_before = os.getloadavg()[0]
    probe = Probe()
    probe.timer.start()
    window.start_view.patient_id.setText("SIM-PROBE")
    qtbot.mouseClick(window.start_view.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.finish_view, timeout=180_000)
    qtbot.wait(100)  # the finish view's first paint is part of the session
    probe.timer.stop()
    load_after = os.getloadavg()[0]
    assert window.worker.pid not in (None, os.getpid())  # the session lives in the engine process
    assert window.phase == Phase.FINISHED
    stalls = probe.stalls_ms()
    worst, p99, median = stalls[-1], stalls[int(0.99 * (len(stalls) - 1))], stalls[len(stalls) // 2]
    cores = os.cpu_count() or 1
    quiet = max(load_before, load_after) < QUIET_LOAD * cores
    record = {
        "answers": ANSWERS,
        "session_seconds": round(probe.ticks[-1] - probe.ticks[0], 2),
        "ticks": len(probe.ticks),
        "worst_stall_ms": round(worst, 1),
        "p99_stall_ms": round(p99, 1),
        "median_stall_ms": round(median, 1),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(load_after, 2),
        "cores": cores,
        "quiet": quiet,
    }
    print("event-loop probe:", json.dumps(record))
    assert len(probe.ticks) > 100
    assert median < PROBE_MS, record
    assert p99 < P99_MS, record
    assert worst < (WORST_QUIET_MS if quiet else WORST_LOADED_MS), record
