"""Simulated sessions the refraction-loop and session-engine tests drive the same way."""

from __future__ import annotations

from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession, SimulatedPresenter


def answer_until(driver, presenter, kind: type, max_steps: int = 80):
    """Answer the questions of ``driver`` (a :class:`~visiontune.refraction.loop.Refraction` or a
    :class:`~visiontune.session.engine.RefractionSession`: ``next_query`` and ``record``) with
    ``presenter`` until it asks one of ``kind`` (e.g. ``PendingSlider``), and return that one."""
    for _ in range(max_steps):
        q = driver.next_query()
        if isinstance(q, kind):
            return q
        driver.record(presenter.present(q))
    raise AssertionError(f"no {kind.__name__} asked in {max_steps} questions")


class SimulatedCase:
    """Case 0 of the adult-clinic population (seed 5) under ``protocol``: a SIMULATED session of
    it in a store, and its simulated patient answering."""

    def __init__(self, protocol) -> None:
        self.protocol = protocol
        self.case = draw_cases(population_by_name("adult-clinic"), 1, 5)[0]
        self.start = StartingPoint(self.case.start_rx, self.case.start_source, self.case.age_years)

    def session(self, store) -> RefractionSession:
        return RefractionSession.start(
            store,
            patient_id="P1",
            eye="OD",
            protocol=self.protocol,
            simulated=True,
            seed=self.case.seed,
            start=self.start,
        )

    def presenter(self) -> SimulatedPresenter:
        return SimulatedPresenter(self.case.patient(self.protocol.n_alternatives))
