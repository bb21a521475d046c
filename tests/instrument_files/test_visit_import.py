"""``visiontune visit run --simulate --import FILE``: a visit started from the instrument's readings.

The files come from the independent encoders (:mod:`encoders`); the trial log is read back: each
eye's session starts from the file's reading with its source, the visit's inputs carry the PD and
the file's name, the LM gives the habitual spectacles; a bad file or a conflict writes nothing.
"""

from __future__ import annotations

import pytest
from encoders import dicom_measurements, joia_xml

from visiontune.cli import main
from visiontune.errors import InvalidInputError
from visiontune.instrument_files.visit_import import read_visit_imports
from visiontune.optics import Prescription
from visiontune.session.store import TrialStore
from visiontune.session.visit import eye_statuses
from visiontune.session.visit_records import visit_inputs

REF = {"R": (-2.25, -0.75, 175), "L": (-1.75, -0.50, 10)}
LM = {"R": (-2.00, -0.50, 180), "L": (-1.50, -0.50, 5)}


def _run(db, *extra) -> int:
    return main(
        ["visit", "run", "--simulate", "--seed", "3", "--quiet", "--no-near", "--no-balance", "--db", str(db), *extra]
    )


def _starts(store, vid=1) -> dict:
    out = {}
    for eye, link in store.visit_eyes(vid).items():
        if link.session_id is None:  # a skipped eye
            continue
        start = store.get_session(link.session_id).starting_rx
        out[eye] = (
            Prescription(start["rx"]["sphere_d"], start["rx"]["cylinder_d"], start["rx"]["axis_deg"]),
            start["source"],
        )
    return out


def test_visit_starts_from_a_joia_ref_file(tmp_path, capsys):
    ref = tmp_path / "ark.xml"
    ref.write_bytes(joia_xml("REF", REF, lists={"R": [(-2.25, -0.75, 175), (-2.5, -0.75, 178)]}, pd=64))
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--import", str(ref)) == 0
    err = capsys.readouterr().err
    assert "OD start S -2.25 / C -0.75 x 175 from autorefraction (NIDEK ARK-1, ark.xml)" in err
    with TrialStore.open(db, read_only=True) as store:
        assert _starts(store) == {
            "OD": (Prescription(-2.25, -0.75, 175), "autorefraction"),
            "OS": (Prescription(-1.75, -0.50, 10), "autorefraction"),
        }
        given = visit_inputs(store, 1)
        assert (given.pd_mm, given.pd_file) == (64.0, "ark.xml")
        assert given.start_source("OD") == given.start_source("OS") == "autorefraction"
        assert given.start_file("OD") == "ark.xml"
        assert all(s.finished for s in eye_statuses(store, 1).values())
        assert store.get_visit(1).habitual_od is None


def test_dicom_ref_and_joia_lm_together(tmp_path):
    ar = tmp_path / "kr.dcm"
    ar.write_bytes(dicom_measurements("REF", {"OD": (-2.25, -0.75, 175.0), "OS": (-1.75, +0.5, 100.0)}, pd=62.0))
    lm = tmp_path / "cl.xml"
    lm.write_bytes(joia_xml("LM", LM, adds={"R": 1.5, "L": 1.5}, pd=60, company="TOPCON", model="CL-300"))
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--import", str(lm), "--import", str(ar), "--skip-os", "patching") == 0
    with TrialStore.open(db, read_only=True) as store:
        assert _starts(store) == {"OD": (Prescription(-2.25, -0.75, 175), "autorefraction")}
        visit = store.get_visit(1)
        assert visit.habitual_od == Prescription(-2.0, -0.5, 180)
        assert visit.habitual_os.is_equivalent(Prescription(-1.5, -0.5, 5))
        given = visit_inputs(store, 1)
        assert (given.pd_mm, given.pd_file) == (62.0, "kr.dcm")  # the patient's PD, not the spectacles'
        assert (given.habitual_source, given.habitual_file) == ("lensmeter", "cl.xml")


def test_lm_alone_gives_the_start_from_the_spectacles(tmp_path):
    lm = tmp_path / "len.dcm"
    lm.write_bytes(dicom_measurements("LM", {"OD": (-2.0, -0.5, 180.0), "OS": (-1.5, -0.5, 5.0)}, adds={"OD": 2.0}))
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--import", str(lm), "--skip-os", "amblyopic") == 0
    with TrialStore.open(db, read_only=True) as store:
        assert _starts(store) == {"OD": (Prescription(-2.0, -0.5, 180), "spectacles")}
        given = visit_inputs(store, 1)
        assert given.start_source("OD") == "habitual spectacles" and given.start_file("OD") == "len.dcm"


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--start-rx", "OD -1 -0.5 x 90"], "gives the OD start already"),
        (["--max-steps", "3"], "--max-steps with --import"),
    ],
)
def test_conflicts_refused_before_anything_is_written(tmp_path, capsys, extra, needle):
    ref = tmp_path / "ark.xml"
    ref.write_bytes(joia_xml("REF", REF))
    db = tmp_path / "log.sqlite3"
    assert _run(db, "--import", str(ref), *extra) == 2
    assert needle in capsys.readouterr().err
    assert not db.exists()


def test_bad_files_refused_before_anything_is_written(tmp_path, capsys):
    db = tmp_path / "log.sqlite3"
    one_eye = tmp_path / "one.xml"
    one_eye.write_bytes(joia_xml("REF", {"R": REF["R"]}))
    two = tmp_path / "two.xml"
    two.write_bytes(joia_xml("REF", REF))
    far = tmp_path / "far.xml"
    far.write_bytes(joia_xml("REF", {"R": (-18.0, -1.0, 90), "L": REF["L"]}))
    nan = tmp_path / "nan.xml"
    nan.write_bytes(joia_xml("REF", {"R": ("NaN", -1.0, 90), "L": REF["L"]}))
    for files, needle in (
        ([one_eye], "one.xml: the file has no REF reading of the left eye (L)"),
        ([one_eye, two], "both REF files"),
        ([far], "far.xml OD (the starting prescription)"),
        ([nan], "nan.xml: Measure(REF)/REF/R/Median/Sphere: 'NaN' is not a number"),
    ):
        assert _run(db, *[a for f in files for a in ("--import", str(f))]) == 2
        assert needle in capsys.readouterr().err
    assert not db.exists()
    # a file with the right eye alone: refused for a visit of both eyes, enough for the right eye alone
    with pytest.raises(InvalidInputError):
        read_visit_imports([one_eye], eyes=("OD", "OS"))
    assert read_visit_imports([one_eye], eyes=("OD",)).start("OD")[1] == "autorefraction"
