"""Independent encoders of instrument files, for the tests (not the reader's code, not a writer of ours).

* :func:`joia_xml`: a JOIA "Ophthalmology XML" built with ``xml.etree`` element by element after
  the structure of the sample files (Topcon CV-5000 / CL-300 samples, Nidek/Topcon REF ``List`` /
  ``Median`` blocks): root ``Ophthalmology`` with the JOIA namespaces declared, ``nsCommon:Common``,
  one ``Measure type="REF"`` or ``type="LM"`` in its namespace.
* :func:`dicom_measurements`: a DICOM Autorefraction (``...78.2``) or Lensometry (``...78.1``)
  Measurements object, pydicom ``Dataset`` filled attribute by attribute per the IOD's modules
  (PS3.3 A.60), checked with ``dciodvfy`` in the tests.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

NS = {
    "nsCommon": "http://www.joia.or.jp/standardized/namespaces/Common",
    "nsREF": "http://www.joia.or.jp/standardized/namespaces/REF",
    "nsLM": "http://www.joia.or.jp/standardized/namespaces/LM",
    "nsKM": "http://www.joia.or.jp/standardized/namespaces/KM",
}
XSI = "http://www.w3.org/2001/XMLSchema-instance"
for _prefix, _uri in (*NS.items(), ("xsi", XSI)):
    ET.register_namespace(_prefix, _uri)


def _q(prefix: str, name: str) -> str:
    return f"{{{NS[prefix]}}}{name}"


def _sub(parent, prefix: str, name: str, text=None, **attrib):
    el = ET.SubElement(parent, _q(prefix, name), {k: str(v) for k, v in attrib.items()})
    if text is not None:
        el.text = str(text)
    return el


def _fmt(x) -> str:
    return x if isinstance(x, str) else f"{x:+.2f}" if isinstance(x, float) else str(x)


def _lens(parent, ns: str, sphere, cylinder, axis, extra: dict | None = None):
    _sub(parent, ns, "Sphere", _fmt(sphere), unit="D")
    if cylinder is not None:
        _sub(parent, ns, "Cylinder", _fmt(cylinder), unit="D")
    if axis is not None:
        _sub(parent, ns, "Axis", axis if isinstance(axis, str) else f"{axis:g}", unit="deg")
    for name, (value, unit) in (extra or {}).items():
        _sub(parent, ns, name, value, unit=unit)


def joia_xml(
    kind: str,
    eyes: dict,
    *,
    company="NIDEK",
    model="ARK-1",
    date="2026-11-27",
    time="09:41:07",
    cylinder_mode="-",
    pd=None,
    pd_r=None,
    pd_l=None,
    adds=None,
    lists=None,
    median=True,
    root_name="Ophthalmology",
    ref_block=True,
) -> bytes:
    """A JOIA XML document. ``eyes``: ``{"R": (S, C, A), "L": ...}`` (the representative value of a REF,
    the lens of an LM); ``lists``: ``{"R": [(S, C, A), ...]}`` single REF measurements; ``median``:
    write the REF ``Median``; ``adds``: ``{"R": add}`` (LM); values may be strings, written as is."""
    root = ET.Element(root_name)
    root.set(f"{{{XSI}}}schemaLocation", " ".join(f"{NS[p]} {p[2:]}_schema.xsd" for p in ("nsCommon", "nsREF", "nsLM")))
    common = _sub(root, "nsCommon", "Common")
    _sub(common, "nsCommon", "Company", company)
    _sub(common, "nsCommon", "ModelName", model)
    _sub(common, "nsCommon", "MachineNo", "1234")
    _sub(common, "nsCommon", "ROMVersion", "1.00")
    _sub(common, "nsCommon", "Version", "1.2")
    if date is not None:
        _sub(common, "nsCommon", "Date", date)
    if time is not None:
        _sub(common, "nsCommon", "Time", time)
    patient = _sub(common, "nsCommon", "Patient")
    _sub(patient, "nsCommon", "No.", "12")
    _sub(patient, "nsCommon", "ID", "12")
    ns = "nsREF" if kind == "REF" else "nsLM"
    measure = _sub(root, ns, "Measure", type=kind)
    _sub(measure, ns, "MeasureMode", "Normal" if kind == "REF" else "Single")
    _sub(measure, ns, "DiopterStep", "0.25", unit="D")
    _sub(measure, ns, "AxisStep", "1", unit="deg")
    if cylinder_mode is not None:
        _sub(measure, ns, "CylinderMode", cylinder_mode)
    if kind == "REF":
        _sub(measure, ns, "VD", "12.00", unit="mm")
        block = _sub(measure, ns, "REF") if ref_block else measure
        for side in ("R", "L"):
            if side not in eyes and side not in (lists or {}):
                continue
            eye = _sub(block, ns, side)
            for i, (s, c, a) in enumerate((lists or {}).get(side, []), start=1):
                item = _sub(eye, ns, "List", No=i)
                _lens(item, ns, s, c, a, {"ConfidenceIndex": ("9", "")})
            if median and side in eyes:
                _lens(_sub(eye, ns, "Median"), ns, *eyes[side])
    else:
        lm = _sub(measure, ns, "LM")
        _lens(_sub(lm, ns, "S"), ns, "", "", "")  # the single-lens block, empty as the devices write it
        for side in ("R", "L"):
            if side in eyes:
                add = (adds or {}).get(side)
                extra = {} if add is None else {"ADD": (_fmt(add), "D")}
                _lens(_sub(lm, ns, side), ns, *eyes[side], extra)
    if pd is not None or pd_r is not None:
        block = _sub(measure, ns, "PD")
        if pd is not None:
            _sub(block, ns, "Distance", pd, unit="mm")
        if pd_r is not None:
            _sub(block, ns, "DistanceR", pd_r, unit="mm")
            _sub(block, ns, "DistanceL", pd_l, unit="mm")
        _sub(block, ns, "Near", None, unit="mm")
    out = io.BytesIO()
    ET.ElementTree(root).write(out, encoding="UTF-8", xml_declaration=True)
    return out.getvalue()


AR_SOP = "1.2.840.10008.5.1.4.1.1.78.2"
LM_SOP = "1.2.840.10008.5.1.4.1.1.78.1"


def dicom_measurements(
    kind: str,
    eyes: dict,
    *,
    adds=None,
    pd=None,
    manufacturer="TOPCON",
    model="KR-800",
    sop_class=None,
    content_date="20261127",
    content_time="094107",
) -> bytes:
    """A Part 10 DICOM Autorefraction (``kind="REF"``) or Lensometry (``"LM"``) Measurements object.
    ``eyes``: ``{"OD": (S, C, A), "OS": ...}``; ``adds``: ``{"OD": add}`` (LM Add Near)."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    sop = sop_class or (AR_SOP if kind == "REF" else LM_SOP)
    ds = Dataset()
    ds.SpecificCharacterSet = "ISO_IR 100"
    # SOP Common (C.12.1)
    ds.SOPClassUID = sop
    ds.SOPInstanceUID = generate_uid(entropy_srcs=["instance", kind, str(eyes)])
    # Patient (C.7.1.1)
    ds.PatientName = "TEST^PATIENT"
    ds.PatientID = "P-0001"
    ds.PatientBirthDate = ""
    ds.PatientSex = ""
    # General Study (C.7.2.1)
    ds.StudyInstanceUID = generate_uid(entropy_srcs=["study", kind])
    ds.StudyDate, ds.StudyTime = content_date, content_time
    ds.ReferringPhysicianName = ""
    ds.StudyID = "1"
    ds.AccessionNumber = ""
    # General Series (C.7.3.1) and the Autorefraction / Lensometry Measurements Series: Modality AR / LEN
    ds.Modality = "AR" if kind == "REF" else "LEN"
    ds.SeriesInstanceUID = generate_uid(entropy_srcs=["series", kind])
    ds.SeriesNumber = 1
    # General Equipment (C.7.5.1), Enhanced General Equipment (C.7.5.2)
    ds.Manufacturer = manufacturer
    ds.ManufacturerModelName = model
    ds.DeviceSerialNumber = "SN-0001"
    ds.SoftwareVersions = "1.0"
    # General Ophthalmic Refractive Measurements
    ds.InstanceNumber = 1
    ds.ContentDate, ds.ContentTime = content_date, content_time
    ds.MeasurementLaterality = "B" if len(eyes) == 2 else ("R" if "OD" in eyes else "L")
    names = (
        {"OD": "AutorefractionRightEyeSequence", "OS": "AutorefractionLeftEyeSequence"}
        if kind == "REF"
        else {"OD": "RightLensSequence", "OS": "LeftLensSequence"}
    )
    for eye, (s, c, a) in eyes.items():
        item = Dataset()
        item.SpherePower = s
        cyl = Dataset()
        cyl.CylinderPower = c
        cyl.CylinderAxis = a
        item.CylinderSequence = [cyl]
        if kind == "LM":
            # Lens Segment Type (0046,0038): enumerated values PROGRESSIVE, NONPROGRESSIVE (PS3.3 C.8.29.1)
            item.LensSegmentType = "PROGRESSIVE" if (adds or {}).get(eye) else "NONPROGRESSIVE"
            if (adds or {}).get(eye) is not None:
                near = Dataset()
                near.AddPower = adds[eye]
                near.ViewingDistance = 0.4
                item.AddNearSequence = [near]
        setattr(ds, names[eye], [item])
    if kind == "LM":
        ds.LensDescription = "habitual spectacles"  # Type 2 of the Lensometry Measurements module
    if pd is not None:  # in the Autorefraction Measurements module only
        ds.DistancePupillaryDistance = pd
    ds.file_meta = FileMetaDataset()
    ds.file_meta.MediaStorageSOPClassUID = sop
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    out = io.BytesIO()
    ds.save_as(out, enforce_file_format=True)
    return out.getvalue()
