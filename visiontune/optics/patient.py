"""A simulated patient for the refraction task (Fauvel & Chalk (contextual BO) §5.1).

Through lens ``x`` the patient's blur is ``β = |P(x) - P(x*)|`` (:mod:`.blur`), their acuity
``VA(x) = acuity_model(β)`` (default Blendowske: ``VA* + log10(1 + β²)``), and the chance of
reading a letter of size ``s`` (logMAR) is the psychometric function (same paper, Eq. 13)::

    P(correct | s, x) = γ + (1 - γ - λ) Φ(a (s - VA(x)))

For a duel of lenses ``x1``, ``x2`` shown with letters of size ``s`` (Eq. 11)::

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
has ``δ > 0``. :func:`~visiontune.optics.letter_difficulty.letter_offsets_from_percent_correct` turns each letter's
percent correct at one size (docs/design.md: about 71% for C, O, S to 94% for Z among Sloan letters) into
offsets. No table ships here: the caller supplies one from a cited source.

Accommodation (optional; docs/design.md, "The clinical refraction"). A patient with an
amplitude of accommodation ``A`` (diopters: ``accommodation_d``, else Hofstetter's mean line
at ``age_years`` from :mod:`visiontune.optics.accommodation`, else 0) uses up to
``A_s = f · A`` of it, ``f = accommodation_fraction`` (default 2/3): only a part of the
amplitude can be sustained comfortably, the clinical rule of thumb of near-addition
prescribing that one half to two thirds of the amplitude can be used and the rest is kept in
reserve (e.g. Millodot, *Dictionary of Optometry and Visual Science*; Elliott, *Clinical
Procedures in Primary Eye Care*; cited from the rule as taught, not checked page by page).
Applying the near-work rule to a distance chart seen through too much minus is our
**assumption**. Through a lens the residual power vector ``r = P(lens) - P(x*)``
becomes ``accommodated_residual(r, A_s)``: a lens more minus than the correction by up to
``A_s`` is read as well as the correction, a lens too plus is not helped. Only ``M``
changes, so this works for any cylinder axis. :meth:`blur_diopters` and everything built on
it (acuity, probabilities, answers) use this effective blur; with ``A = 0`` (the default)
nothing changes.

Keyed answers for exact resume. :meth:`answer_trial` and :meth:`prefers_trial` take the
trial index ``k`` and draw their one uniform from
``numpy.random.default_rng([seed, k, 0x5EED])`` (duels: ``[seed, k, 0x5EED, 1]``), so the
answer to trial ``k`` does not depend on how many answers came before or in which order
they were asked: a session killed and resumed meets the same answers. They need the patient
built with an integer ``seed``. A chart line (:meth:`answer_line_trial`) reads its letters with
``n`` uniforms of ``[seed, k, 0x5EED, 4]``. The stream-based :meth:`answer` / :meth:`prefers` are
unchanged and independent of the keyed draws.

Attention drift (optional, ``drift``: an :class:`~visiontune.optics.attention.AttentionDrift`):
the lapse rate and the threshold drift with the trial index, ``λ(k) = λ + Δλ min(k/K, 1)``,
``δ(k) = d k / 100`` logMAR (formulas and sources in :mod:`visiontune.optics.attention`).
Only the keyed methods, which know ``k``, apply it (:meth:`probability_correct_at_trial`,
:meth:`preference_probability_at_trial`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import ndtr

from visiontune._validate import check_int, check_rng, finite_array
from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import (
    accommodated_residual,
    hofstetter_amplitude_d,
)
from visiontune.optics.acuity import AcuityModel, BlendowskeAcuity
from visiontune.optics.attention import AttentionDrift, check_trial_index
from visiontune.optics.blur import blur_diopters, residual_power_vector
from visiontune.optics.letter_difficulty import check_letter_offsets
from visiontune.optics.prescription import Prescription
from visiontune.optics.psychometric import PsychometricFunction
from visiontune.optics.search_space import SEARCH_BOX, Box

__all__ = ["SimulatedPatient", "random_true_rx", "make_rng", "probability_grid", "TRIAL_KEY"]

_LATENTS = ("linear", "probit")

#: Key of the keyed answer streams: trial ``k`` draws from ``default_rng([seed, k, TRIAL_KEY])``.
TRIAL_KEY = 0x5EED
#: Sub-key of a chart line's answers, ``[seed, k, TRIAL_KEY, LINE_KEY]`` (1: duels, 2: comparisons, 3: sliders).
LINE_KEY = 4

#: Default share of the amplitude of accommodation a patient uses (the "half to two-thirds" rule).
DEFAULT_ACCOMMODATION_FRACTION = 2.0 / 3.0


def make_rng(seed) -> np.random.Generator:
    """A numpy Generator from ``seed``: an int >= 0, a SeedSequence, or a Generator (used as is)."""
    return check_rng(seed, "seed", allow_seed=True)


def random_true_rx(rng: np.random.Generator, box: Box = SEARCH_BOX, axis_deg: float = 180.0) -> Prescription:
    """A true correction with ``(sphere_d, cylinder_d)`` uniform in ``box`` (default the
    search box ``[-4, 4]²`` D of Fauvel & Chalk (contextual BO) §5.3) at axis ``axis_deg``. Consumes two draws of
    ``rng``."""
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
    per-letter difficulty (module docstring); without it every letter is alike (as in the paper).
    ``age_years`` (years, [0, 120]), ``accommodation_d`` (amplitude, diopters >= 0) and
    ``accommodation_fraction`` (in [0, 1]): accommodation (module docstring).
    ``drift``: an :class:`AttentionDrift` or None (module docstring); its largest lapse rate
    ``λ + Δλ`` must stay below ``1 - 1/n``.

    Lenses (``lens``, ``lens1``, ``lens2``) are a :class:`Prescription`, a sequence of them, or
    ``(sphere_d, cylinder_d)`` as a ``(2,)`` or ``(n, 2)`` array at ``true_rx.axis_deg``.
    Letter sizes ``s`` are logMAR, a float or an array broadcasting against the lenses.
    """

    def __init__(
        self,
        true_rx: Prescription,
        best_corrected_logmar: float = 0.0,
        slope: float = 5.0,
        n_alternatives: int = 26,
        lapse: float = 0.0,
        seed=0,
        *,
        acuity_model: AcuityModel | None = None,
        preference_latent: str = "linear",
        letter_offsets_logmar: Mapping[str, float] | None = None,
        age_years: float | None = None,
        accommodation_d: float | None = None,
        accommodation_fraction: float = DEFAULT_ACCOMMODATION_FRACTION,
        drift: AttentionDrift | None = None,
    ) -> None:
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
                raise InvalidInputError(
                    f"acuity_model: expected a callable blur -> logMAR, got {type(acuity_model).__name__}"
                )
        if preference_latent not in _LATENTS:
            raise InvalidInputError(f"preference_latent: expected one of {_LATENTS}, got {preference_latent!r}")
        self._letter_offsets = check_letter_offsets(letter_offsets_logmar)
        self._true_rx = true_rx
        self._acuity = acuity_model
        self._psychometric = PsychometricFunction(slope, n_alternatives, lapse)
        self._preference_latent = preference_latent
        self._rng = make_rng(seed)
        self._seed = None if isinstance(seed, (np.random.Generator, np.random.SeedSequence)) else int(seed)
        self._age_years, self._amplitude_d, self._fraction = _check_accommodation(
            age_years, accommodation_d, accommodation_fraction
        )
        if drift is not None:
            if not isinstance(drift, AttentionDrift):
                raise InvalidInputError(f"drift: expected an AttentionDrift or None, got {type(drift).__name__}")
            top = drift.max_lapse(self._psychometric.lapse)
            if not top < 1.0 - self._psychometric.guess_rate:
                raise InvalidInputError(
                    f"drift: lapse + lapse_increase = {top:.6g} must stay below 1 - 1/n = "
                    f"{1.0 - self._psychometric.guess_rate:.6g}"
                )
        self._drift = drift

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

    @property
    def seed(self) -> int | None:
        """The integer seed (None when built from a Generator or SeedSequence)."""
        return self._seed

    @property
    def age_years(self) -> float | None:
        return self._age_years

    @property
    def accommodation_amplitude_d(self) -> float:
        """Amplitude of accommodation ``A`` (diopters)."""
        return self._amplitude_d

    @property
    def accommodation_fraction(self) -> float:
        return self._fraction

    @property
    def usable_accommodation_d(self) -> float:
        """``f · A`` (diopters): how much over-minus the patient cancels by accommodating."""
        return self._fraction * self._amplitude_d

    @property
    def drift(self) -> AttentionDrift | None:
        return self._drift

    def __repr__(self) -> str:
        p = self._psychometric
        return (
            f"SimulatedPatient(true_rx={self._true_rx.format()!r}, acuity_model={self._acuity!r}, "
            f"slope={p.slope}, n_alternatives={p.n_alternatives}, lapse={p.lapse})"
        )

    # --- noiseless model ---------------------------------------------------------------
    def residual_power_vector(self, lens) -> np.ndarray:
        """Effective residual ``(M, J0, J45)`` (diopters) after accommodation:
        ``accommodated_residual(P(lens) - P(true_rx), f · A)``; ``(3,)`` or ``(n, 3)``."""
        r = residual_power_vector(lens, self._true_rx)
        usable = self.usable_accommodation_d
        return accommodated_residual(r, usable) if usable > 0 else r

    def blur_diopters(self, lens):
        """Effective blur (diopters): ``|P(lens) - P(true_rx)|`` without accommodation, the
        length of :meth:`residual_power_vector` with it. Float for one lens, ``(n,)`` otherwise."""
        if self.usable_accommodation_d <= 0:
            return blur_diopters(lens, self._true_rx)
        beta = np.linalg.norm(self.residual_power_vector(lens), axis=-1)
        return float(beta) if np.ndim(beta) == 0 else beta

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
                    f"letter: {letter!r} has no difficulty offset; "
                    f"known letters: {''.join(sorted(self._letter_offsets))}"
                )
            return self._letter_offsets[letter]
        if isinstance(letter, Sequence) or isinstance(letter, np.ndarray):
            return np.array([self.letter_offset_logmar(str(x) if isinstance(x, np.str_) else x) for x in letter])
        raise InvalidInputError(f"letter: expected a string or a sequence of strings, got {type(letter).__name__}")

    def probability_correct(self, s, lens, letter=None):
        """``γ + (1-γ-λ) Φ(a (s - VA(lens) - δ(letter)))`` (Fauvel & Chalk (contextual BO), Eq. 13; ``δ = 0`` by
        default)."""
        return self._probability_correct(s, lens, letter, self._psychometric, 0.0)

    def preference_probability(self, s, lens1, lens2):
        """``P(lens1 preferred) = Φ(f(s, lens1) - f(s, lens2))`` (Fauvel & Chalk (contextual BO), Eq. 11)."""
        return self._preference_probability(s, lens1, lens2, self._psychometric, 0.0)

    def _probability_correct(self, s, lens, letter, psychometric: PsychometricFunction, shift: float):
        va = np.asarray(self.acuity_logmar(lens)) + self.letter_offset_logmar(letter) + shift
        return psychometric.probability_correct(s, va)

    def _preference_probability(self, s, lens1, lens2, psychometric: PsychometricFunction, shift: float):
        va1 = np.asarray(self.acuity_logmar(lens1)) + shift
        va2 = np.asarray(self.acuity_logmar(lens2)) + shift
        if self._preference_latent == "linear":
            f1, f2 = psychometric.latent(s, va1), psychometric.latent(s, va2)
        else:
            f1, f2 = psychometric.probit_latent(s, va1), psychometric.probit_latent(s, va2)
        p = ndtr(np.asarray(f1) - np.asarray(f2))
        return float(p) if p.ndim == 0 else p

    # --- trial k: drift and keyed answers ------------------------------------------------
    def _psychometric_at(self, k: int) -> tuple[PsychometricFunction, float]:
        """The psychometric function and threshold shift (logMAR) at trial ``k``."""
        k = check_trial_index(k)
        if self._drift is None:
            return self._psychometric, 0.0
        p = self._psychometric
        lapse = self._drift.lapse_at(k, p.lapse)
        psychometric = p if lapse == p.lapse else PsychometricFunction(p.slope, p.n_alternatives, lapse)
        return psychometric, self._drift.logmar_shift_at(k)

    def probability_correct_at_trial(self, k: int, s, lens, letter=None):
        """:meth:`probability_correct` at trial ``k`` (0-based), with the attention drift:
        ``γ + (1-γ-λ(k)) Φ(a (s - VA(lens) - δ(letter) - δ(k)))``; without drift the same as
        :meth:`probability_correct`."""
        psychometric, shift = self._psychometric_at(k)
        return self._probability_correct(s, lens, letter, psychometric, shift)

    def preference_probability_at_trial(self, k: int, s, lens1, lens2):
        """:meth:`preference_probability` at trial ``k`` with the drifted psychometric function
        and threshold (with the linear latent the shift cancels and the lapse does not enter,
        so drift changes only the probit latent's duels)."""
        psychometric, shift = self._psychometric_at(k)
        return self._preference_probability(s, lens1, lens2, psychometric, shift)

    def trial_uniform(self, k: int, duel: bool = False) -> float:
        """The one uniform draw of trial ``k``: ``default_rng([seed, k, 0x5EED]).random()``
        (``[seed, k, 0x5EED, 1]`` for a duel). Needs an integer ``seed``."""
        k = check_trial_index(k)
        if self._seed is None:
            raise InvalidInputError(
                "seed: keyed answers (answer_trial, prefers_trial) need the patient built with an integer seed, "
                "not a Generator or SeedSequence"
            )
        key = [self._seed, k, TRIAL_KEY, 1] if duel else [self._seed, k, TRIAL_KEY]
        return float(np.random.default_rng(key).random())

    def answer_trial(self, k: int, s: float, lens, letter: str | None = None) -> bool:
        """Letter trial ``k`` (0-based): True iff ``u_k < P`` with ``u_k`` =
        :meth:`trial_uniform` and ``P`` = :meth:`probability_correct_at_trial`. The same
        ``(seed, k, s, lens, letter)`` always gives the same answer, whatever was asked before."""
        p = self.probability_correct_at_trial(k, s, lens, letter)
        if np.ndim(p) != 0:
            raise InvalidInputError(f"s: answer_trial() takes one query, got {np.shape(p)}")
        return bool(self.trial_uniform(k) < p)

    def prefers_trial(self, k: int, s: float, lens1, lens2) -> bool:
        """Duel at trial ``k``: True iff ``u_k < P(lens1 preferred)`` (keyed like
        :meth:`answer_trial`, from its own stream ``[seed, k, 0x5EED, 1]``)."""
        p = self.preference_probability_at_trial(k, s, lens1, lens2)
        if np.ndim(p) != 0:
            raise InvalidInputError(f"s: prefers_trial() takes one duel, got {np.shape(p)}")
        return bool(self.trial_uniform(k, duel=True) < p)

    def answer_line_trial(
        self, k: int, s: float, lens, letters: Sequence[str], crowding_logmar: float = 0.0
    ) -> tuple[bool, ...]:
        """A chart line at trial ``k``: each letter ``j`` of ``letters`` (read in order, size ``s``
        logMAR, through ``lens``) right iff ``u_j < P_j``, ``P_j`` =
        :meth:`probability_correct_at_trial` at the size ``s - crowding_logmar`` (a letter between
        neighbours read as a letter alone ``crowding_logmar`` smaller) with the letter's own
        difficulty, ``u`` the ``n`` uniforms of ``default_rng([seed, k, 0x5EED, 4])``. Independent
        letters, each with its own lapse, as the letter model (keyed like :meth:`answer_trial`)."""
        k = check_trial_index(k)
        crowding = float(crowding_logmar)
        if not (np.isfinite(crowding) and 0.0 <= crowding <= 0.5):
            raise InvalidInputError(f"crowding_logmar: expected a value in [0, 0.5] logMAR, got {crowding_logmar!r}")
        if isinstance(letters, str) or len(letters) < 1:
            raise InvalidInputError(f"letters: expected a sequence of the line's letters, got {letters!r}")
        if self._seed is None:
            raise InvalidInputError(
                "seed: keyed answers (answer_line_trial) need the patient built with an integer seed"
            )
        letters = list(letters)
        p = np.asarray(self.probability_correct_at_trial(k, float(s) - crowding, lens, letters), dtype=float)
        p = np.broadcast_to(p, (len(letters),))
        u = np.random.default_rng([self._seed, k, TRIAL_KEY, LINE_KEY]).random(len(letters))
        return tuple(bool(x) for x in u < p)

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


