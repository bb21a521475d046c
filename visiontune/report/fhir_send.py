"""A visit's FHIR resources POSTed to the clinic's FHIR server as one transaction (urllib).

The resources are those of :func:`visiontune.report.fhir_visit.visit_bundle_json` (validated with
fhir.resources), put into a Bundle of type ``transaction`` (FHIR R4 RESTful API, 3.1.0.11
"Batch/Transaction"; Bundle rules bdl-3, bdl-4): POSTed to the server's base URL, processed by
the server all-or-nothing, each entry with a ``request``:

* ``Patient`` by **conditional create** (``POST Patient`` with ``ifNoneExist:
  identifier=<system>|<pseudonymous id>``, FHIR R4 3.1.0.8.1): an archive that already holds the
  patient keeps its resource untouched (a conditional *update* would overwrite what the clinic's
  record system added, such as a name), one that does not gets a new one;
* every other resource by **update** to its stable id (``PUT VisionPrescription/<id>``: UUID 5 of
  the visit id and the resource's role, as in the file export), so sending a visit again
  replaces its resources instead of duplicating them.

``fullUrl`` stays the ``urn:uuid:`` of the export; the server rewrites the references to it
(R4 3.1.0.11.2 "Resolving references in Bundles"). The answer is a ``transaction-response``
Bundle; each entry's ``response.location`` (``Type/id/_history/v``) says where the resource now
is. :func:`read_back` GETs one back.

Only the configured base URL is contacted: no proxy from the environment, no redirect followed
(a redirect is an error naming where it pointed). Errors are
:class:`~visiontune.report.archive_config.ArchiveSendError` naming the server and what happened:
HTTP status with the server's OperationOutcome diagnostics, connection refused, unknown host,
timeout, an answer that is not a transaction-response.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from visiontune.errors import one_line
from visiontune.report.archive_config import ArchiveSendError, FhirDestination
from visiontune.report.fhir_visit import PATIENT_ID_SYSTEM

__all__ = ["FhirSendResult", "SentResource", "post_transaction", "read_back", "transaction_bundle"]

FHIR_JSON = "application/fhir+json"


@dataclass(frozen=True)
class SentResource:
    """One resource of the transaction: its type, the server's ``Type/id`` (from
    ``response.location``, without ``_history``) and the entry's HTTP status text."""

    resource_type: str
    location: str
    status: str

    def to_dict(self) -> dict[str, str]:
        return {"resource_type": self.resource_type, "location": self.location, "status": self.status}


@dataclass(frozen=True)
class FhirSendResult:
    destination: str
    resources: tuple[SentResource, ...]


def transaction_bundle(collection: dict[str, Any]) -> dict[str, Any]:
    """The export's ``collection`` Bundle (a dict) as a ``transaction`` Bundle (module docstring).
    The input is not changed."""
    if not isinstance(collection, dict) or collection.get("resourceType") != "Bundle":
        raise ArchiveSendError("FHIR send: expected a Bundle to send")
    bundle = json.loads(json.dumps(collection))
    bundle["type"] = "transaction"
    for entry in bundle.get("entry", []):
        resource = entry["resource"]
        rtype = resource["resourceType"]
        ids = [i for i in resource.get("identifier", []) if i.get("system") == PATIENT_ID_SYSTEM]
        if rtype == "Patient" and ids:
            resource.pop("id", None)
            entry["request"] = {
                "method": "POST",
                "url": "Patient",
                "ifNoneExist": f"identifier={PATIENT_ID_SYSTEM}|{ids[0]['value']}",
            }
        else:
            entry["request"] = {"method": "PUT", "url": f"{rtype}/{resource['id']}"}
    return bundle


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise ArchiveSendError(
            f"FHIR server {req.full_url} answered HTTP {code} redirecting to {one_line(newurl)}; "
            "not followed (only the configured base URL is contacted)"
        )


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _diagnostics(body: bytes) -> str:
    try:
        outcome = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return one_line(body[:300].decode("utf-8", "replace"))
    if isinstance(outcome, dict) and outcome.get("resourceType") == "OperationOutcome":
        texts = [
            i.get("diagnostics") or (i.get("details") or {}).get("text") or i.get("code", "")
            for i in outcome.get("issue", [])
            if isinstance(i, dict)
        ]
        return one_line("; ".join(t for t in texts if t))[:600]
    return one_line(json.dumps(outcome))[:300]


