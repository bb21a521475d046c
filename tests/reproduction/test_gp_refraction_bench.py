"""``visiontune bench refraction`` (Fauvel & Chalk (contextual BO), §5.3, Table 3): planning, the store, resume,
parallel runs, the stratified analysis over slopes (lower VA is better) and the command line."""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from visiontune import cli
from visiontune.errors import ConfigurationError, InvalidInputError, StoreError
from visiontune.reproduction import bench_cli
from visiontune.reproduction import gp_refraction_bench as RE
from visiontune.reproduction.gp_refraction_run import run_refraction
from visiontune.reproduction.paper_tables import REFRACTION_TABLE, REFRACTION_UCB_ALD, paper_order, side_by_side

TINY = RE.RefractionExperiment("tiny", ("UCB-ALD", "random-contextual"), (2.0, 5.0), n_seeds=2, trials=3)


def _blur_va(true_rx, estimate) -> float:
    """Closed form (contextual BO Eq. 12 + the acuity model of docs/design.md): VA = log10(1 + β²), β² = ½(ΔS² + (ΔS +
    ΔC)²)."""
    dS, dC = estimate[0] - true_rx[0], estimate[1] - true_rx[1]
    return float(np.log10(1.0 + 0.5 * (dS**2 + (dS + dC) ** 2)))


# ------------------------------------------------------------------ protocol and planning


def test_default_experiment_is_the_papers_protocol():
    e = RE.DEFAULT_EXPERIMENT
    assert e.rules == ("UCB-ALD", "TS-ALD", "UCB-random-context", "BALD", "TS-random-context", "random-contextual")
    np.testing.assert_allclose(e.slopes, np.linspace(1, 8, 8))
    assert (e.n_seeds, e.trials, e.n_alternatives) == (20, 260, 26)
    assert len(RE.plan(e)) == 960
    quick = RE.QUICK_EXPERIMENT
    assert quick.name != e.name and len(RE.plan(quick)) <= 100 and quick.trials <= 60


def test_plan_has_every_run_key_once():
    specs = RE.plan(TINY)
    keys = [s.key for s in specs]
    assert len(keys) == len(set(keys)) == 2 * 2 * 2
    assert {(k.rule, k.function, k.seed) for k in keys} == {
        (r, f"slope-{a:g}", s) for r in TINY.rules for a in TINY.slopes for s in TINY.seeds
    }
    assert {k.experiment for k in keys} == {"tiny"} and {k.scenario for k in keys} == {RE.SCENARIO}
    assert all(s.trials == 3 for s in specs)
    # seed-major: a sweep stopped part-way holds whole repetitions
    assert [s.seed for s in specs] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_subsets_keep_run_keys_and_other_trial_counts_do_not():
    full = RE.plan(TINY)
    sub = RE.plan(TINY.subset(rules=["ucb-ald"], slopes=[5.0], n_seeds=1))
    assert {s.key for s in sub} < {s.key for s in full}
    longer = TINY.subset(trials=7)
    assert longer.name == "tiny-7trials"
    assert not {s.key for s in RE.plan(longer)} & {s.key for s in full}
    assert TINY.subset(rules=["paper", "BALD"]).rules == RE.PAPER_RULES  # 'paper' expands, duplicates dropped


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"slopes": (0.0, 5.0)}, "slopes"),
        ({"slopes": (5.0, 5.0)}, "slopes"),
        ({"n_seeds": 0}, "seeds"),
        ({"trials": 0}, "trials"),
        ({"rules": ()}, "policies"),
    ],
)
def test_bad_experiments_name_the_argument(kwargs, name):
    base = dict(name="x", rules=("UCB-ALD",), slopes=(5.0,), n_seeds=1, trials=1)
    with pytest.raises(InvalidInputError, match=name):
        RE.RefractionExperiment(**{**base, **kwargs})
    with pytest.raises(InvalidInputError, match="policies"):
        TINY.subset(rules=["no-such-rule"])


def test_run_experiment_refuses_unregistered_rules_and_bad_jobs_before_running(tmp_path):
    unknown = RE.RefractionExperiment("x", ("no-such-rule",), (5.0,), n_seeds=1, trials=1)
    with RE.RefractionStore(tmp_path / "s.sqlite") as store:
        with pytest.raises(InvalidInputError, match="policies"):
            RE.run_experiment(unknown, store, jobs=1, progress=False)
        with pytest.raises(InvalidInputError, match="jobs"):
            RE.run_experiment(TINY, store, jobs=0, progress=False)
        assert store.count() == 0


