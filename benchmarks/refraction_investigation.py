"""Why UCB-ALD stalls on the refraction problem: one configuration per hypothesis.

Protocol (Fauvel & Chalk (contextual BO) §5.3): contextual policy, slope 5 logMAR⁻¹, 26 letters, 260 trials, one
simulated patient per seed (``SeedSequence(seed)`` spawns correction / answers / policy /
estimate streams exactly as :func:`visiontune.reproduction.gp_refraction_run.run_refraction`). Per run: the
final ``VA(x̂)`` (logMAR), ``|Ŝ - S*|``, ``|Ĉ - C*|``, the model's latent mean and sd at the true
correction ``f(s0, x*)`` and at the estimate, and the fraction of x-queries on the box edge
(within 0.05 D). Every run is appended as one JSON line to ``--log``; the summary (mean ± s.e.m.,
median) is printed per configuration.

``--slope`` / ``--n-alternatives`` run every configuration on another patient model (the shipped
hyperparameters for that slope and number of letters); the log rows carry both.

Configurations (``--configs``, comma separated; see :data:`CONFIGS`):
  baseline   UCB-ALD, SE in (S, C), shipped hyperparameters, Laplace, β = Φ⁻¹(0.95), s0 = 0
  random     random-contextual control
  ep         H4: EP inference instead of Laplace
  beta99     H6: β = Φ⁻¹(0.99);  beta0: β = 0 (pure exploitation of μ_c)
  s0-1       H1: reference context s0 = 1 logMAR
  short-ls   H3: SE lengthscales fixed at 2 D (other hyperparameters as shipped)
  gamma0     H2: a patient with γ ≈ 0 (n = 10⁶ alternatives) and hyperparameters fit for it
  pv         H5: SE in power-vector coordinates (M, C/2), hyperparameters fit on the same data
  ucb-ald-pv the named policy UCB-ALD-PV (same as pv, through its registered name)
  ucb-ald-sl the named policy UCB-ALD-SL (same as short-ls, through its registered name)
  pv-ts      H5 with TS-ALD (expected: not supported, no feature map for the transformed kernel)
  refit      H3: hyperparameters refit (Laplace evidence, 2 starts) on the run's own answers every 20 trials
  short-ls-1 SE lengthscales fixed at 1 D;  pv-short-ls: power-vector SE with ℓ_M = ℓ_J = 1 D
  pv-refit / pv-beta0 / pv-ep / pv-s0-1 / pv-random: H5 combined with the others

The estimate is tracked from trial to trial (:class:`visiontune.reproduction.tracking.SolutionTracker`),
as in ``run_refraction``, so a configuration without a refit, β or lengthscale change reproduces
``run_refraction`` exactly (same streams, same estimate).

Run (2 processes, ~5-10 s per run):
  OPENBLAS_NUM_THREADS=1 /work/venv/bin/python benchmarks/refraction_investigation.py \
      --configs baseline,pv --seeds 0-9 --jobs 2 --log refraction_investigation.jsonl
``--summary-only`` re-prints the summary from an existing log.
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: hence the imports below this loop (E402).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import norm  # noqa: E402

from visiontune.optics import SimulatedPatient, random_true_rx  # noqa: E402
from visiontune.reproduction.acquisition import registry  # noqa: E402
from visiontune.reproduction.acquisition.binary_policies import Data  # noqa: E402
from visiontune.reproduction.gp import ProbitGP, fit_hyperparameters, refraction_kernel  # noqa: E402
from visiontune.reproduction.gp.transformed import refraction_power_vector_kernel  # noqa: E402
from visiontune.reproduction.gp_refraction_run import (  # noqa: E402
    policy_kernel,
    refraction_hyperparameters,
    refraction_problem,
)
from visiontune.reproduction.tracking import SolutionTracker  # noqa: E402

SLOPE, N_LETTERS, TRIALS = 5.0, 26, 260


@dataclass(frozen=True)
class Config:
    """One configuration: policy name, kernel variant, inference, β (None = the policy's),
    reference letter size ``s0`` (logMAR) and the patient's number of alternatives."""

    policy: str = "UCB-ALD"
    kernel: str = "se"  # se | pv | se-short
    inference: str = "laplace"
    beta: float | None = None
    s0: float = 0.0
    n_alternatives: int = N_LETTERS
    refit_every: int = 0  # H3: refit the hyperparameters on the run's own answers every k trials (0 = never)
    slope: float = SLOPE  # psychometric slope of the patient (logMAR^-1); --slope overrides it


CONFIGS = {
    "baseline": Config(),
    "random": Config(policy="random-contextual"),
    "ep": Config(inference="ep"),
    "beta99": Config(beta=float(norm.ppf(0.99))),
    "beta0": Config(beta=0.0),
    "s0-1": Config(s0=1.0),
    "short-ls": Config(kernel="se-short"),
    "gamma0": Config(n_alternatives=10**6),
    "pv": Config(kernel="pv"),
    "ucb-ald-pv": Config(policy="UCB-ALD-PV", kernel="pv"),
    "ucb-ald-sl": Config(policy="UCB-ALD-SL", kernel="se-short"),
    "pv-beta0": Config(kernel="pv", beta=0.0),
    "pv-ep": Config(kernel="pv", inference="ep"),
    "pv-s0-1": Config(kernel="pv", s0=1.0),
    "pv-random": Config(kernel="pv", policy="random-contextual"),
    "pv-ts": Config(kernel="pv", policy="TS-ALD"),
    "ts": Config(policy="TS-ALD"),
    "refit": Config(refit_every=20),
    "pv-refit": Config(kernel="pv", refit_every=20),
    "short-ls-1": Config(kernel="se-short-1"),
    "pv-short-ls": Config(kernel="pv-short"),
}


def build_kernel(cfg: Config):
    """The kernel of a configuration with its hyperparameters (where new, fit on the simulated answers of Fauvel &
    Chalk (contextual BO), §5.2)."""
    if cfg.kernel.startswith("pv"):
        from visiontune.reproduction.gp_refraction_run import kernel_variant_hyperparameters

        hp = kernel_variant_hyperparameters("refraction-power-vector-se", cfg.slope, cfg.n_alternatives)
        ls = np.array([1.0, 1.0]) if cfg.kernel == "pv-short" else np.array(hp.lengthscales)
        return refraction_power_vector_kernel(hp.theta, ls, hp.variance)
    hp = refraction_hyperparameters(cfg.slope, cfg.n_alternatives)
    if cfg.kernel.startswith("se-short"):
        ell = 1.0 if cfg.kernel == "se-short-1" else 2.0
        return refraction_kernel(hp.theta, np.array([ell, ell]), hp.variance)
    return hp.kernel()


def run_one(name: str, cfg: Config, kernel, seed: int) -> dict:
    """One 260-trial run; the loop of :func:`run_refraction` with the configuration's kernel/β."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    problem = refraction_problem(cfg.s0)
    rx_seq, patient_seq, policy_seq, estimate_seq, fit_seq = np.random.SeedSequence(int(seed)).spawn(5)
    fit_rng = np.random.default_rng(fit_seq)
    true_rx = random_true_rx(np.random.default_rng(rx_seq))
    patient = SimulatedPatient(
        true_rx, 0.0, cfg.slope, cfg.n_alternatives, 0.0, seed=np.random.default_rng(patient_seq)
    )
    policy = registry.make(policy_kernel(cfg.policy)[0], **({} if cfg.beta is None else {"beta": cfg.beta}))
    policy_rng, tracker = (
        np.random.default_rng(policy_seq),
        SolutionTracker(problem, np.random.default_rng(estimate_seq)),
    )
    X, y = np.zeros((0, 3)), np.zeros(0)
    model = ProbitGP(kernel, X, y, cfg.inference)
    vas = []
    for k in range(1, TRIALS + 1):
        if cfg.refit_every and k > 20 and (k - 1) % cfg.refit_every == 0:
            kernel = fit_hyperparameters(kernel, X, y, inference=cfg.inference, n_starts=2, rng=fit_rng)
            model = ProbitGP(kernel, X, y, cfg.inference)
        q = policy(model, problem, Data(X, y), policy_rng)
        s, x = float(q.s[0]), np.array([float(q.x[0]), float(q.x[1])])
        X = np.vstack([X, [s, *x]])
        y = np.append(y, float(patient.answer(s, x)))
        model = ProbitGP(kernel, X, y, cfg.inference, warm_start=model.warm_start_state if model.n else None)
        est = tracker(model)
        vas.append(float(patient.acuity_logmar(est)))
    xstar = np.array([true_rx.sphere_d, true_rx.cylinder_d])
    mu, var = model.predict(np.array([[cfg.s0, *xstar], [cfg.s0, *est]]))[:2]
    lenses = X[5:, 1:]
    on_edge = np.any(np.abs(np.abs(lenses) - 4.0) < 0.05, axis=1)
    return {
        "config": name,
        "seed": int(seed),
        **cfg.__dict__,
        "true_rx": xstar.tolist(),
        "estimate": [float(est[0]), float(est[1])],
        "final_va": vas[-1],
        "va_at": {str(k): vas[k - 1] for k in (25, 50, 100, 150, 200, 260)},
        "sphere_error": abs(float(est[0]) - xstar[0]),
        "cylinder_error": abs(float(est[1]) - xstar[1]),
        "f_at_xstar": [float(mu[0]), float(np.sqrt(var[0]))],
        "f_at_estimate": [float(mu[1]), float(np.sqrt(var[1]))],
        "final_kernel": repr(kernel),
        "edge_fraction": float(on_edge.mean()),
        "mean_s": float(X[5:, 0].mean()),
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - cpu0,
    }


def diagnose(seed: int, kernel_variant: str = "refraction-se") -> dict:
    """Acquisition-optimiser check on one run's final model (UCB-ALD, s0 = 0): the policy's
    UCB_Φ choice against the maximum of UCB_Φ and of μ_c over a 161 × 161 lens grid, and the
    model's ``f(0, ·)`` (mean, sd) at the true correction, the grid argmax and the box corners."""
    from visiontune.reproduction.acquisition import acquisition_functions as F
    from visiontune.reproduction.acquisition.binary_policies import BETA_UCB_PHI_CONTEXTUAL
    from visiontune.reproduction.gp_refraction_run import run_refraction

    run = run_refraction("UCB-ALD", slope=SLOPE, trials=TRIALS, seed=seed, kernel=kernel_variant)
    model, problem = run.final_model, refraction_problem(0.0)
    g = np.linspace(-4, 4, 161)
    lenses = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
    Z = np.column_stack([np.zeros(len(lenses)), lenses])
    ucb = F.ucb_phi(model, Z, BETA_UCB_PHI_CONTEXTUAL, grad=False)
    mean_c = F.mean_probability(model, Z, grad=False)
    choice = registry.make("UCB-ALD")(model, problem, Data(model.X, model.y), np.random.default_rng(0)).x
    xstar = np.array([run.true_rx.sphere_d, run.true_rx.cylinder_d])
    pts = np.array(
        [[0, *xstar], [0, *choice], [0, *lenses[np.argmax(ucb)]], [0, 4, -4], [0, 4, 4], [0, -4, 4], [0, -4, -4]]
    )
    mu, var = model.predict(pts)
    return {
        "seed": seed,
        "kernel": kernel_variant,
        "true_rx": xstar.tolist(),
        "final_va": run.final_va_logmar,
        "policy_choice": np.round(choice, 3).tolist(),
        "grid_ucb_argmax": lenses[np.argmax(ucb)].tolist(),
        "ucb_at_choice": float(F.ucb_phi(model, pts[1:2], BETA_UCB_PHI_CONTEXTUAL, grad=False)[0]),
        "ucb_grid_max": float(ucb.max()),
        "ucb_at_xstar": float(F.ucb_phi(model, pts[:1], BETA_UCB_PHI_CONTEXTUAL, grad=False)[0]),
        "mu_c_grid_argmax": lenses[np.argmax(mean_c)].tolist(),
        "f_mean_sd": {
            name: [round(float(m), 3), round(float(np.sqrt(v)), 3)]
            for name, m, v in zip(["x*", "choice", "grid_argmax", "(4,-4)", "(4,4)", "(-4,4)", "(-4,-4)"], mu, var)
        },
    }


def _mean_sem_median(values) -> str:
    v = np.asarray(values, dtype=float)
    sem = v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{v.mean():.3f} ± {sem:.3f} ({np.median(v):.3f})"


def summarise(rows: list[dict]) -> str:
    """One line per configuration: final VA (logMAR), |ΔS| and |ΔC| (D) as ``mean ± s.e.m. (median)``,
    runs ending at VA <= 0.1, mean latent mean at the true correction f(s0, x*), fraction of
    x-queries on the box edge, and median CPU / wall seconds per run."""
    out = [
        f"{'config':<12} {'n':>3} {'final VA, logMAR':>22} {'<=0.1':>5} {'|dS|, D':>22} {'|dC|, D':>22} "
        f"{'f(s0,x*)':>8} {'edge':>5} {'cpu s':>6} {'wall s':>6}"
    ]
    by = {}
    for r in rows:
        by.setdefault(r["config"], []).append(r)
    for name, rs in by.items():
        va = np.array([r["final_va"] for r in rs])
        cpu = np.median([r.get("cpu_seconds", np.nan) for r in rs])
        out.append(
            f"{name:<12} {len(rs):>3} {_mean_sem_median(va):>22} {np.sum(va <= 0.1):>5d} "
            f"{_mean_sem_median([r['sphere_error'] for r in rs]):>22} "
            f"{_mean_sem_median([r['cylinder_error'] for r in rs]):>22} "
            f"{np.mean([r['f_at_xstar'][0] for r in rs]):>8.2f} {np.mean([r['edge_fraction'] for r in rs]):>5.2f} "
            f"{cpu:>6.1f} {np.median([r['seconds'] for r in rs]):>6.1f}"
        )
    return "\n".join(out)


def _seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", default="baseline")
    p.add_argument("--seeds", default="0-9")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--log", default="refraction_investigation.jsonl")
    p.add_argument("--summary-only", action="store_true")
    p.add_argument("--slope", type=float, default=None, help="patient slope (logMAR^-1) instead of 5")
    p.add_argument("--n-alternatives", type=int, default=None, help="letters to choose from instead of 26")
    p.add_argument("--diagnose", default=None, help="seeds (e.g. 0,6): optimiser check on the final model")
    p.add_argument("--diagnose-kernel", default="refraction-se")
    args = p.parse_args(argv)
    if args.diagnose:
        for seed in _seeds(args.diagnose):
            print(json.dumps(diagnose(seed, args.diagnose_kernel)), flush=True)
        return 0
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    if not args.summary_only:
        from dataclasses import replace

        from joblib import Parallel, delayed

        for name in names:
            cfg = CONFIGS[name]
            if args.slope is not None:
                cfg = replace(cfg, slope=args.slope)
            if args.n_alternatives is not None:
                cfg = replace(cfg, n_alternatives=args.n_alternatives)
            kernel = build_kernel(cfg)
            print(f"# {name}: {cfg} kernel={kernel!r}", file=sys.stderr, flush=True)
            rows = Parallel(n_jobs=min(args.jobs, 2))(
                delayed(run_one)(name, cfg, kernel, s) for s in _seeds(args.seeds)
            )
            with open(args.log, "a", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r) + "\n")
            print(summarise(rows), flush=True)
    rows = [json.loads(line) for line in open(args.log, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r["config"] in names] if names else rows
    print(summarise(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
