"""Random letter answers the particle-posterior tests feed their posteriors."""

from __future__ import annotations

import numpy as np


def random_letters(rng: np.random.Generator, centre: np.ndarray, n: int):
    """``n`` letter answers ``(s, lens, correct)``: a size uniform on [-0.1, 0.6] logMAR, a lens
    ``centre`` plus N(0, 0.4 D) per power-vector component, read with probability 0.6; drawn
    from ``rng`` in that order, one answer at a time."""
    for _ in range(n):
        yield float(rng.uniform(-0.1, 0.6)), centre + rng.normal(0, 0.4, 3), bool(rng.random() < 0.6)
