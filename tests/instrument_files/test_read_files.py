"""Instrument files read: JOIA XML and DICOM measurements written by the independent encoders
(:mod:`encoders`), their values read back, and every kind of bad file refused with a message
naming the file, the element and what is wrong."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime

import numpy as np
import pytest
from encoders import AR_SOP, LM_SOP, dicom_measurements, joia_xml

from visiontune.errors import InvalidInputError
from visiontune.instrument_files import read_instrument_file
from visiontune.optics import Prescription

REF_EYES = {"R": (-1.25, -0.50, 180), "L": (-2.00, -0.75, 90)}
DICOM_EYES = {"OD": (-1.25, -0.50, 180.0), "OS": (+0.75, +1.25, 35.0)}


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refused(tmp_path, name: str, data: bytes, *needles, **kw):
    with pytest.raises(InvalidInputError) as err:
        read_instrument_file(_write(tmp_path, name, data), **kw)
    message = str(err.value)
    assert name in message, message
    for needle in needles:
        assert needle in message, message
    return message


# --- JOIA XML ------------------------------------------------------------------------------
def test_joia_ref_median_device_pd_and_time(tmp_path):
    data = joia_xml("REF", REF_EYES, lists={"R": [(-1.25, -0.5, 178), (-1.5, -0.5, 2), (-1.25, -0.75, 180)]}, pd=63.5)
    r = read_instrument_file(_write(tmp_path, "ark.xml", data))
    assert r.kind == "REF" and r.file_format == "JOIA XML"
    assert r.lenses["OD"] == Prescription(-1.25, -0.50, 180) and r.lenses["OS"] == Prescription(-2.0, -0.75, 90)
    assert r.readings == {"OD": 3, "OS": 1}
    assert r.pd_mm == 63.5 and r.pd_od_mm is None
    assert (r.maker, r.model) == ("NIDEK", "ARK-1")
    assert r.measured_at == datetime(2026, 11, 27, 9, 41, 7)
    assert r.source == "autorefraction (NIDEK ARK-1, ark.xml)"


def test_joia_ref_without_median_takes_the_power_vector_median(tmp_path):
    """Oracle: the component-wise median of (M, J0, J45) computed here from Thibos' formulas."""
    singles = [(-1.00, -0.50, 170), (-1.25, -0.75, 5), (-1.50, -0.50, 180)]
    data = joia_xml("REF", {}, lists={"R": singles, "L": [(-2.0, -0.5, 90)]}, median=False)
    r = read_instrument_file(_write(tmp_path, "nomedian.xml", data))
    pv = []
    for s, c, a in singles:
        t = np.deg2rad(2 * a)
        pv.append([s + c / 2, -c / 2 * np.cos(t), -c / 2 * np.sin(t)])
    want = np.median(np.array(pv), axis=0)
    got = r.lenses["OD"].power_vector_array()
    assert np.allclose(got, want, atol=1e-9)
    assert r.lenses["OD"].cylinder_d <= 0  # the file's minus-cylinder form
    assert r.readings["OD"] == 3
    assert r.lenses["OS"] == Prescription(-2.0, -0.5, 90)


def test_joia_ref_eyes_directly_in_measure_and_plus_cylinder_and_decimal_comma(tmp_path):
    data = joia_xml(
        "REF", {"R": ("0,25", "+1,50", 90), "L": ("-0,50", "+0,75", 180)}, cylinder_mode="+", ref_block=False
    )
    r = read_instrument_file(_write(tmp_path, "cv.xml", data))
    assert r.lenses["OD"] == Prescription(0.25, 1.50, 90)
    assert r.lenses["OD"].is_equivalent(Prescription(1.75, -1.50, 180))
    assert r.lenses["OS"] == Prescription(-0.5, 0.75, 180)


def test_joia_lm_lenses_adds_and_monocular_pd(tmp_path):
    data = joia_xml(
        "LM",
        REF_EYES,
        adds={"R": 2.25, "L": 2.25},
        pd=63.0,
        pd_r=31.5,
        pd_l=31.5,
        company="TOPCON",
        model="CL-300",
        date="2026/11/27",
        time="10:02",
    )
    r = read_instrument_file(_write(tmp_path, "cl300.xml", data))
    assert r.kind == "LM"
    assert r.lenses == {"OD": Prescription(-1.25, -0.5, 180), "OS": Prescription(-2.0, -0.75, 90)}
    assert r.adds == {"OD": 2.25, "OS": 2.25}
    assert (r.pd_mm, r.pd_od_mm, r.pd_os_mm) == (63.0, 31.5, 31.5)
    assert r.measured_at == datetime(2026, 11, 27, 10, 2)
    assert r.source == "lensmeter (TOPCON CL-300, cl300.xml)"


