"""The papers' tables as data, and the results page that sets ours beside them."""

from __future__ import annotations

import numpy as np
import pytest

from visiontune.errors import ConfigurationError
from visiontune.reproduction import bench_cli
from visiontune.reproduction.analysis import stratified_analysis
from visiontune.reproduction.benchmark_experiments import EXPERIMENTS
from visiontune.reproduction.paper_tables import PAPER_TABLES, paper_order, side_by_side
from visiontune.validation.provenance import machine_description


def test_every_experiment_has_its_papers_table_under_our_rule_names():
    assert set(PAPER_TABLES) == set(EXPERIMENTS)
    for name, rows in PAPER_TABLES.items():
        assert {r.rule for r in rows} <= set(EXPERIMENTS[name].rules), name
        bordas = [r.borda for r in rows]
        assert bordas == sorted(bordas, reverse=True)  # printed best first
        # competition ranking: rank = 1 + number of rules with a larger Borda score
        assert [r.rank for r in rows] == [1 + sum(b > r.borda for b in bordas) for r in rows]


def test_paper_order_and_unknown_experiment():
    assert paper_order("000-table1-quick", ["random", "UCB_f", "UCB_Phi"]) == ["UCB_Phi", "UCB_f", "random"]
    with pytest.raises(ConfigurationError, match="experiment"):
        paper_order("999-table9", ["x"])


def _result(better: str, worse: str, other: str):
    rng = np.random.default_rng(0)
    curves = {
        f: {better: 1.0 + rng.random((12, 3)), worse: rng.random((12, 3)) - 1.0, other: rng.random((12, 3)) - 1.0}
        for f in ("f1", "f2")
    }
    return stratified_analysis(curves)


def test_results_page_flags_the_pairs_ranked_against_the_paper():
    result = _result("random", "UCB_Phi", "UCB_f")  # random clearly best: against the paper
    assert sorted(bench_cli.disagreements("000-table1", result)) == [("UCB_Phi", "random"), ("UCB_f", "random")]
    table = side_by_side("000-table1", result)
    assert table.splitlines()[2].startswith("| random | 1 | 4 | Random | 5 | 12 |")
    agree = _result("UCB_Phi", "random", "UCB_f")
    assert bench_cli.disagreements("000-table1", agree) == []


def test_a_rule_outside_the_papers_table_is_left_out_of_the_comparison_with_it():
    """EIIG+I is not in Fauvel & Chalk (binary/preferential BO), Table 2. Here it beats every run of every other rule on
    both functions, which adds 1 to its Borda per function and nothing to the others' order; without it, MUC is
    alone on top (4 points: 2 rules beaten x 2 functions), and the pairs against the paper come
    from the paper's rules only."""
    from visiontune.reproduction.analysis import average_ranks

    rng = np.random.default_rng(1)
    curves = {
        f: {
            "EIIG+I": 5.0 + rng.random((12, 3)),
            "MUC": 2.0 + rng.random((12, 3)),
            "random-duel": rng.random((12, 3)),
            "EI-pref": -2.0 + rng.random((12, 3)),
        }
        for f in ("f1", "f2")
    }
    assert (
        bench_cli.paper_rules_only(
            "000-table2", {f: {r: c for r, c in by.items() if r != "EIIG+I"} for f, by in curves.items()}
        )
        is None
    )
    result, ranks = bench_cli.paper_rules_only("000-table2", curves)
    assert set(result.rules) == {"MUC", "random-duel", "EI-pref"}
    assert dict(zip(result.rules, result.borda.tolist())) == {"MUC": 4, "random-duel": 2, "EI-pref": 0}
    assert dict(zip(ranks.rules, ranks.mean_rank.tolist())) == {"MUC": 1.0, "random-duel": 2.0, "EI-pref": 3.0}
    full = stratified_analysis(curves)
    page = bench_cli.results_page(
        EXPERIMENTS["000-table2"].with_functions(["ackley"]),
        full,
        None,
        [],
        "cmd",
        [],
        average_ranks(curves),
        None,
        (result, ranks),
    )
    section = page[page.index("## The paper's rules only") : page.index("## Average ranks")]
    assert "without EIIG+I" in section and "| EIIG+I |" not in section
    assert "| MUC | 1 | 4 | Maximally Uncertain Challenge | 1 | 141 |" in section
    # random above EI-pref is against the paper (EI 23 > random 21); EIIG+I above MUC is not counted
    assert "EI-pref / random-duel" in section and "EIIG+I" not in section.split("Pairs ranked")[1]


