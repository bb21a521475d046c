"""Probit GP models: binary answers (:class:`ProbitGP`) and duels (:class:`PreferenceGP`).

A model ties a :class:`~visiontune.reproduction.gp.kernels.Kernel` to the Gram-matrix engines of
:mod:`visiontune.reproduction.gp.laplace` (R&W Alg. 3.1/3.2) and :mod:`visiontune.reproduction.gp.ep`
(R&W Alg. 3.5/3.6). It fits on construction and is immutable: the model is a pure function of
(kernel, data, inference method), as the trial log needs (docs/design.md, "How data flows through one trial").

Shapes: training inputs ``X: (n, d)``; answers ``y: (n,)`` in {0, 1}; test points
``Xs: (m, d)``. Latent ``f`` with ``P(y = 1 | f) = Φ(f)``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from visiontune._validate import binary_labels, finite_array, points
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.gp.ep import EPApproximation, ep_lml_grad, expectation_propagation
from visiontune.reproduction.gp.kernels import Constant, Kernel, Linear, Preference, Product, Stationary, Sum
from visiontune.reproduction.gp.laplace import (
    laplace_lml_grad,
    laplace_mode,
    predict_latent,
    predict_latent_cov,
    predict_latent_grad,
)

INFERENCE_METHODS = ("laplace", "ep")
_DIAG_BLOCK = 128


def check_inference(inference) -> str:
    """Return ``inference`` if it names a known method, else raise naming the argument."""
    if inference not in INFERENCE_METHODS:
        raise InvalidInputError(f"inference: expected one of {INFERENCE_METHODS}, got {inference!r}")
    return inference


def _check_kernel(name: str, kernel) -> Kernel:
    if not isinstance(kernel, Kernel):
        raise InvalidInputError(
            f"{name}: expected a visiontune.reproduction.gp.kernels.Kernel, got {type(kernel).__name__}"
        )
    return kernel


def diag_input_gradient(kernel: Kernel, Xs: np.ndarray) -> np.ndarray:
    """``∂k(x, x)/∂x`` at each row of ``Xs`` (m, d) -> (m, d).

    For a symmetric kernel ``∂k(x, x)/∂x = 2 ∂₁k(x, x')|_{x'=x}``; from the kernel's structure
    where known (zero for stationary kernels, :func:`_diag_gradient`), else evaluated from
    ``kernel.grad_inputs`` on diagonal blocks.
    """
    fast = _diag_gradient(kernel, Xs)
    if fast is not None:
        return fast
    m, d = Xs.shape
    out = np.empty((m, d))
    for start in range(0, m, _DIAG_BLOCK):
        block = Xs[start : start + _DIAG_BLOCK]
        G = kernel.grad_inputs(block, block)
        idx = np.arange(block.shape[0])
        out[start : start + block.shape[0]] = 2.0 * G[idx, idx]
    return out


def paired_input_gradient(kernel: Kernel, X1: np.ndarray, X2: np.ndarray) -> np.ndarray:
    """``∂k(x1_i, x2_i)/∂x1_i`` for paired rows of ``X1``, ``X2`` (m, d) -> (m, d) (the diagonal of
    ``kernel.grad_inputs(X1, X2)``, evaluated on diagonal blocks of at most 128 rows)."""
    m, d = X1.shape
    out = np.empty((m, d))
    for start in range(0, m, _DIAG_BLOCK):
        stop = min(start + _DIAG_BLOCK, m)
        G = kernel.grad_inputs(X1[start:stop], X2[start:stop])
        idx = np.arange(stop - start)
        out[start:stop] = G[idx, idx]
    return out


def _diag_gradient(kernel: Kernel, Xs: np.ndarray):
    """``∂k(x, x)/∂x`` (m, d) from the kernel's structure, or None where it is not known here:
    stationary and constant kernels have a constant ``k(x, x)`` (gradient 0); ``Linear``:
    ``2σ² x`` on its columns; sums add; products use the product rule with ``k_c(x, x)``."""
    if isinstance(kernel, (Stationary, Constant)):
        return np.zeros(Xs.shape)
    if isinstance(kernel, Linear):
        out = np.zeros(Xs.shape)
        dims = list(range(Xs.shape[1])) if kernel.dims is None else list(kernel.dims)
        out[:, dims] = 2.0 * kernel.variance * Xs[:, dims]
        return out
    if isinstance(kernel, (Sum, Product)):
        parts = [_diag_gradient(k, Xs) for k in kernel.kernels]
        if any(p is None for p in parts):
            return None
        if isinstance(kernel, Sum):
            return sum(parts)
        diags = [k._paired(Xs, Xs) for k in kernel.kernels]
        out = np.zeros(Xs.shape)
        for c, part in enumerate(parts):
            others = np.prod([v for i, v in enumerate(diags) if i != c], axis=0)
            out += part * others[:, None]
        return out
    return None


class ProbitGP:
    """GP classifier ``P(y = 1 | x) = Φ(f(x))``, ``f ~ GP(0, k)``, fitted on construction.

    ``kernel``: covariance of ``f``; ``X``: (n, d) inputs (n = 0 gives the prior);
    ``y``: (n,) answers in {0, 1}; ``inference``: ``"laplace"`` (R&W Alg. 3.1/3.2, Fauvel & Chalk (contextual BO),
    supp. A) or ``"ep"`` (R&W Alg. 3.5/3.6, used for the benchmarks of Fauvel & Chalk (binary/preferential BO)).
    ``warm_start``: optional start for the inference, from :attr:`warm_start_state` of an
    earlier model on a prefix of the same data (Laplace: the latent mode (k,), k <= n, padded
    with zeros; EP: the site parameters (2, k), padded with empty sites). Speed only: the
    result is the same fixed point.
    ``prior_mean``: optional (n,) values ``m(X)`` of a non-zero prior mean of the latent at the
    training inputs (Laplace only): ``f = m + g``, ``g ~ GP(0, k)`` (R&W §2.7); every prediction
    (``predict*``, ``training_posterior``, sample paths) is then of the deviation ``g``, to which
    the caller adds ``m`` at the test points (:func:`visiontune.reproduction.gp.laplace.laplace_mode`).
    """

    def __init__(self, kernel: Kernel, X, y, inference: str = "laplace", *, warm_start=None, prior_mean=None):
        kernel = _check_kernel("kernel", kernel)
        inference = check_inference(inference)
        X = _training_inputs(X)
        y = binary_labels("y", y, X.shape[0])
        n = X.shape[0]
        K = kernel(X) if n else np.zeros((0, 0))
        if prior_mean is not None and inference != "laplace":
            raise InvalidInputError(f"prior_mean: supported with inference='laplace' only, got inference={inference!r}")
        if inference == "laplace":
            f0 = _pad_warm_start(warm_start, n, rows=1)
            approx = laplace_mode(K, y, f0=None if f0 is None else f0[0], offset=prior_mean)
        else:
            sites = _pad_warm_start(warm_start, n, rows=2)
            approx = expectation_propagation(K, y, sites=None if sites is None else (sites[0], sites[1]))
        for name, value in (("X", X), ("y", y), ("_K", K)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "kernel", kernel)
        object.__setattr__(self, "inference", inference)
        object.__setattr__(self, "_approx", approx)
        object.__setattr__(self, "has_prior_mean", prior_mean is not None)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new model")

    def __repr__(self):
        return f"{type(self).__name__}({self.kernel!r}, n={self.n}, inference={self.inference!r})"

    # ---- basic properties ------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of answers."""
        return int(self.y.shape[0])

    @property
    def warm_start_state(self) -> np.ndarray:
        """What to pass as ``warm_start`` to a refit: the mode (1, n) or EP sites (2, n)."""
        if self.inference == "laplace":
            return self._approx.mean[None, :].copy()
        if isinstance(self._approx, EPApproximation):
            return np.vstack([self._approx.tau_site, self._approx.nu_site])
        return np.zeros((2, 0))

    def _test_points(self, Xs) -> np.ndarray:
        Xs = points("Xs", Xs, dim=self.X.shape[1] if self.n else None)
        return Xs

    # ---- predictions -----------------------------------------------------------------
    def predict(self, Xs):
        """Latent predictive mean and variance at ``Xs`` (m, d) -> ``(mu (m,), var (m,))``.

        ``μ = k*ᵀ α``, ``σ² = k** - vᵀv``, ``v = L⁻¹ W½ k*`` (R&W Alg. 3.2 / 3.6).
        """
        Xs = self._test_points(Xs)
        k_star = self.kernel(self.X, Xs) if self.n else np.zeros((0, Xs.shape[0]))
        return predict_latent(self._approx, k_star, self.kernel.diag(Xs), overwrite_k_star=True)

    def predict_with_grad(self, Xs):
        """``(mu (m,), var (m,), dmu (m, d), dvar (m, d))``: predictions and their gradients w.r.t. each test point.

        ``∂μ/∂x* = (∂k*/∂x*)ᵀ α``, ``∂σ²/∂x* = ∂k(x*, x*)/∂x* - 2 (∂k*/∂x*)ᵀ W½ B⁻¹ W½ k*``.
        """
        Xs = self._test_points(Xs)
        if self.n:
            k_star = self.kernel(self.X, Xs)
            dk_star = self.kernel.grad_inputs(Xs, self.X)
        else:
            k_star, dk_star = np.zeros((0, Xs.shape[0])), np.zeros((Xs.shape[0], 0, Xs.shape[1]))
        mu, var = predict_latent(self._approx, k_star, self.kernel.diag(Xs))
        dmu, dvar = predict_latent_grad(self._approx, k_star, dk_star, diag_input_gradient(self.kernel, Xs))
        return mu, var, dmu, dvar

    def predict_cov(self, Xs):
        """Joint latent posterior at ``Xs`` (m, d): ``(mu (m,), cov (m, m))`` with ``cov = K** - VᵀV``."""
        Xs = self._test_points(Xs)
        k_star = self.kernel(self.X, Xs) if self.n else np.zeros((0, Xs.shape[0]))
        return predict_latent_cov(self._approx, k_star, self.kernel(Xs))

    # ---- evidence and training posterior -----------------------------------------------
    def log_marginal_likelihood(self) -> float:
        """Approximate ``log p(y | X)``: Laplace (R&W Eq. 3.32) or EP (R&W Eq. 3.65)."""
        return float(self._approx.log_marginal_likelihood)

    def log_marginal_likelihood_grad(self) -> np.ndarray:
        """(p,) gradient of :meth:`log_marginal_likelihood` w.r.t. ``kernel.params`` (R&W Alg. 5.1 / Eq. 5.27)."""
        if self.has_prior_mean:
            raise InvalidInputError("log_marginal_likelihood_grad: not implemented for a model with a prior_mean")
        if not self.n:
            return np.zeros(self.kernel.n_params)
        dK = self.kernel.grad_params(self.X)
        grad = laplace_lml_grad if self.inference == "laplace" else ep_lml_grad
        return grad(self._approx, self._K, self.y, dK)

    def training_posterior(self):
        """Gaussian approximation of ``p(f(X) | data)``: ``(mean (n,), cov (n, n))``, ``cov = (K⁻¹ + W)⁻¹``."""
        return self._approx.mean.copy(), self._approx.covariance(self._K)


