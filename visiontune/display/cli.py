"""``visiontune calibrate``: record the patient screen's geometry and luminance, or show it.

Three ways in (docs/design.md, *Letter size on screen*):

    visiontune calibrate --width-mm 597.9 --height-mm 336.3 --resolution 1920x1080 --distance-mm 6000 [--mirror]
    visiontune calibrate --card-px 275.2 173.6 --resolution 1920x1080 --distance-mm 4000
    visiontune calibrate --psychopy-monitor lane1 [--distance-mm 6000]
    visiontune calibrate --show

``--card-px W H``: the size in pixels of an on-screen rectangle adjusted to cover an ID-1
card (85.60 x 53.98 mm) held against the screen. Luminances (``--background-cd-m2``,
``--optotype-cd-m2``) are photometer readings; ISO 10938 asks for a background of
80-320 cd/m^2 and an optotype at most 15% of it. The calibration is saved with
:func:`~visiontune.display.calibration.save_calibration` (user config dir, mode 0600) and
printed back with the range of letter sizes the screen shows faithfully.
"""

from __future__ import annotations

import argparse
import re
import sys

from visiontune._argparse import ArgumentParser
from visiontune.display.calibration import (
    MAX_PIXELS,
    Calibration,
    from_psychopy_monitor,
    load_calibration,
    save_calibration,
)
from visiontune.display.geometry import (
    DEFAULT_MIN_INK_PX,
    displayable_logmar_range,
    letter_height_mm,
    letter_height_px,
)
from visiontune.errors import CalibrationError, VisionTuneError, one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    how = parser.add_argument_group("screen size (one of)")
    how.add_argument("--width-mm", type=float, metavar="W", help="visible image width, millimetres")
    how.add_argument("--height-mm", type=float, metavar="H", help="visible image height, millimetres")
    how.add_argument(
        "--card-px",
        type=float,
        nargs=2,
        metavar=("W", "H"),
        help="on-screen rectangle matching an 85.60 x 53.98 mm card, pixels",
    )
    how.add_argument(
        "--psychopy-monitor",
        metavar="NAME",
        help="a monitor from PsychoPy's Monitor Center (size, resolution, distance)",
    )
    parser.add_argument("--resolution", metavar="WxH", help="screen resolution in pixels, e.g. 1920x1080")
    parser.add_argument(
        "--distance-mm",
        type=float,
        metavar="D",
        help="eye to screen, millimetres (through a mirror: the whole optical path)",
    )
    parser.add_argument("--mirror", action="store_true", help="the patient sees the screen in a mirror")
    parser.add_argument(
        "--background-cd-m2", type=float, metavar="L", help="measured background luminance, cd/m^2 (ISO 10938: 80-320)"
    )
    parser.add_argument(
        "--optotype-cd-m2",
        type=float,
        metavar="L",
        help="measured optotype (black) luminance, cd/m^2 (ISO: <= 15%% of the background)",
    )
    parser.add_argument(
        "--nonstandard-background",
        action="store_true",
        help="accept and record a background outside 80-320 cd/m^2 (a dim lab)",
    )
    parser.add_argument(
        "--min-ink-px",
        type=float,
        default=DEFAULT_MIN_INK_PX,
        metavar="PX",
        help=f"smallest letter height shown, pixels (default {DEFAULT_MIN_INK_PX:g}: a 1-px stroke)",
    )
    parser.add_argument("--file", metavar="PATH", help="calibration file (default: the user's config directory)")
    parser.add_argument(
        "--show",
        action="store_true",
        help="print the stored calibration and its displayable logMAR range (after saving, if a screen is given)",
    )


