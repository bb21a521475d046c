"""The values the session engine sends to the GUI, and the plot helpers that build them.

Everything here crosses the pipe between the engine process and the GUI process
(:mod:`visiontune.app.worker_process`), so every value is a frozen dataclass of picklable
fields (numpy arrays, datetimes, enums, the engine's own frozen values). Qt-free: the engine
process imports this module, never PySide6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from scipy.stats import norm

from visiontune.app.plot_frames import ViewFrame
from visiontune.optics import Prescription
from visiontune.session.engine import CurrentEstimate, PendingQuery
from visiontune.session.records import SessionState, Trial

__all__ = ["EstimateView", "FinishedView", "NewSession", "SessionSummary", "Snapshot", "export_basename",
           "psychometric_at"]  # fmt: skip


@dataclass(frozen=True)
class NewSession:
    """What the start screen asks for: pseudonymous ``patient_id``, ``eye`` (OD/OS/OU),
    ``protocol`` (shipped name or .toml path), ``simulated``, optional ``seed``, optional
    ``starting_rx`` and ``calibration`` (a mapping, stored with the session)."""

    patient_id: str
    eye: str
    protocol: str
    simulated: bool
    seed: int | None = None
    starting_rx: Prescription | None = None
    calibration: dict | None = None


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
    """The session as the view needs it after every change. ``query`` is the lens to set (None
    while paused or once a stopping rule is met, named by ``stop_reason``). ``box (2, 2)``:
    sphere and cylinder ranges, diopters; ``context_box (2,)``: logMAR range.
    ``prior_duration_s``: time spent in the session before it was opened here, seconds."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    seed: int
    protocol_name: str
    state: SessionState
    n_trials: int
    max_trials: int
    query: PendingQuery | None
    stop_reason: str | None
    letters: tuple[str, ...]
    letter_set: str
    n_alternatives: int
    axis_deg: float
    box: tuple[tuple[float, float], tuple[float, float]]
    context_box: tuple[float, float]
    prior_duration_s: float
    last_trial: Trial | None = None


@dataclass(frozen=True)
class EstimateView:
    """Estimate and plot data for ``n_trials`` answers.

    ``acuity_map``: :func:`visiontune.session.estimate.acuity_map` (predicted logMAR on the lens
    grid). ``trials (n, 3)``: sphere, cylinder (D) and answer (1 correct, 0 wrong) of the valid
    trials. ``curve``: ``(trial count, predicted logMAR at the estimate)`` pairs.
    ``psychometric``: letter sizes ``s (m,)`` logMAR and the model's ``P(correct) = Φ(μ_f/√(1+σ_f²))``
    (seed 000, Eq. 3) at the best lens, with a ``level`` band from ``Φ(μ_f ± z σ_f)``.
    ``frame``: the same, ready to draw (:class:`~visiontune.app.plot_frames.ViewFrame`, built
    by the engine so that the GUI thread only hands arrays to pyqtgraph).
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


@dataclass(frozen=True)
class FinishedView:
    """A finished session: its stored result, the files exported (or why not) and its flags."""

    session_id: int
    patient_id: str
    eye: str
    simulated: bool
    result: dict
    exports: dict = field(default_factory=dict)
    export_error: str | None = None


def psychometric_at(model, lens_sc: np.ndarray, context_box, *, level: float = 0.95, n: int = 61):
    """``(s, p, lo, hi)``: model ``P(correct)`` against letter size at lens ``(S, C)``
    (``μ_c = Φ(μ_f / √(1 + σ_f²))``, seed 000 Eq. 3) and the band ``Φ(μ_f ± z σ_f)``."""
    s = np.linspace(float(context_box[0]), float(context_box[1]), n)
    inputs = np.column_stack([s, np.tile(np.asarray(lens_sc, dtype=float), (n, 1))])
    mu, var = model.predict(inputs)
    sd = np.sqrt(np.maximum(var, 0.0))
    z = norm.ppf(0.5 + level / 2.0)
    return s, norm.cdf(mu / np.sqrt(1.0 + var)), norm.cdf(mu - z * sd), norm.cdf(mu + z * sd)


def export_basename(session_id: int, patient_id: str, eye: str, simulated: bool) -> str:
    """``visiontune-session-12-P001-OD`` (``-SIMULATED`` appended for simulated sessions)."""
    return f"visiontune-session-{session_id}-{patient_id}-{eye}" + ("-SIMULATED" if simulated else "")
