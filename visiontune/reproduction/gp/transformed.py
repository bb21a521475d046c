"""A kernel on linearly mapped input columns, and the refraction kernel in power-vector coordinates.

:class:`LinearlyTransformed` wraps a kernel ``k`` and a fixed matrix ``A`` acting on chosen
input columns ``dims``:

    k_A(x, x') = k(T x, T x'),   (T x)[dims] = A x[dims],  (T x)[other] = x[other]

Gradients: ``∂k_A/∂x[dims] = Aᵀ (∂k/∂z)[dims]`` at ``z = T x`` (chain rule); the other columns
and every hyperparameter gradient are the base kernel's at the mapped inputs. ``A`` is fixed
(not a hyperparameter).

**Refraction in power-vector coordinates** (VisionTune fix, not in the papers). For lenses at
one axis (180°), the residual blur of Fauvel & Chalk (contextual BO), Eq. 12, is
``β² = ½(ΔS² + (ΔS + ΔC)²) = (ΔS + ΔC/2)² + (ΔC/2)² = ΔM² + ΔJ²`` with ``M = S + C/2`` the
spherical equivalent and ``J = C/2`` (Thibos power vector, docs/design.md, "The refraction model").
Blur, hence acuity, is isotropic in ``(M, C/2)`` and strongly anisotropic along the diagonal
``M = 0`` in ``(S, C)`` (eigenvalues of the quadratic form 1.31 and 0.19), which an
axis-aligned SE in ``(S, C)`` cannot represent. :func:`refraction_power_vector_kernel` is
``θ s s' + k_SE((M, C/2), (M', C'/2))`` on model inputs ``(s, S, C)``.

References
----------
- Fauvel & Chalk (contextual BO), Eq. 12 (blur) and Eq. 15 (kernel ``θ s s' + k(x, x')``).
- Thibos, Wheeler & Horner (1997), power vectors ``(M, J0, J45)``.
"""

from __future__ import annotations

import numpy as np

from visiontune._validate import finite_array
from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.kernels import Kernel, Linear, SquaredExponential, Sum, _check_dims

__all__ = ["POWER_VECTOR_MAP", "LinearlyTransformed", "refraction_power_vector_kernel"]

#: ``(S, C) -> (M, J) = (S + C/2, C/2)`` (diopters), the power vector of a lens at axis 180
#: up to the sign of ``J0`` (irrelevant to an isotropic kernel).
POWER_VECTOR_MAP = np.array([[1.0, 0.5], [0.0, 0.5]])


class LinearlyTransformed(Kernel):
    """``k(T x, T x')`` with ``T`` applying the fixed ``(q, q)`` matrix ``matrix`` to columns ``dims``.

    ``base``: any :class:`Kernel` (it sees the mapped inputs, same number of columns);
    ``matrix``: (q, q) finite, non-singular; ``dims``: q distinct column indices.
    Hyperparameters (``params``, ``bounds``, ``with_params``) are the base kernel's.
    """

    __slots__ = ("base", "matrix", "dims")

    def __init__(self, base: Kernel, matrix, dims):
        if not isinstance(base, Kernel):
            raise InvalidInputError(f"base: expected a Kernel, got {type(base).__name__}")
        A = finite_array("matrix", matrix, ndim=2)
        dims = _check_dims(dims)
        if dims is None or A.shape != (len(dims), len(dims)):
            raise InvalidInputError(
                f"matrix: expected a square ({len(dims or ())}, {len(dims or ())}) array "
                f"matching dims={dims}, got shape {A.shape}"
            )
        if abs(np.linalg.det(A)) < 1e-12 * max(1.0, float(np.abs(A).max()) ** len(dims)):
            raise InvalidInputError(f"matrix: expected a non-singular map, got {A.tolist()}")
        self._init(base=base, matrix=A, dims=dims)

    # ---- hyperparameters: the base kernel's -------------------------------------------
    @property
    def params(self) -> np.ndarray:
        return self.base.params

    @property
    def param_names(self) -> list[str]:
        return self.base.param_names

    @property
    def bounds(self) -> np.ndarray:
        return self.base.bounds

    def with_params(self, theta) -> LinearlyTransformed:
        return LinearlyTransformed(self.base.with_params(theta), self.matrix, self.dims)

    # ---- evaluation --------------------------------------------------------------------
    @property
    def _min_columns(self) -> int:
        return max(self.base._min_columns, max(self.dims) + 1)

    def _exact_columns(self):
        return self.base._exact_columns()

    def transform(self, X) -> np.ndarray:
        """``T X``: (n, d) inputs with ``X[:, dims] @ matrixᵀ`` in the mapped columns."""
        X = self._check("X", X)
        return self._map(X)

    def _map(self, X: np.ndarray) -> np.ndarray:
        Z = np.array(X, dtype=float, copy=True)
        Z[:, list(self.dims)] = X[:, list(self.dims)] @ self.matrix.T
        return Z

    def _cross(self, X1, X2):
        Z1 = self._map(X1)
        return self.base._cross(Z1, Z1 if X2 is X1 else self._map(X2))

    def _paired(self, X1, X2):
        return self.base._paired(self._map(X1), self._map(X2))

    def _grad_params_cross(self, X1, X2):
        Z1 = self._map(X1)
        return self.base._grad_params_cross(Z1, Z1 if X2 is X1 else self._map(X2))

    def _grad_inputs(self, X1, X2):
        G = self.base._grad_inputs(self._map(X1), self._map(X2))  # (n1, n2, d) w.r.t. z = T x
        out = np.array(G, copy=True)
        cols = list(self.dims)
        out[..., cols] = G[..., cols] @ self.matrix  # ∂k/∂x_dims = Aᵀ ∂k/∂z_dims (row-vector form)
        return out

    def __repr__(self):
        return f"LinearlyTransformed({self.base!r}, matrix={self.matrix.tolist()}, dims={self.dims})"


def refraction_power_vector_kernel(theta, lengthscales, variance) -> Sum:
    """``θ s s' + k_SE((M, C/2), (M', C'/2))`` on inputs ``(s, S, C)`` (VisionTune fix).

    ``theta``: linear variance of the letter size ``s`` (logMAR⁻²); ``lengthscales``: 1 or 2
    values (diopters) for ``(M, J)``; ``variance``: SE output variance. Eq. 15 of the contextual BO paper with the
    SE kernel evaluated on power-vector coordinates ``M = S + C/2``, ``J = C/2`` (module docstring).
    """
    ls = np.atleast_1d(np.asarray(lengthscales, dtype=float))
    se = SquaredExponential(ls, variance, dims=(1, 2))
    return Linear(theta, dims=(0,)) + LinearlyTransformed(se, POWER_VECTOR_MAP, dims=(1, 2))
