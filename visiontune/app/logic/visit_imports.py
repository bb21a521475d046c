"""What a visit started in the app took from an instrument file, as entries of the visit's inputs.

The start page's "Import from instrument..." (:mod:`visiontune.app.instrument_import`) fills the form
from an autorefractor's (REF) or lensmeter's (LM) file; the clinician may still edit any value. The
form sends, with the visit (:class:`~visiontune.app.logic.visit_flow.NewVisit`), an
:class:`ImportedStart`: the file's name and kind, the eyes whose typed start is still the file's
reading, and the PD text the file wrote. The engine records the visit's inputs
(:func:`~visiontune.session.visit_records.record_visit_inputs`) in two entries
(:func:`input_entries`): what is still the file's, with ``from_file`` (each such eye's start source,
the PD, and for an LM the habitual spectacles' source ``lensmeter``), and what was typed (an edited
eye, a PD typed over the file's, the examiner), as the headless ``visit run --import`` records
them (:meth:`visiontune.instrument_files.visit_import.VisitImport.input_entries`).

Qt-free: the pages and the engine import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from visiontune.errors import InvalidInputError
from visiontune.instrument_files.visit_import import start_form_texts

__all__ = ["ImportedStart", "imported_start", "input_entries"]

KINDS = ("REF", "LM")


@dataclass(frozen=True)
class ImportedStart:
    """The instrument file behind a visit's start form: ``file`` (its name, not its path), ``kind``
    (``"REF"`` or ``"LM"``), ``eyes`` (the eyes whose start fields still hold the file's reading,
    with the file's source chosen) and ``pd`` (the PD text the file wrote into the form, ``None``:
    none, or the clinician typed another)."""

    file: str
    kind: str
    eyes: tuple = ()
    pd: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInputError(f"imported file: kind expected REF or LM, got {self.kind!r}")
        if not isinstance(self.file, str) or not self.file.strip():
            raise InvalidInputError(f"imported file: expected the file's name, got {self.file!r}")
        if set(self.eyes) - {"OD", "OS"}:
            raise InvalidInputError(f"imported file: eyes expected OD / OS, got {self.eyes!r}")


def imported_start(reading, form_texts: dict, source: str, pd_text: str | None) -> ImportedStart | None:
    """The :class:`ImportedStart` of the start form as the clinician leaves it: ``reading`` the
    :class:`~visiontune.instrument_files.reading.InstrumentReading` imported last (``None``: no
    file), ``form_texts`` ``{eye: (sphere, cylinder, axis)}`` as typed now, ``source`` the start's
    source chosen now, ``pd_text`` the PD field now. An eye counts as the file's when its three texts
    equal those the import wrote and the source is still the file's; the PD when its text is the
    one the import wrote."""
    if reading is None:
        return None
    texts = start_form_texts(reading)
    same_source = source == texts["source"]
    eyes = tuple(
        e
        for e in ("OD", "OS")
        if same_source and e in texts and e in form_texts and tuple(t.strip() for t in form_texts[e]) == texts[e]
    )
    pd = None
    if reading.pd_mm is not None:
        written = f"{reading.pd_od_mm:g}/{reading.pd_os_mm:g}" if reading.pd_od_mm is not None else f"{reading.pd_mm:g}"
        pd = written if (pd_text or "").strip() == written else None
    return ImportedStart(reading.source_file, reading.kind, eyes, pd)


def input_entries(inputs: dict, imported: ImportedStart | None, pd_text: str | None) -> list[dict]:
    """:func:`~visiontune.session.visit_records.record_visit_inputs`' keyword arguments, one dict per
    entry: ``inputs`` (the typed ones the engine checked: ``pd_mm``..., ``examiner``,
    ``start_source_od``/``_os``, ``habitual_source``) split into the file's entry (first, with
    ``from_file``) and the typed one; empty entries left out. ``pd_text``: the PD as sent."""
    if imported is None:
        return [inputs] if inputs else []
    typed = dict(inputs)
    from_file: dict = {"from_file": imported.file}
    for eye in imported.eyes:
        key = f"start_source_{eye.lower()}"
        if key in typed:
            from_file[key] = typed.pop(key)
    if imported.kind == "LM" and typed.get("habitual_source") == "typed" and imported.eyes:
        typed.pop("habitual_source")
        from_file["habitual_source"] = "lensmeter"
    if imported.pd is not None and (pd_text or "").strip() == imported.pd and "pd_mm" in typed:
        for key in ("pd_mm", "pd_od_mm", "pd_os_mm"):
            if key in typed:
                from_file[key] = typed.pop(key)
    return [e for e in (from_file if len(from_file) > 1 else None, typed or None) if e]
