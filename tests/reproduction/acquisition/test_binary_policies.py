"""Policies: composition, context rules, the reported solution, problem/query values, the CLI listing."""

import argparse
import dataclasses
import json

import numpy as np
import pytest
from acq_helpers import probit_model
from scipy import stats
from scipy.stats import norm

from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.acquisition.binary_policies import (
    BALD,
    Data,
    FixedContext,
    JointBALD,
    Problem,
    Query,
    RandomContext,
    RandomX,
    Sequential,
    UCBPhi,
)
from visiontune.reproduction.acquisition.cli import add_arguments, run
from visiontune.reproduction.acquisition.solution import solution

CTX = Problem(box=[[-2.0, 2.0]], context_box=[[0.0, 1.0]], reference_context=[0.5])


def test_ucb_ald_is_one_line_and_is_the_registered_policy():
    model = probit_model(1, n=20, seed=1, context=True)
    data = Data(model.X, model.y)
    mine = Sequential(UCBPhi(beta=norm.ppf(0.95)), BALD())
    q1 = mine(model, CTX, data, np.random.default_rng(3))
    q2 = registry.make("UCB-ALD", n_initial=0)(model, CTX, data, np.random.default_rng(3))
    assert q1 == q2
    # x maximises UCB_Phi at the reference context (dense grid oracle)
    grid = np.linspace(-2, 2, 4001)[:, None]
    ucb = F.at_context(lambda Z: F.ucb_phi(model, Z, norm.ppf(0.95)), [0.5])
    assert ucb(q1.x[None])[0][0] >= ucb(grid)[0].max() - 1e-3
    # s maximises BALD at that x
    s_grid = np.linspace(0, 1, 2001)[:, None]
    info = F.over_context(lambda Z: F.bald(model, Z), q1.x)
    assert info(q1.s[None])[0][0] >= info(s_grid)[0].max() - 1e-4


def test_bald_context_seeks_uncertain_f_not_a_known_coin_flip():
    # With k = s s' k(x, x'), f(0, x) = 0 exactly: mu_c = 1/2 at s = 0 but nothing to learn there.
    model = probit_model(1, n=30, seed=2, context=True)
    x = np.array([0.3])
    s = BALD().choose_context(model, CTX, x, np.random.default_rng(0))
    p0 = F.mean_probability(model, [[0.0, 0.3]])[0][0]
    assert p0 == pytest.approx(0.5)
    assert F.bald(model, [[0.0, 0.3]])[0][0] == pytest.approx(0.0, abs=1e-12)
    assert s[0] > 0.2
    s_grid = np.linspace(0, 1, 2001)
    info = F.bald(model, np.column_stack([s_grid, np.full_like(s_grid, 0.3)]))[0]
    assert F.bald(model, [[s[0], 0.3]])[0][0] >= info.max() - 1e-4
    _, var = model.predict([[s[0], 0.3], [0.0, 0.3]])
    assert var[0] > var[1]


def test_joint_bald_maximises_information_over_s_and_x():
    model = probit_model(1, n=15, seed=5, context=True)
    q = JointBALD()(model, CTX, None, np.random.default_rng(0))
    g1, g2 = np.meshgrid(np.linspace(0, 1, 201), np.linspace(-2, 2, 401))
    grid_max = F.bald(model, np.column_stack([g1.ravel(), g2.ravel()]))[0].max()
    assert F.bald(model, [np.r_[q.s, q.x]])[0][0] >= 0.99 * grid_max


def test_solution_is_the_argmax_of_the_success_probability_at_the_reference_context():
    model = probit_model(1, n=40, seed=4, context=True)
    x_hat = solution(model, CTX, np.random.default_rng(0))
    grid = np.linspace(-2, 2, 4001)
    p = F.mean_probability(model, np.column_stack([np.full_like(grid, 0.5), grid]))[0]
    assert F.mean_probability(model, [[0.5, x_hat[0]]])[0][0] >= p.max() - 1e-6


