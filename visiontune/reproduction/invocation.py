"""What a bench invocation records and prints: its wall time (kept when a sweep is stopped), how
busy its workers were, its outcome, and the pairs it ranks against the paper's order. Shared by
the benchmark tables (:mod:`visiontune.reproduction.bench_cli`) and the refraction experiment
(:mod:`visiontune.reproduction.gp_refraction_bench`)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from visiontune.reproduction import analysis
from visiontune.reproduction.paper_tables import paper_rows
from visiontune.validation.provenance import software

__all__ = ["busy_fraction", "disagreements", "print_outcome", "record_wall_time", "wall_time_kept_when_stopped"]


def disagreements(experiment_name: str, result) -> list[tuple[str, str]]:
    """Pairs ``(a, b)`` that the paper ranks ``a`` strictly above ``b`` but we rank ``b`` strictly above ``a``."""
    paper = {r.rule: r.borda for r in paper_rows(experiment_name)}
    ours = {rule: int(result.borda[i]) for i, rule in enumerate(result.rules)}
    common = [r for r in result.rules if r in paper]
    return [(a, b) for a in common for b in common if paper[a] > paper[b] and ours[b] > ours[a]]


def record_wall_time(path: Path, summary, jobs: int, discarded: dict[str, int] | None = None) -> list[dict]:
    """Append this invocation's wall time to ``path`` (JSON list, one entry per invocation that ran
    something), so that a resumed sweep reports the wall time of all its parts; returns the list.
    ``run_seconds`` (the runs' own times, summed) over ``seconds × jobs`` is how busy the workers were;
    ``discarded``: rule -> stored runs that ``--rerun`` deleted before this invocation ran them again;
    ``software``: the versions that ran them (:func:`visiontune.validation.provenance.software`)."""
    import json

    entries = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    if summary.ran:
        entries.append(
            {
                "runs": summary.ran,
                "seconds": round(summary.seconds, 1),
                "jobs": jobs,
                "decisions": summary.decisions,
                "run_seconds": round(summary.cpu_seconds, 1),
                **({"discarded": discarded} if discarded else {}),
                "software": software(),
            }
        )
        path.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    return entries


@contextlib.contextmanager
def wall_time_kept_when_stopped(path: Path, jobs: int, discarded: dict[str, int] | None = None):
    """A sweep stopped inside the block (Ctrl-C, SIGTERM, SIGHUP) still appends the wall time of the
    runs it finished to ``path`` (:func:`record_wall_time`; the stop carries their summary)."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if getattr(exc, "summary", None) is not None:
            record_wall_time(path, exc.summary, jobs, discarded)
        raise


def busy_fraction(wall: list[dict]) -> float | None:
    """``Σ run_seconds / Σ (seconds × jobs)`` over the invocations that recorded ``run_seconds``
    (near 1: every worker computed all the time); ``None`` if none did."""
    timed = [e for e in wall or [] if "run_seconds" in e and e["seconds"] > 0]
    if not timed:
        return None
    return sum(e["run_seconds"] for e in timed) / sum(e["seconds"] * e["jobs"] for e in timed)


def print_outcome(name: str, summary, rate: str, result, out: Path, pngs) -> None:
    """What a bench command prints at the end: runs planned / stored / run now with the wall time
    and ``rate`` (if it ran anything), the ``rule,rank,borda`` CSV of ``result``, and the files written to ``out``."""
    print(
        f"{name}: {summary.planned} runs planned, {summary.skipped} already stored, {summary.ran} run now"
        + (f" in {summary.seconds:.1f} s ({rate})" if summary.ran else "")
    )
    print(analysis.to_csv(result), end="")
    print(
        f"wrote {out / (name + '.md')}, {out / (name + '.csv')}"
        + (f", {len(pngs)} PNG" if pngs else " (no PNG: matplotlib is not installed)")
    )
    sys.stdout.flush()
