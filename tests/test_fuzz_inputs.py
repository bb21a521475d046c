"""No input gives a traceback. A fixed corpus (seeded, so every run is the same) of
mutated calibration files and of argument lists for ``calibrate``, ``report`` and
``sessions list/show``, of mutated protocol files run by ``session run --simulate`` (a failed
run leaves no session behind: no orphan) and of argument lists for ``session run/resume``,
each run in-process through :func:`visiontune.cli.main`.

Every case ends either in a valid run (exit 0) or in a clear error: exit 2, no traceback,
one ``error:`` line on stderr (exactly one line in all for VisionTune's own errors; argparse
prints its usage line before its error line). Devices, FIFOs and folders given as outputs are
never replaced.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import sqlite3
import stat
from pathlib import Path

import pytest

import visiontune
from visiontune import cli
from visiontune.optics import Prescription
from visiontune.refraction.trial import Trial
from visiontune.session.store import TrialStore

SEED = 21
PROTOCOL_TEXT = (Path(visiontune.__file__).parent / "data" / "protocols" / "clinical-sloan.toml").read_text()
GOOD_CAL = {
    "screen_width_mm": 597.9,
    "screen_height_mm": 336.3,
    "width_px": 1920,
    "height_px": 1080,
    "viewing_distance_mm": 6000.0,
    "mirror": False,
    "background_cd_m2": 85.0,
}
RESULT = {
    "estimate": {"sphere_d": -1.3125, "cylinder_d": -0.5625, "axis_deg": 90.0},
    "rounded": {"sphere_d": -1.25, "cylinder_d": -0.5, "axis_deg": 90.0},
    "credible_interval": {"sphere_d": [-1.75, -0.875], "cylinder_d": [-1.0, -0.125]},
    "predicted_va_logmar": 0.12,
    "predicted_va_interval": [0.02, 0.31],
    "trials_used": 3,
    "duration_s": 12.0,
    "stopped_by": "budget",
    "acuity_curve": [[1, 0.9], [3, 0.2]],
    "posterior_map": {"sphere_d": [-2.0, 0.0], "cylinder_d": [-1.0, 0.0], "va_logmar": [[0.3, 0.2], [0.1, 0.4]]},
}


# --- the world the commands run in ------------------------------------------------------------


def _make_log(path: Path, damage: str | None = None) -> None:
    """A trial log with sessions 1 (finished), 2 (open), 3 (finished), optionally damaged."""
    with TrialStore.open(path) as store:
        store.create_patient("P-0042")
        for finish in (True, False, True):
            sid = store.create_session("P-0042", eye="OD", protocol=PROTOCOL_TEXT, seed=3)
            with store.open_session(sid) as handle:
                for i in range(3):
                    handle.record_trial(Trial(i, 0.1 * i, Prescription(-0.25 * i, 0.0, 90.0), "C", i != 1, "C"))
                if finish:
                    handle.finish(RESULT)
    if damage == "text":
        conn = sqlite3.connect(path)
        for trigger in ("sessions_finished_is_final", "sessions_snapshot_is_fixed"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("UPDATE sessions SET result_json = CAST(X'FF' AS TEXT) WHERE id = 1")
        conn.execute("UPDATE sessions SET created_at = 'yesterday' WHERE id = 2")
        conn.commit()
        conn.close()
    elif damage == "page":
        data = bytearray(path.read_bytes())
        page = int.from_bytes(data[16:18], "big")
        for i in range(2 * page, 2 * page + 300):
            data[i] ^= 0xA5
        path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    w = {"root": root}
    for name, damage in (("good", None), ("text", "text"), ("page", "page")):
        folder = root / name
        folder.mkdir()
        _make_log(folder / "log.sqlite3", damage)
        w[name] = folder / "log.sqlite3"
    w["dir"] = root / "DIR"
    w["dir"].mkdir()
    w["fifo"] = root / "pipe"
    os.mkfifo(w["fifo"])
    w["textfile"] = root / "notes.txt"
    w["textfile"].write_text("not a database\n")
    w["empty"] = root / "empty.sqlite3"
    w["empty"].touch()
    return w


def _path(world, key: str, tmp_path: Path, suffix: str = "out") -> str:
    """A path of the named kind (``new`` is a fresh file in this case's own folder)."""
    special = {
        "new": str(tmp_path / f"new.{suffix}"),
        "newdeep": str(tmp_path / "no" / "such" / f"x.{suffix}"),
        "dir": str(world["dir"]),
        "fifo": str(world["fifo"]),
        "devfull": "/dev/full",
        "devnull": "/dev/null",
        "proc": f"/proc/self/x.{suffix}",
        "textfile": str(world["textfile"]),
        "empty": "",
        "good": str(world["good"]),
        "text": str(world["text"]),
        "page": str(world["page"]),
        "emptydb": str(world["empty"]),
        "missing": str(tmp_path / "missing.sqlite3"),
        "typodeep": str(tmp_path / "a" / "typo" / "dir" / "x.sqlite3"),
        "longname": str(tmp_path / ("a" * 300) / "x.sqlite3"),
    }
    return special[key]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``visiontune.cli.main(argv)`` in-process: (exit code, stdout, stderr). An exception
    other than SystemExit escapes (that is the failure this test looks for)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def assert_clear(argv, code, out, err):
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    assert not any(ch in err for ch in "\x1b\r\x07"), (argv, err)  # what was typed is quoted escaped
    if code == 0:
        return
    assert code == 2, (argv, code, err)
    lines = err.strip("\n").split("\n")
    assert sum("error:" in line for line in lines) == 1, (argv, err)
    assert lines[-1].startswith(f"visiontune {argv[0]}") and ": error: " in lines[-1], (argv, err)
    if not err.startswith("usage:"):
        assert len(lines) == 1, (argv, err)


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """HOME, the config and data folders inside this case's tmp folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / ".local" / "state"))
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


# --- corpus 1: mutated calibration files, shown with `calibrate --show --file F` ------------


def _calibration_files() -> list[tuple[str, bytes]]:
    rng = random.Random(SEED)
    good = json.dumps(GOOD_CAL, indent=2).encode()
    cases: list[tuple[str, bytes]] = [("good", good)]
    extreme = [
        1e308,
        -1e308,
        0,
        -1,
        1e-308,
        5e-324,
        "6000",
        None,
        [],
        {},
        True,
        "nan",
        2**70,
        10**400,
        0.5,
        20001,
        499.9,
        99999999,
        [1920, 1080],
        {"mm": 1},
    ]
    keys = list(GOOD_CAL)
    for i in range(40):  # one field given an extreme or wrongly typed value
        key = keys[i % len(keys)]
        value = extreme[rng.randrange(len(extreme))]
        text = (
            json.dumps({**GOOD_CAL, key: value}, default=str).encode()
            if value != 10**400
            else good.replace(b"6000.0", b"1" + b"0" * 400)
        )
        cases.append((f"value-{key}-{i}", text))
    for i in range(30):  # random bit flips
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        cases.append((f"flip-{i}", bytes(data)))
    for i in range(10):  # truncations
        cases.append((f"cut-{i}", good[: rng.randrange(len(good))]))
    for i in range(10):  # inserted random bytes
        at = rng.randrange(len(good))
        cases.append(
            (f"insert-{i}", good[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + good[at:])
        )
    for key in keys[:5]:  # a missing field, an unknown one
        cases.append((f"missing-{key}", json.dumps({k: v for k, v in GOOD_CAL.items() if k != key}).encode()))
    cases += [
        ("unknown-field", json.dumps({**GOOD_CAL, "colour": "red"}).encode()),
        ("deep-brackets", b"[" * 100_000),
        ("deep-parsable", b"[" * 30_000 + b"]" * 30_000),
        ("deep-objects", b'{"a":' * 9_000 + b"1" + b"}" * 9_000),
        ("not-utf8", b"\xff\xfe" + good),
        ("utf16", json.dumps(GOOD_CAL).encode("utf-16")),
        ("nul-bytes", b"\x00" * 64),
        ("empty", b""),
        ("array", b"[1, 2, 3]"),
        ("string", b'"calibration"'),
        ("nan-literal", good.replace(b"6000.0", b"NaN")),
        ("infinity-literal", good.replace(b"6000.0", b"Infinity")),
        ("huge-int-digits", good.replace(b"1920", b"9" * 5000)),
        ("bom", b"\xef\xbb\xbf" + good),
        ("duplicate-key", good[:-2] + b',\n  "mirror": "yes"\n}'),
    ]
    return cases


CAL_FILES = _calibration_files()


@pytest.mark.parametrize(("name", "content"), CAL_FILES, ids=[c[0] for c in CAL_FILES])
def test_calibration_file_corpus(isolated, name, content):
    path = isolated / "cal.json"
    path.write_bytes(content)
    argv = ["calibrate", "--show", "--file", str(path)]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    if name == "good":
        assert code == 0 and "displayable" in out
    assert path.read_bytes() == content  # --show never writes


# --- corpus 2: argument lists of `calibrate` ---------------------------------------------------

_NUMBERS = ["6000", "1e308", "-1", "0", "nan", "inf", "-inf", "abc", "1e-308", "20000", "500", "4000", ""]
_SIZES = ["597.9", "336.3", "0", "-5", "1e308", "nan", "20000", "1", "x"]
_RESOLUTIONS = ["1920x1080", "0x0", "99999999999x1", "x", "", "1920×1080", "1920 x 1080", "1e3x1e3", "-1x-1"]
_FILES = ["new", "newdeep", "dir", "fifo", "devfull", "proc", "textfile", "empty"]


def _calibrate_argvs() -> list[list[str]]:
    rng = random.Random(SEED + 1)
    argvs = []
    for _ in range(120):
        argv = ["calibrate"]
        way = rng.choice(["size", "size", "card", "none", "both"])
        if way in ("size", "both"):
            argv += ["--width-mm", rng.choice(_SIZES), "--height-mm", rng.choice(_SIZES)]
        if way in ("card", "both"):
            argv += ["--card-px", rng.choice(_SIZES), rng.choice(_SIZES)]
        if rng.random() < 0.8:
            argv += ["--resolution", rng.choice(_RESOLUTIONS)]
        if rng.random() < 0.8:
            argv += ["--distance-mm", rng.choice(_NUMBERS)]
        for flag in ("--background-cd-m2", "--optotype-cd-m2", "--min-ink-px"):
            if rng.random() < 0.2:
                argv += [flag, rng.choice(_NUMBERS)]
        for flag in ("--mirror", "--nonstandard-background", "--show"):
            if rng.random() < 0.2:
                argv.append(flag)
        argv += ["--file", rng.choice(_FILES)]
        argvs.append(argv)
    sensible = ["--width-mm", "597.9", "--height-mm", "336.3", "--resolution", "1920x1080"]
    for distance in ("1e308", "6000", "500", "20000", "20001", "499"):  # the named cases
        argvs.append(["calibrate", *sensible, "--distance-mm", distance, "--file", "new"])
    for target in _FILES:
        argvs.append(["calibrate", *sensible, "--distance-mm", "6000", "--file", target])
        argvs.append(["calibrate", "--show", "--file", target])
    return argvs


CALIBRATE_ARGVS = _calibrate_argvs()


@pytest.mark.parametrize("argv", CALIBRATE_ARGVS, ids=[f"calibrate-{i}" for i in range(len(CALIBRATE_ARGVS))])
def test_calibrate_argument_corpus(world, isolated, argv):
    argv = list(argv)
    argv[-1] = _path(world, argv[-1], isolated, "json")
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    if code == 0 and "--show" not in argv:
        saved = Path(argv[-1])
        assert saved.is_file() and stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert not [p for p in isolated.rglob("*.tmp")]
    _assert_specials_untouched(world)


def _assert_specials_untouched(world):
    assert stat.S_ISFIFO(os.stat(world["fifo"]).st_mode)
    assert world["dir"].is_dir() and list(world["dir"].iterdir()) == []
    for dev in ("/dev/full", "/dev/null"):
        if os.path.exists(dev):
            assert stat.S_ISCHR(os.stat(dev).st_mode), dev


# --- corpus 3: `report` and `sessions list/show` -------------------------------------------

_IDS = [
    "1",
    "2",
    "3",
    "0",
    "-1",
    "77",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999",
    "abc",
    "1e3",
    "",
    "0x1",
]
_DBS = ["good", "text", "page", "dir", "fifo", "textfile", "emptydb", "missing", "devnull", "empty"]
_OUTPUTS = ["new", "newdeep", "dir", "fifo", "devfull", "devnull", "proc", "textfile", "empty", "good"]


def _store_argvs() -> list[list[str]]:
    rng = random.Random(SEED + 2)
    argvs = []
    for _ in range(70):
        argv = ["report", rng.choice(_IDS), "--db", rng.choice(_DBS)]
        for kind in rng.sample(["csv", "json", "fhir", "pdf"], rng.randint(0, 2)):
            if kind == "pdf" and rng.random() < 0.7:
                continue  # keep the corpus quick: a few PDFs only
            argv += [f"--{kind}", rng.choice(_OUTPUTS)]
        argvs.append(argv)
    for db in _DBS:
        argvs.append(["sessions", "list", "--db", db])
        argvs.append(["sessions", "durations", "--db", db])
        argvs.append(["sessions", "show", rng.choice(_IDS), "--db", db])
    for sid in _IDS:
        argvs.append(["sessions", "show", sid, "--db", "good"])
        argvs.append(["sessions", "show", sid, "--json", "--db", "text"])
        argvs.append(["report", sid, "--db", "good", "--csv", "new"])
    for target in _OUTPUTS:  # the named cases: every kind of destination, for each format
        for kind in ("csv", "fhir"):
            argvs.append(["report", "1", "--db", "good", f"--{kind}", target])
    argvs.append(["report", "1", "--db", "good", "--csv", "new", "--json", "new"])  # one path twice
    for db in ("typodeep", "longname", "missing"):  # a read creates nothing; a name too long
        argvs += [
            ["sessions", "list", "--db", db],
            ["sessions", "show", "1", "--db", db],
            ["sessions", "durations", "--db", db],
            ["visit", "list", "--db", db],
            ["visit", "show", "1", "--db", db],
            ["report", "1", "--db", db, "--csv", "new"],
        ]
    return argvs


STORE_ARGVS = _store_argvs()


@pytest.mark.parametrize("argv", STORE_ARGVS, ids=[f"{a[0]}-{i}" for i, a in enumerate(STORE_ARGVS)])
def test_report_and_sessions_argument_corpus(world, isolated, argv):
    argv = list(argv)
    argv[argv.index("--db") + 1] = _path(world, argv[argv.index("--db") + 1], isolated, "sqlite3")
    for i, a in enumerate(argv):
        if argv[0] == "report" and a in ("--csv", "--json", "--fhir", "--pdf"):
            argv[i + 1] = _path(world, argv[i + 1], isolated, a[2:])
    logs = {k: (world[k].read_bytes(), sorted(p.name for p in world[k].parent.iterdir())) for k in ("text", "page")}
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    if argv[0] != "report" and "usage:" not in err and not os.path.isdir(os.path.dirname(argv[argv.index("--db") + 1])):
        assert code == 2 and ("no such trial log" in err or "too long" in err or "not a regular file" in err), err
        assert sorted(p.name for p in isolated.iterdir()) == ["data", "home"] or not (isolated / "a").exists()
    if code == 0 and argv[0] == "report":
        written = [Path(line.split(": ", 1)[1]) for line in out.splitlines() if ": " in line]
        assert written and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in written)
    _assert_specials_untouched(world)
    # a damaged log stays byte-identical and alone (no -wal/-shm left beside it)
    assert (world["page"].read_bytes(), sorted(p.name for p in world["page"].parent.iterdir())) == logs["page"]
    assert sorted(p.name for p in world["text"].parent.iterdir()) == logs["text"][1]


def test_corpus_is_large_enough():
    assert len(CAL_FILES) >= 100
    assert len(CALIBRATE_ARGVS) >= 100
    assert len(STORE_ARGVS) >= 100
    assert not math.isnan(float(len(CAL_FILES)))


# --- corpus 4: mutated protocol files, run with `session run --simulate` ---------------------

_EXTREMES = [
    1e308,
    -1e308,
    1e-300,
    -1,
    0,
    2**70,
    0.5,
    99999,
    True,
    "x",
    "",
    [],
    [1.0, 2.0],
    [1.0, 2.0, 3.0],
    [2.0, 1.0],
    {},
    {"a": 1},
    "evr",
    "refraction-power-vector-se",
    "e\u001b[31m\n",
]


def _leaves(doc: dict, prefix: tuple = ()) -> list[tuple]:
    out = []
    for k, v in doc.items():
        out += _leaves(v, (*prefix, k)) if isinstance(v, dict) and v else [(*prefix, k)]
    return out


def _set(doc: dict, path: tuple, value) -> dict:
    import copy

    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node[k]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


def _protocol_files() -> list[tuple[str, bytes]]:
    import tomllib

    from tests.refraction.test_protocol import REFUSED_PROTOCOLS, to_toml

    rng = random.Random(SEED + 3)
    cases: list[tuple[str, bytes]] = []
    for base in ("clinical-sloan", "paper-ucb-ald", "clinical-sloan-compare"):
        text = (Path(visiontune.__file__).parent / "data" / "protocols" / f"{base}.toml").read_text()
        raw = text.encode()
        doc = tomllib.loads(text)
        leaves = _leaves(doc)
        cases.append((f"{base}-as-shipped", raw))
        for i in range(30):  # one key given an extreme or wrongly typed value
            path = leaves[rng.randrange(len(leaves))]
            cases.append(
                (f"{base}-value-{'.'.join(path)}-{i}", to_toml(_set(doc, path, rng.choice(_EXTREMES))).encode())
            )
        for path in rng.sample(leaves, 6):  # a key missing
            cases.append((f"{base}-missing-{'.'.join(path)}", to_toml(_set(doc, path, ...)).encode()))
        for i in range(4):  # an unknown key somewhere
            path = (*leaves[rng.randrange(len(leaves))][:-1], "lenghtscales")
            cases.append((f"{base}-unknown-{i}", to_toml(_set(doc, path, 2.0)).encode()))
        for i in range(8):  # random bit flips
            data = bytearray(raw)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            cases.append((f"{base}-flip-{i}", bytes(data)))
        for i in range(3):
            cases.append((f"{base}-cut-{i}", raw[: rng.randrange(len(raw))]))
    cases += [(f"refused-{name}", text.encode()) for name, text, _ in REFUSED_PROTOCOLS]
    cases += [("not-utf8", b"\xff\xfe" + cases[0][1]), ("empty", b""), ("nul", b"\x00" * 32)]
    return cases


PROTOCOL_FILES = _protocol_files()


@pytest.mark.parametrize(("name", "content"), PROTOCOL_FILES, ids=[c[0] for c in PROTOCOL_FILES])
def test_protocol_file_corpus(isolated, name, content):
    """Every protocol gives a clear error before a session is written, or a session that runs:
    no orphan session is left open by an engine that refuses what the parser accepted."""
    path = isolated / "p.toml"
    path.write_bytes(content)
    db = isolated / "log.sqlite3"
    argv = ["session", "run", "--simulate", "--protocol", str(path), "--db", str(db), "--max-steps", "2", "--quiet"]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    with TrialStore.open(db) as store:
        sessions = store.list_sessions(include_discarded=True)
        if code != 0:
            assert sessions == [], f"{name}: a failed run left session(s) {[s.session_id for s in sessions]}"
        else:
            assert len(sessions) == 1 and store.trial_count(sessions[0].session_id) >= 1, name
    if name.endswith("-as-shipped"):
        assert code == 0, err


# --- corpus 5: argument lists of `session run` -----------------------------------------------


def _session_argvs() -> list[list[str]]:
    rng = random.Random(SEED + 4)
    values = {
        "--seed": ["0", "-1", "9223372036854775807", "9223372036854775808", "x", "1e3", ""],
        "--patient-seed": ["3", "-1", "9223372036854775808", "nan"],
        "--max-steps": ["1", "0", "-1", "1000001", "two"],
        "--true-rx": ["-1.25 -0.50 x 30", "", "nan", "99", "1 -1 x 1e308", "x\n\x1b[2J"],
        "--start-rx": ["none", "-1 -0.5 x 90", "", "inf"],
        "--slope": ["5", "1e308", "nan", "-1", "0"],
        "--best-va": ["0", "5", "nan", "-inf"],
        "--age": ["40", "-5", "1e9", "inf"],
        "--patient-id": ["SIM-1", "", "a\nb", "x" * 65],
        "--eye": ["OD", "OU", ""],
        "--protocol": ["clinical-sloan", "paper-ucb-ald", "nope", "x\x1b.toml", "/dev/null"],
    }
    argvs = []
    for _ in range(40):
        argv = ["session", "run", "--simulate", "--quiet"]
        for flag in rng.sample(sorted(values), rng.randint(1, 4)):
            argv += [flag, rng.choice(values[flag])]
        if "--max-steps" not in argv:
            argv += ["--max-steps", "1"]
        argvs.append(argv)
    for sid in ("0", "2", "9223372036854775808", "x"):
        argvs.append(["session", "resume", sid, "--simulate", "--max-steps", "1", "--quiet"])
    return argvs


SESSION_ARGVS = _session_argvs()


@pytest.mark.parametrize("argv", SESSION_ARGVS, ids=[f"session-{i}" for i in range(len(SESSION_ARGVS))])
def test_session_argument_corpus(isolated, argv):
    db = isolated / "log.sqlite3"
    argv = [*argv, "--db", str(db)]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    if code != 0 and db.exists():
        with TrialStore.open(db) as store:
            assert store.list_sessions(include_discarded=True) == [], "a failed run left a session"


REFUSED_SESSION_ARGVS = [
    (
        ["session", "run", "--simulate", "--seed", "9223372036854775808"],
        "--seed: expected an integer in [0, 9223372036854775807]",
    ),
    (
        ["session", "resume", "9223372036854775808", "--simulate"],
        "session id: expected an integer in [1, 9223372036854775807]",
    ),
    (["sessions", "show", "9223372036854775808"], "session id: expected an integer in [1, 9223372036854775807]"),
    (["report", "9223372036854775808", "--csv", "x.csv"], "session id 9223372036854775808 is out of range"),
    (["session", "run", "--simulate", "--max-steps", "-1"], "--max-steps: expected an integer in [1, 1000000], got -1"),
    (["session", "run", "--simulate", "--true-rx", ""], "--true-rx: text: cannot read a prescription from ''"),
    (["session", "run", "--simulate", "--protocol", "x\x1b[31m\n.toml"], "x\\x1b[31m\\n.toml: no such protocol file"),
]


@pytest.mark.parametrize(
    ("argv", "message"),
    REFUSED_SESSION_ARGVS,
    ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in enumerate(REFUSED_SESSION_ARGVS)],
)
def test_each_refused_session_argument_names_its_fault(isolated, argv, message):
    argv = [*argv, "--db", str(isolated / "log.sqlite3")]
    if argv[0] == "report":
        _make_log(isolated / "log.sqlite3")
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    assert code == 2 and message in err, err


def test_protocol_corpus_is_large_enough():
    assert len(PROTOCOL_FILES) >= 100
    assert len(PROTOCOL_FILES) + len(SESSION_ARGVS) + len(CAL_FILES) + len(CALIBRATE_ARGVS) + len(STORE_ARGVS) >= 500


# --- corpus 5: visit run refusals and protocol precisions -------------------------------------

VISIT_REASONS = ["", "   ", "\t", "amblyopic\x1b[31m eye", "line\nbreak", "\x00", "x" * 201, "x" * 100_000]


@pytest.mark.parametrize("flag", ["--skip-od", "--skip-os"])
@pytest.mark.parametrize("reason", VISIT_REASONS, ids=[f"reason-{i}" for i in range(len(VISIT_REASONS))])
def test_visit_run_refuses_a_skip_reason_before_writing(isolated, flag, reason):
    db = isolated / "log.sqlite3"
    _make_log(db)
    before = db.read_bytes()
    argv = ["visit", "run", "--simulate", "--quiet", flag, reason, "--db", str(db)]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    assert code == 2 and flag in err, err
    assert db.read_bytes() == before  # no orphan visit with both eyes "not started"


@pytest.mark.parametrize("key", ["m_d", "cylinder_vector_d"])
@pytest.mark.parametrize("value", ["1e-12", "1e-300", "0.0001", "0.05"])
def test_a_precision_stop_that_cannot_fire_is_refused(isolated, key, value):
    path = isolated / "tiny.toml"
    path.write_text(PROTOCOL_TEXT.replace(f"{key} = 0.25", f"{key} = {value}", 1), encoding="utf-8")
    argv = [
        "session",
        "run",
        "--simulate",
        "--quiet",
        "--max-steps",
        "1",
        "--protocol",
        str(path),
        "--db",
        str(isolated / "log.sqlite3"),
    ]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    assert code == 2 and f"stopping.precision.{key}" in err and "finest trial lens step" in err, err
    assert not (isolated / "log.sqlite3").exists() or TrialStore.open(isolated / "log.sqlite3").list_sessions() == []


# --- corpus 6: outputs aimed at the user's files, and impossible sign-offs ---------------------

_USER_FILES = ["log", "log-link", "log-wal", "calibration", "settings", "notes", "png", "results-db"]


@pytest.fixture
def user_world(isolated):
    """The user's files at their default places (trial log, calibration, settings) and others."""
    log = isolated / "data" / "visiontune.sqlite3"
    log.parent.mkdir()
    _make_log(log)
    config = isolated / "home" / ".config" / "visiontune"
    config.mkdir(parents=True)
    (config / "calibration.json").write_text(json.dumps(GOOD_CAL))
    (config / "app.toml").write_text("pace_s = 0.2\n")
    os.link(log, isolated / "log-link.json")
    (isolated / "data" / "visiontune.sqlite3-wal").write_bytes(b"")
    (isolated / "notes.txt").write_text("a clinician's notes\n")
    (isolated / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    sqlite3.connect(isolated / "other.sqlite3").execute("CREATE TABLE patients (id TEXT)").connection.close()
    return {
        "log": log,
        "log-link": isolated / "log-link.json",
        "log-wal": isolated / "data" / "visiontune.sqlite3-wal",
        "calibration": config / "calibration.json",
        "settings": config / "app.toml",
        "notes": isolated / "notes.txt",
        "png": isolated / "figure.png",
        "results-db": isolated / "other.sqlite3",
    }


def _writer_argvs(target: str) -> list[list[str]]:
    argvs = [
        [
            "calibrate",
            "--width-mm",
            "597.9",
            "--height-mm",
            "336.3",
            "--resolution",
            "1920x1080",
            "--distance-mm",
            "6000",
            "--file",
            target,
        ]
    ]
    argvs += [["report", "1", f"--{kind}", target] for kind in ("pdf", "csv", "json", "fhir")]
    return argvs


#: (command, target) pairs; the calibration writer may replace its own file (test_output_guard).
WRITER_CASES = [
    (argv[0] + (f" {argv[2]}" if argv[0] == "report" else ""), key)
    for key in _USER_FILES
    for argv in _writer_argvs("T")
    if (argv[0], key) != ("calibrate", "calibration")
]


@pytest.mark.parametrize(("command", "key"), WRITER_CASES, ids=[f"{c}-{k}" for c, k in WRITER_CASES])
def test_no_writer_replaces_a_user_file_or_a_file_of_another_kind(user_world, command, key):
    target = user_world[key]
    argv = next(a for a in _writer_argvs(str(target)) if a[0] + (f" {a[2]}" if a[0] == "report" else "") == command)
    before = {k: p.read_bytes() for k, p in user_world.items()}
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    assert code == 2 and ("never written over" in err or "it is not replaced" in err), err
    assert {k: p.read_bytes() for k, p in user_world.items()} == before


def test_simulate_outputs_never_replace_a_user_file(user_world):
    for flag, key in (
        ("--json", "log"),
        ("--json", "settings"),
        ("--json", "png"),
        ("--plot", "calibration"),
        ("--plot", "log-wal"),
        ("--plot", "notes"),
    ):
        before = {k: p.read_bytes() for k, p in user_world.items()}
        argv = ["simulate", "--trials", "4", "--seed", "1", "--quiet", flag, str(user_world[key])]
        code, out, err = run_cli(argv)
        assert_clear(argv, code, out, err)
        assert code == 2 and flag in err, err
        assert {k: p.read_bytes() for k, p in user_world.items()} == before


SIGNOFF_RXS = [
    "-99 0 x 90",
    "0 -30 x 90",
    "-12.25 0 x 180",
    "8.25 0 x 180",
    "-1 -6.25 x 90",
    "-1.12 0 x 90",
    "-1 -0.6 x 90",
    "-1 -0.5 x 90.5",
    "-1 +0.5 x 90",
    "nan 0 x 90",
    "1e308 0 x 90",
    "-1 -0.5 x 181",
    "-1 -0.5 x -5",
    "-1 -0.5",
    "",
    "x",
]


@pytest.mark.parametrize("rx", SIGNOFF_RXS, ids=[f"rx-{i}" for i in range(len(SIGNOFF_RXS))])
def test_an_impossible_sign_off_is_refused_and_records_nothing(isolated, rx):
    db = isolated / "log.sqlite3"
    with TrialStore.open(db) as store:
        store.create_patient("P-0042")
        vid = store.create_visit("P-0042", age_years=40)
        sid = store.create_session("P-0042", eye="OD", protocol=PROTOCOL_TEXT, seed=3)
        with store.open_session(sid) as handle:
            handle.finish(RESULT)
        store.link_visit_session(vid, "OD", sid)
    argv = ["visit", "signoff", str(vid), "--eye", "OD", "--rx", rx, "--by", "X", "--db", str(db)]
    code, out, err = run_cli(argv)
    assert_clear(argv, code, out, err)
    assert code == 2, err
    with TrialStore.open(db) as store:
        assert store.visit_signoffs(vid) == []
