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
speech recognition*, Proc. IEEE 77:257-286, Eqs. 19-21), here normalised at every step in log space:

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

    def log_initial(self) -> np.ndarray:
        """``(2,)``: ``log(1 - π_L), log π_L``, the state before the first answer."""
        return np.array([math.log1p(-self.lapsed_share), math.log(self.lapsed_share)])

    def log_transition(self) -> np.ndarray:
        """``(2, 2)``: ``log T(z', z)``, rows the state before, columns the state after."""
        a, b = self.onset, self.recovery
        return np.log(np.array([[1.0 - a, a], [b, 1.0 - b]]))


def _predicted(chain: AttentionChain, log_alpha: np.ndarray | None, n: int) -> np.ndarray:
    if log_alpha is None:
        return np.broadcast_to(chain.log_initial(), (n, 2))
    lt = chain.log_transition()
    return np.stack(
        [
            np.logaddexp(log_alpha[:, ATTENDING] + lt[0, 0], log_alpha[:, LAPSED] + lt[1, 0]),
            np.logaddexp(log_alpha[:, ATTENDING] + lt[0, 1], log_alpha[:, LAPSED] + lt[1, 1]),
        ],
        axis=1,
    )


def forward_step(
    chain: AttentionChain, log_alpha: np.ndarray | None, log_f: np.ndarray, log_g: float
) -> tuple[np.ndarray, np.ndarray]:
    """One answer through the filter (module docstring): ``log_alpha (N, 2)``, the filtered state
    after the answers before (None before the first), ``log_f (N,)`` the answer's log-likelihood if
    attending, ``log_g`` if lapsed. Returns ``(log c_t (N,), log α_t (N, 2))``."""
    log_f = np.asarray(log_f, dtype=float)
    pred = _predicted(chain, log_alpha, len(log_f))
    joint = np.stack([pred[:, ATTENDING] + log_f, pred[:, LAPSED] + float(log_g)], axis=1)
    log_c = np.logaddexp(joint[:, ATTENDING], joint[:, LAPSED])
    return log_c, joint - log_c[:, None]


def forward(chain: AttentionChain, log_f: np.ndarray, log_g: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(log p(y_1..y_T | θ_i) (N,), log α_T (N, 2))`` for the answers' log-likelihoods if attending,
    ``log_f (N, T)`` in the order answered, and if lapsed, ``log_g (T,)``; ``(0, None)`` for no answer.
    Run in probabilities normalised at every step (each answer's terms scaled by its largest, so none
    underflows), the same recursion as :func:`forward_step`."""
    log_f = np.asarray(log_f, dtype=float)
    n, steps = log_f.shape
    if steps == 0:
        return np.zeros(n), None
    log_g = np.asarray(log_g, dtype=float)
    scale = np.maximum(log_f.max(axis=0), log_g)  # (T,)
    f = np.exp(log_f - scale[None, :])
    g = np.exp(log_g - scale)
    a, b = chain.onset, chain.recovery
    total = np.zeros(n)
    attending = np.full(n, 1.0 - chain.lapsed_share)
    lapsed = np.full(n, chain.lapsed_share)
    for t in range(steps):
        if t:
            attending, lapsed = attending * (1.0 - a) + lapsed * b, attending * a + lapsed * (1.0 - b)
        attending = attending * f[:, t]
        lapsed = lapsed * g[t]
        c = attending + lapsed
        attending, lapsed = attending / c, lapsed / c
        total = total + np.log(c)
    total = total + scale.sum()
    with np.errstate(divide="ignore"):
        return total, np.log(np.stack([attending, lapsed], axis=1))
