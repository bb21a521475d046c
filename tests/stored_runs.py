"""Helpers of the tests that hold docs/results to the code: a stored validation run replays bit for
bit, and a measured protocol variant differs from its base only where its page says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from visiontune.experiments.clinic import plan, run_case, stored_metrics
from visiontune.refraction.protocol import Protocol


def without_times(metrics: dict) -> dict:
    """A run's metrics without its decision times (wall clock, never the same twice)."""
    return {k: v for k, v in metrics.items() if k != "decision_ms"}


def as_stored(run: dict, stored: dict) -> dict:
    """``run``'s metrics that ``stored`` holds, decision times aside: a store written before a
    metric was kept (``lens_changes``) replays on the metrics it holds. Every key stored must be in
    ``run``."""
    missing = set(stored) - set(run)
    assert not missing, f"metrics stored but no longer computed: {sorted(missing)}"
    return without_times({k: run[k] for k in stored})


def assert_replays(store: Path, experiment: str, protocol: Protocol, population: str, case_id: int, *,
                   policy: str = "evr", seed: int = 1) -> dict:
    """Rerun case ``case_id`` of ``population`` as ``visiontune validate`` planned it (population
    ``seed``) and assert the metrics ``store`` holds for it, to the last bit (decision times aside);
    return the stored metrics."""
    stored = stored_metrics(store, population, policy, experiment)[case_id]
    spec = plan(experiment, protocol, [policy], population, case_id + 1, seed)[case_id]
    assert as_stored(run_case(spec).metrics, stored) == without_times(stored), (experiment, population, case_id)
    return stored


def same_but_criterion(variant: Protocol, base: Protocol, *, filed_lens: bool = False) -> bool:
    """Whether ``variant`` is ``base`` with another ``comparisons.criterion`` and nothing else (its
    name, description and source aside); with ``filed_lens``, its ``model.filed_lens`` may differ
    too (a variant measured before its base filed the most probable lens)."""
    comparisons = dataclasses.replace(variant.comparisons, criterion=base.comparisons.criterion)
    model = dataclasses.replace(variant.model, filed_lens=base.model.filed_lens) if filed_lens else variant.model
    same = dataclasses.replace(variant, comparisons=comparisons, model=model, name=base.name,
                               description=base.description, source=base.source, source_text=base.source_text)  # fmt: skip
    return same == base
