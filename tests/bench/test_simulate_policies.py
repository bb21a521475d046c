"""``visiontune simulate --policy ucb-ald-pv``: the named fix through the real CLI wrapper."""

from __future__ import annotations

import json

import pytest

from visiontune import cli
from visiontune.bench import refraction as R


@pytest.fixture(autouse=True)
def simulate_command(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "simulate", ("visiontune.bench.simulate_cli", "simulate one refraction"))


def test_ucb_ald_pv_runs_from_the_command_line_and_names_its_kernel(capsys, tmp_path):
    path = tmp_path / "run.json"
    code = cli.main(["simulate", "--policy", "ucb-ald-pv", "--trials", "7", "--seed", "3", "--true-rx", "1.5 -2",
                     "--json", str(path), "--quiet"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "UCB-ALD-PV" in out and R.KERNEL_POWER_VECTOR in out and "SIMULATED" in out
    doc = json.loads(path.read_text())
    assert doc["policy"] == "UCB-ALD-PV" and doc["kernel"] == R.KERNEL_POWER_VECTOR and len(doc["trials"]) == 7
    direct = R.run_refraction("UCB-ALD-PV", slope=5.0, trials=7, seed=3, true_rx=(1.5, -2.0))
    assert doc["final"]["va_logmar"] == direct.final_va_logmar
    assert [t["x"] for t in doc["trials"]] == [list(r.x) for r in direct.records]


def test_papers_policy_output_does_not_mention_a_kernel(capsys):
    assert cli.main(["simulate", "--policy", "ucb-ald", "--trials", "3", "--seed", "0", "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert "kernel" not in out and "(UCB-ALD, slope 5, 3 trials, seed 0)" in out


def test_help_lists_the_named_fix(capsys):
    with pytest.raises(SystemExit):
        cli.main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert "ucb-ald-pv" in out and "ucb-ald-sl" in out


def test_ucb_ald_sl_runs_from_the_command_line(capsys):
    assert cli.main(["simulate", "--policy", "UCB-ald-sl", "--trials", "6", "--seed", "2", "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert "UCB-ALD-SL" in out and R.KERNEL_SHORT_LENGTHSCALE in out
