"""VisionTune: subjective refraction by contextual binary Bayesian optimization.

Built on Fauvel & Chalk, *Contextual Bayesian optimization with binary outputs*, and
*Efficient exploration in binary and preferential Bayesian optimization*.
"""

__version__ = "0.1.0"

from visiontune.errors import VisionTuneError  # noqa: E402

__all__ = ["VisionTuneError", "__version__"]
