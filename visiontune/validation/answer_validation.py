"""The clinical validation on patients whose answers follow other models, and per lens device.

``visiontune validate --answer-model NAME[,NAME...]`` refracts each population's simulated
patients (:mod:`visiontune.refraction.population`) with each answer model of
:mod:`visiontune.refraction.answer_models` (the patient answering comparisons, letters and chart
lines by it, :class:`~visiontune.refraction.answer_models.AnswerModelPresenter`), through the one
trial loop as :func:`visiontune.validation.clinic.run_case` does; ``--lens-device KIND`` runs the
protocol with the device's seconds per change of lens
(:func:`visiontune.refraction.lens_devices.protocol_for_device`). Runs are stored like the
validation's (keyed by experiment, population, policy, case; the experiment's name carries the
answer model and the device), so a killed sweep resumes.

The page (:func:`answer_models_page`) gives per population and answer model: within 0.25 / 0.50 D,
95% coverage, the precision stop's rate, young patients over-minused by more than 0.25 D, answers,
lens changes, the patient's time (median and 90th percentile), and the starting prescription as
it is beside each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.answer_models import AnswerModelPresenter, answer_model_by_name
from visiontune.refraction.loop import MemoryLog, Refraction
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import Protocol, parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.clinic import CaseResult, CaseSpec, TimedPresenter, case_metrics, worse_than_start

__all__ = [
    "AnswerCaseSpec",
    "AnswerRow",
    "answer_experiment",
    "answer_models_page",
    "answer_row",
    "plan_answers",
    "run_answer_case",
]


@dataclass(frozen=True)
class AnswerCaseSpec(CaseSpec):
    """A validation run whose patient answers by the answer model ``answer_model``."""

    answer_model: str = "model"


class _TimedAnswers(TimedPresenter):
    def __init__(self, patient, model):
        super().__init__(patient)
        self._inner = AnswerModelPresenter(patient, model)

    def answer(self, query):
        return self._inner.present(query)


def answer_experiment(protocol: Protocol, seed: int, answer_model: str, device: str | None) -> str:
    """The store's experiment name of a run: protocol, population seed, answer model, device."""
    return f"{protocol.name}-seed{seed}-answers-{answer_model}" + (f"-device-{device}" if device else "")


def plan_answers(
    experiment: str, protocol: Protocol, policy: str, population: str, n_cases: int, seed: int, answer_model: str
) -> list[AnswerCaseSpec]:
    """The runs of one answer model on the first ``n_cases`` cases of ``population``."""
    answer_model_by_name(answer_model)
    cases = draw_cases(population_by_name(population), n_cases, seed)
    return [
        AnswerCaseSpec(experiment, protocol.source_text, protocol.source, policy, population, c, answer_model)
        for c in cases
    ]


def run_answer_case(spec: AnswerCaseSpec) -> CaseResult:
    """Refract one simulated patient answering by ``spec.answer_model``; score found and start
    (:func:`visiontune.validation.clinic.case_metrics`)."""
    t0 = time.perf_counter()
    protocol = parse_protocol(spec.protocol_text, spec.protocol_source)
    case = spec.case
    try:
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    except InvalidInputError as exc:
        return CaseResult(spec.key, {"refused": str(exc)}, 0, time.perf_counter() - t0)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    patient = case.patient(protocol.n_alternatives)
    presenter = _TimedAnswers(patient, answer_model_by_name(spec.answer_model))
    result = refraction.run(presenter)
    m = case_metrics(refraction, result, case, patient, presenter.decision_s)
    m["lapsed_trials"] = sum(presenter._inner.answers.lapsed(t.index) for t in refraction.trials())
    return CaseResult(spec.key, m, int(result["trials_used"]), time.perf_counter() - t0)


@dataclass(frozen=True)
class AnswerRow:
    """One row of the page: shares are fractions in [0, 1]; None where the runs lack the figure."""

    label: str
    n: int
    within_025: float
    within_050: float
    worse_than_start: float | None
    coverage_95: float | None
    precision_stops: float | None
    over_minus_young: int
    young: int
    median_answers: float | None
    median_lens_changes: float | None
    median_patient_s: float | None
    p90_patient_s: float | None


