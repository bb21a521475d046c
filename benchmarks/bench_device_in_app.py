"""Benchmark: how long the app's letter waits for the lens device (plain script).

The app's session engine (:class:`~visiontune.app.logic.session_host.SessionHost`, in this process)
runs a SIMULATED session of ``--protocol`` (``--answers`` answers, the simulated patient of seed
``--seed``). Each ``present`` command, the one Enter sends, is timed from the command to its
end: at the manual trial frame the engine only records the clinician's confirmation, while with
the CV-5000 driver the time includes the device setting the lens and confirming it. The device
is the SIMULATED CV-5000, the emulator on a pty, at its stated change time (``--change-seconds``,
0.5 s by default: assumed, no maker's figure found). The script prints, per device, the median
and the largest ``present`` time in ms and the number of presents.

Run: python benchmarks/bench_device_in_app.py [--answers 20] [--seed 3] [--change-seconds 0.5]
     [--protocol clinical-sloan]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from visiontune.app.logic.messages import (
    DeviceFault,
    Failed,
    Opened,
    OpenStore,
    Present,
    RecordAnswer,
    SetDevice,
    StartSession,
    Updated,
)
from visiontune.app.logic.session_host import SessionHost
from visiontune.app.logic.simulation import case_patient, simulated_reply
from visiontune.app.logic.worker_values import NewSession
from visiontune.devices.emulator import CV5000Emulator
from visiontune.refraction.loop import PendingComparison, PendingSlider, simulated_comparison, simulated_slider
from visiontune.session.engine import Answer, ComparisonReply, SliderReply


def _answer(snap, patient):
    q = snap.query
    if isinstance(q, PendingSlider):
        return SliderReply(simulated_slider(patient, q))
    if isinstance(q, PendingComparison):
        return ComparisonReply(simulated_comparison(patient, q))
    reply = simulated_reply(
        patient,
        s_logmar=q.s_logmar,
        lens=q.lens,
        letter_shown=q.letter,
        letters=snap.letters,
        seed=snap.seed,
        trial_index=q.index,
    )
    return Answer(letter_named=reply.letter_named)


def present_times(db: Path, device: str, protocol: str, answers: int, seed: int) -> list[float]:
    """Seconds each ``present`` took in one simulated session through the app's engine."""
    events: list = []
    host = SessionHost(events.append)
    times = []
    try:
        host.handle(SetDevice(device))
        host.handle(OpenStore(str(db)))
        host.handle(StartSession(NewSession("SIM-BENCH", "OD", protocol, True, seed=seed)))
        failed = [e.message for e in events if isinstance(e, Failed)]
        if failed:
            raise SystemExit(f"the session did not start: {failed[0]}")
        snap = next(e.snapshot for e in events if isinstance(e, Opened))
        patient = case_patient(snap.simulated_case, snap.n_alternatives)
        for _ in range(answers):
            if snap.query is None:
                break
            del events[:]
            started = time.perf_counter()
            host.handle(Present())
            times.append(time.perf_counter() - started)
            faults = [e.message for e in events if isinstance(e, DeviceFault)]
            if faults:
                raise SystemExit(f"device fault: {faults[0]}")
            host.handle(RecordAnswer(_answer(snap, patient)))
            snap = [e.snapshot for e in events if isinstance(e, Updated)][-1]
    finally:
        host.shutdown()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--change-seconds", type=float, default=0.5)
    parser.add_argument("--protocol", default="clinical-sloan")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, CV5000Emulator(change_seconds=args.change_seconds) as emu:
        for name, device in (
            ("manual trial frame", "manual"),
            (f"SIMULATED CV-5000, {args.change_seconds:g} s a change", f"cv5000:{emu.port}"),
        ):
            times = present_times(Path(folder) / f"{name[:6]}.sqlite3", device, args.protocol, args.answers, args.seed)
            print(
                f"{name}: present (Enter -> letter may show) median {1000 * statistics.median(times):.1f} ms, "
                f"max {1000 * max(times):.1f} ms over {len(times)} presents"
            )


if __name__ == "__main__":
    main()