def parse_resolution(text: str | None) -> tuple[int, int]:
    """``"1920x1080"`` -> ``(1920, 1080)``; CalibrationError naming ``--resolution`` otherwise."""
    if text is None:
        raise CalibrationError("--resolution: required with --width-mm/--height-mm or --card-px (e.g. 1920x1080)")
    m = re.fullmatch(r"\s*([0-9]{1,9})\s*[xX×]\s*([0-9]{1,9})\s*", text)
    if not m:
        raise CalibrationError(f"--resolution: expected WIDTHxHEIGHT in pixels (e.g. 1920x1080), got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if w < 1 or h < 1:
        raise CalibrationError(f"--resolution: both pixel counts must be >= 1, got {text!r}")
    if max(w, h) > MAX_PIXELS:
        raise CalibrationError(f"--resolution: at most {MAX_PIXELS} pixels a side, got {text!r}")
    return w, h


def calibration_from_args(args: argparse.Namespace) -> Calibration | None:
    """The Calibration the arguments describe, or None if they name no screen (``--show``)."""
    by_size = args.width_mm is not None or args.height_mm is not None
    ways = [
        name
        for name, used in (
            ("--width-mm/--height-mm", by_size),
            ("--card-px", args.card_px is not None),
            ("--psychopy-monitor", args.psychopy_monitor is not None),
        )
        if used
    ]
    if len(ways) > 1:
        raise CalibrationError(f"{ways[1]}: give one way to size the screen, not {' and '.join(ways)}")
    options = {
        "mirror": bool(args.mirror),
        "background_cd_m2": args.background_cd_m2,
        "optotype_cd_m2": args.optotype_cd_m2,
        "background_nonstandard": bool(args.nonstandard_background),
    }
    if not ways:
        if args.resolution is not None or args.distance_mm is not None:
            raise CalibrationError(
                "--width-mm: give the screen size (--width-mm and --height-mm, --card-px or --psychopy-monitor)"
            )
        return None
    if args.psychopy_monitor is not None:
        if args.resolution is not None:
            raise CalibrationError("--resolution: the PsychoPy monitor defines the resolution")
        cal = from_psychopy_monitor(args.psychopy_monitor, **options)
        if args.distance_mm is not None:  # the lane's distance overrides the profile's
            cal = Calibration(**{**cal.to_dict(), "viewing_distance_mm": args.distance_mm})
        return cal
    if args.distance_mm is None:
        raise CalibrationError("--distance-mm: required (eye to screen, millimetres)")
    w_px, h_px = parse_resolution(args.resolution)
    if args.card_px is not None:
        return Calibration.from_card(args.card_px[0], args.card_px[1], w_px, h_px, args.distance_mm, **options)
    if args.width_mm is None or args.height_mm is None:
        missing = "--height-mm" if args.width_mm is not None else "--width-mm"
        raise CalibrationError(f"{missing}: give both --width-mm and --height-mm")
    return Calibration(args.width_mm, args.height_mm, w_px, h_px, args.distance_mm, **options)


def describe(cal: Calibration, *, min_ink_px: float = DEFAULT_MIN_INK_PX) -> str:
    """Human-readable summary: geometry, letter size at logMAR 0, displayable range, luminance."""
    rng = displayable_logmar_range(cal, min_ink_px=min_ink_px)
    d_m = cal.viewing_distance_mm / 1000.0
    lines = [
        f"screen      {cal.screen_width_mm:.1f} x {cal.screen_height_mm:.1f} mm, {cal.width_px} x {cal.height_px} px, "
        f"pitch {cal.pixel_pitch_x_mm:.4f} x {cal.pixel_pitch_y_mm:.4f} mm",
        f"distance    {cal.viewing_distance_mm:g} mm{'  (mirrored image)' if cal.mirror else ''}",
        f"logMAR 0    {letter_height_mm(0.0, cal.viewing_distance_mm):.3f} mm = {letter_height_px(0.0, cal):.2f} px "
        "(5 arcmin)",
        f"displayable {rng.min_logmar:+.3f} to {rng.max_logmar:+.3f} logMAR "
        f"(Snellen {d_m:g}/{d_m * 10**rng.min_logmar:.3g} to {d_m:g}/{d_m * 10**rng.max_logmar:.3g}; "
        f"letters {min_ink_px:g} px to {min(cal.width_px, cal.height_px)} px tall)",
    ]
    lines += [f"luminance   {note}" for note in cal.luminance_notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    cal = calibration_from_args(args)
    if cal is None:
        if not args.show:
            raise CalibrationError(
                "nothing to do: give the screen size (--width-mm and --height-mm, --card-px "
                "or --psychopy-monitor) or --show"
            )
        cal = load_calibration(args.file)
        print(f"calibration {one_line(args.file) if args.file else 'in the user config directory'}")
        print(describe(cal, min_ink_px=args.min_ink_px))
        return 0
    displayable_logmar_range(cal, min_ink_px=args.min_ink_px)  # refuse a screen that shows nothing
    path = save_calibration(cal, args.file)
    print(f"saved {one_line(path)}")
    print(describe(cal, min_ink_px=args.min_ink_px))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m visiontune.display.cli``), as ``visiontune calibrate``:
    any VisionTuneError is one line on stderr and exit code 2."""
    parser = ArgumentParser(prog="visiontune calibrate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except VisionTuneError as exc:
        print(f"visiontune calibrate: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
