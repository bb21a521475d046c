"""Covariance functions for the latent GP, with analytic gradients.

Every kernel is immutable. Hyperparameters are positive and exposed in log space
(``params``, ``bounds``, ``with_params``, ``grad_params``) so that an optimiser works on an
unconstrained scale. A hyperparameter can be frozen (``fixed=("variance",)``): it is then
left out of ``params``/``bounds``/``grad_params``.

Shapes: inputs ``X: (n, d)`` arrays; ``K = k(X1, X2): (n1, n2)``;
``grad_params(X): (p, n, n)``; ``grad_inputs(X1, X2): (n1, n2, d)`` is the derivative of
``k(X1[i], X2[j])`` with respect to ``X1[i]`` (all ``d`` columns, zero where inactive).

References
----------
- Rasmussen & Williams (2006), *Gaussian Processes for Machine Learning*, Eqs. 4.9, 4.14-4.17
  (squared exponential, Matérn 3/2 and 5/2, their spectral densities).
- Fauvel & Chalk (binary/preferential BO), Eq. 6 (preference kernel); Fauvel & Chalk (contextual BO), Eq. 15 (refraction
  kernel ``theta s s' + k_SE(x, x')``).
"""

from __future__ import annotations

import abc
import math

import numpy as np
from scipy.linalg import blas
from scipy.spatial.distance import cdist
from scipy.special import gammaln

from visiontune._validate import check_int, check_rng, finite_array, points, positive
from visiontune.errors import InvalidInputError

__all__ = [
    "Kernel",
    "Stationary",
    "SquaredExponential",
    "Matern32",
    "Matern52",
    "Linear",
    "Constant",
    "Sum",
    "Product",
    "Preference",
    "refraction_kernel",
    "contextual_benchmark_kernel",
]

#: Log-space bounds of every hyperparameter kind (natural scale: lengthscale 1e-3..1e3,
#: variance 1e-4..1e4).
LENGTHSCALE_BOUNDS = (math.log(1e-3), math.log(1e3))
VARIANCE_BOUNDS = (math.log(1e-4), math.log(1e4))


