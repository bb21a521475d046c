"""Attention as a hidden two-state Markov chain over a patient's answers: lapses that come in runs.

A patient's lapses are not always independent: a tired or distracted patient answers several
questions in a row at random, then attends again (the ``lapse-runs`` answer model,
:mod:`visiontune.refraction.answer_models`). An independent lapse rate ``λ`` cannot read a run: twelve
lapses in a row at ``λ = 0.04`` have a probability of ``10⁻¹⁷``, so the posterior takes them for the eye
(docs/results/clinic-time.md, "A line read at random"). Here the patient's state ``z_t`` before answer
``t`` is attending (``A``) or lapsed (``L``), a Markov chain with

    P(z_t = L | z_{t-1} = A) = a   (onset)        P(z_t = A | z_{t-1} = L) = b   (recovery)

started at its stationary law ``π_L = a / (a + b)`` (a run lasts ``1 / b`` answers on average). An
attending patient answers by the model (``f_t(θ)``, every answer's likelihood as it is, its own
independent lapse ``λ`` included); a lapsed one at random (``g_t``, the answer's probability at chance,
the same for every ``θ``: a letter ``γ`` or ``1 - γ``, a chart line ``γ^K (1 - γ)^(n-K)``, a comparison
``1/3``, a slider ``1 / n``). The likelihood of the answers given ``θ`` sums over the hidden paths, by the
forward algorithm (Rabiner 1989, *A tutorial on hidden Markov models and selected applications in
speech recognition*, Proc. IEEE 77:257-286, Eqs. 19-21), here normalised at every step:

    α̃_t(z) = Σ_{z'} α_{t-1}(z') T(z', z) · e_t(z)      e_t(A) = f_t(θ), e_t(L) = g_t
    c_t    = Σ_z α̃_t(z),   α_t = α̃_t / c_t,   log p(y_1..y_T | θ) = Σ_t log c_t

``c_t`` is the predictive probability of answer ``t`` given the answers before it, the factor by which
the answer reweights a particle. With ``b = 1 - a`` the chain has no memory and the likelihood is the
product of independent mixtures ``(1 - a) f_t + a g_t``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError

__all__ = ["AttentionChain", "forward", "forward_step"]

ATTENDING, LAPSED = 0, 1


@dataclass(frozen=True)
class AttentionChain:
    """The chain of attention (module docstring): ``onset`` ``a`` and ``recovery`` ``b``, each a
    probability per answer."""

    onset: float
    recovery: float

    def __post_init__(self) -> None:
        for name in ("onset", "recovery"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
                raise InvalidInputError(f"lapse run {name}: expected a probability per answer in (0, 1), got {value!r}")
        if self.onset >= 0.5:
            raise InvalidInputError(
                f"lapse run onset: expected below 0.5 (a patient who mostly attends), got {self.onset!r}"
            )

    @property
    def lapsed_share(self) -> float:
        """``π_L = a / (a + b)``: the share of answers lapsed in the long run."""
        return self.onset / (self.onset + self.recovery)

    @property
    def mean_run(self) -> float:
        """``1 / b``: the mean number of answers in a run of lapses."""
        return 1.0 / self.recovery


def forward_step(
    chain: AttentionChain, alpha: np.ndarray | None, log_f: np.ndarray, log_g: float
) -> tuple[np.ndarray, np.ndarray]:
    """One answer through the filter (module docstring): ``alpha (N, 2)``, the filtered state (the
    probabilities of attending and of lapsed) after the answers before (None before the first: the
    stationary law), ``log_f (N,)`` the answer's log-likelihood if attending, ``log_g`` if lapsed.
    Returns ``(log c_t (N,), α_t (N, 2))``. The likelihoods are scaled by their largest, so none
    underflows."""
    a, b = chain.onset, chain.recovery
    log_f = np.asarray(log_f, dtype=float)
    scale = max(float(log_f.max()), float(log_g))
    if alpha is None:
        attending, lapsed = 1.0 - chain.lapsed_share, chain.lapsed_share
    else:
        attending = alpha[:, ATTENDING] * (1.0 - a) + alpha[:, LAPSED] * b
        lapsed = alpha[:, ATTENDING] * a + alpha[:, LAPSED] * (1.0 - b)
    attending = attending * np.exp(log_f - scale)
    lapsed = lapsed * math.exp(float(log_g) - scale)
    c = attending + lapsed
    return np.log(c) + scale, np.stack([attending / c, lapsed / c], axis=1)


def forward(chain: AttentionChain, log_f: np.ndarray, log_g: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(log p(y_1..y_T | θ_i) (N,), α_T (N, 2))`` for the answers' log-likelihoods if attending,
    ``log_f (N, T)`` in the order answered, and if lapsed, ``log_g (T,)``: :func:`forward_step` over the
    answers; ``(0, None)`` for no answer."""
    log_f = np.asarray(log_f, dtype=float)
    total = np.zeros(log_f.shape[0])
    alpha = None
    for t in range(log_f.shape[1]):
        log_c, alpha = forward_step(chain, alpha, log_f[:, t], float(log_g[t]))
        total = total + log_c
    return total, alpha
