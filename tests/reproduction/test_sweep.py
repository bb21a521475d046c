"""Sweeps, the results store and the bench command: runs are reproducible, a killed sweep resumes
without losing or duplicating a run, and joblib / dask give the same results as a serial run."""

from __future__ import annotations

import argparse
import io
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from visiontune.errors import ConfigurationError, InvalidInputError, StoreError
from visiontune.reproduction import benchmark_experiments as E
from visiontune.reproduction import sweep as S
from visiontune.reproduction.benchmark_functions import get_function
from visiontune.validation.results_store import ResultsStore, RunKey, RunRecord

TINY = E.Experiment(
    "tiny", "binary", ("random", "UCB_Phi"), ("forrester",), n_seeds=2, iterations=5, n_initial=2, source="test"
)


def _scores(store: ResultsStore, name: str) -> dict[RunKey, np.ndarray]:
    return {r.key: r.scores for r in store.records(name)}


# ------------------------------------------------------------------ store


def test_store_round_trips_exactly_and_ignores_duplicates(tmp_path):
    key = RunKey("e", "binary", "random", "forrester", 3)
    scores = np.array([0.1, 1 / 3, -2.5e-17, np.pi])
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.journal_mode == "wal"
        assert store.synchronous == 2  # FULL
        assert store.add(RunRecord(key, scores, 4, 1.5)) is True
        assert store.add(RunRecord(key, scores + 1, 4, 9.0)) is False  # same key: ignored
        assert store.count() == 1
    with ResultsStore(tmp_path / "r.sqlite") as store:  # reopened
        (rec,) = store.records("e")
        assert rec.key == key and rec.n_decisions == 4 and rec.seconds == 1.5
        np.testing.assert_array_equal(rec.scores, scores)  # bit-exact
        assert store.finished_keys("e") == {key} and store.finished_keys("other") == set()
        curves = store.curves("e")
        assert curves["forrester"]["random"].shape == (1, 4)


def test_store_unique_key_is_enforced_by_the_database(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.add(RunRecord(RunKey("e", "binary", "r", "f", 0), np.zeros(2), 2, 0.0))
    db = sqlite3.connect(tmp_path / "r.sqlite")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO runs (experiment, scenario, rule, function, seed, scores, n_decisions, seconds)"
            " VALUES ('e', 'binary', 'r', 'f', 0, '[]', 0, 0)"
        )
    db.close()


