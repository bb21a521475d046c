"""A visit's DICOM objects sent to the clinic's PACS by C-STORE (pynetdicom).

The Storage Service Class (DICOM PS3.4 Annex B) over the DICOM Upper Layer (PS3.8): one
association from our AE title (``calling_ae_title``) to the PACS's (``called_ae_title``) at the
clinic's ``host:port``, proposing one presentation context per SOP class we send (Subjective
Refraction Measurements ``1.2.840.10008.5.1.4.1.1.78.4``, Visual Acuity Measurements ``...78.5``,
and, when the visit has them, Lensometry Measurements ``...78.1`` and Autorefraction Measurements
``...78.2``), each with Explicit VR Little Endian (the files' transfer syntax) and Implicit VR
Little Endian (the default every SCP accepts, PS3.5 Section 10.1). Then one C-STORE per object,
and the association released.

Failures are :class:`~visiontune.report.archive_config.ArchiveSendError`, their message naming
the destination and what happened:

* nothing listening on the port (connection refused), an unknown host, an unreachable network,
  or no answer within ``timeout_s`` (the TCP connection is tried once more after a failed
  association, to say which);
* the association rejected (PS3.8 Section 9.3.4 A-ASSOCIATE-RJ: result, source and reason, e.g.
  "called AE title not recognised"; read from the RJ PDU when the PACS closes the connection as it
  rejects, which pynetdicom may count an abort), aborted, or the connection closed without an answer;
* a SOP class whose presentation context the PACS did not accept: checked for every object
  *before* the first C-STORE, so then nothing is sent;
* a C-STORE answered with a Failure status (PS3.4 Annex B.2.3: e.g. ``0xA700`` out of resources,
  ``0xC000`` cannot understand) or not answered within ``timeout_s``; the objects sent before it
  are named (``ArchiveSendError.sent``). A Warning status (``0xB000``, ``0xB006``, ``0xB007``)
  counts as stored, its code kept in the result.

Nothing local is read from or written to disk here: the objects are the in-memory Part 10 bytes
of :func:`visiontune.report.dicom_visit.export_dicom_files`, parsed back with pydicom.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field
from io import BytesIO

from visiontune.report.archive_config import ArchiveSendError, DicomDestination

__all__ = ["DicomSendResult", "StoredObject", "send_dicom"]

logging.getLogger("pynetdicom").addHandler(logging.NullHandler())

_SOP_NAMES = {
    "1.2.840.10008.5.1.4.1.1.78.4": "Subjective Refraction Measurements",
    "1.2.840.10008.5.1.4.1.1.78.5": "Visual Acuity Measurements",
    "1.2.840.10008.5.1.4.1.1.78.1": "Lensometry Measurements",
    "1.2.840.10008.5.1.4.1.1.78.2": "Autorefraction Measurements",
}


@dataclass(frozen=True)
class StoredObject:
    """One object the PACS answered: its file name here, SOP class and instance UIDs, the
    C-STORE status code (``0x0000`` success, ``0xBxxx`` warning)."""

    name: str
    sop_class_uid: str
    sop_instance_uid: str
    status: int

    @property
    def sop_class_name(self) -> str:
        return _SOP_NAMES.get(self.sop_class_uid, self.sop_class_uid)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "sop_class_uid": self.sop_class_uid,
            "sop_instance_uid": self.sop_instance_uid,
            "status": f"0x{self.status:04X}",
        }


@dataclass(frozen=True)
class DicomSendResult:
    """What the PACS at ``destination`` (``AE@host:port``) stored."""

    destination: str
    stored: tuple[StoredObject, ...] = field(default_factory=tuple)


def _fail(dest: DicomDestination, what: str, sent: list[StoredObject]) -> ArchiveSendError:
    done = (
        "; already stored there: " + ", ".join(f"{o.sop_class_name} {o.sop_instance_uid}" for o in sent)
        if sent
        else "; nothing was stored there"
    )
    exc = ArchiveSendError(
        f"DICOM send to {dest.where()} (as {dest.calling_ae_title}) failed: {what}{done}; nothing was changed here"
    )
    exc.sent = tuple(sent)
    return exc


def _why_not_connected(dest: DicomDestination) -> str | None:
    """Try the TCP connection once to say why an association was not established (``None``:
    the connection opens)."""
    try:
        with socket.create_connection((dest.host, dest.port), timeout=dest.timeout_s):
            pass
    except ConnectionRefusedError:
        return f"connection refused: nothing is listening on {dest.host} port {dest.port}"
    except socket.gaierror as exc:
        return f"unknown host {dest.host!r} ({exc.strerror})"
    except TimeoutError:
        return f"no answer from {dest.host} port {dest.port} within {dest.timeout_s:g} s (timeout)"
    except OSError as exc:
        return f"{dest.host} port {dest.port} is unreachable ({exc.strerror or exc})"
    return None


def _rejection(assoc, pdus: list) -> str:
    """The A-ASSOCIATE-RJ's result, source and reason (PS3.8 Section 9.3.4), read from the
    association's primitive or, when the peer closed the connection as it rejected and pynetdicom
    then counts the association aborted, from the RJ PDU itself."""
    prim = assoc.acceptor.primitive if assoc.is_rejected else None
    rj = next((pdu for pdu in pdus if type(pdu).__name__ == "A_ASSOCIATE_RJ"), None)
    prim = prim or (rj.to_primitive() if rj is not None else None)
    if prim is None:
        return "the association was rejected"
    return (
        f"the association was rejected ({prim.result_str}, by the {prim.source_str}: {prim.reason_str}); "
        f"check called_ae_title {assoc.acceptor.ae_title!r} and calling_ae_title {assoc.requestor.ae_title!r} "
        "with the PACS administrator"
    )


def send_dicom(files: dict[str, bytes], dest: DicomDestination) -> DicomSendResult:
    """C-STORE every ``{name: Part 10 bytes}`` object to ``dest`` in one association (module
    docstring); return what was stored, or raise ArchiveSendError."""
    from pydicom import dcmread
    from pydicom.uid import ExplicitVRLittleEndian, ImplicitVRLittleEndian
    from pynetdicom import AE, evt
    from pynetdicom.status import GENERAL_STATUS, STORAGE_SERVICE_CLASS_STATUS, code_to_category

    if not files:
        raise ArchiveSendError(f"DICOM send to {dest.where()}: no object to send")
    datasets = {name: dcmread(BytesIO(data)) for name, data in files.items()}
    classes = sorted({str(ds.SOPClassUID) for ds in datasets.values()})
    ae = AE(ae_title=dest.calling_ae_title)
    ae.connection_timeout = dest.timeout_s
    ae.acse_timeout = dest.timeout_s
    ae.dimse_timeout = dest.timeout_s
    ae.network_timeout = dest.timeout_s
    for uid in classes:
        ae.add_requested_context(uid, [ExplicitVRLittleEndian, ImplicitVRLittleEndian])
    pdus: list = []  # the PDUs the peer sent (a rejection or an abort from it, or none)
    handlers = [(evt.EVT_PDU_RECV, lambda event: pdus.append(event.pdu))]
    started = time.monotonic()
    assoc = ae.associate(dest.host, dest.port, ae_title=dest.called_ae_title, evt_handlers=handlers)
    try:
        answered = {type(pdu).__name__ for pdu in pdus}
        if assoc.is_rejected or "A_ASSOCIATE_RJ" in answered:
            raise _fail(dest, _rejection(assoc, pdus), [])
        if not assoc.is_established:
            why = _why_not_connected(dest)
            if why is None:
                if "A_ABORT_RQ" in answered:
                    why = "the PACS aborted the association request"
                elif time.monotonic() - started < dest.timeout_s:
                    why = "the PACS closed the connection without answering the association request"
                else:
                    why = (
                        f"the connection opened but no association answer came within {dest.timeout_s:g} s "
                        "(timeout; is it a DICOM port?)"
                    )
            raise _fail(dest, why, [])
        accepted = {str(cx.abstract_syntax) for cx in assoc.accepted_contexts}
        refused = [uid for uid in classes if uid not in accepted]
        if refused:
            names = ", ".join(f"{_SOP_NAMES.get(u, u)} ({u})" for u in refused)
            plural = "es" if len(refused) > 1 else ""
            raise _fail(
                dest,
                f"the PACS does not accept the SOP class{plural} {names} (presentation context"
                f"{'s' if plural else ''} rejected); no object was sent",
                [],
            )
        stored: list[StoredObject] = []
        for name, ds in datasets.items():
            what = f"{_SOP_NAMES.get(str(ds.SOPClassUID), ds.SOPClassUID)} {ds.SOPInstanceUID} ({name})"
            status = assoc.send_c_store(ds)
            if "Status" not in status:
                why = (
                    "no C-STORE answer: the PACS aborted the association"
                    if assoc.is_aborted
                    else f"no C-STORE answer: the PACS aborted, sent an invalid answer or none within "
                    f"{dest.timeout_s:g} s (timeout)"
                )
                raise _fail(dest, f"{what}: {why}", stored)
            code = int(status.Status)
            category = code_to_category(code)
            if category not in ("Success", "Warning"):
                meaning = STORAGE_SERVICE_CLASS_STATUS.get(code) or GENERAL_STATUS.get(code) or (category, "")
                comment = f" ({status.ErrorComment})" if "ErrorComment" in status else ""
                raise _fail(
                    dest,
                    f"{what}: C-STORE status 0x{code:04X} {category}"
                    + (f", {meaning[1]}" if meaning[1] else "")
                    + comment,
                    stored,
                )
            stored.append(StoredObject(name, str(ds.SOPClassUID), str(ds.SOPInstanceUID), code))
        return DicomSendResult(dest.where(), tuple(stored))
    finally:
        if assoc.is_established:
            assoc.release()