class Kernel(abc.ABC):
    """Abstract, immutable covariance function ``k(x, x')``.

    Subclasses implement ``_cross``, ``_paired``, ``_grad_params_cross``, ``_grad_inputs``,
    ``params``/``param_names``/``bounds``/``with_params`` and ``_min_columns``.
    """

    __slots__ = ()

    def __setattr__(self, name, value):  # immutability: attributes are set once in __init__
        raise AttributeError(f"{type(self).__name__} is immutable; use with_params(...)")

    def __getstate__(self):
        names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())]
        return {n: getattr(self, n) for n in names}

    def __setstate__(self, state):  # pickle / deepcopy (joblib sweeps ship kernels to workers)
        if isinstance(state.get("_hyper"), dict):
            state = dict(state, _hyper={k: _readonly(v) for k, v in state["_hyper"].items()})
        self._init(**state)

    def _init(self, **attrs):
        for key, value in attrs.items():
            if isinstance(value, np.ndarray):
                value = value.copy()
                value.setflags(write=False)
            object.__setattr__(self, key, value)

    # ---- hyperparameters -------------------------------------------------------------
    @property
    @abc.abstractmethod
    def params(self) -> np.ndarray:
        """(p,) log-hyperparameters (free ones only)."""

    @property
    @abc.abstractmethod
    def param_names(self) -> list[str]:
        """Names of the ``p`` free hyperparameters, in the order of ``params``."""

    @property
    @abc.abstractmethod
    def bounds(self) -> np.ndarray:
        """(p, 2) log-space lower/upper bounds of ``params``."""

    @abc.abstractmethod
    def with_params(self, theta) -> Kernel:
        """A new kernel with log-hyperparameters ``theta`` (p,)."""

    @property
    def n_params(self) -> int:
        return len(self.param_names)

    def _check_theta(self, theta) -> np.ndarray:
        theta = finite_array("theta", theta).reshape(-1)
        if theta.shape[0] != self.n_params:
            raise InvalidInputError(f"theta: expected {self.n_params} log-hyperparameters, got {theta.shape[0]}")
        return theta

    # ---- evaluation ------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def _min_columns(self) -> int:
        """Smallest number of input columns this kernel accepts."""

    def _exact_columns(self) -> int | None:
        """Number of input columns required exactly, or None if any >= _min_columns."""
        return None

    def _check(self, name: str, X) -> np.ndarray:
        X = points(name, X)
        exact = self._exact_columns()
        if exact is not None and X.shape[1] != exact:
            raise InvalidInputError(f"{name}: expected points with {exact} columns, got {X.shape[1]}")
        if X.shape[1] < self._min_columns:
            raise InvalidInputError(
                f"{name}: expected points with at least {self._min_columns} columns, got {X.shape[1]}"
            )
        return X

    def _check_pair(self, X1, X2):
        X1 = self._check("X1", X1)
        X2 = X1 if X2 is None else self._check("X2", X2)
        if X1.shape[1] != X2.shape[1]:
            raise InvalidInputError(f"X2: expected {X1.shape[1]} columns like X1, got {X2.shape[1]}")
        return X1, X2

    def __call__(self, X1, X2=None) -> np.ndarray:
        """Gram matrix ``K[i, j] = k(X1[i], X2[j])``: (n1, n2); ``X2=None`` means ``X1``."""
        X1, X2 = self._check_pair(X1, X2)
        return self._cross(X1, X2)

    def diag(self, X) -> np.ndarray:
        """``k(X[i], X[i])``: (n,)."""
        X = self._check("X", X)
        return self._paired(X, X)

    def grad_params(self, X) -> np.ndarray:
        """(p, n, n): derivative of ``K(X, X)`` with respect to each log-hyperparameter."""
        X = self._check("X", X)
        return self._grad_params_cross(X, X)

    def grad_inputs(self, X1, X2) -> np.ndarray:
        """(n1, n2, d): derivative of ``k(X1[i], X2[j])`` with respect to ``X1[i]``."""
        X1, X2 = self._check_pair(X1, X2)
        return self._grad_inputs(X1, X2)

    @abc.abstractmethod
    def _cross(self, X1, X2) -> np.ndarray:
        """``k(X1, X2)`` (n1, n2) on validated inputs: a new array, which the caller may modify."""

    #: True when :meth:`_cross_add` adds in place without an (n1, n2) temporary.
    _ADDS_IN_PLACE = False

    def _cross_add(self, X1, X2, out: np.ndarray) -> np.ndarray:
        """``out += k(X1, X2)`` (out: (n1, n2) float64, modified and returned)."""
        out += self._cross(X1, X2)
        return out

    @abc.abstractmethod
    def _paired(self, X1, X2) -> np.ndarray:
        """``k(X1[i], X2[i])``: (n,) for two equally long point sets."""

    @abc.abstractmethod
    def _grad_params_cross(self, X1, X2) -> np.ndarray:
        """(p, n1, n2) derivative of ``k(X1, X2)`` with respect to the log-hyperparameters."""

    @abc.abstractmethod
    def _grad_inputs(self, X1, X2) -> np.ndarray: ...

    # ---- algebra -----------------------------------------------------------------------
    def __add__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return Sum(self, other)

    def __mul__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return Product(self, other)


# ======================================================================================
# Base kernels
# ======================================================================================


def _check_dims(dims) -> tuple[int, ...] | None:
    if dims is None:
        return None
    try:
        dims = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise InvalidInputError(f"dims: expected a tuple of column indices, got {dims!r}") from None
    if not dims or min(dims) < 0 or len(set(dims)) != len(dims):
        raise InvalidInputError(f"dims: expected distinct non-negative column indices, got {dims!r}")
    return dims


def _readonly(value):
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.setflags(write=False)
    return value


