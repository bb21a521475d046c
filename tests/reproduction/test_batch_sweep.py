"""Batch-preferential sweeps (Fauvel & Chalk (binary/preferential BO) §4.3, table 3, m = 3): rankings drawn from the
Thurstone case V model, whose pairwise marginals are the probit duel model (checked by Monte Carlo), enter
the model as their m(m-1)/2 duels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from visiontune.errors import InvalidInputError
from visiontune.reproduction import sweep as S
from visiontune.reproduction.benchmark_functions import get_function
from visiontune.reproduction.gp import PreferenceGP


def test_ranking_pairs_follow_the_probit_duel_model_monte_carlo():
    g = np.array([0.6, 0.0, -0.4])
    rng = np.random.default_rng(0)
    n = 20000
    above = np.zeros((3, 3))
    for _ in range(n):
        order = S.sample_ranking(g, rng)
        pos = np.empty(3, dtype=int)
        pos[order] = np.arange(3)
        above += pos[:, None] < pos[None, :]
    for i in range(3):
        for j in range(3):
            if i != j:
                p = norm.cdf(g[i] - g[j])  # Fauvel & Chalk (binary/preferential BO), Eq. 5
                assert above[i, j] / n == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / n))


def test_ranking_rejects_bad_latents():
    with pytest.raises(InvalidInputError, match="latent"):
        S.sample_ranking([0.1], np.random.default_rng(0))
    with pytest.raises(InvalidInputError, match="latent"):
        S.sample_ranking([0.1, np.nan, 0.2], np.random.default_rng(0))


@pytest.mark.parametrize("rule", ["batch-MUC", "random-batch"])
def test_batch_run_feeds_each_ranking_as_its_duels(monkeypatch, rule):
    seen_rankings, seen_options = [], []
    real_rank, real_from = S.sample_ranking, PreferenceGP.from_ranking

    def record_rank(latent, rng):
        order = real_rank(latent, rng)
        seen_rankings.append((np.array(latent), order))
        return order

    def record_from(options):
        seen_options.append(np.array(options))
        return real_from(options)

    monkeypatch.setattr(S, "sample_ranking", record_rank)
    monkeypatch.setattr(PreferenceGP, "from_ranking", staticmethod(record_from))
    n = 4
    spec = S.RunSpec("t", "batch-preferential", rule, "six_hump_camel", 0, n, 2)
    record = S.run_one(spec)
    f = get_function("six_hump_camel")
    assert len(seen_rankings) == len(seen_options) == n
    for (latent, order), ranked in zip(seen_rankings, seen_options):
        assert ranked.shape == (3, 2)
        # the ranked options are the batch in the sampled order, and latent is g at the batch
        np.testing.assert_allclose(f.scaled(f.lower + ranked * (f.upper - f.lower)), latent[order], rtol=1e-12)
    assert record.scores.shape == (n,) and np.all(np.isfinite(record.scores))
    again = S.run_one(spec)
    np.testing.assert_array_equal(record.scores, again.scores)
