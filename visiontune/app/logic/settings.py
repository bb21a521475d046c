"""App settings that persist between runs: a small TOML file in the user config directory.

``<user config dir>/visiontune/app.toml`` (platformdirs): last protocol, patient screen,
calibration choice, export folder, simulated pace, cylinder form of the lenses shown, lens device
and the manual device's kind.
Unknown keys are an error naming the key
(a typo must not silently reset a setting); a missing file gives the defaults. The file is
user-only (0600) in a user-only folder (0700) whatever the umask, written atomically by
:func:`visiontune.output_guard.write_output`, and only when a setting changes: never as a side
effect of reading, never with a protocol that does not load (a refused setting is not
persisted), never over a file that is not a settings file (the trial log, the calibration, a
file that is not settings TOML). :func:`load_settings_for_app` starts the app with what can be
used and one problem to report, never a start-up failure.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from visiontune import output_guard, private_files
from visiontune._validate import check_number
from visiontune.app.logic.worker_device import check_manual_kind
from visiontune.devices.choice import parse_device_spec
from visiontune.errors import ConfigurationError, InvalidInputError, VisionTuneError
from visiontune.refraction.lenses import CYLINDER_FORMS
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol

SETTINGS_FILE_NAME = "app.toml"


@dataclass(frozen=True)
class AppSettings:
    """``protocol``: shipped name or .toml path. ``patient_screen``: QScreen name ('' = the
    second screen if any, else a window). ``calibration_path``: calibration JSON ('' = the
    default in the config dir). ``export_dir``: where finished sessions are exported ('' =
    ``<user data dir>/visiontune/exports``). ``pace_s``: simulated auto-answer pace, seconds
    (0 = one step per key). ``cylinder_form``: how lenses are written, ``"minus"`` (the
    optometric default) or ``"plus"`` (ophthalmic). ``device``: the lens device, ``"manual"``
    (the trial frame or phoropter the clinician sets) or ``"cv5000:PORT"`` (a Topcon CV-5000 on
    a serial port; :mod:`visiontune.devices.choice`). ``near_distance_cm``: where the clinic's
    patients hold the near letters of a visit's near addition, cm (20-100; 40 by default).
    ``lens_device``: the manual device's kind, ``"trial-frame"`` (the default) or
    ``"manual-phoropter"`` (:mod:`visiontune.refraction.lens_devices`: what a change of lens costs
    the patient); a CV-5000 is the motorized phoropter whatever it says."""

    protocol: str = DEFAULT_PROTOCOL
    patient_screen: str = ""
    calibration_path: str = ""
    export_dir: str = ""
    pace_s: float = 0.6
    cylinder_form: str = "minus"
    device: str = "manual"
    near_distance_cm: float = 40.0
    lens_device: str = "trial-frame"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "str" and not isinstance(value, str):
                raise ConfigurationError(f"{f.name}: expected a string, got {value!r}")
        object.__setattr__(self, "pace_s", check_number("pace_s", self.pace_s, 0, 60, error=ConfigurationError))
        object.__setattr__(
            self,
            "near_distance_cm",
            check_number("near_distance_cm", self.near_distance_cm, 20, 100, error=ConfigurationError),
        )
        if self.cylinder_form not in CYLINDER_FORMS:
            raise ConfigurationError(f"cylinder_form: expected 'minus' or 'plus', got {self.cylinder_form!r}")
        try:
            kind, port = parse_device_spec(self.device)
        except InvalidInputError as exc:
            raise ConfigurationError(str(exc)) from None
        if not self.device.isprintable():
            raise ConfigurationError(f"device: a serial port name has no control characters, got {self.device!r}")
        object.__setattr__(self, "device", "manual" if kind == "manual" else f"cv5000:{port}")
        try:
            check_manual_kind(self.lens_device, what="lens_device")
        except InvalidInputError as exc:
            raise ConfigurationError(str(exc)) from None

    def replace(self, **changes) -> AppSettings:
        return dataclasses.replace(self, **changes)


def default_settings_path() -> Path:
    """``<user config dir>/visiontune/app.toml``."""
    return output_guard.default_config_path(SETTINGS_FILE_NAME)


def _toml_value(value) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return repr(float(value))


_NAMES = frozenset(f.name for f in dataclasses.fields(AppSettings))


def _settings_table(raw: bytes, path: Path) -> dict:
    """The TOML table in ``raw`` (the bytes of ``path``) with only known keys; ConfigurationError
    naming the file (and the key) otherwise."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigurationError(f"{path}: invalid TOML (nested too deeply)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: invalid TOML ({exc})") from None
    unknown = sorted(set(data) - _NAMES)
    if unknown:
        raise ConfigurationError(f"{path}: {unknown[0]}: unknown setting (known: {', '.join(sorted(_NAMES))})")
    return data


