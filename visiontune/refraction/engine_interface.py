"""What every refraction engine offers the trial loop (:class:`~visiontune.refraction.loop.Refraction`).

An engine is a model of the patient's answers and the rules that decide on it: it proposes the
next question, estimates the correction with its credible region, says whether the precision stop
is met, and maps the predicted acuity. The loop talks to every engine through :class:`Engine` and
never asks which model it holds, so a new model is added by registering its factory
(:func:`~visiontune.refraction.loop.make_engine`), not by teaching the loop its type.

Every method is a pure function of the trials it is given (the log's valid trials, oldest
first), the protocol, the starting point and the seed, apart from the caches that make it fast
and the state the last :meth:`Engine.estimate` leaves for :meth:`Engine.precision_met` and
:meth:`Engine.over_minus_progress` (the loop always estimates before it asks either).

The abstract methods are the ones each model answers in its own way; the others have the default
of a model that asks letters only and has no over-minus guard (the GP model of Fauvel & Chalk),
and the optics engines override them.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

import numpy as np

from visiontune.optics import Prescription
from visiontune.refraction.estimate import CurrentEstimate, Region
from visiontune.refraction.mixed_rules import MixedChoice
from visiontune.refraction.optics_rules import OpticsQuery

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Engine"]


class Engine(abc.ABC):
    """A refraction engine: one model, one session (built by
    :func:`~visiontune.refraction.loop.make_engine` from the protocol, the starting point and the seed).

    ``trials`` below are the log's valid trials, oldest first: objects with ``s_logmar``, ``lens``,
    ``letter_shown``, ``correct`` and, for the other kinds of question, the fields
    :class:`~visiontune.refraction.trial.Trial` names."""

    #: The protocol's ``model.type`` this engine runs (``"optics"``, ``"optics-gp"``, ``"gp"``).
    model_type: str = ""
    #: The cylinder axis (degrees) every lens of the model has, when the model fixes it (the GP
    #: model searches sphere and cylinder at the protocol's axis); None when it searches the axis.
    axis_deg: float | None = None

    # ------------------------------------------------------------------ what each model answers
    @abc.abstractmethod
    def propose(self, trials: Sequence, rng: np.random.Generator) -> tuple[float, Prescription, float | None]:
        """The next letter: ``(s_logmar, lens, expected information of the answer in bits)``
        (information None when the model does not compute it), drawing from ``rng`` only."""

    @abc.abstractmethod
    def estimate(
        self,
        trials: Sequence,
        rng_best: np.random.Generator,
        rng_region: np.random.Generator | None,
        level: float,
    ) -> CurrentEstimate:
        """The best lens, the lens to file (``rounded``), the credible region at ``level`` (only when
        ``rng_region`` is given, else None) and the predicted acuity through the lens, after ``trials``."""

    @abc.abstractmethod
    def precision_met(self, region: Region) -> bool:
        """Whether the protocol's precision stop is met by ``region``, the region of the last
        :meth:`estimate` (with whatever else the model's stop waits for)."""

    @abc.abstractmethod
    def acuity_map(self, trials: Sequence, estimate: CurrentEstimate) -> dict:
        """Predicted acuity (logMAR) on a sphere × cylinder grid (rows: sphere) after ``trials``:
        ``{"sphere_d", "cylinder_d", "va_logmar"}`` and, when the grid has one, ``"axis_deg"``."""

    @abc.abstractmethod
    def psychometric(self, trials: Sequence, lens: Prescription, level: float, n: int = 61):
        """``(s (n,), p, lo, hi)``: the model's ``P(correct)`` against letter size (logMAR) through
        ``lens`` after ``trials``, with its central credible band at ``level``."""

    @abc.abstractmethod
    def predicted_acuity(self, trials: Sequence, rng: np.random.Generator) -> float:
        """Predicted acuity (logMAR) through the lens the model would report after ``trials``."""

    # ------------------------------------------------------------------ with a default
    def propose_question(
        self,
        trials: Sequence,
        rng_letter: np.random.Generator,
        rng_comparison: np.random.Generator,
        rng_slider: np.random.Generator | None = None,
    ) -> MixedChoice:
        """The next question of any kind the engine asks (a letter, a comparison, a slider, a chart
        line), each kind drawing from its own stream. Default: a letter, :meth:`propose` with
        ``rng_letter`` (the other streams untouched)."""
        s, lens, info = self.propose(trials, rng_letter)
        return MixedChoice("letter", OpticsQuery(s, lens, info))

    def sensitivity_progress(self, trials: Sequence) -> float | None:
        """How far the precision stop's wait for the comparison sensitivity ``κ`` is from met, in
        [0, 1] (1 = met); None when the stop does not wait for it (default)."""
        return None

    def filed_progress(self) -> float | None:
        """How far the last :meth:`estimate` is from the stop on the lens to file
        (``stopping.precision.filed_within_probability``), in [0, 1] (1 = met); None when the
        protocol stops on the region instead (default)."""
        return None

    def over_minus_progress(self) -> float | None:
        """How far the last :meth:`estimate`'s over-minus risk is from the stop's limit, in [0, 1]
        (1 = met); None when the stop does not wait for it (default)."""
        return None

    def guards_over_minus(self) -> bool:
        """Whether the lens to file is guarded against over-minus in this session (default: no guard)."""
        return False

    def waits_for_over_minus(self) -> bool:
        """Whether the precision stop waits until the lens to file is safe from over-minus
        (default: no)."""
        return False

    def lapsed_probability(self, trials: Sequence) -> float | None:
        """The posterior probability that the patient's attention had lapsed at the last of ``trials``
        (a model that reads lapses as runs); None otherwise (default)."""
        return None

    def correction_draws(self, trials: Sequence):
        """The weighted draws of the patient's best correction after ``trials`` that the estimate and
        its region are read from (``theta[:, :3]`` power vectors, ``weights``, ``best_correction()``,
        as :class:`~visiontune.refraction.optics_model.ParticlePosterior`); None when the model keeps no such
        draws (default: the GP model, whose region comes from :meth:`estimate`)."""
        return None

    def filed_over_minus_risk(self, trials: Sequence, lens: Prescription) -> float | None:
        """The posterior probability that ``lens`` is more minus than the correction by over
        0.25 D after ``trials``, reported in the result of a session the guard covers
        (:meth:`guards_over_minus`); None otherwise (default)."""
        return None
