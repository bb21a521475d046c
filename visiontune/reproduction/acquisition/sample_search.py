"""Maximising one Thompson sample path cheaply (a TS decision within 80 ms).

Evaluating a sample costs one pass over all its features (4096 by default) per point, so the
toolbox recipe (~500 candidates, starts drawn at random in proportion to ``exp(z)``) spends most
of a TS decision on the candidate set. Here the sample is evaluated on ``n_candidates``
scrambled Sobol points, the ``n_starts`` best candidates that are at least ``separation`` apart
(in unit-cube coordinates) seed one joint bounded L-BFGS-B run, and the best end point (or the
best candidate, if better) is returned. Taking the best *separated* candidates rather than
random ones keeps a start in every high basin with fewer candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_int
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.acquisition.optimize import as_box, refine_in_box, sobol_points

__all__ = ["SampleSearch", "separated_best"]


def separated_best(U: np.ndarray, values: np.ndarray, k: int, separation: float) -> np.ndarray:
    """Indices of up to ``k`` rows of ``U (n, d)`` (unit-cube points) with the largest ``values``,
    greedily skipping any row closer than ``separation`` (max-norm) to one already taken."""
    taken: list[int] = []
    for i in np.argsort(-values, kind="stable"):
        if all(np.max(np.abs(U[i] - U[j])) >= separation for j in taken):
            taken.append(int(i))
            if len(taken) == k:
                break
    return np.array(taken, dtype=int)


@dataclass(frozen=True)
class SampleSearch:
    """Search settings for a sample path: ``n_candidates`` Sobol points, ``n_starts`` separated
    best candidates refined by L-BFGS-B, ``separation`` in unit-cube (max-norm) coordinates."""

    n_candidates: int = 256
    n_starts: int = 4
    separation: float = 0.1

    def __post_init__(self):
        for name in ("n_candidates", "n_starts"):
            v = getattr(self, name)
            check_int(name, v, lo=1, whole_float=True)
        if not 0.0 <= self.separation <= 1.0:
            raise InvalidInputError(f"separation: expected a number in [0, 1], got {self.separation!r}")

    def run(self, fn, box, rng, values_only) -> tuple[np.ndarray, float]:
        """``(x_best (d,), value)`` of ``fn(X) -> (values (m,), grads (m, d))`` over ``box (d, 2)``;
        ``values_only(X) -> (m,)`` is used on the candidates. Same signature as
        :meth:`visiontune.reproduction.acquisition.binary_policies.OptimiserSettings.run`."""
        box = as_box("box", box)
        low, width = box[:, 0], box[:, 1] - box[:, 0]
        safe = np.where(width > 0, width, 1.0)
        C = sobol_points(box, self.n_candidates, rng)
        v = np.asarray(values_only(C), float).reshape(-1)
        if not np.all(np.isfinite(v)):
            raise NumericalError("sample: non-finite values on the candidate set")
        U = (C - low) / safe
        starts = separated_best(U, v, self.n_starts, self.separation)
        best = int(starts[0])
        return refine_in_box(
            fn,
            box,
            C[starts],
            values_only=values_only,
            incumbent=(C[best].copy(), float(v[best])),
            options={"ftol": 1e-9, "gtol": 1e-6},
        )
