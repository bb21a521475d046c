"""Letters only vs letters and comparisons: the validation patients, both comparison models.

The same simulated patients (``adult-clinic``, population seed 1, the first ``--cases``) are
refracted with the clinical protocol (``clinical-sloan``: EVR, 120-answer budget, precision stop
at ±0.25 D, 95%) through the one trial loop, in five variants:

* ``letters``: letters only, the protocol as shipped (the mixed loop with comparisons off; it
  asks the letters of ``visiontune validate`` bit for bit, tests/validation/test_mixed.py);
* ``mixed, Eq. 11``: letters or comparisons, chosen by EVR per second; the model and the
  simulated patient both answer comparisons by Fauvel & Chalk (contextual BO), Eq. 11 (with ties);
* ``mixed, blur``: the same with the blur-discrimination model for both;
* ``mixed, Eq. 11 model / blur patient`` and ``mixed, blur model / Eq. 11 patient``: the model
  assumes one formula and the patient follows the other (misspecified comparisons);
* ``mixed, inferred sensitivity (median 4) / Eq. 11 patient`` and ``... / blur patient``: the model
  is Eq. 11 with the patient's comparison sensitivity ``κ`` (``δ_model = κ δ``) an unknown,
  lognormal with median 4 and σ 1 (spanning both formulas symmetrically on the log scale,
  :mod:`visiontune.optics.comparison_answers`); the patient follows one formula or the other (with the
  patient's own 2% lapses, as in the well-specified rows);
* ``mixed, inferred sensitivity (median 4) / Eq. 11 patient, no precision stop``: every session
  uses its 120 answers (does the posterior of ``κ`` get there, given time?);
* ``mixed, inferred sensitivity (median 1) / ...``: the same with the prior anchored at Eq. 11,
  median 1 and σ 1.4 (the blur patient's ``κ ≈ 15`` at +1.96 σ).

Durations: a letter 3 s, a comparison 5 s (:class:`visiontune.refraction.mixed_rules.MixedSettings`).
It also prints the Fisher information per answer about one component of the correction at the
best design (everything else known), for a letter (:mod:`visiontune.validation.information_bound`) and for a
symmetric comparison ``c ± h`` at the correction, for each comparison model.

Runs are stored one by one in ``<out>/<name>.sqlite`` (a killed run resumes) and the page
``<out>/<name>.md`` is written with the command, machine, software and wall time.

Run: python benchmarks/comparisons.py --cases 30 --jobs 1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from visiontune.optics.comparison_answers import (
    SPANNING_SENSITIVITY_MEDIAN,
    SPANNING_SENSITIVITY_SIGMA,
    ComparisonModel,
)
from visiontune.refraction.estimate import region_from_samples, weighted_quantile
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.optics_model import LOG_SENSITIVITY, LOG_SLOPE
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.validation import clinic
from visiontune.validation.clinic import TimedPresenter, case_refraction
from visiontune.validation.information_bound import letter_information, pair_information
from visiontune.validation.mixed import MixedCaseSpec, run_mixed_case
from visiontune.validation.parallel_runs import execute_runs
from visiontune.validation.provenance import machine_description, software, software_line

EQ11, BLUR = ComparisonModel(), ComparisonModel("blur")
#: Eq. 11 with the comparison sensitivity κ inferred: the prior spanning Eq. 11 and blur patients
#: symmetrically, and one anchored at Eq. 11 (median 1) that reaches the blur patients at +1.96 σ.
INFERRED = ComparisonModel(sensitivity_median=SPANNING_SENSITIVITY_MEDIAN, sensitivity_sigma=SPANNING_SENSITIVITY_SIGMA)
INFERRED_AT_EQ11 = ComparisonModel(sensitivity_median=1.0, sensitivity_sigma=1.4)
#: The simulated patients of the inferred-sensitivity rows: the adult-clinic patients' own 2% lapses.
EQ11_PATIENT, BLUR_PATIENT = ComparisonModel(lapse=0.02), ComparisonModel("blur", lapse=0.02)
#: label -> (session settings, the model the patient answers with (None: the session's), precision stop on)
VARIANTS = {
    "letters": (MixedSettings(comparisons=False), None, True),
    "mixed, Eq. 11": (MixedSettings(comparison=EQ11), None, True),
    "mixed, blur": (MixedSettings(comparison=BLUR), None, True),
    "mixed, Eq. 11 model / blur patient": (MixedSettings(comparison=EQ11), BLUR, True),
    "mixed, blur model / Eq. 11 patient": (MixedSettings(comparison=BLUR), EQ11, True),
    "letters, no precision stop": (MixedSettings(comparisons=False), None, False),
    "mixed, Eq. 11, no precision stop": (MixedSettings(comparison=EQ11), None, False),
    "mixed, inferred sensitivity (median 4) / Eq. 11 patient": (MixedSettings(comparison=INFERRED), EQ11_PATIENT, True),
    "mixed, inferred sensitivity (median 4) / blur patient": (MixedSettings(comparison=INFERRED), BLUR_PATIENT, True),
    "mixed, inferred sensitivity (median 4) / Eq. 11 patient, no precision stop": (
        MixedSettings(comparison=INFERRED),
        EQ11_PATIENT,
        False,
    ),
    "mixed, inferred sensitivity (median 1) / Eq. 11 patient": (
        MixedSettings(comparison=INFERRED_AT_EQ11),
        EQ11_PATIENT,
        True,
    ),
    "mixed, inferred sensitivity (median 1) / blur patient": (
        MixedSettings(comparison=INFERRED_AT_EQ11),
        BLUR_PATIENT,
        True,
    ),
    "mixed, inferred sensitivity (median 4), stop once κ is learned / Eq. 11 patient": (
        MixedSettings(comparison=INFERRED, sensitivity_to_stop=0.5),
        EQ11_PATIENT,
        True,
    ),
    "mixed, inferred sensitivity (median 4), stop once κ is learned / blur patient": (
        MixedSettings(comparison=INFERRED, sensitivity_to_stop=0.5),
        BLUR_PATIENT,
        True,
    ),
    "the same, clinical pairs (one parameter at a time) / Eq. 11 patient": (
        MixedSettings(comparison=INFERRED, sensitivity_to_stop=0.5, pairs="clinical"),
        EQ11_PATIENT,
        True,
    ),
    "the same, clinical pairs (one parameter at a time) / blur patient": (
        MixedSettings(comparison=INFERRED, sensitivity_to_stop=0.5, pairs="clinical"),
        BLUR_PATIENT,
        True,
    ),
}


#: The rows whose posterior of κ the page describes (their sessions re-run, the results cached).
DIAGNOSED = tuple(label for label in VARIANTS if "inferred sensitivity" in label)
#: "Early" precision stops: at most this many answers.
EARLY_STOP = 25


def sensitivity_diagnosis(spec: MixedCaseSpec) -> dict:
    """Re-run one session of an inferred-sensitivity row as :func:`run_mixed_case` does (the same
    keyed draws, so the same session) and describe its posterior at the end: the posterior 5%,
    50% and 95% quantiles of ``κ a`` (the comparison signal's scale: for an Eq. 11 patient the
    truth is the patient's slope ``a``), the median of ``κ``, the error and whether the 95% region
    covers the truth, the effective sample size and the number of distinct particles."""
    protocol = dataclasses.replace(parse_protocol(spec.protocol_text, spec.protocol_source), comparisons=spec.settings)
    case = spec.case
    refraction = case_refraction(protocol, case)
    patient = case.patient(protocol.n_alternatives)
    result = refraction.run(TimedPresenter(patient, comparison_model=spec.patient_comparison))
    post = refraction.engine.posterior(refraction.trials())
    w = post.weights
    truth = case.true_rx.power_vector_array()
    centre = post.best_correction()
    region = region_from_samples(post.theta[:, :3], w, centre, 0.95, "minus")
    log_ka = post.theta[:, LOG_SENSITIVITY] + post.theta[:, LOG_SLOPE]
    ka = [float(np.exp(weighted_quantile(log_ka, w, q))) for q in (0.05, 0.5, 0.95)]
    return {
        "answers": int(result["trials_used"]),
        "stopped_by": result["stopped_by"],
        "error_d": float(np.linalg.norm(refraction.engine.filed_lens(post).power_vector_array() - truth)),
        "covered_95": bool(np.linalg.norm(truth - centre) <= region.distance_d),
        "slope": float(patient.psychometric.slope),
        "kappa_slope": ka,
        "kappa_median": float(np.exp(weighted_quantile(post.theta[:, LOG_SENSITIVITY], w, 0.5))),
        "ess": float(1.0 / np.sum(w**2)),
        "distinct": len(np.unique(post.theta[:, 0])),
        "delta_m_d": float(centre[0] - truth[0]),
    }


def diagnose(specs: list[MixedCaseSpec], path: Path) -> dict:
    """:func:`sensitivity_diagnosis` of every spec of the :data:`DIAGNOSED` rows, cached in ``path``
    (JSON, label -> case id -> diagnosis): only the missing ones are run."""
    cache = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for spec in specs:
        if spec.label in DIAGNOSED and str(spec.case.case_id) not in cache.get(spec.label, {}):
            cache.setdefault(spec.label, {})[str(spec.case.case_id)] = sensitivity_diagnosis(spec)
            path.write_text(json.dumps(cache, indent=0) + "\n", encoding="utf-8")
    return cache


def without_precision_stop(text: str) -> str:
    """The protocol's TOML without its ``[stopping.precision]`` table: every session uses its budget."""
    out, skipping = [], False
    for line in text.splitlines():
        if line.strip().startswith("["):
            skipping = line.strip() == "[stopping.precision]"
        if not skipping:
            out.append(line)
    return "\n".join(out) + "\n"


ANSWER_MARKS = (20, 30, 40, 60, 80, 120)
#: The configuration the reading below was written from (cases, population, seed).
RECORDED = (100, "adult-clinic", 1)
READING = """\
**Letters only.** The `letters` row is the adult-clinic row of `clinical-validation.md` to the last digit (79% / 99%,
budget 90, precision 10, coverage 58 / 88 / 97%): the mixed loop with comparisons off asks the same letters.

**Eq. 11 comparisons (the default model, well specified) help, mostly early.** At equal numbers of answers the mixed
session is ahead from the start: 72% vs 50% within 0.25 D after 40 answers and 81% vs 59% after 60 (paired, p < 0.001).
Its share stays at or above letters-only's final 79% from answer 74 on (38% fewer answers than 120), and it ends at 85%
vs 79% (p = 0.31, not significant) after a median of 83 answers: 78 of 100 sessions reach the precision stop (median 63
answers, 274 s of the patient's time), against 10 of 100 with letters. In the **patient's time** the gain is smaller,
since a comparison is counted at 5 s and a letter at 3 s: 73% vs 54% at 150 s and 83% vs 68% at 300 s, but the same
median session time (360 s) and, without the precision stop, 80% vs 80% at 360 s; given 120 answers each (no
precision stop) the mixed session ends at 89% vs 80% (p = 0.064) but takes 524 s against 360 s. By the target set for
comparisons ("the letters-only share in at least 30% fewer answers") Eq. 11 comparisons pass; by patient time they
pass in the first five minutes and tie at the end. They were asked for about two answers in three (median 27 letters, 55
comparisons), and a third of their answers were "=".

Why more answers are not worth more: at the correction a comparison of `c ± h` carries 6x the Fisher information of the
best letter (13.9 vs 2.2 D⁻², table above; 3.7x per second), because the difference of two acuities is linear in the
error while one letter's acuity is flat at the optimum; but the best `h` is 1 D, beyond the 0.75 D half-separation the
candidates use within the protocol's 1 D step (at `h = 0.5 D` it is 8.9 D⁻²); the information is about one direction
per comparison; and the mixed posterior is a little overconfident at the centre (coverage 46% and, without the stop,
38% at 50%), so its precision stop fires with some patients still 0.25-0.41 D away. We did not decompose the remaining
gap further.

**Blur discrimination (well specified) would make the refraction trivial**: every session stops at the minimum 20
answers (100 s) with 99% within 0.25 D. Thresholds of 0.07-0.15 D make one comparison worth about 130 letters at the
correction (296 vs 2.2 D⁻²). But the posterior is then overconfident (coverage 90% at 95%, 70% at 80%): with a
likelihood this sharp the particles are too few or too little moved after resampling (suspected, not shown).

**The benefit is only as good as the comparison model, and a wrong one is worse than no comparisons.** A session that
assumes blur discrimination with a patient who answers by Eq. 11 stops at 20 answers on a posterior that is far too
sure (coverage 9% at 95%) and files a lens within 0.25 D for 28% of patients, little better than the autorefraction
start it was given. One that assumes Eq. 11 with a blur-discriminating patient stops at a median 46 answers (198 s)
with 70% within 0.25 D (letters only: 79%), over-minused by 0.10 D on average. The two formulas differ by a factor of
about 20 in information per comparison, and the literature does not say which one a patient at a phoropter follows:
blur thresholds are measured with paralysed accommodation, fixed pupils and practised observers, Eq. 11 only reuses the
letter task's noise. So the comparison likelihood must not be a fixed formula in the clinic: the patient's
sensitivity to a comparison (a scale on `δ`, and the "equal" band) should be an unknown of the model, with a prior that
spans both formulas, or be calibrated on recorded sessions first. The rows below do the first.

**Inferred sensitivity: the model no longer needs to know the formula, but the precision stop comes too soon for Eq. 11
patients.** The model is Eq. 11 with `δ_model = κ δ`, `κ` a seventh unknown of the particles, lognormal with median 4
and σ 1. Near the correction both formulas are quadratic in the blur, and the blur signal is 15.5 times Eq. 11's at
slope 5 (`ln 10 / (2 a w b_i²)`, falling to 8 at 0.5 D and 5 at 1 D of blur as the blur signal saturates), so the prior
puts `κ = 1` and `κ = 15.5` each 1.4 σ from its median. The "equal" band stays in units of the judgement's noise
(both formulas use `τ = 0.5` there), so `κ` alone maps one formula onto the other. With a **blur patient** the inferred
model does what the well-specified one does: 98% within 0.25 D after the minimum 20 answers (well-specified 99%, the
fixed Eq. 11 model 70%), and its posterior is better calibrated (coverage 96% at 95% against 90%). With an **Eq. 11
patient** the failure of the wrong fixed model is gone (74% within 0.25 D and coverage 89% at 95%, against 28% and 9%
with the blur model), but not all the well-specified benefit is kept: 74% against 85%, at a median 56 answers against
83, and no better than letters only (79%; paired +16 / -21, p = 0.51). So the answer to "does it recover most of the
well-specified benefit for both patient kinds?" is: for blur patients all of it, for Eq. 11 patients not with the
precision stop; and the 95% coverage is 96% and 89%, the second just below 90%.

**Why: the Eq. 11 sessions stop before `κ` is known, not a failure of the inference or of the particles.** Without the
precision stop the same sessions end at 89% within 0.25 D after 120 answers, as the well-specified model does (89%;
coverage 91% against 94%), and the posterior's central 90% of `κ a` holds the patient's slope in 89% of them (the
section above). They learn more slowly at first (71% vs 82% after 60 answers, 80% vs 83% after 80) while `κ` is being
learned. With the stop, 28 of the 100 sessions stop within 25 answers; in 16 of those the patient's `a` lies below the
posterior's 5% quantile of `κ a` (the sensitivity overestimated) and their 95% coverage is 71% (96% in the other 72).
The mechanism: near the correction an Eq. 11 patient's answers are weak (a pair `c ± 0.25 D` with the correction 0.25 D
from `c` gives `δ` of 0.3-0.5 at slopes 3-5: the clearer lens is named 42-49% of the time, the other 16-21%, "=" the
rest), and such answers are explained about as well by a
sensitive patient (`κ` of 4-15) with the correction at the centre of the pairs as by an insensitive one with the
correction 0.25 D away; the prior puts most of its mass on the sensitive side, the chooser picks pairs around the
estimate (the best for the correction under that posterior), which do not tell the two apart, and under a large `κ` the
posterior of the correction is narrow enough to stop. It is not particle degeneracy: at the end of every session the
effective sample size was at least 2008 of 4000 and at least 2336 particles were distinct. A blur patient's answers are
decisive, so the same prior costs it nothing.

**The remedy: stop once `κ` is learned** (`MixedSettings.sensitivity_to_stop = 0.5`, the protocol key
`comparisons.sensitivity_to_stop`: the precision stop also waits until the posterior standard deviation of `ln κ` is at
most half the prior's; 0.5 is the first value tried, not tuned). With an **Eq. 11 patient** the sessions end at 79%
within 0.25 D, letters-only's share (paired +17 / -17, p = 1), after a median 75 answers instead of 120 (38% fewer) and
with the 95% coverage back to 93%; after 40 answers they are ahead of letters only (67% vs 50%, paired +28 / -11,
p = 0.0095). In the patient's time they are not ahead: a median 364 s against 360 s (a comparison counted at 5 s, a
letter at 3 s; 64 comparisons and 5 letters in the median session). With a **blur patient** 100% are within 0.25 D after
a median 37 answers (184 s), coverage 91%. This is the configuration `clinical-sloan-compare` ships (whose questions
also turn to learning `κ` once the region is within the precision, `criterion = "evr-stop"`, docs/results/README.md):
the worst case over the two comparison formulas is letters-only's share in fewer answers, the best a refraction in a
third of the answers.

**Pairs a clinician sets in one move cost accuracy and calibration** (`pairs = "clinical"`: lens 1 and lens 2 differ
only in the sphere, the cylinder's power or its axis, without the pairs of two posterior draws). Some of the shipped
protocol's pairs change sphere, cylinder and axis at once (at low cylinder a small step in `J` is a large turn of the
axis), which is awkward at a phoropter. Restricted to one-parameter pairs, the same sessions end at 77% within 0.25 D
for Eq. 11 patients (79% shipped) after a median 84 answers (75) with 95% coverage 86% (93%), and at 94% for blur
patients (100%) with coverage 82% (91%): the draw pairs are the ones that test the posterior where it is uncertain,
in more than one parameter at a time. The option stays for a clinic that prefers it; the default keeps any pairs.

**A prior anchored at Eq. 11 is worse, not better** (median 1, σ 1.4, so that the blur patient is at +1.96 σ): 66%
within 0.25 D for Eq. 11 patients (paired with letters only +10 / -23, p = 0.035) at a median 98 answers, and 91% for
blur patients at 24. With it the Eq. 11 sessions ask more letters (median 36 letters / 37 comparisons), fewer stop early
(10 within 25 answers) and the coverage is 92%, but they end over-plussed (mean signed ΔM +0.10 D, against +0.06 D for
the well-specified model), with more than a third (38) stopped by the budget; we did not decompose that further. The
rows measure one prior each: which prior a clinic should use, and whether patients at a phoropter resemble either
formula, is for recorded sessions to say; until then the shipped prior is the one that spans both formulas, and the
letters-only protocol stays the default.
"""
SECOND_MARKS = (60, 100, 150, 200, 300, 360, 480, 600)


def comparison_information(model: ComparisonModel, slope: float = 5.0) -> tuple[float, float]:
    """``(I*, h*)``: the largest Fisher information about the distance ``e`` of the correction from
    the middle of a symmetric pair ``c ± h`` (one component, at ``e = 0``), per comparison, and
    its half-separation (:func:`~visiontune.validation.information_bound.pair_information`)."""
    infos = [(pair_information(model, slope, float(h)), float(h)) for h in np.linspace(0.02, 1.0, 99)]
    return max(infos)


def _share_at(runs: list[dict], key: str, mark: float) -> float:
    """Share within 0.25 D after ``mark`` answers (``key = "answers"``) or patient-seconds; a session
    that stopped earlier keeps its final lens."""
    ok = []
    for r in runs:
        errors = r["error_by_answer"]
        if key == "answers":
            i = min(int(mark), len(errors)) - 1
        else:
            done = [j for j, s in enumerate(r["seconds_by_answer"]) if s <= mark + 1e-9]
            i = done[-1] if done else -1
        ok.append(i >= 0 and errors[i] <= 0.25 + 1e-9)
    return float(np.mean(ok))


def _answers_to_reach(runs: list[dict], share: float) -> int | None:
    """The fewest answers from which on the share within 0.25 D stays at or above ``share``."""
    shares = [_share_at(runs, "answers", n) for n in range(1, 121)]
    for n in range(1, 121):
        if all(x >= share - 1e-9 for x in shares[n - 1 :]):
            return n
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="docs/results")
    parser.add_argument("--name", default="comparisons")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    protocol = load_protocol("clinical-sloan")
    experiment = f"{protocol.name}-seed{args.seed}-comparisons"
    cases = draw_cases(population_by_name(args.population), args.cases, args.seed)
    texts = {True: protocol.source_text, False: without_precision_stop(protocol.source_text)}
    specs = [
        MixedCaseSpec(
            experiment,
            texts[precision],
            protocol.source if precision else f"{protocol.source} (no precision stop)",
            label,
            args.population,
            case,
            settings,
            patient_model,
        )
        for label, (settings, patient_model, precision) in VARIANTS.items()
        for case in cases
    ]
    out = Path(args.out)
    t0 = time.perf_counter()
    with clinic.ClinicStore(out / f"{args.name}.sqlite") as store:
        summary = execute_runs(
            specs,
            store.finished_keys(experiment),
            run_mixed_case,
            store.add,
            jobs=args.jobs,
            scheduler=None,
            progress=not args.no_progress,
            stream=sys.stderr,
            connect_timeout=30.0,
        )
        wall = time.perf_counter() - t0
        runs = {label: store.metrics(experiment, args.population, label, args.cases) for label in VARIANTS}
    runs = {k: [r for r in v if "refused" not in r] for k, v in runs.items()}
    command = "python benchmarks/comparisons.py " + " ".join(sys.argv[1:])
    wall_path = out / f"{args.name}.wall.json"
    invocations = json.loads(wall_path.read_text(encoding="utf-8")) if wall_path.exists() else []
    invocations.append(
        {
            "command": command,
            "runs": summary.ran,
            "seconds": round(wall, 1),
            "jobs": args.jobs,
            "machine": machine_description(),
            "software": software(),
        }
    )
    wall_path.write_text(json.dumps(invocations, indent=1) + "\n", encoding="utf-8")
    diagnoses = diagnose(specs, out / f"{args.name}.sensitivity.json")
    letter_info, letter_d = letter_information(5.0)
    info = {
        "letter": (letter_info, abs(letter_d)),
        "Eq. 11": comparison_information(EQ11),
        "blur": comparison_information(BLUR),
    }
    page = results_page(invocations, summary, args, runs, info, diagnoses)
    (out / f"{args.name}.md").write_text(page, encoding="utf-8")
    summary_rows = {label: clinic.summarise(label, r).as_dict() for label, r in runs.items()}
    (out / f"{args.name}.json").write_text(
        json.dumps({"invocations": invocations, "rows": summary_rows}, indent=1) + "\n", encoding="utf-8"
    )
    print(page)
    return 0


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _paired(base: list[dict], runs: list[dict], n: int) -> str:
    """``"+b / -w (p)"``: patients within 0.25 D after ``n`` answers in this variant and not with
    letters only (b), the reverse (w), and the exact two-sided binomial (McNemar) p-value."""
    a = np.array([_share_at([r], "answers", n) for r in base], dtype=bool)
    b = np.array([_share_at([r], "answers", n) for r in runs], dtype=bool)
    better, worse = int(np.sum(b & ~a)), int(np.sum(a & ~b))
    p = binomtest(better, better + worse).pvalue if better + worse else 1.0
    return f"+{better} / -{worse} (p = {p:.2g})"


