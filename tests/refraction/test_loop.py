"""The one trial loop: the clinic (SQLite store) and the bench (memory log) run the same loop."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import visiontune
from tests.protocol_text import small_protocol_text
from visiontune.cli import main
from visiontune.errors import ProtocolError
from visiontune.optics import Prescription
from visiontune.refraction.lenses import lens_power_vector
from visiontune.refraction.loop import (
    Answer,
    ComparisonReply,
    MemoryLog,
    PendingComparison,
    PendingSlider,
    Refraction,
    SimulatedPresenter,
    SliderReply,
)
from visiontune.refraction.policies import GP_POLICIES, OPTICS_POLICIES
from visiontune.refraction.protocol import load_protocol, parse_protocol
from visiontune.refraction.simulated import simulated_case
from visiontune.refraction.start import StartingPoint
from visiontune.session.engine import RefractionSession
from visiontune.session.store import TrialStore
from visiontune.validation.clinic import CaseSpec, run_case

PACKAGE = Path(visiontune.__file__).resolve().parent


def _queries(trials):
    return [(t.s_logmar, t.lens.sphere_d, t.lens.cylinder_d, t.lens.axis_deg % 180.0, bool(t.correct)) for t in trials]


def _bench_trials(protocol, case, max_steps):
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)), max_steps=max_steps)
    return refraction.trials()


def _session_run(db, *extra):
    return main(["session", "run", "--simulate", "--quiet", "--db", str(db), "--protocol", "clinical-sloan", *extra])


def test_session_run_and_the_bench_ask_the_same_queries(tmp_path, capsys):
    """One seed and one simulated patient: the same letters and lenses through
    `session run --simulate` (SQLite store) as through the bench's memory log."""
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=5, protocol=protocol)  # the bench's session seed is the case's
    db = tmp_path / "log.sqlite3"
    assert _session_run(db, "--patient-seed", "5", "--seed", str(case.seed), "--max-steps", "25") == 0
    with TrialStore.open(db) as store:
        clinic = store.trials(store.list_sessions()[0].session_id)
    bench = _bench_trials(protocol, case, 25)
    assert len(clinic) == len(bench) == 25
    assert _queries(clinic) == _queries(bench)
    # not a degenerate loop: the lenses move and the answers are mixed
    assert len({q[1:4] for q in _queries(bench)}) > 3 and 0 < sum(q[4] for q in _queries(bench)) < 25


def test_a_resumed_simulated_session_answers_as_the_uninterrupted_one(tmp_path, capsys):
    db_a, db_b = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    assert _session_run(db_a, "--seed", "8", "--max-steps", "18") == 0
    assert _session_run(db_b, "--seed", "8", "--max-steps", "7") == 0
    assert main(["session", "resume", "1", "--simulate", "--quiet", "--db", str(db_b), "--max-steps", "11"]) == 0
    with TrialStore.open(db_a) as a, TrialStore.open(db_b) as b:
        assert _queries(a.trials(1)) == _queries(b.trials(1))


def test_the_bench_case_is_the_loop_with_a_memory_log():
    """bench.clinic.run_case scores the refraction the loop finds (nothing of its own)."""
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=3, protocol=protocol)
    result = run_case(CaseSpec("t", protocol.source_text, protocol.source, protocol.policy, "adult-clinic", case))
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    final = refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
    found = Prescription(**final["rounded"])
    truth = case.true_rx.power_vector_array()
    assert result.metrics["answers"] == final["trials_used"]
    assert result.metrics["error_d"] == pytest.approx(float(np.linalg.norm(found.power_vector_array() - truth)))


def test_rebuilding_from_the_log_gives_the_same_next_query():
    """The optics posterior extended answer by answer equals the one rebuilt from the log."""
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=11, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    log = MemoryLog()
    live = Refraction(log, protocol, seed=4, start=start, simulated=True)
    live.run(SimulatedPresenter(case.patient(10)), max_steps=30)
    rebuilt = Refraction(log, protocol, seed=4, start=start, simulated=True)
    a, b = live.next_query(), rebuilt.next_query()
    assert (a.s_logmar, a.lens, a.letter) == (b.s_logmar, b.lens, b.letter)
    ea, eb = live.current_estimate(), rebuilt.current_estimate()
    assert ea.lens == eb.lens and ea.region == eb.region


def test_an_undone_answer_is_forgotten():
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=2, protocol=protocol)
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    r = Refraction(MemoryLog(), protocol, seed=1, start=start, simulated=True)
    r.run(SimulatedPresenter(case.patient(10)), max_steps=6)
    before = r.next_query()
    r.record(Answer(correct=not r.score(Answer(correct=True), before.letter)[0]))
    r.undo()
    after = r.next_query()
    assert (after.s_logmar, after.lens) == (before.s_logmar, before.lens)


