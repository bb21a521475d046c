"""The last bits this CPU's kernels give, to show that an emulated CPU really takes other paths.

    python -m tests.kernel_fingerprint
    OPENBLAS_CORETYPE=Prescott NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4" python -m tests.kernel_fingerprint

Prints three figures: a digest of the Cholesky factor of a seeded 200x200 positive-definite matrix
(OpenBLAS's kernels), a digest of ``exp`` over 10^5 seeded values (NumPy's SIMD loops), and the
estimate of a stored validation run recomputed from its recorded answers (``exact_error_d``, D,
to 17 digits: a session's figure through both). .ci/run prints them under both settings before
its second, emulated pass of the replay tests.
"""

from __future__ import annotations

import hashlib

import numpy as np

from tests.stored_runs import STORED_CASES, stored_answers

#: The stored run whose recomputed estimate is printed (23 answers, letters and comparisons).
CASE = "clinical-validation-clinical-sloan-compare.sqlite/clinical-sloan-compare-seed1/adult-clinic/evr/2"


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def fingerprint() -> str:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 200))
    cholesky = np.linalg.cholesky(a @ a.T + 200.0 * np.eye(200))
    exp = np.exp(rng.uniform(-5.0, 5.0, 100_000))
    case = STORED_CASES[CASE]
    answers = stored_answers(case)
    estimate = case.recompute(answers["trials"], answers["stopped_by"])[0]["exact_error_d"]
    return f"cholesky {_digest(cholesky)}  exp {_digest(exp)}  session estimate error {estimate!r} D"


if __name__ == "__main__":
    print(fingerprint())