class _Base(Kernel):
    """A kernel with named positive hyperparameters acting on columns ``dims``.

    ``_hyper``: dict name -> natural-scale value (float or 1-D array); ``_fixed``: frozen names.
    """

    __slots__ = ("dims", "_hyper", "_fixed")
    _BOUNDS: dict[str, tuple[float, float]] = {}

    def _setup(self, hyper: dict, dims, fixed):
        fixed = tuple(fixed or ())
        unknown = [f for f in fixed if f not in hyper]
        if unknown:
            raise InvalidInputError(f"fixed: unknown hyperparameter(s) {unknown}; known: {list(hyper)}")
        hyper = {k: _readonly(v) for k, v in hyper.items()}
        self._init(dims=_check_dims(dims), _hyper=hyper, _fixed=fixed)

    def _active(self, X) -> np.ndarray:
        return X if self.dims is None else X[:, self.dims]

    @property
    def _min_columns(self) -> int:
        return 0 if self.dims is None else max(self.dims) + 1

    def _scatter(self, G_active: np.ndarray, d: int) -> np.ndarray:
        """Place a (..., d_active) gradient into the full (..., d) input columns."""
        if self.dims is None:
            return G_active
        out = np.zeros(G_active.shape[:-1] + (d,))
        out[..., list(self.dims)] = G_active
        return out

    def _free(self):
        return [name for name in self._hyper if name not in self._fixed]

    @property
    def params(self) -> np.ndarray:
        vals = [np.log(np.atleast_1d(self._hyper[n])) for n in self._free()]
        return np.concatenate(vals) if vals else np.zeros(0)

    @property
    def param_names(self) -> list[str]:
        names = []
        for n in self._free():
            v = self._hyper[n]
            names += [f"{n}[{i}]" for i in range(v.size)] if isinstance(v, np.ndarray) else [n]
        return names

    @property
    def bounds(self) -> np.ndarray:
        rows = []
        for n in self._free():
            rows += [self._BOUNDS[n]] * np.size(self._hyper[n])
        return np.array(rows, dtype=float).reshape(-1, 2)

    def with_params(self, theta) -> _Base:
        theta = self._check_theta(theta)
        hyper, i = dict(self._hyper), 0
        for n in self._free():
            size = np.size(self._hyper[n])
            val = np.exp(theta[i : i + size])
            hyper[n] = val if isinstance(self._hyper[n], np.ndarray) else float(val[0])
            i += size
        return self._rebuild(hyper)

    @abc.abstractmethod
    def _rebuild(self, hyper: dict) -> _Base: ...

    def _stack_grads(self, grads: dict) -> np.ndarray:
        """Stack per-hyperparameter gradients (each (k, n1, n2)) of the free ones."""
        parts = [grads[n] for n in self._free()]
        return np.concatenate(parts, axis=0) if parts else np.zeros((0,) + grads[next(iter(grads))].shape[1:])

    def __repr__(self):
        inner = ", ".join(
            f"{k}={np.round(v, 4).tolist() if isinstance(v, np.ndarray) else round(v, 4)}"
            for k, v in self._hyper.items()
        )
        extra = f", dims={self.dims}" if self.dims is not None else ""
        extra += f", fixed={self._fixed}" if self._fixed else ""
        return f"{type(self).__name__}({inner}{extra})"