def _training_inputs(X) -> np.ndarray:
    arr = finite_array("X", X)
    if arr.size == 0:
        return arr.reshape(0, arr.shape[-1] if arr.ndim == 2 else 0)
    return points("X", arr)


def _pad_warm_start(warm_start, n: int, rows: int):
    """Validate a warm start ``(rows, k)`` (or (k,) when rows == 1), k <= n; pad with zeros to n."""
    if warm_start is None or n == 0:
        return None
    ws = finite_array("warm_start", warm_start)
    if ws.ndim == 1 and rows == 1:
        ws = ws[None, :]
    if ws.ndim != 2 or ws.shape[0] != rows or ws.shape[1] > n:
        raise InvalidInputError(
            f"warm_start: expected shape ({rows}, k) with k <= {n} (from warm_start_state), got {ws.shape}"
        )
    out = np.zeros((rows, n))
    out[:, : ws.shape[1]] = ws
    return out


class PreferenceGP:
    """GP model of duels: ``P(x beats x') = Φ(g(x, x'))``, ``g(x, x') = f(x) - f(x')``
    (Fauvel & Chalk (binary/preferential BO), Eqs. 5-6).

    ``base_kernel``: covariance of the utility ``f`` on ``x`` (d columns); ``duels``: (n, 2d)
    rows ``[x, x']``; ``y``: (n,) with 1 when the first option ``x`` won. Inference on ``g``
    with the preference kernel :class:`~visiontune.reproduction.gp.kernels.Preference`.
    The ``predict*`` methods work on duels (latent ``g``); ``predict_value*`` on options
    (latent ``f``, via the cross-covariance ``cov(f(x), g_i) = k(x, a_i) - k(x, b_i)``).
    """

    def __init__(self, base_kernel: Kernel, duels, y, inference: str = "laplace", *, warm_start=None):
        base_kernel = _check_kernel("base_kernel", base_kernel)
        if isinstance(base_kernel, Preference):
            raise InvalidInputError("base_kernel: pass the utility kernel, not a Preference kernel")
        duels = _training_inputs(duels)
        if duels.shape[1] % 2 and duels.shape[0]:
            raise InvalidInputError(f"duels: expected (n, 2d) rows [x, x'], got {duels.shape[1]} columns")
        gp = ProbitGP(Preference(base_kernel), duels, y, inference, warm_start=warm_start)
        object.__setattr__(self, "base_kernel", base_kernel)
        object.__setattr__(self, "_gp", gp)
        # Speed: the options of every training duel stacked as rows [a_1..a_n, b_1..b_n]
        # (2n, d) and the weights [alpha, -alpha] (2n,), so that the cross-covariances of the
        # utility c_i(x) = k(a_i, x) - k(b_i, x) and their input gradients come from ONE base
        # kernel call on 2n rows (instead of the 4-term preference kernel).
        d = duels.shape[1] // 2
        stacked = np.vstack([duels[:, :d], duels[:, d:]]) if gp.n else np.zeros((0, d))
        alpha = gp._approx.alpha if gp.n else np.zeros(0)
        for name, value in (("_stacked", stacked), ("_alpha2", np.concatenate([alpha, -alpha]))):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new model")

    def __repr__(self):
        return f"PreferenceGP({self.base_kernel!r}, n={self.n}, inference={self.inference!r})"

    # ---- delegated ------------------------------------------------------------------
    kernel = property(lambda self: self._gp.kernel, doc="The :class:`Preference` kernel of ``g``.")
    duels = property(lambda self: self._gp.X, doc="(n, 2d) training duels.")
    X = duels
    y = property(lambda self: self._gp.y, doc="(n,) answers, 1 when the first option won.")
    inference = property(lambda self: self._gp.inference)
    n = property(lambda self: self._gp.n)
    warm_start_state = property(lambda self: self._gp.warm_start_state)

    def predict(self, duels):
        """Latent ``g`` at duels (m, 2d): ``(mu (m,), var (m,))``.

        R&W Alg. 3.2 with the preference kernel (Fauvel & Chalk (binary/preferential BO), Eq. 6); the cross-covariance
        of duel ``[o, o']`` with training duel ``i`` is ``k_g = c_i(o) - c_i(o')``,
        ``c_i(x) = k(a_i, x) - k(b_i, x)``, from one base-kernel call (speed only: the same
        numbers as the 4-term kernel up to round-off).
        """
        O1, O2 = self._duel_options(duels)
        if not self.n:
            return self._gp.predict(np.hstack([O1, O2]))
        m = O1.shape[0]
        c = self._value_cross(np.vstack([O1, O2]))
        k_star = c[:, :m] - c[:, m:]
        return predict_latent(self._gp._approx, k_star, self.kernel.diag(np.hstack([O1, O2])), overwrite_k_star=True)

    def predict_with_grad(self, duels):
        """``(mu, var, dmu (m, 2d), dvar (m, 2d))`` for ``g`` at duels (gradients w.r.t. both options).

        ``∂k_g/∂o = ∂c(o)``, ``∂k_g/∂o' = -∂c(o')`` (one base-kernel gradient call on 2n rows);
        prior ``k_g(d, d) = k(o, o) + k(o', o') - 2 k(o, o')``, so
        ``∂k_g(d, d)/∂o = ∂k(o, o)/∂o - 2 ∂₁k(o, o')``; then R&W Alg. 3.2 differentiated
        (:func:`~visiontune.reproduction.gp.laplace.predict_latent_grad`).
        """
        O1, O2 = self._duel_options(duels)
        if not self.n:
            return self._gp.predict_with_grad(np.hstack([O1, O2]))
        m = O1.shape[0]
        both = np.vstack([O1, O2])
        c = self._value_cross(both)
        k_star = c[:, :m] - c[:, m:]
        dc = self._value_cross_grad(both)  # (2m, n, d)
        dk_star = np.concatenate([dc[:m], -dc[m:]], axis=2)
        diag = diag_input_gradient(self.base_kernel, both) - 2.0 * paired_input_gradient(
            self.base_kernel, both, np.vstack([O2, O1])
        )
        dk_star_star = np.hstack([diag[:m], diag[m:]])
        approx = self._gp._approx
        mu, var = predict_latent(approx, k_star, self.kernel.diag(np.hstack([O1, O2])))
        dmu, dvar = predict_latent_grad(approx, k_star, dk_star, dk_star_star)
        return mu, var, dmu, dvar

    def challenge(self, champion) -> Challenge:
        """The duels ``[x*, x]`` of a fixed ``champion`` option (d,) against any option ``x``:
        a :class:`Challenge` whose ``predict`` / ``predict_with_grad`` give ``g(x*, x)`` (MUC's
        challenger search, Fauvel & Chalk (binary/preferential BO), §4.2). The champion's part is computed once here."""
        d = self.duels.shape[1] // 2 if self.n else None
        champion = points("champion", finite_array("champion", champion).reshape(1, -1), dim=d)
        k_cc = float(self.base_kernel.diag(champion)[0])
        if self.n:
            anchors = np.vstack([self._stacked, champion])  # (2n + 1, d)
            c_champion = self._value_cross(champion)[:, 0]
        else:
            anchors, c_champion = champion, np.zeros(0)
        return Challenge(self, champion[0], anchors, c_champion, k_cc)

    def predict_cov(self, duels):
        """Joint posterior of ``g`` at duels (m, 2d): ``(mu (m,), cov (m, m))``."""
        return self._gp.predict_cov(duels)

    def log_marginal_likelihood(self) -> float:
        return self._gp.log_marginal_likelihood()

    def log_marginal_likelihood_grad(self) -> np.ndarray:
        return self._gp.log_marginal_likelihood_grad()

    def training_posterior(self):
        """Approximate posterior of ``g`` at the training duels: ``(mean (n,), cov (n, n))``."""
        return self._gp.training_posterior()

    # ---- utility f -------------------------------------------------------------------
    def _options(self, X) -> np.ndarray:
        d = self.duels.shape[1] // 2 if self.n else None
        return points("X", X, dim=d)

    def _duel_options(self, duels):
        """Split validated duels (m, 2d) into the options ``(O1 (m, d), O2 (m, d))``."""
        duels = points("duels", duels, dim=self.duels.shape[1] if self.n else None)
        if duels.shape[1] % 2:
            raise InvalidInputError(f"duels: expected (m, 2d) rows [x, x'], got {duels.shape[1]} columns")
        d = duels.shape[1] // 2
        return duels[:, :d], duels[:, d:]

    def _value_cross(self, X):
        """``c(X)`` (n, m): ``c_i(x) = k(a_i, x) - k(b_i, x)``, one base-kernel call on the 2n stacked options."""
        K = self.base_kernel(self._stacked, X)
        return K[: self.n] - K[self.n :]

    def _value_cross_grad(self, X):
        """``∂c_i(x)/∂x`` at each row of ``X`` (m, d) -> (m, n, d), one base-kernel gradient call."""
        G = self.base_kernel.grad_inputs(X, self._stacked)
        return G[:, : self.n] - G[:, self.n :]

    def predict_value(self, X):
        """Latent utility ``f`` at options ``X`` (m, d): ``(mu (m,), var (m,))``.

        ``μ_f(x) = c(x)ᵀ α``, ``σ²_f(x) = k(x, x) - |L⁻¹ W½ c(x)|²`` with
        ``c_i(x) = k(a_i, x) - k(b_i, x)`` for duel ``i = [a_i, b_i]``; hence
        ``μ_g(x, x') = μ_f(x) - μ_f(x')``.
        """
        X = self._options(X)
        c = self._value_cross(X) if self.n else np.zeros((0, X.shape[0]))
        return predict_latent(self._gp._approx, c, self.base_kernel.diag(X), overwrite_k_star=True)

    def predict_value_with_grad(self, X):
        """``(mu (m,), var (m,), dmu (m, d), dvar (m, d))`` of the utility ``f`` at options ``X``."""
        X = self._options(X)
        if self.n:
            c, dc = self._value_cross(X), self._value_cross_grad(X)
        else:
            c, dc = np.zeros((0, X.shape[0])), np.zeros((X.shape[0], 0, X.shape[1]))
        approx = self._gp._approx
        mu, var = predict_latent(approx, c, self.base_kernel.diag(X))
        dmu, dvar = predict_latent_grad(approx, c, dc, diag_input_gradient(self.base_kernel, X))
        return mu, var, dmu, dvar

    def predict_value_mean(self, X):
        """Posterior mean of the utility only, ``μ_f(x) = c(x)ᵀ α`` at options ``X`` (m, d) -> (m,)
        (no variance: no triangular solve; MUC's champion, Fauvel & Chalk (binary/preferential BO), §4.2)."""
        X = self._options(X)
        if not self.n:
            return np.zeros(X.shape[0])
        return self.base_kernel(self._stacked, X).T @ self._alpha2

    def predict_value_mean_with_grad(self, X):
        """``(mu (m,), dmu (m, d))``: :meth:`predict_value_mean` and ``∂μ_f/∂x = ∂c(x)ᵀ α``."""
        X = self._options(X)
        if not self.n:
            return np.zeros(X.shape[0]), np.zeros(X.shape)
        mu = self.base_kernel(self._stacked, X).T @ self._alpha2
        dmu = np.einsum("mkd,k->md", self.base_kernel.grad_inputs(X, self._stacked), self._alpha2)
        return mu, dmu

    @staticmethod
    def from_ranking(options):
        """Turn a batch ranking into duels (Fauvel & Chalk (binary/preferential BO) §4.3): ``options`` (m, d), best
        first.

        Returns ``duels (m(m-1)/2, 2d)`` with rows ``[options[i], options[j]]`` for ``i < j``
        and ``y`` (m(m-1)/2,) all ones (the first, better-ranked option won).
        """
        options = points("options", options)
        m = options.shape[0]
        if m < 2:
            raise InvalidInputError(f"options: a ranking needs at least 2 options, got {m}")
        i, j = np.triu_indices(m, k=1)
        return np.hstack([options[i], options[j]]), np.ones(i.shape[0])


