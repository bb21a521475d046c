"""docs/results/regenerate.py: every results store and picture git does not keep is written by a
command its page names, that command is the target's, and the outputs are ignored by git while the
pages and the README's picture stay committed."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"


def _load():
    spec = importlib.util.spec_from_file_location("regenerate", RESULTS / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


R = _load()


def _flat(text: str) -> str:
    """``text`` with every run of white space one space (pages wrap their commands)."""
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("name", list(R.TARGETS))
def test_each_target_is_the_command_its_page_names(name):
    target = R.TARGETS[name]
    page = ROOT / target.page
    assert page.is_file(), f"{name}: no page {target.page}"
    stated = target.page_command or target.shown()
    assert _flat(stated) in _flat(page.read_text(encoding="utf-8")), f"{name}: {target.page} does not say {stated!r}"
    if target.page_command and target.page_command != target.shown():
        same = (
            re.sub(r"[\[\]]", "", target.page_command) in target.shown()
        )  # an optional part written out, or --out added
        assert target.why or same, f"{name}: not the page's command, and no reason given"


def test_every_page_with_a_command_line_has_a_target():
    """A results page written by ``visiontune bench``/``validate`` or benchmarks/comparisons.py (its
    ``- Command:`` line) is a target's page: its store can be regenerated."""
    pages = {t.page for t in R.TARGETS.values()}
    for page in sorted(RESULTS.glob("*.md")):
        line = re.search(r"^- Command: `([^`]+)`", page.read_text(encoding="utf-8"), re.M)
        if line and re.match(r"(visiontune (bench|validate)|python benchmarks/comparisons\.py)\b", line.group(1)):
            if "bench projective" in line.group(1):  # writes its JSON summary only, committed
                continue
            rel = page.relative_to(ROOT).as_posix()
            assert rel in pages, f"{rel}: add a target to docs/results/regenerate.py for `{line.group(1)}`"


def _git(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, input=stdin, check=False)


needs_git = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")


@needs_git
def test_the_stores_and_pictures_are_ignored_and_the_pages_are_not():
    written = [f"{t.folder}/{w}" + ("x.png" if w.endswith("/") else "") for t in R.TARGETS.values() for w in t.writes]
    regenerated = [w for w in written if w not in R.KEPT_PICTURES]
    ignored = _git("check-ignore", "--no-index", "--stdin", stdin="\n".join(regenerated)).stdout.split()
    assert sorted(ignored) == sorted(regenerated)
    committed = [t.page for t in R.TARGETS.values()] + list(R.KEPT_PICTURES)
    committed += ["docs/results/000-table1.csv", "docs/results/clinical-validation.json"]
    committed += ["tests/fixtures/stored_runs.json"]
    result = _git("check-ignore", "--no-index", "--stdin", stdin="\n".join(committed))
    assert result.stdout == "", f"ignored but committed: {result.stdout}"


@needs_git
def test_no_store_or_picture_but_the_readmes_is_tracked():
    tracked = _git("ls-files", "docs").stdout.split()
    heavy = [p for p in tracked if p.endswith((".sqlite", ".png")) and p not in R.KEPT_PICTURES]
    assert heavy == []
    assert all(p in tracked for p in R.KEPT_PICTURES)
    assert sum((ROOT / p).stat().st_size for p in R.KEPT_PICTURES) < 300_000


def test_missing_lists_what_is_not_there_and_dry_run_runs_nothing(tmp_path, capsys):
    assert R.main(["--missing", "--out", str(tmp_path)]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert listed == list(R.TARGETS)  # nothing in an empty folder
    (tmp_path / "000-table1.sqlite").write_bytes(b"")
    (tmp_path / "000-table1").mkdir()
    assert R.main(["--missing", "--out", str(tmp_path)]) == 0
    assert "000-table1\n" in capsys.readouterr().out  # a folder of pictures with none in it is missing
    (tmp_path / "000-table1" / "win_fraction.png").write_bytes(b"")
    R.main(["--missing", "--out", str(tmp_path)])
    assert "000-table1\n" not in capsys.readouterr().out
    assert R.main(["clinical-validation", "000-table1-quick", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert f"visiontune validate --protocol clinical-sloan --jobs 2 --no-progress --out {tmp_path / 'o'}" in out
    assert not (tmp_path / "o").exists()
    assert R.main(["000-table1-quick", "--dry-run"]) == 0  # relative to the root: the page it writes says so
    assert "visiontune bench 000-table1 --quick --jobs 2 --out docs/results\n" in capsys.readouterr().out


def test_an_unknown_target_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        R.main(["000-table9"])
    assert "no such target: 000-table9" in capsys.readouterr().err


def test_a_target_runs_its_command_from_the_root_into_its_folder(tmp_path):
    """run(): the command runs from the repository's root with ``{out}`` and the environment filled
    in, and a failing command's status comes back."""
    script = (
        "import os, pathlib, sys; pathlib.Path(sys.argv[1], 'x.sqlite').write_text(os.getcwd() + ' ' + os.environ['V'])"
    )
    target = R.Target("t", ("{python}", "-c", script, "{out}"), ("x.sqlite",), "README.md", env={"V": "{out}/v"})
    assert R.run(target, tmp_path) == 0
    assert (tmp_path / "x.sqlite").read_text() == f"{R.ROOT} {tmp_path}/v"
    assert R.present(target, tmp_path)
    failing = R.Target("f", ("{python}", "-c", "raise SystemExit(3)"), (), "README.md")
    assert R.run(failing, tmp_path) == 3
    command = R.Target("v", ("visiontune", "bench", "x"), (), "README.md").command(tmp_path)
    assert command == [sys.executable, "-m", "visiontune", "bench", "x"]
