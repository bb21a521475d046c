"""No command writes over a file it did not create for that purpose: every output path
is checked against the user's files by identity (trial log and its -wal/-shm, calibration,
settings) and an existing file of another kind is refused, never replaced."""

import hashlib
import os

import pytest

from visiontune import output_guard
from visiontune.cli import main
from visiontune.display.calibration import Calibration, load_calibration, save_calibration
from visiontune.errors import CalibrationError, VisionTuneError
from visiontune.session.store import TrialStore

CALIBRATE = [
    "calibrate",
    "--width-mm",
    "597.9",
    "--height-mm",
    "336.3",
    "--resolution",
    "1920x1080",
    "--distance-mm",
    "6000",
]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def user_dirs(tmp_path, monkeypatch):
    """A data directory holding a real trial log, and config/data dirs of its own."""
    data = tmp_path / "data"
    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(data))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    with TrialStore.open(data / "visiontune.sqlite3") as store:
        store.create_patient("P1")
        store.create_session("P1", eye="OD", protocol=_protocol(), simulated=True, seed=1)
    return data / "visiontune.sqlite3"


def _protocol():
    from visiontune.refraction.protocol import load_protocol

    return load_protocol("clinical-sloan")


def test_calibrate_refuses_to_write_over_the_trial_log(user_dirs, capsys):
    before = _digest(user_dirs)
    assert main([*CALIBRATE, "--file", str(user_dirs)]) == 2
    err = capsys.readouterr().err
    assert "trial log" in err and "never written over" in err
    assert _digest(user_dirs) == before
    with TrialStore.open(user_dirs) as store:
        assert [s.patient_id for s in store.list_sessions()] == ["P1"]


@pytest.mark.parametrize("how", ["hard link", "symlink", "relative spelling"])
def test_the_trial_log_is_recognised_by_identity_not_by_name(user_dirs, tmp_path, monkeypatch, how):
    other = tmp_path / "elsewhere.json"
    if how == "hard link":
        os.link(user_dirs, other)
    elif how == "symlink":
        other.symlink_to(user_dirs)
    else:
        monkeypatch.chdir(user_dirs.parent)
        other = user_dirs.parent / "." / user_dirs.name
    before = _digest(user_dirs)
    with pytest.raises(CalibrationError, match="is the trial log"):
        save_calibration(Calibration(597.9, 336.3, 1920, 1080, 6000.0), other)
    assert _digest(user_dirs) == before


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_the_companions_of_a_trial_log_are_protected(tmp_path, suffix):
    log = tmp_path / "log.sqlite3"
    companion = tmp_path / f"log.sqlite3{suffix}"
    companion.write_bytes(b'{"schema": "x"}')  # of the kind written, and still refused
    with pytest.raises(VisionTuneError, match="trial log"):
        output_guard.write_output(companion, b"{}", output_guard.EXPORT_JSON, protected=[log])
    assert companion.read_bytes() == b'{"schema": "x"}'


def test_the_settings_are_protected_from_the_calibration_writer(user_dirs):
    settings = output_guard.user_files()["settings"]
    settings.parent.mkdir(parents=True)
    settings.write_text("")  # empty: of any kind, so only its identity protects it
    with pytest.raises(CalibrationError, match="is the settings"):
        save_calibration(Calibration(597.9, 336.3, 1920, 1080, 6000.0), settings)


def test_calibrate_replaces_a_calibration_and_nothing_else(user_dirs, tmp_path, capsys):
    cal = tmp_path / "cal.json"
    assert main([*CALIBRATE, "--file", str(cal)]) == 0
    assert main([*CALIBRATE[:-1], "5000", "--file", str(cal)]) == 0  # a calibration: replaced
    assert load_calibration(cal).viewing_distance_mm == 5000.0
    assert os.stat(cal).st_mode & 0o777 == 0o600
    notes = tmp_path / "notes.json"
    notes.write_text('{"patient": "P1"}')
    capsys.readouterr()
    assert main([*CALIBRATE, "--file", str(notes)]) == 2
    assert "not a VisionTune calibration" in capsys.readouterr().err
    assert notes.read_text() == '{"patient": "P1"}'


def test_the_default_calibration_is_the_calibration_writers_own(user_dirs):
    path = save_calibration(Calibration(597.9, 336.3, 1920, 1080, 6000.0))
    assert path == output_guard.user_files()["calibration"]
    save_calibration(Calibration(597.9, 336.3, 1920, 1080, 5000.0))
    assert load_calibration().viewing_distance_mm == 5000.0


@pytest.mark.parametrize(
    "kind,existing,allowed",
    [
        (output_guard.PDF, b"%PDF-1.4\n...", True),
        (output_guard.PDF, b"SQLite format 3\x00" + bytes(100), False),
        (output_guard.PDF, b"", True),
        (output_guard.CSV, b"session_id,trial_index\n1,0\n", True),
        (output_guard.CSV, b"# notes of a clinician\n", False),
        (output_guard.EXPORT_JSON, b'{"schema": "visiontune.session-export"}', True),
        (output_guard.EXPORT_JSON, b'{"screen_width_mm": 597.9}', False),
        (output_guard.EXPORT_JSON, b"\x89PNG\r\n\x1a\n", False),
        (output_guard.SIMULATION_JSON, b'{"simulated": true, "seed": 1}', True),
        (output_guard.SIMULATION_JSON, b'{"schema": "visiontune.session-export"}', False),
        (output_guard.VALIDATION_JSON, b'{"meta": {}, "tables": {}}', True),
        (output_guard.FHIR, b'{"resourceType": "Bundle"}', True),
        (output_guard.FHIR, b'{"a": 1}', False),
        (output_guard.PNG, b"\x89PNG\r\n\x1a\nxx", True),
        (output_guard.PNG, b"%PDF-1.4", False),
        (output_guard.DICOM, bytes(128) + b"DICM", True),
        (output_guard.DICOM, b"text", False),
    ],
)
def test_an_existing_file_is_replaced_only_by_one_of_its_kind(tmp_path, kind, existing, allowed):
    path = tmp_path / "out"
    path.write_bytes(existing)
    if allowed:
        assert output_guard.write_output(path, b"new", kind) == path
        assert path.read_bytes() == b"new" and os.stat(path).st_mode & 0o777 == 0o600
    else:
        with pytest.raises(VisionTuneError, match=f"not a {kind.name}; it is not replaced"):
            output_guard.write_output(path, b"new", kind)
        assert path.read_bytes() == existing


