"""A simulated patient for the refraction task (seed 002 §5.1).

Through lens ``x`` the patient's blur is ``β = |P(x) - P(x*)|`` (:mod:`.blur`), their acuity
``VA(x) = acuity_model(β)`` (default Blendowske: ``VA* + log10(1 + β²)``), and the chance of
reading a letter of size ``s`` (logMAR) is the psychometric function (seed 002, Eq. 13)::

    P(correct | s, x) = γ + (1 - γ - λ) Φ(a (s - VA(x)))

For a duel of lenses ``x1``, ``x2`` shown with letters of size ``s`` (seed 002, Eq. 11)::

    P(x1 preferred) = Φ(f(s, x1) - f(s, x2))

with ``f`` the linear latent ``a (s - VA(x))`` by default (then ``s`` cancels:
``P = Φ(a (VA(x2) - VA(x1)))``), or Eq. 14's ``f = Φ⁻¹(P(correct | s, x))`` with
``preference_latent="probit"`` (then ``s`` matters: both lenses look the same when the
letters are far too small, both at chance; with a lapse rate also when they are far too
large, both at ``1 - λ``; with ``λ = 0`` and large letters it tends to the linear latent).

Every answer is drawn from the patient's own ``numpy.random.Generator`` built from ``seed``:
the same seed and the same queries give the same answers. Each call to :meth:`answer` or
:meth:`prefers` consumes exactly one uniform draw; :meth:`answers` and :meth:`preferences`
consume one per query, in order, so ``answers(s, X)`` equals ``[answer(s_i, x_i) ...]`` for
the same seed.

Letter difficulty (optional): ``letter_offsets_logmar`` maps a letter to ``δ`` (logMAR),
added to the acuity for that letter, ``P = γ + (1-γ-λ) Φ(a (s - VA(x) - δ))``: a hard letter
has ``δ > 0``. :func:`~visiontune.optics.letter_difficulty.letter_offsets_from_percent_correct` turns each letter's percent
correct at one size (DESIGN.md: about 71% for C, O, S to 94% for Z among Sloan letters) into
offsets. No table ships here: the caller supplies one from a cited source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import ndtr

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity import AcuityModel, BlendowskeAcuity
from visiontune.optics.blur import blur_diopters
from visiontune.optics.letter_difficulty import check_letter_offsets
from visiontune.optics.prescription import Prescription
from visiontune.optics.psychometric import PsychometricFunction
from visiontune.optics.refraction import SEARCH_BOX, Box

__all__ = ["SimulatedPatient", "random_true_rx", "make_rng", "probability_grid"]

_LATENTS = ("linear", "probit")


def make_rng(seed) -> np.random.Generator:
    """A numpy Generator from ``seed``: an int >= 0, a SeedSequence, or a Generator (used as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInputError(f"seed: expected an integer >= 0, a SeedSequence or a Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def random_true_rx(rng: np.random.Generator, box: Box = SEARCH_BOX, axis_deg: float = 180.0) -> Prescription:
    """A true correction with ``(sphere_d, cylinder_d)`` uniform in ``box`` (default the
    search box ``[-4, 4]²`` D of seed 002 §5.3) at axis ``axis_deg``. Consumes two draws of ``rng``."""
    if box.dim != 2:
        raise InvalidInputError(f"box: expected a 2-D (sphere, cylinder) box, got {box.dim} dimensions")
    sphere, cylinder = box.sample(rng, 1)[0]
    return Prescription(float(sphere), float(cylinder), axis_deg)


class SimulatedPatient:
    """A patient with best correction ``true_rx`` answering letter and preference queries.

    ``true_rx``: the :class:`Prescription` that corrects them. ``best_corrected_logmar``:
    ``VA(x*)`` (logMAR). ``slope`` ``a`` (logMAR⁻¹, > 0), ``n_alternatives`` ``n`` (>= 2,
    chance 1/n), ``lapse`` ``λ`` in ``[0, 1 - 1/n)``: the psychometric function. ``seed``: see
    :func:`make_rng`. ``acuity_model``: any :class:`AcuityModel` (blur -> logMAR); when given,
    ``best_corrected_logmar`` must be left at its default. ``preference_latent``: ``"linear"``
    or ``"probit"`` (module docstring). ``letter_offsets_logmar``: optional ``{letter: δ}``
    per-letter difficulty (module docstring); without it every letter is alike (seed 002).

    Lenses (``lens``, ``lens1``, ``lens2``) are a :class:`Prescription`, a sequence of them, or
    ``(sphere_d, cylinder_d)`` as a ``(2,)`` or ``(n, 2)`` array at ``true_rx.axis_deg``.
    Letter sizes ``s`` are logMAR, a float or an array broadcasting against the lenses.
    """

    def __init__(self, true_rx: Prescription, best_corrected_logmar: float = 0.0, slope: float = 5.0,
                 n_alternatives: int = 26, lapse: float = 0.0, seed=0, *,
                 acuity_model: AcuityModel | None = None, preference_latent: str = "linear",
                 letter_offsets_logmar: Mapping[str, float] | None = None) -> None:
        if not isinstance(true_rx, Prescription):
            raise InvalidInputError(f"true_rx: expected a Prescription, got {type(true_rx).__name__}")
        if acuity_model is None:
            acuity_model = BlendowskeAcuity(best_corrected_logmar)
        else:
            if best_corrected_logmar != 0.0:
                raise InvalidInputError(
                    "best_corrected_logmar: give it to the acuity_model, not to the patient, when acuity_model is set"
                )
            if not callable(acuity_model):
                raise InvalidInputError(f"acuity_model: expected a callable blur -> logMAR, got {type(acuity_model).__name__}")
        if preference_latent not in _LATENTS:
            raise InvalidInputError(f"preference_latent: expected one of {_LATENTS}, got {preference_latent!r}")
        self._letter_offsets = check_letter_offsets(letter_offsets_logmar)
        self._true_rx = true_rx
        self._acuity = acuity_model
        self._psychometric = PsychometricFunction(slope, n_alternatives, lapse)
        self._preference_latent = preference_latent
        self._rng = make_rng(seed)

    # --- read-only description ---------------------------------------------------------
    @property
    def true_rx(self) -> Prescription:
        return self._true_rx

    @property
    def psychometric(self) -> PsychometricFunction:
        return self._psychometric

    @property
    def acuity_model(self) -> AcuityModel:
        return self._acuity

    def __repr__(self) -> str:
        p = self._psychometric
        return (f"SimulatedPatient(true_rx={self._true_rx.format()!r}, acuity_model={self._acuity!r}, "
                f"slope={p.slope}, n_alternatives={p.n_alternatives}, lapse={p.lapse})")

    # --- noiseless model ---------------------------------------------------------------
    def blur_diopters(self, lens):
        """Blur ``|P(lens) - P(true_rx)|`` (diopters): float for one lens, ``(n,)`` otherwise."""
        return blur_diopters(lens, self._true_rx)

    def acuity_logmar(self, lens):
        """``VA(lens)`` (logMAR) from the acuity model: float for one lens, ``(n,)`` otherwise."""
        return self._acuity(self.blur_diopters(lens))

    def latent(self, s, lens):
        """Linear latent ``a (s - VA(lens))`` (unitless)."""
        return self._psychometric.latent(s, self.acuity_logmar(lens))

    def letter_offset_logmar(self, letter):
        """``δ`` (logMAR) for ``letter`` (a string, a sequence of strings, or None for 0)."""
        if letter is None:
            return 0.0
        if isinstance(letter, str):
            if self._letter_offsets is None:
                return 0.0
            if letter not in self._letter_offsets:
                raise InvalidInputError(
                    f"letter: {letter!r} has no difficulty offset; known letters: {''.join(sorted(self._letter_offsets))}"
                )
            return self._letter_offsets[letter]
        if isinstance(letter, Sequence) or isinstance(letter, np.ndarray):
            return np.array([self.letter_offset_logmar(str(x) if isinstance(x, np.str_) else x) for x in letter])
        raise InvalidInputError(f"letter: expected a string or a sequence of strings, got {type(letter).__name__}")

    def probability_correct(self, s, lens, letter=None):
        """``γ + (1-γ-λ) Φ(a (s - VA(lens) - δ(letter)))`` (seed 002, Eq. 13; ``δ = 0`` by default)."""
        va = np.asarray(self.acuity_logmar(lens)) + self.letter_offset_logmar(letter)
        return self._psychometric.probability_correct(s, va)

    def preference_probability(self, s, lens1, lens2):
        """``P(lens1 preferred) = Φ(f(s, lens1) - f(s, lens2))`` (seed 002, Eq. 11)."""
        if self._preference_latent == "linear":
            f1, f2 = self.latent(s, lens1), self.latent(s, lens2)
        else:
            f1 = self._psychometric.probit_latent(s, self.acuity_logmar(lens1))
            f2 = self._psychometric.probit_latent(s, self.acuity_logmar(lens2))
        p = ndtr(np.asarray(f1) - np.asarray(f2))
        return float(p) if p.ndim == 0 else p

    # --- noisy answers -----------------------------------------------------------------
    def answer(self, s: float, lens, letter: str | None = None) -> bool:
        """One letter trial: True if the letter of size ``s`` (logMAR) is read correctly
        through ``lens``. One uniform draw ``u``; correct iff ``u < P(correct)``."""
        p = self.probability_correct(s, lens, letter)
        if np.ndim(p) != 0:
            raise InvalidInputError(f"s: answer() takes one query, got {np.shape(p)}; use answers()")
        return bool(self._rng.random() < p)

    def answers(self, s, lens, letters=None) -> np.ndarray:
        """Vectorised :meth:`answer`: ``(n,)`` bool, one uniform draw per query, in order."""
        p = np.atleast_1d(np.asarray(self.probability_correct(s, lens, letters)))
        if p.ndim != 1:
            raise InvalidInputError(f"s: expected a 1-D batch of queries, got shape {p.shape}")
        return self._rng.random(p.shape[0]) < p

    def prefers(self, s: float, lens1, lens2) -> bool:
        """One duel: True if ``lens1`` is preferred to ``lens2`` with letters of size ``s``.
        One uniform draw; True iff ``u < Φ(f(s, lens1) - f(s, lens2))``."""
        p = self.preference_probability(s, lens1, lens2)
        if np.ndim(p) != 0:
            raise InvalidInputError(f"s: prefers() takes one duel, got {np.shape(p)}; use preferences()")
        return bool(self._rng.random() < p)

    def preferences(self, s, lens1, lens2) -> np.ndarray:
        """Vectorised :meth:`prefers`: ``(n,)`` bool, one uniform draw per duel, in order."""
        p = np.atleast_1d(np.asarray(self.preference_probability(s, lens1, lens2)))
        if p.ndim != 1:
            raise InvalidInputError(f"s: expected a 1-D batch of duels, got shape {p.shape}")
        return self._rng.random(p.shape[0]) < p



def probability_grid(patient: SimulatedPatient, s: float, n_grid: int = 81, box: Box = SEARCH_BOX):
    """``P(correct | s, x)`` on an ``n_grid × n_grid`` grid of ``box`` (for plots; seed 002 Fig. S3B).

    Returns ``(spheres, cylinders, p)``: ``spheres``, ``cylinders`` the ``(n_grid,)`` axes
    (diopters, at ``patient.true_rx.axis_deg``) and ``p[i, j] = P(correct | s, (spheres[i],
    cylinders[j]))``, shape ``(n_grid, n_grid)``.
    """
    if not isinstance(patient, SimulatedPatient):
        raise InvalidInputError(f"patient: expected a SimulatedPatient, got {type(patient).__name__}")
    if isinstance(n_grid, bool) or not isinstance(n_grid, (int, np.integer)) or n_grid < 2:
        raise InvalidInputError(f"n_grid: expected an integer >= 2, got {n_grid!r}")
    if box.dim != 2:
        raise InvalidInputError(f"box: expected a 2-D (sphere, cylinder) box, got {box.dim} dimensions")
    spheres = np.linspace(box.lower[0], box.upper[0], int(n_grid))
    cylinders = np.linspace(box.lower[1], box.upper[1], int(n_grid))
    ss, cc = np.meshgrid(spheres, cylinders, indexing="ij")
    lenses = np.column_stack([ss.ravel(), cc.ravel()])
    p = np.asarray(patient.probability_correct(s, lenses)).reshape(ss.shape)
    return spheres, cylinders, p
