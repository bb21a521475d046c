"""A clinician's subjective refraction, run on a simulated patient: the comparator of the clinic's time.

The textbook monocular routine (Elliott 2014, *Clinical Procedures in Primary Eye Care*, 4th ed.,
§4.6-4.9; Benjamin 2006, *Borish's Clinical Refraction*, ch. 20), asked of the same simulated patients
and answer models as a VisionTune session, with the same durations, so that a session's seconds and
accuracy stand beside what the routine a clinician follows reaches on those patients. Every lens is a
power vector ``(M, J0, J45)`` (Thibos, Wheeler & Horner 1997), rounded to trial lenses
(:func:`~visiontune.refraction.lenses.trial_lens`: 0.25 D steps, minus cylinder).

1. **Acuity**: chart lines of five letters through the start, from 0.3 logMAR down by 0.1 while at
   least 3 of 5 are read (up by 0.2 while fewer are); the comparisons are shown one line larger than
   the smallest line read (Elliott 2014: the line above the best acuity, so that the patient judges
   clarity, not guesses).
2. **Best sphere, most plus to best acuity** (MPMVA) by fogging: +1.00 D over the start (myopic blur,
   which accommodation cannot clear: a young eye reads through too much minus by accommodating), then
   0.25 D less plus at a time until the smallest line read through the start is read again, and on
   while 0.25 D less plus reads one line smaller (the acuity still improving).
3. **Jackson cross-cylinder** (Jackson 1907; +0.25 DS / -0.50 DC, power vector ``±(0, 0.25 cos 2t,
   0.25 sin 2t)``, :func:`~visiontune.refraction.clinical_pairs.cross_cylinder`): with no cylinder, a
   check at 90/180 and at 45/135 adds -0.25 DC at the preferred flip's minus axis; **axis**: the flips
   straddle the axis (``t = a ± 45``), the axis turns toward the preferred flip's minus axis by the
   step for the cylinder's power (15° at 0.25 D, 10° at 0.50 D, else 5°:
   :func:`~visiontune.refraction.lenses.axis_step_for`), and at the first reversal half back and stop;
   **power**: the flips along the axis, ±0.25 DC with the sphere keeping ``M``, until a reversal (the
   lower power kept) or "no difference".
4. **Sphere end point**: "better with this lens (+0.25) or without?"; plus is taken while it is
   better, and when it is *the same* it is taken and the bracket ends (of two equal lenses the more
   plus); minus only while it is better, until the direction turns.

Which way a cross-cylinder answer moves the lens is read in power vectors: of the two candidate
changes (axis ±step, cylinder ±0.25 D), the one whose ``J`` lies nearer the preferred flip's
``L ± J_t``; this is the textbook rule ("turn the minus axis toward the minus axis of the better
flip"; "more minus cylinder when the minus axis along it is better") written without its sign tables.

Seconds (the protocol's durations, :mod:`visiontune.refraction.durations`): a comparison 5 s (the
hand-held ±0.25 D lens or cross-cylinder flipped before the lens in place changes no lens), a chart
line 6 s, and each change of the lens in place (a sphere, a cylinder's axis or power) the lens
device's seconds (:mod:`visiontune.refraction.lens_devices`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics.prescription import PowerVector, Prescription
from visiontune.refraction.clinical_pairs import JCC_D, cross_cylinder
from visiontune.refraction.lenses import LensSteps, axis_step_for, trial_lens
from visiontune.refraction.loop import ComparisonReply, LineReply, PendingComparison, PendingLine

__all__ = ["RoutineResult", "RoutineSettings", "run_routine"]

#: The sphere step of the routine's "with or without" questions (D).
SPHERE_STEP_D = 0.25
#: The fog over the start before the sphere is reduced (D; Elliott 2014 §4.6: +0.75 to +1.00).
FOG_D = 1.0
#: One line of a logMAR chart (Bailey & Lovie 1976).
LINE_STEP_LOGMAR = 0.1
#: The chart line the acuity is measured from (logMAR), and a line's letters read to pass it.
FIRST_LINE_LOGMAR, PASS_LETTERS = 0.3, 3
#: Letters of a line (Sloan letters, distinct; Bailey & Lovie 1976's five a line).
LINE_LETTERS = ("C", "D", "H", "K", "N", "O", "R", "S", "V", "Z")


@dataclass(frozen=True)
class RoutineSettings:
    """Seconds (a comparison, a chart line, a change of the lens in place) and each step's answers
    at most (the routine's own limits, as a clinician stops a bracket that does not close)."""

    comparison_seconds: float = 5.0
    line_seconds: float = 6.0
    change_seconds: float = 4.0
    sphere_answers: int = 10
    end_sphere_answers: int = 6
    axis_answers: int = 6
    power_answers: int = 5

    def __post_init__(self) -> None:
        for name in ("comparison_seconds", "line_seconds", "change_seconds"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"{name}: expected a finite number of seconds >= 0, got {value!r}")


@dataclass
class RoutineResult:
    """The lens filed (trial lens), and what it cost: answers by kind, changes of lens, seconds."""

    filed: Prescription
    comparisons: int = 0
    lines: int = 0
    changes: int = 0
    seconds: float = 0.0

    @property
    def answers(self) -> int:
        return self.comparisons + self.lines


class _Routine:
    def __init__(self, presenter, settings: RoutineSettings, steps: LensSteps, seed: int):
        self.presenter, self.settings, self.steps = presenter, settings, steps
        self.rng = np.random.default_rng([int(seed), 0xC11])
        self.index = 0
        self.result: RoutineResult | None = None

    # --- lenses -------------------------------------------------------------------------------
    def lens(self, pv) -> np.ndarray:
        """The trial lens nearest ``pv``, as a power vector."""
        return trial_lens(np.asarray(pv, dtype=float), self.steps).power_vector_array()

    @staticmethod
    def rx(pv) -> Prescription:
        return PowerVector(*np.asarray(pv, dtype=float)).to_prescription()

    def axis_and_cylinder(self, pv) -> tuple[float, float]:
        rx = trial_lens(np.asarray(pv, dtype=float), self.steps).to_minus_cylinder()
        return rx.axis_deg, rx.cylinder_d

    def place(self, current: np.ndarray, new: np.ndarray) -> np.ndarray:
        new = self.lens(new)
        if np.abs(new - current).max() > 1e-9:
            self.result.changes += 1
        return new

    # --- questions ----------------------------------------------------------------------------
    def compare(self, lens1, lens2, s: float) -> str:
        letter = str(self.rng.choice(LINE_LETTERS))
        query = PendingComparison(self.index, float(s), self.rx(lens1), self.rx(lens2), letter)
        self.index += 1
        self.result.comparisons += 1
        reply = self.presenter.present(query)
        if not isinstance(reply, ComparisonReply):
            raise InvalidInputError(f"presenter: expected a comparison reply to a comparison, got {reply!r}")
        return reply.choice

    def read_line(self, lens, s: float) -> int:
        letters = tuple(str(x) for x in self.rng.choice(LINE_LETTERS, size=5, replace=False))
        query = PendingLine(self.index, float(s), self.rx(lens), letters)
        self.index += 1
        self.result.lines += 1
        reply = self.presenter.present(query)
        if not isinstance(reply, LineReply):
            raise InvalidInputError(f"presenter: expected a line reply to a chart line, got {reply!r}")
        return sum(reply.correct)

    # --- steps --------------------------------------------------------------------------------
    def acuity_size(self, lens) -> float:
        """One line larger than the smallest line read through ``lens`` (step 1)."""
        s = FIRST_LINE_LOGMAR
        if self.read_line(lens, s) >= PASS_LETTERS:
            while s > -0.3 + 1e-9 and self.read_line(lens, s - LINE_STEP_LOGMAR) >= PASS_LETTERS:
                s -= LINE_STEP_LOGMAR
        else:
            while s < 1.0 - 1e-9:
                s += 0.2
                if self.read_line(lens, s) >= PASS_LETTERS:
                    break
        return round(s + LINE_STEP_LOGMAR, 2)

    def fogged_sphere(self, lens: np.ndarray, s_best: float) -> np.ndarray:
        """Fog and unfog (step 2): +1.00 D over ``lens`` (myopic blur, which accommodation cannot
        clear), then 0.25 D less plus at a time until the smallest line read through the start is read
        again, and on while 0.25 D less plus reads one line smaller: the most plus lens that gives the
        best acuity."""
        step = np.array([SPHERE_STEP_D, 0.0, 0.0])
        lens, target = self.place(lens, lens + np.array([FOG_D, 0.0, 0.0])), s_best
        for _ in range(self.settings.sphere_answers):
            if self.read_line(lens, target) >= PASS_LETTERS:
                break
            lens = self.place(lens, lens - step)
        else:
            return lens
        for _ in range(self.settings.sphere_answers):
            tried = self.place(lens, lens - step)
            if self.read_line(tried, target - LINE_STEP_LOGMAR) < PASS_LETTERS:
                return self.place(tried, lens)
            lens, target = tried, target - LINE_STEP_LOGMAR
        return lens

    def best_sphere(self, lens: np.ndarray, s: float, limit: int) -> np.ndarray:
        """The sphere's end point (step 4): plus taken while better; "the same" takes the plus and
        ends the bracket (of two equal lenses the more plus, Elliott 2014 §4.6); minus taken only while
        better."""
        plus = np.array([SPHERE_STEP_D, 0.0, 0.0])
        going = 0
        for _ in range(limit):
            if going >= 0:
                choice = self.compare(lens + plus, lens, s)
                if choice != "2":
                    lens, going = self.place(lens, lens + plus), 1
                    if choice == "=":
                        break
                    continue
                if going == 1:
                    break
            if self.compare(lens - plus, lens, s) != "1":
                break
            lens, going = self.place(lens, lens - plus), -1
        return lens

    def preferred(self, lens: np.ndarray, flip: np.ndarray, s: float) -> np.ndarray | None:
        """The preferred flip ``lens ± flip`` of a cross-cylinder, or None for "no difference"."""
        choice = self.compare(lens + flip, lens - flip, s)
        return None if choice == "=" else (lens + flip if choice == "1" else lens - flip)

    def toward(self, candidates, target: np.ndarray) -> int:
        """The index of the candidate lens whose ``J`` lies nearest ``target``'s."""
        return int(np.argmin([np.hypot(*(c[1:] - target[1:])) for c in candidates]))

    def find_cylinder(self, lens: np.ndarray, s: float) -> np.ndarray:
        """With no cylinder: the cross-cylinder at 90/180, then 45/135; -0.25 DC at the preferred flip's
        minus axis (Elliott 2014, §4.8)."""
        for axis in (180.0, 45.0):
            better = self.preferred(lens, cross_cylinder(JCC_D, axis), s)
            if better is not None:
                minus_axis = axis if np.allclose(better, lens + cross_cylinder(JCC_D, axis)) else axis - 90.0
                return self.place(lens, lens + cross_cylinder(SPHERE_STEP_D / 2.0, minus_axis))
        return lens

    def refine_axis(self, lens: np.ndarray, s: float) -> np.ndarray:
        last = 0
        for _ in range(self.settings.axis_answers):
            axis, cylinder = self.axis_and_cylinder(lens)
            if cylinder == 0.0:
                break
            better = self.preferred(lens, cross_cylinder(JCC_D, axis + 45.0), s)
            if better is None:
                break
            step = axis_step_for(cylinder, self.steps.axis_step_deg)
            turns = (step, -step)
            direction = (1, -1)[self.toward([self.turned(lens, t) for t in turns], better)]
            if last and direction != last:
                return self.place(lens, self.turned(lens, direction * step / 2.0))
            lens, last = self.place(lens, self.turned(lens, direction * step)), direction
        return lens

    def refine_power(self, lens: np.ndarray, s: float) -> np.ndarray:
        last = 0
        for _ in range(self.settings.power_answers):
            axis, cylinder = self.axis_and_cylinder(lens)
            if cylinder == 0.0:
                break
            better = self.preferred(lens, cross_cylinder(JCC_D, axis), s)
            if better is None:
                break
            # dC of -0.25 (more minus cylinder) or +0.25, M kept: J moves by cross_cylinder(-dC/2, axis)
            options = (-SPHERE_STEP_D, SPHERE_STEP_D)
            changed = [lens + cross_cylinder(-dc / 2.0, axis) for dc in options]
            direction = (-1, 1)[self.toward(changed, better)]
            if last and direction != last:
                return self.place(lens, lens + cross_cylinder(-max(direction, 0) * SPHERE_STEP_D / 2.0, axis))
            lens, last = self.place(lens, changed[(direction + 1) // 2]), direction
        return lens

    def turned(self, lens: np.ndarray, turn_deg: float) -> np.ndarray:
        rx = trial_lens(lens, self.steps).to_minus_cylinder()
        return Prescription(rx.sphere_d, rx.cylinder_d, (rx.axis_deg + turn_deg) % 180.0).power_vector_array()

    def run(self, start: Prescription | None) -> RoutineResult:
        lens = self.lens(start.power_vector_array() if start is not None else np.zeros(3))
        self.result = RoutineResult(filed=self.rx(lens), changes=1)
        s = self.acuity_size(lens)
        lens = self.fogged_sphere(lens, s - LINE_STEP_LOGMAR)
        if self.axis_and_cylinder(lens)[1] == 0.0:
            lens = self.find_cylinder(lens, s)
        if self.axis_and_cylinder(lens)[1] != 0.0:
            lens = self.refine_axis(lens, s)
            lens = self.refine_power(lens, s)
        lens = self.best_sphere(lens, s, self.settings.end_sphere_answers)
        r, st = self.result, self.settings
        r.filed = trial_lens(lens, self.steps)
        r.seconds = r.comparisons * st.comparison_seconds + r.lines * st.line_seconds + r.changes * st.change_seconds
        return r


def run_routine(
    presenter,
    start: Prescription | None,
    *,
    settings: RoutineSettings | None = None,
    steps: LensSteps | None = None,
    seed: int = 0,
) -> RoutineResult:
    """The clinician's routine (module docstring) from ``start`` (None: plano) with ``presenter``
    answering (a :class:`~visiontune.refraction.loop.SimulatedPresenter` or an answer model's); the
    comparisons' letters and the lines' letters drawn from ``default_rng([seed, 0xC11])``. The first
    lens placed counts as one change, as in a session."""
    return _Routine(presenter, settings or RoutineSettings(), steps or LensSteps(), seed).run(start)
