"""Screenshots of the first three lenses of a simulated session started from a typed autorefraction.

    QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots [--out docs/screenshots]

Runs the app's main window offscreen with every file in a temporary folder (nothing is written
to the user's trial log, settings or app log), types the simulated patient's autorefraction
into the start screen (sphere, cylinder, axis; source autorefraction), starts the session and
saves the session page as ``first-three-lenses-{1,2,3}.png`` while each of the first three
lenses waits to be set; the simulated patient answers in between.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SEED = 5
NAME = "first-three-lenses-{}.png"


def _wait(app, condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the session did not reach the expected state in time")
        app.processEvents()
        time.sleep(0.01)


def _power(x: float) -> str:
    return f"{x:+.2f}"


def take(out: Path, *, protocol: str = "clinical-sloan", seed: int = DEFAULT_SEED, size=(1280, 860),
         settle_s: float = 1.0) -> list[Path]:
    """Save the three screenshots in ``out``; return their paths. ``settle_s``: seconds of
    event processing before each grab (the axes' text widths settle after a first paint)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    import dataclasses

    from PySide6.QtWidgets import QApplication

    from visiontune.app.keys import Action, Command, Phase
    from visiontune.app.main_window import AppOptions, MainWindow
    from visiontune.app.settings import AppSettings
    from visiontune.app.simulation import new_case
    from visiontune.refraction.protocol import load_protocol

    case = new_case(seed, load_protocol(protocol))
    if case.start_rx is None:
        raise SystemExit(f"protocol {protocol}: its simulated patient has no autorefraction to type")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    saved = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        options = AppOptions(db_path=folder / "log.sqlite3", simulate=True, pace_s=0.0, protocol=protocol,
                             windowed=True, settings_path=folder / "app.toml",
                             calibration_path=folder / "calibration.json", export_dir=folder / "exports")  # fmt: skip
        window = MainWindow(options, AppSettings(protocol=protocol))
        window.resize(*size)
        window.show()
        _wait(app, lambda: window.worker.store is not None)
        start = window.start_view
        start.patient_id.setText("SIM-0001")
        start.sphere.setText(_power(case.start_rx.sphere_d))
        start.cylinder.setText(_power(case.start_rx.cylinder_d))
        start.axis.setText(f"{case.start_rx.axis_deg:.0f}")
        start.start_source.setCurrentIndex(start.start_source.findData("autorefraction"))
        window.start_session(dataclasses.replace(start.request(), seed=seed))  # the form as typed, this seed
        view = window.session_view
        for k in range(3):
            _wait(app, lambda k=k: window.phase == Phase.LENS and window.snapshot.n_trials == k
                  and window.last_estimate is not None and window.last_estimate.n_trials == k
                  and not view.plots_pending)  # fmt: skip
            settle = time.monotonic() + settle_s
            while time.monotonic() < settle:
                app.processEvents()
                time.sleep(0.02)
            path = out / NAME.format(k + 1)
            if not window.grab().save(str(path)):
                raise OSError(f"{path}: cannot save the screenshot")
            saved.append(path)
            window.perform(Command(Action.CONFIRM_LENS), "screenshots")
            window.perform(Command(Action.SIMULATED_ANSWER), "screenshots")
        window.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m visiontune.app.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"), help="folder (default: docs/screenshots)")
    parser.add_argument("--protocol", default="clinical-sloan", help="an optics protocol (default: clinical-sloan)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"session seed (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    for path in take(args.out, protocol=args.protocol, seed=args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
