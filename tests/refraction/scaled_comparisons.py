"""Comparison answers drawn from the Eq. 11 model at known parameters with a known sensitivity ``κ``, which
the particle-posterior tests of ``κ`` feed their posteriors."""

from __future__ import annotations

import numpy as np

from visiontune.optics.comparison_answers import ComparisonModel, ternary_probabilities
from visiontune.refraction.comparisons import ComparisonAnswer, comparison_signal


def observe_scaled_comparisons(post, truth: np.ndarray, kappa_true: float, model: ComparisonModel, rng, n: int = 80):
    """Add ``n`` comparisons around the start's centre to ``post``: pairs ``h`` = 0.25-0.75 D apart
    along ``M``, ``J0`` and ``J45`` in turn (straddling the centre, or one lens at it), each answered
    by the ternary model at ``κ = kappa_true`` times the Eq. 11 signal of the particle ``truth``
    ``(1, 7)``, read by ``post`` with ``model``; every draw from ``rng`` in that order."""
    c = post.start.centre
    for k in range(n):
        h = rng.choice([0.25, 0.5, 0.75])
        u = np.eye(3)[k % 3] * (1.0 if k % 3 == 0 else 0.5)
        l1, l2 = (c + h * u, c - h * u) if k % 2 else (c, c + 2 * h * u * rng.choice([-1, 1]))
        delta = kappa_true * comparison_signal(truth, 0.0, [l1], [l2], ComparisonModel(), post.spec)[0, 0]
        p = ternary_probabilities(delta, model.indifference, model.lapse)
        y = "12="[int(np.searchsorted(np.cumsum(p)[:2], rng.random(), side="right"))]
        post.observe(ComparisonAnswer(0.0, tuple(map(float, l1)), tuple(map(float, l2)), y, model))