class Stationary(_Base):
    """Stationary kernel ``k(r²)`` of the ARD-scaled squared distance
    ``r² = Σ_i (x_i - x'_i)² / ℓ_i²`` on the active columns.

    ``lengthscales``: one per active column (ARD), in input units; with ``dims`` given a single
    value is shared by all active columns; with ``dims=None`` the number of lengthscales is
    the number of input columns. ``variance``: ``σ² = k(x, x)``. ``fixed``: names of frozen
    hyperparameters (``"lengthscales"``, ``"variance"``).

    Subclasses give ``_k(r2)`` and ``_dk_dr2(r2)`` (per unit variance) and ``_spectral_unit``.
    """

    __slots__ = ()
    _BOUNDS = {"lengthscales": LENGTHSCALE_BOUNDS, "variance": VARIANCE_BOUNDS}

    def __init__(self, lengthscales, variance=1.0, dims=None, *, fixed=()):
        ls = positive("lengthscales", np.atleast_1d(np.asarray(lengthscales, dtype=float)))
        if ls.ndim != 1:
            raise InvalidInputError(f"lengthscales: expected a 1-D array, got shape {ls.shape}")
        var = float(positive("variance", variance).reshape(-1)[0]) if np.size(variance) == 1 else None
        if var is None:
            raise InvalidInputError(f"variance: expected one number, got {np.shape(variance)}")
        self._setup({"lengthscales": ls, "variance": var}, dims, fixed)
        if self.dims is not None and len(self.dims) != ls.size and ls.size != 1:
            raise InvalidInputError(
                f"lengthscales: expected 1 or {len(self.dims)} values (one per active column), got {ls.size}"
            )
        if self.dims is not None and ls.size == 1 and len(self.dims) > 1:
            object.__setattr__(
                self, "_hyper", {"lengthscales": _readonly(np.repeat(ls, len(self.dims))), "variance": var}
            )

    def _rebuild(self, hyper):
        return type(self)(hyper["lengthscales"], hyper["variance"], self.dims, fixed=self._fixed)

    @property
    def lengthscales(self) -> np.ndarray:
        """(d_active,) lengthscales, in input units."""
        return self._hyper["lengthscales"]

    @property
    def variance(self) -> float:
        """Prior variance ``σ² = k(x, x)``."""
        return self._hyper["variance"]

    @property
    def n_active(self) -> int:
        return self.lengthscales.size

    def _exact_columns(self):
        return self.n_active if self.dims is None else None

    def _scaled(self, X) -> np.ndarray:
        """Active columns divided by their lengthscales: (n, d_active), C-contiguous."""
        return np.ascontiguousarray(self._active(X) / self.lengthscales)

    def _sq_dist(self, X1, X2) -> np.ndarray:
        """ARD-scaled squared distances ``r²[i, j] = Σ_k (x1_ik - x2_jk)² / ℓ_k²``: (n1, n2).

        Computed as the sum of squared differences of pre-scaled inputs
        (``scipy.spatial.distance.cdist(..., "sqeuclidean")``): no (n1, n2, d) temporary, no
        cancellation (unlike ``|a|² + |b|² - 2a·b``), exactly 0 on the diagonal of ``k(X, X)``
        and exactly symmetric.
        """
        A = self._scaled(X1)
        B = A if X2 is X1 else self._scaled(X2)
        if A.shape[0] == 0 or B.shape[0] == 0:
            return np.zeros((A.shape[0], B.shape[0]))
        return cdist(A, B, "sqeuclidean")

    def _cross(self, X1, X2):
        K = self._k_inplace(self._sq_dist(X1, X2))
        K *= self.variance
        return K

    def _k_inplace(self, r2: np.ndarray) -> np.ndarray:
        """``_k(r2)``, allowed to overwrite ``r2`` (fewer large temporaries)."""
        return self._k(r2)

    def _paired(self, X1, X2):
        D = (self._active(X1) - self._active(X2)) / self.lengthscales
        return self.variance * self._k(np.sum(D * D, axis=1))

    def _column_diffs(self, X1, X2):
        """Per active column ``i``: ``(x1_i - x2_i) / ℓ_i`` as an (n1, n2) array (a generator;
        one column at a time, so no (n1, n2, d) temporary)."""
        A1, A2 = self._active(X1), self._active(X2)
        for i, ell in enumerate(self.lengthscales):
            yield i, np.subtract.outer(A1[:, i], A2[:, i]) / ell

    def _grad_params_cross(self, X1, X2):
        r2 = self._sq_dist(X1, X2)
        # d k / d log ℓ_i = dk/dr² · (-2 D_i²);   d k / d log σ² = k
        coef = -2.0 * self.variance * self._dk_dr2(r2)
        g_ls = np.empty((self.n_active,) + r2.shape)
        for i, D in self._column_diffs(X1, X2):
            np.multiply(coef, D * D, out=g_ls[i])
        g_var = (self.variance * self._k(r2))[None]
        return self._stack_grads({"lengthscales": g_ls, "variance": g_var})

    def _grad_inputs(self, X1, X2):
        r2 = self._sq_dist(X1, X2)
        # d k / d x_i = dk/dr² · 2 (x_i - x'_i) / ℓ_i²
        coef = 2.0 * self.variance * self._dk_dr2(r2)
        cols = range(self.n_active) if self.dims is None else self.dims
        out = np.zeros(r2.shape + (X1.shape[1],))
        for (i, D), col in zip(self._column_diffs(X1, X2), cols):
            out[:, :, col] = coef * D / self.lengthscales[i]
        return out

    def spectral_density(self, omega) -> np.ndarray:
        """Spectral density ``S(ω)`` with ``k(r) = (2π)^{-d} ∫ S(ω) e^{iω·r} dω``.

        ``omega: (m, d_active)`` angular frequencies (radians per input unit) -> (m,).
        ARD form: ``S(ω) = σ² ∏ℓ_i · S₁(ℓ∘ω)`` with ``S₁`` the unit-lengthscale density
        (Rasmussen & Williams Eqs. 4.15 and 4.20, in angular frequency).
        """
        omega = finite_array("omega", omega)
        if omega.ndim == 1 and self.n_active == 1:
            omega = omega[:, None]
        if omega.ndim != 2 or omega.shape[1] != self.n_active:
            raise InvalidInputError(f"omega: expected an (m, {self.n_active}) array, got shape {omega.shape}")
        w2 = np.sum((omega * self.lengthscales) ** 2, axis=1)
        return self.variance * np.prod(self.lengthscales) * self._spectral_unit(w2, self.n_active)

    def sample_frequencies(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, d_active)`` angular frequencies drawn from ``S(ω) / ((2π)^d σ²)``, the
        normalised spectral density (Bochner; random Fourier features, Rahimi & Recht 2007)."""
        return self._unit_frequencies(int(n), check_rng(rng)) / self.lengthscales

    @abc.abstractmethod
    def _unit_frequencies(self, n, rng): ...

    @abc.abstractmethod
    def _k(self, r2): ...

    @abc.abstractmethod
    def _dk_dr2(self, r2): ...

    @abc.abstractmethod
    def _spectral_unit(self, w2, d): ...


class SquaredExponential(Stationary):
    """``k = σ² exp(-r²/2)`` (R&W Eq. 4.9, ARD).

    Spectral density ``S(ω) = σ² (2π)^{d/2} ∏ℓ exp(-½ Σ ℓ_i² ω_i²)``.
    """

    __slots__ = ()

    def _k(self, r2):
        return np.exp(-0.5 * r2)

    def _k_inplace(self, r2):
        r2 *= -0.5
        return np.exp(r2, out=r2)

    def _dk_dr2(self, r2):
        return -0.5 * np.exp(-0.5 * r2)

    def _spectral_unit(self, w2, d):
        return (2.0 * np.pi) ** (d / 2.0) * np.exp(-0.5 * w2)

    def _unit_frequencies(self, n, rng):
        return rng.standard_normal((n, self.n_active))  # S ∝ N(0, I) at unit lengthscale


class _Matern(Stationary):
    """Matérn ν (half-integer). Spectral density (R&W Eq. 4.15, angular frequency, ARD):
    ``S(ω) = σ² ∏ℓ · 2^d π^{d/2} Γ(ν+d/2) (2ν)^ν / Γ(ν) · (2ν + Σ ℓ_i² ω_i²)^{-(ν+d/2)}``.
    """

    __slots__ = ()
    _NU = 0.0

    def _spectral_unit(self, w2, d):
        nu = self._NU
        log_c = (
            d * math.log(2.0)
            + 0.5 * d * math.log(math.pi)
            + gammaln(nu + d / 2.0)
            + nu * math.log(2 * nu)
            - gammaln(nu)
        )
        return np.exp(log_c - (nu + d / 2.0) * np.log(2.0 * nu + w2))

    def _unit_frequencies(self, n, rng):
        # S ∝ (2ν + |ω|²)^{-(ν+d/2)}: multivariate Student t with 2ν degrees of freedom
        g = rng.chisquare(2.0 * self._NU, size=(n, 1))
        return rng.standard_normal((n, self.n_active)) * np.sqrt(2.0 * self._NU / g)


class Matern32(_Matern):
    """``k = σ² (1 + √3 r) exp(-√3 r)`` (R&W Eq. 4.17, ARD)."""

    __slots__ = ()
    _NU = 1.5

    def _k(self, r2):
        ar = math.sqrt(3.0) * np.sqrt(r2)
        return (1.0 + ar) * np.exp(-ar)

    def _dk_dr2(self, r2):
        # dk/dr = -3 r exp(-√3 r)  =>  dk/dr² = -(3/2) exp(-√3 r)   (finite at r = 0)
        return -1.5 * np.exp(-math.sqrt(3.0) * np.sqrt(r2))


class Matern52(_Matern):
    """``k = σ² (1 + √5 r + 5r²/3) exp(-√5 r)`` (R&W Eq. 4.17, ARD)."""

    __slots__ = ()
    _NU = 2.5

    def _k(self, r2):
        ar = math.sqrt(5.0) * np.sqrt(r2)
        return (1.0 + ar + 5.0 * r2 / 3.0) * np.exp(-ar)

    def _dk_dr2(self, r2):
        # dk/dr = -(5/3) r (1 + √5 r) exp(-√5 r)  =>  dk/dr² = -(5/6)(1 + √5 r) exp(-√5 r)
        ar = math.sqrt(5.0) * np.sqrt(r2)
        return -(5.0 / 6.0) * (1.0 + ar) * np.exp(-ar)


class Linear(_Base):
    """``k = σ² <x_dims, x'_dims>`` (a linear function of the active columns, zero mean)."""

    __slots__ = ()
    _BOUNDS = {"variance": VARIANCE_BOUNDS}

    def __init__(self, variance=1.0, dims=None, *, fixed=()):
        if np.size(variance) != 1:
            raise InvalidInputError(f"variance: expected one number, got shape {np.shape(variance)}")
        self._setup({"variance": float(positive("variance", variance).reshape(-1)[0])}, dims, fixed)

    def _rebuild(self, hyper):
        return Linear(hyper["variance"], self.dims, fixed=self._fixed)

    @property
    def variance(self) -> float:
        return self._hyper["variance"]

    def _cross(self, X1, X2):
        return (self.variance * self._active(X1)) @ self._active(X2).T

    _ADDS_IN_PLACE = True

    def _cross_add(self, X1, X2, out):
        # out += σ² A1 A2ᵀ as one BLAS gemm with beta = 1 on the transposed (Fortran) view
        if not (out.flags.c_contiguous and out.dtype == np.float64 and out.flags.writeable) or out.size == 0:
            return super()._cross_add(X1, X2, out)
        A1 = np.asarray(self.variance * self._active(X1), order="F")
        A2 = np.asarray(self._active(X2), dtype=float, order="F")
        blas.dgemm(1.0, A2, A1, beta=1.0, c=out.T, trans_b=1, overwrite_c=1)
        return out

    def _paired(self, X1, X2):
        return self.variance * np.sum(self._active(X1) * self._active(X2), axis=1)

    def _grad_params_cross(self, X1, X2):
        return self._stack_grads({"variance": self._cross(X1, X2)[None]})

    def _grad_inputs(self, X1, X2):
        A2 = self._active(X2)
        G = np.broadcast_to(self.variance * A2[None, :, :], (X1.shape[0],) + A2.shape)
        return self._scatter(np.array(G), X1.shape[1])


