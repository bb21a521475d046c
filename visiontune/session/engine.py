"""RefractionSession: one eye of one patient, propose -> present -> record -> refit.

The trial log is the source of truth. Every answer is committed to it before anything else
happens; the model is a pure function of the log's valid (non-void) trials and the protocol's
fixed hyperparameters, and every random choice for trial ``k`` (``k`` = trials recorded so far,
void ones included) draws from ``default_rng([seed, k, purpose])``. So a session resumed after a
crash proposes exactly the query the uninterrupted one would have (DESIGN.md, data flow).

The policy is the protocol's contextual rule, e.g. UCB-ALD: lens ``x`` by UCB_Φ at the
reference letter size, then letter size ``s`` by BALD (seed 002 §3.3).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from visiontune import __version__
from visiontune.acquisition.policy import Data
from visiontune.errors import InvalidInputError, SessionError
from visiontune.gp import ProbitGP
from visiontune.optics import Prescription
from visiontune.session import estimate, setup
from visiontune.session.protocol import Protocol
from visiontune.session.records import Lens, SessionState, Trial, TrialInput
from visiontune.session.store import SessionHandle, TrialStore

_POLICY, _LETTER, _ESTIMATE, _REGION = 0, 1, 2, 3


@dataclass(frozen=True)
class PendingQuery:
    """The next presentation: trial ``index`` (0-based, void trials counted), letter size
    ``s_logmar``, the lens to set (axis fixed by the protocol) and the letter to show."""

    index: int
    s_logmar: float
    lens: Prescription
    letter: str


@dataclass(frozen=True)
class Answer:
    """What the patient did: ``letter_named`` (scored against the letter shown; ``None`` for
    "don't know", scored wrong) or, without a letter, ``correct`` as typed by the clinician."""

    correct: bool | None = None
    letter_named: str | None = None


@dataclass(frozen=True)
class CurrentEstimate:
    """The model's best lens now, its credible region and the predicted acuity through it."""

    n_trials: int
    lens: Prescription
    region: estimate.CredibleRegion | None
    va_logmar: float
    va_interval: tuple[float, float]


def _letters(protocol: Protocol) -> tuple[str, ...]:
    from visiontune.display.optotypes import load_letter_set

    return tuple(load_letter_set(protocol.letter_set).letters)


