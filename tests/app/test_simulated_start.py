"""A starting prescription typed for a simulated patient is the patient's reading: the patient
is drawn around it (its true correction = the typed start minus the population's start error,
drawn with the session's seed), and the finish page says, marked SIMULATED, what the truth was
and how far the prescription found lies from it. Before, the typed start was ignored: typing
S -2.25 / C -1.25 x 35 gave a patient 2.8 D away, and the result looked like a search gone astray."""

from __future__ import annotations

import numpy as np
import pytest
from test_session_controller import snapshot

from visiontune.app.logic.events import Shown
from visiontune.app.logic.messages import Failed, Opened, OpenStore, StartSession
from visiontune.app.logic.session_controller import SessionController
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.simulation import case_around_start, new_case
from visiontune.app.logic.worker_values import FinishedView, NewSession
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.population import PatientCase, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.session.store import TrialStore

TYPED = Prescription(-2.25, -1.25, 35.0)


def pv(rx: Prescription) -> np.ndarray:
    return rx.power_vector_array()


def test_the_patient_is_the_typed_start_minus_its_own_drawn_error():
    protocol = load_protocol("clinical-sloan")
    case = new_case(11, protocol)
    moved = case_around_start(case, StartingPoint(TYPED, "retinoscopy", case.age_years))
    np.testing.assert_allclose(pv(TYPED) - pv(moved.true_rx), pv(case.start_rx) - pv(case.true_rx), atol=1e-12)
    assert (moved.start_rx, moved.start_source) == (TYPED, "retinoscopy")
    # the same patient otherwise
    assert (moved.seed, moved.slope, moved.age_years) == (case.seed, case.slope, case.age_years)
    assert case_around_start(case, StartingPoint(TYPED, "autorefraction")) == case_around_start(
        new_case(11, protocol), StartingPoint(TYPED, "autorefraction")
    )  # seeded: the same seed, the same patient


def test_over_many_seeds_the_truth_lies_from_the_typed_start_as_the_population_says():
    """The start error's M is N(-0.20, 0.35) D (adult-clinic's autorefraction), J0 and J45
    N(0, 0.15) D, plus the reading's rounding to 0.25 D: checked on 400 seeds within 4
    standard errors of the mean and 25% of the spread."""
    protocol = load_protocol("clinical-sloan")
    typed = StartingPoint(TYPED, "autorefraction")
    moved = [case_around_start(new_case(seed, protocol), typed) for seed in range(400)]
    error = np.array([pv(TYPED) - pv(case.true_rx) for case in moved])
    start = population_by_name("adult-clinic").start
    n = len(error)
    assert abs(error[:, 0].mean() - start.bias_m_d) < 4 * start.sd_m_d / np.sqrt(n)
    assert abs(error[:, 0].std() / start.sd_m_d - 1) < 0.25
    for j in (1, 2):
        assert abs(error[:, j].mean()) < 4 * start.sd_j_d / np.sqrt(n) + 0.01
        assert abs(error[:, j].std() / start.sd_j_d - 1) < 0.25
    assert np.linalg.norm(error, axis=1).max() < 2.0


def test_a_patient_without_a_start_is_left_as_it_is():
    gp_case = new_case(3, load_protocol("paper-ucb-ald"))  # the paper's patient starts from nothing
    assert gp_case.start_rx is None
    assert case_around_start(gp_case, StartingPoint(TYPED, "autorefraction")) is gp_case
    case = new_case(3, load_protocol("clinical-sloan"))
    assert case_around_start(case, StartingPoint()) is case
    # its own reading typed (what the screenshots do): the very patient the command line draws
    assert case_around_start(case, StartingPoint(case.start_rx, "autorefraction")) is case


def test_a_simulated_session_started_from_a_typed_prescription_records_a_patient_around_it(tmp_path):
    events = []
    host = SessionHost(events.append)
    try:
        host.handle(OpenStore(str(tmp_path / "log.sqlite3")))
        host.handle(
            StartSession(
                NewSession(
                    "SIM-0001",
                    "OD",
                    "clinical-sloan-compare",
                    simulated=True,
                    starting_rx=TYPED,
                    start_source="autorefraction",
                )
            )
        )
        assert not [e.value for e in events if isinstance(e, Failed)]
        snap = next(e.value for e in events if isinstance(e, Opened))
    finally:
        host.shutdown()
    case = PatientCase.from_dict(snap.simulated_case)
    assert snap.start.rx == TYPED and case.start_rx == TYPED
    assert np.linalg.norm(pv(case.true_rx) - pv(TYPED)) < 1.0  # it was 2.83 D: the seed's own patient
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        (info,) = store.list_sessions()
    assert info.simulated


def test_the_finish_page_says_the_simulated_truth_and_how_far_the_result_is_from_it(tmp_path):
    protocol = load_protocol("clinical-sloan")
    case = case_around_start(new_case(4, protocol), StartingPoint(TYPED, "autorefraction"))
    pages = []
    controller = SessionController(type("E", (), {"submit": lambda *a: None})(), export_dir=lambda: tmp_path)
    controller.connect(lambda kind, value: pages.append(value) if kind == Shown.FINISHED else None)
    controller.on_opened(snapshot(0, simulated_case=case.to_dict()))
    found = {"sphere_d": -2.0, "cylinder_d": -1.25, "axis_deg": 35.0}
    controller.on_finished(FinishedView(1, "P-1", "OD", True, {"rounded": found, "cylinder_form": "minus"}))
    (page,) = pages
    off = np.linalg.norm(pv(Prescription(-2.0, -1.25, 35.0)) - pv(case.true_rx))
    assert page.truth.startswith("SIMULATED patient's true correction: S \u2212")
    assert f"{off:.2f} D from the prescription found" in page.truth


def test_a_truth_outside_the_range_is_refused_naming_it():
    protocol = load_protocol("clinical-sloan")
    case = next(c for c in (new_case(s, protocol) for s in range(100)) if (pv(c.start_rx) - pv(c.true_rx))[0] > 0.05)
    with pytest.raises(InvalidInputError, match="simulated patient's true correction"):  # M below -12 D
        case_around_start(case, StartingPoint(Prescription(-12.0, 0.0, 180.0), "autorefraction"))


def test_the_truth_line_wraps_inside_the_window(qtbot):
    from visiontune.app.finish_view import FinishView

    page = FinishView()
    qtbot.addWidget(page)
    truth = (
        "SIMULATED patient's true correction: S \u22121.46 / C \u22121.07 \u00d7 031, 0.17 D from the "
        "prescription found (power-vector distance); acuity through the prescription found: \u22120.00 logMAR "
        "(20/20)."
    )
    page.show_result(FinishedView(1, "P-1", "OD", True, None), truth)
    assert page.truth.text() == truth and page.minimumSizeHint().width() < 1280  # it widened the window to 1637 px
