"""Real archive servers on the loopback for the send tests: dcmtk's Storage SCPs (``storescp``,
``dcmqrscp``) and a FHIR R4 server (SEKMET, ``sekmet-fhir`` from PyPI), each a child process
bound to 127.0.0.1 on a free port, stopped (by its own pid) when the test ends."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HAS_STORESCP = shutil.which("storescp") is not None
HAS_DCMQRSCP = shutil.which("dcmqrscp") is not None
SEKMET = Path(sys.executable).with_name("sekmet")
HAS_SEKMET = SEKMET.exists()
STARTUP_LIMIT_S = 60.0  # a bound on waiting for a server to listen, not a speed check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Server:
    """A child process serving on ``127.0.0.1:port``; ``stop()`` ends it and returns its output."""

    def __init__(self, argv: list[str], port: int, cwd: Path, ready=None, env=None) -> None:
        self.port = port
        self.log = cwd / f"server-{port}.log"
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdout=self._out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        ready = ready or (lambda: _listening(port))
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                text = self.stop()
                raise RuntimeError(f"{argv[0]} did not start on port {port}: {text[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._out.close()
        return self.log.read_text(errors="replace")


def storescp(folder: Path, *options: str, ae_title: str = "VTPACS") -> Server:
    """dcmtk's ``storescp``: every object it receives is written into ``folder``."""
    port = free_port()
    out = folder / "received"
    out.mkdir(parents=True, exist_ok=True)
    return Server(["storescp", "-aet", ae_title, "-od", str(out), *options, str(port)], port, folder)


#: storescp's association profile taking Subjective Refraction Measurements only (dcmtk's
#: ``storescp.cfg`` syntax, ``asconfig.txt``)
REFRACTION_ONLY_PROFILE = """\
[[TransferSyntaxes]]
[Uncompressed]
TransferSyntax1 = LocalEndianExplicit
TransferSyntax2 = OppositeEndianExplicit
TransferSyntax3 = LittleEndianImplicit

[[PresentationContexts]]
[OnlyRefraction]
PresentationContext1 = SubjectiveRefractionMeasurementsStorage\\Uncompressed

[[Profiles]]
[RefractionOnly]
PresentationContexts = OnlyRefraction
"""


def dcmqrscp(folder: Path, ae_title: str = "VTARCHIVE", quota: str = "(10, 64mb)") -> Server:
    """dcmtk's ``dcmqrscp``, which checks the called AE title against its AE table (an
    association to another title is rejected "called AE title not recognised"); ``quota``: its
    storage area's (studies, bytes per study): an object larger is refused (status 0xA700)."""
    port = free_port()
    store = folder / "db"
    store.mkdir(parents=True, exist_ok=True)
    config = folder / "dcmqrscp.cfg"
    config.write_text(
        f"NetworkTCPPort = {port}\nMaxPDUSize = 16384\nMaxAssociations = 4\n"
        "HostTable BEGIN\nHostTable END\nVendorTable BEGIN\nVendorTable END\n"
        f"AETable BEGIN\n{ae_title} {store} RW {quota} ANY\nAETable END\n"
    )
    return Server(["dcmqrscp", "-c", str(config), "--single-process"], port, folder)


def sekmet(folder: Path) -> tuple[Server, str]:
    """The SEKMET FHIR R4 server (in-process SQLite store, strict structural validation of what it
    receives, transactions all-or-nothing) on the loopback; returns it and its base URL. Its
    simulator is off and it has no peer, so it makes no connection of its own."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/fhir"
    settings = folder / "settings.yaml"
    settings.write_text(
        f'base_url: "{base}"\nhost: "127.0.0.1"\nport: {port}\ndb_path: "{folder / "fhir.db"}"\n'
        f'data_dir: "{folder / "data"}"\nown_private_key_path: "{folder / "keys" / "own.pem"}"\n'
        "simulator:\n  enabled: false\nlog_inbound: false\npeers: {}\n"
    )
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}

    def ready() -> bool:
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(f"{base}/metadata", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    server = Server([str(SEKMET), "serve", "--config", str(settings)], port, folder, ready=ready, env=env)
    return server, base