class Constant(_Base):
    """``k = σ²`` for every pair of inputs (an unknown constant offset)."""

    __slots__ = ()
    _BOUNDS = {"variance": VARIANCE_BOUNDS}

    def __init__(self, variance=1.0, *, fixed=()):
        if np.size(variance) != 1:
            raise InvalidInputError(f"variance: expected one number, got shape {np.shape(variance)}")
        self._setup({"variance": float(positive("variance", variance).reshape(-1)[0])}, None, fixed)

    def _rebuild(self, hyper):
        return Constant(hyper["variance"], fixed=self._fixed)

    @property
    def variance(self) -> float:
        return self._hyper["variance"]

    def _cross(self, X1, X2):
        return np.full((X1.shape[0], X2.shape[0]), self.variance)

    _ADDS_IN_PLACE = True

    def _cross_add(self, X1, X2, out):
        out += self.variance
        return out

    def _paired(self, X1, X2):
        return np.full(X1.shape[0], self.variance)

    def _grad_params_cross(self, X1, X2):
        return self._stack_grads({"variance": self._cross(X1, X2)[None]})

    def _grad_inputs(self, X1, X2):
        return np.zeros((X1.shape[0], X2.shape[0], X1.shape[1]))


# ======================================================================================
# Combinations
# ======================================================================================


