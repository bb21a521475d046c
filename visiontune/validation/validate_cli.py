"""``visiontune validate``: the clinical validation benchmark (:mod:`visiontune.validation.clinic`).

Runs the protocol (default ``clinical-sloan``) with each policy on each population, resumably
(a killed run restarts where it stopped), in joblib workers or on a Dask scheduler, and writes
the results page ``<out>/<name>.md`` with the command, machine, software and wall time, and a
JSON summary beside it. ``--quick`` runs 20 patients of two populations in a few minutes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from visiontune import output_guard
from visiontune._argparse import plain_name, worker_count
from visiontune.errors import InvalidInputError
from visiontune.refraction.answer_models import ANSWER_MODELS
from visiontune.refraction.attention import AttentionChain
from visiontune.refraction.lens_devices import DEVICE_KINDS, protocol_for_device
from visiontune.refraction.policies import GP_POLICIES, OPTICS_POLICIES, PARTICLE_MODEL_TYPES
from visiontune.refraction.population import POPULATIONS
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.refraction.slider import SliderModel
from visiontune.validation import clinic
from visiontune.validation.answer_validation import run_answer_validation
from visiontune.validation.provenance import software_line, sweep_provenance
from visiontune.validation.results_store import write_results_file

__all__ = ["DEFAULT_POPULATIONS", "add_arguments", "run"]

DEFAULT_POPULATIONS = ("adult-clinic", "adult-clinic-misspecified", "young", "high-myopia", "no-start")
QUICK_POPULATIONS = ("adult-clinic", "adult-clinic-misspecified")
_SOURCES = {
    "adult-clinic": "well specified: patients follow the model (Blendowske acuity, 2% lapses), autorefraction start",
    "adult-clinic-misspecified": "same prescriptions and starts; acuity-blur curves of other published relations, "
    "letter difficulty, 5% lapses, attention drift",
    "young": "8-35 years, strong accommodation, more hyperopes; autorefraction start",
    "high-myopia": "M from -6 to -12 D, more astigmatism; autorefraction start",
    "no-start": "as adult-clinic with wider errors and no starting prescription",
}


def _names(text: str, known, what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise InvalidInputError(
            f"--{what}: unknown {', '.join(bad) or '(none given)'}; known: {', '.join(sorted(known))}"
        )
    return names


def _positive_int(name: str, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer, got {text!r}") from None
        if not 1 <= value <= hi:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer in [1, {hi}], got {text}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol", default=DEFAULT_PROTOCOL, help=f"shipped protocol name or .toml path (default {DEFAULT_PROTOCOL})"
    )
    parser.add_argument("--policies", default=None, help="comma-separated policies (default: the protocol's)")
    parser.add_argument(
        "--populations", default=None, help=f"comma-separated populations (default: {', '.join(DEFAULT_POPULATIONS)})"
    )
    parser.add_argument(
        "--cases",
        type=_positive_int("--cases", 100_000),
        default=None,
        help="patients per population (default 100; 20 with --quick)",
    )
    parser.add_argument("--seed", type=_positive_int("--seed", 2**31), default=1, help="population seed (default 1)")
    parser.add_argument("--quick", action="store_true", help="20 patients of two populations (a few minutes)")
    parser.add_argument("--jobs", type=worker_count, default=2, help="worker processes (default 2; -1 = every core)")
    parser.add_argument("--scheduler", default=None, help="dask.distributed scheduler address instead of local workers")
    parser.add_argument("--out", default="docs/results", help="folder of the results page and store")
    parser.add_argument(
        "--name",
        type=plain_name,
        default=None,
        help="page name, no folder parts: the files are written in --out (default clinical-validation[-quick])",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--answer-model",
        default=None,
        help="comma-separated answer models the simulated patients follow (visiontune.refraction."
        f"answer_models: {', '.join(ANSWER_MODELS)}); writes an answer-models page",
    )
    parser.add_argument(
        "--lens-device",
        choices=tuple(DEVICE_KINDS),
        default=None,
        help="price each change of lens at this device's seconds (visiontune.refraction.lens_devices)",
    )


def run(args: argparse.Namespace) -> int:
    protocol = load_protocol(args.protocol)
    device = getattr(args, "lens_device", None)
    if device:
        protocol = protocol_for_device(protocol, device)

    known = OPTICS_POLICIES if protocol.model.type in PARTICLE_MODEL_TYPES else GP_POLICIES
    policies = _names(args.policies, known, "policies") if args.policies else [protocol.policy]
    default_pops = QUICK_POPULATIONS if args.quick else DEFAULT_POPULATIONS
    populations = _names(args.populations, POPULATIONS, "populations") if args.populations else list(default_pops)
    n_cases = args.cases or (20 if args.quick else 100)
    if getattr(args, "answer_model", None):
        if len(policies) != 1:
            raise InvalidInputError("--answer-model: one policy at a time (the protocol's, or one --policies)")
        return run_answer_validation(args, protocol, policies[0], populations, n_cases)
    default_name = "clinical-validation" + ("" if protocol.name == "clinical-sloan" else f"-{protocol.name}")
    default_name += f"-{device}" if device else ""
    name = args.name or (f"{default_name}-quick" if args.quick else default_name)
    experiment = f"{protocol.name}-seed{args.seed}" + (f"-device-{device}" if device else "")
    out = Path(args.out)
    specs = [s for pop in populations for s in clinic.plan(experiment, protocol, policies, pop, n_cases, args.seed)]
    t0 = time.perf_counter()
    with clinic.ClinicStore(out / f"{name}.sqlite") as store:
        summary = store.run(
            specs,
            [experiment],
            clinic.run_case,
            jobs=args.jobs,
            scheduler=args.scheduler,
            progress=not args.no_progress,
        )
        if summary is None:
            return 130
        wall = time.perf_counter() - t0
        tables = {}
        for pop in populations:
            runs = {pol: store.metrics(experiment, pop, pol, n_cases) for pol in policies}
            if not all(runs.values()):
                continue
            rows = [clinic.summarise(pol, runs[pol]) for pol in policies]
            with_start = [r for r in runs[policies[0]] if "start_error_d" in r and "refused" not in r]
            if with_start:
                rows.append(clinic.summarise("starting prescription as it is", with_start, start=True))
            tables[pop] = rows
    meta = {
        **sweep_provenance("validate", wall, summary),
        "protocol": protocol.name,
        "policies": policies,
        "populations": populations,
        "cases": n_cases,
        "seed": args.seed,
    }
    page = results_page(meta, tables, protocol)
    write_results_file(out / f"{name}.md", page, output_guard.MARKDOWN)
    write_results_file(
        out / f"{name}.json",
        json.dumps({"meta": meta, "tables": {p: [r.as_dict() for r in rows] for p, rows in tables.items()}}, indent=1)
        + "\n",
        output_guard.VALIDATION_JSON,
    )
    print(headline(tables))
    print(f"{summary.ran} runs now, {summary.planned} in all, {wall:.1f} s; page {out / name}.md")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def table_markdown(rows) -> str:
    """The population's table; sessions that asked comparisons or sliders add their counts and the
    patient's time (medians; each answer at the protocol's duration)."""
    mixed = any(r.median_comparisons is not None or r.median_sliders is not None for r in rows)
    slid = any(r.median_sliders is not None for r in rows)
    head = (
        "| | n | answers (median) | stops | within 0.25 D | within 0.50 D | median error (D) | 90th pct (D) "
        "| median ΔM (D) | median ΔJ (D) | median acuity lost (logMAR) | coverage 50 / 80 / 95% "
        "| answer -> next lens, median / p99 (ms) | worse axis, start within 0.25 D | worse than start "
        "| young over-minused > 0.25 D | lens changes (median) |"
    )
    if mixed:
        head += " comparisons (median) | patient time (median, s) |" + (" sliders (median) |" if slid else "")
    lines = [head, "|" + " --- |" * (17 + 2 * mixed + slid)]
    for r in rows:
        extra = f" {_num(r.median_comparisons, '.0f')} | {_num(r.median_patient_s, '.0f')} |" if mixed else ""
        extra += f" {_num(r.median_sliders, '.0f')} |" if slid else ""
        stops = "-" if r.stops is None else ", ".join(f"{k} {v}" for k, v in sorted(r.stops.items()))
        cov = "-" if r.coverage is None else " / ".join(_pct(r.coverage.get(f"covered_{k}")) for k in (50, 80, 95))
        times = "-" if r.decision_ms_median is None else f"{r.decision_ms_median:.1f} / {r.decision_ms_p99:.1f}"
        lines.append(
            f"| {r.label} | {r.n} | {_num(r.median_answers, '.0f')} | {stops} | {_pct(r.within_025)} "
            f"| {_pct(r.within_050)} | {r.median_error_d:.2f} | {r.p90_error_d:.2f} | {r.median_error_m_d:.2f} "
            f"| {r.median_error_j_d:.2f} | {r.median_va_loss:+.3f} | {cov} | {times} "
            f"| {_num(r.worse_axis_near, 'd')} | {_pct(r.worse_than_start)} | {_num(r.over_minus_young, 'd')} "
            f"| {_num(r.median_lens_changes, '.0f')} |{extra}"
        )
    return "\n".join(lines)


def headline(tables) -> str:
    out = []
    for pop, rows in tables.items():
        for r in rows:
            out.append(
                f"{pop:28s} {r.label:32s} within 0.25 D {_pct(r.within_025):>4s}  within 0.50 D "
                f"{_pct(r.within_050):>4s}  answers {_num(r.median_answers, '.0f'):>3s}  "
                f"coverage95 {_pct((r.coverage or {}).get('covered_95'))}"
            )
    return "\n".join(out)


def _model_text(model) -> str:
    kind = "Thurstone (Eq. 11)" if model.kind == "thurstone" else "blur discrimination"
    if getattr(model, "indifference_sigma", 0.0) and getattr(model, "indifference_second_median", 0.0):
        w = model.indifference_second_weight
        band = (
            f'the "equal" band inferred per patient (a prior of two kinds of patient: lognormals at medians '
            f"{model.indifference:g} and {model.indifference_second_median:g}, σ {model.indifference_sigma:g} each, "
            f"{1 - w:.0%} and {w:.0%} likely)"
        )
    elif getattr(model, "indifference_sigma", 0.0):
        band = (
            f'the "equal" band inferred per patient (lognormal prior, median {model.indifference:g}, '
            f"σ {model.indifference_sigma:g})"
        )
    else:
        band = f'"equal" band {model.indifference:g}'
    text = f"{kind}, {band}, lapse {model.lapse:g}"
    if getattr(model, "sensitivity_sigma", 0.0) and getattr(model, "sensitivity_second_median", 0.0):
        text += (
            f", the patient's sensitivity to a comparison inferred (a prior of two formulas: lognormals at "
            f"medians {model.sensitivity_median:g} and {model.sensitivity_second_median:g}, σ "
            f"{model.sensitivity_sigma:g} each, equally likely)"
        )
    elif getattr(model, "sensitivity_sigma", 0.0):
        text += (
            f", the patient's sensitivity to a comparison inferred (lognormal prior, median "
            f"{model.sensitivity_median:g}, σ {model.sensitivity_sigma:g})"
        )
    if getattr(model, "minus_bias_sigma", 0.0):
        shape = "half-normal" if model.minus_bias_prior == "half-normal" else "normal, mean 0"
        text += f", a bias toward the more minus lens inferred ({shape} prior, σ {model.minus_bias_sigma:g})"
    return text


def _comparisons_note(protocol) -> list[str]:
    settings = protocol.comparisons
    if settings is None:
        return []
    return [
        (
            f'The protocol asks comparisons ("which is clearer, 1 or 2?", answered 1, 2 or =) as well as letters, '
            f"whichever is worth more per second of the patient's time, a letter counted at "
            f"{settings.letter_seconds:g} s "
            f"and a comparison at {settings.comparison_seconds:g} s"
            + (
                f", each change of lens from the lens in place at {settings.lens_change_seconds:g} s (a trial frame; "
                "the patient's time counts them)"
                if settings.lens_change_seconds > 0
                else ""
            )
            + "; its model of a comparison: "
            f"{_model_text(settings.comparison)}. The simulated patients answer comparisons by the Thurstone model "
            f"of their own "
            'letter task (Fauvel & Chalk\'s Eq. 11, with an "equal" band of 0.5 and their own lapse rate; '
            "`visiontune.optics.comparison_answers`)."
        ),
        "",
    ]


def _chart_line_note(protocol) -> list[str]:
    lines = getattr(protocol, "chart_line", None)
    if lines is None:
        return []
    lapse = (
        f"; a whole line is read at random (every letter a guess) with probability {lines.line_lapse:g} "
        "(`chart_line.line_lapse`: the patient's attention lapsed for the line)"
        if lines.line_lapse > 0
        else ""
    )
    return [
        (
            f"The protocol also asks chart lines ({lines.letters_per_line} letters of one size read aloud through one "
            f"lens, each keyed right or wrong), a line counted at {lines.line_seconds:g} s{lapse}."
        ),
        "",
    ]


def _stop_note(protocol) -> list[str]:
    """What the protocol's precision stop waits for (the optics model's stops, :class:`Precision`)."""
    precision = protocol.stopping.precision
    if precision is None or precision.m_d is None:
        return []
    q = precision.filed_within_probability
    if q is not None:
        text = (
            f"The precision stop ends a session once the posterior probability that the lens it files lies "
            f"within 0.25 D of the correction is at least {q:g} (`stopping.precision.filed_within_probability`)"
        )
    else:
        text = (
            f"The precision stop ends a session once the {100.0 * precision.level:g}% credible region lies within "
            f"±{precision.m_d:g} D on M and ±{precision.cylinder_vector_d:g} D on J (`stopping.precision`)"
        )
    ratio = getattr(protocol.comparisons, "sensitivity_to_stop", None)
    if ratio is not None:
        text += (
            f" and the posterior SD of the patient's log comparison sensitivity is at most {ratio:g} of its "
            "prior's (`comparisons.sensitivity_to_stop`)"
        )
    return [text + f", after at least {protocol.stopping.min_trials} answers.", ""]


def _over_minus_note(protocol) -> list[str]:
    precision = protocol.stopping.precision
    risk = getattr(precision, "over_minus_risk", None)
    if risk is None:
        return []
    return [
        (
            f"For a patient the over-minus guard covers (`model.over_minus_guard = "
            f'"{protocol.model.over_minus_guard}"`), '
            "the precision stop also waits until the lens to file is more minus than the correction by over 0.25 D "
            f"with posterior probability at most {100.0 * risk:g}% (`stopping.precision.over_minus_risk`)."
        ),
        "",
    ]


def _lapse_runs_note(protocol) -> list[str]:
    runs = getattr(protocol.model, "lapse_runs", None)
    if runs is None:
        return []
    chain = AttentionChain(*runs)
    return [
        (
            "The model reads lapses in runs: the patient's attention is a hidden two-state chain over the "
            f"answers, lapsing with probability {chain.onset:g} an answer and attending again with "
            f"{chain.recovery:g} ({100 * chain.lapsed_share:.1f}% of answers lapsed, in runs of "
            f"{chain.mean_run:.3g} on average), a lapsed answer at random (`model.lapse_run_onset`, "
            "`model.lapse_run_recovery`)."
        ),
        "",
    ]


def _keep_start_note(protocol) -> list[str]:
    margin = getattr(protocol.model, "keep_start_margin", None)
    if margin is None:
        return []
    return [
        (
            "The starting prescription is filed in place of the lens the session would file when its posterior "
            f"probability of lying within 0.25 D of the correction is at most {margin:g} below that lens's, and it "
            "is no more minus than the over-minus guard allows (`model.keep_start_margin`)."
        ),
        "",
    ]


def _sliders_note(protocol) -> list[str]:
    settings = getattr(protocol, "sliders", None)
    if settings is None:
        return []
    model, patient = settings.model, SliderModel()
    return [
        (
            f'The protocol also asks slider questions ("turn the knob; where is it clearest?": the '
            f"{', '.join(settings.knobs)} knob turned through its trial lenses, the patient naming the clearest), "
            f"whichever question is worth most per second, a slider counted at {settings.slider_seconds:g} s; "
            f"its model of the choice: a logit over the knob's lenses with lapse {model.lapse:g} and noise "
            + (
                f"inferred per patient (lognormal prior, median {model.noise_logmar:g} logMAR, σ {model.noise_sigma:g})"
                if model.noise_sigma > 0
                else f"{model.noise_logmar:g} logMAR"
            )
            + f". The simulated patients choose by the stated model (noise {patient.noise_logmar:g} logMAR, lapse "
            f"{patient.lapse:g}) at their own acuity (`visiontune.refraction.slider`): the sliders are well specified "
            "here."
        ),
        "",
    ]


def results_page(meta: dict, tables: dict, protocol) -> str:
    """The Markdown page of a validation (module docstring)."""
    lines = [
        f"# Clinical validation: `{meta['protocol']}` on simulated patients",
        "",
        (
            "Every patient here is **SIMULATED** (`visiontune.refraction.population`; each distribution with its "
            "source "
            "there). Each is refracted through the one trial loop (`visiontune.refraction.loop.Refraction`, the loop "
            "of a "
            "clinical session) with the protocol as shipped. The error of a result is the dioptric distance between "
            "the "
            "trial lens found (the prescription a clinician would file) and the true correction: the length of the "
            "difference of power vectors (Thibos, Wheeler & Horner 1997). *Coverage*: how often the true correction "
            "lies "
            "in the credible region `{P : |P - P̂| <= r}` of that level. *Worse axis*: patients whose start was within "
            "0.25 D of the truth (true cylinder >= 0.5 D) and whose found axis is further from the true axis than the "
            "start's. *Worse than start*: patients whose result is further from the truth than their start, by any "
            "amount. *Young over-minused*: patients aged <= 35 given more than 0.25 D more minus (M) than the truth. "
            "*Lens changes*: how many times the lens before the eye changed, the first lens placed included (a "
            "comparison shows two lenses, a slider its path): the lens swaps of a trial frame, which the patient's "
            "time counts only where the protocol prices them (`comparisons.lens_change_seconds`). "
            "The row *starting prescription as it is* scores the start the session was given. A patient whose start "
            "lies outside the range the refraction covers (M from -12 to +8 D, cylinder to 6 D) is refused with a "
            "message, as in the clinic (*refused* under stops), and left out of both rows."
        ),
        "",
        (
            "For comparison, a clinician's repeated subjective refraction agrees within 0.25 D about 80% of the time "
            "and "
            "within 0.50 D about 95% of the time (repeatability: Bullimore et al. 1998, Optom. Vis. Sci. 75:617-622; "
            "between optometrists the spread of M is about twice as wide: MacKenzie 2008, Ophthalmic Physiol. Opt. "
            "28:143-150)."
        ),
        "",
        *_comparisons_note(protocol),
        *_chart_line_note(protocol),
        *_stop_note(protocol),
        *_over_minus_note(protocol),
        *_keep_start_note(protocol),
        *_lapse_runs_note(protocol),
        *_sliders_note(protocol),
        f"- Command: `{meta['command']}`",
        f"- Machine: {meta['machine']}",
        software_line([{"software": meta["software"]}]),
        (
            f"- Patients per population: {meta['cases']} (population seed {meta['seed']}); runs now "
            f"{meta['runs_now']} of "
            f"{meta['runs_total']}; wall time of this invocation {meta['wall_s']:.1f} s."
        ),
        "",
    ]
    for pop, rows in tables.items():
        lines += [f"## {pop}", "", _SOURCES.get(pop, ""), "", table_markdown(rows), ""]
    return "\n".join(lines)
