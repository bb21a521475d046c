"""Named refraction policies: UCB-ALD-SL and TS-ALD-SL (the paper's kernel with 2 D SE
lengthscales) run through the one trial loop wherever a refraction policy name is accepted;
UCB-ALD-PV (the power-vector kernel) keeps its name and its shipped hyperparameters but is refused
by the loop, whose GP engine has the paper's kernel only; the estimate of a run; replaying a log."""

from __future__ import annotations

import json

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.loop import Answer, MemoryLog, Refraction
from visiontune.refraction.trial import Trial
from visiontune.reproduction import gp_refraction_run as R
from visiontune.reproduction.acquisition import acquisition_functions as F
from visiontune.reproduction.acquisition import registry
from visiontune.reproduction.engines import gp_hyperparameters as H
from visiontune.reproduction.gp import ProbitGP
from visiontune.reproduction.gp.transformed import refraction_power_vector_kernel


def test_named_fix_is_a_refraction_policy_name():
    names = R.refraction_policy_names()
    assert "UCB-ALD-PV" in names and set(registry.names("contextual-binary")) <= set(names)
    assert R.resolve_policy("ucb-ald-pv") == R.resolve_policy(" UCB-ALD-pv ") == R.UCB_ALD_PV
    assert R.policy_kernel("ucb-ald-pv") == ("UCB-ALD", R.KERNEL_POWER_VECTOR)
    assert R.policy_kernel("ts-ald") == ("TS-ALD", R.KERNEL_SE)
    assert R.resolve_policy("ucb-ald-sl") == R.UCB_ALD_SL
    assert R.policy_kernel("UCB-ALD-SL") == ("UCB-ALD", R.KERNEL_SHORT_LENGTHSCALE)
    assert R.policy_kernel("ts-ald-sl") == ("TS-ALD", R.KERNEL_SHORT_LENGTHSCALE)
    assert "UCB-ALD-PV" not in registry.names()  # the policy rule is UCB-ALD's; only the kernel differs


@pytest.mark.parametrize("named_policy, rule", [("UCB-ALD-SL", "UCB-ALD"), ("TS-ALD-SL", "TS-ALD")])
def test_sl_policies_are_their_rule_with_two_diopter_lengthscales(named_policy, rule):
    rx = Prescription(-1.0, 2.5, 180.0)
    named = R.run_refraction(named_policy, slope=4.0, trials=9, seed=5, true_rx=rx)
    spelled = R.run_refraction(rule, slope=4.0, trials=9, seed=5, true_rx=rx, kernel=R.KERNEL_SHORT_LENGTHSCALE)
    assert named.records == spelled.records and named.kernel_variant == R.KERNEL_SHORT_LENGTHSCALE
    paper = R.refraction_hyperparameters(4.0, 26)
    assert np.allclose(np.exp(named.final_model.kernel.params), [paper.theta, 2.0, 2.0, paper.variance])
    assert named.to_json_dict()["kernel"] == R.KERNEL_SHORT_LENGTHSCALE


@pytest.mark.parametrize("slope, n_alt", [(2.0, 10), (5.0, 26)])
def test_short_lengthscale_hyperparameters_keep_the_papers_fit_but_the_lengthscales(slope, n_alt):
    """Oracle: the Laplace evidence recomputed on the Fauvel & Chalk (contextual BO), §5.2 fitting data; it is below the
    maximum-likelihood fit's (which it must be, the fit being a maximum of it)."""
    paper = R.refraction_hyperparameters(slope, n_alt)
    hp = R.short_lengthscale_hyperparameters(slope, n_alt)
    assert (hp.theta, hp.variance, hp.lengthscales) == (paper.theta, paper.variance, (2.0, 2.0))
    assert hp == R.kernel_variant_hyperparameters(R.KERNEL_SHORT_LENGTHSCALE, slope, n_alt)
    X, y, _ = R.simulate_fit_data(slope, n_alt)
    assert ProbitGP(hp.kernel(), X, y).log_marginal_likelihood() == pytest.approx(hp.log_marginal_likelihood, abs=1e-6)
    assert hp.log_marginal_likelihood < paper.log_marginal_likelihood