def _diagnosis_lines(runs: dict, diagnoses: dict, cases: int) -> list[str]:
    lines = [
        "",
        "## Inferred sensitivity: the posterior of κ at the end of the session",
        "",
        (
            "Each session of the inferred-sensitivity rows re-run (the same draws; the final error agrees with the "
            "stored run in the count given) and its posterior described: the posterior median of `κ a` (the scale "
            "of the comparison signal, `δ_model = κ a (VA(L2) - VA(L1))`; for an Eq. 11 patient the truth is the "
            "patient's slope `a`, for a blur patient `κ a ≈ 77` at focus and 41 at 0.5 D of blur, module "
            "`visiontune.optics.comparison_answers`), how often the posterior's central 90% of `κ a` holds the "
            "patient's `a`, the sessions stopped by the precision stop within "
            f"{EARLY_STOP} answers (how many, how many within 0.25 D, and in how many the patient's `a` lies below "
            "the posterior's 5% quantile of `κ a`: the sensitivity overestimated), the 95% coverage, and the "
            "smallest effective sample size and number of distinct particles (of 4000) over the sessions."
        ),
        "",
        (
            "| | re-run = stored | patient's a (median) | posterior median of κ a (median over patients) | 90% of κ a "
            f"holds a | precision stops within {EARLY_STOP} answers: n / within 0.25 D / κ a overestimated | 95% "
            "coverage, early stops / others | smallest ESS / distinct particles |"
        ),
        "|" + " --- |" * 8,
    ]
    for label in DIAGNOSED:
        d = [diagnoses.get(label, {}).get(str(i)) for i in range(cases)]
        if len(runs[label]) != cases or any(x is None for x in d):  # a refused case, or not diagnosed
            continue
        pairs = list(zip(runs[label], d))  # the store's runs are in case order
        same = sum(abs(r["error_by_answer"][-1] - x["error_d"]) < 1e-9 for r, x in pairs)
        xs = [x for _, x in pairs]
        eq11 = "Eq. 11 patient" in label
        held = _pct(np.mean([x["kappa_slope"][0] <= x["slope"] <= x["kappa_slope"][2] for x in xs])) if eq11 else "-"
        early = [x for x in xs if x["stopped_by"] == "precision" and x["answers"] <= EARLY_STOP]
        rest = [x for x in xs if not (x["stopped_by"] == "precision" and x["answers"] <= EARLY_STOP)]
        over = str(sum(x["slope"] < x["kappa_slope"][0] for x in early)) if eq11 else "-"
        within = sum(x["error_d"] <= 0.25 + 1e-9 for x in early)
        cov = " / ".join(_pct(np.mean([x["covered_95"] for x in g])) if g else "-" for g in (early, rest))
        lines.append(
            f"| {label} | {same} of {len(pairs)} | {np.median([x['slope'] for x in xs]):.1f} "
            f"| {np.median([x['kappa_slope'][1] for x in xs]):.1f} | {held} | {len(early)} / {within} / {over} "
            f"| {cov} | {min(x['ess'] for x in xs):.0f} / {min(x['distinct'] for x in xs)} |"
        )
    return lines


