"""Projective (slider) preferential queries: the user picks the best point along a line.

Mikkola, Todorović, Järvi, Rinke & Kaski, *Projective Preferential Bayesian Optimization*
(ICML 2020) and its supplementary. A query is a line ``{x + t ξ : t ∈ I}`` in the box
(base ``x``, direction ``ξ``, interval ``I = [lo, hi]`` of the scalar projections that stay in
the box); the answer is the chosen ``t*``. Everything here maximises a utility ``f`` (the paper
minimises; the sign is the only change).

Likelihood (supplementary, "Likelihood"). With Gaussian white noise ``W(t)`` of variance ``σ²``,
``x + αξ ≻ x + βξ`` iff ``f(x+αξ) + W(α) > f(x+βξ) + W(β)``, so one comparison has
``P = 1 - [Φ∗φ](Δ) = 1 - Φ(Δ/√2)``, ``Δ = (f(x+βξ) - f(x+αξ))/σ`` (``[Φ∗φ](u) = Φ(u/√2)``).
The answer ``α`` is the product integral over every other ``β`` on the line:

    p(α | ξ, x, f) = exp(-∫_I Φ(Δ(β)/√2) dβ),

approximated with ``m`` pseudo-observations ``β_j`` (supplementary, "Monte-Carlo sampling
distribution": a truncated generalised normal centred on ``α`` whose shape ``γ_n`` goes from
about uniform to normal as queries accumulate) and weights ``w_j``:
``log p ≈ -Σ_j w_j Φ(Δ_j/√2)``. The paper's functional ``T`` uses ``w_j = 1/m``
(supplementary, "Gradient and Hessian of the functional T"); ``w_j = |I|/m`` with uniform
``β_j`` is the plain Monte Carlo estimate of the integral.

Inference (supplementary, "Gradient and Hessian of T"): Laplace. Each term depends on one
difference ``g_ij = f(β_ij) - f(α_i)``, so the pseudo-comparisons are duels ``[β_ij, α_i]`` and
the posterior is computed on ``g`` with the preference kernel
(:class:`visiontune.reproduction.gp.kernels.Preference`) by the stable Newton iteration of Rasmussen &
Williams Alg. 3.1, stored as :class:`visiontune.reproduction.gp.laplace.GaussianApproximation` so the
package's prediction code applies unchanged. The likelihood is not log-concave (the curvature
``-∂² log p/∂g² = -(w/s³) g φ(g/s)``, ``s = √2 σ``, is negative where ``g > 0``); the Newton
steps use its positive part (exact gradient, so the fixed point is the true mode of ``T``)
and so does the Laplace covariance at the mode.

Acquisition (the paper's strategies PPBO-EI, -EXR, -EXT, -PCD, -RAND; supplementary "Optimization of
acquisition functions" and "Numerical experiments"), on the unit
box with the paper's parametrisation: for query ``n`` the coordinate ``d = n mod D`` is held
out of the direction (``ξ_d = 0``, the other ``ξ`` in ``[0, 1]`` scaled to max 1) and the base
is ``x = x_d e_d``, so ``I = [0, 1]``.

- ``EI``: projective expected improvement ``E[max(max_{t∈I} f(x + tξ) - μ*, 0)]``, ``μ*`` the
  maximum of the posterior mean, by Monte Carlo over the joint posterior on a grid of the line,
  maximised over ``(ξ_{-d}, x_d)``.
- ``EXR``: pure exploration, the posterior variance of ``max_t f(x + tξ)``.
- ``EXT``: pure exploitation, ``ξ = x̂`` with coordinate ``d`` zeroed, ``x = x̂_d e_d`` (the line
  from the face ``ξ-coordinates = 0`` through the current optimum ``x̂``).
- ``PCD``: preferential coordinate descent, ``ξ = e_d`` through ``x̂``.
- ``RAND``: a random number ``N ~ U{1..D}`` of random non-zero direction coordinates with
  values ``U(0, 1)``, random base on the others.

The scores :func:`projective_ei` and :func:`projective_varmax` take any candidate lines
(arrays of bases and directions) in any box, e.g. a single lens knob.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import minimize
from scipy.special import ndtr

from visiontune._validate import check_box, check_rng
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.gp.kernels import Kernel, Preference
from visiontune.reproduction.gp.laplace import GaussianApproximation, cholesky_lower, predict_latent

__all__ = [
    "RULES",
    "Line",
    "ProjectiveGP",
    "ProjectiveRule",
    "answer_projective",
    "initial_lines",
    "line_interval",
    "projective_ei",
    "projective_log_likelihood",
    "projective_objective",
    "projective_varmax",
    "pseudo_points",
    "tgn_shape",
]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: Acquisition rules of the paper: names as in its figures (PPBO-<name>).
RULES = ("EI", "EXR", "EXT", "PCD", "RAND")


# ----------------------------------------------------------------------------- lines


def line_interval(bounds, bases, directions):
    """Interval ``[lo, hi]`` of ``t`` with ``base + t·direction`` inside the box.

    ``I = [max_d (a_d - x_d)/ξ_d, min_d (b_d - x_d)/ξ_d]`` over ``ξ_d ≠ 0`` (supplementary,
    "Projective preferential feedback", for a general base). ``bases``, ``directions``: (n, D)
    or (D,); returns ``(lo, hi)`` of shape (n,) (or scalars). Raises if a direction is zero or
    a base lies outside the box.
    """
    X = np.atleast_2d(np.asarray(bases, float))
    Xi = np.atleast_2d(np.asarray(directions, float))
    b = check_box("bounds", bounds, X.shape[1], strict=True)
    if X.shape != Xi.shape:
        raise InvalidInputError(f"bases and directions: expected equal shapes, got {X.shape} and {Xi.shape}")
    tol = 1e-9 * (b[:, 1] - b[:, 0])
    if np.any(X < b[:, 0] - tol) or np.any(X > b[:, 1] + tol):
        raise InvalidInputError("bases: every base point must lie in the box")
    nz = np.abs(Xi) > 1e-12
    if not np.all(nz.any(axis=1)):
        raise InvalidInputError("directions: every direction needs a non-zero coordinate")
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (b[:, 0] - X) / Xi
        t2 = (b[:, 1] - X) / Xi
    lo = np.where(nz, np.minimum(t1, t2), -np.inf).max(axis=1)
    hi = np.where(nz, np.maximum(t1, t2), np.inf).min(axis=1)
    lo, hi = (
        np.minimum(lo, 0.0),
        np.maximum(hi, 0.0),
    )  # the base itself is on the segment
    if np.ndim(bases) == 1:
        return float(lo[0]), float(hi[0])
    return lo, hi


@dataclass(frozen=True)
class Line:
    """A projective query: points ``base + t·direction``, ``t`` in ``[lo, hi]``."""

    base: np.ndarray
    direction: np.ndarray
    lo: float
    hi: float

    def point(self, t) -> np.ndarray:
        """Points at scalar(s) ``t``: (D,) for a scalar, (n, D) for an array."""
        t = np.asarray(t, float)
        return self.base + t[..., None] * self.direction if t.ndim else self.base + float(t) * self.direction

    def grid(self, n: int) -> np.ndarray:
        return np.linspace(self.lo, self.hi, n)


def _make_line(bounds, base, direction) -> Line:
    base, direction = np.asarray(base, float), np.asarray(direction, float)
    lo, hi = line_interval(bounds, base, direction)
    return Line(base.copy(), direction.copy(), lo, hi)


# ----------------------------------------------------------------------------- answers


def answer_projective(f, line: Line, rng: np.random.Generator, *, noise_sd: float = 0.0, n_grid: int = 100) -> float:
    """Simulated user: ``t* = argmax_t f(x + tξ) + W(t)`` over ``n_grid`` points of ``I``.

    ``f``: callable on (n, D) points returning (n,) utilities (larger is better). ``noise_sd``:
    the white-noise ``σ`` of the likelihood (0 in the paper's numerical experiments: the argmin
    from a numerical optimiser; its code answers on a 100-point grid). Without noise the best
    grid point is refined by a bounded scalar search between its neighbours. ``rng`` draws the
    noise (and is required, so every random choice takes a seed).
    """
    check_rng(rng)
    if not (np.isfinite(noise_sd) and noise_sd >= 0):
        raise InvalidInputError(f"noise_sd: expected a finite value >= 0, got {noise_sd!r}")
    t = line.grid(int(n_grid))
    u = np.asarray(f(line.point(t)), float).reshape(-1)
    if noise_sd > 0:
        u = u + rng.normal(0.0, noise_sd, u.shape)
        return float(t[int(np.argmax(u))])
    k = int(np.argmax(u))
    a, b = t[max(k - 1, 0)], t[min(k + 1, t.size - 1)]
    if b <= a:
        return float(t[k])
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(
        lambda s: -float(np.asarray(f(line.point(np.array([s]))), float)[0]),
        bounds=(a, b),
        method="bounded",
        options={"xatol": 1e-6 * (line.hi - line.lo)},
    )
    return float(res.x) if -res.fun >= u[k] else float(t[k])


# ----------------------------------------------------------------------------- pseudo-observations


def tgn_shape(n_query: int, dim: int, speed: float = 0.4) -> float:
    """Form parameter ``γ_n = 3 / max(n + 1 - D, 1)^s + 2`` (supplementary, Eq. 1 and text; ``s = 0.4``):
    5 for the first queries (nearly uniform), tending to 2 (truncated normal)."""
    return 3.0 / max(n_query + 1 - dim, 1) ** speed + 2.0


def pseudo_points(alpha: float, lo: float, hi: float, m: int, gamma: float, rng: np.random.Generator) -> np.ndarray:
    """``m`` pseudo-observations ``β_j`` on ``[lo, hi]`` from the truncated generalised normal
    (supplementary, Eq. 1): density ∝ ``exp(-|(β - α)/σ̃|^γ)`` on the interval, scale
    ``σ̃(γ) = |hi - lo| Γ(γ) / 10``. Drawn by inverse transform on a 2049-point grid."""
    if not (lo < hi and lo - 1e-12 <= alpha <= hi + 1e-12):
        raise InvalidInputError(f"alpha: expected lo <= alpha <= hi with lo < hi, got {alpha}, [{lo}, {hi}]")
    scale = (hi - lo) * math.gamma(gamma) / 10.0
    grid = np.linspace(lo, hi, 2049)
    dens = np.exp(-(np.abs((grid - alpha) / scale) ** gamma))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    return np.interp(rng.random(int(m)), cdf, grid)


# ----------------------------------------------------------------------------- likelihood


def _terms(g: np.ndarray, w: np.ndarray, sigma: float):
    """Per-pair ``log p = -w Φ(g/s)``, its first and second derivatives in ``g`` (``s = √2 σ``)."""
    s = _SQRT2 * sigma
    z = g / s
    pdf = _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return -w * ndtr(z), -w * pdf / s, w * z * pdf / (s * s)


def projective_log_likelihood(f, anchors, betas, weights, sigma: float):
    """``log p = -Σ_ij w_ij Φ((f_βij - f_αi)/(√2 σ))`` over latent values ``f`` (n,), with
    pair indices ``anchors[k] = i(α)``, ``betas[k] = i(β)`` into ``f``, and its gradient (n,)
    and Hessian (n, n) in ``f`` (supplementary, "Gradient and Hessian of T";
    ``[Φ∗φ]' = φ₂``, ``[Φ∗φ]'' = -(u/2) φ₂``, ``φ₂`` the N(0, 2) density)."""
    f = np.asarray(f, float)
    a, b = np.asarray(anchors, int), np.asarray(betas, int)
    g = f[b] - f[a]
    lp, d1, d2 = _terms(g, np.asarray(weights, float), float(sigma))
    grad = np.zeros_like(f)
    np.add.at(grad, b, d1)
    np.add.at(grad, a, -d1)
    H = np.zeros((f.size, f.size))
    np.add.at(H, (b, b), d2)
    np.add.at(H, (a, a), d2)
    np.add.at(H, (a, b), -d2)
    np.add.at(H, (b, a), -d2)
    return float(lp.sum()), grad, H


def projective_objective(f, K, anchors, betas, weights, sigma: float):
    """The paper's functional ``T(f) = -½ fᵀΣ⁻¹f + log p(D | f)`` (supplementary), its gradient
    ``-Σ⁻¹f + ∇log p`` and Hessian ``-Σ⁻¹ + ∇∇log p``; ``K`` (n, n) the prior covariance ``Σ``."""
    f = np.asarray(f, float)
    L = cholesky_lower(np.asarray(K, float))
    Kinv_f = solve_triangular(L, solve_triangular(L, f, lower=True), lower=True, trans="T")
    Kinv = solve_triangular(L, solve_triangular(L, np.eye(f.size), lower=True), lower=True, trans="T")
    lp, grad, H = projective_log_likelihood(f, anchors, betas, weights, sigma)
    return -0.5 * float(f @ Kinv_f) + lp, grad - Kinv_f, H - Kinv


def _laplace(Kg: np.ndarray, w: np.ndarray, sigma: float, *, tol=1e-10, max_iter=200) -> GaussianApproximation:
    """Mode of ``Ψ(a) = -½ aᵀK_g a + Σ log p(g)``, ``g = K_g a`` (R&W Alg. 3.1 with the positive
    part of the curvature), and the Gaussian approximation at the mode."""
    n = Kg.shape[0]

    def state(a):
        g = Kg @ a
        lp, d1, d2 = _terms(g, w, sigma)
        return g, -0.5 * float(a @ g) + float(lp.sum()), d1, d2

    a = np.zeros(n)
    g, psi, d1, d2 = state(a)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the iterations run are reported after the loop)
        W = np.maximum(-d2, 0.0) + 1e-12
        sw = np.sqrt(W)
        L = cholesky_lower(np.eye(n) + sw[:, None] * Kg * sw[None, :])
        bvec = W * g + d1
        t = solve_triangular(L, sw * (Kg @ bvec), lower=True, check_finite=False)
        step = bvec - sw * solve_triangular(L, t, lower=True, trans="T", check_finite=False) - a
        for _ in range(40):
            cand = state(a + step)
            if np.isfinite(cand[1]) and cand[1] >= psi:
                break
            step *= 0.5
        else:
            break
        a = a + step
        old = psi
        g, psi, d1, d2 = cand
        if abs(psi - old) < tol * (1.0 + abs(psi)) and np.max(np.abs(a - d1)) < 1e-6 * (1 + np.max(np.abs(d1))):
            break
    if not np.all(np.isfinite(g)):
        raise NumericalError("projective Laplace: non-finite mode")
    W = np.maximum(-d2, 0.0) + 1e-12
    sw = np.sqrt(W)
    L = cholesky_lower(np.eye(n) + sw[:, None] * Kg * sw[None, :])
    return GaussianApproximation(
        alpha=d1,
        sqrt_w=sw,
        chol=L,
        mean=g,
        log_marginal_likelihood=psi - float(np.sum(np.log(np.diag(L)))),
        n_iter=it,
    )


