"""The values the session engine sends to the GUI, and the plot helpers that build them.

Everything here crosses the pipe between the engine process and the GUI process
(:mod:`visiontune.app.logic.worker_process`), so every value is a frozen dataclass of picklable
fields (numpy arrays, datetimes, enums, the engine's own frozen values). Qt-free: the engine
process imports this module, never PySide6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from visiontune.app.logic.plot_frames import ViewFrame
from visiontune.optics import Prescription
from visiontune.refraction.estimate import CurrentEstimate
from visiontune.refraction.loop import Question
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial
from visiontune.session.records import SessionState

__all__ = ["EstimateView", "FinishedView", "NewSession", "SessionSummary", "Snapshot", "export_basename"]


@dataclass(frozen=True)
class NewSession:
    """What the start screen asks for: pseudonymous ``patient_id``, ``eye`` (OD/OS/OU),
    ``protocol`` (shipped name or .toml path), ``simulated``, optional ``seed``, optional
    ``starting_rx`` with its ``start_source`` (one of
    :data:`~visiontune.refraction.start.SOURCES`), the patient's ``age_years`` (optional),
    ``cylinder_form`` (``"minus"``/``"plus"``; None = the protocol's) and ``calibration`` (a
    mapping, stored with the session).

    Without a starting prescription a simulated session starts from its simulated patient's
    own autorefraction (as ``visiontune session run --simulate`` does), unless
    ``start_source`` is ``"none"``; a real one starts from nothing."""

    patient_id: str
    eye: str
    protocol: str
    simulated: bool
    seed: int | None = None
    starting_rx: Prescription | None = None
    calibration: dict | None = None
    start_source: str = "autorefraction"
    age_years: float | None = None
    cylinder_form: str | None = None


@dataclass(frozen=True)
class SessionSummary:
    """One row of the session list."""

    session_id: int
    patient_id: str
    eye: str
    state: SessionState
    n_trials: int
    created_at: datetime
    simulated: bool
    protocol_name: str

    @property
    def kind(self) -> str:
        return "SIMULATED" if self.simulated else "patient"


@dataclass(frozen=True)
class Snapshot:
    """The session as the view needs it after every change. ``query`` is the question to ask (a
    letter, a comparison, a slider or a chart line, with the lens or lenses to set; None while
    paused or once a stopping rule is met, named by ``stop_reason``), in the session's
    ``cylinder_form``. ``context_box (2,)``: the protocol's logMAR range. ``start``: the
    starting point. ``simulated_case``: the recorded simulated patient
    (``PatientCase.to_dict()``; None for a real patient). ``model_type``: ``"optics"`` or
    ``"gp"``. ``prior_duration_s``: time spent in the session before it was opened here,
    seconds. ``visit_id``: the visit whose ``eye`` this session refracts (None outside a visit)."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    seed: int
    protocol_name: str
    state: SessionState
    n_trials: int
    max_trials: int
    query: Question | None
    stop_reason: str | None
    letters: tuple[str, ...]
    letter_set: str
    n_alternatives: int
    cylinder_form: str
    context_box: tuple[float, float]
    prior_duration_s: float
    start: StartingPoint = field(default_factory=StartingPoint)
    model_type: str = "optics"
    simulated_case: dict | None = None
    last_trial: Trial | None = None
    visit_id: int | None = None


@dataclass(frozen=True)
class EstimateView:
    """Estimate and plot data for ``n_trials`` answers.

    ``acuity_map``: :meth:`~visiontune.refraction.loop.Refraction.acuity_map` (predicted
    logMAR on a sphere × cylinder grid at ``axis_deg``). ``trials (n, 3)``: sphere, cylinder
    (D, the session's cylinder form) and answer (1 correct, 0 wrong) of the valid trials.
    ``curve``: ``(trial count, predicted logMAR at the estimate)`` pairs. ``psychometric``:
    letter sizes ``s (m,)`` logMAR and the model's ``P(correct)`` through the best lens with
    its credible band (:meth:`~visiontune.refraction.loop.Refraction.psychometric`).
    ``progress``: how close the precision stop is, in [0, 1]
    (:meth:`~visiontune.refraction.loop.Refraction.progress`). ``frame``: the same, ready to
    draw (:class:`~visiontune.app.logic.plot_frames.ViewFrame`, built by the engine so that the GUI
    thread only hands arrays to pyqtgraph).
    """

    n_trials: int
    estimate: CurrentEstimate
    acuity_map: dict
    trials: np.ndarray
    curve: tuple[tuple[int, float], ...]
    psychometric_s: np.ndarray
    psychometric_p: np.ndarray
    psychometric_lo: np.ndarray
    psychometric_hi: np.ndarray
    frame: ViewFrame | None = None
    progress: float = 0.0


@dataclass(frozen=True)
class FinishedView:
    """A finished session: its stored result, the files exported (or why not), its flags and
    the visit it belongs to (``visit_id``, None outside a visit)."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    result: dict
    exports: dict = field(default_factory=dict)
    export_error: str | None = None
    visit_id: int | None = None


def export_basename(session_id: int, patient_id: str, eye: str, simulated: bool) -> str:
    """``visiontune-session-12-P001-OD`` (``-SIMULATED`` appended for simulated sessions)."""
    return f"visiontune-session-{session_id}-{patient_id}-{eye}" + ("-SIMULATED" if simulated else "")
