"""The finish page's "Send to archive": shown once the visit is exported, it says where records go
(or that no archive is configured, and then sends nothing), sends to a real Storage SCP (dcmtk's
``storescp``) on the loopback without blocking the page, and lists what went where."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pydicom
import pytest
from PySide6.QtCore import Qt

from visiontune.app.logic.visit_host import VisitHost
from visiontune.app.visit_finish_view import VisitFinishView
from visiontune.cli import main
from visiontune.session.archive_sends import archive_sends
from visiontune.session.store import TrialStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from archive_servers import storescp

pytestmark = pytest.mark.skipif(shutil.which("storescp") is None, reason="dcmtk's storescp is not installed")


@pytest.fixture(scope="module")
def visit_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("visit") / "log.sqlite3"
    assert main(["visit", "run", "--simulate", "--seed", "5", "--quiet", "--db", str(db)]) == 0
    return db


class _Host:
    def __init__(self, store) -> None:
        self._store = lambda: store


def _page(qtbot, db, config, exported=True):
    with TrialStore.open(db, read_only=True) as store:
        view = VisitHost(_Host(store)).view(1)
    if exported:
        view = dataclasses.replace(view, exports={"pdf": [Path("/tmp/visit.pdf")]})
    page = VisitFinishView()
    qtbot.addWidget(page)
    page.archive.db_path, page.archive.config_path = db, config
    page.show_visit(view)
    return page


def test_send_to_archive_lists_what_went_where(qtbot, visit_db, tmp_path):
    db = tmp_path / "log.sqlite3"
    db.write_bytes(visit_db.read_bytes())
    scp = storescp(tmp_path)
    config = tmp_path / "archive.toml"
    config.write_text(
        f'[dicom]\nhost = "127.0.0.1"\nport = {scp.port}\ncalled_ae_title = "VTPACS"\n'
        'calling_ae_title = "VTCLINIC"\ntimeout_s = 10\n'
    )
    try:
        page = _page(qtbot, db, config)
        panel = page.archive
        assert not panel.isHidden() and panel.button.isEnabled()
        assert f"DICOM to VTPACS@127.0.0.1:{scp.port} (as VTCLINIC)" in panel.where.text()
        qtbot.mouseClick(panel.button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: panel.result.text().startswith("Sent DICOM to"), timeout=60_000)
    finally:
        scp.stop()
    text = panel.result.text()
    received = [pydicom.dcmread(p) for p in (tmp_path / "received").iterdir()]
    # the refraction, the acuity and the Autorefraction Measurements of the simulated autorefraction it started from
    assert sorted(ds.Modality for ds in received) == ["AR", "SRF", "VA"]
    for ds in received:
        assert str(ds.SOPInstanceUID) in text and ds.PatientID == "SIM-0001"
    assert text.count("SIMULATED ") == 3 and f"VTPACS@127.0.0.1:{scp.port}" in text
    with TrialStore.open(db, read_only=True) as store:
        assert [s.status for s in archive_sends(store, 1)] == ["started", "sent"]


def test_no_archive_configured_cannot_send(qtbot, visit_db, tmp_path):
    page = _page(qtbot, visit_db, tmp_path / "archive.toml")
    assert not page.archive.isHidden() and not page.archive.button.isEnabled()
    assert "No archive: no archive configured" in page.archive.where.text()


def test_hidden_before_the_export(qtbot, visit_db, tmp_path):
    page = _page(qtbot, visit_db, tmp_path / "archive.toml", exported=False)
    assert page.archive.isHidden()
