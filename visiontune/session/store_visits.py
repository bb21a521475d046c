"""The trial log's visits (:class:`Visits`, a part of :class:`~visiontune.session.store.TrialStore`):
a patient's visit (age, habitual spectacles, cylinder form, clinician) and its eyes, each
refracted by one session or skipped with the reason (schema v2:
:mod:`visiontune.session.visit_schema`). Values and checks live in
:mod:`visiontune.session.visit_records`.
"""

from __future__ import annotations

import visiontune
from visiontune._validate import check_int
from visiontune.errors import InvalidInputError, SessionError
from visiontune.session import visit_records as vr
from visiontune.session.store_columns import MAX_SESSION_ID, check_session_id, ts_text

__all__ = ["Visits"]


class Visits:
    """Visits and their eyes (a part of :class:`~visiontune.session.store.TrialStore`, which gives
    it ``conn``, ``path``, ``now``, ``_write`` and the patients' and sessions' reads)."""

    _VISIT_COLUMNS = (
        "id, patient_id, age_years, habitual_od_json, habitual_os_json, cylinder_form, clinician, "
        "simulated, software_version, created_at"
    )

    def create_visit(
        self,
        patient_id: str,
        *,
        age_years: int | None = None,
        habitual_od=None,
        habitual_os=None,
        cylinder_form: str = "minus",
        clinician: str | None = None,
        simulated: bool = False,
        software_version: str | None = None,
    ) -> int:
        """Create a visit of an existing patient; return its id. ``age_years``: whole years
        0-130 or ``None``; ``habitual_od`` / ``habitual_os``: the spectacles worn
        (:class:`~visiontune.optics.Prescription`) or ``None``; ``cylinder_form``: the
        clinic's ``"minus"`` or ``"plus"``; ``clinician``: who refracts, optional."""

        self.get_patient(patient_id)
        if age_years is not None:
            age_years = check_int("age_years", age_years, 0, 130)
        habitual = [
            None if rx is None else vr.check_prescription(f"habitual_{e.lower()}", rx)
            for e, rx in (("OD", habitual_od), ("OS", habitual_os))
        ]
        if cylinder_form not in vr.CYLINDER_FORMS:
            raise InvalidInputError(f"cylinder_form: expected 'minus' or 'plus', got {cylinder_form!r}")
        clinician = vr.check_name("clinician", clinician, optional=True)
        if not isinstance(simulated, bool):
            raise InvalidInputError(f"simulated: expected True or False, got {simulated!r}")
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visits (patient_id, age_years, habitual_od_json, habitual_os_json, cylinder_form, "
                "clinician, simulated, software_version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    patient_id,
                    age_years,
                    vr.rx_json(habitual[0]),
                    vr.rx_json(habitual[1]),
                    cylinder_form,
                    clinician,
                    int(simulated),
                    software_version or visiontune.__version__,
                    ts_text(self.now()),
                ),
            )
            return int(cur.lastrowid)

    def get_visit(self, visit_id: int):
        """The visit's :class:`~visiontune.session.visit_records.VisitInfo`; SessionError if
        there is none, StoreError if its row is damaged."""

        vid = check_int("visit_id", visit_id)
        row = None
        if 1 <= vid <= MAX_SESSION_ID:
            row = self.conn.execute(f"SELECT {self._VISIT_COLUMNS} FROM visits WHERE id = ?", (vid,)).fetchone()
        if row is None:
            raise SessionError(f"no visit {vid} in {self.path}")
        return vr.VisitInfo.from_row(row)

    def list_visits(self, patient_id: str | None = None) -> list:
        """Visits in creation order (of one patient when ``patient_id`` is given)."""

        sql, args = f"SELECT {self._VISIT_COLUMNS} FROM visits", ()
        if patient_id is not None:
            sql, args = sql + " WHERE patient_id = ?", (patient_id,)
        return [vr.VisitInfo.from_row(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def visit_eyes(self, visit_id: int) -> dict:
        """``{"OD": VisitEye, "OS": VisitEye}`` for the eyes started or skipped (the latest row
        of an eye: an eye whose discarded session was replaced shows the new one)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT visit_id, eye, session_id, skip_reason, at FROM visit_eyes WHERE visit_id = ? ORDER BY id", (vid,)
        ).fetchall()
        return {eye.eye: eye for eye in (vr.VisitEye.from_row(r) for r in rows)}

    def visit_of_session(self, session_id: int):
        """The :class:`~visiontune.session.visit_records.VisitEye` linking ``session_id`` to
        a visit, or ``None`` for a session outside any visit."""

        row = self.conn.execute(
            "SELECT visit_id, eye, session_id, skip_reason, at FROM visit_eyes WHERE session_id = ?",
            (check_session_id(session_id),),
        ).fetchone()
        return None if row is None else vr.VisitEye.from_row(row)

    def check_visit_eye_free(self, visit_id: int, eye: str) -> None:
        """SessionError unless ``eye`` of the visit may get a session or be skipped: it has
        none yet, or only a discarded one."""
        current = self.visit_eyes(visit_id).get(eye)
        if current is None:
            return
        if current.skipped:
            raise SessionError(f"visit {visit_id}: {eye} was skipped ({current.skip_reason})")
        if not self.get_session(current.session_id, allow_damaged=True).discarded:
            raise SessionError(
                f"visit {visit_id}: {eye} already has session {current.session_id} "
                "(resume that one; an eye has one refraction per visit)"
            )

    def link_visit_session(self, visit_id: int, eye: str, session_id: int):
        """Make ``session_id`` the refraction of ``eye`` in the visit (one committed write).
        The session must be of the visit's patient, that eye and the same kind (simulated or
        not), and linked to no other visit; the eye must have no session yet (or only a
        discarded one) and not be skipped."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        info = self.get_session(session_id)
        if (info.patient_id, info.eye.value, info.simulated) != (visit.patient_id, eye, visit.simulated):
            raise InvalidInputError(
                f"session {info.session_id} ({info.patient_id} {info.eye.value}, "
                f"{'simulated' if info.simulated else 'real patient'}) cannot be {eye} of visit {visit.visit_id} "
                f"({visit.patient_id}, {'simulated' if visit.simulated else 'real patient'})"
            )
        other = self.visit_of_session(info.session_id)
        if other is not None:
            raise SessionError(f"session {info.session_id} is already {other.eye} of visit {other.visit_id}")
        self.check_visit_eye_free(visit.visit_id, eye)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO visit_eyes (visit_id, eye, session_id, skip_reason, at) VALUES (?, ?, ?, NULL, ?)",
                (visit.visit_id, eye, info.session_id, ts_text(self.now())),
            )
        return self.visit_eyes(visit.visit_id)[eye]

    def skip_visit_eye(self, visit_id: int, eye: str, reason: str):
        """Record that ``eye`` is not refracted in this visit and why (a prosthetic eye, an
        amblyopic eye...). SessionError if the eye already has a session (other than a
        discarded one) or was skipped."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        reason = vr.check_name("reason", reason)
        self.check_visit_eye_free(visit.visit_id, eye)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO visit_eyes (visit_id, eye, session_id, skip_reason, at) VALUES (?, ?, NULL, ?, ?)",
                (visit.visit_id, eye, reason, ts_text(self.now())),
            )
        return self.visit_eyes(visit.visit_id)[eye]
