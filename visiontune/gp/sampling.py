"""Approximate posterior sample paths of a probit GP, for Thompson sampling.

A sample is a whole function that can be evaluated (and differentiated) anywhere, built as

    f(·) = φ(·)ᵀ w  +  c(·)ᵀ v,     v = K⁻¹ (f_X - Φ_X w)                       (*)

(decoupled bases / pathwise conditioning, seed 002 supp. G Eq. S43; seed 000 supp. D;
Wilson et al. 2020): ``φ`` are features whose inner product approximates the prior kernel,
``w ~ N(0, I)`` gives a prior path, ``f_X ~ N(m, C)`` is drawn from the Gaussian
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
  product. This covers the paper kernels ``θ s s' + k(x, x')`` (seed 002 Eq. 15) and
  ``s s' k(x, x')`` (benchmarks);
- ``Preference(base)``: ``φ_pref(x, x') = φ(x) - φ(x')`` (seed 000 supp. D).

For a :class:`~visiontune.gp.model.PreferenceGP` the sample is of the utility ``f`` (options,
``(m, d)``: :meth:`PosteriorSample.value`) with ``c_i(x) = k(x, a_i) - k(x, b_i)``; calling
the sample on duels ``(m, 2d)`` gives ``g(x, x') = f(x) - f(x')``, antisymmetric by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.stats import qmc

from visiontune._validate import finite_array, points
from visiontune.errors import InvalidInputError, NumericalError
from visiontune.gp.kernels import Constant, Kernel, Linear, Preference, Product, Stationary, Sum

__all__ = [
    "FeatureMap",
    "prior_features",
    "PosteriorSample",
    "PosteriorSamples",
    "SampleMaxima",
    "sample_posterior_functions",
    "sample_maximiser",
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


# ======================================================================================
# Feature maps: k(x, x') ≈ φ(x)ᵀ φ(x')
# ======================================================================================


@dataclass(frozen=True, eq=False)
class FeatureMap:
    """Features ``φ`` with ``k(x, x') ≈ φ(x)ᵀ φ(x')`` on the inputs' columns.

    ``values(X (m, d)) -> (m, F)``; ``jacobian(X (m, d)) -> (m, F, d)``.
    """

    n_features: int
    _values: object = field(repr=False)
    _jacobian: object = field(repr=False)

    def values(self, X) -> np.ndarray:
        return self._values(points("X", X))

    def jacobian(self, X) -> np.ndarray:
        return self._jacobian(points("X", X))


def _check_box(box, d: int | None = None) -> np.ndarray:
    box = finite_array("box", box)
    if box.ndim != 2 or box.shape[1] != 2:
        raise InvalidInputError(f"box: expected a (d, 2) array of [lower, upper] rows, got shape {box.shape}")
    if d is not None and box.shape[0] != d:
        raise InvalidInputError(f"box: expected {d} rows (one per input column), got {box.shape[0]}")
    if np.any(box[:, 0] > box[:, 1]):
        i = int(np.argmax(box[:, 0] > box[:, 1]))
        raise InvalidInputError(f"box: lower bound above upper bound in row {i}: {box[i].tolist()}")
    return box


def _positive_int(name: str, value) -> int:
    try:
        ok = not isinstance(value, bool) and int(value) == value and value >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidInputError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def _check_n_basis(n_basis) -> int:
    return _positive_int("n_basis", n_basis)


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

    # sin/cos are evaluated once per distinct frequency of each column, then gathered
    base = [np.pi * np.arange(1, J[:, i].max() + 1) / (2.0 * L[i]) for i in range(len(dims))]

    def parts(X):
        Z = X[:, dims] - centre + L  # (m, D) shifted to [0, 2L]
        s, c = [], []
        for i in range(len(dims)):
            arg = Z[:, i : i + 1] * base[i]  # (m, distinct j_i)
            s.append(np.sin(arg)[:, J[:, i] - 1])
            c.append(np.cos(arg)[:, J[:, i] - 1])
        return s, c  # lists over columns of (m, M)

    def values(X):
        s, _ = parts(X)
        return norm * weights * np.prod(s, axis=0)

    def jacobian(X):
        s, c = parts(X)
        out = np.zeros((X.shape[0], J.shape[0], X.shape[1]))
        for i, col in enumerate(dims):
            others = np.prod([s[k] for k in range(len(dims)) if k != i], axis=0) if len(dims) > 1 else 1.0
            out[:, :, col] = norm * weights * freq[:, i] * c[i] * others
        return out

    return FeatureMap(J.shape[0], values, jacobian)


def _fourier_features(kernel: Stationary, n_basis: int, d: int, rng) -> FeatureMap:
    """Random Fourier features ``φ_j(x) = σ √(2/M) cos(ω_jᵀ x + b_j)``, ``ω_j ~ S/((2π)^D σ²)``,
    ``b_j ~ U[0, 2π)`` (Rahimi & Recht 2007): used for more than 3 active columns, where the
    Hilbert-space basis would need far more than ``n_basis`` functions."""
    if rng is None:
        raise InvalidInputError(
            f"rng: a stationary kernel on {kernel.n_active} > {MAX_HILBERT_DIMS} columns uses random Fourier features; pass rng"
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

    return FeatureMap(n_basis, values, jacobian)


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
    return FeatureMap(
        sum(m.n_features for m in maps),
        lambda X: np.concatenate([m._values(X) for m in maps], axis=1),
        lambda X: np.concatenate([m._jacobian(X) for m in maps], axis=1),
    )


def _product_features(a: FeatureMap, b: FeatureMap) -> FeatureMap:
    def values(X):
        va, vb = a._values(X), b._values(X)
        return (va[:, :, None] * vb[:, None, :]).reshape(X.shape[0], -1)

    def jacobian(X):
        va, vb, ja, jb = a._values(X), b._values(X), a._jacobian(X), b._jacobian(X)
        J = ja[:, :, None, :] * vb[:, None, :, None] + va[:, :, None, None] * jb[:, None, :, :]
        return J.reshape(X.shape[0], -1, X.shape[1])

    return FeatureMap(a.n_features * b.n_features, values, jacobian)


def _preference_features(base: FeatureMap, d: int) -> FeatureMap:
    def values(X):
        return base._values(X[:, :d]) - base._values(X[:, d:])

    def jacobian(X):
        return np.concatenate([base._jacobian(X[:, :d]), -base._jacobian(X[:, d:])], axis=2)

    return FeatureMap(base.n_features, values, jacobian)


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
        hilbert = _hilbert_features(kernel, box, n_basis, margin, d)
        if rng is not None and _variance_error(hilbert, kernel, box, d) > HILBERT_TOLERANCE * math.sqrt(2.0 / n_basis):
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
    box = _check_box(box)
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

    def __getitem__(self, i: int) -> "PosteriorSample":
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample index {i} out of range for {len(self)} samples")
        return PosteriorSample(self, i % len(self))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def _options(self, X) -> np.ndarray:
        return points("X", X, dim=self.input_dim)

    def values(self, X) -> np.ndarray:
        """Latent (utility) values of every sample at options ``X (m, d)`` -> ``(S, m)``."""
        X = self._options(X)
        return np.concatenate([self._values_block(X[i : i + _BLOCK]) for i in range(0, len(X), _BLOCK)], axis=1) \
            if len(X) else np.zeros((len(self), 0))

    def _values_block(self, X):
        out = self.features._values(X) @ self.weights
        if self.update.shape[0]:
            out = out + self._cross(X) @ self.update
        return out.T

    def values_grad(self, X) -> np.ndarray:
        """Gradients of :meth:`values` w.r.t. each option -> ``(S, m, d)``."""
        X = self._options(X)
        blocks = [self._grad_block(X[i : i + _BLOCK]) for i in range(0, len(X), _BLOCK)]
        return np.concatenate(blocks, axis=1) if blocks else np.zeros((len(self), 0, self.input_dim))

    def _grad_block(self, X):
        out = np.einsum("mfd,fs->smd", self.features._jacobian(X), self.weights)
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
        b, i = self.batch, self.index
        return PosteriorSamples(
            b.features, b.weights[:, i : i + 1], b.update[:, i : i + 1], b.preference, b.input_dim, b._cross, b._cross_grad
        )


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _gaussian_draws(mean: np.ndarray, cov: np.ndarray, n_samples: int, rng) -> np.ndarray:
    """``(n, S)`` draws from ``N(mean, cov)``; ``cov`` may be singular (symmetric square root)."""
    cov = 0.5 * (cov + cov.T)
    eigval, eigvec = np.linalg.eigh(cov)
    if eigval.size and eigval.min() < -1e-8 * max(1.0, eigval.max()):
        raise NumericalError(f"training posterior covariance is not positive semi-definite (eigenvalue {eigval.min():.3g})")
    root = eigvec * np.sqrt(np.clip(eigval, 0.0, None))
    return mean[:, None] + root @ rng.standard_normal((mean.size, n_samples))


def _pinv_psd(K: np.ndarray) -> np.ndarray:
    """Pseudo-inverse of a PSD Gram matrix, dropping eigenvalues below 1e-10 of the largest
    (duplicated training inputs make ``K`` singular; the dropped directions carry no data)."""
    eigval, eigvec = np.linalg.eigh(0.5 * (K + K.T))
    keep = eigval > 1e-10 * max(eigval.max(initial=0.0), 1e-300)
    return (eigvec[:, keep] / eigval[keep]) @ eigvec[:, keep].T


def sample_posterior_functions(model, box, n_samples: int, rng, n_basis: int = 4096, *, margin: float = DEFAULT_MARGIN):
    """Draw ``n_samples`` approximate posterior sample paths of ``model``'s latent function.

    model: a ``ProbitGP`` (attributes ``kernel``, ``X``, ``training_posterior()``; any object
    with these works, e.g. an exact Gaussian model) or a ``PreferenceGP`` (``base_kernel``,
    ``X`` = duels); box: (d, 2) bounds of the inputs (of one
    option for preference models); rng: numpy Generator; n_basis: Hilbert-space features.
    Returns :class:`PosteriorSamples` (``S`` paths; index it for a :class:`PosteriorSample`,
    or call it directly when ``n_samples == 1``: ``f(X) -> (m,)``, ``f.grad(X) -> (m, d)``).
    Formula: module docstring, Eq. (*) (seed 002 supp. G, Eq. S43).
    """
    rng = _check_rng(rng)
    n_samples = _positive_int("n_samples", n_samples)
    preference = hasattr(model, "base_kernel")
    kernel = model.base_kernel if preference else getattr(model, "kernel", None)
    if not isinstance(kernel, Kernel) or not hasattr(model, "training_posterior"):
        raise InvalidInputError(f"model: expected a ProbitGP or PreferenceGP, got {type(model).__name__}")
    box = _check_box(box)
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

        train_kernel, prior_at_train = (Preference(kernel)(X) if n else None), (
            lambda W: (features._values(A) - features._values(B)) @ W
        )
    else:

        def cross(Xs):
            return kernel(Xs, X)

        def cross_grad(Xs):
            return kernel.grad_inputs(Xs, X)

        train_kernel, prior_at_train = (kernel(X) if n else None), (lambda W: features._values(X) @ W)

    if n:
        mean, cov = model.training_posterior()
        latent = _gaussian_draws(np.asarray(mean, float), np.asarray(cov, float), n_samples, rng)
        update = _pinv_psd(train_kernel) @ (latent - prior_at_train(weights))
    else:
        update = np.zeros((0, n_samples))
    for arr in (weights, update):
        arr.setflags(write=False)
    return PosteriorSamples(features, weights, update, preference, d, cross, cross_grad)


# ======================================================================================
# Maximising a sample
# ======================================================================================


@dataclass(frozen=True)
class SampleMaxima:
    """Maximisers of posterior samples: ``x: (S, d)`` options, ``value: (S,)`` sample maxima."""

    x: np.ndarray
    value: np.ndarray


def _maximise_one(fun, grad, lo, hi, free, x_fixed, candidates, n_starts, rng):
    """Multistart L-BFGS-B over the free columns (toolbox recipe: starts drawn from Halton
    candidates with probability ∝ exp(z-score of the value))."""
    vals = fun(candidates)
    z = (vals - vals.mean()) / (vals.std() + 1e-300)
    prob = np.exp(z - z.max())
    prob /= prob.sum()
    starts = rng.choice(candidates.shape[0], size=min(n_starts, candidates.shape[0]), replace=False, p=prob)
    best_i = int(np.argmax(vals))
    best_x, best_v = candidates[best_i].copy(), float(vals[best_i])

    def full(u):
        x = x_fixed.copy()
        x[free] = u
        return x[None, :]

    def objective(u):
        x = full(u)
        return -float(fun(x)[0]), -grad(x)[0, free]

    bounds = list(zip(lo[free], hi[free]))
    for s in starts:
        res = optimize.minimize(objective, candidates[s, free], jac=True, method="L-BFGS-B", bounds=bounds)
        if np.all(np.isfinite(res.x)) and -res.fun > best_v:
            best_x, best_v = full(np.clip(res.x, lo[free], hi[free]))[0], float(-res.fun)
    return best_x, best_v


def sample_maximiser(
    model,
    box,
    rng,
    *,
    n_samples: int = 1,
    fixed: dict | None = None,
    n_basis: int = 4096,
    n_candidates: int = 500,
    n_starts: int = 10,
    margin: float = DEFAULT_MARGIN,
) -> SampleMaxima:
    """Thompson sampling: draw ``n_samples`` posterior paths and return each one's maximiser.

    The maximised function is the latent ``f`` (binary models) or the utility ``f`` (preference
    models, whose duel sample is ``g(x, x') = f(x) - f(x')``). ``fixed`` maps a column index to
    a value held fixed (the reference context, e.g. ``{0: 0.5}`` for ``s0``); the other columns
    range over ``box`` (d, 2). Search: ``n_candidates`` scrambled-Halton points, then bounded
    L-BFGS-B from ``n_starts`` of them (DESIGN.md, details from the authors' toolboxes).
    """
    rng = _check_rng(rng)
    box = _check_box(box)
    d = box.shape[0]
    n_candidates, n_starts = _positive_int("n_candidates", n_candidates), _positive_int("n_starts", n_starts)
    lo, hi = box[:, 0].copy(), box[:, 1].copy()
    x_fixed = (lo + hi) / 2.0
    for col, value in (fixed or {}).items():
        if not (isinstance(col, (int, np.integer)) and 0 <= col < d):
            raise InvalidInputError(f"fixed: column {col!r} is not an input column 0..{d - 1}")
        lo[col] = hi[col] = x_fixed[col] = float(finite_array("fixed", value))
    free = np.flatnonzero(hi > lo)
    samples = sample_posterior_functions(model, np.column_stack([lo, hi]), n_samples, rng, n_basis, margin=margin)
    xs, vals = np.empty((len(samples), d)), np.empty(len(samples))
    for i, sample in enumerate(samples):
        if free.size:
            halton = qmc.Halton(d=free.size, scramble=True, seed=rng).random(int(n_candidates))
            cand = np.tile(x_fixed, (halton.shape[0], 1))
            cand[:, free] = lo[free] + halton * (hi[free] - lo[free])
            xs[i], vals[i] = _maximise_one(sample.value, sample.value_grad, lo, hi, free, x_fixed, cand, int(n_starts), rng)
        else:
            xs[i], vals[i] = x_fixed, float(sample.value(x_fixed[None, :])[0])
    return SampleMaxima(xs, vals)
