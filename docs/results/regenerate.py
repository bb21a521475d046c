"""Regenerate the results' stores and pictures, which git does not keep (docs/results/README.md, "Regenerate").

    python docs/results/regenerate.py --list               # every target: what it writes, its command, its page
    python docs/results/regenerate.py --missing            # the targets whose stores or pictures are not here
    python docs/results/regenerate.py NAME [NAME ...]      # run their commands, one after the other
    python docs/results/regenerate.py NAME --dry-run       # print the commands only
    python docs/results/regenerate.py NAME --out DIR       # write into DIR instead (pages and stores alike)

Each target is the command its page names (the ``- Command:`` line, or the sentence the page gives
for it), run from the repository's root with ``--out`` pointed at docs/results (docs/screenshots for
the pictures of the app). A command writes its store (``*.sqlite``, resumable: a stopped command
resumes where it stopped), its pictures (``*.png``) and rewrites its page (``.md``) and summaries
(``.csv``/``.json``) from the store; the stores and pictures are ignored by git (.gitignore), the
pages and summaries are committed. The papers' full tables take hours on two cores (each page gives
its wall time); the quick ones a few minutes.

Where the page's own command no longer writes what it wrote (a default changed since, or it wrote to
a scratch folder), the target runs the equivalent command and ``--list`` shows both with the reason;
``tests/test_regenerate.py`` holds every page to its target's command.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
SCREENSHOTS = ROOT / "docs" / "screenshots"

#: The one picture kept in git (the README shows it); every other picture is regenerated.
KEPT_PICTURES = ("docs/screenshots/first-three-lenses-3.png",)


@dataclass(frozen=True)
class Target:
    """One command: ``argv`` (``{out}`` for the output folder, ``{python}`` for this Python),
    the stores and picture folders or files it writes (relative to the output folder), the page
    whose figures come from them (relative to the repository), and, where the page states the
    command otherwise, ``page_command`` (the text on the page) with ``why``."""

    name: str
    argv: tuple[str, ...]
    writes: tuple[str, ...]
    page: str
    folder: str = "docs/results"
    env: dict = field(default_factory=dict)
    page_command: str | None = None
    why: str = ""

    def command(self, out: Path) -> list[str]:
        """The argv run: ``visiontune`` as ``python -m visiontune`` of this Python (no PATH needed)."""
        argv = [a.format(out=out, python=sys.executable) for a in self.argv]
        return [sys.executable, "-m", "visiontune", *argv[1:]] if argv[0] == "visiontune" else argv

    def shown(self, out: str | None = None) -> str:
        """The command as a person types it, from the repository's root."""
        env = " ".join(f"{k}={v.format(out=out or self.folder)}" for k, v in self.env.items())
        argv = [a.format(out=out or self.folder, python="python") for a in self.argv]
        return (env + " " if env else "") + shlex.join(argv)


def _bench(name: str, table: str, *flags: str, pictures: bool = True) -> Target:
    """A paper's table (``visiontune bench``): its store, its folder of regret curves and win fractions."""
    writes = (f"{name}.sqlite", f"{name}/") if pictures else (f"{name}.sqlite",)
    return Target(name, ("visiontune", "bench", table, *flags, "--out", "{out}"), writes, f"docs/results/{name}.md")


def _validate(name: str, *flags: str, page_command: str | None = None, why: str = "") -> Target:
    """A clinical validation page (``visiontune validate``): its store."""
    argv = ("visiontune", "validate", *flags, "--no-progress", "--out", "{out}")
    return Target(name, argv, (f"{name}.sqlite",), f"docs/results/{name}.md", page_command=page_command, why=why)


def _protocol(name: str) -> tuple[str, str]:
    return "--protocol", f"docs/results/protocols/{name}.toml"


_OUT_SCRATCH = "it wrote to a scratch folder; the store's name is the protocol's"
_LINES = "docs/results/protocols/clinical-sloan-lines.toml"
#: The answer-model pages: (page name, protocol, patients a population, jobs).
_ANSWER_MODEL_PAGES = (
    ("clinical-sloan-compare", "clinical-sloan-compare", "30", "1"),
    ("clinical-sloan-lines", _LINES, "40", "1"),
    ("clinical-sloan-lines-two-formulas", "clinical-sloan-lines-two-formulas", "30", "2"),
    ("clinical-sloan-held", "clinical-sloan-held", "30", "2"),
)
_ANSWER_MODELS = "model,blur,wide-threshold,narrow-threshold,more-equal,less-equal,last-lens-bias,minus-bias,lapse-runs"

TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        _bench("000-table1", "000-table1", "--seeds", "10", "--jobs", "2"),
        _bench("000-table2", "000-table2", "--seeds", "10", "--jobs", "2"),
        _bench("000-table3", "000-table3", "--seeds", "10", "--jobs", "2"),
        _bench("002-table1", "002-table1", "--seeds", "10", "--jobs", "2"),
        _bench("002-table2", "002-table2", "--seeds", "10", "--jobs", "2"),
        *(
            _bench(f"{t}-quick", t, "--quick", "--jobs", "2")
            for t in ("000-table1", "000-table2", "000-table3", "002-table1", "002-table2")
        ),
        Target(
            "refraction",
            (
                "visiontune",
                "bench",
                "refraction",
                "--policies",
                "paper",
                "UCB-ALD-SL",
                "TS-ALD-SL",
                "--jobs",
                "2",
                "--out",
                "{out}",
            ),
            ("refraction.sqlite", "refraction/"),
            "docs/results/refraction.md",
        ),
        Target(
            "refraction-quick",
            ("visiontune", "bench", "refraction", "--quick", "--jobs", "1", "--out", "{out}"),
            ("refraction-quick.sqlite", "refraction-quick/"),
            "docs/results/refraction-quick.md",
        ),
        _validate(
            "clinical-validation",
            "--protocol",
            "clinical-sloan",
            "--jobs",
            "2",
            page_command="visiontune validate --jobs 2 --no-progress",
            why="clinical-sloan was the default protocol when the page was written",
        ),
        _validate(
            "clinical-validation-policies",
            "--protocol",
            "clinical-sloan",
            "--populations",
            "adult-clinic,young",
            "--policies",
            "evr,bald,ucb-ald,ts-ald",
            "--cases",
            "50",
            "--name",
            "clinical-validation-policies",
            "--jobs",
            "2",
            page_command="visiontune validate --populations adult-clinic,young --policies evr,bald,ucb-ald,ts-ald "
            "--cases 50 --name clinical-validation-policies --jobs 2 --no-progress",
            why="clinical-sloan was the default protocol when the page was written",
        ),
        _validate(
            "clinical-validation-clinical-sloan-compare",
            "--protocol",
            "clinical-sloan-compare",
            "--jobs",
            "2",
            page_command="visiontune validate --jobs 2 --no-progress --out docs/results",
            why="clinical-sloan-compare was the default protocol when the page was written",
        ),
        _validate(
            "clinical-validation-clinical-sloan-lines-two-formulas",
            "--protocol",
            "clinical-sloan-lines-two-formulas",
            "--jobs",
            "2",
        ),
        _validate("clinical-validation-clinical-sloan-held", "--protocol", "clinical-sloan-held", "--jobs", "2"),
        _validate(
            "clinical-validation-clinical-sloan-compare-phoropter",
            *_protocol("clinical-sloan-compare-phoropter"),
            "--jobs",
            "2",
            page_command="visiontune validate --jobs 2 --no-progress --out /tmp/val-lc",
            why="the page measured the default of its day, kept since as "
            "protocols/clinical-sloan-compare-phoropter.toml (the page says so)",
        ),
        *(
            _validate(
                f"clinical-validation-{p}",
                *_protocol(p),
                "--jobs",
                "2",
                page_command=f"visiontune validate --protocol docs/results/protocols/{p}.toml --jobs 2 --no-progress"
                + (f" --out /tmp/{scratch}" if scratch else ""),
                why=_OUT_SCRATCH if scratch else "",
            )
            for p, scratch in (
                ("clinical-sloan-compare-evr", "val-evr"),
                ("clinical-sloan-compare-evr-precision", "val-evrp"),
                ("clinical-sloan-compare-over-minus-guard", None),
                ("clinical-sloan-compare-sliders", "val-sliders2"),
                ("clinical-sloan-compare-sliders-evr-precision", None),
                ("clinical-sloan-compare-sliders-evr-stop", "val-sl-stop"),
                ("clinical-sloan-compare-trial-frame", "val-tf3"),
                ("clinical-sloan-lines", "p6/val"),
            )
        ),
        _validate(
            "clinical-validation-clinical-sloan-lines-shared",
            *_protocol("clinical-sloan-lines-shared"),
            "--cases",
            "40",
            "--jobs",
            "2",
            page_command="visiontune validate --protocol docs/results/protocols/clinical-sloan-lines-shared.toml "
            "--cases 40 --jobs 2 --no-progress --out /tmp/p6/val2",
            why=_OUT_SCRATCH,
        ),
        _validate(
            "clinical-validation-optics-gp",
            *_protocol("clinical-sloan-optics-gp"),
            "--populations",
            "adult-clinic,adult-clinic-misspecified",
            "--cases",
            "100",
            "--jobs",
            "1",
            "--name",
            "clinical-validation-optics-gp",
            page_command="visiontune validate --protocol docs/results/protocols/clinical-sloan-optics-gp.toml "
            "--populations adult-clinic,adult-clinic-misspecified --cases 100 --jobs 1 "
            "--out /tmp/gpmean-val --no-progress",
            why="it wrote to a scratch folder under the protocol's name; the store was renamed after the page",
        ),
        *(
            _validate(
                f"answer-models-{name}",
                "--protocol",
                protocol,
                "--answer-model",
                _ANSWER_MODELS,
                "--populations",
                "adult-clinic,young",
                "--cases",
                cases,
                "--jobs",
                jobs,
            )
            for name, protocol, cases, jobs in _ANSWER_MODEL_PAGES
        ),
        *(
            _validate(
                f"answer-models-{name}-{device}",
                "--protocol",
                protocol,
                "--answer-model",
                "model",
                "--lens-device",
                device,
                "--populations",
                "adult-clinic,young",
                "--cases",
                cases,
                "--jobs",
                jobs,
            )
            for name, protocol, cases, jobs in _ANSWER_MODEL_PAGES
            for device in ("motorized-phoropter", "manual-phoropter")
        ),
        Target(
            "comparisons",
            (
                "{python}",
                "benchmarks/comparisons.py",
                "--cases",
                "100",
                "--jobs",
                "2",
                "--no-progress",
                "--out",
                "{out}",
            ),
            ("comparisons.sqlite",),
            "docs/results/comparisons.md",
            page_command="python benchmarks/comparisons.py --cases 100 --jobs 2 --no-progress",
        ),
        Target(
            "screenshots",
            ("{python}", "-m", "visiontune.app.screenshots", "--out", "{out}"),
            ("first-three-lenses-1.png", "first-three-lenses-2.png", "first-three-lenses-3.png"),
            "visiontune/app/screenshots.py",
            folder="docs/screenshots",
            env={"QT_QPA_PLATFORM": "offscreen"},
            page_command="QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots [--out docs/screenshots]",
        ),
        Target(
            "screenshots-clinical-sloan",
            ("{python}", "-m", "visiontune.app.screenshots", "--protocol", "clinical-sloan", "--out", "{out}"),
            ("clinical-sloan-1.png", "clinical-sloan-2.png", "clinical-sloan-3.png"),
            "visiontune/app/screenshots.py",
            folder="docs/screenshots",
            env={"QT_QPA_PLATFORM": "offscreen"},
            page_command="QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots --protocol clinical-sloan",
        ),
        Target(
            "screenshots-visit",
            ("{python}", "-m", "visiontune.app.screenshots", "--visit", "--out", "{out}"),
            ("visit-which-eye.png", "visit-next-eye.png", "visit-balance.png", "visit-finish.png"),
            "visiontune/app/screenshots.py",
            folder="docs/screenshots",
            env={"QT_QPA_PLATFORM": "offscreen"},
            page_command="QT_QPA_PLATFORM=offscreen python -m visiontune.app.screenshots --visit "
            "[--out docs/screenshots]",
        ),
        Target(
            "screenshots-app-tests",
            (
                "{python}",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/app/test_session_flow.py",
                "tests/app/test_worker.py",
            ),
            ("start_screen.png", "session_view.png", "finish_view.png", "readme_session_view.png"),
            "tests/app/app_helpers.py",
            folder="docs/screenshots",
            env={"QT_QPA_PLATFORM": "offscreen", "VISIONTUNE_SCREENSHOTS": "{out}"},
            page_command="VISIONTUNE_SCREENSHOTS=docs/screenshots pytest tests/app",
            why="the app tests save these; a run of two of their files writes them",
        ),
    ]
}