def answer_row(label: str, runs: list[dict], *, start: bool = False) -> AnswerRow:
    """The row of ``runs`` (their metrics); ``start=True`` scores the starting prescription."""
    runs = [r for r in runs if "refused" not in r and (not start or "start_error_d" in r)]
    if not runs:
        raise InvalidInputError(f"{label}: no finished runs to summarise")
    pre = "start_" if start else ""
    err = np.array([r[pre + "error_d"] for r in runs])
    young = [r for r in runs if r.get("age_years") is not None and r["age_years"] <= YOUNG_AGE_YEARS]
    over = sum(r[pre + "signed_error_m_d"] < -0.25 - 1e-9 for r in young)
    if start:
        return AnswerRow(
            label,
            len(runs),
            float(np.mean(err <= 0.25 + 1e-9)),
            float(np.mean(err <= 0.50 + 1e-9)),
            None,
            None,
            None,
            over,
            len(young),
            None,
            None,
            None,
            None,
        )
    seconds = [r["patient_s"] for r in runs if "patient_s" in r]
    cov = [r["covered_95"] for r in runs if "covered_95" in r]
    return AnswerRow(
        label,
        len(runs),
        float(np.mean(err <= 0.25 + 1e-9)),
        float(np.mean(err <= 0.50 + 1e-9)),
        worse_than_start(runs),
        float(np.mean(cov)) if cov else None,
        float(np.mean([r["stopped_by"] == "precision" for r in runs])),
        over,
        len(young),
        float(np.median([r["answers"] for r in runs])),
        float(np.median([r["lens_changes"] for r in runs])) if all("lens_changes" in r for r in runs) else None,
        float(np.median(seconds)) if seconds else None,
        float(np.percentile(seconds, 90)) if seconds else None,
    )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, fmt: str = ".0f") -> str:
    return "-" if x is None else format(x, fmt)


def rows_markdown(rows: list[AnswerRow]) -> str:
    """The Markdown table of rows (:class:`AnswerRow`)."""
    lines = [
        "| answer model | n | within 0.25 D | within 0.50 D | worse than start | 95% coverage | precision stop "
        "| young over-minused > 0.25 D | answers (median) | lens changes (median) "
        "| patient time, median / p90 (s) |",
        "|" + " --- |" * 11,
    ]
    for r in rows:
        time_s = "-" if r.median_patient_s is None else f"{r.median_patient_s:.0f} / {r.p90_patient_s:.0f}"
        lines.append(
            f"| {r.label} | {r.n} | {_pct(r.within_025)} | {_pct(r.within_050)} | {_pct(r.worse_than_start)} "
            f"| {_pct(r.coverage_95)} | {_pct(r.precision_stops)} | {r.over_minus_young} of {r.young} "
            f"| {_num(r.median_answers)} | {_num(r.median_lens_changes)} | {time_s} |"
        )
    return "\n".join(lines)


def answer_models_page(meta: dict, tables: dict[str, list[AnswerRow]]) -> str:
    """The Markdown page of an answer-model validation: one table per population, a row per
    answer model and the starting prescription as it is."""
    from visiontune.refraction.answer_models import ANSWER_MODELS

    models = [m for m in meta["answer_models"]]
    lines = [
        f"# Answer models: `{meta['protocol']}` on simulated patients who answer otherwise",
        "",
        (
            "Every patient here is **SIMULATED** (`visiontune.refraction.population`); each answers comparisons, "
            "letters and chart lines by an answer model of `visiontune.refraction.answer_models` (formulas and "
            'sources there). The session\'s model is unchanged: Eq. 11 with an "equal" band 0.5.'
        ),
        "",
        f"- Command: `{meta['command']}`",
        f"- Machine: {meta['machine']}",
        f"- Lens device: {meta['device'] or 'the protocol as it is'}; patients per population {meta['cases']} "
        f"(population seed {meta['seed']}); runs now {meta['runs_now']} of {meta['runs_total']}; wall time "
        f"{meta['wall_s']:.0f} s.",
        "",
        "Answer models:",
        "",
    ]
    lines += [f"- `{m}`: {ANSWER_MODELS[m].description}" for m in models] + [""]
    for pop, rows in tables.items():
        lines += [f"## {pop}", "", rows_markdown(rows), ""]
    return "\n".join(lines)