@pytest.mark.parametrize(
    "call",
    [
        lambda: R.run_refraction("ucb-ald-pv", slope=5.0, trials=10, seed=2),
        lambda: R.run_refraction("UCB-ALD", slope=5.0, trials=10, seed=2, kernel=R.KERNEL_POWER_VECTOR),
        lambda: R.run_refraction("TS-ALD", slope=5.0, trials=7, seed=1, kernel=R.KERNEL_POWER_VECTOR),
        lambda: R.paper_protocol_text("UCB-ALD-PV", slope=5.0, trials=10),
    ],
)
def test_the_power_vector_kernel_is_refused_by_the_one_trial_loop(call):
    """The loop's GP engine has the paper's kernel only (Fauvel & Chalk (contextual BO), Eq. 15); UCB-ALD-PV ran in the
    standalone loop the experiment had before. Every spelling says so, naming the kernel."""
    with pytest.raises(InvalidInputError, match="refraction-power-vector-se.*one trial loop"):
        call()
    assert R.loop_policy("UCB-ALD-SL") == ("UCB-ALD", R.KERNEL_SHORT_LENGTHSCALE)
    assert R.LOOP_KERNEL_VARIANTS == (R.KERNEL_SE, R.KERNEL_SHORT_LENGTHSCALE)


def test_named_fix_refuses_another_kernel():
    with pytest.raises(InvalidInputError, match="runs on 'refraction-se-short-lengthscale'"):
        R.run_refraction("UCB-ALD-SL", slope=5.0, trials=2, seed=0, kernel=R.KERNEL_SE)
    with pytest.raises(InvalidInputError, match="runs on 'refraction-power-vector-se'"):
        R.run_refraction("UCB-ALD-PV", slope=5.0, trials=2, seed=0, kernel=R.KERNEL_SE)
    run = R.run_refraction("TS-ALD-SL", slope=5.0, trials=2, seed=0, kernel=R.KERNEL_SHORT_LENGTHSCALE)
    assert run.kernel_variant == R.KERNEL_SHORT_LENGTHSCALE and run.policy == "TS-ALD-SL"


def test_every_stored_slope_has_power_vector_hyperparameters(monkeypatch):
    monkeypatch.setattr(H, "fit_power_vector_hyperparameters", lambda *a, **k: pytest.fail("fit a stored slope"))
    H._fit_power_vector_cached.cache_clear()
    for n_alt in H.STORED_ALTERNATIVES:
        for slope in H.STORED_SLOPES:
            hp = H.kernel_variant_hyperparameters(H.KERNEL_POWER_VECTOR, slope, n_alt)
            assert (hp.slope, hp.n_alternatives, hp.n_answers, hp.seed) == (slope, n_alt, H.N_FIT, H.FIT_SEED)
            assert hp.theta > 0 and hp.variance > 0 and min(hp.lengthscales) > 0
            assert np.isfinite(hp.log_marginal_likelihood)


@pytest.mark.parametrize("slope, n_alt", [(1.0, 10), (5.0, 26), (8.0, 26)])
def test_shipped_power_vector_evidence_is_recomputed_and_stationary(slope, n_alt):
    """Oracle: the Laplace evidence of the stored values, recomputed on the Fauvel & Chalk (contextual BO), §5.2 fitting
    data, equals the stored number; central differences in each log-hyperparameter are ~0 (a maximum)."""
    hp = R.kernel_variant_hyperparameters(R.KERNEL_POWER_VECTOR, slope, n_alt)
    X, y, _ = R.simulate_fit_data(slope, n_alt)
    kernel = refraction_power_vector_kernel(hp.theta, np.array(hp.lengthscales), hp.variance)
    assert ProbitGP(kernel, X, y).log_marginal_likelihood() == pytest.approx(hp.log_marginal_likelihood, abs=1e-6)
    h = 1e-3
    for p in range(kernel.n_params):
        e = np.zeros(kernel.n_params)
        e[p] = h
        up = ProbitGP(kernel.with_params(kernel.params + e), X, y).log_marginal_likelihood()
        down = ProbitGP(kernel.with_params(kernel.params - e), X, y).log_marginal_likelihood()
        assert abs(up - down) / (2 * h) < 0.05, kernel.param_names[p]


