"""The papers' kernel protocol for the benchmark functions (Fauvel & Chalk (contextual BO) §4 and table S1;
Fauvel & Chalk (binary/preferential BO) §5).

For each test function, on the unit box ``u in [0, 1]^d`` (``x = lower + u (upper - lower)``) with
the scaled target ``y = g(u)`` (mean 0, sd 1; :meth:`TestFunction.scaled`):

1. draw ``n_train = 1000`` uniform training points and ``n_test = 3000`` other uniform points;
2. for each kernel kind (SE-ARD, Matérn 3/2 ARD, Matérn 5/2 ARD), variance held at 1 (the target's
   variance), fit an exact GP *regression* with Gaussian noise by maximising the log marginal
   likelihood (Rasmussen & Williams 2006,
   Eq. 5.8, gradient Eq. 5.9)::

       log p(y | θ) = -½ yᵀ K_y⁻¹ y - ½ log|K_y| - (n/2) log 2π,   K_y = K_θ + σ_n² I
       ∂/∂θ_j log p = ½ tr((α αᵀ - K_y⁻¹) ∂K_y/∂θ_j),              α = K_y⁻¹ y

   over the log-lengthscales and ``log σ_n²`` (L-BFGS-B, analytic gradient);
3. keep the kind with the lowest test RMSE of the predictive mean ``μ* = K(X*, X) α``.

Why regression and not the probit model: the authors' GP toolbox selects the benchmark kernels by
GP regression on the function values; regression sees ``g`` itself, so the RMSE compares the
kernels' fit of the function rather than the noise of 1000 Bernoulli draws. The latent scale is
the same (``g`` has sd 1 and the probit uses ``Φ(g)``), so the fitted variance and lengthscales are
used as they are by the probit models of the sweeps (:func:`visiontune.reproduction.sweep.benchmark_kernel`).

Regenerate the package data ``visiontune/data/bench_kernels.json`` with::

    python -m visiontune.reproduction.kernel_selection                 # all 34 functions, 2 processes
    python -m visiontune.reproduction.kernel_selection --functions forrester ackley --output /tmp/k.json
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

from visiontune._validate import check_int, finite_array, points
from visiontune.errors import ConfigurationError, InvalidInputError, NumericalError
from visiontune.reproduction.benchmark_functions import FUNCTIONS, get_function
from visiontune.reproduction.gp import kernels as K

__all__ = [
    "KINDS",
    "KernelChoice",
    "RegressionFit",
    "agreement_with_table_s1",
    "compute_table",
    "fit_regression",
    "kernel_of",
    "load_choices",
    "log_marginal_likelihood",
    "predict_mean",
    "select_kernel",
]

#: Kernel kinds compared, in the names of :data:`visiontune.reproduction.benchmark_functions.KERNELS`.
KINDS = ("se", "matern32", "matern52")
N_TRAIN, N_TEST, SEED = 1000, 3000, 20220602
#: Bounds of ``log σ_n²`` (noise variance of the regression; the targets are noise-free).
NOISE_BOUNDS = (np.log(1e-6), np.log(1.0))
RESOURCE = ("visiontune", "data/bench_kernels.json")
DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "data" / "bench_kernels.json"
COMMAND = "python -m visiontune.reproduction.kernel_selection"


def kernel_of(kind: str, lengthscales, variance: float = 1.0, *, fixed_variance: bool = False):
    """A :mod:`visiontune.reproduction.gp.kernels` stationary kernel of ``kind`` (one of :data:`KINDS`);
    ``fixed_variance`` freezes the variance (not among ``params``)."""
    classes = {"se": K.SquaredExponential, "matern32": K.Matern32, "matern52": K.Matern52}
    if kind not in classes:
        raise InvalidInputError(f"kind: expected one of {KINDS}, got {kind!r}")
    return classes[kind](lengthscales, variance, fixed=("variance",) if fixed_variance else ())


def log_marginal_likelihood(kernel, log_noise: float, X, y, *, grad: bool = True):
    """Exact GP regression log marginal likelihood (R&W 2006 Eq. 5.8) and its gradient (Eq. 5.9).

    ``X (n, d)``, ``y (n,)``; ``log_noise = log σ_n²``. Returns ``value`` or
    ``(value, grad (p + 1,))`` with the gradient with respect to ``kernel.params`` (log scale)
    followed by ``log σ_n²``. Raises :class:`NumericalError` if ``K_y`` is not positive definite.
    """
    X = points("X", X)
    y = finite_array("y", y).reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise InvalidInputError(f"y: expected {X.shape[0]} values (one per row of X), got {y.shape[0]}")
    n = X.shape[0]
    noise = float(np.exp(log_noise))
    Ky = kernel(X)
    Ky[np.diag_indices(n)] += noise
    try:
        factor = cho_factor(Ky, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise NumericalError("K + σ_n² I is not positive definite") from None
    alpha = cho_solve(factor, y, check_finite=False)
    value = -0.5 * y @ alpha - np.sum(np.log(np.diag(factor[0]))) - 0.5 * n * np.log(2 * np.pi)
    if not grad:
        return float(value)
    A = np.outer(alpha, alpha) - cho_solve(factor, np.eye(n), check_finite=False)
    dK = kernel.grad_params(X)
    g = np.array([0.5 * np.sum(A * dK_j) for dK_j in dK] + [0.5 * noise * np.trace(A)])
    return float(value), g


@dataclass(frozen=True)
class RegressionFit:
    """A fitted GP regression: ``kind``, ``lengthscales (d,)`` (unit-box units), ``variance``,
    ``noise_variance`` ``σ_n²`` and the maximised ``log_likelihood``."""

    kind: str
    lengthscales: np.ndarray
    variance: float
    noise_variance: float
    log_likelihood: float

    @property
    def kernel(self):
        return kernel_of(self.kind, self.lengthscales, self.variance)


def fit_regression(kind: str, X, y, *, starts=(0.2,), maxiter: int = 60, fit_variance: bool = False) -> RegressionFit:
    """Maximise :func:`log_marginal_likelihood` over log-lengthscales, ``log σ_n²`` and, with
    ``fit_variance``, the log-variance (L-BFGS-B, bounds of :mod:`visiontune.reproduction.gp.kernels` and
    :data:`NOISE_BOUNDS`), one start per initial lengthscale in ``starts`` (all dimensions equal,
    variance 1, ``σ_n² = 1e-3``).

    The variance is held at 1 by default: the targets are scaled to variance 1 over the domain,
    and on 1000 noise-free points a free variance runs to its bound (1e4) with long lengthscales
    (the interpolation regime), a prior that makes no sense for the probit ``Φ(g)`` of the sweeps."""
    X = points("X", X)
    y = finite_array("y", y).reshape(-1)
    best = None
    for ls0 in starts:
        k0 = kernel_of(kind, np.full(X.shape[1], float(ls0)), 1.0, fixed_variance=not fit_variance)
        theta0 = np.append(k0.params, np.log(1e-3))
        bounds = np.vstack([k0.bounds, NOISE_BOUNDS])

        def objective(theta, k0=k0):
            try:
                v, g = log_marginal_likelihood(k0.with_params(theta[:-1]), theta[-1], X, y)
            except NumericalError:
                return 1e25, np.zeros_like(theta)
            return -v, -g

        res = minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter})
        if best is None or res.fun < best[0]:
            best = (res.fun, res.x)
    if best is None or best[0] >= 1e25:
        raise NumericalError(f"fit_regression: no start of the {kind} fit gave a positive-definite K_y")
    kernel = kernel_of(kind, np.ones(X.shape[1]), fixed_variance=not fit_variance).with_params(best[1][:-1])
    return RegressionFit(
        kind, np.array(kernel.lengthscales), float(kernel.variance), float(np.exp(best[1][-1])), float(-best[0])
    )


def predict_mean(fit: RegressionFit, X, y, X_test) -> np.ndarray:
    """Predictive mean ``μ* = K(X*, X) (K + σ_n² I)⁻¹ y`` (R&W Eq. 2.25), ``(m,)``."""
    X, X_test = points("X", X), points("X_test", X_test)
    y = finite_array("y", y).reshape(-1)
    kernel = fit.kernel
    Ky = kernel(X)
    Ky[np.diag_indices(X.shape[0])] += fit.noise_variance
    alpha = cho_solve(cho_factor(Ky, lower=True, check_finite=False), y, check_finite=False)
    return kernel(X_test, X) @ alpha


@dataclass(frozen=True)
class KernelChoice:
    """The selected kernel of one function: ``function`` name, ``kind`` (lowest test RMSE),
    ``lengthscales (d,)`` on the unit box, ``variance``, ``noise_variance``, and ``rmse``:
    kind -> test RMSE of every kind compared."""

    function: str
    kind: str
    lengthscales: np.ndarray
    variance: float
    noise_variance: float
    rmse: dict

    def kernel(self):
        """The selected stationary kernel on ``[0, 1]^d``."""
        return kernel_of(self.kind, self.lengthscales, self.variance)


def design(function, n_train: int = N_TRAIN, n_test: int = N_TEST, seed: int = SEED):
    """``(U_train (n_train, d), y_train, U_test (n_test, d), y_test)``: uniform points on the unit box
    and the scaled target, drawn with ``default_rng([seed, crc32(name)])``."""
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        check_int(name, v, lo=2, whole_float=True)
    rng = np.random.default_rng([int(seed), zlib.crc32(function.name.encode())])
    U = rng.random((int(n_train) + int(n_test), function.dimension))
    y = function.scaled(function.lower + U * (function.upper - function.lower))
    if not np.all(np.isfinite(y)):
        raise NumericalError(f"{function.name}: non-finite scaled values on the random design")
    return U[:n_train], y[:n_train], U[n_train:], y[n_train:]


def select_kernel(name: str, n_train: int = N_TRAIN, n_test: int = N_TEST, seed: int = SEED) -> KernelChoice:
    """Fit every kind of :data:`KINDS` on ``n_train`` points of function ``name`` and keep the one
    with the lowest RMSE ``sqrt(mean((μ* - y*)²))`` on ``n_test`` other points (module docstring)."""
    function = get_function(name)
    U, y, U_test, y_test = design(function, n_train, n_test, seed)
    fits, rmse = {}, {}
    for kind in KINDS:
        fits[kind] = fit_regression(kind, U, y)
        rmse[kind] = float(np.sqrt(np.mean((predict_mean(fits[kind], U, y, U_test) - y_test) ** 2)))
    kind = min(KINDS, key=lambda k: rmse[k])
    f = fits[kind]
    return KernelChoice(name, kind, f.lengthscales, f.variance, f.noise_variance, rmse)


def _entry(choice: KernelChoice) -> dict:
    return {
        "kind": choice.kind,
        "lengthscales": [float(v) for v in choice.lengthscales],
        "variance": choice.variance,
        "noise_variance": choice.noise_variance,
        "rmse": {k: float(v) for k, v in choice.rmse.items()},
    }


def agreement_with_table_s1(choices: dict) -> tuple[float, list[str]]:
    """Fraction of functions whose selected ``kind`` equals table S1's kernel column
    (:attr:`TestFunction.kernel`), and the names of those that differ. ``choices``: name -> kind."""
    if not choices:
        raise InvalidInputError("choices: expected at least one function")
    differ = [n for n, kind in choices.items() if get_function(n).kernel != kind]
    return 1.0 - len(differ) / len(choices), differ


def compute_table(names=None, n_train: int = N_TRAIN, n_test: int = N_TEST, seed: int = SEED, jobs: int = 2) -> dict:
    """The JSON-ready table of :func:`select_kernel` for ``names`` (all functions by default),
    run with ``jobs`` joblib processes."""
    from joblib import Parallel, delayed

    names = list(FUNCTIONS) if names is None else list(names)
    start = time.perf_counter()
    found = Parallel(n_jobs=jobs)(delayed(select_kernel)(n, n_train, n_test, seed) for n in names)
    choices = {c.function: _entry(c) for c in found}
    rate, differ = agreement_with_table_s1({n: e["kind"] for n, e in choices.items()})
    return {
        "description": "GP regression (Gaussian noise) on the scaled function over the unit box; kernel kind "
        "with the lowest test RMSE (Fauvel & Chalk (contextual BO) §4, table S1). lengthscales in unit-box units.",
        "command": COMMAND,
        "n_train": int(n_train),
        "n_test": int(n_test),
        "seed": int(seed),
        "seconds": round(time.perf_counter() - start, 1),
        "agreement_with_table_s1": rate,
        "differ_from_table_s1": differ,
        "functions": choices,
    }


def load_choices() -> dict[str, KernelChoice]:
    """The stored choices of ``visiontune/data/bench_kernels.json``, name -> :class:`KernelChoice`."""
    try:
        text = resources.files(RESOURCE[0]).joinpath(RESOURCE[1]).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"bench_kernels.json is missing; regenerate it with `{COMMAND}`") from None
    table = json.loads(text)
    return {
        name: KernelChoice(
            name,
            e["kind"],
            np.array(e["lengthscales"], dtype=float),
            float(e["variance"]),
            float(e["noise_variance"]),
            dict(e["rmse"]),
        )
        for name, e in table["functions"].items()
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: regenerate the kernel table (module docstring)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    parser.add_argument("--functions", nargs="+", default=None, metavar="NAME")
    parser.add_argument("--n-train", type=int, default=N_TRAIN)
    parser.add_argument("--n-test", type=int, default=N_TEST)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    table = compute_table(args.functions, args.n_train, args.n_test, args.seed, args.jobs)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(
        f"wrote {args.output}: {len(table['functions'])} functions in {table['seconds']} s; "
        f"agreement with table S1 {100 * table['agreement_with_table_s1']:.0f}%"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
