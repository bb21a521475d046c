"""VisionTune: subjective refraction by contextual binary Bayesian optimization.

Built on Fauvel & Chalk, *Contextual Bayesian optimization with binary outputs*, and
*Efficient exploration in binary and preferential Bayesian optimization*.
"""

import os as _os

from visiontune.errors import VisionTuneError  # errors.py imports nothing: numpy is not loaded yet

__version__ = "0.1.0"

# The GP's linear algebra is many small solves: BLAS threads cost far more than they give on
# these sizes (one UCB-ALD decision: 33 ms single-threaded, 0.5-1 s with OpenBLAS's default
# threads on 2 cores). Effective only if numpy is not imported yet; the entry points import
# visiontune first. Parallelism comes from processes (joblib) instead.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

__all__ = ["VisionTuneError", "__version__"]
