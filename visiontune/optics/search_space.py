"""The refraction problem's spaces (Fauvel & Chalk (contextual BO) §5): the lens box and the letter-size box.

Search space ``X = [-4, 4]²`` diopters over ``(sphere, cylinder)`` at a fixed axis;
context (letter size) ``S = [-1, 2]`` logMAR (§5.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_int, check_rng, finite_array, points
from visiontune.errors import InvalidInputError

__all__ = ["Box", "SEARCH_BOX", "CONTEXT_BOX"]


@dataclass(frozen=True)
class Box:
    """An axis-aligned box ``Π [lower_i, upper_i]``; ``names`` say what each coordinate is."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        lo = finite_array("lower", self.lower, ndim=1)
        hi = finite_array("upper", self.upper, ndim=1)
        if lo.shape != hi.shape or len(self.names) != lo.shape[0]:
            raise InvalidInputError(
                f"upper: lower, upper and names must have the same length, "
                f"got {lo.shape[0]}, {hi.shape[0]}, {len(self.names)}"
            )
        if np.any(hi <= lo):
            raise InvalidInputError(
                f"upper: every upper bound must exceed its lower bound, got {lo.tolist()} .. {hi.tolist()}"
            )
        object.__setattr__(self, "lower", tuple(float(v) for v in lo))
        object.__setattr__(self, "upper", tuple(float(v) for v in hi))
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))

    @property
    def dim(self) -> int:
        return len(self.lower)

    def bounds(self) -> np.ndarray:
        """``(d, 2)`` array of ``[lower, upper]`` rows (the layout scipy's L-BFGS-B takes)."""
        return np.column_stack([self.lower, self.upper])

    def contains(self, x) -> np.ndarray:
        """``(n,)`` bool: which of the ``(n, d)`` points ``x`` lie in the closed box."""
        pts = points("x", x, dim=self.dim)
        return np.all((pts >= np.array(self.lower)) & (pts <= np.array(self.upper)), axis=1)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``(n, d)`` points drawn uniformly in the box with ``rng``."""
        check_rng(rng)
        check_int("n", n, lo=0)
        return rng.uniform(self.lower, self.upper, size=(int(n), self.dim))


SEARCH_BOX = Box((-4.0, -4.0), (4.0, 4.0), ("sphere_d", "cylinder_d"))
"""Lens search space of Fauvel & Chalk (contextual BO) §5.3: ``(sphere, cylinder)`` in ``[-4, 4]²`` diopters."""

CONTEXT_BOX = Box((-1.0,), (2.0,), ("letter_size_logmar",))
"""Context space of Fauvel & Chalk (contextual BO) §5.3: letter size in ``[-1, 2]`` logMAR."""