class _Combination(Kernel):
    """Sum or product of kernels; params are the components' params concatenated in order."""

    __slots__ = ("kernels",)

    def __init__(self, *kernels: Kernel):
        flat = []
        for k in kernels:
            if not isinstance(k, Kernel):
                raise InvalidInputError(f"kernels: expected Kernel objects, got {type(k).__name__}")
            flat += list(k.kernels) if type(k) is type(self) else [k]
        if len(flat) < 2:
            raise InvalidInputError("kernels: a combination needs at least two kernels")
        self._init(kernels=tuple(flat))

    @property
    def params(self):
        return np.concatenate([k.params for k in self.kernels])

    @property
    def param_names(self):
        return [f"k{i}.{n}" for i, k in enumerate(self.kernels) for n in k.param_names]

    @property
    def bounds(self):
        return np.concatenate([k.bounds for k in self.kernels], axis=0).reshape(-1, 2)

    def with_params(self, theta):
        theta = self._check_theta(theta)
        out, i = [], 0
        for k in self.kernels:
            out.append(k.with_params(theta[i : i + k.n_params]))
            i += k.n_params
        return type(self)(*out)

    @property
    def _min_columns(self):
        return max(k._min_columns for k in self.kernels)

    def _exact_columns(self):
        exact = {k._exact_columns() for k in self.kernels} - {None}
        if len(exact) > 1:
            raise InvalidInputError(f"kernels: components need different numbers of columns {sorted(exact)}; use dims=")
        return exact.pop() if exact else None

    def __repr__(self):
        op = " + " if isinstance(self, Sum) else " * "
        return "(" + op.join(repr(k) for k in self.kernels) + ")"


