"""The one notation of a prescription: every surface (app, PDF, command line) writes a lens here.

A trial lens reads ``S -1.25 / C -0.50 x 035``:

* each power signed with two decimals (``+0.25``, ``-1.75``); a zero sphere is ``plano`` and a
  lens without cylinder is written sphere-only with ``DS`` (``S -1.25 DS``, ``S plano DS``), the
  clinical conventions for a zero power (Wikipedia, *Eyeglass prescription*, "Variations in
  prescription writing": "the spherical power will sometimes be written as 0.00 and sometimes as
  plano (pl.)"; a sphere-only prescription carries ``DS``, dioptre sphere). ``plano`` is chosen
  over ``+0.00`` because a zero has no sign to write;
* the axis in whole degrees, three digits (``x 005``, ``x 035``, ``x 180``; 0 is written 180), so
  that a hurried ``x 5`` cannot be misread as ``x 50``;
* in minus- or plus-cylinder form as asked (:func:`rx_text`'s ``form``).

A value that is not a trial lens (a sphere or cylinder off the 0.25 D steps, or an axis that is
not a whole degree: a posterior estimate, a simulated patient's truth, a GP setting) is never
written as a lens: its text carries the mark ``(not a trial lens)``, or ``(estimate, not a trial
lens)`` when the caller says what it is (``kind``). :func:`signed` writes any other signed number
(an acuity in logMAR, a change in diopters) without a negative zero (``-0.00`` is ``+0.00``).

:meth:`visiontune.optics.prescription.Prescription.parse` reads every trial lens written here
back to the same lens (tests/optics/test_notation.py).
"""

from __future__ import annotations

from visiontune.errors import InvalidInputError

__all__ = [
    "AXIS_TOLERANCE_DEG",
    "PLANO",
    "STEP_D",
    "STEP_TOLERANCE_D",
    "TRUTH",
    "axis_text",
    "is_trial_lens",
    "power_text",
    "rx_cells",
    "rx_text",
    "signed",
]

#: The trial-lens step of sphere and cylinder (D).
STEP_D = 0.25
#: A power within this of a multiple of :data:`STEP_D` is on the step (D); stored lenses are exact.
STEP_TOLERANCE_D = 1e-6
#: An axis within this of a whole degree is whole (degrees).
AXIS_TOLERANCE_DEG = 1e-6
PLANO = "plano"
#: The ``kind`` of a simulated patient's correction, off the steps: ``(simulated truth, not a trial lens)``.
TRUTH = "simulated truth"
_MINUS = "\u2212"
_TIMES = "\u00d7"


def signed(value: float, decimals: int = 2) -> str:
    """``value`` with its sign always written and ``decimals`` decimals; a value that rounds to
    zero is ``+0.00`` (never ``-0.00``)."""
    text = f"{float(value):+.{decimals}f}"
    return "+" + text[1:] if text.startswith("-") and float(text) == 0.0 else text


def _on_step(x: float) -> bool:
    return abs(x / STEP_D - round(x / STEP_D)) * STEP_D <= STEP_TOLERANCE_D


def is_trial_lens(rx) -> bool:
    """Whether ``rx`` (anything with ``sphere_d``, ``cylinder_d``, ``axis_deg``) is a trial
    lens: sphere and cylinder on the 0.25 D steps and, with a cylinder, a whole-degree axis."""
    sphere, cylinder = float(rx.sphere_d), float(rx.cylinder_d)
    if not (_on_step(sphere) and _on_step(cylinder)):
        return False
    axis = float(rx.axis_deg)
    return round(cylinder / STEP_D) == 0 or abs(axis - round(axis)) <= AXIS_TOLERANCE_DEG


def power_text(value: float, *, unicode: bool = False) -> str:
    """One power: ``+0.25``, ``-1.75`` (two decimals, signed); zero (to the hundredth) is ``plano``.
    ``unicode`` writes the minus sign U+2212."""
    text = signed(value)
    if float(text) == 0.0:
        return PLANO
    return text.replace("-", _MINUS) if unicode else text


def axis_text(axis_deg: float) -> str:
    """An axis in whole degrees, three digits, in ``[1, 180]``: ``005``, ``035``, ``180`` (0 -> 180)."""
    whole = round(float(axis_deg)) % 180 or 180
    return f"{whole:03d}"


def rx_cells(rx, *, unicode: bool = False) -> tuple[str, str, str]:
    """The sphere, cylinder and axis of ``rx`` as a table's three cells: ``("-1.25", "-0.50",
    "035")``; without cylinder ``("-1.25", "DS", "-")`` (no mark: a table marks its own rows)."""
    cylinder = power_text(rx.cylinder_d, unicode=unicode)
    if cylinder == PLANO:
        return power_text(rx.sphere_d, unicode=unicode), "DS", "-"
    return power_text(rx.sphere_d, unicode=unicode), cylinder, axis_text(rx.axis_deg or 180.0)


class _Lens:
    """Sphere, cylinder, axis: the three numbers :func:`rx_cells` reads (this module sits below
    :class:`~visiontune.optics.prescription.Prescription`, which formats through it)."""

    __slots__ = ("sphere_d", "cylinder_d", "axis_deg")

    def __init__(self, sphere_d: float, cylinder_d: float, axis_deg: float) -> None:
        self.sphere_d, self.cylinder_d, self.axis_deg = sphere_d, cylinder_d, axis_deg


def _in_form(sphere: float, cylinder: float, axis: float, form: str | None) -> _Lens:
    """The same lens in ``form``: transposition ``S + C / -C x (A + 90)`` (the same power vector,
    Thibos et al. 1997) where the cylinder's sign is not the form's; ``None`` keeps it as it is."""
    if (form == "minus" and cylinder > 0) or (form == "plus" and cylinder < 0):
        sphere, cylinder, axis = sphere + cylinder, -cylinder, (axis + 90.0) % 180.0 or 180.0
    return _Lens(sphere, cylinder, axis)


def rx_text(rx, *, form: str | None = None, unicode: bool = False, kind: str | None = None) -> str:
    """A prescription in the one notation (module docstring): ``S -1.25 / C -0.50 x 035``.

    ``rx``: a :class:`~visiontune.optics.prescription.Prescription` (or a value with
    ``sphere_d``, ``cylinder_d``, ``axis_deg``; an axis of 0 or None is 180). ``form``:
    ``"minus"`` or ``"plus"`` writes that cylinder form (the same power vector), None the form
    it has. ``unicode``: U+2212 minus and U+00D7 times, as the app and the PDFs print. ``kind``:
    what a value off the trial-lens steps is (``"estimate"``, ``"simulated truth"``), named in
    its mark ``(estimate, not a trial lens)``; without it the mark is ``(not a trial lens)``.
    """
    if form not in (None, "minus", "plus"):
        raise InvalidInputError(f"form: expected 'minus', 'plus' or None, got {form!r}")
    lens = _in_form(float(rx.sphere_d), float(rx.cylinder_d), float(rx.axis_deg or 180.0), form)
    sphere, cylinder, axis = rx_cells(lens, unicode=unicode)
    text = f"S {sphere} DS" if cylinder == "DS" else f"S {sphere} / C {cylinder} {_TIMES if unicode else 'x'} {axis}"
    if is_trial_lens(lens):
        return text
    return f"{text} ({kind + ', ' if kind else ''}not a trial lens)"