def test_code_version_names_the_commit_and_only_code_changes_make_it_dirty(tmp_path):
    import subprocess

    from visiontune.validation.provenance import code_version

    assert code_version(tmp_path / "pkg") == "unknown (not a git checkout)"

    def git(*a):
        return subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "docs" / "r.md").write_text("old\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = git("rev-parse", "--short", "HEAD").strip()
    assert code_version(tmp_path / "pkg") == f"commit {head}"
    (tmp_path / "docs" / "r.md").write_text("new results\n")  # a page being rewritten
    assert code_version(tmp_path / "pkg") == f"commit {head}"
    (tmp_path / "pkg" / "m.py").write_text("x = 2\n")
    assert code_version(tmp_path / "pkg") == f"commit {head}, with uncommitted changes"


def test_machine_description_names_cores_and_cpu():
    text = machine_description()
    assert text.split()[0].isdigit() and "cores" in text and "Python" in text


def test_function_subsets_keep_the_run_keys_and_reject_unknown_names():
    from visiontune.reproduction.sweep import plan

    full = EXPERIMENTS["002-table1"]
    sub = full.with_functions(["six_hump_camel", "forrester", "forrester"])
    assert sub.functions == ("six_hump_camel", "forrester") and sub.name == full.name
    assert {s.key for s in plan(sub)} <= {s.key for s in plan(full)}
    with pytest.raises(ConfigurationError, match="functions"):
        full.with_functions(["no_such_function"])
    with pytest.raises(ConfigurationError, match="functions"):
        full.with_functions([])


def test_command_line_and_wall_time_record(tmp_path):
    import argparse

    from visiontune.reproduction.sweep import SweepSummary

    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    args = parser.parse_args(["002-table1", "--seeds", "10", "--functions", "forrester", "ackley", "--jobs", "2"])
    assert (
        bench_cli.command_line(args)
        == "visiontune bench 002-table1 --seeds 10 --functions forrester ackley --jobs 2 --out docs/results"
    )
    path = tmp_path / "x.wall.json"
    bench_cli.record_wall_time(path, SweepSummary(4, 0, 4, 12.5, 40, 20.0), 2)
    bench_cli.record_wall_time(path, SweepSummary(4, 4, 0, 0.1, 0, 0.0), 2)  # nothing ran: not recorded
    entries = bench_cli.record_wall_time(path, SweepSummary(6, 4, 2, 7.5, 20, 10.0), 2)
    assert [(e["runs"], e["seconds"]) for e in entries] == [(4, 12.5), (2, 7.5)]
    # workers busy: (20 + 10) s of runs in (12.5 + 7.5) s x 2 jobs; entries of older versions have no run_seconds
    assert bench_cli.busy_fraction(entries) == pytest.approx(30.0 / 40.0)
    assert bench_cli.busy_fraction(entries + [{"runs": 1, "seconds": 5.0, "jobs": 1, "decisions": 3}]) == pytest.approx(
        0.75
    )
    assert bench_cli.busy_fraction([{"runs": 1, "seconds": 5.0, "jobs": 1, "decisions": 3}]) is None


def test_each_invocation_records_the_software_that_ran_it_and_the_page_groups_them(tmp_path):
    import numpy
    import scipy

    from visiontune.reproduction.sweep import SweepSummary
    from visiontune.validation.provenance import software_line

    path = tmp_path / "x.wall.json"
    path.write_text('[{"runs": 3, "seconds": 1.0, "jobs": 1, "decisions": 9}]\n')  # written before the field existed
    bench_cli.record_wall_time(path, SweepSummary(4, 0, 4, 12.5, 40, 20.0), 2)
    entries = bench_cli.record_wall_time(path, SweepSummary(6, 4, 2, 7.5, 20, 10.0), 2)
    versions = entries[1]["software"]
    assert versions == entries[2]["software"]
    assert (versions["numpy"], versions["scipy"]) == (numpy.__version__, scipy.__version__)
    line = software_line(entries)
    assert f"invocations 2, 3: visiontune {versions['visiontune']} ({versions['code']}), " in line
    assert f"NumPy {numpy.__version__}, SciPy {scipy.__version__}" in line
    assert "invocation 1: not recorded" in line
    other = {**versions, "numpy": "0.0-other"}
    line = software_line(entries + [{"runs": 1, "seconds": 1.0, "jobs": 1, "decisions": 1, "software": other}])
    assert "invocations 2, 3:" in line and "invocation 4: " in line and "NumPy 0.0-other" in line
    assert software_line([]) == "- Software: no invocation recorded."


def test_final_score_table_has_a_row_per_function_and_bolds_the_best_mean():
    from visiontune.validation.results_store import RunKey, RunRecord

    finals = {("f", "a"): [1.0, 3.0], ("f", "b"): [0.0, 1.0], ("g", "a"): [0.0, 0.0], ("g", "b"): [2.0, 2.0]}
    records = [
        RunRecord(RunKey("x", "binary", rule, fn, seed), [0.0, v], 2, 1.0)
        for (fn, rule), values in finals.items()
        for seed, v in enumerate(values)
    ]
    table = bench_cli.final_score_table(records)
    assert "| Function | a | b |" in table
    sem_fa = np.std([1.0, 3.0], ddof=1) / np.sqrt(2)  # 1.0
    assert f"| f | **2.000 ± {sem_fa:.3f}** | 0.500 ± 0.500 |" in table
    assert "| g | 0.000 ± 0.000 | **2.000 ± 0.000** |" in table