def test_regenerating_one_variant_keeps_the_other(tmp_path, monkeypatch):
    monkeypatch.setattr(
        H,
        "fit_refraction_hyperparameters",
        lambda a, n, **k: H.RefractionHyperparameters(a, n, a, (1.0, 2.0), 3.0, -4.0),
    )
    monkeypatch.setattr(
        H,
        "fit_power_vector_hyperparameters",
        lambda a, n, **k: H.RefractionHyperparameters(a, n, 2 * a, (5.0, 6.0), 7.0, -8.0),
    )
    path = H.regenerate(tmp_path / "hp.json", slopes=(1.0, 2.0), alternatives=(26,))
    doc = json.loads(path.read_text())
    assert [e["theta"] for e in doc["entries"]] == [1.0, 2.0]
    assert [e["theta"] for e in doc["power_vector_entries"]] == [2.0, 4.0]
    monkeypatch.setattr(
        H,
        "fit_power_vector_hyperparameters",
        lambda a, n, **k: H.RefractionHyperparameters(a, n, 10 * a, (5.0, 6.0), 7.0, -8.0),
    )
    monkeypatch.setattr(H, "fit_refraction_hyperparameters", lambda *a, **k: pytest.fail("refit the SE section"))
    H.regenerate(path, slopes=(3.0,), alternatives=(10,), kernels=[H.KERNEL_POWER_VECTOR])
    doc = json.loads(path.read_text())
    assert [e["theta"] for e in doc["entries"]] == [1.0, 2.0]
    assert [(e["slope"], e["n_alternatives"], e["theta"]) for e in doc["power_vector_entries"]] == [(3.0, 10, 30.0)]
    with pytest.raises(InvalidInputError, match="kernel"):
        H.regenerate(path, kernels=["matern"])
    with pytest.raises(InvalidInputError, match="kernels"):
        H.regenerate(path, kernels=[H.KERNEL_SHORT_LENGTHSCALE])


def test_main_refits_only_the_named_variant(tmp_path, monkeypatch):
    """``python -m visiontune.reproduction.engines.gp_hyperparameters --regenerate --kernel ...``."""
    seen = []
    monkeypatch.setattr(H, "regenerate", lambda path, *, kernels, progress: seen.append((path, kernels)) or tmp_path)
    assert H.main(["--regenerate", "--kernel", H.KERNEL_POWER_VECTOR, "--output", str(tmp_path / "x.json")]) == 0
    assert seen == [(str(tmp_path / "x.json"), [H.KERNEL_POWER_VECTOR])]
    assert H.main([]) == 0 and len(seen) == 1  # without --regenerate: help only, nothing refit


# --------------------------------------------------------------------- estimate and replay


def test_estimate_is_the_argmax_of_the_success_probability():
    """Oracle: a dense 321 x 321 lens grid of mu_c(s0, x) on the final model of each run; the
    estimate is the session's (best lens of the loop's GP engine), not rounded to lens steps."""
    g = np.linspace(-4.0, 4.0, 321)
    lenses = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    for name, seed in (("UCB-ALD", 1), ("UCB-ALD-SL", 4)):
        run = R.run_refraction(name, slope=5.0, trials=25, seed=seed)
        model = run.final_model
        p = F.mean_probability(model, np.column_stack([np.zeros(len(lenses)), lenses]), grad=False)
        found = F.mean_probability(model, [[0.0, *run.records[-1].estimate]], grad=False)[0]
        assert found >= p.max() - 1e-6


def test_a_log_replays_to_the_same_next_query():
    """The model is a pure function of the log: a fresh Refraction over a MemoryLog holding a
    run's first 14 answers proposes the live run's 15th query, and refitting the kernel from
    scratch on the answers gives the live run's final model."""
    live = R.run_refraction("UCB-ALD-SL", slope=5.0, trials=15, seed=6)
    protocol = R.paper_protocol("UCB-ALD-SL", slope=5.0, trials=15, seed=6)
    log = MemoryLog()
    for k, r in enumerate(live.records[:14]):
        log.record(Trial(k, r.s, Prescription(*r.x, 180.0), "A", r.correct))
    replay = Refraction(log, protocol, seed=6)
    q = replay.next_query()
    assert q.index == 14 and (q.s_logmar, (q.lens.sphere_d, q.lens.cylinder_d)) == (
        live.records[14].s,
        live.records[14].x,
    )
    replay.record(Answer(correct=live.records[14].correct))
    assert replay.current_estimate(with_region=False).lens.power_vector_array() == pytest.approx(
        Prescription(*live.records[14].estimate, 180.0).power_vector_array(), abs=1e-12
    )
    X = np.array([[r.s, *r.x] for r in live.records])
    y = np.array([float(r.correct) for r in live.records])
    kernel = H.refraction_kernel_variant(H.KERNEL_SHORT_LENGTHSCALE, slope=5.0)
    assert np.allclose(ProbitGP(kernel, X, y).predict(X)[0], live.final_model.predict(X)[0], atol=1e-6)