def _accumulate(op, arrays):
    """Fold ``op`` (``np.add`` / ``np.multiply``) over the components' results in place (no
    stacked (c, n1, n2) temporary). Every ``_cross``/``_paired`` returns a new array owned by the
    caller; the first is reused as the output when it is a writeable float array of the final shape."""
    arrays = iter(arrays)
    first, second = next(arrays), next(arrays)
    if (
        isinstance(first, np.ndarray)
        and first.flags.writeable
        and first.flags.owndata
        and first.dtype == np.float64
        and first.shape == np.broadcast_shapes(first.shape, np.shape(second))
    ):
        out = op(first, second, out=first)
    else:
        out = op(first, second)
    for a in arrays:
        op(out, a, out=out)
    return out


class Sum(_Combination):
    """``k = Σ_c k_c``."""

    __slots__ = ()

    def _cross(self, X1, X2):
        # start from a term that must be formed anyway; Linear/Constant terms then add in place
        order = sorted(self.kernels, key=lambda k: k._ADDS_IN_PLACE)
        out = order[0]._cross(X1, X2)
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.flags.writeable and out.flags.owndata):
            out = np.array(out, dtype=float)
        for k in order[1:]:
            out = k._cross_add(X1, X2, out)
        return out

    def _paired(self, X1, X2):
        return _accumulate(np.add, (k._paired(X1, X2) for k in self.kernels))

    def _grad_params_cross(self, X1, X2):
        return np.concatenate([k._grad_params_cross(X1, X2) for k in self.kernels], axis=0)

    def _grad_inputs(self, X1, X2):
        return sum(k._grad_inputs(X1, X2) for k in self.kernels)


class Product(_Combination):
    """``k = ∏_c k_c``; gradients by the product rule."""

    __slots__ = ()

    def _cross(self, X1, X2):
        return _accumulate(np.multiply, (k._cross(X1, X2) for k in self.kernels))

    def _paired(self, X1, X2):
        return _accumulate(np.multiply, (k._paired(X1, X2) for k in self.kernels))

    def _others(self, values, c):
        return np.prod([v for i, v in enumerate(values) if i != c], axis=0)

    def _grad_params_cross(self, X1, X2):
        values = [k._cross(X1, X2) for k in self.kernels]
        return np.concatenate(
            [k._grad_params_cross(X1, X2) * self._others(values, c)[None] for c, k in enumerate(self.kernels)], axis=0
        )

    def _grad_inputs(self, X1, X2):
        values = [k._cross(X1, X2) for k in self.kernels]
        return sum(k._grad_inputs(X1, X2) * self._others(values, c)[..., None] for c, k in enumerate(self.kernels))


