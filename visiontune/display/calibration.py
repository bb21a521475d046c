"""Screen calibration: physical size, resolution, viewing distance, mirror; stored per machine.

A :class:`Calibration` is what turns a letter size in logMAR into pixels
(:mod:`visiontune.display.geometry`). It comes from the screen's physical size, from an
on-screen measurement against a standard ID-1 card (ISO/IEC 7810, 85.60 x 53.98 mm), or
from a monitor defined in PsychoPy's Monitor Center. It is stored as JSON in the user's
config directory (platformdirs), readable by the user only (mode 0600). Photometer
readings of the background and the optotype are checked against ISO 10938:2016 (background
80-320 cd/m^2) and ISO 8596 (optotype at most 15% of the background).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from visiontune.errors import CalibrationError

#: ID-1 card (credit card) size, ISO/IEC 7810, millimetres.
CARD_WIDTH_MM = 85.60
CARD_HEIGHT_MM = 53.98
#: Shortest viewing distance accepted, millimetres (a refraction lane is 4-6 m; 0.5 m is
#: already a near-vision setup, anything shorter is a typo in the unit).
MIN_VIEWING_DISTANCE_MM = 500.0
#: Largest accepted mismatch between horizontal and vertical pixel pitch (non-square pixels
#: would distort the letter's width; on real panels this means a mistyped size).
MAX_PITCH_MISMATCH = 0.05
#: Background luminance range of ISO 10938:2016 (electronic acuity charts), cd/m^2.
ISO10938_BACKGROUND_CD_M2 = (80.0, 320.0)
#: Largest optotype luminance as a fraction of the background (ISO 8596 / ISO 10938): a
#: Weber contrast of at least 85%.
MAX_OPTOTYPE_FRACTION = 0.15
CONFIG_FILE_NAME = "calibration.json"


def _positive(field: str, value, unit: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CalibrationError(f"{field}: expected a number in {unit}, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise CalibrationError(f"{field}: must be a finite number > 0 {unit}, got {value!r}")
    return v


def _pixels(field: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        raise CalibrationError(f"{field}: must be a whole number of pixels >= 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Calibration:
    """Geometry of the patient's screen.

    ``screen_width_mm``, ``screen_height_mm``: visible image size, millimetres.
    ``width_px``, ``height_px``: resolution in device pixels.
    ``viewing_distance_mm``: eye to screen, millimetres (via a mirror: the total optical path).
    ``mirror``: flip the image horizontally (mirrored lanes).
    ``background_cd_m2``: measured background (white) luminance, cd/m^2, or None if not
    measured. Noted, not used for drawing. ISO 10938:2016 asks for 80-320 cd/m^2 (ETDRS
    trials use 85); a value outside is a CalibrationError unless ``background_nonstandard``.
    ``optotype_cd_m2``: measured optotype (black) luminance, cd/m^2, or None. ISO 8596/10938:
    at most 15% of the background (Weber contrast ``(L_b - L_o) / L_b >= 0.85``). Black on
    white meets it on any working screen (a 1000:1 panel gives 0.1%); a measured value above
    15% of the background (glare, a washed-out projector) is a CalibrationError.
    ``background_nonstandard``: the operator records on purpose a background outside
    80-320 cd/m^2 (a dim research lab, mesopic testing). Stored with the calibration so that
    a session run on it can be reported as non-conforming; see :attr:`luminance_notes`.
    Why a flag and not a plain warning: a clinic's value outside the range is almost always
    a measuring or typing slip and must stop the setup, while a lab that wants a dim screen
    must be able to say so once and keep the fact on record.
    """

    screen_width_mm: float
    screen_height_mm: float
    width_px: int
    height_px: int
    viewing_distance_mm: float
    mirror: bool = False
    background_cd_m2: float | None = None
    optotype_cd_m2: float | None = None
    background_nonstandard: bool = False

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "screen_width_mm", _positive("screen_width_mm", self.screen_width_mm, "mm"))
        set_(self, "screen_height_mm", _positive("screen_height_mm", self.screen_height_mm, "mm"))
        set_(self, "width_px", _pixels("width_px", self.width_px))
        set_(self, "height_px", _pixels("height_px", self.height_px))
        d = _positive("viewing_distance_mm", self.viewing_distance_mm, "mm")
        if d < MIN_VIEWING_DISTANCE_MM:
            raise CalibrationError(
                f"viewing_distance_mm: must be >= {MIN_VIEWING_DISTANCE_MM:g} mm, got {d:g} (metres typed as mm?)"
            )
        set_(self, "viewing_distance_mm", d)
        if not isinstance(self.mirror, bool):
            raise CalibrationError(f"mirror: expected true or false, got {self.mirror!r}")
        self._check_luminance()
        px, py = self.pixel_pitch_x_mm, self.pixel_pitch_y_mm
        if abs(px - py) > MAX_PITCH_MISMATCH * max(px, py):
            raise CalibrationError(
                f"screen_width_mm/screen_height_mm: pixels would not be square (pitch {px:.4f} x {py:.4f} mm); "
                "check the physical size against the resolution"
            )

    def _check_luminance(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.background_nonstandard, bool):
            raise CalibrationError(
                f"background_nonstandard: expected true or false, got {self.background_nonstandard!r}"
            )
        lb = self.background_cd_m2
        if lb is not None:
            lb = _positive("background_cd_m2", lb, "cd/m^2")
            set_(self, "background_cd_m2", lb)
            lo, hi = ISO10938_BACKGROUND_CD_M2
            if not (lo <= lb <= hi) and not self.background_nonstandard:
                raise CalibrationError(
                    f"background_cd_m2: {lb:g} cd/m^2 is outside the ISO 10938 range {lo:g}-{hi:g} cd/m^2 "
                    "(check the photometer reading; to record a deliberate deviation set background_nonstandard, --nonstandard-background)"
                )
        lo_ = self.optotype_cd_m2
        if lo_ is not None:
            try:
                v = float(lo_)
            except (TypeError, ValueError):
                raise CalibrationError(f"optotype_cd_m2: expected a number in cd/m^2, got {lo_!r}") from None
            if not math.isfinite(v) or v < 0:
                raise CalibrationError(f"optotype_cd_m2: must be a finite number >= 0 cd/m^2, got {lo_!r}")
            set_(self, "optotype_cd_m2", v)
            if lb is not None and v > MAX_OPTOTYPE_FRACTION * lb:
                raise CalibrationError(
                    f"optotype_cd_m2: {v:g} cd/m^2 is {100 * v / lb:.1f}% of the background; ISO 8596/10938 "
                    f"allow at most {100 * MAX_OPTOTYPE_FRACTION:g}% (Weber contrast >= {1 - MAX_OPTOTYPE_FRACTION:.2f})"
                )

    @property
    def weber_contrast(self) -> float | None:
        """Optotype contrast ``(L_b - L_o) / L_b`` (ISO 8596), or None unless both luminances
        are recorded. >= 0.85 by validation."""
        if self.background_cd_m2 is None or self.optotype_cd_m2 is None:
            return None
        return (self.background_cd_m2 - self.optotype_cd_m2) / self.background_cd_m2

    @property
    def luminance_notes(self) -> tuple[str, ...]:
        """Plain statements about luminance for the operator and the session report."""
        lo, hi = ISO10938_BACKGROUND_CD_M2
        lb = self.background_cd_m2
        notes = []
        if lb is None:
            notes.append(f"background luminance not measured (ISO 10938: {lo:g}-{hi:g} cd/m^2)")
        elif lo <= lb <= hi:
            notes.append(f"background {lb:g} cd/m^2: within ISO 10938 ({lo:g}-{hi:g} cd/m^2)")
        else:
            notes.append(f"background {lb:g} cd/m^2: OUTSIDE ISO 10938 ({lo:g}-{hi:g} cd/m^2), recorded as deliberate")
        c = self.weber_contrast
        if c is None:
            notes.append("optotype: black on white (drawn at the screen's black level); luminance not measured")
        else:
            notes.append(f"optotype {self.optotype_cd_m2:g} cd/m^2: Weber contrast {c:.3f} (ISO 8596: >= 0.85)")
        return tuple(notes)

    @property
    def pixel_pitch_x_mm(self) -> float:
        """Horizontal pixel pitch, mm per pixel."""
        return self.screen_width_mm / self.width_px

    @property
    def pixel_pitch_y_mm(self) -> float:
        """Vertical pixel pitch, mm per pixel."""
        return self.screen_height_mm / self.height_px

    @property
    def pixel_pitch_mm(self) -> float:
        """Pixel pitch used for letter heights: the vertical pitch, mm per pixel (a letter's
        height is vertical; the two pitches agree within 5% by validation)."""
        return self.pixel_pitch_y_mm

    @classmethod
    def from_card(
        cls,
        card_width_px: float,
        card_height_px: float,
        width_px: int,
        height_px: int,
        viewing_distance_mm: float,
        **options,
    ) -> "Calibration":
        """Calibration from an on-screen rectangle resized to match an ID-1 card.

        ``card_width_px`` x ``card_height_px``: the rectangle's size, device pixels, when it
        matches the 85.60 x 53.98 mm card held against the screen. Pitch = card mm / card px;
        screen size = resolution x pitch. ``options``: the optional fields (``mirror``,
        luminances), passed on.
        """
        cw = _positive("card_width_px", card_width_px, "px")
        ch = _positive("card_height_px", card_height_px, "px")
        w = _pixels("width_px", width_px)
        h = _pixels("height_px", height_px)
        return cls(
            w * CARD_WIDTH_MM / cw,
            h * CARD_HEIGHT_MM / ch,
            w,
            h,
            viewing_distance_mm,
            **options,
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict, source: str = "calibration") -> "Calibration":
        """Build from a decoded mapping; CalibrationError naming a missing or unknown field."""
        if not isinstance(data, dict):
            raise CalibrationError(f"{source}: expected a JSON object, got {type(data).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        missing = [n for n in required if n not in data]
        if missing:
            raise CalibrationError(f"{source}: missing field(s) {', '.join(missing)}")
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise CalibrationError(f"{source}: unknown field(s) {', '.join(unknown)}")
        try:
            return cls(**data)
        except CalibrationError as exc:
            raise CalibrationError(f"{source}: {exc}") from None


def default_calibration_path() -> Path:
    """``<user config dir>/visiontune/calibration.json`` (platformdirs)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("visiontune", appauthor=False)) / CONFIG_FILE_NAME


