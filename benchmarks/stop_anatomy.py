"""When the precision stop fires, by age, and what another reading of the radius of M would give.

For each simulated patient of ``--population`` (the validation's cases: population seed
``--seed``, the first ``--cases``) refracted with ``--protocol`` through the one trial loop, this
records at every stop check the radii the stop reads (:meth:`OpticsEngine.precision_met`): the
95% radius of ``M`` around the filed estimate (the posterior's 2/3 quantile), that of ``J`` and,
with comparisons that infer ``κ``, the ratio of the SD of ``ln κ`` to its prior's; and the
half-width of the shortest 95% interval of ``M`` (:func:`shortest_interval`). It prints, beside
the start as it is, the share within 0.25 / 0.50 D, the precision stop and the median answers,
by age (under 35, 35-50, 50 and over); when each condition of the stop (the radius of ``M``, that
of ``J``, the spread of ``ln κ``) was first met and which was met last; the standardised error of
``M`` (posterior median minus truth over the posterior SD: mean 0, SD 1 when calibrated); and the
stop two other readings would give, the shortest interval and (with ``κ`` inferred) either reading
without the wait for ``κ`` (``comparisons.sensitivity_to_stop``), with the error of the lens filed
there and whether the 95% region there held the truth: the stop only ends a session, so each session's answers up to it
are the same, and the first check at which a reading less strict than the one run is met is where
that session would have ended.
``--blur-patients``: the patients answer comparisons by blur discrimination
(:class:`~visiontune.optics.comparison_answers.ComparisonModel` ``kind = "blur"``) instead of Eq. 11.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/stop_anatomy.py --protocol clinical-sloan-compare --cases 100
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from validation_cases import by_age, case_parser

from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.estimate import region_from_samples, shortest_interval, weighted_quantile
from visiontune.refraction.mixed_engine import sensitivity_sd_ratio
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case


def trace(protocol_name: str, population: str, case_id: int, seed: int, blur_patients: bool) -> dict:
    """Refract case ``case_id`` as ``visiontune validate`` does, recording the radii at each check."""
    protocol = load_protocol(protocol_name)
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    checks, met = [], refraction.engine.precision_met

    truth = case.true_rx.power_vector_array()

    def recording(region) -> bool:
        engine = refraction.engine
        post = engine.posterior(refraction.trials())
        lo, hi = shortest_interval(post.theta[:, 0], post.weights, region.level)
        ratio = sensitivity_sd_ratio(post)
        centre = post.best_correction()
        error = float(np.linalg.norm(engine.filed_lens(post).power_vector_array() - truth))
        checks.append(
            (
                len(refraction.trials()),
                region.m_pm_d,
                region.cylinder_vector_pm_d,
                (hi - lo) / 2,
                0.0 if ratio is None else ratio,
                error,
                bool(np.linalg.norm(truth - centre) <= region.distance_d),
            )
        )
        return met(region)

    refraction.engine.precision_met = recording
    patient = case.patient(protocol.n_alternatives)
    comparisons = ComparisonModel(kind="blur") if blur_patients else None
    result = refraction.run(TimedPresenter(patient, comparison_model=comparisons))
    post = refraction.engine.posterior(refraction.trials())
    centre = post.best_correction()
    w = post.weights / post.weights.sum()
    m = post.theta[:, 0]
    filed = refraction.current_estimate().rounded.power_vector_array()
    start = None if case.start_rx is None else float(np.linalg.norm(case.start_rx.power_vector_array() - truth))
    return {
        "age": case.age_years,
        "answers": len(refraction.trials()),
        "stopped_by": result["stopped_by"],
        "error": float(np.linalg.norm(filed - truth)),
        "start_error": start,
        "checks": checks,
        "covered": bool(
            np.linalg.norm(truth - centre)
            <= region_from_samples(post.theta[:, :3], post.weights, centre, 0.95, "minus").distance_d
        ),
        "z_m": (weighted_quantile(m, w, 0.5) - truth[0]) / float(np.sqrt(w @ (m - w @ m) ** 2)),
    }


def other_stop(
    row: dict, precision, kappa_ratio: float | None, max_trials: int, *, shortest: bool = True
) -> tuple[int, float, bool]:
    """``(answers, error, covered)`` where the session would have stopped with another reading of
    the stop: the shortest interval's half-width for ``M`` (``shortest``), or the region's radii
    without the wait for ``κ`` (``kappa_ratio`` None); the error of the lens filed there and whether
    the 95% region there held the truth. Where no check meets it, the session as run."""
    for n, m_pm, j_pm, half_width, ratio, error, covered in row["checks"]:
        kappa_learned = kappa_ratio is None or ratio <= kappa_ratio
        if (
            (half_width if shortest else m_pm) <= precision.m_d
            and j_pm <= precision.cylinder_vector_d
            and kappa_learned
        ):
            return n, error, covered
    return (row["answers"] if row["stopped_by"] != "budget" else max_trials), row["error"], row["covered"]


def first_met(row: dict, precision, kappa_ratio: float | None) -> dict[str, int | None]:
    """The first check at which each condition of the stop was met (answers; None: never): the 95%
    radius of ``M`` (``"M"``), that of ``J`` (``"J"``) and, when the stop waits for ``κ``, the spread
    of ``ln κ`` (``"κ"``)."""
    tests = {"M": lambda c: c[1] <= precision.m_d, "J": lambda c: c[2] <= precision.cylinder_vector_d}
    if kappa_ratio is not None:
        tests["κ"] = lambda c: c[4] <= kappa_ratio
    return {name: next((c[0] for c in row["checks"] if test(c)), None) for name, test in tests.items()}


def print_met_last(groups, precision, kappa_ratio: float | None, budget: int) -> None:
    """By age: the median answer at which each condition of the stop was first met (the budget when
    never) and, of the sessions the stop ended, how many it ended on each (the one met last)."""
    print(
        "\nwhen each condition of the stop was first met (median answers; the budget if never) and, of the "
        "sessions it ended, which was met last:"
    )
    for label, group in groups:
        firsts = [first_met(r, precision, kappa_ratio) for r in group]
        if not firsts:
            continue
        names = list(firsts[0])
        medians = ", ".join(f"{n} {np.median([budget if f[n] is None else f[n] for f in firsts]):.1f}" for n in names)
        last = [
            max(names, key=lambda n: f[n])
            for f, r in zip(firsts, group)
            if r["stopped_by"] == "precision" and None not in f.values()
        ]
        print(
            f"  {label}: first met at {medians}; met last in the {len(last)} stopped: "
            + ", ".join(f"{n} {last.count(n)}" for n in names)
        )


def main() -> None:
    parser = case_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--blur-patients", action="store_true", help="patients answer comparisons by blur discrimination"
    )
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    rows = Parallel(n_jobs=args.jobs)(
        delayed(trace)(args.protocol, args.population, i, args.seed, args.blur_patients) for i in range(args.cases)
    )
    patients = "blur-discriminating" if args.blur_patients else "Eq. 11"
    print(
        f"SIMULATED patients ({patients} comparisons): {protocol.name}, {args.population}, {args.cases} cases, "
        f"population seed {args.seed}\n"
    )
    print("| patients | n | within 0.25 / 0.50 D | start as it is | precision stop | median answers |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    groups = by_age(rows)
    for label, group in groups:
        if not group:
            continue
        err = np.array([r["error"] for r in group])
        start = np.array([r["start_error"] for r in group if r["start_error"] is not None])
        start_text = f"{np.mean(start <= 0.25):.0%} / {np.mean(start <= 0.5):.0%}" if len(start) else "-"
        stop = np.mean([r["stopped_by"] == "precision" for r in group])
        print(
            f"| {label} | {len(group)} | {np.mean(err <= 0.25):.0%} / {np.mean(err <= 0.5):.0%} | {start_text} | "
            f"{stop:.0%} | {np.median([r['answers'] for r in group]):.1f} |"
        )
    precision = protocol.stopping.precision
    comparisons = protocol.comparisons
    ratio = None if comparisons is None else comparisons.sensitivity_to_stop
    budget = protocol.stopping.max_trials
    print_met_last(groups, precision, ratio, budget)
    z = np.array([r["z_m"] for r in rows])
    print(f"\nM: standardised error of the posterior median, mean {z.mean():+.2f}, sd {z.std():.2f}")
    as_run = [(r["answers"], r["error"], r["covered"]) for r in rows]
    print("\nthe stop read otherwise (the first check at which it is met; error and 95% coverage there):")
    readings = [
        ("as run", as_run),
        ("the shortest 95% interval's half-width for M", [other_stop(r, precision, ratio, budget) for r in rows]),
    ]
    if ratio is not None:
        readings += [
            (
                "the radii without the wait for κ",
                [other_stop(r, precision, None, budget, shortest=False) for r in rows],
            ),
            ("the shortest interval without the wait for κ", [other_stop(r, precision, None, budget) for r in rows]),
        ]
    for label, stops in readings:
        n = np.array([x[0] for x in stops])
        err = np.array([x[1] for x in stops])
        print(
            f"  {label}: precision stop {np.mean(n < budget):.0%}, median {np.median(n):.1f} answers, within 0.25 / "
            f"0.50 D {np.mean(err <= 0.25):.0%} / {np.mean(err <= 0.5):.0%}, 95% coverage "
            f"{np.mean([x[2] for x in stops]):.0%}"
        )


if __name__ == "__main__":
    main()