# ----------------------------------------------------------------------------- model


class ProjectiveGP:
    """GP posterior of a utility ``f`` from projective answers (Laplace, as the paper).

    ``kernel``: prior covariance of ``f``; ``lines``: the queries (:class:`Line`); ``answers``:
    chosen ``t*`` per line; ``sigma``: the likelihood's noise ``σ``; ``m``: pseudo-observations
    per answer; ``rng``: draws them (TGN, :func:`pseudo_points`, shape :func:`tgn_shape` of the
    answer's index); ``weights``: ``"paper"`` (``1/m``, the paper's ``T``) or ``"integral"``
    (``|I|/m``). Pseudo-observations are drawn once per answer in order, so the same seed and
    answers give the same model.
    """

    def __init__(
        self,
        kernel: Kernel,
        lines,
        answers,
        *,
        sigma: float = 0.001,
        m: int = 25,
        rng: np.random.Generator,
        weights: str = "paper",
        speed: float = 0.4,
    ):
        if not isinstance(kernel, Kernel):
            raise InvalidInputError("kernel: expected a visiontune.reproduction.gp.kernels.Kernel")
        lines, answers = list(lines), [float(t) for t in answers]
        if len(lines) != len(answers):
            raise InvalidInputError(f"answers: expected one per line ({len(lines)}), got {len(answers)}")
        if not (np.isfinite(sigma) and sigma > 0):
            raise InvalidInputError(f"sigma: expected > 0, got {sigma!r}")
        if weights not in ("paper", "integral"):
            raise InvalidInputError(f"weights: expected 'paper' or 'integral', got {weights!r}")
        self.kernel, self.sigma, self.m = kernel, float(sigma), int(m)
        self.lines, self.answers = lines, answers
        dim = lines[0].base.size if lines else 0
        A, B, w = [], [], []
        for n, (line, t) in enumerate(zip(lines, answers)):
            betas = pseudo_points(t, line.lo, line.hi, self.m, tgn_shape(n + 1, dim, speed), rng)
            A.append(np.repeat(line.point(t)[None, :], self.m, axis=0))
            B.append(line.point(betas))
            w.append(np.full(self.m, (1.0 if weights == "paper" else line.hi - line.lo) / self.m))
        self.anchors_x = np.vstack(A) if A else np.zeros((0, dim))
        self.betas_x = np.vstack(B) if B else np.zeros((0, dim))
        self.weights = np.concatenate(w) if w else np.zeros(0)
        self._stacked = np.vstack([self.betas_x, self.anchors_x])
        self.n_pairs = self.weights.size
        if self.n_pairs:
            Kg = Preference(kernel)(np.hstack([self.betas_x, self.anchors_x]))
            self.approx = _laplace(Kg, self.weights, self.sigma)
        else:
            self.approx = None
        self._best = None

    def _cross(self, X) -> np.ndarray:
        """``c_k(x) = cov(f(x), g_k) = k(β_k, x) - k(α_k, x)`` (n_pairs, n)."""
        K = self.kernel(self._stacked, X)
        return K[: self.n_pairs] - K[self.n_pairs :]

    def predict(self, X):
        """Posterior mean and variance of ``f`` at (n, D) points."""
        X = np.atleast_2d(np.asarray(X, float))
        if not self.n_pairs:
            return np.zeros(X.shape[0]), self.kernel.diag(X)
        return predict_latent(self.approx, self._cross(X), self.kernel.diag(X), overwrite_k_star=True)

    def predict_mean(self, X) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, float))
        if not self.n_pairs:
            return np.zeros(X.shape[0])
        return self._cross(X).T @ self.approx.alpha

    def _mean_grad(self, x):
        x = np.atleast_2d(x)
        G = self.kernel.grad_inputs(x, self._stacked)  # (1, 2p, D)
        dc = G[:, : self.n_pairs] - G[:, self.n_pairs :]
        return float(self.predict_mean(x)[0]), np.einsum("mkd,k->d", dc, self.approx.alpha)

    def line_posterior(self, points: np.ndarray):
        """Joint posterior of ``f`` on ``n`` lines of ``G`` points each, ``points`` (n, G, D):
        means (n, G) and covariances (n, G, G)."""
        n, G, D = points.shape
        flat = points.reshape(n * G, D)
        Kss = np.stack([self.kernel(p) for p in points])
        if not self.n_pairs:
            return np.zeros((n, G)), Kss
        c = self._cross(flat)
        mu = (c.T @ self.approx.alpha).reshape(n, G)
        v = self.approx.reduction(c).reshape(-1, n, G)
        return mu, Kss - np.einsum("pni,pnj->nij", v, v)

    def best(self, bounds, rng: np.random.Generator, n_candidates: int = 256):
        """``(x̂, μ*)``: the maximiser of the posterior mean (random candidates and the answers'
        points, then L-BFGS-B from the best three)."""
        b = check_box("bounds", bounds, strict=True)
        D = b.shape[0]
        cand = b[:, 0] + rng.random((n_candidates, D)) * (b[:, 1] - b[:, 0])
        if self.n_pairs:
            cand = np.vstack([cand, self.anchors_x[:: self.m]])
        mu = self.predict_mean(cand)
        best_x, best_v = cand[int(np.argmax(mu))], float(np.max(mu))
        if self.n_pairs:
            for i in np.argsort(-mu)[:3]:
                res = minimize(
                    lambda x: tuple(-v for v in self._mean_grad(x)),
                    cand[i],
                    jac=True,
                    method="L-BFGS-B",
                    bounds=b,
                    options={"maxiter": 50},
                )
                if np.isfinite(res.fun) and -res.fun > best_v:
                    best_x, best_v = np.clip(res.x, b[:, 0], b[:, 1]), float(-res.fun)
        return best_x, best_v