def _check_accommodation(age_years, accommodation_d, fraction) -> tuple[float | None, float, float]:
    """Validated ``(age_years, amplitude_d, fraction)``; the amplitude is ``accommodation_d``
    if given, else Hofstetter's mean line at ``age_years``, else 0."""
    age = None
    if age_years is not None:
        if isinstance(age_years, bool):
            raise InvalidInputError(f"age_years: expected a number of years, got {age_years!r}")
        arr = finite_array("age_years", age_years)
        if arr.ndim != 0 or not 0.0 <= float(arr) <= 120.0:
            raise InvalidInputError(f"age_years: expected one age in [0, 120] years, got {age_years!r}")
        age = float(arr)
    if accommodation_d is not None:
        if isinstance(accommodation_d, bool):
            raise InvalidInputError(f"accommodation_d: expected an amplitude in diopters, got {accommodation_d!r}")
        arr = finite_array("accommodation_d", accommodation_d)
        if arr.ndim != 0 or not 0.0 <= float(arr) <= 30.0:
            raise InvalidInputError(f"accommodation_d: expected one amplitude in [0, 30] D, got {accommodation_d!r}")
        amplitude = float(arr)
    elif age is not None:
        amplitude = float(hofstetter_amplitude_d(age, "mean"))
    else:
        amplitude = 0.0
    if isinstance(fraction, bool):
        raise InvalidInputError(f"accommodation_fraction: expected a number in [0, 1], got {fraction!r}")
    arr = finite_array("accommodation_fraction", fraction)
    if arr.ndim != 0 or not 0.0 <= float(arr) <= 1.0:
        raise InvalidInputError(f"accommodation_fraction: expected one number in [0, 1], got {fraction!r}")
    return age, amplitude, float(arr)


