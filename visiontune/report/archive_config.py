"""The clinic's archive destinations: a PACS (DICOM C-STORE) and a FHIR server, read from the
clinic's settings file.

Nothing leaves the machine unless the clinic wrote a destination here: there is no default
host, port or URL. The file is ``archive.toml`` beside the app's settings
(``<user config dir>/visiontune/archive.toml``, :func:`default_archive_config_path`) or any file
given with ``--archive-config``; TOML, or JSON when its name ends in ``.json``::

    [dicom]                      # the PACS, a DICOM Storage SCP (PS3.4 Annex B)
    host = "pacs.clinic.example"
    port = 104
    called_ae_title = "PACS"     # the PACS's AE title
    calling_ae_title = "VISIONTUNE"
    timeout_s = 30               # connection, association and each C-STORE reply

    [fhir]                       # a FHIR R4 server's base URL (transaction Bundle POSTed there)
    base_url = "https://fhir.clinic.example/fhir"
    timeout_s = 30

Either section may be left out (that kind is then never sent). AE titles follow DICOM PS3.5
Table 6.2-1 (VR ``AE``): 1-16 characters of the default repertoire, no backslash or control
character, not all spaces (leading and trailing spaces are not significant and are removed).
A wrong key, type or value raises :class:`~visiontune.errors.ConfigurationError` naming the file,
the key, what was expected and what was found.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from visiontune import output_guard
from visiontune.errors import ConfigurationError, VisionTuneError, one_line

__all__ = [
    "ARCHIVE_CONFIG_NAME",
    "ArchiveConfig",
    "ArchiveSendError",
    "DicomDestination",
    "FhirDestination",
    "default_archive_config_path",
    "load_archive_config",
]

ARCHIVE_CONFIG_NAME = "archive.toml"
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0


class ArchiveSendError(VisionTuneError):
    """A send to the clinic's archive failed: refused association, a SOP class the PACS does not
    take, a non-success status, a FHIR server's error, a timeout, an unreachable host. The message
    says where, what and why; nothing local is changed or deleted."""


@dataclass(frozen=True)
class DicomDestination:
    """A DICOM Storage SCP: ``host``, TCP ``port`` (1-65535), the PACS's ``called_ae_title``, ours
    (``calling_ae_title``), ``timeout_s`` for the connection, the association and each reply."""

    host: str
    port: int
    called_ae_title: str
    calling_ae_title: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    def where(self) -> str:
        """``CALLED@host:port`` as printed and logged."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.called_ae_title}@{host}:{self.port}"


@dataclass(frozen=True)
class FhirDestination:
    """A FHIR R4 server: its ``base_url`` (http or https, no query or fragment), ``timeout_s``."""

    base_url: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    def where(self) -> str:
        return self.base_url


@dataclass(frozen=True)
class ArchiveConfig:
    """The destinations the clinic configured (``None``: that kind is never sent), and the file."""

    source: Path
    dicom: DicomDestination | None = None
    fhir: FhirDestination | None = None


def default_archive_config_path() -> Path:
    """``<user config dir>/visiontune/archive.toml``, beside the app's ``app.toml``."""
    return output_guard.default_config_path(ARCHIVE_CONFIG_NAME)


def _bad(source: Path, key: str, expected: str, found: Any) -> ConfigurationError:
    return ConfigurationError(f"{one_line(source)}: {key}: expected {expected}, got {one_line(repr(found))[:120]}")


def _text(source: Path, section: dict, name: str, key: str) -> str:
    value = section.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _bad(source, key, "a non-empty text", value)
    if not value.isprintable():
        raise _bad(source, key, "text without control characters", value)
    return value.strip()


def _ae_title(source: Path, section: dict, name: str, key: str) -> str:
    value = _text(source, section, name, key)
    if len(value) > 16 or "\\" in value or not value.isascii():
        raise _bad(source, key, "a DICOM AE title: 1-16 ASCII characters, no backslash", value)
    return value