# ----------------------------------------------------------------------------- acquisition


def _line_samples(model: ProjectiveGP, bounds, bases, directions, n_grid, n_samples, rng):
    bases, directions = np.atleast_2d(bases), np.atleast_2d(directions)
    lo, hi = line_interval(bounds, bases, directions)
    t = lo[:, None] + np.linspace(0.0, 1.0, n_grid)[None, :] * (hi - lo)[:, None]
    pts = bases[:, None, :] + t[:, :, None] * directions[:, None, :]
    mu, cov = model.line_posterior(pts)
    jitter = 1e-8 * np.maximum(np.trace(cov, axis1=1, axis2=2) / n_grid, 1e-12)
    L = np.linalg.cholesky(cov + jitter[:, None, None] * np.eye(n_grid))
    z = rng.standard_normal((n_samples, n_grid))  # common random numbers for every candidate
    return mu[:, None, :] + np.einsum("nij,sj->nsi", L, z)


def projective_ei(
    model: ProjectiveGP,
    bounds,
    bases,
    directions,
    mu_star: float,
    rng: np.random.Generator,
    *,
    n_grid: int = 30,
    n_samples: int = 128,
) -> np.ndarray:
    """Projective EI of each candidate line (the paper's PPBO-EI): ``E[max(max_t f(x + tξ) - μ*, 0)]``,
    Monte Carlo over the joint posterior on ``n_grid`` points of each line (the same normal draws
    for every line). ``bases``, ``directions``: (n, D) -> (n,)."""
    fmax = _line_samples(model, bounds, bases, directions, n_grid, n_samples, rng).max(axis=2)
    return np.maximum(fmax - mu_star, 0.0).mean(axis=1)