def save_calibration(calibration: Calibration, path: str | os.PathLike | None = None) -> Path:
    """Write ``calibration`` as JSON (file mode 0600, written atomically); return the path."""
    path = Path(path) if path is not None else default_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(calibration.to_dict(), fh, indent=2)
        fh.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def load_calibration(path: str | os.PathLike | None = None) -> Calibration:
    """Read and validate a calibration file; CalibrationError saying what is wrong and where."""
    path = Path(path) if path is not None else default_calibration_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CalibrationError(f"no screen calibration at {path}: run `visiontune calibrate` first") from None
    except OSError as exc:
        raise CalibrationError(f"cannot read calibration {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path}: not valid JSON ({exc})") from None
    return Calibration.from_dict(data, str(path))


#: Run in a PsychoPy interpreter: prints one JSON line describing monitor ``argv[1]``.
_MONITOR_QUERY = """
import json, sys
from psychopy import monitors
name = sys.argv[1]
names = [str(n) for n in monitors.getAllMonitors()]
record = {"names": names}
if name in names:
    mon = monitors.Monitor(name)
    size = mon.getSizePix()
    record.update(width_cm=mon.getWidth(), distance_cm=mon.getDistance(),
                  size_pix=None if size is None else [int(v) for v in size])
print("VISIONTUNE-MONITOR " + json.dumps(record))
"""