# ------------------------------------------------------------------ one run and the store


def test_run_one_records_the_va_through_the_estimate_and_the_errors():
    spec = RE.RefractionSpec("t", "UCB-ALD", 5.0, 3, 4)
    res = RE.run_one(spec)
    ref = run_refraction("UCB-ALD", slope=5.0, trials=4, seed=3)
    np.testing.assert_array_equal(res.va_logmar, [r.va_logmar for r in ref.records])
    assert res.true_rx_d == (ref.true_rx.sphere_d, ref.true_rx.cylinder_d)
    assert res.estimate_d == tuple(ref.records[-1].estimate)
    assert res.sphere_error_d == pytest.approx(ref.sphere_error_d) and res.cylinder_error_d == pytest.approx(
        ref.cylinder_error_d
    )
    assert res.final_va_logmar == pytest.approx(_blur_va(res.true_rx_d, res.estimate_d), abs=1e-12)
    assert res.n_decisions == 4 and res.key == spec.key


def test_every_rule_and_slope_sees_the_same_patient_for_a_seed():
    a = RE.run_one(RE.RefractionSpec("t", "UCB-ALD", 2.0, 1, 1))
    b = RE.run_one(RE.RefractionSpec("t", "random-contextual", 7.0, 1, 1))
    c = RE.run_one(RE.RefractionSpec("t", "random-contextual", 7.0, 2, 1))
    assert a.true_rx_d == b.true_rx_d != c.true_rx_d


def test_store_round_trips_and_ignores_a_second_copy(tmp_path):
    res = RE.RefractionResult(
        RE.RefractionSpec("e", "BALD", 3.0, 0, 3).key, 3.0, np.array([0.5, 0.25, 1 / 3]), (1.25, -0.5), (1.0, 0.0), 2.5
    )
    with RE.RefractionStore(tmp_path / "s.sqlite") as store:
        assert store.add_result(res) is True
        assert store.add_result(res) is False
        assert store.count("e") == 1
        (back,) = store.results("e")
        rec = store.records("e")[0]  # the sweeps' view of the same run
    np.testing.assert_array_equal(back.va_logmar, res.va_logmar)
    assert (back.key, back.slope, back.true_rx_d, back.estimate_d) == (res.key, 3.0, (1.25, -0.5), (1.0, 0.0))
    assert back.sphere_error_d == 0.25 and back.cylinder_error_d == 0.5
    np.testing.assert_array_equal(rec.scores, res.va_logmar)
    assert rec.n_decisions == 3


def test_a_run_is_stored_whole_or_not_at_all(tmp_path):
    res = RE.RefractionResult(
        RE.RefractionSpec("e", "BALD", 3.0, 0, 2).key, 3.0, np.array([0.5, 0.25]), (1.25, -0.5), (1.0, 0.0), 1.0
    )
    with RE.RefractionStore(tmp_path / "s.sqlite") as store:
        store._db.execute("DROP TABLE refraction_runs")  # the second insert of the transaction fails
        with pytest.raises(StoreError, match="cannot store run"):
            store.add_result(res)
        assert store.count() == 0  # the first row was rolled back with it


# ------------------------------------------------------------------ sweeps: resume and parallel


def _snapshot(store, name):
    return {r.key: (r.va_logmar.tolist(), r.true_rx_d, r.estimate_d) for r in store.results(name)}


def test_resume_after_a_kill_neither_duplicates_nor_loses(tmp_path, monkeypatch):
    real = RE.run_one
    calls = {"n": 0}

    def dies_on_the_fourth_run(spec):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # the process is stopped in the middle of the sweep
        return real(spec)

    monkeypatch.setattr(RE, "run_one", dies_on_the_fourth_run)
    with RE.RefractionStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            RE.run_experiment(TINY, store, jobs=1, progress=False)
        survived = _snapshot(store, "tiny")
    assert len(survived) == 3
    monkeypatch.setattr(RE, "run_one", real)
    with RE.RefractionStore(tmp_path / "r.sqlite") as store:
        summary = RE.run_experiment(TINY, store, jobs=1, progress=False)
        final = _snapshot(store, "tiny")
        assert store.count("tiny") == 8
        again = RE.run_experiment(TINY, store, jobs=1, progress=False)
    assert (summary.planned, summary.skipped, summary.ran) == (8, 3, 5)
    assert (again.skipped, again.ran) == (8, 0)
    assert set(final) == {s.key for s in RE.plan(TINY)}
    for key, value in survived.items():
        assert final[key] == value


