"""A visit started from the clinic's instrument files: what each file gives the visit (Qt-free).

One autorefractor file (REF) and one lensmeter file (LM) at most, read by
:func:`~visiontune.instrument_files.read_instrument_file`:

* the **starting prescription** of each eye refracted: the REF's reading (source
  ``autorefraction``), else the LM's lens (source ``habitual spectacles``: the prior of
  :mod:`visiontune.refraction.start` for ``spectacles``);
* the **habitual prescription** (the visit's ``habitual_od`` / ``habitual_os``): the LM's lenses; their
  near additions are shown, the visit record holding no habitual add;
* the **pupillary distance**: the REF's (measured on the patient), else the LM's (the distance between
  the spectacles' optical centres, the best there is without a REF);
* the trial-log entries of the visit's inputs (:func:`visiontune.session.visit_records.record_visit_inputs`),
  one per file, each with the file's name (``from_file``) beside the sources and PD it gave.

For a **simulated** patient (``visit run --simulate --import ref.xml``) the file's reading is the
start and the simulated patient's correction is placed around it: the reading minus the simulated
autorefraction's own error (the case drawn from the seed: ``true = reading - (start - true)`` in
power vectors, Thibos 1997), so the session starts from the file's values and the patient is as far
from them as a drawn patient is from its autorefraction. A correction given with ``--true-rx`` is
kept as given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from visiontune.errors import InvalidInputError
from visiontune.instrument_files import read_instrument_file
from visiontune.instrument_files.reading import EYES, InstrumentReading
from visiontune.optics import Prescription
from visiontune.optics.prescription import PowerVector
from visiontune.refraction.start import check_in_range

__all__ = ["VisitImport", "read_visit_imports", "simulated_cases_with_imports", "start_form_texts"]


@dataclass(frozen=True)
class VisitImport:
    """The instrument readings of one visit: ``ref`` and ``lm`` (either may be ``None``) and the eyes
    the visit refracts."""

    ref: InstrumentReading | None = None
    lm: InstrumentReading | None = None
    eyes: tuple = EYES

    def start(self, eye: str) -> tuple[Prescription, str, InstrumentReading] | None:
        """``(rx, StartingPoint source, reading)`` of ``eye``'s start, or ``None`` (no file gives it)."""
        if eye not in self.eyes:
            return None
        if self.ref is not None and eye in self.ref.lenses:
            return self.ref.lenses[eye], "autorefraction", self.ref
        if self.lm is not None and eye in self.lm.lenses:
            return self.lm.lenses[eye], "spectacles", self.lm
        return None

    def starts(self) -> dict:
        return {e: s for e in EYES if (s := self.start(e)) is not None}

    def habitual(self) -> dict:
        """``{eye: Prescription}``: the LM's lenses (empty without an LM)."""
        return dict(self.lm.lenses) if self.lm is not None else {}

    def pd_reading(self) -> InstrumentReading | None:
        for reading in (self.ref, self.lm):
            if reading is not None and reading.pd_mm is not None:
                return reading
        return None

    def input_entries(self, *, with_pd: bool = True) -> list[dict]:
        """The keyword arguments of one :func:`~visiontune.session.visit_records.record_visit_inputs`
        call per file (module docstring); ``with_pd=False`` when the PD was typed."""
        starts = self.starts()
        pd_from = self.pd_reading() if with_pd else None
        entries = []
        for reading in (self.ref, self.lm):
            if reading is None:
                continue
            entry: dict = {"from_file": reading.source_file}
            for eye, (_rx, source, by) in starts.items():
                if by is reading:
                    entry[f"start_source_{eye.lower()}"] = (
                        "autorefraction" if source == "autorefraction" else "habitual spectacles"
                    )
            if reading is self.lm:
                entry["habitual_source"] = "lensmeter"
            if pd_from is reading:
                entry.update(pd_mm=reading.pd_mm, pd_od_mm=reading.pd_od_mm, pd_os_mm=reading.pd_os_mm)
            if len(entry) > 1:
                entries.append(entry)
        return entries

    def summary(self) -> str:
        """What the files gave, for the terminal (each file, each eye's start and its source)."""
        lines = [r.summary() for r in (self.ref, self.lm) if r is not None]
        for eye, (rx, _source, reading) in self.starts().items():
            lines.append(f"  {eye} start {rx.format()} from {reading.source}")
        if self.lm is not None:
            lines.append(f"  habitual spectacles from {self.lm.source}")
        return "\n".join(lines)


def read_visit_imports(paths, *, eyes=EYES, flag: str = "--import") -> VisitImport:
    """Read the instrument files of ``paths`` (one REF and one LM at most); the file giving the start
    must have a reading of each of ``eyes`` (the eyes refracted). Refused, naming the file: two files of
    one kind, more than two files, a file missing an eye it must give."""
    paths = list(paths or [])
    if len(paths) > 2:
        raise InvalidInputError(
            f"{flag}: {len(paths)} files; give at most one autorefractor (REF) and one lensmeter (LM) file"
        )
    found: dict[str, InstrumentReading] = {}
    for path in paths:
        reading = read_instrument_file(path)
        if reading.kind in found:
            raise InvalidInputError(
                f"{flag}: {found[reading.kind].source_file} and {reading.source_file} are both "
                f"{reading.kind} files; give one of each kind at most"
            )
        found[reading.kind] = reading
    imports = VisitImport(ref=found.get("REF"), lm=found.get("LM"), eyes=tuple(eyes))
    starter = imports.ref or imports.lm
    if starter is not None:
        starter.require_eyes(eyes)
    for eye, (rx, _source, reading) in imports.starts().items():
        check_in_range(rx, f"{reading.source_file} {eye} (the starting prescription)")
    return imports


def _truth_around(case, reading_rx: Prescription) -> Prescription:
    """The simulated correction placed around ``reading_rx`` (module docstring)."""
    if case.start_rx is None:
        return reading_rx
    error = case.start_rx.power_vector_array() - case.true_rx.power_vector_array()
    truth = PowerVector(*(reading_rx.power_vector_array() - error)).to_prescription()
    check_in_range(truth, "the simulated patient's correction around the imported reading")
    return truth


def simulated_cases_with_imports(cases: dict, imports: VisitImport, *, given_truths=(), gp: bool = False) -> dict:
    """``cases`` (``{eye: PatientCase}``) with each imported start: the start is the file's reading with
    its source; the correction is moved around it (module docstring) unless the eye's was given
    (``given_truths``) or the protocol is a GP one (its patient lives at a fixed axis: start only)."""
    out = dict(cases)
    for eye, (rx, source, _reading) in imports.starts().items():
        case = out[eye]
        changes = {"start_rx": rx, "start_source": source}
        if eye not in given_truths and not gp:
            changes["true_rx"] = _truth_around(case, rx)
        out[eye] = dataclasses.replace(case, **changes)
    return out


def start_form_texts(reading: InstrumentReading) -> dict:
    """What the app's start form shows for ``reading``: ``{"OD": (sphere, cylinder, axis), "OS": ...}``
    as texts (``"-2.25"``, ``"-0.75"``, ``"175"``; the eyes the file measured) and ``"source"``, the
    start's source in the form's terms (``autorefraction`` for a REF, ``spectacles`` for an LM)."""
    out: dict = {"source": "autorefraction" if reading.kind == "REF" else "spectacles"}
    for eye, rx in reading.lenses.items():
        axis = f"{rx.axis_deg:.0f}" if float(rx.axis_deg).is_integer() else f"{rx.axis_deg:g}"
        out[eye] = (f"{rx.sphere_d:+.2f}", f"{rx.cylinder_d:+.2f}", axis)
    return out
