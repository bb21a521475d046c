"""Stratified analysis: hand-built cases with known rankings, Borda arithmetic, and the
Mann-Whitney decision cross-checked against an exact permutation test and a hand-computed
normal approximation."""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, norm

from visiontune.errors import InvalidInputError
from visiontune.reproduction import analysis as A


def _separated(rng, rules, n=20):
    """rules[k] scores ~ 10 k + U(0, 1): clearly separated, rules[-1] best."""
    return {r: 10.0 * k + rng.random(n) for k, r in enumerate(rules)}


# ------------------------------------------------------------------ test decision oracle


def _exact_permutation_p(a, b):
    """P(U >= U_obs) under H0 by enumerating every split of the pooled sample (no ties)."""
    pooled = np.concatenate([a, b])
    n = len(a)

    def u_stat(x, y):
        return sum((xi > yj) + 0.5 * (xi == yj) for xi in x for yj in y)

    u_obs = u_stat(a, b)
    count = total = 0
    for idx in itertools.combinations(range(len(pooled)), n):
        mask = np.zeros(len(pooled), bool)
        mask[list(idx)] = True
        total += 1
        count += u_stat(pooled[mask], pooled[~mask]) >= u_obs - 1e-12
    return count / total


def _normal_approx_p(a, b):
    """Right-tailed normal approximation with tie and continuity corrections, by hand."""
    n1, n2 = len(a), len(b)
    pooled = np.concatenate([a, b])
    order = np.argsort(pooled, kind="mergesort")
    ranks = np.empty(len(pooled))
    sorted_vals = pooled[order]
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    _, counts = np.unique(pooled, return_counts=True)
    n = n1 + n2
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - np.sum(counts**3 - counts) / (n * (n - 1))))
    z = (u1 - n1 * n2 / 2.0 - 0.5) / sigma
    return float(norm.sf(z))


@pytest.mark.parametrize("seed", range(5))
def test_scipy_exact_matches_permutation_enumeration(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(0.8, 1.0, 5), rng.normal(0.0, 1.0, 6)
    p_scipy = mannwhitneyu(a, b, alternative="greater", method="exact").pvalue
    assert p_scipy == pytest.approx(_exact_permutation_p(a, b), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_scipy_asymptotic_matches_hand_normal_approximation_with_ties(seed):
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(1.0, 1.0, 30), 1)  # rounding creates ties
    b = np.round(rng.normal(0.0, 1.0, 25), 1)
    p_scipy = mannwhitneyu(a, b, alternative="greater", method="asymptotic").pvalue
    assert p_scipy == pytest.approx(_normal_approx_p(a, b), rel=1e-10)


def test_beats_matrix_decision_equals_p_below_alpha():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.9, 1.0, 40), rng.normal(0.0, 1.0, 40)
    p = _normal_approx_p(a, b)
    assert 1e-6 < p < 0.5  # a borderline case, so the threshold matters
    for alpha, expected in ((p * 1.01, True), (p * 0.99, False)):
        rules, B = A.beats_matrix({"a": a, "b": b}, alpha=alpha, method="asymptotic")
        assert rules == ["a", "b"]
        assert B[0, 1] == expected
        assert not B[1, 0]  # one-sided: b is not larger than a


def test_smallest_exact_p_of_five_vs_five_cannot_reach_alpha():
    # 1 / C(10, 5) = 1/252 = 0.00397 > 5e-4: with 5 runs per rule nothing is ever significant.
    rules, B = A.beats_matrix({"hi": np.arange(10.0, 15.0), "lo": np.arange(5.0)})
    assert not B.any()
    assert mannwhitneyu(np.arange(10.0, 15.0), np.arange(5.0), alternative="greater").pvalue == pytest.approx(1 / 252)


# ------------------------------------------------------------------ rankings


def test_clearly_separated_samples_give_a_strict_ranking():
    rng = np.random.default_rng(0)
    rules = ["worst", "low", "mid", "best"]
    final = _separated(rng, rules)
    fr = A.function_ranking(final, {r: np.zeros(20) + k for k, r in enumerate(rules)})
    assert fr.rules == tuple(rules)
    np.testing.assert_array_equal(fr.wins, [0, 1, 2, 3])
    np.testing.assert_array_equal(fr.borda, [0, 1, 2, 3])
    np.testing.assert_array_equal(fr.auc_wins, [0, 0, 0, 0])  # no ties: AUC never consulted
    np.testing.assert_array_equal(fr.beats, np.tril(np.ones((4, 4), bool), -1))