def _monitor_in_process(name: str) -> dict:
    from psychopy import monitors  # noqa: PLC0415 - optional, imported only when used

    names = [str(n) for n in monitors.getAllMonitors()]
    if name not in names:
        return {"names": names}
    mon = monitors.Monitor(name)
    size = mon.getSizePix()
    return {"names": names, "width_cm": mon.getWidth(), "distance_cm": mon.getDistance(),
            "size_pix": None if size is None else [int(v) for v in size]}


def _monitor_in_child(name: str, python: str) -> dict:
    import subprocess  # noqa: PLC0415

    try:
        done = subprocess.run([python, "-c", _MONITOR_QUERY, name], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CalibrationError(f"name: cannot ask PsychoPy at {python} for monitor {name!r} ({exc})") from None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("VISIONTUNE-MONITOR "):
            return json.loads(line.split(" ", 1)[1])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    raise CalibrationError(f"name: PsychoPy at {python} could not read monitor {name!r} ({tail})")


def from_psychopy_monitor(name: str, *, python: str | os.PathLike | None = None, **options) -> Calibration:
    """Calibration from a monitor saved in PsychoPy's Monitor Center.

    Uses ``psychopy.monitors`` only (no Qt, no window). PsychoPy stores the width in cm, the
    distance in cm and the resolution; the height is width x rows / columns (square pixels).
    ``python``: a PsychoPy interpreter to ask in a child process (default: this process if
    it has PsychoPy, else ``$VISIONTUNE_PSYCHOPY_PYTHON`` if set: PsychoPy usually lives in
    its own environment, not VisionTune's). ``options``: the optional fields (``mirror``,
    luminances), passed on.
    """
    python = python or None
    if python is None:
        try:
            record = _monitor_in_process(name)
        except ImportError as exc:
            python = os.environ.get("VISIONTUNE_PSYCHOPY_PYTHON")
            if not python:
                raise CalibrationError(
                    f"name: PsychoPy is not installed, cannot import monitor {name!r} ({exc}); "
                    "set VISIONTUNE_PSYCHOPY_PYTHON to a Python that has it"
                ) from None
    if python is not None:
        record = _monitor_in_child(name, str(python))
    if "width_cm" not in record:
        raise CalibrationError(f"name: no PsychoPy monitor named {name!r} (have {', '.join(record['names']) or 'none'})")
    width_cm, dist_cm, size = record["width_cm"], record["distance_cm"], record["size_pix"]
    if width_cm is None or dist_cm is None or size is None:
        raise CalibrationError(f"name: PsychoPy monitor {name!r} lacks width, distance or size in pixels")
    w_px, h_px = int(size[0]), int(size[1])
    width_mm = 10.0 * float(width_cm)
    return Calibration(width_mm, width_mm * h_px / w_px, w_px, h_px, 10.0 * float(dist_cm), **options)
