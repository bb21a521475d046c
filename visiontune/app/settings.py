"""App settings that persist between runs: a small TOML file in the user config directory.

``<user config dir>/visiontune/app.toml`` (platformdirs): last protocol, patient screen,
calibration choice, export folder, simulated pace, cylinder form of the lenses shown. Unknown keys are an error naming the key
(a typo must not silently reset a setting); a missing file gives the defaults. The file is
user-only (0600) in a user-only folder (0700) whatever the umask, written atomically by
:func:`visiontune.private_files.write_private`.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from visiontune import private_files
from visiontune._validate import check_number
from visiontune.errors import ConfigurationError
from visiontune.refraction.lenses import CYLINDER_FORMS
from visiontune.refraction.protocol import DEFAULT_PROTOCOL

SETTINGS_FILE_NAME = "app.toml"


@dataclass(frozen=True)
class AppSettings:
    """``protocol``: shipped name or .toml path. ``patient_screen``: QScreen name ('' = the
    second screen if any, else a window). ``calibration_path``: calibration JSON ('' = the
    default in the config dir). ``export_dir``: where finished sessions are exported ('' =
    ``<user data dir>/visiontune/exports``). ``pace_s``: simulated auto-answer pace, seconds
    (0 = one step per key). ``cylinder_form``: how lenses are written, ``"minus"`` (the
    optometric default) or ``"plus"`` (ophthalmic)."""

    protocol: str = DEFAULT_PROTOCOL
    patient_screen: str = ""
    calibration_path: str = ""
    export_dir: str = ""
    pace_s: float = 0.6
    cylinder_form: str = "minus"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "str" and not isinstance(value, str):
                raise ConfigurationError(f"{f.name}: expected a string, got {value!r}")
        object.__setattr__(self, "pace_s", check_number("pace_s", self.pace_s, 0, 60, error=ConfigurationError))
        if self.cylinder_form not in CYLINDER_FORMS:
            raise ConfigurationError(f"cylinder_form: expected 'minus' or 'plus', got {self.cylinder_form!r}")

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
        raw = private_files.read_regular_file(path, name="settings", max_bytes=1_000_000, error=ConfigurationError)
    except FileNotFoundError:
        return AppSettings()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigurationError(f"{path}: invalid TOML (nested too deeply)") from None
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
    """Write ``settings`` atomically (file 0600, folder 0700); return the path.
    ConfigurationError if it cannot be written (the previous file is then unchanged)."""
    default = path is None
    path = Path(path) if path is not None else default_settings_path()
    lines = ["# VisionTune app settings (written by the app)"]
    lines += [f"{f.name} = {_toml_value(getattr(settings, f.name))}" for f in dataclasses.fields(settings)]
    path = private_files.check_destination(path, name="settings", error=ConfigurationError)
    private_files.private_dir(path.parent, tighten=default, error=ConfigurationError)
    return private_files.write_private(path, "\n".join(lines) + "\n", name="settings", error=ConfigurationError)