def present(target: Target, out: Path) -> bool:
    """Whether everything ``target`` writes is in ``out`` (a folder of pictures: not empty)."""
    for rel in target.writes:
        path = out / rel
        if rel.endswith("/") and not (path.is_dir() and any(path.glob("*.png"))):
            return False
        if not rel.endswith("/") and not path.is_file():
            return False
    return True


def run(target: Target, out: Path, dry_run: bool = False) -> int:
    """Run ``target``'s command from the repository's root, writing into ``out`` (relative: to the
    root); its exit status."""
    print(f"# {target.name}: {target.shown(str(out))}", flush=True)
    if dry_run:
        return 0
    (ROOT / out).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **{k: v.format(out=out) for k, v in target.env.items()}}
    return subprocess.run(target.command(out), cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="targets to regenerate (--list names them)")
    parser.add_argument("--list", action="store_true", help="every target: what it writes, its command, its page")
    parser.add_argument("--missing", action="store_true", help="the targets whose outputs are not in their folder")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--out", type=Path, default=None, help="write here instead of the target's folder")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in TARGETS]
    if unknown:
        parser.error(f"no such target: {', '.join(unknown)} (python docs/results/regenerate.py --list)")
    if args.list or args.missing or not args.names:
        for t in TARGETS.values():
            out = args.out or ROOT / t.folder
            if args.missing and present(t, out):
                continue
            print(
                f"{t.name}\n  writes  {', '.join(f'{t.folder}/{w}' for w in t.writes)}\n  command {t.shown()}"
                f"\n  page    {t.page}" + (f"\n  (the page: {t.page_command}; {t.why})" if t.why else "")
            )
        return 0
    for name in args.names:
        target = TARGETS[name]
        # relative to the root, where the command runs, so that the page it writes names docs/results as before
        out = args.out.resolve() if args.out else Path(target.folder)
        status = run(target, out, args.dry_run)
        if status:
            print(
                f"{name}: the command ended with status {status}; what it finished is kept (run it again to "
                "resume a store)",
                file=sys.stderr,
            )
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