class RefractionSession:
    """A refraction session driven through the trial log. Create with :meth:`start` or
    :meth:`resume`; use as a context manager (releases the session lock)."""

    def __init__(self, store: TrialStore, handle: SessionHandle):
        self._store = store
        self._handle = handle
        info = handle.info
        self.session_id = info.session_id
        self.seed = int(info.seed)
        self.simulated = bool(info.simulated)
        self.protocol: Protocol = info.protocol
        self.problem = setup.problem(self.protocol)
        self.axis_deg = setup.axis_deg(self.protocol)
        self.kernel = setup.kernel(self.protocol)
        self._policy = setup.policy(self.protocol)
        self.letters = _letters(self.protocol)
        self._model: ProbitGP | None = None
        self._pending: PendingQuery | None = None
        self._estimate: CurrentEstimate | None = None
        self._presented_at: datetime | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def start(
        cls,
        store: TrialStore,
        *,
        patient_id: str,
        eye: str,
        protocol: Protocol,
        simulated: bool,
        seed: int | None = None,
        calibration=None,
        starting_rx: Prescription | None = None,
    ) -> RefractionSession:
        """Create the session in the log (patient created if new) and open it."""
        try:
            store.get_patient(patient_id)
        except Exception:  # noqa: BLE001 - unknown patient: create it
            store.create_patient(patient_id)
        rx = None if starting_rx is None else {
            "sphere_d": starting_rx.sphere_d, "cylinder_d": starting_rx.cylinder_d, "axis_deg": starting_rx.axis_deg
        }  # fmt: skip
        sid = store.create_session(
            patient_id, eye=eye, protocol=protocol, seed=seed, calibration=calibration, simulated=simulated,
            starting_rx=rx, software_version=__version__,
        )  # fmt: skip
        return cls(store, store.open_session(sid))

    @classmethod
    def resume(cls, store: TrialStore, session_id: int) -> RefractionSession:
        """Reopen an unfinished session where it stopped (a paused one is resumed)."""
        info = store.get_session(session_id)
        if info.state == SessionState.FINISHED:
            raise SessionError(f"session {session_id} is finished; it can be exported, not resumed")
        handle = store.open_session(session_id)
        if info.state == SessionState.PAUSED:
            handle.resume()
        return cls(store, handle)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> RefractionSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def state(self) -> SessionState:
        return self._handle.info.state

    def trials(self, include_void: bool = False) -> list[Trial]:
        return self._handle.trials(include_void)

    # ------------------------------------------------------------------ model
    def _rng(self, k: int, purpose: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, k, purpose])

    def _data(self, trials: list[Trial]) -> Data:
        X = np.array([[t.s_logmar, t.lens.sphere_d, t.lens.cylinder_d] for t in trials], dtype=float).reshape(-1, 3)
        y = np.array([float(t.correct) for t in trials])
        return Data(X, y)

    def model_for(self, trials: list[Trial]) -> ProbitGP:
        """The probit GP fitted (fixed hyperparameters) to ``trials``' answers."""
        data = self._data(trials)
        return ProbitGP(self.kernel, data.X, data.y)

    @property
    def model(self) -> ProbitGP:
        """The model of the log's valid trials (refit after every answer or undo)."""
        if self._model is None:
            self._model = self.model_for(self.trials())
        return self._model

    def _invalidate(self) -> None:
        self._model = self._pending = self._estimate = None
        self._presented_at = None

    # ------------------------------------------------------------------ trials
    def next_query(self) -> PendingQuery:
        """The next presentation (computed once, then cached until the log changes)."""
        self._require_open("propose a query")
        if self._pending is None:
            k = len(self.trials(include_void=True))
            valid = self.trials()
            q = self._policy(self.model, self.problem, self._data(valid), self._rng(k, _POLICY))
            letter = self.letters[int(self._rng(k, _LETTER).integers(len(self.letters)))]
            sphere, cylinder = setup.trial_lens(q.x, self.problem)
            lens = Prescription(sphere, cylinder, self.axis_deg)
            self._pending = PendingQuery(k, float(q.s[0]), lens, letter)
        return self._pending

    def mark_presented(self) -> None:
        """The clinician confirmed the lens and the letter is on screen (timestamp)."""
        self._presented_at = datetime.now(timezone.utc)

    def score(self, answer: Answer, letter_shown: str) -> tuple[bool, str | None]:
        """``(correct, letter_named)`` for an answer; a letter outside the set is an error."""
        if answer.letter_named is not None:
            named = answer.letter_named.strip().upper()
            if named not in self.letters:
                raise InvalidInputError(
                    f"letter_named: {answer.letter_named!r} is not a letter of the {self.protocol.letter_set} set "
                    f"({' '.join(self.letters)}); nothing was recorded"
                )
            return named == letter_shown, named
        if answer.correct is None:
            return False, None
        if not isinstance(answer.correct, (bool, np.bool_)):
            raise InvalidInputError(f"correct: expected True or False, got {answer.correct!r}")
        return bool(answer.correct), None

    def record(self, answer: Answer) -> Trial:
        """Commit the answer to the pending query to the log, then invalidate the model."""
        q = self.next_query()
        correct, named = self.score(answer, q.letter)
        lens = Lens(q.lens.sphere_d, q.lens.cylinder_d, q.lens.axis_deg % 180.0)
        trial = self._handle.record_trial(
            TrialInput(q.s_logmar, lens, q.letter, correct, letter_named=named, presented_at=self._presented_at)
        )
        self._invalidate()
        return trial

    def undo(self) -> Trial | None:
        """Void the last valid answer (kept in the log, marked void)."""
        trial = self._handle.undo()
        self._invalidate()
        return trial

    def pause(self) -> None:
        self._handle.pause()
        self._pending = None

    def resume_paused(self) -> None:
        self._handle.resume()

    def _require_open(self, action: str) -> None:
        state = self.state
        if state != SessionState.OPEN:
            raise SessionError(f"cannot {action}: session {self.session_id} is {state.value}")

    # ------------------------------------------------------------------ estimates
    def current_estimate(self, *, with_region: bool = True) -> CurrentEstimate:
        """Best lens, credible region and predicted acuity for the log as it is now."""
        if self._estimate is None or (with_region and self._estimate.region is None):
            k = len(self.trials(include_void=True))
            model = self.model
            x = estimate.best_lens(model, self.problem, self._rng(k, _ESTIMATE))
            level = self.protocol.stopping.precision.level if self.protocol.stopping.precision else 0.95
            region = estimate.credible_region(model, self.problem, self._rng(k, _REGION), level=level) if with_region else None
            va, lo, hi = estimate.predicted_acuity(model, self.problem, x[None, :], level=level)
            self._estimate = CurrentEstimate(
                len(self.trials()), Prescription(float(x[0]), float(x[1]), self.axis_deg), region,
                float(va[0]), (float(lo[0]), float(hi[0])),
            )  # fmt: skip
        return self._estimate

    def stop_reason(self) -> str | None:
        """``"budget"`` when the trial budget is spent; ``"precision"`` when the credible
        intervals of sphere and cylinder are narrower than the protocol's widths (after
        ``min_trials`` and the initial random trials); else ``None``."""
        stopping = self.protocol.stopping
        n = len(self.trials())
        if n >= stopping.max_trials:
            return "budget"
        p = stopping.precision
        if p is not None and n >= max(stopping.min_trials, self.protocol.initial_random_trials):
            ws, wc = self.current_estimate().region.widths_d
            if ws <= p.sphere_d and wc <= p.cylinder_d:
                return "precision"
        return None

    def acuity_curve(self, max_points: int = 60) -> list[list[float]]:
        """``[[n_trials, predicted logMAR through the estimate], ...]`` replayed from the log
        at up to ``max_points`` evenly spaced trial counts."""
        valid = self.trials()
        counts = np.unique(np.linspace(1, len(valid), min(max_points, len(valid))).round().astype(int)) if valid else []
        curve = []
        for n in counts:
            model = self.model_for(valid[:n])
            x = estimate.best_lens(model, self.problem, self._rng(int(n), _ESTIMATE))
            va, _, _ = estimate.predicted_acuity(model, self.problem, x[None, :])
            curve.append([int(n), float(va[0])])
        return curve

    def result(self, stopped_by: str) -> dict:
        """The session result (the schema :mod:`visiontune.report` documents)."""
        est = self.current_estimate()
        rounded = est.lens.rounded()
        valid = self.trials()
        times = [t for tr in valid for t in (tr.presented_at, tr.answered_at) if t is not None]
        duration = (max(times) - min(times)).total_seconds() if times else 0.0
        return {
            "estimate": {"sphere_d": est.lens.sphere_d, "cylinder_d": est.lens.cylinder_d, "axis_deg": est.lens.axis_deg},
            "rounded": {"sphere_d": rounded.sphere_d, "cylinder_d": rounded.cylinder_d, "axis_deg": rounded.axis_deg},
            "credible_interval": {"sphere_d": list(est.region.sphere_d), "cylinder_d": list(est.region.cylinder_d),
                                  "level": est.region.level},
            "predicted_va_logmar": est.va_logmar,
            "predicted_va_interval": list(est.va_interval),
            "trials_used": len(valid),
            "duration_s": duration,
            "stopped_by": stopped_by,
            "acuity_curve": self.acuity_curve(),
            "posterior_map": estimate.acuity_map(self.model, self.problem),
            "simulated": self.simulated,
        }  # fmt: skip

    def finish(self, stopped_by: str = "clinician") -> dict:
        """Compute the result, store it and close the session for good."""
        if self.state == SessionState.FINISHED:
            raise SessionError(f"session {self.session_id} is already finished")
        result = self.result(stopped_by)
        self._handle.finish(result)
        self._invalidate()
        return result

    # ------------------------------------------------------------------ headless loop
    def run(self, presenter, *, progress=None, max_steps: int | None = None) -> dict | None:
        """Propose, present, record until a stopping rule fires (then finish and return the
        result) or ``max_steps`` answers were recorded (return ``None``, session left open).
        ``progress(trial, session)`` is called after each recorded answer."""
        steps = 0
        while (reason := self.stop_reason()) is None:
            if max_steps is not None and steps >= max_steps:
                return None
            query = self.next_query()
            self.mark_presented()
            trial = self.record(presenter.present(query))
            steps += 1
            if progress is not None:
                progress(trial, self)
        return self.finish(reason)


class SimulatedPresenter:
    """Presents queries to a :class:`visiontune.optics.SimulatedPatient` (answers correct or
    wrong by sampling the psychometric function of the letter size through the lens)."""

    def __init__(self, patient, *, pace_s: float = 0.0):
        self.patient = patient
        self.pace_s = pace_s

    def present(self, query: PendingQuery) -> Answer:
        if self.pace_s:
            time.sleep(self.pace_s)
        return Answer(correct=bool(self.patient.answer(query.s_logmar, query.lens)))
