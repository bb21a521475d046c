"""The trial log's patients and sessions (:class:`PatientsAndSessions`, a part of
:class:`~visiontune.session.store.TrialStore`): a pseudonymous patient id, and per session the
row a replay needs (patient, eye, protocol snapshot, seed, starting prescription, calibration,
state, result).

Sessions are never deleted. A damaged row (text that is not UTF-8, JSON that does not parse, a
timestamp that is not one) is confined to its session: :meth:`PatientsAndSessions.list_sessions`
returns it with :attr:`~visiontune.session.records.SessionInfo.damage` saying what is wrong.
"""

from __future__ import annotations

from typing import Any

import visiontune
from visiontune._validate import check_int
from visiontune.errors import InvalidInputError, SessionError, StoreError
from visiontune.refraction.protocol import Protocol, parse_protocol
from visiontune.session.records import Eye, Patient, SessionInfo, SessionState, json_problem
from visiontune.session.store_columns import check_session_id, checked_ts, text_problem, to_json, ts_text

__all__ = ["PatientsAndSessions"]

_PATIENT_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


class PatientsAndSessions:
    """Patients and sessions of the trial log (a part of :class:`~visiontune.session.store.TrialStore`,
    which gives it ``conn``, ``path``, ``now`` and its one-transaction ``_write``)."""

    def create_patient(self, patient_id: str) -> Patient:
        """Register a pseudonymous patient id (1-64 of ``A-Z a-z 0-9 . _ -``)."""
        if (
            not isinstance(patient_id, str)
            or not 1 <= len(patient_id) <= 64
            or not set(patient_id) <= _PATIENT_ID_CHARS
        ):
            raise InvalidInputError(f"patient_id: expected 1-64 characters from A-Z a-z 0-9 . _ -, got {patient_id!r}")
        created = self.now()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM patients WHERE id = ?", (patient_id,)).fetchone():
                raise InvalidInputError(f"patient_id: patient {patient_id!r} already exists")
            conn.execute("INSERT INTO patients (id, created_at) VALUES (?, ?)", (patient_id, ts_text(created)))
        return self.get_patient(patient_id)

    def get_patient(self, patient_id: str) -> Patient:
        row = self.conn.execute("SELECT id, created_at FROM patients WHERE id = ?", (patient_id,)).fetchone()
        if row is None:
            raise InvalidInputError(f"patient_id: no patient {patient_id!r} in {self.path}")
        return self._patient_from_row(row)

    def list_patients(self) -> list[Patient]:
        rows = self.conn.execute("SELECT id, created_at FROM patients ORDER BY created_at, id").fetchall()
        return [self._patient_from_row(r) for r in rows]

    def _patient_from_row(self, r) -> Patient:
        damage: list[str] = []
        if (problem := text_problem(r[0])) is not None:
            damage.append(f"id: {problem}")
        created = checked_ts("created_at", r[1], damage)
        if damage:
            raise StoreError(f"{self.path}: patient {str(r[0])[:64]!r} is damaged: {'; '.join(damage)}")
        return Patient(r[0], created)

    # --- sessions ---------------------------------------------------------------------------
    def create_session(
        self,
        patient_id: str,
        *,
        eye: Eye | str,
        protocol,
        seed: int | None = None,
        calibration: Any = None,
        simulated: bool = False,
        starting_rx: Any = None,
        software_version: str | None = None,
    ) -> int:
        """Create a session in state ``open``; return its id.

        ``protocol``: a :class:`~visiontune.refraction.protocol.Protocol` (its source text is
        snapshotted) or protocol TOML text (validated). ``seed`` defaults to the protocol's.
        ``calibration`` / ``starting_rx``: mapping, dataclass or JSON text, or ``None``.
        """

        self.get_patient(patient_id)
        try:
            eye = Eye(eye)
        except ValueError:
            raise InvalidInputError(f"eye: expected one of OD, OS, OU, got {eye!r}") from None
        if isinstance(protocol, Protocol):
            protocol_obj = protocol
        elif isinstance(protocol, str):
            protocol_obj = parse_protocol(protocol, source="protocol")
        else:
            raise InvalidInputError(f"protocol: expected a Protocol or TOML text, got {type(protocol).__name__}")
        if seed is None:
            seed = protocol_obj.seed
        seed = check_int("seed", seed, lo=0)
        if not isinstance(simulated, bool):
            raise InvalidInputError(f"simulated: expected True or False, got {simulated!r}")
        row = (
            patient_id,
            eye.value,
            protocol_obj.source_text,
            software_version or visiontune.__version__,
            seed,
            to_json("calibration", calibration),
            int(simulated),
            SessionState.OPEN.value,
            ts_text(self.now()),
            to_json("starting_rx", starting_rx),
        )
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (patient_id, eye, protocol_toml, software_version, seed, "
                "calibration_json, simulated, state, created_at, starting_rx_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cur.lastrowid)

    _SESSION_COLUMNS = (
        "id, patient_id, eye, protocol_toml, software_version, seed, simulated, state, "
        "created_at, finished_at, calibration_json, starting_rx_json, result_json"
    )

    @staticmethod
    def _session_from_row(r) -> SessionInfo:
        """The row as a SessionInfo; a damaged column is ``None`` and named in ``damage``."""
        damage: list[str] = []

        def text(column: str, value: Any) -> str | None:
            problem = text_problem(value)
            if problem is not None:
                damage.append(f"{column}: {problem}")
                return value if isinstance(value, str) else None
            return value

        def enum(column: str, kind, value: Any):
            try:
                return kind(value)
            except ValueError:
                damage.append(f"{column}: {str(value)[:40]!r} is not one of {', '.join(m.value for m in kind)}")
                return None

        patient_id = text("patient_id", r[1])
        eye = enum("eye", Eye, r[2])
        protocol_toml = text("protocol_toml", r[3])
        software_version = text("software_version", r[4])
        seed = r[5]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            damage.append(f"seed: expected an integer >= 0, found {str(seed)[:40]!r}")
            seed = None
        if r[6] not in (0, 1):
            damage.append(f"simulated: expected 0 or 1, found {str(r[6])[:40]!r}")
        state = enum("state", SessionState, r[7])
        created_at = checked_ts("created_at", r[8], damage)
        finished_at = checked_ts("finished_at", r[9], damage, optional=True)
        json_columns = (("calibration_json", r[10]), ("starting_rx_json", r[11]), ("result_json", r[12]))
        for column, value in json_columns:
            if value is not None and not isinstance(value, str):
                damage.append(f"{column}: expected JSON text, found {type(value).__name__}")
                continue
            problem = json_problem(value)
            if problem is not None:
                damage.append(f"{column}: {problem}")
        return SessionInfo(
            session_id=r[0],
            patient_id=patient_id,
            eye=eye,
            protocol_toml=protocol_toml,
            software_version=software_version,
            seed=seed,
            simulated=r[6] == 1,
            state=state,
            created_at=created_at,
            finished_at=finished_at,
            calibration_json=r[10],
            starting_rx_json=r[11],
            result_json=r[12],
            damage=tuple(damage),
        )

    def get_session(self, session_id: int, *, allow_damaged: bool = False) -> SessionInfo:
        """The session's row; SessionError if there is none, StoreError if the id cannot be a
        session id (outside SQLite's 64-bit integers) or the row is damaged (saying what is
        wrong) unless ``allow_damaged`` (then see :attr:`SessionInfo.damage`)."""
        sid = check_session_id(session_id)
        row = self.conn.execute(f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)).fetchone()
        if row is None:
            raise SessionError(f"no session {sid} in {self.path}")
        info = self._session_from_row(row)
        if info.damage and not allow_damaged:
            raise StoreError(f"session {sid} in {self.path} is damaged: {'; '.join(info.damage)}")
        return info

    def list_sessions(
        self,
        patient_id: str | None = None,
        state: SessionState | str | None = None,
        *,
        include_discarded: bool = False,
    ) -> list[SessionInfo]:
        """Sessions in creation order, optionally of one patient and/or in one state.

        A damaged session is listed too, with :attr:`SessionInfo.damage` saying what is wrong;
        it never hides or breaks the others. A discarded session (:meth:`SessionHandle.discard`)
        is left out unless ``include_discarded``."""
        where, args = [], []
        if patient_id is not None:
            where.append("patient_id = ?")
            args.append(patient_id)
        if state is not None:
            try:
                where.append("state = ?")
                args.append(SessionState(state).value)
            except ValueError:
                raise InvalidInputError(f"state: expected open, paused or finished, got {state!r}") from None
        sql = f"SELECT {self._SESSION_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        infos = [self._session_from_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]
        return infos if include_discarded else [i for i in infos if not i.discarded]
