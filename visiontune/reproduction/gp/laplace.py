"""Laplace approximation for GP classification with a probit likelihood.

Works on a Gram matrix ``K`` (n, n) and 0/1 answers ``y`` (n,); no kernel object is needed,
so the same engine serves binary and preference data (Fauvel & Chalk (binary/preferential BO), Eq. 6: the preference
kernel only changes ``K``). Notation of Rasmussen & Williams (2006), *Gaussian Processes for Machine
Learning* (R&W), chapter 3 and Alg. 5.1:

- likelihood ``p(y_i | f_i) = Φ(y'_i f_i)`` with ``y' = 2y - 1`` (R&W Eq. 3.16);
- ``W = -∇∇ log p(y | f̂)`` (diagonal), ``B = I + W½ K W½ = L Lᵀ`` (R&W Alg. 3.1);
- predictions ``μ* = k*ᵀ ∇log p(y | f̂)``, ``σ²* = k** - vᵀv``, ``v = L⁻¹ W½ k*`` (R&W Alg. 3.2).

Speed: ``B`` and its factor live in one work array across Newton steps; prediction
at many points uses the cached ``G = L⁻¹ W½`` (BLAS ``trmm``) instead of a triangular solve.

The Gaussian approximation ``q(f | y) = N(K α, (K⁻¹ + W)⁻¹)`` is stored as a
:class:`GaussianApproximation` (``α``, ``W½``, ``L``), the form EP produces too (R&W Alg. 3.6
with ``S̃½`` in place of ``W½``), so prediction code is shared by both inference methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.linalg import blas, lapack, solve_triangular
from scipy.special import log_ndtr

from visiontune._validate import binary_labels, finite_array
from visiontune.errors import InvalidInputError, NumericalError

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
#: Right-hand sides from which ``L⁻¹ W½ M`` is a triangular matrix product with the cached
#: factor ``G = L⁻¹ W½`` (BLAS ``trmm``, about twice as fast as ``trsm`` at n = 260) instead of
#: a triangular solve; below it one solve is cheaper than inverting ``L`` once.
_TRMM_MIN_COLUMNS = 16


def cholesky_lower(A: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """Lower Cholesky factor of a symmetric positive definite ``A`` (n, n) (LAPACK ``potrf`` on the
    lower triangle, without scipy's wrapper checks). ``A`` is not modified unless ``overwrite``
    (then a Fortran-ordered float64 ``A`` holds the factor). Raises :class:`NumericalError`."""
    L, info = lapack.dpotrf(A, lower=1, clean=1, overwrite_a=int(overwrite))
    if info != 0:
        raise NumericalError(f"matrix is not positive definite (potrf info={info})")
    return L


def _trmm(G: np.ndarray, M: np.ndarray, transpose: bool = False, overwrite: bool = False) -> np.ndarray:
    """``G M`` (or ``Gᵀ M``) for a lower-triangular ``G`` (n, n) and ``M`` (n, k) (BLAS ``trmm``).
    A C-ordered ``M`` is multiplied as ``(Mᵀ Gᵀ)ᵀ``, which BLAS reads without a transposing copy;
    with ``overwrite`` a writeable float64 ``M`` is reused for the result (no new n x k array)."""
    ow = int(bool(overwrite) and M.dtype == np.float64 and M.flags.writeable)
    if M.flags.c_contiguous and not M.flags.f_contiguous:
        return blas.dtrmm(1.0, G, M.T, side=1, lower=1, trans_a=0 if transpose else 1, overwrite_b=ow).T
    return blas.dtrmm(1.0, G, M, lower=1, trans_a=1 if transpose else 0, overwrite_b=ow)


def _b_matrix(K: np.ndarray, sw: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``B = I + W½ K W½`` (n, n) (R&W Alg. 3.1 line 4), Fortran-ordered (LAPACK's layout), in
    ``out`` when given (a work array reused across Newton steps / EP sweeps)."""
    if out is None:
        out = np.empty(K.shape, order="F")
    # K is symmetric: read it through its transpose so that input and output share a layout
    src = K.T if (K.flags.c_contiguous and out.flags.f_contiguous) else K
    B = np.multiply(src, sw[:, None], out=out)
    B *= sw[None, :]
    B.flat[:: B.shape[0] + 1] += 1.0
    return B


# ----------------------------------------------------------------------------- probit terms


def probit_log_likelihood_terms(f: np.ndarray, y_signed: np.ndarray):
    """Derivatives of ``log Φ(y' f)`` w.r.t. ``f``, element-wise (R&W Eq. 3.16 and its derivatives).

    With ``z = y' f`` and the inverse Mills ratio ``r = N(z) / Φ(z)``:
    ``d/df = y' r``, ``d²/df² = -(z r + r²)``, ``d³/df³ = y' (-r + (z + 2r)(z r + r²))``.

    Returns ``(log_p, d1, d2, d3)``, each (n,).
    """
    z = y_signed * f
    log_p = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_p)
    zr_r2 = z * r + r * r
    d1 = y_signed * r
    d2 = -zr_r2
    d3 = y_signed * (-r + (z + 2.0 * r) * zr_r2)
    return log_p, d1, d2, d3


