"""Random particles ``θ = (M, J0, J45, VA*, ln a, A)`` spread over the range a session meets, for the
likelihood tests that check the vectorised formulas against the same formulas written per scalar."""

from __future__ import annotations

import numpy as np


def random_theta(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` particles ``(n, 6)``: ``M`` in [-4, 2] D, ``J0``, ``J45`` ~ N(0, 0.5²) D, ``VA*`` in [-0.2, 0.5]
    logMAR, ``ln a`` ~ N(ln 5, 0.5²), ``A`` in [0, 6] D."""
    return np.column_stack(
        [
            rng.uniform(-4, 2, n),
            rng.normal(0, 0.5, n),
            rng.normal(0, 0.5, n),
            rng.uniform(-0.2, 0.5, n),
            rng.normal(np.log(5), 0.5, n),
            rng.uniform(0, 6, n),
        ]
    )
