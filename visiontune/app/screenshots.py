"""Screenshots of the first three lenses of a simulated session started from a typed autorefraction,
and of a simulated visit (which eye, the next eye, the balance question, both eyes at the finish).

    QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots [--out docs/screenshots]
    QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots --visit [--out docs/screenshots]
    QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots --protocol clinical-sloan

Runs the app's main window offscreen with every file in a temporary folder (nothing is written
to the user's trial log, settings or app log), types the simulated patient's autorefraction
into the start screen (sphere, cylinder, axis; source autorefraction), starts the session and
saves the session page as ``first-three-lenses-{1,2,3}.png`` while each of the first three
lenses waits to be set; the simulated patient answers in between (the default protocol asks
comparisons of lens 1 and lens 2 as well as letters). Another protocol's pages are
``<protocol>-{1,2,3}.png`` (``clinical-sloan``: letters only). A chart line among them
(``clinical-sloan-lines-filed``) is also saved while it is read, the simulated patient's answers
keyed letter by letter but the last, as ``<protocol>-{k}-line.png``.

With ``--visit`` it starts a visit of a simulated patient instead (both eyes from their own
autorefraction, the shipped protocol) and saves ``visit-which-eye.png`` (the left eye's
session, its eye said large), ``visit-next-eye.png`` (between the eyes), ``visit-balance.png``
(the first balance question) and ``visit-finish.png`` (both eyes side by side, the right eye
signed off with an edit); the simulated patient answers everything.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from visiontune.app.logic.keys import Action, Command, Phase
from visiontune.app.logic.settings import AppSettings
from visiontune.app.logic.simulation import new_case
from visiontune.app.logic.visit_flow import Step, VisitAction, VisitCommand
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol

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


def _open_window(app, folder: Path, protocol: str, size):
    """A simulated app window on a trial log and settings in ``folder``, its engine ready."""
    from visiontune.app.main_window import AppOptions, MainWindow  # late: Qt

    options = AppOptions(
        db_path=folder / "log.sqlite3",
        simulate=True,
        pace_s=0.0,
        protocol=protocol,
        windowed=True,
        settings_path=folder / "app.toml",
        calibration_path=folder / "calibration.json",
        export_dir=folder / "exports",
    )
    window = MainWindow(options, AppSettings(protocol=protocol))
    window.resize(*size)
    window.show()
    _wait(app, lambda: window.worker.store is not None)
    return window


def take(
    out: Path, *, protocol: str = DEFAULT_PROTOCOL, seed: int = DEFAULT_SEED, size=(1280, 860), settle_s: float = 1.0
) -> list[Path]:
    """Save the three screenshots in ``out``; return their paths. ``settle_s``: seconds of
    event processing before each grab (the axes' text widths settle after a first paint)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    import dataclasses

    from PySide6.QtWidgets import QApplication

    case = new_case(seed, load_protocol(protocol))
    if case.start_rx is None:
        raise SystemExit(f"protocol {protocol}: its simulated patient has no autorefraction to type")
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    saved = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        window = _open_window(app, folder, protocol, size)
        start = window.start_view
        start.patient_id.setText("SIM-0001")
        start.sphere.setText(_power(case.start_rx.sphere_d))
        start.cylinder.setText(_power(case.start_rx.cylinder_d))
        start.axis.setText(f"{case.start_rx.axis_deg:.0f}")
        start.start_source.setCurrentIndex(start.start_source.findData("autorefraction"))
        window.start_session(dataclasses.replace(start.request(), seed=seed))  # the form as typed, this seed
        view = window.session_view
        for k in range(3):
            _wait(
                app,
                lambda k=k: (
                    window.phase == Phase.LENS
                    and window.snapshot.n_trials == k
                    and window.last_estimate is not None
                    and window.last_estimate.n_trials == k
                    and not view.plots_pending
                ),
            )
            settle = time.monotonic() + settle_s
            while time.monotonic() < settle:
                app.processEvents()
                time.sleep(0.02)
            path = out / (NAME if protocol == DEFAULT_PROTOCOL else f"{Path(protocol).stem}-{{}}.png").format(k + 1)
            if not window.grab().save(str(path)):
                raise OSError(f"{path}: cannot save the screenshot")
            saved.append(path)
            window.perform(Command(Action.CONFIRM_LENS), "screenshots")
            if window.phase == Phase.LINE:  # a chart line: keyed as the simulated patient reads it
                saved.append(_grab_line(app, window, path.with_name(path.stem + "-line.png")))
                continue
            window.perform(Command(Action.SIMULATED_ANSWER), "screenshots")
        window.close()
    return saved


def _grab_line(app, window, path: Path) -> Path:
    """A chart line on screen: the simulated patient's answers keyed letter by letter, the page
    saved to ``path`` before the last letter, then the last keyed and the line recorded."""
    marks = window.controller.sim_line
    for right in marks[:-1]:
        window.perform(Command(Action.LINE_KEY, "+" if right else "-"), "screenshots")
    for _ in range(10):
        app.processEvents()
        time.sleep(0.02)
    if not window.grab().save(str(path)):
        raise OSError(f"{path}: cannot save the screenshot")
    window.perform(Command(Action.LINE_KEY, "+" if marks[-1] else "-"), "screenshots")
    window.perform(Command(Action.LINE_KEY, "ENTER"), "screenshots")
    return path


VISIT_NAMES = ("visit-which-eye.png", "visit-next-eye.png", "visit-balance.png", "visit-finish.png")


def take_visit(
    out: Path,
    *,
    protocol: str = DEFAULT_PROTOCOL,
    seed: int = DEFAULT_SEED,
    size=(1280, 860),
    settle_s: float = 1.0,
    which_eye_at: int = 8,
    timeout_s: float = 900.0,
) -> list[Path]:
    """Save the visit's four screenshots (:data:`VISIT_NAMES`) in ``out``; return their paths.
    ``which_eye_at``: the left eye's session is grabbed with this many answers."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
    import dataclasses

    from PySide6.QtWidgets import QApplication

    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    saved = []

    def settle() -> None:
        end = time.monotonic() + settle_s
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    def grab(name: str) -> None:
        settle()
        path = out / name
        if not window.grab().save(str(path)):
            raise OSError(f"{path}: cannot save the screenshot")
        saved.append(path)

    def page(step) -> None:
        visits = window.visits
        want = visits.finish_view if step == Step.FINISH else visits.step_view
        _wait(
            app,
            lambda: (
                window.stack.currentWidget() is want
                and visits.view is not None
                and visits.view.step == step
                and not visits.pending
            ),
            timeout_s,
        )

    def refract(eye: str, grab_at: int | None = None) -> None:
        view = window.session_view
        while True:
            _wait(
                app,
                lambda: (
                    window.phase in (Phase.LENS, Phase.STOPPED) and window.snapshot.eye == eye and window.worker_idle
                ),
                timeout_s,
            )
            n = window.snapshot.n_trials
            if grab_at is not None and (n == grab_at or window.phase == Phase.STOPPED):
                _wait(
                    app,
                    lambda n=n: (
                        window.last_estimate is not None
                        and window.last_estimate.n_trials == n
                        and not view.plots_pending
                    ),
                    timeout_s,
                )
                grab(VISIT_NAMES[0])
                grab_at = None
            if window.phase == Phase.STOPPED:
                break
            window.perform(Command(Action.CONFIRM_LENS), "screenshots")
            window.perform(Command(Action.SIMULATED_ANSWER), "screenshots")
        window.perform(Command(Action.FINISH), "auto")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        window = _open_window(app, folder, protocol, size)
        start = window.start_view
        start.patient_id.setText("SIM-0001")
        start.choose_visit()
        window.visits.start(dataclasses.replace(start.visit_request(), seed=seed))  # the form as typed, this seed
        refract("OD")
        page(Step.REFRACT)
        grab(VISIT_NAMES[1])
        window.visits.perform(VisitCommand(VisitAction.CONTINUE), "screenshots")
        refract("OS", grab_at=which_eye_at)
        _wait(
            app,
            lambda: (
                window.visits.view is not None and window.visits.view.step != Step.REFRACT and not window.visits.pending
            ),
            timeout_s,
        )
        if window.visits.view.step == Step.BALANCE:
            grab(VISIT_NAMES[2])
            while window.visits.view.step == Step.BALANCE:
                q = window.visits.view.question
                window.visits.perform(VisitCommand(VisitAction.ANSWER, q.simulated_answer), "screenshots")
                _wait(app, lambda: not window.visits.pending, timeout_s)
        else:
            print(
                f"seed {seed}: the balance was not done ({window.visits.view.balance.reason}); no balance screenshot",
                file=sys.stderr,
            )
        # a presbyope's near addition: the simulated patient answers each near letter (the finish shows the adds)
        _wait(app, lambda: window.visits.view.step in (Step.NEAR, Step.FINISH) and not window.visits.pending, timeout_s)
        while window.visits.view.step == Step.NEAR:
            near_view = window.visits.view
            q = near_view.near_question
            if q is None:
                window.visits.perform(VisitCommand(VisitAction.NEAR_BEGIN), "screenshots")
            else:
                answer = "+" if q.simulated_correct else "-"
                window.visits.perform(VisitCommand(VisitAction.NEAR_ANSWER, answer), "screenshots")
            _wait(app, lambda v=near_view: window.visits.view is not v and not window.visits.pending, timeout_s)
        page(Step.FINISH)
        od = window.visits.finish_view.columns["OD"]  # an edit signed off: shown beside the found prescription
        end = window.visits.view.eyes["OD"].end_point
        od.sphere.setText(f"{end.sphere_d - 0.25:+.2f}")
        od.by.setText("Dr A. Optom")
        window.visits.finish_view._sign("OD")
        _wait(app, lambda: window.visits.view.eyes["OD"].signed is not None and not window.visits.pending, timeout_s)
        grab(VISIT_NAMES[3])
        window.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m visiontune.app.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"), help="folder (default: docs/screenshots)")
    parser.add_argument(
        "--protocol", default=DEFAULT_PROTOCOL, help=f"an optics protocol (default: {DEFAULT_PROTOCOL})"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"session seed (default {DEFAULT_SEED})")
    parser.add_argument("--visit", action="store_true", help="a simulated visit's pages (visit-*.png) instead")
    args = parser.parse_args(argv)
    shoot = take_visit if args.visit else take
    for path in shoot(args.out, protocol=args.protocol, seed=args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