def _timeout(source: Path, section: dict, key: str) -> float:
    value = section.get("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_TIMEOUT_S
    ):
        raise _bad(source, key, f"seconds, more than 0 and at most {MAX_TIMEOUT_S:g}", value)
    return float(value)


def _check_keys(source: Path, section: Any, name: str, allowed: set[str]) -> dict:
    if not isinstance(section, dict):
        raise _bad(source, f"[{name}]", "a table of settings", section)
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise ConfigurationError(
            f"{one_line(source)}: [{name}]: unknown key(s) {', '.join(map(one_line, unknown))}; "
            f"known: {', '.join(sorted(allowed))}"
        )
    return section


def _dicom(source: Path, raw: Any) -> DicomDestination:
    s = _check_keys(source, raw, "dicom", {"host", "port", "called_ae_title", "calling_ae_title", "timeout_s"})
    host = _text(source, s, "host", "dicom.host")
    if any(c.isspace() for c in host) or "/" in host:
        raise _bad(source, "dicom.host", "a host name or IP address", host)
    port = s.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise _bad(source, "dicom.port", "a TCP port, a whole number 1-65535", port)
    return DicomDestination(
        host=host,
        port=port,
        called_ae_title=_ae_title(source, s, "called_ae_title", "dicom.called_ae_title"),
        calling_ae_title=_ae_title(source, s, "calling_ae_title", "dicom.calling_ae_title"),
        timeout_s=_timeout(source, s, "dicom.timeout_s"),
    )


def _fhir(source: Path, raw: Any) -> FhirDestination:
    s = _check_keys(source, raw, "fhir", {"base_url", "timeout_s"})
    url = _text(source, s, "base_url", "fhir.base_url")
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
    ):
        raise _bad(
            source,
            "fhir.base_url",
            "an http:// or https:// base URL with a host, no query, fragment or credentials",
            url,
        )
    return FhirDestination(base_url=url.rstrip("/"), timeout_s=_timeout(source, s, "fhir.timeout_s"))


def load_archive_config(path: str | os.PathLike | None = None) -> ArchiveConfig:
    """Read the clinic's archive settings from ``path`` (default :func:`default_archive_config_path`).

    ConfigurationError if the file is missing ("no archive configured ... nothing was sent"),
    unreadable, not TOML/JSON, has an unknown section or key, or a bad value; or if it configures
    no destination at all."""
    source = Path(os.fsdecode(path)).expanduser().absolute() if path is not None else default_archive_config_path()
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise ConfigurationError(
            f"no archive configured: {one_line(source)} does not exist; the clinic writes its "
            "PACS ([dicom]) and FHIR server ([fhir]) there; nothing was sent"
        ) from None
    except OSError as exc:
        raise ConfigurationError(f"{one_line(source)}: cannot read the archive settings: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
        raw = json.loads(text) if source.suffix.lower() == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        kind = "JSON" if source.suffix.lower() == ".json" else "TOML"
        raise ConfigurationError(f"{one_line(source)}: not a {kind} file: {one_line(exc)}") from None
    if not isinstance(raw, dict):
        raise _bad(source, "(top level)", "a table with [dicom] and/or [fhir]", raw)
    unknown = sorted(set(raw) - {"dicom", "fhir"})
    if unknown:
        raise ConfigurationError(
            f"{one_line(source)}: unknown section(s) {', '.join(map(one_line, unknown))}; known: [dicom], [fhir]"
        )
    config = ArchiveConfig(
        source=source,
        dicom=_dicom(source, raw["dicom"]) if "dicom" in raw else None,
        fhir=_fhir(source, raw["fhir"]) if "fhir" in raw else None,
    )
    if config.dicom is None and config.fhir is None:
        raise ConfigurationError(
            f"{one_line(source)}: no destination: give a [dicom] or [fhir] section; nothing was sent"
        )
    return config