def test_identical_final_scores_are_ranked_by_auc():
    rng = np.random.default_rng(1)
    same = rng.random(20)
    final = {r: same for r in ("a", "b", "c")}
    aucs = {"a": 5.0 + rng.random(20), "b": 1.0 + rng.random(20), "c": 3.0 + rng.random(20)}
    fr = A.function_ranking(final, aucs)
    np.testing.assert_array_equal(fr.wins, [0, 0, 0])
    np.testing.assert_array_equal(fr.auc_wins, [2, 0, 1])
    np.testing.assert_array_equal(fr.borda, [2, 0, 1])


def test_auc_breaks_ties_only_inside_the_tied_group():
    rng = np.random.default_rng(2)
    top, bottom = 10.0 + rng.random(20), rng.random(20)
    final = {"A": top, "B": top, "C": bottom, "D": bottom}
    # C and D have far larger AUCs than A and B: this must not lift them above the top group.
    aucs = {"A": 2.0 + rng.random(20), "B": 1.0 + rng.random(20), "C": 9.0 + rng.random(20), "D": 8.0 + rng.random(20)}
    fr = A.function_ranking(final, aucs)
    np.testing.assert_array_equal(fr.wins, [2, 2, 0, 0])
    np.testing.assert_array_equal(fr.auc_wins, [1, 0, 1, 0])
    np.testing.assert_array_equal(fr.borda, [3, 2, 1, 0])


def test_unresolved_ties_share_a_borda_score():
    same = np.linspace(0, 1, 20)
    fr = A.function_ranking({"a": same, "b": same, "c": same + 10}, {"a": same, "b": same, "c": same})
    np.testing.assert_array_equal(fr.borda, [0, 0, 2])


def _curves_from(final_by_rule, n_iter=4):
    """(n, n_iter) curves whose last column is the given final scores and whose AUC is flat."""
    return {r: np.tile(v[:, None], (1, n_iter)) for r, v in final_by_rule.items()}


def test_borda_scores_add_up_over_functions_and_ranks_are_competition_ranks():
    rng = np.random.default_rng(4)
    rules = ["x", "y", "z"]
    f1 = _separated(rng, rules)  # z > y > x : borda x0 y1 z2
    f2 = _separated(rng, rules[::-1])  # x > y > z : borda x2 y1 z0
    f2 = {r: f2[r] for r in rules}
    f3 = _separated(rng, ["y", "x", "z"])  # z > x > y : borda y0 x1 z2
    f3 = {r: f3[r] for r in rules}
    res = A.stratified_analysis({"f1": _curves_from(f1), "f2": _curves_from(f2), "f3": _curves_from(f3)})
    assert res.rules == ("x", "y", "z")
    np.testing.assert_array_equal(res.borda, [0 + 2 + 1, 1 + 1 + 0, 2 + 0 + 2])
    np.testing.assert_array_equal(res.rank, [2, 3, 1])
    # z beats x on f1 and f3, x beats z on f2
    assert res.win_fraction[2, 0] == pytest.approx(2 / 3)
    assert res.win_fraction[0, 2] == pytest.approx(1 / 3)
    assert np.all(np.diag(res.win_fraction) == 0)


def test_equal_totals_share_a_rank():
    rng = np.random.default_rng(5)
    f1 = _separated(rng, ["a", "b"])
    f2 = _separated(rng, ["b", "a"])
    res = A.stratified_analysis({"f1": _curves_from(f1), "f2": _curves_from({"a": f2["a"], "b": f2["b"]})})
    np.testing.assert_array_equal(res.borda, [1, 1])
    np.testing.assert_array_equal(res.rank, [1, 1])


def test_final_score_is_the_last_iteration_and_auc_the_mean():
    curves = np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 6.0]])
    np.testing.assert_allclose(A.auc(curves), [1.0, 4.0])
    rng = np.random.default_rng(6)
    # same final scores, b better early: b wins by AUC
    last = rng.random(20)
    a = np.column_stack([np.zeros(20), np.zeros(20), last])
    b = np.column_stack([np.full(20, 5.0), np.full(20, 5.0), last])
    res = A.stratified_analysis({"f": {"a": a, "b": b}})
    np.testing.assert_array_equal(res.borda, [0, 1])


# ------------------------------------------------------------------ outputs and errors


def test_csv_and_markdown_outputs():
    rng = np.random.default_rng(7)
    res = A.stratified_analysis({"f": _curves_from(_separated(rng, ["r1", "r2", "r3"]))})
    assert A.to_csv(res) == "rule,rank,borda\nr3,1,2\nr2,2,1\nr1,3,0\n"
    md = A.to_markdown(res, title="demo")
    assert "## demo" in md
    assert "| r3 | 1 | 2 |" in md
    assert "| r3 | - | 1.00 | 1.00 |" in md  # win-fraction row of the best rule, best-first columns


