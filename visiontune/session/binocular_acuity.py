"""Binocular acuity of a simulated patient: both eyes open, each through its own lens.

The acuity with both eyes open is the better eye's, improved by binocular summation when the two
eyes see about equally well:

    VA_OU = min(VA_OD, VA_OS) - S(Δ),   S(Δ) = S0 · max(0, 1 - Δ / Δ0),   Δ = |VA_OD - VA_OS|

(logMAR; each VA the eye's acuity through its lens). ``S0`` = 0.045 logMAR: Cagenello, Arditi &
Halpern (1993, "Binocular enhancement of visual acuity", J. Opt. Soc. Am. A 10:1841-1848,
abstract): with equal contrast in the two eyes binocular optotype acuity was better than the
best monocular acuity by 0.045 logMAR on average (11%), an advantage that became smaller as the
eyes' inputs differed more; Yu & Watson (2023, "Binocular summation in high and low contrast
letter acuities", Front. Neurosci. 17:1174900) found 0.044 logMAR on Bailey-Lovie charts in 358
normal adults, declining with the interocular acuity difference. The linear decline to no
summation at ``Δ0`` = 0.30 logMAR (three chart lines between the eyes) is **our assumption**:
neither paper gives the shape, only that the advantage shrinks with the difference; with eyes
that differ by more than ``Δ0`` the binocular acuity is the better eye's (no binocular
inhibition is modelled).

:class:`BinocularPatient` reads a chart as one observer with that threshold: the better eye's
psychometric function (slope, guess and lapse rates, letter difficulty) centred on ``VA_OU``.
"""

from __future__ import annotations

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError

__all__ = [
    "BINOCULAR_CHART_METHOD",
    "SUMMATION_LOGMAR",
    "SUMMATION_VANISHES_LOGMAR",
    "BinocularPatient",
    "binocular_summation_logmar",
    "binocular_va_logmar",
    "ou_seed",
    "summation_detail",
]

#: ``S0``: binocular summation of acuity with equal eyes (logMAR; Cagenello et al. 1993).
SUMMATION_LOGMAR = 0.045
#: ``Δ0``: the interocular acuity difference at which summation is gone (logMAR; assumed).
SUMMATION_VANISHES_LOGMAR = 0.30


def binocular_summation_logmar(va_od: float, va_os: float) -> float:
    """``S(Δ) = S0 · max(0, 1 - |VA_OD - VA_OS| / Δ0)`` (logMAR, >= 0; module docstring)."""
    od = check_number("va_od", va_od, -1, 3)
    os_ = check_number("va_os", va_os, -1, 3)
    return SUMMATION_LOGMAR * max(0.0, 1.0 - abs(od - os_) / SUMMATION_VANISHES_LOGMAR)


def binocular_va_logmar(va_od: float, va_os: float) -> float:
    """``VA_OU = min(VA_OD, VA_OS) - S(Δ)`` (logMAR; module docstring)."""
    return min(float(va_od), float(va_os)) - binocular_summation_logmar(va_od, va_os)


def ou_seed(seed: int) -> int:
    """The seed of the chart read with both eyes open, from the visit's (right eye's) seed:
    ``seed ^ 2`` (the left eye's is ``seed ^ 1``), so the three charts show different letters."""
    return int(seed) ^ 2


class BinocularPatient:
    """Both eyes of a simulated patient open: ``probability_correct(s, lenses, letter)`` with
    ``lenses`` ``{"OD": rx, "OS": rx}`` is the better eye's psychometric function centred on
    :func:`binocular_va_logmar` of the two eyes' acuities through their lenses (the eyes are
    :class:`~visiontune.optics.SimulatedPatient` of the same person)."""

    def __init__(self, od, os_) -> None:
        self.eyes = {"OD": od, "OS": os_}

    def acuities(self, lenses: dict) -> dict[str, float]:
        """``{"OD": VA, "OS": VA}``: each eye's acuity (logMAR) through its lens."""
        if not isinstance(lenses, dict) or set(lenses) != {"OD", "OS"}:
            raise InvalidInputError(f"lenses: expected the lens of OD and OS, got {lenses!r}")
        return {e: float(self.eyes[e].acuity_logmar(lenses[e])) for e in ("OD", "OS")}

    def acuity_logmar(self, lenses: dict) -> float:
        """``VA_OU`` through ``lenses`` (logMAR)."""
        va = self.acuities(lenses)
        return binocular_va_logmar(va["OD"], va["OS"])

    def probability_correct(self, s, lenses: dict, letter=None):
        """``γ + (1-γ-λ) Φ(a (s - VA_OU - δ(letter)))`` with the better eye's ``a``, ``γ``, ``λ``
        and letter offsets ``δ`` (Fauvel & Chalk's Eq. 13 for one eye, centred on ``VA_OU``)."""
        va = self.acuities(lenses)
        better = self.eyes["OD" if va["OD"] <= va["OS"] else "OS"]
        threshold = binocular_va_logmar(va["OD"], va["OS"]) + better.letter_offset_logmar(letter)
        return better.psychometric.probability_correct(s, threshold)


#: How a simulated patient's acuity with both eyes open is read (the visit's ``OU`` acuity; at most
#: 200 characters, the trial log's limit; the summation model is in the acuity's detail).
BINOCULAR_CHART_METHOD = (
    "letter chart with both eyes open through both final prescriptions, simulated patient: "
    "binocular summation of acuity (Cagenello, Arditi & Halpern 1993); score 1.1 - 0.02 N"
)


def summation_detail(va_od: float, va_os: float) -> dict:
    """The model behind a simulated ``OU`` reading, for the acuity's detail: the eyes' acuities
    through their lenses, ``S0``, ``Δ0``, the summation and ``VA_OU`` (logMAR)."""
    return {
        "va_od_logmar": float(va_od),
        "va_os_logmar": float(va_os),
        "summation_s0_logmar": SUMMATION_LOGMAR,
        "summation_vanishes_logmar": SUMMATION_VANISHES_LOGMAR,
        "summation_logmar": binocular_summation_logmar(va_od, va_os),
        "threshold_ou_logmar": binocular_va_logmar(va_od, va_os),
    }
