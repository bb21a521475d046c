"""The shortest interval of weighted draws (visiontune.refraction.estimate.shortest_interval)
against closed forms: the exponential's 95% HPD interval is [0, -ln 0.05], equally weighted or
by importance weights; a normal's is the central ±1.96 σ; it is never wider than the central one."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune.refraction.estimate import shortest_interval, weighted_quantile


def test_exponential_hpd_is_zero_to_minus_log_alpha():
    x = np.random.default_rng(0).exponential(1.0, 200_000)
    lo, hi = shortest_interval(x, np.ones_like(x), 0.95)
    assert lo == pytest.approx(0.0, abs=1e-3) and hi == pytest.approx(-np.log(0.05), abs=0.03)


def test_importance_weights_give_the_same_interval():
    x = np.random.default_rng(1).uniform(0.0, 20.0, 400_000)
    lo, hi = shortest_interval(x, np.exp(-x), 0.95)  # target density exp(-x), as above
    assert lo == pytest.approx(0.0, abs=1e-3) and hi == pytest.approx(-np.log(0.05), abs=0.03)


def test_a_normal_gives_the_central_interval_and_skew_a_shorter_one():
    x = np.random.default_rng(2).normal(1.0, 0.5, 200_000)
    lo, hi = shortest_interval(x, np.ones_like(x), 0.95)
    assert hi - lo == pytest.approx(2 * 1.96 * 0.5, abs=0.01)  # the width is sharp in a sample; its place less so
    assert (lo + hi) / 2 == pytest.approx(1.0, abs=0.03)
    skewed = np.random.default_rng(3).gamma(2.0, 1.0, 100_000)
    w = np.ones_like(skewed)
    lo, hi = shortest_interval(skewed, w, 0.8)
    assert np.mean((skewed >= lo) & (skewed <= hi)) >= 0.8
    assert hi - lo < weighted_quantile(skewed, w, 0.9) - weighted_quantile(skewed, w, 0.1)
