"""Kernels: closed forms, positive semi-definiteness, gradients against finite differences,
the preference kernel against the covariance of f(x) - f(x'), spectral densities against a
numerical Fourier transform."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from visiontune.errors import InvalidInputError
from visiontune.reproduction.gp.kernels import (
    Constant,
    Kernel,
    Linear,
    Matern32,
    Matern52,
    Preference,
    Product,
    SquaredExponential,
    Sum,
    contextual_benchmark_kernel,
    refraction_kernel,
)

D = 3


def _kernels():
    """Every kernel kind on 3 input columns, with non-trivial hyperparameters."""
    se = SquaredExponential([0.7, 1.3, 2.0], 1.7)
    return {
        "se": se,
        "m32": Matern32([0.9, 0.5, 1.4], 0.8),
        "m52": Matern52([1.1, 0.6, 0.9], 2.3),
        "se_dims": SquaredExponential([0.8, 1.5], 1.2, dims=(0, 2)),
        "linear": Linear(0.6, dims=(0, 1)),
        "constant": Constant(1.9),
        "sum": Linear(0.6, dims=(0,)) + Matern52([0.8, 1.2], 1.4, dims=(1, 2)),
        "product": Linear(1.3, dims=(0,)) * SquaredExponential([0.8, 1.2], 1.4, dims=(1, 2)),
        "frozen": SquaredExponential([0.7, 1.3, 2.0], 1.7, fixed=("variance",)),
        "frozen_product": contextual_benchmark_kernel(Matern32, [0.6, 0.9], 1.5, 2),
        "refraction": refraction_kernel(2.0, [1.2, 0.9], 1.1),
        "nested": (Constant(0.5) + SquaredExponential([0.9, 1.1, 0.7], 0.8)) * Matern32([1.5, 2.0, 1.0], 1.2),
    }


def _pref_kernels():
    return {
        "pref_se": Preference(SquaredExponential([0.7, 1.3, 2.0], 1.7)),
        "pref_m52": Preference(Matern52([1.1, 0.6, 0.9], 2.3)),
        "pref_sum": Preference(Linear(0.4) + Matern32([0.9, 0.5, 1.4], 0.8, fixed=("lengthscales",))),
    }


ALL = {**_kernels(), **_pref_kernels()}


def _inputs(name, n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2 * D if name.startswith("pref") else D))


@pytest.mark.parametrize("name", list(ALL))
def test_gram_matrix_is_symmetric_positive_semidefinite(name):
    k = ALL[name]
    X = _inputs(name, 40, 0)
    K = k(X)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-9 * max(1.0, eig.max())
    np.testing.assert_allclose(k.diag(X), np.diag(K), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "cls, closed_form",
    [
        (SquaredExponential, lambda r: np.exp(-0.5 * r**2)),
        (Matern32, lambda r: (1 + math.sqrt(3) * r) * np.exp(-math.sqrt(3) * r)),
        (Matern52, lambda r: (1 + math.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-math.sqrt(5) * r)),
    ],
)
def test_stationary_kernels_match_closed_forms_at_known_distances(cls, closed_form):
    ls, var = np.array([0.5, 2.0]), 1.7
    k = cls(ls, var)
    r = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 5.0])
    # points along a direction whose ARD-scaled distance from the origin is exactly r
    direction = np.array([3.0, 4.0]) / 5.0 * ls
    X = r[:, None] * direction
    np.testing.assert_allclose(k(np.zeros((1, 2)), X)[0], var * closed_form(r), rtol=1e-12, atol=1e-15)
    # hand values: SE at r=1 is σ² e^{-1/2}; Matérn 3/2 at r=1 is σ²(1+√3)e^{-√3}
    if cls is SquaredExponential:
        assert k(np.zeros((1, 2)), X[3:4])[0, 0] == pytest.approx(var * 0.6065306597126334)
    if cls is Matern32:
        assert k(np.zeros((1, 2)), X[3:4])[0, 0] == pytest.approx(var * 2.7320508075688772 * 0.17692120631776423)


def test_linear_and_constant_closed_forms():
    X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    np.testing.assert_allclose(Linear(2.0, dims=(0, 2))(X), 2.0 * X[:, [0, 2]] @ X[:, [0, 2]].T)
    np.testing.assert_allclose(Constant(0.3)(X, X[:1]), np.full((2, 1), 0.3))


def _fd_grad_params(k, X, h=1e-6):
    theta = k.params
    out = np.empty((theta.size, X.shape[0], X.shape[0]))
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        out[i] = (k.with_params(theta + e)(X) - k.with_params(theta - e)(X)) / (2 * h)
    return out


def _fd_grad_inputs(k, X1, X2, h=1e-6):
    out = np.empty((X1.shape[0], X2.shape[0], X1.shape[1]))
    for c in range(X1.shape[1]):
        e = np.zeros(X1.shape[1])
        e[c] = h
        out[:, :, c] = (k(X1 + e, X2) - k(X1 - e, X2)) / (2 * h)
    return out


@pytest.mark.parametrize("name", list(ALL))
def test_grad_params_matches_central_finite_differences(name):
    k = ALL[name]
    X = _inputs(name, 7, 1)
    G = k.grad_params(X)
    assert G.shape == (k.params.size, 7, 7) == (len(k.param_names), 7, 7)
    np.testing.assert_allclose(G, _fd_grad_params(k, X), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", list(ALL))
def test_grad_inputs_matches_central_finite_differences(name):
    k = ALL[name]
    X1, X2 = _inputs(name, 5, 2), _inputs(name, 6, 3)
    X2[0] = X1[0]  # include r = 0, where the Matérn kernels are least smooth
    G = k.grad_inputs(X1, X2)
    assert G.shape == (5, 6, X1.shape[1])
    np.testing.assert_allclose(G, _fd_grad_inputs(k, X1, X2), rtol=1e-5, atol=1e-6)


def test_inactive_columns_have_zero_input_gradient():
    k = SquaredExponential([0.8, 1.5], 1.2, dims=(0, 2))
    X = np.random.default_rng(4).normal(size=(4, 3))
    assert np.all(k.grad_inputs(X, X)[:, :, 1] == 0.0)


def test_frozen_hyperparameter_is_left_out_of_params_bounds_and_gradients():
    free = SquaredExponential([0.7, 1.3], 1.7)
    frozen = SquaredExponential([0.7, 1.3], 1.7, fixed=("variance",))
    assert frozen.param_names == ["lengthscales[0]", "lengthscales[1]"]
    assert frozen.bounds.shape == (2, 2)
    moved = frozen.with_params(np.log([2.0, 3.0]))
    assert moved.variance == 1.7
    np.testing.assert_allclose(moved.lengthscales, [2.0, 3.0])
    X = np.random.default_rng(5).normal(size=(4, 2))
    np.testing.assert_allclose(frozen.grad_params(X), free.grad_params(X)[:2])
    bench = contextual_benchmark_kernel(SquaredExponential, [0.3, 0.4], 2.0, 2)
    assert bench.param_names == ["k1.lengthscales[0]", "k1.lengthscales[1]", "k1.variance"]


def test_sum_and_product_concatenate_params_in_order():
    k1, k2 = Linear(0.5, dims=(0,)), SquaredExponential([1.0, 2.0], 3.0, dims=(1, 2))
    for combo in (k1 + k2, k1 * k2):
        np.testing.assert_allclose(combo.params, np.concatenate([k1.params, k2.params]))
        assert combo.bounds.shape == (4, 2)
        assert np.all(combo.bounds[:, 0] < combo.bounds[:, 1])
    assert isinstance(k1 + k2, Sum) and isinstance(k1 * k2, Product)
    X = np.random.default_rng(6).normal(size=(5, 3))
    np.testing.assert_allclose((k1 + k2)(X), k1(X) + k2(X))
    np.testing.assert_allclose((k1 * k2)(X), k1(X) * k2(X))
    np.testing.assert_allclose(refraction_kernel(0.5, [1.0, 2.0], 3.0)(X), (k1 + k2)(X))


def test_with_params_returns_new_kernel_and_kernels_are_immutable():
    k = SquaredExponential([1.0], 1.0)
    k2 = k.with_params([math.log(2.0), math.log(3.0)])
    assert k.lengthscales[0] == 1.0
    assert k2.lengthscales[0] == pytest.approx(2.0) and k2.variance == pytest.approx(3.0)
    with pytest.raises(AttributeError):
        k.dims = (0,)
    with pytest.raises(ValueError):
        k.lengthscales[0] = 5.0
    np.testing.assert_allclose(k.with_params(k.params).params, k.params)


@pytest.mark.parametrize("name", list(_pref_kernels()))
def test_preference_kernel_is_the_covariance_of_the_difference(name):
    k_g = ALL[name]
    base = k_g.base
    rng = np.random.default_rng(7)
    A, B = rng.normal(size=(6, D)), rng.normal(size=(6, D))
    # g = M f with f = f([A; B]) ~ N(0, K) and M = [I, -I]  =>  cov(g) = M K Mᵀ
    K = base(np.vstack([A, B]))
    M = np.hstack([np.eye(6), -np.eye(6)])
    np.testing.assert_allclose(k_g(np.hstack([A, B])), M @ K @ M.T, rtol=1e-10, atol=1e-12)


def test_preference_kernel_matches_monte_carlo_covariance():
    base = Matern52([0.8, 1.1], 1.3)
    rng = np.random.default_rng(8)
    A, B = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    K = base(np.vstack([A, B]))
    f = rng.multivariate_normal(np.zeros(8), K, size=400_000, method="cholesky")
    g = f[:, :4] - f[:, 4:]
    emp = g.T @ g / g.shape[0]
    k_g = Preference(base)(np.hstack([A, B]))
    # Monte-Carlo standard error of a covariance entry is about sqrt((K_ii K_jj + K_ij²)/n) < 0.01
    np.testing.assert_allclose(emp, k_g, atol=0.02)


def _fourier_1d(k, omega):
    """S(ω) = ∫ k(r) e^{-iωr} dr = 2 ∫₀^∞ k(r) cos(ωr) dr (QUADPACK QAWF)."""

    def fn(r):
        return k(np.zeros((1, 1)), np.array([[r]]))[0, 0]

    if omega == 0:
        return 2 * integrate.quad(fn, 0, np.inf, limit=200)[0]
    return 2 * integrate.quad(fn, 0, np.inf, weight="cos", wvar=omega, limlst=200)[0]


@pytest.mark.parametrize("cls", [SquaredExponential, Matern32, Matern52])
def test_spectral_density_1d_matches_numerical_fourier_transform(cls):
    k = cls([0.7], 1.6)
    omegas = np.array([0.0, 0.5, 1.3, 3.0, 7.0])
    expected = np.array([_fourier_1d(k, w) for w in omegas])
    np.testing.assert_allclose(k.spectral_density(omegas[:, None]), expected, rtol=1e-6, atol=1e-10)


def test_spectral_density_2d_se_is_the_product_of_1d_densities():
    ls, var = np.array([0.6, 1.7]), 2.2
    k2 = SquaredExponential(ls, var)
    omega = np.random.default_rng(9).normal(scale=2.0, size=(10, 2))
    s1 = [np.array([_fourier_1d(SquaredExponential([ell], 1.0), w) for w in omega[:, i]]) for i, ell in enumerate(ls)]
    np.testing.assert_allclose(k2.spectral_density(omega), var * s1[0] * s1[1], rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("cls", [Matern32, Matern52])
def test_spectral_density_2d_matern_matches_hankel_transform(cls):
    """2-D isotropic FT is a Hankel transform: S(ω) = 2π ∫₀^∞ k(r) J₀(|ω| r) r dr;
    the ARD case follows by scaling ω_i -> ℓ_i ω_i with Jacobian ∏ℓ."""
    ls, var = np.array([0.5, 1.5]), 1.3
    unit = cls([1.0], 1.0)

    def kr(r):
        return unit(np.zeros((1, 1)), np.array([[r]]))[0, 0]

    omega = np.array([[0.0, 0.0], [0.4, -1.0], [2.0, 0.3], [-1.5, 1.2]])
    expected = []
    for w in omega:
        rho = np.linalg.norm(w * ls)

        def integrand(r):
            return kr(r) * special.j0(rho * r) * r

        val = integrate.quad(integrand, 0, 60, limit=500)[0]
        expected.append(var * np.prod(ls) * 2 * np.pi * val)
    np.testing.assert_allclose(cls(ls, var).spectral_density(omega), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "make, arg",
    [
        (lambda: SquaredExponential([1.0, -0.5]), "lengthscales"),
        (lambda: Matern32([0.0]), "lengthscales"),
        (lambda: Matern52([np.nan]), "lengthscales"),
        (lambda: SquaredExponential([1.0], variance=-1.0), "variance"),
        (lambda: Linear(np.inf), "variance"),
        (lambda: SquaredExponential([1.0], dims=(-1,)), "dims"),
        (lambda: SquaredExponential([1.0, 2.0, 3.0], dims=(0, 1)), "lengthscales"),
        (lambda: SquaredExponential([1.0], fixed=("speed",)), "fixed"),
        (lambda: Preference(Preference(Constant())), "base"),
    ],
)
def test_bad_hyperparameters_raise_naming_the_argument(make, arg):
    with pytest.raises(InvalidInputError, match=arg):
        make()


def test_bad_inputs_raise_naming_the_argument():
    k = SquaredExponential([1.0, 2.0])
    with pytest.raises(InvalidInputError, match="X1"):
        k(np.array([[np.nan, 1.0]]))
    with pytest.raises(InvalidInputError, match="X1"):
        k(np.ones((3, 3)))
    with pytest.raises(InvalidInputError, match="X2"):
        k(np.ones((3, 2)), np.ones((2, 3)))
    with pytest.raises(InvalidInputError, match="X"):
        k.diag(np.ones((2, 5)))
    with pytest.raises(InvalidInputError, match="X1"):
        SquaredExponential([1.0], dims=(4,))(np.ones((2, 3)))
    with pytest.raises(InvalidInputError, match="X1"):
        Preference(Linear())(np.ones((2, 3)))
    with pytest.raises(InvalidInputError, match="theta"):
        k.with_params([0.0])
    with pytest.raises(InvalidInputError, match="omega"):
        k.spectral_density(np.ones((3, 3)))


@pytest.mark.parametrize("name", list(ALL))
def test_kernels_survive_pickle_and_deepcopy(name):
    import copy
    import pickle

    k = ALL[name]
    X = _inputs(name, 4, 9)
    for clone in (pickle.loads(pickle.dumps(k)), copy.deepcopy(k)):
        assert type(clone) is type(k) and clone.param_names == k.param_names
        np.testing.assert_array_equal(clone(X), k(X))
        with pytest.raises(AttributeError):
            clone.dims = None


def test_kernel_is_abstract():
    with pytest.raises(TypeError):
        Kernel()
