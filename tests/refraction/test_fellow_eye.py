"""The second eye's priors from the first eye's posterior (``visiontune.refraction.fellow_eye``).

The summary is checked against moments computed here with numpy's weighted average on particles whose
distribution is known, the widening against its formula, the derived protocol against the values read
back and against every other setting of the protocol it came from, and the prior a session then draws
against the values written (Monte Carlo).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.refraction.particles import random_theta
from visiontune.errors import ProtocolError
from visiontune.refraction.fellow_eye import INTEROCULAR_SD, fellow_eye_protocol, fellow_eye_values
from visiontune.refraction.optics_engine import _model_spec
from visiontune.refraction.optics_model import (
    LOG_SENSITIVITY,
    LOG_SLOPE,
    VA0,
    OpticsModelSpec,
    ParticlePosterior,
)
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol, parse_protocol
from visiontune.refraction.start import StartingPoint


def _posterior(seed: int = 3, n: int = 4000, kappa: tuple | None = None) -> ParticlePosterior:
    """A posterior of known particles and random weights (``kappa``: ``(median, sigma)`` of a ln κ column)."""
    rng = np.random.default_rng(seed)
    post = ParticlePosterior(OpticsModelSpec(10, n_particles=n), StartingPoint(), seed)
    post.theta = random_theta(rng, n)
    post.log_w = rng.normal(0.0, 1.0, n)
    if kappa is not None:
        post.add_sensitivity(*kappa)
    return post


def _weighted(x, w):
    mean = np.average(x, weights=w)
    return mean, math.sqrt(np.average((x - mean) ** 2, weights=w))


def test_the_summary_is_the_weighted_moments_widened_by_the_difference_between_eyes():
    post = _posterior(kappa=(1.0, 0.7))
    w = np.exp(post.log_w)
    values = fellow_eye_values(post)
    va, va_sd = _weighted(post.theta[:, VA0], w)
    log_a, log_a_sd = _weighted(post.theta[:, LOG_SLOPE], w)
    log_k, log_k_sd = _weighted(post.theta[:, LOG_SENSITIVITY], w)
    assert values["model"]["best_acuity_mean"] == pytest.approx(va, abs=1e-4)
    assert values["model"]["best_acuity_sd"] == pytest.approx(min(math.hypot(va_sd, 0.08), 0.15), abs=1e-4)
    slope = values["psychometric.slope_prior"]
    assert slope["distribution"] == "lognormal" and slope["median"] == pytest.approx(math.exp(log_a), rel=1e-4)
    assert slope["sigma"] == pytest.approx(min(math.hypot(log_a_sd, 0.1), 0.4), abs=1e-4)
    kappa = values["comparisons.model"]
    assert kappa["sensitivity_median"] == pytest.approx(math.exp(log_k), rel=1e-4)
    assert kappa["sensitivity_sigma"] == pytest.approx(min(math.hypot(log_k_sd, 0.1), 0.7), abs=1e-4)
    assert kappa["sensitivity_second_median"] == 0.0


def test_a_posterior_as_wide_as_the_prior_leaves_the_prior_width():
    """The particles' spreads (``VA*`` uniform on 0.7 logMAR: sd 0.20; ``ln a`` sd 0.5) exceed the
    protocol's prior widths, which are then kept: the first eye only narrows."""
    values = fellow_eye_values(_posterior())
    assert values["model"]["best_acuity_sd"] == 0.15 and values["psychometric.slope_prior"]["sigma"] == 0.4
    assert "comparisons.model" not in values  # no ln κ column: the first eye asked no comparison


def test_a_narrow_posterior_is_widened_by_the_difference_between_eyes():
    post = _posterior()
    post.theta[:, VA0] = -0.1
    post.theta[:, LOG_SLOPE] = math.log(6.0)
    values = fellow_eye_values(post)
    assert values["model"] == {"best_acuity_mean": -0.1, "best_acuity_sd": INTEROCULAR_SD["best_acuity"]}
    assert values["psychometric.slope_prior"]["median"] == 6.0
    assert values["psychometric.slope_prior"]["sigma"] == INTEROCULAR_SD["log_slope"]


