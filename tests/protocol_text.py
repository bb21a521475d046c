"""The small fixed-hyperparameter protocol that the engine, app and bundle tests run (TOML text)."""

from __future__ import annotations


def small_protocol_text(
    name: str,
    *,
    purpose: str,
    initial_random_trials: int = 3,
    max_trials: int = 40,
    logmar: tuple[float, float] = (-1.0, 2.0),
) -> str:
    """A ``ucb-ald`` protocol over S, C in [-4, 4] D (axis 90°), Sloan letters, seed 11, the 2 D
    lengthscales of ``clinical-sloan``; ``purpose`` goes into its description."""
    return f"""
name = "{name}"
description = "small fixed-hyperparameter protocol for {purpose}"
policy = "ucb-ald"
seed = 11
initial_random_trials = {initial_random_trials}

[search_space]
sphere_d = [-4.0, 4.0]
cylinder_d = [-4.0, 4.0]
axis_deg = 90.0

[context_space]
logmar = [{logmar[0]}, {logmar[1]}]

[letters]
set = "sloan"
n_alternatives = 10

[stopping]
max_trials = {max_trials}

[model]
kernel = "refraction-se"
hyperparameters = {{ theta = 25.0, lengthscales = [2.0, 2.0], variance = 9.0 }}
"""
