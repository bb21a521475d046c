"""Acuity read on a letter chart through the final prescription (simulated patients).

The refraction predicts the acuity through the lens it found; a clinic also *measures* it
through the prescription it hands over. The chart is of the Bailey-Lovie / ETDRS design: five
letters a line, lines 0.1 logMAR apart, here from 1.0 down to -0.3 logMAR (Bailey IL, Lovie JE.
New design principles for visual acuity letter charts. Am J Optom Physiol Opt 1976;53:740-745;
Ferris FL et al. New visual acuity charts for clinical research. Am J Ophthalmol
1982;94:91-96). Reading starts at the top line and stops at the end of the first line with
:data:`STOP_AFTER_WRONG` or more letters wrong (a common termination rule; the number is our
choice). Letter-by-letter scoring: each letter is worth 0.02 logMAR, ``VA = 1.1 - 0.02 N`` with
``N`` the letters named right (Ferris 1982's scoring for a chart starting at 1.0).

A simulated patient names each letter right with its psychometric probability at that size
through the lens (:meth:`~visiontune.optics.patient.SimulatedPatient.probability_correct`,
letter difficulty included when the patient has it), one uniform per letter from
``default_rng([seed, line, position, CHART_KEY])``: the same reading every time, independent of
the refraction's answer streams. Guessing among the letter set is part of that probability,
so a chart read this way scores a little better than threshold, as a real one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from visiontune.optics import Prescription

__all__ = ["CHART_LINES_LOGMAR", "CHART_METHOD", "LETTERS_PER_LINE", "ChartReading", "read_chart_simulated"]

#: The chart's lines, largest first (logMAR).
CHART_LINES_LOGMAR = tuple(round(1.0 - 0.1 * i, 1) for i in range(14))
LETTERS_PER_LINE = 5
STOP_AFTER_WRONG = 3
CHART_KEY = 0xC4A7
CHART_METHOD = (
    "letter chart through the final prescription, simulated patient: 5 letters a line, 1.0 to "
    "-0.3 logMAR, stop after a line with 3 or more wrong, letter-by-letter score 1.1 - 0.02 N "
    "(Ferris 1982)"
)


@dataclass(frozen=True)
class ChartReading:
    """``va_logmar`` (letter-by-letter score), ``letters_correct`` ``N`` and ``lines``: one
    ``(logMAR, letters named right)`` pair per line read, top first."""

    va_logmar: float
    letters_correct: int
    lines: tuple[tuple[float, int], ...]

    def detail(self) -> dict:
        return {"letters_correct": self.letters_correct, "lines": [list(line) for line in self.lines]}


def read_chart_simulated(patient, lens: Prescription, letters: Sequence[str], seed: int) -> ChartReading:
    """``patient`` (a :class:`~visiontune.optics.SimulatedPatient`) reads the chart through
    ``lens``; ``letters``: the chart's letter set; ``seed``: the patient's answer seed."""
    lines = []
    total = 0
    for i, size in enumerate(CHART_LINES_LOGMAR):
        right = 0
        for j in range(LETTERS_PER_LINE):
            rng = np.random.default_rng([int(seed), i, j, CHART_KEY])
            letter = letters[int(rng.integers(len(letters)))]
            p = float(patient.probability_correct(size, lens, letter))
            right += bool(rng.random() < p)
        lines.append((size, right))
        total += right
        if LETTERS_PER_LINE - right >= STOP_AFTER_WRONG:
            break
    return ChartReading(round(1.1 - 0.02 * total, 2), total, tuple(lines))