class Preference(Kernel):
    """Kernel of the preference function ``g(x, x') = f(x) - f(x')`` on duels ``[x, x']``.

    ``k_g([a, b], [a', b']) = k(a, a') + k(b, b') - k(a, b') - k(b, a')`` (Fauvel & Chalk (binary/preferential BO),
    Eq. 6). Inputs are duels ``(n, 2d)``: the first ``d`` columns are ``x``, the last ``d`` are ``x'``.
    The hyperparameters are the base kernel's.
    """

    __slots__ = ("base",)

    def __init__(self, base: Kernel):
        if not isinstance(base, Kernel) or isinstance(base, Preference):
            raise InvalidInputError(f"base: expected a (non-preference) Kernel, got {type(base).__name__}")
        self._init(base=base)

    @property
    def params(self):
        return self.base.params

    @property
    def param_names(self):
        return self.base.param_names

    @property
    def bounds(self):
        return self.base.bounds

    def with_params(self, theta):
        return Preference(self.base.with_params(theta))

    @property
    def _min_columns(self):
        return 2 * max(self.base._min_columns, 1)

    def _exact_columns(self):
        exact = self.base._exact_columns()
        return None if exact is None else 2 * exact

    def _check(self, name, X):
        X = super()._check(name, X)
        if X.shape[1] % 2:
            raise InvalidInputError(f"{name}: duels need an even number of columns [x, x'], got {X.shape[1]}")
        return X

    @staticmethod
    def _split(X):
        d = X.shape[1] // 2
        return X[:, :d], X[:, d:]

    def _combine(self, fn, X1, X2):
        A1, B1 = self._split(X1)
        A2, B2 = self._split(X2)
        return fn(A1, A2) + fn(B1, B2) - fn(A1, B2) - fn(B1, A2)

    def _cross(self, X1, X2):
        return self._combine(self.base._cross, X1, X2)

    def _paired(self, X1, X2):
        return self._combine(self.base._paired, X1, X2)

    def _grad_params_cross(self, X1, X2):
        return self._combine(self.base._grad_params_cross, X1, X2)

    def _grad_inputs(self, X1, X2):
        A1, B1 = self._split(X1)
        A2, B2 = self._split(X2)
        gi = self.base._grad_inputs
        d_a = gi(A1, A2) - gi(A1, B2)  # ∂/∂a of k(a, a') - k(a, b')
        d_b = gi(B1, B2) - gi(B1, A2)  # ∂/∂b of k(b, b') - k(b, a')
        return np.concatenate([d_a, d_b], axis=2)

    def __repr__(self):
        return f"Preference({self.base!r})"


# ======================================================================================
# Helpers for the kernels of the papers
# ======================================================================================


def refraction_kernel(theta, lengthscales, variance) -> Sum:
    """Refraction kernel ``k((s,S,C),(s',S',C')) = θ s s' + k_SE((S,C),(S',C'))`` (Fauvel & Chalk (contextual BO),
    Eq. 15).

    Input columns ``(s, S, C)``: letter size (logMAR), sphere and cylinder (diopters).
    """
    return Linear(theta, dims=(0,)) + SquaredExponential(lengthscales, variance, dims=(1, 2))


def contextual_benchmark_kernel(base_cls, lengthscales, variance, d: int) -> Product:
    """Benchmark kernel ``k((s,x),(s',x')) = s s' k(x, x')`` (Fauvel & Chalk (contextual BO) §4), ``x`` in ``d`` dims.

    Column 0 is the context ``s``; columns ``1..d`` are ``x``. The linear variance is frozen at 1.
    """
    if not (isinstance(base_cls, type) and issubclass(base_cls, Stationary)):
        raise InvalidInputError(f"base_cls: expected a Stationary kernel class, got {base_cls!r}")
    d = check_int("d", d, lo=1, whole_float=True)
    return Linear(1.0, dims=(0,), fixed=("variance",)) * base_cls(lengthscales, variance, dims=tuple(range(1, d + 1)))