def results_page(invocations: list[dict], summary, args, runs: dict, info: dict, diagnoses: dict | None = None) -> str:
    base = runs["letters"]
    base_share = clinic.summarise("letters", base).within_025
    walls = "; ".join(
        f"{i}: `{w['command']}`, "
        + (
            f"{w['runs']} runs, {w['seconds']:.1f} s"
            if w["runs"]
            else "no new runs (the page rewritten from the store)"
        )
        for i, w in enumerate(invocations, 1)
    )
    lines = [
        "# Comparisons in a session: letters only vs letters and comparisons",
        "",
        (
            "Every patient here is **SIMULATED** (`visiontune.refraction.population`, "
            f"`{args.population}`: the patients follow the letter model). The same {len(base)} patients (population "
            f"seed {args.seed}, cases 0-{args.cases - 1}) are refracted with `clinical-sloan` (EVR, at "
            "most 120 answers, "
            "stop when the 95% credible region is within ±0.25 D on M and on J, after at least 20) in each variant. "
            "*letters*: the protocol as shipped. *mixed*: before each answer the session asks a letter (the protocol's "
            'EVR letter) or a comparison ("which is clearer, 1 or 2?", answers 1, 2 or =), whichever is expected to '
            "reduce the posterior variance of the correction more **per second of the patient's time**, a letter "
            "counted at 3 s and a comparison at 5 s (`visiontune.refraction.mixed_rules`). The budget counts both "
            "kinds of answers. *Eq. 11*: comparisons answered and modelled by Fauvel & Chalk (contextual "
            "BO), Eq. 11, with the letter "
            'task\'s latent, `P(1 clearer) = Φ(a (VA(L2) - VA(L1)) - τ)`, with an "equal" band `τ = 0.5` and 4% '
            "lapses (the patient: its own 2%); *blur*: by blur discrimination (threshold 0.15 D from focus, dipper "
            "0.07 D, Weber fraction 0.12; `visiontune.optics.comparison_answers`, sources there). The two *model "
            "/ patient* rows "
            "misspecify the comparisons: the model assumes one formula, the patient follows the other. *no precision "
            "stop*: the protocol without its precision stop, so that every session uses its 120 answers "
            "(equal answers). "
            "*inferred sensitivity*: the model is Eq. 11 with the patient's comparison sensitivity `κ` "
            "(`δ_model = κ δ`) "
            "an unknown, lognormal with median 4 and σ 1 (spanning both formulas) or median 1 and σ 1.4 (anchored at "
            "Eq. 11); the patient answers by Eq. 11 or by blur discrimination, with its own 2% lapses."
        ),
        "",
        f"- Command: `{invocations[-1]['command']}`",
        f"- Machine: {invocations[-1]['machine']}",
        software_line(invocations),
        (
            f"- {summary.planned} runs in `{args.name}.sqlite`; invocations (wall time; workers as each "
            f"command says): {walls}."
        ),
        "",
        "## At the end of the session",
        "",
        (
            "| | n | within 0.25 D | within 0.50 D | median error (D) | median ΔM / ΔJ (D) | stops | answers (median) "
            "| to the precision stop: answers / patient s (median of those stopped by it) | letters / "
            "comparisons (median) "
            '| "=" answers | patient time, median (s) | coverage 50 / 80 / 95% |'
        ),
        "|" + " --- |" * 13,
    ]
    for label, r in runs.items():
        s = clinic.summarise(label, r)
        stops = ", ".join(f"{k} {v}" for k, v in sorted(s.stops.items()))
        cov = " / ".join(_pct(s.coverage[f"covered_{k}"]) for k in (50, 80, 95))
        n_comp = sum(x["comparisons"] for x in r)
        eq = sum(x["equal_answers"] for x in r) / n_comp if n_comp else None
        prec = [x for x in r if x["stopped_by"] == "precision"]
        to_prec = (
            f"{np.median([x['answers'] for x in prec]):.0f} / {np.median([x['patient_s'] for x in prec]):.0f}"
            if prec
            else "-"
        )
        lines.append(
            f"| {label} | {s.n} | {_pct(s.within_025)} | {_pct(s.within_050)} | {s.median_error_d:.2f} "
            f"| {s.median_error_m_d:.2f} / {s.median_error_j_d:.2f} | {stops} | {s.median_answers:.0f} | {to_prec} "
            f"| {np.median([x['letters'] for x in r]):.0f} / {np.median([x['comparisons'] for x in r]):.0f} "
            f"| {'-' if eq is None else _pct(eq)} | {np.median([x['patient_s'] for x in r]):.0f} | {cov} |"
        )
    lines += [
        "",
        "## Share within 0.25 D after n answers (a session stopped earlier keeps its lens)",
        "",
        "| | "
        + " | ".join(f"{n}" for n in ANSWER_MARKS)
        + " | answers from which the share stays >= letters' at 120 |",
        "|" + " --- |" * (len(ANSWER_MARKS) + 2),
    ]
    for label, r in runs.items():
        reach = _answers_to_reach(r, base_share)
        cells = " | ".join(_pct(_share_at(r, "answers", n)) for n in ANSWER_MARKS)
        lines.append(f"| {label} | {cells} | {'never' if reach is None else reach} |")
    lines += [
        "",
        (
            "Paired with the same patients' letters-only sessions (`letters`): patients within 0.25 D in the "
            "variant and not with letters only, the reverse, and the exact two-sided binomial p-value on those "
            "discordant pairs (McNemar)."
        ),
        "",
        "| | after 40 answers | after 60 answers | after 120 answers (or at the stop) |",
        "| --- | --- | --- | --- |",
    ]
    for label, r in runs.items():
        if label != "letters":
            lines.append(f"| {label} | " + " | ".join(_paired(base, r, n) for n in (40, 60, 120)) + " |")
    lines += [
        "",
        "## Share within 0.25 D after t seconds of the patient's time",
        "",
        "| | " + " | ".join(f"{t} s" for t in SECOND_MARKS) + " |",
        "|" + " --- |" * (len(SECOND_MARKS) + 1),
    ]
    for label, r in runs.items():
        lines.append(f"| {label} | " + " | ".join(_pct(_share_at(r, "seconds", t)) for t in SECOND_MARKS) + " |")
    lines += [
        "",
        "## Why: information per answer at the correction",
        "",
        (
            "Fisher information about one component of the correction per answer at the best design, everything "
            "else known (slope 5 logMAR⁻¹, 10 letters, 4% lapses): a letter at the best size and lens offset "
            "(`benchmarks/precision_bound.py`), and a comparison of `c ± h` with the correction at `c`."
        ),
        "",
        "| answer | information (D⁻²) per answer | per second | at |",
        "| --- | --- | --- | --- |",
    ]
    letter_i, letter_d = info["letter"]
    lines.append(f"| letter | {letter_i:.2f} | {letter_i / 3.0:.2f} | lens {letter_d:.2f} D off |")
    for name in ("Eq. 11", "blur"):
        i, h = info[name]
        lines.append(f"| comparison, {name} | {i:.2f} | {i / 5.0:.2f} | c ± {h:.2f} D |")
    lines += _diagnosis_lines(runs, diagnoses or {}, args.cases)
    recorded = (args.cases, args.population, args.seed) == RECORDED
    lines += ["", "## Reading", "", READING if recorded else "(No reading: not the recorded configuration.)", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
