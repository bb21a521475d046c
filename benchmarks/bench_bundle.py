"""Benchmark: size of the desktop bundle and start-up time of ``visiontune --version`` (prints).

Bundle: the folder made by ``packaging/build.sh`` (``dist/visiontune-<version>-linux-<arch>/``,
newest by default) or any ``--bundle`` folder or ``.tar.gz`` (unpacked to a temporary dir).
Size: the unpacked folder (sum of file sizes, symlinks not followed) and the ``.tar.gz``, in
MB (10^6 bytes). Start-up: wall time of ``visiontune --version`` from process start to exit,
one untimed warm-up run then ``--runs`` timed runs (>= 10); median, min and max. The same
command through the development install (``python -m visiontune --version``) is printed for
comparison.

Run: bash packaging/build.sh && /work/venv/bin/python benchmarks/bench_bundle.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MB = 1e6


def newest_bundle(dist: Path) -> Path:
    folders = [p for p in dist.glob("visiontune-*-linux-*") if p.is_dir() and (p / "visiontune").exists()]
    if not folders:
        raise SystemExit(f"no bundle in {dist}: run packaging/build.sh first, or pass --bundle")
    return max(folders, key=lambda p: p.stat().st_mtime)


def folder_bytes(root: Path) -> tuple[int, int]:
    """(total bytes of regular files, number of files) under ``root``."""
    sizes = [p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(sizes), len(sizes)


def startup_times_s(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    """Wall times of ``runs`` runs of ``cmd`` after one warm-up run; each must exit 0."""
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def _summary(times: list[float]) -> str:
    ms = [1e3 * t for t in times]
    return f"median {statistics.median(ms):7.1f} ms  (min {min(ms):.1f}, max {max(ms):.1f}, {len(ms)} runs)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, help="bundle folder or .tar.gz (default: newest in dist/)")
    parser.add_argument("--runs", type=int, default=15, help="timed runs, >= 10 (default 15)")
    args = parser.parse_args(argv)
    if args.runs < 10:
        parser.error("--runs: at least 10")
    with tempfile.TemporaryDirectory(prefix="vt-bench-bundle-") as tmp:
        bundle = args.bundle or newest_bundle(REPO / "dist")
        tarball = bundle if bundle.suffix == ".gz" else bundle.with_name(bundle.name + ".tar.gz")
        if bundle.suffix == ".gz":
            with tarfile.open(bundle) as tar:
                tar.extractall(tmp, filter="tar")
            (bundle,) = Path(tmp).iterdir()
        size, n_files = folder_bytes(bundle)
        print(f"bundle {bundle}")
        print(f"  unpacked  {size / MB:8.1f} MB  ({n_files} files)")
        if tarball.exists():
            print(f"  tar.gz    {tarball.stat().st_size / MB:8.1f} MB  ({tarball.name})")
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        exe = str(bundle / "visiontune")
        print(f"start-up of `visiontune --version`, {os.cpu_count()} CPUs")
        print(f"  bundle     {_summary(startup_times_s([exe, '--version'], args.runs, env))}")
        dev = [sys.executable, "-m", "visiontune", "--version"]
        print(f"  dev venv   {_summary(startup_times_s(dev, args.runs, dict(os.environ)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
