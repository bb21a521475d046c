"""Fixtures for the acquisition tests: a model with prescribed latent moments, and oracles.

``KnownMomentsModel`` exposes the model interface the acquisition layer uses
(``predict``, ``predict_with_grad``, ``X``) with latent moments given in closed form, so
that a situation (a confident high mean next to an uncertain point...) can be built exactly.
The oracles integrate over ``f ~ N(mu, var)`` numerically (Gauss-Hermite), independent of
the closed forms with Owen's T used in the code.
"""

from __future__ import annotations

import numpy as np


class KnownMomentsModel:
    """Latent moments ``mu(x) = sum_j a_j sin(w_j x_j + p_j)``, ``var(x) = v0 + v1 exp(sum_j cos(u_j x_j))``."""

    def __init__(self, d, seed=0, X=None, scale=1.5):
        rng = np.random.default_rng(seed)
        self.a = scale * rng.uniform(0.5, 1.5, d)
        self.w = rng.uniform(1.0, 3.0, d)
        self.p = rng.uniform(0, 2 * np.pi, d)
        self.u = rng.uniform(0.5, 2.0, d)
        self.v0, self.v1 = 0.05, 0.4
        self.X = np.zeros((0, d)) if X is None else np.asarray(X, float)

    def predict_with_grad(self, X):
        X = np.atleast_2d(X)
        mu = np.sum(self.a * np.sin(self.w * X + self.p), 1)
        dmu = self.a * self.w * np.cos(self.w * X + self.p)
        e = self.v1 * np.exp(np.sum(np.cos(self.u * X), 1))
        var = self.v0 + e
        dvar = -e[:, None] * self.u * np.sin(self.u * X)
        return mu, var, dmu, dvar

    def predict(self, X):
        mu, var, _, _ = self.predict_with_grad(X)
        return mu, var


class TableModel:
    """A model whose latent moments at a few named points are given; gradients are zero."""

    def __init__(self, table):
        self.table = {tuple(np.round(k, 9)): v for k, v in table.items()}
        self.X = np.zeros((0, len(next(iter(table)))))

    def predict_with_grad(self, X):
        X = np.atleast_2d(X)
        mv = np.array([self.table[tuple(np.round(x, 9))] for x in X], float)
        return mv[:, 0], mv[:, 1], np.zeros_like(X), np.zeros_like(X)

    def predict(self, X):
        mu, var, _, _ = self.predict_with_grad(X)
        return mu, var


_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(200)
_GH_W = _GH_W / _GH_W.sum()


def expect(fn, mu, var):
    """``E[fn(f)]`` for ``f ~ N(mu, var)`` (elementwise over arrays mu, var), 200-point Gauss-Hermite."""
    mu, var = np.broadcast_arrays(np.asarray(mu, float), np.asarray(var, float))
    f = mu[..., None] + np.sqrt(var)[..., None] * _GH_X
    return np.sum(fn(f) * _GH_W, -1)


def fd_grad(fn, X, h=1e-6):
    """Central finite differences of ``fn(X (m, d)) -> (m,)`` w.r.t. each row: ``(m, d)``."""
    X = np.atleast_2d(np.asarray(X, float))
    G = np.zeros_like(X)
    for j in range(X.shape[1]):
        E = np.zeros_like(X)
        E[:, j] = h
        G[:, j] = (fn(X + E) - fn(X - E)) / (2 * h)
    return G


def probit_model(d, n=30, seed=0, context=False, inference="laplace", y=None):
    """A real :class:`ProbitGP` on ``n`` answers of a smooth test function in ``[-2, 2]^d``.

    With ``context``, column 0 is a context ``s in [0, 1]`` and the kernel is
    ``s s' k_SE(x, x')`` (Fauvel & Chalk (contextual BO), §4); answers ~ Bernoulli(Phi(3 s g(x))).
    """
    from visiontune.reproduction.gp.kernels import SquaredExponential, contextual_benchmark_kernel
    from visiontune.reproduction.gp.model import ProbitGP

    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    g = np.cos(1.3 * X).sum(1) - 0.3 * (X**2).sum(1) + 0.5
    if context:
        s = rng.uniform(0, 1, (n, 1))
        X = np.column_stack([s, X])
        g = 3 * s[:, 0] * g
        kernel = contextual_benchmark_kernel(SquaredExponential, np.full(d, 0.8), 2.0, d)
    else:
        kernel = SquaredExponential(np.full(d, 0.8), 2.0)
    if y is None:
        y = (rng.random(n) < ndtr_(g)).astype(float)
    return ProbitGP(kernel, X, y, inference=inference)


def ndtr_(x):
    from scipy.special import ndtr

    return ndtr(x)
