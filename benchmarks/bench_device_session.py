"""Benchmark: SIMULATED sessions with the SIMULATED CV-5000 setting every lens (plain script).

Each patient (case 0 of the demo population drawn with seeds ``--seed``, ``--seed + 1``, ...)
is refracted through the session loop, the trial log in a temporary folder, with the CV-5000
driver talking to the emulator on a pty at its stated change time (``--change-seconds``, 0.5 s
by default: assumed). Printed per session: answers, lenses set, lens changes (lenses set that
differ from the one in place), the driver's measured time per change (lens command to its
confirmation: median over changes) and per lens already in place, and the session's wall time;
then the medians over sessions.

Run: python benchmarks/bench_device_session.py [--sessions 3] [--seed 1] [--change-seconds 0.5]
     [--protocol clinical-sloan-compare]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from visiontune.devices.cv5000 import CV5000
from visiontune.devices.emulator import CV5000Emulator
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession, SimulatedPresenter
from visiontune.session.lens_device import protocol_with_lens_change_seconds
from visiontune.session.store import TrialStore


def one_session(folder: Path, protocol_name: str, seed: int, change_seconds: float) -> dict:
    with (
        CV5000Emulator(change_seconds=change_seconds) as emu,
        CV5000(emu.port, change_seconds=change_seconds) as device,
        TrialStore.open(folder / f"log-{seed}.sqlite3") as store,
    ):
        protocol = protocol_with_lens_change_seconds(load_protocol(protocol_name), device.change_seconds, device.name)
        case = simulated_case(seed=seed, protocol=protocol)
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
        started = time.perf_counter()
        with RefractionSession.start(
            store, patient_id="SIM-0001", eye="OD", protocol=protocol, simulated=True, seed=seed, start=start
        ) as session:
            session.attach_device(device)
            result = session.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
        wall = time.perf_counter() - started
        previous = [None] + emu.log[:-1]
        moved = [state != before for state, before in zip(emu.log, previous)]
    changes = [t for t, m in zip(device.change_times, moved) if m]
    kept = [t for t, m in zip(device.change_times, moved) if not m]
    return {
        "answers": result["trials_used"],
        "lenses": len(emu.log),
        "changes": len(changes),
        "change_s": statistics.median(changes) if changes else float("nan"),
        "kept_s": statistics.median(kept) if kept else float("nan"),
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--change-seconds", type=float, default=0.5)
    parser.add_argument("--protocol", default="clinical-sloan-compare")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.sessions):
            row = one_session(Path(tmp), args.protocol, args.seed + k, args.change_seconds)
            rows.append(row)
            print(
                f"SIMULATED seed {args.seed + k}: {row['answers']} answers, {row['lenses']} lenses set, "
                f"{row['changes']} changes, {row['change_s']:.3f} s per change, {row['kept_s']:.3f} s per lens "
                f"kept, session {row['wall_s']:.1f} s"
            )
    for key in ("answers", "lenses", "changes", "change_s", "kept_s", "wall_s"):
        print(f"median {key}: {statistics.median(r[key] for r in rows):.3f}")


if __name__ == "__main__":
    main()
