"""``visiontune simulate``: exit codes, messages, JSON schema, plot (through the real CLI wrapper)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from visiontune import cli


@pytest.fixture(autouse=True)
def simulate_command(monkeypatch):
    """Wire ``simulate`` into the CLI as cli.py will (until it is registered there)."""
    monkeypatch.setitem(cli.COMMANDS, "simulate", ("visiontune.reproduction.simulate_cli", "simulate one refraction"))


def simulate(capsys, *argv):
    code = cli.main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, name",
    [
        (["--slope", "0"], "slope"),
        (["--slope", "-3"], "slope"),
        (["--trials", "0"], "trials"),
        (["--trials", "-5"], "trials"),
        (["--true-rx", "5 0"], "true_rx"),
        (["--true-rx", "1 -4.5"], "true_rx"),
        (["--true-rx", "one two"], "--true-rx"),
        (["--policy", "no-such-rule"], "policy"),
        (["--seed", "-1"], "seed"),
    ],
)
def test_bad_value_is_one_line_and_exit_2(capsys, argv, name):
    code, out, err = simulate(capsys, "--trials", "2", *argv) if "--trials" not in argv else simulate(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and lines[0].startswith("visiontune simulate: error:")


@pytest.mark.parametrize("argv", [["--trials", "abc"], ["--slope", "steep"], ["--inference", "mcmc"]])
def test_argparse_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(["simulate", *argv])
    assert exc.value.code == 2


def test_json_schema_and_summary(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out, err = simulate(
        capsys,
        "--policy",
        "ucb-ald",
        "--slope",
        "5",
        "--trials",
        "7",
        "--seed",
        "1",
        "--true-rx",
        "1.25 -0.5",
        "--json",
        str(path),
    )
    assert code == 0
    doc = json.loads(path.read_text())
    assert doc["simulated"] is True and doc["policy"] == "UCB-ALD" and doc["seed"] == 1
    assert doc["true_rx"]["sphere_d"] == 1.25 and doc["true_rx"]["cylinder_d"] == -0.5
    assert len(doc["trials"]) == 7
    for t in doc["trials"]:
        assert set(t) >= {"s", "x", "correct", "estimate", "va_logmar"}
        assert isinstance(t["correct"], bool)
    final, last = doc["final"], doc["trials"][-1]
    assert final["sphere_error_d"] == pytest.approx(abs(last["estimate"][0] - 1.25))
    assert final["cylinder_error_d"] == pytest.approx(abs(last["estimate"][1] + 0.5))
    assert final["va_logmar"] == last["va_logmar"]
    # stdout: the summary, marked SIMULATED; stderr: one progress line per trial
    assert "SIMULATED" in out and "+1.25" in out and f"{final['va_logmar']:.3f}" in out
    progress = [line for line in err.splitlines() if line.startswith("SIMULATED trial")]
    assert len(progress) == 7 and progress[-1].startswith("SIMULATED trial 7/7")


def test_same_seed_writes_identical_json(capsys, tmp_path):
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for p in paths:
        assert simulate(capsys, "--trials", "6", "--seed", "3", "--quiet", "--json", str(p))[0] == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_plot_writes_a_png(capsys, tmp_path, monkeypatch):
    # ``tests/packaging/`` (tests of the desktop packaging) shadows PyPI's ``packaging``, which
    # matplotlib imports, once pytest puts ``tests/`` on sys.path: import the real one.
    root = Path(__file__).resolve().parents[2]
    shadows = {root, root / "tests"}
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() not in shadows])
    mod = sys.modules.get("packaging")
    if mod is not None and "site-packages" not in str(getattr(mod, "__file__", "") or ""):
        monkeypatch.delitem(sys.modules, "packaging")
    pytest.importorskip("matplotlib")
    path = tmp_path / "run.png"
    code, _, _ = simulate(capsys, "--trials", "6", "--seed", "2", "--quiet", "--plot", str(path))
    assert code == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
