"""``visiontune simulate --policy ...``: the named fixes through the real CLI wrapper; ``ucb-ald-pv``
(power-vector kernel) is refused, the one trial loop's GP engine having the paper's kernel only."""

from __future__ import annotations

import json

import pytest

from visiontune import cli
from visiontune.reproduction import gp_refraction_run as R


@pytest.fixture(autouse=True)
def simulate_command(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "simulate", ("visiontune.reproduction.simulate_cli", "simulate one refraction"))


def test_ucb_ald_pv_is_refused_from_the_command_line_and_names_its_kernel(capsys, tmp_path):
    path = tmp_path / "run.json"
    code = cli.main(
        [
            "simulate",
            "--policy",
            "ucb-ald-pv",
            "--trials",
            "7",
            "--seed",
            "3",
            "--true-rx",
            "1.5 -2",
            "--json",
            str(path),
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and not path.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("visiontune simulate: error: kernel:")
    assert R.KERNEL_POWER_VECTOR in lines[0] and "one trial loop" in lines[0]


def test_ts_ald_sl_runs_from_the_command_line_like_the_bench(capsys, tmp_path):
    path = tmp_path / "run.json"
    code = cli.main(
        [
            "simulate",
            "--policy",
            "ts-ald-sl",
            "--trials",
            "7",
            "--seed",
            "3",
            "--true-rx",
            "1.5 -2",
            "--json",
            str(path),
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "TS-ALD-SL" in out and R.KERNEL_SHORT_LENGTHSCALE in out and "SIMULATED" in out
    doc = json.loads(path.read_text())
    assert doc["policy"] == "TS-ALD-SL" and doc["kernel"] == R.KERNEL_SHORT_LENGTHSCALE and len(doc["trials"]) == 7
    direct = R.run_refraction("TS-ALD-SL", slope=5.0, trials=7, seed=3, true_rx=(1.5, -2.0))
    assert doc["final"]["va_logmar"] == direct.final_va_logmar
    assert [t["x"] for t in doc["trials"]] == [list(r.x) for r in direct.records]


def test_papers_policy_output_does_not_mention_a_kernel(capsys):
    assert cli.main(["simulate", "--policy", "ucb-ald", "--trials", "3", "--seed", "0", "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert "kernel" not in out and "(UCB-ALD, slope 5, 3 trials, seed 0)" in out


def test_help_lists_the_named_fixes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["simulate", "--help"])
    out = "".join(capsys.readouterr().out.split())  # argparse wraps (also at hyphens)
    assert "ucb-ald-sl/ts-ald-sl" in out and "ucb-ald-pv(power-vectorkernel)isnotintheonetrialloop" in out


def test_ucb_ald_sl_runs_from_the_command_line(capsys):
    assert cli.main(["simulate", "--policy", "UCB-ald-sl", "--trials", "6", "--seed", "2", "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert "UCB-ALD-SL" in out and R.KERNEL_SHORT_LENGTHSCALE in out