def _request(dest: FhirDestination, method: str, url: str, body: bytes | None = None) -> dict[str, Any]:
    headers = {"Accept": FHIR_JSON}
    if body is not None:
        headers["Content-Type"] = f"{FHIR_JSON}; charset=utf-8"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    where = f"FHIR server {dest.base_url}: {method} {url}"
    try:
        with _opener().open(req, timeout=dest.timeout_s) as resp:
            data = resp.read()
    except urllib.error.HTTPError as exc:
        raise ArchiveSendError(f"{where} failed: HTTP {exc.code} {exc.reason}: {_diagnostics(exc.read())}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            why = "connection refused: nothing is listening there"
        elif isinstance(reason, socket.gaierror):
            why = f"unknown host ({reason.strerror})"
        elif isinstance(reason, TimeoutError):
            why = f"no answer within {dest.timeout_s:g} s (timeout)"
        else:
            why = f"unreachable ({one_line(reason)})"
        raise ArchiveSendError(f"{where} failed: {why}") from None
    except TimeoutError:
        raise ArchiveSendError(f"{where} failed: no answer within {dest.timeout_s:g} s (timeout)") from None
    except OSError as exc:
        raise ArchiveSendError(f"{where} failed: {one_line(exc)}") from None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ArchiveSendError(f"{where}: the answer is not JSON: {one_line(data[:200])}") from None


def post_transaction(bundle: dict[str, Any], dest: FhirDestination) -> FhirSendResult:
    """POST the transaction ``bundle`` to ``dest.base_url``; return where each resource now is.
    ArchiveSendError if the server refuses it (the transaction then changed nothing there)."""
    if bundle.get("type") != "transaction":
        raise ArchiveSendError("FHIR send: the Bundle is not a transaction")
    answer = _request(dest, "POST", dest.base_url, json.dumps(bundle, ensure_ascii=False).encode("utf-8"))
    if (
        not isinstance(answer, dict)
        or answer.get("resourceType") != "Bundle"
        or answer.get("type") != "transaction-response"
    ):
        raise ArchiveSendError(
            f"FHIR server {dest.base_url}: expected a transaction-response Bundle, got {one_line(str(answer)[:200])}"
        )
    entries = answer.get("entry", [])
    sent = bundle.get("entry", [])
    if len(entries) != len(sent):
        raise ArchiveSendError(f"FHIR server {dest.base_url}: {len(sent)} entries sent, {len(entries)} answered")
    out = []
    for request, reply in zip(sent, entries):
        response = reply.get("response", {}) if isinstance(reply, dict) else {}
        status = str(response.get("status", ""))
        location = str(response.get("location", "")).split("/_history")[0]
        base = dest.base_url + "/"
        location = location[len(base) :] if location.startswith(base) else location
        if not status.startswith("2") or not location:
            raise ArchiveSendError(
                f"FHIR server {dest.base_url}: entry {request['request']['method']} "
                f"{request['request']['url']} answered {one_line(status)!r} "
                f"location {one_line(location)!r}"
            )
        out.append(SentResource(request["resource"]["resourceType"], location, status))
    return FhirSendResult(dest.base_url, tuple(out))


def read_back(dest: FhirDestination, location: str) -> dict[str, Any]:
    """GET ``<base>/<Type>/<id>`` (a :attr:`SentResource.location`) and return the resource."""
    return _request(dest, "GET", f"{dest.base_url}/{location}")
