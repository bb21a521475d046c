"""Spectacle prescriptions (sphere, cylinder, axis) and Thibos power vectors.

Conventions used throughout :mod:`visiontune.optics`:

* Powers are in diopters (D), axes in degrees.
* The axis is stored in ``(0, 180]``: an axis of 0 is accepted on input and stored as 180,
  the clinical convention (a chart reads ``x 180``, never ``x 0``). Inputs outside
  ``[0, 180]`` are rejected.
* A prescription is the *correcting lens*; a patient is fully corrected when the lens
  equals their prescription (see :mod:`visiontune.optics.blur`).

Power vectors (Thibos, Wheeler & Horner 1997, *Power vectors: an application of Fourier
analysis to the description and statistical analysis of refractive error*, Optom. Vis.
Sci. 74:367-375; docs/design.md, "The refraction model")::

    M   = S + C/2
    J0  = -(C/2) cos 2α
    J45 = -(C/2) sin 2α

with ``S`` sphere, ``C`` cylinder (D) and ``α`` the cylinder axis. The map is linear in
``(S, C)`` at fixed axis and invariant under transposition (plus/minus cylinder forms of
the same lens give the same vector).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError
from visiontune.optics.notation import rx_text

__all__ = ["Prescription", "PowerVector", "power_vector_components", "normalise_axis_deg"]

_MINUS = "\u2212"
#: A decimal comma between digits ("-2,25"), read as a decimal point.
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def _scalar(name: str, value) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name}: expected a number, got a boolean ({value!r})")
    arr = finite_array(name, value)
    if arr.ndim != 0:
        raise InvalidInputError(f"{name}: expected one number, got an array of shape {arr.shape}")
    return float(arr)


def normalise_axis_deg(axis_deg):
    """Map any axis (degrees, scalar or array) to ``(0, 180]``: ``a mod 180``, 0 -> 180.

    A cylinder axis is defined modulo 180°. Values within 1e-9° of 0 or 180 become 180.
    """
    a = np.mod(np.asarray(axis_deg, dtype=float), 180.0)
    a = np.where((a < 1e-9) | (a > 180.0 - 1e-9), 180.0, a)
    return float(a) if a.ndim == 0 else a


def power_vector_components(sphere_d, cylinder_d, axis_deg) -> np.ndarray:
    """Vectorised Thibos power vectors: ``(..., 3)`` array of ``(M, J0, J45)`` in diopters.

    ``M = S + C/2``, ``J0 = -(C/2) cos 2α``, ``J45 = -(C/2) sin 2α`` (Thibos et al. 1997,
    Eqs. 6-8). ``sphere_d``, ``cylinder_d`` (D) and ``axis_deg`` (degrees) broadcast
    against each other; they must be finite.
    """
    s = finite_array("sphere_d", sphere_d)
    c = finite_array("cylinder_d", cylinder_d)
    a = finite_array("axis_deg", axis_deg)
    return _components(s, c, a)


def _components(s: np.ndarray, c: np.ndarray, axis_deg: np.ndarray) -> np.ndarray:
    """:func:`power_vector_components` on already validated arrays."""
    a = np.deg2rad(axis_deg)
    s, c, a = np.broadcast_arrays(s, c, a)
    half_c = c / 2.0
    return np.stack([s + half_c, -half_c * np.cos(2 * a), -half_c * np.sin(2 * a)], axis=-1)


@dataclass(frozen=True)
class PowerVector:
    """A lens (or a residual error) as a Thibos power vector, all components in diopters.

    ``m_d`` spherical equivalent ``M``, ``j0_d`` and ``j45_d`` the Jackson cross-cylinder
    components ``J0``, ``J45``. The Euclidean length is the blur strength (Thibos 1997;
    Fauvel & Chalk (contextual BO), Eq. 12 for aligned axes).
    """

    m_d: float
    j0_d: float
    j45_d: float

    def __post_init__(self) -> None:
        for name in ("m_d", "j0_d", "j45_d"):
            object.__setattr__(self, name, _scalar(name, getattr(self, name)))

    def as_array(self) -> np.ndarray:
        """``(3,)`` array ``(M, J0, J45)``, diopters."""
        return np.array([self.m_d, self.j0_d, self.j45_d])

    def length(self) -> float:
        """Blur strength ``√(M² + J0² + J45²)``, diopters."""
        return float(math.sqrt(self.m_d**2 + self.j0_d**2 + self.j45_d**2))

    def to_prescription(self) -> Prescription:
        """Inverse of :meth:`Prescription.power_vector`, in minus-cylinder form.

        ``C = -2√(J0² + J45²)``, ``S = M - C/2``, ``α = ½ atan2(J45, J0)`` mapped to
        ``(0, 180]`` (Thibos 1997, Eqs. 9-11). With no cylinder the axis is 180.
        """
        r = math.hypot(self.j0_d, self.j45_d)
        cylinder = -2.0 * r
        axis = 180.0 if r == 0.0 else normalise_axis_deg(0.5 * math.degrees(math.atan2(self.j45_d, self.j0_d)))
        return Prescription(self.m_d - cylinder / 2.0, cylinder, axis)


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_PARSE_RE = re.compile(
    rf"""^\s*
    (?:s(?:ph(?:ere)?)?\s*:?\s*)?(?P<s>{_NUMBER}|pl(?:ano)?)\s*(?:ds)?
    (?:\s*[/,]?\s*(?:c(?:yl(?:inder)?)?\s*:?\s*)?(?P<c>{_NUMBER})\s*(?:dc)?
       (?:\s*(?:x|@|axis)\s*(?P<a>\d+(?:\.\d*)?))?
    )?\s*$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Prescription:
    """A sphero-cylindrical correcting lens.

    ``sphere_d``, ``cylinder_d``: diopters, finite. ``axis_deg``: degrees in ``[0, 180]``,
    stored in ``(0, 180]`` (0 becomes 180, the clinical convention). Either cylinder sign is
    allowed; :meth:`to_minus_cylinder` / :meth:`to_plus_cylinder` convert. Field equality is
    literal (a lens and its transposition compare unequal); use :meth:`is_equivalent` to
    compare optics.
    """

    sphere_d: float
    cylinder_d: float = 0.0
    axis_deg: float = 180.0

    def __post_init__(self) -> None:
        sphere = _scalar("sphere_d", self.sphere_d)
        cylinder = _scalar("cylinder_d", self.cylinder_d)
        axis = _scalar("axis_deg", self.axis_deg)
        if not 0.0 <= axis <= 180.0:
            raise InvalidInputError(f"axis_deg: must be in [0, 180] degrees, got {axis}")
        object.__setattr__(self, "sphere_d", sphere + 0.0)  # -0.0 -> 0.0
        object.__setattr__(self, "cylinder_d", cylinder + 0.0)
        object.__setattr__(self, "axis_deg", 180.0 if axis == 0.0 else axis)

    # --- forms -------------------------------------------------------------------------
    def transposed(self) -> Prescription:
        """The same lens in the other cylinder form: ``(S + C, -C, α ± 90°)``."""
        return Prescription(self.sphere_d + self.cylinder_d, -self.cylinder_d, normalise_axis_deg(self.axis_deg + 90.0))

    def to_minus_cylinder(self) -> Prescription:
        """This lens with ``cylinder_d <= 0`` (transposed if the cylinder is positive)."""
        return self.transposed() if self.cylinder_d > 0 else self

    def to_plus_cylinder(self) -> Prescription:
        """This lens with ``cylinder_d >= 0`` (transposed if the cylinder is negative)."""
        return self.transposed() if self.cylinder_d < 0 else self

    # --- power vectors -----------------------------------------------------------------
    def power_vector(self) -> PowerVector:
        """Thibos power vector ``(M, J0, J45)``: ``M = S + C/2``, ``J0 = -(C/2) cos 2α``,
        ``J45 = -(C/2) sin 2α`` (Thibos 1997)."""
        return PowerVector(*self.power_vector_array())

    def power_vector_array(self) -> np.ndarray:
        """``(3,)`` array ``(M, J0, J45)``, diopters (same as :meth:`power_vector`, faster)."""
        half_c = self.cylinder_d / 2.0
        two_a = math.radians(2.0 * self.axis_deg)
        return np.array([self.sphere_d + half_c, -half_c * math.cos(two_a), -half_c * math.sin(two_a)])

    @property
    def spherical_equivalent_d(self) -> float:
        """``M = S + C/2``, diopters."""
        return self.sphere_d + self.cylinder_d / 2.0

    def is_equivalent(self, other: Prescription, tol_d: float = 1e-9) -> bool:
        """True if both lenses have the same power vector within ``tol_d`` diopters
        (Euclidean distance), whatever their cylinder form."""
        if not isinstance(other, Prescription):
            raise InvalidInputError(f"other: expected a Prescription, got {type(other).__name__}")
        diff = self.power_vector().as_array() - other.power_vector().as_array()
        return bool(np.linalg.norm(diff) <= tol_d)

    # --- rounding and text ---------------------------------------------------------------
    def rounded(self, step_d: float = 0.25, axis_step_deg: float = 1.0) -> Prescription:
        """Round sphere and cylinder to multiples of ``step_d`` and the axis to a multiple of
        ``axis_step_deg`` (half away from zero), keeping the cylinder form."""
        step = _scalar("step_d", step_d)
        axis_step = _scalar("axis_step_deg", axis_step_deg)
        if step <= 0:
            raise InvalidInputError(f"step_d: must be > 0, got {step}")
        if axis_step <= 0:
            raise InvalidInputError(f"axis_step_deg: must be > 0, got {axis_step}")

        def half_away(x: float, q: float) -> float:
            return math.copysign(math.floor(abs(x) / q + 0.5), x) * q

        return Prescription(
            half_away(self.sphere_d, step),
            half_away(self.cylinder_d, step),
            normalise_axis_deg(half_away(self.axis_deg, axis_step)),
        )

    def format(self, unicode_minus: bool = False, *, form: str | None = None, kind: str | None = None) -> str:
        """Clinical text in the one notation (:func:`visiontune.optics.notation.rx_text`), e.g.
        ``"S -1.25 / C -0.50 x 035"``, ``"S plano / C -0.50 x 180"``, ``"S +2.00 DS"``.

        ``unicode_minus=True`` writes U+2212 and U+00D7; ``form`` ``"minus"`` / ``"plus"`` the
        cylinder form; a value off the 0.25 D steps (or a fractional axis) is marked ``(not a
        trial lens)``, ``kind`` naming what it is (``"estimate"``). :meth:`parse` reads a trial
        lens's text back to the same lens.
        """
        return rx_text(self, form=form, unicode=unicode_minus, kind=kind)

    def __str__(self) -> str:
        return self.format()

    @classmethod
    def parse(cls, text: str, default_axis_deg: float | None = None) -> Prescription:
        """Read ``"S C [x A]"``: e.g. ``"-1.25 -0.50 x 180"``, ``"S -1.25 / C -0.50 x 180"``,
        ``"+2.00 DS"``, ``"plano"``, ``"-1.00 / -0.75 @ 90"``, ``"-2.25/-1.25x35"``,
        ``"-2.25DS/-1.25DCx035"``; U+2212, ``×`` and a decimal comma (``"-2,25"``) are accepted.
        The axis may be omitted when the cylinder is absent or zero (axis 180 then), or when
        ``default_axis_deg`` is given (a model searching at a fixed axis: ``"S C"``)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text: expected a string, got {type(text).__name__}")
        norm = _DECIMAL_COMMA.sub(".", text.replace(_MINUS, "-").replace("\u00d7", " x ")).strip().lower()
        match = _PARSE_RE.match(norm)
        if match is None:
            raise InvalidInputError(
                f"text: cannot read a prescription from {text!r}; expected 'S C x A', e.g. '-1.25 -0.50 x 180'"
            )
        s_text, c_text, a_text = match.group("s", "c", "a")
        sphere = 0.0 if s_text.startswith("pl") else float(s_text)
        cylinder = 0.0 if c_text is None else float(c_text)
        if a_text is None and default_axis_deg is not None:
            axis = float(default_axis_deg)
        elif a_text is None:
            if cylinder != 0.0:
                raise InvalidInputError(f"text: a cylinder of {cylinder} D needs an axis ('x A') in {text!r}")
            axis = 180.0
        else:
            axis = float(a_text)
        return cls(sphere, cylinder, axis)
