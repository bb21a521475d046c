#!/usr/bin/env bash
# Register this unpacked VisionTune bundle with the desktop (current user only):
# writes $XDG_DATA_HOME/applications/visiontune.desktop (Exec = this folder's program, quoted)
# and the icon to $XDG_DATA_HOME/icons/hicolor/{256x256,scalable}/apps/.
# Run it again after moving the folder. User data never goes into the bundle: the trial log is
# in the platformdirs user data directory (or $VISIONTUNE_DATA_DIR).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
[ -x "$HERE/visiontune" ] || { echo "install-desktop-entry: $HERE/visiontune not found" >&2; exit 1; }
case "$HERE" in
    *\"*|*\\*|*\`*|*\$*) echo "install-desktop-entry: unsupported character in path $HERE" >&2; exit 1 ;;
esac
mkdir -p "$DATA/applications" "$DATA/icons/hicolor/256x256/apps" "$DATA/icons/hicolor/scalable/apps"
install -m 644 "$HERE/visiontune.png" "$DATA/icons/hicolor/256x256/apps/visiontune.png"
install -m 644 "$HERE/visiontune.svg" "$DATA/icons/hicolor/scalable/apps/visiontune.svg"
sed -e "s|^Exec=visiontune |Exec=\"$HERE/visiontune\" |" -e "s|^Icon=visiontune\$|Icon=$HERE/visiontune.png|" \
    "$HERE/visiontune.desktop" > "$DATA/applications/visiontune.desktop"
chmod 644 "$DATA/applications/visiontune.desktop"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$DATA/applications" || true
echo "$DATA/applications/visiontune.desktop"