def signed_labels(y: np.ndarray) -> np.ndarray:
    """Map 0/1 answers to ``y' = 2y - 1`` in {-1, +1}."""
    return 2.0 * y - 1.0


# ----------------------------------------------------------------------------- shared posterior form


@dataclass(frozen=True)
class GaussianApproximation:
    """Gaussian approximation ``q(f | y) = N(K α, (K⁻¹ + S)⁻¹)`` of a latent GP posterior.

    ``alpha``: (n,) weights with mean ``K α`` (Laplace: ``∇log p(y | f̂)``, R&W Eq. 3.21;
    EP: ``ν̃ - S̃½ B⁻¹ S̃½ K ν̃``, R&W Alg. 3.6).
    ``sqrt_w``: (n,) ``W½`` (Laplace) or ``S̃½`` (EP site precisions).
    ``chol``: (n, n) lower Cholesky factor ``L`` of ``B = I + diag(sqrt_w) K diag(sqrt_w)``.
    ``mean``: (n,) latent mean at the training points.
    ``log_marginal_likelihood``: approximate ``log p(y | X)`` (R&W Eq. 3.32 or 3.65).
    ``n_iter``: iterations used (Newton steps or EP sweeps).
    """

    alpha: np.ndarray
    sqrt_w: np.ndarray
    chol: np.ndarray
    mean: np.ndarray
    log_marginal_likelihood: float
    n_iter: int

    @property
    def n(self) -> int:
        return int(self.alpha.shape[0])

    def solve_b_weighted(self, M: np.ndarray) -> np.ndarray:
        """``R M`` with ``R = W½ B⁻¹ W½`` = ``(K + W⁻¹)⁻¹``; ``M`` (n,) or (n, k).

        ``R = Gᵀ G`` with ``G = L⁻¹ W½``: two triangular products with the cached ``G`` for
        many columns, two triangular solves otherwise (same result up to round-off).
        """
        if M.ndim == 2 and M.shape[1] >= _TRMM_MIN_COLUMNS and self.n:
            G = self._weighted_inverse_factor
            return _trmm(G, _trmm(G, M), transpose=True)
        sw = self.sqrt_w if M.ndim == 1 else self.sqrt_w[:, None]
        t = solve_triangular(self.chol, sw * M, lower=True, check_finite=False)
        t = solve_triangular(self.chol, t, lower=True, trans="T", check_finite=False)
        return sw * t

    def reduction(self, k_star: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``v = L⁻¹ W½ k*`` (R&W Alg. 3.2 line 5); ``k_star`` (n, m) -> (n, m).

        For ``m >= 16`` columns ``v = G k*`` with the cached lower-triangular ``G = L⁻¹ W½``
        (BLAS ``trmm``); otherwise a triangular solve (the choice depends on ``m`` only, so a
        result never depends on what was computed before). Both give ``L⁻¹ W½ k*`` up to round-off
        (``B = LLᵀ`` has eigenvalues >= 1, so ``L`` is well conditioned). ``overwrite``: the
        caller no longer needs ``k_star``, which may then hold the result.
        """
        if k_star.shape[1] >= _TRMM_MIN_COLUMNS and self.n:
            return _trmm(self._weighted_inverse_factor, k_star, overwrite=overwrite)
        return solve_triangular(self.chol, self.sqrt_w[:, None] * k_star, lower=True, check_finite=False)

    @cached_property
    def _weighted_inverse_factor(self) -> np.ndarray:
        """``G = L⁻¹ diag(W½)`` (n, n), lower triangular (LAPACK ``trtri``; only its lower triangle
        is stored meaningfully and read), computed once per approximation:
        ``vᵀv = k*ᵀ Gᵀ G k*`` is the variance reduction of R&W Alg. 3.2."""
        inv, info = lapack.dtrtri(self.chol, lower=1)
        if info != 0:
            raise NumericalError(f"B's Cholesky factor is singular (trtri info={info})")
        inv *= self.sqrt_w[None, :]  # only the lower triangle is ever read (trmm with lower=1)
        inv.setflags(write=False)
        return inv

    def covariance(self, K: np.ndarray) -> np.ndarray:
        """Posterior covariance at the training points ``K - K W½ B⁻¹ W½ K`` = ``(K⁻¹ + W)⁻¹`` (n, n)."""
        if self.n == 0:
            return np.zeros((0, 0))
        v = self.reduction(K)
        cov = K - v.T @ v
        return 0.5 * (cov + cov.T)


def empty_approximation() -> GaussianApproximation:
    """The posterior of a GP with no data: the prior (log evidence 0)."""
    return GaussianApproximation(
        alpha=np.zeros(0),
        sqrt_w=np.zeros(0),
        chol=np.zeros((0, 0)),
        mean=np.zeros(0),
        log_marginal_likelihood=0.0,
        n_iter=0,
    )


def b_inverse(chol: np.ndarray) -> np.ndarray:
    """``B⁻¹`` (n, n) from the lower Cholesky factor ``L`` of ``B`` (LAPACK ``potri``)."""
    inv, info = lapack.dpotri(chol, lower=1)
    if info != 0:
        raise NumericalError(f"B is singular (potri info={info})")
    inv = np.tril(inv)
    return inv + np.tril(inv, -1).T


def b_inverse_diag(chol: np.ndarray) -> np.ndarray:
    """``diag(B⁻¹)`` (n,) from the lower Cholesky factor ``L`` of ``B`` (upper triangle zero):
    ``[B⁻¹]_ii = Σ_k [L⁻¹]_ki²`` (LAPACK ``trtri``; half the work of :func:`b_inverse`)."""
    inv, info = lapack.dtrtri(chol, lower=1)
    if info != 0:
        raise NumericalError(f"B is singular (trtri info={info})")
    return np.einsum("ki,ki->i", inv, inv)


def marginal_variances(K: np.ndarray, sqrt_w: np.ndarray, chol: np.ndarray, b_inv: np.ndarray) -> np.ndarray:
    """``diag((K⁻¹ + W)⁻¹)`` (n,) without forming the n x n covariance.

    Since ``W½KW½ = B - I``, ``(K⁻¹ + W)⁻¹ = W^-½ (I - B⁻¹) W^-½``, so
    ``Σ_ii = (1 - [B⁻¹]_ii) / W_ii``; where ``W_ii K_ii`` is small that difference cancels and
    ``Σ_ii = K_ii - |L⁻¹ W½ K_{:,i}|²`` (R&W Eq. 3.27 form) is used instead.
    ``b_inv``: ``B⁻¹`` (n, n) or just its diagonal (n,) (:func:`b_inverse_diag`).
    """
    w = sqrt_w**2
    kdiag = np.diag(K)
    out = np.empty_like(kdiag)
    fast = w * kdiag > 1e-3
    b_diag = np.diag(b_inv) if np.ndim(b_inv) == 2 else np.asarray(b_inv)
    out[fast] = (1.0 - b_diag[fast]) / w[fast]
    slow = np.flatnonzero(~fast)
    if slow.size:
        v = solve_triangular(chol, sqrt_w[:, None] * K[:, slow], lower=True, check_finite=False)
        out[slow] = kdiag[slow] - np.einsum("ij,ij->j", v, v)
    return out


def predict_latent(
    approx: GaussianApproximation, k_star: np.ndarray, k_star_star: np.ndarray, *, overwrite_k_star: bool = False
):
    """Latent predictive mean and variance (R&W Alg. 3.2 lines 4-6, Alg. 3.6 lines 4-6).

    ``μ* = k*ᵀ α``, ``σ²* = k** - vᵀv`` with ``v = L⁻¹ W½ k*``.
    ``k_star``: (n, m) cross-covariances; ``k_star_star``: (m,) prior variances;
    ``overwrite_k_star``: ``k_star`` may be overwritten (speed only: saves an n x m array).
    Returns ``(mu (m,), var (m,))``; the variance is clipped at 0 (round-off only).
    """
    if approx.n == 0:
        return np.zeros(k_star.shape[1]), np.maximum(np.asarray(k_star_star, float), 0.0)
    mu = k_star.T @ approx.alpha
    v = approx.reduction(k_star, overwrite=overwrite_k_star)
    var = k_star_star - np.einsum("ij,ij->j", v, v)
    return mu, np.maximum(var, 0.0)


def predict_latent_cov(approx: GaussianApproximation, k_star: np.ndarray, K_star_star: np.ndarray):
    """Joint latent predictive mean (m,) and covariance ``K** - VᵀV`` (m, m) (R&W Eq. 3.24 form)."""
    K_star_star = np.asarray(K_star_star, float)
    if approx.n == 0:
        return np.zeros(k_star.shape[1]), 0.5 * (K_star_star + K_star_star.T)
    mu = k_star.T @ approx.alpha
    v = approx.reduction(k_star)
    cov = K_star_star - v.T @ v
    return mu, 0.5 * (cov + cov.T)


def predict_latent_grad(
    approx: GaussianApproximation,
    k_star: np.ndarray,
    dk_star: np.ndarray,
    dk_star_star: np.ndarray,
):
    """Gradients of the latent predictive mean and variance w.r.t. the test point.

    ``∂μ*/∂x* = (∂k*/∂x*)ᵀ α``; ``∂σ²*/∂x* = ∂k(x*, x*)/∂x* - 2 (∂k*/∂x*)ᵀ R k*`` with
    ``R = W½ B⁻¹ W½`` (differentiating R&W Alg. 3.2 lines 4-6).
    ``k_star``: (n, m); ``dk_star``: (m, n, d) = ∂k(x*_i, x_j)/∂x*_i; ``dk_star_star``: (m, d).
    Returns ``(dmu (m, d), dvar (m, d))``.
    """
    if approx.n == 0:
        return np.zeros(dk_star_star.shape), np.array(dk_star_star, float)
    dmu = np.einsum("mnd,n->md", dk_star, approx.alpha)
    rk = approx.solve_b_weighted(k_star)  # (n, m)
    dvar = dk_star_star - 2.0 * np.einsum("mnd,nm->md", dk_star, rk)
    return dmu, dvar


# ----------------------------------------------------------------------------- inference


def _check_gram(K, y):
    y = binary_labels("y", y)
    K = finite_array("K", K, ndim=2)
    if K.shape != (y.shape[0], y.shape[0]):
        raise InvalidInputError(f"K: expected shape ({y.shape[0]}, {y.shape[0]}) to match y, got {K.shape}")
    return K, y


def _newton_state(K, a, ys, offset=0.0):
    f = K @ a
    log_p, d1, d2, d3 = probit_log_likelihood_terms(f + offset, ys)
    psi = -0.5 * float(a @ f) + float(np.sum(log_p))
    return f, psi, log_p, d1, d2, d3


def laplace_mode(
    K,
    y,
    *,
    f0=None,
    offset=None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> GaussianApproximation:
    """Find the posterior mode ``f̂`` by Newton's method and return the Laplace approximation.

    Stable Newton iteration of R&W Alg. 3.1 on the objective
    ``Ψ(a) = -½ aᵀKa + Σ log Φ(y'_i (Ka)_i)`` (``f = Ka``, R&W Eq. 3.12): each step
    ``b = W f + ∇log p``, ``a_new = b - W½ L⁻ᵀ L⁻¹ W½ K b``; the step is halved while
    ``Ψ`` decreases; stop when ``|ΔΨ| < tol (1 + |Ψ|)``.
    Log evidence ``log q(y | X) = -½ aᵀf̂ + Σ log p(y_i | f̂_i) - Σ log L_ii`` (R&W Eq. 3.32, Alg. 3.1 line 10).

    ``K``: (n, n) prior covariance of the latents; ``y``: (n,) 0/1 answers;
    ``f0``: optional (n,) warm start for the mode (e.g. the previous fit's mode).
    ``offset``: optional (n,) prior mean ``m`` of the latent at the training inputs: the latent
    is ``m + g`` with ``g ~ GP(0, K)`` (R&W §2.7), the likelihood ``Φ(y'_i (m_i + g_i))``, and
    everything returned (mode ``mean``, ``alpha``, ``W½``) is of ``g``: ``W`` and
    ``∇log p`` are evaluated at ``m + ĝ``, the Newton step is ``b = W ĝ + ∇log p`` as above,
    and a prediction ``k*ᵀ α`` is the posterior mean of ``g`` (add ``m(x*)``).
    Raises :class:`InvalidInputError` on bad input, :class:`NumericalError` if no finite mode is found.
    """
    K, y = _check_gram(K, y)
    n = y.shape[0]
    if n == 0:
        return empty_approximation()
    ys = signed_labels(y)
    m = 0.0 if offset is None else finite_array("offset", offset, ndim=1)
    if offset is not None and m.shape[0] != n:
        raise InvalidInputError(f"offset: expected {n} prior-mean values (one per answer), got {m.shape[0]}")
    # Start: a = 0 (f = 0) or the warm start mapped to a with f = K a (least squares through B-form).
    a = np.zeros(n)
    f, psi, log_p, d1, d2, d3 = _newton_state(K, a, ys, m)
    if f0 is not None:
        f0 = finite_array("f0", f0, ndim=1)
        if f0.shape[0] != n:
            raise InvalidInputError(f"f0: expected {n} latent values, got {f0.shape[0]}")
        a_ws = _warm_start_weights(K, f0 + m, ys)
        cand = _newton_state(K, a_ws, ys, m)
        if np.isfinite(cand[1]) and cand[1] > psi:
            a = a_ws
            f, psi, log_p, d1, d2, d3 = cand
    n_iter = 0
    work = np.empty((n, n), order="F")  # B, then its factor L, at every Newton step
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (the iterations run are reported after the loop)
        w = np.maximum(-d2, 1e-300)
        sw = np.sqrt(w)
        L = cholesky_lower(_b_matrix(K, sw, out=work), overwrite=True)
        b = w * f + d1
        t = solve_triangular(L, sw * (K @ b), lower=True, check_finite=False)
        a_new = b - sw * solve_triangular(L, t, lower=True, trans="T", check_finite=False)
        step = a_new - a
        accepted = False
        for _ in range(30):
            cand = _newton_state(K, a + step, ys, m)
            if np.isfinite(cand[1]) and cand[1] >= psi - 1e-12 * (1.0 + abs(psi)):
                accepted = True
                break
            step = 0.5 * step
        if not accepted:
            break
        a = a + step
        psi_old = psi
        f, psi, log_p, d1, d2, d3 = cand
        if abs(psi - psi_old) < tol * (1.0 + abs(psi)):
            break
    if not np.all(np.isfinite(f)) or not np.isfinite(psi):
        raise NumericalError("Laplace: Newton iteration produced a non-finite mode")
    # Final quantities at the mode (alpha = ∇log p(y|f̂) equals a at the mode, R&W Eq. 3.17).
    w = np.maximum(-d2, 1e-300)
    sw = np.sqrt(w)
    L = cholesky_lower(_b_matrix(K, sw))
    log_z = psi - float(np.sum(np.log(np.diag(L))))
    return GaussianApproximation(
        alpha=d1,
        sqrt_w=sw,
        chol=L,
        mean=f,
        log_marginal_likelihood=log_z,
        n_iter=n_iter,
    )


def _warm_start_weights(K, f0, ys):
    """Weights ``a`` with ``K a ≈ f0``: at the mode ``a = ∇log p(y | f̂)`` (R&W Eq. 3.17), so use that."""
    _, d1, _, _ = probit_log_likelihood_terms(f0, ys)
    return d1


def laplace_lml_grad(approx: GaussianApproximation, K, y, dK) -> np.ndarray:
    """Gradient of the Laplace log evidence w.r.t. kernel hyperparameters (R&W Alg. 5.1, Eqs. 5.22-5.24).

    ``∂ log q / ∂θ_j = ½ aᵀ C_j a - ½ tr(R C_j) + s2ᵀ (b_j - K R b_j)`` with ``C_j = ∂K/∂θ_j``,
    ``R = W½ B⁻¹ W½``, ``b_j = C_j ∇log p``, and the implicit term through ``f̂``
    ``s2 = ∂ log q / ∂f̂ = +½ diag((K⁻¹ + W)⁻¹) ∇³ log p(y | f̂)``. Sign note: R&W print
    ``-½`` in Eq. 5.23/Alg. 5.1, but with ``W = -∇∇ log p`` the derivative of ``-½ log|B|``
    is ``+½ [(K⁻¹+W)⁻¹]_ii ∇³_i log p`` (GPML's ``infLaplace`` uses this sign; checked
    against finite differences in tests/reproduction/gp/test_laplace.py).
    ``K``: (n, n); ``y``: (n,); ``dK``: (p, n, n). Returns (p,).
    """
    K, y = _check_gram(K, y)
    dK = np.asarray(dK, float)
    if approx.n == 0:
        return np.zeros(dK.shape[0])
    ys = signed_labels(y)
    _, d1, _, d3 = probit_log_likelihood_terms(approx.mean, ys)
    sw = approx.sqrt_w
    b_inv = b_inverse(approx.chol)
    R = sw[:, None] * b_inv * sw[None, :]  # W½ B⁻¹ W½ = (K + W⁻¹)⁻¹, (n, n)
    s2 = 0.5 * marginal_variances(K, sw, approx.chol, b_inv) * d3
    a = d1
    out = np.empty(dK.shape[0])
    for j in range(dK.shape[0]):
        Cj = dK[j]
        s1 = 0.5 * a @ Cj @ a - 0.5 * np.sum(R * Cj)
        bj = Cj @ d1
        s3 = bj - K @ (R @ bj)
        out[j] = s1 + s2 @ s3
    return out