def test_joia_axis_zero_is_stored_as_180(tmp_path):
    r = read_instrument_file(_write(tmp_path, "a0.xml", joia_xml("REF", {"R": (-1.0, -0.5, 0), "L": (-1.0, 0.0, 0)})))
    assert r.lenses["OD"].axis_deg == 180.0


# --- DICOM ---------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("dciodvfy") is None, reason="dicom3tools' dciodvfy not installed")
@pytest.mark.parametrize("kind, adds", [("REF", None), ("LM", {"OD": 2.0, "OS": 2.0}), ("LM", {"OD": 2.0}), ("LM", {})])
def test_the_encoder_writes_valid_objects(tmp_path, kind, adds):
    """The test files themselves: dciodvfy finds no error and no warning in them (progressive and
    single-vision lenses: Lens Segment Type PROGRESSIVE / NONPROGRESSIVE)."""
    data = dicom_measurements(kind, DICOM_EYES, adds=adds, pd=63.0 if kind == "REF" else None)
    path = _write(tmp_path, f"{kind}.dcm", data)
    out = subprocess.run(["dciodvfy", str(path)], capture_output=True, text=True, timeout=60, check=False)
    report = out.stdout + out.stderr
    assert "Error" not in report and "Warning" not in report, report
    assert ("AutorefractionMeasurements" if kind == "REF" else "LensometryMeasurements") in report


def test_dicom_autorefraction_read_back(tmp_path):
    r = read_instrument_file(_write(tmp_path, "kr.dcm", dicom_measurements("REF", DICOM_EYES, pd=62.0)))
    assert r.kind == "REF" and r.file_format == "DICOM"
    assert r.lenses == {"OD": Prescription(-1.25, -0.5, 180), "OS": Prescription(0.75, 1.25, 35)}
    assert r.pd_mm == 62.0
    assert (r.maker, r.model) == ("TOPCON", "KR-800")
    assert r.measured_at == datetime(2026, 11, 27, 9, 41, 7)


def test_dicom_lensometry_read_back(tmp_path):
    r = read_instrument_file(_write(tmp_path, "len.dcm", dicom_measurements("LM", DICOM_EYES, adds={"OD": 1.75})))
    assert r.kind == "LM" and r.adds == {"OD": 1.75}
    assert r.lenses["OS"] == Prescription(0.75, 1.25, 35)


# --- refusals ------------------------------------------------------------------------------
def test_not_xml_nor_dicom(tmp_path):
    _refused(tmp_path, "notes.txt", b"S -1.25 C -0.50 x 180\n", "neither a JOIA XML file")


def test_empty_file(tmp_path):
    _refused(tmp_path, "empty.xml", b"", "empty")


def test_truncated_xml(tmp_path):
    data = joia_xml("REF", REF_EYES)
    _refused(tmp_path, "cut.xml", data[: len(data) // 2], "not well-formed XML", "truncated")


def test_wrong_root(tmp_path):
    _refused(
        tmp_path,
        "root.xml",
        joia_xml("REF", REF_EYES, root_name="Refraction"),
        "root element <Refraction>",
        "Ophthalmology",
    )


def test_no_ref_or_lm_measure(tmp_path):
    data = joia_xml("REF", REF_EYES).replace(b'type="REF"', b'type="KM"')
    _refused(tmp_path, "km.xml", data, "no REF or LM Measure", "KM")


def test_missing_eye_refused_when_required(tmp_path):
    data = joia_xml("REF", {"R": REF_EYES["R"]})
    msg = _refused(tmp_path, "one.xml", data, "left eye (L)", require_eyes=("OD", "OS"))
    assert "REF reading" in msg
    assert read_instrument_file(tmp_path / "one.xml").lenses.keys() == {"OD"}  # one eye is fine when not required


def test_no_eye_at_all(tmp_path):
    _refused(tmp_path, "none.xml", joia_xml("REF", {}), "no measurement of either eye")


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("NaN", "'NaN' is not a number"),
        ("abc", "'abc' is not a number"),
        ("inf", "'inf' is not a number"),
        ("-1.2.5", "is not a number"),
    ],
)
def test_text_or_nan_where_a_number_is_expected(tmp_path, bad, needle):
    data = joia_xml("REF", {"R": (bad, -0.5, 180), "L": REF_EYES["L"]})
    _refused(tmp_path, "bad.xml", data, "Measure(REF)/REF/R/Median/Sphere", needle)