def test_plot_regret_curves_writes_pngs_or_reports_missing_matplotlib(tmp_path):
    rng = np.random.default_rng(8)
    curves = {"f": {"a": rng.random((3, 5)), "b": rng.random((3, 5))}}
    written = A.plot_regret_curves(curves, tmp_path)
    if importlib.util.find_spec("matplotlib") is None:
        assert written is None
    else:
        assert [p.name for p in written] == ["regret_f.png"]
        assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ average ranks (Demšar 2006)


def _final_only(means: dict[str, dict[str, float]]) -> dict:
    """curves whose final column has the given means (two runs each, mean ± 0.1)."""
    return {
        f: {r: np.array([[0.0, m - 0.1], [0.0, m + 0.1]]) for r, m in by_rule.items()} for f, by_rule in means.items()
    }


def test_average_ranks_by_hand_with_a_tie():
    curves = _final_only(
        {
            "f": {"a": 3.0, "b": 2.0, "c": 1.0},
            "g": {"a": 1.0, "b": 2.0, "c": 2.0},  # b and c tie: 1.5 each
            "h": {"a": 5.0, "b": 4.0, "c": 0.0},
        }
    )
    ranks = A.average_ranks(curves)
    np.testing.assert_allclose(ranks.mean_rank, [(1 + 3 + 1) / 3, (2 + 1.5 + 2) / 3, (3 + 1.5 + 3) / 3])
    assert [ranks.rules[i] for i in ranks.order()] == ["a", "b", "c"]
    assert ranks.n_functions == 3


@pytest.mark.parametrize("k, q_table", [(2, 1.960), (3, 2.343), (5, 2.728), (7, 2.949), (9, 3.102), (10, 3.164)])
def test_nemenyi_critical_difference_matches_demsar_table_5(k, q_table):
    n = 34
    expected = q_table * math.sqrt(k * (k + 1) / (6 * n))  # Demšar 2006, table 5(a), alpha = 0.05
    assert A.nemenyi_critical_difference(k, n) == pytest.approx(expected, abs=1.5e-3 * expected)


def test_friedman_p_is_the_chi_square_of_the_average_ranks_without_ties():
    rng = np.random.default_rng(3)
    k, n = 5, 12
    means = rng.normal(size=(n, k)) + np.linspace(0.0, 1.5, k)
    curves = _final_only({f"f{i}": {f"r{j}": means[i, j] for j in range(k)} for i in range(n)})
    ranks = A.average_ranks(curves)
    R = ranks.mean_rank
    chi2_f = 12 * n / (k * (k + 1)) * (np.sum(R**2) - k * (k + 1) ** 2 / 4)  # Demšar 2006, Eq. in §3.2.2
    from scipy.stats import chi2

    assert ranks.friedman_p == pytest.approx(chi2.sf(chi2_f, k - 1), rel=1e-9)
    assert ranks.friedman_p < 0.05  # the built-in trend is found
    md = A.average_ranks_markdown(ranks)
    assert f"| r4 | {R[4]:.2f} |" in md and "Nemenyi critical difference" in md


def test_average_ranks_need_the_same_rules_everywhere():
    with pytest.raises(InvalidInputError, match=r"curves\['g'\]"):
        A.average_ranks({"f": {"a": np.ones((2, 3)), "b": np.ones((2, 3))}, "g": {"a": np.ones((2, 3))}})


def test_plot_win_fraction_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(7)
    res = A.stratified_analysis({"f": _curves_from(_separated(rng, ["r1", "r2", "r3"]))})
    path = A.plot_win_fraction(res, tmp_path / "w" / "win_fraction.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: A.beats_matrix({"a": [1.0, np.nan], "b": [0.0, 1.0]}), "samples['a']"),
        (lambda: A.beats_matrix({"a": [1.0], "b": [0.0]}, alpha=0.0), "alpha"),
        (lambda: A.beats_matrix({}), "samples"),
        (lambda: A.function_ranking({"a": [1.0], "b": [2.0]}, {"a": [1.0]}), "aucs"),
        (lambda: A.stratified_analysis({"f": {"a": np.ones((2, 3))}, "g": {"b": np.ones((2, 3))}}), "curves['g']"),
        (lambda: A.auc(np.ones(3)), "curves"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(InvalidInputError, match=__import__("re").escape(name)):
        call()
