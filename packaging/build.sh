#!/usr/bin/env bash
# Build the VisionTune desktop bundle from a checkout, in one command:
#
#     packaging/build.sh            # -> dist/visiontune-<version>-linux-<arch>.tar.gz
#
# Creates its own virtual environment (build/venv, reused by later builds; --fresh recreates
# it), pip-installs the package with its GUI extra and PyInstaller, runs
# packaging/visiontune.spec (one-folder bundle) and packs the folder with the .desktop entry,
# the icons and install-desktop-entry.sh. Needs Python >= 3.11 (PYTHON=... to choose one) and
# access to the package index. Linux only; Windows and macOS: packaging/README.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/build/venv"
PYINSTALLER_REQUIREMENT="pyinstaller>=6.10,<7"

for arg in "$@"; do
    case "$arg" in
        --fresh) rm -rf "$VENV" ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "build.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
    esac
done
[ "$(uname -s)" = Linux ] || { echo "build.sh: Linux only; see packaging/README.md for Windows/macOS" >&2; exit 2; }
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "build.sh: $PYTHON is older than Python 3.11" >&2; exit 2; }

step() { printf '== %s\n' "$*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
    step "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
# setuptools builds the wheel in build/lib and never deletes files there: a module removed
# from the source tree would survive into the bundle, so start from an empty one.
rm -rf "$ROOT/build/lib" "$ROOT"/build/bdist.* "$ROOT/build/pyinstaller" "$ROOT/dist/visiontune"
step "installing visiontune[gui] and PyInstaller"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "$ROOT[gui]" "$PYINSTALLER_REQUIREMENT"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$ROOT"

VERSION="$(cd "$ROOT/build" && "$VENV/bin/python" -I -c 'import visiontune; print(visiontune.__version__)')"
ARCH="$(uname -m)"
NAME="visiontune-$VERSION-linux-$ARCH"

step "PyInstaller $("$VENV/bin/python" -m PyInstaller --version): packaging/visiontune.spec"
# Run from build/ so that the source tree's visiontune/ cannot shadow the installed package.
(cd "$ROOT/build" && "$VENV/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" "$ROOT/packaging/visiontune.spec")

step "packing dist/$NAME.tar.gz"
STAGE="$ROOT/dist/$NAME"
rm -rf "$STAGE" "$STAGE.tar.gz"
mv "$ROOT/dist/visiontune" "$STAGE"
install -m 644 "$ROOT/packaging/visiontune.desktop" "$ROOT/packaging/visiontune.png" \
    "$ROOT/packaging/visiontune.svg" "$STAGE/"
install -m 755 "$ROOT/packaging/install-desktop-entry.sh" "$STAGE/"
tar -C "$ROOT/dist" --sort=name --owner=0 --group=0 --numeric-owner -czf "$STAGE.tar.gz" "$NAME"
"$STAGE/visiontune" --version >&2
echo "$STAGE.tar.gz"