def probability_grid(patient: SimulatedPatient, s: float, n_grid: int = 81, box: Box = SEARCH_BOX):
    """``P(correct | s, x)`` on an ``n_grid × n_grid`` grid of ``box`` (for plots; Fauvel & Chalk (contextual BO),
    Fig. S3B).

    Returns ``(spheres, cylinders, p)``: ``spheres``, ``cylinders`` the ``(n_grid,)`` axes
    (diopters, at ``patient.true_rx.axis_deg``) and ``p[i, j] = P(correct | s, (spheres[i],
    cylinders[j]))``, shape ``(n_grid, n_grid)``.
    """
    if not isinstance(patient, SimulatedPatient):
        raise InvalidInputError(f"patient: expected a SimulatedPatient, got {type(patient).__name__}")
    check_int("n_grid", n_grid, lo=2)
    if box.dim != 2:
        raise InvalidInputError(f"box: expected a 2-D (sphere, cylinder) box, got {box.dim} dimensions")
    spheres = np.linspace(box.lower[0], box.upper[0], int(n_grid))
    cylinders = np.linspace(box.lower[1], box.upper[1], int(n_grid))
    ss, cc = np.meshgrid(spheres, cylinders, indexing="ij")
    lenses = np.column_stack([ss.ravel(), cc.ravel()])
    p = np.asarray(patient.probability_correct(s, lenses)).reshape(ss.shape)
    return spheres, cylinders, p