def test_store_rejects_bad_records_and_newer_schemas(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(InvalidInputError, match="record.scores"):
            store.add(RunRecord(RunKey("e", "binary", "r", "f", 0), np.array([np.nan]), 1, 0.0))
        with pytest.raises(InvalidInputError, match="record"):
            store.add("not a record")
    db = sqlite3.connect(tmp_path / "r.sqlite")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer"):
        ResultsStore(tmp_path / "r.sqlite")


# ------------------------------------------------------------------ experiments and plans


def test_paper_experiments_have_the_papers_protocols():
    t1 = E.get_experiment("002-table1")
    assert (t1.scenario, t1.n_seeds, t1.iterations, t1.n_initial, len(t1.rules), len(t1.functions)) == (
        "contextual-binary",
        40,
        60,
        5,
        7,
        34,
    )
    b1 = E.get_experiment("000-table1")
    assert (b1.n_seeds, b1.iterations, b1.n_initial, len(b1.rules)) == (60, 100, 2, 5)
    assert E.get_experiment("000-table2").iterations == 80
    assert E.get_experiment("000-table3").n_seeds == 30
    assert len(S.plan(t1)) == 7 * 34 * 40
    q = t1.quick()
    assert q.name == "002-table1-quick" and len(q.rules) == 3 and q.functions == ("forrester", "six_hump_camel")


def test_unknown_experiment_and_unavailable_scenarios_are_clear_errors():
    with pytest.raises(ConfigurationError, match="unknown name"):
        E.get_experiment("nope")
    assert len(S.plan(E.get_experiment("000-table3").quick())) == 3 * 2 * E.QUICK_SEEDS  # batch-preferential runs now
    with pytest.raises(ConfigurationError, match="not yet available.*no-such-rule"):
        S.plan(E.Experiment("x", "preferential", ("MUC", "no-such-rule"), ("forrester",), 1, 3, 1, "test"))
    bad = E.Experiment("x", "binary", ("UCB-ALD",), ("forrester",), 1, 3, 1, "test")  # a contextual rule
    with pytest.raises(ConfigurationError, match="UCB-ALD"):
        S.plan(bad)
    with pytest.raises(InvalidInputError, match="n_initial"):
        E.Experiment("x", "binary", ("random",), ("forrester",), 1, 3, 4, "test")
    with pytest.raises(InvalidInputError, match="scenario"):
        E.Experiment("x", "ternary", ("random",), ("forrester",), 1, 3, 1, "test")


# ------------------------------------------------------------------ one run


def test_run_is_reproducible_and_scores_are_true_scaled_values():
    spec = S.RunSpec("t", "binary", "UCB_Phi", "forrester", 7, 6, 2)
    a, b = S.run_one(spec), S.run_one(spec)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.scores.shape == (6,) and a.n_decisions == 6 and a.key == spec.key
    f = get_function("forrester")
    best = f.scaled(np.array(f.minimizers))[0]  # the largest scaled value (global minimiser of f)
    assert np.all(a.scores <= best + 1e-9)
    # every score is g at some point of the domain: above the smallest scaled value on a fine grid
    grid = np.linspace(0, 1, 20001)[:, None]
    assert np.all(a.scores >= f.scaled(grid).min() - 1e-9)


def test_rules_share_the_initial_design_for_a_seed():
    # after one answer every rule has the same data, hence the same model and reported solution
    r1 = S.run_one(S.RunSpec("t", "contextual-binary", "UCB-ALD", "forrester", 1, 2, 2))
    r2 = S.run_one(S.RunSpec("t", "contextual-binary", "random-contextual", "forrester", 1, 2, 2))
    np.testing.assert_array_equal(r1.scores, r2.scores)
    r3 = S.run_one(S.RunSpec("t", "contextual-binary", "UCB-ALD", "forrester", 2, 2, 2))
    assert not np.array_equal(r1.scores, r3.scores)


@pytest.mark.parametrize(
    "scenario, rule",
    [
        ("contextual-binary", "random-contextual"),
        ("binary", "random"),
        ("contextual-preferential", "KSS-ALD"),
        ("preferential", "MUC"),
    ],
)
def test_observation_model_is_probit_of_the_scaled_function(monkeypatch, scenario, rule):
    # Record the probit arguments the run uses; check them against g(x), s g(x), g(x) - g(x2), s (g(x) - g(x2)).
    seen = []
    real_cdf = S.norm.cdf
    monkeypatch.setattr(S.norm, "cdf", lambda z: (seen.append(float(z)), real_cdf(z))[1])
    from visiontune.reproduction.acquisition import binary_policies as P

    rows = []
    real_input = P.Problem.model_input

    def record_input(self, x, s=None):
        row = real_input(self, x, s)
        rows.append(row)
        return row

    monkeypatch.setattr(P.Problem, "model_input", record_input)
    n = 4
    record = S.run_one(S.RunSpec("t", scenario, rule, "six_hump_camel", 0, n, 2))
    f = get_function("six_hump_camel")

    def g(u):
        return f.scaled(f.lower + u * (f.upper - f.lower))[0]

    c = 1 if scenario.startswith("contextual") else 0
    per_query = 2 if scenario.endswith("preferential") else 1
    assert len(seen) == n and len(rows) == n * per_query
    for t, z in enumerate(seen):
        first = rows[per_query * t]
        s = first[0] if c else 1.0
        expected = g(first[c:])
        if per_query == 2:
            second = rows[2 * t + 1]
            assert (
                second[:c].tolist() == first[:c].tolist()
            )  # both options at one context (Fauvel & Chalk (contextual BO), Eq. 11)
            expected -= g(second[c:])
        assert z == pytest.approx(s * expected, rel=1e-12, abs=1e-12)
    assert record.scores.shape == (n,) and np.all(np.isfinite(record.scores))


def test_benchmark_kernel_is_the_stored_kernel_selection():
    from visiontune.reproduction.kernel_selection import load_choices

    choices = load_choices()
    for name in ("ackley", "forrester"):
        choice = choices[name]
        k = S.benchmark_kernel(get_function(name), contextual=False)
        assert type(k) is type(choice.kernel())
        np.testing.assert_allclose(k.lengthscales, choice.lengthscales)
        assert k.variance == pytest.approx(choice.variance)
    kc = S.benchmark_kernel(get_function("forrester"), contextual=True)
    Z = np.array([[0.5, 0.2], [0.25, 0.3]])
    base = choices["forrester"].kernel()
    np.testing.assert_allclose(kc(Z)[0, 1], 0.5 * 0.25 * base(Z[:1, 1:], Z[1:, 1:])[0, 0])


# ------------------------------------------------------------------ sweeps


def test_sweep_resumes_skips_and_reports_progress(tmp_path):
    stream = io.StringIO()
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = S.run_sweep(TINY, store, jobs=1, stream=stream)
        assert (first.planned, first.skipped, first.ran, first.decisions) == (4, 0, 4, 20)
        assert "4/4 runs" in stream.getvalue() and "ETA" in stream.getvalue()
        before = _scores(store, "tiny")
        again = S.run_sweep(TINY, store, jobs=1, stream=stream)
        assert (again.skipped, again.ran) == (4, 0)
        more = S.run_sweep(TINY.with_seeds(3), store, jobs=1, progress=False)
        assert (more.skipped, more.ran) == (4, 2)
        after = _scores(store, "tiny")
        assert len(after) == 6
        for key, scores in before.items():
            np.testing.assert_array_equal(after[key], scores)
    with pytest.raises(InvalidInputError, match="jobs"):
        S.run_sweep(TINY, ResultsStore(tmp_path / "t.sqlite"), jobs=0)


def test_joblib_sweep_matches_serial_sweep(tmp_path):
    with ResultsStore(tmp_path / "a.sqlite") as a, ResultsStore(tmp_path / "b.sqlite") as b:
        S.run_sweep(TINY, a, jobs=1, progress=False)
        S.run_sweep(TINY, b, jobs=2, progress=False)
        sa, sb = _scores(a, "tiny"), _scores(b, "tiny")
    assert sa.keys() == sb.keys()
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key])