def projective_varmax(
    model: ProjectiveGP,
    bounds,
    bases,
    directions,
    rng: np.random.Generator,
    *,
    n_grid: int = 30,
    n_samples: int = 128,
) -> np.ndarray:
    """Pure exploration (paper's EXR): posterior variance of ``max_t f(x + tξ)`` per line (n,)."""
    return _line_samples(model, bounds, bases, directions, n_grid, n_samples, rng).max(axis=2).var(axis=1)


def _paper_lines(free: np.ndarray, d: int, D: int):
    """Unit-box lines of the paper's parametrisation from ``free`` (n, D): column ``d`` is
    ``x_d``, the others ``ξ_{-d}`` (scaled so their maximum is 1)."""
    xi = free.copy()
    xi[:, d] = 0.0
    xi = np.maximum(xi, 1e-7)
    xi[:, d] = 0.0
    xi /= xi.max(axis=1, keepdims=True)
    x = np.zeros_like(free)
    x[:, d] = free[:, d]
    return x, xi


def initial_lines(D: int, rng: np.random.Generator) -> list[Line]:
    """The paper's initial design (its code): ``D`` coordinate lines ``ξ = e_i`` across the unit
    box through uniform random points."""
    unit = np.tile([0.0, 1.0], (D, 1))
    out = []
    for i in range(D):
        x = rng.random(D)
        x[i] = 0.0
        out.append(_make_line(unit, x, np.eye(D)[i]))
    return out