def _optics_protocol(policy: str) -> str:
    return load_protocol("clinical-sloan").source_text.replace('policy = "evr"', f'policy = "{policy}"')


def _gp_protocol(policy: str) -> str:
    return small_protocol_text("gp", purpose="policy battery").replace('policy = "ucb-ald"', f'policy = "{policy}"')


OPTICS_VARIANTS = ("", "\n[comparisons]\n", "\n[comparisons]\n[sliders]\n")


@pytest.mark.parametrize(
    "policy, text",
    [
        *[(p, _optics_protocol(p) + v) for v in OPTICS_VARIANTS for p in OPTICS_POLICIES],
        *[(p, _gp_protocol(p)) for p in GP_POLICIES],
    ],
)
def test_every_policy_that_parses_starts_and_runs_a_session(tmp_path, policy, text):
    """No protocol that parses can fail at session start: every registered policy, each model,
    and every optics policy with comparisons, and with comparisons and sliders (each question
    answered in its own kind)."""
    protocol = parse_protocol(text, f"{policy}.toml")
    assert protocol.policy == policy
    start = StartingPoint(Prescription(-2.0, -1.0, 30.0), "autorefraction", 45.0)
    if protocol.model.type == "gp":
        start = StartingPoint()
    with TrialStore.open(tmp_path / "log.sqlite3") as store:
        with RefractionSession.start(
            store, patient_id="P", eye="OD", protocol=protocol, simulated=True, seed=1, start=start
        ) as session:
            for correct, choice in ((True, "1"), (False, "="), (True, "2")):
                q = session.next_query()
                lo, hi = protocol.logmar_range
                assert lo <= q.s_logmar <= hi
                if isinstance(q, PendingSlider):
                    reply = SliderReply(q.start)
                else:
                    reply = ComparisonReply(choice) if isinstance(q, PendingComparison) else Answer(correct=correct)
                session.record(reply)
            assert len(session.trials()) == 3


@pytest.mark.parametrize("policy", ["kss-ald", "muc-ald", "ucb-aldd", "evr-x"])
def test_a_policy_the_engine_cannot_run_does_not_parse(tmp_path, policy):
    with pytest.raises(ProtocolError, match="policy: expected one of"):
        parse_protocol(_gp_protocol(policy), "x.toml")
    with pytest.raises(ProtocolError, match="policy: expected one of"):
        parse_protocol(_optics_protocol(policy), "x.toml")


def test_a_session_from_a_typed_start_begins_near_it(tmp_path):
    """The first lenses keep the start's cylinder and axis and lie within the protocol's step
    (max_step_d, plus the rounding to trial lenses) of the current estimate, which starts at the
    typed prescription; on M they may go to the plus side of it, as a clinician fogs."""
    protocol = load_protocol("clinical-sloan")
    start_rx = Prescription(-3.0, -1.5, 25.0)
    r = Refraction(MemoryLog(), protocol, seed=2, start=StartingPoint(start_rx, "autorefraction", 50.0), simulated=True)
    for correct in (True, True, False):
        q, estimate = r.next_query(), r.current_estimate()
        lens = lens_power_vector(q.lens)
        assert np.linalg.norm(lens - estimate.lens.power_vector_array()) <= protocol.search_space.max_step_d + 0.25
        assert np.linalg.norm(lens - start_rx.power_vector_array()) <= 2.0
        assert abs(q.lens.cylinder_d - start_rx.cylinder_d) <= 0.5 and abs(q.lens.axis_deg - start_rx.axis_deg) <= 10
        r.record(Answer(correct=correct))


def _imports(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
    return names


def test_session_and_bench_sit_side_by_side_on_refraction():
    session, validation, refraction = (_imports(PACKAGE / d) for d in ("session", "validation", "refraction"))
    assert not any(n.startswith(("visiontune.validation", "visiontune.reproduction")) for n in session)
    assert not any(n.startswith("visiontune.session") for n in validation)
    above = ("visiontune.session", "visiontune.validation", "visiontune.reproduction", "visiontune.app")
    assert not any(n.startswith(above) for n in refraction)


@pytest.mark.parametrize("true_rx", [Prescription(-10.0, -1.0, 20.0), Prescription(6.0, -0.75, 100.0)])
def test_without_a_start_a_high_myope_and_a_hyperope_are_found(true_rx):
    """No starting prescription: the wide prior (M from -12 to +8 D) still reaches the edges
    of the clinical range, within 0.50 D of the truth after at most 120 answers."""
    protocol = load_protocol("clinical-sloan")
    case = simulated_case(seed=2, protocol=protocol, true_rx=true_rx)
    r = Refraction(MemoryLog(), protocol, seed=2, start=StartingPoint(None, "none", case.age_years), simulated=True)
    result = r.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
    found = Prescription(**result["rounded"])
    assert np.linalg.norm(found.power_vector_array() - true_rx.power_vector_array()) <= 0.5
