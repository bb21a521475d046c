"""Where a refraction starts: the starting prescription, its source, and the prior it gives.

A subjective refraction starts from an objective one or from what the patient wears. The
model's prior on the best correction ``P* = (M, J0, J45)`` (Thibos 1997 power vectors) is
centred on that starting prescription with the known disagreement between the source and a
subjective refraction as its spread (standard deviations, diopters):

============== ====== ========== ==========================================================
source          σ_M    σ_J0, J45  basis
============== ====== ========== ==========================================================
autorefraction  0.50   0.20      95% limits of agreement with subjective refraction of about
                                 ±1.0 D on M and ±0.4 D on J0 / J45 (Bennett et al. 2015,
                                 J. Optom. 8:109-115; Bamdad et al. 2022, J. Optom.
                                 15:100-106, non-cycloplegic autorefraction)
retinoscopy     0.50   0.30      agreement with subjective refraction similar to
                                 autorefraction on M, poorer on the cylinder axis
                                 (Hervella et al. 2019, J. Cataract Refract. Surg.
                                 45:87-93, introduction); σ_J is our assumption
spectacles      0.60   0.25      the habitual lens read on a lensmeter: the refraction may
                                 have changed since it was prescribed (our assumption,
                                 wider than autorefraction on M)
none            wide             no start: M uniform over the clinical range, J0 and J45
                                 normal with σ = 0.6 D (most astigmatism is below 1.5 D)
============== ====== ========== ==========================================================

A non-cycloplegic autorefraction of an eye that can accommodate may read too much minus
(accommodation during the measurement: *Subjective versus objective refraction in healthy young
adults*, BMC Ophthalmol. 2024, doi:10.1186/s12886-024-03340-w); in children its limits of agreement
with subjective refraction on M reach -1.9 to +1.2 D (Int. J. Ophthalmol. 2025, PMID 40103942). So for an autorefraction
of a patient aged 40 or less, or of unknown age, ``σ_M`` is :data:`YOUNG_AUTOREFRACTION_SIGMA_M_D` (0.8 D).

The clinical range searched is ``M`` in ``[-12, +8]`` D and cylinder up to 6 D; a start or a
simulated patient outside it is refused with a message, never clipped in silence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription

__all__ = ["MAX_CYLINDER_D", "M_RANGE_D", "SOURCES", "StartingPoint", "check_in_range"]

#: ``source -> (σ_M, σ_J)`` in diopters (module docstring); ``None`` for the wide prior.
SOURCES: dict[str, tuple[float, float] | None] = {
    "autorefraction": (0.50, 0.20),
    "retinoscopy": (0.50, 0.30),
    "spectacles": (0.60, 0.25),
    "none": None,
}
#: ``σ_M`` (D) of an autorefraction when the patient may accommodate (aged <= 40 or unknown).
YOUNG_AUTOREFRACTION_SIGMA_M_D = 0.8
YOUNG_AUTOREFRACTION_MAX_AGE = 40.0
#: Spherical equivalents the search covers, and the largest cylinder (diopters).
M_RANGE_D = (-12.0, 8.0)
MAX_CYLINDER_D = 6.0
#: σ of J0 and J45 without a starting prescription (diopters).
WIDE_SIGMA_J_D = 0.6
#: Rounds of redrawing prior draws that fall outside the range.
_MAX_REDRAWS = 100


def check_in_range(rx: Prescription, what: str) -> None:
    """Refuse a prescription outside the clinical range (``M`` in :data:`M_RANGE_D`,
    ``|C|`` <= :data:`MAX_CYLINDER_D`), naming ``what`` it is."""
    m = rx.spherical_equivalent_d
    if not M_RANGE_D[0] <= m <= M_RANGE_D[1] or abs(rx.cylinder_d) > MAX_CYLINDER_D:
        raise InvalidInputError(
            f"{what}: {rx.format()} (spherical equivalent {m:+.2f} D) is outside the range this refraction "
            f"covers (M from {M_RANGE_D[0]:+.0f} to {M_RANGE_D[1]:+.0f} D, cylinder up to {MAX_CYLINDER_D:g} D); "
            "refract this patient by hand"
        )


@dataclass(frozen=True)
class StartingPoint:
    """The starting prescription ``rx`` (``None`` without one) and its ``source``, one of
    :data:`SOURCES`; ``age_years`` (optional) sets the prior on accommodation."""

    rx: Prescription | None = None
    source: str = "none"
    age_years: float | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise InvalidInputError(f"source: expected one of {', '.join(SOURCES)}, got {self.source!r}")
        if (self.rx is None) != (self.source == "none"):
            raise InvalidInputError(
                "source: a starting prescription needs its source (autorefraction, retinoscopy, spectacles), "
                f"and source 'none' takes no prescription; got rx={self.rx}, source={self.source!r}"
            )
        if self.rx is not None:
            if not isinstance(self.rx, Prescription):
                raise InvalidInputError(f"rx: expected a Prescription, got {type(self.rx).__name__}")
            check_in_range(self.rx, "starting prescription")
        if self.age_years is not None:
            check_number("age_years", self.age_years, 3, 110)

    @property
    def centre(self) -> np.ndarray:
        """``(3,)`` prior centre ``(M, J0, J45)``: the start's power vector, or ``M`` at the
        middle of the range and no astigmatism."""
        if self.rx is None:
            return np.array([0.5 * (M_RANGE_D[0] + M_RANGE_D[1]), 0.0, 0.0])
        return self.rx.power_vector_array()

    @property
    def sigma(self) -> np.ndarray | None:
        """``(3,)`` prior standard deviations of ``(M, J0, J45)`` (D); ``None`` without a start."""
        spread = SOURCES[self.source]
        if spread is None:
            return None
        sigma_m, sigma_j = spread
        if self.source == "autorefraction" and (
            self.age_years is None or self.age_years <= YOUNG_AUTOREFRACTION_MAX_AGE
        ):
            sigma_m = YOUNG_AUTOREFRACTION_SIGMA_M_D
        return np.array([sigma_m, sigma_j, sigma_j])

    def sample_prior(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``(n, 3)`` draws of ``P*`` from the prior (module docstring), truncated to the range
        by rejection: the density :meth:`log_prior` gives."""
        draws = self._draw(rng, n)
        outside = ~self._inside(draws)
        for _ in range(_MAX_REDRAWS):
            if not outside.any():
                return draws
            draws[outside] = self._draw(rng, int(outside.sum()))
            outside = ~self._inside(draws)
        raise InvalidInputError(
            f"starting prescription: the prior around {self.rx} lies almost wholly outside "
            "the range this refraction covers"
        )

    def _draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        sigma = self.sigma
        if sigma is None:
            return np.column_stack([rng.uniform(*M_RANGE_D, size=n), rng.normal(0.0, WIDE_SIGMA_J_D, size=(n, 2))])
        return self.centre + rng.normal(size=(n, 3)) * sigma

    @staticmethod
    def _inside(pv: np.ndarray) -> np.ndarray:
        """``(n,)``: ``M`` in :data:`M_RANGE_D` and the cylinder at most :data:`MAX_CYLINDER_D`."""
        return (
            (pv[:, 0] >= M_RANGE_D[0])
            & (pv[:, 0] <= M_RANGE_D[1])
            & (np.hypot(pv[:, 1], pv[:, 2]) <= MAX_CYLINDER_D / 2)
        )

    def log_prior(self, pv: np.ndarray) -> np.ndarray:
        """Unnormalised log density of ``pv (n, 3)`` under the prior; ``-inf`` outside the range."""
        sigma = self.sigma
        inside = self._inside(pv)
        if sigma is None:
            lp = -0.5 * (pv[:, 1] ** 2 + pv[:, 2] ** 2) / WIDE_SIGMA_J_D**2
        else:
            lp = -0.5 * np.sum(((pv - self.centre) / sigma) ** 2, axis=1)
        return np.where(inside, lp, -np.inf)

    def to_dict(self) -> dict:
        rx = (
            None
            if self.rx is None
            else {"sphere_d": self.rx.sphere_d, "cylinder_d": self.rx.cylinder_d, "axis_deg": self.rx.axis_deg}
        )
        return {"rx": rx, "source": self.source, "age_years": self.age_years}

    @classmethod
    def from_dict(cls, data) -> StartingPoint:
        """Inverse of :meth:`to_dict`; a bare ``{"sphere_d", "cylinder_d", "axis_deg"}`` (the
        trial log's older starting_rx) is an autorefraction."""
        if not data:
            return cls()
        if "source" not in data:
            return cls(Prescription(data["sphere_d"], data["cylinder_d"], data["axis_deg"]), "autorefraction")
        rx = data.get("rx")
        rx = None if rx is None else Prescription(rx["sphere_d"], rx["cylinder_d"], rx["axis_deg"])
        return cls(rx, data["source"], data.get("age_years"))