@dataclass(frozen=True)
class ProjectiveRule:
    """Choice of the next line on the unit box ``[0, 1]^D`` by one of :data:`RULES`.

    ``n_candidates`` random ``(ξ_{-d}, x_d)`` plus ``n_refine`` local perturbations of the best
    four replace the paper's 30 iterations of GPyOpt on EI / EXR. Call with the model, the query
    index ``n`` (which sets ``d = n mod D``) and a generator."""

    name: str = "EI"
    n_candidates: int = 64
    n_refine: int = 32
    n_grid: int = 30
    n_samples: int = 128

    def __post_init__(self):
        if self.name not in RULES:
            raise InvalidInputError(f"name: expected one of {RULES}, got {self.name!r}")

    def __call__(self, model: ProjectiveGP, D: int, n: int, rng: np.random.Generator) -> Line:
        check_rng(rng)
        unit = np.tile([0.0, 1.0], (D, 1))
        d = int(n) % D
        if self.name == "RAND":
            k = int(rng.integers(1, D + 1))
            dims = rng.choice(D, size=k, replace=False)
            xi = np.zeros(D)
            xi[dims] = np.maximum(rng.random(k), 1e-7)
            x = rng.random(D)
            x[dims] = 0.0
            return _make_line(unit, x, xi / xi.max())
        if self.name in ("EXT", "PCD"):
            xhat, _ = model.best(unit, rng)
            if self.name == "PCD":
                x = xhat.copy()
                x[d] = 0.0
                return _make_line(unit, x, np.eye(D)[d])
            free = xhat[None, :].copy()
            x, xi = _paper_lines(free, d, D)
            return _make_line(unit, x[0], xi[0])
        # EI / EXR: candidate search over (ξ_{-d}, x_d)
        if self.name == "EI":
            _, mu_star = model.best(unit, rng)

            def score(X, Xi):
                return projective_ei(
                    model,
                    unit,
                    X,
                    Xi,
                    mu_star,
                    rng_s(),
                    n_grid=self.n_grid,
                    n_samples=self.n_samples,
                )
        else:

            def score(X, Xi):
                return projective_varmax(
                    model,
                    unit,
                    X,
                    Xi,
                    rng_s(),
                    n_grid=self.n_grid,
                    n_samples=self.n_samples,
                )

        seed = int(rng.integers(2**63 - 1))

        def rng_s():  # same draws for every candidate batch
            return np.random.default_rng(seed)

        free = rng.random((self.n_candidates, D))
        vals = score(*_paper_lines(free, d, D))
        if self.n_refine:
            top = free[np.argsort(-vals)[:4]]
            local = np.clip(
                top[rng.integers(0, top.shape[0], self.n_refine)] + rng.normal(0.0, 0.1, (self.n_refine, D)),
                0.0,
                1.0,
            )
            free = np.vstack([free, local])
            vals = np.concatenate([vals, score(*_paper_lines(local, d, D))])
        x, xi = _paper_lines(free[int(np.argmax(vals))][None, :], d, D)
        return _make_line(unit, x[0], xi[0])
