"""A chart line: several letters of one size read aloud through one lens, each an answer.

The clinic's question that carries most per second: the patient reads a line of ``n`` letters
(5 by default) of size ``s`` (logMAR) through lens ``L``, the clinician keys each letter right or
wrong. One presentation, ``n`` answers. The letters are drawn at logMAR chart spacing, one letter
width between letters (Bailey & Lovie 1976; the ETDRS charts and ISO 8596 keep it).

**Likelihood.** Each letter ``j`` is a letter answer of the optics model
(:mod:`visiontune.refraction.optics_model`) at the size ``s - c``::

    p_i = P(correct | s - c, L, θ_i) = γ + (1 - γ - λ) Φ(a_i (s - c - VA_i(L)))

with ``c = crowding_logmar`` >= 0, how much harder a letter between neighbours is than the same
letter alone (contour interaction and crowding; a protocol setting). Default **0**: at the fovea
flankers cost no acuity beyond an edge-to-edge spacing of 4.4 bar widths on average, and a
chart's one letter width is 5 (Coates, Chin & Chung 2013); a clinic whose patients read lines
worse than single letters (amblyopia, low contrast, the periphery) sets its own.

The letters of a line are independent given ``θ``, **each with its own lapse** ``λ``: the lapse
of the letter model is the chance of missing one legible letter (a slip, a blink, a keying
error), and nothing in the letter model says whether the slips of one line come together. A
shared lapse (a line missed at once) makes a line's answers a mixture; the letters' own model is
the default, the line missed at once an option (``line_lapse``, below). Given the particle all ``n`` letters
have the same ``p_i``, so the number correct ``K`` is binomial and sufficient::

    log P(line | θ_i) = K log p_i + (n - K) log(1 - p_i)     (+ a constant in θ)
    P(K = k | θ_i)    = C(n, k) p_i^k (1 - p_i)^(n - k)

**A threshold shared by a line** (``line_sd_logmar`` ``σ > 0``, off by default; assumed, no
source): the letters of one line may also share a shift ``δ ~ N(0, σ²)`` of the threshold (an
attention or fixation state that holds while one line is read, as the drift of a session holds
over many), integrated by Gauss-Hermite quadrature (``Q`` nodes ``x_q``, weights ``w_q``)::

    P(K = k | θ_i) = Σ_q w_q C(n, k) p_iq^k (1 - p_iq)^(n - k),   p_iq = P(correct | s - c - σ x_q, L, θ_i)

over-dispersed against the binomial: five answers of one line then count for less than five
letters apart. With ``σ = 0`` it is the binomial above.

**A line read at random** (``line_lapse`` ``λ_L > 0``, off by default): the patient's attention
lapses for the whole line with probability ``λ_L`` and every letter is then a guess, right with the
chance ``γ = 1/alternatives``::

    P(line | θ_i) = (1 - λ_L) p_i^K (1 - p_i)^(n - K) + λ_L γ^K (1 - γ)^(n - K)

(on the binomial counts the same mixture, ``P(K = k | θ_i) = (1 - λ_L) P_θ(K = k) + λ_L
C(n, k) γ^k (1 - γ)^(n - k)``; with ``σ > 0`` the first term is the shared threshold's average).
The lapse a psychometric function needs is the chance of an answer unrelated to the stimulus
(Wichmann & Hill 2001, *Percept. Psychophys.* 63:1293); for a line that is one presentation, one
attention, not five independent slips. Without it a line of guesses through a lens the eye sees
well has probability about ``λ^5`` and is read as blur beyond doubt; with it a failed line is worth
at most ``1/λ_L`` against a lens, and a line read well loses almost nothing (``γ^K`` is small). A
*run* of lapsed lines is not read by it (independent lapses make twelve in a row ``λ_L^12``).
Measured on every population and answer model at ``λ_L = 0.04``: longer sessions, no more accurate;
off in every shipped protocol (``docs/results/clinic-time.md``, "A line read at random, and the band
of two kinds of patient").

The first is :class:`ChartLineAnswer`'s likelihood (exactly the sum of the ``n`` letters'
:class:`~visiontune.refraction.optics_model.LetterAnswer` log-likelihoods at ``s - c``); the
second, :func:`line_outcome_probabilities`, gives the expected reduction of the posterior
variance of a line exactly over the particles (:mod:`visiontune.refraction.mixed_rules`): the
``n + 1`` counts carry everything the ``2^n`` right/wrong sequences do.

A line's duration is a setting, ``line_seconds`` (default 6 s for 5 letters,
:mod:`visiontune.refraction.durations`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import comb, logsumexp

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.durations import LINE_LETTERS, LINE_SECONDS
from visiontune.refraction.optics_model import OpticsModelSpec, probability_correct

__all__ = [
    "CROWDING_LOGMAR",
    "ChartLineAnswer",
    "ChartLineSettings",
    "LineQuery",
    "check_line_trial",
    "line_correct_text",
    "line_outcome_probabilities",
]

#: Default crowding offset of a chart line's letters, logMAR (module docstring: Coates et al. 2013).
CROWDING_LOGMAR = 0.0
#: Gauss-Hermite nodes of the shared threshold (module docstring): 15, within 0.1% of a line's likelihood
#: at the steepest slopes the prior allows (tested against a fine grid).
_SHARED_NODES, _SHARED_WEIGHTS = np.polynomial.hermite_e.hermegauss(15)
_SHARED_WEIGHTS = _SHARED_WEIGHTS / _SHARED_WEIGHTS.sum()
#: The most letters a line may have (a logMAR chart has 5; more do not fit a screen line).
MAX_LINE_LETTERS = 10


@dataclass(frozen=True)
class ChartLineSettings:
    """A protocol's ``[chart_line]``: ``letters_per_line`` (``n``), ``line_seconds`` (the patient's
    time per line, s), ``crowding_logmar`` (``c``), ``line_sd_logmar`` (``σ`` of the threshold a
    line's letters share, 0: none) and ``line_lapse`` (``λ_L``, the chance a line is read at random,
    0: none; module docstring)."""

    letters_per_line: int = LINE_LETTERS
    line_seconds: float = LINE_SECONDS
    crowding_logmar: float = CROWDING_LOGMAR
    line_sd_logmar: float = 0.0
    line_lapse: float = 0.0

    def __post_init__(self) -> None:
        n = self.letters_per_line
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_LINE_LETTERS:
            raise InvalidInputError(f"letters_per_line: expected an integer in [2, {MAX_LINE_LETTERS}], got {n!r}")
        object.__setattr__(self, "letters_per_line", int(n))
        check_number("line_seconds", self.line_seconds, 0.1, 600)
        check_number("crowding_logmar", self.crowding_logmar, 0.0, 0.5)
        check_number("line_sd_logmar", self.line_sd_logmar, 0.0, 0.3)
        check_number("line_lapse", self.line_lapse, 0.0, 0.5)


@dataclass(frozen=True)
class LineQuery:
    """The best line: letter size ``s_logmar`` (the line's, before crowding), the trial ``lens``,
    the number of letters and the expected information of the answer (bits, over the counts)."""

    s_logmar: float
    lens: Prescription
    n_letters: int
    information_bits: float


def line_outcome_probabilities(p: np.ndarray, n: int) -> np.ndarray:
    """``P(K = k | θ_i)`` for ``k = 0..n`` letters right, each right with probability ``p (...)``:
    ``(..., n + 1)`` (module docstring)."""
    p = np.asarray(p, dtype=float)[..., None]
    k = np.arange(n + 1)
    return comb(n, k) * p**k * (1.0 - p) ** (n - k)


def shared_offsets(line_sd_logmar: float) -> tuple[np.ndarray, np.ndarray]:
    """``(σ x_q, w_q)``: the threshold shifts (logMAR) and weights the line's count is averaged over
    (module docstring); one shift of 0 with weight 1 when ``σ = 0``."""
    if line_sd_logmar == 0.0:
        return np.zeros(1), np.ones(1)
    return float(line_sd_logmar) * _SHARED_NODES, _SHARED_WEIGHTS


def line_count_probabilities(
    theta: np.ndarray, sizes: np.ndarray, lenses: np.ndarray, n: int, settings: ChartLineSettings, spec: OpticsModelSpec
) -> np.ndarray:
    """``P(K = k | θ_i)`` ``(N, m, n + 1)`` for lines of sizes ``sizes (m,)`` (the lines', before
    crowding) through ``lenses (m, 3)``, with the settings' crowding and shared threshold."""
    shifts, weights = shared_offsets(settings.line_sd_logmar)
    s = np.asarray(sizes, dtype=float) - settings.crowding_logmar
    m = len(s)
    p = probability_correct(
        theta, (s[:, None] - shifts[None, :]).reshape(-1), np.repeat(lenses, len(shifts), axis=0), spec
    ).reshape(len(theta), m, len(shifts))
    probs = np.einsum("nmqk,q->nmk", line_outcome_probabilities(p, n), weights)
    if settings.line_lapse == 0.0:
        return probs
    guessed = line_outcome_probabilities(np.array(spec.chance), n)
    return (1.0 - settings.line_lapse) * probs + settings.line_lapse * guessed


@dataclass(frozen=True)
class ChartLineAnswer:
    """One chart line for :meth:`ParticlePosterior.observe`: size ``s`` (logMAR, the line's),
    the lens's power vector ``lens`` ``(M, J0, J45)`` (D), ``correct`` (each letter's, in reading
    order), ``crowding_logmar`` (``c``), ``line_sd_logmar`` (``σ``) and ``line_lapse`` (``λ_L``)."""

    s: float
    lens: tuple[float, float, float]
    correct: tuple[bool, ...]
    crowding_logmar: float = CROWDING_LOGMAR
    line_sd_logmar: float = 0.0
    line_lapse: float = 0.0

    def __post_init__(self) -> None:
        if len(self.correct) < 2 or any(not isinstance(c, (bool, np.bool_)) for c in self.correct):
            raise InvalidInputError(
                f"correct: expected each letter's True/False (two letters or more), got {self.correct!r}"
            )

    @property
    def batch_key(self) -> tuple:
        return ("chart_line", float(self.crowding_logmar), float(self.line_sd_logmar), float(self.line_lapse))

    @property
    def n_correct(self) -> int:
        return int(sum(bool(c) for c in self.correct))

    def log_likelihood(self, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``K log p_i + (n - K) log(1 - p_i)`` per particle: ``(N,)``."""
        return ChartLineAnswer.batch_log_likelihood([self], theta, spec)

    def lapsed_log_likelihood(self, spec: OpticsModelSpec) -> float:
        """``log P(line)`` of a lapsed patient, who guesses every letter: ``K log γ + (n - K) log(1 - γ)``."""
        right = self.n_correct
        return right * math.log(spec.chance) + (len(self.correct) - right) * math.log1p(-spec.chance)

    @staticmethod
    def batch_log_likelihood(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """``Σ_lines K log p_i + (n - K) log(1 - p_i)`` over ``answers`` of one crowding offset, shared
        threshold and line lapse (with ``σ > 0`` each line's term averaged over the shifts, with
        ``λ_L > 0`` mixed with the line of guesses; module docstring): ``(N,)``."""
        return np.sum(ChartLineAnswer.batch_log_likelihoods(answers, theta, spec), axis=1)

    @staticmethod
    def batch_log_likelihoods(answers, theta: np.ndarray, spec: OpticsModelSpec) -> np.ndarray:
        """Each line's term of :meth:`batch_log_likelihood`: ``(N, m)``."""
        shifts, weights = shared_offsets(answers[0].line_sd_logmar)
        s = np.array([a.s - a.crowding_logmar for a in answers])
        lenses = np.array([a.lens for a in answers], dtype=float).reshape(len(answers), 3)
        right = np.array([a.n_correct for a in answers], dtype=float)
        wrong = np.array([len(a.correct) for a in answers], dtype=float) - right
        if len(shifts) == 1:
            p = probability_correct(theta, s, lenses, spec)
            ll = right * np.log(p) + wrong * np.log1p(-p)
        else:
            m, q = len(s), len(shifts)
            p = probability_correct(
                theta, (s[:, None] - shifts[None, :]).reshape(-1), np.repeat(lenses, q, axis=0), spec
            ).reshape(len(theta), m, q)
            ll = right[None, :, None] * np.log(p) + wrong[None, :, None] * np.log1p(-p)
            ll = logsumexp(ll, axis=2, b=weights[None, None, :])
        lapse = answers[0].line_lapse
        if lapse > 0.0:
            guessed = np.array([a.lapsed_log_likelihood(spec) for a in answers])
            ll = np.logaddexp(math.log1p(-lapse) + ll, math.log(lapse) + guessed[None, :])
        return ll


def line_correct_text(correct) -> str:
    """The stored form of a line's answers: ``"1"`` (right) or ``"0"`` (wrong) per letter, in order."""
    return "".join("1" if c else "0" for c in correct)


def check_line_trial(letter_shown: str, line_correct, lens2=None, comparison=None, slider_choice=None) -> str | None:
    """The ``line_correct`` of a logged trial, checked: None (not a line), or ``"0"``/``"1"`` per
    letter of ``letter_shown`` (the line's letters, one character each, two or more), on a trial
    with one lens (no second lens, comparison or slider). InvalidInputError says what is wrong."""
    if line_correct is None:
        return None
    if not isinstance(line_correct, str) or len(line_correct) < 2 or set(line_correct) - {"0", "1"}:
        raise InvalidInputError(
            f"line_correct: expected '0' or '1' for each letter of the line (two or more), got {line_correct!r}"
        )
    if not isinstance(letter_shown, str) or len(letter_shown) != len(line_correct):
        raise InvalidInputError(
            f"line_correct: expected one answer per letter of the line {letter_shown!r}, "
            f"got {len(line_correct)} ({line_correct!r})"
        )
    if lens2 is not None or comparison is not None or slider_choice is not None:
        raise InvalidInputError(
            "line_correct: a chart line is read through one lens; this trial also has a second "
            "lens, a comparison answer or a slider choice"
        )
    return line_correct