def _is_settings_file(raw: bytes) -> bool:
    """True for a TOML file of settings keys only (its values may be out of range: a deliberate
    change replaces them); a file of anything else is never replaced."""
    try:
        _settings_table(raw, Path("settings"))
    except ConfigurationError:
        return False
    return True


#: What ``save_settings`` writes: only over a settings file (never the trial log or the calibration).
SETTINGS_FILE = output_guard.OutputKind("VisionTune settings file", _is_settings_file, own="settings")


def _check_protocol(protocol: str, source: str) -> None:
    """ConfigurationError unless ``protocol`` is a shipped protocol or a protocol file that loads."""
    try:
        load_protocol(protocol)
    except VisionTuneError as exc:
        raise ConfigurationError(f"{source}: protocol: {exc}") from None


def load_settings(path: str | os.PathLike | None = None, *, check_protocol: bool = True) -> AppSettings:
    """Read the settings file (defaults if it does not exist); ConfigurationError naming the
    file and the key when it is malformed or (``check_protocol``) its protocol does not load."""
    path = Path(path) if path is not None else default_settings_path()
    try:
        raw = private_files.read_regular_file(path, name="settings", max_bytes=1_000_000, error=ConfigurationError)
    except FileNotFoundError:
        return AppSettings()
    data = _settings_table(raw, path)
    try:
        settings = AppSettings(**data)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None
    if check_protocol and "protocol" in data:
        _check_protocol(settings.protocol, str(path))
    return settings


def load_settings_for_app(path: str | os.PathLike | None = None) -> tuple[AppSettings, str | None]:
    """The settings the app starts with and the one problem to report (None if none): a file that
    cannot be used gives the defaults, a protocol that does not load the default protocol (the
    other settings kept). Nothing is written: the file is left as it is."""
    kept = "the file is left as it is and replaced only by a settings change you make"
    try:
        settings = load_settings(path, check_protocol=False)
    except ConfigurationError as exc:
        return AppSettings(), f"{exc}\nThe default settings are used; {kept} (never if it is not a settings file)."
    try:
        _check_protocol(settings.protocol, str(Path(path) if path is not None else default_settings_path()))
    except ConfigurationError as exc:
        return settings.replace(protocol=DEFAULT_PROTOCOL), f"{exc}\nThe protocol {DEFAULT_PROTOCOL} is used; {kept}."
    return settings, None


def _unchanged(path: Path, settings: AppSettings) -> bool:
    """True when ``path`` exists and holds exactly ``settings``."""
    try:
        return path.exists() and load_settings(path, check_protocol=False) == settings
    except (OSError, VisionTuneError):
        return False


def save_settings(settings: AppSettings, path: str | os.PathLike | None = None) -> Path:
    """Write ``settings`` atomically (file 0600, folder 0700); return the path. Nothing is
    written when the file already holds these settings. ConfigurationError (the file then
    unchanged) if they cannot be written, if the protocol does not load (a refused setting is
    never persisted), or if ``path`` is a file other than a settings file (the trial log,
    the calibration, any other file: :mod:`visiontune.output_guard`)."""
    default = path is None
    path = Path(path) if path is not None else default_settings_path()
    if not isinstance(settings, AppSettings):
        raise ConfigurationError(f"settings: expected AppSettings, got {type(settings).__name__}")
    _check_protocol(settings.protocol, "settings not saved")
    path = output_guard.guard_output_path(path, SETTINGS_FILE, name="settings", error=ConfigurationError)
    if _unchanged(path, settings):
        return path
    lines = ["# VisionTune app settings (written by the app)"]
    lines += [f"{f.name} = {_toml_value(getattr(settings, f.name))}" for f in dataclasses.fields(settings)]
    private_files.private_dir(path.parent, tighten=default, error=ConfigurationError)
    return output_guard.write_output(
        path, "\n".join(lines) + "\n", SETTINGS_FILE, name="settings", error=ConfigurationError
    )
