"""The clinician's subjective refraction on the validation's SIMULATED patients: seconds and accuracy.

Runs :func:`visiontune.refraction.clinician_routine.run_routine` (the textbook monocular routine:
acuity lines, most plus to best acuity, Jackson cross-cylinder axis and power, sphere end point) on the
first ``--cases`` patients of each of ``--populations`` (population ``--seed``, as ``visiontune validate``
draws them), each answering by ``--answer-model`` (the session's own model, or another of
:mod:`visiontune.refraction.answer_models`), and prints per population and answer model: patient
seconds per eye (median / p90, at ``--lens-device``'s seconds a change), answers, lens changes, the
share within 0.25 / 0.50 D of the truth (power vectors), worse than the start, young patients
over-minused by more than 0.25 D, beside the starting prescription as it is.

    OPENBLAS_NUM_THREADS=1 python benchmarks/clinician_routine.py --populations adult-clinic,young --cases 40
"""

from __future__ import annotations

import argparse

import numpy as np

from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.answer_models import ANSWER_MODELS
from visiontune.refraction.clinician_routine import RoutineSettings, run_routine
from visiontune.refraction.lens_devices import device_kind
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.simulated import simulated_presenter


def routine_rows(population: str, cases: int, seed: int, answer_model: str | None, change_s: float) -> list[dict]:
    rows = []
    settings = RoutineSettings(change_seconds=change_s)
    for case in draw_cases(population_by_name(population), cases, seed):
        presenter = simulated_presenter(case.patient(10), answer_model)
        result = run_routine(presenter, case.start_rx, settings=settings, seed=case.seed)
        truth = case.true_rx.power_vector_array()
        error = float(np.linalg.norm(result.filed.power_vector_array() - truth))
        start = None if case.start_rx is None else float(np.linalg.norm(case.start_rx.power_vector_array() - truth))
        young = case.age_years is None or case.age_years <= YOUNG_AGE_YEARS
        rows.append(
            {
                "seconds": result.seconds,
                "answers": result.answers,
                "changes": result.changes,
                "error": error,
                "start_error": start,
                "over_minus": young and result.filed.power_vector_array()[0] - truth[0] < -0.25 - 1e-9,
                "start_over_minus": young
                and case.start_rx is not None
                and case.start_rx.power_vector_array()[0] - truth[0] < -0.25 - 1e-9,
                "young": young,
            }
        )
    return rows


def _pct(values) -> str:
    return f"{100.0 * float(np.mean(values)):.0f}%"


def table(rows_by_key: dict) -> str:
    head = (
        "| population | answer model | n | trial-frame s median / p90 | answers | lens changes "
        "| within 0.25 / 0.50 D | worse than start | young over-minused |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    lines = [head]
    for (population, model), rows in rows_by_key.items():
        sec = np.array([r["seconds"] for r in rows])
        err = np.array([r["error"] for r in rows])
        starts = [r for r in rows if r["start_error"] is not None]
        worse = _pct([r["error"] > r["start_error"] + 1e-9 for r in starts]) if starts else "-"
        young = [r for r in rows if r["young"]]
        lines.append(
            f"| {population} | {model} | {len(rows)} | {np.median(sec):.0f} / {np.percentile(sec, 90):.0f} "
            f"| {np.median([r['answers'] for r in rows]):.0f} | {np.median([r['changes'] for r in rows]):.0f} "
            f"| {_pct(err <= 0.25 + 1e-9)} / {_pct(err <= 0.50 + 1e-9)} | {worse} "
            f"| {sum(r['over_minus'] for r in young)} of {len(young)} |"
        )
        if starts and model == next(iter(k[1] for k in rows_by_key if k[0] == population)):
            se = np.array([r["start_error"] for r in starts])
            lines.append(
                f"| {population} | starting prescription as it is | {len(starts)} | - | - | - "
                f"| {_pct(se <= 0.25 + 1e-9)} / {_pct(se <= 0.50 + 1e-9)} | - "
                f"| {sum(r['start_over_minus'] for r in young)} of {len(young)} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--populations", default="adult-clinic,young")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--answer-model", default="model", help="comma-separated; 'model' is the session's own")
    parser.add_argument("--lens-device", default="trial-frame")
    args = parser.parse_args(argv)
    models = [m.strip() for m in args.answer_model.split(",") if m.strip()]
    for m in models:
        if m != "model" and m not in ANSWER_MODELS:
            parser.error(f"--answer-model: expected 'model' or one of {', '.join(ANSWER_MODELS)}, got {m!r}")
    change_s = device_kind(args.lens_device).change_seconds
    rows = {}
    for population in [p.strip() for p in args.populations.split(",") if p.strip()]:
        for m in models:
            rows[(population, m)] = routine_rows(
                population, args.cases, args.seed, None if m == "model" else m, change_s
            )
    print(f"SIMULATED patients; the clinician's routine; a change of lens {change_s:g} s ({args.lens_device})")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
