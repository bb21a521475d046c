"""Simulated sessions the refraction-loop and session-engine tests drive the same way."""

from __future__ import annotations

import numpy as np

from visiontune.refraction.loop import MemoryLog, Refraction
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

    def bench_and_clinic(self, store, steps: int) -> tuple[list, list]:
        """The trials of ``steps`` answers of this case refracted in the in-memory log (the bench,
        :class:`~visiontune.refraction.loop.Refraction`) and in ``store`` (the clinic's session)."""
        bench = Refraction(MemoryLog(), self.protocol, seed=self.case.seed, start=self.start, simulated=True)
        bench.run(self.presenter(), max_steps=steps)
        with self.session(store) as clinic:
            clinic.run(self.presenter(), max_steps=steps)
            return bench.trials(), clinic.trials()


def left_as(session) -> tuple:
    """What a session resumed after ``session`` must give again: ``(session id, next question,
    particles, weights)``."""
    post = session.engine.posterior(session.trials())
    return session.session_id, session.next_query(), post.theta.copy(), post.weights.copy()


def assert_resumes_as_left(store, left: tuple) -> None:
    """The session of :func:`left_as` resumed from ``store`` (a new process: the log is all there
    is) asks the same next question and rebuilds the same particles and weights."""
    session_id, expected, theta, weights = left
    with RefractionSession.resume(store, session_id) as again:
        assert again.next_query() == expected
        post = again.engine.posterior(again.trials())
        np.testing.assert_array_equal(post.theta, theta)
        np.testing.assert_array_equal(post.weights, weights)