def test_axis_out_of_range(tmp_path):
    _refused(
        tmp_path,
        "axis.xml",
        joia_xml("REF", {"R": (-1.0, -0.5, 200), "L": REF_EYES["L"]}),
        "R/Median axis",
        "200 degrees is not an axis",
    )


def test_implausible_sphere_and_cylinder(tmp_path):
    _refused(tmp_path, "s.xml", joia_xml("REF", {"R": (-45.0, -0.5, 10), "L": REF_EYES["L"]}), "sphere", "-45.00 D")
    _refused(tmp_path, "c.xml", joia_xml("REF", {"R": (-1.0, -14.0, 10), "L": REF_EYES["L"]}), "cylinder", "-14.00 D")


def test_cylinder_against_the_files_cylinder_mode(tmp_path):
    _refused(
        tmp_path,
        "mode.xml",
        joia_xml("REF", {"R": (-1.0, +0.5, 10), "L": REF_EYES["L"]}, cylinder_mode="-"),
        "R/Median/Cylinder",
        "contradicts the file's CylinderMode '-'",
    )


def test_cylinder_without_axis(tmp_path):
    _refused(tmp_path, "noaxis.xml", joia_xml("REF", {"R": (-1.0, -0.5, None), "L": REF_EYES["L"]}), "needs its axis")


def test_wrong_unit(tmp_path):
    data = joia_xml("REF", REF_EYES).replace(b'<nsREF:Sphere unit="D">-1.25', b'<nsREF:Sphere unit="mm">-1.25')
    _refused(tmp_path, "unit.xml", data, "R/Median/Sphere", "unit 'mm', expected 'D'")


def test_implausible_add_and_pd(tmp_path):
    _refused(tmp_path, "add.xml", joia_xml("LM", REF_EYES, adds={"R": 7.0}), "R/ADD", "not a near addition")
    _refused(tmp_path, "pd.xml", joia_xml("REF", REF_EYES, pd=120), "Measure(REF)/PD", "120 mm")


def test_bad_date(tmp_path):
    _refused(tmp_path, "date.xml", joia_xml("REF", REF_EYES, date="27th Nov"), "Common/Date", "not a date")


def test_doctype_refused(tmp_path):
    data = joia_xml("REF", REF_EYES).replace(b"?>", b'?><!DOCTYPE x [<!ENTITY a "aaaa">]>', 1)
    _refused(tmp_path, "dtd.xml", data, "DOCTYPE")


def test_dicom_of_another_sop_class(tmp_path):
    ct = "1.2.840.10008.5.1.4.1.1.2"
    _refused(
        tmp_path,
        "ct.dcm",
        dicom_measurements("REF", DICOM_EYES, sop_class=ct),
        ct,
        "CT Image Storage",
        "expected Autorefraction",
    )


def test_dicom_truncated(tmp_path):
    """Cut inside an element: refused as truncated, naming the element. Cut anywhere: refused with
    an InvalidInputError or, cut exactly between elements, read with fewer eyes (never a crash)."""
    data = dicom_measurements("REF", DICOM_EYES, pd=63.0)
    _refused(tmp_path, "cut.dcm", data[:-3], "truncated DICOM file", "(0046,0060)", "needs 8 bytes")
    _refused(tmp_path, "stub.dcm", data[:100], "truncated")
    for cut in range(132, len(data), 7):
        try:
            reading = read_instrument_file(_write(tmp_path, "cut.dcm", data[:cut]))
        except InvalidInputError as exc:
            assert "cut.dcm" in str(exc)
        else:
            assert len(reading.lenses) < 2 or reading.pd_mm is None


def test_dicom_nan_and_missing_sphere(tmp_path):
    _refused(
        tmp_path,
        "nan.dcm",
        dicom_measurements("REF", {"OD": (float("nan"), -0.5, 180.0)}),
        "AutorefractionRightEyeSequence sphere",
        "finite",
    )
    _refused(
        tmp_path,
        "axis.dcm",
        dicom_measurements("LM", {"OD": (-1.0, -0.5, 181.0)}),
        "RightLensSequence axis",
        "not an axis",
    )


def test_dicom_meta_and_dataset_class_disagree(tmp_path):
    """The file meta's Media Storage SOP Class (the first UID written) says Lensometry, the dataset
    Autorefraction (same length, so only that byte changes)."""
    data = dicom_measurements("REF", DICOM_EYES)
    mixed = data.replace(AR_SOP.encode(), LM_SOP.encode(), 1)
    assert mixed != data
    _refused(tmp_path, "mixed.dcm", mixed, "disagrees")


