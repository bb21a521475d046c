"""App settings that persist between runs: a small TOML file in the user config directory.

``<user config dir>/visiontune/app.toml`` (platformdirs): last protocol, patient screen,
calibration choice, export folder, simulated pace. Unknown keys are an error naming the key
(a typo must not silently reset a setting); a missing file gives the defaults.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import ConfigurationError

SETTINGS_FILE_NAME = "app.toml"


@dataclass(frozen=True)
class AppSettings:
    """``protocol``: shipped name or .toml path. ``patient_screen``: QScreen name ('' = the
    second screen if any, else a window). ``calibration_path``: calibration JSON ('' = the
    default in the config dir). ``export_dir``: where finished sessions are exported ('' =
    ``<user data dir>/visiontune/exports``). ``pace_s``: simulated auto-answer pace, seconds
    (0 = one step per key)."""

    protocol: str = "clinical-sloan"
    patient_screen: str = ""
    calibration_path: str = ""
    export_dir: str = ""
    pace_s: float = 0.6

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "str" and not isinstance(value, str):
                raise ConfigurationError(f"{f.name}: expected a string, got {value!r}")
        pace = self.pace_s
        if isinstance(pace, bool) or not isinstance(pace, (int, float)) or not math.isfinite(pace) or not 0 <= pace <= 60:
            raise ConfigurationError(f"pace_s: expected a number of seconds in [0, 60], got {pace!r}")
        object.__setattr__(self, "pace_s", float(pace))

    def replace(self, **changes) -> AppSettings:
        return dataclasses.replace(self, **changes)


def default_settings_path() -> Path:
    """``<user config dir>/visiontune/app.toml``."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("visiontune", appauthor=False)) / SETTINGS_FILE_NAME


def _toml_value(value) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return repr(float(value))


def load_settings(path: str | os.PathLike | None = None) -> AppSettings:
    """Read the settings file (defaults if it does not exist); ConfigurationError naming the
    file and the key when it is malformed."""
    path = Path(path) if path is not None else default_settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return AppSettings()
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read the settings ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: invalid TOML ({exc})") from None
    names = {f.name for f in dataclasses.fields(AppSettings)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigurationError(f"{path}: {unknown[0]}: unknown setting (known: {', '.join(sorted(names))})")
    try:
        return AppSettings(**data)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def save_settings(settings: AppSettings, path: str | os.PathLike | None = None) -> Path:
    """Write ``settings`` atomically (mode 0600); return the path."""
    path = Path(path) if path is not None else default_settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# VisionTune app settings (written by the app)"]
    lines += [f"{f.name} = {_toml_value(getattr(settings, f.name))}" for f in dataclasses.fields(settings)]
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path
