"""Approximate posterior sample paths of a probit GP, for Thompson sampling.

A sample is a whole function that can be evaluated (and differentiated) anywhere, built as

    f(·) = φ(·)ᵀ w  +  c(·)ᵀ v,     v = K⁻¹ (f_X - Φ_X w)                       (*)

(decoupled bases / pathwise conditioning, Fauvel & Chalk (contextual BO), supp. G Eq. S43;
Fauvel & Chalk (binary/preferential BO), supp. D; Wilson et al. 2020): ``φ`` are features whose inner product
approximates the prior kernel, ``w ~ N(0, I)`` gives a prior path, ``f_X ~ N(m, C)`` is drawn from the Gaussian
approximation of the latent values at the training inputs (``model.training_posterior()``,
Laplace or EP), ``K`` is the exact prior covariance of those latents and ``c(x)`` the exact
prior covariance between ``f(x)`` and them. The update is exact given the features, so the
sample's mean and covariance are the model's predictive ones up to the feature error.

Features (:func:`prior_features`), built from the kernel's structure:

- stationary kernels (SE, Matérn): Hilbert-space features of Solin & Särkkä (2020) on
  ``[-L, L]`` per active column around the centre of the box,
  ``φ_j(x) = ∏_i L_i^{-1/2} sin(π j_i (x_i + L_i)/(2 L_i))``, ``λ_j,i = (π j_i / (2 L_i))²``,
  weight ``√S(√λ_j)``; ``L_i = h_i + margin · ℓ_i`` (``h_i`` the box half-width, default
  margin 4 lengthscales, so the boundary's image terms are negligible on the box). Of the
  multi-indices ``j`` the ``n_basis`` with the largest spectral density are kept (for ``D``
  active columns, from a grid of at most 2¹⁸ candidates);
- stationary kernels on more than 3 active columns, or whose lengthscale is too short for
  the basis (prior variance off by more than 2√(2/M) at the box centre or a corner): random
  Fourier features (Rahimi & Recht 2007), ``n_basis`` of them (error ~ √(2/M) per entry in
  any dimension), since the Hilbert-space basis degrades fast with dimension;
- ``Linear`` (variance ``σ²``): the exact features ``σ x_dims``; ``Constant``: ``σ``;
- ``Sum``: features concatenated; ``Product``: row-wise Kronecker product of the factors'
  features (exact for the products ``<φ₁,φ₁'> <φ₂,φ₂'>``), at most one stationary factor per
  product. This covers the paper kernels ``θ s s' + k(x, x')`` (contextual BO, Eq. 15) and
  ``s s' k(x, x')`` (benchmarks);
- ``Preference(base)``: ``φ_pref(x, x') = φ(x) - φ(x')`` (binary/preferential BO, supp. D).

Speed (results unchanged up to round-off): a sample path ``φ(x)ᵀw`` is never formed
feature by feature. A Hilbert-space basis is a tensor product of 1-D sines, so
``Σ_j w_j c_j ∏_i sin(ω_{j_i} z_i)`` is a contraction of the coefficient tensor ``T[j_1, …, j_D]``
with per-column ``(m, J_i)`` sine tables (``m Σ_i ∏_{k>=i} J_k`` operations instead of
``m M D``; 4096 features in 2-D: J ≈ 72 per column); sums, products with a small factor and
preference differences combine these (``FeatureMap._combination``). Hilbert-space maps are
cached per (kernel hyperparameters, box, n_basis, margin); ``K⁺`` is applied through one
symmetric eigendecomposition without forming the pseudo-inverse.

For a :class:`~visiontune.reproduction.gp.model.PreferenceGP` the sample is of the utility ``f`` (options,
``(m, d)``: :meth:`PosteriorSample.value`) with ``c_i(x) = k(x, a_i) - k(x, b_i)``; calling
the sample on duels ``(m, 2d)`` gives ``g(x, x') = f(x) - f(x')``, antisymmetric by construction.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import linalg

from visiontune._validate import check_box, check_int, check_rng, finite_array, points
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.reproduction.gp.kernels import Constant, Kernel, Linear, Preference, Product, Stationary, Sum

__all__ = [
    "FeatureMap",
    "prior_features",
    "PosteriorSample",
    "PosteriorSamples",
    "sample_posterior_functions",
]

#: Default boundary margin of the Hilbert-space domain, in lengthscales beyond the box.
DEFAULT_MARGIN = 4.0
_MAX_CANDIDATES = 2**18
#: Stationary terms on more active columns than this use random Fourier features instead:
#: with 4096 functions the Hilbert-space error grows from ~1e-5 (3-D, SE, ℓ = 0.2 of the box)
#: to ~0.1 (4-D) and ~0.5 (5-D), while random features stay near √(2/M) ≈ 0.02 in any dimension.
MAX_HILBERT_DIMS = 3
#: The Hilbert-space basis is replaced by random Fourier features (when an rng is given) if
#: its relative error of the prior variance on the box exceeds this many times √(2/M), the
#: typical error of M random features (lengthscale far below box width / n_basis^(1/D)).
HILBERT_TOLERANCE = 2.0
#: Rows evaluated at once (bounds the (rows, features, columns) temporaries).
_BLOCK = 256
#: A Hilbert-space sample is contracted through a dense tensor of coefficients over the grid
#: of multi-indices when that grid has at most this many times ``n_basis`` cells (a compact
#: set of indices, the usual case); otherwise features are gathered one by one.
_DENSE_FACTOR = 4
#: Hilbert-space feature maps kept for reuse, keyed by (kernel, box, n_basis, margin).
_CACHE_SIZE = 32
#: Products of feature maps are combined factor by factor when the smaller one has at most
#: this many features (Linear on a few columns, Constant); otherwise features are formed.
_MAX_PRODUCT_LOOP = 16


# ======================================================================================
# Feature maps: k(x, x') ≈ φ(x)ᵀ φ(x')
# ======================================================================================


@dataclass(frozen=True, eq=False)
class FeatureMap:
    """Features ``φ`` with ``k(x, x') ≈ φ(x)ᵀ φ(x')`` on the inputs' columns.

    ``values(X (m, d)) -> (m, F)``; ``jacobian(X (m, d)) -> (m, F, d)``.
    ``_combination(W (F, S))`` (optional, speed only) returns a :class:`_Combination` that
    evaluates ``values(X) @ W`` and its gradient without forming the ``(m, F)`` features
    (a sample path is such a combination; the Hilbert-space basis is a product of 1-D sines
    and is contracted one column at a time).
    """

    n_features: int
    _values: object = field(repr=False)
    _jacobian: object = field(repr=False)
    _combination_fn: object = field(default=None, repr=False)

    def values(self, X) -> np.ndarray:
        return self._values(points("X", X))

    def jacobian(self, X) -> np.ndarray:
        return self._jacobian(points("X", X))

    def _combination(self, W: np.ndarray) -> _Combination:
        """``X -> φ(X) W`` (m, S) and its gradient (S, m, d) for fixed weights ``W`` (F, S)."""
        if self._combination_fn is not None:
            return self._combination_fn(W)
        return _Combination(
            lambda X: self._values(X) @ W,
            lambda X: np.einsum("mfd,fs->smd", self._jacobian(X), W),
        )


@dataclass(frozen=True, eq=False)
class _Combination:
    """A fixed linear combination of features: ``values(X (m, d)) -> (m, S)`` = ``φ(X) W``;
    ``grad(X) -> (S, m, d)``, the derivative of each column with respect to each row of ``X``."""

    values: object
    grad: object


def _check_n_basis(n_basis) -> int:
    return check_int("n_basis", n_basis, lo=1, whole_float=True)


def _multi_indices(kernel: Stationary, L: np.ndarray, n_basis: int) -> np.ndarray:
    """The ``n_basis`` multi-indices ``j`` (each entry >= 1) with the largest ``S(π j / 2L)``."""
    D = L.size
    if D == 1:
        return np.arange(1, n_basis + 1)[:, None]
    per_dim = math.ceil(2 * n_basis ** (1.0 / D))
    per_dim = max(2, min(per_dim, int(math.floor(_MAX_CANDIDATES ** (1.0 / D) + 1e-9))))
    grids = np.meshgrid(*[np.arange(1, per_dim + 1)] * D, indexing="ij")
    J = np.stack([g.reshape(-1) for g in grids], axis=1)
    # the spectral densities are decreasing in the ARD-scaled frequency |ℓ ∘ ω|
    order = np.argsort(np.sum((kernel.lengthscales * np.pi * J / (2 * L)) ** 2, axis=1), kind="stable")
    return J[order[:n_basis]]


def _hilbert_features(kernel: Stationary, box: np.ndarray, n_basis: int, margin: float, d: int) -> FeatureMap:
    """Solin & Särkkä (2020) Eqs. 19-20 (Dirichlet Laplacian eigenpairs on ``[-L, L]^D``)."""
    if kernel.dims is None and kernel.n_active != d:
        raise InvalidInputError(f"box: {d} rows, but the kernel has {kernel.n_active} lengthscales (one per column)")
    dims = list(range(d)) if kernel.dims is None else list(kernel.dims)
    if max(dims) >= box.shape[0]:
        raise InvalidInputError(f"box: kernel uses column {max(dims)} but the box has {box.shape[0]} rows")
    lo, hi = box[dims, 0], box[dims, 1]
    centre, half = (lo + hi) / 2.0, (hi - lo) / 2.0
    L = half + margin * kernel.lengthscales
    J = _multi_indices(kernel, L, n_basis)
    freq = np.pi * J / (2.0 * L)  # (M, D) = √λ_j per column
    weights = np.sqrt(kernel.spectral_density(freq))  # (M,)
    norm = 1.0 / np.sqrt(np.prod(L))

    # sin/cos are evaluated once per distinct frequency of each column (per-column (m, J_i)
    # tables), then gathered (values, jacobian) or contracted (linear combinations)
    n_dims = len(dims)
    j_max = J.max(axis=0)
    base = [np.pi * np.arange(1, j_max[i] + 1) / (2.0 * L[i]) for i in range(n_dims)]
    coef = norm * weights  # (M,)

    def tables(X, derivative=False):
        """Per column i: ``sin(ω_i Z_i)`` (m, J_i) and, if asked, ``ω_i cos(ω_i Z_i)``."""
        Z = X[:, dims] - centre + L  # (m, D) shifted to [0, 2L]
        args = [Z[:, i : i + 1] * base[i] for i in range(n_dims)]
        sines = [np.sin(a) for a in args]
        return sines, ([base[i] * np.cos(a) for i, a in enumerate(args)] if derivative else None)

    def parts(X):
        sines, slopes = tables(X, derivative=True)
        s = [t[:, J[:, i] - 1] for i, t in enumerate(sines)]
        c = [t[:, J[:, i] - 1] for i, t in enumerate(slopes)]
        return s, c  # lists over columns of (m, M); c includes the factor ω_i

    def values(X):
        sines, _ = tables(X)
        out = np.broadcast_to(coef, (X.shape[0], J.shape[0])).copy()
        for i, t in enumerate(sines):
            out *= t[:, J[:, i] - 1]
        return out

    def jacobian(X):
        s, c = parts(X)
        out = np.zeros((X.shape[0], J.shape[0], X.shape[1]))
        for i, col in enumerate(dims):
            others = np.prod([s[k] for k in range(n_dims) if k != i], axis=0) if n_dims > 1 else 1.0
            out[:, :, col] = coef * c[i] * others
        return out

    dense = int(np.prod(j_max)) <= _DENSE_FACTOR * J.shape[0]

    def combination(W):
        """``φ(X) W`` as a contraction of the coefficient tensor ``T[j_1, …, j_D, s] = coef_j W_js``
        with the per-column sine tables: ``Σ_j T_j ∏_i sin(ω_{j_i} z_i)``, cost ``m Σ_i ∏_{k>=i} J_k``
        instead of ``m M D`` (Solin & Särkkä basis is a tensor product of 1-D sines)."""
        if not dense:
            return _Combination(lambda X: values(X) @ W, lambda X: np.einsum("mfd,fs->smd", jacobian(X), W))
        n_s = W.shape[1]
        T = np.zeros(tuple(j_max) + (n_s,))
        T[tuple(J.T - 1)] = coef[:, None] * W
        T_flat = T.reshape(j_max[0], -1)

        def contract(first, rest):
            out = first @ T_flat  # (m, J_2 ⋯ J_D S)
            for t in rest:
                out = np.matmul(t[:, None, :], out.reshape(t.shape[0], t.shape[1], -1))[:, 0, :]
            return out  # (m, S)

        def combo_values(X):
            sines, _ = tables(X)
            return contract(sines[0], sines[1:])

        def combo_grad(X):
            sines, slopes = tables(X, derivative=True)
            out = np.zeros((n_s, X.shape[0], X.shape[1]))
            head = sines[0] @ T_flat if n_dims > 1 else None
            for i, col in enumerate(dims):
                if i == 0:
                    g = contract(slopes[0], sines[1:])
                else:  # reuse sin(z_1) @ T, then contract the other columns
                    g = head
                    for k in range(1, n_dims):
                        t = slopes[k] if k == i else sines[k]
                        g = np.matmul(t[:, None, :], g.reshape(t.shape[0], t.shape[1], -1))[:, 0, :]
                out[:, :, col] = g.T
            return out

        return _Combination(combo_values, combo_grad)

    return FeatureMap(J.shape[0], values, jacobian, combination)


def _fourier_features(kernel: Stationary, n_basis: int, d: int, rng) -> FeatureMap:
    """Random Fourier features ``φ_j(x) = σ √(2/M) cos(ω_jᵀ x + b_j)``, ``ω_j ~ S/((2π)^D σ²)``,
    ``b_j ~ U[0, 2π)`` (Rahimi & Recht 2007): used for more than 3 active columns, where the
    Hilbert-space basis would need far more than ``n_basis`` functions."""
    if rng is None:
        raise InvalidInputError(
            f"rng: a stationary kernel on {kernel.n_active} > {MAX_HILBERT_DIMS} columns uses random Fourier features; "
            "pass rng"
        )
    dims = list(range(d)) if kernel.dims is None else list(kernel.dims)
    omega = kernel.sample_frequencies(n_basis, rng)  # (M, D)
    phase = rng.uniform(0.0, 2.0 * np.pi, size=n_basis)
    scale = math.sqrt(2.0 * kernel.variance / n_basis)

    def values(X):
        return scale * np.cos(X[:, dims] @ omega.T + phase)

    def jacobian(X):
        out = np.zeros((X.shape[0], n_basis, X.shape[1]))
        out[:, :, dims] = -scale * np.sin(X[:, dims] @ omega.T + phase)[:, :, None] * omega[None, :, :]
        return out

    def combination(W):
        # ∂/∂x Σ_j W_js φ_j(x) = -σ√(2/M) Σ_j W_js sin(ω_jᵀx + b_j) ω_j
        def grad(X):
            sines = np.sin(X[:, dims] @ omega.T + phase)  # (m, M)
            out = np.zeros((W.shape[1], X.shape[0], X.shape[1]))
            for k in range(W.shape[1]):
                out[k][:, dims] = -scale * (sines * W[:, k]) @ omega
            return out

        return _Combination(lambda X: values(X) @ W, grad)

    return FeatureMap(n_basis, values, jacobian, combination)


def _variance_error(fm: FeatureMap, kernel: Stationary, box: np.ndarray, d: int) -> float:
    """Relative error of ``φ(x)ᵀφ(x) ≈ σ²`` at the box centre and corners (a cheap check of
    whether ``n_basis`` Hilbert-space functions resolve the lengthscale)."""
    dims = list(range(d)) if kernel.dims is None else list(kernel.dims)
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * len(dims), indexing="ij")).reshape(len(dims), -1).T
    X = np.tile(box.mean(axis=1), (corners.shape[0] + 1, 1))
    X[1:, dims] = box[dims, 0] + corners * (box[dims, 1] - box[dims, 0])
    V = fm._values(X)
    return float(np.max(np.abs(np.sum(V * V, axis=1) - kernel.variance)) / kernel.variance)


def _linear_features(kernel: Linear, d: int) -> FeatureMap:
    dims = list(range(d)) if kernel.dims is None else list(kernel.dims)
    scale = math.sqrt(kernel.variance)
    jac = np.zeros((len(dims), d))
    jac[np.arange(len(dims)), dims] = scale
    return FeatureMap(
        len(dims),
        lambda X: scale * X[:, dims],
        lambda X: np.broadcast_to(jac, (X.shape[0],) + jac.shape).copy(),
    )


def _constant_features(kernel: Constant, d: int) -> FeatureMap:
    scale = math.sqrt(kernel.variance)
    return FeatureMap(1, lambda X: np.full((X.shape[0], 1), scale), lambda X: np.zeros((X.shape[0], 1, X.shape[1])))


def _sum_features(maps: list[FeatureMap]) -> FeatureMap:
    offsets = np.cumsum([0] + [m.n_features for m in maps])

    def combination(W):
        parts = [m._combination(W[offsets[i] : offsets[i + 1]]) for i, m in enumerate(maps)]
        return _Combination(lambda X: sum(p.values(X) for p in parts), lambda X: sum(p.grad(X) for p in parts))

    return FeatureMap(
        int(offsets[-1]),
        lambda X: np.concatenate([m._values(X) for m in maps], axis=1),
        lambda X: np.concatenate([m._jacobian(X) for m in maps], axis=1),
        combination,
    )


def _product_features(a: FeatureMap, b: FeatureMap) -> FeatureMap:
    def values(X):
        va, vb = a._values(X), b._values(X)
        return (va[:, :, None] * vb[:, None, :]).reshape(X.shape[0], -1)

    def jacobian(X):
        va, vb, ja, jb = a._values(X), b._values(X), a._jacobian(X), b._jacobian(X)
        J = ja[:, :, None, :] * vb[:, None, :, None] + va[:, :, None, None] * jb[:, None, :, :]
        return J.reshape(X.shape[0], -1, X.shape[1])

    def combination(W):
        # φ_(p,q) = a_p b_q, so Σ_pq W_pq,s a_p b_q = Σ_p a_p (Σ_q W_pq,s b_q): one combination
        # of the larger factor per feature of the smaller one (e.g. s · k(x, x'): one)
        W3 = W.reshape(a.n_features, b.n_features, -1)
        if min(a.n_features, b.n_features) > _MAX_PRODUCT_LOOP:
            return _Combination(lambda X: values(X) @ W, lambda X: np.einsum("mfd,fs->smd", jacobian(X), W))
        if a.n_features <= b.n_features:
            small, parts = a, [b._combination(W3[p]) for p in range(a.n_features)]
        else:
            small, parts = b, [a._combination(W3[:, q]) for q in range(b.n_features)]

        def combo_values(X):
            vs = small._values(X)
            return sum(vs[:, p : p + 1] * part.values(X) for p, part in enumerate(parts))

        def combo_grad(X):
            vs, js = small._values(X), small._jacobian(X)  # (m, P), (m, P, d)
            out = 0.0
            for p, part in enumerate(parts):
                out = out + part.values(X).T[:, :, None] * js[None, :, p, :] + vs[None, :, p, None] * part.grad(X)
            return out

        return _Combination(combo_values, combo_grad)

    return FeatureMap(a.n_features * b.n_features, values, jacobian, combination)


def _preference_features(base: FeatureMap, d: int) -> FeatureMap:
    def values(X):
        return base._values(X[:, :d]) - base._values(X[:, d:])

    def jacobian(X):
        return np.concatenate([base._jacobian(X[:, :d]), -base._jacobian(X[:, d:])], axis=2)

    def combination(W):
        inner = base._combination(W)
        return _Combination(
            lambda X: inner.values(X[:, :d]) - inner.values(X[:, d:]),
            lambda X: np.concatenate([inner.grad(X[:, :d]), -inner.grad(X[:, d:])], axis=2),
        )

    return FeatureMap(base.n_features, values, jacobian, combination)


_HILBERT_CACHE: OrderedDict[tuple, list] = OrderedDict()
_HILBERT_LOCK = threading.Lock()


def _cached_hilbert(kernel: Stationary, box: np.ndarray, n_basis: int, margin: float, d: int, check: bool):
    """The Hilbert-space map of ``kernel`` on ``box`` and whether it is too coarse for the
    lengthscale (:func:`_variance_error`, evaluated only when ``check``), built once per
    (kernel class and hyperparameters, columns, box, n_basis, margin): the same model is
    sampled at every Thompson-sampling decision. Both are deterministic functions of the key,
    so the cache changes no result (and no random draw)."""
    key = (
        type(kernel),
        kernel.dims,
        kernel.lengthscales.tobytes(),
        float(kernel.variance),
        box.shape,
        box.tobytes(),
        int(n_basis),
        float(margin),
        int(d),
    )
    with _HILBERT_LOCK:
        entry = _HILBERT_CACHE.get(key)
        if entry is not None:
            _HILBERT_CACHE.move_to_end(key)
    if entry is None:
        entry = [_hilbert_features(kernel, box, n_basis, margin, d), None]
        with _HILBERT_LOCK:
            _HILBERT_CACHE[key] = entry
            while len(_HILBERT_CACHE) > _CACHE_SIZE:
                _HILBERT_CACHE.popitem(last=False)
    if check and entry[1] is None:
        entry[1] = _variance_error(entry[0], kernel, box, d) > HILBERT_TOLERANCE * math.sqrt(2.0 / n_basis)
    return entry[0], bool(entry[1])


def _count_stationary(kernel: Kernel) -> int:
    if isinstance(kernel, Stationary):
        return 1
    if isinstance(kernel, (Sum, Product)):
        return sum(_count_stationary(k) for k in kernel.kernels)
    if isinstance(kernel, Preference):
        return _count_stationary(kernel.base)
    return 0


def _build(kernel: Kernel, box: np.ndarray, n_basis: int, margin: float, d: int, rng=None) -> FeatureMap:
    if isinstance(kernel, Stationary):
        if kernel.n_active > MAX_HILBERT_DIMS:
            return _fourier_features(kernel, n_basis, d, rng)
        hilbert, too_coarse = _cached_hilbert(kernel, box, n_basis, margin, d, check=rng is not None)
        if rng is not None and too_coarse:
            return _fourier_features(kernel, n_basis, d, rng)  # lengthscale too short for the basis
        return hilbert
    if isinstance(kernel, Linear):
        return _linear_features(kernel, d)
    if isinstance(kernel, Constant):
        return _constant_features(kernel, d)
    if isinstance(kernel, Sum):
        return _sum_features([_build(k, box, n_basis, margin, d, rng) for k in kernel.kernels])
    if isinstance(kernel, Product):
        if sum(_count_stationary(k) for k in kernel.kernels) > 1:
            raise InvalidInputError(
                "kernel: a product of two stationary kernels has no finite feature map here; "
                "supported: sums of Linear/Constant/stationary terms and products with at most one stationary factor"
            )
        out = _build(kernel.kernels[0], box, n_basis, margin, d, rng)
        for k in kernel.kernels[1:]:
            out = _product_features(out, _build(k, box, n_basis, margin, d, rng))
        return out
    raise InvalidInputError(f"kernel: no feature map for {type(kernel).__name__}")


def prior_features(
    kernel: Kernel, box, n_basis: int = 4096, *, margin: float = DEFAULT_MARGIN, rng: np.random.Generator | None = None
) -> FeatureMap:
    """Features ``φ`` with ``φ(x)ᵀφ(x') ≈ k(x, x')`` for ``x, x'`` in ``box``.

    kernel: any supported kernel (module docstring); box: (d, 2) bounds of the input columns
    (for a ``Preference`` kernel: of one option, ``d`` = half the duel width);
    n_basis: Hilbert-space features per stationary term; margin: boundary distance beyond the
    box in lengthscales; rng: for random Fourier features, required for a stationary term on
    more than ``MAX_HILBERT_DIMS`` columns, and used instead of a Hilbert-space basis too coarse
    for the lengthscale (module docstring). Returns a :class:`FeatureMap` on ``(m, d)`` inputs
    (``(m, 2d)`` duels for ``Preference``).
    """
    if not isinstance(kernel, Kernel):
        raise InvalidInputError(f"kernel: expected a Kernel, got {type(kernel).__name__}")
    box = check_box("box", box)
    n_basis = _check_n_basis(n_basis)
    margin = float(finite_array("margin", margin))
    if margin <= 0:
        raise InvalidInputError(f"margin: must be > 0, got {margin}")
    d = box.shape[0]
    if isinstance(kernel, Preference):
        return _preference_features(_build(kernel.base, box, n_basis, margin, d, rng), d)
    return _build(kernel, box, n_basis, margin, d, rng)


# ======================================================================================
# Posterior samples
# ======================================================================================


@dataclass(frozen=True, eq=False)
class PosteriorSamples:
    """``S`` posterior sample paths sharing one feature map (see module docstring, Eq. (*)).

    ``weights: (F, S)`` prior feature weights ``w``; ``update: (n, S)`` coefficients ``v``.
    Options have ``d`` columns; for preference models duels have ``2d``.
    Indexing gives one :class:`PosteriorSample`; calling is allowed when ``S == 1``.
    """

    features: FeatureMap
    weights: np.ndarray
    update: np.ndarray
    preference: bool
    input_dim: int
    _cross: object = field(repr=False)
    _cross_grad: object = field(repr=False)

    def __len__(self) -> int:
        return self.weights.shape[1]

    def __getitem__(self, i: int) -> PosteriorSample:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample index {i} out of range for {len(self)} samples")
        return PosteriorSample(self, i % len(self))

    @cached_property
    def _prior_path(self) -> _Combination:
        """``X -> φ(X) w`` for every sample (built once: the dense coefficient tensor)."""
        return self.features._combination(self.weights)

    @cached_property
    def _columns(self) -> dict:
        return {}

    def _column(self, i: int) -> PosteriorSamples:
        """Sample ``i`` alone as a batch of one, built once and reused by every call."""
        if len(self) == 1:
            return self
        sub = self._columns.get(i)
        if sub is None:
            sub = self._columns[i] = PosteriorSamples(
                self.features,
                self.weights[:, i : i + 1],
                self.update[:, i : i + 1],
                self.preference,
                self.input_dim,
                self._cross,
                self._cross_grad,
            )
        return sub

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def _options(self, X) -> np.ndarray:
        return points("X", X, dim=self.input_dim)

    def values(self, X) -> np.ndarray:
        """Latent (utility) values of every sample at options ``X (m, d)`` -> ``(S, m)``."""
        X = self._options(X)
        return (
            np.concatenate([self._values_block(X[i : i + _BLOCK]) for i in range(0, len(X), _BLOCK)], axis=1)
            if len(X)
            else np.zeros((len(self), 0))
        )

    def _values_block(self, X):
        out = self._prior_path.values(X)
        if self.update.shape[0]:
            out = out + self._cross(X) @ self.update
        return out.T

    def values_grad(self, X) -> np.ndarray:
        """Gradients of :meth:`values` w.r.t. each option -> ``(S, m, d)``."""
        X = self._options(X)
        blocks = [self._grad_block(X[i : i + _BLOCK]) for i in range(0, len(X), _BLOCK)]
        return np.concatenate(blocks, axis=1) if blocks else np.zeros((len(self), 0, self.input_dim))

    def _grad_block(self, X):
        out = self._prior_path.grad(X)
        if self.update.shape[0]:
            out = out + np.einsum("mnd,ns->smd", self._cross_grad(X), self.update)
        return out

    def _duels(self, X) -> np.ndarray:
        return points("X", X, dim=2 * self.input_dim)

    def evaluate(self, X) -> np.ndarray:
        """Every sample at ``X`` -> ``(S, m)``: ``f`` at points (m, d), or ``g`` at duels (m, 2d)."""
        if not self.preference:
            return self.values(X)
        X, d = self._duels(X), self.input_dim
        return self.values(X[:, :d]) - self.values(X[:, d:])

    def evaluate_grad(self, X) -> np.ndarray:
        """Gradient of :meth:`evaluate` w.r.t. each row of ``X`` -> ``(S, m, columns of X)``."""
        if not self.preference:
            return self.values_grad(X)
        X, d = self._duels(X), self.input_dim
        return np.concatenate([self.values_grad(X[:, :d]), -self.values_grad(X[:, d:])], axis=2)

    def _only(self):
        if len(self) != 1:
            raise InvalidInputError(f"n_samples: calling needs exactly one sample, this holds {len(self)}; index it")
        return self[0]

    def __call__(self, X) -> np.ndarray:
        return self._only()(X)

    def grad(self, X) -> np.ndarray:
        return self._only().grad(X)


@dataclass(frozen=True, eq=False)
class PosteriorSample:
    """One approximate posterior sample path.

    ``sample(X) -> (m,)``: ``f`` at points ``X (m, d)`` (binary models) or ``g(x, x')`` at
    duels ``(m, 2d)`` (preference models); ``grad(X) -> (m, columns of X)``;
    ``value(X (m, d)) -> (m,)`` and ``value_grad`` give the latent utility ``f`` in both cases.
    """

    batch: PosteriorSamples
    index: int

    def __call__(self, X) -> np.ndarray:
        return self._sub().evaluate(X)[0]

    def grad(self, X) -> np.ndarray:
        return self._sub().evaluate_grad(X)[0]

    def value(self, X) -> np.ndarray:
        return self._sub().values(X)[0]

    def value_grad(self, X) -> np.ndarray:
        return self._sub().values_grad(X)[0]

    def _sub(self) -> PosteriorSamples:
        return self.batch._column(self.index)


def _gaussian_draws(mean: np.ndarray, cov: np.ndarray, n_samples: int, rng) -> np.ndarray:
    """``(n, S)`` draws from ``N(mean, cov)``; ``cov`` may be singular (symmetric square root,
    LAPACK ``syevd``: the routine behind ``numpy.linalg.eigh``, called without numpy's overhead)."""
    cov = 0.5 * (cov + cov.T)
    eigval, eigvec = linalg.eigh(cov, check_finite=False, driver="evd")
    if eigval.size and eigval.min() < -1e-8 * max(1.0, eigval.max()):
        raise NumericalError(
            f"training posterior covariance is not positive semi-definite (eigenvalue {eigval.min():.3g})"
        )
    root = eigvec * np.sqrt(np.clip(eigval, 0.0, None))
    return mean[:, None] + root @ rng.standard_normal((mean.size, n_samples))


def _pinv_psd_solve(K: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``K⁺ R`` (n, S) with ``K⁺`` the pseudo-inverse of a PSD Gram matrix ``K`` (n, n), dropping
    eigenvalues below 1e-10 of the largest (duplicated training inputs make ``K`` singular; the
    dropped directions carry no data). ``K⁺ R = V (Vᵀ R / λ)`` over the kept eigenpairs (LAPACK
    ``syevd``; the product does not depend on the eigenvectors' signs), without forming ``K⁺``."""
    sym = 0.5 * (K + K.T)
    eigval, eigvec = linalg.eigh(sym, overwrite_a=True, check_finite=False, driver="evd")
    keep = eigval > 1e-10 * max(eigval.max(initial=0.0), 1e-300)
    V = eigvec[:, keep]
    return V @ ((V.T @ R) / eigval[keep][:, None])


def sample_posterior_functions(model, box, n_samples: int, rng, n_basis: int = 4096, *, margin: float = DEFAULT_MARGIN):
    """Draw ``n_samples`` approximate posterior sample paths of ``model``'s latent function.

    model: a ``ProbitGP`` (attributes ``kernel``, ``X``, ``training_posterior()``; any object
    with these works, e.g. an exact Gaussian model) or a ``PreferenceGP`` (``base_kernel``,
    ``X`` = duels); box: (d, 2) bounds of the inputs (of one
    option for preference models); rng: numpy Generator; n_basis: Hilbert-space features.
    Returns :class:`PosteriorSamples` (``S`` paths; index it for a :class:`PosteriorSample`,
    or call it directly when ``n_samples == 1``: ``f(X) -> (m,)``, ``f.grad(X) -> (m, d)``).
    Formula: module docstring, Eq. (*) (Fauvel & Chalk (contextual BO), supp. G, Eq. S43).
    """
    rng = check_rng(rng)
    n_samples = check_int("n_samples", n_samples, lo=1, whole_float=True)
    preference = hasattr(model, "base_kernel")
    kernel = model.base_kernel if preference else getattr(model, "kernel", None)
    if not isinstance(kernel, Kernel) or not hasattr(model, "training_posterior"):
        raise InvalidInputError(f"model: expected a ProbitGP or PreferenceGP, got {type(model).__name__}")
    box = check_box("box", box)
    d = box.shape[0]
    features = prior_features(kernel, box, n_basis, margin=margin, rng=rng)
    weights = rng.standard_normal((features.n_features, n_samples))

    X = np.asarray(model.X, dtype=float)
    n = X.shape[0]
    if n and X.shape[1] != (2 * d if preference else d):
        raise InvalidInputError(
            f"box: {d} rows do not match the model's inputs with {X.shape[1]} columns"
            + (" (duels are [x, x'], the box bounds one option)" if preference else "")
        )
    if preference:
        A, B = (X[:, :d], X[:, d:]) if n else (np.zeros((0, d)), np.zeros((0, d)))

        def cross(Xs):
            return kernel(Xs, A) - kernel(Xs, B)

        def cross_grad(Xs):
            return kernel.grad_inputs(Xs, A) - kernel.grad_inputs(Xs, B)

        train_kernel = Preference(kernel)(X) if n else None

        def prior_at_train(W):
            path = features._combination(W)
            return path.values(A) - path.values(B)

    else:

        def cross(Xs):
            return kernel(Xs, X)

        def cross_grad(Xs):
            return kernel.grad_inputs(Xs, X)

        train_kernel = kernel(X) if n else None

        def prior_at_train(W):
            return features._combination(W).values(X)

    if n:
        mean, cov = model.training_posterior()
        latent = _gaussian_draws(np.asarray(mean, float), np.asarray(cov, float), n_samples, rng)
        update = _pinv_psd_solve(train_kernel, latent - prior_at_train(weights))
    else:
        update = np.zeros((0, n_samples))
    for arr in (weights, update):
        arr.setflags(write=False)
    return PosteriorSamples(features, weights, update, preference, d, cross, cross_grad)
