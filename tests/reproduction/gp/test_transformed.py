"""Linearly transformed kernel and the power-vector refraction kernel: values against closed forms
(the base kernel on hand-mapped inputs; the blur of Fauvel & Chalk (contextual BO), Eq. 12 from the optics layer),
gradients w.r.t. inputs and log-hyperparameters against central finite differences, PSD,
and the model/acquisition path on it."""

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.blur import blur_diopters
from visiontune.reproduction.gp import ProbitGP
from visiontune.reproduction.gp.kernels import Matern52, SquaredExponential
from visiontune.reproduction.gp.transformed import POWER_VECTOR_MAP, LinearlyTransformed, refraction_power_vector_kernel

A = np.array([[1.2, -0.4], [0.3, 0.9]])


def _transformed():
    return {
        "se": LinearlyTransformed(SquaredExponential([0.8, 1.5], 1.3, dims=(1, 2)), A, dims=(1, 2)),
        "m52_first_cols": LinearlyTransformed(Matern52([0.7, 1.1, 0.9], 0.6), A, dims=(0, 2)),
        "pv": refraction_power_vector_kernel(2.1, [1.7, 0.9], 3.2),
    }


@pytest.fixture
def X():
    return np.random.default_rng(1).uniform(-2, 2, size=(7, 3))


def test_value_is_base_kernel_on_mapped_columns(X):
    base = SquaredExponential([0.8, 1.5], 1.3, dims=(1, 2))
    k = LinearlyTransformed(base, A, dims=(1, 2))
    Z = X.copy()
    Z[:, 1:] = X[:, 1:] @ A.T
    Y = X[::-1] + 0.3
    W = Y.copy()
    W[:, 1:] = Y[:, 1:] @ A.T
    np.testing.assert_allclose(k(X, Y), base(Z, W), rtol=1e-13)
    np.testing.assert_allclose(k.diag(X), np.diag(k(X)), rtol=1e-13)
    np.testing.assert_allclose(k.transform(X), Z, rtol=1e-13)


def test_power_vector_kernel_is_a_function_of_dioptric_blur():
    """With ℓ_M = ℓ_J = ℓ the SE part is σ² exp(-β²/(2ℓ²)), β the blur between the two lenses
    (Fauvel & Chalk (contextual BO), Eq. 12, computed by the optics layer from Thibos power vectors)."""
    theta, ell, var = 1.7, 1.3, 2.4
    k = refraction_power_vector_kernel(theta, [ell], var)
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.uniform(-1, 2, 30), rng.uniform(-4, 4, (30, 2))])
    K = k(X[:15], X[15:])
    for i in range(15):
        for j in range(15):
            b = blur_diopters(X[i, 1:], Prescription(X[15 + j, 1], X[15 + j, 2], 180.0))
            expected = theta * X[i, 0] * X[15 + j, 0] + var * np.exp(-0.5 * b**2 / ell**2)
            assert K[i, j] == pytest.approx(expected, rel=1e-12)


def test_power_vector_map_makes_the_m0_valley_isotropic():
    """Along the M = 0 valley (ΔC = -2ΔS) and along ΔC = 0 the blur is the same |ΔS|: the mapped
    distances are equal, whereas in (S, C) the valley step is √5 times longer."""
    valley, sphere_only = np.array([1.0, -2.0]), np.array([1.0, 0.0])
    assert np.linalg.norm(POWER_VECTOR_MAP @ valley) == pytest.approx(np.linalg.norm(POWER_VECTOR_MAP @ sphere_only))
    assert np.linalg.norm(valley) / np.linalg.norm(sphere_only) == pytest.approx(np.sqrt(5))


