"""Benchmark: probit GP fit + predict on a simulated refraction (plain script, prints medians).

Data: n = 260 binary answers, inputs (s, S, C): lens (S, C) uniform in [-4, 4]^2 diopters,
letter size s uniform in [-1, 2] logMAR, answer ~ Bernoulli(P) with
P = 1/26 + 25/26 Φ(5 (s - log10(1 + blur²))), blur = sqrt((ΔS² + (ΔS + ΔC)²) / 2)
(Fauvel & Chalk (contextual BO) §5; the acuity model of docs/design.md). Kernel: refraction kernel θ s s' + k_SE
(Eq. 15). Timed: ProbitGP(...) construction (inference) + predict at 1000 test points; the warm start
refits 260 answers from the model of the first 259 (one new trial in a session).

Run: OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/bench_gp.py [--repeats 30]
(one BLAS thread is faster at these sizes on a shared 2-core machine). Prints the wall-time
median and minimum of each step, the median CPU time of the process, and the load average
(timings on a shared machine are noisy: compare minima and CPU times across runs).

Target: Laplace cold fit + predict at 1000 points <= 15 ms (median).

Memory note: on this VM, freshly mapped pages cost ~1 ms per 2 MB array (glibc returns freed
memory at the top of the heap to the system and faults it in again). ``--keep-heap`` sets
glibc's trim/mmap thresholds to 256 MB for the run (``mallopt``), as a launcher could, to show
how much of the time is page faults.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import time

import numpy as np
from scipy.special import ndtr

from visiontune.reproduction.gp.ep import expectation_propagation
from visiontune.reproduction.gp.kernels import refraction_kernel
from visiontune.reproduction.gp.laplace import laplace_mode, predict_latent
from visiontune.reproduction.gp.model import ProbitGP


def simulate_refraction(n: int, rng: np.random.Generator, best=(1.5, -1.0), slope=5.0, n_letters=26):
    """``X (n, 3)`` columns (s, S, C) and answers ``y (n,)`` of a simulated patient with best correction ``best``."""
    lens = rng.uniform(-4.0, 4.0, size=(n, 2))
    s = rng.uniform(-1.0, 2.0, size=n)
    d_sphere = lens[:, 0] - best[0]
    d_cyl = lens[:, 1] - best[1]
    blur = np.sqrt(0.5 * (d_sphere**2 + (d_sphere + d_cyl) ** 2))
    gamma = 1.0 / n_letters
    p = gamma + (1.0 - gamma) * ndtr(slope * (s - np.log10(1.0 + blur**2)))
    y = (rng.uniform(size=n) < p).astype(float)
    return np.column_stack([s, lens]), y


def _median_ms(fn, repeats: int) -> _Timing:
    fn()  # warm-up
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return _Timing(1e3 * float(np.median(times)), 1e3 * float(np.min(times)), 1e3 * float(np.median(cpu)))


class _Timing(float):
    """A wall-time median in ms that also remembers the fastest repeat and the median CPU time
    (prints as ``median (min ..., cpu ...)``)."""

    def __new__(cls, median, fastest, cpu=float("nan")):
        obj = super().__new__(cls, median)
        obj.fastest = fastest
        obj.cpu = cpu
        return obj

    def __format__(self, spec):
        return f"{float(self):{spec}} (min {self.fastest:.2f}, cpu {self.cpu:.2f})"


def keep_heap(threshold: int = 256 << 20) -> bool:
    """Ask glibc to keep freed memory (``mallopt`` M_TRIM_THRESHOLD and M_MMAP_THRESHOLD);
    returns False where that is not available."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(libc.mallopt(M_TRIM_THRESHOLD, threshold)) and bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"
    except OSError:
        return "unknown"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--n", type=int, default=260)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--keep-heap", action="store_true", help="glibc: keep freed memory (see module docstring)")
    args = parser.parse_args(argv)
    if args.keep_heap:
        print(f"keep-heap: {'on' if keep_heap() else 'not available'}")
    print(f"load average {load_average()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    rng = np.random.default_rng(0)
    X, y = simulate_refraction(args.n, rng)
    Xs = np.column_stack([np.full(args.m, 0.0), rng.uniform(-4, 4, size=(args.m, 2))])
    kernel = refraction_kernel(1.0, [1.5, 1.5], 2.0)
    print(f"n = {args.n} answers, {args.m} test points, {args.repeats} repeats, kernel {kernel!r}")
    for inference in ("laplace", "ep"):
        previous = ProbitGP(kernel, X[:-1], y[:-1], inference)
        warm = previous.warm_start_state

        def cold():
            ProbitGP(kernel, X, y, inference).predict(Xs)

        def warm_fit():
            ProbitGP(kernel, X, y, inference, warm_start=warm).predict(Xs)

        iters_cold = ProbitGP(kernel, X, y, inference)._approx.n_iter
        iters_warm = ProbitGP(kernel, X, y, inference, warm_start=warm)._approx.n_iter
        print(
            f"{inference:8s} fit+predict median: cold {_median_ms(cold, args.repeats):7.2f} ms "
            f"({iters_cold} iterations), warm start {_median_ms(warm_fit, args.repeats):7.2f} ms "
            f"({iters_warm} iterations)"
        )
    print(f"load average {load_average()}")
    model = ProbitGP(kernel, X, y)
    print(f"predict only (laplace): {_median_ms(lambda: model.predict(Xs), args.repeats):.2f} ms")
    K, k_star, k_diag = kernel(X), kernel(X, Xs), kernel.diag(Xs)
    kernels_ms = _median_ms(lambda: (kernel(X), kernel(X, Xs), kernel.diag(Xs)), args.repeats)
    print(f"kernel evaluations only (K, k*, k**): {kernels_ms:.2f} ms")
    for name, engine in (("laplace", laplace_mode), ("ep", expectation_propagation)):
        print(
            f"engine only, Gram matrices given ({name}): "
            f"{_median_ms(lambda: predict_latent(engine(K, y), k_star, k_diag), args.repeats):.2f} ms"
        )


if __name__ == "__main__":
    main()