def test_random_rules_are_uniform_and_fixed_context_is_the_reference():
    rng = np.random.default_rng(0)
    xs = np.array([RandomX().choose_x(None, CTX, rng)[0] for _ in range(400)])
    ss = np.array([RandomContext().choose_context(None, CTX, 0.0, rng)[0] for _ in range(400)])
    assert stats.kstest((xs + 2) / 4, "uniform").pvalue > 1e-3
    assert stats.kstest(ss, "uniform").pvalue > 1e-3
    assert FixedContext().choose_context(None, CTX, 0.0, rng).tolist() == [0.5]
    assert FixedContext(s=[0.9]).choose_context(None, CTX, 0.0, rng).tolist() == [0.9]
    with pytest.raises(InvalidInputError, match="s"):
        FixedContext(s=[1.5]).choose_context(None, CTX, 0.0, rng)
    q = Sequential(RandomX())(None, CTX, None, rng)  # no context rule: the reference context
    assert q.s.tolist() == [0.5]


def test_problem_and_query_validate_and_are_immutable():
    with pytest.raises(ConfigurationError, match="reference_context"):
        Problem(box=[[0, 1]], context_box=[[0, 1]])
    with pytest.raises(InvalidInputError, match="reference_context"):
        Problem(box=[[0, 1]], context_box=[[0, 1]], reference_context=[2.0])
    with pytest.raises(ConfigurationError, match="scenario"):
        Problem(box=[[0, 1]], scenario="contextual-binary")
    with pytest.raises(InvalidInputError, match="box"):
        Problem(box=[[1, 0]])
    assert Problem(box=[[0, 1]]).scenario == "binary" and CTX.scenario == "contextual-binary"
    assert CTX.input_box.tolist() == [[0.0, 1.0], [-2.0, 2.0]]
    assert CTX.model_input([0.25]).tolist() == [0.5, 0.25]
    q = Query(x=[1.0, 2.0], s=[0.5])
    with pytest.raises(ValueError, match="read-only"):
        q.x[0] = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.x = np.zeros(2)
    assert q == Query(x=[1.0, 2.0], s=[0.5]) and q != Query(x=[1.0, 2.0])
    with pytest.raises(InvalidInputError, match="x"):
        Query(x=[np.nan])
    with pytest.raises(InvalidInputError, match="y"):
        Data([[0.0]], [2.0])
    with pytest.raises(InvalidInputError, match="rng"):
        Sequential(RandomX())(None, CTX, None, 0)
    with pytest.raises(ConfigurationError, match="unknown"):
        registry.make("no-such-policy")


def test_cli_lists_every_policy(capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run(parser.parse_args(["--json"])) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == registry.names()
    assert all(r["source"] for r in rows)
    assert run(parser.parse_args(["--scenario", "contextual-binary"])) == 0
    out = capsys.readouterr().out
    assert "UCB-ALD" in out and "UCB_f" not in out


def test_thompson_x_maximises_its_posterior_sample_at_the_reference_context():
    from visiontune.reproduction.acquisition.binary_policies import ThompsonX
    from visiontune.reproduction.gp.sampling import sample_posterior_functions

    model = probit_model(1, n=20, seed=6, context=True)
    rule = ThompsonX(n_basis=256)
    xs = [rule.choose_x(model, CTX, np.random.default_rng(k))[0] for k in range(3)]
    assert len(set(np.round(xs, 6))) == 3  # a new sample path per decision
    # the same seed rebuilds the same sample path (drawn first): x is its argmax at s0
    sample = sample_posterior_functions(model, CTX.input_box, 1, np.random.default_rng(0), n_basis=256)
    grid = np.linspace(-2, 2, 4001)
    values = sample(np.column_stack([np.full_like(grid, 0.5), grid]))
    assert sample([[0.5, xs[0]]])[0] >= values.max() - 1e-3 * max(1.0, abs(values.max()))


def test_rule_settings_are_validated_at_construction():
    with pytest.raises(InvalidInputError, match="beta"):
        UCBPhi(beta=-1.0)
    with pytest.raises(InvalidInputError, match="n_initial"):
        Sequential(RandomX(), n_initial=-1)
    with pytest.raises(TypeError):
        UCBPhi(0.95)  # settings are keyword-only: UCBPhi(beta=...)
    with pytest.raises(InvalidInputError, match="X"):
        Data(np.zeros(3), np.zeros(3))