def test_dask_local_cluster_matches_serial_sweep(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    with ResultsStore(tmp_path / "a.sqlite") as a:
        S.run_sweep(TINY, a, jobs=1, progress=False)
        serial = _scores(a, "tiny")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with ResultsStore(tmp_path / "d.sqlite") as d:
            summary = S.run_sweep(TINY, d, scheduler=cluster.scheduler_address, progress=False)
            remote = _scores(d, "tiny")
    assert summary.ran == 4
    assert serial.keys() == remote.keys()
    for key in serial:
        np.testing.assert_array_equal(serial[key], remote[key])


def test_bad_scheduler_address_is_a_configuration_error(tmp_path):
    pytest.importorskip("dask.distributed")
    with ResultsStore(tmp_path / "a.sqlite") as store:
        with pytest.raises(ConfigurationError, match="scheduler"):
            S.run_sweep(TINY, store, scheduler="tcp://127.0.0.1:1", progress=False, connect_timeout=1.0)


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    from visiontune.reproduction.benchmark_experiments import Experiment
    from visiontune.validation.results_store import ResultsStore
    from visiontune.reproduction.sweep import run_sweep
    exp = Experiment("kill", "binary", ("random", "UCB_Phi"), ("forrester",), n_seeds=6, iterations=4,
                     n_initial=2, source="test")
    with ResultsStore(sys.argv[1]) as store:
        s = run_sweep(exp, store, jobs=1, progress=False)
    print(s.skipped, s.ran)
    """
)


def test_sweep_killed_by_sigkill_resumes_without_loss_or_duplicates(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(_KILL_SCRIPT)
    db = tmp_path / "kill.sqlite"
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    committed = 0
    while time.monotonic() < deadline and committed < 2:
        time.sleep(0.05)
        if db.exists():
            try:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                committed = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:
                pass  # table not created yet
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert 2 <= committed < 12, "the sweep must be killed mid-way"
    with ResultsStore(db) as store:
        survived = _scores(store, "kill")
    assert len(survived) >= committed  # nothing committed before the kill is lost
    out = subprocess.run([sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    skipped, ran = map(int, out.stdout.split())
    assert skipped == len(survived) and skipped + ran == 12
    with ResultsStore(db) as store:
        final = _scores(store, "kill")
        assert store.count("kill") == 12  # no duplicates
    for key, scores in survived.items():
        np.testing.assert_array_equal(final[key], scores)
    # a resumed run equals an uninterrupted one
    key = sorted(set(final) - set(survived), key=lambda k: (k.rule, k.seed))[0]
    fresh = S.run_one(S.RunSpec(key.experiment, key.scenario, key.rule, key.function, key.seed, 4, 2))
    np.testing.assert_array_equal(fresh.scores, final[key])


_TERM_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from visiontune.reproduction.sweep import RunSpec, execute_runs
    from visiontune.validation.results_store import RunRecord

    def slow(spec):  # a worker that would outlive its parent by a minute
        if spec.seed > 0:
            with open(os.path.join(sys.argv[1], f"worker-{os.getpid()}"), "w"):
                pass
            time.sleep(60)
        return RunRecord(spec.key, [0.0], 1, 0.0)

    specs = [RunSpec("term", "binary", "random", "forrester", seed, 1, 0) for seed in range(4)]
    execute_runs(specs, set(), slow, lambda r: print("stored", r.key.seed, flush=True), jobs=2,
                 scheduler=None, progress=False, stream=None, connect_timeout=1.0)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_terminated_sweep_takes_its_worker_processes_with_it(tmp_path, signum):
    script = tmp_path / "term.py"
    script.write_text(_TERM_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.05)
        workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
    assert len(workers) == 2, "both workers must be busy before the signal"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "stored 0" in out  # the finished run was handed to the store first
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(map(_alive, workers)):
        time.sleep(0.1)
    assert not any(map(_alive, workers)), f"workers {workers} outlived the terminated sweep"


def test_bench_command_says_how_to_resume_when_stopped(tmp_path, capsys, monkeypatch):
    from visiontune.reproduction import bench_cli

    def stopped(*_args, **_kwargs):
        raise S.SweepStopped(signal.SIGTERM)

    monkeypatch.setattr(bench_cli, "_run", stopped)
    assert bench_cli.run(argparse.Namespace()) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert "stopped by SIGTERM" in err and "the same command resumes" in err


# ------------------------------------------------------------------ command


def _tiny_quick(self):
    return E.Experiment(
        f"{self.name}-quick",
        self.scenario,
        ("UCB_Phi", "UCB_f", "random"),
        ("forrester", "six_hump_camel"),
        n_seeds=4,
        iterations=4,
        n_initial=2,
        source=self.source,
    )


@pytest.mark.parametrize("shrink", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_bench_command_writes_the_analysis(tmp_path, capsys, monkeypatch, shrink):
    from visiontune.reproduction import bench_cli

    if shrink:  # the same command on a 4-iteration version of the quick subset
        monkeypatch.setattr(E.Experiment, "quick", _tiny_quick)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    args = parser.parse_args(
        ["000-table1", "--quick", "--seeds", "2", "--jobs", "1", "--out", str(tmp_path), "--no-progress"]
    )
    assert bench_cli.run(args) == 0
    printed = capsys.readouterr().out
    csv_text = (tmp_path / "000-table1-quick.csv").read_text()
    assert csv_text.startswith("rule,rank,borda\n")
    assert sorted(line.split(",")[0] for line in csv_text.splitlines()[1:]) == ["UCB_Phi", "UCB_f", "random"]
    page = (tmp_path / "000-table1-quick.md").read_text()
    assert "| Acquisition rule | Rank | Borda score |" in page
    assert "| Acquisition rule | Average rank |" in page and "Friedman test over 2 functions" in page
    import numpy

    assert "- Software (" in page and "invocation 1: visiontune " in page and f"NumPy {numpy.__version__}" in page
    if (tmp_path / "000-table1-quick" / "regret_forrester.png").exists():  # matplotlib installed
        assert (tmp_path / "000-table1-quick" / "win_fraction.png").read_bytes()[:4] == b"\x89PNG"
    assert "12 runs planned" in printed
    # resumable: the second call runs nothing
    assert bench_cli.run(args) == 0
    printed = capsys.readouterr().out
    assert "12 already stored, 0 run now\n" in printed and "nan" not in printed  # no rate without a run
    with ResultsStore(tmp_path / "000-table1-quick.sqlite") as store:
        assert store.count() == 12


def test_stored_only_analyses_the_complete_functions_and_runs_nothing(tmp_path, capsys, monkeypatch):
    from visiontune.reproduction import bench_cli

    monkeypatch.setattr(E.Experiment, "quick", _tiny_quick)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    common = ["000-table1", "--quick", "--seeds", "2", "--jobs", "1", "--out", str(tmp_path), "--no-progress"]
    with pytest.raises(ConfigurationError, match="no function of 000-table1-quick has all its 6 runs"):
        bench_cli.run(parser.parse_args(common + ["--stored-only"]))
    assert bench_cli.run(parser.parse_args(common + ["--functions", "forrester"])) == 0
    with ResultsStore(tmp_path / "000-table1-quick.sqlite") as store:  # one run of six_hump_camel, not all of them
        store.add(S.run_one(S.RunSpec("000-table1-quick", "binary", "random", "six_hump_camel", 0, 4, 2)))
    capsys.readouterr()
    assert bench_cli.run(parser.parse_args(common + ["--stored-only"])) == 0
    assert "0 run now" in capsys.readouterr().out
    page = (tmp_path / "000-table1-quick.md").read_text()
    assert "- Functions: forrester." in page
    assert "left out of this analysis (1):** six_hump_camel" in page
    assert "--stored-only" in page  # the command that wrote the page
    with ResultsStore(tmp_path / "000-table1-quick.sqlite") as store:
        assert store.count() == 7
    with pytest.raises(InvalidInputError, match="--stored-only: only for the benchmark"):
        bench_cli.run(parser.parse_args(["refraction", "--stored-only"]))


def test_rerun_discards_one_rules_runs_and_runs_only_them_again(tmp_path, capsys, monkeypatch):
    from visiontune.reproduction import bench_cli

    monkeypatch.setattr(E.Experiment, "quick", _tiny_quick)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    common = [
        "000-table1",
        "--quick",
        "--seeds",
        "2",
        "--functions",
        "forrester",
        "--jobs",
        "1",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert bench_cli.run(parser.parse_args(common)) == 0
    db = tmp_path / "000-table1-quick.sqlite"
    with ResultsStore(db) as store:
        before = {r.key: r for r in store.records()}
        # a stand-in for a result made by an older version of the rule
        assert store.discard([k for k in before if k.rule == "UCB_f"]) == 2
        for key in [k for k in before if k.rule == "UCB_f"]:
            store.add(S.RunRecord(key, np.zeros(4), 4, 0.0))
    capsys.readouterr()
    assert bench_cli.run(parser.parse_args(common + ["--rerun", "UCB_f"])) == 0
    printed = capsys.readouterr().out
    assert "discarded the 2 stored runs of UCB_f" in printed and "4 already stored, 2 run now" in printed
    with ResultsStore(db) as store:
        after = {r.key: r for r in store.records()}
    assert after.keys() == before.keys()
    for key, rec in after.items():  # the rerun runs are the runs of the current code, the others untouched
        assert np.array_equal(rec.scores, before[key].scores)
        assert rec.seconds == before[key].seconds or key.rule == "UCB_f"
    page = (tmp_path / "000-table1-quick.md").read_text()
    assert "--rerun" not in page.split("- Command: ")[1].splitlines()[0]  # the page's command reproduces the table
    assert "(runs per invocation: 6, 2 (2 of them UCB_f's runs rerun))" in page
    with pytest.raises(InvalidInputError, match="--rerun: UCB not a rule of 000-table1-quick"):
        bench_cli.run(parser.parse_args(common + ["--rerun", "UCB"]))
    with pytest.raises(InvalidInputError, match="--rerun with --stored-only"):
        bench_cli.run(parser.parse_args(common + ["--rerun", "UCB_f", "--stored-only"]))
    with pytest.raises(InvalidInputError, match="--rerun: only for the benchmark"):
        bench_cli.run(parser.parse_args(["refraction", "--rerun", "UCB_f"]))
    # only the planned runs: UCB_f on six_hump_camel (not in this command's --functions) stays stored
    with ResultsStore(db) as store:
        store.add(S.run_one(S.RunSpec("000-table1-quick", "binary", "UCB_f", "six_hump_camel", 0, 4, 2)))
    capsys.readouterr()
    assert bench_cli.run(parser.parse_args(common + ["--rerun", "UCB_f"])) == 0
    assert "discarded the 2 stored runs of UCB_f" in capsys.readouterr().out
    with ResultsStore(db) as store:
        assert store.count() == 7
        assert any(k.function == "six_hump_camel" for k in store.finished_keys())


def test_a_stopped_sweep_keeps_the_wall_time_of_its_finished_runs(tmp_path, capsys, monkeypatch):
    from visiontune.reproduction import bench_cli

    specs = [S.RunSpec("stop", "binary", "random", "forrester", seed, 1, 0) for seed in range(5)]
    stored = []

    def add(record):
        if len(stored) == 3:
            raise S.SweepStopped(signal.SIGTERM)  # the signal arrives while the fourth run is committed
        stored.append(record)

    def run(spec):
        return RunRecord(spec.key, [0.0, 1.0], 2, 0.25)

    with pytest.raises(S.SweepStopped) as caught:
        S.execute_runs(specs, set(), run, add, jobs=1, scheduler=None, progress=False, stream=None, connect_timeout=1.0)
    summary = caught.value.summary
    assert (summary.planned, summary.ran, summary.decisions, summary.cpu_seconds) == (5, 3, 6, 0.75)

    # the command appends that part to the experiment's wall-time record before it exits 128 + SIGTERM
    def stopped_sweep(*_args, **_kwargs):
        raise caught.value

    monkeypatch.setattr(S, "run_sweep", stopped_sweep)
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    args = parser.parse_args(["000-table1", "--quick", "--jobs", "2", "--out", str(tmp_path), "--no-progress"])
    assert bench_cli.run(args) == 128 + signal.SIGTERM
    import json

    entries = json.loads((tmp_path / "000-table1-quick.wall.json").read_text())
    assert [(e["runs"], e["decisions"], e["run_seconds"], e["jobs"]) for e in entries] == [(3, 6, 0.8, 2)]