def test_the_message_says_what_the_existing_file_is(tmp_path):
    path = tmp_path / "x.pdf"
    path.write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(VisionTuneError, match=r"x.pdf exists and is a SQLite database"):
        output_guard.guard_output_path(path, output_guard.PDF, name="--pdf")


def test_the_trial_log_default_is_the_one_the_store_opens(tmp_path, monkeypatch):
    from visiontune.session.store import default_database_path

    monkeypatch.setenv("VISIONTUNE_DATA_DIR", str(tmp_path))
    assert default_database_path() == output_guard.user_files()["trial log"] == tmp_path / "visiontune.sqlite3"


# --- every writer calls the guard ----------------------------------------------------------


def _mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_simulate_json_is_user_only_and_never_over_the_trial_log(user_dirs, tmp_path, capsys, umask_000):
    out = tmp_path / "run.json"
    assert main(["simulate", "--trials", "6", "--seed", "3", "--quiet", "--json", str(out)]) == 0
    assert _mode(out) == 0o600 and [p.name for p in tmp_path.glob(".run.json*")] == []
    before = _digest(user_dirs)
    assert main(["simulate", "--trials", "6", "--seed", "3", "--quiet", "--json", str(user_dirs)]) == 2
    assert "is the trial log" in capsys.readouterr().err and _digest(user_dirs) == before


@pytest.mark.parametrize("target", ["/dev/full", "notes"])
def test_simulate_plot_refuses_a_device_or_another_kind_of_file(tmp_path, capsys, target):
    path = tmp_path / "notes.png" if target == "notes" else target
    if target == "notes":
        path.write_text("my notes")
    assert main(["simulate", "--trials", "6", "--seed", "2", "--quiet", "--plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--plot" in err and ("character device" in err or "not a PNG image" in err)
    if target == "notes":
        assert path.read_text() == "my notes"


def test_results_stores_are_user_only_and_refuse_a_trial_log(user_dirs, tmp_path, umask_000):
    from visiontune.errors import StoreError
    from visiontune.validation.clinic import ClinicStore
    from visiontune.validation.results_store import ResultsStore

    for store, name in ((ResultsStore, "bench.sqlite"), (ClinicStore, "validate.sqlite")):
        with store(tmp_path / "out" / name) as opened:
            assert _mode(opened.path) == 0o600 and _mode(tmp_path / "out") == 0o700
            assert all(_mode(p) == 0o600 for p in (tmp_path / "out").iterdir())  # -wal, -shm too
    copy = tmp_path / "another-log.sqlite3"  # a trial log that is not the default one: refused by kind
    copy.write_bytes(user_dirs.read_bytes())
    for store in (ResultsStore, ClinicStore):
        for path in (user_dirs, copy):
            before = _digest(path)
            with pytest.raises(StoreError, match="trial log|not a results store"):
                store(path)
            assert _digest(path) == before
    with pytest.raises(StoreError, match="not a results store"):
        ResultsStore(tmp_path / "out" / "validate.sqlite")  # the other store's database


def test_exports_refuse_the_trial_logs_companions_and_other_kinds(tmp_path):
    from visiontune.errors import InvalidInputError
    from visiontune.report.files import check_output_path

    log = tmp_path / "log.sqlite3"
    (tmp_path / "log.sqlite3-wal").write_bytes(b"")
    with pytest.raises(InvalidInputError, match="--pdf: .* is the trial log"):
        check_output_path("--pdf", tmp_path / "log.sqlite3-wal", (log,))
    notes = tmp_path / "notes.csv"
    notes.write_text("patient notes\n")
    with pytest.raises(InvalidInputError, match="--csv: .* not a CSV table; it is not replaced"):
        check_output_path("--csv", notes)
    dicom = tmp_path / "x.dcm"
    dicom.write_bytes(b"%PDF-1.7")
    with pytest.raises(InvalidInputError, match="--dicom-dir: .* is a PDF, not a DICOM file"):
        check_output_path("--dicom-dir", dicom)


def test_results_pages_are_user_only_and_never_over_another_kind(tmp_path, umask_000):
    from visiontune.errors import StoreError
    from visiontune.validation.results_store import write_results_file

    page = write_results_file(tmp_path / "bench.md", "# results\n", output_guard.MARKDOWN)
    assert _mode(page) == 0o600 and page.read_text() == "# results\n"
    figure = tmp_path / "regret.png"
    figure.write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(StoreError, match="regret.png exists and is a SQLite database"):
        write_results_file(figure, b"\x89PNG\r\n\x1a\n", output_guard.PNG)
    assert figure.read_bytes().startswith(b"SQLite")
