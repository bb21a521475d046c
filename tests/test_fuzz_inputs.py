"""Issue 21: no input gives a traceback. A fixed corpus (seeded, so every run is the same) of
mutated calibration files and of argument lists for ``calibrate``, ``report`` and
``sessions list/show``, each run in-process through :func:`visiontune.cli.main`.

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
from visiontune.session.records import Lens, TrialInput
from visiontune.session.store import TrialStore

SEED = 21
PROTOCOL_TEXT = (Path(visiontune.__file__).parent / "data" / "protocols" / "clinical-sloan.toml").read_text()
GOOD_CAL = {"screen_width_mm": 597.9, "screen_height_mm": 336.3, "width_px": 1920, "height_px": 1080,
            "viewing_distance_mm": 6000.0, "mirror": False, "background_cd_m2": 85.0}  # fmt: skip
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
                    handle.record_trial(TrialInput(0.1 * i, Lens(-0.25 * i, 0.0, 90.0), "C", i != 1, "C"))
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
    extreme = [1e308, -1e308, 0, -1, 1e-308, 5e-324, "6000", None, [], {}, True, "nan", 2**70, 10**400,
               0.5, 20001, 499.9, 99999999, [1920, 1080], {"mm": 1}]  # fmt: skip
    keys = list(GOOD_CAL)
    for i in range(40):  # one field given an extreme or wrongly typed value
        key = keys[i % len(keys)]
        value = extreme[rng.randrange(len(extreme))]
        text = json.dumps({**GOOD_CAL, key: value}, default=str).encode() if value != 10**400 else \
            good.replace(b"6000.0", b"1" + b"0" * 400)  # fmt: skip
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
        cases.append((f"insert-{i}", good[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + good[at:]))
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
    for i in range(120):
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

_IDS = ["1", "2", "3", "0", "-1", "77", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "99999999999999999999999999", "abc", "1e3", "", "0x1"]  # fmt: skip
_DBS = ["good", "text", "page", "dir", "fifo", "textfile", "emptydb", "missing", "devnull", "empty"]
_OUTPUTS = ["new", "newdeep", "dir", "fifo", "devfull", "devnull", "proc", "textfile", "empty", "good"]


def _store_argvs() -> list[list[str]]:
    rng = random.Random(SEED + 2)
    argvs = []
    for i in range(70):
        argv = ["report", rng.choice(_IDS), "--db", rng.choice(_DBS)]
        for kind in rng.sample(["csv", "json", "fhir", "pdf"], rng.randint(0, 2)):
            if kind == "pdf" and rng.random() < 0.7:
                continue  # keep the corpus quick: a few PDFs only
            argv += [f"--{kind}", rng.choice(_OUTPUTS)]
        argvs.append(argv)
    for db in _DBS:
        argvs.append(["sessions", "list", "--db", db])
        argvs.append(["sessions", "show", rng.choice(_IDS), "--db", db])
    for sid in _IDS:
        argvs.append(["sessions", "show", sid, "--db", "good"])
        argvs.append(["sessions", "show", sid, "--json", "--db", "text"])
        argvs.append(["report", sid, "--db", "good", "--csv", "new"])
    for target in _OUTPUTS:  # the named cases: every kind of destination, for each format
        for kind in ("csv", "fhir"):
            argvs.append(["report", "1", "--db", "good", f"--{kind}", target])
    argvs.append(["report", "1", "--db", "good", "--csv", "new", "--json", "new"])  # one path twice
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
