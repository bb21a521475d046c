"""Screen calibration: physical size, resolution, viewing distance, mirror; stored per machine.

A :class:`Calibration` is what turns a letter size in logMAR into pixels
(:mod:`visiontune.display.geometry`). It comes from the screen's physical size, from an
on-screen measurement against a standard ID-1 card (ISO/IEC 7810, 85.60 x 53.98 mm), or
from a monitor defined in PsychoPy's Monitor Center. It is stored as JSON in the user's
config directory (platformdirs), readable by the user only (mode 0600, folder 0700, written
atomically by :func:`visiontune.private_files.write_private`; a device, folder or FIFO is
refused as a destination). Every quantity has a physical range (below) so that a typo such
as ``--distance-mm 1e308`` is an error, not a saved calibration. Photometer
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

from visiontune import output_guard, private_files
from visiontune._validate import check_number, short_repr
from visiontune.errors import CalibrationError

#: ID-1 card (credit card) size, ISO/IEC 7810, millimetres.
CARD_WIDTH_MM = 85.60
CARD_HEIGHT_MM = 53.98
#: Shortest viewing distance accepted, millimetres (a refraction lane is 4-6 m; 0.5 m is
#: already a near-vision setup, anything shorter is a typo in the unit).
MIN_VIEWING_DISTANCE_MM = 500.0
#: Longest viewing distance accepted, millimetres (the longest lanes are 6 m; 20 m is far
#: beyond any refraction setup, mirrored or not).
MAX_VIEWING_DISTANCE_MM = 20_000.0
#: Visible image width or height, millimetres: a phone-sized patch to a large projection.
SCREEN_SIZE_MM = (10.0, 20_000.0)
#: Pixels along one side of the screen (16K is 15360).
MAX_PIXELS = 100_000
#: Pixel pitch, millimetres per pixel: a high-density phone (0.03 mm) to an LED wall (~10 mm).
PIXEL_PITCH_MM = (0.01, 10.0)
#: Brightest luminance accepted from a photometer reading, cd/m^2 (HDR panels peak at a few
#: thousand; more is a typing slip).
MAX_LUMINANCE_CD_M2 = 10_000.0
#: Largest accepted mismatch between horizontal and vertical pixel pitch (non-square pixels
#: would distort the letter's width; on real panels this means a mistyped size).
MAX_PITCH_MISMATCH = 0.05
#: Background luminance range of ISO 10938:2016 (electronic acuity charts), cd/m^2.
ISO10938_BACKGROUND_CD_M2 = (80.0, 320.0)
#: Largest optotype luminance as a fraction of the background (ISO 8596 / ISO 10938): a
#: Weber contrast of at least 85%.
MAX_OPTOTYPE_FRACTION = 0.15
CONFIG_FILE_NAME = "calibration.json"


def _positive(field: str, value, unit: str, upper: float | None = None) -> float:
    v = check_number(field, value, error=CalibrationError)
    if v <= 0:
        raise CalibrationError(f"{field}: must be a finite number > 0 {unit}, got {short_repr(value)}")
    if upper is not None and v > upper:
        raise CalibrationError(f"{field}: must be at most {upper:g} {unit}, got {v:g}")
    return v


def _pixels(field: str, value) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        ok = True
    if not ok or value < 1:
        raise CalibrationError(f"{field}: must be a whole number of pixels >= 1, got {short_repr(value)}")
    if value > MAX_PIXELS:
        raise CalibrationError(f"{field}: must be at most {MAX_PIXELS} pixels, got {short_repr(value)}")
    return int(value)


def _size_mm(field: str, value) -> float:
    v = _positive(field, value, "mm")
    lo, hi = SCREEN_SIZE_MM
    if not lo <= v <= hi:
        raise CalibrationError(f"{field}: must be between {lo:g} and {hi:g} mm, got {v:g}")
    return v


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
        set_(self, "screen_width_mm", _size_mm("screen_width_mm", self.screen_width_mm))
        set_(self, "screen_height_mm", _size_mm("screen_height_mm", self.screen_height_mm))
        set_(self, "width_px", _pixels("width_px", self.width_px))
        set_(self, "height_px", _pixels("height_px", self.height_px))
        d = _positive("viewing_distance_mm", self.viewing_distance_mm, "mm")
        if d < MIN_VIEWING_DISTANCE_MM:
            raise CalibrationError(
                f"viewing_distance_mm: must be >= {MIN_VIEWING_DISTANCE_MM:g} mm, got {d:g} (metres typed as mm?)"
            )
        if d > MAX_VIEWING_DISTANCE_MM:
            raise CalibrationError(f"viewing_distance_mm: must be <= {MAX_VIEWING_DISTANCE_MM:g} mm (20 m), got {d:g}")
        set_(self, "viewing_distance_mm", d)
        if not isinstance(self.mirror, bool):
            raise CalibrationError(f"mirror: expected true or false, got {short_repr(self.mirror)}")
        self._check_luminance()
        px, py = self.pixel_pitch_x_mm, self.pixel_pitch_y_mm
        lo, hi = PIXEL_PITCH_MM
        for axis, pitch in (("screen_width_mm/width_px", px), ("screen_height_mm/height_px", py)):
            if not lo <= pitch <= hi:
                raise CalibrationError(
                    f"{axis}: pixel pitch {pitch:.4g} mm is outside {lo:g}-{hi:g} mm; "
                    "check the physical size against the resolution"
                )
        if abs(px - py) > MAX_PITCH_MISMATCH * max(px, py):
            raise CalibrationError(
                f"screen_width_mm/screen_height_mm: pixels would not be square (pitch {px:.4f} x {py:.4f} mm); "
                "check the physical size against the resolution"
            )

    def _check_luminance(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.background_nonstandard, bool):
            raise CalibrationError(
                f"background_nonstandard: expected true or false, got {short_repr(self.background_nonstandard)}"
            )
        lb = self.background_cd_m2
        if lb is not None:
            lb = _positive("background_cd_m2", lb, "cd/m^2", MAX_LUMINANCE_CD_M2)
            set_(self, "background_cd_m2", lb)
            lo, hi = ISO10938_BACKGROUND_CD_M2
            if not (lo <= lb <= hi) and not self.background_nonstandard:
                raise CalibrationError(
                    f"background_cd_m2: {lb:g} cd/m^2 is outside the ISO 10938 range {lo:g}-{hi:g} cd/m^2 "
                    "(check the photometer reading; to record a deliberate deviation set background_nonstandard, "
                    "--nonstandard-background)"
                )
        lo_ = self.optotype_cd_m2
        if lo_ is not None:
            v = check_number("optotype_cd_m2", lo_, error=CalibrationError)
            if not 0 <= v <= MAX_LUMINANCE_CD_M2:
                raise CalibrationError(
                    f"optotype_cd_m2: must be a finite number >= 0 and <= {MAX_LUMINANCE_CD_M2:g} cd/m^2, "
                    f"got {short_repr(lo_)}"
                )
            set_(self, "optotype_cd_m2", v)
            if lb is not None and v > MAX_OPTOTYPE_FRACTION * lb:
                raise CalibrationError(
                    f"optotype_cd_m2: {v:g} cd/m^2 is {100 * v / lb:.1f}% of the background; ISO 8596/10938 "
                    f"allow at most {100 * MAX_OPTOTYPE_FRACTION:g}% "
                    f"(Weber contrast >= {1 - MAX_OPTOTYPE_FRACTION:.2f})"
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
    ) -> Calibration:
        """Calibration from an on-screen rectangle resized to match an ID-1 card.

        ``card_width_px`` x ``card_height_px``: the rectangle's size, device pixels, when it
        matches the 85.60 x 53.98 mm card held against the screen. Pitch = card mm / card px;
        screen size = resolution x pitch. ``options``: the optional fields (``mirror``,
        luminances), passed on.
        """
        cw = _positive("card_width_px", card_width_px, "px", MAX_PIXELS)
        ch = _positive("card_height_px", card_height_px, "px", MAX_PIXELS)
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
    def from_dict(cls, data: dict, source: str = "calibration") -> Calibration:
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
        except (TypeError, ValueError, OverflowError) as exc:  # a value of a type no field takes
            raise CalibrationError(f"{source}: {exc}") from None


def default_calibration_path() -> Path:
    """``<user config dir>/visiontune/calibration.json`` (platformdirs)."""
    return output_guard.default_config_path(CONFIG_FILE_NAME)


#: A calibration file is a few hundred bytes; anything past this is not one.
MAX_FILE_BYTES = 64_000


def save_calibration(calibration: Calibration, path: str | os.PathLike | None = None) -> Path:
    """Write ``calibration`` as JSON (file mode 0600, folder 0700, written atomically); return
    the path. CalibrationError for a destination that is not a regular file or a new path (a
    folder, a device, a FIFO) and for any failure to write (full disk: nothing is left behind)."""
    default = path is None
    path = Path(path) if path is not None else default_calibration_path()
    if not isinstance(calibration, Calibration):
        raise CalibrationError(f"calibration: expected a Calibration, got {type(calibration).__name__}")
    path = output_guard.guard_output_path(path, CALIBRATION_FILE, name="calibration file", error=CalibrationError)
    private_files.private_dir(path.parent, tighten=default, error=CalibrationError)
    text = json.dumps(calibration.to_dict(), indent=2) + "\n"
    return output_guard.write_output(path, text, CALIBRATION_FILE, name="calibration file", error=CalibrationError)


def load_calibration(path: str | os.PathLike | None = None) -> Calibration:
    """Read and validate a calibration file; CalibrationError saying what is wrong and where
    (missing, a folder or device, not UTF-8, not JSON, nested too deeply, out of range)."""
    path = Path(path) if path is not None else default_calibration_path()
    try:
        raw = private_files.read_regular_file(
            path, name="calibration file", max_bytes=MAX_FILE_BYTES, error=CalibrationError
        )
    except FileNotFoundError:
        raise CalibrationError(f"no screen calibration at {path}: run `visiontune calibrate` first") from None
    return Calibration.from_dict(_json_document(raw, path), str(path))


def _json_document(raw: bytes, path: str | os.PathLike):
    """The JSON value in ``raw`` (the bytes of calibration file ``path``); CalibrationError if it
    is not UTF-8 JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not a calibration file (not UTF-8 text: byte {exc.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise CalibrationError(f"{path}: not a calibration file (JSON nested too deeply)") from None
    except ValueError as exc:
        raise CalibrationError(f"{path}: not valid JSON ({exc})") from None


def _is_calibration_file(raw: bytes) -> bool:
    """True for a JSON object with only :class:`Calibration` fields (values not checked: a
    calibration out of range may be replaced by a new one)."""
    try:
        data = _json_document(raw, "calibration")
    except CalibrationError:
        return False
    return isinstance(data, dict) and bool(data) and set(data) <= {f.name for f in dataclasses.fields(Calibration)}


#: What ``save_calibration`` writes: it replaces only a calibration file (and may write the
#: user's calibration, never the trial log or the settings).
CALIBRATION_FILE = output_guard.OutputKind("VisionTune calibration", _is_calibration_file, own="calibration")


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
    from psychopy import monitors  # optional, imported only when used

    names = [str(n) for n in monitors.getAllMonitors()]
    if name not in names:
        return {"names": names}
    mon = monitors.Monitor(name)
    size = mon.getSizePix()
    return {
        "names": names,
        "width_cm": mon.getWidth(),
        "distance_cm": mon.getDistance(),
        "size_pix": None if size is None else [int(v) for v in size],
    }


def _monitor_in_child(name: str, python: str) -> dict:
    import subprocess

    try:
        done = subprocess.run([python, "-c", _MONITOR_QUERY, name], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CalibrationError(f"name: cannot ask PsychoPy at {python} for monitor {name!r} ({exc})") from None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("VISIONTUNE-MONITOR "):
            try:
                record = json.loads(line.split(" ", 1)[1])
            except ValueError:
                break
            if isinstance(record, dict) and isinstance(record.get("names"), list):
                return record
            break
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
        raise CalibrationError(
            f"name: no PsychoPy monitor named {name!r} (have {', '.join(record['names']) or 'none'})"
        )
    width_cm, dist_cm, size = record["width_cm"], record["distance_cm"], record["size_pix"]
    if width_cm is None or dist_cm is None or size is None:
        raise CalibrationError(f"name: PsychoPy monitor {name!r} lacks width, distance or size in pixels")
    try:
        w_px, h_px = int(size[0]), int(size[1])
        width_mm = 10.0 * float(width_cm)
        dist_mm = 10.0 * float(dist_cm)
        height_mm = width_mm * h_px / w_px
    except (TypeError, ValueError, OverflowError, IndexError, ZeroDivisionError):
        raise CalibrationError(
            f"name: PsychoPy monitor {name!r} has an unusable width, distance or size "
            f"({short_repr(width_cm)} cm, {short_repr(dist_cm)} cm, {short_repr(size)} px)"
        ) from None
    return Calibration(width_mm, height_mm, w_px, h_px, dist_mm, **options)
