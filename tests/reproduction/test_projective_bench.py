"""`visiontune bench projective --quick`: projective vs pairwise queries, scaled down (Mikkola et al. 2020)."""

import argparse
import json

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.reproduction import bench_cli
from visiontune.reproduction.projective_benchmark import EXPERIMENT, PAPER, run_duel, run_projective


def _args(*argv):
    parser = argparse.ArgumentParser()
    bench_cli.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("projective")
    assert (
        bench_cli.run(
            _args(
                "projective",
                "--quick",
                "--jobs",
                "1",
                "--no-progress",
                "--out",
                str(out),
            )
        )
        == 0
    )
    return json.loads((out / "projective-quick.json").read_text()), out


def test_quick_experiment_runs_from_the_bench_command(quick):
    data, out = quick
    exp = data["experiment"]
    assert exp["name"] == "projective-quick" and exp["iterations"] == 12 and exp["n_seeds"] == 3
    runs = data["results"]["six_hump_camel"]
    assert set(runs) == {"PPBO-EI", "PPBO-PCD", "PPBO-RAND", "PBO-random-duel"}
    for label, seeds in runs.items():
        a = np.asarray(seeds)
        assert a.shape == (3, 12) and np.all(np.isfinite(a))
        assert np.all(a >= PAPER["six_hump_camel"].minimum - 1e-6), label  # nobody beats the global minimum
    table = (out / "projective-quick.table.md").read_text()
    assert "PPBO-PCD" in table and "PBO-random-duel" in table


def test_projective_rule_beats_random_lines_on_six_hump_camel(quick):
    data, _ = quick
    runs = data["results"]["six_hump_camel"]
    final = {label: np.asarray(seeds)[:, -1] for label, seeds in runs.items()}
    minimum = PAPER["six_hump_camel"].minimum
    assert np.all(final["PPBO-PCD"] - minimum < 0.1)  # every seed within 0.1 of -1.0316 after 12 slider answers
    assert final["PPBO-PCD"].mean() < final["PPBO-RAND"].mean() - 0.3
    assert final["PPBO-PCD"].mean() < final["PBO-random-duel"].mean() - 0.3


def test_runs_are_reproducible_and_seeds_matter():
    a = run_projective("six_hump_camel", "EI", 4, 5, 4)
    b = run_projective("six_hump_camel", "EI", 4, 5, 4)
    c = run_projective("six_hump_camel", "RAND", 5, 5, 4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    d = run_duel("six_hump_camel", "random-duel", 0, 4, 2)
    assert d.shape == (4,) and np.all(d >= PAPER["six_hump_camel"].minimum - 1e-6)


def test_options_of_other_experiments_are_refused(tmp_path):
    with pytest.raises(InvalidInputError):
        bench_cli.run(_args("projective", "--quick", "--stored-only", "--out", str(tmp_path)))
    with pytest.raises(InvalidInputError):
        bench_cli.run(
            _args(
                "projective",
                "--quick",
                "--functions",
                "forrester",
                "--out",
                str(tmp_path),
            )
        )
    assert EXPERIMENT.iterations <= 100 and set(EXPERIMENT.functions) <= set(PAPER)
