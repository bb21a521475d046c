"""The clinic's archive settings (``archive.toml`` / ``.json``): destinations only from the file,
every bad value refused naming the file and the key; and the log table of sends, append-only."""

from __future__ import annotations

import json
import sqlite3

import pytest

from visiontune.cli import main
from visiontune.errors import ConfigurationError, InvalidInputError, SessionError
from visiontune.report.archive_config import (
    DicomDestination,
    default_archive_config_path,
    load_archive_config,
)
from visiontune.session.archive_sends import archive_sends, record_archive_send
from visiontune.session.store import TrialStore

GOOD = """\
[dicom]
host = "pacs.clinic.example"
port = 11112
called_ae_title = " PACS "
calling_ae_title = "VISIONTUNE"

[fhir]
base_url = "https://fhir.clinic.example/r4/"
timeout_s = 12.5
"""


def _write(tmp_path, text: str, name: str = "archive.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_full_file_reads_as_written(tmp_path):
    config = load_archive_config(_write(tmp_path, GOOD))
    assert config.dicom == DicomDestination("pacs.clinic.example", 11112, "PACS", "VISIONTUNE", 30.0)
    assert config.dicom.where() == "PACS@pacs.clinic.example:11112"
    assert (config.fhir.base_url, config.fhir.timeout_s) == ("https://fhir.clinic.example/r4", 12.5)


def test_json_file_and_one_section(tmp_path):
    path = _write(tmp_path, json.dumps({"fhir": {"base_url": "http://127.0.0.1:8080/fhir"}}), "archive.json")
    config = load_archive_config(path)
    assert config.dicom is None and config.fhir.where() == "http://127.0.0.1:8080/fhir"


def test_default_place_is_beside_the_app_settings():
    from visiontune.app.logic.settings import default_settings_path

    assert default_archive_config_path() == default_settings_path().with_name("archive.toml")


@pytest.mark.parametrize(
    "change, message",
    [
        (("port = 11112", "port = 0"), r"dicom\.port: expected a TCP port"),
        (("port = 11112", 'port = "104"'), r"dicom\.port: expected a TCP port"),
        (('" PACS "', '"A_TITLE_LONGER_THAN_16"'), r"dicom\.called_ae_title: expected a DICOM AE title"),
        (('" PACS "', '"PA\\\\CS"'), r"dicom\.called_ae_title: expected a DICOM AE title"),
        (('" PACS "', '"   "'), r"dicom\.called_ae_title: expected a non-empty text"),
        (('"pacs.clinic.example"', '"pacs clinic"'), r"dicom\.host: expected a host name"),
        (("https://fhir.clinic.example/r4/", "ftp://fhir.clinic.example"), r"fhir\.base_url: expected an http"),
        (("https://fhir.clinic.example/r4/", "https://user:pw@fhir.example/r4"), r"fhir\.base_url: .*credentials"),
        (("timeout_s = 12.5", "timeout_s = -1"), r"fhir\.timeout_s: expected seconds"),
        (("timeout_s = 12.5", "timeout_s = 12.5\nverify = false"), r"\[fhir\]: unknown key\(s\) verify"),
        (("[dicom]", "[pacs]"), r"unknown section\(s\) pacs"),
        (("[dicom]", "[dicom"), r"not a TOML file"),
    ],
)
def test_bad_settings_are_refused_naming_file_and_key(tmp_path, change, message):
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ConfigurationError, match=message) as info:
        load_archive_config(path)
    assert str(path) in str(info.value)


def test_missing_or_empty_file_sends_nothing(tmp_path):
    with pytest.raises(ConfigurationError, match="no archive configured: .* does not exist.*nothing was sent"):
        load_archive_config(tmp_path / "archive.toml")
    with pytest.raises(ConfigurationError, match="no destination"):
        load_archive_config(_write(tmp_path, ""))


def test_send_without_a_kind_or_a_log_is_refused(tmp_path, capsys):
    config = _write(tmp_path, GOOD)
    assert main(["visit", "send", "1", "--db", str(tmp_path / "log.sqlite3"), "--archive-config", str(config)]) == 2
    assert "nothing to send: give --dicom and/or --fhir" in capsys.readouterr().err
    assert (
        main(["visit", "send", "1", "--db", str(tmp_path / "none.sqlite3"), "--dicom", "--archive-config", str(config)])
        == 2
    )
    assert "no trial log at" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite3").exists()


def test_send_rows_are_append_only_and_checked(tmp_path):
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        store.create_patient("P-1")
        vid = store.create_visit("P-1")
        row = record_archive_send(store, vid, "dicom", "PACS@127.0.0.1:104", "started", {"objects": ["a.dcm"]})
        assert (row.what, row.status, row.detail) == ("dicom", "started", {"objects": ["a.dcm"]})
        with pytest.raises(InvalidInputError, match="status: expected one of started, sent, failed"):
            record_archive_send(store, vid, "dicom", "PACS@127.0.0.1:104", "done")
        with pytest.raises(InvalidInputError, match="what: expected one of dicom, fhir"):
            record_archive_send(store, vid, "email", "x", "sent")
        with pytest.raises(SessionError, match=f"no visit {vid + 1}"):
            record_archive_send(store, vid + 1, "dicom", "x", "sent")
    conn = sqlite3.connect(db)
    for sql in ("UPDATE visit_archive_sends SET status = 'sent'", "DELETE FROM visit_archive_sends"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(sql)
    conn.close()
    with TrialStore.open(db, read_only=True) as store:
        assert [s.status for s in archive_sends(store, vid)] == ["started"]


def test_no_destination_means_no_connection_attempt(tmp_path, monkeypatch, capsys):
    """Nothing leaves the machine without the clinic's destination: with every socket connection
    refused by the test, a send without settings, or asking for a kind they lack, never tries."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    db = tmp_path / "log.sqlite3"
    with TrialStore.open(db) as store:
        store.create_patient("P-1")
        store.create_visit("P-1")
    fhir_only = _write(tmp_path, '[fhir]\nbase_url = "http://127.0.0.1:9/fhir"\n')
    for config, kind in ((tmp_path / "none.toml", "--dicom"), (fhir_only, "--dicom")):
        assert main(["visit", "send", "1", "--db", str(db), kind, "--archive-config", str(config)]) == 2
        assert "nothing was sent" in capsys.readouterr().err
    with TrialStore.open(db, read_only=True) as store:
        assert archive_sends(store, 1) == []
