"""What a visit records beyond its refractions (:class:`VisitOutcomes`, a part of
:class:`~visiontune.session.store.TrialStore`): the binocular balance (its answers and its
outcome), the clinician's sign-off of each eye's prescription (kept beside the one the
refraction found, never in its place) and the acuities read through the lenses.
"""

from __future__ import annotations

import json
from typing import Any

from visiontune._validate import check_number
from visiontune.errors import InvalidInputError, SessionError
from visiontune.session import visit_records as vr
from visiontune.session.records import SessionState
from visiontune.session.store_columns import to_json, ts_text

__all__ = ["VisitOutcomes"]


class VisitOutcomes:
    """Balance, sign-off and acuity of a visit (a part of :class:`~visiontune.session.store.TrialStore`,
    which gives it ``conn``, ``now``, ``_write`` and the visits' and sessions' reads)."""

    def record_balance_answer(
        self, visit_id: int, index: int, *, lens_od, lens_os, plus_od_d: float, plus_os_d: float, clearer: str
    ):
        """Append the answer to balance question ``index`` (the next one of the visit): the
        lenses before each eye, their plus over each end point (D) and which eye was clearer
        (``"OD"``, ``"OS"`` or ``"equal"``). Durable when this returns. SessionError when the
        index is not the next one (answered meanwhile) or the balance has its outcome."""

        vid = self.get_visit(visit_id).visit_id
        od = vr.check_prescription("lens_od", lens_od)
        os_ = vr.check_prescription("lens_os", lens_os)
        plus = [check_number(n, v, -4, 4) for n, v in (("plus_od_d", plus_od_d), ("plus_os_d", plus_os_d))]
        clearer = vr.check_eye(clearer, vr.BALANCE_ANSWERS)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM visit_balance WHERE visit_id = ?", (vid,)).fetchone():
                raise SessionError(f"visit {vid}: the binocular balance is over; no more answers")
            expected = conn.execute("SELECT count(*) FROM visit_balance_answers WHERE visit_id = ?", (vid,)).fetchone()[
                0
            ]
            if index != expected:
                raise SessionError(f"visit {vid}: balance question {index} is not the next one ({expected} is)")
            conn.execute(
                "INSERT INTO visit_balance_answers (visit_id, idx, od_sphere_d, od_cylinder_d, od_axis_deg, "
                "os_sphere_d, os_cylinder_d, os_axis_deg, plus_od_d, plus_os_d, clearer, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    vid,
                    index,
                    od.sphere_d,
                    od.cylinder_d,
                    od.axis_deg,
                    os_.sphere_d,
                    os_.cylinder_d,
                    os_.axis_deg,
                    plus[0],
                    plus[1],
                    clearer,
                    ts_text(self.now()),
                ),
            )
        return self.balance_answers(vid)[index]

    def balance_answers(self, visit_id: int) -> list:
        """The visit's balance answers in order (:class:`~visiontune.session.visit_records.BalanceAnswer`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT visit_id, idx, od_sphere_d, od_cylinder_d, od_axis_deg, os_sphere_d, os_cylinder_d, os_axis_deg, "
            "plus_od_d, plus_os_d, clearer, at FROM visit_balance_answers WHERE visit_id = ? ORDER BY idx",
            (vid,),
        ).fetchall()
        return [vr.BalanceAnswer.from_row(r) for r in rows]

    def record_balance(
        self,
        visit_id: int,
        *,
        outcome: str,
        method: str,
        plus_change_od_d: float = 0.0,
        plus_change_os_d: float = 0.0,
        reason: str | None = None,
    ):
        """Record the balance's outcome (once per visit): ``outcome`` one of ``equal``,
        ``right eye clearer``, ``not balanced``, ``not done`` (then ``reason`` says why and
        both changes are 0), the ``method`` and the plus change of each eye's sphere (D)."""

        vid = self.get_visit(visit_id).visit_id
        if outcome not in vr.BALANCE_OUTCOMES:
            raise InvalidInputError(f"outcome: expected one of {', '.join(vr.BALANCE_OUTCOMES)}, got {outcome!r}")
        method = vr.check_name("method", method)
        changes = [
            check_number(n, v, -4, 4)
            for n, v in (("plus_change_od_d", plus_change_od_d), ("plus_change_os_d", plus_change_os_d))
        ]
        reason = vr.check_name("reason", reason, optional=outcome != "not done")
        if outcome == "not done" and any(changes):
            raise InvalidInputError("plus_change: a balance that was not done changes no eye")
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM visit_balance WHERE visit_id = ?", (vid,)).fetchone():
                raise SessionError(f"visit {vid}: the binocular balance already has its outcome")
            conn.execute(
                "INSERT INTO visit_balance (visit_id, outcome, method, plus_change_od_d, plus_change_os_d, reason, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (vid, outcome, method, changes[0], changes[1], reason, ts_text(self.now())),
            )
        return self.visit_balance(vid)

    def visit_balance(self, visit_id: int):
        """The balance's :class:`~visiontune.session.visit_records.BalanceOutcome`, or ``None``."""

        vid = self.get_visit(visit_id).visit_id
        row = self.conn.execute(
            "SELECT visit_id, outcome, method, plus_change_od_d, plus_change_os_d, reason, at "
            "FROM visit_balance WHERE visit_id = ?",
            (vid,),
        ).fetchone()
        return None if row is None else vr.BalanceOutcome.from_row(row)

    def sign_off(self, visit_id: int, eye: str, prescription, by: str):
        """Record a prescription of ``eye`` edited and signed by the clinician ``by``; it is kept
        beside the one the refraction found (never in its place). The eye must have a finished
        refraction and the prescription pass a session's checks
        (:func:`~visiontune.session.visit_records.check_signed_prescription`: range, 0.25 D steps,
        whole-degree axis, the visit's cylinder form); InvalidInputError otherwise, nothing written."""

        visit = self.get_visit(visit_id)
        eye = vr.check_eye(eye)
        rx = vr.check_signed_prescription("prescription", prescription, visit.cylinder_form)
        by = vr.check_name("by", by)
        link = self.visit_eyes(visit.visit_id).get(eye)
        if link is None or link.skipped:
            what = "was skipped" if link is not None else "has no refraction"
            raise InvalidInputError(f"visit {visit.visit_id}: {eye} {what}: there is no prescription to sign off")
        info = self.get_session(link.session_id)
        if info.state != SessionState.FINISHED or info.discarded:
            state = "discarded" if info.discarded else info.state.value
            raise InvalidInputError(
                f"visit {visit.visit_id}: the refraction of {eye} (session {info.session_id}) is "
                f"{state}; finish it before signing off"
            )
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visit_signoffs (visit_id, eye, sphere_d, cylinder_d, axis_deg, by_name, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (visit.visit_id, eye, rx.sphere_d, rx.cylinder_d, rx.axis_deg, by, ts_text(self.now())),
            )
            sid = int(cur.lastrowid)
        return next(s for s in self.visit_signoffs(visit.visit_id) if s.signoff_id == sid)

    def visit_signoffs(self, visit_id: int) -> list:
        """Every sign-off of the visit in order (:class:`~visiontune.session.visit_records.VisitSignOff`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT id, visit_id, eye, sphere_d, cylinder_d, axis_deg, by_name, at "
            "FROM visit_signoffs WHERE visit_id = ? ORDER BY id",
            (vid,),
        ).fetchall()
        return [vr.VisitSignOff.from_row(r) for r in rows]

    def record_visit_acuity(
        self, visit_id: int, eye: str, va_logmar: float, *, lenses: dict, method: str, detail: Any = None
    ):
        """Record an acuity (logMAR, -1 to 3) of ``eye`` (``OD``, ``OS``, or ``OU`` with both
        eyes open) read through ``lenses`` (``{"OD": Prescription, "OS": Prescription}``: the
        eyes that were open), how (``method``) and its ``detail`` (JSON-able)."""

        vid = self.get_visit(visit_id).visit_id
        eye = vr.check_eye(eye, ("OD", "OS", "OU"))
        va_logmar = check_number("va_logmar", va_logmar, -1, 3)
        needed = {"OD", "OS"} if eye == "OU" else {eye}
        if not isinstance(lenses, dict) or set(lenses) != needed:
            raise InvalidInputError(f"lenses: expected the lens of {' and '.join(sorted(needed))}, got {lenses!r}")
        lenses_json = json.dumps(
            {e: json.loads(vr.rx_json(vr.check_prescription(f"lenses[{e}]", rx))) for e, rx in sorted(lenses.items())},
            sort_keys=True,
        )
        method = vr.check_name("method", method)
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO visit_acuities (visit_id, eye, va_logmar, lenses_json, method, detail_json, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (vid, eye, float(va_logmar), lenses_json, method, to_json("detail", detail), ts_text(self.now())),
            )
            aid = int(cur.lastrowid)
        return next(a for a in self.visit_acuities(vid) if a.acuity_id == aid)

    def visit_acuities(self, visit_id: int) -> list:
        """Every acuity recorded in the visit, in order (:class:`~visiontune.session.visit_records.VisitAcuity`)."""

        vid = self.get_visit(visit_id).visit_id
        rows = self.conn.execute(
            "SELECT id, visit_id, eye, va_logmar, lenses_json, method, detail_json, at "
            "FROM visit_acuities WHERE visit_id = ? ORDER BY id",
            (vid,),
        ).fetchall()
        return [vr.VisitAcuity.from_row(r) for r in rows]