@pytest.mark.parametrize("name", list(_transformed()))
def test_grad_inputs_matches_finite_differences(name, X):
    k = _transformed()[name]
    Y = np.random.default_rng(2).uniform(-2, 2, size=(5, 3))
    G = k.grad_inputs(X, Y)
    h = 1e-6
    for c in range(3):
        E = np.zeros_like(X)
        E[:, c] = h
        fd = (k(X + E, Y) - k(X - E, Y)) / (2 * h)
        np.testing.assert_allclose(G[:, :, c], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(_transformed()))
def test_grad_params_matches_finite_differences(name, X):
    k = _transformed()[name]
    G = k.grad_params(X)
    assert G.shape == (k.n_params, len(X), len(X))
    h = 1e-6
    for p in range(k.n_params):
        e = np.zeros(k.n_params)
        e[p] = h
        fd = (k.with_params(k.params + e)(X) - k.with_params(k.params - e)(X)) / (2 * h)
        np.testing.assert_allclose(G[p], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(_transformed()))
def test_gram_matrix_is_symmetric_psd(name):
    k = _transformed()[name]
    X = np.random.default_rng(3).uniform(-4, 4, size=(40, 3))
    K = k(X)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-8 * np.abs(K).max()


def test_hyperparameters_are_the_base_kernels():
    base = SquaredExponential([0.8, 1.5], 1.3, dims=(1, 2))
    k = LinearlyTransformed(base, A, dims=(1, 2))
    assert k.param_names == base.param_names
    np.testing.assert_allclose(k.params, base.params)
    np.testing.assert_allclose(k.bounds, base.bounds)
    k2 = k.with_params(np.log([2.0, 3.0, 4.0]))
    np.testing.assert_allclose(k2.base.lengthscales, [2.0, 3.0])
    np.testing.assert_allclose(k2.matrix, A)
    pv = refraction_power_vector_kernel(1.0, [2.0, 2.0], 1.0)
    assert pv.param_names == ["k0.variance", "k1.lengthscales[0]", "k1.lengthscales[1]", "k1.variance"]


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(matrix=np.eye(3), dims=(1, 2)), "matrix"),
        (dict(matrix=[[1.0, 2.0], [0.5, 1.0]], dims=(1, 2)), "matrix"),
        (dict(matrix=[[1.0, np.nan], [0.0, 1.0]], dims=(1, 2)), "matrix"),
        (dict(matrix=A, dims=(1, 1)), "dims"),
    ],
)
def test_bad_construction_names_the_argument(kwargs, word):
    with pytest.raises(InvalidInputError, match=word):
        LinearlyTransformed(SquaredExponential([1.0, 1.0], 1.0, dims=(1, 2)), **kwargs)


def test_bad_base_and_too_few_columns():
    with pytest.raises(InvalidInputError, match="base"):
        LinearlyTransformed("se", A, dims=(0, 1))
    k = refraction_power_vector_kernel(1.0, [1.0, 1.0], 1.0)
    with pytest.raises(InvalidInputError, match="X1"):
        k(np.zeros((2, 2)))


def test_probit_gp_predictive_gradient_on_transformed_kernel():
    """The model's input gradient of μ_f (used by the acquisition optimiser) goes through the
    chain rule: checked by finite differences."""
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(-1, 2, 25), rng.uniform(-4, 4, (25, 2))])
    y = (rng.uniform(size=25) < 0.5).astype(float)
    model = ProbitGP(refraction_power_vector_kernel(2.0, [1.5, 1.0], 3.0), X, y)
    Xs = np.column_stack([rng.uniform(-1, 2, 4), rng.uniform(-4, 4, (4, 2))])
    mu, var, dmu, dvar = model.predict_with_grad(Xs)
    h = 1e-6
    for c in range(3):
        E = np.zeros_like(Xs)
        E[:, c] = h
        mp, vp = model.predict(Xs + E)[:2]
        mm, vm = model.predict(Xs - E)[:2]
        np.testing.assert_allclose(dmu[:, c], (mp - mm) / (2 * h), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(dvar[:, c], (vp - vm) / (2 * h), rtol=1e-5, atol=1e-7)
