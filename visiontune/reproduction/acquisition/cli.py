"""``visiontune policies [--json] [--scenario S]``: list the registered policies."""

from __future__ import annotations

import argparse
import json

from visiontune.reproduction.acquisition.binary_policies import SCENARIOS
from visiontune.reproduction.acquisition.registry import REGISTRY


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    parser.add_argument("--scenario", choices=SCENARIOS, help="only the policies of this scenario")


def run(args: argparse.Namespace) -> int:
    specs = [s for s in REGISTRY.values() if args.scenario is None or s.scenario == args.scenario]
    if args.json:
        rows = [
            {"name": s.name, "scenario": s.scenario, "source": s.source, "description": s.description} for s in specs
        ]
        print(json.dumps(rows, indent=2))
        return 0
    width = max((len(s.name) for s in specs), default=4)
    print(f"{'name':<{width}}  {'scenario':<23}  source")
    for s in specs:
        print(f"{s.name:<{width}}  {s.scenario:<23}  {s.source}")
        print(f"{'':<{width}}  {'':<23}  {s.description}")
    return 0
