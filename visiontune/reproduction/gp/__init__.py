"""gp layer: kernels, observation-space moments, probit GP inference, posterior sampling.

numpy/scipy only (docs/design.md, "Layers").
"""

from visiontune.reproduction.gp.fit import fit_hyperparameters
from visiontune.reproduction.gp.kernels import (
    Constant,
    Kernel,
    Linear,
    Matern32,
    Matern52,
    Preference,
    Product,
    SquaredExponential,
    Stationary,
    Sum,
    contextual_benchmark_kernel,
    refraction_kernel,
)
from visiontune.reproduction.gp.model import PreferenceGP, ProbitGP
from visiontune.reproduction.gp.moments import aleatoric_variance, bald, epistemic_variance, predictive_probability
from visiontune.reproduction.gp.sampling import (
    PosteriorSample,
    PosteriorSamples,
    prior_features,
    sample_posterior_functions,
)

__all__ = [
    "Constant",
    "Kernel",
    "Linear",
    "Matern32",
    "Matern52",
    "Preference",
    "PreferenceGP",
    "ProbitGP",
    "Product",
    "PosteriorSample",
    "PosteriorSamples",
    "SquaredExponential",
    "Stationary",
    "Sum",
    "aleatoric_variance",
    "bald",
    "contextual_benchmark_kernel",
    "epistemic_variance",
    "fit_hyperparameters",
    "predictive_probability",
    "prior_features",
    "refraction_kernel",
    "sample_posterior_functions",
]
