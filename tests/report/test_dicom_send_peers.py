"""``send_dicom`` against peers that answer the association request with raw PDUs (PS3.8 Section
9.3) and then close the connection at once, as dcmtk's ``storescp --refuse`` does: what the error
says must be what the peer sent, however quickly it hung up, and never a timeout that did not
happen. The peers are a few lines of socket code on the loopback, so they need no dcmtk."""

from __future__ import annotations

import socket
import struct
import threading
from io import BytesIO

import pytest
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

from visiontune.report.archive_config import ArchiveSendError, DicomDestination
from visiontune.report.dicom_send import send_dicom

SRF = "1.2.840.10008.5.1.4.1.1.78.4"  # Subjective Refraction Measurements Storage


def _object() -> bytes:
    ds = Dataset()
    ds.SOPClassUID, ds.SOPInstanceUID = SRF, generate_uid()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.MediaStorageSOPClassUID, ds.file_meta.MediaStorageSOPInstanceUID = SRF, ds.SOPInstanceUID
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    out = BytesIO()
    ds.save_as(out, enforce_file_format=True)
    return out.getvalue()


def _pdu(pdu_type: int, body: bytes) -> bytes:
    """PS3.8 Section 9.3.1: type, a reserved byte, the length (unsigned 32-bit big-endian), the body."""
    return struct.pack(">BBI", pdu_type, 0, len(body)) + body


#: A-ASSOCIATE-RJ (Section 9.3.4): reserved, result 1 (rejected permanent), source 1 (service
#: user), reason 7 (called AE title not recognised)
REJECT = _pdu(0x03, bytes([0, 1, 1, 7]))
#: A-ABORT (Section 9.3.8): two reserved bytes, source 2 (service provider), reason 0
ABORT = _pdu(0x07, bytes([0, 0, 2, 0]))


class Peer:
    """Accepts one connection on the loopback, reads the A-ASSOCIATE-RQ, writes ``answer`` (or
    nothing) and closes the connection at once."""

    def __init__(self, answer: bytes) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.answer = answer
        self.request = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            header = conn.recv(6, socket.MSG_WAITALL)
            length = struct.unpack(">I", header[2:6])[0]
            self.request = header + conn.recv(length, socket.MSG_WAITALL)
            conn.sendall(self.answer)

    def close(self) -> None:
        self.thread.join(10)
        self.sock.close()


def _send_to(answer: bytes) -> tuple[str, bytes]:
    peer = Peer(answer)
    try:
        dest = DicomDestination("127.0.0.1", peer.port, "VTPACS", "VISIONTUNE", timeout_s=20)
        with pytest.raises(ArchiveSendError) as caught:
            send_dicom({"refraction.dcm": _object()}, dest)
    finally:
        peer.close()
    return str(caught.value), peer.request


@pytest.mark.parametrize("attempt", range(5))  # pynetdicom counted it aborted in 1-3 of 40 under load
def test_a_rejection_followed_at_once_by_the_close_is_a_rejection(attempt):
    err, request = _send_to(REJECT)
    assert request[0] == 0x01  # the peer did read an A-ASSOCIATE-RQ
    rejected = "the association was rejected (Rejected Permanent, by the Service User: Called AE title not recognised)"
    assert rejected in err
    assert "timeout" not in err


def test_an_abort_in_answer_to_the_request_is_an_abort():
    err, _ = _send_to(ABORT)
    assert "the PACS aborted the association request" in err
    assert "timeout" not in err


def test_a_close_without_an_answer_is_said_so_not_called_a_timeout():
    err, _ = _send_to(b"")
    assert "the PACS closed the connection without answering the association request" in err
    assert "timeout" not in err and "nothing was stored there" in err