class Challenge:
    """Latent ``g(x*, x) = f(x*) - f(x)`` of a :class:`PreferenceGP` on the duels ``[x*, x]`` of a
    fixed champion ``x*`` (d,) (from :meth:`PreferenceGP.challenge`). Same numbers as
    ``PreferenceGP.predict*`` on ``[x*, x]`` rows up to round-off; faster:

    - cross-covariance with training duel ``i = [a_i, b_i]`` (Fauvel & Chalk (binary/preferential BO), Eq. 6):
      ``k_g,i = c_i(x*) - c_i(x)``, ``c_i(x) = k(a_i, x) - k(b_i, x)``; ``c(x*)`` is stored, and
      ``c(x)`` and ``k(x*, x)`` come from one base-kernel call on the ``2n + 1`` anchors
      ``[a_1..a_n, b_1..b_n, x*]``;
    - prior variance ``k(x*, x*) + k(x, x) - 2 k(x*, x)``;
    - gradients w.r.t. the challenger only: ``∂k_g,i/∂x = -∂c_i(x)``,
      ``∂k_g(d, d)/∂x = ∂k(x, x)/∂x - 2 ∂₁k(x, x*)`` (one gradient call on the anchors);
    - ``μ = k_gᵀ α``, ``σ² = k** - |v|²``, ``v = L⁻¹ W½ k_g`` and
      ``∂σ²/∂x = ∂k**/∂x - 2 ∂k_gᵀ W½ L⁻ᵀ v`` (R&W Alg. 3.2 differentiated; ``v`` reused, so
      two triangular solves per evaluation instead of three).
    """

    __slots__ = ("_model", "champion", "_anchors", "_c_champion", "_k_cc")

    def __init__(self, model: PreferenceGP, champion, anchors, c_champion, k_cc):
        self._model, self.champion = model, champion
        self._anchors, self._c_champion, self._k_cc = anchors, c_champion, k_cc

    def _check(self, X) -> np.ndarray:
        X = self._model._options(X)
        if X.shape[1] != self.champion.shape[0]:
            raise InvalidInputError(
                f"X: expected options with {self.champion.shape[0]} columns like the champion, got {X.shape[1]}"
            )
        return X

    def _cross(self, X):
        """``(k_g (n, m), k(x*, x) (m,))`` from one base-kernel call."""
        model, n = self._model, self._model.n
        K = model.base_kernel(self._anchors, X)
        return self._c_champion[:, None] - (K[:n] - K[n : 2 * n]), K[-1]

    def predict(self, X):
        """``(mu (m,), var (m,))`` of ``g(x*, x)`` at options ``X`` (m, d)."""
        model = self._model
        X = self._check(X)
        k_star, k_cx = self._cross(X)
        kss = self._k_cc + model.base_kernel.diag(X) - 2.0 * k_cx
        return predict_latent(model._gp._approx, k_star, kss, overwrite_k_star=True)

    def predict_with_grad(self, X):
        """``(mu (m,), var (m,), dmu (m, d), dvar (m, d))``, gradients w.r.t. the challenger ``x``."""
        model = self._model
        X = self._check(X)
        n = model.n
        k_star, k_cx = self._cross(X)
        kss = self._k_cc + model.base_kernel.diag(X) - 2.0 * k_cx
        G = model.base_kernel.grad_inputs(X, self._anchors)  # (m, 2n + 1, d)
        dkss = diag_input_gradient(model.base_kernel, X) - 2.0 * G[:, -1, :]
        if not n:
            return np.zeros(X.shape[0]), np.maximum(kss, 0.0), np.zeros(X.shape), dkss
        dk_star = G[:, n : 2 * n] - G[:, :n]  # ∂k_g/∂x = -(∂k(a, x) - ∂k(b, x))
        approx = model._gp._approx
        mu = k_star.T @ approx.alpha
        sw = approx.sqrt_w[:, None]
        v, info = lapack.dtrtrs(approx.chol, sw * k_star, lower=1)
        if info != 0:
            raise NumericalError(f"B's Cholesky factor is singular (trtrs info={info})")
        var = kss - np.einsum("ij,ij->j", v, v)
        rk, info = lapack.dtrtrs(approx.chol, v, lower=1, trans=1)
        if info != 0:
            raise NumericalError(f"B's Cholesky factor is singular (trtrs info={info})")
        rk *= sw  # R k_g = W½ B⁻¹ W½ k_g
        dmu = np.einsum("mnd,n->md", dk_star, approx.alpha)
        dvar = dkss - 2.0 * np.einsum("mnd,nm->md", dk_star, rk)
        return mu, np.maximum(var, 0.0), dmu, dvar