def test_a_directory_and_a_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="no such file"):
        read_instrument_file(tmp_path / "absent.xml")
    with pytest.raises(InvalidInputError, match="a directory"):
        read_instrument_file(tmp_path)


def test_pd_ranges_are_the_trial_logs():
    """The reader checks the pupillary distance with the ranges the trial log checks again."""
    from visiontune.instrument_files import reading
    from visiontune.session import visit_records

    assert reading.PD_RANGE_MM == visit_records.PD_RANGE_MM
    assert reading.MONOCULAR_PD_RANGE_MM == visit_records.MONOCULAR_PD_RANGE_MM


def test_monocular_pd_alone_gives_the_binocular(tmp_path):
    data = joia_xml("LM", REF_EYES, pd_r=31.0, pd_l=32.5)
    r = read_instrument_file(_write(tmp_path, "mono.xml", data))
    assert (r.pd_mm, r.pd_od_mm, r.pd_os_mm) == (63.5, 31.0, 32.5)
    _refused(tmp_path, "mono2.xml", joia_xml("LM", REF_EYES, pd=60, pd_r=31.0, pd_l=32.5), "not the sum")


@pytest.mark.parametrize("seed", range(4))
def test_damaged_files_are_read_or_refused_never_a_crash(tmp_path, seed):
    """Seeded byte flips, cuts and insertions in valid JOIA and DICOM files: each is read (a
    plausible reading) or refused with InvalidInputError naming the file; nothing else escapes."""
    rng = np.random.default_rng(seed)
    originals = [
        joia_xml("REF", REF_EYES, lists={"R": [(-1.25, -0.5, 178)]}, pd=63),
        joia_xml("LM", REF_EYES, adds={"R": 2.0, "L": 2.0}, pd_r=31.5, pd_l=31.5),
        dicom_measurements("REF", DICOM_EYES, pd=63.0),
        dicom_measurements("LM", DICOM_EYES, adds={"OD": 2.0}),
    ]
    for original in originals:
        for _ in range(60):
            data = bytearray(original)
            for _ in range(int(rng.integers(1, 4))):
                at = int(rng.integers(0, len(data)))
                what = int(rng.integers(0, 3))
                if what == 0:
                    data[at] = int(rng.integers(0, 256))
                elif what == 1:
                    del data[at : at + int(rng.integers(1, 40))]
                else:
                    data[at:at] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 8))).astype(np.uint8))
            path = _write(tmp_path, "fuzz.bin", bytes(data))
            try:
                reading = read_instrument_file(path)
            except InvalidInputError as exc:
                assert "fuzz.bin" in str(exc) and "\n" not in str(exc)
            else:
                for rx in reading.lenses.values():
                    assert abs(rx.sphere_d) <= 30 and abs(rx.cylinder_d) <= 12 and 0 < rx.axis_deg <= 180


def test_a_file_name_with_control_characters_is_quoted_on_one_line(tmp_path):
    path = tmp_path / "bad\nname\x1b[31m.xml"
    path.write_bytes(b"not xml at all")
    with pytest.raises(InvalidInputError) as err:
        read_instrument_file(path)
    assert "\n" not in str(err.value) and "\x1b" not in str(err.value) and "bad\\nname" in str(err.value)


def test_a_shift_jis_file_and_another_common_namespace(tmp_path):
    """Japanese devices may write Shift_JIS (expat cannot parse it: the reader decodes it first);
    some write the Common block in a vendor namespace (seen in Topcon CV-5000 samples)."""
    text = joia_xml("REF", REF_EYES, company="\u30cb\u30c7\u30c3\u30af", model="ARK-1").decode("utf-8")
    joia, vendor = (f"http://www.{host}/standardized/namespaces/Common" for host in ("joia.or.jp", "Topcon.or.jp"))
    text = text.replace("encoding='UTF-8'", "encoding='Shift_JIS'").replace(joia, vendor)
    r = read_instrument_file(_write(tmp_path, "sjis.xml", text.encode("shift_jis")))
    assert r.maker == "\u30cb\u30c7\u30c3\u30af" and r.lenses["OD"] == Prescription(-1.25, -0.5, 180)
    _refused(
        tmp_path,
        "badenc.xml",
        text.replace("Shift_JIS", "no-such-codec").encode("shift_jis"),
        "declared encoding 'no-such-codec'",
    )