def _without(protocol, *names):
    """The protocol's settings but ``names`` and what only tells where it came from."""
    fields = {f.name: getattr(protocol, f.name) for f in dataclasses.fields(protocol)}
    for name in ("source", "source_text", *names):
        fields.pop(name)
    return fields


def test_the_second_eye_protocol_holds_the_values_and_nothing_else_changes():
    protocol = load_protocol(DEFAULT_PROTOCOL)
    post = _posterior(kappa=(1.0, 0.7))
    derived = fellow_eye_protocol(protocol, post, "OD, session 1")
    values = fellow_eye_values(post)
    assert derived.model == dataclasses.replace(protocol.model, **values["model"])
    assert (derived.slope_prior.median, derived.slope_prior.sigma) == (
        values["psychometric.slope_prior"]["median"],
        values["psychometric.slope_prior"]["sigma"],
    )
    comparison = derived.comparisons.comparison
    assert comparison == dataclasses.replace(protocol.comparisons.comparison, **values["comparisons.model"])
    assert _without(derived, "model", "slope_prior", "comparisons") == _without(
        protocol, "model", "slope_prior", "comparisons"
    )
    assert dataclasses.replace(derived.comparisons, comparison=protocol.comparisons.comparison) == protocol.comparisons
    assert "the patient's priors from OD, session 1" in derived.source
    assert derived.source_text.count("the patient's prior from OD, session 1 (model.fellow_eye_prior)") == 3
    assert parse_protocol(derived.source_text).model == derived.model  # the snapshot replays to the same


def _letters_only(slope_table: str) -> str:
    """The shipped letters-only protocol with its slope prior's table replaced by ``slope_table``."""
    text = load_protocol("clinical-sloan").source_text
    return text[: text.index("[psychometric.slope_prior]")] + slope_table


def test_a_fixed_slope_and_no_comparisons_become_a_lognormal_and_no_kappa():
    fixed = parse_protocol(_letters_only('[psychometric.slope_prior]\ndistribution = "fixed"\nvalue = 5.0\n'), "f.toml")
    derived = fellow_eye_protocol(fixed, _posterior(kappa=(1.0, 0.7)), "OD")
    assert derived.slope_prior.distribution == "lognormal" and derived.slope_prior.value is None
    assert derived.comparisons is None and "sensitivity" not in derived.source_text
    appended = fellow_eye_protocol(parse_protocol(_letters_only(""), "none.toml"), _posterior(), "OD")
    assert appended.slope_prior.median == fellow_eye_values(_posterior())["psychometric.slope_prior"]["median"]


def test_a_slope_prior_written_inline_is_refused_with_what_was_wrong():
    inline = _letters_only('[psychometric]\nslope_prior = { distribution = "fixed", value = 5.0 }\n')
    with pytest.raises(ProtocolError, match=r"could not be written into inline\.toml.*declare .*slope_prior.* twice"):
        fellow_eye_protocol(parse_protocol(inline, "inline.toml"), _posterior(), "OD")


def test_the_session_draws_its_prior_of_best_acuity_from_the_values_written():
    protocol = fellow_eye_protocol(load_protocol(DEFAULT_PROTOCOL), _posterior(), "OD")
    spec = _model_spec(protocol)
    assert (spec.va0_mean, spec.va0_sd) == (protocol.model.best_acuity_mean, protocol.model.best_acuity_sd)
    spec = dataclasses.replace(spec, va0_mean=-0.1, va0_sd=0.05, n_particles=20000)
    draws = ParticlePosterior(spec, StartingPoint(), 7).theta[:, VA0]
    assert abs(draws.mean() + 0.1) < 4 * 0.05 / math.sqrt(20000) and abs(draws.std() - 0.05) < 0.002


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("best_acuity_mean = 1.5", r"model\.best_acuity_mean: expected a number in \[-0\.3, 1\]"),
        ("best_acuity_sd = 0", r"model\.best_acuity_sd: expected a number in \[0\.01, 0\.5\]"),
        ('fellow_eye_prior = "yes"', r"model\.fellow_eye_prior"),
    ],
)
def test_bad_prior_keys_are_refused_naming_the_key(line, expected):
    text = load_protocol(DEFAULT_PROTOCOL).source_text.replace("[model]\n", f"[model]\n{line}\n", 1)
    with pytest.raises(ProtocolError, match=expected):
        parse_protocol(text, "bad.toml")