def run_answer_validation(args, protocol: Protocol, policy: str, populations: list[str], n_cases: int) -> int:
    """``visiontune validate --answer-model ...``: every answer model on every population, stored
    resumably in ``<out>/<name>.sqlite``; the page ``<out>/<name>.md`` and a JSON summary beside it."""
    import json
    from pathlib import Path

    from visiontune import output_guard
    from visiontune.validation import clinic
    from visiontune.validation.provenance import sweep_provenance
    from visiontune.validation.results_store import write_results_file

    models = [m.strip() for m in args.answer_model.split(",") if m.strip()]
    if not models:
        raise InvalidInputError("--answer-model: no answer model given")
    for m in models:
        answer_model_by_name(m)
    if policy != protocol.policy:
        protocol = clinic.protocol_with_policy(protocol, policy)
    device = getattr(args, "lens_device", None)
    name = args.name or f"answer-models-{protocol.name}" + (f"-{device}" if device else "")
    out = Path(args.out)
    specs, keys = [], {}
    for m in models:
        experiment = answer_experiment(protocol, args.seed, m, device)
        keys[m] = experiment
        for pop in populations:
            specs += plan_answers(experiment, protocol, policy, pop, n_cases, args.seed, m)
    # case by case across models and populations: a sweep stopped early holds the first cases of every model
    specs.sort(key=lambda s: (s.case.case_id, populations.index(s.population), models.index(s.answer_model)))
    t0 = time.perf_counter()
    with clinic.ClinicStore(out / f"{name}.sqlite") as store:
        summary = store.run(
            specs,
            keys.values(),
            run_answer_case,
            jobs=args.jobs,
            scheduler=args.scheduler,
            progress=not args.no_progress,
        )
        if summary is None:
            return 130
        wall = time.perf_counter() - t0
        tables: dict[str, list[AnswerRow]] = {}
        for pop in populations:
            rows, first = [], None
            for m in models:
                runs = store.metrics(keys[m], pop, policy, n_cases)
                if runs:
                    rows.append(answer_row(m, runs))
                    first = first or runs
            if first:
                if any("start_error_d" in r for r in first):
                    rows.append(answer_row("starting prescription as it is", first, start=True))
                tables[pop] = rows
    meta = {
        **sweep_provenance("validate", wall, summary),
        "protocol": protocol.name,
        "policy": policy,
        "answer_models": models,
        "device": device,
        "populations": populations,
        "cases": n_cases,
        "seed": args.seed,
    }
    write_results_file(out / f"{name}.md", answer_models_page(meta, tables), output_guard.MARKDOWN)
    write_results_file(
        out / f"{name}.json",
        json.dumps({"meta": meta, "tables": {p: [r.__dict__ for r in rows] for p, rows in tables.items()}}, indent=1)
        + "\n",
        output_guard.VALIDATION_JSON,
    )
    for pop, rows in tables.items():
        for r in rows:
            print(
                f"{pop:16s} {r.label:32s} within 0.25 D {_pct(r.within_025):>4s}  0.50 D {_pct(r.within_050):>4s}  "
                f"cov95 {_pct(r.coverage_95):>4s}  precision {_pct(r.precision_stops):>4s}  answers "
                f"{_num(r.median_answers):>3s}  time {_num(r.median_patient_s)} / {_num(r.p90_patient_s)} s"
            )
    print(f"{summary.ran} runs now, {summary.planned} in all, {wall:.1f} s; page {out / name}.md")
    return 0