def test_two_jobs_give_the_same_runs_as_one(tmp_path):
    with RE.RefractionStore(tmp_path / "one.sqlite") as one, RE.RefractionStore(tmp_path / "two.sqlite") as two:
        RE.run_experiment(TINY, one, jobs=1, progress=False)
        s2 = RE.run_experiment(TINY, two, jobs=2, progress=False)
        a, b = _snapshot(one, "tiny"), _snapshot(two, "tiny")
    assert s2.ran == 8 and a == b


@pytest.mark.slow
def test_dask_scheduler_gives_the_same_runs_as_one_job(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    small = TINY.subset(slopes=[5.0], trials=2)
    with RE.RefractionStore(tmp_path / "one.sqlite") as one:
        RE.run_experiment(small, one, jobs=1, progress=False)
        serial = _snapshot(one, small.name)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with RE.RefractionStore(tmp_path / "d.sqlite") as d:
            summary = RE.run_experiment(small, d, scheduler=cluster.scheduler_address, progress=False)
            remote = _snapshot(d, small.name)
    assert summary.ran == 4 and remote == serial


def test_unreachable_scheduler_is_a_configuration_error(tmp_path):
    pytest.importorskip("dask.distributed")
    with RE.RefractionStore(tmp_path / "s.sqlite") as store:
        with pytest.raises(ConfigurationError, match="scheduler"):
            RE.run_experiment(TINY, store, scheduler="tcp://127.0.0.1:1", progress=False, connect_timeout=1.0)


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from visiontune.reproduction import gp_refraction_bench as RE
    exp = RE.RefractionExperiment("kill", ("random-contextual", "UCB-ALD"), (2.0, 5.0), n_seeds=3, trials=3)
    with RE.RefractionStore(sys.argv[1]) as store:
        s = RE.run_experiment(exp, store, jobs=1, progress=False)
    print(s.skipped, s.ran)
    """
)


@pytest.mark.slow
def test_sweep_killed_by_sigkill_resumes_without_loss_or_duplicates(tmp_path):
    script, db = tmp_path / "sweep.py", tmp_path / "kill.sqlite"
    script.write_text(_KILL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline, committed = time.monotonic() + 120, 0
    while time.monotonic() < deadline and committed < 2:
        time.sleep(0.02)
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            committed = con.execute("SELECT COUNT(*) FROM refraction_runs").fetchone()[0]
            con.close()
        except sqlite3.OperationalError:
            pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 2 <= committed < 12
    with RE.RefractionStore(db) as store:
        survived = _snapshot(store, "kill")
        assert store.count("kill") == len(survived)  # every stored run has both rows
    out = subprocess.run([sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    skipped, ran = map(int, out.stdout.split())
    assert skipped == len(survived) and skipped + ran == 12
    with RE.RefractionStore(db) as store:
        final = _snapshot(store, "kill")
        assert store.count("kill") == 12
    assert all(final[k] == v for k, v in survived.items())


# ------------------------------------------------------------------ analysis


def _synthetic(rng, levels: dict[str, float], n=12, trials=6, strata=("slope-2", "slope-5")):
    """VA curves decaying from 1 logMAR to ``level`` (plus small noise) per rule."""
    t = np.arange(1, trials + 1)
    return {
        s: {
            r: np.clip(level + (1 - level) * np.exp(-t / 2) + 0.01 * rng.standard_normal((n, trials)), 0, None)
            for r, level in levels.items()
        }
        for s in strata
    }


def test_analysis_ranks_lower_va_first():
    rng = np.random.default_rng(1)
    va = _synthetic(rng, {"random-contextual": 0.8, "UCB-ALD": 0.02, "BALD": 0.3})
    result = RE.analyse(va)
    borda = dict(zip(result.rules, result.borda.tolist()))
    assert borda == {"UCB-ALD": 4, "BALD": 2, "random-contextual": 0}  # 2 strata x (rules ranked below)
    assert [result.rules[i] for i in result.order()] == ["UCB-ALD", "BALD", "random-contextual"]
    # the oracle of one decision: scipy's test on the raw VA with the 'less' alternative
    p = mannwhitneyu(va["slope-5"]["UCB-ALD"][:, -1], va["slope-5"]["BALD"][:, -1], alternative="less").pvalue
    assert p < 5e-4 and result.per_function["slope-5"].beats[result.rules.index("UCB-ALD"), result.rules.index("BALD")]


def test_analysis_breaks_final_ties_by_the_mean_va_over_trials():
    rng = np.random.default_rng(2)
    n, trials = 12, 5
    final = 0.1 + 0.01 * rng.standard_normal(n)
    fast = np.column_stack([np.full((n, trials - 1), 0.1), final])  # reaches the final VA at once
    slow = np.column_stack([np.full((n, trials - 1), 1.0), final[::-1]])  # same final VA, after a long climb
    result = RE.analyse({"slope-5": {"TS-ALD": slow, "UCB-ALD": fast}})
    assert dict(zip(result.rules, result.borda.tolist())) == {"UCB-ALD": 1, "TS-ALD": 0}
    assert not result.per_function["slope-5"].beats.any()  # final VA alone does not separate them


def test_final_summaries_match_numpy_and_paper_figures_are_kept():
    def key(rule, a, s):
        return RE.RefractionSpec("e", rule, a, s, 2).key

    rows = [
        RE.RefractionResult(key("UCB-ALD", 5.0, 0), 5.0, np.array([1.0, 0.1]), (1.0, -1.0), (1.5, -1.0), 1.0),
        RE.RefractionResult(key("UCB-ALD", 5.0, 1), 5.0, np.array([1.0, 0.3]), (0.0, 0.0), (0.0, 0.5), 1.0),
        RE.RefractionResult(key("UCB-ALD", 2.0, 0), 2.0, np.array([1.0, 0.9]), (2.0, 0.0), (0.0, 0.0), 1.0),
    ]
    (at5,) = RE.final_summaries(rows, 5.0)
    assert at5.n == 2 and at5.va_mean == pytest.approx(0.2) and at5.va_sem == pytest.approx(0.1)
    assert at5.sphere_mean == pytest.approx(0.25) and at5.sphere_sem == pytest.approx(0.25)
    assert at5.cylinder_mean == pytest.approx(0.25)
    assert at5.on_edge == 0
    (overall,) = RE.final_summaries(rows)
    assert overall.on_edge == 0
    edge = RE.RefractionResult(key("BALD", 5.0, 0), 5.0, np.array([0.4]), (1.0, -1.0), (4.0, -1.0), 1.0)
    inside = RE.RefractionResult(key("BALD", 5.0, 1), 5.0, np.array([0.4]), (1.0, -1.0), (3.99, -3.99), 1.0)
    assert [s.on_edge for s in RE.final_summaries([edge, inside])] == [1]
    assert overall.n == 3 and overall.sphere_mean == pytest.approx(np.mean([0.5, 0.0, 2.0]))
    assert overall.va_sem == pytest.approx(np.std([0.1, 0.3, 0.9], ddof=1) / np.sqrt(3))
    table = RE.final_table(rows, 5.0)
    assert (
        "| UCB-ALD | 2 | 0.2 ± 0.1 | 0.25 ± 0.25 | 0.25 ± 0.25 | 0 |" in table
        and "0.0248" in table
        and "0.0274" in table
        and "0.153" in table
    )
    assert (REFRACTION_UCB_ALD.va_logmar, REFRACTION_UCB_ALD.sphere_error_d, REFRACTION_UCB_ALD.cylinder_error_d) == (
        2.48e-2,
        2.74e-2,
        1.53e-1,
    )


def test_paper_table_3_is_kept_under_our_rule_names():
    assert [(r.rule, r.rank, r.borda) for r in REFRACTION_TABLE] == [
        ("UCB-ALD", 1, 35),
        ("TS-ALD", 2, 26),
        ("UCB-random-context", 3, 15),
        ("BALD", 4, 8),
        ("TS-random-context", 5, 3),
        ("random-contextual", 6, 0),
    ]
    assert {r.rule for r in REFRACTION_TABLE} == set(RE.PAPER_RULES)
    assert paper_order("002-refraction", ["random-contextual", "BALD", "UCB-ALD"]) == [
        "UCB-ALD",
        "BALD",
        "random-contextual",
    ]
    rng = np.random.default_rng(3)
    result = RE.analyse(_synthetic(rng, {"random-contextual": 0.02, "UCB-ALD": 0.8}))  # against the paper
    assert (
        side_by_side("002-refraction", result)
        .splitlines()[2]
        .startswith("| random-contextual | 1 | 2 | Random | 6 | 0 |")
    )
    assert bench_cli.disagreements("002-refraction", result) == [("UCB-ALD", "random-contextual")]


def test_va_plots_are_written_per_slope(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(4)
    paths = RE.plot_va_curves(_synthetic(rng, {"UCB-ALD": 0.1, "BALD": 0.4}), tmp_path / "png")
    assert sorted(p.name for p in paths) == ["va_slope-2.png", "va_slope-5.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


# ------------------------------------------------------------------ command line


def bench(capsys, *argv):
    code = cli.main(["bench", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, name",
    [
        (["refraction", "--slopes", "0"], "--slopes"),
        (["refraction", "--slopes", "-2", "5"], "--slopes"),
        (["refraction", "--slopes", "5", "5"], "--slopes"),
        (["refraction", "--slopes", "nan"], "--slopes"),
        (["refraction", "--seeds", "0"], "--seeds"),
        (["refraction", "--trials", "0"], "--trials"),
        (["refraction", "--policies", "no-such-rule"], "--policies"),
        (["refraction", "--functions", "forrester"], "--functions"),
        (["002-table1", "--slopes", "5"], "--slopes"),
        (["002-table1", "--policies", "UCB-ALD"], "--policies"),
        (["000-table1", "--trials", "9"], "--trials"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, tmp_path, argv, name):
    code, out, err = bench(capsys, *argv, "--out", str(tmp_path), "--no-progress")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("visiontune bench: error:") and name in lines[0]
    assert not list(tmp_path.glob("*.sqlite"))  # nothing started


@pytest.mark.parametrize("argv", [["--trials", "abc"], ["--slopes", "steep"], ["--seeds", "1.5"], ["--jobs", "0"]])
def test_unparsable_values_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "refraction", *argv])
    assert exc.value.code == 2
    assert argv[0] in capsys.readouterr().err  # the message names the flag


def test_bench_refraction_writes_page_csv_plots_and_resumes(capsys, tmp_path):
    argv = [
        "refraction",
        "--slopes",
        "2",
        "5",
        "--seeds",
        "2",
        "--trials",
        "3",
        "--policies",
        "UCB-ALD",
        "random-contextual",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    code, out, err = bench(capsys, *argv)
    assert code == 0, err
    assert "refraction-3trials: 8 runs planned, 0 already stored, 8 run now" in out
    csv_text = (tmp_path / "refraction-3trials.csv").read_text()
    assert csv_text.startswith("rule,rank,borda\n")
    assert sorted(line.split(",")[0] for line in csv_text.splitlines()[1:]) == ["UCB-ALD", "random-contextual"]
    page = (tmp_path / "refraction-3trials.md").read_text()
    assert "visiontune bench refraction --slopes 2 5 --seeds 2 --policies UCB-ALD random-contextual --trials 3" in page
    assert "Machine: " in page and "Code: " in page and "decisions/s" in page and "| Paper's name |" in page
    assert "- Software (" in page and "invocation 1: visiontune " in page
    assert "## Final values at slope 5" in page and "va_slope-5.png" in page and "Sensitivity" in page
    if pytest.importorskip("matplotlib"):
        assert (tmp_path / "refraction-3trials" / "va_slope-5.png").exists()
    with RE.RefractionStore(tmp_path / "refraction-3trials.sqlite") as store:
        stored = _snapshot(store, "refraction-3trials")
    code, out, _ = bench(capsys, *argv)
    assert code == 0 and "8 already stored, 0 run now" in out
    with RE.RefractionStore(tmp_path / "refraction-3trials.sqlite") as store:
        assert store.count() == 8 and _snapshot(store, "refraction-3trials") == stored


def test_command_line_reproduces_the_options():
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    args = parser.parse_args(["refraction", "--slopes", "1", "3", "--seeds", "5", "--jobs", "2"])
    assert RE.command_line(args) == "visiontune bench refraction --slopes 1 3 --seeds 5 --jobs 2 --out docs/results"
    e = RE.experiment_from_args(args)
    assert (e.name, e.slopes, e.n_seeds, e.trials, e.rules) == ("refraction", (1.0, 3.0), 5, 260, RE.PAPER_RULES)
    quick = RE.experiment_from_args(parser.parse_args(["refraction", "--quick"]))
    assert quick == RE.QUICK_EXPERIMENT
